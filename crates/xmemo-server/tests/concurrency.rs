//! Acceptance: gap-free revision numbers under concurrent saves, optimistic concurrency, and
//! failed saves that write nothing.

mod common;

use common::{TestServer, skill};
use serde_json::json;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_saves_get_revision_numbers_one_to_n() {
    let s = Arc::new(TestServer::start().await);
    let mut tasks = Vec::new();
    for i in 0..32 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let r = s
                .save(&s.admin_key, skill("busy", &format!("version {i}")))
                .await;
            assert_eq!(r.status.as_u16(), 201, "{}", r.body);
            r.body["data"]["revision_number"].as_i64().unwrap()
        }));
    }
    let mut numbers = Vec::new();
    for t in tasks {
        numbers.push(t.await.unwrap());
    }
    numbers.sort();
    assert_eq!(numbers, (1..=32).collect::<Vec<i64>>());
    let revs = s.get("/api/v1/skills/busy/revisions", &s.admin_key).await;
    assert_eq!(revs.expect_ok()["revisions"].as_array().unwrap().len(), 32);
}

#[tokio::test]
async fn stale_expected_revision_is_a_conflict_and_writes_nothing() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    let first = s.save(k, skill("cas", "one")).await;
    let rev1 = first.body["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut second = skill("cas", "two");
    second["expected_revision_id"] = json!(rev1);
    let rev2 = s.save(k, second).await.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();

    let before = s.counts().await;
    let mut stale = skill("cas", "three");
    stale["expected_revision_id"] = json!(rev1);
    s.save(k, stale).await.expect_error(409, "CONFLICT");
    assert_eq!(before, s.counts().await);

    let mut fresh = skill("cas", "three");
    fresh["expected_revision_id"] = json!(rev2);
    assert_eq!(
        s.save(k, fresh).await.expect_ok()["data"]["revision_number"],
        3
    );

    // expected_revision_id on a skill that does not exist yet.
    let before = s.counts().await;
    let mut ghost = skill("ghost", "x");
    ghost["expected_revision_id"] = json!(rev2);
    s.save(k, ghost).await.expect_error(409, "CONFLICT");
    assert_eq!(before, s.counts().await);
}

#[tokio::test]
async fn failed_validation_leaves_the_database_unchanged() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    s.save(k, skill("keep", "x")).await.expect_ok();
    let before = s.counts().await;
    assert!(before["revisions"] == 1 && before["skills"] == 1);

    // 51 components (the first 50 valid): nothing of it may be stored.
    let mut too_many = skill("keep", "y");
    too_many["components"] = json!(
        (0..51)
            .map(|i| json!({"logical_path": format!("f{i}.txt"), "type": "document", "content": format!("{i}")}))
            .collect::<Vec<_>>()
    );
    let e = s.save(k, too_many).await;
    let err = e.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["field"], "components");
    assert_eq!(err["details"]["limit"], 50);
    assert_eq!(err["details"]["actual"], 51);
    assert_eq!(before, s.counts().await);

    // A component over 128 KiB after valid ones, on a brand-new slug.
    let mut big = skill("new-skill", "y");
    big["components"] = json!([
        {"logical_path": "ok.txt", "type": "document", "content": "fine"},
        {"logical_path": "big.txt", "type": "document", "content": "a".repeat(131_073)}
    ]);
    let e = s.save(k, big).await;
    assert_eq!(
        e.expect_error(413, "PAYLOAD_TOO_LARGE")["details"]["field"],
        "components[1].content"
    );
    assert_eq!(before, s.counts().await);

    // A bad path after a valid component.
    let mut bad_path = skill("new-skill", "y");
    bad_path["components"] = json!([
        {"logical_path": "ok.txt", "type": "document", "content": "fine"},
        {"logical_path": "../etc/passwd", "type": "document", "content": "x"}
    ]);
    let e = s.save(k, bad_path).await;
    assert_eq!(
        e.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "components[1].logical_path"
    );
    assert_eq!(before, s.counts().await);
}
