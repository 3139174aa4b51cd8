//! Dedicated uids for runs when the server is root.
//!
//! Each concurrent run gets its own uid (`uid_base + slot`) so that RLIMIT_NPROC (which counts
//! every process of a uid) only counts that run, and so that every process of the run can be
//! found and killed afterwards. Slots are claimed with an in-process table plus an exclusive
//! `flock` on `<scratch_root>/xmemo-sandbox-uids/<uid>.lock`, so several server (or test)
//! processes on one host never share a uid. The lock dies with its process.
//!
//! Claiming a uid through its lock scans `/proc` once to kill what a crashed holder may have
//! left running as it (a few milliseconds on a busy host). A lease whose run was proven to have
//! left no live process of its uid ([`UidLease::mark_clean`]) goes back to a warm list with its
//! lock still held, and the next run takes it without the lock dance or the scan: nobody else
//! can have run as that uid in between, since this process held the lock all along.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Free uids examined while looking for one without any (zombie) process.
const CLEAN_CANDIDATES: usize = 32;
/// Warm leases kept at most; beyond that the oldest is released (its lock dropped).
const MAX_WARM: usize = 64;

/// A claimed uid; on drop it goes back to the warm list when its run was proven clean, else
/// every process still running as it is killed and the slot freed.
#[derive(Debug)]
pub struct UidLease {
    uid: u32,
    slot: usize,
    lock: Option<File>,
    pool: Arc<PoolState>,
    /// No process of the uid is alive (set by [`UidLease::reap`] or [`UidLease::mark_clean`]
    /// once the run's own process was reaped). Only processes of the uid can start more of
    /// them, so the uid stays clean and the drop need not scan again.
    reaped_clean: AtomicBool,
    /// Host pid of the run's sandbox init (0: none known). When bubblewrap's outer process
    /// exits first, that init is reparented to the host's init and waits there, as a zombie
    /// of this uid, until it is reaped; zombies count against RLIMIT_NPROC, so a warm lease is
    /// only handed out again once that pid is gone.
    init_pid: AtomicI32,
}

impl UidLease {
    /// The uid (also used as gid).
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Kills every process of the uid (see [`reap_uid`]) and remembers whether none was left.
    /// Call it once the run's own process has been reaped, so that nothing can start another.
    pub fn reap(&self) {
        let left = reap_uid_scanned(self.uid).alive;
        self.reaped_clean.store(left.is_empty(), Ordering::SeqCst);
    }

    /// Records that no process of the uid is alive, without scanning `/proc`. Only for a
    /// caller that proved it another way: every process of the run was in the run's cgroups,
    /// which list no member any more, and the run's own process was reaped.
    pub fn mark_clean(&self) {
        self.reaped_clean.store(true, Ordering::SeqCst);
    }

    /// Records the host pid of the run's sandbox init (see [`UidLease::init_pid`]).
    pub fn expect_exit_of(&self, pid: libc::pid_t) {
        self.init_pid.store(pid.max(0), Ordering::SeqCst);
    }
}

impl Drop for UidLease {
    fn drop(&mut self) {
        let clean = self.reaped_clean.load(Ordering::SeqCst);
        if clean && let Some(lock) = self.lock.take() {
            let warm = Warm {
                uid: self.uid,
                slot: self.slot,
                lock,
                init_pid: self.init_pid.load(Ordering::SeqCst),
            };
            let evicted = match self.pool.warm.lock() {
                Ok(mut list) => {
                    list.push_back(warm);
                    if list.len() > MAX_WARM {
                        list.pop_front()
                    } else {
                        None
                    }
                }
                // Poisoned: release this one instead of keeping it.
                Err(_) => Some(warm),
            };
            if let Some(evicted) = evicted {
                self.pool.free(evicted.slot);
            }
            return;
        }
        if !clean {
            reap_uid(self.uid);
        }
        self.pool.free(self.slot);
    }
}

/// A released lease whose uid has no live process, kept with its lock for the next run.
#[derive(Debug)]
struct Warm {
    uid: u32,
    slot: usize,
    lock: File,
    init_pid: libc::pid_t,
}

