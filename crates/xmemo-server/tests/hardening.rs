//! Issue #23, hardening round 2: one regression test (or more) per defect of the adversarial
//! round, over HTTP against a real server (SQLite, or PostgreSQL with
//! `XMEMO_TEST_BACKEND=postgres`). Bursts are real concurrent requests; nothing here asserts a
//! duration — budgets are counted, expiry is moved by the service's `ManualClock`. These use
//! only what the server's API had before the fixes (so they run, and fail, on the tree the
//! issue was filed against); the tests of the settings the fixes brought are in
//! `hardening_budgets.rs`.

mod common;

use common::browser::Browser;
use common::{Reply, ServeOptions, TestServer, skill};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use xmemo_server::service::clock::ManualClock;
use xmemo_server::throttle::LimiterConfig;
use xmemo_testkit::oauth::{Request, approve, form, pkce, query_of, register, tokens_for};

const RW: &[&str] = &["memory:read", "memory:write"];
const CB: &str = "http://127.0.0.1:5555/callback";

fn admin_password(s: &TestServer) -> String {
    std::fs::read_to_string(s.data_dir.join("admin.password"))
        .expect("admin.password")
        .trim()
        .to_string()
}

/// `n` copies of `f` run at once; their results in order.
async fn at_once<F, Fut, T>(n: usize, f: F) -> Vec<T>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(f(i))).collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    out
}

/// One failed sign-in POST with a fresh form (cookie and token), from `forwarded_for` when
/// given (the test server trusts 127.0.0.1 as a proxy then).
async fn sign_in_status(
    base: String,
    handle: String,
    password: String,
    forwarded_for: Option<String>,
) -> u16 {
    let mut b = Browser::new(&base);
    if let Some(ip) = forwarded_for {
        b.extra.push(("x-forwarded-for".into(), ip));
    }
    b.sign_in(&handle, &password, "/login")
        .await
        .status
        .as_u16()
}

fn count(statuses: &[u16], code: u16) -> usize {
    statuses.iter().filter(|s| **s == code).count()
}

fn proxied() -> ServeOptions {
    ServeOptions {
        trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
        ..Default::default()
    }
}

// ---- 1. Unauthenticated memory exhaustion through sign-in -------------------------------

/// 40 failed sign-ins sent at once (handles that need not exist; the failure budgets out of
/// the way): only the password-hashing slots and their bounded queue take them — at most 4
/// slots with 4 waiting each, on any machine — and the rest are refused at once (503,
/// before any hashing). Before the fix every one of them was hashed at once, each with its
/// own 19 MiB.
#[tokio::test]
async fn sign_ins_past_the_hashing_queue_are_refused_at_once() {
    let s =
        TestServer::start_configured(|svc| svc.with_auth_throttle(LimiterConfig::disabled())).await;
    const N: usize = 40;
    // Every form first, so the posts can leave together.
    let mut ready = Vec::with_capacity(N);
    for i in 0..N {
        let mut b = Browser::new(&s.url);
        let form = b.get("/login?next=%2Flogin").await;
        let csrf = form.field("csrf").expect("the sign-in form has its token");
        ready.push((b, csrf, format!("nobody-{i}")));
    }
    let start = Arc::new(tokio::sync::Barrier::new(N));
    let tasks: Vec<_> = ready
        .into_iter()
        .map(|(mut b, csrf, handle)| {
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                b.post_form(
                    "/login",
                    &[
                        ("handle", handle.as_str()),
                        ("password", "wrong password"),
                        ("next", "/login"),
                        ("csrf", csrf.as_str()),
                    ],
                )
                .await
                .status
                .as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::with_capacity(N);
    for t in tasks {
        statuses.push(t.await.expect("task"));
    }
    assert_eq!(
        count(&statuses, 401) + count(&statuses, 503),
        N,
        "{statuses:?}"
    );
    assert!(
        count(&statuses, 401) <= 20,
        "more password checks than the slots and their queue can hold: {statuses:?}"
    );
}

// ---- 2. Budgets checked before and recorded after --------------------------------------

/// 16 concurrent wrong passwords for one account against a budget of one: one is checked,
/// fifteen are refused before any check (the token is reserved before the check).
#[tokio::test]
async fn a_burst_of_failed_sign_ins_spends_exactly_the_accounts_budget() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(LimiterConfig::disabled())
            .with_login_throttle(LimiterConfig::new(1, Duration::from_secs(600)))
    })
    .await;
    let base = s.url.clone();
    let statuses = at_once(16, |_| {
        sign_in_status(base.clone(), "admin".into(), "wrong password".into(), None)
    })
    .await;
    assert_eq!(count(&statuses, 401), 1, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 15, "{statuses:?}");
}

