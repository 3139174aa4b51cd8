//! Server settings: flag > environment > `xmemo.toml` > default (SPEC §11).

use anyhow::Context;
use serde::Deserialize;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use xmemo_server::app::HttpConfig;
use xmemo_server::service::exec_slots::ExecutionCaps;
use xmemo_server::service::{Budgets, Quotas};
use xmemo_server::throttle::LimiterConfig;

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
    #[arg(
        long,
        env = "XMEMO_NO_MIGRATE",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_migrate: bool,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// The MCP client profile of an OAuth client's tokens, as CLIENT=PROFILE pairs
    /// (comma-separated; CLIENT is a client_id — a registered id or a metadata-document URL —
    /// or a client name); other clients get ordinary-full
    #[arg(long, env = "XMEMO_OAUTH_CLIENT_PROFILES", value_delimiter = ',')]
    pub oauth_client_profiles: Vec<String>,
    #[command(flatten)]
    pub semantic: SemanticArgs,
    #[command(flatten)]
    pub backup: BackupArgs,
    /// How the log is written on stderr: `text` for people, `json` for a collector (one
    /// object a line; docs/operations.md)
    #[arg(long, env = "XMEMO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Scheduled backups of a SQLite installation (docs/operations.md): `serve` takes one at
/// start and one every `--backup-every`, keeping the newest `--backup-keep`; `xmemo admin
/// doctor` warns when the newest is older than twice the schedule.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BackupArgs {
    /// Folder of the scheduled backups (SQLite only) [default: none, no schedule]
    #[arg(long, env = "XMEMO_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Time between two scheduled backups: a number and s, m, h or d [default: 6h]
    #[arg(long, env = "XMEMO_BACKUP_EVERY", value_parser = parse_every)]
    pub backup_every: Option<Duration>,
    /// Scheduled backups kept; older ones are deleted [default: 7]
    #[arg(long, env = "XMEMO_BACKUP_KEEP", value_parser = clap::value_parser!(u32).range(1..))]
    pub backup_keep: Option<u32>,
}

/// A backup schedule that is on.
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    pub dir: PathBuf,
    pub every: Duration,
    pub keep: usize,
}

impl BackupArgs {
    /// The schedule, when a folder is named.
    pub fn schedule(&self) -> Option<BackupSchedule> {
        Some(BackupSchedule {
            dir: self.backup_dir.clone()?,
            every: self.backup_every.unwrap_or(Duration::from_secs(6 * 3600)),
            keep: self.backup_keep.unwrap_or(7) as usize,
        })
    }
}

/// `30s`, `15m`, `6h`, `1d`: at least one second.
pub fn parse_every(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a number followed by s, m, h or d"))?;
    let seconds = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(|| format!("`{text}` is not a number followed by s, m, h or d"))?;
    if seconds == 0 {
        return Err("the schedule must be at least 1s".into());
    }
    Ok(Duration::from_secs(seconds))
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The semantic recall lane (docs/decisions.md, "Semantic recall"): on with the model named,
/// else with the recommended model when `scripts/models` put it in its default folder
/// ([`default_model_dir`]), else off.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SemanticArgs {
    /// A local model folder (sentence-transformers BERT family, model2vec, Universal Sentence
    /// Encoder, or a blend of them), or with --embeddings-url the model name the endpoint
    /// serves; `none` turns the lane off [default: the recommended model's folder when it
    /// holds the model]
    #[arg(long, env = "XMEMO_EMBEDDING_MODEL")]
    pub embedding_model: Option<String>,
    /// An OpenAI-compatible embeddings endpoint (e.g. http://127.0.0.1:11434/v1 for Ollama);
    /// its key in XMEMO_EMBEDDINGS_API_KEY
    #[arg(long, env = "XMEMO_EMBEDDINGS_URL")]
    pub embeddings_url: Option<String>,
    /// Weight of full text in the fused ranking, 0 to 1 (the semantic lane has the rest)
    /// [default: 0.5]
    #[arg(long, env = "XMEMO_EMBEDDING_TEXT_WEIGHT")]
    pub embedding_text_weight: Option<f64>,
    /// How the two lanes' results are ranked together: `weighted` (by the weighted sum of
    /// their 0-1 scores) or `rrf` (reciprocal rank fusion; scores stay the weighted ones)
    /// [default: weighted]
    #[arg(long, env = "XMEMO_EMBEDDING_FUSION")]
    pub embedding_fusion: Option<String>,
}

