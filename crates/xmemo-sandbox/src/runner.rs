//! Spawning one sandbox process tree: privileges and limits applied in the child before
//! `exec`, stdin fed, stdout/stderr drained with caps (the excess is read and counted, never
//! kept), a wall-clock watchdog, and a kill sweep at the deadline and after exit.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::watch;

use crate::classify::Exit;
use crate::limits::Rlimit;

/// Read size for output pipes.
const CHUNK: usize = 64 * 1024;
/// How long to wait for output pipes to reach EOF once the process tree is dead.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the killed process to be reaped after the deadline.
const REAP_GRACE: Duration = Duration::from_secs(10);
/// Cap on bwrap's JSON status output.
const STATUS_CAP: usize = 64 * 1024;

/// What the child does between `fork` and `exec` (all async-signal-safe, no allocation).
#[derive(Clone, Default)]
pub struct ChildSetup {
    /// cgroup join fds (`tasks` on v1, `cgroup.procs` on v2): the child writes `0` to each
    /// (moves itself in) while still root.
    pub cgroup_join: Vec<RawFd>,
    /// rlimits, set before dropping privileges.
    pub rlimits: Vec<Rlimit>,
    /// uid/gid to switch to (supplementary groups cleared).
    pub ids: Option<(u32, u32)>,
    /// fds that must survive `exec` (close-on-exec cleared).
    pub keep_fds: Vec<RawFd>,
    /// Seccomp filter installed last, with no_new_privs (unsafe local fallback).
    pub seccomp: Option<Arc<Vec<libc::sock_filter>>>,
}

/// A process to start.
pub struct Launch {
    /// Program (absolute path, or a name resolved through `env`'s PATH).
    pub program: OsString,
    /// Arguments.
    pub args: Vec<OsString>,
    /// Complete environment (nothing is inherited).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Child-side setup.
    pub setup: ChildSetup,
    /// Read end of bwrap's `--json-status-fd` pipe.
    pub status_reader: Option<OwnedFd>,
    /// Parent copies of fds passed to the child; closed right after spawning.
    pub passed_fds: Vec<OwnedFd>,
}

/// One captured output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first `cap` bytes.
    pub bytes: Vec<u8>,
    /// Everything that was written.
    pub total: u64,
}

/// What happened to a launched process.
pub struct Finished {
    /// Exit of the spawned process.
    pub exit: Exit,
    /// The watchdog fired.
    pub timed_out: bool,
    /// Spawn to exit.
    pub duration: Duration,
    /// rusage of the spawned process and its reaped descendants.
    pub rusage: Option<libc::rusage>,
    /// stdout.
    pub stdout: Captured,
    /// stderr.
    pub stderr: Captured,
    /// bwrap's JSON status output.
    pub status: Vec<u8>,
    /// Why the process could not be spawned.
    pub spawn_error: Option<String>,
}

