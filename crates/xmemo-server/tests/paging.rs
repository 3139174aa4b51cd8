//! Every list endpoint is paged: `limit` (1–100, default 50) bounds the answer, `next_cursor`
//! leads to the next page and is null on the last, following it gives every row exactly
//! once in the listing's order, and a bad `limit` or `cursor` is VALIDATION_ERROR naming it.

mod common;

use common::{TestServer, skill};
use serde_json::{Value, json};

/// Follows `next_cursor` from `path` (which has a query string or not) `limit` rows at a
/// time; returns each page's `key` list.
async fn all_pages(
    s: &TestServer,
    key: &str,
    path: &str,
    list: &str,
    limit: u32,
) -> Vec<Vec<Value>> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{path}{sep}limit={limit}");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let body = s.get(&url, key).await.expect_ok().clone();
        let rows = body[list].as_array().expect("the list").clone();
        assert!(rows.len() <= limit as usize, "{url}: {} rows", rows.len());
        assert!(
            body.get("next_cursor").is_some(),
            "next_cursor is always present"
        );
        pages.push(rows);
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
        assert!(pages.len() < 100, "paging does not end");
    }
    pages
}

fn texts(pages: &[Vec<Value>], field: &str) -> Vec<String> {
    pages
        .concat()
        .iter()
        .map(|v| v[field].as_str().unwrap_or_default().to_string())
        .collect()
}

fn sizes(pages: &[Vec<Value>]) -> Vec<usize> {
    pages.iter().map(Vec::len).collect()
}

#[tokio::test]
async fn the_skill_list_honours_limit_and_cursor() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    let mut slugs: Vec<String> = (0..55).map(|i| format!("skill-{i:02}")).collect();
    for slug in slugs.iter().rev() {
        s.save(k, skill(slug, "x")).await.expect_ok();
    }
    slugs.sort();

    // The report: `?limit=5` was ignored.
    let body = s.get("/api/v1/skills?limit=5", k).await.expect_ok().clone();
    assert_eq!(body["skills"].as_array().unwrap().len(), 5);
    assert!(body["next_cursor"].is_string());

    // No limit: the default page of 50, and a cursor for the rest.
    let body = s.get("/api/v1/skills", k).await.expect_ok().clone();
    assert_eq!(body["skills"].as_array().unwrap().len(), 50);
    let rest = s
        .get(
            &format!(
                "/api/v1/skills?cursor={}",
                body["next_cursor"].as_str().unwrap()
            ),
            k,
        )
        .await
        .expect_ok()
        .clone();
    assert_eq!(rest["skills"].as_array().unwrap().len(), 5);
    assert_eq!(rest["next_cursor"], Value::Null);

    let pages = all_pages(&s, k, "/api/v1/skills", "skills", 20).await;
    assert_eq!(sizes(&pages), [20, 20, 15]);
    assert_eq!(texts(&pages, "slug"), slugs, "every skill once, by slug");
    let pages = all_pages(&s, k, "/api/v1/skills?workspace=personal", "skills", 100).await;
    assert_eq!(sizes(&pages), [55]);

    // Bad limits and cursors name the parameter.
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=-3", "limit"),
        ("cursor=not-a-cursor!", "cursor"),
        ("cursor=", "cursor"),
    ] {
        let r = s.get(&format!("/api/v1/skills?{query}"), k).await;
        assert_eq!(
            r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
            field,
            "{query}"
        );
    }
    // A search is not paged; its own limit bound still holds.
    let cursor = body["next_cursor"].as_str().unwrap();
    let r = s
        .get(&format!("/api/v1/skills?query=skill&cursor={cursor}"), k)
        .await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "cursor"
    );
    s.get("/api/v1/skills?query=skill&limit=51", k)
        .await
        .expect_error(422, "VALIDATION_ERROR");
    // Another listing's cursor is refused, not misread.
    s.post("/api/v1/keys", k, json!({"name": "second"}))
        .await
        .expect_ok();
    let keys = s.get("/api/v1/keys?limit=1", k).await.expect_ok().clone();
    let key_cursor = keys["next_cursor"].as_str().unwrap();
    let r = s
        .get(&format!("/api/v1/skills?cursor={key_cursor}"), k)
        .await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "cursor"
    );
}

#[tokio::test]
async fn revisions_keys_workspaces_members_and_accounts_are_paged() {
    let s = TestServer::start().await;
    let k = &s.admin_key;

    for i in 1..=5 {
        s.save(k, skill("deploy", &format!("body {i}")))
            .await
            .expect_ok();
    }
    let pages = all_pages(&s, k, "/api/v1/skills/deploy/revisions", "revisions", 2).await;
    assert_eq!(sizes(&pages), [2, 2, 1]);
    let numbers: Vec<i64> = pages
        .concat()
        .iter()
        .map(|r| r["revision_number"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5]);
    let body = s
        .get("/api/v1/skills/deploy/revisions", k)
        .await
        .expect_ok()
        .clone();
    assert_eq!(body["slug"], "deploy");
    assert_eq!(body["next_cursor"], Value::Null);

    for name in ["b", "c", "d"] {
        s.post("/api/v1/keys", k, json!({"name": name}))
            .await
            .expect_ok();
    }
    let pages = all_pages(&s, k, "/api/v1/keys", "keys", 3).await;
    assert_eq!(sizes(&pages), [3, 1]);
    assert_eq!(
        texts(&pages, "name"),
        ["bootstrap admin key", "b", "c", "d"],
        "creation order"
    );

    for handle in ["ops", "dev", "sec"] {
        s.post("/api/v1/workspaces", k, json!({"handle": handle}))
            .await
            .expect_ok();
    }
    let pages = all_pages(&s, k, "/api/v1/workspaces", "workspaces", 2).await;
    assert_eq!(sizes(&pages), [2, 2]);
    assert_eq!(texts(&pages, "handle"), ["personal", "dev", "ops", "sec"]);

    for handle in ["zoe", "bob", "mia"] {
        let key = s.account(handle, &["memory:read", "memory:write"]).await;
        s.join("ops", k, handle, &key, "member").await;
    }
    let pages = all_pages(&s, k, "/api/v1/workspaces/ops/members", "members", 3).await;
    assert_eq!(sizes(&pages), [3, 1]);
    assert_eq!(texts(&pages, "handle"), ["admin", "bob", "mia", "zoe"]);

    let pages = all_pages(&s, k, "/api/v1/accounts", "accounts", 2).await;
    assert_eq!(sizes(&pages), [2, 2]);
    assert_eq!(texts(&pages, "handle"), ["admin", "zoe", "bob", "mia"]);

    // The same rules on every list.
    for path in [
        "/api/v1/skills/deploy/revisions",
        "/api/v1/keys",
        "/api/v1/workspaces",
        "/api/v1/workspaces/ops/members",
        "/api/v1/accounts",
    ] {
        for (query, field) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("cursor=%21", "cursor"),
        ] {
            let r = s.get(&format!("{path}?{query}"), k).await;
            assert_eq!(
                r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
                field,
                "{path}?{query}"
            );
        }
        let body = s
            .get(&format!("{path}?limit=100"), k)
            .await
            .expect_ok()
            .clone();
        assert_eq!(body["next_cursor"], Value::Null, "{path}");
    }
}
