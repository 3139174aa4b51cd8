//! Target 8: the MCP Skills extension at scale: every page of `skills/list` over a large
//! catalog (raw JSON-RPC over HTTP, one client), and optionally the MCP Inspector CLI's
//! `--verify --require-digests` walk of the same catalog.

use crate::corpus::Corpus;
use crate::load;
use crate::write_phase::{Common, WriteArgs, median_p90, met};
use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

const VERSION: &str = "2025-11-25";

async fn call(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = http
        .post(url)
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .json(&body)
        .send()
        .await?;
    let status = resp.status();
    let bytes = resp.bytes().await?;
    if !status.is_success() {
        bail!("{method}: HTTP {status}: {}", load::snippet(&bytes));
    }
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow!("{method}: not JSON ({e}): {}", load::snippet(&bytes)))?;
    v.get("result")
        .cloned()
        .ok_or_else(|| anyhow!("{method}: no result: {}", load::snippet(&bytes)))
}

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<String> {
    let srv = common.start(false)?;
    let n = args.list_skills;
    let corpus = Arc::new(Corpus::new(common.corpus_seed, common.vocabulary));
    eprintln!("xmemo-bench: skills-list: seeding {n} skills");
    let seeded = load::seed(
        &srv.base_url,
        &srv.admin_key,
        corpus,
        0,
        n,
        common.seed_concurrency,
        srv.pid,
    )
    .await?;
    let http = load::client()?;
    let url = format!("{}/mcp", srv.base_url);
    let mut out = String::new();
    for round in 0..3 {
        let t = Instant::now();
        let mut pages = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let tp = Instant::now();
            let r = call(
                &http,
                &url,
                &srv.admin_key,
                pages.len() as u64 + 1,
                "skills/list",
                params,
            )
            .await?;
            pages.push(tp.elapsed().as_secs_f64() * 1000.0);
            let skills = r
                .get("skills")
                .and_then(Value::as_array)
                .ok_or_else(|| anyhow!("skills/list result has no skills array"))?;
            for s in skills {
                let uri = s
                    .get("uri")
                    .or_else(|| s.get("name"))
                    .map(Value::to_string)
                    .unwrap_or_default();
                seen.insert(uri);
            }
            match r.get("nextCursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
            if pages.len() > 100_000 {
                bail!("skills/list does not converge");
            }
        }
        let total = t.elapsed().as_secs_f64() * 1000.0;
        let count = pages.len();
        let (p50, p90) = median_p90(pages);
        if round == 2 || seen.len() != seeded.saves {
            out = format!(
                "skills-list: {} skills listed ({} seeded) in {count} pages: all pages {total:.0} ms, a page p50 {p50:.1} / p90 {p90:.1} ms   [target ≤ 1000 ms for all: {}; ≤ 64 pages for the Inspector: {}]",
                seen.len(),
                seeded.saves,
                met(total <= 1000.0 && seen.len() == seeded.saves),
                met(count <= 64),
            );
        }
    }
    if let Some(inspector) = &args.inspector {
        let cmd = format!(
            "{inspector} --cli {url} --transport http --header 'Authorization: Bearer {}' --method skills/list --verify --require-digests --skill-catalog-max-skills {}",
            srv.admin_key,
            // Its default reads only the first 256 skills' files and reports the rest as
            // not checked.
            n.max(1) * 2
        );
        let t = Instant::now();
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .output()?;
        let secs = t.elapsed().as_secs_f64();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let tail = |s: &str| {
            s.lines()
                .rev()
                .take(6)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n    ")
        };
        out.push_str(&format!(
            "\n  Inspector `--cli --method skills/list --verify --require-digests`: exit {} in {secs:.1} s [target: exit 0: {}]\n    stdout: {}\n    stderr: {}",
            o.status,
            met(o.status.success()),
            tail(&stdout),
            tail(&stderr),
        ));
    }
    Ok(out)
}
