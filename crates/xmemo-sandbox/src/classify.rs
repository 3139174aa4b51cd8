//! Classification of a finished run (pure).

use crate::RunStatus;

/// How the (outer) process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this status.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Never started (spawn failed) or could not be waited for.
    Unknown,
}

/// Facts gathered about a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// How the process the engine spawned ended.
    pub exit: Exit,
    /// Under bubblewrap: whether bwrap reported that the command was executed (its JSON status
    /// `exit-code` record). Always true for the local fallback once spawned.
    pub command_started: bool,
    /// bwrap's own error said the command could not be executed (`bwrap: execvp ...`):
    /// typically a missing interpreter named by a shebang.
    pub exec_failed: bool,
    /// The watchdog fired.
    pub timed_out: bool,
    /// The process tree was run under bubblewrap (exit codes >128 mean death by signal).
    pub bubblewrap: bool,
    /// OOM kills counted by the memory cgroup (`None` without one, or without the counter).
    pub oom_kills: Option<u64>,
    /// The memory cgroup's peak usage reached its limit (used only when there is no OOM
    /// counter).
    pub memory_peak_at_limit: bool,
    /// Memory enforced by RLIMIT_AS (no memory cgroup).
    pub memory_by_rlimit: bool,
    /// stderr's last non-empty line starts with `MemoryError` (Python under RLIMIT_AS).
    pub memory_error_reported: bool,
}

/// The status code reported by the script and the signal that ended it, if any.
pub fn exit_parts(facts: &Facts) -> (Option<i32>, Option<i32>) {
    match facts.exit {
        Exit::Code(code) => {
            let signal = (facts.bubblewrap && code > 128 && code <= 128 + 64).then(|| code - 128);
            (Some(code), signal)
        }
        Exit::Signal(signal) => (None, Some(signal)),
        Exit::Unknown => (None, None),
    }
}

/// Classifies a run:
/// - the watchdog fired → `timeout`;
/// - exit 0 → `success`;
/// - the memory cgroup counted an OOM kill (or, without that counter, SIGKILL with the peak
///   usage at the limit) → `oom`;
/// - the sandbox never ran the command → `system_error` (a missing interpreter named by the
///   script is `runtime_error`, like a shell's 127);
/// - under RLIMIT_AS, Python's `MemoryError` (exit 1) → `oom` (best effort: it is the
///   script's own report; other runtimes' allocation failures stay `runtime_error`);
/// - killed by SIGXCPU (the CPU-time backstop) → `timeout`;
/// - anything else → `runtime_error`.
pub fn classify(facts: &Facts) -> RunStatus {
    if facts.timed_out {
        return RunStatus::Timeout;
    }
    if facts.exit == Exit::Unknown {
        return RunStatus::SystemError;
    }
    let (code, signal) = exit_parts(facts);
    if code == Some(0) && facts.command_started {
        return RunStatus::Success;
    }
    if facts.oom_kills.is_some_and(|n| n > 0) {
        return RunStatus::Oom;
    }
    if facts.oom_kills.is_none() && facts.memory_peak_at_limit && signal == Some(libc::SIGKILL) {
        return RunStatus::Oom;
    }
    if !facts.command_started {
        return if facts.exec_failed {
            RunStatus::RuntimeError
        } else {
            RunStatus::SystemError
        };
    }
    if facts.memory_by_rlimit && facts.memory_error_reported {
        return RunStatus::Oom;
    }
    if signal == Some(libc::SIGXCPU) {
        return RunStatus::Timeout;
    }
    RunStatus::RuntimeError
}

/// Whether the last non-empty line of `stderr` reports a Python `MemoryError` (pure).
pub fn reports_memory_error(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.trim_start().starts_with("MemoryError"))
}

/// The `exit-code` bwrap reported on its `--json-status-fd` (present only when the command
/// was executed) (pure).
pub fn bwrap_exit_code(status: &[u8]) -> Option<i32> {
    serde_json::Deserializer::from_slice(status)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .find_map(|record| record.get("exit-code")?.as_i64())
        .and_then(|code| i32::try_from(code).ok())
}

/// Host pid of the sandbox's init, from bwrap's `--json-status-fd` output (pure).
pub fn bwrap_child_pid(status: &[u8]) -> Option<libc::pid_t> {
    serde_json::Deserializer::from_slice(status)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .find_map(|record| record.get("child-pid")?.as_i64())
        .and_then(|pid| libc::pid_t::try_from(pid).ok())
        .filter(|pid| *pid > 0)
}

