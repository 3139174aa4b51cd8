//! Issue #32, item 5: `xmemo serve --log-format json` writes one JSON object a line, one
//! `request` event per request (request id, method, path, status, duration, account), and a
//! refused call can be found in it by the request id its error body carried; no secret of
//! the whole flow (sign-in, OAuth, MCP, a refusal) is in the log.

use serde_json::{Value, json};
use xmemo_testkit::ServerProcess;
use xmemo_testkit::browser::Browser;
use xmemo_testkit::oauth::{register_public, tokens_for};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

/// The id an answer's `X-Request-Id` header names (every answer has one).
fn request_id_of(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no x-request-id on {}", response.url()))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_log_finds_every_request_by_its_id_and_holds_no_secret() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8 path"),
            "--log-format",
            "json",
            "--embedding-model",
            "none",
        ],
        &[("XMEMO_LOG", "info")],
    );
    let url = server.url.clone();
    let key = std::fs::read_to_string(data.join("admin.key")).expect("admin.key");
    let key = key.trim().to_string();
    let password = std::fs::read_to_string(data.join("admin.password")).expect("password");
    let password = password.trim().to_string();
    let http = reqwest::Client::new();

    // Sign-in to the console, then the OAuth flow of a public client (sign-in, consent, code
    // exchange), then an MCP save with its access token.
    let mut browser = Browser::new(&url);
    let signed = browser.sign_in("admin", &password, "/console").await;
    assert_eq!(signed.status.as_u16(), 303, "{}", signed.body);
    assert_eq!(browser.get("/console/memories").await.status.as_u16(), 200);
    let client_id = register_public(&url, "Log Check").await;
    let tokens = tokens_for(&url, "admin", &password, &client_id).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let access = tokens.body["access_token"]
        .as_str()
        .expect("token")
        .to_string();
    let refresh = tokens.body["refresh_token"]
        .as_str()
        .expect("refresh")
        .to_string();
    let saved = http
        .post(format!("{url}/mcp"))
        .bearer_auth(&access)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "remember", "arguments": {"kind": "note", "content": "logged flow"}}}),
        )
        .send()
        .await
        .expect("mcp");
    assert_eq!(saved.status().as_u16(), 200);
    let mcp_id = request_id_of(&saved);

    // MCP tool failures are tool results (HTTP 200), not HTTP errors: their SPEC object
    // carries the request id too, on the direct read path (a recall of a missing skill) and
    // through rmcp (a remember with a bad argument).
    for (tool, arguments, code) in [
        (
            "recall_cloud_skill",
            json!({"slug": "no-such-skill"}),
            "NOT_FOUND",
        ),
        (
            "remember",
            json!({"kind": "note", "content": 42}),
            "VALIDATION_ERROR",
        ),
    ] {
        let failed = http
            .post(format!("{url}/mcp"))
            .bearer_auth(&access)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}))
            .send()
            .await
            .expect("mcp");
        let header_id = request_id_of(&failed);
        let answer: Value = failed.json().await.expect("json");
        let error = &answer["result"]["structuredContent"]["error"];
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(error["code"], code, "{answer}");
        assert_eq!(error["request_id"], header_id.as_str(), "{tool}: {answer}");
    }

    // A refusal: a wrong key. Its error body carries the id its header carries.
    let wrong_key = "xmk_wrong0000000000000000000000000000000000";
    let refused = http
        .get(format!("{url}/api/v1/memories"))
        .bearer_auth(wrong_key)
        .send()
        .await
        .expect("refused call");
    assert_eq!(refused.status().as_u16(), 401);
    let header_id = request_id_of(&refused);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "AUTH_REQUIRED", "{body}");
    let refused_id = body["error"]["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no request_id in {body}"))
        .to_string();
    assert_eq!(refused_id, header_id);
    assert!(refused_id.starts_with("req_"), "{refused_id}");

    // A client's own sane id is kept; an odd one is replaced.
    for (sent, kept) in [("trace-42.a", true), ("bad id\"", false)] {
        let r = http
            .get(format!("{url}/api/v1/me"))
            .bearer_auth(&key)
            .header("x-request-id", sent)
            .send()
            .await
            .expect("me");
        let echoed = r.headers()["x-request-id"]
            .to_str()
            .unwrap_or("")
            .to_string();
        assert_eq!(echoed == sent, kept, "{sent:?} -> {echoed:?}");
    }

    // The refusals are counted for an alert to watch (docs/operations.md).
    let metrics = http
        .get(format!("{url}/metrics"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let client_errors: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("xmemo_http_responses_total{class=\"4xx\"} "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 4xx counter in:\n{metrics}"));
    assert!(client_errors >= 1.0, "{metrics}");

    // Let the last events reach the log.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let log = server.output();
    let mut events = Vec::new();
    for line in log.lines() {
        let event: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        events.push(event);
    }
    let request = |id: &str| -> Value {
        events
            .iter()
            .find(|e| e["target"] == "xmemo::access" && e["request_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no request event for {id} in:\n{log}"))
    };
    let refusal = request(&refused_id);
    assert_eq!(refusal["status"], 401, "{refusal}");
    assert_eq!(refusal["method"], "GET");
    assert_eq!(refusal["path"], "/api/v1/memories");
    assert!(refusal["duration_ms"].is_number(), "{refusal}");
    // No proxy is trusted here: the client is the TCP peer.
    assert_eq!(refusal["client"], "127.0.0.1", "{refusal}");
    assert!(refusal["timestamp"].is_string() && refusal["level"] == "INFO");
    // The MCP call names the account its token belongs to.
    let mcp = request(&mcp_id);
    assert_eq!(mcp["status"], 200);
    assert!(
        mcp["account_id"]
            .as_str()
            .is_some_and(|a| a.starts_with("acct_")),
        "{mcp}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["target"] == "xmemo::access" && e["path"] == "/oauth/token"),
        "the token exchange is logged"
    );
    for secret in [
        key.as_str(),
        password.as_str(),
        access.as_str(),
        refresh.as_str(),
        wrong_key,
    ] {
        assert!(!log.contains(secret), "a secret is in the log");
    }
}
