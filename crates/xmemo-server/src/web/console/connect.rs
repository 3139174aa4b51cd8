//! "Connect a client": for each supported client a readiness badge computed from this
//! server's real settings (its public URL) and its recipes, each with a copy button: for a
//! client on the person's machine both the OAuth entry and the key entry (XMEMO_KEY by
//! reference). The entries are, character for character, what `xmemo connect` prints
//! (docs/clients.md; crates/xmemo-cli/tests/connect.rs compares them); the headless recipe is
//! the one `GET /api/v1/mcp/config/autonomous-agent` serves.

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

/// One block a person copies: a command, a configuration file's entry, a URL.
pub struct Recipe {
    /// Unique on the page: `{client}-{what}`.
    pub id: String,
    pub label: String,
    pub text: String,
}

pub struct ClientCard {
    pub id: &'static str,
    pub title: &'static str,
    pub badge: &'static str,
    pub badge_class: &'static str,
    pub steps: String,
    pub recipes: Vec<Recipe>,
}

#[derive(Template)]
#[template(path = "console/connect.html")]
struct ConnectPage {
    chrome: Option<Chrome>,
    base: String,
    cards: Vec<ClientCard>,
}

/// An MCP entry as `xmemo connect` builds it: ordered, so the page shows each client's file
/// exactly as the CLI prints and writes it (crates/xmemo-cli/src/connect/; the CLI's tests
/// compare the two).
enum Entry {
    Str(String),
    Strs(&'static [&'static str]),
    Map(Vec<(&'static str, Entry)>),
}

fn s(text: impl Into<String>) -> Entry {
    Entry::Str(text.into())
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

impl Entry {
    /// Pretty JSON, two spaces a level, lists of strings on one line (as the CLI writes).
    fn json(&self, indent: &str) -> String {
        match self {
            Entry::Str(t) => quoted(t),
            Entry::Strs(items) => {
                let items: Vec<String> = items.iter().map(|i| quoted(i)).collect();
                format!("[{}]", items.join(", "))
            }
            Entry::Map(pairs) => {
                let inner = format!("{indent}  ");
                let lines: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{inner}{}: {}", quoted(k), v.json(&inner)))
                    .collect();
                format!("{{\n{}\n{indent}}}", lines.join(",\n"))
            }
        }
    }

    /// A TOML right-hand side (maps inline).
    fn toml(&self) -> String {
        match self {
            Entry::Str(t) => quoted(t),
            Entry::Strs(items) => {
                let items: Vec<String> = items.iter().map(|i| quoted(i)).collect();
                format!("[{}]", items.join(", "))
            }
            Entry::Map(pairs) => {
                let items: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", v.toml()))
                    .collect();
                format!("{{ {} }}", items.join(", "))
            }
        }
    }
}

/// `{"<servers_key>": {"xmemo": entry}}`.
fn json_file(servers_key: &'static str, entry: Entry) -> String {
    Entry::Map(vec![(servers_key, Entry::Map(vec![("xmemo", entry)]))]).json("")
}

/// `[mcp_servers.xmemo]` with one line per field.
fn toml_table(fields: Vec<(&'static str, Entry)>) -> String {
    let mut out = "[mcp_servers.xmemo]".to_string();
    for (k, v) in fields {
        out.push_str(&format!("\n{k} = {}", v.toml()));
    }
    out
}

/// The stdio bridge with `XMEMO_KEY` named in the client's own syntax, never its value.
fn bridge(
    base: &str,
    kind: Option<&'static str>,
    key_reference: &str,
    profile: Option<&str>,
    tail: Vec<(&'static str, Entry)>,
) -> Entry {
    let mut env = vec![("XMEMO_URL", s(base)), ("XMEMO_KEY", s(key_reference))];
    if let Some(p) = profile {
        env.push(("XMEMO_PROFILE", s(p)));
    }
    let mut fields = Vec::new();
    if let Some(kind) = kind {
        fields.push(("type", s(kind)));
    }
    fields.extend([
        ("command", s("xmemo")),
        ("args", Entry::Strs(&["mcp"])),
        ("env", Entry::Map(env)),
    ]);
    fields.extend(tail);
    Entry::Map(fields)
}

fn recipe(client: &str, what: &str, label: &str, text: String) -> Recipe {
    Recipe {
        id: format!("{client}-{what}"),
        label: label.to_string(),
        text,
    }
}

/// A local client's two ways in: OAuth (no secret anywhere) and the key by reference.
const BOTH: &str = "Either sign in with OAuth (the first recipe: the client opens this server's consent page, no secret in any file), or use an API key: the stdio bridge reads XMEMO_KEY from the environment the client starts in — the file only names the variable. Create the key on the API keys page.";

fn cards(base: &str) -> Vec<ClientCard> {
    let mcp = format!("{base}/mcp");
    let card = |id, title, hosted, headless, steps: &str, recipes: Vec<Recipe>| {
        let r = readiness(base, hosted, headless);
        ClientCard {
            id,
            title,
            badge: r.label(),
            badge_class: r.class(),
            steps: steps.to_string(),
            recipes,
        }
    };
    let oauth_label = "With OAuth:";
    let claude_url = format!("{mcp}/claude-code");
    let cursor_url = format!("{mcp}/cursor-plugin");
    vec![
        card(
            "claude-code",
            "Claude Code",
            false,
            false,
            &format!(
                "{BOTH} `xmemo connect claude-code --write` writes the .mcp.json entry of the project; in Claude Code run /mcp, pick xmemo and Authenticate."
            ),
            vec![
                recipe(
                    "claude-code",
                    "command",
                    "With OAuth, Claude Code's own command (user scope):",
                    format!("claude mcp add --transport http --scope user xmemo {claude_url}"),
                ),
                recipe(
                    "claude-code",
                    "oauth",
                    "or with OAuth, in .mcp.json of the project:",
                    json_file(
                        "mcpServers",
                        Entry::Map(vec![("type", s("http")), ("url", s(&claude_url))]),
                    ),
                ),
                recipe(
                    "claude-code",
                    "key",
                    "With XMEMO_KEY, in .mcp.json:",
                    json_file(
                        "mcpServers",
                        bridge(
                            base,
                            Some("stdio"),
                            "${XMEMO_KEY}",
                            Some("claude-code"),
                            vec![],
                        ),
                    ),
                ),
            ],
        ),
        card(
            "claude-ai",
            "claude.ai",
            true,
            false,
            "Settings → Connectors → Add custom connector with this URL, then approve memory:read and memory:write on the consent screen.",
            vec![recipe("claude-ai", "url", "Connector URL:", mcp.clone())],
        ),
        card(
            "chatgpt",
            "ChatGPT",
            true,
            false,
            "Settings → Apps & Connectors → Create (developer mode), authentication OAuth, with this MCP server URL.",
            vec![recipe(
                "chatgpt",
                "url",
                "MCP server URL:",
                format!("{mcp}/chatgpt-public"),
            )],
        ),
        card(
            "vscode",
            "VS Code",
            false,
            false,
            &format!(
                "{BOTH} Command Palette → “MCP: Open User Configuration”, or `xmemo connect vscode --write`."
            ),
            vec![
                recipe(
                    "vscode",
                    "oauth",
                    "With OAuth, in mcp.json:",
                    json_file(
                        "servers",
                        Entry::Map(vec![("type", s("http")), ("url", s(&mcp))]),
                    ),
                ),
                recipe(
                    "vscode",
                    "key",
                    "With XMEMO_KEY, in mcp.json:",
                    json_file(
                        "servers",
                        bridge(base, Some("stdio"), "${env:XMEMO_KEY}", None, vec![]),
                    ),
                ),
            ],
        ),
        card(
            "cursor",
            "Cursor",
            false,
            false,
            &format!(
                "{BOTH} Add it to ~/.cursor/mcp.json, or run `xmemo connect cursor --write` (`--auth key` for the key recipe)."
            ),
            vec![
                recipe(
                    "cursor",
                    "oauth",
                    "With OAuth, in ~/.cursor/mcp.json:",
                    json_file("mcpServers", Entry::Map(vec![("url", s(&cursor_url))])),
                ),
                recipe(
                    "cursor",
                    "key",
                    "With XMEMO_KEY, in ~/.cursor/mcp.json:",
                    json_file(
                        "mcpServers",
                        bridge(
                            base,
                            None,
                            "${env:XMEMO_KEY}",
                            Some("cursor-plugin"),
                            vec![],
                        ),
                    ),
                ),
            ],
        ),
        card(
            "codex",
            "Codex",
            false,
            false,
            &format!(
                "{BOTH} Add it to ~/.codex/config.toml, or run `xmemo connect codex --write` (`--auth key` for the key recipe); with OAuth, then run `codex mcp login xmemo`. Codex passes the bridge only the variables env_vars names."
            ),
            vec![
                recipe(
                    "codex",
                    "oauth",
                    oauth_label,
                    toml_table(vec![("url", s(&mcp))]),
                ),
                recipe(
                    "codex",
                    "login",
                    "then:",
                    "codex mcp login xmemo".to_string(),
                ),
                recipe(
                    "codex",
                    "key",
                    "With XMEMO_KEY (forwarded by name):",
                    toml_table(vec![
                        ("command", s("xmemo")),
                        ("args", Entry::Strs(&["mcp"])),
                        ("env", Entry::Map(vec![("XMEMO_URL", s(base))])),
                        (
                            "env_vars",
                            Entry::Strs(&[
                                "XMEMO_KEY",
                                "XMEMO_AGENT_INSTANCE_ID",
                                "XMEMO_AGENT_ID",
                                "XDG_CONFIG_HOME",
                            ]),
                        ),
                    ]),
                ),
            ],
        ),
        card(
            "gemini-cli",
            "Gemini CLI",
            false,
            false,
            &format!(
                "{BOTH} Add it to ~/.gemini/settings.json, or run `xmemo connect gemini-cli --write`; Gemini CLI starts the sign-in when xmemo first answers 401 (else /mcp auth xmemo)."
            ),
            vec![
                recipe(
                    "gemini-cli",
                    "oauth",
                    "With OAuth, in ~/.gemini/settings.json:",
                    json_file("mcpServers", Entry::Map(vec![("httpUrl", s(&mcp))])),
                ),
                recipe(
                    "gemini-cli",
                    "key",
                    "With XMEMO_KEY, in ~/.gemini/settings.json:",
                    json_file("mcpServers", bridge(base, None, "$XMEMO_KEY", None, vec![])),
                ),
            ],
        ),
        card(
            "copilot",
            "Copilot CLI",
            false,
            false,
            &format!(
                "{BOTH} Add it to ~/.copilot/mcp-config.json, or run `xmemo connect copilot --write`; Copilot CLI opens the sign-in the first time it reaches xmemo (/mcp show xmemo shows the state). Its servers inherit only PATH: the key recipe names every variable."
            ),
            vec![
                recipe(
                    "copilot",
                    "oauth",
                    "With OAuth, in ~/.copilot/mcp-config.json:",
                    json_file(
                        "mcpServers",
                        Entry::Map(vec![
                            ("type", s("http")),
                            ("url", s(&mcp)),
                            ("tools", Entry::Strs(&["*"])),
                        ]),
                    ),
                ),
                recipe(
                    "copilot",
                    "key",
                    "With XMEMO_KEY, in ~/.copilot/mcp-config.json:",
                    json_file(
                        "mcpServers",
                        bridge(
                            base,
                            Some("local"),
                            "${XMEMO_KEY}",
                            None,
                            vec![("tools", Entry::Strs(&["*"]))],
                        ),
                    ),
                ),
            ],
        ),
        card(
            "headless",
            "Headless runner",
            false,
            true,
            "Keep XMEMO_KEY in a secret store and a stable XMEMO_AGENT_INSTANCE_ID outside git; the recipe is also served as JSON.",
            vec![
                recipe(
                    "headless",
                    "command",
                    "The recipe as JSON:",
                    format!("curl {base}/api/v1/mcp/config/autonomous-agent"),
                ),
                recipe(
                    "headless",
                    "env",
                    "Environment of the runner:",
                    format!(
                        "export XMEMO_URL={base}\nexport XMEMO_KEY=…   # from a secret store (API keys page)\nexport XMEMO_AGENT_INSTANCE_ID=runner-1\nxmemo mcp          # stdio bridge; or POST {mcp} with\n                   # Authorization: Bearer $XMEMO_KEY"
                    ),
                ),
            ],
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

    #[test]
    fn recipe_ids_are_unique_and_no_recipe_holds_a_key() {
        let cards = cards("https://memory.example.com");
        let mut ids: Vec<&str> = cards
            .iter()
            .flat_map(|c| c.recipes.iter().map(|r| r.id.as_str()))
            .collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "recipe ids repeat");
        for c in &cards {
            for r in &c.recipes {
                assert!(!r.text.contains("xmk_"), "{}", r.id);
            }
        }
    }
}
