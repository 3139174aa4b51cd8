//! `xmemo admin …`: operator commands that open the server's database directly (run them on
//! the server host). They go through the same service layer as every transport.

use crate::output::print_result_line;
use crate::settings::{DbArgs, SemanticArgs, resolve_db_only, resolve_semantic_only};
use clap::{Args, Subcommand};
use serde_json::json;
use xmemo_server::Service;
use xmemo_server::bootstrap::open_store;
use xmemo_server::service::Quotas;
use xmemo_server::service::types::{CreateAccountRequest, CreateKeyRequest};
use xmemo_store::{AuditFilter, verify_audit_chain};

#[derive(Args)]
pub struct AdminArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The semantic lane `doctor` checks (the settings `xmemo serve` takes)
    #[command(flatten)]
    semantic: SemanticArgs,
    /// The backup schedule `doctor` checks (the settings `xmemo serve` takes)
    #[command(flatten)]
    backup: crate::settings::BackupArgs,
    /// Print JSON instead of text
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Accounts
    #[command(subcommand)]
    Account(AccountCommand),
    /// API keys of any account
    #[command(subcommand)]
    Key(KeyCommand),
    /// Teams: find and repair teams left without an owner
    #[command(subcommand)]
    Team(TeamCommand),
    /// The hash-chained audit log
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Report the script sandbox (bubblewrap probe, isolation, limits mechanisms), the
    /// database (backend, ping) and whether the data directory and its files are private
    /// (0700 / 0600). Always exits 0: it reports, it does not judge.
    Doctor,
    /// Apply pending schema migrations (for operators who start servers with --no-migrate).
    Migrate,
    /// Copy a whole installation between databases, e.g.
    /// `--from sqlite:./xmemo-data/xmemo.db --to postgres://…`; the target must be empty.
    Copy {
        #[arg(long)]
        from: String,
        #[arg(long)]
        to: String,
    },
    /// Copy a SQLite installation, while its server runs, into a new file, then check the
    /// copy (SQLite's quick_check, the audit chain). PostgreSQL: use pg_dump.
    Backup {
        /// The file to write (it must not exist)
        #[arg(long)]
        to: std::path::PathBuf,
    },
    /// Check a whole installation (after a restore, say): the audit chain, every stored
    /// file's hash, every revision's canonical hash recomputed; row counts.
    Verify,
    /// Scan again, with this binary's safety rules, every revision whose stored verdict is
    /// missing or was made by other rules (after an upgrade that changed the rules), and store
    /// the new verdicts (docs/safety.md).
    Rescan {
        /// Rescan every revision, even those already scanned by the current rules
        #[arg(long)]
        all: bool,
    },
    /// Put a backup into a data directory that holds no database yet (never over a live
    /// one), then check it.
    Restore {
        /// The backup file
        #[arg(long)]
        from: std::path::PathBuf,
    },
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account (with its personal workspace); optionally issue its first key.
    Create {
        handle: String,
        #[arg(long)]
        display_name: Option<String>,
        /// Make it a server administrator
        #[arg(long)]
        admin: bool,
        /// Also issue an API key and print it once
        #[arg(long)]
        with_key: bool,
    },
    List,
    /// Set the account's sign-in password (for /login and OAuth consent). Read from standard
    /// input when it is not a terminal (one line), else asked for twice without echo; never
    /// taken from the command line. Ends the account's sessions.
    SetPassword {
        handle: String,
    },
    /// Make the account's failed-sign-in budgets whole again (per account and per address),
    /// on every server: each applies the unlock when it next refuses a sign-in of the account.
    /// For an owner locked out by someone guessing from addresses the account never signed in
    /// from.
    Unlock {
        handle: String,
    },
    /// What the account has stored against its quotas (memories, skills, bytes), and the
    /// quotas the server started last in this database recorded (else the settings file's)
    Usage {
        handle: String,
    },
}

