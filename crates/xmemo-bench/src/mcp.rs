//! MCP phases: `recall_cloud_skill` at Levels 0, 1 and 2 over streamable HTTP (a raw
//! sequential JSON-RPC client on one keep-alive connection per worker: no SDK, no session)
//! and over the stdio bridge (`xmemo mcp`, one bridge process per worker), with the MCP
//! 2026-07-28 request shape (`_meta` and the mirrored `Mcp-*` headers; no `initialize`).

use crate::calls::{CallFuture, Caller, run_calls};
use crate::corpus::{Corpus, QueryKind, Rng, SCRIPT_PATH};
use crate::load::{Seeded, snippet};
use crate::measure::{PhaseConfig, PhaseResult};
use crate::report::Level;
use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub const PROTOCOL: &str = "2026-07-28";

/// The transport of an MCP phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Http,
    Stdio,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Http => "MCP/HTTP",
            Transport::Stdio => "MCP/stdio",
        }
    }
}

/// The `recall_cloud_skill` arguments of the next call and its tag (the L0 query kind).
pub type ArgsGen = dyn Fn(&mut Rng) -> (usize, Value) + Send + Sync;

pub fn args_gen(level: Level, corpus: Arc<Corpus>, skills: Arc<Vec<Seeded>>) -> Arc<ArgsGen> {
    match level {
        Level::L0 => Arc::new(move |rng: &mut Rng| {
            let tag = rng.below(QueryKind::ALL.len());
            let slug = &skills[rng.below(skills.len())].slug;
            let q = corpus.query(rng, QueryKind::ALL[tag], slug);
            (tag, json!({"query": q, "limit": 10}))
        }),
        Level::L1 => Arc::new(move |rng: &mut Rng| {
            let s = &skills[rng.below(skills.len())];
            (0, json!({"slug": s.slug}))
        }),
        Level::L2 => Arc::new(move |rng: &mut Rng| {
            let s = &skills[rng.below(skills.len())];
            (
                0,
                json!({"slug": s.slug, "revision_id": s.revision_id, "resource": SCRIPT_PATH}),
            )
        }),
    }
}

/// A `tools/call` request of the 2026-07-28 shape.
pub fn tool_call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientInfo": {"name": "xmemo-bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        }
    })
}

/// A JSON-RPC answer that is a successful tool result.
pub fn check_result(v: &Value) -> Result<()> {
    if let Some(e) = v.get("error") {
        bail!("JSON-RPC error: {e}");
    }
    let result = v
        .get("result")
        .ok_or_else(|| anyhow!("no result: {}", snippet(v.to_string().as_bytes())))?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        bail!("tool error: {}", snippet(result.to_string().as_bytes()));
    }
    Ok(())
}

struct HttpCaller {
    client: reqwest::Client,
    url: Arc<String>,
    key: Arc<String>,
    generate: Arc<ArgsGen>,
    next_id: u64,
}

impl Caller for HttpCaller {
    fn call<'a>(&'a mut self, rng: &'a mut Rng) -> CallFuture<'a> {
        Box::pin(async move {
            let (tag, args) = (self.generate)(rng);
            self.next_id += 1;
            let body = tool_call(self.next_id, "recall_cloud_skill", args);
            let outcome = async {
                let resp = self
                    .client
                    .post(self.url.as_str())
                    .bearer_auth(self.key.as_str())
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", PROTOCOL)
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", "recall_cloud_skill")
                    .body(body.to_string())
                    .send()
                    .await?;
                let status = resp.status();
                let bytes = resp.bytes().await?;
                if !status.is_success() {
                    bail!("HTTP {status}: {}", snippet(&bytes));
                }
                let v: Value = serde_json::from_slice(&bytes)
                    .with_context(|| format!("not JSON: {}", snippet(&bytes)))?;
                check_result(&v)
            }
            .await;
            (tag, outcome)
        })
    }
}

/// A child process speaking newline-delimited JSON-RPC on stdio.
pub struct StdioPeer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl StdioPeer {
    pub fn spawn(mut cmd: Command) -> Result<Self> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().context("cannot start the stdio MCP server")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends one message; with an `id`, reads lines until the answer with that id.
    pub async fn request(&mut self, msg: &Value) -> Result<Value> {
        let mut text = msg.to_string();
        text.push('\n');
        self.stdin.write_all(text.as_bytes()).await?;
        self.stdin.flush().await?;
        let Some(id) = msg.get("id") else {
            return Ok(Value::Null);
        };
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line).await? == 0 {
                bail!("the stdio server closed its output");
            }
            let Ok(v) = serde_json::from_str::<Value>(self.line.trim()) else {
                continue;
            };
            if v.get("id") == Some(id) {
                return Ok(v);
            }
        }
    }
}

struct StdioCaller {
    peer: StdioPeer,
    generate: Arc<ArgsGen>,
    next_id: u64,
}

impl Caller for StdioCaller {
    fn call<'a>(&'a mut self, rng: &'a mut Rng) -> CallFuture<'a> {
        Box::pin(async move {
            let (tag, args) = (self.generate)(rng);
            self.next_id += 1;
            let msg = tool_call(self.next_id, "recall_cloud_skill", args);
            let outcome = match self.peer.request(&msg).await {
                Ok(v) => check_result(&v),
                Err(e) => Err(e),
            };
            (tag, outcome)
        })
    }
}

/// Where a phase sends its calls.
pub struct Target<'a> {
    pub base_url: &'a str,
    pub key: &'a str,
    pub server_pid: u32,
    pub xmemo_bin: &'a Path,
}

/// One MCP phase at `cfg.clients` clients.
pub async fn run(
    target: &Target<'_>,
    transport: Transport,
    cfg: PhaseConfig,
    tags: usize,
    seed: u64,
    generate: Arc<ArgsGen>,
) -> Result<PhaseResult> {
    let url = Arc::new(format!("{}/mcp", target.base_url));
    let key = Arc::new(target.key.to_string());
    match transport {
        Transport::Http => {
            run_calls(cfg, tags, seed, &[target.server_pid], |_| {
                let (url, key, generate) = (url.clone(), key.clone(), generate.clone());
                async move {
                    Ok(HttpCaller {
                        client: crate::load::client()?,
                        url,
                        key,
                        generate,
                        next_id: 0,
                    })
                }
            })
            .await
        }
        Transport::Stdio => {
            let mut bridges = Vec::new();
            for _ in 0..cfg.clients.max(1) {
                let mut cmd = Command::new(target.xmemo_bin);
                cmd.arg("mcp")
                    .env("XMEMO_URL", target.base_url)
                    .env("XMEMO_KEY", target.key)
                    .env("XMEMO_AGENT_INSTANCE_ID", "xmemo-bench")
                    .env("XMEMO_LOG", "warn");
                bridges.push(Some(StdioPeer::spawn(cmd)?));
            }
            // Only the server's CPU is counted as the server's: the bridges exit with their
            // workers, before the last sample; their CPU shows in the "other" column.
            let bridges = std::sync::Mutex::new(bridges);
            run_calls(cfg, tags, seed, &[target.server_pid], |w| {
                let peer = bridges
                    .lock()
                    .ok()
                    .and_then(|mut b| b.get_mut(w).and_then(Option::take));
                let generate = generate.clone();
                async move {
                    Ok(StdioCaller {
                        peer: peer.ok_or_else(|| anyhow!("no bridge for worker {w}"))?,
                        generate,
                        next_id: 0,
                    })
                }
            })
            .await
        }
    }
}
