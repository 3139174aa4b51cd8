//! The engine: cached probe state, and one run from request to outcome.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;

use crate::argv::{BwrapInvocation, HostLayout, SANDBOX_SKILL_DIR, build_bwrap_args, sandbox_env};
use crate::cgroup::{CgroupSupport, Controller, RunCgroup};
use crate::classify::{self, Facts};
use crate::limits::{self, Capabilities};
use crate::runner::{self, ChildSetup, Launch};
use crate::runtime::{Runtime, runtime_for};
use crate::scratch::ScratchDir;
use crate::seccomp::SeccompProgram;
use crate::uid::{UidLease, UidPool};
use crate::{
    ExecutionLimits, Isolation, Mechanism, ResourceFigures, RunOutcome, RunRequest, SandboxConfig,
    SandboxError, SandboxFile, fallback, probe,
};

/// What the engine found at its last probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxState {
    /// bubblewrap passed the probe: runs are isolated.
    pub available: bool,
    /// Isolation runs get now (`unsafe_local` only when unavailable and the fallback is on).
    pub isolation: Isolation,
    /// Why it is (un)available.
    pub reason: String,
    /// `0.8.0`.
    pub bwrap_version: Option<String>,
    /// Path of the bwrap binary probed.
    pub bwrap_path: Option<String>,
    /// Runs are accepted (available, or the unsafe fallback is enabled).
    pub runnable: bool,
    /// `cgroup_v1: memory,pids,cpu`, or `None` when limits rely on rlimits.
    pub cgroups: Option<String>,
    /// Each run gets a uid of its own (the server runs as root).
    pub dedicated_uids: bool,
    /// The seccomp filter compiled for this architecture.
    pub seccomp: bool,
}

#[derive(Debug)]
struct Probed {
    state: SandboxState,
    bwrap: Option<PathBuf>,
    layout: HostLayout,
    cgroups: Option<CgroupSupport>,
    /// `prlimit` to set RLIMIT_NPROC inside the sandbox's user namespace (server not root,
    /// Linux >= 5.14).
    nproc_helper: Option<PathBuf>,
}

/// Host path of util-linux `prlimit` (visible inside the sandbox since /usr is).
const PRLIMIT: &str = "/usr/bin/prlimit";

