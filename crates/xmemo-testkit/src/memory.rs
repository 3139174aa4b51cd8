//! What an attack costs a server process: its resident memory now and at its peak (read from
//! `/proc`), and how long `/healthz` takes to answer while the attack runs.
//!
//! The peak is Linux's high-water mark (`VmHWM`), reset by writing `5` to the process's
//! `clear_refs`, so a test measures the peak of its own attack, not of the server's start.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Resident memory of a process, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rss {
    /// `VmRSS`: resident now.
    pub now_kib: u64,
    /// `VmHWM`: the highest resident size since the process started or its last reset.
    pub peak_kib: u64,
}

/// The resident memory of process `pid`. Panics when `/proc` cannot tell (these tests run
/// on Linux only, and a test that cannot measure must not pass).
pub fn process_rss(pid: u32) -> Rss {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("cannot read /proc/{pid}/status: {e}"));
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    Rss {
        now_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

/// Resets the peak of process `pid` to its resident size now (`echo 5 > clear_refs`; the
/// process must be ours, or we root). Panics when the kernel refuses: a peak that cannot be
/// reset would make the measurement meaningless.
pub fn reset_peak_rss(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .unwrap_or_else(|e| panic!("cannot reset the peak RSS of {pid}: {e}"));
}

/// Pings `{base}/healthz` every 20 ms on its own thread and connection until stopped, and
/// keeps the slowest answer (a request that failed or took over 10 s counts as 10 s).
pub struct HealthProbe {
    stop: Arc<AtomicBool>,
    slowest_us: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a [`HealthProbe`] saw.
#[derive(Debug, Clone, Copy)]
pub struct HealthSeen {
    pub slowest: Duration,
    pub answered: u64,
}

impl HealthProbe {
    pub fn start(base: &str) -> HealthProbe {
        let url = format!("{}/healthz", base.trim_end_matches('/'));
        let stop = Arc::new(AtomicBool::new(false));
        let slowest_us = Arc::new(AtomicU64::new(0));
        let answered = Arc::new(AtomicU64::new(0));
        let (stop2, slowest2, answered2) = (stop.clone(), slowest_us.clone(), answered.clone());
        let thread = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                slowest2.store(u64::MAX, Ordering::Relaxed);
                return;
            };
            rt.block_on(async move {
                let client = reqwest::Client::builder()
                    .timeout(Duration::from_secs(10))
                    .build()
                    .unwrap_or_default();
                while !stop2.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let ok = matches!(
                        client.get(&url).send().await,
                        Ok(r) if r.status().is_success()
                    );
                    let took = if ok {
                        answered2.fetch_add(1, Ordering::Relaxed);
                        started.elapsed()
                    } else {
                        Duration::from_secs(10)
                    };
                    slowest2.fetch_max(took.as_micros() as u64, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
        });
        HealthProbe {
            stop,
            slowest_us,
            answered,
            thread: Some(thread),
        }
    }

    /// Stops probing and says what was seen.
    pub fn finish(mut self) -> HealthSeen {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        HealthSeen {
            slowest: Duration::from_micros(self.slowest_us.load(Ordering::Relaxed)),
            answered: self.answered.load(Ordering::Relaxed),
        }
    }
}

impl Drop for HealthProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
