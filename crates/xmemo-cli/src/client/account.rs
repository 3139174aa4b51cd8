//! The caller's own account: `xmemo account export -o FILE`, `xmemo account delete`.

use super::Conn;
use super::http::{Api, required};
use crate::output::{print_result, print_result_line};
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
            print_result_line(
                a.conn.json,
                &json!({"written": output.display().to_string(), "size": bytes}),
                format!("wrote the export to {} ({bytes} bytes)", output.display()),
            );
            Ok(())
        }
        AccountAction::Delete { confirm } => {
            let url = api.url(&["account"], &[])?;
            let body = json!({"confirm": confirm});
            let value = required(api.call(Method::DELETE, url, Some(&body)).await?)?;
            print_result(a.conn.json, value, |value| {
                let d = &value["data"];
                println!(
                    "deleted the account: {} skill(s), {} memorie(s), {} key(s), {} membership(s)",
                    d["skills"], d["memories"], d["keys"], d["memberships"]
                );
                Ok(())
            })
        }
    }
}
