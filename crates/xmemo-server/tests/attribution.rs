//! Issue #31, item 1: a save over streamable HTTP is attributed to the agent the client says it
//! is, whichever way it says it (an attribution header, `_meta` clientInfo of MCP 2026-07-28),
//! and the console shows who saved it. (OAuth's fallback to the registered client name is in
//! oauth.rs; the stdio bridge's in xmemo-cli's tests and the interop suite.)

mod common;

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};

fn remember(content: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": "remember", "arguments": {"content": content, "kind": "note"}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    params
}

fn client_info(name: &str) -> Value {
    json!({"io.modelcontextprotocol/clientInfo": {"name": name, "version": "2.3.0"}})
}

fn saved_by(reply: &common::Reply) -> Value {
    let by = &reply.body["result"]["structuredContent"]["data"]["memory"]["saved_by"];
    assert!(by.is_object(), "{}", reply.body);
    by.clone()
}

#[tokio::test]
async fn saves_over_http_name_the_agent_the_client_says_it_is() {
    let s = TestServer::start().await;

    // MCP 2026-07-28: the client's name rides in every request's `_meta`.
    let named = s
        .mcp(
            Some(&s.admin_key),
            "tools/call",
            remember(
                "saved by a client that names itself in _meta",
                Some(client_info("mcp-python-sdk")),
            ),
        )
        .await;
    assert_eq!(saved_by(&named)["agent_id"], "mcp-python-sdk");

    // An attribution header is the caller's explicit choice: it wins.
    let reply = s
        .http
        .post(format!("{}/mcp", s.url))
        .bearer_auth(&s.admin_key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("x-memory-os-agent-id", "ci-runner")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": remember("saved with a header and _meta", Some(client_info("mcp-python-sdk")))}))
        .send()
        .await
        .expect("mcp request");
    let headed = common::Reply::from(reply).await;
    assert_eq!(saved_by(&headed)["agent_id"], "ci-runner");

    // A name that is not a clean attribution value is cleaned, not refused.
    let messy = s
        .mcp(
            Some(&s.admin_key),
            "tools/call",
            remember(
                "saved by a client with a messy name",
                Some(client_info(&format!("  codex\u{7}-cli{}", "x".repeat(300)))),
            ),
        )
        .await;
    let agent = saved_by(&messy)["agent_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        agent.starts_with("codex-clix") && agent.chars().count() == 128,
        "{agent}"
    );

    // An API key and a client that names itself nowhere: nothing to record.
    let anonymous = s
        .mcp(
            Some(&s.admin_key),
            "tools/call",
            remember("saved by a client that names itself nowhere", None),
        )
        .await;
    assert_eq!(saved_by(&anonymous)["agent_id"], Value::Null);

    // The console shows who saved what.
    let password = std::fs::read_to_string(s.data_dir.join("admin.password"))
        .expect("admin.password")
        .trim()
        .to_string();
    let mut browser = Browser::new(&s.url);
    let signed = browser.sign_in("admin", &password, "/login").await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    let page = browser.get("/console/memories").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for agent in ["agent mcp-python-sdk", "agent ci-runner"] {
        assert!(page.body.contains(agent), "{agent} not shown");
    }
}
