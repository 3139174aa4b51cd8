//! `xmemo mcp`: an MCP server on stdio that forwards every JSON-RPC message to a remote xmemo's
//! streamable HTTP endpoint (`$XMEMO_URL/mcp`) with `XMEMO_KEY`, for hosts that only launch
//! local MCP servers.
//!
//! It is a transparent pipe: one line on stdin is one POST; a JSON or SSE answer becomes one
//! line per message on stdout. It adds what an HTTP client would: the key, the attribution
//! headers, `MCP-Protocol-Version` (from the request's `_meta`, else the version `initialize`
//! negotiated) and, from protocol 2026-07-28 on, the `Mcp-Method` / `Mcp-Name` headers.
//! Nothing but MCP messages is written to stdout; diagnostics go to stderr.

use crate::agent_instance::{attribution_value, stable_instance_id};
use anyhow::{Context, bail};
use base64::Engine;
use serde_json::{Value, json};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Largest message accepted on stdin (the server's own body limit).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// First protocol revision with per-request metadata and standard `Mcp-*` headers.
const STANDARD_HEADERS_VERSION: &str = "2026-07-28";
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// JSON-RPC code for a failure to reach or use the remote server.
const BRIDGE_ERROR: i64 = -32000;

#[derive(clap::Args, Debug, Clone)]
pub struct McpArgs {
    /// Base URL of the xmemo server
    #[arg(long, env = "XMEMO_URL", default_value = crate::client::DEFAULT_URL)]
    pub url: String,
    /// API key (prefer the XMEMO_KEY environment variable: flags show up in process lists)
    #[arg(long, env = "XMEMO_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Client profile to connect as (uses /mcp/{profile}); default: the key's own profile
    #[arg(long, env = "XMEMO_PROFILE")]
    pub profile: Option<String>,
    /// Agent instance id sent as X-Memory-OS-Agent-Instance-ID [default: a stable id generated
    /// once and kept in $XDG_CONFIG_HOME/xmemo/agent-instance-id]
    #[arg(long, env = "XMEMO_AGENT_INSTANCE_ID")]
    pub agent_instance_id: Option<String>,
    /// Agent id sent as X-Memory-OS-Agent-ID [default: the MCP client's name from `initialize`]
    #[arg(long, env = "XMEMO_AGENT_ID")]
    pub agent_id: Option<String>,
}

/// What every forwarded request shares.
struct Bridge {
    http: reqwest::Client,
    endpoint: String,
    base_url: String,
    key: String,
    instance_id: String,
    agent_id: RwLock<Option<String>>,
    /// Protocol version agreed by `initialize` (legacy lifecycle), sent on later requests.
    negotiated: RwLock<Option<String>>,
    out: mpsc::UnboundedSender<String>,
}

pub async fn run(args: McpArgs) -> anyhow::Result<()> {
    let key = args
        .key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .context(
            "XMEMO_KEY is not set. `xmemo mcp` needs an API key of your xmemo account: create one \
             with `xmemo keys create --name my-agent` (or in the console) and put it in the MCP \
             server's environment as XMEMO_KEY; set XMEMO_URL too if the server is not at the default address",
        )?;
    if let Some(reference) = unexpanded_reference(&key) {
        bail!(
            "XMEMO_KEY reached `xmemo mcp` as the literal text `{reference}`: the MCP client did \
             not find XMEMO_KEY in its own environment. Export XMEMO_KEY (from your secret \
             store) in the environment the client starts from, then restart the client"
        );
    }
    let base_url = args.url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        bail!("XMEMO_URL must start with http:// or https:// (got `{base_url}`)");
    }
    let endpoint = match args
        .profile
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        Some(p) => format!("{base_url}/mcp/{p}"),
        None => format!("{base_url}/mcp"),
    };
    let instance_id = match args
        .agent_instance_id
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        Some(v) => attribution_value(v)
            .context("XMEMO_AGENT_INSTANCE_ID must be 1 to 128 printable characters")?,
        None => stable_instance_id(),
    };
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(180))
        .build()
        .context("cannot build the HTTP client")?;

    let (out, mut out_rx) = mpsc::unbounded_channel::<String>();
    let bridge = Arc::new(Bridge {
        http,
        endpoint,
        base_url,
        key,
        instance_id,
        agent_id: RwLock::new(args.agent_id.as_deref().and_then(attribution_value)),
        negotiated: RwLock::new(None),
        out,
    });
    bridge.preflight().await?;

    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            if stdout.write_all(line.as_bytes()).await.is_err()
                || stdout.write_all(b"\n").await.is_err()
                || stdout.flush().await.is_err()
            {
                break;
            }
        }
    });

    let mut reader = BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .await
            .context("cannot read stdin")?;
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE_BYTES {
            bridge.emit_error(Value::Null, -32600, "message exceeds 16 MiB", None);
            continue;
        }
        let line = String::from_utf8_lossy(&buf).trim().to_string();
        if line.is_empty() {
            continue;
        }
        let b = bridge.clone();
        tasks.spawn(async move { b.forward(line).await });
        // Reap finished tasks as we go.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    drop(bridge);
    let _ = writer.await;
    Ok(())
}

