//! `xmemo connect CLIENT`: the MCP configuration that connects one client to xmemo, printed,
//! or merged into the client's own configuration file with `--write`.
//!
//! This is the source of truth for the copy-paste configurations of docs/mcp.md (a test
//! compares them). No secret is ever printed or written: OAuth entries carry only the URL, key
//! entries name `XMEMO_KEY` by reference.

pub(crate) mod clients;
mod entry;
mod headless;
pub(crate) mod inspect;
mod json_doc;
mod toml_doc;
mod write;

use crate::output::print_result;
use anyhow::{Context, bail};
use clients::{Auth, Client, Format, Plan, SERVER_NAME};
use json_doc::Merge;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ConnectArgs {
    /// The MCP client to connect
    #[arg(value_enum)]
    pub client: Client,
    /// Server base URL
    #[arg(long, env = "XMEMO_URL", default_value = crate::client::DEFAULT_URL)]
    pub url: String,
    /// Client profile to connect as (/mcp/{profile}) [default: claude-code for Claude Code,
    /// cursor-plugin for Cursor, else the credential's own]
    #[arg(long)]
    pub profile: Option<String>,
    /// oauth: the remote URL, the client signs in (no secret in the file); key: the stdio
    /// bridge `xmemo mcp` reading XMEMO_KEY from the environment [default: oauth; headless: key]
    #[arg(long, value_enum)]
    pub auth: Option<Auth>,
    /// Merge the entry into the client's configuration file, keeping everything else in it
    /// (the original is kept as <file>.bak)
    #[arg(long)]
    pub write: bool,
    /// The configuration file [default: the client's usual one, e.g. ~/.cursor/mcp.json]
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: ConnectArgs) -> anyhow::Result<()> {
    let base = base_url(&args.url)?;
    let profile = match args.profile.as_deref().map(str::trim) {
        Some(p) => Some(checked_profile(p)?),
        None => args.client.default_profile().map(str::to_string),
    };
    if args.client == Client::Headless {
        if args.write || args.config.is_some() {
            bail!(
                "a headless runner has no configuration file: `xmemo connect headless` prints the \
                 environment to set; drop --write / --config"
            );
        }
        return headless::run(&base, profile.as_deref(), args.json).await;
    }
    let auth = args.auth.unwrap_or(args.client.default_auth());
    let plan = clients::plan(args.client, auth, &base, profile.as_deref());
    let again = rerun(&plan, args.config.as_deref());
    let Some(format) = args.client.format() else {
        bail!("{} has no configuration file", args.client.title());
    };
    let snippet = snippet(&plan, format);
    refuse_secrets(
        plan.entry
            .strings()
            .into_iter()
            .chain(std::iter::once(snippet.as_str())),
    )?;
    let path = args
        .config
        .clone()
        .or_else(|| args.client.default_config_path());

    let outcome = if args.write {
        let path = path.as_deref().context(
            "cannot tell where the client's configuration file is (no home directory); pass --config PATH",
        )?;
        Some(write_entry(&plan, format, path, &again)?)
    } else {
        None
    };
    let answer = json_answer(&plan, format, &snippet, path.as_deref(), outcome.as_ref());
    print_result(args.json, answer, |_| {
        print_text(&plan, &snippet, path.as_deref(), outcome.as_ref(), &again);
        Ok(())
    })
}

/// `http(s)://host[:port][/base]`, without a trailing slash; credentials, queries and
/// fragments are refused (a configuration file must not carry a password).
pub(crate) fn base_url(text: &str) -> anyhow::Result<String> {
    let text = if text.trim().is_empty() {
        crate::client::DEFAULT_URL
    } else {
        text.trim()
    };
    let url = reqwest::Url::parse(text)
        .with_context(|| format!("the server URL `{text}` (XMEMO_URL or --url) is not valid"))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!("the server URL `{text}` must start with http:// or https://");
    }
    if !url.username().is_empty() || url.password().is_some() {
        bail!("the server URL must not carry a user name or password");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!("the server URL must not have a query or fragment: give the server's base URL");
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

fn checked_profile(p: &str) -> anyhow::Result<String> {
    let ok = !p.is_empty()
        && p.len() <= 64
        && p.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !ok {
        bail!("--profile `{p}` is not a profile name (lowercase letters, digits, `-`, `_`)");
    }
    Ok(p.to_string())
}

/// Stops if anything about to be shown or written holds the value of XMEMO_KEY. The entries
/// only ever name it; this guards the rule against a future mistake (or a key pasted as URL).
fn refuse_secrets<'a>(texts: impl Iterator<Item = &'a str>) -> anyhow::Result<()> {
    let key = std::env::var("XMEMO_KEY").unwrap_or_default();
    let key = key.trim();
    if key.len() < 8 {
        return Ok(());
    }
    for text in texts {
        if text.contains(key) {
            bail!("refusing to print or write XMEMO_KEY's value into a client configuration");
        }
    }
    Ok(())
}

