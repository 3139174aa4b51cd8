//! What a run reports back (all serializable).

use serde::Serialize;

/// Final classification of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The script exited with status 0.
    Success,
    /// The script exited non-zero (or was killed by a signal other than the limits').
    RuntimeError,
    /// The watchdog killed the run at its deadline (or the CPU-time backstop fired).
    Timeout,
    /// The run hit its memory limit.
    Oom,
    /// The sandbox itself failed (could not start, setup error).
    SystemError,
}

/// How a run was isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Inside bubblewrap namespaces with seccomp.
    Bubblewrap,
    /// As a plain local process (`XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1`).
    UnsafeLocal,
}

/// Which kernel or engine mechanism enforced a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// A cgroup v2 controller.
    CgroupV2,
    /// A cgroup v1 controller.
    CgroupV1,
    /// A `setrlimit` resource limit.
    Rlimit,
    /// The engine's wall-clock watchdog.
    Watchdog,
    /// A seccomp-bpf filter.
    Seccomp,
    /// The engine's output reader (keeps the cap, drains and counts the rest).
    OutputCap,
    /// The size of a private tmpfs.
    Tmpfs,
    /// Not enforced.
    #[serde(rename = "none")]
    Unenforced,
}

/// One limit's value and enforcement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnforcedLimit<T> {
    /// The configured value.
    pub value: T,
    /// What enforced it.
    pub enforced_by: Mechanism,
    /// Caveats (e.g. a backstop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl<T> EnforcedLimit<T> {
    pub(crate) fn new(value: T, enforced_by: Mechanism) -> Self {
        Self {
            value,
            enforced_by,
            note: None,
        }
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// Every limit of a run with the mechanism that enforced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitsReport {
    /// Wall-clock limit in milliseconds.
    pub timeout_ms: EnforcedLimit<u64>,
    /// Memory limit in bytes.
    pub memory_bytes: EnforcedLimit<u64>,
    /// CPU bandwidth in millicores.
    pub cpu_millicores: EnforcedLimit<u32>,
    /// Process (and thread) limit.
    pub max_processes: EnforcedLimit<u32>,
    /// Bytes kept per output stream.
    pub max_output_bytes: EnforcedLimit<u64>,
    /// Size of the sandbox's private `/tmp`.
    pub tmp_bytes: EnforcedLimit<u64>,
    /// Syscall filter (`seccomp` or `none`).
    pub syscall_filter: Mechanism,
}

/// Resource figures measured for a run (when the mechanism could measure them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResourceFigures {
    /// User CPU time of the run (cpu accounting cgroup; else, for the local fallback, the
    /// `wait4` rusage of the reaped process tree).
    pub cpu_user_ms: Option<u64>,
    /// System CPU time of the run (same sources).
    pub cpu_system_ms: Option<u64>,
    /// Largest resident set of any single reaped process, bytes (local fallback only).
    pub max_rss_bytes: Option<u64>,
    /// Peak memory of the whole run (memory cgroup), bytes.
    pub memory_peak_bytes: Option<u64>,
    /// OOM kills counted by the memory cgroup.
    pub oom_kills: Option<u64>,
    /// Peak number of tasks (pids cgroup).
    pub pids_peak: Option<u64>,
    /// Host uid the run executed as (dedicated per concurrent run when the server is root).
    pub sandbox_uid: Option<u32>,
}

/// Result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    /// `exec_<uuidv7>`.
    pub execution_id: String,
    /// Classification.
    pub status: RunStatus,
    /// Exit status of the script (bubblewrap reports death by signal N as 128+N); `None` when
    /// the sandbox was killed (timeout) or never started.
    pub exit_code: Option<i32>,
    /// Signal that ended the script, when known.
    pub signal: Option<i32>,
    /// First `max_output_bytes` of stdout, decoded lossily as UTF-8.
    pub stdout: String,
    /// First `max_output_bytes` of stderr, decoded lossily as UTF-8.
    pub stderr: String,
    /// stdout was longer than the cap.
    pub stdout_truncated: bool,
    /// stderr was longer than the cap.
    pub stderr_truncated: bool,
    /// Bytes the script wrote to stdout (all of them, kept or not).
    pub stdout_total_bytes: u64,
    /// Bytes the script wrote to stderr.
    pub stderr_total_bytes: u64,
    /// Wall-clock duration from spawn to exit.
    pub duration_ms: u64,
    /// The limits and what enforced each.
    pub limits: LimitsReport,
    /// Isolation used.
    pub isolation: Isolation,
    /// Runtime chosen for the entry (`python3`, `bash`, `#!/bin/sh`).
    pub runtime: String,
    /// Measured resource figures.
    pub resources: ResourceFigures,
    /// stdout parsed as JSON when it is complete (not truncated) and valid JSON.
    pub output_data: Option<serde_json::Value>,
}
