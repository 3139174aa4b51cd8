//! `--embed-endpoint` (issue #29 item 6): memory recall p50/p99 with the semantic lane off,
//! and with an OpenAI-compatible embeddings endpoint this benchmark serves itself (HTTP/1.1
//! on 127.0.0.1, one answer per connection): answering at once, failing (500 at once) and
//! slow (answering after `--embed-slow-secs`). A failing or slow endpoint is measured twice:
//! from the server's start, and switched on after the memories were seeded and embedded by a
//! healthy one (an endpoint going down in service; the first recalls after the switch are
//! measured too). Target: recall p99 with a failing or slow endpoint ≤ 2× the lane-off p99.
//!
//! Each scenario starts its own server on a fresh SQLite data directory and seeds
//! `--embed-memories` memories of the `--memories` corpus; recall is measured with one client
//! for `--duration-secs`, then with the largest of `--clients`.

use crate::load;
use crate::memories::{self, MemoryCorpus};
use crate::server::{Budgets, Server, StartOptions};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::Path;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(clap::Args, Debug, Clone)]
pub struct EmbedEndpointArgs {
    /// Measure memory recall with the semantic lane off and against a failing and a slow
    /// embeddings endpoint, instead of the read benchmark (SQLite)
    #[arg(long)]
    pub embed_endpoint: bool,
    /// embed-endpoint: memories seeded on each scenario's server
    #[arg(long, default_value_t = 2000)]
    pub embed_memories: usize,
    /// embed-endpoint: seconds the slow endpoint takes to answer
    #[arg(long, default_value_t = 3.0)]
    pub embed_slow_secs: f64,
}

/// Length of the fake endpoint's vectors.
const DIMS: usize = 64;
/// How long a healthy endpoint may take to embed the seeded memories.
const EMBEDDED_WITHIN: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug)]
enum Answer {
    Vectors,
    Fail,
    Slow(Duration),
}

#[derive(Clone, Copy)]
struct Scenario {
    label: &'static str,
    /// `None`: the lane is off.
    at_start: Option<Answer>,
    /// What the endpoint answers once the memories are seeded (and embedded).
    then: Option<Answer>,
}

/// What this benchmark takes from the main arguments (given by `main`, so this module does
/// not depend on the crate root).
pub struct Settings {
    pub embed_endpoint: EmbedEndpointArgs,
    pub database_url: Option<String>,
    pub corpus_seed: u64,
    pub vocabulary: usize,
    pub duration_secs: u64,
    pub clients: Vec<usize>,
    pub keep_data: bool,
    pub data_parent: Option<PathBuf>,
    pub seed_concurrency: usize,
}

