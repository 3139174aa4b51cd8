//! Reads a client's MCP configuration file the way `xmemo doctor` checks it (issue #31, item
//! 6): is there an xmemo entry, does it reach this server, and does it name the key by
//! reference rather than hold it. Read only; `xmemo connect --write` is the fix it suggests.

use super::clients::{Client, Format, SERVER_NAME};
use serde_json::Value;
use std::path::Path;

/// What one configuration file says about xmemo.
#[derive(Debug, PartialEq, Eq)]
pub enum Finding {
    /// The entry reaches `base_url` and holds no secret; `oauth` when it is a remote URL.
    Good {
        entry: String,
        oauth: bool,
    },
    Unreadable(String),
    NoEntry,
    /// The entry reaches another server (the URL it names).
    OtherServer {
        entry: String,
        url: String,
    },
    /// A key or token is written in the file (where: the field that holds it).
    LiteralSecret {
        entry: String,
        field: String,
    },
}

/// Prefixes of xmemo's secrets (API keys, OAuth access and refresh tokens): a value starting
/// with one is a secret written in clear.
const SECRET_PREFIXES: [&str; 3] = ["xmk_", "xmat_", "xmrt_"];

/// Checks `text`, the contents of `client`'s configuration file, against `base_url`.
pub fn inspect(client: Client, text: &str, base_url: &str) -> Finding {
    let servers = match client.format() {
        Some(Format::Json { servers_key }) => {
            let body = text.strip_prefix('\u{feff}').unwrap_or(text);
            match serde_json::from_str::<Value>(body) {
                Ok(doc) => doc.get(servers_key).cloned().unwrap_or(Value::Null),
                Err(e) => return Finding::Unreadable(format!("not plain JSON ({e})")),
            }
        }
        Some(Format::Toml) => match toml::from_str::<toml::Table>(text) {
            Ok(doc) => doc
                .get("mcp_servers")
                .and_then(|s| serde_json::to_value(s).ok())
                .unwrap_or(Value::Null),
            Err(e) => return Finding::Unreadable(format!("not valid TOML ({})", e.message())),
        },
        None => return Finding::NoEntry,
    };
    let Some(servers) = servers.as_object() else {
        return Finding::NoEntry;
    };
    // The entry `connect` writes, else any entry that runs the bridge or names an MCP URL of
    // an xmemo-looking server (a hand-written entry under another name).
    let found = servers
        .get_key_value(SERVER_NAME)
        .or_else(|| servers.iter().find(|(_, e)| runs_bridge(e)));
    let Some((name, entry)) = found else {
        return Finding::NoEntry;
    };
    let entry_name = name.clone();
    if let Some(field) = literal_secret(entry, "") {
        return Finding::LiteralSecret {
            entry: entry_name,
            field,
        };
    }
    let wanted = base_url.trim_end_matches('/');
    let remote = ["url", "httpUrl", "serverUrl"]
        .iter()
        .find_map(|k| entry.get(*k).and_then(Value::as_str));
    let reached = remote.or_else(|| entry.pointer("/env/XMEMO_URL").and_then(Value::as_str));
    match reached {
        Some(url) if reaches(url, wanted) => Finding::Good {
            entry: entry_name,
            oauth: remote.is_some(),
        },
        Some(url) => Finding::OtherServer {
            entry: entry_name,
            url: url.to_string(),
        },
        // A bridge entry without XMEMO_URL reaches the default server.
        None if reaches(crate::client::DEFAULT_URL, wanted) => Finding::Good {
            entry: entry_name,
            oauth: false,
        },
        None => Finding::OtherServer {
            entry: entry_name,
            url: format!("{} (no XMEMO_URL in its env)", crate::client::DEFAULT_URL),
        },
    }
}

fn runs_bridge(entry: &Value) -> bool {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let first_arg = entry.pointer("/args/0").and_then(Value::as_str);
    Path::new(command).file_name().and_then(|n| n.to_str()) == Some("xmemo")
        && first_arg == Some("mcp")
}