#[derive(Subcommand)]
enum TeamCommand {
    /// List the teams that have no owner (nobody can invite, approve or manage them)
    Ownerless,
    /// Make an account an owner of a team (adding it when it is not a member): the repair of
    /// a team left without an owner
    AddOwner {
        /// Team handle
        team: String,
        /// Account handle or id
        account: String,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Issue a key for an account; the secret is printed once.
    Create {
        /// Account handle or id
        #[arg(long)]
        account: String,
        #[arg(long, default_value = "cli")]
        name: String,
        /// Comma-separated scopes (memory:read,memory:write)
        #[arg(long, default_value = "memory:read,memory:write")]
        scopes: String,
        /// RFC 3339 expiry instant
        #[arg(long)]
        expires_at: Option<String>,
        /// MCP client profile for the key
        #[arg(long)]
        profile: Option<String>,
    },
    List {
        #[arg(long)]
        account: String,
    },
    Revoke {
        #[arg(long)]
        account: String,
        key_id: String,
    },
}

/// The quotas of `quotas` as a node records them (`None`: no quota of that kind).
fn node_quotas(node: &str, started_at: &str, quotas: &Quotas) -> xmemo_store::NodeQuotas {
    let quota = |q: u64| (q != u64::MAX).then_some(q);
    xmemo_store::NodeQuotas {
        node: node.to_string(),
        started_at: started_at.to_string(),
        memories: quota(quotas.memories),
        skills: quota(quotas.skills),
        bytes: quota(quotas.bytes),
    }
}

/// `7 memories, 10000 skills, no bytes quota`.
fn describe_quotas(q: &xmemo_store::NodeQuotas) -> String {
    [
        (q.memories, "memories"),
        (q.skills, "skills"),
        (q.bytes, "bytes"),
    ]
    .iter()
    .map(|(quota, what)| match quota {
        Some(n) => format!("{n} {what}"),
        None => format!("no {what} quota"),
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// Records, as `xmemo serve` starts, the quotas this node enforces, so that `xmemo admin
/// account usage` reports them rather than the settings file's (a server's flags and
/// environment are not the operator's shell's). The record is for reports only: a failure
/// is logged and the server starts.
pub async fn record_serving_quotas(store: &dyn xmemo_store::Store, quotas: &Quotas) {
    // The name the node's embedding worker goes by.
    let node = format!(
        "{}:{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into()),
        std::process::id()
    );
    let record = node_quotas(&node, &xmemo_store::model::now(), quotas);
    if let Err(e) = store.record_node_quotas(&record).await {
        tracing::warn!(error = %e, "could not record this server's quotas; `xmemo admin account usage` shows the settings file's");
    }
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check that no audit entry was edited or removed.
    Verify,
}

pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    match &args.command {
        AdminCommand::Doctor => return doctor(&args).await,
        AdminCommand::Migrate => return crate::admin_db::migrate(&args.db, args.json).await,
        AdminCommand::Copy { from, to } => return crate::admin_db::copy(from, to, args.json).await,
        AdminCommand::Backup { to } => {
            return crate::admin_backup::backup(&args.db, to, args.json).await;
        }
        AdminCommand::Restore { from } => {
            return crate::admin_backup::restore(&args.db, from, args.json).await;
        }
        AdminCommand::Verify => return crate::admin_db::verify(&args.db, args.json).await,
        _ => {}
    }
    let (data_dir, url) = resolve_db_only(&args.db)?;
    let store = open_store(url.as_deref(), &data_dir)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    let service = Service::new(store);
    match args.command {
        AdminCommand::Account(AccountCommand::Create {
            handle,
            display_name,
            admin,
            with_key,
        }) => {
            let account = service
                .admin_create_account(CreateAccountRequest {
                    handle: handle.clone(),
                    display_name,
                    is_admin: admin,
                })
                .await?;
            let mut value = json!({ "account": account });
            let mut text = format!(
                "created account {} ({})",
                account.handle, account.account_id
            );
            if with_key {
                let operator = service.operator_for(&handle).await?;
                let key = service
                    .issue_key(
                        &operator,
                        &account,
                        key_request("initial key", None, None, None)?,
                    )
                    .await?;
                text.push_str(&format!("\nAPI key (shown once): {}", key.key));
                value["key"] = json!(key);
            }
            print_result_line(args.json, &value, text);
        }
        AdminCommand::Account(AccountCommand::List) => {
            let accounts = service.store().list_accounts().await?;
            let text = accounts
                .iter()
                .map(|a| {
                    format!(
                        "{}\t{}\t{}{}",
                        a.account_id,
                        a.handle,
                        a.display_name,
                        if a.is_admin { "\tadmin" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            print_result_line(args.json, &json!({ "accounts": accounts }), text);
        }
        AdminCommand::Account(AccountCommand::SetPassword { handle }) => {
            let operator = service.operator_for(&handle).await?;
            let account = operator.account.clone();
            let password = crate::password_input::read("new password for ".to_string() + &handle)?;
            service.set_password(&operator, &account, &password).await?;
            print_result_line(
                args.json,
                &json!({ "account_id": account.account_id, "password_set": true }),
                format!(
                    "password set for {} ({}); its sessions ended",
                    account.handle, account.account_id
                ),
            );
        }
        AdminCommand::Account(AccountCommand::Unlock { handle }) => {
            let operator = service.operator_for(&handle).await?;
            let account = operator.account.clone();
            service.unlock_sign_in(&operator, &account).await?;
            print_result_line(
                args.json,
                &json!({ "account_id": account.account_id, "unlocked": true }),
                format!(
                    "sign-in unlocked for {} ({}); every server applies it at its next refusal",
                    account.handle, account.account_id
                ),
            );
        }
        AdminCommand::Account(AccountCommand::Usage { handle }) => {
            let operator = service.operator_for(&handle).await?;
            let (used, _) = service.usage(&operator).await?;
            let recorded = service.store().node_quotas().await?;
            let (quotas, from) = match recorded.first() {
                Some(newest) => (
                    newest.clone(),
                    format!(
                        "quotas of the server started last, {} at {}",
                        newest.node, newest.started_at
                    ),
                ),
                None => (
                    node_quotas(
                        "",
                        "",
                        &crate::settings::budgets_for_admin(&args.db)?.quotas,
                    ),
                    "no server has recorded its quotas in this database: quotas of the \
                     settings file"
                        .to_string(),
                ),
            };
            // Nodes still recorded that enforce other quotas (each node enforces its own).
            let differing: Vec<&xmemo_store::NodeQuotas> = recorded
                .iter()
                .skip(1)
                .filter(|n| {
                    (n.memories, n.skills, n.bytes)
                        != (quotas.memories, quotas.skills, quotas.bytes)
                })
                .collect();
            let mut text = format!(
                "{}: {} memories, {} skills, {} bytes; quotas {} ({from})",
                operator.account.handle,
                used.memories,
                used.skills,
                used.bytes,
                describe_quotas(&quotas)
            );
            for n in &differing {
                text.push_str(&format!(
                    "\nnode {} (started {}, may no longer run) enforces {}",
                    n.node,
                    n.started_at,
                    describe_quotas(n)
                ));
            }
            print_result_line(
                args.json,
                &json!({
                    "account_id": operator.account.account_id,
                    "usage": used,
                    "quotas": {"memories": quotas.memories, "skills": quotas.skills, "bytes": quotas.bytes},
                    "quotas_from": if recorded.is_empty() {
                        json!({"source": "settings_file"})
                    } else {
                        json!({"source": "server", "node": quotas.node, "started_at": quotas.started_at})
                    },
                    "other_nodes": differing,
                }),
                text,
            );
        }
        AdminCommand::Team(TeamCommand::Ownerless) => {
            let teams = service.ownerless_teams().await?;
            let text = if teams.is_empty() {
                "every team has an owner".to_string()
            } else {
                teams
                    .iter()
                    .map(|t| format!("{}\t{}\t{}", t.workspace_id, t.handle, t.name))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            print_result_line(args.json, &json!({ "teams": teams }), text);
        }
        AdminCommand::Team(TeamCommand::AddOwner { team, account }) => {
            let ws = service.admin_add_owner(&team, &account).await?;
            print_result_line(
                args.json,
                &json!({ "workspace_id": ws.workspace_id, "team": ws.handle, "owner": account }),
                format!("{account} is an owner of {} now", ws.handle),
            );
        }
        AdminCommand::Key(KeyCommand::Create {
            account,
            name,
            scopes,
            expires_at,
            profile,
        }) => {
            let operator = service.operator_for(&account).await?;
            let target = operator.account.clone();
            let key = service
                .issue_key(
                    &operator,
                    &target,
                    key_request(&name, Some(scopes), expires_at, profile)?,
                )
                .await?;
            print_result_line(
                args.json,
                &json!({ "key": key }),
                format!(
                    "key {} for {} ({}):\n{}\n(shown once; store it in a secret store)",
                    key.info.key_id,
                    target.handle,
                    key.info.scopes.join(" "),
                    key.key
                ),
            );
        }
        AdminCommand::Key(KeyCommand::List { account }) => {
            let operator = service.operator_for(&account).await?;
            let keys = service.list_keys(&operator).await?;
            let text = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}\t{}\t{}…\t{}\t{}",
                        k.key_id,
                        k.name,
                        k.prefix,
                        k.scopes.join(","),
                        if k.revoked_at.is_some() {
                            "revoked"
                        } else {
                            "active"
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            print_result_line(args.json, &json!({ "keys": keys }), text);
        }
        AdminCommand::Key(KeyCommand::Revoke { account, key_id }) => {
            let operator = service.operator_for(&account).await?;
            service.revoke_key(&operator, &key_id).await?;
            print_result_line(
                args.json,
                &json!({ "revoked": key_id }),
                format!("revoked {key_id}"),
            );
        }
        // Answered above, before the database is opened (a broken database is reported).
        AdminCommand::Doctor
        | AdminCommand::Migrate
        | AdminCommand::Copy { .. }
        | AdminCommand::Backup { .. }
        | AdminCommand::Restore { .. }
        | AdminCommand::Verify => {}
        AdminCommand::Rescan { all } => {
            let summary = service.rescan_revisions(all).await?;
            let text = format!(
                "rescanned with rules {}: {} revisions, {} verdicts stored ({} changed); now {} clean, {} suspicious, {} malicious",
                summary.rules_version,
                summary.revisions,
                summary.updated,
                summary.verdict_changed,
                summary.clean,
                summary.suspicious,
                summary.malicious
            );
            print_result_line(args.json, &json!({ "rescan": summary }), text);
        }
        AdminCommand::Audit(AuditCommand::Verify) => {
            let entries = service.store().list_audit(&AuditFilter::default()).await?;
            match verify_audit_chain(&entries) {
                Ok(()) => print_result_line(
                    args.json,
                    &json!({ "ok": true, "entries": entries.len() }),
                    format!("audit chain intact ({} entries)", entries.len()),
                ),
                Err(seq) => {
                    print_result_line(
                        args.json,
                        &json!({ "ok": false, "broken_at": seq }),
                        format!("audit chain BROKEN at entry {seq}"),
                    );
                    anyhow::bail!("audit chain verification failed at entry {seq}");
                }
            }
        }
    }
    Ok(())
}

fn key_request(
    name: &str,
    scopes: Option<String>,
    expires_at: Option<String>,
    profile: Option<String>,
) -> anyhow::Result<CreateKeyRequest> {
    Ok(CreateKeyRequest {
        name: name.to_string(),
        scopes: scopes.map(|s| {
            s.split([',', ' '])
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        }),
        expires_at,
        profile,
    })
}

/// `xmemo admin doctor`: what this host offers for script execution, and the database.
async fn doctor(args: &AdminArgs) -> anyhow::Result<()> {
    use xmemo_server::sandbox::{SandboxConfig, SandboxEngine};

    let config = SandboxConfig::from_env();
    let engine = SandboxEngine::new(config.clone()).await;
    let state = engine.state();
    let fallback = config.allow_unsafe_local_fallback;
    let verdict = if state.available {
        "available: executions run isolated in bubblewrap"
    } else if fallback {
        "UNAVAILABLE, UNSAFE LOCAL FALLBACK ENABLED: scripts run as plain local processes \
         (XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1); never use this for multi-tenant production"
    } else {
        "UNAVAILABLE: executions are refused with SANDBOX_UNAVAILABLE (fail closed)"
    };

    let resolved = resolve_db_only(&args.db);
    // Looked at before the store is opened: opening creates what is missing, privately.
    let permissions = match &resolved {
        Err(_) => json!({ "ok": false, "problems": [] }),
        Ok((data_dir, url)) => {
            let problems = xmemo_server::bootstrap::permission_problems(data_dir, url.as_deref());
            json!({ "ok": problems.is_empty(), "data_dir": data_dir, "problems": problems })
        }
    };
    let mut store_for_lag = None;
    let database = match resolved {
        Err(e) => json!({ "ok": false, "error": format!("{e:#}") }),
        Ok((data_dir, url)) => match open_store(url.as_deref(), &data_dir).await {
            Err(e) => json!({
                "ok": false,
                "backend": backend_of(url.as_deref()),
                "error": error_detail(&e),
            }),
            Ok(store) => match store.ping().await {
                Ok(()) => {
                    let backend = store.backend();
                    store_for_lag = Some(store);
                    json!({ "ok": true, "backend": backend })
                }
                Err(e) => json!({
                    "ok": false,
                    "backend": store.backend(),
                    "error": e.to_string(),
                }),
            },
        },
    };

    let semantic = semantic_report(args, store_for_lag.as_deref()).await;
    let backups = match args.backup.schedule() {
        Some(schedule) => crate::admin_backup::schedule_report(&schedule),
        None => json!({ "status": "off" }),
    };
    let status = if state.available {
        "available"
    } else if fallback {
        "unsafe_local_fallback"
    } else {
        "unavailable"
    };
    let value = json!({
        "sandbox": {
            "status": status,
            "verdict": verdict,
            "state": state,
            "config": {
                "allow_unsafe_local_fallback": fallback,
                "bwrap_path": config.bwrap_path.as_ref().map(|p| p.display().to_string()),
                "scratch_root": config.scratch_root.display().to_string(),
                "use_cgroups": config.use_cgroups,
                "cgroup_parent": config.cgroup_parent.as_ref().map(|p| p.display().to_string()),
            },
        },
        "database": database,
        "permissions": permissions,
        "semantic": semantic,
        "backups": backups,
    });
    let mut text = doctor_text(verdict, &state, fallback, &database, &permissions);
    text.push('\n');
    text.push_str(&semantic_text(&semantic));
    text.push('\n');
    text.push_str(
        &match (backups["ok"].as_bool(), backups["warning"].as_str()) {
            (None, _) => "backups: no schedule (--backup-dir); see docs/operations.md".to_string(),
            (_, Some(warning)) => format!("backups: WARNING — {warning}"),
            _ => format!(
                "backups: {} in {}, the newest {} s old (every {} s)",
                backups["count"],
                backups["dir"].as_str().unwrap_or("?"),
                backups["newest_age_secs"],
                backups["every_secs"]
            ),
        },
    );
    print_result_line(args.json, &value, text);
    Ok(())
}

/// The semantic lane as `xmemo serve` would start it with these settings: off, or the model
/// loaded (or the endpoint reached) with its dimensions, and how far behind its vectors are.
async fn semantic_report(
    args: &AdminArgs,
    store: Option<&dyn xmemo_store::Store>,
) -> serde_json::Value {
    let settings = match resolve_semantic_only(&args.db, &args.semantic) {
        Ok(s) => s,
        Err(e) => return json!({ "status": "invalid", "error": format!("{e:#}") }),
    };
    if !settings.spec.is_set() {
        return json!({ "status": "off" });
    }
    match xmemo_embed::open(&settings.spec).await {
        Err(e) => json!({ "status": "unavailable", "error": e.to_string(),
                          "transient": e.transient() }),
        Ok(None) => json!({ "status": "off" }),
        Ok(Some(embedder)) => {
            let lag = match store {
                Some(store) => store
                    .embedding_lag(embedder.model_id())
                    .await
                    .map(|l| json!(l))
                    .unwrap_or_else(|e| json!({ "error": e.to_string() })),
                None => serde_json::Value::Null,
            };
            json!({
                "status": "ok",
                "model": embedder.model_id(),
                "dimensions": embedder.dimensions(),
                "text_weight": settings.text_weight,
                "fusion": settings.fusion.as_str(),
                "lag": lag,
            })
        }
    }
}

fn semantic_text(semantic: &serde_json::Value) -> String {
    match semantic["status"].as_str() {
        Some("off") => "semantic lane: off (no --embedding-model / --embeddings-url)".into(),
        Some("ok") => format!(
            "semantic lane: ok — {} ({} dimensions, text weight {}); pending {}, vectors {}{}",
            semantic["model"].as_str().unwrap_or("?"),
            semantic["dimensions"],
            semantic["text_weight"],
            semantic["lag"]["pending"],
            semantic["lag"]["vectors"],
            if semantic["lag"]["backfilling"].as_bool() == Some(true) {
                ", backfilling the rows older than the lane"
            } else {
                ""
            }
        ),
        _ => format!(
            "semantic lane: UNAVAILABLE — {} (recall answers by full text alone)",
            semantic["error"].as_str().unwrap_or("unknown error")
        ),
    }
}

fn doctor_text(
    verdict: &str,
    state: &xmemo_server::sandbox::SandboxState,
    fallback: bool,
    database: &serde_json::Value,
    permissions: &serde_json::Value,
) -> String {
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut text = format!("sandbox: {verdict}\n");
    text.push_str(&format!(
        "  isolation:        {}\n",
        isolation_label(state.isolation)
    ));
    text.push_str(&format!("  runs accepted:    {}\n", yes_no(state.runnable)));
    text.push_str(&format!("  reason:           {}\n", state.reason));
    text.push_str(&format!(
        "  bubblewrap:       {}\n",
        match (&state.bwrap_version, &state.bwrap_path) {
            (Some(v), Some(p)) => format!("{v} at {p}"),
            (None, Some(p)) => format!("? at {p}"),
            (Some(v), None) => v.clone(),
            (None, None) => "not found".to_string(),
        }
    ));
    text.push_str(&format!(
        "  cgroups:          {}\n",
        state
            .cgroups
            .as_deref()
            .unwrap_or("none (memory/process limits fall back to rlimits, CPU unenforced)")
    ));
    text.push_str(&format!("  seccomp filter:   {}\n", yes_no(state.seccomp)));
    text.push_str(&format!(
        "  dedicated uids:   {}\n",
        yes_no(state.dedicated_uids)
    ));
    text.push_str(&format!(
        "  unsafe fallback:  {}\n",
        if fallback { "ENABLED" } else { "off" }
    ));
    let db_ok = database["ok"].as_bool().unwrap_or(false);
    text.push_str(&format!(
        "database: {} — {}",
        database["backend"].as_str().unwrap_or("?"),
        if db_ok {
            "ping ok".to_string()
        } else {
            format!(
                "NOT REACHABLE: {}",
                database["error"].as_str().unwrap_or("unknown error")
            )
        }
    ));
    text.push('\n');
    text.push_str(&permissions_text(permissions));
    text
}

fn permissions_text(permissions: &serde_json::Value) -> String {
    let data_dir = permissions["data_dir"].as_str().unwrap_or("?");
    let problems = permissions["problems"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if problems.is_empty() {
        return format!(
            "permissions: {data_dir} and its files are private (0700 / 0600, or not created yet)"
        );
    }
    let mut text = String::from(
        "permissions: TOO OPEN — group or others can reach the database or the admin key:",
    );
    for p in &problems {
        let field = |k: &str| p[k].as_str().unwrap_or("?").to_string();
        text.push_str(&format!(
            "\n  {} is {} (should be {}); fix: {}",
            field("path"),
            field("mode"),
            field("expected"),
            field("fix")
        ));
    }
    text
}

fn isolation_label(isolation: xmemo_server::sandbox::Isolation) -> &'static str {
    match isolation {
        xmemo_server::sandbox::Isolation::Bubblewrap => "bubblewrap",
        xmemo_server::sandbox::Isolation::UnsafeLocal => "unsafe_local",
    }
}

fn backend_of(url: Option<&str>) -> &'static str {
    match url {
        Some(u) if u.starts_with("postgres") => "postgres",
        _ => "sqlite",
    }
}

/// The full detail of a service error (the operator runs this on the server host).
fn error_detail(e: &xmemo_server::ServiceError) -> String {
    match e {
        xmemo_server::ServiceError::Internal(detail) => detail.clone(),
        other => other.to_string(),
    }
}
