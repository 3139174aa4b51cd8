//! The caller's side of accounts: `whoami`, workspaces, members and invitations, API keys.

use super::Conn;
use super::http::{Api, decode_field};
use super::text::{or_dash, print_list_result, table_of};
use crate::output::{print_result, print_result_line};
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

const WORKSPACE_HEADERS: [&str; 5] = ["HANDLE", "KIND", "ROLE", "NAME", "ID"];

fn workspace_row(w: &WorkspaceView) -> [String; 5] {
    [
        w.handle.clone(),
        w.kind.to_string(),
        w.role.to_string(),
        w.name.clone(),
        w.workspace_id.clone(),
    ]
}

pub async fn workspaces(a: WorkspacesArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    match a.command {
        WorkspacesCommand::List => {
            let value = api
                .get_all(api.url(&["workspaces"], &[])?, "workspaces")
                .await?;
            print_list_result(
                json,
                value,
                "workspaces",
                "workspace list",
                WORKSPACE_HEADERS,
                workspace_row,
            )
        }
        WorkspacesCommand::Create { handle, name } => {
            let mut body = json!({ "handle": handle });
            if let (Some(n), Some(obj)) = (name, body.as_object_mut()) {
                obj.insert("name".into(), Value::String(n));
            }
            let url = api.url(&["workspaces"], &[])?;
            let value = api.send(Method::POST, url, Some(&body)).await?;
            print_result(json, value, |value| {
                let ws: WorkspaceView = decode_field(&value, "workspace", "workspace")?;
                println!(
                    "created team workspace {} ({}); you are its {}",
                    ws.handle, ws.workspace_id, ws.role
                );
                Ok(())
            })
        }
        WorkspacesCommand::Members { workspace } => {
            let url = api.url(&["workspaces", &workspace, "members"], &[])?;
            print_list_result(
                json,
                api.get_all(url, "members").await?,
                "members",
                "member list",
                ["HANDLE", "ROLE", "NAME", "ACCOUNT", "ADDED"],
                |m: &Member| {
                    [
                        m.handle.clone(),
                        m.role.to_string(),
                        m.display_name.clone(),
                        m.account_id.clone(),
                        m.added_at.clone(),
                    ]
                },
            )
        }
        WorkspacesCommand::Invite {
            workspace,
            account,
            role,
        } => {
            let url = api.url(&["workspaces", &workspace, "invitations"], &[])?;
            let body = json!({ "invitee": account, "role": role });
            let value = api.send(Method::POST, url, Some(&body)).await?;
            print_result(json, value, |value| {
                let i: InvitationView = decode_field(&value, "invitation", "invitation")?;
                println!(
                    "invited {} to {} as {} (invitation {}); they join when they accept it",
                    i.invitee, i.workspace, i.role, i.invitation_id
                );
                Ok(())
            })
        }
        WorkspacesCommand::Invitations { workspace } => {
            let url = api.url(&["workspaces", &workspace, "invitations"], &[])?;
            print_list_result(
                json,
                api.get(url).await?,
                "invitations",
                "invitation list",
                ["INVITATION", "INVITEE", "ROLE", "BY", "CREATED"],
                |i: &InvitationView| {
                    [
                        i.invitation_id.clone(),
                        i.invitee.clone(),
                        i.role.to_string(),
                        i.invited_by.clone(),
                        i.created_at.clone(),
                    ]
                },
            )
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
            print_result_line(
                json,
                &json!({ "revoked": { "workspace": workspace, "invitation_id": invitation_id } }),
                format!("revoked invitation {invitation_id} of {workspace}"),
            );
            Ok(())
        }
        WorkspacesCommand::Leave { workspace } => {
            let url = api.url(&["workspaces", &workspace, "leave"], &[])?;
            api.call(Method::POST, url, None).await?;
            print_result_line(
                json,
                &json!({ "left": { "workspace": workspace } }),
                format!("left {workspace}"),
            );
            Ok(())
        }
        WorkspacesCommand::SetRole {
            workspace,
            account,
            role,
        } => {
            let url = api.url(&["workspaces", &workspace, "members", &account], &[])?;
            let body = json!({ "role": role });
            let value = api.send(Method::PUT, url, Some(&body)).await?;
            print_result(json, value, |value| {
                let m: Member = decode_field(&value, "member", "member")?;
                println!("{} is now {} of {workspace}", m.handle, m.role);
                Ok(())
            })
        }
        WorkspacesCommand::RemoveMember { workspace, account } => {
            let url = api.url(&["workspaces", &workspace, "members", &account], &[])?;
            api.call(Method::DELETE, url, None).await?;
            print_result_line(
                json,
                &json!({ "removed": { "workspace": workspace, "account": account } }),
                format!("removed {account} from {workspace}"),
            );
            Ok(())
        }
    }
}

