//! The OAuth 2.1 authorization server and the `/mcp` resource server (SPEC §7), over HTTP
//! against a real server: metadata, registration both ways, the consent flow, token
//! exchange and rotation, and every refusal with its OAuth error and nothing issued.

mod common;

use common::browser::{Browser, Page};
use common::{ServeOptions, TestServer};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use xmemo_server::service::clock::ManualClock;
use xmemo_server::service::oauth::{Lifetimes, OAuthConfig};
use xmemo_testkit::oauth::{
    Answer, Request, approve, form, pkce, query_of, register, register_public,
};

const CB: &str = "http://127.0.0.1:5555/callback";

fn admin_password(s: &TestServer) -> String {
    std::fs::read_to_string(s.data_dir.join("admin.password"))
        .expect("admin.password")
        .trim()
        .to_string()
}

async fn signed_in(s: &TestServer) -> Browser {
    let mut b = Browser::new(&s.url);
    let page = b.sign_in("admin", &admin_password(s), "/login").await;
    assert_eq!(page.status, 303, "{}", page.body);
    b
}

fn resource(s: &TestServer) -> String {
    format!("{}/mcp", s.url)
}

/// The authorization request of a public client with a fresh PKCE pair.
struct Flow {
    client_id: String,
    verifier: String,
    challenge: String,
}

impl Flow {
    async fn public(s: &TestServer) -> Self {
        let (verifier, challenge) = pkce();
        Self {
            client_id: register_public(&s.url, "Test Host").await,
            verifier,
            challenge,
        }
    }

    fn request<'a>(&'a self, resource: &'a str) -> Request<'a> {
        Request {
            client_id: &self.client_id,
            redirect_uri: CB,
            challenge: &self.challenge,
            method: "S256",
            scope: "memory:read memory:write",
            state: "the-state",
            resource: Some(resource),
        }
    }

    /// Sign-in, consent, and the code that came back.
    async fn code(&self, s: &TestServer, b: &mut Browser) -> String {
        let r = resource(s);
        let back = approve(b, &self.request(&r))
            .await
            .unwrap_or_else(|p| panic!("consent failed: {} {}", p.status, p.body));
        let q = query_of(&back);
        assert_eq!(q.get("state").map(String::as_str), Some("the-state"));
        assert_eq!(q.get("iss").map(String::as_str), Some(s.url.as_str()));
        q.get("code").cloned().expect("code")
    }

    async fn exchange(&self, s: &TestServer, code: &str, verifier: Option<&str>) -> Answer {
        let r = resource(s);
        let mut fields = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", CB),
            ("client_id", self.client_id.as_str()),
            ("resource", r.as_str()),
        ];
        if let Some(v) = verifier {
            fields.push(("code_verifier", v));
        }
        form(&s.url, "/oauth/token", &fields, None).await
    }

    async fn tokens(&self, s: &TestServer, b: &mut Browser) -> Value {
        let code = self.code(s, b).await;
        let a = self.exchange(s, &code, Some(&self.verifier)).await;
        assert_eq!(a.status, 200, "{}", a.body);
        a.body
    }

    async fn refresh(&self, s: &TestServer, refresh_token: &str) -> Answer {
        form(
            &s.url,
            "/oauth/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", &self.client_id),
            ],
            None,
        )
        .await
    }
}

fn oauth_error(a: &Answer, status: u16, error: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert_eq!(a.body["error"], error, "{}", a.body);
    assert!(
        a.body["error_description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
    assert_eq!(a.headers["cache-control"], "no-store");
}

async fn mcp_status(s: &TestServer, token: &str) -> u16 {
    s.mcp(Some(token), "tools/list", json!({}))
        .await
        .status
        .as_u16()
}

async fn issued(s: &TestServer) -> u64 {
    s.counts().await["oauth_tokens"]
}

/// The redirect back to the client of a refused authorization request.
fn refused_redirect(page: &Page) -> std::collections::BTreeMap<String, String> {
    assert_eq!(page.status, 302, "{}", page.body);
    let location = page.location();
    assert!(location.starts_with(CB), "{location}");
    query_of(&location)
}

#[tokio::test]
async fn metadata_documents_name_this_server_and_its_endpoints() {
    let s = TestServer::start().await;
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let doc = s.get(path, "").await.body;
        assert_eq!(doc["issuer"], s.url, "{path}");
        assert_eq!(
            doc["authorization_endpoint"],
            format!("{}/oauth/authorize", s.url)
        );
        assert_eq!(doc["token_endpoint"], format!("{}/oauth/token", s.url));
        assert_eq!(
            doc["registration_endpoint"],
            format!("{}/oauth/register", s.url)
        );
        assert_eq!(
            doc["revocation_endpoint"],
            format!("{}/oauth/revoke", s.url)
        );
        assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(doc["client_id_metadata_document_supported"], true);
        assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
        assert_eq!(
            doc["scopes_supported"],
            json!(["memory:read", "memory:write"])
        );
        assert_eq!(doc["response_types_supported"], json!(["code"]));
    }
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let prm = s.get(path, "").await.body;
        assert_eq!(prm["resource"], resource(&s));
        assert_eq!(prm["authorization_servers"], json!([s.url]));
    }
    let unauthenticated = s.mcp(None, "tools/list", json!({})).await;
    assert_eq!(unauthenticated.status, 401);
    let challenge = unauthenticated.headers["www-authenticate"]
        .to_str()
        .unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            s.url
        )) && challenge.contains("scope=\"memory:read memory:write\""),
        "{challenge}"
    );
}

