//! Killing a process found by a scan without the PID-reuse race.
//!
//! The cgroup and uid paths find the processes of a run by a scan (`cgroup.procs`, `/proc`)
//! and then kill them. Between the scan and `kill(pid)` the process may exit, be reaped, and
//! its number be given to an unrelated process, which `kill` would then hit. So each pid is
//! first pinned with a pidfd (`pidfd_open`, Linux 5.3), then checked again (`still_ours`,
//! read *after* pinning), and the signal goes through the pidfd (`pidfd_send_signal`), which
//! can only reach the pinned process: if that one died meanwhile and its number now belongs to
//! another process, the check either refuses that process or the signal finds the pinned one
//! gone (ESRCH). Without pidfds (an older kernel) it falls back to check-then-`kill`, which
//! narrows the window to the check itself.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::io::AsRawFd;

/// What [`kill_if`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Killed {
    /// SIGKILL was sent to the process the scan found.
    Sent,
    /// The pid is no longer a process of ours: nothing was sent.
    NotOurs,
    /// No such process any more.
    Gone,
}

/// Sends SIGKILL to `pid` if, once pinned, it still is one of ours by `still_ours` (which
/// reads `/proc` or the cgroup again).
pub fn kill_if(pid: libc::pid_t, still_ours: impl FnOnce(libc::pid_t) -> bool) -> Killed {
    if pid <= 0 {
        return Killed::Gone;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new file descriptor or -1; no
    // memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ESRCH) => Killed::Gone,
            // No pidfds here: check, then kill by number.
            _ => {
                if !still_ours(pid) {
                    return Killed::NotOurs;
                }
                // SAFETY: kill with a positive pid just checked to be ours.
                let r = unsafe { libc::kill(pid, libc::SIGKILL) };
                if r == 0 { Killed::Sent } else { Killed::Gone }
            }
        };
    }
    let Ok(raw) = i32::try_from(fd) else {
        return Killed::Gone;
    };
    // SAFETY: `raw` is a descriptor pidfd_open just returned to us and nobody else owns; the
    // OwnedFd closes it.
    let pinned = unsafe { OwnedFd::from_raw_fd(raw) };
    if !still_ours(pid) {
        return Killed::NotOurs;
    }
    // SAFETY: pidfd_send_signal on a pidfd we own, with no siginfo (null) and no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pinned.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r == 0 { Killed::Sent } else { Killed::Gone }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    #[test]
    fn a_process_that_is_no_longer_ours_is_not_signalled() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = child.id() as libc::pid_t;
        // The scan saw this pid as ours; since then it became someone else's.
        assert_eq!(kill_if(pid, |_| false), Killed::NotOurs);
        assert!(child.try_wait().expect("wait").is_none(), "still running");
        // Still ours: killed.
        assert_eq!(kill_if(pid, |p| p == pid), Killed::Sent);
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    /// Has the kernel give `pid` to the next process it starts (`ns_last_pid`: root only).
    fn next_pid_is(pid: libc::pid_t) -> std::io::Result<()> {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string())
    }

    /// The race itself, made to happen: after the scan (and the pin) the process ends, is
    /// reaped, and its number goes to an unrelated process, which a re-check by number
    /// cannot tell from it. Killing by number would hit that process; the pidfd reaches
    /// only the one that was scanned, which is gone.
    #[test]
    fn a_pid_reused_between_the_scan_and_the_kill_is_never_signalled() {
        // SAFETY: geteuid has no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            xmemo_testkit::dependency_missing(
                "root",
                "making the kernel reuse a pid needs /proc/sys/kernel/ns_last_pid",
            );
            return;
        }
        let mut scanned = Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = scanned.id() as libc::pid_t;
        let mut reuser = None;
        let killed = kill_if(pid, |p| {
            scanned.kill().expect("kill");
            scanned.wait().expect("reap");
            // Other processes may start meanwhile and take the number first: try again.
            for _ in 0..100 {
                next_pid_is(p).expect("write ns_last_pid");
                let mut c = Command::new("sleep").arg("30").spawn().expect("sleep");
                if c.id() as libc::pid_t == p {
                    reuser = Some(c);
                    break;
                }
                let _ = c.kill();
                let _ = c.wait();
            }
            true
        });
        let mut reuser = reuser.expect("the kernel never gave the pid to a new process");
        assert_eq!(killed, Killed::Gone);
        let alive = reuser.try_wait().expect("wait").is_none();
        let _ = reuser.kill();
        let _ = reuser.wait();
        assert!(alive, "the process that reused the pid was killed");
    }
}
