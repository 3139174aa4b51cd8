//! `xmemo oauth grants [list|revoke ID]`: the OAuth clients (MCP hosts) the account let in,
//! and taking that back.

use super::Conn;
use super::http::Api;
use super::text::print_list_result;
use crate::output::print_result_line;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::json;
use xmemo_store::OAuthGrant;

#[derive(Args, Debug)]
pub struct OauthArgs {
    #[command(subcommand)]
    pub command: OauthCommand,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand, Debug)]
pub enum OauthCommand {
    /// The consents you approved for OAuth clients and did not revoke (list, the default),
    /// or revoke one: every token of it stops working at once
    Grants {
        #[command(subcommand)]
        action: Option<GrantsAction>,
    },
}

#[derive(Subcommand, Debug)]
pub enum GrantsAction {
    /// List your live grants
    List,
    /// Revoke a grant (its access and refresh tokens with it)
    Revoke { grant_id: String },
}

pub async fn oauth(a: OauthArgs) -> anyhow::Result<()> {
    let api = Api::new(&a.conn)?;
    let json = a.conn.json;
    let OauthCommand::Grants { action } = a.command;
    match action.unwrap_or(GrantsAction::List) {
        GrantsAction::List => {
            let value = api
                .get_all(api.url(&["oauth", "grants"], &[])?, "grants")
                .await?;
            print_list_result(
                json,
                value,
                "grants",
                "grant list",
                ["GRANT", "CLIENT", "SCOPES", "SINCE", "CLIENT ID"],
                |g: &OAuthGrant| {
                    [
                        g.grant_id.clone(),
                        g.client_name.clone(),
                        g.scopes.join(" "),
                        g.created_at.clone(),
                        g.client_id.clone(),
                    ]
                },
            )
        }
        GrantsAction::Revoke { grant_id } => {
            let url = api.url(&["oauth", "grants", &grant_id], &[])?;
            api.call(Method::DELETE, url, None).await?;
            print_result_line(
                json,
                &json!({ "revoked": grant_id }),
                format!("revoked {grant_id}: its tokens no longer work"),
            );
            Ok(())
        }
    }
}
