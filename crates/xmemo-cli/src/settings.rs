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
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// Data directory [env: XMEMO_DATA_DIR] [default: ./xmemo-data]
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Database URL: sqlite:PATH or postgres://… [env: XMEMO_DATABASE_URL] [default: SQLite in the data dir]
    #[arg(long)]
    pub database_url: Option<String>,
    /// Settings file [env: XMEMO_CONFIG] [default: ./xmemo.toml when present]
    #[arg(long)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    public_url: Option<String>,
}

/// Settings after every source is applied.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub public_url: Option<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn load_file(explicit: Option<&Path>) -> anyhow::Result<FileSettings> {
    let path = match explicit.map(Path::to_path_buf).or_else(|| env("XMEMO_CONFIG").map(PathBuf::from)) {
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
    })
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