pub async fn invitations(a: InvitationsArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    match a.command.unwrap_or(InvitationsCommand::List) {
        InvitationsCommand::List => {
            let value = api.get(api.url(&["invitations"], &[])?).await?;
            print_result(json, value, |value| {
                let list: Vec<InvitationView> =
                    decode_field(&value, "invitations", "invitation list")?;
                if list.is_empty() {
                    println!("no pending invitations");
                    return Ok(());
                }
                let headers = ["INVITATION", "TEAM", "ROLE", "BY", "NAME"];
                let table = table_of(headers, &list, |i| {
                    [
                        i.invitation_id.clone(),
                        i.workspace.clone(),
                        i.role.to_string(),
                        i.invited_by.clone(),
                        i.workspace_name.clone(),
                    ]
                });
                println!("{table}");
                Ok(())
            })
        }
        InvitationsCommand::Accept { invitation_id } => {
            let url = api.url(&["invitations", &invitation_id, "accept"], &[])?;
            print_result(json, api.send(Method::POST, url, None).await?, |value| {
                let ws: WorkspaceView = decode_field(&value, "workspace", "workspace")?;
                println!("joined {} as {}", ws.handle, ws.role);
                Ok(())
            })
        }
        InvitationsCommand::Decline { invitation_id } => {
            let url = api.url(&["invitations", &invitation_id, "decline"], &[])?;
            print_result(json, api.send(Method::POST, url, None).await?, |value| {
                let i: InvitationView = decode_field(&value, "invitation", "invitation")?;
                println!("declined the invitation to {}", i.workspace);
                Ok(())
            })
        }
    }
}

pub async fn keys(a: KeysArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    match a.command {
        KeysCommand::List => {
            let value = api.get_all(api.url(&["keys"], &[])?, "keys").await?;
            print_list_result(
                json,
                value,
                "keys",
                "key list",
                [
                    "KEY", "NAME", "PREFIX", "SCOPES", "PROFILE", "EXPIRES", "STATUS",
                ],
                |k: &ApiKey| {
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
                },
            )
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
            let value = api.send(Method::POST, url, Some(&body)).await?;
            print_result(json, value, |value| {
                let k: CreatedKey = decode_field(&value, "key", "key")?;
                print_created_key(&k);
                Ok(())
            })
        }
        KeysCommand::Revoke { key_id } => {
            let url = api.url(&["keys", &key_id], &[])?;
            api.call(Method::DELETE, url, None).await?;
            print_result_line(
                json,
                &json!({ "revoked": key_id }),
                format!("revoked {key_id}"),
            );
            Ok(())
        }
    }
}

fn print_created_key(k: &CreatedKey) {
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

pub async fn whoami(a: WhoamiArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let value = api.get(api.url(&["me"], &[])?).await?;
    print_result(a.conn.json, value, |value| print_whoami(&value))
}

fn print_whoami(value: &Value) -> anyhow::Result<()> {
    let account: Account = decode_field(value, "account", "account")?;
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
    let list: Vec<WorkspaceView> = decode_field(value, "workspaces", "workspace list")?;
    println!();
    println!("{}", table_of(WORKSPACE_HEADERS, &list, workspace_row));
    Ok(())
}
