//! Target 6: what `execute_cloud_skill` adds to a trivial Python script, against running
//! `python3 -c pass` bare on the host (median and p90 of `--runs` sequential runs each).

use crate::load;
use crate::write_phase::{Common, WriteArgs, median_p90, met};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use std::time::Instant;

const SLUG: &str = "bench-sandbox-pass";
const SCRIPT: &str = "scripts/pass.py";

/// The interpreter the sandbox runs (it mounts only the host's /usr), else the first on PATH.
fn python() -> &'static str {
    if std::path::Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<String> {
    let runs = args.runs.max(3);
    let mut bare = Vec::new();
    for i in 0..runs + 3 {
        let t = Instant::now();
        let status = std::process::Command::new(python())
            .args(["-c", "pass"])
            .status()
            .context("cannot run python3")?;
        if !status.success() {
            bail!("python3 -c pass failed: {status}");
        }
        if i >= 3 {
            bare.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let (bare_p50, bare_p90) = median_p90(bare);

    let srv = common.start(false)?;
    let http = load::client()?;
    let save = json!({
        "slug": SLUG, "name": "Bench sandbox pass", "description": "Use when timing the sandbox",
        "instruction_body": format!("Run `{SCRIPT}`."),
        "components": [{"logical_path": SCRIPT, "type": "script", "content": "pass\n"}],
        "intent": "publish",
    });
    let saved: Value = http
        .post(format!("{}/api/v1/skills", srv.base_url))
        .bearer_auth(&srv.admin_key)
        .json(&save)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let revision_id = saved
        .pointer("/data/revision_id")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("save answered no revision_id: {saved}"))?
        .to_string();
    let url = format!("{}/api/v1/skills/{SLUG}/execute", srv.base_url);
    let body = json!({"revision_id": revision_id, "script_path": SCRIPT});
    let (mut total, mut inside) = (Vec::new(), Vec::new());
    let mut isolation = String::new();
    for i in 0..runs + 3 {
        let t = Instant::now();
        let resp = http
            .post(&url)
            .bearer_auth(&srv.admin_key)
            .json(&body)
            .send()
            .await?;
        let status = resp.status();
        let v: Value = resp.json().await?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let run_status = v.pointer("/data/status").and_then(Value::as_str);
        if !status.is_success() || run_status != Some("success") {
            bail!(
                "execute answered {status}: {v}\nserver stderr:\n{}",
                srv.stderr_tail()
            );
        }
        if let Some(iso) = v.pointer("/data/isolation").and_then(Value::as_str) {
            isolation = iso.to_string();
        }
        if i >= 3 {
            total.push(ms);
            if let Some(d) = v.pointer("/data/duration_ms").and_then(Value::as_f64) {
                inside.push(d);
            }
        }
    }
    let (p50, p90) = median_p90(total);
    let (in50, in90) = median_p90(inside);
    let over = p50 - bare_p50;
    Ok(format!(
        "sandbox: {runs} runs each; bare `{} -c pass` p50 {bare_p50:.2} / p90 {bare_p90:.2} ms; \
         REST execute of `pass` p50 {p50:.2} / p90 {p90:.2} ms (the run's own duration_ms p50 {in50:.1} / p90 {in90:.1}); \
         overhead over bare: p50 {over:.2} ms (isolation: {isolation})   [target ≤ 15 ms: {}]",
        python(),
        met(over <= 15.0)
    ))
}
