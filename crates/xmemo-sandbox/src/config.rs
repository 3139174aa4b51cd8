//! Engine configuration.

use std::path::PathBuf;

/// Name of the environment variable that enables the unsafe local fallback (exactly `1`).
pub const ENV_ALLOW_UNSAFE_LOCAL_FALLBACK: &str = "XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK";
/// Optional path of the `bwrap` binary (otherwise `PATH` is searched).
pub const ENV_BWRAP: &str = "XMEMO_SANDBOX_BWRAP";
/// Optional directory in which per-run scratch directories are created.
pub const ENV_SCRATCH_DIR: &str = "XMEMO_SANDBOX_SCRATCH_DIR";
/// Optional cgroup v2 directory (delegated to the server) under which per-run cgroups are made.
pub const ENV_CGROUP_PARENT: &str = "XMEMO_SANDBOX_CGROUP_PARENT";
/// `0` disables cgroups (limits then rely on rlimits only).
pub const ENV_CGROUPS: &str = "XMEMO_SANDBOX_CGROUPS";

/// How the engine finds bwrap, where it works and what it may fall back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Path of `bwrap`; `None` searches `PATH`.
    pub bwrap_path: Option<PathBuf>,
    /// Run scripts as plain local processes when bubblewrap is unavailable. Never for
    /// multi-tenant production.
    pub allow_unsafe_local_fallback: bool,
    /// Where per-run scratch directories (and the uid lock directory) are created.
    pub scratch_root: PathBuf,
    /// First uid (and gid) of the range used for runs when the server runs as root.
    pub uid_base: u32,
    /// Number of uids in that range: also the maximum number of concurrent runs.
    pub uid_count: u32,
    /// Use cgroups (v1 or v2) for memory, CPU and process limits when writable.
    pub use_cgroups: bool,
    /// cgroup v2 only: a delegated directory under which per-run cgroups are created. `None`
    /// uses the server's own cgroup when it has the controllers enabled for its children.
    pub cgroup_parent: Option<PathBuf>,
    /// Tests only: run without any process limit (no pids cgroup, no RLIMIT_NPROC) and report
    /// it unenforced, so the tests that must fail when nothing bounds a fork bomb can be shown
    /// to fail. No environment variable maps to it ([`SandboxConfig::from_env`] keeps it
    /// `false`), so an operator cannot turn it on.
    pub leave_process_limit_unenforced_for_tests: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            bwrap_path: None,
            allow_unsafe_local_fallback: false,
            scratch_root: std::env::temp_dir(),
            uid_base: 200_000,
            uid_count: 1024,
            use_cgroups: true,
            cgroup_parent: None,
            leave_process_limit_unenforced_for_tests: false,
        }
    }
}

impl SandboxConfig {
    /// Reads the `XMEMO_SANDBOX_*` environment variables; unset ones keep their defaults.
    /// The fallback is enabled only when `XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK` is
    /// exactly `1`.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Same as [`SandboxConfig::from_env`] with an injectable lookup (for tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<std::ffi::OsString>) -> Self {
        let mut config = Self {
            allow_unsafe_local_fallback: lookup(ENV_ALLOW_UNSAFE_LOCAL_FALLBACK)
                .is_some_and(|value| value.as_encoded_bytes() == b"1"),
            ..Self::default()
        };
        if let Some(path) = lookup(ENV_BWRAP).filter(|v| !v.is_empty()) {
            config.bwrap_path = Some(PathBuf::from(path));
        }
        if let Some(path) = lookup(ENV_SCRATCH_DIR).filter(|v| !v.is_empty()) {
            config.scratch_root = PathBuf::from(path);
        }
        if let Some(path) = lookup(ENV_CGROUP_PARENT).filter(|v| !v.is_empty()) {
            config.cgroup_parent = Some(PathBuf::from(path));
        }
        if lookup(ENV_CGROUPS).is_some_and(|v| v.as_encoded_bytes() == b"0") {
            config.use_cgroups = false;
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn config_with(vars: &[(&str, &str)]) -> SandboxConfig {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        SandboxConfig::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn fallback_only_when_exactly_one() {
        assert!(!config_with(&[]).allow_unsafe_local_fallback);
        assert!(config_with(&[(ENV_ALLOW_UNSAFE_LOCAL_FALLBACK, "1")]).allow_unsafe_local_fallback);
        for value in ["true", "yes", "01", " 1", "1 ", ""] {
            assert!(
                !config_with(&[(ENV_ALLOW_UNSAFE_LOCAL_FALLBACK, value)])
                    .allow_unsafe_local_fallback,
                "{value:?} must not enable the fallback"
            );
        }
    }

    #[test]
    fn paths_and_cgroup_switch() {
        let config = config_with(&[
            (ENV_BWRAP, "/opt/bwrap"),
            (ENV_SCRATCH_DIR, "/var/tmp/x"),
            (ENV_CGROUPS, "0"),
        ]);
        assert_eq!(config.bwrap_path, Some(PathBuf::from("/opt/bwrap")));
        assert_eq!(config.scratch_root, PathBuf::from("/var/tmp/x"));
        assert!(!config.use_cgroups);
        assert!(config_with(&[]).use_cgroups);
    }

    #[test]
    fn no_environment_leaves_the_process_limit_unenforced() {
        let every_variable = [
            (ENV_ALLOW_UNSAFE_LOCAL_FALLBACK, "1"),
            (ENV_BWRAP, "/opt/bwrap"),
            (ENV_SCRATCH_DIR, "/var/tmp/x"),
            (ENV_CGROUP_PARENT, "/sys/fs/cgroup/x"),
            (ENV_CGROUPS, "0"),
        ];
        assert!(!config_with(&every_variable).leave_process_limit_unenforced_for_tests);
        assert!(!SandboxConfig::default().leave_process_limit_unenforced_for_tests);
    }
}
