//! `xmemo doctor`: checks this machine's connection to an xmemo server the way an MCP client
//! will make it — the URL, the key, the MCP endpoint and its tools, OAuth metadata, the agent
//! instance id — and says, for each check that fails, what fixes it. (`xmemo admin doctor`
//! checks a server's data directory instead.)
//!
//! Nothing here changes anything but one: when no agent instance id is set or kept, doctor
//! makes the one it suggests and keeps it where the bridge reads it (so the suggestion is the
//! id `xmemo mcp` then sends). No key is created, no client file written.

mod clients;

use crate::agent_instance::{self, Stored};
use crate::mcp_bridge::{error_chain, sse_messages, unexpanded_reference};
use crate::output::print_result;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// Server base URL
    #[arg(long, env = "XMEMO_URL", default_value = crate::client::DEFAULT_URL)]
    pub url: String,
    /// API key (prefer the XMEMO_KEY environment variable: flags show up in process lists)
    #[arg(long, env = "XMEMO_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Client profile to check the tools of (/mcp/{profile}) [default: the key's own]
    #[arg(long, env = "XMEMO_PROFILE")]
    pub profile: Option<String>,
    /// Check this client's MCP configuration only [default: every client whose file is
    /// where `xmemo connect` writes it]
    #[arg(long, value_enum)]
    pub client: Option<crate::connect::clients::Client>,
    /// The client's configuration file, when not in its default place (with --client)
    #[arg(long, requires = "client")]
    pub config: Option<std::path::PathBuf>,
    /// Print one JSON object per check (under "checks") instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pass,
    Warn,
    Fail,
    Skip,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

struct Check {
    name: &'static str,
    status: Status,
    summary: String,
    fix: Option<String>,
    data: Value,
}

impl Check {
    fn new(name: &'static str, status: Status, summary: impl Into<String>) -> Self {
        Self {
            name,
            status,
            summary: summary.into(),
            fix: None,
            data: Value::Null,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    fn data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }
}

/// One HTTP answer, read whole.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }
}

struct Probe {
    http: reqwest::Client,
    base: String,
}

impl Probe {
    async fn get(&self, path: &str, key: Option<&str>) -> Result<Answer, String> {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(k) = key {
            request = request.bearer_auth(k);
        }
        read(request).await
    }
}

async fn read(request: reqwest::RequestBuilder) -> Result<Answer, String> {
    let response = request.send().await.map_err(|e| error_chain(&e))?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.map_err(|e| error_chain(&e))?;
    Ok(Answer {
        status,
        headers,
        body,
    })
}

pub async fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let checks = checks(&args).await;
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let list: Vec<Value> = checks.iter().map(check_json).collect();
    print_result(
        args.json,
        json!({ "ok": failed == 0, "checks": list }),
        |_| {
            for c in &checks {
                println!("{:<5} {:<15} {}", c.status.word(), c.name, c.summary);
                if let Some(fix) = &c.fix {
                    println!("{:<21} fix: {fix}", "");
                }
            }
            Ok(())
        },
    )?;
    if failed > 0 {
        anyhow::bail!("{failed} of {} checks failed", checks.len());
    }
    Ok(())
}

fn check_json(c: &Check) -> Value {
    let mut v = json!({
        "check": c.name,
        "status": c.status.word(),
        "summary": c.summary,
        "fix": c.fix,
    });
    if let (Some(obj), Value::Object(data)) = (v.as_object_mut(), &c.data) {
        for (k, val) in data {
            obj.insert(k.clone(), val.clone());
        }
    }
    v
}