fn namespaced_nproc_helper() -> Option<PathBuf> {
    if is_root() {
        return None;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    if !limits::kernel_counts_nproc_per_userns(release.trim()) {
        return None;
    }
    let path = PathBuf::from(PRLIMIT);
    path.is_file().then_some(path)
}

struct Inner {
    config: SandboxConfig,
    seccomp: Result<SeccompProgram, String>,
    uids: Option<UidPool>,
    probed: RwLock<Arc<Probed>>,
    reprobe: tokio::sync::Mutex<()>,
    /// `true` once a probe has finished: runs wait for it (see [`SandboxEngine::start`]).
    probed_once: tokio::sync::watch::Sender<bool>,
}

/// Runs entry files under bubblewrap (or, if allowed, the unsafe local fallback). Cheap to
/// clone; all clones share the probe state.
#[derive(Clone)]
pub struct SandboxEngine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SandboxEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxEngine")
            .field("state", &self.state())
            .finish()
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl SandboxEngine {
    /// Builds the engine and runs the start-up probe once (result cached, see
    /// [`SandboxEngine::state`]). Never fails: an unusable sandbox is reported by the state and
    /// by [`SandboxError::Unavailable`] on every run.
    pub async fn new(config: SandboxConfig) -> Self {
        let engine = Self::unprobed(config);
        engine.reprobe().await;
        engine
    }

    /// Builds the engine and starts the start-up probe in the background, so a server can
    /// listen while it runs (it spawns bubblewrap a few times: tens of milliseconds). Until it
    /// finishes, [`SandboxEngine::state`] says so and a run waits for it; its result is
    /// cached as with [`SandboxEngine::new`]. Needs a Tokio runtime.
    pub fn start(config: SandboxConfig) -> Self {
        let engine = Self::unprobed(config);
        let probing = engine.clone();
        tokio::spawn(async move {
            probing.reprobe().await;
        });
        engine
    }

    /// The state once the first probe has finished (at once for [`SandboxEngine::new`]).
    pub async fn probed(&self) -> SandboxState {
        let mut done = self.inner.probed_once.subscribe();
        // The sender lives in `inner`, which `self` holds: the wait cannot fail.
        let _ = done.wait_for(|finished| *finished).await;
        self.state()
    }

    fn unprobed(config: SandboxConfig) -> Self {
        let seccomp = SeccompProgram::build();
        let uids = is_root()
            .then(|| UidPool::new(config.uid_base, config.uid_count, &config.scratch_root));
        let placeholder = Probed {
            state: SandboxState {
                available: false,
                isolation: Isolation::Bubblewrap,
                reason: "the start-up probe has not finished yet".to_owned(),
                bwrap_version: None,
                bwrap_path: None,
                runnable: false,
                cgroups: None,
                dedicated_uids: uids.is_some(),
                seccomp: seccomp.is_ok(),
            },
            bwrap: None,
            layout: HostLayout::default(),
            cgroups: None,
            nproc_helper: None,
        };
        Self {
            inner: Arc::new(Inner {
                config,
                seccomp,
                uids,
                probed: RwLock::new(Arc::new(placeholder)),
                reprobe: tokio::sync::Mutex::new(()),
                probed_once: tokio::sync::watch::Sender::new(false),
            }),
        }
    }

    fn snapshot(&self) -> Arc<Probed> {
        match self.inner.probed.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The cached probe result.
    pub fn state(&self) -> SandboxState {
        self.snapshot().state.clone()
    }

    /// The configuration in use.
    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// Probes again (bwrap, flags, cgroups, a real namespace run) and caches the answer.
    pub async fn reprobe(&self) -> SandboxState {
        let _guard = self.inner.reprobe.lock().await;
        let probed = Arc::new(probe_now(&self.inner).await);
        let state = probed.state.clone();
        match self.inner.probed.write() {
            Ok(mut guard) => *guard = probed,
            Err(poisoned) => *poisoned.into_inner() = probed,
        }
        self.inner.probed_once.send_replace(true);
        if state.available {
            tracing::info!(
                bwrap_version = state.bwrap_version.as_deref().unwrap_or("?"),
                cgroups = state.cgroups.as_deref().unwrap_or("none (rlimits)"),
                dedicated_uids = state.dedicated_uids,
                "sandbox available: {}",
                state.reason
            );
        } else if self.inner.config.allow_unsafe_local_fallback {
            tracing::warn!(reason = %state.reason, "sandbox unavailable; {}", fallback::WARNING);
        } else {
            tracing::warn!(reason = %state.reason, "sandbox unavailable: executions are refused (fail closed)");
        }
        state
    }

    /// Runs `req`. Fails closed with [`SandboxError::Unavailable`] when bubblewrap is not
    /// usable and the fallback is off. The run continues to completion (and cleans up) even if
    /// the returned future is dropped.
    pub async fn run(&self, req: RunRequest) -> Result<RunOutcome, SandboxError> {
        let entry_bytes = req.validate()?;
        let runtime = runtime_for(&req.entry, &entry_bytes[..entry_bytes.len().min(256)]);
        self.probed().await;
        let probed = self.snapshot();
        let isolation = if probed.state.available {
            Isolation::Bubblewrap
        } else if self.inner.config.allow_unsafe_local_fallback {
            tracing::warn!(reason = %probed.state.reason, "{}", fallback::WARNING);
            Isolation::UnsafeLocal
        } else {
            tracing::warn!(reason = %probed.state.reason, "execution refused: sandbox unavailable");
            return Err(SandboxError::Unavailable {
                reason: probed.state.reason.clone(),
            });
        };
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move { execute(&inner, &probed, isolation, req, runtime).await })
            .await
            .map_err(|e| SandboxError::Io(std::io::Error::other(format!("run task failed: {e}"))))?
    }
}

fn unavailable(
    inner: &Inner,
    reason: String,
    bwrap: Option<PathBuf>,
    version: Option<String>,
    layout: HostLayout,
    cgroups: Option<CgroupSupport>,
) -> Probed {
    let fallback = inner.config.allow_unsafe_local_fallback;
    Probed {
        state: SandboxState {
            available: false,
            isolation: if fallback {
                Isolation::UnsafeLocal
            } else {
                Isolation::Bubblewrap
            },
            reason,
            bwrap_version: version,
            bwrap_path: bwrap.as_ref().map(|p| p.display().to_string()),
            runnable: fallback,
            cgroups: cgroups.as_ref().map(CgroupSupport::describe),
            dedicated_uids: inner.uids.is_some(),
            seccomp: inner.seccomp.is_ok(),
        },
        bwrap,
        layout,
        cgroups,
        nproc_helper: None,
    }
}

async fn probe_now(inner: &Arc<Inner>) -> Probed {
    let config = &inner.config;
    let cgroups = if config.use_cgroups {
        let parent = config.cgroup_parent.clone();
        tokio::task::spawn_blocking(move || crate::cgroup::detect(parent.as_deref()))
            .await
            .ok()
            .flatten()
    } else {
        None
    };
    let layout = HostLayout::detect();
    let bwrap = match probe::locate(config) {
        Ok(path) => path,
        Err(reason) => return unavailable(inner, reason, None, None, layout, cgroups),
    };
    let version = match probe::check_binary(&bwrap).await {
        Ok(version) => version,
        Err(reason) => return unavailable(inner, reason, Some(bwrap), None, layout, cgroups),
    };
    if let Err(reason) = &inner.seccomp {
        return unavailable(
            inner,
            reason.clone(),
            Some(bwrap),
            Some(version),
            layout,
            cgroups,
        );
    }
    let candidate = Probed {
        state: SandboxState {
            available: true,
            isolation: Isolation::Bubblewrap,
            reason: String::new(),
            bwrap_version: Some(version.clone()),
            bwrap_path: Some(bwrap.display().to_string()),
            runnable: true,
            cgroups: cgroups.as_ref().map(CgroupSupport::describe),
            dedicated_uids: inner.uids.is_some(),
            seccomp: true,
        },
        bwrap: Some(bwrap.clone()),
        layout: layout.clone(),
        cgroups: cgroups.clone(),
        nproc_helper: namespaced_nproc_helper(),
    };
    let request = RunRequest {
        files: vec![SandboxFile {
            path: "probe".to_owned(),
            bytes: probe::PROBE_SCRIPT.as_bytes().to_vec(),
        }],
        entry: "probe".to_owned(),
        stdin: Vec::new(),
        limits: ExecutionLimits {
            timeout: Duration::from_secs(15),
            ..ExecutionLimits::default()
        },
    };
    let runtime = runtime_for("probe", probe::PROBE_SCRIPT.as_bytes());
    let verdict = match execute(inner, &candidate, Isolation::Bubblewrap, request, runtime).await {
        Ok(outcome) => probe::judge_probe_run(&outcome),
        Err(error) => Err(format!("namespace probe could not run: {error}")),
    };
    match verdict {
        Ok(()) => {
            let mut probed = candidate;
            probed.state.reason = format!(
                "bubblewrap {version} at {} passed the namespace probe",
                bwrap.display()
            );
            probed
        }
        Err(reason) => unavailable(inner, reason, Some(bwrap), Some(version), layout, cgroups),
    }
}

fn new_execution_id() -> String {
    format!("exec_{}", uuid::Uuid::now_v7().simple())
}

fn blocking_err(error: tokio::task::JoinError) -> SandboxError {
    SandboxError::Io(std::io::Error::other(format!(
        "blocking task failed: {error}"
    )))
}

fn ms(tv: libc::timeval) -> u64 {
    (tv.tv_sec.max(0) as u64) * 1000 + (tv.tv_usec.max(0) as u64) / 1000
}

/// One run, start to finish: uid, scratch, cgroup, launch, watchdog, cleanup, classification.
async fn execute(
    inner: &Arc<Inner>,
    probed: &Probed,
    isolation: Isolation,
    req: RunRequest,
    runtime: Runtime,
) -> Result<RunOutcome, SandboxError> {
    let execution_id = new_execution_id();
    let RunRequest {
        files,
        entry,
        stdin,
        limits: run_limits,
    } = req;

    // Everything before the launch touches the filesystem: one trip to the blocking pool.
    let prepared = {
        let uids = inner.uids.clone();
        let scratch_root = inner.config.scratch_root.clone();
        let with_tmp = isolation == Isolation::UnsafeLocal;
        let leave_pids_out = inner.config.leave_process_limit_unenforced_for_tests;
        let support = probed.cgroups.clone().map(|support| CgroupSupport {
            pids: support.pids.filter(|_| !leave_pids_out),
            ..support
        });
        let execution_id = execution_id.clone();
        let run_limits = run_limits.clone();
        tokio::task::spawn_blocking(move || {
            prepare(
                uids,
                &scratch_root,
                &files,
                with_tmp,
                support,
                &execution_id,
                &run_limits,
            )
        })
        .await
        .map_err(blocking_err)??
    };
    let Prepared {
        lease,
        scratch,
        cgroup,
    } = prepared;
    let ids = lease.as_ref().map(|l| (l.uid(), l.uid()));
    let lease = lease.map(Arc::new);
    let caps = Capabilities {
        cgroup_version: cgroup.as_ref().map(RunCgroup::version),
        cgroup_memory: cgroup
            .as_ref()
            .is_some_and(|c| c.enforces(Controller::Memory)),
        cgroup_pids: cgroup
            .as_ref()
            .is_some_and(|c| c.enforces(Controller::Pids)),
        cgroup_cpu: cgroup.as_ref().is_some_and(|c| c.enforces(Controller::Cpu)),
        dedicated_uid: lease.is_some(),
        seccomp: inner.seccomp.is_ok(),
        namespaced_nproc: lease.is_none() && probed.nproc_helper.is_some(),
    };
    let plan = limits::plan(&run_limits, caps, isolation);
    let plan = if inner.config.leave_process_limit_unenforced_for_tests {
        plan.without_process_limit()
    } else {
        plan
    };
    let setup = ChildSetup {
        cgroup_join: cgroup.as_ref().map(RunCgroup::join_fds).unwrap_or_default(),
        rlimits: plan.rlimits.clone(),
        ids,
        keep_fds: Vec::new(),
        seccomp: None,
    };

    let launch = match isolation {
        Isolation::Bubblewrap => {
            let mut command = runtime.argv(&format!("{SANDBOX_SKILL_DIR}/{entry}"));
            if let (Some(nproc), Some(helper)) = (plan.nproc_inside, &probed.nproc_helper) {
                let mut wrapped = vec![
                    helper.display().to_string(),
                    format!("--nproc={nproc}:{nproc}"),
                    "--".to_owned(),
                ];
                wrapped.append(&mut command);
                command = wrapped;
            }
            bwrap_launch(inner, probed, &scratch, &command, &execution_id, setup)?
        }
        Isolation::UnsafeLocal => {
            let mut setup = setup;
            setup.seccomp = inner
                .seccomp
                .as_ref()
                .ok()
                .map(SeccompProgram::instructions);
            fallback::launch(&scratch, &entry, &runtime, &execution_id, setup)
        }
    };

    let cgroup = cgroup.map(Arc::new);
    let sweep: Arc<dyn Fn() + Send + Sync> = {
        let cgroup = cgroup.clone();
        let lease = lease.clone();
        Arc::new(move || {
            let cgroup_empty = cgroup.as_ref().map(|cgroup| cgroup.kill_until_empty());
            // The last sweep runs after the run's process was reaped. Every other process of
            // the run joined the run's cgroups before exec and cannot leave them (the sandbox
            // sees no cgroupfs, and the cgroup files are root's), so cgroups that list no
            // member prove the uid has no live process: no `/proc` scan is needed, and the
            // lease may be reused. Without that proof the uid is swept through `/proc`.
            if let Some(lease) = &lease {
                if cgroup_empty == Some(true) {
                    lease.mark_clean();
                } else {
                    lease.reap();
                }
            }
        })
    };
    let finished = runner::run(
        launch,
        stdin,
        run_limits.timeout,
        run_limits.max_output_bytes,
        Arc::clone(&sweep),
    )
    .await;
    let stats = cgroup.as_ref().map(|c| c.stats()).unwrap_or_default();
    if let (Some(lease), Some(pid)) = (&lease, classify::bwrap_child_pid(&finished.status)) {
        lease.expect_exit_of(pid);
    }
    // Kill leftovers, remove the cgroups and the scratch directory, release the uid.
    tokio::task::spawn_blocking(move || {
        drop(sweep);
        drop(cgroup);
        drop(lease);
        drop(scratch);
    })
    .await
    .map_err(blocking_err)?;

    let bubblewrap = isolation == Isolation::Bubblewrap;
    let command_started = finished.spawn_error.is_none()
        && (!bubblewrap || classify::bwrap_exit_code(&finished.status).is_some());
    let facts = Facts {
        exit: finished.exit,
        command_started,
        exec_failed: bubblewrap && classify::reports_exec_failure(&finished.stderr.bytes),
        timed_out: finished.timed_out,
        bubblewrap,
        oom_kills: stats.oom_kills,
        memory_peak_at_limit: plan.report.memory_bytes.enforced_by != Mechanism::Rlimit
            && stats
                .memory_peak
                .is_some_and(|peak| peak.saturating_add(1 << 20) >= run_limits.memory_bytes),
        memory_by_rlimit: plan.report.memory_bytes.enforced_by == Mechanism::Rlimit,
        memory_error_reported: classify::reports_memory_error(&finished.stderr.bytes),
    };
    let status = classify::classify(&facts);
    let (mut exit_code, signal) = classify::exit_parts(&facts);
    if !command_started && facts.exec_failed {
        exit_code = Some(127);
    }
    let cap = run_limits.max_output_bytes as u64;
    let stdout_truncated = finished.stdout.total > cap;
    let stderr_truncated = finished.stderr.total > cap;
    let output_data = if stdout_truncated {
        None
    } else {
        serde_json::from_slice(&finished.stdout.bytes).ok()
    };
    let mut stderr = String::from_utf8_lossy(&finished.stderr.bytes).into_owned();
    if let Some(error) = &finished.spawn_error {
        if !stderr.is_empty() {
            stderr.push('\n');
        }
        stderr.push_str(&format!("sandbox failed to start: {error}"));
    }
    // Under bubblewrap, wait4's rusage covers only bwrap's supervisors (the script is reaped
    // inside the PID namespace), so CPU figures come from the cgroup; the fallback's rusage
    // covers the script and its reaped descendants.
    let rusage = if bubblewrap { None } else { finished.rusage };
    let resources = ResourceFigures {
        cpu_user_ms: stats
            .cpu_user_us
            .map(|us| us / 1000)
            .or_else(|| rusage.map(|r| ms(r.ru_utime))),
        cpu_system_ms: stats
            .cpu_system_us
            .map(|us| us / 1000)
            .or_else(|| rusage.map(|r| ms(r.ru_stime))),
        max_rss_bytes: rusage.map(|r| (r.ru_maxrss.max(0) as u64).saturating_mul(1024)),
        memory_peak_bytes: stats.memory_peak,
        oom_kills: stats.oom_kills,
        pids_peak: stats.pids_peak,
        sandbox_uid: ids.map(|(uid, _)| uid),
    };
    let outcome = RunOutcome {
        execution_id,
        status,
        exit_code,
        signal,
        stdout: String::from_utf8_lossy(&finished.stdout.bytes).into_owned(),
        stderr,
        stdout_truncated,
        stderr_truncated,
        stdout_total_bytes: finished.stdout.total,
        stderr_total_bytes: finished.stderr.total,
        duration_ms: finished.duration.as_millis().min(u128::from(u64::MAX)) as u64,
        limits: plan.report,
        isolation,
        runtime: runtime.label(),
        resources,
        output_data,
    };
    tracing::info!(
        execution_id = %outcome.execution_id,
        status = ?outcome.status,
        exit_code = ?outcome.exit_code,
        duration_ms = outcome.duration_ms,
        isolation = ?outcome.isolation,
        runtime = %outcome.runtime,
        stdout_bytes = outcome.stdout_total_bytes,
        stderr_bytes = outcome.stderr_total_bytes,
        oom_kills = ?outcome.resources.oom_kills,
        "sandbox run finished"
    );
    Ok(outcome)
}

/// What a run needs before its launch.
struct Prepared {
    lease: Option<UidLease>,
    scratch: ScratchDir,
    cgroup: Option<RunCgroup>,
}

/// Claims the run's uid, writes its scratch directory and makes its cgroups (blocking).
fn prepare(
    uids: Option<UidPool>,
    scratch_root: &std::path::Path,
    files: &[SandboxFile],
    with_tmp: bool,
    support: Option<CgroupSupport>,
    execution_id: &str,
    run_limits: &ExecutionLimits,
) -> Result<Prepared, SandboxError> {
    let lease = match uids {
        Some(pool) => match pool.acquire()? {
            Some(lease) => Some(lease),
            None => {
                return Err(SandboxError::Busy(
                    "every sandbox uid is in use; retry later".to_owned(),
                ));
            }
        },
        None => None,
    };
    let ids = lease.as_ref().map(|l| (l.uid(), l.uid()));
    let scratch = ScratchDir::create(scratch_root, files, ids, with_tmp)?;
    let cgroup = support.as_ref().and_then(|support| {
        match RunCgroup::create(support, execution_id, run_limits) {
            Ok(cgroup) => Some(cgroup),
            Err(error) => {
                tracing::warn!(%execution_id, %error, "run cgroup setup failed; using rlimits");
                None
            }
        }
    });
    Ok(Prepared {
        lease,
        scratch,
        cgroup,
    })
}

fn bwrap_launch(
    inner: &Inner,
    probed: &Probed,
    scratch: &ScratchDir,
    command: &[String],
    execution_id: &str,
    mut setup: ChildSetup,
) -> Result<Launch, SandboxError> {
    let bwrap = probed
        .bwrap
        .clone()
        .ok_or_else(|| SandboxError::Unavailable {
            reason: "bwrap path unknown".to_owned(),
        })?;
    let seccomp = inner
        .seccomp
        .as_ref()
        .map_err(|reason| SandboxError::Unavailable {
            reason: reason.clone(),
        })?;
    let seccomp_fd = seccomp.to_memfd()?;
    let (status_reader, status_writer) = runner::cloexec_pipe()?;
    let env = sandbox_env(execution_id, "/tmp");
    let skill_dir = scratch.skill_dir();
    let passwd = scratch.passwd();
    let group = scratch.group();
    let args = build_bwrap_args(&BwrapInvocation {
        layout: &probed.layout,
        skill_dir: &skill_dir,
        passwd: &passwd,
        group: &group,
        seccomp_fd: seccomp_fd.as_raw_fd(),
        json_status_fd: status_writer.as_raw_fd(),
        env: &env,
        command,
    });
    setup.keep_fds = vec![seccomp_fd.as_raw_fd(), status_writer.as_raw_fd()];
    Ok(Launch {
        program: bwrap.into_os_string(),
        args,
        env: Vec::new(),
        cwd: PathBuf::from("/"),
        setup,
        status_reader: Some(status_reader),
        passed_fds: vec![seccomp_fd, status_writer],
    })
}
