//! `--clawhub DIR`: known-item search on real skills (#24). The ClawHub corpus
//! (`tests/corpus/clawhub`, 1,635 SKILL.md files by several hundred authors) is imported
//! with the real CLI, `xmemo import DIR --publish --json` (one command, as a user would), then
//! for every skill it wrote, a Level 0 query made of the first words of its description
//! (`GET /api/v1/skills?query=…&limit=5`) must find that skill: the table prints the top-1
//! and top-5 hit rates and the p50/p99 latency of those queries, for the first 4 and the
//! first 8 words. Queries whose words begin another imported skill's description too (the
//! registry's near-copies) cannot have one answer: they are counted, and the hit rates are
//! also given without them. Figures are printed, never asserted.

use crate::measure::Latency;
use crate::percent::encode;
use crate::server::Server;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// Results asked for per query (the top-5 rate needs five).
const LIMIT: usize = 5;
/// Query lengths measured, in words of the description.
const WORDS: [usize; 2] = [4, 8];

struct Known {
    slug: String,
    description: String,
}

pub async fn run(srv: &Server, bin: &Path, corpus: &Path) -> Result<()> {
    if !corpus.is_dir() {
        bail!("--clawhub {}: not a directory", corpus.display());
    }
    eprintln!(
        "xmemo-bench: clawhub — importing {} with `xmemo import DIR --publish --json`",
        corpus.display()
    );
    let started = Instant::now();
    let out = tokio::process::Command::new(bin)
        .arg("import")
        .arg(corpus)
        .args(["--publish", "--json"])
        .env("XMEMO_URL", &srv.base_url)
        .env("XMEMO_KEY", &srv.admin_key)
        .output()
        .await
        .context("run xmemo import")?;
    let import_secs = started.elapsed().as_secs_f64();
    // Exit status 3: some skills refused (over a hard limit); the others are imported.
    if !matches!(out.status.code(), Some(0 | 3)) {
        bail!(
            "xmemo import failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let result: Value =
        serde_json::from_slice(&out.stdout).context("xmemo import --json printed no JSON")?;
    let summary = &result["data"]["summary"];
    let written: Vec<String> = result["data"]["results"]
        .as_array()
        .context("no results")?
        .iter()
        .filter(|r| r["outcome"] == "created")
        .filter_map(|r| r["slug"].as_str().map(str::to_string))
        .collect();

    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        let url = format!("{}{path}", srv.base_url);
        let key = srv.admin_key.clone();
        async move {
            let resp = http.get(&url).bearer_auth(&key).send().await?;
            let status = resp.status();
            let body: Value = resp.json().await?;
            if !status.is_success() {
                bail!("{url}: {status}: {body}");
            }
            Ok::<Value, anyhow::Error>(body)
        }
    };
    let mut known = Vec::with_capacity(written.len());
    for slug in &written {
        let root = get(format!("/api/v1/skills/{}", encode(slug))).await?;
        let description = root["data"]["description"].as_str().unwrap_or_default();
        known.push(Known {
            slug: slug.clone(),
            description: description.to_string(),
        });
    }

    println!(
        "\nKnown-item search on the ClawHub corpus ({} skill folders: {} imported, {} \
         duplicates, {} refused; import {:.1} s)",
        summary["skills"],
        summary["imported"],
        summary["duplicates"],
        summary["refused"],
        import_secs
    );
    println!(
        "{:<24} {:>7} {:>8} {:>8} {:>7} {:>16} {:>9} {:>9}",
        "query", "queries", "top-1 %", "top-5 %", "shared", "top-1/5 unshared", "p50 ms", "p99 ms"
    );
    for words in WORDS {
        let prefix = |d: &str| -> String {
            d.split_whitespace()
                .take(words)
                .collect::<Vec<_>>()
                .join(" ")
        };
        // Queries another skill's description begins with as well.
        let mut owners: HashMap<String, usize> = HashMap::new();
        for k in &known {
            *owners
                .entry(prefix(&k.description).to_lowercase())
                .or_default() += 1;
        }
        let (mut first, mut top5, mut shared, mut first_u, mut top5_u) = (0, 0, 0, 0, 0);
        let mut times = Vec::with_capacity(known.len());
        for k in &known {
            let query = prefix(&k.description);
            if query.is_empty() {
                continue;
            }
            let path = format!("/api/v1/skills?query={}&limit={LIMIT}", encode(&query));
            let start = Instant::now();
            let body = get(path).await?;
            times.push(start.elapsed().as_micros() as u64);
            let slugs: Vec<&str> = body["data"]["skills"]
                .as_array()
                .or_else(|| body["skills"].as_array())
                .map(|a| a.iter().filter_map(|s| s["slug"].as_str()).collect())
                .unwrap_or_default();
            let is_first = slugs.first() == Some(&k.slug.as_str());
            let in_top5 = slugs.contains(&k.slug.as_str());
            first += usize::from(is_first);
            top5 += usize::from(in_top5);
            if owners[&query.to_lowercase()] > 1 {
                shared += 1;
            } else {
                first_u += usize::from(is_first);
                top5_u += usize::from(in_top5);
            }
        }
        let n = times.len();
        let latency = Latency::from_micros(times);
        let pct = |x: usize, of: usize| {
            if of == 0 {
                0.0
            } else {
                100.0 * x as f64 / of as f64
            }
        };
        let unshared = n - shared;
        println!(
            "{:<24} {:>7} {:>8.1} {:>8.1} {:>7} {:>7.1}/{:<8.1} {:>9.2} {:>9.2}",
            format!("first {words} words"),
            n,
            pct(first, n),
            pct(top5, n),
            shared,
            pct(first_u, unshared),
            pct(top5_u, unshared),
            latency.p50_us as f64 / 1000.0,
            latency.p99_us as f64 / 1000.0,
        );
    }
    Ok(())
}
