//! cgroup v1/v2 detection and per-run cgroups (memory, pids, cpu).
//!
//! Per-run cgroups are created as children of the server's own cgroup (per controller on v1,
//! one directory on v2), named `xmemo-exec_<id>`, so the host's limits on the server still
//! apply above them. The sandboxed tree is moved in by the child itself (a `pre_exec` write of
//! `0` to the join files opened beforehand, see [`join_file`]) before it drops privileges.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::ExecutionLimits;
use crate::shape::SUPERVISOR_PROCESSES;

/// Prefix of per-run cgroup directory names.
pub const RUN_PREFIX: &str = "xmemo-";
/// CFS period used for the CPU quota (µs).
pub const CPU_PERIOD_US: u64 = 100_000;
/// Per-run cgroups older than this are considered leftovers of a crashed server.
const STALE_AFTER: Duration = Duration::from_secs(600);

/// cgroup version in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// Legacy hierarchies, one per controller.
    V1,
    /// Unified hierarchy.
    V2,
}

/// Controllers the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    /// Memory limit and OOM counting.
    Memory,
    /// Process/thread count.
    Pids,
    /// CPU bandwidth.
    Cpu,
    /// CPU accounting (v1 only; figures, no limit).
    Cpuacct,
}

impl Controller {
    const ALL: [Controller; 4] = [
        Controller::Memory,
        Controller::Pids,
        Controller::Cpu,
        Controller::Cpuacct,
    ];

    fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpu => "cpu",
            Controller::Cpuacct => "cpuacct",
        }
    }
}

/// Where per-run cgroups can be created, per controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupSupport {
    /// Version of the hierarchy the controllers below live in.
    pub version: CgroupVersion,
    /// Parent directory for memory cgroups.
    pub memory: Option<PathBuf>,
    /// Parent directory for pids cgroups.
    pub pids: Option<PathBuf>,
    /// Parent directory for cpu cgroups.
    pub cpu: Option<PathBuf>,
    /// Parent directory for cpuacct cgroups (v1; CPU time figures only).
    pub cpuacct: Option<PathBuf>,
}

impl CgroupSupport {
    fn parent(&self, controller: Controller) -> Option<&Path> {
        match controller {
            Controller::Memory => self.memory.as_deref(),
            Controller::Pids => self.pids.as_deref(),
            Controller::Cpu => self.cpu.as_deref(),
            Controller::Cpuacct => self.cpuacct.as_deref(),
        }
    }

    fn set(&mut self, controller: Controller, dir: Option<PathBuf>) {
        match controller {
            Controller::Memory => self.memory = dir,
            Controller::Pids => self.pids = dir,
            Controller::Cpu => self.cpu = dir,
            Controller::Cpuacct => self.cpuacct = dir,
        }
    }

    fn any(&self) -> bool {
        Controller::ALL.iter().any(|c| self.parent(*c).is_some())
    }

    /// `cgroup_v1: memory,pids,cpu` style summary.
    pub fn describe(&self) -> String {
        let version = match self.version {
            CgroupVersion::V1 => "cgroup_v1",
            CgroupVersion::V2 => "cgroup_v2",
        };
        let controllers: Vec<&str> = Controller::ALL
            .iter()
            .filter(|c| self.parent(**c).is_some())
            .map(|c| c.name())
            .collect();
        format!("{version}: {}", controllers.join(","))
    }

    /// Whether `controller` is usable.
    #[cfg(test)]
    pub fn has(&self, controller: Controller) -> bool {
        self.parent(controller).is_some()
    }
}

/// One line of /proc/self/mountinfo that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// Root of the mount inside its filesystem (the cgroup path mounted).
    pub root: String,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// `cgroup` or `cgroup2`.
    pub fstype: String,
    /// Super options (v1: the controllers).
    pub super_options: Vec<String>,
}

fn unescape_mount_field(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value =
                (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses the cgroup mounts out of /proc/self/mountinfo text (pure).
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    let mut mounts = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 3 {
            continue;
        }
        let fstype = right[0];
        if fstype != "cgroup" && fstype != "cgroup2" {
            continue;
        }
        mounts.push(MountEntry {
            root: unescape_mount_field(left[3]),
            mount_point: PathBuf::from(unescape_mount_field(left[4])),
            fstype: fstype.to_owned(),
            super_options: right[2].split(',').map(str::to_owned).collect(),
        });
    }
    mounts
}

/// One line of /proc/self/cgroup: controllers (empty for v2) and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcCgroup {
    /// Controllers of the hierarchy (`name=systemd` style entries included).
    pub controllers: Vec<String>,
    /// Path of the process's cgroup in that hierarchy.
    pub path: String,
}