/// The smallest complete configuration holding the entry, as the client's file writes it.
fn snippet(plan: &Plan, format: Format) -> String {
    match format {
        Format::Json { servers_key } => entry::Node::map(vec![(
            servers_key,
            entry::Node::map(vec![(SERVER_NAME, plan.entry.clone())]),
        )])
        .json_pretty("", "  "),
        Format::Toml => match &plan.entry {
            entry::Node::Map(fields) => {
                entry::toml_table_block(&["mcp_servers", SERVER_NAME], fields)
                    .trim_end()
                    .to_string()
            }
            other => other.toml_inline(),
        },
    }
}

struct Outcome {
    path: PathBuf,
    changed: bool,
    created: bool,
    replaced: bool,
    backup: Option<PathBuf>,
    warnings: Vec<String>,
}

/// The `xmemo connect …` words that give this plan again (without `--write`): the client and
/// every choice that differs from its default, so a suggested command keeps `--auth key`.
fn rerun(plan: &Plan, config: Option<&Path>) -> String {
    let client = plan.client;
    let mut words = vec!["xmemo".to_string(), "connect".into(), client.name().into()];
    if plan.auth != client.default_auth() {
        let auth = match plan.auth {
            Auth::Oauth => "oauth",
            Auth::Key => "key",
        };
        words.extend(["--auth".into(), auth.into()]);
    }
    if let Some(p) = plan
        .profile
        .as_deref()
        .filter(|p| Some(*p) != client.default_profile())
    {
        words.extend(["--profile".into(), p.to_string()]);
    }
    if let Some(c) = config {
        words.extend(["--config".into(), c.display().to_string()]);
    }
    shell_words(&words)
}

fn write_entry(plan: &Plan, format: Format, path: &Path, again: &str) -> anyhow::Result<Outcome> {
    let target =
        write::resolve(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let original = match std::fs::read(&target) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", target.display())),
    };
    let text = match &original {
        Some(bytes) => std::str::from_utf8(bytes)
            .with_context(|| format!("{} is not UTF-8 text", target.display()))?,
        None => "",
    };
    let merged = match format {
        Format::Json { servers_key } => json_doc::merge(text, servers_key, SERVER_NAME, &plan.entry),
        Format::Toml => match &plan.entry {
            entry::Node::Map(fields) => {
                toml_doc::merge(text, &["mcp_servers", SERVER_NAME], fields)
            }
            _ => Err("the entry is not a table".into()),
        },
    }
    .map_err(|why| {
        anyhow::anyhow!(
            "cannot merge the xmemo entry into {}: {why}. Add it by hand: run `{again}` (without --write) and paste what it prints",
            target.display(),
        )
    })?;
    match merged {
        Merge::Unchanged => Ok(Outcome {
            path: target,
            changed: false,
            created: false,
            replaced: false,
            backup: None,
            warnings: Vec::new(),
        }),
        Merge::Changed { text, replaced } => {
            let written = write::replace(&target, original.as_deref(), &text)
                .with_context(|| format!("cannot write {}", target.display()))?;
            let mut warnings = Vec::new();
            if let (Some(bak), Some(bytes)) = (&written.backup, &original)
                && holds_key(bytes)
            {
                warnings.push(format!(
                    "{} (the previous file) holds what looks like an xmemo API key in plain text: delete the backup once you have checked the new file, and revoke that key if the file was ever shared or committed",
                    bak.display()
                ));
            }
            Ok(Outcome {
                path: written.path,
                changed: true,
                created: written.created,
                replaced,
                backup: written.backup,
                warnings,
            })
        }
    }
}

