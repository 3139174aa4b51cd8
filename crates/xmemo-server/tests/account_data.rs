//! Account export and deletion (SPEC §7): export → delete → the exported skills import again
//! with the same canonical hashes; afterwards nothing of the account answers, and table
//! counts show nothing of it left (a blob it shared with another account stays).

mod common;

use common::{Reply, TestServer, skill};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Read;

/// Every entry of a ZIP, by name.
fn entries(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).expect("entry");
        let mut data = Vec::new();
        f.read_to_end(&mut data).expect("read");
        out.insert(f.name().expect("name").to_string(), data);
    }
    out
}

async fn export(s: &TestServer, key: &str) -> Vec<u8> {
    let resp = s
        .http
        .get(format!("{}/api/v1/account/export", s.url))
        .bearer_auth(key)
        .send()
        .await
        .expect("export");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/zip")
    );
    resp.bytes().await.expect("bytes").to_vec()
}

async fn delete(s: &TestServer, key: &str, confirm: &str) -> Reply {
    s.call(
        Method::DELETE,
        "/api/v1/account",
        key,
        Some(json!({ "confirm": confirm })),
    )
    .await
}

#[tokio::test]
async fn export_then_delete_then_reimport() {
    let s = TestServer::start().await;
    let admin = s.admin_key.clone();
    // The administrator has a skill whose component bytes the leaving account reuses.
    let shared = json!({"logical_path": "references/shared.md", "type": "reference", "content": "shared reference"});
    let mut kept = skill("kept", "Admin's skill.\n");
    kept["components"] = json!([shared.clone()]);
    s.save(&admin, kept).await.expect_ok();
    let before = s.counts().await;

    let dana = s.account("dana", &["memory:read", "memory:write"]).await;
    let mut first = skill("deploy", "Step 1.\n");
    first["components"] = json!([
        shared,
        {"logical_path": "assets/logo.png", "type": "artifact", "content": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "encoding": "base64"},
        {"logical_path": "scripts/check.py", "type": "script", "content": "print('ok')\n"}
    ]);
    first["intent"] = json!("publish");
    let r1 = s.save(&dana, first.clone()).await;
    let mut second = first.clone();
    second["instruction_body"] = json!("Step 1.\nStep 2.\n");
    let r2 = s.save(&dana, second).await;
    let hashes = [
        r1.expect_ok()["data"]["canonical_hash"].clone(),
        r2.expect_ok()["data"]["canonical_hash"].clone(),
    ];
    let m = s
        .post(
            "/api/v1/memories",
            &dana,
            json!({"kind": "preference", "content": "Dana likes short answers", "tags": ["style"]}),
        )
        .await;
    let memory_id = m.expect_ok()["data"]["memory"]["memory_id"]
        .as_str()
        .expect("id")
        .to_string();
    s.call(
        Method::PATCH,
        &format!("/api/v1/memories/{memory_id}"),
        &dana,
        Some(json!({"expected_version": 1, "content": "Dana likes very short answers"})),
    )
    .await
    .expect_ok();
    let skill_id = r1.body["data"]["skill_id"]
        .as_str()
        .expect("skill")
        .to_string();

    // The export: deterministic, complete, no secret.
    let zip = export(&s, &dana).await;
    assert_eq!(
        export(&s, &dana).await,
        zip,
        "the same data exports to the same bytes"
    );
    let files = entries(&zip);
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "xmemo-export/account.json",
            "xmemo-export/memories.jsonl",
            "xmemo-export/skills/personal/deploy/r000001.zip",
            "xmemo-export/skills/personal/deploy/r000002.zip",
        ]
    );
    let account: Value = serde_json::from_slice(&files["xmemo-export/account.json"]).expect("json");
    assert_eq!(account["account"]["handle"], "dana");
    assert_eq!(account["workspaces"][0]["role"], "owner");
    assert_eq!(account["api_keys"].as_array().map(Vec::len), Some(1));
    assert!(account["api_keys"][0].get("key_hash").is_none());
    for bytes in files.values() {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(&dana), "the export carries a key secret");
    }
    let lines: Vec<Value> = String::from_utf8_lossy(&files["xmemo-export/memories.jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0]["memory"]["content"],
        "Dana likes very short answers"
    );
    assert_eq!(lines[0]["versions"].as_array().map(Vec::len), Some(2));

    // Deletion: the handle must be typed back.
    let unchanged = s.counts().await;
    delete(&s, &dana, "Dana")
        .await
        .expect_error(422, "VALIDATION_ERROR");
    assert_eq!(s.counts().await, unchanged);
    let done = delete(&s, &dana, "dana").await;
    let report = &done.expect_ok()["data"];
    assert_eq!(
        (report["skills"].clone(), report["memories"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(
        report["blobs"], 2,
        "logo and script go; the shared reference stays"
    );

    // Nothing of the account answers any more, on any transport.
    s.get("/api/v1/me", &dana)
        .await
        .expect_error(401, "AUTH_REQUIRED");
    s.get("/api/v1/skills/deploy", &dana)
        .await
        .expect_error(401, "AUTH_REQUIRED");
    let mcp = s
        .http
        .post(format!("{}/mcp", s.url))
        .bearer_auth(&dana)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-06-18")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .expect("mcp");
    assert_eq!(mcp.status().as_u16(), 401);
    s.get(&format!("/api/v1/memories/{memory_id}"), &admin)
        .await
        .expect_error(404, "NOT_FOUND");
    assert!(s.store.get_skill(&skill_id).await.expect("store").is_none());
    let accounts = s.get("/api/v1/accounts", &admin).await;
    assert!(
        !accounts.body.to_string().contains("\"dana\""),
        "{}",
        accounts.body
    );
    let mut after = s.counts().await;
    let mut expected = before.clone();
    assert!(after["audit_log"] > expected["audit_log"]);
    after.remove("audit_log");
    expected.remove("audit_log");
    assert_eq!(
        after, expected,
        "table counts show nothing of the account left"
    );

    // The exported capsules import again with the same canonical hashes.
    for (i, name) in [
        "xmemo-export/skills/personal/deploy/r000001.zip",
        "xmemo-export/skills/personal/deploy/r000002.zip",
    ]
    .iter()
    .enumerate()
    {
        let resp = s
            .http
            .post(format!("{}/api/v1/imports?slug=restored", s.url))
            .bearer_auth(&admin)
            .header("content-type", "application/zip")
            .body(files[*name].clone())
            .send()
            .await
            .expect("import");
        let r = Reply::from(resp).await;
        assert_eq!(r.expect_ok()["data"]["canonical_hash"], hashes[i], "{name}");
    }
}

#[tokio::test]
async fn deletion_refuses_while_the_account_alone_owns_a_team() {
    let s = TestServer::start().await;
    let owner = s.account("olga", &["memory:read", "memory:write"]).await;
    s.post(
        "/api/v1/workspaces",
        &owner,
        json!({"handle": "labs", "name": "Labs"}),
    )
    .await
    .expect_ok();
    let read_only = s.account("rhea", &["memory:read"]).await;
    let before = s.counts().await;
    let r = delete(&s, &owner, "olga").await;
    let err = r.expect_error(409, "CONFLICT");
    assert_eq!(err["details"]["teams"], json!(["labs"]));
    assert!(err["message"].as_str().unwrap_or("").contains("labs"));
    assert_eq!(s.counts().await, before);
    // A read-only key cannot delete; the last administrator cannot delete itself.
    delete(&s, &read_only, "rhea")
        .await
        .expect_error(403, "PERMISSION_DENIED");
    delete(&s, &s.admin_key, "admin")
        .await
        .expect_error(409, "CONFLICT");
    assert_eq!(s.counts().await, before);
}
