//! Signing in (SPEC §7 console login): the first-start password, the form and its CSRF
//! defences, session cookies, rotation at sign-in, sign-out, expiry, and failed sign-ins
//! limited per address and per account. A real server over HTTP, a cookie-keeping client.

mod common;

use common::browser::Browser;
use common::{ServeOptions, TestServer};
use std::sync::Arc;
use std::time::Duration;
use xmemo_server::service::clock::ManualClock;
use xmemo_server::service::signin::SessionConfig;
use xmemo_server::throttle::LimiterConfig;

fn admin_password(s: &TestServer) -> String {
    let path = s.data_dir.join("admin.password");
    let text = std::fs::read_to_string(&path).expect("admin.password");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "admin.password is private");
    }
    text.trim().to_string()
}

async fn post(b: &mut Browser, fields: &[(&'static str, String)]) -> common::browser::Page {
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    b.post_form("/login", &pairs).await
}

#[tokio::test]
async fn the_first_start_password_signs_admin_in_and_out() {
    let s = TestServer::start().await;
    let password = admin_password(&s);
    assert_eq!(password.len(), 24);
    let mut b = Browser::new(&s.url);

    let form = b.get("/login").await;
    assert_eq!(form.status, 200);
    let csp = form.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("script-src"), "no script may run: {csp}");
    assert_eq!(form.headers["x-frame-options"], "DENY");
    assert_eq!(form.headers["cache-control"], "no-store");
    assert!(!form.body.contains("<script"), "pages carry no script");
    assert!(
        !form.body.contains("http://") && !form.body.contains("https://"),
        "nothing from elsewhere"
    );

    let signed = b.sign_in("admin", &password, "/login").await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    assert_eq!(signed.location(), "/login");
    let cookie = signed
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("xmemo_session="))
        .expect("session cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "plain http public URL: {cookie}"
    );
    let secret = b.session().cloned().expect("session");
    // Only the hash of the cookie is stored.
    let stored = s
        .store
        .find_session(&xmemo_server::auth::hash_key(&secret))
        .await
        .unwrap();
    assert!(stored.is_some());
    assert!(s.store.find_session(&secret).await.unwrap().is_none());

    let me = b.get("/login").await;
    assert!(
        me.body
            .contains("signed in as <strong>Administrator</strong>"),
        "{}",
        me.body
    );
    let token = me.field("csrf").expect("sign-out form token");

    // Sign-out needs the session's form token.
    let forged = b.post_form("/logout", &[("csrf", "forged")]).await;
    assert_eq!(forged.status, 403);
    assert!(
        b.get("/login").await.body.contains("Sign out"),
        "still signed in"
    );
    let out = b.post_form("/logout", &[("csrf", &token)]).await;
    assert_eq!(out.status, 303);
    assert!(b.session().is_none(), "the cookie is cleared");
    assert!(
        s.store
            .find_session(&xmemo_server::auth::hash_key(&secret))
            .await
            .unwrap()
            .is_none()
    );
    // The old cookie is dead even if a client kept it.
    b.cookies.insert("xmemo_session".into(), secret);
    assert!(b.get("/login").await.body.contains("<h1>Sign in</h1>"));
}