/// Applies `setup` in the child. Only async-signal-safe calls; no allocation.
fn child_setup(setup: &ChildSetup) -> io::Result<()> {
    // Own session and process group (pgid = pid), no controlling terminal.
    // SAFETY: setsid has no preconditions; it cannot fail in a fresh child that is not a group
    // leader.
    if unsafe { libc::setsid() } < 0 {
        return Err(io::Error::last_os_error());
    }
    for &fd in &setup.cgroup_join {
        // SAFETY: fd is an open cgroup `tasks`/`cgroup.procs` file inherited from the parent;
        // "0" moves the calling (single-threaded) process.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    for limit in &setup.rlimits {
        let value = libc::rlimit {
            rlim_cur: limit.soft,
            rlim_max: limit.hard,
        };
        // SAFETY: setrlimit reads a valid rlimit struct.
        if unsafe { libc::setrlimit(limit.resource, &value) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    if let Some((uid, gid)) = setup.ids {
        // SAFETY: plain syscalls with integer arguments (null list for setgroups(0)).
        unsafe {
            if libc::setgroups(0, std::ptr::null()) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::setresgid(gid, gid, gid) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::setresuid(uid, uid, uid) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    // Nothing the server holds open leaks into the sandbox: mark every fd above stderr
    // close-on-exec (not closed: std's exec-error pipe must live until exec), then clear the
    // flag on the fds meant for the child.
    mark_all_cloexec();
    for &fd in &setup.keep_fds {
        // SAFETY: fcntl on an fd the parent opened for the child.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    if let Some(filter) = &setup.seccomp {
        // SAFETY: we are in the forked child, right before exec.
        unsafe { crate::seccomp::install_in_child(filter)? };
    }
    Ok(())
}

/// Sets close-on-exec on every fd >= 3 (async-signal-safe).
fn mark_all_cloexec() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range with the CLOEXEC flag only changes fd flags.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    if rc == 0 {
        return;
    }
    // Older kernels: walk the fd table up to the hard RLIMIT_NOFILE (bounded).
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid struct.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_max.min(1 << 20) as libc::c_int
    } else {
        1 << 16
    };
    for fd in 3..max {
        // SAFETY: fcntl on a possibly-closed fd number is harmless (EBADF).
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

type SpawnJob = (
    std::process::Command,
    tokio::sync::oneshot::Sender<io::Result<std::process::Child>>,
);

/// Spawns `command` from one long-lived thread. bwrap's `--die-with-parent` (PR_SET_PDEATHSIG)
/// fires when the *thread* that forked it exits; runtime threads may come and go (blocking
/// pools, `block_in_place`), this one lives as long as the process. Also keeps fork/exec off
/// the async workers.
async fn spawn_on_spawner(command: std::process::Command) -> io::Result<std::process::Child> {
    static SPAWNER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = std::sync::mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("xmemo-sandbox-spawner".to_owned())
            .spawn(move || {
                for (mut command, reply) in queue {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| jobs)
    });
    let Some(jobs) = spawner else {
        let mut command = command;
        return command.spawn();
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    jobs.send((command, reply))
        .map_err(|_| io::Error::other("sandbox spawner thread is gone"))?;
    answer
        .await
        .map_err(|_| io::Error::other("sandbox spawner thread dropped the job"))?
}

fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd was just returned by the kernel and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// SIGKILLs the spawned process (through its pidfd, immune to pid reuse) and its process group.
fn kill_spawned(pid: libc::pid_t, pidfd: Option<&OwnedFd>) {
    // SAFETY: signal delivery through a pidfd we own, or to a pid we have not reaped yet (the
    // caller only uses the pid fallback before the reaper thread returned), and to the
    // process group the child created with its own pid.
    unsafe {
        match pidfd {
            Some(fd) => {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            }
            None => {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        libc::kill(-pid, libc::SIGKILL);
    }
}

fn wait_for(pid: libc::pid_t) -> (Exit, Option<libc::rusage>, Instant) {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child with valid out-pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            let exit = if libc::WIFEXITED(status) {
                Exit::Code(libc::WEXITSTATUS(status))
            } else if libc::WIFSIGNALED(status) {
                Exit::Signal(libc::WTERMSIG(status))
            } else {
                Exit::Unknown
            };
            return (exit, Some(usage), Instant::now());
        }
        if rc < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return (Exit::Unknown, None, Instant::now());
    }
}

async fn drain<R: tokio::io::AsyncRead + Unpin>(
    mut reader: R,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) -> Captured {
    let mut captured = Captured::default();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        tokio::select! {
            read = reader.read(&mut chunk) => match read {
                Ok(0) => break,
                Ok(n) => {
                    captured.total += n as u64;
                    let room = cap.saturating_sub(captured.bytes.len());
                    captured.bytes.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            },
            _ = stop.changed() => break,
        }
    }
    captured
}

fn reader_of(fd: Option<impl Into<OwnedFd>>) -> io::Result<pipe::Receiver> {
    let fd = fd.ok_or_else(|| io::Error::other("missing pipe"))?;
    pipe::Receiver::from_owned_fd(fd.into())
}

/// Runs `launch` to completion under the watchdog. `sweep` kills whatever else belongs to the
/// run (cgroup members, processes of the run's uid); it runs at the deadline and after exit.
pub async fn run(
    launch: Launch,
    stdin: Vec<u8>,
    timeout: Duration,
    output_cap: usize,
    sweep: Arc<dyn Fn() + Send + Sync>,
) -> Finished {
    let Launch {
        program,
        args,
        env,
        cwd,
        setup,
        status_reader,
        passed_fds,
    } = launch;
    let mut command = std::process::Command::new(&program);
    command
        .args(&args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the hook only makes async-signal-safe syscalls on data prepared beforehand (no
    // allocation, no locks) — see `child_setup`.
    unsafe {
        command.pre_exec(move || child_setup(&setup));
    }
    let started = Instant::now();
    let spawned = spawn_on_spawner(command).await;
    drop(passed_fds);
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            return Finished {
                exit: Exit::Unknown,
                timed_out: false,
                duration: started.elapsed(),
                rusage: None,
                stdout: Captured::default(),
                stderr: Captured::default(),
                status: Vec::new(),
                spawn_error: Some(format!("{}: {error}", program.to_string_lossy())),
            };
        }
    };
    let pid = child.id() as libc::pid_t;
    let pidfd = pidfd_open(pid);
    let (stop_tx, stop_rx) = watch::channel(false);

    let pipes = (|| -> io::Result<_> {
        let stdin_writer = pipe::Sender::from_owned_fd(OwnedFd::from(
            child
                .stdin
                .take()
                .ok_or_else(|| io::Error::other("missing stdin"))?,
        ))?;
        Ok((
            stdin_writer,
            reader_of(child.stdout.take())?,
            reader_of(child.stderr.take())?,
        ))
    })();
    let wait_task = tokio::task::spawn_blocking(move || wait_for(pid));
    let (stdin_writer, stdout, stderr) = match pipes {
        Ok(pipes) => pipes,
        Err(error) => {
            kill_spawned(pid, pidfd.as_ref());
            let (_, rusage, _) = wait_task
                .await
                .unwrap_or((Exit::Unknown, None, Instant::now()));
            return Finished {
                exit: Exit::Unknown,
                timed_out: false,
                duration: started.elapsed(),
                rusage,
                stdout: Captured::default(),
                stderr: Captured::default(),
                status: Vec::new(),
                spawn_error: Some(format!("pipes: {error}")),
            };
        }
    };
    let stdin_task = tokio::spawn(async move {
        let mut writer = stdin_writer;
        let _ = writer.write_all(&stdin).await;
        drop(writer);
    });
    let stdout_task = tokio::spawn(drain(stdout, output_cap, stop_rx.clone()));
    let stderr_task = tokio::spawn(drain(stderr, output_cap, stop_rx.clone()));
    let status_task = match status_reader.map(pipe::Receiver::from_owned_fd) {
        Some(Ok(reader)) => Some(tokio::spawn(drain(reader, STATUS_CAP, stop_rx.clone()))),
        _ => None,
    };

    let deadline = tokio::time::Instant::from_std(started + timeout);
    let mut wait_task = wait_task;
    let mut timed_out = false;
    let waited = match tokio::time::timeout_at(deadline, &mut wait_task).await {
        Ok(result) => result,
        Err(_) => {
            timed_out = true;
            kill_spawned(pid, pidfd.as_ref());
            let sweep_now = Arc::clone(&sweep);
            let _ = tokio::task::spawn_blocking(move || sweep_now()).await;
            match tokio::time::timeout(REAP_GRACE, &mut wait_task).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::error!(pid, "sandbox process not reaped after SIGKILL");
                    Ok((Exit::Unknown, None, Instant::now()))
                }
            }
        }
    };
    let (exit, rusage, ended) = waited.unwrap_or((Exit::Unknown, None, Instant::now()));

    // Whatever is left of the run (background processes, the group) dies now.
    // SAFETY: kill of the process group the child created (its pgid is its pid).
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let sweep_now = Arc::clone(&sweep);
    let _ = tokio::task::spawn_blocking(move || sweep_now()).await;
    stdin_task.abort();

    let grace = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(grace);
    let outputs = async {
        let stdout = stdout_task.await.unwrap_or_default();
        let stderr = stderr_task.await.unwrap_or_default();
        let status = match status_task {
            Some(task) => task.await.unwrap_or_default(),
            None => Captured::default(),
        };
        (stdout, stderr, status)
    };
    let mut outputs = std::pin::pin!(outputs);
    let (stdout, stderr, status) = tokio::select! {
        done = &mut outputs => done,
        _ = &mut grace => {
            let _ = stop_tx.send(true);
            outputs.await
        }
    };

    Finished {
        exit,
        timed_out,
        duration: ended.saturating_duration_since(started),
        rusage,
        stdout,
        stderr,
        status: status.bytes,
        spawn_error: None,
    }
}

/// A close-on-exec pipe: (read end, write end).
pub fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_caps_and_counts() {
        let data = vec![b'x'; 300_000];
        let (_tx, rx) = watch::channel(false);
        let captured = drain(&data[..], 1000, rx).await;
        assert_eq!(captured.total, 300_000);
        assert_eq!(captured.bytes.len(), 1000);
    }

    #[tokio::test]
    async fn runs_a_plain_process_with_watchdog() {
        let launch = Launch {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "read x; echo got $x; echo err >&2; exit 3".into(),
            ],
            env: vec![],
            cwd: PathBuf::from("/"),
            setup: ChildSetup::default(),
            status_reader: None,
            passed_fds: vec![],
        };
        let finished = run(
            launch,
            b"hello\n".to_vec(),
            Duration::from_secs(10),
            1024,
            Arc::new(|| {}),
        )
        .await;
        assert_eq!(finished.exit, Exit::Code(3));
        assert_eq!(finished.stdout.bytes, b"got hello\n");
        assert_eq!(finished.stderr.bytes, b"err\n");
        assert!(!finished.timed_out);

        let launch = Launch {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "sleep 30".into()],
            env: vec![],
            cwd: PathBuf::from("/"),
            setup: ChildSetup::default(),
            status_reader: None,
            passed_fds: vec![],
        };
        let deadline = Duration::from_secs(1);
        let begin = Instant::now();
        let finished = run(launch, vec![], deadline, 1024, Arc::new(|| {})).await;
        assert!(finished.timed_out);
        assert_eq!(finished.exit, Exit::Signal(libc::SIGKILL));
        // The watchdog's kill is the behaviour under test, so wall-clock time is the evidence:
        // six times the deadline leaves a loaded machine room, and is a fifth of the 30 s the
        // child would sleep unkilled.
        let elapsed = begin.elapsed();
        assert!(elapsed < deadline * 6, "took {elapsed:?}");
    }

    #[tokio::test]
    async fn spawn_failure_is_reported() {
        let launch = Launch {
            program: "/nonexistent/program".into(),
            args: vec![],
            env: vec![],
            cwd: PathBuf::from("/"),
            setup: ChildSetup::default(),
            status_reader: None,
            passed_fds: vec![],
        };
        let finished = run(launch, vec![], Duration::from_secs(1), 10, Arc::new(|| {})).await;
        assert_eq!(finished.exit, Exit::Unknown);
        assert!(finished.spawn_error.is_some());
    }
}
