//! `/mcp` at the HTTP level, raw: the two protocol eras on one stateless endpoint (MCP
//! 2026-07-28 without `initialize`, the legacy versions with it), every refusal as a JSON-RPC
//! body, and the conformance fixtures that make log and capability rules observable.

mod mcp_harness;

use mcp_harness::McpServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use xmemo_server::state::McpConfig;

const MODERN: &str = "2026-07-28";

fn meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(m), Value::Object(extra)) = (meta.as_object_mut(), extra) {
        m.extend(extra);
    }
    meta
}

/// What a 2026-07-28 client sends: `_meta` in the params and the mirrored headers.
async fn modern(
    s: &McpServer,
    path: &str,
    key: &str,
    id: i64,
    method: &str,
    mut params: Value,
    extra_meta: Value,
) -> reqwest::Response {
    params["_meta"] = meta(extra_meta);
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    s.post_raw(path, Some(key), &headers, body.to_string())
        .await
}

/// A legacy (≤ 2025-11-25) request: the version only in the header, no `_meta`.
async fn legacy(
    s: &McpServer,
    key: &str,
    version: &str,
    id: i64,
    method: &str,
    params: Value,
) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    s.post_raw(
        "/mcp",
        Some(key),
        &[("mcp-protocol-version", version)],
        body.to_string(),
    )
    .await
}

/// Status, content type and body parsed as JSON (the body must be JSON).
async fn json_of(resp: reqwest::Response) -> (StatusCode, String, Value) {
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = resp.text().await.expect("body");
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("not JSON ({e}), status {status}, {ct}: {text}"));
    (status, ct, body)
}

/// The JSON-RPC messages of an SSE body, in order.
async fn sse_messages(resp: reqwest::Response) -> Vec<Value> {
    let text = resp.text().await.expect("body");
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).expect("SSE data is JSON"))
        .collect()
}

fn assert_jsonrpc_error(body: &Value, code: i64, spec_code: &str) {
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["data"]["error"]["code"], spec_code, "{body}");
    // The request's id, to find the refusal in the server's log (docs/operations.md).
    assert!(
        body["error"]["data"]["error"]["request_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{body}"
    );
}

#[tokio::test]
async fn methods_2026_07_28_removed_are_unknown_to_its_requests() {
    let s = McpServer::start().await;
    let key = s.admin_key.clone();
    // Each with params it would accept in the legacy era, and with only `_meta` (which rmcp
    // cannot parse as that method's params).
    let cases = [
        (
            "initialize",
            json!({"protocolVersion": MODERN, "capabilities": {},
                   "clientInfo": {"name": "c", "version": "1"}}),
        ),
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "info"})),
        (
            "resources/subscribe",
            json!({"uri": "skill://personal/x/SKILL.md"}),
        ),
        (
            "resources/unsubscribe",
            json!({"uri": "skill://personal/x/SKILL.md"}),
        ),
    ];
    for (i, (method, params)) in cases.into_iter().enumerate() {
        for (n, params) in [params, json!({})].into_iter().enumerate() {
            let id = (10 * i + n) as i64;
            let resp = modern(&s, "/mcp", &key, id, method, params, json!({})).await;
            let (status, ct, body) = json_of(resp).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} #{n}: {body}");
            assert!(ct.starts_with("application/json"), "{ct}");
            assert_eq!(body["error"]["code"], -32601, "{method} #{n}: {body}");
            assert_eq!(body["id"], id, "{method} #{n}: {body}");
        }
    }
    // A method that exists, with params it cannot parse, stays invalid params.
    let resp = modern(
        &s,
        "/mcp",
        &key,
        7,
        "resources/read",
        json!({"uri": 5}),
        json!({}),
    )
    .await;
    let (status, _, body) = json_of(resp).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::OK, json!(-32602))
    );
    // The era's own lifecycle works on the same endpoint.
    let resp = modern(&s, "/mcp", &key, 8, "server/discover", json!({}), json!({})).await;
    let (status, _, body) = json_of(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(MODERN)) && v.contains(&json!("2025-06-18"))),
        "{body}"
    );
}

#[tokio::test]
async fn legacy_clients_keep_initialize_ping_and_set_level() {
    let s = McpServer::start().await;
    let key = s.admin_key.clone();
    for version in ["2025-06-18", "2025-11-25"] {
        let init = json!({"protocolVersion": version, "capabilities": {},
                          "clientInfo": {"name": "old", "version": "1"}});
        let (status, _, body) =
            json_of(legacy(&s, &key, version, 1, "initialize", init).await).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["result"]["protocolVersion"], version, "{body}");
        for (method, params) in [
            ("ping", json!({})),
            ("logging/setLevel", json!({"level": "warning"})),
        ] {
            let (status, _, body) =
                json_of(legacy(&s, &key, version, 2, method, params).await).await;
            assert_eq!(status, StatusCode::OK, "{method} {version}: {body}");
            assert_eq!(body["result"], json!({}), "{method} {version}: {body}");
        }
        let (_, _, body) =
            json_of(legacy(&s, &key, version, 3, "tools/list", json!({})).await).await;
        // The skill tools and the five memory tools of ordinary-full.
        assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(7));
    }
}

