//! Help (`/console/help`): for each kind of person the product page speaks to (ChatGPT user,
//! IDE/CLI developer, team pilot owner, autonomous agent operator), the failure that page
//! names and the steps that fix it, each step linking the console page that does it. The same
//! text is docs/troubleshooting.md, for people who cannot reach the console.

use super::{Chrome, Signed, render};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

#[derive(Template)]
#[template(path = "console/help.html")]
struct HelpPage {
    chrome: Option<Chrome>,
    /// The MCP address of this server, as clients must be given it.
    mcp: String,
    /// Whether hosted clients (ChatGPT, claude.ai) can reach this server at all.
    https: bool,
}

pub async fn page(State(state): State<AppState>, Signed(ctx): Signed) -> Response {
    let base = state.info.public_url.trim_end_matches('/');
    render(
        StatusCode::OK,
        &HelpPage {
            chrome: Some(ctx.chrome("help")),
            mcp: format!("{base}/mcp"),
            https: base.starts_with("https://"),
        },
    )
}
