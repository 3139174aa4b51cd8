//! `xmemo serve`.

use crate::settings::{LogFormat, ServeArgs, resolve};
use anyhow::Context;
use xmemo_server::Service;
use xmemo_server::app::{build_app, serve_with};
use xmemo_server::bootstrap::{bootstrap_admin, open_store_with};
use xmemo_server::sandbox::{Isolation, SandboxConfig, SandboxEngine};
use xmemo_server::state::ServerInfo;

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_tracing(args.log_format);
    let settings = resolve(&args)?;
    // Refuse to start with an MCP contract or execute-profile list the server cannot enforce.
    let profiles = settings
        .mcp
        .profiles()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (client, profile) in &settings.oauth.client_profiles {
        if profiles.get(profile).is_none() {
            anyhow::bail!(
                "OAuth client `{client}` is mapped to `{profile}`, which is not an MCP client profile of this server (known: {})",
                profiles.names().collect::<Vec<_>>().join(", ")
            );
        }
    }
    for p in xmemo_server::bootstrap::permission_problems(
        &settings.data_dir,
        settings.database_url.as_deref(),
    ) {
        tracing::warn!(path = %p.path.display(), mode = %p.mode, expected = %p.expected, fix = %p.fix,
            "open to group or others: it holds the database or the admin secrets");
    }
    let store = open_store_with(
        settings.database_url.as_deref(),
        &settings.data_dir,
        !args.no_migrate,
    )
    .await
    .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    crate::admin::record_serving_quotas(store.as_ref(), &settings.limits.budgets.quotas).await;
    // The sandbox probe (a few bubblewrap runs) goes on while the server starts listening;
    // an execution that arrives first waits for it.
    let sandbox = SandboxEngine::start(SandboxConfig::from_env());
    let probing = sandbox.clone();
    tokio::spawn(async move {
        let state = probing.probed().await;
        if !state.available {
            tracing::warn!(reason = %state.reason, "script execution is unavailable: execute_cloud_skill answers SANDBOX_UNAVAILABLE");
        } else if state.isolation == Isolation::UnsafeLocal {
            tracing::warn!(
                "XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1: scripts run WITHOUT isolation; never use this for multi-tenant production"
            );
        }
    });
    let limits = &settings.limits;
    if limits.allow_malicious_scripts {
        tracing::warn!(
            "allow_malicious_scripts: scripts of revisions the safety scanner called malicious run (in the sandbox) instead of being refused"
        );
    }
    let service = Service::new(store)
        .with_sandbox(sandbox)
        .with_fetch_config(settings.fetch.clone())
        .with_execution_caps(limits.executions)
        .with_malicious_scripts_allowed(limits.allow_malicious_scripts)
        .with_budgets(limits.budgets.clone())
        .with_oauth_config(settings.oauth.clone());
    // An embeddings endpoint is not waited for: the lane starts degraded (recall by full
    // text) and its probe learns the vectors' length when the endpoint first answers. A local
    // model folder that cannot be used is a mistake in the settings and stops the start.
    let service = match xmemo_embed::open_lazily(&settings.semantic.spec)
        .await
        .map_err(|e| anyhow::anyhow!("the semantic lane cannot start: {e}"))?
    {
        Some(embedder) => {
            tracing::info!(
                model = embedder.model_id(),
                dimensions = ?embedder.dimensions(),
                "semantic recall lane on"
            );
            if settings.semantic.default_model {
                notice(
                    args.log_format,
                    &format!(
                        "xmemo: semantic recall on with the recommended model found in {} \
                         (--embedding-model none turns it off)",
                        settings.semantic.spec.model.as_deref().unwrap_or_default()
                    ),
                );
            }
            service.with_semantic_lane(
                embedder,
                settings.semantic.text_weight,
                settings.semantic.fusion,
            )
        }
        None => service,
    };
    if let Some(path) = bootstrap_admin(&service, &settings.data_dir)
        .await
        .map_err(|e| anyhow::anyhow!("first-start bootstrap failed: {e}"))?
    {
        let password = xmemo_server::bootstrap::admin_password_path(&settings.data_dir);
        tracing::warn!(key = %path.display(), password = %password.display(),
            "created the admin account; its API key and its sign-in password are in these files (mode 0600), shown nowhere else");
        notice(
            args.log_format,
            &format!(
                "xmemo: first start — admin API key written to {} (read it with: cat {}); \
                 sign-in password for `admin` written to {}",
                path.display(),
                path.display(),
                password.display()
            ),
        );
    }
    // Several nodes on one database share the work: each names itself, the lease decides.
    let worker_name = format!(
        "{}:{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into()),
        std::process::id()
    );
    let _embedding_worker = service.start_embedding_worker(worker_name);
    let _backups = match args.backup.schedule() {
        None => None,
        Some(schedule) => {
            let Some(source) = xmemo_server::bootstrap::sqlite_database(
                &settings.data_dir,
                settings.database_url.as_deref(),
            ) else {
                anyhow::bail!(
                    "--backup-dir schedules backups of a SQLite installation; back PostgreSQL up with pg_dump (docs/operations.md)"
                );
            };
            Some(crate::admin_backup::start_schedule(source, schedule))
        }
    };
    let _upkeep = service.start_upkeep();
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    let local = listener.local_addr()?;
    let public_url = settings
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}"));
    let app = build_app(
        service,
        ServerInfo {
            public_url: public_url.clone(),
            version: env!("CARGO_PKG_VERSION"),
            mcp: settings.mcp.clone(),
            trusted_proxies: limits.trusted_proxies.clone(),
        },
    );
    tracing::info!(
        listen = %local,
        data_dir = %settings.data_dir.display(),
        max_connections = limits.http.max_connections,
        max_executions = limits.executions.global,
        max_executions_per_account = limits.executions.per_account,
        "xmemo serving"
    );
    notice(
        args.log_format,
        &format!(
            "xmemo: listening on http://{local} (REST under {public_url}/api/v1, MCP at {public_url}/mcp)"
        ),
    );
    serve_with(listener, app, limits.http, shutdown_signal()).await?;
    Ok(())
}

/// A line for the person who started the server, whatever `XMEMO_LOG` filters: as it is on a
/// text log, one JSON object (`message` holding the same text) on a JSON log, so every line of
/// that log is JSON.
fn notice(format: LogFormat, text: &str) {
    match format {
        LogFormat::Text => eprintln!("{text}"),
        LogFormat::Json => eprintln!(
            "{}",
            serde_json::json!({
                "timestamp": xmemo_store::now(),
                "level": "INFO",
                "target": "xmemo::notice",
                "message": text,
            })
        ),
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XMEMO_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,sqlx=warn,tower_http=warn,rmcp=warn")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        // One object a line, the event's fields at the top level beside `timestamp`,
        // `level` and `target`.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