async fn checks(args: &DoctorArgs) -> Vec<Check> {
    let mut out = Vec::new();
    let instance = agent_instance_check();
    let base = match crate::connect::base_url(&args.url) {
        Ok(b) => b,
        Err(e) => {
            out.push(
                Check::new("server", Status::Fail, format!("{e:#}")).fix(format!(
                    "set XMEMO_URL (or --url) to the server's base URL, e.g. {}",
                    crate::client::DEFAULT_URL
                )),
            );
            for name in ["public_url", "credential", "mcp", "oauth"] {
                out.push(Check::new(name, Status::Skip, "needs a usable server URL"));
            }
            out.push(instance);
            return out;
        }
    };
    let http = match reqwest::Client::builder()
        .user_agent(concat!("xmemo-doctor/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(20))
        .build()
    {
        Ok(h) => h,
        Err(e) => {
            out.push(Check::new(
                "server",
                Status::Fail,
                format!("cannot set up HTTP: {e}"),
            ));
            out.push(instance);
            return out;
        }
    };
    let probe = Probe { http, base };

    let server = server_check(&probe).await;
    let reachable = server.status == Status::Pass;
    out.push(server);
    if !reachable {
        for name in ["public_url", "credential", "mcp", "oauth"] {
            out.push(Check::new(
                name,
                Status::Skip,
                "needs a reachable xmemo server",
            ));
        }
        out.push(instance);
        return out;
    }
    out.push(public_url_check(&probe).await);
    let key = args.key.as_deref().map(str::trim).filter(|k| !k.is_empty());
    let (credential, me) = credential_check(&probe, key).await;
    out.push(credential);
    out.push(match (key, &me) {
        (Some(k), Some(me)) => mcp_check(&probe, k, args.profile.as_deref(), me).await,
        _ => Check::new("mcp", Status::Skip, "needs an accepted XMEMO_KEY"),
    });
    out.push(oauth_check(&probe).await);
    out.extend(clients::client_config_checks(&probe, key, args.client, args.config.clone()).await);
    out.push(instance);
    out
}

async fn server_check(probe: &Probe) -> Check {
    let base = &probe.base;
    let reach_fix = format!(
        "check XMEMO_URL (now {base}) and that `xmemo serve` runs there and is reachable from here"
    );
    let not_xmemo_fix = if base.ends_with("/mcp") || base.ends_with("/api/v1") {
        format!(
            "XMEMO_URL is the server's base URL, without /mcp or /api/v1: {}",
            base.trim_end_matches("/mcp").trim_end_matches("/api/v1")
        )
    } else {
        "point XMEMO_URL at the xmemo server's base URL (the one `xmemo serve` reports)".to_string()
    };
    let health = match probe.get("/healthz", None).await {
        Ok(a) => a,
        Err(e) => {
            return Check::new("server", Status::Fail, format!("cannot reach {base}: {e}"))
                .fix(reach_fix);
        }
    };
    if health.status != 200 || health.json().is_none_or(|v| v["status"] != "ok") {
        return Check::new(
            "server",
            Status::Fail,
            format!(
                "{base}/healthz answered HTTP {} but not as an xmemo server does",
                health.status
            ),
        )
        .fix(not_xmemo_fix);
    }
    let ready = match probe.get("/readyz", None).await {
        Ok(a) => a,
        Err(e) => {
            return Check::new("server", Status::Fail, format!("{base}/readyz: {e}"))
                .fix(reach_fix);
        }
    };
    let body = ready.json().unwrap_or(Value::Null);
    let client = env!("CARGO_PKG_VERSION");
    match (ready.status, body["version"].as_str()) {
        (200, Some(version)) => Check::new(
            "server",
            Status::Pass,
            format!(
                "xmemo {version} at {base} (database {}; this client {client})",
                body["database"].as_str().unwrap_or("?")
            ),
        )
        .data(json!({"url": base, "version": version, "database": body["database"], "client_version": client})),
        (503, _) => Check::new(
            "server",
            Status::Fail,
            format!("xmemo at {base} is up but its database does not answer (/readyz: 503)"),
        )
        .fix("on the server host run `xmemo admin doctor` and check --database-url / XMEMO_DATABASE_URL"),
        (status, _) => Check::new(
            "server",
            Status::Fail,
            format!("{base}/readyz answered HTTP {status} but not as an xmemo server does"),
        )
        .fix(not_xmemo_fix),
    }
}

/// OAuth tokens are bound to the public URL's `/mcp`; a client configured with another URL
/// for the same server would be refused them.
async fn public_url_check(probe: &Probe) -> Check {
    let base = &probe.base;
    let answer = match probe.get("/api/v1/mcp/config/autonomous-agent", None).await {
        Ok(a) => a,
        Err(e) => return Check::new("public_url", Status::Warn, format!("no recipe: {e}")),
    };
    let recipe = answer.json().unwrap_or(Value::Null);
    let Some(mcp_url) = recipe["mcp_url"].as_str().filter(|_| answer.status == 200) else {
        return Check::new(
            "public_url",
            Status::Warn,
            format!(
                "the server has no autonomous-agent recipe (HTTP {}): an older xmemo",
                answer.status
            ),
        )
        .fix("upgrade the server to get `xmemo connect headless` and the public-URL check");
    };
    let public = mcp_url.trim_end_matches("/mcp");
    if public == base {
        Check::new(
            "public_url",
            Status::Pass,
            format!("the server's public URL is the one used here ({public})"),
        )
        .data(json!({"public_url": public}))
    } else {
        Check::new(
            "public_url",
            Status::Warn,
            format!(
                "the server calls itself {public}, but it is reached here as {base}; OAuth tokens are bound to {public}/mcp"
            ),
        )
        .fix(format!(
            "connect clients with --url {public}, or start the server with --public-url {base}"
        ))
        .data(json!({"public_url": public}))
    }
}

async fn credential_check(probe: &Probe, key: Option<&str>) -> (Check, Option<Value>) {
    let create = "create a key with `xmemo keys create --name my-agent` (or in the console) and export it as XMEMO_KEY; on a fresh server the first admin key is in <data-dir>/admin.key";
    let Some(key) = key else {
        return (
            Check::new("credential", Status::Fail, "XMEMO_KEY is not set").fix(create),
            None,
        );
    };
    if let Some(reference) = unexpanded_reference(key) {
        return (
            Check::new(
                "credential",
                Status::Fail,
                format!("XMEMO_KEY holds the unexpanded reference `{reference}`, not a key"),
            )
            .fix("export the key itself as XMEMO_KEY (from your secret store)"),
            None,
        );
    }
    let answer = match probe.get("/api/v1/me", Some(key)).await {
        Ok(a) => a,
        Err(e) => {
            return (
                Check::new("credential", Status::Fail, format!("GET /api/v1/me: {e}")),
                None,
            );
        }
    };
    let body = answer.json().unwrap_or(Value::Null);
    let message = body["error"]["message"].as_str().unwrap_or("").to_string();
    match answer.status {
        200 => {
            let scopes: Vec<&str> = body["scopes"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let handle = body["account"]["handle"].as_str().unwrap_or("?");
            let profile = body["client_profile"].as_str();
            let summary = format!(
                "accepted: account {handle}, scopes {}, client profile {}",
                scopes.join(" "),
                profile.unwrap_or("(the server's default)")
            );
            let data = json!({
                "account": handle,
                "credential_id": body["credential_id"],
                "scopes": scopes,
                "client_profile": profile,
            });
            let check = if scopes.contains(&"memory:write") {
                Check::new("credential", Status::Pass, summary)
            } else {
                Check::new("credential", Status::Warn, format!("{summary} (read-only: saves are refused)"))
                    .fix("if the agent should save, create a key with `xmemo keys create --name my-agent --scopes memory:read,memory:write`")
            };
            (check.data(data), Some(body))
        }
        401 => (
            Check::new(
                "credential",
                Status::Fail,
                "the server rejected XMEMO_KEY (invalid, revoked or expired)",
            )
            .fix(create),
            None,
        ),
        403 => (
            Check::new(
                "credential",
                Status::Fail,
                format!("XMEMO_KEY is refused: {message}"),
            )
            .fix("use a key with the memory:read scope (`xmemo keys create --scopes memory:read,memory:write`)"),
            None,
        ),
        429 => {
            let after = answer
                .headers
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("a minute");
            (
                Check::new(
                    "credential",
                    Status::Fail,
                    "too many failed authentications from this address: the server refuses every key for now",
                )
                .fix(format!("wait {after} seconds, then run `xmemo doctor` again with the right key")),
                None,
            )
        }
        status => (
            Check::new(
                "credential",
                Status::Fail,
                format!("GET /api/v1/me answered HTTP {status}: {message}"),
            ),
            None,
        ),
    }
}

/// A raw `tools/list` on the endpoint the bridge would use (stateless: no `initialize`
/// needed).
async fn mcp_check(probe: &Probe, key: &str, profile: Option<&str>, me: &Value) -> Check {
    let profile = profile
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let endpoint = match &profile {
        Some(p) => format!("{}/mcp/{p}", probe.base),
        None => format!("{}/mcp", probe.base),
    };
    let shown_profile = profile
        .clone()
        .or_else(|| me["client_profile"].as_str().map(str::to_string));
    let request = probe
        .http
        .post(&endpoint)
        .bearer_auth(key)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .header("MCP-Protocol-Version", "2025-06-18")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    let answer = match read(request).await {
        Ok(a) => a,
        Err(e) => return Check::new("mcp", Status::Fail, format!("POST {endpoint}: {e}")),
    };
    let is_sse = answer
        .headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let message = if is_sse {
        sse_messages(&answer.body).into_iter().next()
    } else {
        answer.json()
    }
    .unwrap_or(Value::Null);
    let error_message = message["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    match answer.status {
        200 if message["result"]["tools"].is_array() => {
            let tools: Vec<&str> = message["result"]["tools"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
                .unwrap_or_default();
            let label = shown_profile.as_deref().unwrap_or("(default)");
            let check = if tools.is_empty() {
                Check::new("mcp", Status::Warn, format!("{endpoint} answers but lists no tools for profile {label}"))
                    .fix("pick a profile with tools (docs/mcp.md, Client profiles)")
            } else {
                Check::new(
                    "mcp",
                    Status::Pass,
                    format!("{endpoint} lists {} tools for profile {label}: {}", tools.len(), tools.join(", ")),
                )
            };
            check.data(json!({"endpoint": endpoint, "profile": shown_profile, "tools": tools}))
        }
        404 => Check::new("mcp", Status::Fail, format!("{endpoint}: no such client profile on this server"))
            .fix("unset XMEMO_PROFILE (or --profile) to use the key's own, or name one of the profiles in docs/mcp.md"),
        403 => Check::new("mcp", Status::Fail, format!("{endpoint} refused the request: {}", body_message(&answer)))
            .fix("if the Host is refused, the operator adds it with --allowed-hosts; if the key's profile is unknown, connect to /mcp/<profile> (XMEMO_PROFILE)"),
        status => Check::new(
            "mcp",
            Status::Fail,
            format!("{endpoint} answered HTTP {status}: {}", if error_message.is_empty() { body_message(&answer) } else { error_message }),
        ),
    }
}

fn body_message(a: &Answer) -> String {
    a.json()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| a.body.chars().take(200).collect())
}

/// OAuth clients (Claude Code, Cursor, VS Code, …) need the metadata documents to sign in.
/// They require https except on loopback, so the check runs for https URLs.
async fn oauth_check(probe: &Probe) -> Check {
    if !probe.base.starts_with("https://") {
        return Check::new(
            "oauth",
            Status::Skip,
            "not an https URL: OAuth metadata is checked for https servers (clients accept plain http for OAuth only on loopback)",
        );
    }
    let fix = "OAuth clients cannot sign in to this server: upgrade it, or connect them with `xmemo connect CLIENT --auth key`";
    let prm = match probe
        .get("/.well-known/oauth-protected-resource/mcp", None)
        .await
    {
        Ok(a) if a.status == 200 => a.json().unwrap_or(Value::Null),
        Ok(a) => {
            return Check::new(
                "oauth",
                Status::Fail,
                format!("no protected-resource metadata (HTTP {})", a.status),
            )
            .fix(fix);
        }
        Err(e) => return Check::new("oauth", Status::Fail, e).fix(fix),
    };
    let Some(issuer) = prm["authorization_servers"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_str)
    else {
        return Check::new(
            "oauth",
            Status::Fail,
            "the protected-resource metadata names no authorization server",
        )
        .fix(fix);
    };
    let as_url = format!(
        "{}/.well-known/oauth-authorization-server",
        issuer.trim_end_matches('/')
    );
    let meta = match read(probe.http.get(&as_url)).await {
        Ok(a) if a.status == 200 => a.json().unwrap_or(Value::Null),
        Ok(a) => {
            return Check::new(
                "oauth",
                Status::Fail,
                format!("{as_url} answered HTTP {}", a.status),
            )
            .fix(fix);
        }
        Err(e) => return Check::new("oauth", Status::Fail, format!("{as_url}: {e}")).fix(fix),
    };
    oauth_verdict(issuer, &meta)
}

fn oauth_verdict(issuer: &str, meta: &Value) -> Check {
    let missing: Vec<&str> = ["issuer", "authorization_endpoint", "token_endpoint"]
        .into_iter()
        .filter(|k| meta[*k].as_str().is_none())
        .collect();
    let s256 = meta["code_challenge_methods_supported"]
        .as_array()
        .is_some_and(|m| m.iter().any(|v| v == "S256"));
    if !missing.is_empty() || !s256 {
        let mut what: Vec<String> = missing.iter().map(|m| m.to_string()).collect();
        if !s256 {
            what.push("code_challenge_methods_supported with S256".into());
        }
        return Check::new(
            "oauth",
            Status::Fail,
            format!("authorization-server metadata of {issuer} lacks {}", what.join(", ")),
        )
        .fix("OAuth clients cannot sign in: upgrade the server, or connect them with `xmemo connect CLIENT --auth key`");
    }
    Check::new(
        "oauth",
        Status::Pass,
        format!("OAuth metadata published (issuer {issuer})"),
    )
    .data(json!({"issuer": issuer, "registration_endpoint": meta["registration_endpoint"]}))
}

/// Which instance id `xmemo mcp` will send, and where it comes from.
fn agent_instance_check() -> Check {
    let var = agent_instance::ENV_VAR;
    let suggestion = xmemo_core::new_id("inst");
    let stored_path = agent_instance::stored_path();
    let stored = stored_path.as_deref().map(agent_instance::read_stored);
    let path_text = stored_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "(no HOME or XDG_CONFIG_HOME)".into());
    match std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
        Some(raw) => match agent_instance::attribution_value(&raw) {
            Some(id) if id == raw.trim() => {
                let mut summary = format!("{var}={id} (from the environment; stable while it is set)");
                if let Some(Stored::Valid(other)) = &stored
                    && *other != id
                {
                    summary.push_str(&format!("; the id in {path_text} ({other}) is not used"));
                }
                Check::new("agent_instance", Status::Pass, summary)
                    .data(json!({"agent_instance_id": id, "source": "environment"}))
            }
            _ => Check::new(
                "agent_instance",
                Status::Fail,
                format!("{var} is not 1 to 128 printable ASCII characters"),
            )
            .fix(format!("export {var}={suggestion}")),
        },
        None => match stored {
            Some(Stored::Valid(id)) => Check::new(
                "agent_instance",
                Status::Warn,
                format!(
                    "{var} is not set; `xmemo mcp` sends {id}, kept in {path_text} (stable on this machine), but other clients and CLI commands send none"
                ),
            )
            .fix(format!("export {var}={id}"))
            .data(json!({"agent_instance_id": id, "source": "stored", "path": path_text})),
            Some(Stored::Unreadable(e)) => Check::new(
                "agent_instance",
                Status::Fail,
                format!("{var} is not set and {path_text} cannot be read ({e}): `xmemo mcp` would use a new id every run"),
            )
            .fix(format!("export {var}={suggestion}")),
            // Nothing kept yet (or no config directory at all): make the id now and keep it
            // where the bridge reads it, so the id suggested is the one `xmemo mcp` sends.
            Some(Stored::Missing | Stored::Invalid) | None => match stored_path
                .as_deref()
                .map(agent_instance::keep_new_id)
            {
                None => Check::new(
                    "agent_instance",
                    Status::Fail,
                    format!("{var} is not set and there is no config directory {path_text}: `xmemo mcp` would use a new id every run"),
                )
                .fix(format!("export {var}={suggestion}")),
                Some(Ok(id)) => Check::new(
                    "agent_instance",
                    Status::Warn,
                    format!(
                        "{var} is not set; made {id} and kept it in {path_text}: `xmemo mcp` sends it on every run on this machine, but other clients and CLI commands send none"
                    ),
                )
                .fix(format!("export {var}={id}"))
                .data(json!({"agent_instance_id": id, "source": "stored", "path": path_text})),
                Some(Err((_, e))) => Check::new(
                    "agent_instance",
                    Status::Fail,
                    format!("{var} is not set and no id can be kept in {path_text} ({e}): `xmemo mcp` would use a new id every run"),
                )
                .fix(format!("export {var}={suggestion} (keep it stable and outside git)")),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_metadata_needs_endpoints_and_s256() {
        let good = json!({
            "issuer": "https://m.example",
            "authorization_endpoint": "https://m.example/oauth/authorize",
            "token_endpoint": "https://m.example/oauth/token",
            "code_challenge_methods_supported": ["S256"],
        });
        assert_eq!(
            oauth_verdict("https://m.example", &good).status,
            Status::Pass
        );
        let mut plain = good.clone();
        plain["code_challenge_methods_supported"] = json!(["plain"]);
        let verdict = oauth_verdict("https://m.example", &plain);
        assert_eq!(verdict.status, Status::Fail);
        assert!(verdict.fix.is_some());
        let mut no_token = good;
        no_token.as_object_mut().unwrap().remove("token_endpoint");
        assert!(
            oauth_verdict("https://m.example", &no_token)
                .summary
                .contains("token_endpoint")
        );
    }
}
