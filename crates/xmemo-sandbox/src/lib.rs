//! # xmemo-sandbox — the script execution engine
//!
//! Runs a declared entry file from a read-only directory, with JSON on stdin, under a policy.
//! The engine knows nothing of skills: the caller gives it files, an entry path, stdin and
//! [`ExecutionLimits`]; it returns a [`RunOutcome`] (status, exit code, capped output, the
//! limits with the mechanism that enforced each, resource figures).
//!
//! ## Isolation (bubblewrap)
//! Every run is a fresh `bwrap` sandbox with:
//! - new user, PID, network, IPC, UTS and cgroup namespaces (`--unshare-all --unshare-user
//!   --unshare-cgroup`), nested user namespaces disabled (`--disable-userns`), no capabilities
//!   (`--cap-drop ALL`), `--new-session` (no terminal injection), `--die-with-parent`;
//!   bubblewrap sets no_new_privs, so setuid binaries grant nothing;
//! - a seccomp filter (seccompiler, passed with `--seccomp FD`) answering `EPERM` to keyrings
//!   (`keyctl`, `add_key`, `request_key`), `ptrace`, `process_vm_readv/writev`, `pidfd_getfd`,
//!   `kcmp`, the mount family (`mount`, `umount2`, `pivot_root`, `move_mount`, `open_tree`,
//!   `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`, `chroot`), `unshare`,
//!   `setns`, `clone` with namespace flags, `io_uring_*`, `bpf`, `userfaultfd`,
//!   `perf_event_open`, handle syscalls, module/kexec/reboot/swap/clock/syslog syscalls and
//!   `ioctl(TIOCSTI|TIOCLINUX)`; `clone3` gets `ENOSYS` (glibc falls back to `clone`), x32
//!   syscall numbers get `ENOSYS`, foreign architectures are killed;
//! - a filesystem made of: `/usr` read-only plus the host's `/bin`, `/lib`, `/lib64`, `/sbin`
//!   symlinks into it (or read-only binds on non-merged-/usr hosts), `/etc/ld.so.cache` and
//!   `/etc/alternatives` read-only, a generated `/etc/passwd` and `/etc/group`, a fresh `/proc`
//!   with `/proc/sys` read-only, a minimal read-only `/dev` with a 16 MiB `/dev/shm`, a 64 MiB
//!   tmpfs `/tmp`, and the run's files read-only at `/skill` (the working directory). The root
//!   is remounted read-only. Nothing else of the host is visible (never `--ro-bind / /`: no
//!   host sockets, no `/etc/shadow`, no server data directory, no `/home`);
//! - a hermetic environment: `--clearenv`, then `PATH`, `HOME=/tmp`, `TMPDIR=/tmp`,
//!   `LANG`/`LC_ALL=C.UTF-8`, `PYTHONDONTWRITEBYTECODE=1`, `PYTHONNOUSERSITE=1`,
//!   `PYTHONUNBUFFERED=1`, `USER`/`LOGNAME=sandbox`, `XMEMO_EXECUTION_ID`;
//! - when the server runs as root, bwrap itself is started as an unprivileged uid private to
//!   the run (`uid_base + slot`, default 200000..201023, also used as gid; slots are locked
//!   with `flock` under `<scratch_root>/xmemo-sandbox-uids/` so several server processes never
//!   share one). As root RLIMIT_NPROC would be ignored and `/proc/sys` writable.
//!
//! The run's scratch directory (`<scratch_root>/xmemo-run-*`) is owned by the run's uid, mode
//! 0500 (files 0400), and always removed afterwards, as are its cgroups; every process of the
//! run is killed at the end. A uid claimed through its lock is first swept through `/proc`
//! (what a crashed holder left running as it is killed). After a run, cgroups that list no
//! member prove the uid clean — every process of the run joined them before exec and cannot
//! leave them — and the uid is kept, lock held, for a later run (once the previous sandbox
//! init, which may wait as a zombie for the host's init, is gone). Without cgroups, or when
//! they do not empty, the uid is swept through `/proc` and released.
//!
//! ## Limits and mechanisms
//! Each [`RunOutcome::limits`] entry states its value and `enforced_by`:
//! - timeout (1–60 s, default 30): `watchdog` — at the deadline the outer bwrap is SIGKILLed
//!   through a pidfd (which tears down the PID namespace) with its process group, then the
//!   run's cgroups are emptied by SIGKILL (or, without cgroups, the run's uid is swept through
//!   `/proc`); the same sweep runs after every normal exit, so background processes never
//!   outlive a run; an RLIMIT_CPU backstop (2×timeout+5 s of CPU per process) is also set;
//! - memory (default 256 MiB): `cgroup_v1`/`cgroup_v2` (whole sandbox, real OOM kill, counted
//!   by `oom_kill`) when a memory cgroup is writable, else `rlimit` (RLIMIT_AS per process:
//!   allocations fail, Python raises `MemoryError`);
//! - CPU (default 500 millicores): a CFS quota in the cpu cgroup, else `none` (only the
//!   RLIMIT_CPU backstop);
//! - processes (default 32; threads count; bwrap's two supervisor processes are added on top):
//!   the pids cgroup (with RLIMIT_NPROC on the run's private uid as a backstop), else `rlimit`
//!   — RLIMIT_NPROC on the run's private uid when the server is root, or, when it is not,
//!   RLIMIT_NPROC set inside the sandbox's user namespace through `/usr/bin/prlimit` (since
//!   Linux 5.14 processes are counted per user namespace, so the server's own processes of
//!   the same uid do not count) — else `none`;
//! - output (default 1 MiB per stream): `output_cap` — the rest is read, counted
//!   (`stdout_total_bytes`) and discarded, never buffered;
//! - `/tmp`: `tmpfs` 64 MiB; files: RLIMIT_FSIZE 64 MiB; RLIMIT_CORE 0; RLIMIT_NOFILE 4096.
//!
//! cgroups: per-run cgroups `xmemo-exec_<id>` are made under the server's own cgroup (v1: per
//! controller, plus cpuacct for CPU figures; v2: one directory, when the controllers are
//! enabled for its children, or under `XMEMO_SANDBOX_CGROUP_PARENT`). The child process moves
//! itself in (writing `0` to `tasks` on v1 — it is single-threaded there, and a thread's move
//! skips the global lock a `cgroup.procs` move waits on — or to `cgroup.procs` on v2) before
//! dropping root. Leftover run cgroups older
//! than 10 minutes are removed at probe time.
//!
//! Resource figures: peak memory, OOM kills and peak tasks from the cgroups; CPU time from
//! cpuacct (v1) / `cpu.stat` (v2). Without cgroups, bubblewrap runs report no CPU figures
//! (`wait4` only sees bwrap's supervisors); the fallback reports its `wait4` rusage.
//!
//! Process hygiene: the spawned process starts its own session (`setsid`), all inherited file
//! descriptors above stderr are closed on exec (only the seccomp and status fds are passed to
//! bwrap), and processes are spawned from one long-lived thread because bwrap's
//! `--die-with-parent` is tied to the thread that forked it.
//!
//! ## Classification
//! `timeout` (watchdog fired, or SIGXCPU from the backstop) > `success` (exit 0) > `oom` (the
//! memory cgroup counted an OOM kill; under RLIMIT_AS, a Python `MemoryError` as last stderr
//! line — other runtimes' allocation failures stay `runtime_error`) > `system_error` (bwrap
//! failed before executing the command: it reports `exit-code` on `--json-status-fd` only for
//! executed commands; a missing shebang interpreter is `runtime_error` with exit 127) >
//! `runtime_error`. Under bwrap a script killed by signal N exits 128+N (`signal` = N).
//! `output_data` is stdout parsed as JSON when complete and valid.
//!
//! ## Fail closed, and the unsafe fallback
//! At start-up [`SandboxEngine::new`] finds bwrap (configured path or `PATH`), reads its
//! version, checks every flag it uses in `--help`, then runs a real sandbox with the real flag
//! set, seccomp filter, uid and cgroups, whose script verifies read-only paths, no
//! `/etc/shadow`, no_new_privs, seccomp mode, a non-zero uid and no network interface but
//! `lo`. The answer is cached ([`SandboxEngine::state`]) and refreshed by
//! [`SandboxEngine::reprobe`]. When it fails, every run returns
//! [`SandboxError::Unavailable`] and nothing executes — unless
//! `XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1`, in which case scripts run as plain local
//! processes with what still applies (private uid when root, cgroups, rlimits, seccomp with
//! no_new_privs, watchdog, output caps, cleared environment, private working directory and
//! HOME), a `tracing::warn!` per run says it must not serve multi-tenant production, and the
//! result says `isolation: "unsafe_local"`.
//!
//! ## Configuration ([`SandboxConfig::from_env`])
//! `XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK` (exactly `1`), `XMEMO_SANDBOX_BWRAP` (path),
//! `XMEMO_SANDBOX_SCRATCH_DIR`, `XMEMO_SANDBOX_CGROUP_PARENT` (v2), `XMEMO_SANDBOX_CGROUPS=0`.
//!
//! ## Requirements and caveats
//! Linux with unprivileged user namespaces, bubblewrap >= 0.8.0 (`apt-get install -y
//! bubblewrap`), Linux >= 5.3 for pidfds (older kernels fall back to `kill`), Linux >= 5.9
//! for `close_range` (older kernels: an fd-table walk). The scratch root must be traversable
//! by the sandbox uids (the default temp dir is). When bwrap exits, the sandbox's init is
//! reparented to the host's init and stays a zombie until that init reaps it; zombies count
//! against RLIMIT_NPROC, so uid slots without any leftover process are preferred and the
//! NPROC backstop has slack when the pids cgroup is the real limit.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(clippy::undocumented_unsafe_blocks)]

