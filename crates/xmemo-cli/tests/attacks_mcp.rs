//! Issue #29, defect 2, through the real binary: a `/mcp` body costs the server memory in
//! proportion to its size, whatever its shape. Before the fix one `ping` padded with 7.8
//! million zeros (15 MiB) was turned into full JSON trees several times (RSS +1.6 GiB); the
//! same bytes with a duplicate key or a wrong `Accept` header were still read into one tree
//! to name the request in the refusal.
//!
//! Each attack is sent with a read-only key (any credential gets this far), and the test
//! measures the server process: its peak resident memory may grow by at most 4× the bytes
//! sent, it is back within 32 MiB of where it started 10 s later, and `/healthz` kept
//! answering meanwhile (asserted under 1 s: the machines running the tests are shared; the
//! benchmark reports the real figure).

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::Duration;
use xmemo_testkit::{HealthProbe, ServerProcess};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");
const MIB: u64 = 1024 * 1024;
/// The body size of the attacks: just under the 16 MiB body limit.
const ATTACK_BYTES: usize = 15 * 1024 * 1024;

struct Target {
    _dir: tempfile::TempDir,
    server: ServerProcess,
    admin_key: String,
    read_only_key: String,
    http: reqwest::Client,
}

async fn target() -> Target {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--write-rate",
            "0",
        ],
        &[],
    );
    let admin_key = std::fs::read_to_string(data.join("admin.key"))
        .expect("admin.key")
        .trim()
        .to_string();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let created: Value = http
        .post(format!("{}/api/v1/keys", server.url))
        .bearer_auth(&admin_key)
        .json(&json!({ "name": "reader", "scopes": ["memory:read"] }))
        .send()
        .await
        .expect("create key")
        .json()
        .await
        .expect("key json");
    let read_only_key = created["key"]["key"]
        .as_str()
        .unwrap_or_else(|| panic!("no key in {created}"))
        .to_string();
    let t = Target {
        _dir: dir,
        server,
        admin_key,
        read_only_key,
        http,
    };
    // Warm up the MCP path, so its first-use allocations are not counted as the attack's.
    let (status, body) = t
        .post(
            &t.read_only_key,
            ACCEPT,
            br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.to_vec(),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    t
}

const ACCEPT: &str = "application/json, text/event-stream";

impl Target {
    async fn post(&self, key: &str, accept: &str, body: Vec<u8>) -> (u16, Value) {
        post(&self.http, &self.server.url, key, accept, body).await
    }
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    accept: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let resp = http
        .post(format!("{url}/mcp"))
        .bearer_auth(key)
        .header("accept", accept)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("mcp request");
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.expect("mcp answer");
    let value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{status}: not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (status, value)
}