#[derive(Debug)]
struct PoolState {
    used: Mutex<Vec<bool>>,
    next: Mutex<usize>,
    /// Leases ready for reuse, oldest first.
    warm: Mutex<VecDeque<Warm>>,
}

impl PoolState {
    fn free(&self, slot: usize) {
        if let Ok(mut used) = self.used.lock()
            && let Some(flag) = used.get_mut(slot)
        {
            *flag = false;
        }
    }

    /// The oldest warm lease whose previous sandbox init is gone (`runs_as(pid, uid)`: that
    /// pid still exists as that uid).
    fn take_warm(self: &Arc<Self>, runs_as: impl Fn(libc::pid_t, u32) -> bool) -> Option<UidLease> {
        let mut list = self.warm.lock().ok()?;
        let position = list
            .iter()
            .position(|w| w.init_pid <= 0 || !runs_as(w.init_pid, w.uid))?;
        let warm = list.remove(position)?;
        Some(UidLease {
            uid: warm.uid,
            slot: warm.slot,
            lock: Some(warm.lock),
            pool: Arc::clone(self),
            reaped_clean: AtomicBool::new(false),
            init_pid: AtomicI32::new(0),
        })
    }
}

/// Whether `pid` exists (alive or zombie) and belongs to `uid` (one `/proc` read).
fn pid_runs_as(pid: libc::pid_t, uid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| status_uids(&status))
        .is_some_and(|ids| ids.contains(&uid))
}

/// The range of uids runs may use.
#[derive(Debug, Clone)]
pub struct UidPool {
    base: u32,
    lock_dir: PathBuf,
    state: Arc<PoolState>,
}

impl UidPool {
    /// A pool of `count` uids from `base`, locked under `scratch_root`.
    pub fn new(base: u32, count: u32, scratch_root: &Path) -> Self {
        let count = count.max(1) as usize;
        Self {
            base,
            lock_dir: scratch_root.join("xmemo-sandbox-uids"),
            state: Arc::new(PoolState {
                used: Mutex::new(vec![false; count]),
                // Start somewhere else in every process, so that server (and test) processes
                // on one host do not all begin with the same uid.
                next: Mutex::new(spread_start(count)),
                warm: Mutex::new(VecDeque::new()),
            }),
        }
    }

    fn ensure_lock_dir(&self) -> io::Result<()> {
        match fs::create_dir(&self.lock_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = fs::symlink_metadata(&self.lock_dir)?;
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != euid {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a directory owned by uid {euid}",
                    self.lock_dir.display()
                ),
            ));
        }
        fs::set_permissions(&self.lock_dir, fs::Permissions::from_mode(0o700))
    }

    /// Claims a free uid, or `Ok(None)` when all are taken. Prefers uids with no process at
    /// all: a previous run's exited init may still wait, as a zombie, for the host's init to
    /// reap it, and zombies count against RLIMIT_NPROC.
    pub fn acquire(&self) -> io::Result<Option<UidLease>> {
        if let Some(lease) = self.state.take_warm(pid_runs_as) {
            return Ok(Some(lease));
        }
        if let Some(lease) = self.acquire_pass(true, CLEAN_CANDIDATES)? {
            return Ok(Some(lease));
        }
        self.acquire_pass(false, usize::MAX)
    }

    fn acquire_pass(
        &self,
        require_clean: bool,
        max_candidates: usize,
    ) -> io::Result<Option<UidLease>> {
        self.ensure_lock_dir()?;
        let count = self
            .state
            .used
            .lock()
            .map_err(|_| io::Error::other("uid pool poisoned"))?
            .len();
        let start = {
            let mut next = self
                .state
                .next
                .lock()
                .map_err(|_| io::Error::other("uid pool poisoned"))?;
            let start = *next;
            *next = (start + 1) % count;
            start
        };
        for offset in 0..count.min(max_candidates) {
            let slot = (start + offset) % count;
            {
                let mut used = self
                    .state
                    .used
                    .lock()
                    .map_err(|_| io::Error::other("uid pool poisoned"))?;
                if used[slot] {
                    continue;
                }
                used[slot] = true;
            }
            let uid = self.base + slot as u32;
            match self.lock_slot(uid) {
                Ok(Some(lock)) => {
                    // Leftovers of a crashed holder of this uid must not count against us;
                    // the reap's last scan also tells whether zombies are left.
                    let left = reap_uid_scanned(uid);
                    if require_clean && (!left.alive.is_empty() || left.dead > 0) {
                        if let Ok(mut used) = self.state.used.lock() {
                            used[slot] = false;
                        }
                        continue;
                    }
                    return Ok(Some(UidLease {
                        uid,
                        slot,
                        lock: Some(lock),
                        pool: Arc::clone(&self.state),
                        reaped_clean: AtomicBool::new(false),
                        init_pid: AtomicI32::new(0),
                    }));
                }
                Ok(None) | Err(_) => {
                    if let Ok(mut used) = self.state.used.lock() {
                        used[slot] = false;
                    }
                }
            }
        }
        Ok(None)
    }

    fn lock_slot(&self, uid: u32) -> io::Result<Option<File>> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.lock_dir.join(format!("{uid}.lock")))?;
        // SAFETY: flock on an fd we own; non-blocking.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            Ok(Some(file))
        } else {
            let error = io::Error::last_os_error();
            if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
                Ok(None)
            } else {
                Err(error)
            }
        }
    }
}

