//! The input schemas `tools/list` serves, as a snapshot: a change to a request struct that
//! parses tool arguments (and so to the schema derived from it) shows up here as a diff to
//! review. Run with `XMEMO_UPDATE_SNAPSHOTS=1` to accept a change on purpose.

use serde_json::{Map, Value};
use std::path::PathBuf;
use xmemo_server::mcp::tools::REGISTRY;

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/tool_schemas.json")
}

fn served() -> Value {
    let mut tools = Map::new();
    for def in REGISTRY {
        let tool = def.tool();
        tools.insert(
            def.name.to_string(),
            serde_json::json!({
                "title": tool.title,
                "annotations": tool.annotations,
                "inputSchema": Value::Object((*tool.input_schema).clone()),
            }),
        );
    }
    Value::Object(tools)
}

#[test]
fn served_tool_schemas_match_the_snapshot() {
    let now = serde_json::to_string_pretty(&served()).expect("json") + "\n";
    let path = snapshot_path();
    if std::env::var("XMEMO_UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::write(&path, &now).expect("write snapshot");
        return;
    }
    let before = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; create it with XMEMO_UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    if before != now {
        let diff: Vec<String> = before
            .lines()
            .zip(now.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(20)
            .map(|(i, (a, b))| format!("line {}:\n  snapshot: {a}\n  served:   {b}", i + 1))
            .collect();
        panic!(
            "the served tool schemas differ from {} ({} lines vs {}):\n{}\nIf the change is meant, run with XMEMO_UPDATE_SNAPSHOTS=1 and review the diff.",
            path.display(),
            before.lines().count(),
            now.lines().count(),
            diff.join("\n")
        );
    }
}

#[test]
fn every_tool_is_in_the_snapshot() {
    let names: Vec<&str> = REGISTRY.iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 8, "{names:?}");
    let served = served();
    for name in names {
        let schema = &served[name]["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
    }
}
