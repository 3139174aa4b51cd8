//! Start-up checks of bubblewrap: find it, read its version, check the flags the engine uses,
//! and (in the engine) run a real sandbox with the real flag set and a self-check script.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::argv::search_path;
use crate::{RunOutcome, RunStatus, SandboxConfig};

/// Flags of bwrap the engine relies on (bubblewrap >= 0.8.0 has them all).
pub const REQUIRED_FLAGS: &[&str] = &[
    "--unshare-all",
    "--unshare-user",
    "--unshare-cgroup",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "--clearenv",
    "--setenv",
    "--ro-bind",
    "--ro-bind-try",
    "--symlink",
    "--proc",
    "--dev",
    "--tmpfs",
    "--size",
    "--remount-ro",
    "--chdir",
    "--hostname",
    "--seccomp",
    "--json-status-fd",
];

/// How long `bwrap --version` / `--help` may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Marker the probe script prints when every check passed.
pub const PROBE_MARKER: &str = "xmemo-sandbox-probe-ok";

/// Self-check run inside a real sandbox at start-up (POSIX sh, builtins only). It fails unless
/// the isolation the engine promises is in place.
pub const PROBE_SCRIPT: &str = r#"#!/bin/sh
fail() { echo "probe: $1" >&2; exit 1; }
( : > /skill/.probe ) 2>/dev/null && fail "/skill is writable"
( : > /usr/.probe ) 2>/dev/null && fail "/usr is writable"
( : > /.probe ) 2>/dev/null && fail "/ is writable"
( : > /tmp/.probe ) 2>/dev/null || fail "/tmp is not writable"
( : >> /proc/sys/kernel/hostname ) 2>/dev/null && fail "/proc/sys is writable"
[ -e /etc/shadow ] && fail "/etc/shadow is visible"
[ -e /home ] && fail "/home is visible"
nnp=""; sc=""; uid=""
while IFS= read -r line; do
  case "$line" in
    NoNewPrivs:*) nnp=${line#NoNewPrivs:} ;;
    Seccomp:*) sc=${line#Seccomp:} ;;
    Uid:*) set -- ${line#Uid:}; uid=$1 ;;
  esac
done < /proc/self/status
[ $nnp = 1 ] || fail "no_new_privs is not set"
[ $sc = 2 ] || fail "no seccomp filter"
[ "$uid" != 0 ] || fail "running as uid 0"
while IFS= read -r line; do
  case "$line" in
    *lo:*|*Inter-*|*face*) ;;
    *:*) fail "a network interface other than lo exists: $line" ;;
  esac
done < /proc/net/dev
echo xmemo-sandbox-probe-ok
"#;

/// Where bwrap is: the configured path, or the first `bwrap` on `PATH`.
pub fn locate(config: &SandboxConfig) -> Result<PathBuf, String> {
    match &config.bwrap_path {
        Some(path) => {
            if path.is_file() {
                Ok(path.clone())
            } else {
                Err(format!(
                    "bwrap not found at {} (install bubblewrap)",
                    path.display()
                ))
            }
        }
        None => search_path("bwrap", std::env::var_os("PATH").as_deref())
            .ok_or_else(|| "bwrap not found on PATH (install bubblewrap)".to_owned()),
    }
}

/// `bubblewrap 0.8.0` → `0.8.0` (pure).
pub fn parse_version(output: &str) -> Option<String> {
    let version = output.trim().strip_prefix("bubblewrap")?.trim();
    (!version.is_empty() && version.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .then(|| version.to_owned())
}

/// Flags of [`REQUIRED_FLAGS`] absent from `bwrap --help` (pure).
pub fn missing_flags(help: &str) -> Vec<&'static str> {
    let words: std::collections::BTreeSet<&str> = help.split_whitespace().collect();
    REQUIRED_FLAGS
        .iter()
        .copied()
        .filter(|flag| !words.contains(flag))
        .collect()
}

async fn query(bwrap: &Path, arg: &str) -> Result<String, String> {
    let mut command = tokio::process::Command::new(bwrap);
    command
        .arg(arg)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(QUERY_TIMEOUT, command.output())
        .await
        .map_err(|_| format!("`{} {arg}` timed out", bwrap.display()))?
        .map_err(|e| format!("`{} {arg}` failed to run: {e}", bwrap.display()))?;
    if !output.status.success() {
        return Err(format!(
            "`{} {arg}` exited with {}: {}",
            bwrap.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Version of `bwrap`, after checking that it offers every flag the engine uses.
pub async fn check_binary(bwrap: &Path) -> Result<String, String> {
    let version_output = query(bwrap, "--version").await?;
    let version = parse_version(&version_output).ok_or_else(|| {
        format!(
            "unexpected `bwrap --version` output: {:?}",
            version_output.trim()
        )
    })?;
    let help = query(bwrap, "--help").await?;
    let missing = missing_flags(&help);
    if !missing.is_empty() {
        return Err(format!(
            "bubblewrap {version} lacks {} (0.8.0 or later is needed)",
            missing.join(", ")
        ));
    }
    Ok(version)
}

/// Judges the outcome of the self-check run (pure).
pub fn judge_probe_run(outcome: &RunOutcome) -> Result<(), String> {
    if outcome.status == RunStatus::Success && outcome.stdout.trim() == PROBE_MARKER {
        return Ok(());
    }
    let stderr: String = outcome.stderr.trim().chars().take(500).collect();
    Err(format!(
        "namespace probe failed ({:?}, exit {:?}): {}",
        outcome.status, outcome.exit_code, stderr
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some("0.8.0".into()));
        assert_eq!(parse_version("bubblewrap\n"), None);
        assert_eq!(parse_version("something else"), None);
    }

    #[test]
    fn flags() {
        let help = REQUIRED_FLAGS.join(" FD\n    ");
        assert!(missing_flags(&help).is_empty());
        let old = help.replace("--disable-userns", "--other");
        assert_eq!(missing_flags(&old), vec!["--disable-userns"]);
    }

    #[test]
    fn locate_configured_missing() {
        let config = SandboxConfig {
            bwrap_path: Some(PathBuf::from("/nonexistent/bwrap")),
            ..SandboxConfig::default()
        };
        let error = locate(&config).expect_err("missing");
        assert!(error.contains("/nonexistent/bwrap"));
    }

    #[test]
    fn probe_script_marker_matches() {
        assert!(PROBE_SCRIPT.contains(PROBE_MARKER));
        assert!(PROBE_SCRIPT.starts_with("#!/bin/sh\n"));
    }
}
