//! A real server on port 0 over a fresh database, plus helpers to talk to it. The backend is
//! SQLite unless `XMEMO_TEST_BACKEND=postgres`, in which case every test gets its own fresh
//! PostgreSQL database (created and dropped by `xmemo_testkit`).
#![allow(dead_code)]

pub mod browser;

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use xmemo_server::Service;
use xmemo_server::app::{HttpConfig, build_app, serve_with};
use xmemo_server::service::types::{CreateAccountRequest, CreateKeyRequest};
use xmemo_server::state::ServerInfo;
use xmemo_store::Store;
use xmemo_store::postgres::{PgPoolSettings, PostgresStore};
use xmemo_store::sqlite::SqliteStore;

/// How the test server is served (defaults: the production ones, no trusted proxy).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    pub http: HttpConfig,
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub mcp: xmemo_server::state::McpConfig,
    /// The public URL the server believes it has (default: its own `http://127.0.0.1:port`).
    pub public_url: Option<String>,
    /// OAuth settings (client profiles).
    pub oauth: xmemo_server::service::oauth::OAuthConfig,
}

pub struct TestServer {
    pub url: String,
    pub service: Service,
    pub store: Arc<dyn Store>,
    pub admin_key: String,
    pub http: Client,
    /// The data directory (holds `admin.key` and `admin.password`).
    pub data_dir: std::path::PathBuf,
    _dir: tempfile::TempDir,
    _pg: Option<xmemo_testkit::PgDropGuard>,
}

/// Credential-cache lifetime of test stores: longer than any test, so tests that compare the
/// statements of two requests (e.g. `invitations.rs`) see the same warm cache for both.
pub const STATEMENT_COUNTING_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// A fresh store of the backend the environment selects.
pub async fn fresh_store(
    dir: &std::path::Path,
) -> (Arc<dyn Store>, Option<xmemo_testkit::PgDropGuard>) {
    if std::env::var("XMEMO_TEST_BACKEND").as_deref() == Ok("postgres") {
        let (options, guard) = xmemo_testkit::postgres_fresh_database()
            .await
            .expect("XMEMO_TEST_BACKEND=postgres needs a reachable PostgreSQL");
        let store = PostgresStore::connect_with(options, PgPoolSettings::default())
            .await
            .expect("connect postgres")
            .with_auth_cache_ttl(STATEMENT_COUNTING_TTL);
        store.migrate().await.expect("migrate postgres");
        (Arc::new(store), Some(guard))
    } else {
        let store = SqliteStore::open(&dir.join("xmemo.db"))
            .await
            .expect("open sqlite")
            .with_auth_cache_ttl(STATEMENT_COUNTING_TTL);
        (Arc::new(store), None)
    }
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_configured(|service| service).await
    }

    /// Like [`TestServer::start`], with the service adjusted first (e.g. `with_sandbox`).
    pub async fn start_configured(configure: impl FnOnce(Service) -> Service) -> Self {
        Self::start_with(configure, ServeOptions::default()).await
    }

    /// Like [`TestServer::start_configured`], with these connection limits and proxies.
    pub async fn start_with(
        configure: impl FnOnce(Service) -> Service,
        options: ServeOptions,
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, pg) = fresh_store(dir.path()).await;
        let service =
            configure(Service::new(store.clone()).with_oauth_config(options.oauth.clone()));
        let key_path = xmemo_server::bootstrap::bootstrap_admin(&service, dir.path())
            .await
            .expect("bootstrap")
            .expect("fresh database bootstraps");
        let admin_key = std::fs::read_to_string(key_path)
            .expect("admin key file")
            .trim()
            .to_string();
        // What `xmemo serve` does before its first query (its upkeep builds the indexes).
        store.warm_search().await.expect("search indexes built");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let url = format!("http://{addr}");
        let app = build_app(
            service.clone(),
            ServerInfo {
                public_url: options.public_url.clone().unwrap_or_else(|| url.clone()),
                version: "test",
                trusted_proxies: options.trusted_proxies,
                mcp: options.mcp,
            },
        );
        tokio::spawn(serve_with(
            listener,
            app,
            options.http,
            std::future::pending(),
        ));
        Self {
            url,
            service,
            store,
            admin_key,
            http: Client::new(),
            data_dir: dir.path().to_path_buf(),
            _dir: dir,
            _pg: pg,
        }
    }

    /// A new account with a key of the given scopes; returns the key.
    pub async fn account(&self, handle: &str, scopes: &[&str]) -> String {
        let account = self
            .service
            .admin_create_account(CreateAccountRequest {
                handle: handle.into(),
                display_name: None,
                is_admin: false,
            })
            .await
            .expect("create account");
        let operator = self.service.operator_for(handle).await.expect("operator");
        self.service
            .issue_key(
                &operator,
                &account,
                CreateKeyRequest {
                    name: "test".into(),
                    scopes: Some(scopes.iter().map(|s| s.to_string()).collect()),
                    expires_at: None,
                    profile: None,
                },
            )
            .await
            .expect("issue key")
            .key
    }

    pub async fn call(&self, method: Method, path: &str, key: &str, body: Option<Value>) -> Reply {
        let mut req = self
            .http
            .request(method, format!("{}{}", self.url, path))
            .bearer_auth(key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        Reply::from(req.send().await.expect("request")).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Reply {
        self.call(Method::GET, path, key, None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Reply {
        self.call(Method::POST, path, key, Some(body)).await
    }

    pub async fn save(&self, key: &str, body: Value) -> Reply {
        self.post("/api/v1/skills", key, body).await
    }

    /// Brings an account into a team the only way there is: the `manager` key invites its
    /// handle with `role`, the account's own `key` accepts.
    pub async fn join(&self, team: &str, manager: &str, handle: &str, key: &str, role: &str) {
        let invited = self
            .post(
                &format!("/api/v1/workspaces/{team}/invitations"),
                manager,
                json!({"invitee": handle, "role": role}),
            )
            .await;
        assert_eq!(invited.status.as_u16(), 202, "invite: {}", invited.body);
        let id = invited.body["invitation"]["invitation_id"]
            .as_str()
            .expect("invitation id")
            .to_string();
        self.post(&format!("/api/v1/invitations/{id}/accept"), key, json!({}))
            .await
            .expect_ok();
    }

    /// One stateless JSON-RPC request to `/mcp` (no session, no client library): the HTTP
    /// status and the JSON body (a string when it is not JSON).
    pub async fn mcp(&self, key: Option<&str>, method: &str, params: Value) -> Reply {
        let mut req = self
            .http
            .post(format!("{}/mcp", self.url))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        Reply::from(req.send().await.expect("mcp request")).await
    }

    pub async fn counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.store.table_counts().await.expect("counts")
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    pub async fn from(resp: reqwest::Response) -> Self {
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Self {
            status,
            body,
            headers,
        }
    }

    /// Asserts the SPEC error shape with this code and HTTP status; returns the error object.
    pub fn expect_error(&self, status: u16, code: &str) -> &Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        let err = &self.body["error"];
        assert_eq!(err["code"], code, "body: {}", self.body);
        assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(err["retryable"].is_boolean());
        err
    }

    pub fn expect_ok(&self) -> &Value {
        assert!(
            self.status.is_success(),
            "status {} body {}",
            self.status,
            self.body
        );
        &self.body
    }
}

/// A minimal valid save body.
pub fn skill(slug: &str, body: &str) -> Value {
    json!({
        "slug": slug,
        "name": format!("Skill {slug}"),
        "description": format!("What {slug} does"),
        "instruction_body": body,
    })
}
