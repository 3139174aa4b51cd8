//! Issue #29, defect 7, through the real binary: a restarted server builds its search indexes
//! on its own, at start, and says when it is ready. Before the fix the first search after a
//! restart built them on its own path (19.2 s for one account's 11,185 memories of 16 KiB),
//! while `/readyz` already said ready.

use serde_json::json;
use std::time::{Duration, Instant};
use xmemo_testkit::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no metric {name} in:\n{text}"))
}

fn start(data: &std::path::Path) -> ServerProcess {
    ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--write-rate",
            "0",
        ],
        &[],
    )
}

#[tokio::test]
async fn a_restarted_server_builds_its_search_indexes_before_any_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let http = reqwest::Client::new();
    let server = start(&data);
    let key = std::fs::read_to_string(data.join("admin.key"))
        .expect("admin.key")
        .trim()
        .to_string();
    let filler = "harbour pilot tide chart buoy ".repeat(100);
    for i in 0..120 {
        let r = http
            .post(format!("{}/api/v1/memories", server.url))
            .bearer_auth(&key)
            .json(&json!({"kind": "note", "content": format!("zqentry{i} {filler}")}))
            .send()
            .await
            .expect("remember");
        assert_eq!(r.status().as_u16(), 201);
    }
    drop(server);

    let server = start(&data);
    // No search is sent: the server builds its indexes itself, and /readyz says when.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = http
            .get(format!("{}/readyz", server.url))
            .send()
            .await
            .expect("readyz");
        let status = r.status().as_u16();
        let body: serde_json::Value = r.json().await.expect("readyz json");
        if status == 200 {
            assert_eq!(body["search"], "ready", "{body}");
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["search"], "building", "{body}");
        assert!(Instant::now() < deadline, "never ready: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let metrics = http
        .get(format!("{}/metrics", server.url))
        .bearer_auth(&key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    assert_eq!(metric(&metrics, "xmemo_search_ready"), 1);
    assert_eq!(metric(&metrics, "xmemo_search_builds_total"), 1);
    assert!(metric(&metrics, "xmemo_search_rows") >= 120, "{metrics}");
    // And the first search finds what was there before the restart, applying nothing.
    let found: serde_json::Value = http
        .get(format!("{}/api/v1/memories?query=zqentry77", server.url))
        .bearer_auth(&key)
        .send()
        .await
        .expect("recall")
        .json()
        .await
        .expect("json");
    assert_eq!(found["data"]["memories"].as_array().map(Vec::len), Some(1));
}