#[tokio::test]
async fn a_registered_public_client_gets_tokens_for_mcp_and_keeps_them_fresh() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;

    // Not signed in: the consent waits behind the sign-in page and comes back.
    let mut anonymous = Browser::new(&s.url);
    let r = resource(&s);
    let to_login = anonymous
        .get(&format!("/oauth/authorize?{}", flow.request(&r).query()))
        .await;
    assert_eq!(to_login.status, 303);
    assert!(
        to_login
            .location()
            .starts_with("/login?next=%2Foauth%2Fauthorize%3F"),
        "{}",
        to_login.location()
    );

    let consent = b
        .get(&format!("/oauth/authorize?{}", flow.request(&r).query()))
        .await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(consent.body.contains("Test Host"), "the client's name");
    assert!(
        consent.body.contains("127.0.0.1:5555"),
        "where the code goes"
    );
    assert!(consent.body.contains("memory:read") && consent.body.contains("memory:write"));
    let csp = consent.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("form-action 'self' http://127.0.0.1:5555;"),
        "{csp}"
    );

    let tokens = flow.tokens(&s, &mut b).await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    assert_eq!(tokens["scope"], "memory:read memory:write");
    assert!(access.starts_with("xmat_") && refresh.starts_with("xmrt_"));
    // Stored as SHA-256 only.
    assert!(s.store.find_oauth_token(&access).await.unwrap().is_none());
    let row = s
        .store
        .find_oauth_token(&xmemo_server::auth::hash_key(&access))
        .await
        .unwrap()
        .expect("stored by hash");
    assert_eq!(row.grant.resource, resource(&s));

    // The token works at /mcp, attributed to its grant.
    assert_eq!(mcp_status(&s, &access).await, 200);
    let saved = s
        .mcp(
            Some(&access),
            "tools/call",
            json!({"name": "remember", "arguments": {"content": "saved through OAuth", "kind": "note"}}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let memory_id = saved.body["result"]["structuredContent"]["data"]["memory"]["memory_id"]
        .as_str()
        .or_else(|| saved.body["result"]["structuredContent"]["data"]["memory_id"].as_str())
        .unwrap_or_else(|| panic!("{}", saved.body))
        .to_string();
    let memory = s.store.get_memory(&memory_id).await.unwrap().unwrap();
    assert_eq!(
        memory.attribution.credential_id.as_deref(),
        Some(row.grant.grant_id.as_str())
    );
    assert_eq!(
        memory.attribution.client_profile.as_deref(),
        Some("ordinary-full")
    );
    // The client named itself nowhere: the agent is the name it registered with.
    assert_eq!(memory.attribution.agent_id.as_deref(), Some("Test Host"));
    // A client that names itself in `_meta` (MCP 2026-07-28) is named so.
    let named = s
        .mcp(
            Some(&access),
            "tools/call",
            json!({"name": "remember",
                   "arguments": {"content": "saved by a client that names itself", "kind": "note"},
                   "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "chatgpt-connector", "version": "1"}}}),
        )
        .await;
    assert_eq!(
        named.body["result"]["structuredContent"]["data"]["memory"]["saved_by"]["agent_id"],
        "chatgpt-connector",
        "{}",
        named.body
    );
    // Not at the REST API: that is another resource.
    s.get("/api/v1/me", &access)
        .await
        .expect_error(401, "AUTH_REQUIRED");

    // Refresh: new tokens; the old refresh token is spent.
    let fresh = flow.refresh(&s, &refresh).await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    assert_eq!(fresh.headers["cache-control"], "no-store");
    let access2 = fresh.body["access_token"].as_str().unwrap().to_string();
    let refresh2 = fresh.body["refresh_token"].as_str().unwrap().to_string();
    assert_ne!(refresh, refresh2);
    assert_eq!(mcp_status(&s, &access2).await, 200);

    // The person lists and revokes the grant; every token of it stops at once.
    let grants = s.get("/api/v1/oauth/grants", &s.admin_key).await;
    let list = grants.expect_ok()["grants"].as_array().unwrap().clone();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["client_name"], "Test Host");
    assert_eq!(list[0]["grant_id"], row.grant.grant_id);
    let id = list[0]["grant_id"].as_str().unwrap();
    let other = s.account("bob", &["memory:read", "memory:write"]).await;
    s.call(
        reqwest::Method::DELETE,
        &format!("/api/v1/oauth/grants/{id}"),
        &other,
        None,
    )
    .await
    .expect_error(404, "NOT_FOUND");
    let revoked = s
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v1/oauth/grants/{id}"),
            &s.admin_key,
            None,
        )
        .await;
    assert_eq!(revoked.status, 204);
    assert_eq!(mcp_status(&s, &access2).await, 401);
    assert_eq!(mcp_status(&s, &access).await, 401);
    oauth_error(&flow.refresh(&s, &refresh2).await, 400, "invalid_grant");
    assert!(
        s.get("/api/v1/oauth/grants", &s.admin_key).await.body["grants"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn plain_or_missing_pkce_is_refused_and_nothing_is_issued() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let r = resource(&s);
    for (method, challenge) in [
        ("plain", flow.challenge.as_str()),
        ("S256", ""),
        ("", flow.challenge.as_str()),
    ] {
        let req = Request {
            method,
            challenge,
            ..flow.request(&r)
        };
        let page = b.get(&format!("/oauth/authorize?{}", req.query())).await;
        let q = refused_redirect(&page);
        assert_eq!(q["error"], "invalid_request", "{method} {challenge}: {q:?}");
        assert_eq!(q["state"], "the-state");
        assert_eq!(q["iss"], s.url);
        assert!(!q.contains_key("code"));
    }
    let counts = s.counts().await;
    assert_eq!(counts["oauth_grants"], 0);
    assert_eq!(counts["oauth_codes"], 0);
}

#[tokio::test]
async fn a_missing_or_wrong_verifier_gets_no_token() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let code = flow.code(&s, &mut b).await;
    oauth_error(
        &flow.exchange(&s, &code, None).await,
        400,
        "invalid_request",
    );
    let (other_verifier, _) = pkce();
    oauth_error(
        &flow.exchange(&s, &code, Some(&other_verifier)).await,
        400,
        "invalid_grant",
    );
    assert_eq!(issued(&s).await, 0);
    // The code was not burnt by the failed attempts: the right verifier still works.
    let ok = flow.exchange(&s, &code, Some(&flow.verifier)).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_reused_code_revokes_the_tokens_it_issued() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let code = flow.code(&s, &mut b).await;
    let first = flow.exchange(&s, &code, Some(&flow.verifier)).await;
    assert_eq!(first.status, 200);
    let access = first.body["access_token"].as_str().unwrap().to_string();
    let refresh = first.body["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(mcp_status(&s, &access).await, 200);
    let before = issued(&s).await;
    oauth_error(
        &flow.exchange(&s, &code, Some(&flow.verifier)).await,
        400,
        "invalid_grant",
    );
    assert_eq!(issued(&s).await, before, "nothing new issued");
    assert_eq!(
        mcp_status(&s, &access).await,
        401,
        "the code's access token is revoked"
    );
    oauth_error(&flow.refresh(&s, &refresh).await, 400, "invalid_grant");
    let grant = s
        .store
        .find_oauth_token(&xmemo_server::auth::hash_key(&access))
        .await
        .unwrap()
        .unwrap()
        .grant;
    assert_eq!(grant.revoked_reason.as_deref(), Some("code_reused"));
}

#[tokio::test]
async fn redirect_uris_must_match_what_was_registered() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let r = resource(&s);
    for wrong in [
        "http://127.0.0.1:5555/other",
        "https://evil.example/callback",
        "http://localhost:5555/callback",
    ] {
        let req = Request {
            redirect_uri: wrong,
            ..flow.request(&r)
        };
        let page = b.get(&format!("/oauth/authorize?{}", req.query())).await;
        assert_eq!(page.status, 400, "{wrong}: {}", page.body);
        assert!(
            page.location().is_empty(),
            "never redirected to an unregistered URI"
        );
        assert!(page.body.contains("is not registered"), "{}", page.body);
    }
    // Any loopback port is the registered loopback URI (RFC 8252).
    let req = Request {
        redirect_uri: "http://127.0.0.1:61234/callback",
        ..flow.request(&r)
    };
    assert_eq!(
        b.get(&format!("/oauth/authorize?{}", req.query()))
            .await
            .status,
        200
    );
    // At the token endpoint the redirect_uri must be the authorization request's.
    let code = flow.code(&s, &mut b).await;
    let a = form(
        &s.url,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:5556/callback"),
            ("client_id", &flow.client_id),
            ("code_verifier", &flow.verifier),
        ],
        None,
    )
    .await;
    oauth_error(&a, 400, "invalid_grant");
    assert_eq!(issued(&s).await, 0);
}

#[tokio::test]
async fn unknown_clients_are_refused_everywhere() {
    let s = TestServer::start().await;
    let mut b = signed_in(&s).await;
    let (_, challenge) = pkce();
    let r = resource(&s);
    let req = Request {
        client_id: "client_nobody",
        redirect_uri: CB,
        challenge: &challenge,
        method: "S256",
        scope: "memory:read",
        state: "s",
        resource: Some(&r),
    };
    let page = b.get(&format!("/oauth/authorize?{}", req.query())).await;
    assert_eq!(page.status, 400);
    assert!(page.location().is_empty());
    assert!(page.body.contains("unknown client"), "{}", page.body);
    let a = form(
        &s.url,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", "xmac_x"),
            ("client_id", "client_nobody"),
        ],
        None,
    )
    .await;
    oauth_error(&a, 401, "invalid_client");
}