impl Bridge {
    /// Checks the key once before serving: a rejected key will not fix itself, so stop with a
    /// clear message. An unreachable server is only reported; requests say so until it is back.
    async fn preflight(&self) -> anyhow::Result<()> {
        let url = format!("{}/api/v1/me", self.base_url);
        match self.http.get(&url).bearer_auth(&self.key).send().await {
            Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => bail!(
                "the xmemo server at {} rejected XMEMO_KEY (invalid, revoked or expired). Create a \
                 new key with `xmemo keys create` (or in the console) and set it as XMEMO_KEY",
                self.base_url
            ),
            Ok(_) => Ok(()),
            Err(e) => {
                eprintln!(
                    "xmemo mcp: warning: cannot reach the xmemo server at {} ({}); check XMEMO_URL \
                     and that the server is running. Requests will fail until it is reachable.",
                    self.base_url,
                    error_chain(&e)
                );
                Ok(())
            }
        }
    }

    fn emit(&self, message: &Value) {
        if let Ok(text) = serde_json::to_string(message) {
            let _ = self.out.send(text);
        }
    }

    fn emit_error(&self, id: Value, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({ "code": code, "message": message });
        if let (Some(d), Some(obj)) = (data, error.as_object_mut()) {
            obj.insert("data".into(), d);
        }
        self.emit(&json!({ "jsonrpc": "2.0", "id": id, "error": error }));
    }

    /// Tells the host its request failed on the way to or from the server (a notification
    /// gets no answer).
    fn fail_request(&self, id: Option<Value>, message: &str) {
        if let Some(id) = id {
            self.emit_error(id, BRIDGE_ERROR, message, None);
        }
    }

    async fn forward(&self, line: String) {
        let message: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                self.emit_error(Value::Null, -32700, &format!("Parse error: {e}"), None);
                return;
            }
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        // Only requests get answers; notifications and client responses are fire-and-forget.
        let id = message.get("id").filter(|_| method.is_some()).cloned();
        // The client's name: in every request's `_meta` (MCP 2026-07-28) or in the legacy
        // `initialize`; kept for the messages that carry none.
        if let Some(name) = client_name(&message, method.as_deref())
            && let Ok(mut agent) = self.agent_id.write()
            && agent.is_none()
        {
            *agent = attribution_value(name);
        }

        let mut req = self
            .http
            .post(&self.endpoint)
            .bearer_auth(&self.key)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header("X-Memory-OS-Agent-Instance-ID", &self.instance_id);
        if let Some(agent) = self.agent_id.read().ok().and_then(|a| a.clone()) {
            req = req.header("X-Memory-OS-Agent-ID", agent);
        }
        for (name, value) in self.protocol_headers(&message, method.as_deref()) {
            req = req.header(name, value);
        }
        let response = match req.body(line).send().await {
            Ok(r) => r,
            Err(e) => {
                self.fail_request(
                    id,
                    &format!(
                        "cannot reach the xmemo server at {} ({}); check XMEMO_URL and that the server is running",
                        self.base_url,
                        error_chain(&e)
                    ),
                );
                return;
            }
        };
        let status = response.status();
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = match response.text().await {
            Ok(b) => b,
            Err(e) => {
                self.fail_request(
                    id,
                    &format!(
                        "the xmemo server's answer was cut off ({})",
                        error_chain(&e)
                    ),
                );
                return;
            }
        };
        if status == reqwest::StatusCode::ACCEPTED || status == reqwest::StatusCode::NO_CONTENT {
            return;
        }
        let messages: Vec<Value> = if is_sse {
            sse_messages(&body)
        } else {
            serde_json::from_str::<Value>(&body)
                .ok()
                .into_iter()
                .collect()
        };
        // The SPEC error object: in a JSON-RPC error's `data`, or the whole body of an older
        // server.
        let spec_error = messages.first().and_then(|m| {
            m.pointer("/error/data")
                .filter(|d| d.get("error").is_some())
                .or_else(|| (m.get("jsonrpc").is_none() && m.get("error").is_some()).then_some(m))
                .cloned()
        });
        if status == reqwest::StatusCode::UNAUTHORIZED {
            let Some(id) = id else { return };
            eprintln!(
                "xmemo mcp: the server at {} rejected XMEMO_KEY (invalid, revoked or expired)",
                self.base_url
            );
            self.emit_error(
                id,
                BRIDGE_ERROR,
                "the xmemo server rejected XMEMO_KEY (invalid, revoked or expired); create a new key with `xmemo keys create` and update XMEMO_KEY",
                spec_error,
            );
            return;
        }
        let jsonrpc: Vec<&Value> = messages
            .iter()
            .filter(|m| m.get("jsonrpc").is_some())
            .collect();
        if !jsonrpc.is_empty() {
            for m in jsonrpc {
                if method.as_deref() == Some("initialize") {
                    self.remember_version(m);
                }
                match (m, &id) {
                    // Refused before the server read the body (a guard, a profile), so it could
                    // not name the request; on stdio the id is how the host matches answers.
                    (Value::Object(obj), Some(id))
                        if obj.contains_key("error") && !obj.contains_key("id") =>
                    {
                        let mut answered = obj.clone();
                        answered.insert("id".into(), id.clone());
                        self.emit(&Value::Object(answered));
                    }
                    _ => self.emit(m),
                }
            }
            return;
        }
        let Some(id) = id else { return };
        let detail = spec_error
            .as_ref()
            .and_then(|e| e.pointer("/error/message"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| body.chars().take(300).collect());
        self.emit_error(
            id,
            BRIDGE_ERROR,
            &format!("xmemo server answered HTTP {}: {detail}", status.as_u16()),
            spec_error,
        );
    }

