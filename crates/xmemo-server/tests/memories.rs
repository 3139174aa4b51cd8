//! Memories over REST (SPEC §9): the whole lifecycle, every limit and bad input with its
//! error shape and nothing written, access rules, and team attribution.

mod common;

use common::{Reply, TestServer};
use reqwest::Method;
use serde_json::{Value, json};

const BASE: &str = "/api/v1/memories";

async fn remember(s: &TestServer, key: &str, body: Value) -> Reply {
    s.post(BASE, key, body).await
}

fn data(r: &Reply) -> &Value {
    &r.expect_ok()["data"]
}

/// A team `ops` of the admin with these `(handle, key, role)` members.
async fn team_with(s: &TestServer, members: &[(&str, &str, &str)]) {
    s.post(
        "/api/v1/workspaces",
        &s.admin_key,
        json!({"handle": "ops", "name": "Ops"}),
    )
    .await
    .expect_ok();
    for (handle, key, role) in members {
        s.join("ops", &s.admin_key, handle, key, role).await;
    }
}

#[tokio::test]
async fn remember_recall_update_forget_restore() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let body = json!({
        "kind": "preference",
        "content": "Always run `cargo fmt` before committing. ".repeat(12),
        "title": "Formatting",
        "tags": ["rust", "style", "rust"],
        "project": "xmemo"
    });
    let first = remember(&s, &key, body.clone()).await;
    assert_eq!(first.status.as_u16(), 201, "{}", first.body);
    assert_eq!(first.body["kind"], "remembered");
    let m = data(&first)["memory"].clone();
    assert_eq!(data(&first)["created"], true);
    let id = m["memory_id"].as_str().expect("id").to_string();
    assert!(id.starts_with("mem_"));
    assert_eq!(m["version"], 1);
    assert_eq!(m["tags"], json!(["rust", "style"]));
    assert_eq!(m["workspace"], "personal");
    assert_eq!(m["saved_by"]["account"], "admin");

    // The same content again: the existing memory, 200, nothing written.
    let before = s.counts().await;
    let again = remember(&s, &key, body.clone()).await;
    assert_eq!(again.status.as_u16(), 200);
    assert_eq!(data(&again)["created"], false);
    assert_eq!(data(&again)["memory"]["memory_id"], id.as_str());
    assert_eq!(s.counts().await, before);

    // Recall: compact by default (an excerpt), whole with full=true.
    let hits = s.get(&format!("{BASE}?query=cargo%20fmt"), &key).await;
    assert_eq!(hits.body["kind"], "memories");
    let hit = &data(&hits)["memories"][0];
    assert_eq!(hit["memory_id"], id.as_str());
    assert_eq!(hit["truncated"], true);
    assert!(hit["content"].as_str().unwrap_or("").chars().count() <= 241);
    assert!(hit["score"].as_f64().unwrap_or(0.0) > 0.0);
    let full = s.get(&format!("{BASE}?query=cargo&full=true"), &key).await;
    assert_eq!(data(&full)["memories"][0]["content"], body["content"]);
    let by_tags = s
        .get(&format!("{BASE}?tags=rust,style&project=xmemo"), &key)
        .await;
    assert_eq!(data(&by_tags)["memories"].as_array().map(Vec::len), Some(1));
    let other_project = s.get(&format!("{BASE}?project=other"), &key).await;
    assert_eq!(data(&other_project)["memories"], json!([]));

    // Update: version 2, the history keeps version 1; a stale version writes nothing.
    let updated = s
        .call(
            Method::PATCH,
            &format!("{BASE}/{id}"),
            &key,
            Some(json!({"expected_version": 1, "content": "Run cargo fmt and clippy."})),
        )
        .await;
    assert_eq!(data(&updated)["version"], 2);
    assert_eq!(data(&updated)["title"], "Formatting");
    let before = s.counts().await;
    let stale = s
        .call(
            Method::PATCH,
            &format!("{BASE}/{id}"),
            &key,
            Some(json!({"expected_version": 1, "content": "lost"})),
        )
        .await;
    let err = stale.expect_error(409, "CONFLICT");
    assert_eq!(err["retryable"], false);
    assert_eq!(s.counts().await, before);
    let history = s.get(&format!("{BASE}/{id}/history"), &key).await;
    let versions = data(&history)["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0]["content"], body["content"]);
    assert_eq!(versions[1]["content"], "Run cargo fmt and clippy.");

    // Forget, twice; restore, twice.
    let forgotten = s
        .post(
            &format!("{BASE}/{id}/forget"),
            &key,
            json!({"reason": "outdated"}),
        )
        .await;
    assert_eq!(data(&forgotten)["status"], "forgotten");
    assert_eq!(data(&forgotten)["forgotten_reason"], "outdated");
    assert_eq!(data(&s.get(BASE, &key).await)["memories"], json!([]));
    let with = s.get(&format!("{BASE}?include_forgotten=true"), &key).await;
    assert_eq!(data(&with)["memories"].as_array().map(Vec::len), Some(1));
    let before = s.counts().await;
    s.post(&format!("{BASE}/{id}/forget"), &key, json!({}))
        .await
        .expect_error(409, "CONFLICT");
    assert_eq!(s.counts().await, before);
    let restored = s
        .post(&format!("{BASE}/{id}/restore"), &key, json!({}))
        .await;
    assert_eq!(data(&restored)["status"], "active");
    let before = s.counts().await;
    s.post(&format!("{BASE}/{id}/restore"), &key, json!({}))
        .await
        .expect_error(409, "CONFLICT");
    assert_eq!(s.counts().await, before);
    let one = s.get(&format!("{BASE}/{id}"), &key).await;
    assert_eq!(data(&one)["version"], 2);

    // Every write is in the audit log.
    let actions: Vec<String> = s
        .store
        .list_audit(&xmemo_store::AuditFilter::default())
        .await
        .expect("audit")
        .into_iter()
        .map(|e| e.action)
        .filter(|a| a.starts_with("memory."))
        .collect();
    assert_eq!(
        actions,
        [
            "memory.remember",
            "memory.update",
            "memory.forget",
            "memory.restore"
        ]
    );
}