pub async fn run(args: &Settings, bin: &Path) -> Result<()> {
    let opts = &args.embed_endpoint;
    if args.database_url.is_some() {
        bail!("--embed-endpoint starts a server per scenario and runs on SQLite only");
    }
    let slow = Answer::Slow(Duration::from_secs_f64(opts.embed_slow_secs.max(0.0)));
    let scenarios = [
        Scenario {
            label: "lane off",
            at_start: None,
            then: None,
        },
        Scenario {
            label: "endpoint answers at once",
            at_start: Some(Answer::Vectors),
            then: None,
        },
        Scenario {
            label: "fails (500) after start",
            at_start: Some(Answer::Vectors),
            then: Some(Answer::Fail),
        },
        Scenario {
            label: "slow after start",
            at_start: Some(Answer::Vectors),
            then: Some(slow),
        },
        Scenario {
            label: "fails (500) from start",
            at_start: Some(Answer::Fail),
            then: None,
        },
        Scenario {
            label: "slow from start",
            at_start: Some(slow),
            then: None,
        },
    ];
    let corpus = Arc::new(MemoryCorpus::new(args.corpus_seed, args.vocabulary));
    let duration = Duration::from_secs(args.duration_secs.max(1));
    let clients = args.clients.iter().copied().max().unwrap_or(32).max(1);
    let mut rows = Vec::new();
    let mut off_p99 = None;
    for scenario in scenarios {
        eprintln!("xmemo-bench: embed-endpoint: {}", scenario.label);
        // A scenario that fails (a server that does not start) is a row, not the end.
        let line = match measure(args, bin, scenario, corpus.clone(), duration, clients).await {
            Ok(row) => {
                if scenario.at_start.is_none() {
                    off_p99 = Some((row.one.p99_us, row.many.p99_us));
                }
                row.line(scenario.label, clients, off_p99)
            }
            Err(e) => format!(
                "{:<26} FAILED: {}",
                scenario.label,
                format!("{e:#}").lines().next().unwrap_or("")
            ),
        };
        eprintln!("{line}");
        rows.push(line);
    }
    println!(
        "\nxmemo-bench --embed-endpoint (SQLite, {} memories, {} s per phase, slow = {:.1} s; \
         target: p99 <= 2x lane off)",
        opts.embed_memories,
        duration.as_secs(),
        opts.embed_slow_secs
    );
    println!(
        "{:<26} {:>9}  {:>30}  {:>36}  {:>15}",
        "endpoint",
        "listening",
        "1 client p50 / p99 / max ms",
        format!("{clients} clients req/s, p50 / p99 / max ms"),
        "p99 / lane off"
    );
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

struct Row {
    listening: Duration,
    one: crate::measure::Latency,
    rate: f64,
    many: crate::measure::Latency,
}

impl Row {
    fn line(&self, label: &str, clients: usize, off: Option<(u64, u64)>) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        let ratio = match off {
            Some((one, many)) if one > 0 && many > 0 => format!(
                "{:.2}x / {:.2}x",
                self.one.p99_us as f64 / one as f64,
                self.many.p99_us as f64 / many as f64
            ),
            _ => "-".into(),
        };
        format!(
            "{label:<26} {:>8.2}s  {:>8.2} / {:>8.2} / {:>8.1}  {:>7.0} ({clients:>2}) {:>7.2} / {:>7.2} / {:>7.1}  {ratio:>15}",
            self.listening.as_secs_f64(),
            ms(self.one.p50_us),
            ms(self.one.p99_us),
            ms(self.one.max_us),
            self.rate,
            ms(self.many.p50_us),
            ms(self.many.p99_us),
            ms(self.many.max_us),
        )
    }
}

async fn measure(
    args: &Settings,
    bin: &Path,
    scenario: Scenario,
    corpus: Arc<MemoryCorpus>,
    duration: Duration,
    clients: usize,
) -> Result<Row> {
    let endpoint = match scenario.at_start {
        Some(answer) => Some(FakeEndpoint::start(answer).await?),
        None => None,
    };
    let url = endpoint.as_ref().map(FakeEndpoint::base_url);
    let mut env: Vec<(&str, &str)> = vec![
        ("XMEMO_WRITE_RATE", "0"),
        ("XMEMO_TEAM_CREATION_LIMIT", "0"),
        ("XMEMO_QUOTA_MEMORIES", "0"),
        ("XMEMO_QUOTA_SKILLS", "0"),
        ("XMEMO_QUOTA_BYTES", "0"),
    ];
    if let Some(url) = &url {
        env.push(("XMEMO_EMBEDDINGS_URL", url));
        env.push(("XMEMO_EMBEDDING_MODEL", "bench-model"));
    }
    let started = Instant::now();
    let mut srv = Server::start(&StartOptions {
        bin,
        database_url: None,
        admin_key_file: None,
        keep_data: args.keep_data,
        data_parent: args.data_parent.as_deref(),
        budgets: Budgets::Defaults(&env),
    })?;
    let listening = started.elapsed();
    let n = args.embed_endpoint.embed_memories.max(1);
    let mut ids = Vec::new();
    memories::seed(
        &srv.base_url,
        &srv.admin_key,
        corpus.clone(),
        0,
        n,
        args.seed_concurrency,
        &mut ids,
    )
    .await?;
    // The first recall builds the full-text index: not a recall latency.
    let warm = load::client()?
        .get(format!("{}/api/v1/memories?query=warm+up", srv.base_url))
        .bearer_auth(&srv.admin_key)
        .send()
        .await?;
    if !warm.status().is_success() {
        bail!("the warm-up recall answered {}", warm.status());
    }
    if let (Some(endpoint), Some(then)) = (&endpoint, scenario.then) {
        wait_until_embedded(&srv, n).await?;
        endpoint.answer_with(then);
    }
    let (_, one) = memories::throughput(
        &srv.base_url,
        &srv.admin_key,
        corpus.clone(),
        n,
        1,
        duration,
    )
    .await?;
    let (rate, many) = memories::throughput(
        &srv.base_url,
        &srv.admin_key,
        corpus.clone(),
        n,
        clients,
        duration,
    )
    .await?;
    if !srv.alive() {
        bail!("the server exited: {}", srv.stderr_tail());
    }
    srv.stop();
    Ok(Row {
        listening,
        one,
        rate,
        many,
    })
}

