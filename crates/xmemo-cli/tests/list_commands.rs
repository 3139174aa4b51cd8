//! The CLI's list commands show everything: they follow the server's `next_cursor` across
//! pages (the server answers at most 100 rows a page), and `xmemo diff` finds a revision
//! number past the first page.

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn xmemo(url: &str, key: &str, args: &[&str]) -> Value {
    let out = xmemo_testkit::clean_command(BIN)
        .args(args)
        .arg("--json")
        .env("XMEMO_URL", url)
        .env("XMEMO_KEY", key)
        .output()
        .expect("run xmemo");
    assert!(
        out.status.success(),
        "xmemo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[tokio::test]
async fn list_commands_follow_every_page() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let server = xmemo_testkit::ServerProcess::start(
        BIN,
        &["--data-dir", data.to_str().expect("utf-8 path")],
        &[],
    );
    let key = std::fs::read_to_string(data.join("admin.key")).expect("admin key");
    let key = key.trim();
    let http = reqwest::Client::new();
    const REVISIONS: i64 = 105;
    for i in 1..=REVISIONS {
        let r = http
            .post(format!("{}/api/v1/skills", server.url))
            .bearer_auth(key)
            .json(&json!({
                "slug": "long-history", "name": "Long", "description": "Many revisions",
                "instruction_body": format!("step {i}")
            }))
            .send()
            .await
            .expect("save");
        assert_eq!(r.status().as_u16(), 201);
    }
    // One page of the server is not all of it.
    let first: Value = http
        .get(format!(
            "{}/api/v1/skills/long-history/revisions",
            server.url
        ))
        .bearer_auth(key)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(first["revisions"].as_array().unwrap().len(), 50);
    assert!(first["next_cursor"].is_string());

    let all = xmemo(&server.url, key, &["revisions", "long-history"]);
    let numbers: Vec<i64> = all["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|r| r["revision_number"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, (1..=REVISIONS).collect::<Vec<_>>());
    assert_eq!(all["next_cursor"], Value::Null);
    assert_eq!(all["slug"], "long-history");

    let diff = xmemo(&server.url, key, &["diff", "long-history", "1", "r105"]);
    assert_eq!(diff["to"]["revision_number"], REVISIONS);
    assert_eq!(diff["from"]["revision_number"], 1);

    let keys = xmemo(&server.url, key, &["keys", "list"]);
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
    assert_eq!(keys["next_cursor"], Value::Null);
    let workspaces = xmemo(&server.url, key, &["workspaces", "list"]);
    assert_eq!(workspaces["workspaces"][0]["handle"], "personal");
    drop(server);
}