#[tokio::test]
async fn every_limit_and_bad_input_is_refused_with_nothing_written() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let ok = remember(&s, &key, json!({"kind": "note", "content": "kept"})).await;
    let id = data(&ok)["memory"]["memory_id"]
        .as_str()
        .expect("id")
        .to_string();
    let before = s.counts().await;
    let tags21: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
    let past = "2001-01-01T00:00:00Z";
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (
            json!({"kind": "note", "content": "x".repeat(16 * 1024 + 1)}),
            413,
            "PAYLOAD_TOO_LARGE",
            "content",
        ),
        (
            json!({"kind": "note", "content": "x", "tags": tags21}),
            422,
            "VALIDATION_ERROR",
            "tags",
        ),
        (
            json!({"kind": "gossip", "content": "x"}),
            422,
            "VALIDATION_ERROR",
            "",
        ),
        (
            json!({"kind": "note", "content": "   "}),
            422,
            "VALIDATION_ERROR",
            "content",
        ),
        (
            json!({"kind": "note", "content": "a\u{0}b"}),
            422,
            "VALIDATION_ERROR",
            "content",
        ),
        (
            json!({"kind": "note", "content": "x", "title": "t".repeat(201)}),
            422,
            "VALIDATION_ERROR",
            "title",
        ),
        (
            json!({"kind": "note", "content": "x", "tags": ["Not A Tag"]}),
            422,
            "VALIDATION_ERROR",
            "tags",
        ),
        (
            json!({"kind": "note", "content": "x", "project": "a/b"}),
            422,
            "VALIDATION_ERROR",
            "project",
        ),
        (
            json!({"kind": "note", "content": "x", "expires_at": past}),
            422,
            "VALIDATION_ERROR",
            "expires_at",
        ),
        (
            json!({"kind": "note", "content": "x", "expires_at": "tomorrow"}),
            422,
            "VALIDATION_ERROR",
            "expires_at",
        ),
        (
            json!({"kind": "note", "content": "x", "colour": "red"}),
            422,
            "VALIDATION_ERROR",
            "",
        ),
        (
            json!({"kind": "note", "content": "x", "workspace": "no-such-team"}),
            404,
            "NOT_FOUND",
            "",
        ),
    ];
    for (body, status, code, field) in cases {
        let r = remember(&s, &key, body.clone()).await;
        let err = r.expect_error(status, code);
        if !field.is_empty() {
            assert_eq!(err["details"]["field"], field, "{body}");
        }
        assert_eq!(s.counts().await, before, "{body} wrote something");
    }
    let r = remember(
        &s,
        &key,
        json!({"kind": "note", "content": "x", "tags": (0..21).map(|i| format!("t{i}")).collect::<Vec<_>>()}),
    )
    .await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(
        (
            err["details"]["limit"].clone(),
            err["details"]["actual"].clone()
        ),
        (json!(20), json!(21))
    );

    // Recall bounds.
    for bad in [
        "?limit=0",
        "?limit=51",
        "?kind=gossip",
        "?tags=Bad%20Tag",
        "?since=yesterday",
    ] {
        s.get(&format!("{BASE}{bad}"), &key)
            .await
            .expect_error(422, "VALIDATION_ERROR");
    }
    let long = "q".repeat(513);
    s.get(&format!("{BASE}?query={long}"), &key)
        .await
        .expect_error(422, "VALIDATION_ERROR");
    // Updates: stale, nothing to change, oversized, unknown id.
    let path = format!("{BASE}/{id}");
    let patch = |body: Value| s.call(Method::PATCH, &path, &key, Some(body));
    patch(json!({"expected_version": 9, "content": "y"}))
        .await
        .expect_error(409, "CONFLICT");
    patch(json!({"expected_version": 1}))
        .await
        .expect_error(422, "VALIDATION_ERROR");
    patch(json!({"expected_version": 1, "content": "y".repeat(16 * 1024 + 1)}))
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE");
    s.call(
        Method::PATCH,
        &format!("{BASE}/mem_nope"),
        &key,
        Some(json!({"expected_version": 1, "content": "y"})),
    )
    .await
    .expect_error(404, "NOT_FOUND");
    s.post(
        &format!("{BASE}/{id}/forget"),
        &key,
        json!({"reason": "r".repeat(2001)}),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    assert_eq!(s.counts().await, before);
}

