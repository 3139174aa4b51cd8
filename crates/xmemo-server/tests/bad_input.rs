//! Acceptance: malformed JSON, wrong types, unknown fields, oversized bodies, bad slugs and
//! paths, bad credentials: every one gets the SPEC error shape and code, never a 500.

mod common;

use common::{TestServer, skill};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn malformed_requests_get_spec_errors() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    let url = format!("{}/api/v1/skills", s.url);
    let before = s.counts().await;

    let raw = |body: &'static str, content_type: &'static str| {
        s.http
            .post(&url)
            .bearer_auth(k)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    for (body, ct) in [
        ("{not json", "application/json"),
        ("", "application/json"),
        ("[1,2,3]", "application/json"),
        (
            "{\"slug\": 5, \"instruction_body\": \"x\"}",
            "application/json",
        ),
        (
            "{\"slug\": \"a\", \"instruction_body\": \"x\", \"components\": {}}",
            "application/json",
        ),
        (
            "{\"slug\": \"a\", \"instruction_body\": \"x\", \"intent\": \"yolo\"}",
            "application/json",
        ),
        (
            "{\"slug\": \"a\", \"instruction_body\": \"x\", \"surprise\": true}",
            "application/json",
        ),
        (
            "{\"slug\": \"a\", \"instruction_body\": \"x\"}",
            "text/plain",
        ),
        (
            "{\"slug\": \"a\", \"instruction_body\": \"x\", \"components\": [{\"logical_path\": \"a\", \"type\": \"binary\", \"content\": \"\"}]}",
            "application/json",
        ),
    ] {
        let r = common::Reply::from(raw(body, ct).await.unwrap()).await;
        r.expect_error(422, "VALIDATION_ERROR");
    }

    // Over the body limit: refused before parsing.
    let huge = format!(
        "{{\"slug\":\"a\",\"instruction_body\":\"{}\"}}",
        "a".repeat(xmemo_server::http::limits::BODY_LIMIT_BYTES + 10)
    );
    let r = common::Reply::from(
        s.http
            .post(&url)
            .bearer_auth(k)
            .header("content-type", "application/json")
            .body(huge)
            .send()
            .await
            .unwrap(),
    )
    .await;
    r.expect_error(413, "PAYLOAD_TOO_LARGE");

    // Field limits name the field.
    let mut body = skill("big", &"a".repeat(65_537));
    let r = s.save(k, body.clone()).await;
    assert_eq!(
        r.expect_error(413, "PAYLOAD_TOO_LARGE")["details"]["field"],
        "instruction_body"
    );
    body["instruction_body"] = json!("a".repeat(65_536));
    assert_eq!(s.save(k, body).await.status.as_u16(), 201);
    let before = {
        let _ = before;
        s.counts().await
    };

    for slug in [
        "",
        "Upper",
        "-lead",
        "trail-",
        "dou--ble",
        "spa ce",
        "under_score",
        &"a".repeat(65),
    ] {
        let r = s.save(k, skill(slug, "x")).await;
        assert_eq!(
            r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
            "slug",
            "{slug:?}"
        );
    }
    for path in ["../x", "/abs", "a//b", "a/./b", "a\\b", "SKILL.md", ""] {
        let mut b = skill("paths", "x");
        b["components"] = json!([{"logical_path": path, "type": "document", "content": "x"}]);
        let r = s.save(k, b).await;
        assert_eq!(
            r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
            "components[0].logical_path",
            "{path:?}"
        );
    }
    let mut dup = skill("paths", "x");
    dup["components"] = json!([
        {"logical_path": "Read.md", "type": "document", "content": "x"},
        {"logical_path": "read.md", "type": "document", "content": "y"}
    ]);
    s.save(k, dup).await.expect_error(422, "VALIDATION_ERROR");
    let mut bad64 = skill("paths", "x");
    bad64["components"] = json!([{"logical_path": "a.bin", "type": "artifact", "content": "!!!", "encoding": "base64"}]);
    s.save(k, bad64).await.expect_error(422, "VALIDATION_ERROR");
    // First save needs name and description.
    let r = s
        .save(k, json!({"slug": "nameless", "instruction_body": "x"}))
        .await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "name"
    );
    let r = s
        .save(
            k,
            json!({"slug": "nameless", "name": "N", "instruction_body": "x"}),
        )
        .await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "description"
    );
    let r = s
        .save(
            k,
            json!({"slug": "x", "name": "N", "description": "D", "instruction_body": "a\u{0}b"}),
        )
        .await;
    r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(before, s.counts().await, "no failed save wrote anything");

    // Recall argument errors.
    for args in [
        json!({}),
        json!({"query": "x", "slug": "y"}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 51}),
        json!({"query": "x", "limit": "ten"}),
        json!({"query": ""}),
        json!({"resource": "a.txt"}),
        json!({"slug": "Bad Slug"}),
        json!({"query": "x", "extra": 1}),
    ] {
        s.post("/api/v1/recall", k, args.clone())
            .await
            .expect_error(422, "VALIDATION_ERROR");
    }
    s.get("/api/v1/skills?query=x&limit=abc", k)
        .await
        .expect_error(422, "VALIDATION_ERROR");
    s.get("/api/v1/skills?bogus=1", k)
        .await
        .expect_error(422, "VALIDATION_ERROR");
    s.get("/api/v1/skills/nope", k)
        .await
        .expect_error(404, "NOT_FOUND");
    s.get("/api/v1/skills?workspace=nowhere", k)
        .await
        .expect_error(404, "NOT_FOUND");
    s.post("/api/v1/skills/big/revisions/rev_x/launch", k, json!({}))
        .await
        .expect_error(404, "NOT_FOUND");
    s.post("/api/v1/skills/big/revisions/rev_x/publish", k, json!({}))
        .await
        .expect_error(404, "NOT_FOUND");
    s.post(
        "/api/v1/skills/big/revisions/rev_x/publish",
        k,
        json!({"nope": 1}),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    s.get("/api/v1/no/such/route", k)
        .await
        .expect_error(404, "NOT_FOUND");
    s.call(Method::PATCH, "/api/v1/skills", k, None)
        .await
        .expect_error(404, "NOT_FOUND");
    s.post("/api/v1/workspaces", k, json!({"handle": "personal"}))
        .await
        .expect_error(422, "VALIDATION_ERROR");
    s.post("/api/v1/workspaces", k, json!({"handle": "team-a"}))
        .await
        .expect_ok();
    s.post("/api/v1/workspaces", k, json!({"handle": "team-a"}))
        .await
        .expect_error(409, "CONFLICT");
    s.post(
        "/api/v1/keys",
        k,
        json!({"name": "x", "scopes": ["memory:admin"]}),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    s.post(
        "/api/v1/keys",
        k,
        json!({"name": "x", "expires_at": "tomorrow"}),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    s.post("/api/v1/keys", k, json!({"name": "bad\u{7}name"}))
        .await
        .expect_error(422, "VALIDATION_ERROR");

    // Review notes and archive reasons: at most 2000 characters, checked before any write.
    let before = s.counts().await;
    let long = "n".repeat(2001);
    let r = s
        .post("/api/v1/skills/big/archive", k, json!({"reason": long}))
        .await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "reason"
    );
    let revs = s.get("/api/v1/skills/big/revisions", k).await;
    let rev = revs.expect_ok()["revisions"][0]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s
        .post(
            &format!("/api/v1/skills/big/revisions/{rev}/publish"),
            k,
            json!({"note": long}),
        )
        .await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "note"
    );
    assert_eq!(before, s.counts().await);
}

