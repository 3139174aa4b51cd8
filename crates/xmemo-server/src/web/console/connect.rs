//! "Connect a client": for each supported client a readiness badge computed from this
//! server's real settings (its public URL) and the copy-paste configuration. The entries
//! match what `xmemo connect` writes (docs/clients.md); the headless recipe is the one
//! `GET /api/v1/mcp/config/autonomous-agent` serves.

use super::{Chrome, Signed, render};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

/// How a client can connect to this server as it is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The client can sign in through the OAuth flow.
    OAuthReady,
    /// Only an API key works (a bridge or header), OAuth cannot be used as configured.
    KeyOnly,
    /// A hosted client (it connects from the internet) needs an https public URL.
    NeedsHttps,
}

impl Readiness {
    pub fn label(self) -> &'static str {
        match self {
            Self::OAuthReady => "OAuth ready",
            Self::KeyOnly => "key only",
            Self::NeedsHttps => "needs an https public URL",
        }
    }
    pub fn class(self) -> &'static str {
        match self {
            Self::OAuthReady => "ready",
            Self::KeyOnly => "key",
            Self::NeedsHttps => "blocked",
        }
    }
}

/// What the public URL allows: https anywhere; plain http only on a loopback host (OAuth 2.1
/// permits it there, and only a client on the same machine can reach it).
fn url_kind(public_url: &str) -> (bool, bool) {
    let parsed = reqwest::Url::parse(public_url).ok();
    let https = parsed.as_ref().is_some_and(|u| u.scheme() == "https");
    let loopback = parsed
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| {
            h == "localhost"
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
    (https, loopback)
}

/// The readiness of a local client (on the person's machine) and of a hosted one.
pub fn readiness(public_url: &str, hosted: bool, headless: bool) -> Readiness {
    let (https, loopback) = url_kind(public_url);
    match (headless, hosted, https, loopback) {
        (true, _, _, _) => Readiness::KeyOnly,
        (_, true, true, _) => Readiness::OAuthReady,
        (_, true, false, _) => Readiness::NeedsHttps,
        (_, false, true, _) | (_, false, _, true) => Readiness::OAuthReady,
        _ => Readiness::KeyOnly,
    }
}

pub struct ClientCard {
    pub id: &'static str,
    pub title: &'static str,
    pub badge: &'static str,
    pub badge_class: &'static str,
    pub steps: String,
    /// A command to run instead of editing a file (empty: none).
    pub command: String,
    pub config_label: String,
    pub config: String,
}

#[derive(Template)]
#[template(path = "console/connect.html")]
struct ConnectPage {
    chrome: Option<Chrome>,
    base: String,
    cards: Vec<ClientCard>,
}

fn pretty(v: serde_json::Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn cards(base: &str) -> Vec<ClientCard> {
    let mcp = format!("{base}/mcp");
    let oauth_local = readiness(base, false, false) == Readiness::OAuthReady;
    let card =
        |id, title, hosted, headless, steps: &str, command: String, label: &str, config: String| {
            let r = readiness(base, hosted, headless);
            ClientCard {
                id,
                title,
                badge: r.label(),
                badge_class: r.class(),
                steps: steps.to_string(),
                command,
                config_label: label.to_string(),
                config,
            }
        };
    // Without OAuth a local client starts the stdio bridge with XMEMO_KEY from its environment.
    let bridge = |servers_key: &str, env_ref: &str| {
        pretty(serde_json::json!({servers_key: {"xmemo": {
            "command": "xmemo", "args": ["mcp"],
            "env": {"XMEMO_URL": base, "XMEMO_KEY": env_ref}
        }}}))
    };
    let pick = |oauth: String, key: String| if oauth_local { oauth } else { key };
    vec![
        card(
            "claude-code",
            "Claude Code",
            false,
            false,
            "Claude Code opens the consent screen on first use; `xmemo connect claude-code --write` writes the same entry.",
            pick(
                format!("claude mcp add --transport http --scope project xmemo {mcp}/claude-code"),
                String::new(),
            ),
            "or in .mcp.json of the project:",
            pick(
                pretty(
                    serde_json::json!({"mcpServers": {"xmemo": {"type": "http", "url": format!("{mcp}/claude-code")}}}),
                ),
                bridge("mcpServers", "${XMEMO_KEY}"),
            ),
        ),
        card(
            "claude-ai",
            "claude.ai",
            true,
            false,
            "Settings → Connectors → Add custom connector with this URL, then approve memory:read and memory:write on the consent screen.",
            String::new(),
            "Connector URL:",
            mcp.clone(),
        ),
        card(
            "chatgpt",
            "ChatGPT",
            true,
            false,
            "Settings → Apps & Connectors → Create (developer mode), authentication OAuth, with this MCP server URL.",
            String::new(),
            "MCP server URL:",
            format!("{mcp}/chatgpt-public"),
        ),
        card(
            "vscode",
            "VS Code",
            false,
            false,
            "Command Palette → “MCP: Open User Configuration”, or `xmemo connect vscode --write`.",
            String::new(),
            "mcp.json:",
            pick(
                pretty(serde_json::json!({"servers": {"xmemo": {"type": "http", "url": mcp}}})),
                bridge("servers", "${env:XMEMO_KEY}"),
            ),
        ),
        card(
            "cursor",
            "Cursor",
            false,
            false,
            "Add it to ~/.cursor/mcp.json, or run `xmemo connect cursor --write`.",
            String::new(),
            "~/.cursor/mcp.json:",
            pick(
                pretty(
                    serde_json::json!({"mcpServers": {"xmemo": {"url": format!("{mcp}/cursor-plugin")}}}),
                ),
                bridge("mcpServers", "${env:XMEMO_KEY}"),
            ),
        ),
        card(
            "codex",
            "Codex",
            false,
            false,
            "Add it to ~/.codex/config.toml, or run `xmemo connect codex --write`.",
            pick("codex mcp login xmemo".to_string(), String::new()),
            "~/.codex/config.toml:",
            pick(
                format!("[mcp_servers.xmemo]\nurl = \"{mcp}\""),
                format!(
                    "[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\nenv = {{ XMEMO_URL = \"{base}\" }}\nenv_vars = [\"XMEMO_KEY\", \"XMEMO_AGENT_INSTANCE_ID\"]"
                ),
            ),
        ),
        card(
            "headless",
            "Headless runner",
            false,
            true,
            "Keep XMEMO_KEY in a secret store and a stable XMEMO_AGENT_INSTANCE_ID outside git; the recipe is also served as JSON.",
            format!("curl {base}/api/v1/mcp/config/autonomous-agent"),
            "Environment of the runner:",
            format!(
                "export XMEMO_URL={base}\nexport XMEMO_KEY=…   # from a secret store (API keys page)\nexport XMEMO_AGENT_INSTANCE_ID=runner-1\nxmemo mcp          # stdio bridge; or POST {mcp} with\n                   # Authorization: Bearer $XMEMO_KEY"
            ),
        ),
    ]
}

pub async fn page(State(state): State<AppState>, Signed(ctx): Signed) -> Response {
    let base = state.info.public_url.trim_end_matches('/').to_string();
    render(
        StatusCode::OK,
        &ConnectPage {
            chrome: Some(ctx.chrome("connect")),
            cards: cards(&base),
            base,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_the_public_url() {
        let local = "http://127.0.0.1:8420";
        assert_eq!(readiness(local, false, false), Readiness::OAuthReady);
        assert_eq!(readiness(local, true, false), Readiness::NeedsHttps);
        assert_eq!(readiness(local, false, true), Readiness::KeyOnly);
        let lan = "http://memory.internal:8420";
        assert_eq!(readiness(lan, false, false), Readiness::KeyOnly);
        assert_eq!(readiness(lan, true, false), Readiness::NeedsHttps);
        let public = "https://memory.example.com";
        assert_eq!(readiness(public, false, false), Readiness::OAuthReady);
        assert_eq!(readiness(public, true, false), Readiness::OAuthReady);
        assert_eq!(
            readiness("http://[::1]:8420", false, false),
            Readiness::OAuthReady
        );
    }
}