#[tokio::test]
async fn team_memories_show_who_saved_them_and_roles_apply() {
    let s = TestServer::start().await;
    let bob = s.account("bob", &["memory:read", "memory:write"]).await;
    let carol = s.account("carol", &["memory:read", "memory:write"]).await;
    let viewer = s.account("vic", &["memory:read", "memory:write"]).await;
    let outsider = s.account("eve", &["memory:read", "memory:write"]).await;
    team_with(
        &s,
        &[
            ("bob", &bob, "member"),
            ("carol", &carol, "member"),
            ("vic", &viewer, "viewer"),
        ],
    )
    .await;

    let saved = s
        .http
        .post(format!("{}{BASE}", s.url))
        .bearer_auth(&bob)
        .header("X-Memory-OS-Agent-ID", "claude-code")
        .header("X-Memory-OS-Agent-Instance-ID", "bob-laptop-1")
        .json(&json!({"kind": "decision", "content": "We pin Rust to stable.", "workspace": "ops"}))
        .send()
        .await
        .expect("send");
    let saved = Reply::from(saved).await;
    assert_eq!(saved.status.as_u16(), 201, "{}", saved.body);
    let id = data(&saved)["memory"]["memory_id"]
        .as_str()
        .expect("id")
        .to_string();

    // Another member sees it, and who saved it (account and agent instance).
    let seen = s.get(&format!("{BASE}?query=rust%20stable"), &carol).await;
    let hit = &data(&seen)["memories"][0];
    assert_eq!(hit["memory_id"], id.as_str());
    assert_eq!(hit["workspace"], "ops");
    assert_eq!(hit["saved_by"]["account"], "bob");
    assert_eq!(hit["saved_by"]["agent_id"], "claude-code");
    assert_eq!(hit["saved_by"]["agent_instance_id"], "bob-laptop-1");
    let by_instance = s
        .get(&format!("{BASE}?agent_instance_id=bob-laptop-1"), &carol)
        .await;
    assert_eq!(
        data(&by_instance)["memories"].as_array().map(Vec::len),
        Some(1)
    );

    // A viewer reads but does not write; a non-member sees nothing of it.
    let before = s.counts().await;
    s.get(&format!("{BASE}/{id}"), &viewer).await.expect_ok();
    s.post(
        BASE,
        &viewer,
        json!({"kind": "note", "content": "x", "workspace": "ops"}),
    )
    .await
    .expect_error(403, "PERMISSION_DENIED");
    s.post(&format!("{BASE}/{id}/forget"), &viewer, json!({}))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    s.get(&format!("{BASE}/{id}"), &outsider)
        .await
        .expect_error(404, "NOT_FOUND");
    s.post(&format!("{BASE}/{id}/forget"), &outsider, json!({}))
        .await
        .expect_error(404, "NOT_FOUND");
    assert_eq!(data(&s.get(BASE, &outsider).await)["memories"], json!([]));
    assert_eq!(s.counts().await, before);

    // A read-only key recalls but does not remember.
    let read_only = s.account("rita", &["memory:read"]).await;
    s.post(BASE, &read_only, json!({"kind": "note", "content": "x"}))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    s.get(BASE, &read_only).await.expect_ok();
    // Another member updates it; the memory still says who remembered it, the version who
    // changed it.
    let updated = s
        .call(
            Method::PATCH,
            &format!("{BASE}/{id}"),
            &carol,
            Some(json!({"expected_version": 1, "tags": ["toolchain"]})),
        )
        .await;
    assert_eq!(data(&updated)["saved_by"]["account"], "bob");
    let history = s.get(&format!("{BASE}/{id}/history"), &bob).await;
    let versions = &data(&history)["versions"];
    assert_eq!(
        versions[1]["saved_by"]["account_id"],
        json!(
            s.service
                .operator_for("carol")
                .await
                .expect("carol")
                .account
                .account_id
        )
    );
}