/// Parses /proc/self/cgroup text (pure).
pub fn parse_proc_cgroup(text: &str) -> Vec<ProcCgroup> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            Some(ProcCgroup {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
                path: path.to_owned(),
            })
        })
        .collect()
}

/// Host directory of `cgroup_path` in a hierarchy mounted at `mount` whose mount root is
/// `mount_root` (pure). `None` when the cgroup is outside the mounted subtree.
pub fn cgroup_dir(mount: &MountEntry, cgroup_path: &str) -> Option<PathBuf> {
    let root = mount.root.trim_end_matches('/');
    let relative = if root.is_empty() {
        cgroup_path
    } else if cgroup_path == root {
        ""
    } else {
        let rest = cgroup_path.strip_prefix(root)?;
        if !rest.starts_with('/') {
            return None;
        }
        rest
    };
    let relative = relative.trim_start_matches('/');
    if relative.split('/').any(|c| c == "..") {
        return None;
    }
    Some(if relative.is_empty() {
        mount.mount_point.clone()
    } else {
        mount.mount_point.join(relative)
    })
}

/// Picks, per controller, the parent directory for per-run cgroups (pure). v1 hierarchies are
/// preferred for controllers they hold (hybrid hosts bind the controllers to v1); otherwise the
/// v2 directory is used for the controllers listed in its `cgroup.controllers`.
pub fn plan_support(
    mounts: &[MountEntry],
    proc_cgroups: &[ProcCgroup],
    v2_controllers: impl Fn(&Path) -> Vec<String>,
    v2_override: Option<&Path>,
) -> Option<CgroupSupport> {
    let mut v1 = CgroupSupport {
        version: CgroupVersion::V1,
        memory: None,
        pids: None,
        cpu: None,
        cpuacct: None,
    };
    let mut any_v1 = false;
    for controller in Controller::ALL {
        let name = controller.name();
        let Some(mount) = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.super_options.iter().any(|o| o == name))
        else {
            continue;
        };
        let Some(own) = proc_cgroups
            .iter()
            .find(|p| p.controllers.iter().any(|c| c == name))
        else {
            continue;
        };
        if let Some(dir) = cgroup_dir(mount, &own.path) {
            any_v1 |= controller != Controller::Cpuacct;
            v1.set(controller, Some(dir));
        }
    }
    if any_v1 {
        return Some(v1);
    }
    let parent = match v2_override {
        Some(dir) => dir.to_path_buf(),
        None => {
            let mount = mounts.iter().find(|m| m.fstype == "cgroup2")?;
            let own = proc_cgroups.iter().find(|p| p.controllers.is_empty())?;
            cgroup_dir(mount, &own.path)?
        }
    };
    let available = v2_controllers(&parent);
    let pick = |c: Controller| {
        available
            .iter()
            .any(|a| a == c.name())
            .then(|| parent.clone())
    };
    let support = CgroupSupport {
        version: CgroupVersion::V2,
        memory: pick(Controller::Memory),
        pids: pick(Controller::Pids),
        cpu: pick(Controller::Cpu),
        cpuacct: None,
    };
    support.any().then_some(support)
}

/// Controllers enabled for the children of a v2 directory (tries to enable missing ones).
fn v2_child_controllers(parent: &Path) -> Vec<String> {
    let read = || {
        fs::read_to_string(parent.join("cgroup.subtree_control"))
            .map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let mut enabled = read();
    let offered = fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    let mut changed = false;
    for controller in Controller::ALL {
        let name = controller.name();
        if !enabled.iter().any(|e| e == name) && offered.split_whitespace().any(|o| o == name) {
            // Fails with EBUSY when the parent holds processes; then the controller is unused.
            if fs::write(parent.join("cgroup.subtree_control"), format!("+{name}")).is_ok() {
                changed = true;
            }
        }
    }
    if changed {
        enabled = read();
    }
    enabled
}

/// Detects writable cgroup hierarchies for the current process. Verifies each parent by
/// creating (and removing) a probe child with a limit written; drops controllers that fail.
pub fn detect(v2_override: Option<&Path>) -> Option<CgroupSupport> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let proc_cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = parse_mountinfo(&mountinfo);
    let own = parse_proc_cgroup(&proc_cgroup);
    let mut support = plan_support(&mounts, &own, v2_child_controllers, v2_override)?;
    for controller in Controller::ALL {
        if let Some(parent) = support.parent(controller).map(Path::to_path_buf) {
            cleanup_stale(&parent, support.version);
            if let Err(error) = verify_writable(&parent, support.version, controller) {
                tracing::info!(
                    controller = controller.name(),
                    parent = %parent.display(),
                    %error,
                    "cgroup controller not usable; falling back to rlimits for it"
                );
                support.set(controller, None);
            }
        }
    }
    support.any().then_some(support)
}

