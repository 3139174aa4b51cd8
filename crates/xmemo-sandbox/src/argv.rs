//! The bubblewrap command line (pure), and the host layout it mirrors.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::shape::{SHM_BYTES, TMP_BYTES};

/// Where the run's files appear inside the sandbox (read-only, the working directory).
pub const SANDBOX_SKILL_DIR: &str = "/skill";
/// Hostname inside the sandbox.
pub const SANDBOX_HOSTNAME: &str = "xmemo-sandbox";

/// Files of the host's `/etc` made visible (read-only, if present): the dynamic loader cache
/// and Debian's alternatives symlink farm (`/usr/bin/awk -> /etc/alternatives/awk`). Nothing
/// else of `/etc` (no shadow, no resolv.conf, no hosts).
pub const ETC_ALLOWLIST: &[&str] = &["/etc/ld.so.cache", "/etc/alternatives"];

/// A top-level entry mirrored from the host root besides `/usr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootEntry {
    /// `/name` is a symlink to `target` (merged-/usr: `/bin -> usr/bin`).
    Symlink {
        /// `/bin`, `/lib`, ...
        path: String,
        /// `usr/bin`, ...
        target: String,
    },
    /// `/name` is a real directory (non-merged-/usr hosts), bound read-only.
    Directory(String),
}

/// What of the host root the sandbox mirrors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostLayout {
    /// `/bin`, `/lib`, `/lib64`, `/sbin`, `/lib32`, `/libx32` as found on the host.
    pub root_entries: Vec<RootEntry>,
}

/// Candidates for [`HostLayout::root_entries`].
const ROOT_CANDIDATES: &[&str] = &["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

impl HostLayout {
    /// Inspects the host root. Symlinks are recreated only when they point into `/usr`
    /// (relative `usr/...` or absolute `/usr/...`); real directories are bound read-only.
    pub fn detect() -> Self {
        let mut root_entries = Vec::new();
        for path in ROOT_CANDIDATES {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                if let Ok(target) = std::fs::read_link(path) {
                    let target = target.to_string_lossy().into_owned();
                    if target.starts_with("usr/") || target.starts_with("/usr/") {
                        root_entries.push(RootEntry::Symlink {
                            path: (*path).to_owned(),
                            target,
                        });
                    }
                }
            } else if meta.is_dir() {
                root_entries.push(RootEntry::Directory((*path).to_owned()));
            }
        }
        Self { root_entries }
    }
}

/// Everything the bwrap command line depends on.
#[derive(Debug, Clone)]
pub struct BwrapInvocation<'a> {
    /// Host layout to mirror.
    pub layout: &'a HostLayout,
    /// Host directory with the run's files (bound read-only at [`SANDBOX_SKILL_DIR`]).
    pub skill_dir: &'a Path,
    /// Host file bound at `/etc/passwd`.
    pub passwd: &'a Path,
    /// Host file bound at `/etc/group`.
    pub group: &'a Path,
    /// fd (in bwrap) of the seccomp program.
    pub seccomp_fd: i32,
    /// fd (in bwrap) where bwrap writes its JSON status.
    pub json_status_fd: i32,
    /// Environment of the sandboxed command (everything else is cleared).
    pub env: &'a [(String, String)],
    /// The command (argv) run inside.
    pub command: &'a [String],
}

