//! `xmemo connect headless`: a CI job, cron agent or container has no client configuration
//! file and no browser. It gets the environment to set and the server's own recipe
//! (`GET /api/v1/mcp/config/autonomous-agent`, SPEC §7), which needs no credential.

use super::shell_quote;
use crate::agent_instance::{self, Stored};
use crate::output::{print_json, print_result};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::time::Duration;

pub async fn run(base: &str, profile: Option<&str>, json_out: bool) -> anyhow::Result<()> {
    let recipe_url = format!("{base}/api/v1/mcp/config/autonomous-agent");
    let recipe = fetch(&recipe_url).await?;
    let (instance, source) = instance_id();
    let mut env = vec![
        ("XMEMO_URL", base.to_string()),
        (agent_instance::ENV_VAR, instance.clone()),
    ];
    if let Some(p) = profile {
        env.push(("XMEMO_PROFILE", p.to_string()));
    }
    let env_obj: serde_json::Map<String, Value> = env
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
        .collect();
    let answer = json!({
        "client": "headless",
        "auth": "key",
        "env": env_obj,
        "agent_instance_source": source,
        "env_from_secret_store": ["XMEMO_KEY"],
        "command": ["xmemo", "mcp"],
        "recipe_url": recipe_url,
        "recipe": recipe,
    });
    print_result(json_out, answer, |_| {
        print_recipe(&env, &source, &recipe_url, &recipe);
        Ok(())
    })
}

fn print_recipe(env: &[(&str, String)], source: &str, recipe_url: &str, recipe: &Value) {
    println!("# Headless runner (CI job, cron agent, container): environment only.");
    for (k, v) in env {
        println!("export {k}={}", shell_quote(v));
    }
    println!(
        "# {} above: {source}. Not secret; keep it stable and outside git.",
        agent_instance::ENV_VAR
    );
    println!(
        "# XMEMO_KEY comes from your secret store (a key with only the scopes the job needs), e.g."
    );
    println!("#   export XMEMO_KEY=\"$(cat /run/secrets/xmemo_key)\"");
    println!("xmemo mcp   # MCP over stdin/stdout, for any MCP client library");
    println!();
    println!("# The server's recipe ({recipe_url}):");
    print_json(recipe);
}

async fn fetch(url: &str) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .context("cannot build the HTTP client")?;
    let response = http.get(url).send().await.with_context(|| {
        format!("cannot reach the xmemo server for its recipe at {url}; check XMEMO_URL / --url and that the server is running")
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        bail!(
            "{url} answered 404: the server is not an xmemo server, or one older than the autonomous-agent recipe"
        );
    }
    if !status.is_success() {
        bail!("{url} answered HTTP {status}");
    }
    response
        .json::<Value>()
        .await
        .with_context(|| format!("{url} did not answer JSON"))
}

/// The id to suggest and where it comes from: the environment's, else the one this machine's
/// bridge keeps, else a new one.
fn instance_id() -> (String, String) {
    if let Some(id) = std::env::var(agent_instance::ENV_VAR)
        .ok()
        .as_deref()
        .and_then(agent_instance::attribution_value)
    {
        return (id, "from the environment".into());
    }
    if let Some(path) = agent_instance::stored_path()
        && let Stored::Valid(id) = agent_instance::read_stored(&path)
    {
        return (
            id,
            format!(
                "the id `xmemo mcp` keeps on this machine ({})",
                path.display()
            ),
        );
    }
    (
        xmemo_core::new_id("inst"),
        "generated now (give each runner its own, and keep it)".into(),
    )
}
