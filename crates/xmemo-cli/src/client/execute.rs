//! `xmemo execute`: run a declared script of a pinned revision in the server's sandbox.

use super::Conn;
use super::http::{Api, Failure, fail};
use crate::output::print_result;
use clap::Args;
use reqwest::Method;
use serde_json::{Value, json};

#[derive(Args, Debug)]
pub struct ExecuteArgs {
    pub slug: String,
    /// The pinned revision (from `xmemo recall SLUG`)
    #[arg(long)]
    pub revision: String,
    /// The script component to run, e.g. scripts/check.py
    #[arg(long)]
    pub script: String,
    /// JSON object passed to the script on stdin
    #[arg(long)]
    pub input: Option<String>,
    /// 1–60 seconds (server default 30)
    #[arg(long)]
    pub timeout: Option<u32>,
    #[arg(long)]
    pub workspace: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

pub async fn execute(a: ExecuteArgs) -> anyhow::Result<()> {
    let input_args = match &a.input {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<Value>(text)
                .map_err(|e| fail(Failure::input(format!("--input is not JSON: {e}"))))?,
        ),
    };
    let api = Api::new(&a.conn)?;
    let url = api.url(
        &["skills", &a.slug, "execute"],
        &[("workspace", a.workspace.as_deref())],
    )?;
    let mut body = json!({ "revision_id": a.revision, "script_path": a.script });
    if let Some(args) = input_args {
        body["input_args"] = args;
    }
    if let Some(t) = a.timeout {
        body["timeout_seconds"] = json!(t);
    }
    let value = api.send(Method::POST, url, Some(&body)).await?;
    print_result(a.conn.json, value, |value| {
        print_run(&a.slug, &a.script, &value)
    })
}

/// The run as text; a script that did not succeed makes the command fail (under `--json` the
/// status is in the answer, for the script reading it to judge).
fn print_run(slug: &str, script: &str, value: &Value) -> anyhow::Result<()> {
    let data = &value["data"];
    println!(
        "{} {} — status {} (exit {}), {} ms, isolation {}",
        slug,
        script,
        data["status"].as_str().unwrap_or("?"),
        data["exit_code"]
            .as_i64()
            .map_or_else(|| "-".to_string(), |c| c.to_string()),
        data["duration_ms"].as_u64().unwrap_or(0),
        data["isolation"].as_str().unwrap_or("?"),
    );
    if !data["output_data"].is_null() {
        println!(
            "output_data: {}",
            serde_json::to_string_pretty(&data["output_data"]).unwrap_or_default()
        );
    } else if let Some(out) = data["stdout"].as_str().filter(|s| !s.is_empty()) {
        println!("stdout:\n{out}");
    }
    if let Some(err) = data["stderr"].as_str().filter(|s| !s.is_empty()) {
        eprintln!("stderr:\n{err}");
    }
    if data["stdout_truncated"] == true || data["stderr_truncated"] == true {
        eprintln!("(output truncated at the per-stream limit)");
    }
    if data["status"] != "success" {
        anyhow::bail!(
            "the script ended with status {}",
            data["status"].as_str().unwrap_or("?")
        );
    }
    Ok(())
}