/// Hermetic environment of a sandboxed process.
pub fn sandbox_env(execution_id: &str, home: &str) -> Vec<(String, String)> {
    [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", home),
        ("TMPDIR", home),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONNOUSERSITE", "1"),
        ("PYTHONUNBUFFERED", "1"),
        ("USER", "sandbox"),
        ("LOGNAME", "sandbox"),
        ("XMEMO_EXECUTION_ID", execution_id),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn push(args: &mut Vec<OsString>, items: &[&str]) {
    args.extend(items.iter().map(OsString::from));
}

/// Builds bwrap's arguments (without the program name) for `invocation` (pure).
pub fn build_bwrap_args(invocation: &BwrapInvocation<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    // Namespaces: user, pid, net, ipc, uts, cgroup; no nested user namespaces.
    push(
        &mut args,
        &[
            "--unshare-all",
            "--unshare-user",
            "--unshare-cgroup",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            SANDBOX_HOSTNAME,
            "--clearenv",
        ],
    );
    for (key, value) in invocation.env {
        push(&mut args, &["--setenv", key, value]);
    }
    // Filesystem: only /usr (+ the root symlinks into it), read-only.
    push(&mut args, &["--ro-bind", "/usr", "/usr"]);
    for entry in &invocation.layout.root_entries {
        match entry {
            RootEntry::Symlink { path, target } => push(&mut args, &["--symlink", target, path]),
            RootEntry::Directory(path) => push(&mut args, &["--ro-bind", path, path]),
        }
    }
    for path in ETC_ALLOWLIST {
        push(&mut args, &["--ro-bind-try", path, path]);
    }
    args.push("--ro-bind".into());
    args.push(invocation.passwd.into());
    args.push("/etc/passwd".into());
    args.push("--ro-bind".into());
    args.push(invocation.group.into());
    args.push("/etc/group".into());
    // Fresh /proc with /proc/sys read-only; minimal /dev (read-only) with a small /dev/shm.
    push(
        &mut args,
        &["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"],
    );
    let shm = SHM_BYTES.to_string();
    let tmp = TMP_BYTES.to_string();
    push(
        &mut args,
        &[
            "--dev",
            "/dev",
            "--size",
            &shm,
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
            "--size",
            &tmp,
            "--tmpfs",
            "/tmp",
        ],
    );
    // The run's files, read-only, as the working directory.
    args.push("--ro-bind".into());
    args.push(invocation.skill_dir.into());
    args.push(SANDBOX_SKILL_DIR.into());
    // The root tmpfs bwrap builds is writable by default: freeze it.
    push(
        &mut args,
        &["--remount-ro", "/", "--chdir", SANDBOX_SKILL_DIR],
    );
    let seccomp = invocation.seccomp_fd.to_string();
    let status = invocation.json_status_fd.to_string();
    push(
        &mut args,
        &["--seccomp", &seccomp, "--json-status-fd", &status, "--"],
    );
    args.extend(invocation.command.iter().map(OsString::from));
    args
}

/// Path of `name` found in the `PATH` directories given (first executable regular file).
pub fn search_path(name: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged_usr() -> HostLayout {
        HostLayout {
            root_entries: vec![
                RootEntry::Symlink {
                    path: "/bin".into(),
                    target: "usr/bin".into(),
                },
                RootEntry::Symlink {
                    path: "/lib64".into(),
                    target: "usr/lib64".into(),
                },
            ],
        }
    }

    fn build(command: &[String]) -> Vec<String> {
        let layout = merged_usr();
        let env = sandbox_env("exec_1", "/tmp");
        let invocation = BwrapInvocation {
            layout: &layout,
            skill_dir: Path::new("/tmp/xmemo-run-a/skill"),
            passwd: Path::new("/tmp/xmemo-run-a/etc/passwd"),
            group: Path::new("/tmp/xmemo-run-a/etc/group"),
            seccomp_fd: 7,
            json_status_fd: 9,
            env: &env,
            command,
        };
        build_bwrap_args(&invocation)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn position(args: &[String], window: &[&str]) -> Option<usize> {
        args.windows(window.len())
            .position(|w| w.iter().zip(window).all(|(a, b)| a == b))
    }

    #[test]
    fn isolation_flags_present() {
        let args = build(&["python3".into(), "/skill/main.py".into()]);
        for flag in [
            "--unshare-all",
            "--unshare-user",
            "--unshare-cgroup",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ] {
            assert!(args.iter().any(|a| a == flag), "missing {flag}");
        }
        assert!(position(&args, &["--cap-drop", "ALL"]).is_some());
        assert!(position(&args, &["--seccomp", "7"]).is_some());
        assert!(position(&args, &["--json-status-fd", "9"]).is_some());
        assert!(position(&args, &["--size", "67108864", "--tmpfs", "/tmp"]).is_some());
        assert!(position(&args, &["--chdir", "/skill"]).is_some());
    }

    #[test]
    fn only_usr_and_allowlisted_etc_visible() {
        let args = build(&["bash".into(), "/skill/a.sh".into()]);
        assert!(position(&args, &["--ro-bind", "/usr", "/usr"]).is_some());
        assert!(position(&args, &["--symlink", "usr/bin", "/bin"]).is_some());
        assert!(position(&args, &["--symlink", "usr/lib64", "/lib64"]).is_some());
        assert!(
            position(&args, &["--ro-bind", "/tmp/xmemo-run-a/skill", "/skill"]).is_some(),
            "skill dir read-only"
        );
        assert!(position(&args, &["--ro-bind", "/", "/"]).is_none());
        assert!(position(&args, &["--bind", "/", "/"]).is_none());
        assert!(!args.iter().any(|a| a == "/etc" || a == "/etc/shadow"));
        assert!(
            !args.iter().any(|a| a == "--bind" || a == "--dev-bind"),
            "no writable binds"
        );
        assert!(!args.iter().any(|a| a == "--share-net"));
    }

    #[test]
    fn proc_sys_read_only_after_proc_and_root_frozen_last() {
        let args = build(&["true".into()]);
        let proc = position(&args, &["--proc", "/proc"]).expect("proc");
        let sys = position(&args, &["--ro-bind", "/proc/sys", "/proc/sys"]).expect("sys");
        assert!(proc < sys);
        let dev = position(&args, &["--dev", "/dev"]).expect("dev");
        let dev_ro = position(&args, &["--remount-ro", "/dev"]).expect("dev ro");
        assert!(dev < dev_ro);
        let root_ro = position(&args, &["--remount-ro", "/"]).expect("root ro");
        let skill =
            position(&args, &["--ro-bind", "/tmp/xmemo-run-a/skill", "/skill"]).expect("skill");
        let tmp = position(&args, &["--tmpfs", "/tmp"]).expect("tmp");
        assert!(root_ro > skill && root_ro > tmp && root_ro > sys);
    }

    #[test]
    fn environment_is_allowlisted_and_command_last() {
        let args = build(&["python3".into(), "/skill/main.py".into()]);
        let setenv: Vec<&str> = args
            .iter()
            .enumerate()
            .filter(|(_, a)| *a == "--setenv")
            .map(|(i, _)| args[i + 1].as_str())
            .collect();
        assert!(setenv.contains(&"PATH") && setenv.contains(&"HOME"));
        assert!(setenv.contains(&"PYTHONDONTWRITEBYTECODE"));
        let clear = position(&args, &["--clearenv"]).expect("clearenv");
        let first_set = position(&args, &["--setenv"]).expect("setenv");
        assert!(clear < first_set);
        let dashdash = args.iter().position(|a| a == "--").expect("--");
        assert_eq!(&args[dashdash + 1..], &["python3", "/skill/main.py"]);
    }

    #[test]
    fn non_merged_usr_binds_directories() {
        let layout = HostLayout {
            root_entries: vec![RootEntry::Directory("/lib".into())],
        };
        let env = Vec::new();
        let command = vec!["true".to_owned()];
        let args: Vec<String> = build_bwrap_args(&BwrapInvocation {
            layout: &layout,
            skill_dir: Path::new("/s"),
            passwd: Path::new("/p"),
            group: Path::new("/g"),
            seccomp_fd: 3,
            json_status_fd: 4,
            env: &env,
            command: &command,
        })
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
        assert!(position(&args, &["--ro-bind", "/lib", "/lib"]).is_some());
    }

    #[test]
    fn path_search() {
        let found = search_path(
            "sh",
            Some(std::ffi::OsStr::new("/nonexistent:/usr/bin:/bin")),
        );
        assert!(found.is_some_and(|p| p.ends_with("sh")));
        assert!(
            search_path(
                "definitely-not-here-xyz",
                Some(std::ffi::OsStr::new("/usr/bin"))
            )
            .is_none()
        );
        assert!(search_path("sh", None).is_none());
        assert_eq!(search_path("/x/y", None), Some(PathBuf::from("/x/y")));
    }
}
