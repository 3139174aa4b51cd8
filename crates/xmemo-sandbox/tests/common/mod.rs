//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use xmemo_sandbox::{
    ExecutionLimits, Mechanism, RunOutcome, RunRequest, SandboxConfig, SandboxEngine, SandboxFile,
};

/// Whether a bare bubblewrap sandbox can run on this machine at all (independently of the
/// engine), so that an engine bug is never mistaken for a machine without bubblewrap.
fn bare_bwrap_works() -> Result<(), String> {
    let status = Command::new("bwrap")
        .args([
            "--unshare-all",
            "--unshare-user",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
            "/usr/bin/true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run bwrap: {e}"))?;
    if status.status.success() {
        Ok(())
    } else {
        Err(format!(
            "bare bwrap failed: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ))
    }
}

/// An engine with bubblewrap available. When bubblewrap cannot run on this machine the test
/// fails, unless `XMEMO_TEST_ALLOW_SKIP=1`, where this is `None` (after a loud line) and the
/// test skips. If bare bubblewrap works but the engine says unavailable, that is an engine
/// bug: always fail.
pub async fn engine_with(config: SandboxConfig) -> Option<SandboxEngine> {
    let engine = SandboxEngine::new(config).await;
    let state = engine.state();
    if state.available {
        return Some(engine);
    }
    match bare_bwrap_works() {
        Ok(()) => panic!(
            "bubblewrap works on this machine but the engine reports unavailable: {}",
            state.reason
        ),
        Err(why) => {
            xmemo_testkit::dependency_missing(
                "the bubblewrap sandbox",
                &format!("{} ({why})", state.reason),
            );
            None
        }
    }
}

/// [`engine_with`] the default configuration.
pub async fn engine() -> Option<SandboxEngine> {
    engine_with(SandboxConfig::default()).await
}

/// What a run needs for its process count to be bounded on this machine.
pub const PROCESS_LIMIT: &str = "a process limit for sandboxed runs (a pids cgroup, or \
     RLIMIT_NPROC on a uid or user namespace of the run's own)";

/// Whether `outcome`'s process limit was enforced. When it was not, a test about that limit
/// would prove nothing, so it fails, unless `XMEMO_TEST_ALLOW_SKIP=1`, where this is `false`
/// (after a loud line) and the caller skips.
pub fn process_limit_enforced(outcome: &RunOutcome) -> bool {
    let limit = &outcome.limits.max_processes;
    if limit.enforced_by != Mechanism::Unenforced {
        return true;
    }
    xmemo_testkit::dependency_missing(
        PROCESS_LIMIT,
        &format!(
            "the engine reports max_processes unenforced ({})",
            limit.note.as_deref().unwrap_or("no note")
        ),
    );
    false
}

/// A request running `source` as `name`.
pub fn script(name: &str, source: &str) -> RunRequest {
    RunRequest {
        files: vec![SandboxFile {
            path: name.to_owned(),
            bytes: source.as_bytes().to_vec(),
        }],
        entry: name.to_owned(),
        stdin: b"{}".to_vec(),
        limits: ExecutionLimits {
            timeout: Duration::from_secs(20),
            ..ExecutionLimits::default()
        },
    }
}

/// A python request.
pub fn py(source: &str) -> RunRequest {
    script("main.py", source)
}

/// Pids of host processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| *pid != me)
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| {
                            String::from_utf8_lossy(&c)
                                .replace('\0', " ")
                                .contains(marker)
                        })
                        .unwrap_or(false)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Host processes running as `uid` (real, effective, saved or fs).
pub fn processes_of_uid(uid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/status"))
                        .ok()
                        .and_then(|s| {
                            s.lines().find(|l| l.starts_with("Uid:")).map(|l| {
                                l[4..]
                                    .split_whitespace()
                                    .any(|v| v.parse::<u32>().ok() == Some(uid))
                            })
                        })
                        .unwrap_or(false)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// VmRSS of this process in KiB.
pub fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Whether `dir` exists and is non-empty.
pub fn dir_has_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
}