#[tokio::test]
async fn every_refusal_on_mcp_is_a_json_rpc_body() {
    let s = McpServer::start().await;
    let key = s.admin_key.clone();
    let ping = r#"{"jsonrpc":"2.0","id":41,"method":"ping"}"#;

    // A duplicate key: rmcp's typed parse refused it with a plain-text 415 before.
    let dup = r#"{"jsonrpc":"2.0","id":42,"method":"ping","method":"tools/list"}"#;
    let (status, ct, body) = json_of(s.post_raw("/mcp", Some(&key), &[], dup).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(ct.starts_with("application/json"), "{ct}");
    assert_jsonrpc_error(&body, -32600, "VALIDATION_ERROR");
    assert_eq!(body["id"], 42);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("duplicate key `method`")),
        "{body}"
    );
    let nested = r#"{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"recall_cloud_skill","arguments":{"slug":"a","slug":"b"}}}"#;
    let (status, _, body) = json_of(s.post_raw("/mcp", Some(&key), &[], nested).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_jsonrpc_error(&body, -32600, "VALIDATION_ERROR");

    // An unknown protocol version: MCP's UnsupportedProtocolVersionError, the supported
    // versions in `data` (plain-text 400 before).
    let resp = s
        .post_raw(
            "/mcp",
            Some(&key),
            &[("mcp-protocol-version", "2099-01-01")],
            ping,
        )
        .await;
    let (status, _, body) = json_of(resp).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_jsonrpc_error(&body, -32022, "VALIDATION_ERROR");
    assert_eq!(body["id"], 41);
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
    let supported = body["error"]["data"]["supported"]
        .as_array()
        .expect("supported");
    for v in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        MODERN,
    ] {
        assert!(supported.contains(&json!(v)), "{v} in {supported:?}");
    }

    // The same for a notification whose `_meta` names that version: rmcp reads a version from
    // a request's `_meta` only, and answered plain text (found by fuzz/mcp_jsonrpc).
    let notification = r#"{"jsonrpc":"2.0","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let resp = s
        .post_raw(
            "/mcp",
            Some(&key),
            &[("mcp-protocol-version", "1999-01-01")],
            notification,
        )
        .await;
    let (status, _, body) = json_of(resp).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_jsonrpc_error(&body, -32022, "VALIDATION_ERROR");
    assert!(body.get("id").is_none(), "{body}");

    // Media types (plain-text 406 / 415 before).
    let raw = |accept: &'static str, content_type: &'static str| {
        reqwest::Client::new()
            .post(format!("{}/mcp", s.url))
            .bearer_auth(&key)
            .header("accept", accept)
            .header("content-type", content_type)
            .body(ping)
            .send()
    };
    let (status, _, body) = json_of(
        raw("application/json", "application/json")
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    assert_jsonrpc_error(&body, -32600, "VALIDATION_ERROR");
    assert_eq!(
        body["error"]["data"]["error"]["details"]["header"],
        "accept"
    );
    assert_eq!(body["id"], 41);
    let (status, _, body) = json_of(
        raw("application/json, text/event-stream", "text/plain")
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_jsonrpc_error(&body, -32600, "VALIDATION_ERROR");
    assert_eq!(
        body["error"]["data"]["error"]["details"]["header"],
        "content-type"
    );

    // GET has no stream on a stateless endpoint: 405 with `Allow`, in JSON-RPC.
    let resp = reqwest::Client::new()
        .get(format!("{}/mcp", s.url))
        .bearer_auth(&key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("get");
    assert_eq!(
        resp.headers().get("allow").and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    let (status, _, body) = json_of(resp).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_jsonrpc_error(&body, -32600, "VALIDATION_ERROR");

    // Guards before the body is read: no id to echo, so none is sent.
    for (resp, status, spec) in [
        (
            s.post_raw("/mcp", None, &[], ping).await,
            StatusCode::UNAUTHORIZED,
            "AUTH_REQUIRED",
        ),
        (
            s.post_raw(
                "/mcp",
                Some(&key),
                &[("origin", "http://evil.example")],
                ping,
            )
            .await,
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
        ),
        (
            s.post_raw("/mcp/no-such-profile", Some(&key), &[], ping)
                .await,
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
        ),
        (
            s.post_raw("/mcp/conformance", Some(&key), &[], ping).await,
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
        ),
    ] {
        let (got, _, body) = json_of(resp).await;
        assert_eq!(got, status, "{body}");
        assert_jsonrpc_error(&body, -32600, spec);
        assert!(body.get("id").is_none(), "{body}");
    }
}

#[tokio::test]
async fn conformance_fixtures_show_logs_only_on_request_and_capabilities_enforced() {
    let s = McpServer::start_with(McpConfig {
        conformance_fixtures: true,
        ..Default::default()
    })
    .await;
    let key = s.admin_key.clone();
    let path = "/mcp/conformance";
    let call = |id: i64, name: &'static str, extra_meta: Value| {
        let (s, key) = (&s, key.clone());
        async move {
            modern(
                s,
                path,
                &key,
                id,
                "tools/call",
                json!({"name": name, "arguments": {}}),
                extra_meta,
            )
            .await
        }
    };

    let (_, _, listed) =
        json_of(modern(&s, path, &key, 1, "tools/list", json!({}), json!({})).await).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "recall_cloud_skill",
            "save_cloud_skill",
            "remember",
            "recall",
            "update_memory",
            "forget",
            "restore_memory",
            "test_missing_capability",
            "test_streaming_elicitation",
            "test_logging_tool"
        ]
    );
    // Not on the ordinary endpoint.
    let (_, _, plain) =
        json_of(modern(&s, "/mcp", &key, 2, "tools/list", json!({}), json!({})).await).await;
    assert_eq!(plain["result"]["tools"].as_array().map(Vec::len), Some(7));

    // No log level asked: one JSON answer, no notification.
    let resp = call(3, "test_logging_tool", json!({})).await;
    let (status, ct, body) = json_of(resp).await;
    assert_eq!(status, StatusCode::OK);
    assert!(ct.starts_with("application/json"), "{ct}");
    assert_eq!(body["id"], 3);
    assert!(body["result"].is_object(), "{body}");
    // Asked for warnings only: the info message is still not sent.
    let (_, ct, _) = json_of(
        call(
            4,
            "test_logging_tool",
            json!({"io.modelcontextprotocol/logLevel": "warning"}),
        )
        .await,
    )
    .await;
    assert!(ct.starts_with("application/json"), "{ct}");
    // Asked for info: the message, then the result, on this request's own stream.
    let resp = call(
        5,
        "test_logging_tool",
        json!({"io.modelcontextprotocol/logLevel": "info"}),
    )
    .await;
    assert!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"))
    );
    let frames = sse_messages(resp).await;
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0]["method"], "notifications/message");
    assert_eq!(frames[0]["params"]["level"], "info");
    assert_eq!(frames[1]["id"], 5);

    // A capability the client did not declare: -32021 naming it, HTTP 400.
    let (status, _, body) = json_of(call(6, "test_missing_capability", json!({})).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], -32021);
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    assert_eq!(body["id"], 6);
    let declared = json!({"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}});
    let (status, _, body) = json_of(call(7, "test_missing_capability", declared).await).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["result"]["content"].is_array(), "{body}");

    // Progress goes on the request's own stream, and nothing but notifications precede the
    // answer: no request to the client.
    let streaming = json!({
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "progressToken": "p-1",
    });
    let frames = sse_messages(call(8, "test_streaming_elicitation", streaming).await).await;
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0]["method"], "notifications/progress");
    assert_eq!(frames[0]["params"]["progressToken"], "p-1");
    assert_eq!(frames[1]["id"], 8);
    assert!(frames[1]["result"].is_object());
}

