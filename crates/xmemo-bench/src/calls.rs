//! Fixed-duration phases over any request/response client (MCP over HTTP, over stdio, the
//! peer server): `clients` workers, each with its own [`Caller`], call back to back for
//! warm-up + duration; only calls that start inside the measured window are counted.
//! [`crate::load::run_phase`] is its REST (GET) caller, so `load` sits above this module and
//! both take their figures from `crate::measure`.

use crate::corpus::Rng;
use crate::measure::{CpuSample, Errors, Latency, PhaseConfig, PhaseResult, cpu_split};
use crate::server::{context_switches, cpu_seconds, machine_busy_seconds};
use anyhow::{Context, Result};
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// The outcome of one call: its tag (e.g. the query kind) and whether it succeeded.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = (usize, Result<()>)> + Send + 'a>>;

/// One worker's connection.
pub trait Caller: Send + 'static {
    fn call<'a>(&'a mut self, rng: &'a mut Rng) -> CallFuture<'a>;
}

/// Runs one phase; `make(worker)` opens each worker's connection before the clock starts.
pub async fn run_calls<C, F, Fut>(
    cfg: PhaseConfig,
    tags: usize,
    seed: u64,
    server_pids: &[u32],
    make: F,
) -> Result<PhaseResult>
where
    C: Caller,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let mut callers = Vec::new();
    for w in 0..cfg.clients.max(1) {
        callers.push(make(w).await?);
    }
    let now = Instant::now();
    let measure_start = now + cfg.warmup;
    let measure_end = measure_start + cfg.duration;
    let pids = server_pids.to_vec();
    let cpu_start = tokio::spawn(async move {
        tokio::time::sleep_until(measure_start.into()).await;
        sample(&pids)
    });
    let mut workers = Vec::new();
    for (w, mut caller) in callers.into_iter().enumerate() {
        workers.push(tokio::spawn(async move {
            let mut rng = Rng::new(seed ^ ((w as u64 + 1) << 32));
            let mut samples: Vec<(usize, u64)> = Vec::new();
            let mut errors = Errors::default();
            loop {
                let t0 = Instant::now();
                if t0 >= measure_end {
                    break;
                }
                let (tag, outcome) = caller.call(&mut rng).await;
                let micros = t0.elapsed().as_micros() as u64;
                if t0 < measure_start {
                    continue;
                }
                match outcome {
                    Ok(()) => samples.push((tag, micros)),
                    Err(e) => errors.add(format!("{e:#}")),
                }
            }
            (samples, errors)
        }));
    }
    let mut all = Vec::new();
    let mut per_tag: Vec<Vec<u64>> = vec![Vec::new(); tags.max(1)];
    let mut errors = Errors::default();
    for w in workers {
        let (samples, e) = w.await.context("a load worker panicked")?;
        errors.merge(e);
        for (tag, us) in samples {
            all.push(us);
            if let Some(v) = per_tag.get_mut(tag) {
                v.push(us);
            }
        }
    }
    let ended = Instant::now();
    let (cpu0, cs0) = cpu_start.await.unwrap_or(((None, None, None), None));
    let (cpu1, cs1) = sample(server_pids);
    let (server, bench, other) = cpu_split(cpu0, cpu1);
    let window_secs = ended
        .saturating_duration_since(measure_start)
        .as_secs_f64()
        .max(cfg.duration.as_secs_f64());
    Ok(PhaseResult {
        requests: all.len(),
        errors,
        window_secs,
        latency: Latency::from_micros(all),
        by_tag: per_tag.into_iter().map(Latency::from_micros).collect(),
        server_cpu_secs: server,
        bench_cpu_secs: bench,
        other_cpu_secs: other,
        server_context_switches: cs0.zip(cs1).map(|(a, b)| b.saturating_sub(a)),
    })
}

type Sample = (CpuSample, Option<u64>);

/// CPU seconds of the server processes (summed), of this process and of the machine, and the
/// servers' context switches.
fn sample(pids: &[u32]) -> Sample {
    let server: Option<f64> = pids
        .iter()
        .map(|p| cpu_seconds(Some(*p)))
        .try_fold(0.0, |acc, c| c.map(|c| acc + c));
    let cs: Option<u64> = pids
        .iter()
        .map(|p| context_switches(*p))
        .try_fold(0, |acc, c| c.map(|c| acc + c));
    ((server, cpu_seconds(None), machine_busy_seconds()), cs)
}