/// Waits until the lane is ok and holds a vector per seeded memory.
async fn wait_until_embedded(srv: &Server, memories: usize) -> Result<()> {
    let http = load::client()?;
    let deadline = Instant::now() + EMBEDDED_WITHIN;
    loop {
        let ready: Value = http
            .get(format!("{}/readyz", srv.base_url))
            .send()
            .await?
            .json()
            .await?;
        let metrics = load::metrics(&http, &srv.base_url, &srv.admin_key).await?;
        let vectors = load::gauge(&metrics, "xmemo_semantic_vectors").unwrap_or(0.0);
        if ready["semantic"]["state"] == "ok" && vectors >= memories as f64 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the lane did not embed {memories} memories in time: {ready}, {vectors} vectors");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An OpenAI-compatible embeddings endpoint served by the benchmark itself.
struct FakeEndpoint {
    addr: std::net::SocketAddr,
    answer: Arc<Mutex<Answer>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeEndpoint {
    async fn start(answer: Answer) -> Result<FakeEndpoint> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen for the fake embeddings endpoint")?;
        let addr = listener.local_addr()?;
        let answer = Arc::new(Mutex::new(answer));
        let shared = answer.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                let answer = *shared.lock().unwrap_or_else(|p| p.into_inner());
                tokio::spawn(answer_one(socket, answer));
            }
        });
        Ok(FakeEndpoint { addr, answer, task })
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn answer_with(&self, answer: Answer) {
        *self.answer.lock().unwrap_or_else(|p| p.into_inner()) = answer;
    }
}

impl Drop for FakeEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer_one(mut socket: tokio::net::TcpStream, answer: Answer) {
    let Some(body) = read_body(&mut socket).await else {
        return;
    };
    let (status, body) = match answer {
        Answer::Fail => (
            500,
            r#"{"error":{"message":"the model is not loaded"}}"#.to_string(),
        ),
        Answer::Vectors => (200, vectors_for(&body)),
        Answer::Slow(delay) => {
            tokio::time::sleep(delay).await;
            (200, vectors_for(&body))
        }
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        if status == 200 {
            "OK"
        } else {
            "Internal Server Error"
        },
        body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// The body of one request (its head read up to 64 KiB, its body by `content-length`).
async fn read_body(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf[end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(body)
}

/// An OpenAI-shaped answer: per input text, a bag of its hashed words.
fn vectors_for(request: &[u8]) -> String {
    let request: Value = serde_json::from_slice(request).unwrap_or(Value::Null);
    let texts: Vec<&str> = request["input"]
        .as_array()
        .map(|a| a.iter().map(|t| t.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut v = vec![0.0f32; DIMS];
            for word in text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
                for b in word.to_lowercase().bytes() {
                    hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
                v[(hash % DIMS as u64) as usize] += 1.0;
            }
            v[0] += 0.01;
            json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    json!({"object": "list", "data": data, "model": "bench-model"}).to_string()
}
