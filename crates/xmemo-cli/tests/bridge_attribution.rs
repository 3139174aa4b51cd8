//! Issue #31, item 1, through the stdio bridge `xmemo mcp`: a save is attributed to the agent
//! the host says it is, whether it speaks MCP 2026-07-28 (its name in every request's `_meta`,
//! no `initialize`; the official Python SDK's default) or the legacy `initialize`; an
//! `XMEMO_AGENT_ID` still wins.

mod support;

use serde_json::{Value, json};
use support::Env;

const MODERN: &str = "2026-07-28";

fn remember(content: &str) -> Value {
    json!({"method": "tools/call", "params": {"name": "remember", "arguments": {
        "kind": "note", "content": content}}})
}

/// `message` as a 2026-07-28 client sends it: protocol version, client info and
/// capabilities in `_meta`.
fn modern(mut message: Value, client: &str) -> Value {
    message["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "2.3.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    message
}

fn saved_agent(answer: &Value) -> Value {
    let by = &answer["result"]["structuredContent"]["data"]["memory"]["saved_by"];
    assert!(by.is_object(), "{answer}");
    by["agent_id"].clone()
}

#[test]
fn bridge_saves_name_the_agent_in_either_protocol_era() {
    let env = Env::start();
    let conn = vec![
        ("XMEMO_URL", env.server.url.clone()),
        ("XMEMO_KEY", env.key.clone()),
    ];

    // 2026-07-28: no handshake, the name in `_meta` of every request.
    let answers = env.bridge_raw(
        &conn,
        &[
            modern(json!({"method": "server/discover", "params": {}}), "mcp"),
            modern(remember("saved by a 2026-07-28 client"), "mcp"),
        ],
    );
    assert!(answers[0]["result"].is_object(), "{}", answers[0]);
    assert_eq!(saved_agent(&answers[1]), "mcp");

    // The legacy handshake: the name given once in `initialize`, kept for later requests.
    let answers = env.bridge(&conn, &[remember("saved by a legacy client")]);
    assert_eq!(saved_agent(&answers[0]), "connect-test");

    // The operator's explicit choice wins over what the host says.
    let mut named = conn.clone();
    named.push(("XMEMO_AGENT_ID", "nightly-runner".to_string()));
    let answers = env.bridge_raw(
        &named,
        &[modern(remember("saved by a named runner"), "mcp")],
    );
    assert_eq!(saved_agent(&answers[0]), "nightly-runner");
}
