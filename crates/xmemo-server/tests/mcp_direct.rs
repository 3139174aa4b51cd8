//! The direct path (`mcp::direct`) against rmcp: a table of tool calls, each sent to a server
//! that answers read-only calls itself and to a twin over the same data that sends everything
//! through rmcp (`McpConfig::rmcp_only`). Both must answer with the same status, content type
//! and body bytes; the `xmemo_mcp_tool_calls_total` counter shows which path answered, so the
//! comparison covers the hot requests and cannot pass by both sides going through rmcp.

mod mcp_harness;

use mcp_harness::McpServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use xmemo_server::metrics::McpPath;
use xmemo_server::state::McpConfig;

const MODERN: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "direct-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// One request of the table.
struct Case {
    name: &'static str,
    path: &'static str,
    headers: Vec<(&'static str, String)>,
    body: String,
    /// Whether the direct path must answer it.
    direct: bool,
}

fn body(id: Value, tool: &str, args: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(m) = meta {
        params["_meta"] = m;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// What a 2026-07-28 client sends for a tool call: `_meta` and the mirrored headers.
fn modern(name: &'static str, tool: &str, args: Value, direct: bool) -> Case {
    Case {
        name,
        path: "/mcp",
        headers: vec![
            ("mcp-protocol-version", MODERN.into()),
            ("mcp-method", "tools/call".into()),
            ("mcp-name", tool.into()),
        ],
        body: body(json!(7), tool, args, Some(meta())).to_string(),
        direct,
    }
}

/// A legacy (≤ 2025-11-25) tool call: the version only in the header, or nowhere.
fn legacy(
    name: &'static str,
    version: Option<&str>,
    tool: &str,
    args: Value,
    direct: bool,
) -> Case {
    Case {
        name,
        path: "/mcp",
        headers: version
            .map(|v| vec![("mcp-protocol-version", v.to_string())])
            .unwrap_or_default(),
        body: body(json!("req-1"), tool, args, None).to_string(),
        direct,
    }
}

impl Case {
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.to_string()));
        self
    }

    fn add_header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }

    fn without_header(mut self, name: &'static str) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self
    }

    fn path(mut self, path: &'static str) -> Self {
        self.path = path;
        self
    }

    fn edit_body(mut self, edit: impl FnOnce(&mut Value)) -> Self {
        let mut value: Value = serde_json::from_str(&self.body).expect("case body");
        edit(&mut value);
        self.body = value.to_string();
        self
    }
}

fn remove(object: &mut Value, key: &str) {
    if let Some(map) = object.as_object_mut() {
        map.remove(key);
    }
}

struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    body: Vec<u8>,
}

async fn send(url: &str, key: &str, case: &Case) -> Answer {
    let mut req = reqwest::Client::new()
        .post(format!("{url}{}", case.path))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        // One id for both paths: a tool error carries it (`error.request_id`), and the two
        // answers are compared byte for byte.
        .header("x-request-id", "req_direct_compare")
        .bearer_auth(key);
    for (n, v) in &case.headers {
        req = req.header(*n, v.as_str());
    }
    let resp = req.body(case.body.clone()).send().await.expect("request");
    Answer {
        status: resp.status(),
        content_type: resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: resp.bytes().await.expect("body").to_vec(),
    }
}

fn json(answer: &Answer) -> Value {
    serde_json::from_slice(&answer.body).unwrap_or(Value::Null)
}

/// Seeds one published skill with a resource and one memory; returns Level 1's revision id.
async fn seed(s: &McpServer, key: &str) -> String {
    let mut save = json!({
        "slug": "deploy-procedure",
        "name": "Deploy procedure",
        "description": "How to deploy the billing service",
        "instruction_body": "1. Check.\n2. Deploy.\n",
        "intent": "publish",
        "components": [
            {"logical_path": "scripts/check.py", "type": "script", "content": "print('ok')\n"}
        ],
    });
    let saved = send(
        &s.url,
        key,
        &modern("seed save", "save_cloud_skill", save.take(), false),
    )
    .await;
    assert_eq!(saved.status, StatusCode::OK);
    let saved = json(&saved);
    assert_eq!(saved["result"]["isError"], false, "{saved}");
    let remembered = send(
        &s.url,
        key,
        &modern(
            "seed remember",
            "remember",
            json!({"kind": "fact", "content": "the billing service deploys from main"}),
            false,
        ),
    )
    .await;
    assert_eq!(json(&remembered)["result"]["isError"], false);
    saved["result"]["structuredContent"]["data"]["revision_id"]
        .as_str()
        .expect("revision id")
        .to_string()
}

