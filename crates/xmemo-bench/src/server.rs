//! Starting the real `xmemo serve` binary, finding its port and admin key, reading its
//! memory and CPU from `/proc`, and killing it at the end.

use anyhow::{Context, Result, anyhow, bail};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lines of server stderr kept for diagnostics.
const TAIL_LINES: usize = 40;

pub struct Server {
    child: Child,
    pub pid: u32,
    pub base_url: String,
    pub admin_key: String,
    pub data_dir: PathBuf,
    tail: Arc<Mutex<VecDeque<String>>>,
    _tempdir: Option<tempfile::TempDir>,
}

pub struct StartOptions<'a> {
    pub bin: &'a Path,
    pub database_url: Option<&'a str>,
    pub admin_key_file: Option<&'a Path>,
    pub keep_data: bool,
    pub data_parent: Option<&'a Path>,
    /// The server's per-account write rate and quotas: off (the benchmarks seed thousands
    /// of skills and memories with one key as fast as the server takes them), or as the
    /// server's defaults, which the sign-in phase measures.
    pub budgets: Budgets<'a>,
}

/// Which budgets the benchmarked server runs with.
#[derive(Clone, Copy)]
pub enum Budgets<'a> {
    /// Per-account write rate, quotas and team-creation rate off; the rest as by default.
    WritesUnbounded,
    /// The server's defaults, changed by these environment settings.
    Defaults(&'a [(&'a str, &'a str)]),
}

/// The settings that take the per-account write budgets off (docs/limits.md).
const WRITES_UNBOUNDED: [(&str, &str); 5] = [
    ("XMEMO_WRITE_RATE", "0"),
    ("XMEMO_TEAM_CREATION_LIMIT", "0"),
    ("XMEMO_QUOTA_MEMORIES", "0"),
    ("XMEMO_QUOTA_SKILLS", "0"),
    ("XMEMO_QUOTA_BYTES", "0"),
];

impl Server {
    pub fn start(opts: &StartOptions<'_>) -> Result<Server> {
        let tempdir = match opts.data_parent {
            Some(parent) => tempfile::Builder::new()
                .prefix("xmemo-bench-")
                .tempdir_in(parent),
            None => tempfile::Builder::new().prefix("xmemo-bench-").tempdir(),
        }
        .context("cannot create a temporary data directory")?;
        let data_dir = tempdir.path().to_path_buf();
        let mut cmd = Command::new(opts.bin);
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(&data_dir);
        if let Some(url) = opts.database_url {
            cmd.arg("--database-url").arg(url);
        }
        // Run in the empty data dir so no stray ./xmemo.toml is picked up, and make sure
        // no settings from the environment override the flags above.
        cmd.current_dir(&data_dir)
            .env_remove("XMEMO_CONFIG")
            .env_remove("XMEMO_PUBLIC_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if std::env::var_os("XMEMO_LOG").is_none() {
            // Per-request info logs would cost server CPU and are not what is measured.
            cmd.env("XMEMO_LOG", "warn");
        }
        if std::env::var_os("XMEMO_EMBEDDING_MODEL").is_none()
            && std::env::var_os("XMEMO_EMBEDDINGS_URL").is_none()
        {
            // The text lane unless the bench's environment names a model: figures must not
            // depend on whether this machine's cache holds the recommended one.
            cmd.env("XMEMO_EMBEDDING_MODEL", "none");
        }
        let settings: &[(&str, &str)] = match opts.budgets {
            Budgets::WritesUnbounded => &WRITES_UNBOUNDED,
            Budgets::Defaults(changed) => changed,
        };
        for (name, value) in settings {
            cmd.env(name, value);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", opts.bin.display()))?;
        let pid = child.id();
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow!("server stderr is not piped"))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = mpsc::channel::<String>();
        {
            let tail = tail.clone();
            std::thread::spawn(move || {
                let mut sent = false;
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if !sent && let Some(addr) = listening_addr(&line) {
                        sent = tx.send(addr).is_ok();
                    }
                    if let Ok(mut t) = tail.lock() {
                        if t.len() == TAIL_LINES {
                            t.pop_front();
                        }
                        t.push_back(line);
                    }
                }
            });
        }
        let guard = if opts.keep_data {
            // Detach the directory on purpose: it is kept for inspection.
            let _ = tempdir.keep();
            None
        } else {
            Some(tempdir)
        };
        let mut server = Server {
            child,
            pid,
            base_url: String::new(),
            admin_key: String::new(),
            data_dir,
            tail,
            _tempdir: guard,
        };
        let addr = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(a) => a,
            Err(_) => bail!(
                "the server did not report its listening address within 120 s; its stderr:\n{}",
                server.stderr_tail()
            ),
        };
        server.base_url = format!("http://{addr}");
        let key_path = opts
            .admin_key_file
            .map(Path::to_path_buf)
            .unwrap_or_else(|| server.data_dir.join("admin.key"));
        let key = std::fs::read_to_string(&key_path).with_context(|| {
            format!(
                "cannot read the admin key at {} (with a non-empty PostgreSQL database no key is \
                 written: pass --admin-key-file)",
                key_path.display()
            )
        })?;
        server.admin_key = key.trim().to_string();
        if server.admin_key.is_empty() {
            bail!("the admin key file {} is empty", key_path.display());
        }
        Ok(server)
    }

    pub fn stderr_tail(&self) -> String {
        self.tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// Still running?
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn memory(&self) -> Memory {
        proc_memory(self.pid)
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `xmemo: listening on http://127.0.0.1:PORT (REST under …)` → `127.0.0.1:PORT`.
fn listening_addr(line: &str) -> Option<String> {
    let rest = line.split("listening on http://").nth(1)?;
    let addr: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '/')
        .collect();
    let (_, port) = addr.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    Some(addr)
}

/// Resident and peak resident set size in KiB (0 when unreadable).
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

fn proc_memory(pid: u32) -> Memory {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Memory::default();
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
    }
}

/// User + system CPU time of a process in seconds (`None` when unreadable).
pub fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat; `after` starts at field 3.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

/// CPU seconds all cores spent busy since boot (from /proc/stat), to tell how much of the
/// machine other processes took during a phase.
pub fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let total: f64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).unwrap_or(&0.0);
    Some((total - idle) / clock_ticks())
}

/// Context switches (voluntary + involuntary) summed over every thread of a process.
pub fn context_switches(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        for line in status.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    Some(total)
}

/// The 1-minute load average.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// The filesystem type holding `path` (from /proc/mounts), e.g. `ext4` or `tmpfs`.
pub fn filesystem_of(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _dev = f.next()?;
            let mount = f.next()?;
            let fstype = f.next()?;
            path.starts_with(mount)
                .then(|| (mount.len(), fstype.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::listening_addr;

    #[test]
    fn parses_the_listening_line() {
        assert_eq!(
            listening_addr("xmemo: listening on http://127.0.0.1:40123 (REST under http://127.0.0.1:40123/api/v1)")
                .as_deref(),
            Some("127.0.0.1:40123")
        );
        assert_eq!(listening_addr("something else"), None);
    }
}