#[tokio::test]
async fn credentials_are_checked_and_never_echoed() {
    let s = TestServer::start().await;
    let url = format!("{}/api/v1/skills", s.url);
    // No credential.
    let r = common::Reply::from(s.http.get(&url).send().await.unwrap()).await;
    r.expect_error(401, "AUTH_REQUIRED");
    assert!(r.headers.get("www-authenticate").is_some());
    // Wrong credentials, in each accepted header, and a malformed Authorization header.
    for req in [
        s.http.get(&url).bearer_auth("xmk_wrong"),
        s.http.get(&url).header("X-API-Key", "xmk_wrong"),
        s.http
            .get(&url)
            .header("Authorization", "Basic Zm9vOmJhcg=="),
        s.http.get(&url).header("Authorization", "Bearer"),
        s.http.get(&url).bearer_auth("x".repeat(10_000)),
    ] {
        let r = common::Reply::from(req.send().await.unwrap()).await;
        let e = r.expect_error(401, "AUTH_REQUIRED");
        assert!(!e.to_string().contains("xmk_wrong"));
    }
    // Attribution headers are bounded.
    let r = common::Reply::from(
        s.http
            .get(&url)
            .bearer_auth(&s.admin_key)
            .header("X-Memory-OS-Agent-Instance-ID", "i".repeat(129))
            .send()
            .await
            .unwrap(),
    )
    .await;
    r.expect_error(422, "VALIDATION_ERROR");
    // Health endpoints and the OpenAPI document need no credentials.
    for path in ["/healthz", "/readyz", "/api/v1/openapi.json"] {
        let r = s.http.get(format!("{}{path}", s.url)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
    }
}

/// Control characters (NUL first: PostgreSQL cannot store it, so the backends would
/// disagree) are refused in every text field with the field named, invisible and bidi marks
/// in logical paths, and keys that would be dead on arrival — all before anything is written.
#[tokio::test]
async fn control_characters_bidi_paths_and_dead_keys_are_refused_by_field() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    s.save(k, skill("base", "x")).await.expect_ok();
    let before = s.counts().await;

    let field_of = |r: &common::Reply| {
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let with = |patch: serde_json::Value| {
        let mut b = skill("ctl", "x");
        for (key, value) in patch.as_object().unwrap() {
            b[key] = value.clone();
        }
        b
    };
    let refused = [
        (json!({"metadata": {"k": "a\u{0}b"}}), "metadata.k"),
        (json!({"metadata": {"a\u{0}b": "v"}}), "metadata"),
        (
            json!({"metadata": {"metadata": {"tags": ["ok", "\u{1b}[2J"]}}}),
            "metadata.metadata.tags[1]",
        ),
        (json!({"name": "two\nlines"}), "name"),
        (json!({"description": "bell\u{7}"}), "description"),
        (
            json!({"instruction_body": "esc \u{1b}[31m"}),
            "instruction_body",
        ),
        (
            json!({"components": [{"logical_path": "scripts/gpj\u{202E}exe.sh", "type": "script", "content": "x"}]}),
            "components[0].logical_path",
        ),
        (
            json!({"components": [{"logical_path": "a\u{200B}b.md", "type": "document", "content": "x"}]}),
            "components[0].logical_path",
        ),
        (
            json!({"components": [{"logical_path": "\u{FEFF}x.md", "type": "document", "content": "x"}]}),
            "components[0].logical_path",
        ),
    ];
    for (patch, field) in refused {
        let r = s.save(k, with(patch.clone())).await;
        assert_eq!(field_of(&r), field, "{patch}");
    }
    // An upload takes the same path: a YAML "\0" escape in the frontmatter.
    let md = "---\nname: ctl\ndescription: d\nlicense: \"MIT\\0\"\n---\nbody\n";
    let r = common::Reply::from(
        s.http
            .post(format!("{}/api/v1/imports", s.url))
            .bearer_auth(k)
            .header("content-type", "text/markdown")
            .body(md)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(field_of(&r), "metadata.license", "{}", r.body);

    let rev =
        s.get("/api/v1/skills/base/revisions", k).await.expect_ok()["revisions"][0]["revision_id"]
            .as_str()
            .unwrap()
            .to_string();
    let r = s
        .post(
            &format!("/api/v1/skills/base/revisions/{rev}/publish"),
            k,
            json!({"note": "fine\u{0}"}),
        )
        .await;
    assert_eq!(field_of(&r), "note");
    let r = s
        .post(
            "/api/v1/skills/base/archive",
            k,
            json!({"reason": "\u{1b}c"}),
        )
        .await;
    assert_eq!(field_of(&r), "reason");
    let r = s
        .post(
            "/api/v1/workspaces",
            k,
            json!({"handle": "ops", "name": "o\u{0}ps"}),
        )
        .await;
    assert_eq!(field_of(&r), "name");
    let r = s
        .post("/api/v1/keys", k, json!({"name": "lap\u{0}top"}))
        .await;
    assert_eq!(field_of(&r), "name");
    // A key that expired before it was made could never authenticate.
    for past in ["2000-01-01T00:00:00Z", "2020-06-01T12:00:00+02:00"] {
        let r = s
            .post(
                "/api/v1/keys",
                k,
                json!({"name": "old", "expires_at": past}),
            )
            .await;
        assert_eq!(field_of(&r), "expires_at", "{past}");
    }
    // Not stored, but PostgreSQL would refuse it where SQLite finds nothing.
    let r = s
        .post("/api/v1/recall", k, json!({"query": "de\u{0}ploy"}))
        .await;
    assert_eq!(field_of(&r), "query");
    assert_eq!(
        before,
        s.counts().await,
        "no refused request wrote anything"
    );

    // What text may hold is still accepted: line breaks and tabs in multi-line fields,
    // non-ASCII paths, a key that expires in the future.
    let ok = with(json!({
        "description": "Folded\n",
        "instruction_body": "# Steps\r\n\t1. run\n",
        "metadata": {"notes": "one\ntwo\tthree"},
        "components": [{"logical_path": "références/é.md", "type": "reference", "content": "x"}],
    }));
    assert_eq!(s.save(k, ok).await.status.as_u16(), 201);
    let r = s
        .post(
            "/api/v1/keys",
            k,
            json!({"name": "later", "expires_at": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
}
