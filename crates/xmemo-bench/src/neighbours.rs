//! Issue #29 items 7 and 2 (`--write-phases neighbours`): does one account's writing slow
//! another account's search? A reader account's memories are seeded, then the reader's memory
//! recall and Level 0 search are measured with `--clients` clients: idle and while a second
//! account's 8 writers save 16 KiB memories at that account's full default write rate (1,200
//! a minute, paced here because the benchmarked server runs with the write rate off so the
//! seeding is quick), in alternating 5 s windows (`--neighbours-secs` of each, so the host's
//! noise weighs on both alike); then while they write as fast as they can (the write rate
//! off). The target: the reader's p99 while the writer writes at its full rate ≤ 2× idle.
//!
//! Then the restart: the writer's account is filled to `--neighbours-restart-memories` 16 KiB
//! memories, the server restarted on the same data directory, and the time from its start to
//! its listening, to a ready `/readyz` (its search indexes built), and the first recall sent at
//! once after listening are printed (the first search after a restart used to wait for the
//! whole build on its own path).

use crate::load::client;
use crate::measure::Latency;
use crate::memories::{self, MemoryCorpus, QueryKind};
use crate::write_phase::{Common, WriteArgs, met};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The default write rate of an account (docs/limits.md), per second.
const FULL_RATE_PER_SEC: f64 = 1200.0 / 60.0;
const WRITERS: usize = 8;
/// A memory's content at its largest (SPEC §9: 16 KiB).
const CONTENT_BYTES: usize = 16 * 1024 - 64;
const SKILLS: usize = 500;
/// The idle and full-rate phases alternate in windows of this length.
const WINDOW: Duration = Duration::from_secs(5);
/// Writers started so far.
static STARTS: AtomicU64 = AtomicU64::new(0);

/// The writers' own runtime, one thread: they are other clients than the reader's, and
/// making and sending their 16 KiB bodies on the reader's runtime delayed the reader's
/// measured requests (a bench artifact, not the server's doing).
static WRITER_CLIENTS: std::sync::LazyLock<tokio::runtime::Runtime> =
    std::sync::LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("bench-writers")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("the writers' runtime: {e}"))
    });

/// A memory of the writer: 16 KiB of words, different each time.
fn long_memory(n: u64) -> Value {
    let mut text = format!("writer note {n}: ");
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while text.len() < CONTENT_BYTES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("w{:x} ", x % 40_000));
    }
    text.truncate(CONTENT_BYTES);
    json!({"kind": "note", "content": text})
}

