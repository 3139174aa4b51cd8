//! Issue #23, the knobs the fixes brought: password-hashing slots, the operator's unlock,
//! per-account quotas and write rate, registrations in all (`Service::with_budgets_changed`).
//! The regression tests that need nothing new of the server's API are in `hardening.rs`.

mod common;

use common::browser::Browser;
use common::{Reply, ServeOptions, TestServer, skill};
use serde_json::{Value, json};
use std::time::Duration;
use xmemo_server::throttle::LimiterConfig;
use xmemo_testkit::oauth::register;

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

fn memory(i: usize) -> Value {
    json!({"kind": "note", "content": format!("memory number {i}")})
}

/// Every password check runs in one of a few slots with one reused buffer each; a bounded
/// number may wait, the rest are refused at once (503, Retry-After), however many failed
/// sign-ins arrive (budgets off here, so only the slots stand in the way).
#[tokio::test]
async fn password_checks_run_in_bounded_slots_and_the_rest_are_refused_at_once() {
    let s = TestServer::start_configured(|svc| {
        svc.with_budgets_changed(|b| {
            b.auth_failures = LimiterConfig::disabled();
            b.login_pair = LimiterConfig::disabled();
            b.login_account = LimiterConfig::disabled();
            b.hashing = xmemo_server::password::HashingConfig {
                concurrency: 1,
                queue: 1,
            };
        })
    })
    .await;
    let hashing = s.service.password_hashing().clone();
    let held = hashing.occupy().await.expect("occupy the slot");
    let base = s.url.clone();
    let burst: Vec<_> = (0..16)
        .map(|i| {
            tokio::spawn(sign_in_status(
                base.clone(),
                format!("nobody-{i}"),
                "wrong password".into(),
                None,
            ))
        })
        .collect();
    // While the one slot is taken, one request may wait; the other fifteen are answered
    // at once, without any hash.
    let mut answered = Vec::new();
    let mut waiting = Vec::new();
    for t in burst {
        if t.is_finished() {
            answered.push(t.await.unwrap());
        } else {
            waiting.push(t);
        }
    }
    while answered.len() < 15 {
        let mut still = Vec::new();
        for t in waiting {
            if t.is_finished() {
                answered.push(t.await.unwrap());
            } else {
                still.push(t);
            }
        }
        waiting = still;
        tokio::task::yield_now().await;
    }
    assert_eq!(count(&answered, 503), 15, "{answered:?}");
    assert_eq!(hashing.stats().waiting, 1);
    assert_eq!(
        hashing.stats().running,
        0,
        "no hash ran beside the held slot"
    );
    drop(held);
    for t in waiting {
        assert_eq!(t.await.unwrap(), 401, "the one that waited was checked");
    }
    // Many more checks later: still one buffer for the one slot.
    let statuses = at_once(12, |i| {
        sign_in_status(base.clone(), format!("x{i}"), "wrong password".into(), None)
    })
    .await;
    assert!(count(&statuses, 401) >= 1, "{statuses:?}");
    let stats = hashing.stats();
    assert!(stats.peak_running <= 1, "{stats:?}");
    assert!(stats.buffers_allocated <= 1, "{stats:?}");
}

/// The 503 page of a full queue says when to come back.
#[tokio::test]
async fn a_refused_password_check_answers_503_with_retry_after() {
    let s = TestServer::start_configured(|svc| {
        svc.with_budgets_changed(|b| {
            b.hashing = xmemo_server::password::HashingConfig {
                concurrency: 1,
                queue: 0,
            };
        })
    })
    .await;
    let _held = s.service.password_hashing().occupy().await.unwrap();
    let mut b = Browser::new(&s.url);
    let page = b.sign_in("admin", "wrong password", "/login").await;
    assert_eq!(page.status, 503, "{}", page.body);
    assert_eq!(page.error_code().as_deref(), Some("SERVICE_UNAVAILABLE"));
    assert_eq!(page.headers["retry-after"], "1");
}

#[tokio::test]
async fn an_operator_unlock_restores_an_accounts_sign_in_on_every_node() {
    let s = TestServer::start_with(
        |svc| {
            svc.with_auth_throttle(LimiterConfig::disabled())
                .with_login_throttle(LimiterConfig::new(2, Duration::from_secs(600)))
        },
        proxied(),
    )
    .await;
    let password = admin_password(&s);
    for i in 0..3 {
        sign_in_status(
            s.url.clone(),
            "admin".into(),
            format!("guess {i}"),
            Some(format!("203.0.113.{i}")),
        )
        .await;
    }
    let new_place = Some("192.0.2.10".to_string());
    assert_eq!(
        sign_in_status(
            s.url.clone(),
            "admin".into(),
            password.clone(),
            new_place.clone()
        )
        .await,
        429
    );
    // The operator unlocks through another service on the same database (as `xmemo admin`
    // does): the server applies it at its next refusal.
    let operator = xmemo_server::Service::new(s.store.clone());
    let admin = operator.operator_for("admin").await.unwrap();
    operator
        .unlock_sign_in(&admin, &admin.account)
        .await
        .expect("unlock");
    assert_eq!(
        sign_in_status(s.url.clone(), "admin".into(), password, new_place).await,
        303
    );
    let audit = s
        .store
        .list_audit(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.action == "account.signin.unlock")
        .count();
    assert_eq!(audit, 1);
}