fn table(revision: &str) -> Vec<Case> {
    let l0 = json!({"query": "deploy billing", "limit": 5});
    let l1 = json!({"slug": "deploy-procedure"});
    let l2 = json!({"slug": "deploy-procedure", "revision_id": revision,
                    "resource": "scripts/check.py"});
    let memories = json!({"query": "billing"});
    vec![
        // The hot requests: answered directly.
        modern("modern L0", "recall_cloud_skill", l0.clone(), true),
        modern("modern L1", "recall_cloud_skill", l1.clone(), true),
        modern("modern L2", "recall_cloud_skill", l2.clone(), true),
        modern("modern memory recall", "recall", memories.clone(), true),
        modern(
            "modern L1 of a missing skill (NOT_FOUND result)",
            "recall_cloud_skill",
            json!({"slug": "no-such-skill"}),
            true,
        ),
        modern(
            "modern L2 without its revision pin",
            "recall_cloud_skill",
            json!({"slug": "deploy-procedure", "resource": "scripts/check.py"}),
            true,
        ),
        modern(
            "modern recall with an unknown argument (VALIDATION_ERROR result)",
            "recall_cloud_skill",
            json!({"bogus": true}),
            true,
        ),
        modern("modern without arguments", "recall", json!({}), true)
            .edit_body(|b| remove(&mut b["params"], "arguments")),
        modern(
            "modern with a string id",
            "recall_cloud_skill",
            l1.clone(),
            true,
        )
        .edit_body(|b| b["id"] = json!("abc")),
        modern("modern on a profile path", "recall", memories.clone(), true)
            .path("/mcp/claude-code"),
        modern(
            "modern with a log level asked",
            "recall",
            memories.clone(),
            true,
        )
        .edit_body(|b| b["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug")),
        modern(
            "modern naming 2025-06-18 in _meta and header",
            "recall",
            json!({}),
            true,
        )
        .edit_body(|b| {
            b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-06-18")
        })
        .header("mcp-protocol-version", "2025-06-18"),
        legacy(
            "legacy L0 without a version header",
            None,
            "recall_cloud_skill",
            l0.clone(),
            true,
        ),
        legacy(
            "legacy L1 2025-06-18",
            Some("2025-06-18"),
            "recall_cloud_skill",
            l1.clone(),
            true,
        ),
        legacy(
            "legacy L2 2025-11-25",
            Some("2025-11-25"),
            "recall_cloud_skill",
            l2.clone(),
            true,
        ),
        legacy(
            "legacy memory recall 2025-03-26",
            Some("2025-03-26"),
            "recall",
            memories.clone(),
            true,
        ),
        // Legacy requests are not held to SEP-2243 headers, by rmcp or here.
        legacy(
            "legacy with a wrong Mcp-Name",
            Some("2025-11-25"),
            "recall",
            json!({}),
            true,
        )
        .header("mcp-name", "remember"),
        // Everything else goes to rmcp, and must still answer the same.
        modern(
            "modern with a wrong Mcp-Name",
            "recall_cloud_skill",
            l1.clone(),
            false,
        )
        .header("mcp-name", "recall"),
        modern(
            "modern without Mcp-Name",
            "recall_cloud_skill",
            l1.clone(),
            false,
        )
        .without_header("mcp-name"),
        modern(
            "modern without Mcp-Method",
            "recall_cloud_skill",
            l1.clone(),
            false,
        )
        .without_header("mcp-method"),
        modern(
            "modern with two Mcp-Method headers",
            "recall",
            json!({}),
            false,
        )
        .add_header("mcp-method", "tools/call"),
        modern("modern with a Base64 Mcp-Name", "recall", json!({}), false)
            .header("mcp-name", "=?base64?cmVjYWxs?="),
        modern(
            "modern with an Mcp-Param header",
            "recall",
            memories.clone(),
            false,
        )
        .add_header("mcp-param-query", "billing"),
        modern(
            "modern with a mismatched version header",
            "recall",
            json!({}),
            false,
        )
        .header("mcp-protocol-version", "2025-11-25"),
        modern(
            "modern without a version header",
            "recall",
            json!({}),
            false,
        )
        .without_header("mcp-protocol-version"),
        modern(
            "modern without client capabilities",
            "recall",
            json!({}),
            false,
        )
        .edit_body(|b| {
            remove(
                &mut b["params"]["_meta"],
                "io.modelcontextprotocol/clientCapabilities",
            )
        }),
        modern(
            "modern naming an unknown version",
            "recall",
            json!({}),
            false,
        )
        .edit_body(|b| {
            b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01")
        })
        .header("mcp-protocol-version", "2099-01-01"),
        modern("modern unknown tool", "no_such_tool", json!({}), false),
        modern(
            "modern tool outside the profile",
            "recall_cloud_skill",
            l1.clone(),
            false,
        )
        .path("/mcp/claude-code"),
        modern(
            "modern write tool (refused arguments)",
            "remember",
            json!({"kind": "fact"}),
            false,
        ),
        modern(
            "modern write tool (not found)",
            "forget",
            json!({"memory_id": "no-such-memory"}),
            false,
        ),
        modern("modern tools/call notification", "recall", json!({}), false)
            .edit_body(|b| remove(b, "id")),
        legacy(
            "legacy with a 2026-07-28 header",
            Some(MODERN),
            "recall",
            json!({}),
            false,
        ),
        legacy(
            "legacy unknown tool",
            Some("2025-11-25"),
            "no_such_tool",
            json!({}),
            false,
        ),
        legacy(
            "legacy write tool (refused arguments)",
            Some("2025-06-18"),
            "save_cloud_skill",
            json!({"slug": "x"}),
            false,
        ),
    ]
}

