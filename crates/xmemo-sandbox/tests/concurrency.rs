//! Ten concurrent runs, each with its own limits and (as root) its own uid.

mod common;

use std::collections::BTreeSet;

use common::{engine, py};
use xmemo_sandbox::{ExecutionLimits, RunStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_concurrent_runs_complete_with_their_own_limits() {
    let Some(engine) = engine().await else { return };
    let mut handles = Vec::new();
    for id in 0..10u32 {
        let engine = engine.clone();
        handles.push(tokio::spawn(async move {
            let mut req = py(
                "import json, os, subprocess, sys\nme = json.load(sys.stdin)['id']\n\
procs = [subprocess.Popen(['sh', '-c', 'echo %d; sleep 0.2' % me], stdout=subprocess.PIPE) for _ in range(4)]\n\
outs = [p.communicate()[0].decode().strip() for p in procs]\n\
print(json.dumps({'id': me, 'children': outs, 'uid': os.getuid()}))\n",
            );
            req.stdin = format!(r#"{{"id": {id}}}"#).into_bytes();
            // Each run gets a different process limit; all leave room for python + 4 × (sh + sleep).
            req.limits = ExecutionLimits {
                max_processes: 12 + id,
                timeout: std::time::Duration::from_secs(60),
                ..ExecutionLimits::default()
            };
            (id, engine.run(req).await.expect("runs"))
        }));
    }
    let mut uids = BTreeSet::new();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for handle in handles {
        let (id, outcome) = handle.await.expect("task");
        assert_eq!(outcome.status, RunStatus::Success, "run {id}: {outcome:#?}");
        assert_eq!(outcome.limits.max_processes.value, 12 + id);
        let data = outcome.output_data.expect("json");
        assert_eq!(data["id"], id);
        let expected = vec![id.to_string(); 4];
        assert_eq!(data["children"], serde_json::json!(expected), "run {id}");
        if root {
            uids.insert(outcome.resources.sandbox_uid.expect("uid"));
        }
    }
    if root {
        assert_eq!(uids.len(), 10, "runs shared a uid: {uids:?}");
    }
}