/// The same for the per-address budget every failed authentication spends: API keys.
#[tokio::test]
async fn a_burst_of_bad_keys_spends_exactly_the_address_budget() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(LimiterConfig::new(3, Duration::from_secs(600)))
    })
    .await;
    let (http, url) = (s.http.clone(), s.url.clone());
    let statuses = at_once(16, |i| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            http.get(format!("{url}/api/v1/me"))
                .bearer_auth(format!("xmk_not-a-key-{i}"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    })
    .await;
    assert_eq!(count(&statuses, 401), 3, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 13, "{statuses:?}");
    // A valid key is refused too now: the address spent its budget.
    s.get("/api/v1/me", &s.admin_key)
        .await
        .expect_error(429, "RATE_LIMITED");
}

/// Successes are not refused by the reservations of other requests in flight: a burst of
/// valid requests larger than the budget all go through.
#[tokio::test]
async fn a_burst_of_valid_requests_is_never_refused_by_the_failure_budget() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(LimiterConfig::new(2, Duration::from_secs(600)))
    })
    .await;
    let (http, url, key) = (s.http.clone(), s.url.clone(), s.admin_key.clone());
    let statuses = at_once(24, |_| {
        let (http, url, key) = (http.clone(), url.clone(), key.clone());
        async move {
            http.get(format!("{url}/api/v1/me"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    })
    .await;
    assert_eq!(count(&statuses, 200), 24, "{statuses:?}");
}

/// Client-secret guesses at the token endpoint spend the same per-address budget, reserved
/// before the secret is compared.
#[tokio::test]
async fn client_secret_guesses_at_the_token_endpoint_are_throttled() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(LimiterConfig::new(3, Duration::from_secs(600)))
    })
    .await;
    let reg = register(
        &s.url,
        json!({"client_name": "Confidential", "redirect_uris": [CB], "token_endpoint_auth_method": "client_secret_post"}),
    )
    .await;
    assert_eq!(reg.status, 201, "{}", reg.body);
    let client_id = reg.body["client_id"].as_str().unwrap().to_string();
    let url = s.url.clone();
    let answers = at_once(10, |i| {
        let (url, client_id) = (url.clone(), client_id.clone());
        async move {
            let secret = format!("xmcs_guess-{i}");
            form(
                &url,
                "/oauth/token",
                &[
                    ("grant_type", "authorization_code"),
                    ("code", "xmac_whatever"),
                    ("client_id", &client_id),
                    ("client_secret", &secret),
                ],
                None,
            )
            .await
        }
    })
    .await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(count(&statuses, 401), 3, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 7, "{statuses:?}");
    let limited = answers.iter().find(|a| a.status == 429).unwrap();
    assert_eq!(limited.body["error"], "temporarily_unavailable");
    assert!(limited.headers.contains_key("retry-after"));
}

/// A wrong current password in the console's password form spends the budgets of a failed
/// sign-in, reserved first: a burst gets the budget's worth of checks, not one per request.
#[tokio::test]
async fn wrong_current_passwords_spend_the_sign_in_budget_under_a_burst() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(LimiterConfig::new(3, Duration::from_secs(600)))
    })
    .await;
    let mut b = Browser::new(&s.url);
    assert_eq!(
        b.sign_in("admin", &admin_password(&s), "/console/account")
            .await
            .status,
        303
    );
    let token = b
        .get("/console/account")
        .await
        .field("csrf")
        .expect("form token");
    let b = Arc::new(tokio::sync::Mutex::new(b));
    let statuses = at_once(8, |i| {
        let (b, token) = (b.clone(), token.clone());
        async move {
            // A browser per request, with the same cookies, so they run at once.
            let (base, cookies) = {
                let b = b.lock().await;
                (b.base.clone(), b.cookies.clone())
            };
            let mut own = Browser::new(&base);
            own.cookies = cookies;
            own.post_form(
                "/console/account/password",
                &[
                    ("csrf", &token),
                    ("current_password", &format!("wrong-{i}")),
                    ("new_password", "a new long passphrase"),
                    ("confirm_password", "a new long passphrase"),
                ],
            )
            .await
            .status
            .as_u16()
        }
    })
    .await;
    assert_eq!(count(&statuses, 422), 3, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 5, "{statuses:?}");
}