/// Whether bwrap's stderr says it could not execute the command (pure).
pub fn reports_exec_failure(stderr: &[u8]) -> bool {
    String::from_utf8_lossy(stderr)
        .lines()
        .any(|line| line.starts_with("bwrap: execvp "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(exit: Exit) -> Facts {
        Facts {
            exit,
            command_started: true,
            exec_failed: false,
            timed_out: false,
            bubblewrap: true,
            oom_kills: Some(0),
            memory_peak_at_limit: false,
            memory_by_rlimit: false,
            memory_error_reported: false,
        }
    }

    #[test]
    fn success_and_runtime_error() {
        assert_eq!(classify(&facts(Exit::Code(0))), RunStatus::Success);
        assert_eq!(classify(&facts(Exit::Code(1))), RunStatus::RuntimeError);
        assert_eq!(classify(&facts(Exit::Code(137))), RunStatus::RuntimeError);
        assert_eq!(exit_parts(&facts(Exit::Code(137))), (Some(137), Some(9)));
        assert_eq!(exit_parts(&facts(Exit::Code(3))), (Some(3), None));
    }

    #[test]
    fn timeout_wins() {
        let mut f = facts(Exit::Signal(libc::SIGKILL));
        f.timed_out = true;
        f.oom_kills = Some(2);
        assert_eq!(classify(&f), RunStatus::Timeout);
        assert_eq!(exit_parts(&f), (None, Some(9)));
        // CPU backstop.
        assert_eq!(
            classify(&facts(Exit::Code(128 + libc::SIGXCPU))),
            RunStatus::Timeout
        );
    }

    #[test]
    fn oom_from_cgroup_counter() {
        let mut f = facts(Exit::Code(137));
        f.oom_kills = Some(1);
        assert_eq!(classify(&f), RunStatus::Oom);
        // A script that survived an OOM-killed child and exited 0 succeeded.
        let mut f = facts(Exit::Code(0));
        f.oom_kills = Some(1);
        assert_eq!(classify(&f), RunStatus::Success);
        // No counter: SIGKILL at the limit.
        let mut f = facts(Exit::Code(137));
        f.oom_kills = None;
        f.memory_peak_at_limit = true;
        assert_eq!(classify(&f), RunStatus::Oom);
        f.memory_peak_at_limit = false;
        assert_eq!(classify(&f), RunStatus::RuntimeError);
        // With a counter reading 0, the peak alone does not make an OOM.
        let mut f = facts(Exit::Code(137));
        f.memory_peak_at_limit = true;
        assert_eq!(classify(&f), RunStatus::RuntimeError);
    }

    #[test]
    fn memory_error_under_rlimit() {
        let mut f = facts(Exit::Code(1));
        f.oom_kills = None;
        f.memory_by_rlimit = true;
        f.memory_error_reported = true;
        assert_eq!(classify(&f), RunStatus::Oom);
        f.memory_by_rlimit = false;
        assert_eq!(classify(&f), RunStatus::RuntimeError);
        assert!(reports_memory_error(b"Traceback...\n  x\nMemoryError\n\n"));
        assert!(!reports_memory_error(b"MemoryError\nValueError: nope\n"));
    }

    #[test]
    fn sandbox_failures() {
        let mut f = facts(Exit::Code(1));
        f.command_started = false;
        assert_eq!(classify(&f), RunStatus::SystemError);
        f.exec_failed = true;
        assert_eq!(classify(&f), RunStatus::RuntimeError);
        assert_eq!(classify(&facts(Exit::Unknown)), RunStatus::SystemError);
        assert!(reports_exec_failure(
            b"bwrap: execvp /usr/bin/node: No such file or directory\n"
        ));
        assert!(!reports_exec_failure(b"bwrap: Can't mount proc\n"));
    }

    #[test]
    fn bwrap_status_records() {
        let status =
            b"{ \"child-pid\": 11442, \"pid-namespace\": 4026532181 }\n{ \"exit-code\": 137 }\n";
        assert_eq!(bwrap_exit_code(status), Some(137));
        assert_eq!(bwrap_exit_code(b"{ \"child-pid\": 1 }\n"), None);
        assert_eq!(bwrap_exit_code(b""), None);
        assert_eq!(bwrap_exit_code(b"garbage"), None);
        assert_eq!(bwrap_child_pid(status), Some(11442));
        assert_eq!(bwrap_child_pid(b"{ \"exit-code\": 0 }\n"), None);
        assert_eq!(bwrap_child_pid(b"{ \"child-pid\": -3 }\n"), None);
    }
}
