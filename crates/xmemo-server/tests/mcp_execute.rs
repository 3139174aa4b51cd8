//! `execute_cloud_skill` end to end over MCP (rmcp client) with the real bubblewrap sandbox:
//! a `.py` script reads `input_args` from stdin and returns `output_data`, a `.sh` script runs
//! with bash, and the execution is audited. Fails when bubblewrap cannot run here (skips,
//! loudly, only with `XMEMO_TEST_ALLOW_SKIP=1`).

mod mcp_harness;

use mcp_harness::{McpServer, call, code, ok, skill};
use serde_json::json;
use xmemo_server::mcp::McpConfig;
use xmemo_server::sandbox::{SandboxConfig, SandboxEngine};
use xmemo_store::AuditFilter;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_run_over_mcp_in_the_sandbox() {
    let engine = SandboxEngine::new(SandboxConfig::default()).await;
    let state = engine.state();
    if !state.available {
        xmemo_testkit::dependency_missing("the bubblewrap sandbox", &state.reason);
        return;
    }
    let mcp = McpConfig {
        execute_profiles: vec!["ordinary-full".into()],
        ..McpConfig::default()
    };
    let s = McpServer::start_configured(mcp, |svc| svc.with_sandbox(engine)).await;
    let client = s.client("/mcp", &s.admin_key).await;

    let mut tool = skill("adder", "Adds two numbers.");
    tool["components"] = json!([
        {"logical_path": "scripts/add.py", "type": "script",
         "content": "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({\"sum\": args[\"a\"] + args[\"b\"]}))\n"},
        {"logical_path": "scripts/hello.sh", "type": "script",
         "content": "read -r line\necho \"{\\\"bash\\\": \\\"${BASH_VERSION:+yes}\\\", \\\"got\\\": $line}\"\n"},
        {"logical_path": "notes.md", "type": "document", "content": "not a script"}
    ]);
    let saved = ok(&call(&client, "save_cloud_skill", tool).await.expect("save"));
    let rev = saved["data"]["revision_id"]
        .as_str()
        .expect("rev")
        .to_string();

    let r = call(
        &client,
        "execute_cloud_skill",
        json!({"slug": "adder", "revision_id": rev, "script_path": "scripts/add.py",
               "input_args": {"a": 2, "b": 40}, "timeout_seconds": 20}),
    )
    .await
    .expect("execute");
    let result = ok(&r);
    assert_eq!(result["kind"], "execution", "{result}");
    assert_eq!(result["data"]["status"], "success", "{result}");
    assert_eq!(result["data"]["output_data"]["sum"], 42);
    assert_eq!(result["data"]["isolation"], "bubblewrap");

    let r = call(
        &client,
        "execute_cloud_skill",
        json!({"slug": "adder", "revision_id": rev, "script_path": "scripts/hello.sh",
               "input_args": {"x": 1}}),
    )
    .await
    .expect("execute");
    let result = ok(&r);
    assert_eq!(result["data"]["output_data"]["bash"], "yes", "{result}");
    assert_eq!(result["data"]["output_data"]["got"]["x"], 1);

    // A non-script component and an undeclared path are refused as tool errors.
    let r = call(
        &client,
        "execute_cloud_skill",
        json!({"slug": "adder", "revision_id": rev, "script_path": "notes.md"}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "VALIDATION_ERROR");
    let r = call(
        &client,
        "execute_cloud_skill",
        json!({"slug": "adder", "revision_id": rev, "script_path": "scripts/nope.py"}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "NOT_FOUND");

    let audit = s
        .store
        .list_audit(&AuditFilter::default())
        .await
        .expect("audit");
    let runs = audit.iter().filter(|e| e.action == "skill.execute").count();
    assert_eq!(runs, 2, "one audit entry per execution");
    assert!(xmemo_store::verify_audit_chain(&audit).is_ok());
}
