//! The MCP clients' configuration files, checked (issue #31, item 6: "verify the MCP config
//! path, XMEMO_KEY for direct clients, and any stale OAuth credential"): each client whose
//! file is where `xmemo connect` writes it (or the one `--client`/`--config` name) gets a
//! `client_config` check — an xmemo entry there, reaching this server, the key by reference —
//! and an entry that signs in with OAuth gets the state of the account's grants for it.

use super::{Check, Probe, Status};
use crate::connect::clients::Client;
use crate::connect::inspect::{Finding, inspect};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Every client with a configuration file of its own.
const CLIENTS: [Client; 6] = [
    Client::ClaudeCode,
    Client::Cursor,
    Client::Codex,
    Client::Vscode,
    Client::GeminiCli,
    Client::Copilot,
];

/// The checks of the files to look at: `config` for `client` when given, else every client's
/// default file that exists. `key`: the caller's key, to read the account's OAuth grants.
pub async fn client_config_checks(
    probe: &Probe,
    key: Option<&str>,
    client: Option<Client>,
    config: Option<PathBuf>,
) -> Vec<Check> {
    let targets: Vec<(Client, PathBuf, bool)> = match (client, config) {
        (Some(c), Some(path)) => vec![(c, path, true)],
        (Some(c), None) => c
            .default_config_path()
            .map(|p| vec![(c, p, true)])
            .unwrap_or_default(),
        (None, _) => CLIENTS
            .iter()
            .filter_map(|c| c.default_config_path().map(|p| (*c, p, false)))
            .filter(|(_, p, _)| p.is_file())
            .collect(),
    };
    if targets.is_empty() {
        return vec![Check::new(
            "client_config",
            Status::Skip,
            "no MCP client configuration file found where `xmemo connect` writes them (name one with --client and --config)",
        )];
    }
    let mut out = Vec::new();
    for (client, path, named) in targets {
        out.push(file_check(probe, key, client, &path, named).await);
    }
    out
}

async fn file_check(
    probe: &Probe,
    key: Option<&str>,
    client: Client,
    path: &std::path::Path,
    named: bool,
) -> Check {
    let shown = path.display().to_string();
    let write = format!("xmemo connect {} --config {shown} --write", client.name());
    let data = json!({"client": client.name(), "path": shown});
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && named => {
            return Check::new(
                "client_config",
                Status::Fail,
                format!("{}: there is no {shown}", client.title()),
            )
            .fix(write)
            .data(data);
        }
        Err(e) => {
            return Check::new(
                "client_config",
                Status::Fail,
                format!("{}: {shown} cannot be read ({e})", client.title()),
            )
            .data(data);
        }
    };
    match inspect(client, &text, &probe.base) {
        Finding::Good { entry, oauth: false } => Check::new(
            "client_config",
            Status::Pass,
            format!(
                "{}: entry `{entry}` in {shown} runs the bridge against {} with XMEMO_KEY by reference",
                client.title(),
                probe.base
            ),
        )
        .data(data),
        Finding::Good { entry, oauth: true } => {
            grant_check(probe, key, client, &entry, &shown, data).await
        }
        Finding::Unreadable(why) => Check::new(
            "client_config",
            Status::Warn,
            format!("{}: {shown} is {why}: its xmemo entry cannot be checked", client.title()),
        )
        .data(data),
        Finding::NoEntry => Check::new(
            "client_config",
            Status::Fail,
            format!("{}: {shown} has no xmemo entry", client.title()),
        )
        .fix(write)
        .data(data),
        Finding::OtherServer { entry, url } => Check::new(
            "client_config",
            Status::Fail,
            format!(
                "{}: entry `{entry}` in {shown} reaches {url}, not this server ({})",
                client.title(),
                probe.base
            ),
        )
        .fix(write)
        .data(data),
        Finding::LiteralSecret { entry, field } => Check::new(
            "client_config",
            Status::Fail,
            format!(
                "{}: entry `{entry}` in {shown} holds a secret in clear ({field}); anyone who reads the file (or its git history) has it",
                client.title()
            ),
        )
        .fix(format!(
            "xmemo connect {} --auth key --config {shown} --write (names XMEMO_KEY by reference), then revoke that key: xmemo keys list / xmemo keys revoke ID",
            client.name()
        ))
        .data(data),
    }
}

/// An OAuth entry: whether the account holds a live grant for this server's MCP endpoint.
async fn grant_check(
    probe: &Probe,
    key: Option<&str>,
    client: Client,
    entry: &str,
    shown: &str,
    data: Value,
) -> Check {
    let signs_in = format!(
        "{}: entry `{entry}` in {shown} signs in to {} with OAuth",
        client.title(),
        probe.base
    );
    let Some(key) = key else {
        return Check::new(
            "client_config",
            Status::Pass,
            format!("{signs_in}; set XMEMO_KEY to see whether it holds a live grant"),
        )
        .data(data);
    };
    let grants = match probe.get("/api/v1/oauth/grants?limit=100", Some(key)).await {
        Ok(a) if a.status == 200 => a.json().unwrap_or(Value::Null),
        Ok(a) => {
            return Check::new(
                "client_config",
                Status::Warn,
                format!(
                    "{signs_in}; its grants cannot be listed (HTTP {})",
                    a.status
                ),
            )
            .data(data);
        }
        Err(e) => {
            return Check::new(
                "client_config",
                Status::Warn,
                format!("{signs_in}; its grants cannot be listed ({e})"),
            )
            .data(data);
        }
    };
    let mcp = format!("{}/mcp", probe.base);
    let live: Vec<&Value> = grants["grants"]
        .as_array()
        .map(|g| {
            g.iter()
                .filter(|g| {
                    g["resource"]
                        .as_str()
                        .is_some_and(|r| r == mcp || r.starts_with(&format!("{mcp}/")))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut data = data;
    data["live_grants"] = json!(live.len());
    match live.first() {
        Some(g) => Check::new(
            "client_config",
            Status::Pass,
            format!(
                "{signs_in}; this account holds {} live grant(s), latest by {} on {}",
                live.len(),
                g["client_name"].as_str().unwrap_or("?"),
                g["created_at"].as_str().unwrap_or("?")
            ),
        )
        .data(data),
        None => Check::new(
            "client_config",
            Status::Warn,
            format!(
                "{signs_in}, but this account holds no live grant for it: the client has not signed in yet, signed in as another account, or its grant was revoked (a client that still holds the old token gets 401 until it signs in again)"
            ),
        )
        .fix(format!(
            "sign in again from {} (`xmemo connect {}` prints how); the console's Grants page lists what is approved",
            client.title(),
            client.name()
        ))
        .data(data),
    }
}