#[tokio::test]
async fn wrong_passwords_and_forged_forms_sign_nobody_in() {
    let s = TestServer::start().await;
    let password = admin_password(&s);
    let mut b = Browser::new(&s.url);
    let wrong = b.sign_in("admin", "not the password", "/login").await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.error_code().as_deref(), Some("AUTH_REQUIRED"));
    let unknown = b.sign_in("nobody", "whatever1", "/login").await;
    assert_eq!(unknown.status, 401);
    assert_eq!(
        wrong.body.replace("admin", ""),
        unknown.body.replace("nobody", ""),
        "an unknown account reads like a wrong password"
    );
    assert!(b.session().is_none());

    // Login CSRF: a form without this browser's form cookie, or from another site, is refused
    // even with the right password.
    let form = b.get("/login").await;
    let csrf = form.field("csrf").unwrap();
    let fields = |c: &str| {
        vec![
            ("handle", "admin".to_string()),
            ("password", password.clone()),
            ("next", "/login".to_string()),
            ("csrf", c.to_string()),
        ]
    };
    let forged = post(&mut b, &fields("not-the-form-value")).await;
    assert_eq!(forged.status, 403);
    assert_eq!(forged.error_code().as_deref(), Some("PERMISSION_DENIED"));
    b.origin = Some("http://evil.example".into());
    let cross = post(&mut b, &fields(&csrf)).await;
    assert_eq!(cross.status, 403, "cross-origin form post");
    b.origin = Some(s.url.clone());
    let mut stranger = Browser::new(&s.url);
    let no_cookie = post(&mut stranger, &fields(&csrf)).await;
    assert_eq!(no_cookie.status, 403, "the form value alone is not enough");
    assert!(b.session().is_none() && stranger.session().is_none());
    assert_eq!(s.counts().await["web_sessions"], 0);

    // And the honest form still works.
    let ok = post(&mut b, &fields(&csrf)).await;
    assert_eq!(ok.status, 303, "{}", ok.body);
    assert!(b.session().is_some());
}

#[tokio::test]
async fn signing_in_again_rotates_the_session() {
    let s = TestServer::start().await;
    let password = admin_password(&s);
    let mut b = Browser::new(&s.url);
    b.sign_in("admin", &password, "/login").await;
    let first = b.session().cloned().unwrap();
    // A browser that still holds its session cookie submits the sign-in form again (a second
    // tab): the session it held is replaced, not kept.
    b.cookies.remove("xmemo_session");
    let form = b.get("/login").await;
    b.cookies.insert("xmemo_session".into(), first.clone());
    let csrf = form.field("csrf").unwrap();
    let again = post(
        &mut b,
        &[
            ("handle", "admin".into()),
            ("password", password.clone()),
            ("next", "/login".into()),
            ("csrf", csrf),
        ],
    )
    .await;
    assert_eq!(again.status, 303);
    let second = b.session().cloned().unwrap();
    assert_ne!(first, second, "a new session id at every sign-in");
    assert!(
        s.service.session(&first).await.unwrap().is_none(),
        "the old session is gone"
    );
    assert!(s.service.session(&second).await.unwrap().is_some());
    assert_eq!(s.counts().await["web_sessions"], 1);
    // A session cookie planted before sign-in (fixation) never becomes a signed-in session.
    let mut victim = Browser::new(&s.url);
    victim
        .cookies
        .insert("xmemo_session".into(), "planted-by-attacker".into());
    victim.sign_in("admin", &password, "/login").await;
    assert_ne!(
        victim.session().map(String::as_str),
        Some("planted-by-attacker")
    );
}

#[tokio::test]
async fn sessions_expire_when_idle_and_at_their_absolute_end() {
    const SIGNED_OUT: &str = "<h1>Sign in</h1>";
    let clock = Arc::new(ManualClock::default());
    let shared = clock.clone();
    let s = TestServer::start_configured(move |svc| {
        svc.with_clock(shared).with_session_config(SessionConfig {
            idle: Duration::from_secs(600),
            absolute: Duration::from_secs(3600),
        })
    })
    .await;
    let password = admin_password(&s);
    let mut b = Browser::new(&s.url);
    b.sign_in("admin", &password, "/login").await;
    assert!(b.get("/login").await.body.contains("Sign out"));
    clock.advance(Duration::from_secs(599));
    assert!(
        b.get("/login").await.body.contains("Sign out"),
        "still within the idle time"
    );
    // That use moved the idle expiry on: 599 s more is still within it.
    clock.advance(Duration::from_secs(599));
    assert!(
        b.get("/login").await.body.contains("Sign out"),
        "used, so kept"
    );
    clock.advance(Duration::from_secs(601));
    assert!(
        b.get("/login").await.body.contains(SIGNED_OUT),
        "idle too long"
    );

    // Used all the time, it still ends at its absolute expiry.
    let mut b = Browser::new(&s.url);
    b.sign_in("admin", &password, "/login").await;
    for _ in 0..6 {
        clock.advance(Duration::from_secs(590));
        assert!(b.get("/login").await.body.contains("Sign out"));
    }
    clock.advance(Duration::from_secs(590));
    assert!(
        b.get("/login").await.body.contains(SIGNED_OUT),
        "the session outlived its absolute expiry"
    );
}