/// An `xmk_` key (prefix and 43 characters) or the value of XMEMO_KEY, anywhere in `bytes`.
fn holds_key(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let env = std::env::var("XMEMO_KEY").unwrap_or_default();
    if env.trim().len() >= 8 && text.contains(env.trim()) {
        return true;
    }
    let prefix = xmemo_server::auth::KEY_PREFIX;
    text.match_indices(prefix).any(|(i, _)| {
        text[i + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .count()
            >= 40
    })
}

fn auth_label(auth: Auth) -> &'static str {
    match auth {
        Auth::Oauth => "OAuth sign-in, no secret in the file",
        Auth::Key => "stdio bridge `xmemo mcp`, XMEMO_KEY read from the environment",
    }
}

fn print_text(
    plan: &Plan,
    snippet: &str,
    path: Option<&Path>,
    outcome: Option<&Outcome>,
    again: &str,
) {
    match outcome {
        None => {
            println!("# {} ({})", plan.client.title(), auth_label(plan.auth));
            match path {
                Some(p) => println!(
                    "# Merge into {}, or let `{again} --write` do it:",
                    p.display()
                ),
                None => println!("# Merge into the client's configuration file:"),
            }
            println!("{snippet}");
            if let Some(cmd) = &plan.command {
                println!("# Or add it with the client's own command:");
                println!("{}", shell_words(cmd));
            }
        }
        Some(o) => {
            let shown = o.path.display();
            let bak = o
                .backup
                .as_ref()
                .map(|b| format!(" (the previous file is {})", b.display()))
                .unwrap_or_default();
            if !o.changed {
                println!("{shown} already has this xmemo entry; nothing written.");
            } else if o.created {
                println!("Created {shown} with the xmemo entry.");
            } else if o.replaced {
                println!("Replaced the xmemo entry in {shown}{bak}.");
            } else {
                println!("Added xmemo to {shown}{bak}.");
            }
            for w in &o.warnings {
                println!("Warning: {w}");
            }
        }
    }
    for step in &plan.next_steps {
        println!("# Then: {step}");
    }
}

fn json_answer(
    plan: &Plan,
    format: Format,
    snippet: &str,
    path: Option<&Path>,
    outcome: Option<&Outcome>,
) -> serde_json::Value {
    let write = outcome.map(|o| {
        json!({
            "path": o.path.display().to_string(),
            "changed": o.changed,
            "created": o.created,
            "replaced": o.replaced,
            "backup": o.backup.as_ref().map(|b| b.display().to_string()),
            "warnings": o.warnings,
        })
    });
    json!({
        "client": plan.client.name(),
        "auth": plan.auth,
        "profile": plan.profile,
        "mcp_url": plan.mcp_url,
        "server_url": plan.base_url,
        "config_path": path.map(|p| p.display().to_string()),
        "format": match format { Format::Json { .. } => "json", Format::Toml => "toml" },
        "entry": plan.entry.to_json(),
        "snippet": snippet,
        "command": plan.command,
        "next_steps": plan.next_steps,
        "write": write,
    })
}

/// A command line a POSIX shell reads back as these words (single quotes where needed, so
/// `${VAR}` reaches the program unexpanded).
pub(crate) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | '@' | ',' | '+')
        });
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalised_and_credentials_refused() {
        assert_eq!(
            base_url("https://Memory.Example.com/").unwrap(),
            "https://memory.example.com"
        );
        assert_eq!(
            base_url("http://127.0.0.1:8420/x/").unwrap(),
            "http://127.0.0.1:8420/x"
        );
        assert_eq!(base_url("").unwrap(), crate::client::DEFAULT_URL);
        for bad in ["ftp://h", "https://u:p@h", "https://h/?a=1", "nope"] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shell_words_keep_references_unexpanded() {
        assert_eq!(
            shell_words(&["a".into(), "X=${K}".into(), "it's".into()]),
            r"a 'X=${K}' 'it'\''s'"
        );
    }

    #[test]
    fn keys_in_files_are_noticed() {
        let key = format!("{}{}", xmemo_server::auth::KEY_PREFIX, "A".repeat(43));
        assert!(holds_key(format!("{{\"k\": \"{key}\"}}").as_bytes()));
        assert!(!holds_key(b"{\"k\": \"xmk_...\"}"));
    }
}
