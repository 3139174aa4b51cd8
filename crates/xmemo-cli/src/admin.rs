//! `xmemo admin …`: operator commands that open the server's database directly (run them on
//! the server host). They go through the same service layer as every transport.

use crate::settings::{DbArgs, resolve_db_only};
use clap::{Args, Subcommand};
use serde_json::json;
use xmemo_server::Service;
use xmemo_server::bootstrap::open_store;
use xmemo_server::service::types::{CreateAccountRequest, CreateKeyRequest};
use xmemo_store::{AuditFilter, verify_audit_chain};

#[derive(Args)]
pub struct AdminArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Print JSON instead of text
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Accounts
    #[command(subcommand)]
    Account(AccountCommand),
    /// API keys of any account
    #[command(subcommand)]
    Key(KeyCommand),
    /// The hash-chained audit log
    #[command(subcommand)]
    Audit(AuditCommand),
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account (with its personal workspace); optionally issue its first key.
    Create {
        handle: String,
        #[arg(long)]
        display_name: Option<String>,
        /// Make it a server administrator
        #[arg(long)]
        admin: bool,
        /// Also issue an API key and print it once
        #[arg(long)]
        with_key: bool,
    },
    List,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Issue a key for an account; the secret is printed once.
    Create {
        /// Account handle or id
        #[arg(long)]
        account: String,
        #[arg(long, default_value = "cli")]
        name: String,
        /// Comma-separated scopes (memory:read,memory:write)
        #[arg(long, default_value = "memory:read,memory:write")]
        scopes: String,
        /// RFC 3339 expiry instant
        #[arg(long)]
        expires_at: Option<String>,
        /// MCP client profile for the key
        #[arg(long)]
        profile: Option<String>,
    },
    List {
        #[arg(long)]
        account: String,
    },
    Revoke {
        #[arg(long)]
        account: String,
        key_id: String,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check that no audit entry was edited or removed.
    Verify,
}

pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    let (data_dir, url) = resolve_db_only(&args.db)?;
    let store = open_store(url.as_deref(), &data_dir)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    let service = Service::new(store);
    let out = |value: serde_json::Value, text: String| {
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
        } else {
            println!("{text}");
        }
    };
    match args.command {
        AdminCommand::Account(AccountCommand::Create {
            handle,
            display_name,
            admin,
            with_key,
        }) => {
            let account = service
                .admin_create_account(CreateAccountRequest {
                    handle: handle.clone(),
                    display_name,
                    is_admin: admin,
                })
                .await?;
            let mut value = json!({ "account": account });
            let mut text = format!(
                "created account {} ({})",
                account.handle, account.account_id
            );
            if with_key {
                let operator = service.operator_for(&handle).await?;
                let key = service
                    .issue_key(
                        &operator,
                        &account,
                        key_request("initial key", None, None, None)?,
                    )
                    .await?;
                text.push_str(&format!("\nAPI key (shown once): {}", key.key));
                value["key"] = json!(key);
            }
            out(value, text);
        }
        AdminCommand::Account(AccountCommand::List) => {
            let accounts = service.store().list_accounts().await?;
            let text = accounts
                .iter()
                .map(|a| {
                    format!(
                        "{}\t{}\t{}{}",
                        a.account_id,
                        a.handle,
                        a.display_name,
                        if a.is_admin { "\tadmin" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            out(json!({ "accounts": accounts }), text);
        }
        AdminCommand::Key(KeyCommand::Create {
            account,
            name,
            scopes,
            expires_at,
            profile,
        }) => {
            let operator = service.operator_for(&account).await?;
            let target = operator.account.clone();
            let key = service
                .issue_key(
                    &operator,
                    &target,
                    key_request(&name, Some(scopes), expires_at, profile)?,
                )
                .await?;
            out(
                json!({ "key": key }),
                format!(
                    "key {} for {} ({}):\n{}\n(shown once; store it in a secret store)",
                    key.info.key_id,
                    target.handle,
                    key.info.scopes.join(" "),
                    key.key
                ),
            );
        }
        AdminCommand::Key(KeyCommand::List { account }) => {
            let operator = service.operator_for(&account).await?;
            let keys = service.list_keys(&operator).await?;
            let text = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}\t{}\t{}…\t{}\t{}",
                        k.key_id,
                        k.name,
                        k.prefix,
                        k.scopes.join(","),
                        if k.revoked_at.is_some() {
                            "revoked"
                        } else {
                            "active"
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            out(json!({ "keys": keys }), text);
        }
        AdminCommand::Key(KeyCommand::Revoke { account, key_id }) => {
            let operator = service.operator_for(&account).await?;
            service.revoke_key(&operator, &key_id).await?;
            out(json!({ "revoked": key_id }), format!("revoked {key_id}"));
        }
        AdminCommand::Audit(AuditCommand::Verify) => {
            let entries = service.store().list_audit(&AuditFilter::default()).await?;
            match verify_audit_chain(&entries) {
                Ok(()) => out(
                    json!({ "ok": true, "entries": entries.len() }),
                    format!("audit chain intact ({} entries)", entries.len()),
                ),
                Err(seq) => {
                    out(
                        json!({ "ok": false, "broken_at": seq }),
                        format!("audit chain BROKEN at entry {seq}"),
                    );
                    anyhow::bail!("audit chain verification failed at entry {seq}");
                }
            }
        }
    }
    Ok(())
}

fn key_request(
    name: &str,
    scopes: Option<String>,
    expires_at: Option<String>,
    profile: Option<String>,
) -> anyhow::Result<CreateKeyRequest> {
    Ok(CreateKeyRequest {
        name: name.to_string(),
        scopes: scopes.map(|s| {
            s.split([',', ' '])
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        }),
        expires_at,
        profile,
    })
}
