//! The unsafe local fallback: the script runs as a plain host process.
//!
//! Only when `XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1` and bubblewrap is unavailable. What
//! still applies: the run's own uid when the server is root, cgroups when writable, rlimits,
//! the seccomp filter with no_new_privs, the watchdog, output caps, a cleared environment, and
//! a private scratch directory as working directory and HOME. What does not: no namespaces —
//! the script sees the host filesystem (whatever its uid may read), the network, other
//! processes; it must not serve multi-tenant production.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::argv::sandbox_env;
use crate::runner::{ChildSetup, Launch};
use crate::runtime::Runtime;
use crate::scratch::ScratchDir;

/// The warning logged for every fallback run.
pub const WARNING: &str = "UNSAFE LOCAL SANDBOX FALLBACK: running a script as a plain host \
process without namespaces (XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1). This must not \
serve multi-tenant production.";

/// Builds the local launch of `entry` from `scratch`.
pub fn launch(
    scratch: &ScratchDir,
    entry: &str,
    runtime: &Runtime,
    execution_id: &str,
    setup: ChildSetup,
) -> Launch {
    let skill = scratch.skill_dir();
    let script = skill.join(entry);
    let home = scratch.tmp_dir();
    let argv = runtime.argv(&script.to_string_lossy());
    let env = sandbox_env(execution_id, &home.to_string_lossy());
    let mut argv = argv.into_iter().map(OsString::from);
    let program = argv.next().unwrap_or_else(|| OsString::from("python3"));
    Launch {
        program,
        args: argv.collect(),
        env,
        cwd: PathBuf::from(&skill),
        setup,
        status_reader: None,
        passed_fds: Vec::new(),
    }
}