#[tokio::test]
async fn direct_answers_are_the_bytes_rmcp_sends() {
    let s = McpServer::start().await;
    let rmcp_only = s
        .twin(McpConfig {
            rmcp_only: true,
            ..Default::default()
        })
        .await;
    let key = s.admin_key.clone();
    let revision = seed(&s, &key).await;
    let metrics = s.service.metrics().clone();
    let direct_count = || metrics.mcp_tool_calls(McpPath::Direct);
    let mut taken = 0;
    for case in table(&revision) {
        let before = direct_count();
        let fast = send(&s.url, &key, &case).await;
        let after_fast = direct_count();
        let slow = send(&rmcp_only, &key, &case).await;
        let name = case.name;
        assert_eq!(
            after_fast - before,
            u64::from(case.direct),
            "{name}: direct path taken?"
        );
        assert_eq!(
            direct_count(),
            after_fast,
            "{name}: rmcp_only answered directly"
        );
        let shown = |a: &Answer| String::from_utf8_lossy(&a.body).into_owned();
        assert_eq!(
            fast.status,
            slow.status,
            "{name}: {} vs {}",
            shown(&fast),
            shown(&slow)
        );
        assert_eq!(fast.content_type, slow.content_type, "{name}");
        assert_eq!(shown(&fast), shown(&slow), "{name}");
        if case.direct {
            taken += 1;
            // A direct answer is a tool result, never a protocol error.
            assert_eq!(fast.status, StatusCode::OK, "{name}");
            assert!(
                json(&fast)["result"]["content"].is_array(),
                "{name}: {}",
                shown(&fast)
            );
        }
    }
    assert!(taken >= 10);
}

/// The three Levels an agent walks, modern and legacy, are the requests the direct path is
/// for: each must be answered by it, and the counter only moves for them.
#[tokio::test]
async fn the_recall_levels_take_the_direct_path_and_writes_do_not() {
    let s = McpServer::start().await;
    let key = s.admin_key.clone();
    let revision = seed(&s, &key).await;
    let metrics = s.service.metrics().clone();
    let (direct, rmcp) = (
        metrics.mcp_tool_calls(McpPath::Direct),
        metrics.mcp_tool_calls(McpPath::Rmcp),
    );
    let l2 = json!({"slug": "deploy-procedure", "revision_id": revision,
                    "resource": "scripts/check.py"});
    for case in [
        modern("L0", "recall_cloud_skill", json!({"query": "deploy"}), true),
        modern(
            "L1",
            "recall_cloud_skill",
            json!({"slug": "deploy-procedure"}),
            true,
        ),
        modern("L2", "recall_cloud_skill", l2.clone(), true),
        legacy(
            "legacy L2",
            Some("2025-11-25"),
            "recall_cloud_skill",
            l2,
            true,
        ),
    ] {
        let answer = json(&send(&s.url, &key, &case).await);
        assert_eq!(
            answer["result"]["isError"], false,
            "{}: {answer}",
            case.name
        );
    }
    assert_eq!(metrics.mcp_tool_calls(McpPath::Direct), direct + 4);
    assert_eq!(metrics.mcp_tool_calls(McpPath::Rmcp), rmcp);
    let write = modern(
        "remember",
        "remember",
        json!({"kind": "note", "content": "through rmcp"}),
        false,
    );
    let answer = json(&send(&s.url, &key, &write).await);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(metrics.mcp_tool_calls(McpPath::Direct), direct + 4);
    assert_eq!(metrics.mcp_tool_calls(McpPath::Rmcp), rmcp + 1);
    // The counters are on /metrics for operators.
    let text = s.service.render_metrics();
    assert!(
        text.contains(&format!(
            "xmemo_mcp_tool_calls_total{{path=\"direct\"}} {}\n",
            direct + 4
        )),
        "{text}"
    );
}