mod argv;
mod cgroup;
mod classify;
mod config;
mod engine;
mod error;
mod fallback;
mod limits;
mod outcome;
mod pidfd;
mod probe;
mod request;
mod runner;
mod runtime;
mod scratch;
mod seccomp;
mod shape;
mod uid;

pub use config::{
    ENV_ALLOW_UNSAFE_LOCAL_FALLBACK, ENV_BWRAP, ENV_CGROUP_PARENT, ENV_CGROUPS, ENV_SCRATCH_DIR,
    SandboxConfig,
};
pub use engine::{SandboxEngine, SandboxState};
pub use error::SandboxError;
pub use outcome::{
    EnforcedLimit, Isolation, LimitsReport, Mechanism, ResourceFigures, RunOutcome, RunStatus,
};
pub use request::{ExecutionLimits, RunRequest, SandboxFile};
pub use runtime::{Runtime, runtime_for};

/// Path inside the sandbox where the run's files are mounted (also the working directory).
pub const SANDBOX_SKILL_DIR: &str = argv::SANDBOX_SKILL_DIR;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    fn assert_serialize<T: serde::Serialize>() {}

    #[test]
    fn public_types_have_the_promised_traits() {
        assert_shareable::<SandboxEngine>();
        assert_shareable::<SandboxConfig>();
        assert_serialize::<RunOutcome>();
        assert_serialize::<SandboxState>();
        assert_eq!(
            serde_json::to_value(RunStatus::RuntimeError).ok(),
            Some(serde_json::json!("runtime_error"))
        );
        assert_eq!(
            serde_json::to_value(RunStatus::SystemError).ok(),
            Some(serde_json::json!("system_error"))
        );
        assert_eq!(
            serde_json::to_value(Isolation::UnsafeLocal).ok(),
            Some(serde_json::json!("unsafe_local"))
        );
        assert_eq!(
            serde_json::to_value(Isolation::Bubblewrap).ok(),
            Some(serde_json::json!("bubblewrap"))
        );
    }
}
