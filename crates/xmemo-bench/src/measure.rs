//! The figures of a measured phase, shared by every phase driver (the generic call loop in
//! `calls`, the REST phases and seeding in `load`) and by the report: latency percentiles,
//! sampled errors, the CPU split, and a phase's timing and result. It imports no other
//! module of the benchmark, so the drivers can share it without importing each other.

use std::time::Duration;

/// Error messages kept per phase.
const ERROR_SAMPLES: usize = 5;

/// Latency summary in microseconds (nearest-rank percentiles).
#[derive(Clone, Debug, Default)]
pub struct Latency {
    pub count: usize,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
}

impl Latency {
    pub fn from_micros(mut v: Vec<u64>) -> Latency {
        if v.is_empty() {
            return Latency::default();
        }
        v.sort_unstable();
        let pct = |p: f64| {
            let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
            v[rank - 1]
        };
        Latency {
            count: v.len(),
            p50_us: pct(0.50),
            p99_us: pct(0.99),
            max_us: v[v.len() - 1],
            mean_us: v.iter().sum::<u64>() as f64 / v.len() as f64,
        }
    }
}

#[derive(Default)]
pub struct Errors {
    pub count: usize,
    pub samples: Vec<String>,
}

impl Errors {
    pub fn add(&mut self, msg: String) {
        self.count += 1;
        if self.samples.len() < ERROR_SAMPLES {
            self.samples.push(msg);
        }
    }

    pub fn merge(&mut self, other: Errors) {
        self.count += other.count;
        for s in other.samples {
            if self.samples.len() < ERROR_SAMPLES {
                self.samples.push(s);
            }
        }
    }
}

pub type CpuSample = (Option<f64>, Option<f64>, Option<f64>);

/// (server, benchmark, everything else) CPU seconds between two samples of
/// (server CPU, benchmark CPU, machine busy time).
pub fn cpu_split(a: CpuSample, b: CpuSample) -> CpuSample {
    let server = a.0.zip(b.0).map(|(x, y)| y - x);
    let bench = a.1.zip(b.1).map(|(x, y)| y - x);
    let other = match (a.2.zip(b.2), server, bench) {
        (Some((x, y)), Some(s), Some(c)) => Some((y - x - s - c).max(0.0)),
        _ => None,
    };
    (server, bench, other)
}

/// Timing of one measured phase.
#[derive(Clone, Copy)]
pub struct PhaseConfig {
    pub clients: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

pub struct PhaseResult {
    pub requests: usize,
    pub errors: Errors,
    pub window_secs: f64,
    pub latency: Latency,
    /// Latency per request tag (e.g. per Level 0 query kind).
    pub by_tag: Vec<Latency>,
    /// Server / benchmark-process CPU time during the measured window, in seconds.
    pub server_cpu_secs: Option<f64>,
    pub bench_cpu_secs: Option<f64>,
    /// CPU the rest of the machine used meanwhile (busy time minus server and benchmark).
    pub other_cpu_secs: Option<f64>,
    /// Context switches of all server threads during the measured window.
    pub server_context_switches: Option<u64>,
}

impl PhaseResult {
    pub fn req_per_sec(&self) -> f64 {
        if self.window_secs > 0.0 {
            self.requests as f64 / self.window_secs
        } else {
            0.0
        }
    }

    /// Server CPU time per successful request, in microseconds.
    pub fn server_cpu_us_per_req(&self) -> Option<f64> {
        let cpu = self.server_cpu_secs?;
        (self.requests > 0).then(|| cpu * 1e6 / self.requests as f64)
    }

    /// Server context switches per successful request.
    pub fn context_switches_per_req(&self) -> Option<f64> {
        let cs = self.server_context_switches?;
        (self.requests > 0).then(|| cs as f64 / self.requests as f64)
    }
}
