//! What each MCP client needs: where its configuration lives, in which format, and the entry
//! that connects it to xmemo. Sources and assumptions per client: docs/clients.md.
//!
//! Two ways in. `oauth`: the remote URL only; the client signs in through the server's OAuth
//! flow and no secret is ever in the file. `key`: the stdio bridge `xmemo mcp`, with
//! `XMEMO_URL` in the entry and `XMEMO_KEY` named by reference in the client's own syntax, so
//! the client reads the key from its environment when it starts the bridge.

use super::entry::Node;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeCode,
    Cursor,
    Codex,
    Vscode,
    GeminiCli,
    /// GitHub Copilot CLI (`copilot`)
    Copilot,
    Headless,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Auth {
    /// Remote URL; the client signs in with OAuth (no secret in the file)
    Oauth,
    /// The stdio bridge `xmemo mcp` with XMEMO_KEY taken from the environment by reference
    Key,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A JSON file whose servers live under this top-level key.
    Json { servers_key: &'static str },
    /// A TOML file with one `[mcp_servers.<name>]` table per server.
    Toml,
}

/// The name the entry is written under.
pub const SERVER_NAME: &str = "xmemo";
/// Variables the bridge reads beside XMEMO_URL and XMEMO_KEY; clients that pass only the
/// variables they are told to (Codex) get these named too.
const BRIDGE_PASSTHROUGH: [&str; 4] = [
    "XMEMO_KEY",
    "XMEMO_AGENT_INSTANCE_ID",
    "XMEMO_AGENT_ID",
    "XDG_CONFIG_HOME",
];

impl Client {
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Codex => "codex",
            Client::Vscode => "vscode",
            Client::GeminiCli => "gemini-cli",
            Client::Copilot => "copilot",
            Client::Headless => "headless",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Codex => "Codex",
            Client::Vscode => "VS Code",
            Client::GeminiCli => "Gemini CLI",
            Client::Copilot => "Copilot CLI",
            Client::Headless => "Headless runner",
        }
    }

    /// Every client with a configuration file signs in with OAuth by default: each documents
    /// the MCP authorization flow for remote servers (docs/clients.md). A headless runner has
    /// no browser: it uses a key.
    pub fn default_auth(self) -> Auth {
        match self {
            Client::Headless => Auth::Key,
            _ => Auth::Oauth,
        }
    }

    /// The client profile whose tools fit this client (config/mcp-documentation-contract.json);
    /// `None`: the profile of the credential.
    pub fn default_profile(self) -> Option<&'static str> {
        match self {
            Client::ClaudeCode => Some("claude-code"),
            Client::Cursor => Some("cursor-plugin"),
            _ => None,
        }
    }

    pub fn format(self) -> Option<Format> {
        match self {
            Client::ClaudeCode | Client::Cursor | Client::GeminiCli | Client::Copilot => {
                Some(Format::Json {
                    servers_key: "mcpServers",
                })
            }
            Client::Vscode => Some(Format::Json {
                servers_key: "servers",
            }),
            Client::Codex => Some(Format::Toml),
            Client::Headless => None,
        }
    }

    /// The file `--write` edits when `--config` names none.
    pub fn default_config_path(self) -> Option<PathBuf> {
        let home = home_dir();
        match self {
            // Project scope: Claude Code's documented, hand-editable file. The user scope lives
            // in ~/.claude.json, which Claude Code rewrites itself while it runs.
            Client::ClaudeCode => Some(
                std::env::current_dir()
                    .map(|d| d.join(".mcp.json"))
                    .unwrap_or_else(|_| PathBuf::from(".mcp.json")),
            ),
            Client::Cursor => home.map(|h| h.join(".cursor").join("mcp.json")),
            Client::Codex => std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| home.map(|h| h.join(".codex")))
                .map(|d| d.join("config.toml")),
            Client::Vscode => vscode_user_dir().map(|d| d.join("mcp.json")),
            Client::GeminiCli => home.map(|h| h.join(".gemini").join("settings.json")),
            // COPILOT_HOME moves Copilot CLI's whole configuration folder (docs/clients.md).
            Client::Copilot => std::env::var_os("COPILOT_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| home.map(|h| h.join(".copilot")))
                .map(|d| d.join("mcp-config.json")),
            Client::Headless => None,
        }
    }

    /// How this client writes "the value of environment variable NAME" in its configuration.
    fn env_reference(self, name: &str) -> String {
        match self {
            // Copilot CLI expands only the `${NAME}` form (a bare name stays literal).
            Client::ClaudeCode | Client::Copilot => format!("${{{name}}}"),
            Client::Cursor | Client::Vscode => format!("${{env:{name}}}"),
            Client::GeminiCli => format!("${name}"),
            // Codex forwards named variables (`env_vars`) instead; headless sets them itself.
            Client::Codex | Client::Headless => name.to_string(),
        }
    }
}

/// What `xmemo connect` produces for one client.
pub struct Plan {
    pub client: Client,
    pub auth: Auth,
    pub profile: Option<String>,
    /// Server base URL, without a trailing slash.
    pub base_url: String,
    pub mcp_url: String,
    /// The server entry (for TOML: the fields of `[mcp_servers.xmemo]`).
    pub entry: Node,
    /// The client's own command that adds the same entry, when it has one worth showing.
    pub command: Option<Vec<String>>,
    pub next_steps: Vec<String>,
}