/// The resolved [`SemanticArgs`].
#[derive(Debug, Clone, Default)]
pub struct Semantic {
    pub spec: xmemo_embed::EmbedderSpec,
    /// The model is the recommended one, found in its default folder (no setting named it).
    pub default_model: bool,
    pub text_weight: f64,
    pub fusion: xmemo_store::FusionMethod,
}

/// Connection timeouts and caps, execution caps, authentication throttling (README
/// "Settings"; each also a key of `xmemo.toml`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LimitsArgs {
    /// Seconds from a request's first byte to the end of its head [default: 10]
    #[arg(long, env = "XMEMO_HEADER_TIMEOUT_SECS")]
    pub header_timeout_secs: Option<u64>,
    /// Seconds from a request's head to the end of its body [default: 60]
    #[arg(long, env = "XMEMO_BODY_TIMEOUT_SECS")]
    pub body_timeout_secs: Option<u64>,
    /// Seconds a connection may wait for its next request (keep-alive) [default: 60]
    #[arg(long, env = "XMEMO_IDLE_TIMEOUT_SECS")]
    pub idle_timeout_secs: Option<u64>,
    /// Connections served at once; at the cap the longest-idle one is closed for a new one
    /// [default: half the open-files limit, at most 1024]
    #[arg(long, env = "XMEMO_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Script executions running at once on this node [default: twice the CPUs]
    #[arg(long, env = "XMEMO_MAX_EXECUTIONS")]
    pub max_executions: Option<usize>,
    /// Script executions one account may run at once [default: 2]
    #[arg(long, env = "XMEMO_MAX_EXECUTIONS_PER_ACCOUNT")]
    pub max_executions_per_account: Option<usize>,
    /// Run scripts of revisions the safety scanner called malicious (refused with
    /// SAFETY_BLOCKED otherwise; docs/safety.md) [default: false]
    #[arg(
        long,
        env = "XMEMO_ALLOW_MALICIOUS_SCRIPTS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub allow_malicious_scripts: Option<bool>,
    /// Failed authentications allowed per client address and window; 0 turns the limit off
    /// [default: 20]
    #[arg(long, env = "XMEMO_AUTH_FAILURE_LIMIT")]
    pub auth_failure_limit: Option<u32>,
    /// The window of --auth-failure-limit, in seconds [default: 60]
    #[arg(long, env = "XMEMO_AUTH_FAILURE_WINDOW_SECS")]
    pub auth_failure_window_secs: Option<u64>,
    /// Reverse proxies (IP addresses, comma-separated) whose X-Forwarded-For names the
    /// client; without them the TCP peer is the client [default: none]
    #[arg(long, env = "XMEMO_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<String>,
    /// Failed sign-ins allowed per account and client address per window; 0 turns it off
    /// [default: 10]
    #[arg(long, env = "XMEMO_LOGIN_FAILURE_LIMIT")]
    pub login_failure_limit: Option<u32>,
    /// Failed sign-ins allowed per account from addresses it never signed in from, per
    /// window; 0 turns it off [default: 30]
    #[arg(long, env = "XMEMO_LOGIN_ACCOUNT_LIMIT")]
    pub login_account_limit: Option<u32>,
    /// The window of --login-failure-limit and --login-account-limit, in seconds [default: 600]
    #[arg(long, env = "XMEMO_LOGIN_FAILURE_WINDOW_SECS")]
    pub login_failure_window_secs: Option<u64>,
    /// Password hashes (19 MiB each) computed at once [default: the CPUs, at most 4]
    #[arg(long, env = "XMEMO_PASSWORD_HASH_CONCURRENCY")]
    pub password_hash_concurrency: Option<usize>,
    /// Requests that may wait for a password hash; beyond them 503 at once [default: 4 per
    /// hash computed at once]
    #[arg(long, env = "XMEMO_PASSWORD_HASH_QUEUE")]
    pub password_hash_queue: Option<usize>,
    /// Dynamic OAuth client registrations per client address and hour; 0 turns it off
    /// [default: 30]
    #[arg(long, env = "XMEMO_REGISTRATION_LIMIT")]
    pub registration_limit: Option<u32>,
    /// Dynamic OAuth client registrations per hour from all addresses; 0 turns it off
    /// [default: 300]
    #[arg(long, env = "XMEMO_REGISTRATION_GLOBAL_LIMIT")]
    pub registration_global_limit: Option<u32>,
    /// Registered OAuth clients kept at most [default: 10000]
    #[arg(long, env = "XMEMO_MAX_REGISTERED_CLIENTS")]
    pub max_registered_clients: Option<u64>,
    /// Seconds after which a registered OAuth client that never got a grant is deleted
    /// [default: 86400]
    #[arg(long, env = "XMEMO_UNUSED_CLIENT_TTL_SECS")]
    pub unused_client_ttl_secs: Option<u64>,
    /// Client metadata documents fetched per client address and 10 minutes (cache misses);
    /// 0 turns it off [default: 20]
    #[arg(long, env = "XMEMO_DOCUMENT_FETCH_LIMIT")]
    pub document_fetch_limit: Option<u32>,
    /// Writes per account and minute (saves, imports, memory writes, lifecycle changes,
    /// teams, invitations, keys); 0 turns it off [default: 1200]
    #[arg(long, env = "XMEMO_WRITE_RATE")]
    pub write_rate: Option<u32>,
    /// Teams one account may create per day; 0 turns it off [default: 10]
    #[arg(long, env = "XMEMO_TEAM_CREATION_LIMIT")]
    pub team_creation_limit: Option<u32>,
    /// Seconds after a declined invitation during which the team may not invite that person
    /// again; 0 turns it off [default: 604800, a week]
    #[arg(long, env = "XMEMO_INVITATION_COOL_DOWN_SECS")]
    pub invitation_cool_down_secs: Option<u64>,
    /// Memories one account may create; 0 = no quota [default: 10000]
    #[arg(long, env = "XMEMO_QUOTA_MEMORIES")]
    pub quota_memories: Option<u64>,
    /// Skills one account may create; 0 = no quota [default: 10000]
    #[arg(long, env = "XMEMO_QUOTA_SKILLS")]
    pub quota_skills: Option<u64>,
    /// Bytes one account may write (memory versions, skill revisions); 0 = no quota
    /// [default: 268435456]
    #[arg(long, env = "XMEMO_QUOTA_BYTES")]
    pub quota_bytes: Option<u64>,
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
    header_timeout_secs: Option<u64>,
    body_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    max_executions: Option<usize>,
    max_executions_per_account: Option<usize>,
    allow_malicious_scripts: Option<bool>,
    auth_failure_limit: Option<u32>,
    auth_failure_window_secs: Option<u64>,
    trusted_proxies: Option<Vec<String>>,
    login_failure_limit: Option<u32>,
    login_account_limit: Option<u32>,
    login_failure_window_secs: Option<u64>,
    password_hash_concurrency: Option<usize>,
    password_hash_queue: Option<usize>,
    registration_limit: Option<u32>,
    registration_global_limit: Option<u32>,
    max_registered_clients: Option<u64>,
    unused_client_ttl_secs: Option<u64>,
    document_fetch_limit: Option<u32>,
    write_rate: Option<u32>,
    team_creation_limit: Option<u32>,
    invitation_cool_down_secs: Option<u64>,
    quota_memories: Option<u64>,
    quota_skills: Option<u64>,
    quota_bytes: Option<u64>,
    /// `[oauth_client_profiles]`: client id or name → MCP client profile.
    oauth_client_profiles: Option<std::collections::BTreeMap<String, String>>,
    embedding_model: Option<String>,
    embeddings_url: Option<String>,
    embedding_text_weight: Option<f64>,
    embedding_fusion: Option<String>,
}