#[tokio::test]
async fn tokens_are_for_this_servers_mcp_only() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    // Asking for another resource.
    let page = b
        .get(&format!(
            "/oauth/authorize?{}",
            flow.request("https://other.example/mcp").query()
        ))
        .await;
    assert_eq!(refused_redirect(&page)["error"], "invalid_target");
    // Exchanging for another resource.
    let code = flow.code(&s, &mut b).await;
    let a = form(
        &s.url,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CB),
            ("client_id", &flow.client_id),
            ("code_verifier", &flow.verifier),
            ("resource", "https://other.example/mcp"),
        ],
        None,
    )
    .await;
    oauth_error(&a, 400, "invalid_target");
    assert_eq!(issued(&s).await, 0);

    // A token issued by this server for its /mcp is refused by a server whose /mcp is
    // another URL, even on the same database.
    let tokens = flow.tokens(&s, &mut b).await;
    let access = tokens["access_token"].as_str().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_url = format!("http://{}", listener.local_addr().unwrap());
    let app = xmemo_server::app::build_app(
        s.service.clone(),
        xmemo_server::state::ServerInfo {
            public_url: other_url.clone(),
            version: "test",
            ..Default::default()
        },
    );
    tokio::spawn(xmemo_server::app::serve(
        listener,
        app,
        std::future::pending(),
    ));
    let there = reqwest::Client::new()
        .post(format!("{other_url}/mcp"))
        .bearer_auth(access)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(there.status(), 401, "audience checked");
    assert_eq!(
        mcp_status(&s, access).await,
        200,
        "and accepted where it belongs"
    );
}