/// Whether `url` (a base URL, or its `/mcp` endpoint with or without a profile) is on the
/// server at `base`.
fn reaches(url: &str, base: &str) -> bool {
    let url = url.trim_end_matches('/');
    url == base
        || url
            .strip_prefix(base)
            .is_some_and(|rest| rest == "/mcp" || rest.starts_with("/mcp/"))
}

/// The path of the first string in `value` that is a secret written in clear: a value with
/// one of xmemo's secret prefixes, or an `XMEMO_KEY` that is not a reference to the
/// environment (`${XMEMO_KEY}`, `${env:XMEMO_KEY}`, `$XMEMO_KEY`).
fn literal_secret(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::String(s) => {
            let is_secret = SECRET_PREFIXES.iter().any(|p| s.contains(p))
                || (path.ends_with("/XMEMO_KEY") && !s.contains('$') && !s.trim().is_empty());
            is_secret.then(|| path.trim_start_matches('/').to_string())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| literal_secret(v, &format!("{path}/{i}"))),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| literal_secret(v, &format!("{path}/{k}"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "http://127.0.0.1:8420";

    #[test]
    fn a_connect_entry_is_good_and_oauth_when_remote() {
        let oauth = r#"{"mcpServers": {"xmemo": {"type": "http", "url": "http://127.0.0.1:8420/mcp/claude-code"}}}"#;
        assert_eq!(
            inspect(Client::ClaudeCode, oauth, BASE),
            Finding::Good {
                entry: "xmemo".into(),
                oauth: true
            }
        );
        let key = "[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\nenv = { XMEMO_URL = \"http://127.0.0.1:8420\" }\nenv_vars = [\"XMEMO_KEY\"]\n";
        assert_eq!(
            inspect(Client::Codex, key, BASE),
            Finding::Good {
                entry: "xmemo".into(),
                oauth: false
            }
        );
    }

    #[test]
    fn missing_entries_other_servers_and_literal_keys_are_found() {
        assert_eq!(
            inspect(
                Client::Cursor,
                r#"{"mcpServers": {"other": {"url": "https://x.example/mcp"}}}"#,
                BASE
            ),
            Finding::NoEntry
        );
        assert_eq!(
            inspect(
                Client::Cursor,
                r#"{"mcpServers": {"xmemo": {"url": "http://10.0.0.9:8420/mcp"}}}"#,
                BASE
            ),
            Finding::OtherServer {
                entry: "xmemo".into(),
                url: "http://10.0.0.9:8420/mcp".into()
            }
        );
        // A prefix of the URL is not the server (`:84200`).
        assert!(matches!(
            inspect(
                Client::Cursor,
                r#"{"mcpServers": {"xmemo": {"url": "http://127.0.0.1:84200/mcp"}}}"#,
                BASE
            ),
            Finding::OtherServer { .. }
        ));
        let literal = r#"{"mcpServers": {"memory": {"command": "/usr/local/bin/xmemo", "args": ["mcp"], "env": {"XMEMO_URL": "http://127.0.0.1:8420", "XMEMO_KEY": "hunter2"}}}}"#;
        assert_eq!(
            inspect(Client::GeminiCli, literal, BASE),
            Finding::LiteralSecret {
                entry: "memory".into(),
                field: "env/XMEMO_KEY".into()
            }
        );
        let header = r#"{"servers": {"xmemo": {"type": "http", "url": "http://127.0.0.1:8420/mcp", "headers": {"Authorization": "Bearer xmk_abc"}}}}"#;
        assert_eq!(
            inspect(Client::Vscode, header, BASE),
            Finding::LiteralSecret {
                entry: "xmemo".into(),
                field: "headers/Authorization".into()
            }
        );
        assert!(matches!(
            inspect(Client::Cursor, "{ // comment\n}", BASE),
            Finding::Unreadable(_)
        ));
    }
}