/// Settings after every source is applied.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub public_url: Option<String>,
    pub mcp: xmemo_server::state::McpConfig,
    pub fetch: xmemo_server::fetch::FetchConfig,
    pub limits: Limits,
    pub oauth: xmemo_server::service::oauth::OAuthConfig,
    pub semantic: Semantic,
}

/// The resolved [`LimitsArgs`].
#[derive(Debug, Clone)]
pub struct Limits {
    pub http: HttpConfig,
    pub executions: ExecutionCaps,
    /// Scripts of revisions the safety scanner called malicious run anyway.
    pub allow_malicious_scripts: bool,
    pub trusted_proxies: Vec<IpAddr>,
    /// Every budget, quota and cap of the service (docs/limits.md), the failed
    /// authentications per address included.
    pub budgets: Budgets,
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
    let limits = resolve_limits(&args.limits, &file)?;
    let oauth = resolve_oauth(&args.oauth_client_profiles, &file)?;
    let semantic = resolve_semantic(&args.semantic, &file)?;
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
        limits,
        oauth,
        semantic,
    })
}

/// Flag / environment (clap) > file > default, per value.
fn resolve_semantic(args: &SemanticArgs, file: &FileSettings) -> anyhow::Result<Semantic> {
    let text_weight = args
        .embedding_text_weight
        .or(file.embedding_text_weight)
        .unwrap_or(xmemo_server::service::semantic::DEFAULT_TEXT_WEIGHT);
    if !(0.0..=1.0).contains(&text_weight) {
        anyhow::bail!("--embedding-text-weight must be between 0 and 1, not {text_weight}");
    }
    let fusion = match args
        .embedding_fusion
        .as_deref()
        .or(file.embedding_fusion.as_deref())
    {
        None => xmemo_store::FusionMethod::default(),
        Some(name) => xmemo_store::FusionMethod::parse(name).ok_or_else(|| {
            anyhow::anyhow!("--embedding-fusion must be `weighted` or `rrf`, not {name:?}")
        })?,
    };
    let named = args
        .embedding_model
        .clone()
        .or_else(|| file.embedding_model.clone());
    let url = args
        .embeddings_url
        .clone()
        .or_else(|| file.embeddings_url.clone());
    let (model, url, default_model) = match (named, url) {
        (Some(none), _) if none == NO_MODEL => (None, None, false),
        (None, None) => match default_model_dir().filter(|dir| holds_model(dir)) {
            Some(dir) => (Some(dir.display().to_string()), None, true),
            None => (None, None, false),
        },
        (model, url) => (model, url, false),
    };
    Ok(Semantic {
        spec: xmemo_embed::EmbedderSpec {
            model,
            url,
            api_key: env("XMEMO_EMBEDDINGS_API_KEY"),
            timeout: None,
        },
        default_model,
        text_weight,
        fusion,
    })
}

