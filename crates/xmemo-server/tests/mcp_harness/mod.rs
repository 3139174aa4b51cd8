//! A real server on port 0 (fresh SQLite) and rmcp clients connected to its `/mcp` endpoint.
#![allow(dead_code)]

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError as RmcpServiceError};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use xmemo_server::Service;
use xmemo_server::app::{build_app, serve};
use xmemo_server::service::types::{CreateAccountRequest, CreateKeyRequest};
use xmemo_server::state::McpConfig;
use xmemo_server::state::ServerInfo;
use xmemo_store::Store;
use xmemo_store::sqlite::SqliteStore;

pub type Client = RunningService<RoleClient, ()>;

pub struct McpServer {
    pub url: String,
    pub service: Service,
    pub store: Arc<dyn Store>,
    pub admin_key: String,
    pub db_path: PathBuf,
    _dir: tempfile::TempDir,
}

/// Which lifecycle the rmcp client uses.
#[derive(Clone, Copy, Debug)]
pub enum Lifecycle {
    /// `initialize` handshake (protocol ≤ 2025-11-25).
    Initialize,
    /// `server/discover` and per-request metadata (protocol 2026-07-28).
    Discover,
}

impl McpServer {
    pub async fn start() -> Self {
        Self::start_with(McpConfig::default()).await
    }

    pub async fn start_with(mcp: McpConfig) -> Self {
        Self::start_configured(mcp, |service| service).await
    }

    /// As `start_with`, with the service adjusted first (e.g. given a sandbox engine).
    pub async fn start_configured(
        mcp: McpConfig,
        configure: impl FnOnce(Service) -> Service,
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let db_path = dir.path().join("xmemo.db");
        // Long-lived credential cache: `statement_bounds.rs` counts warm requests only.
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&db_path)
                .await
                .expect("sqlite")
                .with_auth_cache_ttl(std::time::Duration::from_secs(3600)),
        );
        let service = configure(Service::new(store.clone()));
        let key_path = xmemo_server::bootstrap::bootstrap_admin(&service, dir.path())
            .await
            .expect("bootstrap")
            .expect("fresh database");
        let admin_key = std::fs::read_to_string(key_path)
            .expect("admin key")
            .trim()
            .to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let app = build_app(
            service.clone(),
            ServerInfo {
                public_url: url.clone(),
                version: "test",
                mcp,
                ..Default::default()
            },
        );
        tokio::spawn(serve(listener, app, std::future::pending()));
        Self {
            url,
            service,
            store,
            admin_key,
            db_path,
            _dir: dir,
        }
    }

    /// A second server over the same service and store, with its own MCP settings; returns
    /// its URL. Two servers seeing the same data answer the same request alike unless their
    /// settings differ.
    pub async fn twin(&self, mcp: McpConfig) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let app = build_app(
            self.service.clone(),
            ServerInfo {
                public_url: self.url.clone(),
                version: "test",
                mcp,
                ..Default::default()
            },
        );
        tokio::spawn(serve(listener, app, std::future::pending()));
        url
    }

    /// A new account and a key with these scopes (and client profile); returns the key.
    pub async fn account(&self, handle: &str, scopes: &[&str], profile: Option<&str>) -> String {
        self.service
            .admin_create_account(CreateAccountRequest {
                handle: handle.into(),
                display_name: None,
                is_admin: false,
            })
            .await
            .expect("create account");
        self.key_for(handle, scopes, profile).await
    }

    /// Another key of an existing account.
    pub async fn key_for(&self, handle: &str, scopes: &[&str], profile: Option<&str>) -> String {
        let operator = self.service.operator_for(handle).await.expect("operator");
        let account = operator.account.clone();
        self.service
            .issue_key(
                &operator,
                &account,
                CreateKeyRequest {
                    name: "mcp test".into(),
                    scopes: Some(scopes.iter().map(|s| s.to_string()).collect()),
                    expires_at: None,
                    profile: profile.map(str::to_string),
                },
            )
            .await
            .expect("issue key")
            .key
    }

    pub async fn client(&self, path: &str, key: &str) -> Client {
        self.client_with(path, key, &[], Lifecycle::Initialize)
            .await
            .expect("connect")
    }

    pub async fn client_with(
        &self,
        path: &str,
        key: &str,
        headers: &[(&'static str, &str)],
        lifecycle: Lifecycle,
    ) -> Result<Client, rmcp::service::ClientInitializeError> {
        let mut custom = HashMap::new();
        for (name, value) in headers {
            custom.insert(
                HeaderName::from_static(name),
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{}{path}", self.url))
            .auth_header(key.to_string())
            .custom_headers(custom);
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        let mode = match lifecycle {
            Lifecycle::Initialize => ClientLifecycleMode::Initialize,
            Lifecycle::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        ().serve_with_lifecycle(transport, mode).await
    }

    /// One raw JSON-RPC POST to `path` (no client library in the way).
    pub async fn post_raw(
        &self,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        let mut req = reqwest::Client::new()
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        req.body(body).send().await.expect("request")
    }
}

/// Calls a tool and returns the result (an `isError` result is still `Ok`).
pub async fn call(
    client: &Client,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, RmcpServiceError> {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
}

/// The `{"kind","data"}` object of a successful result, checked to be identical in
/// `structuredContent` and in the JSON text block.
pub fn ok(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "tool error: {result:?}");
    both(result)
}

/// The SPEC error object of an `isError` result.
pub fn err(result: &CallToolResult) -> Value {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a tool error: {result:?}"
    );
    both(result)
}

fn both(result: &CallToolResult) -> Value {
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let text = result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .expect("a text block");
    let parsed: Value = serde_json::from_str(&text).expect("text block is JSON");
    assert_eq!(
        parsed, structured,
        "text block and structuredContent differ"
    );
    structured
}

pub fn code(result: &CallToolResult) -> String {
    err(result)["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Arguments of a minimal first save.
pub fn skill(slug: &str, body: &str) -> Value {
    json!({
        "slug": slug,
        "name": format!("Skill {slug}"),
        "description": format!("How to {slug}"),
        "instruction_body": body,
    })
}

/// The JSON-RPC error code of a failed request.
pub fn rpc_code(e: &RmcpServiceError) -> i32 {
    match e {
        RmcpServiceError::McpError(data) => data.code.0,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}
