//! The side-by-side peer of issue #14 target 1: the reference MCP memory server
//! (`@modelcontextprotocol/server-memory`, Node, over stdio), seeded with the same skills as
//! entities (name = slug, observations = name and description) and asked the same Level 0
//! queries with `search_nodes`, one sequential client, like xmemo's MCP phases.

use crate::calls::{CallFuture, Caller, run_calls};
use crate::corpus::{Corpus, QueryKind, Rng};
use crate::load::Seeded;
use crate::mcp::{StdioPeer, check_result};
use crate::measure::{PhaseConfig, PhaseResult};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::process::Command;

pub const PACKAGE: &str = "@modelcontextprotocol/server-memory";

/// `~/.cache/xmemo-bench/peer` (or `$XDG_CACHE_HOME/xmemo-bench/peer`).
pub fn default_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("xmemo-bench").join("peer")
}

/// The peer's entry point, installed with npm into `dir` when missing.
pub fn ensure_installed(dir: &Path) -> Result<PathBuf> {
    let entry = dir
        .join("node_modules")
        .join(PACKAGE)
        .join("dist")
        .join("index.js");
    if entry.is_file() {
        return Ok(entry);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    eprintln!("xmemo-bench: installing {PACKAGE} into {}", dir.display());
    let status = std::process::Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(dir)
        .arg(PACKAGE)
        .status()
        .context("cannot run npm (needed for the peer run; or pass --no-peer)")?;
    if !status.success() || !entry.is_file() {
        bail!("npm install {PACKAGE} failed ({status})");
    }
    Ok(entry)
}

fn package_version(entry: &Path) -> Option<String> {
    let pkg = entry.parent()?.parent()?.join("package.json");
    let v: Value = serde_json::from_slice(&std::fs::read(pkg).ok()?).ok()?;
    v.get("version")?.as_str().map(str::to_string)
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// A started, initialised peer with its own memory file.
async fn start(entry: &Path, memory_file: &Path) -> Result<StdioPeer> {
    let mut cmd = Command::new("node");
    cmd.arg(entry).env("MEMORY_FILE_PATH", memory_file);
    let mut peer = StdioPeer::spawn(cmd)?;
    let init = peer
        .request(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "xmemo-bench", "version": "1"}}}),
        )
        .await?;
    if init.get("result").is_none() {
        bail!("the peer refused initialize: {init}");
    }
    peer.request(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    Ok(peer)
}

struct PeerCaller {
    peer: StdioPeer,
    corpus: Arc<Corpus>,
    skills: Arc<Vec<Seeded>>,
    next_id: u64,
}

impl Caller for PeerCaller {
    fn call<'a>(&'a mut self, rng: &'a mut Rng) -> CallFuture<'a> {
        Box::pin(async move {
            let tag = rng.below(QueryKind::ALL.len());
            let slug = &self.skills[rng.below(self.skills.len())].slug;
            let q = self.corpus.query(rng, QueryKind::ALL[tag], slug);
            self.next_id += 1;
            let outcome = match self
                .peer
                .request(&call(self.next_id, "search_nodes", json!({"query": q})))
                .await
            {
                Ok(v) => check_result(&v),
                Err(e) => Err(e),
            };
            (tag, outcome)
        })
    }
}

pub struct PeerRun {
    pub version: Option<String>,
    pub entities: usize,
    pub result: PhaseResult,
}

/// Seeds a fresh peer with `skills` and measures `search_nodes` with one client.
pub async fn run(
    dir: &Path,
    corpus: Arc<Corpus>,
    skills: Arc<Vec<Seeded>>,
    cfg: PhaseConfig,
    seed: u64,
) -> Result<PeerRun> {
    let entry = ensure_installed(dir)?;
    let work = tempfile::tempdir().context("cannot create the peer's data dir")?;
    let memory_file = work.path().join("memory.jsonl");
    let mut seeder = start(&entry, &memory_file).await?;
    let mut id = 1;
    for chunk in skills.chunks(100) {
        let entities: Vec<Value> = chunk
            .iter()
            .map(|s| {
                let (_, body) = corpus.skill(s.index);
                json!({
                    "name": s.slug,
                    "entityType": "skill",
                    "observations": [body["name"], body["description"]],
                })
            })
            .collect();
        id += 1;
        let v = seeder
            .request(&call(id, "create_entities", json!({"entities": entities})))
            .await?;
        check_result(&v).context("seeding the peer")?;
    }
    let pid = seeder.pid().unwrap_or(0);
    let seeder = std::sync::Mutex::new(Some(seeder));
    let result = run_calls(cfg, QueryKind::ALL.len(), seed, &[pid], |_| {
        let peer = seeder.lock().ok().and_then(|mut p| p.take());
        let (corpus, skills) = (corpus.clone(), skills.clone());
        async move {
            Ok(PeerCaller {
                peer: peer.context("one peer client only")?,
                corpus,
                skills,
                next_id: 1_000_000,
            })
        }
    })
    .await?;
    Ok(PeerRun {
        version: package_version(&entry),
        entities: skills.len(),
        result,
    })
}