fn verify_writable(
    parent: &Path,
    version: CgroupVersion,
    controller: Controller,
) -> io::Result<()> {
    let dir = parent.join(format!(
        "{RUN_PREFIX}probe-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    fs::create_dir(&dir)?;
    let limits = ExecutionLimits::default();
    let result = write_limit(&dir, version, controller, &limits).and_then(|()| {
        OpenOptions::new()
            .write(true)
            .open(dir.join(join_file(version)))
            .map(drop)
    });
    let removed = fs::remove_dir(&dir);
    result?;
    removed
}

/// Removes per-run cgroups left by a crashed server (older than 10 minutes, no processes).
fn cleanup_stale(parent: &Path, version: CgroupVersion) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(RUN_PREFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old {
            let path = entry.path();
            kill_members(&path, version);
            let _ = fs::remove_dir(&path);
        }
    }
}

fn write_limit(
    dir: &Path,
    version: CgroupVersion,
    controller: Controller,
    limits: &ExecutionLimits,
) -> io::Result<()> {
    let overhead = u64::from(SUPERVISOR_PROCESSES);
    let quota = u64::from(limits.cpu_millicores) * CPU_PERIOD_US / 1000;
    match (version, controller) {
        (CgroupVersion::V1, Controller::Memory) => {
            fs::write(
                dir.join("memory.limit_in_bytes"),
                limits.memory_bytes.to_string(),
            )?;
            // Also cap swap+memory when swap accounting exists (ignored otherwise).
            let _ = fs::write(
                dir.join("memory.memsw.limit_in_bytes"),
                limits.memory_bytes.to_string(),
            );
            Ok(())
        }
        (CgroupVersion::V1, Controller::Pids) | (CgroupVersion::V2, Controller::Pids) => fs::write(
            dir.join("pids.max"),
            (u64::from(limits.max_processes) + overhead).to_string(),
        ),
        (CgroupVersion::V1, Controller::Cpu) => {
            fs::write(dir.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
            fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())
        }
        (CgroupVersion::V2, Controller::Memory) => {
            fs::write(dir.join("memory.max"), limits.memory_bytes.to_string())?;
            let _ = fs::write(dir.join("memory.swap.max"), "0");
            Ok(())
        }
        (CgroupVersion::V2, Controller::Cpu) => {
            fs::write(dir.join("cpu.max"), format!("{quota} {CPU_PERIOD_US}"))
        }
        (_, Controller::Cpuacct) => Ok(()),
    }
}

/// The file a freshly forked child writes `0` to in order to move itself into a cgroup.
///
/// On v1 this is `tasks`, which moves only the calling thread: the child is single-threaded
/// between `fork` and `exec`, so that is the whole process, and its descendants inherit the
/// cgroup. Writing a pid to `cgroup.procs` moves a thread group, for which the kernel
/// write-locks the global `cgroup_threadgroup_rwsem`; that lock's writer side waits for an RCU
/// grace period when it was idle: 7–25 ms per run on the development host (Linux 6.18, runs
/// tens of milliseconds apart), against nothing measurable for `tasks`, whose migration of the
/// calling thread alone skips that lock on this kernel (an older kernel that takes it anyway
/// is no slower than `cgroup.procs`). v2 has no per-thread file for domain cgroups, so it keeps
/// `cgroup.procs`.
pub fn join_file(version: CgroupVersion) -> &'static str {
    match version {
        CgroupVersion::V1 => "tasks",
        CgroupVersion::V2 => "cgroup.procs",
    }
}

/// Reads the pids listed in `cgroup.procs` of `dir`.
fn members(dir: &Path) -> Vec<libc::pid_t> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// SIGKILLs every process of the cgroup at `dir`; returns how many were signalled.
fn kill_members(dir: &Path, version: CgroupVersion) -> usize {
    if version == CgroupVersion::V2 && fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return members(dir).len();
    }
    let pids = members(dir);
    for &pid in &pids {
        // Pinned, then checked to be a member still (a pid listed a moment ago may have been
        // reused by a process outside the run), then signalled through its pidfd.
        crate::pidfd::kill_if(pid, |p| members(dir).contains(&p));
    }
    pids.len()
}

