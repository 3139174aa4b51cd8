//! The caller's side of accounts: `whoami`, workspaces, members and invitations, API keys.

use super::Conn;
use super::http::{Api, decode};
use super::output::{or_dash, print_json, table};
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};
use xmemo_server::service::types::{CreatedKey, InvitationView, WorkspaceView};
use xmemo_store::{Account, ApiKey, Member};

#[derive(Args, Debug)]
pub struct WorkspacesArgs {
    #[command(subcommand)]
    pub command: WorkspacesCommand,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand, Debug)]
pub enum WorkspacesCommand {
    /// Your workspaces and your role in each
    List,
    /// Create a team workspace (you become its owner)
    Create {
        /// Lowercase words joined by hyphens
        handle: String,
        /// Display name (defaults to the handle)
        #[arg(long)]
        name: Option<String>,
    },
    /// Members of a team workspace
    Members {
        /// Workspace id or team handle
        workspace: String,
    },
    /// Invite an account to a team; it becomes a member only when it accepts
    /// (`xmemo invitations accept ID`)
    Invite {
        workspace: String,
        /// Account handle or id
        account: String,
        /// owner, admin, member or viewer (at most your own role)
        #[arg(long)]
        role: String,
    },
    /// A team's pending invitations (owners and admins)
    Invitations { workspace: String },
    /// Withdraw a pending invitation
    RevokeInvitation {
        workspace: String,
        invitation_id: String,
    },
    /// Change the role of an existing member
    SetRole {
        workspace: String,
        /// Account handle or id
        account: String,
        /// owner, admin, member or viewer
        #[arg(long)]
        role: String,
    },
    /// Remove an account from a team (yourself: the same as `leave`)
    RemoveMember { workspace: String, account: String },
    /// Leave a team (its last owner cannot)
    Leave { workspace: String },
}

#[derive(Args, Debug)]
pub struct InvitationsArgs {
    #[command(subcommand)]
    pub command: Option<InvitationsCommand>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand, Debug)]
pub enum InvitationsCommand {
    /// Invitations waiting for your answer (the default)
    List,
    /// Join the team with the invitation's role
    Accept { invitation_id: String },
    /// Turn the invitation down; nothing of the team is added
    Decline { invitation_id: String },
}

#[derive(Args, Debug)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub command: KeysCommand,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Your API keys (never their secrets)
    List,
    /// Issue a new key; its secret is printed once
    Create {
        #[arg(long)]
        name: String,
        /// Comma-separated scopes (default: those of the key you are using)
        #[arg(long, value_name = "memory:read,memory:write")]
        scopes: Option<String>,
        /// RFC 3339 instant after which the key stops working
        #[arg(long, value_name = "RFC3339")]
        expires_at: Option<String>,
        /// MCP client profile the key connects as (default ordinary-full)
        #[arg(long)]
        profile: Option<String>,
    },
    /// Revoke a key at once
    Revoke { key_id: String },
}

#[derive(Args, Debug)]
pub struct WhoamiArgs {
    #[command(flatten)]
    pub conn: Conn,
}

fn field<T: serde::de::DeserializeOwned>(
    value: &Value,
    key: &str,
    what: &str,
) -> anyhow::Result<T> {
    decode(value.get(key).cloned().unwrap_or(Value::Null), what)
}

fn workspace_rows(list: &[WorkspaceView]) -> Vec<[String; 5]> {
    list.iter()
        .map(|w| {
            [
                w.handle.clone(),
                w.kind.to_string(),
                w.role.to_string(),
                w.name.clone(),
                w.workspace_id.clone(),
            ]
        })
        .collect()
}

const WORKSPACE_HEADERS: [&str; 5] = ["HANDLE", "KIND", "ROLE", "NAME", "ID"];

