//! The caller's own account: `xmemo account export -o FILE`, `xmemo account delete`.

use super::Conn;
use super::http::{Api, Failure, fail};
use super::output::print_json;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::json;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AccountArgs {
    #[command(subcommand)]
    pub action: AccountAction,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand, Debug)]
pub enum AccountAction {
    /// Download everything the account can write as one ZIP (skills as Source Capsules,
    /// memories with history, workspaces, key metadata)
    Export {
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Delete the account and everything only it owns (asks for the handle typed back)
    Delete {
        /// The account's handle, typed back
        #[arg(long)]
        confirm: String,
    },
}

pub async fn account(a: AccountArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    match a.action {
        AccountAction::Export { output } => {
            let url = api.url(&["account", "export"], &[])?;
            let bytes = api.download(url, &output).await?;
            if a.conn.json {
                print_json(&json!({"written": output.display().to_string(), "size": bytes}));
            } else {
                println!("wrote the export to {} ({bytes} bytes)", output.display());
            }
        }
        AccountAction::Delete { confirm } => {
            let url = api.url(&["account"], &[])?;
            let value = api
                .call(Method::DELETE, url, Some(&json!({"confirm": confirm})))
                .await?
                .ok_or_else(|| fail(Failure::unexpected("the server sent an empty answer")))?;
            if a.conn.json {
                print_json(&value);
            } else {
                let d = &value["data"];
                println!(
                    "deleted the account: {} skill(s), {} memorie(s), {} key(s), {} membership(s)",
                    d["skills"], d["memories"], d["keys"], d["memberships"]
                );
            }
        }
    }
    Ok(())
}
