//! Acceptance: team roles, non-member invisibility, scopes, ambiguity, attribution, audit.

mod common;

use common::{TestServer, skill};
use reqwest::Method;
use serde_json::json;
use xmemo_store::{AuditFilter, verify_audit_chain};

#[tokio::test]
async fn team_roles_visibility_and_scopes() {
    let s = TestServer::start().await;
    let owner = &s.admin_key;
    let member = s.account("bob", &["memory:read", "memory:write"]).await;
    let viewer = s.account("carol", &["memory:read", "memory:write"]).await;
    let admin = s.account("dave", &["memory:read", "memory:write"]).await;
    let outsider = s.account("eve", &["memory:read", "memory:write"]).await;
    let member_read_only = {
        let account = s.service.operator_for("bob").await.unwrap().account;
        let op = s.service.operator_for("bob").await.unwrap();
        s.service
            .issue_key(
                &op,
                &account,
                xmemo_server::service::types::CreateKeyRequest {
                    name: "ro".into(),
                    scopes: Some(vec!["memory:read".into()]),
                    expires_at: None,
                    profile: None,
                },
            )
            .await
            .unwrap()
            .key
    };

    let team = s
        .post(
            "/api/v1/workspaces",
            owner,
            json!({"handle": "ops", "name": "Ops team"}),
        )
        .await;
    assert_eq!(team.status.as_u16(), 201, "{}", team.body);
    s.join("ops", owner, "bob", &member, "member").await;
    s.join("ops", owner, "carol", &viewer, "viewer").await;
    s.join("ops", owner, "dave", &admin, "admin").await;
    // Members (not owners) cannot manage members.
    s.call(
        Method::PUT,
        "/api/v1/workspaces/ops/members/eve",
        &member,
        Some(json!({"role": "viewer"})),
    )
    .await
    .expect_error(403, "PERMISSION_DENIED");

    // A member's publish intent yields `proposed`.
    let mut body = skill("incident-runbook", "Page the on-call.");
    body["workspace"] = json!("ops");
    body["intent"] = json!("publish");
    let saved = s.save(&member, body.clone()).await;
    assert_eq!(saved.status.as_u16(), 201, "{}", saved.body);
    assert_eq!(saved.body["data"]["status"], "proposed");
    assert_eq!(saved.body["data"]["workspace"], "ops");
    let rev = saved.body["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();

    // Not yet discoverable.
    let l0 = s
        .get("/api/v1/skills?query=incident&workspace=ops", &member)
        .await;
    assert_eq!(
        l0.expect_ok()["data"]["skills"].as_array().unwrap().len(),
        0
    );

    // The member cannot approve; the admin can.
    let approve = format!("/api/v1/skills/incident-runbook/revisions/{rev}/approve?workspace=ops");
    s.post(&approve, &member, json!({}))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    s.post(&approve, &viewer, json!({}))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    let ok = s.post(&approve, &admin, json!({"note": "lgtm"})).await;
    assert_eq!(ok.expect_ok()["revision"]["status"], "published");
    let l0 = s.get("/api/v1/skills?query=incident", &viewer).await;
    assert_eq!(l0.expect_ok()["data"]["skills"][0]["workspace"], "ops");

    // A viewer cannot save.
    s.save(&viewer, body.clone())
        .await
        .expect_error(403, "PERMISSION_DENIED");
    // A memory:read key cannot write, whatever the role.
    s.save(&member_read_only, body.clone())
        .await
        .expect_error(403, "PERMISSION_DENIED");
    // ...but it can read.
    s.get(
        "/api/v1/skills/incident-runbook?workspace=ops",
        &member_read_only,
    )
    .await
    .expect_ok();

    // A non-member sees nothing of the team: 404, not 403.
    s.get("/api/v1/skills/incident-runbook?workspace=ops", &outsider)
        .await
        .expect_error(404, "NOT_FOUND");
    s.get("/api/v1/skills/incident-runbook", &outsider)
        .await
        .expect_error(404, "NOT_FOUND");
    s.get("/api/v1/workspaces/ops/members", &outsider)
        .await
        .expect_error(404, "NOT_FOUND");
    let mut intrude = body.clone();
    intrude["instruction_body"] = json!("hijack");
    s.save(&outsider, intrude)
        .await
        .expect_error(404, "NOT_FOUND");
    s.post(&approve, &outsider, json!({}))
        .await
        .expect_error(404, "NOT_FOUND");
    let l0 = s.get("/api/v1/skills?query=incident", &outsider).await;
    assert_eq!(
        l0.expect_ok()["data"]["skills"].as_array().unwrap().len(),
        0
    );
    let ws = s.get("/api/v1/workspaces", &outsider).await;
    assert_eq!(ws.expect_ok()["workspaces"].as_array().unwrap().len(), 1);

    // Reject needs a note and sends a proposal back to draft with it.
    let mut second = body.clone();
    second["instruction_body"] = json!("Page the on-call. Then the lead.");
    let rev2 = s.save(&member, second).await.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let reject = format!("/api/v1/skills/incident-runbook/revisions/{rev2}/reject?workspace=ops");
    s.post(&reject, &admin, json!({}))
        .await
        .expect_error(422, "VALIDATION_ERROR");
    let rejected = s
        .post(&reject, &admin, json!({"note": "needs the lead's number"}))
        .await;
    assert_eq!(rejected.expect_ok()["revision"]["status"], "draft");
    assert_eq!(
        rejected.body["revision"]["review_note"],
        "needs the lead's number"
    );
    // Approving a draft is an illegal transition.
    s.post(
        &format!("/api/v1/skills/incident-runbook/revisions/{rev2}/approve?workspace=ops"),
        &admin,
        json!({}),
    )
    .await
    .expect_error(409, "CONFLICT");

    // Removing a member takes the team away from them.
    s.call(
        Method::DELETE,
        "/api/v1/workspaces/ops/members/bob",
        owner,
        None,
    )
    .await
    .expect_ok();
    s.get("/api/v1/skills/incident-runbook?workspace=ops", &member)
        .await
        .expect_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn ambiguous_slug_lists_candidates() {
    let s = TestServer::start().await;
    let k = &s.admin_key;
    s.post("/api/v1/workspaces", k, json!({"handle": "platform"}))
        .await
        .expect_ok();
    s.save(k, skill("deploy", "personal one")).await.expect_ok();
    let mut team = skill("deploy", "team one");
    team["workspace"] = json!("platform");
    s.save(k, team).await.expect_ok();
    let err = s.get("/api/v1/skills/deploy", k).await;
    let e = err.expect_error(409, "AMBIGUOUS_SLUG");
    let candidates = e["details"]["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 2);
    let mut handles: Vec<&str> = candidates
        .iter()
        .map(|c| c["workspace"].as_str().unwrap())
        .collect();
    handles.sort();
    assert_eq!(handles, ["personal", "platform"]);
    let personal = s.get("/api/v1/skills/deploy?workspace=personal", k).await;
    assert_eq!(
        personal.expect_ok()["data"]["instruction_body"],
        "personal one"
    );
    let team = s.get("/api/v1/skills/deploy?workspace=platform", k).await;
    assert_eq!(team.expect_ok()["data"]["instruction_body"], "team one");
}

#[tokio::test]
async fn writes_record_attribution_and_a_verifiable_audit_chain() {
    let s = TestServer::start().await;
    let resp = s
        .http
        .post(format!("{}/api/v1/skills", s.url))
        .header("X-API-Key", &s.admin_key)
        .header("X-Memory-OS-Agent-ID", "claude-code")
        .header("X-Memory-OS-Agent-Instance-ID", "laptop-42")
        .json(&skill("attributed", "body"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let revs = s
        .get("/api/v1/skills/attributed/revisions", &s.admin_key)
        .await;
    let a = &revs.expect_ok()["revisions"][0]["attribution"];
    assert_eq!(a["agent_id"], "claude-code");
    assert_eq!(a["agent_instance_id"], "laptop-42");
    assert!(a["credential_id"].as_str().unwrap().starts_with("key_"));
    assert!(a["account_id"].as_str().unwrap().starts_with("acct_"));

    let entries = s.store.list_audit(&AuditFilter::default()).await.unwrap();
    let save = entries
        .iter()
        .find(|e| e.action == "skill.save")
        .expect("save audited");
    assert_eq!(save.actor.agent_instance_id.as_deref(), Some("laptop-42"));
    assert!(verify_audit_chain(&entries).is_ok());
    // Tampering with one entry is detected.
    let mut tampered = entries.clone();
    tampered[0].details = json!({"forged": true});
    assert_eq!(verify_audit_chain(&tampered), Err(tampered[0].seq));

    // Keys: shown once, listed without the secret, revocable.
    let created = s
        .post(
            "/api/v1/keys",
            &s.admin_key,
            json!({"name": "ci", "scopes": ["memory:read"]}),
        )
        .await;
    assert_eq!(created.status.as_u16(), 201);
    let secret = created.body["key"]["key"].as_str().unwrap().to_string();
    let key_id = created.body["key"]["key_id"].as_str().unwrap().to_string();
    let listed = s.get("/api/v1/keys", &s.admin_key).await;
    let text = listed.expect_ok().to_string();
    assert!(!text.contains(&secret));
    assert!(!text.contains(&xmemo_server::auth::hash_key(&secret)));
    s.get("/api/v1/me", &secret).await.expect_ok();
    s.call(
        Method::DELETE,
        &format!("/api/v1/keys/{key_id}"),
        &s.admin_key,
        None,
    )
    .await
    .expect_ok();
    s.get("/api/v1/me", &secret)
        .await
        .expect_error(401, "AUTH_REQUIRED");
    // A key cannot be made already expired…
    s.post(
        "/api/v1/keys",
        &s.admin_key,
        json!({"name": "old", "expires_at": "2020-01-01T00:00:00Z"}),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    // …and one whose expiry has passed (written straight to the store, as time would) stops
    // working.
    let admin = s
        .store
        .find_account_by_handle("admin")
        .await
        .unwrap()
        .unwrap();
    let generated = xmemo_server::auth::generate_key();
    s.store
        .create_api_key(
            xmemo_store::NewApiKey {
                account_id: admin.account_id,
                name: "old".into(),
                prefix: generated.prefix,
                key_hash: generated.hash,
                scopes: vec!["memory:read".into()],
                profile: "ordinary-full".into(),
                expires_at: Some("2020-01-01T00:00:00.000Z".into()),
            },
            xmemo_store::AuditDraft::new("key.create", &xmemo_store::Attribution::default()),
        )
        .await
        .unwrap();
    s.get("/api/v1/me", &generated.secret)
        .await
        .expect_error(401, "AUTH_REQUIRED");
    // A read-only key cannot mint a write key.
    let ro = s
        .post(
            "/api/v1/keys",
            &s.admin_key,
            json!({"name": "ro", "scopes": ["memory:read"]}),
        )
        .await;
    let ro = ro.body["key"]["key"].as_str().unwrap().to_string();
    s.post(
        "/api/v1/keys",
        &ro,
        json!({"name": "x", "scopes": ["memory:write"]}),
    )
    .await
    .expect_error(403, "PERMISSION_DENIED");
}