/// A `ping` of `size` bytes: `{…"params":{"pad":[0,0,…]}}` with `prefix` members first.
fn padded_ping(size: usize, prefix: &str) -> Vec<u8> {
    let head = format!(r#"{{"jsonrpc":"2.0","id":1,{prefix}"method":"ping","params":{{"pad":[0"#);
    let tail = "]}}";
    let zeros = (size - head.len() - tail.len()) / 2;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    for _ in 0..zeros {
        body.extend_from_slice(b",0");
    }
    body.extend_from_slice(tail.as_bytes());
    body
}

/// What an attack cost the server.
#[derive(Debug)]
struct Cost {
    start_kib: u64,
    peak_kib: u64,
    settled_kib: u64,
    slowest_health: Duration,
    health_answers: u64,
}

/// Sends every body at once (each on its own connection) and measures.
async fn attack(t: &Target, accept: &str, bodies: Vec<Vec<u8>>) -> (Vec<(u16, Value)>, Cost) {
    let sent: usize = bodies.iter().map(Vec::len).sum();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start_kib = t.server.rss().now_kib;
    t.server.reset_peak_rss();
    let probe = HealthProbe::start(&t.server.url);
    let sends = bodies.into_iter().map(|body| {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .expect("client");
        let (url, key, accept) = (
            t.server.url.clone(),
            t.read_only_key.clone(),
            accept.to_string(),
        );
        tokio::spawn(async move { post(&http, &url, &key, &accept, body).await })
    });
    let mut answers = Vec::new();
    for send in sends.collect::<Vec<_>>() {
        answers.push(send.await.expect("attack task"));
    }
    // The probe keeps running a moment after the answers, for work left behind them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = probe.finish();
    let peak_kib = t.server.rss().peak_kib;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let cost = Cost {
        start_kib,
        peak_kib,
        settled_kib: t.server.rss().now_kib,
        slowest_health: seen.slowest,
        health_answers: seen.answered,
    };
    eprintln!("{sent} bytes sent: {cost:?}");
    assert!(
        cost.peak_kib.saturating_sub(cost.start_kib) * 1024 <= 4 * sent as u64,
        "peak RSS grew by {} MiB for {} MiB sent (at most 4×): {cost:?}",
        (cost.peak_kib.saturating_sub(cost.start_kib)) / 1024,
        sent as u64 / MIB,
    );
    assert!(
        cost.settled_kib <= cost.start_kib + 32 * 1024,
        "RSS 10 s after the attack is {} MiB over its start: {cost:?}",
        cost.settled_kib.saturating_sub(cost.start_kib) / 1024,
    );
    assert!(
        cost.health_answers > 0 && cost.slowest_health < Duration::from_secs(1),
        "/healthz stalled during the attack: {cost:?}"
    );
    (answers, cost)
}

/// The refusal of a message with too many values: 413, JSON-RPC invalid request naming the
/// request, the SPEC error in `data`.
fn assert_too_many_values(status: u16, body: &Value) {
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let spec = &body["error"]["data"]["error"];
    assert_eq!(spec["code"], "PAYLOAD_TOO_LARGE", "{body}");
    assert_eq!(spec["details"]["reason"], "too_many_values", "{body}");
    assert!(spec["details"]["limit"].as_u64().is_some(), "{body}");
}

#[tokio::test]
async fn a_ping_padded_with_millions_of_values_costs_its_bytes_not_a_tree_of_them() {
    let t = target().await;
    let (answers, _) = attack(&t, ACCEPT, vec![padded_ping(ATTACK_BYTES, "")]).await;
    let (status, body) = &answers[0];
    assert_too_many_values(*status, body);
}

#[tokio::test]
async fn two_padded_pings_at_once_cost_their_bytes() {
    let t = target().await;
    let bodies = vec![padded_ping(ATTACK_BYTES, ""), padded_ping(ATTACK_BYTES, "")];
    let (answers, _) = attack(&t, ACCEPT, bodies).await;
    for (status, body) in &answers {
        assert_too_many_values(*status, body);
    }
}

/// Refusals that name the request read its id without building the body: a duplicate key
/// (refused before the padding is reached) and a wrong `Accept` header (refused before the
/// body is checked at all).
#[tokio::test]
async fn refusals_naming_a_padded_request_do_not_build_it() {
    let t = target().await;
    let dup = padded_ping(ATTACK_BYTES, r#""id":1,"#);
    let (answers, _) = attack(&t, ACCEPT, vec![dup]).await;
    let (status, body) = &answers[0];
    assert_eq!(*status, 400, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("duplicate key `id`")),
        "{body}"
    );

    let (answers, _) = attack(&t, "application/json", vec![padded_ping(ATTACK_BYTES, "")]).await;
    let (status, body) = &answers[0];
    assert_eq!(*status, 406, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
}

/// A string longer than any field needs is refused before anything is built: a `method` of
/// 15 MiB was copied into the answer, its data and the log (+190 MiB before the fix).
#[tokio::test]
async fn a_ping_with_a_15_mib_method_is_refused_before_it_is_copied() {
    let t = target().await;
    let head = r#"{"jsonrpc":"2.0","id":1,"method":""#;
    let tail = r#""}"#;
    let mut body = head.as_bytes().to_vec();
    body.resize(ATTACK_BYTES - tail.len(), b'm');
    body.extend_from_slice(tail.as_bytes());
    let (answers, _) = attack(&t, ACCEPT, vec![body]).await;
    let (status, body) = &answers[0];
    assert_eq!(*status, 413, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(
        body["error"]["data"]["error"]["details"]["reason"], "string_too_long",
        "{body}"
    );
}

/// A body within every cap goes on to rmcp: strings at their cap cost a few copies of
/// themselves, not a tree.
#[tokio::test]
async fn a_ping_padded_with_strings_at_their_cap_costs_its_bytes() {
    let t = target().await;
    let string = format!("\"{}\"", "x".repeat(1024 * 1024));
    let strings = vec![string; 14].join(",");
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":[{strings}]}}}}"#);
    let (answers, _) = attack(&t, ACCEPT, vec![body.into_bytes()]).await;
    let (status, body) = &answers[0];
    assert_eq!(*status, 200, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert!(body.get("result").is_some(), "{body}");
}

/// The largest legitimate message still works: a save of 50 components of 128 KiB each (as
/// base64) with 16 KiB of metadata, over MCP.
#[tokio::test]
async fn a_save_of_the_largest_skill_still_works_over_mcp() {
    use base64::Engine;
    let t = target().await;
    let components: Vec<Value> = (0..50)
        .map(|i| {
            let bytes: Vec<u8> = (0..128 * 1024).map(|j: usize| (j * 7 + i) as u8).collect();
            json!({
                "logical_path": format!("assets/blob-{i}.bin"),
                "type": "artifact",
                "content": base64::engine::general_purpose::STANDARD.encode(bytes),
                "encoding": "base64",
            })
        })
        .collect();
    // 16 KiB of metadata as small values, the densest shape a save carries.
    let metadata: serde_json::Map<String, Value> =
        (0..1250).map(|i| (format!("k{i:04}"), json!(i))).collect();
    assert!(serde_json::to_vec(&metadata).expect("metadata").len() <= 16 * 1024);
    let request = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "save_cloud_skill",
            "arguments": {
                "slug": "largest-skill",
                "name": "Largest skill",
                "description": "Every component at its size limit.",
                "instruction_body": "x".repeat(60 * 1024),
                "components": components,
                "metadata": metadata,
            }
        }
    });
    let body = serde_json::to_vec(&request).expect("request");
    assert!(body.len() > 8 * MIB as usize, "{}", body.len());
    let (status, answer) = t.post(&t.admin_key, ACCEPT, body).await;
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}");
    let saved = &result["structuredContent"];
    assert_eq!(saved["kind"], "saved", "{answer}");
    assert_eq!(saved["data"]["created"], true, "{answer}");
}

/// A body announced over the 16 MiB limit is refused from its head, before any of it is
/// read: the server answers although the body is never sent.
#[tokio::test]
async fn a_body_announced_over_the_limit_is_refused_before_it_is_read() {
    let t = target().await;
    let address = t.server.url.trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
         Accept: {ACCEPT}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        t.read_only_key,
        16 * MIB + 1
    );
    stream.write_all(head.as_bytes()).expect("send head");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("PAYLOAD_TOO_LARGE") {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => panic!(
                "no answer while the body was not sent ({e}); got: {}",
                String::from_utf8_lossy(&answer)
            ),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"code\":-32600"), "{text}");
}