/// `--embedding-model none`: no semantic lane, even with the recommended model at hand.
pub const NO_MODEL: &str = "none";
/// The folder `scripts/models` puts the recommended model in (docs/decisions.md, "Semantic
/// recall"): a blend of the Universal Sentence Encoder multilingual and potion-base-8M, whose
/// `config.json` names the two folders beside it.
pub const DEFAULT_MODEL_NAME: &str = "recommended";

/// Where the recommended model is looked for: `$XMEMO_MODELS_DIR`, else
/// `$XDG_CACHE_HOME/xmemo-models`, else `~/.cache/xmemo-models` (as `scripts/models`).
pub fn default_model_dir() -> Option<PathBuf> {
    let models = match env("XMEMO_MODELS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => match env("XDG_CACHE_HOME") {
            Some(cache) => PathBuf::from(cache).join("xmemo-models"),
            None => PathBuf::from(env("HOME")?).join(".cache/xmemo-models"),
        },
    };
    Some(models.join(DEFAULT_MODEL_NAME))
}

/// Whether `scripts/models` finished writing the folder (it renames a finished one into
/// place): every kind of model folder has a `config.json`, a blend nothing else.
fn holds_model(dir: &Path) -> bool {
    dir.join("config.json").is_file()
}

/// Flag / environment (clap) > file, for the whole map.
fn resolve_oauth(
    given: &[String],
    file: &FileSettings,
) -> anyhow::Result<xmemo_server::service::oauth::OAuthConfig> {
    let mut profiles = std::collections::BTreeMap::new();
    let given: Vec<&str> = given
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    if given.is_empty() {
        profiles = file.oauth_client_profiles.clone().unwrap_or_default();
    } else {
        for pair in given {
            // The profile is the part after the last `=` (a client_id URL may hold one).
            let (client, profile) = pair.rsplit_once('=').ok_or_else(|| {
                anyhow::anyhow!("--oauth-client-profiles entry `{pair}` is not CLIENT=PROFILE")
            })?;
            profiles.insert(client.trim().to_string(), profile.trim().to_string());
        }
    }
    Ok(xmemo_server::service::oauth::OAuthConfig {
        client_profiles: profiles,
        ..Default::default()
    })
}

