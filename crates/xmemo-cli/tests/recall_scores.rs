//! Issue #30, item 3, through the real binary: one score for memories and Level 0, from 0 to
//! 1 and comparable across queries; `min_score` applied to it the same way with the semantic
//! lane on (`--embeddings-url` to a fake OpenAI-compatible endpoint on a real socket) or off;
//! a result matching the query's words exactly is never left out; every result says which
//! lanes found it.

use serde_json::{Value, json};
use xmemo_testkit::ServerProcess;
use xmemo_testkit::embeddings::{Answer, FakeEmbeddings, wait_until_embedded};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");
const DIMS: usize = 64;

const MEMORIES: [&str; 5] = [
    "rotate the database credentials every ninety days",
    "database backups run nightly at two",
    "the harbour pilot boards ships at dawn",
    "冒烟测试在每次发布之后运行",
    "quarterly budget review for the marketing team",
];

struct Server {
    _tmp: tempfile::TempDir,
    server: ServerProcess,
    key: String,
    http: reqwest::Client,
}

impl Server {
    /// A server started with `extra` arguments.
    fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data = tmp.path().join("data");
        let mut args = vec!["--data-dir", data.to_str().expect("utf-8 path")];
        args.extend(["--write-rate", "0"]);
        args.extend(extra);
        let server = ServerProcess::start(BIN, &args, &[]);
        let key = std::fs::read_to_string(data.join("admin.key"))
            .expect("admin.key")
            .trim()
            .to_string();
        Server {
            _tmp: tmp,
            server,
            key,
            http: reqwest::Client::new(),
        }
    }

    async fn post(&self, path: &str, body: Value) {
        let r = self
            .http
            .post(format!("{}/api/v1/{path}", self.server.url))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await
            .expect("post");
        assert_eq!(r.status().as_u16(), 201, "{path}: {:?}", r.text().await);
    }

    async fn seed(&self) {
        for content in MEMORIES {
            self.post("memories", json!({"kind": "note", "content": content}))
                .await;
        }
        for (slug, name, description) in [
            ("deploy", "Deploy", "Ship the build to production"),
            (
                "deploy-canary",
                "Canary deployment",
                "Deploy to a few hosts first",
            ),
            ("rollback", "Roll back", "Return to the previous release"),
        ] {
            self.post(
                "skills",
                json!({"slug": slug, "name": name, "description": description,
                       "instruction_body": "Steps.", "intent": "publish"}),
            )
            .await;
        }
    }

    async fn get(&self, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
        let mut url =
            reqwest::Url::parse(&format!("{}/api/v1/{path}", self.server.url)).expect("URL");
        url.query_pairs_mut().extend_pairs(query);
        let r = self
            .http
            .get(url)
            .bearer_auth(&self.key)
            .send()
            .await
            .expect("get");
        let status = r.status().as_u16();
        (status, r.json().await.expect("json"))
    }

    /// (content, score, matched) of a memory recall.
    async fn recall(&self, query: &str, min_score: Option<&str>) -> Vec<(String, f64, Value)> {
        let mut params = vec![("query", query), ("limit", "10")];
        params.extend(min_score.map(|m| ("min_score", m)));
        let (status, body) = self.get("memories", &params).await;
        assert_eq!(status, 200, "{body}");
        body["data"]["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .map(|m| {
                (
                    m["content"].as_str().unwrap_or_default().to_string(),
                    m["score"].as_f64().expect("score"),
                    m["matched"].clone(),
                )
            })
            .collect()
    }

    /// (slug, score) of a Level 0 search.
    async fn search(&self, query: &str, min_score: Option<&str>) -> Vec<(String, f64)> {
        let mut params = vec![("query", query)];
        params.extend(min_score.map(|m| ("min_score", m)));
        let (status, body) = self.get("skills", &params).await;
        assert_eq!(status, 200, "{body}");
        body["data"]["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .map(|s| {
                (
                    s["slug"].as_str().unwrap_or_default().to_string(),
                    s["score"].as_f64().expect("score"),
                )
            })
            .collect()
    }

    /// Waits until the lane is ok and every row has its vector.
    async fn wait_until_embedded(&self, rows: usize) {
        wait_until_embedded(&self.http, &self.server.url, &self.key, rows as f64).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_score_means_the_same_with_the_lane_on_or_off_and_keeps_exact_matches() {
    let fake = FakeEmbeddings::start(Answer::Vectors { dims: DIMS });
    let url = format!("http://{}/v1", fake.addr);
    let plain = Server::start(&[]);
    let lane = Server::start(&["--embeddings-url", &url, "--embedding-model", "fake-model"]);
    plain.seed().await;
    lane.seed().await;
    lane.wait_until_embedded(MEMORIES.len() + 3).await;

    for server in [&plain, &lane] {
        // Every score is 0 to 1, every result says which lanes found it.
        for query in ["database credentials", "ships", "budget review", "冒烟测试"] {
            let found = server.recall(query, None).await;
            assert!(!found.is_empty(), "{query}");
            for (content, score, matched) in &found {
                assert!((0.0..1.0).contains(score), "{query}: {content} {score}");
                assert!(
                    matched.as_array().is_some_and(|m| !m.is_empty()),
                    "{query}: {content} {matched}"
                );
            }
        }
        // A floor leaves out what scores less, and keeps what holds every word of the
        // query even when it scores less than the floor (here, with the lane on or off).
        for (query, exact) in [
            ("database credentials", MEMORIES[0]),
            ("冒烟测试", MEMORIES[3]),
        ] {
            let all = server.recall(query, None).await;
            let (_, exact_score, _) = all
                .iter()
                .find(|(c, _, _)| c == exact)
                .unwrap_or_else(|| panic!("{query} finds {exact}: {all:?}"))
                .clone();
            assert!(exact_score < 0.95, "{query}: {exact_score}");
            let floored = server.recall(query, Some("0.95")).await;
            let contents: Vec<&str> = floored.iter().map(|(c, _, _)| c.as_str()).collect();
            assert_eq!(contents, vec![exact], "{query}");
            let half = server.recall(query, Some("0.2")).await;
            assert!(
                half.iter().all(|(c, s, _)| *s >= 0.2 || c == exact),
                "{query}: {half:?}"
            );
            let kept: Vec<&(String, f64, Value)> = all
                .iter()
                .filter(|(c, s, _)| *s >= 0.2 || c == exact)
                .collect();
            assert_eq!(half.iter().collect::<Vec<_>>(), kept, "{query}: {all:?}");
        }
        // A query nothing answers keeps nothing above a modest floor, lane or not (fused
        // scores were scaled per query, so its best row scored 0.5 like a true match).
        let nothing = server.recall("zebra stripes", Some("0.3")).await;
        assert!(nothing.is_empty(), "{nothing:?}");

        // Level 0 on the same scale: an exact slug is 1, kept by any floor.
        let hits = server.search("deploy", None).await;
        assert_eq!(hits[0], ("deploy".to_string(), 1.0), "{hits:?}");
        assert!(
            hits[1..].iter().all(|(_, s)| (0.0..1.0).contains(s)),
            "{hits:?}"
        );
        let floored = server.search("deploy", Some("1")).await;
        let slugs: Vec<&str> = floored.iter().map(|(s, _)| s.as_str()).collect();
        // deploy-canary holds the word too: kept; rollback does not.
        assert_eq!(slugs, vec!["deploy", "deploy-canary"], "{floored:?}");

        // Out of range: a clear VALIDATION_ERROR, the same on both routes.
        for bad in ["1.5", "-0.1", "NaN"] {
            for path in ["memories", "skills"] {
                let (status, body) = server
                    .get(path, &[("query", "deploy"), ("min_score", bad)])
                    .await;
                assert_eq!(status, 422, "{path} min_score={bad}: {body}");
                assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{body}");
                assert_eq!(body["error"]["details"]["field"], "min_score", "{body}");
            }
        }
    }
    // With the lane on, meaning finds what no word does, and says so.
    let by_meaning = lane.recall("harbour pilot dawn vessel", None).await;
    assert_eq!(by_meaning[0].0, MEMORIES[2], "{by_meaning:?}");
    assert!(
        by_meaning[0]
            .2
            .as_array()
            .is_some_and(|m| m.contains(&json!("meaning"))),
        "{by_meaning:?}"
    );
}

/// Reciprocal rank fusion is an option (`--embedding-fusion rrf`): it ranks, the scores stay
/// on the same 0-1 scale and `min_score` keeps its meaning; a name it does not know stops
/// `serve` with a clear message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rrf_is_an_option_with_the_same_scores_and_a_wrong_name_stops_serve() {
    let fake = FakeEmbeddings::start(Answer::Vectors { dims: DIMS });
    let url = format!("http://{}/v1", fake.addr);
    let rrf = Server::start(&[
        "--embeddings-url",
        &url,
        "--embedding-model",
        "fake-model",
        "--embedding-fusion",
        "rrf",
    ]);
    rrf.seed().await;
    rrf.wait_until_embedded(MEMORIES.len() + 3).await;
    let found = rrf.recall("database credentials", None).await;
    assert_eq!(found[0].0, MEMORIES[0], "{found:?}");
    assert!(
        found.iter().all(|(_, s, _)| (0.0..1.0).contains(s)),
        "{found:?}"
    );
    let floored = rrf.recall("database credentials", Some("0.95")).await;
    assert_eq!(floored.len(), 1, "{floored:?}");
    assert!(rrf.recall("zebra stripes", Some("0.3")).await.is_empty());

    let tmp = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.path().join("data"))
        .args(["--embedding-model", "fake-model", "--embeddings-url", &url])
        .args(["--embedding-fusion", "borda"])
        .output()
        .expect("run xmemo serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--embedding-fusion must be `weighted` or `rrf`"),
        "{stderr}"
    );
}
