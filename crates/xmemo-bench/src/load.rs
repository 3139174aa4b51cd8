//! Load generation: seeding with concurrent saves, and fixed-duration read phases with
//! N keep-alive clients. Every response status is checked; failures are counted and sampled.

use crate::calls::{CallFuture, Caller, run_calls};
use crate::corpus::{Corpus, Rng};
use crate::measure::{Errors, Latency, PhaseConfig, PhaseResult, cpu_split};
use crate::server::{cpu_seconds, machine_busy_seconds};
use anyhow::{Context, Result, anyhow};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One keep-alive HTTP/1.1 client (one per worker, as a separate agent process would have).
pub fn client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(4)
        .pool_idle_timeout(Duration::from_secs(300))
        .timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the HTTP client")
}

/// The server's `/metrics` page (the admin key reads it).
pub async fn metrics(http: &reqwest::Client, base: &str, key: &str) -> Result<String> {
    http.get(format!("{base}/metrics"))
        .bearer_auth(key)
        .send()
        .await
        .context("metrics")?
        .text()
        .await
        .context("metrics text")
}

/// The value of an unlabelled metric `name` in a `/metrics` page.
pub fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|l| {
        l.strip_prefix(name)?
            .strip_prefix(' ')?
            .trim()
            .parse::<f64>()
            .ok()
    })
}

/// One seeded skill: what L1 and L2 requests address.
#[derive(Clone, Debug)]
pub struct Seeded {
    pub index: usize,
    pub slug: String,
    pub revision_id: String,
}

pub struct SeedResult {
    pub from: usize,
    pub to: usize,
    pub saves: usize,
    pub created: usize,
    pub secs: f64,
    pub latency: Latency,
    pub errors: Errors,
    pub seeded: Vec<Seeded>,
    pub server_cpu_secs: Option<f64>,
    pub bench_cpu_secs: Option<f64>,
    pub other_cpu_secs: Option<f64>,
}

impl SeedResult {
    pub fn saves_per_sec(&self) -> f64 {
        if self.secs > 0.0 {
            self.saves as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// Saves skills `from..to` with `concurrency` clients.
pub async fn seed(
    base: &str,
    key: &str,
    corpus: Arc<Corpus>,
    from: usize,
    to: usize,
    concurrency: usize,
    server_pid: u32,
) -> Result<SeedResult> {
    let next = Arc::new(AtomicUsize::new(from));
    let done = Arc::new(AtomicUsize::new(0));
    let url = Arc::new(format!("{base}/api/v1/skills"));
    let key = Arc::new(key.to_string());
    let cpu0 = (
        cpu_seconds(Some(server_pid)),
        cpu_seconds(None),
        machine_busy_seconds(),
    );
    let start = Instant::now();
    let progress = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(15));
            tick.tick().await;
            loop {
                tick.tick().await;
                let n = done.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64();
                eprintln!(
                    "  … seeded {n}/{} ({:.0} saves/s so far)",
                    to - from,
                    n as f64 / secs
                );
            }
        })
    };
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (next, done, url, key, corpus) = (
            next.clone(),
            done.clone(),
            url.clone(),
            key.clone(),
            corpus.clone(),
        );
        workers.push(tokio::spawn(async move {
            let client = client()?;
            let mut lat = Vec::new();
            let mut errors = Errors::default();
            let mut seeded = Vec::new();
            let mut created = 0usize;
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= to {
                    break;
                }
                let (slug, body) = corpus.skill(index);
                let t0 = Instant::now();
                match save_one(&client, &url, &key, &body).await {
                    Ok((revision_id, was_created)) => {
                        lat.push(t0.elapsed().as_micros() as u64);
                        created += usize::from(was_created);
                        seeded.push(Seeded {
                            index,
                            slug,
                            revision_id,
                        });
                    }
                    Err(e) => errors.add(format!("save {slug}: {e:#}")),
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok((lat, errors, seeded, created))
        }));
    }
    let mut lat = Vec::new();
    let mut errors = Errors::default();
    let mut seeded = Vec::new();
    let mut created = 0;
    for w in workers {
        let (l, e, s, c) = w.await.context("a seeding worker panicked")??;
        lat.extend(l);
        errors.merge(e);
        seeded.extend(s);
        created += c;
    }
    let secs = start.elapsed().as_secs_f64();
    progress.abort();
    let cpu1 = (
        cpu_seconds(Some(server_pid)),
        cpu_seconds(None),
        machine_busy_seconds(),
    );
    let (server_cpu_secs, bench_cpu_secs, other_cpu_secs) = cpu_split(cpu0, cpu1);
    seeded.sort_by_key(|s| s.index);
    Ok(SeedResult {
        from,
        to,
        saves: seeded.len(),
        created,
        secs,
        latency: Latency::from_micros(lat),
        errors,
        seeded,
        server_cpu_secs,
        bench_cpu_secs,
        other_cpu_secs,
    })
}

async fn save_one(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: &Value,
) -> Result<(String, bool)> {
    let resp = client.post(url).bearer_auth(key).json(body).send().await?;
    let status = resp.status();
    let bytes = resp.bytes().await?;
    if !status.is_success() {
        return Err(anyhow!("HTTP {status}: {}", snippet(&bytes)));
    }
    let v: Value = serde_json::from_slice(&bytes).context("save response is not JSON")?;
    let revision_id = v
        .pointer("/data/revision_id")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("save response has no data.revision_id: {}", snippet(&bytes)))?
        .to_string();
    let created = v
        .pointer("/data/created")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((revision_id, created))
}

pub fn snippet(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Builds the path (under the base URL) of the next request and its tag.
pub type RequestGen = dyn Fn(&mut Rng) -> (usize, String) + Send + Sync;

/// One worker's keep-alive client issuing the GETs `generate` builds.
struct GetCaller {
    client: reqwest::Client,
    base: Arc<String>,
    key: Arc<String>,
    generate: Arc<RequestGen>,
}

impl Caller for GetCaller {
    fn call<'a>(&'a mut self, rng: &'a mut Rng) -> CallFuture<'a> {
        Box::pin(async move {
            let (tag, path) = (self.generate)(rng);
            let url = format!("{}{path}", self.base);
            let outcome = async {
                let resp = self
                    .client
                    .get(&url)
                    .bearer_auth(self.key.as_str())
                    .send()
                    .await?;
                let status = resp.status();
                let bytes = resp.bytes().await?;
                if status.is_success() {
                    Ok(())
                } else {
                    Err(anyhow!("HTTP {status} for {path}: {}", snippet(&bytes)))
                }
            }
            .await;
            (tag, outcome)
        })
    }
}

/// `cfg.clients` workers issue GETs back to back for warm-up + duration; only requests that
/// start inside the measured window are counted ([`run_calls`]).
pub async fn run_phase(
    base: &str,
    key: &str,
    cfg: PhaseConfig,
    tags: usize,
    seed: u64,
    server_pid: u32,
    generate: Arc<RequestGen>,
) -> Result<PhaseResult> {
    let base = Arc::new(base.to_string());
    let key = Arc::new(key.to_string());
    run_calls(cfg, tags, seed, &[server_pid], |_| {
        let caller = client().map(|client| GetCaller {
            client,
            base: base.clone(),
            key: key.clone(),
            generate: generate.clone(),
        });
        async move { caller }
    })
    .await
}