#[tokio::test]
async fn a_reused_refresh_token_revokes_its_whole_family() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let tokens = flow.tokens(&s, &mut b).await;
    let r1 = tokens["refresh_token"].as_str().unwrap().to_string();
    let a1 = tokens["access_token"].as_str().unwrap().to_string();
    let second = flow.refresh(&s, &r1).await;
    assert_eq!(second.status, 200);
    let r2 = second.body["refresh_token"].as_str().unwrap().to_string();
    let a2 = second.body["access_token"].as_str().unwrap().to_string();
    let before = issued(&s).await;
    oauth_error(&flow.refresh(&s, &r1).await, 400, "invalid_grant");
    assert_eq!(
        issued(&s).await,
        before,
        "nothing issued for a reused token"
    );
    oauth_error(&flow.refresh(&s, &r2).await, 400, "invalid_grant");
    assert_eq!(mcp_status(&s, &a1).await, 401);
    assert_eq!(mcp_status(&s, &a2).await, 401);
    // A refresh token of another client is refused without harming its owner.
    let mut other = Flow::public(&s).await;
    other.client_id = register_public(&s.url, "Other").await;
    let theirs = flow.tokens(&s, &mut b).await;
    let r3 = theirs["refresh_token"].as_str().unwrap();
    oauth_error(&other.refresh(&s, r3).await, 400, "invalid_grant");
    assert_eq!(flow.refresh(&s, r3).await.status, 200);
}