pub async fn workspaces(a: WorkspacesArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    match a.command {
        WorkspacesCommand::List => {
            let value = api
                .get_all(api.url(&["workspaces"], &[])?, "workspaces")
                .await?;
            if json {
                print_json(&value);
                return Ok(());
            }
            let list: Vec<WorkspaceView> = field(&value, "workspaces", "workspace list")?;
            println!("{}", table(WORKSPACE_HEADERS, &workspace_rows(&list)));
        }
        WorkspacesCommand::Create { handle, name } => {
            let mut body = json!({ "handle": handle });
            if let (Some(n), Some(obj)) = (name, body.as_object_mut()) {
                obj.insert("name".into(), Value::String(n));
            }
            let url = api.url(&["workspaces"], &[])?;
            let value = api
                .call(Method::POST, url, Some(&body))
                .await?
                .unwrap_or(Value::Null);
            if json {
                print_json(&value);
                return Ok(());
            }
            let ws: WorkspaceView = field(&value, "workspace", "workspace")?;
            println!(
                "created team workspace {} ({}); you are its {}",
                ws.handle, ws.workspace_id, ws.role
            );
        }
        WorkspacesCommand::Members { workspace } => {
            let value = api
                .get_all(
                    api.url(&["workspaces", &workspace, "members"], &[])?,
                    "members",
                )
                .await?;
            if json {
                print_json(&value);
                return Ok(());
            }
            let list: Vec<Member> = field(&value, "members", "member list")?;
            let rows: Vec<[String; 5]> = list
                .iter()
                .map(|m| {
                    [
                        m.handle.clone(),
                        m.role.to_string(),
                        m.display_name.clone(),
                        m.account_id.clone(),
                        m.added_at.clone(),
                    ]
                })
                .collect();
            println!(
                "{}",
                table(["HANDLE", "ROLE", "NAME", "ACCOUNT", "ADDED"], &rows)
            );
        }
        WorkspacesCommand::Invite {
            workspace,
            account,
            role,
        } => {
            let url = api.url(&["workspaces", &workspace, "invitations"], &[])?;
            let body = json!({ "invitee": account, "role": role });
            let value = api
                .call(Method::POST, url, Some(&body))
                .await?
                .unwrap_or(Value::Null);
            if json {
                print_json(&value);
                return Ok(());
            }
            let i: InvitationView = field(&value, "invitation", "invitation")?;
            println!(
                "invited {} to {} as {} (invitation {}); they join when they accept it",
                i.invitee, i.workspace, i.role, i.invitation_id
            );
        }
        WorkspacesCommand::Invitations { workspace } => {
            let value = api
                .get(api.url(&["workspaces", &workspace, "invitations"], &[])?)
                .await?;
            if json {
                print_json(&value);
                return Ok(());
            }
            let list: Vec<InvitationView> = field(&value, "invitations", "invitation list")?;
            let rows: Vec<[String; 5]> = list
                .iter()
                .map(|i| {
                    [
                        i.invitation_id.clone(),
                        i.invitee.clone(),
                        i.role.to_string(),
                        i.invited_by.clone(),
                        i.created_at.clone(),
                    ]
                })
                .collect();
            println!(
                "{}",
                table(["INVITATION", "INVITEE", "ROLE", "BY", "CREATED"], &rows)
            );
        }
        WorkspacesCommand::RevokeInvitation {
            workspace,
            invitation_id,
        } => {
            let url = api.url(
                &["workspaces", &workspace, "invitations", &invitation_id],
                &[],
            )?;
            api.call(Method::DELETE, url, None).await?;
            if json {
                print_json(
                    &json!({ "revoked": { "workspace": workspace, "invitation_id": invitation_id } }),
                );
            } else {
                println!("revoked invitation {invitation_id} of {workspace}");
            }
        }
        WorkspacesCommand::Leave { workspace } => {
            let url = api.url(&["workspaces", &workspace, "leave"], &[])?;
            api.call(Method::POST, url, None).await?;
            if json {
                print_json(&json!({ "left": { "workspace": workspace } }));
            } else {
                println!("left {workspace}");
            }
        }
        WorkspacesCommand::SetRole {
            workspace,
            account,
            role,
        } => {
            let url = api.url(&["workspaces", &workspace, "members", &account], &[])?;
            let body = json!({ "role": role });
            let value = api
                .call(Method::PUT, url, Some(&body))
                .await?
                .unwrap_or(Value::Null);
            if json {
                print_json(&value);
                return Ok(());
            }
            let m: Member = field(&value, "member", "member")?;
            println!("{} is now {} of {workspace}", m.handle, m.role);
        }
        WorkspacesCommand::RemoveMember { workspace, account } => {
            let url = api.url(&["workspaces", &workspace, "members", &account], &[])?;
            api.call(Method::DELETE, url, None).await?;
            if json {
                print_json(&json!({ "removed": { "workspace": workspace, "account": account } }));
            } else {
                println!("removed {account} from {workspace}");
            }
        }
    }
    Ok(())
}