/// Flag / environment (clap) > file > default, per value.
fn resolve_limits(args: &LimitsArgs, file: &FileSettings) -> anyhow::Result<Limits> {
    let defaults = HttpConfig::default();
    let secs = |given: Option<u64>, from_file: Option<u64>, default: Duration| {
        given.or(from_file).map_or(default, Duration::from_secs)
    };
    let http = HttpConfig {
        header_timeout: secs(
            args.header_timeout_secs,
            file.header_timeout_secs,
            defaults.header_timeout,
        ),
        body_timeout: secs(
            args.body_timeout_secs,
            file.body_timeout_secs,
            defaults.body_timeout,
        ),
        idle_timeout: secs(
            args.idle_timeout_secs,
            file.idle_timeout_secs,
            defaults.idle_timeout,
        ),
        max_connections: args
            .max_connections
            .or(file.max_connections)
            .unwrap_or(defaults.max_connections),
    };
    http.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let default_caps = ExecutionCaps::default();
    let executions = ExecutionCaps {
        global: args
            .max_executions
            .or(file.max_executions)
            .unwrap_or(default_caps.global),
        per_account: args
            .max_executions_per_account
            .or(file.max_executions_per_account)
            .unwrap_or(default_caps.per_account),
    };
    if executions.global == 0 || executions.per_account == 0 {
        anyhow::bail!("max executions (in all and per account) must be at least 1");
    }
    let default_throttle = xmemo_server::service::DEFAULT_AUTH_THROTTLE;
    let auth_throttle = LimiterConfig {
        max_failures: args
            .auth_failure_limit
            .or(file.auth_failure_limit)
            .unwrap_or(default_throttle.max_failures),
        window: secs(
            args.auth_failure_window_secs,
            file.auth_failure_window_secs,
            default_throttle.window,
        ),
        ..default_throttle
    };
    if auth_throttle.max_failures > 0 && auth_throttle.window.is_zero() {
        anyhow::bail!("the auth failure window must be at least 1 second");
    }
    let proxies: Vec<String> = if args.trusted_proxies.iter().any(|p| !p.trim().is_empty()) {
        args.trusted_proxies.clone()
    } else {
        file.trusted_proxies.clone().unwrap_or_default()
    };
    let trusted_proxies = proxies
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<IpAddr>()
                .map_err(|_| anyhow::anyhow!("trusted proxy `{p}` is not an IP address"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let budgets = resolve_budgets(args, file, auth_throttle)?;
    Ok(Limits {
        http,
        executions,
        allow_malicious_scripts: args
            .allow_malicious_scripts
            .or(file.allow_malicious_scripts)
            .unwrap_or(false),
        trusted_proxies,
        budgets,
    })
}

/// The service's budgets from flags / environment > file > defaults (docs/limits.md).
fn resolve_budgets(
    args: &LimitsArgs,
    file: &FileSettings,
    auth_failures: LimiterConfig,
) -> anyhow::Result<Budgets> {
    let d = Budgets::default();
    let count =
        |given: Option<u32>, from_file: Option<u32>, default: LimiterConfig| LimiterConfig {
            max_failures: given.or(from_file).unwrap_or(default.max_failures),
            ..default
        };
    let login_window = args
        .login_failure_window_secs
        .or(file.login_failure_window_secs)
        .map_or(d.login_pair.window, Duration::from_secs);
    if login_window.is_zero() {
        anyhow::bail!("the login failure window must be at least 1 second");
    }
    let mut hashing = d.hashing;
    if let Some(n) = args
        .password_hash_concurrency
        .or(file.password_hash_concurrency)
    {
        if n == 0 {
            anyhow::bail!("password_hash_concurrency must be at least 1");
        }
        hashing.concurrency = n;
        hashing.queue = n * xmemo_server::password::HashingConfig::QUEUE_PER_SLOT;
    }
    if let Some(q) = args.password_hash_queue.or(file.password_hash_queue) {
        hashing.queue = q;
    }
    let quota = |given: Option<u64>, from_file: Option<u64>, default: u64| match given.or(from_file)
    {
        Some(0) => u64::MAX,
        Some(n) => n,
        None => default,
    };
    let ttl = args
        .unused_client_ttl_secs
        .or(file.unused_client_ttl_secs)
        .map_or(d.unused_client_ttl, Duration::from_secs);
    if ttl.is_zero() {
        anyhow::bail!("unused_client_ttl_secs must be at least 1");
    }
    Ok(Budgets {
        auth_failures,
        login_pair: LimiterConfig {
            window: login_window,
            ..count(
                args.login_failure_limit,
                file.login_failure_limit,
                d.login_pair,
            )
        },
        login_account: LimiterConfig {
            window: login_window,
            ..count(
                args.login_account_limit,
                file.login_account_limit,
                d.login_account,
            )
        },
        hashing,
        registrations: count(
            args.registration_limit,
            file.registration_limit,
            d.registrations,
        ),
        registrations_global: count(
            args.registration_global_limit,
            file.registration_global_limit,
            d.registrations_global,
        ),
        max_registered_clients: args
            .max_registered_clients
            .or(file.max_registered_clients)
            .unwrap_or(d.max_registered_clients),
        unused_client_ttl: ttl,
        document_fetches: count(
            args.document_fetch_limit,
            file.document_fetch_limit,
            d.document_fetches,
        ),
        writes: count(args.write_rate, file.write_rate, d.writes),
        team_creations: count(
            args.team_creation_limit,
            file.team_creation_limit,
            d.team_creations,
        ),
        decline_cool_down: args
            .invitation_cool_down_secs
            .or(file.invitation_cool_down_secs)
            .map_or(d.decline_cool_down, Duration::from_secs),
        quotas: Quotas {
            memories: quota(args.quota_memories, file.quota_memories, d.quotas.memories),
            skills: quota(args.quota_skills, file.quota_skills, d.quotas.skills),
            bytes: quota(args.quota_bytes, file.quota_bytes, d.quotas.bytes),
        },
    })
}

/// The budgets an operator command reports (quotas): the settings file's, else the defaults.
pub fn budgets_for_admin(args: &DbArgs) -> anyhow::Result<Budgets> {
    let file = load_file(args.config.as_deref())?;
    Ok(resolve_limits(&LimitsArgs::default(), &file)?.budgets)
}

/// Flag / environment (clap) > file > default, per list.
fn resolve_mcp(args: &McpArgs, file: &FileSettings) -> xmemo_server::state::McpConfig {
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
    xmemo_server::state::McpConfig {
        contract_path: args
            .mcp_contract
            .clone()
            .or_else(|| file.mcp_contract.clone()),
        allowed_hosts: list(&args.allowed_hosts, &file.allowed_hosts),
        allowed_origins: list(&args.allowed_origins, &file.allowed_origins),
        execute_profiles: list(&args.execute_profiles, &file.execute_profiles),
        conformance_fixtures: args.mcp_conformance_fixtures,
        // A switch for the tests that compare the direct path with rmcp, not for operators.
        rmcp_only: false,
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
/// The semantic lane's settings for an operator command (`xmemo admin doctor`).
pub fn resolve_semantic_only(db: &DbArgs, args: &SemanticArgs) -> anyhow::Result<Semantic> {
    let file = load_file(db.config.as_deref())?;
    resolve_semantic(args, &file)
}

pub fn resolve_db_only(args: &DbArgs) -> anyhow::Result<(PathBuf, Option<String>)> {
    let file = load_file(args.config.as_deref())?;
    Ok(resolve_db(args, &file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(toml_text: &str) -> FileSettings {
        toml::from_str(toml_text).expect("settings file")
    }

    #[test]
    fn backup_schedules_read_a_number_and_a_unit() {
        assert_eq!(parse_every("6h"), Ok(Duration::from_secs(21_600)));
        assert_eq!(parse_every("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_every("2d"), Ok(Duration::from_secs(172_800)));
        for bad in [
            "",
            "6",
            "h",
            "0s",
            "6 hours",
            "-1h",
            "99999999999999999999d",
        ] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_come_from_flags_then_the_file_then_defaults() {
        let from_file = file(
            "header_timeout_secs = 5\nmax_connections = 32\nmax_executions_per_account = 1\n\
             auth_failure_limit = 0\ntrusted_proxies = [\"10.0.0.2\"]\n",
        );
        let flags = LimitsArgs {
            max_connections: Some(64),
            ..LimitsArgs::default()
        };
        let limits = resolve_limits(&flags, &from_file).expect("limits");
        assert_eq!(limits.http.max_connections, 64, "a flag beats the file");
        assert_eq!(limits.http.header_timeout, Duration::from_secs(5));
        assert_eq!(limits.http.body_timeout, HttpConfig::DEFAULT_BODY_TIMEOUT);
        assert_eq!(limits.executions.per_account, 1);
        assert_eq!(
            limits.budgets.auth_failures.max_failures, 0,
            "0 turns the limit off"
        );
        assert_eq!(
            limits.trusted_proxies,
            vec!["10.0.0.2".parse::<IpAddr>().unwrap()]
        );

        let defaults =
            resolve_limits(&LimitsArgs::default(), &FileSettings::default()).expect("defaults");
        assert_eq!(defaults.budgets.auth_failures.max_failures, 20);
        assert_eq!(defaults.budgets, Budgets::default());
        assert_eq!(defaults.executions.per_account, 2);
        assert!(defaults.trusted_proxies.is_empty());
    }

    #[test]
    fn budgets_and_quotas_come_from_flags_then_the_file() {
        let from_file = file(
            "write_rate = 50\nquota_memories = 0\nquota_bytes = 1000\n\
             login_account_limit = 7\nlogin_failure_window_secs = 60\n\
             password_hash_concurrency = 2\nregistration_global_limit = 9\n",
        );
        let flags = LimitsArgs {
            write_rate: Some(60),
            ..LimitsArgs::default()
        };
        let b = resolve_limits(&flags, &from_file).expect("limits").budgets;
        assert_eq!(b.writes.max_failures, 60, "a flag beats the file");
        assert_eq!(b.quotas.memories, u64::MAX, "0 is no quota");
        assert_eq!(b.quotas.bytes, 1000);
        assert_eq!(b.quotas.skills, Quotas::DEFAULT.skills);
        assert_eq!(b.login_account.max_failures, 7);
        assert_eq!(b.login_account.window, Duration::from_secs(60));
        assert_eq!(b.login_pair.window, Duration::from_secs(60));
        assert_eq!(b.hashing.concurrency, 2);
        assert_eq!(b.hashing.queue, 8);
        assert_eq!(b.registrations_global.max_failures, 9);
        for bad in [
            "password_hash_concurrency = 0",
            "login_failure_window_secs = 0",
            "unused_client_ttl_secs = 0",
        ] {
            assert!(
                resolve_limits(&LimitsArgs::default(), &file(bad)).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn oauth_client_profiles_from_flags_or_the_file() {
        let from_file = file("[oauth_client_profiles]\nCursor = \"cursor-plugin\"\n");
        let c = resolve_oauth(&[], &from_file).expect("file");
        assert_eq!(c.profile_for("client_x", "Cursor"), "cursor-plugin");
        assert_eq!(c.profile_for("client_x", "Other"), "ordinary-full");
        let flags = vec!["https://app.example/c.json?v=1=claude-code".to_string()];
        let c = resolve_oauth(&flags, &from_file).expect("flags");
        assert_eq!(
            c.profile_for("https://app.example/c.json?v=1", "x"),
            "claude-code"
        );
        assert_eq!(
            c.profile_for("client_x", "Cursor"),
            "ordinary-full",
            "flags replace the file"
        );
        assert!(resolve_oauth(&["no-equals".into()], &from_file).is_err());
    }

    #[test]
    fn unusable_limits_are_refused() {
        for bad in [
            "max_connections = 0",
            "idle_timeout_secs = 0",
            "max_executions = 0",
            "auth_failure_window_secs = 0",
            "trusted_proxies = [\"proxy.internal\"]",
        ] {
            assert!(
                resolve_limits(&LimitsArgs::default(), &file(bad)).is_err(),
                "{bad}"
            );
        }
        assert!(toml::from_str::<FileSettings>("max_conections = 3").is_err());
    }
}