/// Whether /proc/<pid>/status describes a process that already exited (zombie or dead):
/// it runs no code and only waits for its parent to reap it (pure).
pub fn status_is_dead(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("State:"))
        .is_some_and(|state| matches!(state.trim_start().chars().next(), Some('Z' | 'X')))
}

/// Parses the real, effective, saved and filesystem uids from /proc/<pid>/status (pure).
pub fn status_uids(status: &str) -> Option<[u32; 4]> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    let mut values = line["Uid:".len()..]
        .split_whitespace()
        .filter_map(|v| v.parse().ok());
    Some([
        values.next()?,
        values.next()?,
        values.next()?,
        values.next()?,
    ])
}

fn spread_start(count: usize) -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as usize)
        .unwrap_or(0);
    (nanos ^ (std::process::id() as usize).wrapping_mul(2_654_435_761)) % count.max(1)
}

/// Every process whose real, effective, saved or fs uid is `uid`, in one pass over /proc,
/// split into those that run and the zombies (the sandbox's init is reparented to the host's
/// init when bwrap exits and waits there, dead, to be reaped). Reading every `status` costs a
/// few milliseconds on a busy host, so callers scan once and use both answers.
#[derive(Debug, Default)]
pub struct UidScan {
    /// Processes of the uid that still run.
    pub alive: Vec<libc::pid_t>,
    /// Zombies of the uid, waiting to be reaped by their parent.
    pub dead_pids: Vec<libc::pid_t>,
    /// `dead_pids.len()`.
    pub dead: usize,
}

pub fn scan_uid(uid: u32) -> UidScan {
    let mut scan = UidScan::default();
    let Ok(entries) = fs::read_dir("/proc") else {
        return scan;
    };
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
    {
        let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        if !status_uids(&status).is_some_and(|ids| ids.contains(&uid)) {
            continue;
        }
        if status_is_dead(&status) {
            scan.dead_pids.push(pid);
        } else {
            scan.alive.push(pid);
        }
    }
    scan.dead = scan.dead_pids.len();
    scan
}

/// SIGKILLs every process running as `uid` until none is left (bounded). Only for uids
/// private to the engine. Returns how many kills were sent.
pub fn reap_uid(uid: u32) -> usize {
    reap_uid_scanned(uid).killed
}

/// SIGKILLs each of `pids` (a scan's finding) that, pinned by a pidfd, still runs as `uid`:
/// a pid the scan saw may have been reused by another user's process since. How many kills
/// were sent.
pub fn kill_listed(pids: &[libc::pid_t], uid: u32) -> usize {
    pids.iter()
        .filter(|&&pid| {
            crate::pidfd::kill_if(pid, |p| pid_runs_as(p, uid)) == crate::pidfd::Killed::Sent
        })
        .count()
}

/// What [`reap_uid_scanned`] did and what its last scan saw.
#[derive(Debug, Default)]
pub struct Reaped {
    pub killed: usize,
    /// Processes still alive at the last scan (empty unless the bound was reached).
    pub alive: Vec<libc::pid_t>,
    /// Zombies of the uid at the last scan.
    pub dead: usize,
}

