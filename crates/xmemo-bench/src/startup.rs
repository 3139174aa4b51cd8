//! Target 7: cold start to a healthy `/healthz` on an existing database, and the server's
//! resident memory after start and after a light load.

use crate::corpus::Corpus;
use crate::load;
use crate::write_phase::{Common, WriteArgs, median_p90, met};
use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One `GET /healthz` over a fresh connection: true on HTTP 200.
fn healthy(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(n) if n >= 12 && &buf[9..12] == b"200")
}

pub(crate) fn spawn(bin: &Path, data_dir: &Path, port: u16) -> Result<Child> {
    Command::new(bin)
        .arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(data_dir)
        .current_dir(data_dir)
        .env_remove("XMEMO_CONFIG")
        .env(
            "XMEMO_LOG",
            std::env::var("XMEMO_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Starts and times one server; the child is still running when this returns.
fn cold_start(bin: &Path, data_dir: &Path) -> Result<(f64, Child, u16)> {
    let port = free_port()?;
    let t = Instant::now();
    let mut child = spawn(bin, data_dir, port)?;
    loop {
        if healthy(port) {
            return Ok((t.elapsed().as_secs_f64() * 1000.0, child, port));
        }
        if let Some(status) = child.try_wait()? {
            bail!("the server exited before it was healthy: {status}");
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            bail!("the server was not healthy within 60 s");
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<String> {
    if common.database_url.is_some() {
        bail!("the startup phase times SQLite in a data dir; run it without --database-url");
    }
    let data_dir: PathBuf = match &args.startup_data_dir {
        Some(d) => d.clone(),
        None => {
            let mut srv = common.start(true)?;
            let n = args.startup_skills;
            eprintln!(
                "xmemo-bench: startup: seeding {n} skills into {}",
                srv.data_dir.display()
            );
            let corpus = Arc::new(Corpus::new(common.corpus_seed, common.vocabulary));
            let r = load::seed(
                &srv.base_url,
                &srv.admin_key,
                corpus,
                0,
                n,
                common.seed_concurrency,
                srv.pid,
            )
            .await?;
            eprintln!(
                "  {} saves at {:.0}/s (data dir kept)",
                r.saves,
                r.saves_per_sec()
            );
            srv.stop();
            srv.data_dir.clone()
        }
    };
    let key = std::fs::read_to_string(data_dir.join("admin.key"))
        .context("the data dir has no admin.key")?
        .trim()
        .to_string();
    let runs = args.runs.clamp(3, 100);
    let mut times = Vec::new();
    let mut rss_start = Vec::new();
    for _ in 0..runs {
        let (ms, mut child, _) = cold_start(common.bin, &data_dir)?;
        times.push(ms);
        std::thread::sleep(Duration::from_millis(300));
        rss_start.push(rss_kib(child.id()) as f64 / 1024.0);
        let _ = child.kill();
        let _ = child.wait();
    }
    // Memory after a light load: 200 Level 1 reads, 50 searches, 20 saves.
    let (_, mut child, port) = cold_start(common.bin, &data_dir)?;
    let base = format!("http://127.0.0.1:{port}");
    let http = load::client()?;
    let corpus = Corpus::new(common.corpus_seed, common.vocabulary);
    let mut slugs = Vec::new();
    for i in 0..20 {
        let (slug, _) = corpus.skill(i);
        slugs.push(slug);
    }
    let mut failures = 0;
    for i in 0..200 {
        let r = http
            .get(format!("{base}/api/v1/skills/{}", slugs[i % slugs.len()]))
            .bearer_auth(&key)
            .send()
            .await?;
        failures += usize::from(!r.status().is_success());
    }
    for i in 0..50 {
        let q = slugs[i % slugs.len()]
            .split('-')
            .next()
            .unwrap_or("a")
            .to_string();
        let r = http
            .get(format!("{base}/api/v1/skills?query={q}&limit=10"))
            .bearer_auth(&key)
            .send()
            .await?;
        failures += usize::from(!r.status().is_success());
    }
    for i in 0..20 {
        let (_, mut body) = corpus.skill(10_000_000 + i);
        body["slug"] = format!("startup-load-{}-{i}", std::process::id()).into();
        let r = http
            .post(format!("{base}/api/v1/skills"))
            .bearer_auth(&key)
            .json(&body)
            .send()
            .await?;
        failures += usize::from(!r.status().is_success());
    }
    let rss_loaded = rss_kib(child.id()) as f64 / 1024.0;
    let _ = child.kill();
    let _ = child.wait();
    let (p50, p90) = median_p90(times.clone());
    let (rss50, _) = median_p90(rss_start);
    let db = data_dir.join("xmemo.db");
    let db_mib = std::fs::metadata(&db)
        .map(|m| m.len() as f64 / 1048576.0)
        .unwrap_or(0.0);
    Ok(format!(
        "startup: {runs} cold starts on {} ({db_mib:.0} MiB database): spawn → /healthz 200 p50 {p50:.1} / p90 {p90:.1} ms \
         (all: {}) [target ≤ 100 ms: {}]; RSS after start {rss50:.1} MiB, after a light load (200 reads, 50 searches, 20 saves; {failures} failures) {rss_loaded:.1} MiB [target ≤ 50 MiB: {}]",
        data_dir.display(),
        times
            .iter()
            .map(|t| format!("{t:.0}"))
            .collect::<Vec<_>>()
            .join(" "),
        met(p50 <= 100.0),
        met(rss50.max(rss_loaded) <= 50.0),
    ))
}