// ---- 3. Anyone could lock any account out ----------------------------------------------

/// Guesses from addresses the account never signed in from exhaust its ceiling; the owner
/// signing in from an address it used before is never refused for that; another new address
/// is, until the operator unlocks the account (on any node: the unlock is in the database).
#[tokio::test]
async fn guesses_from_elsewhere_never_lock_the_owner_out() {
    let s = TestServer::start_with(
        |svc| {
            svc.with_auth_throttle(LimiterConfig::disabled())
                .with_login_throttle(LimiterConfig::new(3, Duration::from_secs(600)))
        },
        proxied(),
    )
    .await;
    let password = admin_password(&s);
    let home = "198.51.100.7".to_string();
    assert_eq!(
        sign_in_status(
            s.url.clone(),
            "admin".into(),
            password.clone(),
            Some(home.clone())
        )
        .await,
        303
    );
    // An attacker guesses from many addresses the account never used.
    for i in 0..6 {
        sign_in_status(
            s.url.clone(),
            "admin".into(),
            format!("guess {i}"),
            Some(format!("203.0.113.{i}")),
        )
        .await;
    }
    // From a new address even the right password is refused now…
    assert_eq!(
        sign_in_status(
            s.url.clone(),
            "admin".into(),
            password.clone(),
            Some("203.0.113.99".into())
        )
        .await,
        429
    );
    // …but the owner at home signs in.
    assert_eq!(
        sign_in_status(s.url.clone(), "admin".into(), password.clone(), Some(home)).await,
        303
    );
}

// ---- 4. A team left with no owner -----------------------------------------------------

async fn team_of_two_owners(s: &TestServer, round: usize) -> (String, String, String) {
    let a = s.account(&format!("own-a{round}"), RW).await;
    let b = s.account(&format!("own-b{round}"), RW).await;
    let team = format!("team-{round}");
    s.post("/api/v1/workspaces", &a, json!({"handle": team}))
        .await
        .expect_ok();
    s.join(&team, &a, &format!("own-b{round}"), &b, "owner")
        .await;
    (team, a, b)
}

/// Whether `team` has no owner left (through the store, as any operator tool would look).
async fn ownerless(s: &TestServer, team: &str) -> bool {
    let ws = s.store.find_team_by_handle(team).await.unwrap().unwrap();
    !s.store
        .list_members(&ws.workspace_id)
        .await
        .unwrap()
        .iter()
        .any(|m| m.role == xmemo_core::Role::Owner)
}

async fn delete_account(s: &TestServer, key: &str, handle: &str) -> Reply {
    s.call(
        Method::DELETE,
        "/api/v1/account",
        key,
        Some(json!({"confirm": handle})),
    )
    .await
}

#[tokio::test]
async fn two_owners_deleting_themselves_at_once_leave_the_team_an_owner() {
    let s = TestServer::start().await;
    for round in 0..6 {
        let (team, a, b) = team_of_two_owners(&s, round).await;
        let (ha, hb) = (format!("own-a{round}"), format!("own-b{round}"));
        let (ra, rb) = tokio::join!(delete_account(&s, &a, &ha), delete_account(&s, &b, &hb));
        let ok = [&ra, &rb].iter().filter(|r| r.status.is_success()).count();
        assert_eq!(ok, 1, "round {round}: {} / {}", ra.body, rb.body);
        let refused = if ra.status.is_success() { &rb } else { &ra };
        refused.expect_error(409, "CONFLICT");
        assert!(
            !ownerless(&s, &team).await,
            "round {round}: {team} has no owner"
        );
    }
}

