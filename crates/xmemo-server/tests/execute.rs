//! Acceptance: `POST /api/v1/skills/{slug}/execute` end to end (SPEC §5).
//!
//! Tests that need a working bubblewrap fail when the engine reports it unavailable (they skip,
//! loudly, only with `XMEMO_TEST_ALLOW_SKIP=1`). The fail-closed and fallback tests need no
//! bubblewrap: they point the engine at a missing binary.

mod common;

use common::{TestServer, skill};
use serde_json::{Value, json};
use std::path::PathBuf;
use xmemo_server::sandbox::{SandboxConfig, SandboxEngine};
use xmemo_store::{AuditEntry, AuditFilter, verify_audit_chain};

const PY_MAIN: &str = r#"import json, os, sys
args = json.load(sys.stdin)
with open("references/data.txt") as f:
    data = f.read().strip()
print(json.dumps({"sum": args["a"] + args["b"], "data": data, "cwd": os.getcwd()}))
"#;

const SH_RUN: &str = r#"read -r line
echo "{\"bash\": \"${BASH_VERSION:+yes}\", \"stdin\": $line}"
"#;

const SHEBANG_TOOL: &str = "#!/bin/sh\necho '{\"sh\": true}'\n";

/// The engine against the real bubblewrap. Unavailable, it fails the test, or is `None` (skip)
/// with `XMEMO_TEST_ALLOW_SKIP=1`.
async fn real_engine(test: &str) -> Option<SandboxEngine> {
    let engine = SandboxEngine::new(SandboxConfig::default()).await;
    let state = engine.state();
    if state.available {
        return Some(engine);
    }
    xmemo_testkit::dependency_missing(&format!("{test}: the bubblewrap sandbox"), &state.reason);
    None
}

/// An engine whose bwrap does not exist (so the probe fails), with or without the fallback.
async fn broken_engine(fallback: bool) -> SandboxEngine {
    SandboxEngine::new(SandboxConfig {
        bwrap_path: Some(PathBuf::from("/nonexistent/xmemo-test/bwrap")),
        allow_unsafe_local_fallback: fallback,
        ..SandboxConfig::default()
    })
    .await
}

async fn server_with(engine: SandboxEngine) -> TestServer {
    TestServer::start_configured(|service| service.with_sandbox(engine)).await
}

/// A skill with a python, a shell and a shebang script, a reference file and a template.
fn tool_skill(slug: &str) -> Value {
    let mut body = skill(slug, "Run the scripts.");
    body["components"] = json!([
        {"logical_path": "scripts/main.py", "type": "script", "content": PY_MAIN},
        {"logical_path": "scripts/run.sh", "type": "script", "content": SH_RUN},
        {"logical_path": "scripts/tool", "type": "script", "content": SHEBANG_TOOL},
        {"logical_path": "references/data.txt", "type": "reference", "content": "hello from a reference\n"},
        {"logical_path": "templates/out.md", "type": "template", "content": "# {{title}}\n"},
    ]);
    body
}

fn script_skill(slug: &str, path: &str, content: &str) -> Value {
    let mut body = skill(slug, "Run the script.");
    body["components"] = json!([{"logical_path": path, "type": "script", "content": content}]);
    body
}

async fn save_rev(s: &TestServer, key: &str, body: Value) -> String {
    let saved = s.save(key, body).await;
    saved.expect_ok();
    saved.body["data"]["revision_id"]
        .as_str()
        .expect("revision_id")
        .to_string()
}

fn exec_path(slug: &str) -> String {
    format!("/api/v1/skills/{slug}/execute")
}

async fn audit(s: &TestServer) -> Vec<AuditEntry> {
    s.store
        .list_audit(&AuditFilter::default())
        .await
        .expect("list audit")
}

fn entries<'a>(all: &'a [AuditEntry], action: &str) -> Vec<&'a AuditEntry> {
    all.iter().filter(|e| e.action == action).collect()
}