/// A method's own failure (not a pre-dispatch refusal) is a JSON-RPC error answered with
/// 200, so no HTTP middleware sees it: its SPEC object still carries the request's id.
#[tokio::test]
async fn a_methods_json_rpc_error_carries_the_request_id() {
    let s = McpServer::start().await;
    let operator = s.service.operator_for("admin").await.expect("operator");
    let write_only = s
        .service
        .issue_key(
            &operator,
            &operator.account,
            xmemo_server::service::types::CreateKeyRequest {
                name: "write only".into(),
                scopes: Some(vec!["memory:write".into()]),
                expires_at: None,
                profile: None,
            },
        )
        .await
        .expect("key")
        .key;
    for (method, params) in [("prompts/list", json!({})), ("resources/list", json!({}))] {
        let resp = legacy(&s, &write_only, "2025-06-18", 7, method, params).await;
        let header_id = resp
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .expect("x-request-id")
            .to_string();
        let (status, _, body) = json_of(resp).await;
        assert_eq!(status, StatusCode::OK, "{method}: {body}");
        assert_jsonrpc_error(&body, -32600, "PERMISSION_DENIED");
        assert_eq!(
            body["error"]["data"]["error"]["request_id"],
            header_id.as_str(),
            "{method}: {body}"
        );
    }
}
