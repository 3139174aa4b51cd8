//! Fail closed: without a working bubblewrap nothing runs, unless the unsafe local fallback
//! is explicitly enabled. These tests need no bubblewrap.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::py;
use xmemo_sandbox::{Isolation, RunRequest, RunStatus, SandboxConfig, SandboxEngine, SandboxError};

/// A host directory any uid may write (the fallback runs as a private uid when root).
fn marker_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("marker dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

fn marker_script(marker: &Path) -> RunRequest {
    py(&format!(
        "import json, os\nopen({:?}, 'w').write('ran')\nprint(json.dumps({{'uid': os.getuid(), 'cwd': os.getcwd(), 'home': os.environ.get('HOME'), 'env': sorted(os.environ)}}))\n",
        marker.display().to_string()
    ))
}

fn fake_bwrap(dir: &Path) -> PathBuf {
    let path = dir.join("bwrap");
    std::fs::write(&path, "#!/bin/sh\nexit 1\n").expect("fake bwrap");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[tokio::test]
async fn missing_bwrap_is_unavailable_and_nothing_runs() {
    let markers = marker_dir();
    let marker = markers.path().join("ran");
    let engine = SandboxEngine::new(SandboxConfig {
        bwrap_path: Some(PathBuf::from("/nonexistent/xmemo/bwrap")),
        ..SandboxConfig::default()
    })
    .await;
    let state = engine.state();
    assert!(!state.available);
    assert!(!state.runnable);
    assert!(
        state.reason.contains("/nonexistent/xmemo/bwrap"),
        "{state:?}"
    );
    match engine.run(marker_script(&marker)).await {
        Err(SandboxError::Unavailable { reason }) => assert_eq!(reason, state.reason),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(
        !marker.exists(),
        "the script ran although the sandbox is unavailable"
    );
}

#[tokio::test]
async fn failing_bwrap_is_unavailable() {
    let markers = marker_dir();
    let marker = markers.path().join("ran");
    let bin = tempfile::tempdir().expect("bin");
    let engine = SandboxEngine::new(SandboxConfig {
        bwrap_path: Some(fake_bwrap(bin.path())),
        ..SandboxConfig::default()
    })
    .await;
    let state = engine.state();
    assert!(!state.available, "{state:?}");
    assert_eq!(state.isolation, Isolation::Bubblewrap);
    assert!(state.reason.contains("--version"), "{state:?}");
    assert!(matches!(
        engine.run(marker_script(&marker)).await,
        Err(SandboxError::Unavailable { .. })
    ));
    assert!(!marker.exists());
    // Asking again gives the same answer.
    assert!(!engine.reprobe().await.available);
}

#[tokio::test]
async fn fallback_runs_locally_when_explicitly_allowed() {
    let markers = marker_dir();
    let marker = markers.path().join("ran");
    let bin = tempfile::tempdir().expect("bin");
    let engine = SandboxEngine::new(SandboxConfig {
        bwrap_path: Some(fake_bwrap(bin.path())),
        allow_unsafe_local_fallback: true,
        ..SandboxConfig::default()
    })
    .await;
    let state = engine.state();
    assert!(!state.available);
    assert!(state.runnable);
    assert_eq!(state.isolation, Isolation::UnsafeLocal);
    let outcome = engine
        .run(marker_script(&marker))
        .await
        .expect("fallback runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    assert_eq!(outcome.isolation, Isolation::UnsafeLocal);
    assert_eq!(std::fs::read_to_string(&marker).expect("marker"), "ran");
    let data = outcome.output_data.clone().expect("json");
    // Private working directory and HOME inside the run's scratch directory.
    assert!(
        data["cwd"].as_str().unwrap_or("").ends_with("/skill"),
        "{data}"
    );
    assert!(
        data["home"].as_str().unwrap_or("").ends_with("/tmp"),
        "{data}"
    );
    // Hermetic environment.
    let env: Vec<&str> = data["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        env.iter()
            .all(|k| !k.starts_with("CARGO") && !k.starts_with("RUST")),
        "{env:?}"
    );
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert_ne!(data["uid"], 0, "fallback must drop root");
    }
    // The scratch directory is gone.
    let cwd = data["cwd"].as_str().expect("cwd");
    assert!(!Path::new(cwd).exists(), "scratch left behind");
    let json = serde_json::to_value(&outcome).expect("serializes");
    assert_eq!(json["isolation"], "unsafe_local");
}

#[tokio::test]
async fn fallback_still_enforces_timeout_and_output_caps() {
    let bin = tempfile::tempdir().expect("bin");
    let engine = SandboxEngine::new(SandboxConfig {
        bwrap_path: Some(fake_bwrap(bin.path())),
        allow_unsafe_local_fallback: true,
        ..SandboxConfig::default()
    })
    .await;
    let mut req = py(
        "import sys, time\nsys.stdout.write('y' * 3_000_000)\nsys.stdout.flush()\ntime.sleep(120.913)\n",
    );
    let deadline = std::time::Duration::from_secs(2);
    req.limits.timeout = deadline;
    let started = std::time::Instant::now();
    let outcome = engine.run(req).await.expect("runs");
    assert_eq!(outcome.status, RunStatus::Timeout, "{outcome:#?}");
    // The watchdog's kill is the behaviour under test, so wall-clock time is the evidence: six
    // times the deadline leaves a loaded 2-core machine room, and is a tenth of the 120 s the
    // script would sleep unkilled.
    let elapsed = started.elapsed();
    assert!(elapsed < deadline * 6, "took {elapsed:?}");
    assert!(outcome.stdout_truncated);
    assert_eq!(outcome.stdout_total_bytes, 3_000_000);
    assert_eq!(outcome.stdout.len(), 1 << 20);
    assert!(common::processes_with("120.913").is_empty());
}

#[test]
fn from_env_reads_the_fallback_switch_exactly() {
    let config = SandboxConfig::from_lookup(|name| {
        (name == "XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK").then(|| "true".into())
    });
    assert!(!config.allow_unsafe_local_fallback);
    let config = SandboxConfig::from_lookup(|name| {
        (name == "XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK").then(|| "1".into())
    });
    assert!(config.allow_unsafe_local_fallback);
}
