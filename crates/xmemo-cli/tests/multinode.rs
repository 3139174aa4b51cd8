//! Two `xmemo serve` nodes on one PostgreSQL database: revision numbers stay gap-free across
//! nodes, publish races leave one published revision, and what one node saves the other
//! serves at once. Fails without PostgreSQL (skips, loudly, only with
//! `XMEMO_TEST_ALLOW_SKIP=1`).

use reqwest::Client;
use serde_json::{Value, json};
use std::sync::Arc;
use xmemo_testkit::{ServerProcess, postgres_fresh_database_url};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

struct Cluster {
    nodes: Vec<ServerProcess>,
    key: String,
    http: Client,
    _dirs: Vec<tempfile::TempDir>,
    _db: xmemo_testkit::PgDropGuard,
}

impl Cluster {
    async fn start() -> Option<Cluster> {
        let (url, guard) = postgres_fresh_database_url().await?;
        let mut dirs = Vec::new();
        let mut nodes = Vec::new();
        for _ in 0..2 {
            let dir = tempfile::tempdir().expect("tempdir");
            let data_dir = dir.path().to_str().expect("utf-8 temp path").to_string();
            nodes.push(ServerProcess::start(
                BIN,
                &["--data-dir", &data_dir, "--database-url", &url],
                &[],
            ));
            dirs.push(dir);
        }
        // The first node bootstrapped the admin account; the second found it already there.
        let key = std::fs::read_to_string(dirs[0].path().join("admin.key"))
            .expect("node A wrote the admin key")
            .trim()
            .to_string();
        assert!(!dirs[1].path().join("admin.key").exists());
        Some(Cluster {
            nodes,
            key,
            http: Client::new(),
            _dirs: dirs,
            _db: guard,
        })
    }

    async fn send(
        &self,
        node: usize,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{}", self.nodes[node % 2].url, path))
            .bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

fn skill(slug: &str, body: &str) -> Value {
    json!({"slug": slug, "name": "Shared", "description": "Saved from two nodes", "instruction_body": body})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_share_one_database() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let cluster = Arc::new(cluster);

    // 4 clients × 50 saves to one slug, alternating nodes.
    let mut clients = Vec::new();
    for c in 0..4usize {
        let cluster = cluster.clone();
        clients.push(tokio::spawn(async move {
            let mut numbers = Vec::new();
            for i in 0..50usize {
                let (status, body) = cluster
                    .send(
                        c + i,
                        reqwest::Method::POST,
                        "/api/v1/skills",
                        Some(skill("shared", &format!("client {c} save {i}"))),
                    )
                    .await;
                assert_eq!(status, 201, "{body}");
                numbers.push(body["data"]["revision_number"].as_i64().expect("number"));
            }
            numbers
        }));
    }
    let mut all = Vec::new();
    for c in clients {
        all.extend(c.await.expect("client"));
    }
    all.sort_unstable();
    assert_eq!(
        all,
        (1..=200).collect::<Vec<i64>>(),
        "gap-free across nodes"
    );

    // Publish races between the nodes: every one of 10 revisions published at once.
    let (_, list) = cluster
        .send(
            0,
            reqwest::Method::GET,
            "/api/v1/skills/shared/revisions",
            None,
        )
        .await;
    let ids: Vec<String> = list["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .rev()
        .take(10)
        .map(|r| r["revision_id"].as_str().expect("id").to_string())
        .collect();
    let mut races = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let cluster = cluster.clone();
        let path = format!("/api/v1/skills/shared/revisions/{id}/publish");
        races.push(tokio::spawn(async move {
            cluster
                .send(i, reqwest::Method::POST, &path, Some(json!({})))
                .await
        }));
    }
    let mut published_ok = 0;
    for r in races {
        let (status, body) = r.await.expect("race");
        assert!(status == 200 || status == 409, "{status} {body}");
        if status == 200 {
            published_ok += 1;
        }
    }
    assert!(published_ok >= 1);
    for node in 0..2 {
        let (_, list) = cluster
            .send(
                node,
                reqwest::Method::GET,
                "/api/v1/skills/shared/revisions",
                None,
            )
            .await;
        let published = list["revisions"]
            .as_array()
            .expect("revisions")
            .iter()
            .filter(|r| r["status"] == "published")
            .count();
        assert_eq!(
            published, 1,
            "exactly one published revision, seen from node {node}"
        );
    }

    // Saved through node A, recalled through node B at once, at every level.
    let mut fresh = skill("cross-node", "Recall me from the other node.");
    fresh["intent"] = json!("publish");
    fresh["components"] =
        json!([{"logical_path": "notes/a.md", "type": "reference", "content": "from A"}]);
    let (status, saved) = cluster
        .send(0, reqwest::Method::POST, "/api/v1/skills", Some(fresh))
        .await;
    assert_eq!(status, 201, "{saved}");
    let rev = saved["data"]["revision_id"]
        .as_str()
        .expect("rev")
        .to_string();
    let (_, l0) = cluster
        .send(
            1,
            reqwest::Method::GET,
            "/api/v1/skills?query=cross%20node",
            None,
        )
        .await;
    assert_eq!(l0["data"]["skills"][0]["slug"], "cross-node", "{l0}");
    let (_, l1) = cluster
        .send(1, reqwest::Method::GET, "/api/v1/skills/cross-node", None)
        .await;
    assert_eq!(l1["data"]["revision_id"], rev.as_str());
    let (_, l2) = cluster
        .send(
            1,
            reqwest::Method::GET,
            &format!("/api/v1/skills/cross-node/revisions/{rev}/resources/notes/a.md"),
            None,
        )
        .await;
    assert_eq!(l2["data"]["content"], "from A");
}