#[tokio::test]
async fn failed_sign_ins_are_limited_per_address() {
    let s = TestServer::start_configured(|svc| {
        svc.with_auth_throttle(LimiterConfig::new(3, Duration::from_secs(600)))
    })
    .await;
    let password = admin_password(&s);
    let mut b = Browser::new(&s.url);
    for handle in ["admin", "bob", "carol"] {
        assert_eq!(
            b.sign_in(handle, "wrong password", "/login").await.status,
            401
        );
    }
    let limited = b.sign_in("admin", &password, "/login").await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert_eq!(limited.error_code().as_deref(), Some("RATE_LIMITED"));
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert!(
        b.session().is_none(),
        "not even the right password gets through"
    );
    // The same budget guards API keys from this address.
    let key = s.get("/api/v1/me", &s.admin_key).await;
    key.expect_error(429, "RATE_LIMITED");
}

#[tokio::test]
async fn failed_sign_ins_are_limited_per_account() {
    let proxy: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let s = TestServer::start_with(
        |svc| svc.with_login_throttle(LimiterConfig::new(2, Duration::from_secs(600))),
        ServeOptions {
            trusted_proxies: vec![proxy],
            ..Default::default()
        },
    )
    .await;
    let password = admin_password(&s);
    s.account("bob", &["memory:read"]).await;
    let bob = s.service.operator_for("bob").await.unwrap();
    s.service
        .set_password(&bob, &bob.account, "bob's password")
        .await
        .unwrap();
    // Each attempt from another address: only the account's budget can stop them.
    for (i, handle) in ["admin", "ADMIN"].iter().enumerate() {
        let mut b = Browser::new(&s.url);
        b.extra
            .push(("x-forwarded-for".into(), format!("198.51.100.{i}")));
        assert_eq!(
            b.sign_in(handle, "wrong password", "/login").await.status,
            401
        );
    }
    let mut b = Browser::new(&s.url);
    b.extra
        .push(("x-forwarded-for".into(), "198.51.100.9".into()));
    let limited = b.sign_in("admin", &password, "/login").await;
    assert_eq!(limited.status, 429);
    assert!(limited.headers.contains_key("retry-after"));
    // Another account is not affected.
    let other = b.sign_in("bob", "bob's password", "/login").await;
    assert_eq!(other.status, 303, "{}", other.body);
}

#[tokio::test]
async fn https_public_urls_get_secure_host_only_cookies() {
    let s = TestServer::start_with(
        |svc| svc,
        ServeOptions {
            public_url: Some("https://memory.example.com".into()),
            ..Default::default()
        },
    )
    .await;
    let mut b = Browser::new(&s.url);
    let form = b.get("/login").await;
    let cookie = form.set_cookies().join("\n");
    assert!(cookie.starts_with("__Host-xmemo_login="), "{cookie}");
    assert!(cookie.contains("; Secure"), "{cookie}");
    // The browser's Origin must be the public one.
    let csrf = form.field("csrf").unwrap();
    let password = admin_password(&s);
    let refused = b
        .post_form(
            "/login",
            &[
                ("handle", "admin"),
                ("password", &password),
                ("next", "/login"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(
        refused.status, 403,
        "Origin {} is not the public origin",
        s.url
    );
    b.origin = Some("https://memory.example.com".into());
    let ok = b
        .post_form(
            "/login",
            &[
                ("handle", "admin"),
                ("password", &password),
                ("next", "/login"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(ok.status, 303, "{}", ok.body);
    let session = ok
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("__Host-xmemo_session="))
        .expect("session");
    assert!(
        session.contains("; Secure") && session.contains("HttpOnly"),
        "{session}"
    );
}