/// The SPEC §5 fields are all there with the right types.
fn assert_execution_shape(body: &Value) -> &Value {
    assert_eq!(body["kind"], "execution", "{body}");
    let data = &body["data"];
    for field in [
        "execution_id",
        "status",
        "exit_code",
        "output_data",
        "stdout",
        "stderr",
        "stdout_truncated",
        "stderr_truncated",
        "duration_ms",
        "limits",
        "isolation",
    ] {
        assert!(data.get(field).is_some(), "missing {field}: {body}");
    }
    assert!(
        data["execution_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("exec_"))
    );
    assert!(data["stdout"].is_string() && data["stderr"].is_string());
    assert!(data["stdout_truncated"].is_boolean() && data["stderr_truncated"].is_boolean());
    assert!(data["duration_ms"].is_u64());
    for limit in [
        "timeout_ms",
        "memory_bytes",
        "cpu_millicores",
        "max_processes",
        "max_output_bytes",
    ] {
        assert!(
            data["limits"][limit]["enforced_by"].is_string(),
            "limit {limit}: {body}"
        );
    }
    data
}

#[tokio::test]
async fn python_shell_and_shebang_scripts_run_with_their_interpreter() {
    let Some(engine) = real_engine("python_shell_and_shebang_scripts").await else {
        return;
    };
    let s = server_with(engine).await;
    let key = &s.admin_key;
    let rev = save_rev(&s, key, tool_skill("toolbox")).await;

    // .py: input_args on stdin, output_data parsed from stdout, every component present.
    let reply = s
        .post(
            &exec_path("toolbox"),
            key,
            json!({"revision_id": rev, "script_path": "scripts/main.py", "input_args": {"a": 2, "b": 40}}),
        )
        .await;
    let data = assert_execution_shape(reply.expect_ok()).clone();
    assert_eq!(data["status"], "success", "{data}");
    assert_eq!(data["exit_code"], 0);
    assert_eq!(data["isolation"], "bubblewrap");
    assert_eq!(data["runtime"], "python3");
    assert_eq!(data["revision_id"], rev.as_str());
    assert_eq!(data["script_path"], "scripts/main.py");
    assert_eq!(data["output_data"]["sum"], 42);
    assert_eq!(data["output_data"]["data"], "hello from a reference");
    assert_eq!(data["output_data"]["cwd"], "/skill");
    assert_eq!(data["limits"]["timeout_ms"]["value"], 30_000);
    assert_eq!(data["limits"]["timeout_ms"]["enforced_by"], "watchdog");
    let py_id = data["execution_id"].as_str().unwrap().to_string();

    // .sh: bash, whatever the first line says.
    let reply = s
        .post(
            &exec_path("toolbox"),
            key,
            json!({"revision_id": rev, "script_path": "scripts/run.sh", "input_args": {"x": 1}}),
        )
        .await;
    let data = assert_execution_shape(reply.expect_ok()).clone();
    assert_eq!(data["status"], "success", "{data}");
    assert_eq!(data["runtime"], "bash");
    assert_eq!(
        data["output_data"],
        json!({"bash": "yes", "stdin": {"x": 1}})
    );

    // No extension: the shebang decides.
    let reply = s
        .post(
            &exec_path("toolbox"),
            key,
            json!({"revision_id": rev, "script_path": "scripts/tool"}),
        )
        .await;
    let data = assert_execution_shape(reply.expect_ok()).clone();
    assert_eq!(data["status"], "success", "{data}");
    assert_eq!(data["runtime"], "#!/bin/sh");
    assert_eq!(data["output_data"], json!({"sh": true}));

    // A failing script is a result, not an error; non-JSON stdout gives output_data null.
    let mut body = script_skill(
        "failing",
        "fail.py",
        "import sys\nprint('not json')\nsys.exit(3)\n",
    );
    body["intent"] = json!("publish");
    let failing = save_rev(&s, key, body).await;
    let reply = s
        .post(
            &exec_path("failing"),
            key,
            json!({"revision_id": failing, "script_path": "fail.py"}),
        )
        .await;
    let data = assert_execution_shape(reply.expect_ok()).clone();
    assert_eq!(data["status"], "runtime_error");
    assert_eq!(data["exit_code"], 3);
    assert_eq!(data["output_data"], Value::Null);
    assert_eq!(data["stdout"], "not json\n");

    // One skill.execute entry per execution, each naming its execution; the chain verifies.
    let all = audit(&s).await;
    verify_audit_chain(&all).expect("audit chain intact");
    let executed = entries(&all, "skill.execute");
    assert_eq!(executed.len(), 4, "{executed:#?}");
    let py = executed
        .iter()
        .find(|e| e.details["execution_id"] == py_id.as_str())
        .expect("audit entry of the python run");
    assert_eq!(py.revision_id.as_deref(), Some(rev.as_str()));
    assert_eq!(py.details["script_path"], "scripts/main.py");
    assert_eq!(py.details["status"], "success");
    assert_eq!(py.details["isolation"], "bubblewrap");
    assert_eq!(py.details["runtime"], "python3");
    assert!(py.details["duration_ms"].is_u64());
    assert!(py.details["limits"]["memory_bytes"]["enforced_by"].is_string());
    assert!(py.details["resources"].is_object());
    assert_eq!(py.details["stdout_truncated"], false);
    assert!(py.actor.credential_id.is_some());
    // Neither input values nor output text are in the audit entry.
    let text = serde_json::to_string(&py.details).unwrap();
    assert!(!text.contains("hello from a reference"), "{text}");
    assert!(entries(&all, "skill.execute_refused").is_empty());
    assert_eq!(s.service.metrics().executions("success"), 3);
    assert_eq!(s.service.metrics().executions("runtime_error"), 1);
    assert!(
        s.service
            .render_metrics()
            .contains("xmemo_executions_total{status=\"success\"} 3")
    );
}

#[tokio::test]
async fn refusals_before_anything_runs() {
    // None of these reach the engine: a service without a sandbox answers them the same way.
    let s = TestServer::start().await;
    let key = &s.admin_key;
    let rev = save_rev(&s, key, tool_skill("toolbox")).await;
    let path = exec_path("toolbox");

    // A non-script component.
    let reply = s
        .post(
            &path,
            key,
            json!({"revision_id": rev, "script_path": "references/data.txt"}),
        )
        .await;
    let err = reply.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["field"], "script_path", "{err}");
    assert_eq!(err["details"]["type"], "reference");
    // An undeclared path.
    for undeclared in ["scripts/missing.py", "../etc/passwd", "SCRIPTS/MAIN.PY"] {
        s.post(
            &path,
            key,
            json!({"revision_id": rev, "script_path": undeclared}),
        )
        .await
        .expect_error(404, "NOT_FOUND");
    }
    // No pin.
    s.post(&path, key, json!({"script_path": "scripts/main.py"}))
        .await
        .expect_error(422, "REVISION_PIN_REQUIRED");
    // A revision of another skill.
    let other = save_rev(&s, key, tool_skill("other-box")).await;
    s.post(
        &path,
        key,
        json!({"revision_id": other, "script_path": "scripts/main.py"}),
    )
    .await
    .expect_error(404, "NOT_FOUND");
    // Bad arguments.
    for (body, field) in [
        (
            json!({"revision_id": rev, "script_path": "scripts/main.py", "input_args": [1, 2]}),
            Some("input_args"),
        ),
        (
            json!({"revision_id": rev, "script_path": "scripts/main.py", "input_args": "x"}),
            Some("input_args"),
        ),
        (
            json!({"revision_id": rev, "script_path": "scripts/main.py", "timeout_seconds": 0}),
            Some("timeout_seconds"),
        ),
        (
            json!({"revision_id": rev, "script_path": "scripts/main.py", "timeout_seconds": 61}),
            Some("timeout_seconds"),
        ),
        (
            json!({"revision_id": rev, "script_path": "scripts/main.py", "timeout_seconds": 1.5}),
            None,
        ),
        (
            json!({"revision_id": rev, "script_path": "scripts/main.py", "memory": 1}),
            None,
        ),
        (json!({"revision_id": rev}), None),
    ] {
        let reply = s.post(&path, key, body.clone()).await;
        let err = reply.expect_error(422, "VALIDATION_ERROR");
        if let Some(field) = field {
            assert_eq!(err["details"]["field"], field, "{body}: {err}");
        }
    }
    // Conflicting workspaces in query and body.
    s.post(
        &format!("{path}?workspace=personal"),
        key,
        json!({"revision_id": rev, "script_path": "scripts/main.py", "workspace": "other"}),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    // Unknown skill.
    s.post(
        &exec_path("no-such-skill"),
        key,
        json!({"revision_id": rev, "script_path": "scripts/main.py"}),
    )
    .await
    .expect_error(404, "NOT_FOUND");
    // A read-only credential (the scope is checked first).
    let reader = s.account("reader", &["memory:read"]).await;
    s.post(
        &path,
        &reader,
        json!({"revision_id": rev, "script_path": "scripts/main.py"}),
    )
    .await
    .expect_error(403, "PERMISSION_DENIED");
    // No auth.
    let reply = s
        .http
        .post(format!("{}{path}", s.url))
        .json(&json!({"revision_id": rev, "script_path": "scripts/main.py"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 401);

    // Without a sandbox a valid request is SANDBOX_UNAVAILABLE, and that refusal is audited.
    let reply = s
        .post(
            &path,
            key,
            json!({"revision_id": rev, "script_path": "scripts/main.py"}),
        )
        .await;
    let err = reply.expect_error(503, "SANDBOX_UNAVAILABLE");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no sandbox configured"),
        "{err}"
    );
    let all = audit(&s).await;
    assert!(entries(&all, "skill.execute").is_empty());
    assert_eq!(entries(&all, "skill.execute_refused").len(), 1);
    verify_audit_chain(&all).expect("audit chain intact");
}

#[tokio::test]
async fn drafts_run_for_writers_published_for_every_member() {
    let Some(engine) = real_engine("drafts_run_for_writers").await else {
        return;
    };
    let s = server_with(engine).await;
    let owner = &s.admin_key;
    let member = s.account("bob", &["memory:read", "memory:write"]).await;
    let viewer = s.account("carol", &["memory:read", "memory:write"]).await;
    let outsider = s.account("eve", &["memory:read", "memory:write"]).await;
    s.post(
        "/api/v1/workspaces",
        owner,
        json!({"handle": "ops", "name": "Ops"}),
    )
    .await
    .expect_ok();
    s.join("ops", owner, "bob", &member, "member").await;
    s.join("ops", owner, "carol", &viewer, "viewer").await;
    let mut body = script_skill("greet", "greet.py", "print('{\"hi\": 1}')\n");
    body["workspace"] = json!("ops");
    let draft = save_rev(&s, &member, body.clone()).await;
    let run = |key: String, rev: String| {
        let s = &s;
        async move {
            s.post(
                &exec_path("greet"),
                &key,
                json!({"revision_id": rev, "script_path": "greet.py", "workspace": "ops"}),
            )
            .await
        }
    };

    // Draft: members (writers) run it, viewers do not.
    let reply = run(member.clone(), draft.clone()).await;
    assert_eq!(reply.expect_ok()["data"]["output_data"], json!({"hi": 1}));
    run(viewer.clone(), draft.clone())
        .await
        .expect_error(403, "PERMISSION_DENIED");
    // Outsiders do not even see the skill.
    run(outsider.clone(), draft.clone())
        .await
        .expect_error(404, "NOT_FOUND");

    // Proposed: still writers only.
    body["intent"] = json!("publish");
    body["instruction_body"] = json!("Run the script, v2.");
    let proposed = save_rev(&s, &member, body).await;
    run(viewer.clone(), proposed.clone())
        .await
        .expect_error(403, "PERMISSION_DENIED");
    run(member.clone(), proposed.clone()).await.expect_ok();

    // Published (after approval): the viewer runs it too.
    s.post(
        &format!("/api/v1/skills/greet/revisions/{proposed}/approve?workspace=ops"),
        owner,
        json!({}),
    )
    .await
    .expect_ok();
    let reply = run(viewer.clone(), proposed.clone()).await;
    let data = reply.expect_ok()["data"].clone();
    assert_eq!(data["status"], "success", "{data}");
    assert_eq!(data["revision_status"], "published");
    assert_eq!(data["workspace"], "ops");

    let all = audit(&s).await;
    verify_audit_chain(&all).expect("audit chain intact");
    assert_eq!(entries(&all, "skill.execute").len(), 3);
}

#[tokio::test]
async fn pinned_deprecated_and_archived_revisions_run() {
    let Some(engine) = real_engine("pinned_deprecated_revision_runs").await else {
        return;
    };
    let s = server_with(engine).await;
    let key = &s.admin_key;
    let mut v1 = script_skill("versioned", "v.sh", "echo '{\"version\": 1}'\n");
    v1["intent"] = json!("publish");
    let rev1 = save_rev(&s, key, v1).await;
    let mut v2 = script_skill("versioned", "v.sh", "echo '{\"version\": 2}'\n");
    v2["intent"] = json!("publish");
    let rev2 = save_rev(&s, key, v2).await;
    let revisions = s.get("/api/v1/skills/versioned/revisions", key).await;
    let status_of = |rev: &str| {
        revisions.body["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["revision_id"] == rev)
            .map(|r| r["status"].clone())
    };
    assert_eq!(status_of(&rev1), Some(json!("deprecated")));

    let server = &s;
    let exec = |rev: String| async move {
        server
            .post(
                &exec_path("versioned"),
                key,
                json!({"revision_id": rev, "script_path": "v.sh"}),
            )
            .await
    };
    let reply = exec(rev1.clone()).await;
    let data = reply.expect_ok()["data"].clone();
    assert_eq!(data["output_data"], json!({"version": 1}), "{data}");
    assert_eq!(data["revision_status"], "deprecated");
    let reply = exec(rev2.clone()).await;
    assert_eq!(
        reply.expect_ok()["data"]["output_data"],
        json!({"version": 2})
    );

    // Archived skills keep their pinned executions.
    s.post("/api/v1/skills/versioned/archive", key, json!({}))
        .await
        .expect_ok();
    let reply = exec(rev1.clone()).await;
    assert_eq!(
        reply.expect_ok()["data"]["output_data"],
        json!({"version": 1})
    );
}

#[tokio::test]
async fn timeouts_are_reported_and_audited() {
    let Some(engine) = real_engine("timeouts_are_reported").await else {
        return;
    };
    let s = server_with(engine).await;
    let key = &s.admin_key;
    let rev = save_rev(&s, key, script_skill("sleepy", "sleep.sh", "sleep 30\n")).await;
    let started = std::time::Instant::now();
    let reply = s
        .post(
            &exec_path("sleepy"),
            key,
            json!({"revision_id": rev, "script_path": "sleep.sh", "timeout_seconds": 1}),
        )
        .await;
    let data = assert_execution_shape(reply.expect_ok()).clone();
    assert!(started.elapsed().as_secs() < 15, "{:?}", started.elapsed());
    assert_eq!(data["status"], "timeout", "{data}");
    assert_eq!(data["exit_code"], Value::Null);
    assert_eq!(data["limits"]["timeout_ms"]["value"], 1000);
    let all = audit(&s).await;
    let executed = entries(&all, "skill.execute");
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].details["status"], "timeout");
    assert_eq!(executed[0].details["execution_id"], data["execution_id"]);
    verify_audit_chain(&all).expect("audit chain intact");
    assert_eq!(s.service.metrics().executions("timeout"), 1);
}

#[tokio::test]
async fn fails_closed_when_bubblewrap_is_missing() {
    let engine = broken_engine(false).await;
    let state = engine.state();
    assert!(!state.available && !state.runnable, "{state:?}");
    let s = server_with(engine).await;
    assert_eq!(
        s.service.sandbox_state().map(|st| st.available),
        Some(false)
    );
    let key = &s.admin_key;
    let marker_dir = tempfile::tempdir().unwrap();
    let marker = marker_dir.path().join("ran");
    let script = format!(
        "open({:?}, 'w').write('ran')\nprint('{{}}')\n",
        marker.display().to_string()
    );
    let rev = save_rev(&s, key, script_skill("marker", "mark.py", &script)).await;
    let reply = s
        .post(
            &exec_path("marker"),
            key,
            json!({"revision_id": rev, "script_path": "mark.py"}),
        )
        .await;
    let err = reply.expect_error(503, "SANDBOX_UNAVAILABLE");
    assert_eq!(err["retryable"], true);
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("bwrap not found"), "{message}");
    assert!(
        !message.contains("/nonexistent"),
        "host paths must not reach clients: {message}"
    );
    // Nothing ran: no marker, no execution entry, one refusal entry.
    assert!(!marker.exists());
    let all = audit(&s).await;
    assert!(entries(&all, "skill.execute").is_empty());
    let refused = entries(&all, "skill.execute_refused");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].details["error_code"], "SANDBOX_UNAVAILABLE");
    assert_eq!(refused[0].details["script_path"], "mark.py");
    verify_audit_chain(&all).expect("audit chain intact");
    assert_eq!(s.service.metrics().executions_unavailable(), 1);
    let metrics = s.service.render_metrics();
    assert!(
        metrics.contains("xmemo_executions_unavailable_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains("xmemo_sandbox_available 0"), "{metrics}");
}

#[tokio::test]
async fn unsafe_local_fallback_runs_and_says_so() {
    let engine = broken_engine(true).await;
    let state = engine.state();
    assert!(!state.available && state.runnable, "{state:?}");
    let s = server_with(engine).await;
    let key = &s.admin_key;
    let rev = save_rev(&s, key, tool_skill("toolbox")).await;
    let reply = s
        .post(
            &exec_path("toolbox"),
            key,
            json!({"revision_id": rev, "script_path": "scripts/main.py", "input_args": {"a": 1, "b": 2}}),
        )
        .await;
    let data = assert_execution_shape(reply.expect_ok()).clone();
    assert_eq!(data["status"], "success", "{data}");
    assert_eq!(data["isolation"], "unsafe_local");
    assert_eq!(data["output_data"]["sum"], 3);
    assert_eq!(data["output_data"]["data"], "hello from a reference");
    let all = audit(&s).await;
    let executed = entries(&all, "skill.execute");
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].details["isolation"], "unsafe_local");
    assert_eq!(executed[0].details["execution_id"], data["execution_id"]);
    verify_audit_chain(&all).expect("audit chain intact");
    assert_eq!(s.service.metrics().executions_unsafe_local(), 1);
    assert!(
        s.service
            .render_metrics()
            .contains("xmemo_sandbox_unsafe_local 1")
    );
}

