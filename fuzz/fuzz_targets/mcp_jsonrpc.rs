#![no_main]
//! Arbitrary bytes through `/mcp` of the whole application, in process: the Host/Origin guard,
//! authentication, the pre-dispatch checks, rmcp and the handler, on a real (temporary) SQLite
//! store built once. Asserts that nothing panics (also inside tasks rmcp spawns), that nothing
//! answers 5xx, that every answer is JSON-RPC (one JSON object, an SSE stream of them, or an
//! empty 202), and that none needed rewriting from rmcp's plain text (a gap in the
//! pre-dispatch checks).
//!
//! Input: the first byte picks the headers (see [`Flags`]), the rest is the body.

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tower::ServiceExt;
use xmemo_server::Service;
use xmemo_server::app::build_app;
use xmemo_server::bootstrap::bootstrap_admin;
use xmemo_server::mcp::RewrittenPlainText;
use xmemo_server::state::McpConfig;
use xmemo_server::state::ServerInfo;
use xmemo_store::Store;
use xmemo_store::sqlite::SqliteStore;

struct World {
    rt: tokio::runtime::Runtime,
    app: axum::Router,
    key: String,
    _dir: tempfile::TempDir,
}

static WORLD: OnceLock<World> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(|| {
        // tokio swallows a panic in a spawned task; a panic reachable from input is a finding.
        std::panic::set_hook(Box::new(|info| {
            eprintln!("panic: {info}");
            std::process::abort();
        }));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("tempdir");
        let (app, key) = rt.block_on(async {
            let store: Arc<dyn Store> = Arc::new(
                SqliteStore::open(&dir.path().join("xmemo.db"))
                    .await
                    .expect("sqlite"),
            );
            let service = Service::new(store);
            let key_path = bootstrap_admin(&service, dir.path())
                .await
                .expect("bootstrap")
                .expect("fresh database");
            let key = std::fs::read_to_string(key_path).expect("admin key");
            let info = ServerInfo {
                public_url: "http://localhost".into(),
                version: "fuzz",
                mcp: McpConfig {
                    conformance_fixtures: true,
                    ..Default::default()
                },
                ..Default::default()
            };
            (build_app(service, info), key.trim().to_string())
        });
        World {
            rt,
            app,
            key,
            _dir: dir,
        }
    })
}

/// The header choices one input byte encodes.
struct Flags(u8);

impl Flags {
    fn protocol_version(&self) -> Option<&'static str> {
        match self.0 & 0b11 {
            0 => None,
            1 => Some("2025-06-18"),
            2 => Some("2026-07-28"),
            _ => Some("1999-01-01"),
        }
    }
    fn accept(&self) -> &'static str {
        if self.0 & 0x04 == 0 {
            "application/json, text/event-stream"
        } else {
            "application/json"
        }
    }
    fn content_type(&self) -> &'static str {
        if self.0 & 0x08 == 0 {
            "application/json"
        } else {
            "text/plain"
        }
    }
    fn path(&self) -> &'static str {
        if self.0 & 0x10 == 0 {
            "/mcp"
        } else {
            "/mcp/conformance"
        }
    }
    /// Mirror `method` and `params.name`/`params.uri` into `Mcp-Method`/`Mcp-Name`, as
    /// 2026-07-28 clients must, so inputs get past header validation to the handler.
    fn mirror(&self) -> bool {
        self.0 & 0x20 != 0
    }
    fn authenticated(&self) -> bool {
        self.0 & 0x40 == 0
    }
    fn method(&self) -> Method {
        if self.0 & 0x80 != 0 && self.0 & 0x0f == 0x0f {
            Method::GET
        } else {
            Method::POST
        }
    }
}

fn request(flags: &Flags, body: &[u8], key: &str) -> Request<Body> {
    let mut b = Request::builder()
        .method(flags.method())
        .uri(flags.path())
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, flags.accept())
        .header(header::CONTENT_TYPE, flags.content_type());
    if flags.authenticated() {
        b = b.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    if let Some(v) = flags.protocol_version() {
        b = b.header("mcp-protocol-version", v);
    }
    if flags.mirror()
        && let Ok(value) = serde_json::from_slice::<Value>(body)
    {
        let text = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .and_then(|s| HeaderValue::from_str(s).ok())
        };
        if let Some(m) = text(value.get("method")) {
            b = b.header("mcp-method", m);
        }
        let params = value.get("params");
        let name = params.and_then(|p| p.get("name").or_else(|| p.get("uri")));
        if let Some(n) = text(name) {
            b = b.header("mcp-name", n);
        }
    }
    b.body(Body::from(body.to_vec())).expect("request")
}

/// One JSON-RPC message as MCP defines it; `answer` says it must be a response.
fn check_message(m: &Value, answer: bool, raw: &str) {
    let obj = m
        .as_object()
        .unwrap_or_else(|| panic!("not a JSON-RPC object: {raw}"));
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "{raw}");
    if let Some(id) = obj.get("id") {
        assert!(
            id.is_string() || id.is_i64() || id.is_u64(),
            "id must be a string or an integer: {raw}"
        );
    }
    let is_response = obj.contains_key("result") || obj.contains_key("error");
    if answer || is_response {
        assert!(
            obj.contains_key("result") != obj.contains_key("error"),
            "exactly one of result/error: {raw}"
        );
    } else {
        assert!(obj.get("method").is_some_and(Value::is_string), "{raw}");
    }
    if let Some(error) = obj.get("error") {
        assert!(error["code"].is_i64(), "error.code is an integer: {raw}");
        assert!(
            error["message"].is_string(),
            "error.message is a string: {raw}"
        );
    }
}

async fn check(response: axum::response::Response) {
    let status = response.status();
    // The pre-dispatch checks must answer whatever rmcp would refuse in plain text.
    let rewritten = response.extensions().get::<RewrittenPlainText>().is_some();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let bytes = tokio::time::timeout(
        Duration::from_secs(30),
        axum::body::to_bytes(response.into_body(), 64 << 20),
    )
    .await
    .expect("the answer completes")
    .expect("the body reads");
    let text = String::from_utf8_lossy(&bytes);
    assert!(!status.is_server_error(), "{status}: {text}");
    assert!(!rewritten, "rmcp answered in plain text: {status}: {text}");
    if status == StatusCode::ACCEPTED {
        assert!(bytes.is_empty(), "202 carries no body: {text}");
    } else if content_type.starts_with("application/json") {
        let value: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {text}"));
        check_message(&value, true, &text);
    } else if content_type.starts_with("text/event-stream") {
        let messages: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .collect();
        assert!(
            !messages.is_empty(),
            "an SSE answer carries a message: {text}"
        );
        for (i, data) in messages.iter().enumerate() {
            let value: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {text}"));
            check_message(&value, i + 1 == messages.len(), data);
        }
    } else {
        panic!("not JSON-RPC: {status} `{content_type}`: {text}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let w = world();
    let req = request(&Flags(flags), body, &w.key);
    let app = w.app.clone();
    w.rt.block_on(async move {
        let response = app.oneshot(req).await.expect("infallible");
        check(response).await;
    });
});