pub async fn invitations(a: InvitationsArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    match a.command.unwrap_or(InvitationsCommand::List) {
        InvitationsCommand::List => {
            let value = api.get(api.url(&["invitations"], &[])?).await?;
            if json {
                print_json(&value);
                return Ok(());
            }
            let list: Vec<InvitationView> = field(&value, "invitations", "invitation list")?;
            if list.is_empty() {
                println!("no pending invitations");
                return Ok(());
            }
            let rows: Vec<[String; 5]> = list
                .iter()
                .map(|i| {
                    [
                        i.invitation_id.clone(),
                        i.workspace.clone(),
                        i.role.to_string(),
                        i.invited_by.clone(),
                        i.workspace_name.clone(),
                    ]
                })
                .collect();
            println!(
                "{}",
                table(["INVITATION", "TEAM", "ROLE", "BY", "NAME"], &rows)
            );
        }
        InvitationsCommand::Accept { invitation_id } => {
            let url = api.url(&["invitations", &invitation_id, "accept"], &[])?;
            let value = api
                .call(Method::POST, url, None)
                .await?
                .unwrap_or(Value::Null);
            if json {
                print_json(&value);
                return Ok(());
            }
            let ws: WorkspaceView = field(&value, "workspace", "workspace")?;
            println!("joined {} as {}", ws.handle, ws.role);
        }
        InvitationsCommand::Decline { invitation_id } => {
            let url = api.url(&["invitations", &invitation_id, "decline"], &[])?;
            let value = api
                .call(Method::POST, url, None)
                .await?
                .unwrap_or(Value::Null);
            if json {
                print_json(&value);
                return Ok(());
            }
            let i: InvitationView = field(&value, "invitation", "invitation")?;
            println!("declined the invitation to {}", i.workspace);
        }
    }
    Ok(())
}

pub async fn keys(a: KeysArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    match a.command {
        KeysCommand::List => {
            let value = api.get_all(api.url(&["keys"], &[])?, "keys").await?;
            if json {
                print_json(&value);
                return Ok(());
            }
            let list: Vec<ApiKey> = field(&value, "keys", "key list")?;
            let rows: Vec<[String; 7]> = list
                .iter()
                .map(|k| {
                    [
                        k.key_id.clone(),
                        k.name.clone(),
                        format!("{}…", k.prefix),
                        k.scopes.join(","),
                        k.profile.clone(),
                        or_dash(k.expires_at.as_deref()),
                        match &k.revoked_at {
                            Some(at) => format!("revoked {at}"),
                            None => "active".into(),
                        },
                    ]
                })
                .collect();
            println!(
                "{}",
                table(
                    [
                        "KEY", "NAME", "PREFIX", "SCOPES", "PROFILE", "EXPIRES", "STATUS"
                    ],
                    &rows
                )
            );
        }
        KeysCommand::Create {
            name,
            scopes,
            expires_at,
            profile,
        } => {
            let mut body = json!({ "name": name });
            if let Some(obj) = body.as_object_mut() {
                if let Some(s) = scopes {
                    let list: Vec<&str> = s.split([',', ' ']).filter(|x| !x.is_empty()).collect();
                    obj.insert("scopes".into(), json!(list));
                }
                if let Some(e) = expires_at {
                    obj.insert("expires_at".into(), Value::String(e));
                }
                if let Some(p) = profile {
                    obj.insert("profile".into(), Value::String(p));
                }
            }
            let url = api.url(&["keys"], &[])?;
            let value = api
                .call(Method::POST, url, Some(&body))
                .await?
                .unwrap_or(Value::Null);
            if json {
                print_json(&value);
                return Ok(());
            }
            let k: CreatedKey = field(&value, "key", "key")?;
            println!(
                "created key {} `{}` ({}; profile {}{})",
                k.info.key_id,
                k.info.name,
                k.info.scopes.join(" "),
                k.info.profile,
                k.info
                    .expires_at
                    .as_deref()
                    .map(|e| format!("; expires {e}"))
                    .unwrap_or_default()
            );
            println!("{}", k.key);
            println!(
                "This secret is shown once: store it now (e.g. in a secret store, then export XMEMO_KEY=…)."
            );
        }
        KeysCommand::Revoke { key_id } => {
            let url = api.url(&["keys", &key_id], &[])?;
            api.call(Method::DELETE, url, None).await?;
            if json {
                print_json(&json!({ "revoked": key_id }));
            } else {
                println!("revoked {key_id}");
            }
        }
    }
    Ok(())
}

pub async fn whoami(a: WhoamiArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let value = api.get(api.url(&["me"], &[])?).await?;
    if a.conn.json {
        print_json(&value);
        return Ok(());
    }
    let account: Account = field(&value, "account", "account")?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let scopes: Vec<String> = value
        .get("scopes")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    println!(
        "account     {} ({}){}",
        account.handle,
        account.account_id,
        if account.is_admin {
            ", server admin"
        } else {
            ""
        }
    );
    println!("name        {}", account.display_name);
    println!("credential  {}", or_dash(text("credential_id").as_deref()));
    println!("scopes      {}", scopes.join(" "));
    println!("profile     {}", or_dash(text("client_profile").as_deref()));
    println!("agent       {}", or_dash(text("agent_id").as_deref()));
    println!(
        "instance    {}",
        or_dash(text("agent_instance_id").as_deref())
    );
    let list: Vec<WorkspaceView> = field(&value, "workspaces", "workspace list")?;
    println!();
    println!("{}", table(WORKSPACE_HEADERS, &workspace_rows(&list)));
    Ok(())
}
