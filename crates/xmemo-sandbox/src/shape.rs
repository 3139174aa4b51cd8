//! The fixed shape of every bubblewrap sandbox. The limit plan (`limits`), the per-run
//! cgroups (`cgroup`) and the bwrap command line (`argv`) must agree on these figures, so they
//! live below all three rather than in any one of them.

/// Supervisor processes of a bubblewrap sandbox (outer bwrap + its init) counted by the pids
/// cgroup / RLIMIT_NPROC on top of the script's `max_processes`.
pub const SUPERVISOR_PROCESSES: u32 = 2;
/// Size of the sandbox's private `/tmp` tmpfs.
pub const TMP_BYTES: u64 = 64 << 20;
/// Size of the sandbox's private `/dev/shm` tmpfs.
pub const SHM_BYTES: u64 = 16 << 20;