#[tokio::test]
async fn one_owner_leaving_while_the_other_deletes_leaves_the_team_an_owner() {
    let s = TestServer::start().await;
    for round in 0..6 {
        let (team, a, b) = team_of_two_owners(&s, round).await;
        let (leave, hb) = (
            format!("/api/v1/workspaces/{team}/leave"),
            format!("own-b{round}"),
        );
        let (left, deleted) =
            tokio::join!(s.post(&leave, &a, json!({})), delete_account(&s, &b, &hb));
        let ok = [&left, &deleted]
            .iter()
            .filter(|r| r.status.is_success())
            .count();
        assert_eq!(ok, 1, "round {round}: {} / {}", left.body, deleted.body);
        assert!(
            !ownerless(&s, &team).await,
            "round {round}: {team} has no owner"
        );
    }
}

// ---- 5. Quotas and a write rate: hardening_budgets.rs (they need the new settings) ------

// ---- 6. Dynamic client registration -----------------------------------------------------

#[tokio::test]
async fn registrations_have_tighter_field_bounds() {
    let s = TestServer::start().await;
    let many: Vec<String> = (0..11).map(|i| format!("http://127.0.0.1/cb{i}")).collect();
    let r = register(
        &s.url,
        json!({"client_name": "Many", "redirect_uris": many, "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"], "invalid_redirect_uri");
    let long_uri = format!("http://127.0.0.1/{}", "a".repeat(600));
    let r = register(
        &s.url,
        json!({"client_name": "Long", "redirect_uris": [long_uri], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = register(
        &s.url,
        json!({"client_name": "Logo", "redirect_uris": [CB], "logo_uri": format!("https://x.example/{}", "l".repeat(600)), "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"], "invalid_client_metadata");
    // A usual registration still works, and its audit entry does not repeat its metadata.
    let r = register(
        &s.url,
        json!({"client_name": "Fine", "redirect_uris": [CB], "logo_uri": "https://x.example/l.png", "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let entry = s
        .store
        .list_audit(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .rfind(|e| e.action == "oauth.register")
        .unwrap();
    assert!(
        !entry.details.to_string().contains("l.png"),
        "{}",
        entry.details
    );
}

#[tokio::test]
async fn registered_clients_that_never_got_a_grant_expire() {
    let clock = Arc::new(ManualClock::default());
    let s = TestServer::start_configured(|svc| svc.with_clock(clock.clone())).await;
    let body = json!({"client_name": "C", "redirect_uris": ["http://127.0.0.1:5555/callback"], "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]});
    let unused = register(&s.url, body.clone()).await.body["client_id"]
        .as_str()
        .unwrap()
        .to_string();
    let used = register(&s.url, body.clone()).await.body["client_id"]
        .as_str()
        .unwrap()
        .to_string();
    let tokens = tokens_for(&s.url, "admin", &admin_password(&s), &used).await;
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    clock.advance(Duration::from_secs(25 * 3600));
    // The next registration sweeps the unused one; the one with a grant stays.
    register(&s.url, body).await;
    assert!(s.store.get_oauth_client(&unused).await.unwrap().is_none());
    assert!(s.store.get_oauth_client(&used).await.unwrap().is_some());
}

// ---- 7. Client metadata documents fetched without bounds -------------------------------

/// Serves `body` (with `cache_control`) at every path and counts the requests.
async fn counting_document_server(
    body: impl Fn(&str) -> String + Send + Sync + 'static,
    cache_control: &'static str,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let (counter, body) = (hits.clone(), Arc::new(body));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                break;
            };
            let (counter, body) = (counter.clone(), body.clone());
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                counter.fetch_add(1, Ordering::SeqCst);
                let doc = body(&path);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncache-control: {cache_control}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{doc}",
                    doc.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (base, hits)
}

fn loopback_fetch() -> xmemo_server::fetch::FetchConfig {
    xmemo_server::fetch::FetchConfig {
        allow_http: true,
        allow_private_cidrs: vec!["127.0.0.0/8".into()],
        ..Default::default()
    }
}

fn authorize_query(client_id: &str, s: &TestServer) -> String {
    let (_, challenge) = pkce();
    let resource = format!("{}/mcp", s.url);
    Request {
        client_id,
        redirect_uri: CB,
        challenge: &challenge,
        method: "S256",
        scope: "memory:read",
        state: "s",
        resource: Some(&resource),
    }
    .query()
}

#[tokio::test]
async fn signed_out_authorization_requests_fetch_a_document_once() {
    let base_holder: Arc<std::sync::Mutex<String>> = Arc::default();
    let holder = base_holder.clone();
    let (base, hits) = counting_document_server(
        move |path| {
            let base = holder.lock().unwrap().clone();
            json!({"client_id": format!("{base}{path}"), "client_name": "Doc", "redirect_uris": [CB]})
                .to_string()
        },
        "no-store",
    )
    .await;
    *base_holder.lock().unwrap() = base.clone();
    let s = TestServer::start_configured(|svc| svc.with_fetch_config(loopback_fetch())).await;
    let client_id = format!("{base}/client.json");
    for _ in 0..10 {
        let mut b = Browser::new(&s.url);
        let page = b
            .get(&format!(
                "/oauth/authorize?{}",
                authorize_query(&client_id, &s)
            ))
            .await;
        assert_eq!(
            page.status, 303,
            "signed out: sent to sign in ({})",
            page.body
        );
    }
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refused_document_is_cached_and_repeats_nothing_it_said() {
    let (base, hits) = counting_document_server(
        |_| json!({"client_id": "https://evil.example/<b>x</b>", "client_name": "Liar", "redirect_uris": [CB]}).to_string(),
        "max-age=3600",
    )
    .await;
    let s = TestServer::start_configured(|svc| svc.with_fetch_config(loopback_fetch())).await;
    let client_id = format!("{base}/client.json");
    for _ in 0..10 {
        let mut b = Browser::new(&s.url);
        let page = b
            .get(&format!(
                "/oauth/authorize?{}",
                authorize_query(&client_id, &s)
            ))
            .await;
        assert_eq!(page.status, 400, "{}", page.body);
        assert!(!page.body.contains("evil.example"), "{}", page.body);
        assert!(!page.body.contains("another client_id"), "{}", page.body);
    }
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn document_fetches_are_bounded_per_address() {
    let (base, hits) = counting_document_server(|_| "not a document".to_string(), "no-store").await;
    // The default budget: 20 fetches per address in 10 minutes.
    let s = TestServer::start_configured(|svc| svc.with_fetch_config(loopback_fetch())).await;
    let mut limited = 0;
    for i in 0..25 {
        let client_id = format!("{base}/c{i}.json");
        let mut b = Browser::new(&s.url);
        let page = b
            .get(&format!(
                "/oauth/authorize?{}",
                authorize_query(&client_id, &s)
            ))
            .await;
        if page.body.contains("client metadata document fetches") {
            limited += 1;
        }
    }
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 20);
    assert_eq!(limited, 5);
}

// ---- 8. A credential's profile bounds every path ---------------------------------------

async fn mcp_at(s: &TestServer, path: &str, token: &str, method: &str, params: Value) -> Reply {
    let req = s
        .http
        .post(format!("{}{path}", s.url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    Reply::from(req.send().await.unwrap()).await
}

async fn tool_names(s: &TestServer, path: &str, token: &str) -> Vec<String> {
    let r = mcp_at(s, path, token, "tools/list", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_path_never_gives_a_credential_more_than_its_profile() {
    let s = TestServer::start_with(
        |svc| svc,
        ServeOptions {
            mcp: xmemo_server::state::McpConfig {
                execute_profiles: vec!["ordinary-full".into()],
                ..Default::default()
            },
            oauth: xmemo_server::service::oauth::OAuthConfig {
                client_profiles: [("Public Host".to_string(), "chatgpt-public".to_string())]
                    .into_iter()
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    // An OAuth client the operator mapped to chatgpt-public.
    let client_id = xmemo_testkit::oauth::register_public(&s.url, "Public Host").await;
    let tokens = tokens_for(&s.url, "admin", &admin_password(&s), &client_id).await;
    let token = tokens.body["access_token"].as_str().unwrap().to_string();
    let full = tool_names(&s, "/mcp/ordinary-full", &token).await;
    assert!(!full.iter().any(|t| t == "execute_cloud_skill"), "{full:?}");
    assert!(!full.iter().any(|t| t == "save_cloud_skill"), "{full:?}");
    let call = mcp_at(
        &s,
        "/mcp/ordinary-full",
        &token,
        "tools/call",
        json!({"name": "execute_cloud_skill", "arguments": {"slug": "x", "revision_id": "rev_x", "script_path": "a.py"}}),
    )
    .await;
    assert_eq!(call.body["error"]["code"], -32602, "{}", call.body);
    // The same for an API key created with that profile.
    let operator = s.service.operator_for("admin").await.unwrap();
    let key = s
        .service
        .issue_key(
            &operator,
            &operator.account,
            xmemo_server::service::types::CreateKeyRequest {
                name: "public".into(),
                scopes: None,
                expires_at: None,
                profile: Some("chatgpt-public".into()),
            },
        )
        .await
        .unwrap()
        .key;
    let by_key = tool_names(&s, "/mcp/ordinary-full", &key).await;
    assert!(
        !by_key.iter().any(|t| t == "execute_cloud_skill"),
        "{by_key:?}"
    );
    // A default-profile key still gets what the path serves.
    let default = tool_names(&s, "/mcp/ordinary-full", &s.admin_key).await;
    assert!(
        default.iter().any(|t| t == "execute_cloud_skill"),
        "{default:?}"
    );
}

// ---- 9. Registered scope, password change ----------------------------------------------

#[tokio::test]
async fn a_client_gets_no_scope_beyond_what_it_registered() {
    let s = TestServer::start().await;
    let reg = register(
        &s.url,
        json!({"client_name": "Reader", "redirect_uris": [CB], "token_endpoint_auth_method": "none", "scope": "memory:read"}),
    )
    .await;
    let client_id = reg.body["client_id"].as_str().unwrap().to_string();
    let mut b = Browser::new(&s.url);
    b.sign_in("admin", &admin_password(&s), "/login").await;
    let (_, challenge) = pkce();
    let resource = format!("{}/mcp", s.url);
    let ask = |scope: &'static str| Request {
        client_id: &client_id,
        redirect_uri: CB,
        challenge: &challenge,
        method: "S256",
        scope,
        state: "st",
        resource: Some(&resource),
    };
    let page = b
        .get(&format!(
            "/oauth/authorize?{}",
            ask("memory:read memory:write").query()
        ))
        .await;
    assert_eq!(page.status, 302, "{}", page.body);
    assert_eq!(
        query_of(&page.location()).get("error").map(String::as_str),
        Some("invalid_scope")
    );
    // Without a scope it is offered what it registered, no more.
    let page = b
        .get(&format!("/oauth/authorize?{}", ask("").query()))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.field("scope").as_deref(), Some("memory:read"));
    let back = approve(&mut b, &ask("memory:read")).await;
    assert!(back.is_ok());
}

#[tokio::test]
async fn a_password_change_can_sign_out_every_connected_app_and_lists_the_keys() {
    let s = TestServer::start().await;
    let password = admin_password(&s);
    let client_id = xmemo_testkit::oauth::register_public(&s.url, "Host").await;
    let tokens = tokens_for(&s.url, "admin", &password, &client_id).await;
    let token = tokens.body["access_token"].as_str().unwrap().to_string();
    assert_eq!(
        s.mcp(Some(&token), "tools/list", json!({})).await.status,
        200
    );
    let mut b = Browser::new(&s.url);
    b.sign_in("admin", &password, "/console/account").await;
    let csrf = b.get("/console/account").await.field("csrf").unwrap();
    let page = b
        .post_form(
            "/console/account/password",
            &[
                ("csrf", &csrf),
                ("current_password", &password),
                ("new_password", "a brand new passphrase"),
                ("confirm_password", "a brand new passphrase"),
                ("sign_out_everywhere", "on"),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("data-testid=\"live-keys\""),
        "{}",
        page.body
    );
    let key_prefix: String = s.admin_key.chars().take(12).collect();
    assert!(page.body.contains(&key_prefix), "the admin key is listed");
    // The app connected with the old password is out; the session is over.
    assert_eq!(
        s.mcp(Some(&token), "tools/list", json!({})).await.status,
        401
    );
    assert!(b.session().is_none());
    let grants = s.get("/api/v1/oauth/grants", &s.admin_key).await;
    assert!(grants.expect_ok()["grants"].as_array().unwrap().is_empty());
}

// ---- 10. Invitation spam -----------------------------------------------------------------

async fn invite(s: &TestServer, team: &str, key: &str, who: &str) -> Reply {
    s.post(
        &format!("/api/v1/workspaces/{team}/invitations"),
        key,
        json!({"invitee": who, "role": "member"}),
    )
    .await
}

#[tokio::test]
async fn one_pending_invitation_per_team_and_person() {
    let s = TestServer::start().await;
    let vic = s.account("vic", RW).await;
    let vic_id = s.get("/api/v1/me", &vic).await.body["account"]["account_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.post("/api/v1/workspaces", &s.admin_key, json!({"handle": "ops"}))
        .await
        .expect_ok();
    assert_eq!(invite(&s, "ops", &s.admin_key, "vic").await.status, 202);
    invite(&s, "ops", &s.admin_key, &vic_id)
        .await
        .expect_error(409, "CONFLICT");
    let mine = s.get("/api/v1/invitations", &vic).await;
    assert_eq!(mine.expect_ok()["invitations"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_decline_cools_re_invitations_down() {
    let clock = Arc::new(ManualClock::default());
    let s = TestServer::start_configured(|svc| svc.with_clock(clock.clone())).await;
    let vic = s.account("vic", RW).await;
    s.post("/api/v1/workspaces", &s.admin_key, json!({"handle": "ops"}))
        .await
        .expect_ok();
    let first = invite(&s, "ops", &s.admin_key, "vic").await;
    let id = first.body["invitation"]["invitation_id"].as_str().unwrap();
    s.post(
        &format!("/api/v1/invitations/{id}/decline"),
        &vic,
        json!({}),
    )
    .await
    .expect_ok();
    let again = invite(&s, "ops", &s.admin_key, "vic").await;
    again.expect_error(429, "RATE_LIMITED");
    assert!(again.headers.contains_key("retry-after"));
    // A week and a day later (the default cool-down is a week).
    clock.advance(Duration::from_secs(8 * 24 * 3600));
    assert_eq!(invite(&s, "ops", &s.admin_key, "vic").await.status, 202);
}

#[tokio::test]
async fn an_invitee_has_a_bounded_number_of_pending_invitations() {
    let s = TestServer::start().await;
    s.account("vic", RW).await;
    // xmemo_core::limits::PENDING_INVITATIONS_PER_INVITEE_MAX
    let max = 20;
    for i in 0..=max {
        let key = s.account(&format!("spammer{i}"), RW).await;
        s.post(
            "/api/v1/workspaces",
            &key,
            json!({"handle": format!("spam-{i}")}),
        )
        .await
        .expect_ok();
        let r = invite(&s, &format!("spam-{i}"), &key, "vic").await;
        if i < max {
            assert_eq!(r.status, 202, "{i}: {}", r.body);
        } else {
            let e = r.expect_error(422, "VALIDATION_ERROR");
            assert_eq!(e["details"]["field"], "invitee");
        }
    }
}

#[tokio::test]
async fn team_creation_is_rate_limited_and_names_are_cleaned() {
    let s = TestServer::start().await;
    let key = s.account("maker", RW).await;
    let made = s
        .post(
            "/api/v1/workspaces",
            &key,
            json!({"handle": "t-0", "name": "Ops\u{202E}lanretni\u{200B}\u{2066}"}),
        )
        .await;
    assert_eq!(
        made.expect_ok()["workspace"]["name"],
        "Opslanretni",
        "bidi and zero-width marks are dropped"
    );
    for i in 1..10 {
        s.post(
            "/api/v1/workspaces",
            &key,
            json!({"handle": format!("t-{i}")}),
        )
        .await
        .expect_ok();
    }
    let r = s
        .post("/api/v1/workspaces", &key, json!({"handle": "t-10"}))
        .await;
    r.expect_error(429, "RATE_LIMITED");
}

// ---- 11. Raw components ----------------------------------------------------------------

#[tokio::test]
async fn raw_components_are_downloads_that_run_nothing() {
    let s = TestServer::start().await;
    let mut body = skill("html", "Has a page.");
    body["components"] = json!([{
        "logical_path": "assets/page.html",
        "type": "document",
        "content": "<script>alert(document.cookie)</script>",
    }]);
    let saved = s.save(&s.admin_key, body).await;
    let revision = saved.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s
        .http
        .get(format!(
            "{}/api/v1/skills/html/revisions/{revision}/resources/assets/page.html?raw=true",
            s.url
        ))
        .bearer_auth(&s.admin_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers();
    assert_eq!(h["x-content-type-options"], "nosniff");
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("sandbox") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert_eq!(
        h["content-disposition"],
        "attachment; filename=\"page.html\""
    );
}