    fn remember_version(&self, response: &Value) {
        if let Some(v) = response
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            && let Ok(mut negotiated) = self.negotiated.write()
        {
            *negotiated = Some(v.to_string());
        }
    }

    /// `MCP-Protocol-Version`, and from 2026-07-28 on the standard `Mcp-Method` / `Mcp-Name`.
    fn protocol_headers(
        &self,
        message: &Value,
        method: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if method == Some("initialize") {
            return headers;
        }
        let from_meta = message
            .pointer("/params/_meta")
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_string);
        let version = from_meta.or_else(|| self.negotiated.read().ok().and_then(|v| v.clone()));
        let Some(version) = version else {
            return headers;
        };
        let modern = version.as_str() >= STANDARD_HEADERS_VERSION;
        headers.push(("MCP-Protocol-Version", version));
        if modern && let Some(method) = method {
            headers.push(("Mcp-Method", method.to_string()));
            let key = match method {
                "tools/call" | "prompts/get" => Some("name"),
                "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
                "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
                _ => None,
            };
            if let Some(name) = key
                .and_then(|k| message.pointer(&format!("/params/{k}")))
                .and_then(Value::as_str)
            {
                headers.push(("Mcp-Name", header_value(name)));
            }
        }
        headers
    }
}

/// A variable reference an MCP client left unexpanded (`${XMEMO_KEY}`, `${env:XMEMO_KEY}`,
/// `$XMEMO_KEY`): the configurations `xmemo connect` writes name the key this way, and a client
/// that cannot resolve it passes the text on. No API key looks like this.
pub(crate) fn unexpanded_reference(value: &str) -> Option<&str> {
    let v = value.trim();
    let braced = v.starts_with("${") && v.ends_with('}');
    let bare = v.len() > 1
        && v.starts_with('$')
        && v[1..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    (braced || bare).then_some(v)
}

/// A header value as SEP-2243 encodes it: as is when it is plain visible ASCII, else
/// `=?base64?…?=`.
fn header_value(value: &str) -> String {
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let visible_ascii = value.chars().all(|c| (' '..='~').contains(&c));
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    if visible_ascii && !padded && !looks_encoded {
        value.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// The JSON messages of an SSE body (`data:` lines joined per event; empty events skipped).
pub(crate) fn sse_messages(body: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut data = String::new();
    let mut flush = |data: &mut String| {
        if !data.trim().is_empty()
            && let Ok(v) = serde_json::from_str::<Value>(data)
        {
            out.push(v);
        }
        data.clear();
    };
    for line in body.lines() {
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    flush(&mut data);
    out
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The name a client gives itself in `message`: `_meta["io.modelcontextprotocol/clientInfo"]`
/// of any request (MCP 2026-07-28), else `clientInfo` of a legacy `initialize`.
fn client_name<'m>(message: &'m Value, method: Option<&str>) -> Option<&'m str> {
    let from_meta = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/clientInfo"))
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str);
    from_meta.or_else(|| {
        (method == Some("initialize"))
            .then(|| message.pointer("/params/clientInfo/name"))
            .flatten()
            .and_then(Value::as_str)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_bodies_become_messages() {
        let body = "id: 0\nretry: 3000\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let msgs = sse_messages(body);
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0]["id"], 1);
    }

    #[test]
    fn unexpanded_references_are_recognised() {
        for text in [
            "${XMEMO_KEY}",
            "${env:XMEMO_KEY}",
            "$XMEMO_KEY",
            " ${input:xmemo-key} ",
        ] {
            assert!(unexpanded_reference(text).is_some(), "{text}");
        }
        for text in ["xmk_abc$def", "$", "plain", "xmk_AbC-_09"] {
            assert!(unexpanded_reference(text).is_none(), "{text}");
        }
    }

    #[test]
    fn header_values_are_base64_wrapped_when_needed() {
        assert_eq!(header_value("recall_cloud_skill"), "recall_cloud_skill");
        assert_eq!(
            header_value("skill://personal/é"),
            "=?base64?c2tpbGw6Ly9wZXJzb25hbC/DqQ==?="
        );
        assert!(header_value(" padded").starts_with("=?base64?"));
    }
}