#[tokio::test]
async fn the_memory_quota_holds_under_a_burst() {
    let s = TestServer::start_configured(|svc| svc.with_budgets_changed(|b| b.quotas.memories = 3))
        .await;
    let key = s.account("writer", RW).await;
    let (http, url) = (s.http.clone(), s.url.clone());
    let replies = at_once(12, |i| {
        let (http, url, key) = (http.clone(), url.clone(), key.clone());
        async move {
            Reply::from(
                http.post(format!("{url}/api/v1/memories"))
                    .bearer_auth(key)
                    .json(&memory(i))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    })
    .await;
    let created = replies.iter().filter(|r| r.status.is_success()).count();
    assert_eq!(created, 3);
    let refused: Vec<_> = replies.iter().filter(|r| !r.status.is_success()).collect();
    assert_eq!(refused.len(), 9);
    for r in refused {
        let e = r.expect_error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["field"], "quota.memories", "{e}");
        assert_eq!(e["details"]["limit"], 3);
        assert_eq!(e["retryable"], false);
    }
    // Identical content is not a new memory and costs nothing.
    let kept = replies.iter().position(|r| r.status.is_success()).unwrap();
    s.post("/api/v1/memories", &key, memory(kept))
        .await
        .expect_ok();
}

#[tokio::test]
async fn the_bytes_and_skills_quotas_refuse_what_does_not_fit() {
    let s = TestServer::start_configured(|svc| {
        svc.with_budgets_changed(|b| {
            b.quotas.bytes = 200;
            b.quotas.skills = 1;
        })
    })
    .await;
    let key = s.account("writer", RW).await;
    let big = json!({"kind": "note", "content": "x".repeat(201)});
    let e = s.post("/api/v1/memories", &key, big).await;
    let e = e.expect_error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(e["details"]["field"], "quota.bytes");
    s.save(&key, skill("first", "short body")).await.expect_ok();
    // A new revision of it fits; a second skill does not.
    s.save(&key, skill("first", "short body, again"))
        .await
        .expect_ok();
    let e = s.save(&key, skill("second", "body")).await;
    assert_eq!(
        e.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "quota.skills"
    );
    let writer = s.service.operator_for("writer").await.unwrap();
    let (used, _) = s.service.usage(&writer).await.unwrap();
    assert_eq!(used.skills, 1);
    assert_eq!(used.memories, 0);
}

#[tokio::test]
async fn the_write_rate_holds_under_a_burst() {
    let s = TestServer::start_configured(|svc| {
        svc.with_budgets_changed(|b| b.writes = LimiterConfig::new(5, Duration::from_secs(600)))
    })
    .await;
    let key = s.account("writer", RW).await;
    let (http, url) = (s.http.clone(), s.url.clone());
    let replies = at_once(12, |i| {
        let (http, url, key) = (http.clone(), url.clone(), key.clone());
        async move {
            Reply::from(
                http.post(format!("{url}/api/v1/memories"))
                    .bearer_auth(key)
                    .json(&memory(i))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    })
    .await;
    assert_eq!(replies.iter().filter(|r| r.status.is_success()).count(), 5);
    for r in replies.iter().filter(|r| !r.status.is_success()) {
        r.expect_error(429, "RATE_LIMITED");
        assert!(r.headers.contains_key("retry-after"));
    }
    // Reads are not writes.
    s.get("/api/v1/memories?query=memory", &key)
        .await
        .expect_ok();
}

#[tokio::test]
async fn registrations_are_bounded_in_all_and_in_number() {
    let s = TestServer::start_configured(|svc| {
        svc.with_budgets_changed(|b| {
            b.registrations = LimiterConfig::disabled();
            b.registrations_global = LimiterConfig::new(3, Duration::from_secs(3600));
        })
    })
    .await;
    let body =
        json!({"client_name": "C", "redirect_uris": [CB], "token_endpoint_auth_method": "none"});
    let url = s.url.clone();
    let statuses: Vec<u16> = at_once(6, |_| {
        let (url, body) = (url.clone(), body.clone());
        async move { register(&url, body).await.status }
    })
    .await;
    assert_eq!(count(&statuses, 201), 3, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 3, "{statuses:?}");

    let s = TestServer::start_configured(|svc| {
        svc.with_budgets_changed(|b| b.max_registered_clients = 2)
    })
    .await;
    for _ in 0..2 {
        assert_eq!(register(&s.url, body.clone()).await.status, 201);
    }
    let full = register(&s.url, body.clone()).await;
    assert_eq!(full.status, 503, "{}", full.body);
    assert_eq!(full.body["error"], "temporarily_unavailable");
}