/// Statistics read from a run's cgroups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupStats {
    /// OOM kills inside the memory cgroup.
    pub oom_kills: Option<u64>,
    /// Peak memory usage of the run.
    pub memory_peak: Option<u64>,
    /// Peak task count.
    pub pids_peak: Option<u64>,
    /// User CPU time of the whole run, µs.
    pub cpu_user_us: Option<u64>,
    /// System CPU time of the whole run, µs.
    pub cpu_system_us: Option<u64>,
}

/// Parses `key value` lines (memory.events, memory.oom_control) for `key` (pure).
pub fn keyed_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The cgroups of one run; removed (after killing members) on drop.
#[derive(Debug)]
pub struct RunCgroup {
    version: CgroupVersion,
    /// Unique directories created for the run.
    dirs: Vec<PathBuf>,
    /// Directory of each enforced controller.
    controllers: Vec<(Controller, PathBuf)>,
    /// The [`join_file`] of each directory, opened for the child.
    join: Vec<File>,
}

impl RunCgroup {
    /// Creates the run's cgroups and writes the limits. On v2 one directory holds all
    /// controllers; on v1 one directory per controller.
    pub fn create(
        support: &CgroupSupport,
        execution_id: &str,
        limits: &ExecutionLimits,
    ) -> io::Result<Self> {
        let mut run = RunCgroup {
            version: support.version,
            dirs: Vec::new(),
            join: Vec::new(),
            controllers: Vec::new(),
        };
        let name = format!("{RUN_PREFIX}{execution_id}");
        for controller in Controller::ALL {
            let Some(parent) = support.parent(controller) else {
                continue;
            };
            let dir = parent.join(&name);
            if !run.dirs.contains(&dir) {
                fs::create_dir(&dir)?;
                run.dirs.push(dir.clone());
                run.join.push(
                    OpenOptions::new()
                        .write(true)
                        .open(dir.join(join_file(support.version)))?,
                );
            }
            write_limit(&dir, support.version, controller, limits)?;
            run.controllers.push((controller, dir));
        }
        Ok(run)
    }

    /// Whether this run's cgroups enforce `controller`.
    pub fn enforces(&self, controller: Controller) -> bool {
        self.controllers.iter().any(|(c, _)| *c == controller)
    }

    /// Version of the hierarchy.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// fds of the [`join_file`]s; the child writes `0` to each before dropping privileges.
    pub fn join_fds(&self) -> Vec<RawFd> {
        self.join.iter().map(AsRawFd::as_raw_fd).collect()
    }

    fn dir_of(&self, controller: Controller) -> Option<&Path> {
        self.controllers
            .iter()
            .find(|(c, _)| *c == controller)
            .map(|(_, d)| d.as_path())
    }

    /// Reads OOM kills, peak memory and peak tasks.
    pub fn stats(&self) -> CgroupStats {
        let mut stats = CgroupStats::default();
        if let Some(dir) = self.dir_of(Controller::Memory) {
            match self.version {
                CgroupVersion::V1 => {
                    stats.oom_kills = fs::read_to_string(dir.join("memory.oom_control"))
                        .ok()
                        .and_then(|t| keyed_value(&t, "oom_kill"));
                    stats.memory_peak = read_u64(&dir.join("memory.max_usage_in_bytes"));
                }
                CgroupVersion::V2 => {
                    stats.oom_kills = fs::read_to_string(dir.join("memory.events"))
                        .ok()
                        .and_then(|t| keyed_value(&t, "oom_kill"));
                    stats.memory_peak = read_u64(&dir.join("memory.peak"));
                }
            }
        }
        if let Some(dir) = self.dir_of(Controller::Pids) {
            stats.pids_peak = read_u64(&dir.join("pids.peak"));
        }
        match self.version {
            CgroupVersion::V1 => {
                if let Some(dir) = self.dir_of(Controller::Cpuacct) {
                    stats.cpu_user_us =
                        read_u64(&dir.join("cpuacct.usage_user")).map(|ns| ns / 1000);
                    stats.cpu_system_us =
                        read_u64(&dir.join("cpuacct.usage_sys")).map(|ns| ns / 1000);
                }
            }
            CgroupVersion::V2 => {
                if let Some(dir) = self.dirs.first()
                    && let Ok(text) = fs::read_to_string(dir.join("cpu.stat"))
                {
                    stats.cpu_user_us = keyed_value(&text, "user_usec");
                    stats.cpu_system_us = keyed_value(&text, "system_usec");
                }
            }
        }
        stats
    }

    /// SIGKILLs every member process; returns how many were signalled.
    pub fn kill_all(&self) -> usize {
        self.dirs
            .iter()
            .map(|dir| kill_members(dir, self.version))
            .sum()
    }