/// Issue #29: memory recall refuses the control characters Level 0 refuses in a query (NUL
/// first: PostgreSQL cannot take it, SQLite would answer), with the same error and field;
/// tab and line breaks stay text in both.
#[tokio::test]
async fn memory_recall_refuses_control_characters_in_the_query_as_level_0_does() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    remember(
        &s,
        &key,
        json!({"kind": "fact", "content": "The deploy runs at noon."}),
    )
    .await
    .expect_ok();
    for bad in [
        "deploy%00noon",
        "%00",
        "deploy%1B%5B2J",
        "deploy%08",
        "deploy%7F",
        "deploy%C2%9B",
    ] {
        for path in [BASE, "/api/v1/skills"] {
            let r = s.get(&format!("{path}?query={bad}"), &key).await;
            let err = r.expect_error(422, "VALIDATION_ERROR");
            assert_eq!(
                err["details"]["field"], "query",
                "{path}?query={bad}: {}",
                r.body
            );
            assert!(
                err["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("control character U+"),
                "{path}?query={bad}: {}",
                r.body
            );
        }
    }
    let found = s.get(&format!("{BASE}?query=deploy%09noon%0A"), &key).await;
    assert_eq!(
        found.expect_ok()["data"]["memories"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{}",
        found.body
    );
    s.get("/api/v1/skills?query=deploy%09noon%0A", &key)
        .await
        .expect_ok();
}