/// Waits (bounded) until `n` executions hold a slot.
async fn wait_running(s: &TestServer, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.service.running_executions() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{n} executions never started (running: {})",
            s.service.running_executions()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The `Retry-After` header, checked against `details.retry_after_seconds`.
fn retry_after(reply: &common::Reply) -> u64 {
    let header: u64 = reply
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After header");
    assert!(header >= 1);
    assert_eq!(
        reply.body["error"]["details"]["retry_after_seconds"], header,
        "{}",
        reply.body
    );
    header
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_executions_are_capped_per_account_and_per_server() {
    let Some(engine) = real_engine("concurrent_executions_are_capped").await else {
        return;
    };
    let caps = xmemo_server::service::exec_slots::ExecutionCaps {
        global: 2,
        per_account: 1,
    };
    let s = TestServer::start_configured(|service| {
        service.with_sandbox(engine).with_execution_caps(caps)
    })
    .await;
    let scopes = ["memory:read", "memory:write"];
    let (alice, bob, carol) = (
        s.account("alice", &scopes).await,
        s.account("bob", &scopes).await,
        s.account("carol", &scopes).await,
    );
    let napper = || {
        let mut body = skill("napper", "Naps, or not.");
        body["components"] = json!([
            {"logical_path": "nap.sh", "type": "script", "content": "sleep 5\necho '{\"slept\": true}'\n"},
            {"logical_path": "quick.sh", "type": "script", "content": "echo '{\"quick\": true}'\n"},
        ]);
        body
    };
    let rev_a = save_rev(&s, &alice, napper()).await;
    let rev_b = save_rev(&s, &bob, napper()).await;
    let rev_c = save_rev(&s, &carol, napper()).await;
    let run = |key: &str, rev: &str, script: &str| {
        let request = s
            .http
            .post(format!("{}{}", s.url, exec_path("napper")))
            .bearer_auth(key)
            .json(&json!({"revision_id": rev, "script_path": script, "timeout_seconds": 30}));
        async move { common::Reply::from(request.send().await.expect("request")).await }
    };

    // Alice's one run holds her only slot; a second one of hers is refused at once.
    let a1 = tokio::spawn(run(&alice, &rev_a, "nap.sh"));
    wait_running(&s, 1).await;
    let a2 = run(&alice, &rev_a, "quick.sh").await;
    let err = a2.expect_error(429, "RATE_LIMITED");
    assert_eq!(err["retryable"], true);
    assert!(retry_after(&a2) <= 5);

    // Bob takes the server's last slot; his own cap still answers first for him...
    let b1 = tokio::spawn(run(&bob, &rev_b, "nap.sh"));
    wait_running(&s, 2).await;
    run(&bob, &rev_b, "quick.sh")
        .await
        .expect_error(429, "RATE_LIMITED");
    // ...and Carol, under her own cap, finds the server full.
    let c1 = run(&carol, &rev_c, "quick.sh").await;
    let err = c1.expect_error(503, "SERVICE_UNAVAILABLE");
    assert_eq!(err["retryable"], true);
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains("2 executions")),
        "{err}"
    );
    retry_after(&c1);

    // The runs that got a slot finish normally and give their slots back.
    for task in [a1, b1] {
        let reply = task.await.expect("task");
        assert_eq!(
            reply.expect_ok()["data"]["status"],
            "success",
            "{}",
            reply.body
        );
    }
    assert_eq!(s.service.running_executions(), 0);
    let quick = run(&carol, &rev_c, "quick.sh").await;
    assert_eq!(quick.expect_ok()["data"]["output_data"]["quick"], true);

    // Nothing ran for the refused requests: three executions, three refusals naming the cap.
    let all = audit(&s).await;
    assert_eq!(entries(&all, "skill.execute").len(), 3);
    let refused = entries(&all, "skill.execute_refused");
    let reasons: Vec<(&str, &str)> = refused
        .iter()
        .map(|e| {
            (
                e.details["refusal"].as_str().unwrap_or_default(),
                e.details["error_code"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("account_limit", "RATE_LIMITED"),
            ("account_limit", "RATE_LIMITED"),
            ("server_limit", "SERVICE_UNAVAILABLE"),
        ]
    );
    assert!(
        refused
            .iter()
            .all(|e| e.details.get("execution_id").is_none())
    );
    verify_audit_chain(&all).expect("audit chain intact");
    let metrics = s.service.render_metrics();
    assert!(
        metrics.contains("xmemo_executions_refused_total{reason=\"account_limit\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("xmemo_executions_refused_total{reason=\"server_limit\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("xmemo_executions_running 0"), "{metrics}");
}