    /// SIGKILLs the members until none is listed (bounded: a fork bomb refills between a read
    /// and the kills). `true` when the cgroups ended empty. Exited processes that wait to be
    /// reaped are not listed: they run no code.
    pub fn kill_until_empty(&self) -> bool {
        for round in 0..200 {
            if self.kill_all() == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(if round < 10 { 1 } else { 10 }));
        }
        false
    }

    fn remove(&mut self) {
        self.controllers.clear();
        for dir in self.dirs.drain(..) {
            let mut removed = false;
            for attempt in 0..100 {
                kill_members(&dir, self.version);
                if fs::remove_dir(&dir).is_ok() {
                    removed = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(if attempt < 10 { 5 } else { 20 }));
            }
            if !removed {
                tracing::warn!(dir = %dir.display(), "could not remove a run cgroup");
            }
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.join.clear();
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_PROC: &str = "\
8:pids:/
4:memory:/process_api/f02b
1:cpu:/
0::/
";

    #[test]
    fn parses_mountinfo_and_proc_cgroup() {
        let mounts = parse_mountinfo(HYBRID_MOUNTINFO);
        assert_eq!(mounts.len(), 5);
        assert_eq!(mounts[0].mount_point, PathBuf::from("/sys/fs/cgroup/cpu"));
        assert_eq!(mounts[0].super_options, vec!["rw", "cpu"]);
        assert_eq!(mounts[4].fstype, "cgroup2");
        let own = parse_proc_cgroup(HYBRID_PROC);
        assert_eq!(own[1].controllers, vec!["memory"]);
        assert_eq!(own[1].path, "/process_api/f02b");
        assert!(own[3].controllers.is_empty());
    }

    #[test]
    fn hybrid_host_uses_v1_per_controller() {
        let support = plan_support(
            &parse_mountinfo(HYBRID_MOUNTINFO),
            &parse_proc_cgroup(HYBRID_PROC),
            |_| vec![],
            None,
        )
        .expect("v1 support");
        assert_eq!(support.version, CgroupVersion::V1);
        assert_eq!(
            support.memory,
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/f02b"))
        );
        assert_eq!(support.pids, Some(PathBuf::from("/sys/fs/cgroup/pids")));
        assert_eq!(support.cpu, Some(PathBuf::from("/sys/fs/cgroup/cpu")));
        // cpuacct is mounted but this process's line for it is missing in the sample.
        assert_eq!(support.cpuacct, None);
        assert_eq!(support.describe(), "cgroup_v1: memory,pids,cpu");
    }

    #[test]
    fn pure_v2_host() {
        let mounts = parse_mountinfo(
            "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        );
        let own = parse_proc_cgroup("0::/system.slice/xmemo.service\n");
        let support = plan_support(
            &mounts,
            &own,
            |dir| {
                assert_eq!(dir, Path::new("/sys/fs/cgroup/system.slice/xmemo.service"));
                vec!["memory".into(), "pids".into()]
            },
            None,
        )
        .expect("v2 support");
        assert_eq!(support.version, CgroupVersion::V2);
        assert!(support.has(Controller::Memory) && support.has(Controller::Pids));
        assert!(!support.has(Controller::Cpu));
        // Override wins; no controllers means no support.
        assert!(plan_support(&mounts, &own, |_| vec![], Some(Path::new("/x"))).is_none());
    }

    #[test]
    fn container_mount_roots_are_stripped() {
        let mount = MountEntry {
            root: "/docker/abc".into(),
            mount_point: PathBuf::from("/sys/fs/cgroup/memory"),
            fstype: "cgroup".into(),
            super_options: vec!["memory".into()],
        };
        assert_eq!(
            cgroup_dir(&mount, "/docker/abc/sub"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/sub"))
        );
        assert_eq!(
            cgroup_dir(&mount, "/docker/abc"),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(cgroup_dir(&mount, "/docker/abcdef"), None);
        assert_eq!(cgroup_dir(&mount, "/other"), None);
    }

    #[test]
    fn mount_escapes() {
        assert_eq!(unescape_mount_field("/a\\040b"), "/a b");
        assert_eq!(unescape_mount_field("/plain"), "/plain");
        assert_eq!(unescape_mount_field("/end\\04"), "/end\\04");
    }

    #[test]
    fn keyed_values() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed_value(v1, "oom_kill"), Some(3));
        assert_eq!(
            keyed_value("low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n", "oom_kill"),
            Some(1)
        );
        assert_eq!(keyed_value("x 1\n", "oom_kill"), None);
    }
}
