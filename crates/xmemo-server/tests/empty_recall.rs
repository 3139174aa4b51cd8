//! Issue #31, item 6, over MCP: an empty `recall` carries a hint (the workspaces searched,
//! the filters given, how many memories are there to find at all, and the next check); a
//! recall that finds something carries none.

mod common;

use common::TestServer;
use serde_json::{Value, json};

async fn recall(s: &TestServer, key: &str, arguments: Value) -> Value {
    let reply = s
        .mcp(
            Some(key),
            "tools/call",
            json!({"name": "recall", "arguments": arguments}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = &reply.body["result"];
    assert_ne!(result["isError"], true, "{result}");
    // The agent reads the text block: it holds the same answer, hint included.
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let parsed: Value = serde_json::from_str(text).unwrap_or_default();
    assert_eq!(parsed, result["structuredContent"], "{result}");
    result["structuredContent"]["data"].clone()
}

#[tokio::test]
async fn an_empty_recall_says_where_it_looked_and_what_to_check_next() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();

    // Nothing saved yet: the next check is the credential and the server.
    let data = recall(&s, &key, json!({"query": "deploy checklist"})).await;
    assert_eq!(data["memories"], json!([]));
    let hint = &data["hint"];
    assert_eq!(hint["workspaces"], json!(["personal"]), "{hint}");
    assert_eq!(hint["filters"], json!(["query \"deploy checklist\""]));
    assert_eq!(hint["recallable"], 0);
    let next = hint["next"].as_str().unwrap_or_default();
    assert!(
        next.contains("no memory is saved where admin can read yet")
            && next.contains("XMEMO_KEY")
            && next.contains("MCP config")
            && next.contains("xmemo doctor"),
        "{next}"
    );

    // Something there, but not for these words and filters: say so.
    let saved = s
        .mcp(
            Some(&key),
            "tools/call",
            json!({"name": "remember", "arguments": {"kind": "fact", "content": "The deploy checklist lives in the wiki", "project": "shop"}}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let data = recall(
        &s,
        &key,
        json!({"query": "zebra", "project": "shop", "kind": "todo"}),
    )
    .await;
    let hint = &data["hint"];
    assert_eq!(hint["recallable"], 1, "{hint}");
    assert_eq!(
        hint["filters"],
        json!(["query \"zebra\"", "kind todo", "project shop"])
    );
    assert!(
        hint["next"]
            .as_str()
            .is_some_and(|n| n.starts_with("1 memory is recallable in personal, but none matches")),
        "{hint}"
    );

    // A recall that finds something has no hint.
    let data = recall(&s, &key, json!({"query": "deploy checklist"})).await;
    assert_eq!(data["memories"].as_array().map(Vec::len), Some(1));
    assert!(data.get("hint").is_none(), "{data}");
}