#[tokio::test]
async fn expired_codes_and_tokens_are_refused() {
    let clock = Arc::new(ManualClock::default());
    let shared = clock.clone();
    let s = TestServer::start_with(
        move |svc| svc.with_clock(shared),
        ServeOptions {
            oauth: OAuthConfig {
                lifetimes: Lifetimes {
                    code: Duration::from_secs(60),
                    access: Duration::from_secs(3600),
                    refresh: Duration::from_secs(30 * 24 * 3600),
                },
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let code = flow.code(&s, &mut b).await;
    clock.advance(Duration::from_secs(61));
    oauth_error(
        &flow.exchange(&s, &code, Some(&flow.verifier)).await,
        400,
        "invalid_grant",
    );
    let tokens = flow.tokens(&s, &mut b).await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(tokens["expires_in"], 3600);
    clock.advance(Duration::from_secs(3599));
    assert_eq!(
        s.mcp(Some(access), "tools/list", json!({})).await.status,
        200,
        "still within its hour"
    );
    clock.advance(Duration::from_secs(2));
    let expired = s.mcp(Some(access), "tools/list", json!({})).await;
    assert_eq!(expired.status, 401);
    let challenge = expired.headers["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // The refresh token still gets a new one…
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let fresh = flow.refresh(&s, refresh).await;
    assert_eq!(fresh.status, 200);
    // …until the refresh token itself expires.
    clock.advance(Duration::from_secs(30 * 24 * 3600 + 1));
    oauth_error(
        &flow
            .refresh(&s, fresh.body["refresh_token"].as_str().unwrap())
            .await,
        400,
        "invalid_grant",
    );
}

#[tokio::test]
async fn revoked_tokens_stop_working() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let tokens = flow.tokens(&s, &mut b).await;
    let access = tokens["access_token"].as_str().unwrap();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    // RFC 7009: revoking an access token ends that token only.
    let a = form(
        &s.url,
        "/oauth/revoke",
        &[("token", access), ("client_id", &flow.client_id)],
        None,
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(mcp_status(&s, access).await, 401);
    let fresh = flow.refresh(&s, refresh).await;
    assert_eq!(fresh.status, 200);
    let access2 = fresh.body["access_token"].as_str().unwrap();
    let refresh2 = fresh.body["refresh_token"].as_str().unwrap();
    // Revoking a refresh token ends its grant.
    let a = form(
        &s.url,
        "/oauth/revoke",
        &[("token", refresh2), ("client_id", &flow.client_id)],
        None,
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(mcp_status(&s, access2).await, 401);
    oauth_error(&flow.refresh(&s, refresh2).await, 400, "invalid_grant");
    // Unknown tokens answer the same.
    let a = form(
        &s.url,
        "/oauth/revoke",
        &[("token", "xmat_nothing"), ("client_id", &flow.client_id)],
        None,
    )
    .await;
    assert_eq!(a.status, 200);
}

#[tokio::test]
async fn consent_needs_this_sites_form_and_this_session() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let r = resource(&s);
    let consent = b
        .get(&format!("/oauth/authorize?{}", flow.request(&r).query()))
        .await;
    let fields = |csrf: &str| {
        vec![
            ("csrf".to_string(), csrf.to_string()),
            ("response_type".into(), "code".into()),
            ("client_id".into(), flow.client_id.clone()),
            ("redirect_uri".into(), CB.into()),
            ("scope".into(), "memory:read memory:write".into()),
            ("state".into(), "the-state".into()),
            ("code_challenge".into(), flow.challenge.clone()),
            ("code_challenge_method".into(), "S256".into()),
            ("resource".into(), r.clone()),
            ("decision".into(), "approve".into()),
        ]
    };
    async fn post(b: &mut Browser, fields: &[(String, String)]) -> Page {
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        b.post_form("/oauth/authorize", &pairs).await
    }
    let token = consent.field("csrf").unwrap();
    // A forged form token.
    let forged = post(&mut b, &fields("forged")).await;
    assert_eq!(forged.status, 403);
    assert!(forged.location().is_empty());
    // The right token, sent from another site.
    b.origin = Some("https://evil.example".into());
    let cross = post(&mut b, &fields(&token)).await;
    assert_eq!(cross.status, 403);
    b.origin = Some(s.url.clone());
    // Another person's session with this person's token.
    let mut other = signed_in(&s).await;
    let stolen = post(&mut other, &fields(&token)).await;
    assert_eq!(stolen.status, 403);
    // No session at all.
    let mut nobody = Browser::new(&s.url);
    assert_eq!(post(&mut nobody, &fields(&token)).await.status, 403);
    let counts = s.counts().await;
    assert_eq!(counts["oauth_grants"], 0);
    assert_eq!(counts["oauth_codes"], 0);
    // Denying sends the client an access_denied, with nothing issued.
    let mut deny = fields(&token);
    deny.last_mut().unwrap().1 = "deny".into();
    let denied = post(&mut b, &deny).await;
    assert_eq!(denied.status, 303);
    let q = query_of(&denied.location());
    assert_eq!(q["error"], "access_denied");
    assert_eq!(q["iss"], s.url);
    assert_eq!(s.counts().await["oauth_grants"], 0);
    // And the genuine form works.
    let ok = post(&mut b, &fields(&token)).await;
    assert_eq!(ok.status, 303);
    assert!(query_of(&ok.location()).contains_key("code"));
}

#[tokio::test]
async fn confidential_clients_must_authenticate_their_way() {
    let s = TestServer::start().await;
    let reg = register(
        &s.url,
        json!({"client_name": "Backend", "redirect_uris": [CB], "grant_types": ["authorization_code", "refresh_token"]}),
    )
    .await;
    assert_eq!(reg.status, 201, "{}", reg.body);
    assert_eq!(
        reg.body["token_endpoint_auth_method"], "client_secret_basic",
        "RFC 7591 default"
    );
    assert_eq!(reg.headers["cache-control"], "no-store");
    let id = reg.body["client_id"].as_str().unwrap().to_string();
    let secret = reg.body["client_secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("xmcs_"));
    let stored = s.store.get_oauth_client(&id).await.unwrap().unwrap();
    assert_eq!(
        stored.secret_hash,
        Some(xmemo_server::auth::hash_key(&secret))
    );
    let flow = Flow {
        client_id: id.clone(),
        verifier: pkce().0,
        challenge: String::new(),
    };
    let (verifier, challenge) = pkce();
    let flow = Flow {
        verifier,
        challenge,
        ..flow
    };
    let mut b = signed_in(&s).await;
    let code = flow.code(&s, &mut b).await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", CB),
        ("code_verifier", flow.verifier.as_str()),
    ];
    let with_id: Vec<(&str, &str)> = fields
        .iter()
        .copied()
        .chain([("client_id", id.as_str())])
        .collect();
    let a = form(&s.url, "/oauth/token", &with_id, None).await;
    oauth_error(&a, 401, "invalid_client");
    let a = form(&s.url, "/oauth/token", &fields, Some((&id, "xmcs_wrong"))).await;
    oauth_error(&a, 401, "invalid_client");
    assert!(
        a.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    let mut posted = with_id.clone();
    posted.push(("client_secret", &secret));
    let a = form(&s.url, "/oauth/token", &posted, None).await;
    oauth_error(&a, 401, "invalid_client");
    assert_eq!(issued(&s).await, 0);
    let a = form(&s.url, "/oauth/token", &fields, Some((&id, &secret))).await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn registration_refuses_what_it_cannot_honour() {
    let s = TestServer::start().await;
    for (body, error) in [
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": ["http://app.example.com/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["javascript:alert(1)"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": [CB], "token_endpoint_auth_method": "private_key_jwt"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [CB], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [CB], "response_types": ["token"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [CB], "scope": "admin"}),
            "invalid_client_metadata",
        ),
        (json!(["not an object"]), "invalid_client_metadata"),
    ] {
        let a = register(&s.url, body.clone()).await;
        assert_eq!(a.status, 400, "{body}: {}", a.body);
        assert_eq!(a.body["error"], error, "{body}: {}", a.body);
    }
    assert_eq!(s.counts().await["oauth_clients"], 0);
}

#[tokio::test]
async fn registrations_are_bounded_per_address() {
    let s = TestServer::start_configured(|svc| {
        svc.with_registration_budget(xmemo_server::throttle::LimiterConfig::new(
            2,
            Duration::from_secs(3600),
        ))
    })
    .await;
    register_public(&s.url, "one").await;
    register_public(&s.url, "two").await;
    let a = register(
        &s.url,
        json!({"redirect_uris": [CB], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert!(a.headers.contains_key("retry-after"));
    assert_eq!(s.counts().await["oauth_clients"], 2);
}

#[tokio::test]
async fn a_token_without_a_scope_gets_an_insufficient_scope_challenge() {
    let s = TestServer::start().await;
    let flow = Flow::public(&s).await;
    let mut b = signed_in(&s).await;
    let r = resource(&s);
    let req = Request {
        scope: "memory:read",
        ..flow.request(&r)
    };
    let back = approve(&mut b, &req)
        .await
        .unwrap_or_else(|p| panic!("{}", p.body));
    let code = query_of(&back)["code"].clone();
    let tokens = flow.exchange(&s, &code, Some(&flow.verifier)).await;
    assert_eq!(tokens.body["scope"], "memory:read");
    let access = tokens.body["access_token"].as_str().unwrap();
    assert_eq!(mcp_status(&s, access).await, 200, "reading is allowed");
    let write = s
        .mcp(
            Some(access),
            "tools/call",
            json!({"name": "remember", "arguments": {"content": "x", "kind": "note"}}),
        )
        .await;
    assert_eq!(write.status, 403, "{}", write.body);
    let challenge = write.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"memory:read memory:write\""),
        "{challenge}"
    );
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    // Every /mcp answer is JSON-RPC: the SPEC error object travels in `data`.
    assert_eq!(
        write.body["error"]["data"]["error"]["code"],
        "PERMISSION_DENIED"
    );
    assert_eq!(s.counts().await["memories"], 0, "nothing was written");
    // A refresh cannot widen the grant.
    let wider = form(
        &s.url,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            (
                "refresh_token",
                tokens.body["refresh_token"].as_str().unwrap(),
            ),
            ("client_id", &flow.client_id),
            ("scope", "memory:read memory:write"),
        ],
        None,
    )
    .await;
    oauth_error(&wider, 400, "invalid_scope");
}

#[tokio::test]
async fn the_operator_decides_each_clients_profile() {
    let mut profiles = std::collections::BTreeMap::new();
    profiles.insert("Public Thing".to_string(), "generic-public".to_string());
    let s = TestServer::start_with(
        |svc| svc,
        ServeOptions {
            oauth: OAuthConfig {
                client_profiles: profiles,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    let mut b = signed_in(&s).await;
    let tools = |body: &Value| -> Vec<String> {
        body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let ordinary = Flow::public(&s).await;
    let t = ordinary.tokens(&s, &mut b).await;
    let listed = s
        .mcp(t["access_token"].as_str(), "tools/list", json!({}))
        .await;
    assert!(
        tools(&listed.body).contains(&"recall_cloud_skill".to_string()),
        "ordinary-full"
    );
    let (verifier, challenge) = pkce();
    let public = Flow {
        client_id: register_public(&s.url, "Public Thing").await,
        verifier,
        challenge,
    };
    let t = public.tokens(&s, &mut b).await;
    let listed = s
        .mcp(t["access_token"].as_str(), "tools/list", json!({}))
        .await;
    assert!(
        !tools(&listed.body).contains(&"recall_cloud_skill".to_string()),
        "generic-public: {}",
        listed.body
    );
}

#[tokio::test]
async fn failed_token_lookups_spend_the_address_budget() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(xmemo_server::throttle::LimiterConfig::new(
            3,
            Duration::from_secs(600),
        ))
    })
    .await;
    for i in 0..3 {
        let r = s
            .mcp(Some(&format!("xmat_guess{i}")), "tools/list", json!({}))
            .await;
        assert_eq!(r.status, 401);
    }
    let limited = s.mcp(Some(&s.admin_key), "tools/list", json!({})).await;
    assert_eq!(limited.status, 429, "{}", limited.body);
}

/// A tiny HTTP server that answers every request with `body` (a client metadata document).
async fn serve_document(body: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                break;
            };
            let body = body.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}")
}

fn fetch_allowing_loopback_http() -> xmemo_server::fetch::FetchConfig {
    xmemo_server::fetch::FetchConfig {
        allow_http: true,
        allow_private_cidrs: vec!["127.0.0.0/8".into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn metadata_documents_must_name_themselves() {
    // The document is served at one URL but claims another client_id.
    let base = serve_document(
        json!({"client_id": "https://evil.example/client.json", "client_name": "Liar", "redirect_uris": [CB]})
            .to_string(),
    )
    .await;
    let s =
        TestServer::start_configured(|svc| svc.with_fetch_config(fetch_allowing_loopback_http()))
            .await;
    let mut b = signed_in(&s).await;
    let (_, challenge) = pkce();
    let client_id = format!("{base}/client.json");
    let r = resource(&s);
    let req = Request {
        client_id: &client_id,
        redirect_uri: CB,
        challenge: &challenge,
        method: "S256",
        scope: "memory:read",
        state: "s",
        resource: Some(&r),
    };
    let page = b.get(&format!("/oauth/authorize?{}", req.query())).await;
    assert_eq!(page.status, 400, "{}", page.body);
    assert!(page.location().is_empty());
    // Refused, without repeating what the document says (issue #23: the page is no oracle
    // of what a URL serves).
    assert!(page.body.contains("cannot be used"), "{}", page.body);
    assert!(!page.body.contains("evil.example"), "{}", page.body);
    assert_eq!(s.counts().await["oauth_grants"], 0);
}

#[tokio::test]
async fn metadata_documents_at_private_addresses_are_not_fetched() {
    let s = TestServer::start().await;
    let mut b = signed_in(&s).await;
    let (_, challenge) = pkce();
    let r = resource(&s);
    for client_id in [
        "https://10.1.2.3/client.json",
        "https://127.0.0.1/client.json",
        "https://[::1]/client.json",
        "https://169.254.169.254/latest/meta-data",
    ] {
        let req = Request {
            client_id,
            redirect_uri: CB,
            challenge: &challenge,
            method: "S256",
            scope: "memory:read",
            state: "s",
            resource: Some(&r),
        };
        let page = b.get(&format!("/oauth/authorize?{}", req.query())).await;
        assert_eq!(page.status, 400, "{client_id}: {}", page.body);
        // Refused without saying how the fetch went (issue #23).
        assert!(
            page.body.contains("cannot be used"),
            "{client_id}: {}",
            page.body
        );
        assert!(!page.body.contains("loopback") && !page.body.contains("private"));
        assert!(page.location().is_empty());
    }
    // Plain http is refused outright (tests allow it only with the fetcher's allow_http).
    let req = Request {
        client_id: "http://app.example.com/client.json",
        redirect_uri: CB,
        challenge: &challenge,
        method: "S256",
        scope: "memory:read",
        state: "s",
        resource: Some(&r),
    };
    let page = b.get(&format!("/oauth/authorize?{}", req.query())).await;
    assert!(page.body.contains("must be an https URL"), "{}", page.body);
}

#[tokio::test]
async fn a_metadata_document_client_completes_the_flow() {
    // The document's URL is only known once the listener is bound: serve a placeholder
    // first, then the real document at the same address.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client_id = format!("http://{addr}/oauth/client.json");
    let doc = json!({
        "client_id": client_id,
        "client_name": "Document Client",
        "redirect_uris": [CB],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    })
    .to_string();
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                break;
            };
            let doc = doc.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{doc}",
                    doc.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    let s =
        TestServer::start_configured(|svc| svc.with_fetch_config(fetch_allowing_loopback_http()))
            .await;
    let mut b = signed_in(&s).await;
    let (verifier, challenge) = pkce();
    let flow = Flow {
        client_id: client_id.clone(),
        verifier,
        challenge,
    };
    let r = resource(&s);
    let consent = b
        .get(&format!("/oauth/authorize?{}", flow.request(&r).query()))
        .await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(consent.body.contains("Document Client"));
    assert!(consent.body.contains("Client identity: the document at"));
    let tokens = flow.tokens(&s, &mut b).await;
    assert_eq!(
        mcp_status(&s, tokens["access_token"].as_str().unwrap()).await,
        200
    );
    assert_eq!(
        s.counts().await["oauth_clients"],
        0,
        "documents are not registrations"
    );
    let grant = &s.get("/api/v1/oauth/grants", &s.admin_key).await.body["grants"][0];
    assert_eq!(grant["client_id"], client_id);
    assert_eq!(grant["client_name"], "Document Client");
}