pub fn plan(client: Client, auth: Auth, base_url: &str, profile: Option<&str>) -> Plan {
    let profile = profile.map(str::to_string);
    let mcp_url = match &profile {
        Some(p) => format!("{base_url}/mcp/{p}"),
        None => format!("{base_url}/mcp"),
    };
    // Headless runners have no browser for a consent screen: they always get the key recipe.
    let auth = if client == Client::Headless {
        Auth::Key
    } else {
        auth
    };
    let (entry, command, next_steps) = match auth {
        Auth::Oauth => oauth_entry(client, &mcp_url)
            .unwrap_or_else(|| key_entry(client, base_url, profile.as_deref())),
        Auth::Key => key_entry(client, base_url, profile.as_deref()),
    };
    Plan {
        client,
        auth,
        profile,
        base_url: base_url.to_string(),
        mcp_url,
        entry,
        command,
        next_steps,
    }
}

type Parts = (Node, Option<Vec<String>>, Vec<String>);

fn oauth_entry(client: Client, mcp_url: &str) -> Option<Parts> {
    let url = Node::str(mcp_url);
    let sign_in = "approve memory:read and memory:write on the consent screen";
    Some(match client {
        Client::ClaudeCode => (
            Node::map(vec![("type", Node::str("http")), ("url", url)]),
            Some(
                [
                    "claude",
                    "mcp",
                    "add",
                    "--transport",
                    "http",
                    "--scope",
                    "user",
                    SERVER_NAME,
                    mcp_url,
                ]
                .map(String::from)
                .to_vec(),
            ),
            vec![
                "Claude Code asks once to trust the servers of a project's .mcp.json.".into(),
                format!("In Claude Code run /mcp, pick xmemo, choose Authenticate and {sign_in}."),
            ],
        ),
        Client::Cursor => (
            Node::map(vec![("url", url)]),
            None,
            vec![format!(
                "In Cursor Settings → MCP, xmemo shows \"Needs login\": click it and {sign_in}."
            )],
        ),
        Client::Vscode => (
            Node::map(vec![("type", Node::str("http")), ("url", url)]),
            None,
            vec![format!(
                "Start xmemo (Command Palette → MCP: List Servers → xmemo → Start); VS Code opens the sign-in: {sign_in}."
            )],
        ),
        Client::Codex => (
            Node::map(vec![("url", url)]),
            None,
            vec![format!(
                "Run `codex mcp login xmemo` and, in the browser it opens, {sign_in}."
            )],
        ),
        Client::GeminiCli => (
            Node::map(vec![("httpUrl", url)]),
            None,
            vec![format!(
                "Gemini CLI starts the sign-in when xmemo first answers 401 (else run /mcp auth xmemo); {sign_in}."
            )],
        ),
        Client::Copilot => (
            Node::map(vec![
                ("type", Node::str("http")),
                ("url", url),
                ("tools", Node::strs(&["*"])),
            ]),
            None,
            vec![format!(
                "Start `copilot`: it opens the browser sign-in the first time it reaches xmemo (Copilot CLI 0.0.389 or later; `/mcp show xmemo` shows the state); {sign_in}."
            )],
        ),
        Client::Headless => return None,
    })
}

fn key_entry(client: Client, base_url: &str, profile: Option<&str>) -> Parts {
    let mut env = vec![("XMEMO_URL", Node::str(base_url))];
    let export = "Export XMEMO_KEY (from your secret store; never in a file in git) in the environment the client starts from.".to_string();
    let instance = "Optional: export XMEMO_AGENT_INSTANCE_ID (stable, not secret); without it the bridge keeps one in ~/.config/xmemo/agent-instance-id. `xmemo doctor` shows which.".to_string();
    let command = Node::str("xmemo");
    let args = Node::strs(&["mcp"]);
    if client == Client::Codex {
        if let Some(p) = profile {
            env.push(("XMEMO_PROFILE", Node::str(p)));
        }
        let entry = Node::map(vec![
            ("command", command),
            ("args", args),
            ("env", Node::map(env)),
            ("env_vars", Node::strs(&BRIDGE_PASSTHROUGH)),
        ]);
        return (
            entry,
            None,
            vec![
                format!("{export} Codex passes it to the bridge (env_vars)."),
                instance,
            ],
        );
    }
    env.push(("XMEMO_KEY", Node::str(client.env_reference("XMEMO_KEY"))));
    if let Some(p) = profile {
        env.push(("XMEMO_PROFILE", Node::str(p)));
    }
    let mut fields = Vec::new();
    if matches!(client, Client::ClaudeCode | Client::Vscode) {
        fields.push(("type", Node::str("stdio")));
    }
    if client == Client::Copilot {
        fields.push(("type", Node::str("local")));
    }
    fields.extend([
        ("command", command),
        ("args", args),
        ("env", Node::map(env)),
    ]);
    let mut steps = vec![export, instance];
    if client == Client::Copilot {
        // Copilot CLI requires the list of tools it may call; its servers inherit only PATH,
        // so every other variable the bridge reads has to be in `env`.
        fields.push(("tools", Node::strs(&["*"])));
        steps[1] = "Optional: add XMEMO_AGENT_INSTANCE_ID (stable, not secret) to the entry's env: Copilot CLI passes the bridge only PATH and what `env` names. `xmemo doctor` shows which id is used.".into();
    }
    (Node::map(fields), None, steps)
}

fn home_dir() -> Option<PathBuf> {
    #[cfg(windows)]
    let var = "USERPROFILE";
    #[cfg(not(windows))]
    let var = "HOME";
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// VS Code's user directory, where its user-profile `mcp.json` lives.
fn vscode_user_dir() -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        home_dir().map(|h| h.join("Library/Application Support/Code/User"))
    } else if cfg!(windows) {
        std::env::var_os("APPDATA").map(|a| PathBuf::from(a).join("Code").join("User"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home_dir().map(|h| h.join(".config")))
            .map(|d| d.join("Code").join("User"))
    }
}