/// [`reap_uid`], returning the last scan too.
pub fn reap_uid_scanned(uid: u32) -> Reaped {
    let mut killed = 0;
    let mut scan = UidScan::default();
    for round in 0..200 {
        scan = scan_uid(uid);
        if scan.alive.is_empty() {
            break;
        }
        killed += kill_listed(&scan.alive, uid);
        std::thread::sleep(Duration::from_millis(if round < 10 { 2 } else { 20 }));
    }
    Reaped {
        killed,
        alive: scan.alive,
        dead: scan.dead,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_pid_of_another_uid_is_not_killed() {
        use std::os::unix::process::ExitStatusExt;
        // A scan listed this pid under a sandbox uid; it runs as this test's uid now (the
        // pid was reused). The sweep must leave it alone.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id() as libc::pid_t;
        // SAFETY: getuid has no preconditions.
        let ours = unsafe { libc::getuid() };
        let sandbox_uid = ours.wrapping_add(4_000_000);
        assert_eq!(kill_listed(&[pid], sandbox_uid), 0);
        assert!(child.try_wait().expect("wait").is_none(), "left running");
        assert_eq!(kill_listed(&[pid], ours), 1);
        assert_eq!(child.wait().expect("wait").signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn parses_status_uids() {
        let status = "Name:\tsleep\nUmask:\t0022\nUid:\t200001\t200001\t200001\t200001\nGid:\t0\n";
        assert_eq!(status_uids(status), Some([200_001; 4]));
        assert_eq!(status_uids("Name: x\n"), None);
        assert!(status_is_dead("Name:\tbwrap\nState:\tZ (zombie)\n"));
        assert!(!status_is_dead("Name:\tsleep\nState:\tS (sleeping)\n"));
    }

    #[test]
    fn slots_are_exclusive_and_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pool = UidPool::new(400_000, 2, dir.path());
        assert!(spread_start(2) < 2);
        let a = pool.acquire().expect("io").expect("slot a");
        let b = pool.acquire().expect("io").expect("slot b");
        assert_ne!(a.uid(), b.uid());
        assert!(pool.acquire().expect("io").is_none(), "pool exhausted");
        // Another pool (another server process) on the same lock directory is excluded.
        let other = UidPool::new(400_000, 2, dir.path());
        assert!(other.acquire().expect("io").is_none());
        let freed = a.uid();
        drop(a);
        let c = other.acquire().expect("io").expect("slot freed");
        assert_eq!(c.uid(), freed);
        drop((b, c));
    }

    #[test]
    fn a_lease_proven_clean_is_reused_with_its_lock_held() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pool = UidPool::new(410_000, 2, dir.path());
        let other = UidPool::new(410_000, 2, dir.path());
        let a = pool.acquire().expect("io").expect("slot a");
        let uid = a.uid();
        a.mark_clean();
        drop(a);
        // Still locked: another server process cannot take the uid while it is warm here.
        let b = other.acquire().expect("io").expect("the other slot");
        assert_ne!(b.uid(), uid);
        assert!(other.acquire().expect("io").is_none(), "warm uid was free");
        // The next run here gets the warm uid back.
        let again = pool.acquire().expect("io").expect("warm slot");
        assert_eq!(again.uid(), uid);
        // Not proven clean this time: the drop sweeps it and frees the slot for anyone.
        drop(again);
        let c = other.acquire().expect("io").expect("freed slot");
        assert_eq!(c.uid(), uid);
        drop((b, c));
    }

    #[test]
    fn a_warm_lease_waits_until_its_sandbox_init_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pool = UidPool::new(420_000, 1, dir.path());
        let a = pool.acquire().expect("io").expect("slot");
        let uid = a.uid();
        a.mark_clean();
        a.expect_exit_of(4242);
        drop(a);
        assert!(
            pool.state
                .take_warm(|pid, owner| pid == 4242 && owner == uid)
                .is_none(),
            "handed out while its init still waits to be reaped"
        );
        let lease = pool
            .state
            .take_warm(|_, _| false)
            .expect("handed out once the init is gone");
        assert_eq!(lease.uid(), uid);
    }
}
