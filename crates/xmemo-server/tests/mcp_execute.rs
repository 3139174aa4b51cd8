//! `execute_cloud_skill` end to end over MCP (rmcp client) with the real bubblewrap sandbox:
//! a `.py` script reads `input_args` from stdin and returns `output_data`, a `.sh` script runs
//! with bash, and the execution is audited. Fails when bubblewrap cannot run here (skips,
//! loudly, only with `XMEMO_TEST_ALLOW_SKIP=1`).

mod mcp_harness;

use mcp_harness::{McpServer, call, code, err, ok, skill};
use serde_json::json;
use xmemo_server::sandbox::{SandboxConfig, SandboxEngine};
use xmemo_server::state::McpConfig;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executions_over_the_account_cap_are_tool_errors_with_a_retry_hint() {
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
    let caps = xmemo_server::service::exec_slots::ExecutionCaps {
        global: 4,
        per_account: 1,
    };
    let s = McpServer::start_configured(mcp, |svc| {
        svc.with_sandbox(engine).with_execution_caps(caps)
    })
    .await;
    let first = s.client("/mcp", &s.admin_key).await;
    let second = s.client("/mcp", &s.admin_key).await;
    let mut tool = skill("napper", "Naps.");
    tool["components"] = json!([
        {"logical_path": "nap.sh", "type": "script", "content": "sleep 5\necho '{}'\n"}
    ]);
    let saved = ok(&call(&first, "save_cloud_skill", tool).await.expect("save"));
    let rev = saved["data"]["revision_id"]
        .as_str()
        .expect("rev")
        .to_string();
    let args = json!({"slug": "napper", "revision_id": rev, "script_path": "nap.sh", "timeout_seconds": 30});

    let running = {
        let args = args.clone();
        tokio::spawn(async move { call(&first, "execute_cloud_skill", args).await })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.service.running_executions() < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let refused = call(&second, "execute_cloud_skill", args)
        .await
        .expect("call");
    let error = err(&refused);
    assert_eq!(error["error"]["code"], "RATE_LIMITED", "{error}");
    assert_eq!(error["error"]["retryable"], true);
    assert!(
        error["error"]["details"]["retry_after_seconds"]
            .as_u64()
            .is_some_and(|s| s >= 1),
        "{error}"
    );
    let done = running.await.expect("task").expect("call");
    assert_eq!(ok(&done)["data"]["status"], "success");
}