/// The writer account and its key, made by the operator command on the server's database.
fn writer_key(bin: &Path, data_dir: &Path) -> Result<String> {
    let out = Command::new(bin)
        .args(["admin", "--json", "--data-dir"])
        .arg(data_dir)
        .args(["account", "create", "writer", "--with-key"])
        .env_remove("XMEMO_CONFIG")
        .stdin(Stdio::null())
        .output()
        .context("xmemo admin account create")?;
    if !out.status.success() {
        bail!(
            "xmemo admin account create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: Value = serde_json::from_slice(&out.stdout).context("admin --json output")?;
    v["key"]["key"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("no key in {v}"))
}

/// Writers until `stop`: `paced` at the full default rate in all, or as fast as they go.
fn start_writers(
    base: &str,
    key: &str,
    paced: bool,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<Result<()>>> {
    let started = Instant::now();
    // Every start writes contents of its own (the same content twice is one memory).
    let contents = 1_000_000 * (STARTS.fetch_add(1, Ordering::Relaxed) + 1);
    (0..WRITERS)
        .map(|w| {
            let (url, key, stop, written) = (
                format!("{base}/api/v1/memories"),
                key.to_string(),
                stop.clone(),
                written.clone(),
            );
            WRITER_CLIENTS.spawn(async move {
                let http = client()?;
                let mut n = w as u64;
                while !stop.load(Ordering::Relaxed) {
                    if paced {
                        // Writer w's k-th write is due at (k·WRITERS + w) / rate.
                        let due = Duration::from_secs_f64(n as f64 / FULL_RATE_PER_SEC);
                        if let Some(wait) = due.checked_sub(started.elapsed()) {
                            tokio::time::sleep(wait).await;
                        }
                    }
                    let r = http
                        .post(&url)
                        .bearer_auth(&key)
                        .json(&long_memory(contents + n))
                        .send()
                        .await
                        .context("writer remember")?;
                    let status = r.status();
                    if !status.is_success() {
                        bail!("writer remember answered {status}: {}", r.text().await?);
                    }
                    written.fetch_add(1, Ordering::Relaxed);
                    n += WRITERS as u64;
                }
                Ok(())
            })
        })
        .collect()
}

/// The reader's searches for `duration` with `clients` clients: memory recall and Level 0,
/// alternately: each one's latencies in microseconds.
async fn reader_load(
    base: &str,
    key: &str,
    corpus: Arc<MemoryCorpus>,
    seeded: usize,
    clients: usize,
    duration: Duration,
) -> Result<(Vec<u64>, Vec<u64>)> {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for c in 0..clients.max(1) {
        let (base, key, corpus) = (base.to_string(), key.to_string(), corpus.clone());
        tasks.push(tokio::spawn(async move {
            let http = client()?;
            let mut rng = crate::corpus::Rng::new(0x5EA ^ c as u64);
            let (mut recall, mut level0) = (Vec::new(), Vec::new());
            let mut turn = 0usize;
            while Instant::now() < deadline {
                let text = corpus.query(rng.below(seeded), QueryKind::Exact, &mut rng);
                let path = if turn.is_multiple_of(2) {
                    "/api/v1/memories"
                } else {
                    "/api/v1/skills"
                };
                let mut url = reqwest::Url::parse(&format!("{base}{path}"))?;
                url.query_pairs_mut()
                    .append_pair("query", &text)
                    .append_pair("limit", "10");
                let t = Instant::now();
                let r = http.get(url).bearer_auth(&key).send().await?;
                let status = r.status();
                let _ = r.bytes().await?;
                if !status.is_success() {
                    bail!("reader search answered {status}");
                }
                let us = t.elapsed().as_micros() as u64;
                if turn.is_multiple_of(2) {
                    recall.push(us);
                } else {
                    level0.push(us);
                }
                turn += 1;
            }
            Ok::<_, anyhow::Error>((recall, level0))
        }));
    }
    let (mut recall, mut level0) = (Vec::new(), Vec::new());
    for t in tasks {
        let (r, l) = t.await.context("reader task")??;
        recall.extend(r);
        level0.extend(l);
    }
    Ok((recall, level0))
}

fn latencies((recall, level0): (Vec<u64>, Vec<u64>)) -> (Latency, Latency) {
    (Latency::from_micros(recall), Latency::from_micros(level0))
}

/// Published skills of the reader, named from the memory corpus's words so Level 0 has rows
/// to rank.
async fn seed_skills(base: &str, key: &str, corpus: &MemoryCorpus) -> Result<()> {
    let http = client()?;
    for i in 0..SKILLS {
        let m = corpus.memory(i);
        let content = m["content"].as_str().unwrap_or("a procedure");
        let r = http
            .post(format!("{base}/api/v1/skills"))
            .bearer_auth(key)
            .json(&json!({
                "slug": format!("reader-skill-{i}"),
                "name": content.split(' ').take(3).collect::<Vec<_>>().join(" "),
                "description": content.chars().take(300).collect::<String>(),
                "instruction_body": content,
                "intent": "publish",
            }))
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("seeding skill {i}: {}", r.text().await?);
        }
    }
    Ok(())
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn row(name: &str, recall: &Latency, level0: &Latency, writes_per_sec: f64) -> String {
    format!(
        "{name:<34} {:>8.0} {:>8.2} {:>8.2} {:>8.1}   {:>8.2} {:>8.2} {:>8.1}   {:>6}/{:<6}\n",
        writes_per_sec,
        ms(recall.p50_us),
        ms(recall.p99_us),
        ms(recall.max_us),
        ms(level0.p50_us),
        ms(level0.p99_us),
        ms(level0.max_us),
        recall.count,
        level0.count,
    )
}

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<String> {
    if common.database_url.is_some() {
        bail!("the neighbours phase runs on SQLite in a data dir; run it without --database-url");
    }
    let mut srv = common.start(true)?;
    let seeded = args.neighbours_memories;
    let corpus = Arc::new(MemoryCorpus::new(common.corpus_seed, common.vocabulary));
    eprintln!(
        "xmemo-bench: neighbours: seeding {seeded} memories and {SKILLS} skills of the reader"
    );
    let mut ids = Vec::new();
    memories::seed(
        &srv.base_url,
        &srv.admin_key,
        corpus.clone(),
        0,
        seeded,
        common.seed_concurrency,
        &mut ids,
    )
    .await?;
    seed_skills(&srv.base_url, &srv.admin_key, &corpus).await?;
    let writer = writer_key(common.bin, &srv.data_dir)?;
    let duration = Duration::from_secs(args.neighbours_secs);
    let clients = args.neighbours_clients;
    let mut out = format!(
        "== neighbours: the reader's search ({seeded} memories, {SKILLS} skills, {clients} clients, {} s a phase) while another account writes 16 KiB memories with {WRITERS} writers ==\n\
         {:<34} {:>8} {:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}   {:>13}\n",
        duration.as_secs(),
        "phase",
        "writes/s",
        "rec p50",
        "rec p99",
        "rec max",
        "L0 p50",
        "L0 p99",
        "L0 max",
        "requests",
    );
    let (base, key) = (srv.base_url.clone(), srv.admin_key.clone());
    let load = |d: Duration| reader_load(&base, &key, corpus.clone(), seeded, clients, d);
    // Warm-up; then idle and the writer at its full rate in alternating windows, so the
    // host's noise (this VM shares its host: a 30 s phase each moved the ratio ±0.3 between
    // runs) weighs on both alike.
    load(Duration::from_secs(2)).await?;
    let windows = (duration.as_secs() / WINDOW.as_secs()).max(1);
    let (mut idle, mut paced) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    let (mut paced_writes, mut paced_time) = (0u64, Duration::ZERO);
    for _ in 0..windows {
        let (r, l) = load(WINDOW).await?;
        idle.0.extend(r);
        idle.1.extend(l);
        let (written, took, (r, l)) =
            while_writing(&srv.base_url, &writer, true, || load(WINDOW)).await?;
        paced.0.extend(r);
        paced.1.extend(l);
        paced_writes += written;
        paced_time += took;
    }
    let (idle_recall, idle_l0) = latencies(idle);
    let (recall, l0) = latencies(paced);
    out.push_str(&row("idle", &idle_recall, &idle_l0, 0.0));
    out.push_str(&row(
        "writer at its full rate (1,200/min)",
        &recall,
        &l0,
        paced_writes as f64 / paced_time.as_secs_f64(),
    ));
    let r = recall.p99_us as f64 / idle_recall.p99_us.max(1) as f64;
    let l = l0.p99_us as f64 / idle_l0.p99_us.max(1) as f64;
    let verdict = format!(
        "reader p99 while the writer writes at its full rate ≤ 2× idle: recall {r:.2}×, Level 0 {l:.2}× — {}",
        met(r <= 2.0 && l <= 2.0)
    );
    let (written, took, (r, l)) =
        while_writing(&srv.base_url, &writer, false, || load(duration)).await?;
    let (recall, l0) = latencies((r, l));
    out.push_str(&row(
        "writer unpaced (write rate off)",
        &recall,
        &l0,
        written as f64 / took.as_secs_f64(),
    ));
    // Restart: the writer's account filled with long memories, then a cold start.
    let target = args.neighbours_restart_memories;
    if target > 0 {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        eprintln!(
            "xmemo-bench: neighbours: filling the writer's account to {target} memories of 16 KiB"
        );
        let writers = start_writers(&srv.base_url, &writer, false, stop.clone(), written.clone());
        while written.load(Ordering::Relaxed) < target as u64 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.await.context("writer task")??;
        }
        let data_dir = srv.data_dir.clone();
        srv.stop();
        let restart = restart(common.bin, &data_dir, &srv.admin_key, &corpus).await?;
        out.push_str(&format!(
            "restart with {seeded} + {} memories ({:.0} MiB of text): listening after {:.0} ms, /readyz ready after {:.0} ms; a recall sent at once after listening answered {} in {:.1} ms; the first recall answered 200 came {:.0} ms after the start\n",
            written.load(Ordering::Relaxed),
            (written.load(Ordering::Relaxed) as f64 * CONTENT_BYTES as f64) / 1048576.0,
            restart.listening_ms,
            restart.ready_ms,
            restart.first_recall_status,
            restart.first_recall_ms,
            restart.found_ms,
        ));
    } else {
        srv.stop();
    }
    out.push_str(&verdict);
    out.push('\n');
    Ok(out)
}

/// Runs `measure` while the writer's 8 writers save (`paced` at the full rate, or as fast as
/// they go): the writes made while it ran, how long it ran, and what it measured.
async fn while_writing<T, F: std::future::Future<Output = Result<T>>>(
    base: &str,
    writer: &str,
    paced: bool,
    measure: impl FnOnce() -> F,
) -> Result<(u64, Duration, T)> {
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writers = start_writers(base, writer, paced, stop.clone(), written.clone());
    // The writers' first requests are under way before the measure starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = written.load(Ordering::Relaxed);
    let t = Instant::now();
    let measured = measure().await?;
    let took = t.elapsed();
    let made = written.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.context("writer task")??;
    }
    Ok((made, took, measured))
}

struct Restart {
    listening_ms: f64,
    ready_ms: f64,
    /// How long the recall sent at once after listening took, and its HTTP status.
    first_recall_ms: f64,
    first_recall_status: u16,
    /// From the start to the first recall answered 200.
    found_ms: f64,
}

async fn restart(bin: &Path, data_dir: &Path, key: &str, corpus: &MemoryCorpus) -> Result<Restart> {
    let port = crate::startup::free_port()?;
    let t = Instant::now();
    let mut child = crate::startup::spawn(bin, data_dir, port)?;
    let base = format!("http://127.0.0.1:{port}");
    let http = client()?;
    let result = async {
        let listening_ms = loop {
            if http.get(format!("{base}/healthz")).send().await.is_ok() {
                break t.elapsed().as_secs_f64() * 1000.0;
            }
            if t.elapsed() > Duration::from_secs(120) {
                bail!("the restarted server did not listen within 120 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let mut rng = crate::corpus::Rng::new(7);
        let mut url = reqwest::Url::parse(&format!("{base}/api/v1/memories"))?;
        url.query_pairs_mut()
            .append_pair("query", &corpus.query(1, QueryKind::Exact, &mut rng));
        let q = Instant::now();
        let r = http.get(url.clone()).bearer_auth(key).send().await?;
        let first_recall_ms = q.elapsed().as_secs_f64() * 1000.0;
        let first_recall_status = r.status().as_u16();
        // While the indexes are built a recall is answered 503 (retryable) after a short wait.
        let found_ms = if r.status().is_success() {
            t.elapsed().as_secs_f64() * 1000.0
        } else if first_recall_status == 503 {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let r = http.get(url.clone()).bearer_auth(key).send().await?;
                if r.status().is_success() {
                    break t.elapsed().as_secs_f64() * 1000.0;
                }
                if r.status().as_u16() != 503 || t.elapsed() > Duration::from_secs(300) {
                    bail!("a recall after the restart answered {}", r.status());
                }
            }
        } else {
            bail!("the first recall answered {}", r.status());
        };
        let ready_ms = loop {
            let r = http.get(format!("{base}/readyz")).send().await?;
            if r.status().is_success() {
                break t.elapsed().as_secs_f64() * 1000.0;
            }
            if t.elapsed() > Duration::from_secs(300) {
                bail!("the restarted server was not ready within 300 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        Ok(Restart {
            listening_ms,
            ready_ms,
            first_recall_ms,
            first_recall_status,
            found_ms,
        })
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    result
}
