//! Server settings: flag > environment > `xmemo.toml` > default (SPEC §11).

use anyhow::Context;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8420";
pub const DEFAULT_DATA_DIR: &str = "./xmemo-data";

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Address to listen on [env: XMEMO_LISTEN] [default: 127.0.0.1:8420]
    #[arg(long)]
    pub listen: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
    /// Public base URL clients use to reach this server (defaults to http://<listen>)
    #[arg(long, env = "XMEMO_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Do not migrate the schema on start; refuse to start when it is behind (run
    /// `xmemo admin migrate` explicitly)
    #[arg(long, env = "XMEMO_NO_MIGRATE")]
    pub no_migrate: bool,
    #[command(flatten)]
    pub mcp: McpArgs,
}

/// Settings of the MCP endpoint (`/mcp`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct McpArgs {
    /// Host header values accepted on /mcp, comma-separated (`host` or `host:port`; `*` = any,
    /// which turns DNS-rebinding protection off). The public URL's host is always accepted.
    /// [default: localhost,127.0.0.1,::1]
    #[arg(long, env = "XMEMO_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted on /mcp, comma-separated (e.g. https://app.example.com), besides
    /// origins on an allowed host
    #[arg(long, env = "XMEMO_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,
    /// Client profiles in which execute_cloud_skill is exposed, comma-separated [default: none]
    #[arg(long, env = "XMEMO_EXECUTE_PROFILES", value_delimiter = ',')]
    pub execute_profiles: Vec<String>,
    /// MCP client-profile contract to enforce instead of the built-in
    /// config/mcp-documentation-contract.json
    #[arg(long, env = "XMEMO_MCP_CONTRACT")]
    pub mcp_contract: Option<PathBuf>,
    /// Serve the MCP conformance suite's diagnostic tools on /mcp/conformance (for the
    /// interoperability tests; they touch no data)
    #[arg(
        long,
        env = "XMEMO_MCP_CONFORMANCE_FIXTURES",
        hide = true,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub mcp_conformance_fixtures: bool,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// Data directory [env: XMEMO_DATA_DIR] [default: ./xmemo-data]
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// Database URL: sqlite:PATH or postgres://… [env: XMEMO_DATABASE_URL] [default: SQLite in the data dir]
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// Settings file [env: XMEMO_CONFIG] [default: ./xmemo.toml when present]
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    public_url: Option<String>,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    execute_profiles: Option<Vec<String>>,
    mcp_contract: Option<PathBuf>,
    /// Outbound fetch rules for URL imports (`[fetch]` table; see docs/packages.md).
    fetch: Option<xmemo_server::fetch::FetchConfig>,
}

/// Settings after every source is applied.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub public_url: Option<String>,
    pub mcp: xmemo_server::mcp::McpConfig,
    pub fetch: xmemo_server::fetch::FetchConfig,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn load_file(explicit: Option<&Path>) -> anyhow::Result<FileSettings> {
    let path = match explicit
        .map(Path::to_path_buf)
        .or_else(|| env("XMEMO_CONFIG").map(PathBuf::from))
    {
        Some(p) => p,
        None => {
            let default = PathBuf::from("xmemo.toml");
            if !default.exists() {
                return Ok(FileSettings::default());
            }
            default
        }
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read settings file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("invalid settings file {}", path.display()))
}

pub fn resolve(args: &ServeArgs) -> anyhow::Result<Settings> {
    let file = load_file(args.db.config.as_deref())?;
    let db = resolve_db(&args.db, &file);
    let mcp = resolve_mcp(&args.mcp, &file);
    let fetch = file.fetch.clone().unwrap_or_default();
    fetch
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid [fetch] settings: {e}"))?;
    Ok(Settings {
        listen: args
            .listen
            .clone()
            .or_else(|| env("XMEMO_LISTEN"))
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_string()),
        data_dir: db.0,
        database_url: db.1,
        public_url: args.public_url.clone().or(file.public_url),
        mcp,
        fetch,
    })
}

/// Flag / environment (clap) > file > default, per list.
fn resolve_mcp(args: &McpArgs, file: &FileSettings) -> xmemo_server::mcp::McpConfig {
    let list = |given: &[String], from_file: &Option<Vec<String>>| -> Vec<String> {
        let given: Vec<String> = given
            .iter()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        if given.is_empty() {
            from_file.clone().unwrap_or_default()
        } else {
            given
        }
    };
    xmemo_server::mcp::McpConfig {
        contract_path: args
            .mcp_contract
            .clone()
            .or_else(|| file.mcp_contract.clone()),
        allowed_hosts: list(&args.allowed_hosts, &file.allowed_hosts),
        allowed_origins: list(&args.allowed_origins, &file.allowed_origins),
        execute_profiles: list(&args.execute_profiles, &file.execute_profiles),
        conformance_fixtures: args.mcp_conformance_fixtures,
    }
}

fn resolve_db(args: &DbArgs, file: &FileSettings) -> (PathBuf, Option<String>) {
    let data_dir = args
        .data_dir
        .clone()
        .or_else(|| env("XMEMO_DATA_DIR").map(PathBuf::from))
        .or_else(|| file.data_dir.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    let database_url = args
        .database_url
        .clone()
        .or_else(|| env("XMEMO_DATABASE_URL"))
        .or_else(|| file.database_url.clone());
    (data_dir, database_url)
}

/// Data directory and database URL for operator commands.
pub fn resolve_db_only(args: &DbArgs) -> anyhow::Result<(PathBuf, Option<String>)> {
    let file = load_file(args.config.as_deref())?;
    Ok(resolve_db(args, &file))
}
