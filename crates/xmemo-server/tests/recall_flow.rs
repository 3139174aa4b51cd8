//! Acceptance: save → L0 only once published → L1 published-or-latest → L2 pin rules →
//! pinned reads survive newer revisions → previous published becomes deprecated.

mod common;

use base64::Engine;
use common::{TestServer, skill};
use serde_json::json;

#[tokio::test]
async fn progressive_recall_lifecycle_over_http() {
    let s = TestServer::start().await;
    let k = &s.admin_key;

    // Draft save with a script and a binary artifact.
    let binary: Vec<u8> = (0u8..=255).rev().collect();
    let mut body = skill("deploy-procedure", "1. Check.\n2. Deploy.\n");
    body["components"] = json!([
        {"logical_path": "scripts/check.py", "type": "script", "content": "print('v1')\n"},
        {"logical_path": "assets/logo.bin", "type": "artifact",
         "content": base64::engine::general_purpose::STANDARD.encode(&binary), "encoding": "base64"}
    ]);
    let saved = s.save(k, body.clone()).await;
    assert_eq!(saved.status.as_u16(), 201);
    assert_eq!(saved.body["kind"], "saved");
    let rev1 = saved.body["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(saved.body["data"]["status"], "draft");
    assert_eq!(saved.body["data"]["revision_number"], 1);
    assert_eq!(saved.body["data"]["created"], true);

    // Identical content: nothing new.
    let again = s.save(k, body.clone()).await;
    assert_eq!(again.status.as_u16(), 200);
    assert_eq!(again.body["data"]["created"], false);
    assert_eq!(again.body["data"]["revision_id"], rev1.as_str());

    // L0 does not find drafts.
    let l0 = s.get("/api/v1/skills?query=deploy", k).await;
    assert_eq!(l0.expect_ok()["kind"], "descriptors");
    assert_eq!(l0.body["data"]["skills"].as_array().unwrap().len(), 0);

    // L1 falls back to the latest revision when none is published.
    let l1 = s.get("/api/v1/skills/deploy-procedure", k).await;
    assert_eq!(l1.expect_ok()["kind"], "root");
    assert_eq!(l1.body["data"]["revision_id"], rev1.as_str());
    assert_eq!(l1.body["data"]["status"], "draft");

    // Publish (personal workspace: published at once).
    let p = s
        .post(
            &format!("/api/v1/skills/deploy-procedure/revisions/{rev1}/publish"),
            k,
            json!({}),
        )
        .await;
    assert_eq!(p.expect_ok()["revision"]["status"], "published");

    let l0 = s.get("/api/v1/skills?query=deploy%20procedure", k).await;
    let hits = l0.expect_ok()["data"]["skills"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["slug"], "deploy-procedure");
    assert_eq!(hits[0]["workspace"], "personal");
    assert!(
        hits[0].get("instruction_body").is_none(),
        "L0 never returns bodies"
    );

    // L1 and its manifest.
    let l1 = s.get("/api/v1/skills/deploy-procedure", k).await;
    let data = &l1.expect_ok()["data"];
    assert_eq!(data["status"], "published");
    assert_eq!(data["instruction_body"], "1. Check.\n2. Deploy.\n");
    let resources = data["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2);
    assert_eq!(resources[0]["logical_path"], "assets/logo.bin");
    assert_eq!(resources[0]["size"], 256);
    assert_eq!(
        resources[0]["content_hash"],
        xmemo_core::content_hash(&binary).as_str()
    );

    // L2 without a pin is refused, through both the REST path and the tool-shaped endpoint.
    s.get(
        "/api/v1/skills/deploy-procedure/resources/scripts/check.py",
        k,
    )
    .await
    .expect_error(422, "REVISION_PIN_REQUIRED");
    s.post(
        "/api/v1/recall",
        k,
        json!({"slug": "deploy-procedure", "resource": "scripts/check.py"}),
    )
    .await
    .expect_error(422, "REVISION_PIN_REQUIRED");

    // Pinned L2: text and binary.
    let l2 = s
        .post(
            "/api/v1/recall",
            k,
            json!({"slug": "deploy-procedure", "revision_id": rev1, "resource": "scripts/check.py"}),
        )
        .await;
    assert_eq!(l2.expect_ok()["kind"], "resource");
    assert_eq!(l2.body["data"]["content"], "print('v1')\n");
    assert_eq!(l2.body["data"]["encoding"], "utf-8");
    let bin = s
        .get(
            &format!("/api/v1/skills/deploy-procedure/revisions/{rev1}/resources/assets/logo.bin"),
            k,
        )
        .await;
    assert_eq!(bin.expect_ok()["data"]["encoding"], "base64");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(bin.body["data"]["content"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, binary);

    // An undeclared resource is NOT_FOUND.
    s.get(
        &format!("/api/v1/skills/deploy-procedure/revisions/{rev1}/resources/scripts/nope.py"),
        k,
    )
    .await
    .expect_error(404, "NOT_FOUND");

    // A newer revision, published directly by the save.
    let mut body2 = body.clone();
    body2["components"][0]["content"] = json!("print('v2')\n");
    body2["intent"] = json!("publish");
    let saved2 = s.save(k, body2).await;
    assert_eq!(saved2.status.as_u16(), 201);
    let rev2 = saved2.body["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(saved2.body["data"]["revision_number"], 2);
    assert_eq!(saved2.body["data"]["status"], "published");

    // The pinned read still returns the old bytes.
    let old = s
        .post(
            "/api/v1/recall",
            k,
            json!({"slug": "deploy-procedure", "revision_id": rev1, "resource": "scripts/check.py"}),
        )
        .await;
    assert_eq!(old.expect_ok()["data"]["content"], "print('v1')\n");
    let new = s
        .post(
            "/api/v1/recall",
            k,
            json!({"slug": "deploy-procedure", "revision_id": rev2, "resource": "scripts/check.py"}),
        )
        .await;
    assert_eq!(new.expect_ok()["data"]["content"], "print('v2')\n");

    // L1 now shows revision 2; revision 1 is deprecated.
    let l1 = s.get("/api/v1/skills/deploy-procedure", k).await;
    assert_eq!(l1.expect_ok()["data"]["revision_id"], rev2.as_str());
    let revs = s.get("/api/v1/skills/deploy-procedure/revisions", k).await;
    let list = revs.expect_ok()["revisions"].as_array().unwrap().clone();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["revision_id"], rev1.as_str());
    assert_eq!(list[0]["status"], "deprecated");
    assert_eq!(list[1]["status"], "published");

    // A pinned L1 of the deprecated revision still works.
    let pinned = s
        .get(
            &format!("/api/v1/skills/deploy-procedure/revisions/{rev1}"),
            k,
        )
        .await;
    assert_eq!(pinned.expect_ok()["data"]["status"], "deprecated");

    // A newer draft does not displace the published revision at L1.
    let mut draft3 = body.clone();
    draft3["instruction_body"] = json!("draft three");
    s.save(k, draft3).await.expect_ok();
    let l1 = s.get("/api/v1/skills/deploy-procedure", k).await;
    assert_eq!(l1.expect_ok()["data"]["revision_id"], rev2.as_str());
}

#[tokio::test]
async fn archive_hides_from_l0_and_l1_but_pinned_reads_work() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    let mut body = skill("rollback", "Roll back.");
    body["intent"] = json!("publish");
    body["components"] = json!([{"logical_path": "notes.md", "type": "document", "content": "n"}]);
    let rev = s.save(k, body).await.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        s.get("/api/v1/skills?query=rollback", k).await.expect_ok()["data"]["skills"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let a = s
        .post(
            "/api/v1/skills/rollback/archive",
            k,
            json!({"reason": "obsolete"}),
        )
        .await;
    assert_eq!(a.expect_ok()["skill"]["asset_status"], "archived");
    assert_eq!(
        s.get("/api/v1/skills?query=rollback", k).await.expect_ok()["data"]["skills"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    s.get("/api/v1/skills/rollback", k)
        .await
        .expect_error(404, "NOT_FOUND");
    let l2 = s
        .post(
            "/api/v1/recall",
            k,
            json!({"slug": "rollback", "revision_id": rev, "resource": "notes.md"}),
        )
        .await;
    assert_eq!(l2.expect_ok()["data"]["content"], "n");
    s.post("/api/v1/skills/rollback/restore", k, json!({}))
        .await
        .expect_ok();
    assert_eq!(
        s.get("/api/v1/skills?query=rollback", k).await.expect_ok()["data"]["skills"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn exact_slug_and_name_matches_rank_first() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    for (slug, name, desc) in [
        (
            "backup-notes",
            "Backup notes",
            "backup backup backup backup database backup",
        ),
        ("backup", "Nightly job", "Run the nightly backup"),
        (
            "restore-db",
            "Restore",
            "Restore the database from a backup",
        ),
    ] {
        s.save(
            k,
            json!({"slug": slug, "name": name, "description": desc, "instruction_body": "x", "intent": "publish"}),
        )
        .await
        .expect_ok();
    }
    let hits = s.get("/api/v1/skills?query=backup", k).await;
    let skills = hits.expect_ok()["data"]["skills"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(skills.len(), 3);
    assert_eq!(skills[0]["slug"], "backup", "exact slug first: {skills:?}");
    assert!(skills[0]["score"].as_f64() > skills[1]["score"].as_f64());
    let by_name = s.get("/api/v1/skills?query=Nightly%20job&limit=1", k).await;
    let top = by_name.expect_ok()["data"]["skills"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(top.len(), 1);
    assert_eq!(top[0]["slug"], "backup");
}
