//! Issue #30, item 5, end to end: `xmemo serve --embeddings-url` pointed at a real local
//! OpenAI-compatible server (llama.cpp's `llama-server --embeddings` serving the PyPI-packaged
//! all-MiniLM-L6-v2 as GGUF; `scripts/llama-server` builds both) embeds what is saved and finds
//! it by meaning. Without the server this test fails unless `XMEMO_TEST_ALLOW_SKIP=1`.

use serde_json::{Value, json};
use xmemo_testkit::ServerProcess;
use xmemo_testkit::embeddings::wait_until_embedded;
use xmemo_testkit::llama::{LlamaServer, MODEL};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

const MEMORIES: [&str; 3] = [
    "The cat sleeps on the warm windowsill",
    "Quarterly budget review for the marketing team",
    "Rotate the database credentials every ninety days",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_embeds_through_a_real_local_endpoint_and_recalls_by_meaning() {
    let Some(llama) = LlamaServer::start() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8 path"),
            "--embeddings-url",
            &llama.base_url,
            "--embedding-model",
            MODEL,
        ],
        &[],
    );
    let key = std::fs::read_to_string(data.join("admin.key")).expect("admin.key");
    let key = key.trim();
    let http = reqwest::Client::new();
    for content in MEMORIES {
        let r = http
            .post(format!("{}/api/v1/memories", server.url))
            .bearer_auth(key)
            .json(&json!({"kind": "fact", "content": content}))
            .send()
            .await
            .expect("remember");
        assert_eq!(r.status().as_u16(), 201);
    }
    wait_until_embedded(&http, &server.url, key, MEMORIES.len() as f64).await;

    // Words no memory holds: only the endpoint's vectors can answer.
    for (query, expected) in [
        ("kitten nap", MEMORIES[0]),
        ("money planning for advertising", MEMORIES[1]),
        ("change the passwords of the db", MEMORIES[2]),
    ] {
        let mut url = reqwest::Url::parse(&format!("{}/api/v1/memories", server.url)).expect("URL");
        url.query_pairs_mut().append_pair("query", query);
        let found: Value = http
            .get(url)
            .bearer_auth(key)
            .send()
            .await
            .expect("recall")
            .json()
            .await
            .expect("json");
        let first = &found["data"]["memories"][0];
        assert_eq!(first["content"], expected, "{query}: {found}");
        assert!(
            first["matched"]
                .as_array()
                .is_some_and(|m| m.contains(&json!("meaning"))),
            "{query}: {found}"
        );
    }
    assert!(!server.output().contains("degraded"), "{}", server.output());
}
