//! The HTTP server under hostile clients (issue #10): connection timeouts, the connection cap,
//! oversized bodies refused before `100 Continue`, hyper's own parse-error answers in the SPEC
//! shape, ambiguous credentials, and throttled credential guessing.
//!
//! Raw TCP clients are used where a well-behaved HTTP client would refuse to misbehave. Waits
//! are bounded (a few seconds past the configured timeouts) and assert that something
//! happens, never how fast.

mod common;

use common::{ServeOptions, TestServer};
use serde_json::Value;
use std::net::IpAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xmemo_server::app::HttpConfig;
use xmemo_server::throttle::LimiterConfig;

/// Longest a test waits for something that must happen.
const BOUND: Duration = Duration::from_secs(10);

fn quick_timeouts() -> HttpConfig {
    HttpConfig {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(2),
        max_connections: 64,
    }
}

fn long_timeouts(max_connections: usize) -> HttpConfig {
    HttpConfig {
        header_timeout: Duration::from_secs(120),
        body_timeout: Duration::from_secs(120),
        idle_timeout: Duration::from_secs(120),
        max_connections,
    }
}

async fn server(http: HttpConfig) -> TestServer {
    TestServer::start_with(
        |service| service,
        ServeOptions {
            http,
            ..ServeOptions::default()
        },
    )
    .await
}

async fn connect(s: &TestServer) -> TcpStream {
    TcpStream::connect(s.url.trim_start_matches("http://"))
        .await
        .expect("connect")
}

struct RawResponse {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}\n{}",
                String::from_utf8_lossy(&self.body),
                self.head
            )
        })
    }

    /// The SPEC error object, checked for shape.
    fn spec_error(&self, code: &str) -> Value {
        let body = self.json();
        let err = &body["error"];
        assert_eq!(err["code"], code, "{body}");
        assert!(
            err["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert!(err["retryable"].is_boolean(), "{body}");
        assert_eq!(
            self.header("content-type").as_deref(),
            Some("application/json"),
            "{}",
            self.head
        );
        err.clone()
    }
}

/// Reads one response (a body only as long as its `Content-Length`) within [`BOUND`].
async fn read_response(stream: &mut TcpStream) -> RawResponse {
    tokio::time::timeout(BOUND, async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = stream.read(&mut chunk).await.expect("read head");
            assert!(
                n > 0,
                "connection closed before a response: {:?}",
                String::from_utf8_lossy(&buf)
            );
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {head}"));
        let mut response = RawResponse {
            status,
            head,
            body: buf[head_end..].to_vec(),
        };
        let length: usize = response
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while response.body.len() < length {
            let n = stream.read(&mut chunk).await.expect("read body");
            assert!(n > 0, "connection closed inside the body");
            response.body.extend_from_slice(&chunk[..n]);
        }
        response.body.truncate(length);
        response
    })
    .await
    .expect("a response within the bound")
}

/// Whether the server closes `stream` within [`BOUND`] (whatever else it sends first).
async fn closed_within_bound(stream: &mut TcpStream) -> bool {
    let mut chunk = [0u8; 4096];
    tokio::time::timeout(BOUND, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await
    .is_ok()
}

fn healthz_request() -> &'static [u8] {
    b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
}

#[tokio::test]
async fn slow_heads_idle_connections_and_stalled_bodies_are_closed() {
    let s = server(quick_timeouts()).await;

    // A head that never completes (slowloris).
    let mut slow_head = connect(&s).await;
    slow_head
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .expect("write");
    // A connection that never sends a byte.
    let mut silent = connect(&s).await;
    // A kept-alive connection after one complete exchange.
    let mut kept = connect(&s).await;
    kept.write_all(healthz_request()).await.expect("write");
    assert_eq!(read_response(&mut kept).await.status, 200);
    // A body that stops after 10 of its 1,000 declared bytes.
    let mut stalled = connect(&s).await;
    stalled
        .write_all(
            format!(
                "POST /api/v1/skills HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
                 Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"slug\":\"",
                s.admin_key
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    let answer = read_response(&mut stalled).await;
    assert_eq!(answer.status, 422, "{}", answer.head);
    let err = answer.spec_error("VALIDATION_ERROR");
    assert_eq!(err["details"]["reason"], "body_timeout", "{err}");

    for (what, conn) in [
        ("an incomplete head", &mut slow_head),
        ("a silent connection", &mut silent),
        ("an idle keep-alive connection", &mut kept),
        ("a stalled body", &mut stalled),
    ] {
        assert!(
            closed_within_bound(conn).await,
            "{what} must be closed by the server"
        );
    }
    // Nothing was saved, and the server still serves.
    assert_eq!(s.counts().await.get("skills").copied().unwrap_or(0), 0);
    let health = s.http.get(format!("{}/healthz", s.url)).send().await;
    assert_eq!(health.expect("healthz").status().as_u16(), 200);
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_100_continue() {
    let s = TestServer::start().await;
    let port = s.url.rsplit(':').next().expect("port").to_string();
    let head = |path: &str, extra: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\n{extra}Content-Length: 20000000\r\n\
             Expect: 100-continue\r\n\r\n",
            s.admin_key
        )
    };

    // REST: the first (and only) answer is the 413, in the SPEC shape.
    let mut c = connect(&s).await;
    c.write_all(head("/api/v1/skills", "").as_bytes())
        .await
        .expect("write");
    let answer = read_response(&mut c).await;
    assert_eq!(
        answer.status, 413,
        "expected 413 at once, not `100 Continue`: {}",
        answer.head
    );
    let err = answer.spec_error("PAYLOAD_TOO_LARGE");
    assert_eq!(
        err["details"]["limit"],
        xmemo_server::http::limits::BODY_LIMIT_BYTES
    );
    // The body was never read, so the connection cannot carry another request.
    assert!(closed_within_bound(&mut c).await);

    // MCP: the same, as a JSON-RPC error carrying the SPEC object.
    let mut c = connect(&s).await;
    c.write_all(head("/mcp", "Accept: application/json, text/event-stream\r\n").as_bytes())
        .await
        .expect("write");
    let answer = read_response(&mut c).await;
    assert_eq!(answer.status, 413, "{}", answer.head);
    let body = answer.json();
    assert_eq!(
        body["error"]["data"]["error"]["code"], "PAYLOAD_TOO_LARGE",
        "{body}"
    );

    // A small body with `Expect: 100-continue` still gets its `100 Continue`.
    let mut c = connect(&s).await;
    let body = r#"{"slug":"tiny","name":"Tiny","description":"d","instruction_body":"b"}"#;
    c.write_all(
        format!(
            "POST /api/v1/skills HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
            s.admin_key,
            body.len()
        )
        .as_bytes(),
    )
    .await
    .expect("write");
    assert_eq!(read_response(&mut c).await.status, 100);
    c.write_all(body.as_bytes()).await.expect("write body");
    assert_eq!(read_response(&mut c).await.status, 201);
}

#[tokio::test]
async fn at_the_cap_the_longest_idle_connection_makes_room() {
    let s = server(long_timeouts(8)).await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(connect(&s).await);
    }
    // A ninth connection is still served: a health check answers...
    let mut probe = connect(&s).await;
    probe.write_all(healthz_request()).await.expect("write");
    assert_eq!(read_response(&mut probe).await.status, 200);
    // ...because the longest-idle connection was closed to make room (its idle timeout is
    // two minutes away).
    assert!(
        closed_within_bound(&mut idle[0]).await,
        "the oldest idle connection must be closed at the cap"
    );
}

#[tokio::test]
async fn at_the_cap_with_every_connection_busy_a_new_one_gets_503() {
    let s = server(long_timeouts(4)).await;
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut c = connect(&s).await;
        // A request whose handler waits for a body that does not come: provably busy once
        // the server asked for the body with `100 Continue`.
        c.write_all(
            format!(
                "POST /api/v1/skills HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
                 Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n",
                s.admin_key
            )
            .as_bytes(),
        )
        .await
        .expect("write");
        assert_eq!(read_response(&mut c).await.status, 100);
        busy.push(c);
    }
    let mut refused = connect(&s).await;
    let answer = read_response(&mut refused).await;
    assert_eq!(answer.status, 503, "{}", answer.head);
    assert_eq!(answer.header("retry-after").as_deref(), Some("1"));
    let err = answer.spec_error("SERVICE_UNAVAILABLE");
    assert_eq!(err["retryable"], true);
    assert!(closed_within_bound(&mut refused).await);
}

#[tokio::test]
async fn requests_hyper_cannot_parse_are_answered_in_the_spec_shape() {
    let s = TestServer::start().await;
    let many_headers: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "a 100 KB query",
            format!(
                "GET /healthz?q={} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                "a".repeat(100_000)
            ),
            414,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "150 header fields",
            format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{many_headers}\r\n"),
            431,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "a space in a header name",
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n".into(),
            400,
            "VALIDATION_ERROR",
        ),
        (
            "a control byte in a header value",
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Ctl: a\u{1}b\r\n\r\n".into(),
            400,
            "VALIDATION_ERROR",
        ),
        (
            "two different Content-Lengths",
            "POST /api/v1/skills HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"
                .into(),
            400,
            "VALIDATION_ERROR",
        ),
        (
            "a negative Content-Length",
            "POST /api/v1/skills HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n".into(),
            400,
            "VALIDATION_ERROR",
        ),
    ];
    for (what, request, status, code) in cases {
        let mut c = connect(&s).await;
        c.write_all(request.as_bytes()).await.expect("write");
        let answer = read_response(&mut c).await;
        assert_eq!(answer.status, status, "{what}: {}", answer.head);
        assert_eq!(
            answer.header("connection").as_deref(),
            Some("close"),
            "{what}"
        );
        let err = answer.spec_error(code);
        assert_eq!(err["retryable"], false, "{what}");
        assert!(
            closed_within_bound(&mut c).await,
            "{what}: connection closed"
        );
    }

    // After a good request on the same connection, a bad one is answered the same way.
    let mut c = connect(&s).await;
    c.write_all(healthz_request()).await.expect("write");
    let first = read_response(&mut c).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.json()["status"], "ok");
    c.write_all(b"GET /healthz HTTP/1.1\r\nBad Header: x\r\n\r\n")
        .await
        .expect("write");
    let second = read_response(&mut c).await;
    assert_eq!(second.status, 400, "{}", second.head);
    second.spec_error("VALIDATION_ERROR");
}

#[tokio::test]
async fn two_credentials_are_refused_not_resolved() {
    let s = TestServer::start().await;
    let other = s.account("bob", &["memory:read"]).await;
    let url = format!("{}/api/v1/workspaces", s.url);
    let send = |headers: Vec<(&'static str, String)>| {
        let mut req = s.http.get(&url);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        async move { common::Reply::from(req.send().await.expect("request")).await }
    };
    let bearer = |k: &str| format!("Bearer {k}");
    for (what, headers) in [
        (
            "Bearer and X-API-Key of two accounts",
            vec![
                ("authorization", bearer(&s.admin_key)),
                ("x-api-key", other.clone()),
            ],
        ),
        (
            "Bearer and a bogus X-API-Key",
            vec![
                ("authorization", bearer(&s.admin_key)),
                ("x-api-key", "nonsense".to_string()),
            ],
        ),
        (
            "the same key twice",
            vec![
                ("authorization", bearer(&s.admin_key)),
                ("x-api-key", s.admin_key.clone()),
            ],
        ),
        (
            "two Authorization headers",
            vec![
                ("authorization", bearer(&s.admin_key)),
                ("authorization", bearer(&other)),
            ],
        ),
        (
            "two X-API-Key headers",
            vec![
                ("x-api-key", s.admin_key.clone()),
                ("x-api-key", other.clone()),
            ],
        ),
    ] {
        let reply = send(headers).await;
        let err = reply.expect_error(401, "AUTH_REQUIRED");
        assert!(
            err["message"]
                .as_str()
                .is_some_and(|m| m.contains("ambiguous")),
            "{what}: {err}"
        );
    }
    // One credential still works, either way; a non-Bearer Authorization (a proxy's) does
    // not hide an X-API-Key.
    send(vec![("authorization", bearer(&s.admin_key))])
        .await
        .expect_ok();
    send(vec![("x-api-key", other.clone())]).await.expect_ok();
    send(vec![
        ("authorization", "Basic cHJveHk6cHc=".into()),
        ("x-api-key", other.clone()),
    ])
    .await
    .expect_ok();

    // MCP authenticates through the same extractor.
    let resp = s
        .http
        .post(format!("{}/mcp", s.url))
        .header("authorization", bearer(&s.admin_key))
        .header("x-api-key", other.clone())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .expect("mcp");
    let reply = common::Reply::from(resp).await;
    assert_eq!(reply.status.as_u16(), 401, "{}", reply.body);
    assert_eq!(
        reply.body["error"]["data"]["error"]["code"],
        "AUTH_REQUIRED"
    );
}

#[tokio::test]
async fn failed_authentication_is_throttled_per_client_address() {
    let proxy: IpAddr = "127.0.0.1".parse().expect("ip");
    let s = TestServer::start_with(
        |service| service.with_auth_throttle(LimiterConfig::new(5, Duration::from_secs(600))),
        ServeOptions {
            trusted_proxies: vec![proxy],
            ..ServeOptions::default()
        },
    )
    .await;
    let url = format!("{}/api/v1/workspaces", s.url);
    let from = |client: &str, key: &str| {
        let req = s
            .http
            .get(&url)
            .bearer_auth(key)
            .header("x-forwarded-for", client.to_string());
        async move { common::Reply::from(req.send().await.expect("request")).await }
    };
    let guesser = "203.0.113.7";
    for i in 0..5 {
        from(guesser, &format!("xmk_guess{i}"))
            .await
            .expect_error(401, "AUTH_REQUIRED");
    }
    // The budget is spent: refused before any lookup, even with a valid key.
    for key in ["xmk_guess-more", s.admin_key.as_str()] {
        let reply = from(guesser, key).await;
        let err = reply.expect_error(429, "RATE_LIMITED");
        assert_eq!(err["retryable"], true);
        let secs = err["details"]["retry_after_seconds"]
            .as_u64()
            .expect("retry_after_seconds");
        assert!(secs >= 1);
        let header: u64 = reply
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .expect("Retry-After header");
        assert_eq!(header, secs);
    }
    // /mcp is guarded by the same budget.
    let resp = s
        .http
        .post(format!("{}/mcp", s.url))
        .bearer_auth(&s.admin_key)
        .header("x-forwarded-for", guesser)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .expect("mcp");
    let reply = common::Reply::from(resp).await;
    // /mcp answers in JSON-RPC, the SPEC error object in `data`.
    assert_eq!(reply.status.as_u16(), 429, "{}", reply.body);
    assert_eq!(reply.body["error"]["data"]["error"]["code"], "RATE_LIMITED");
    assert!(reply.headers.contains_key("retry-after"));

    // Another address is not affected, and its successes are not slowed or counted.
    for _ in 0..10 {
        from("198.51.100.20", &s.admin_key).await.expect_ok();
    }
    from("198.51.100.20", "xmk_wrong")
        .await
        .expect_error(401, "AUTH_REQUIRED");
    // A request without any credential is told how to authenticate, not throttled.
    let reply = common::Reply::from(
        s.http
            .get(&url)
            .header("x-forwarded-for", guesser)
            .send()
            .await
            .expect("request"),
    )
    .await;
    reply.expect_error(401, "AUTH_REQUIRED");
}

#[tokio::test]
async fn without_a_trusted_proxy_forwarded_for_is_ignored() {
    let s = TestServer::start_configured(|service| {
        service.with_auth_throttle(LimiterConfig::new(3, Duration::from_secs(600)))
    })
    .await;
    let url = format!("{}/api/v1/workspaces", s.url);
    // Each guess claims another address; all come from 127.0.0.1 and count together.
    for i in 0..3 {
        let resp = s
            .http
            .get(&url)
            .bearer_auth(format!("xmk_guess{i}"))
            .header("x-forwarded-for", format!("192.0.2.{i}"))
            .send()
            .await
            .expect("request");
        common::Reply::from(resp)
            .await
            .expect_error(401, "AUTH_REQUIRED");
    }
    let resp = s
        .http
        .get(&url)
        .bearer_auth(&s.admin_key)
        .header("x-forwarded-for", "192.0.2.99")
        .send()
        .await
        .expect("request");
    common::Reply::from(resp)
        .await
        .expect_error(429, "RATE_LIMITED");
}

/// A request answered before its body arrived (here `/mcp` refusing a missing credential as
/// soon as it has the head) leaves that body on the wire: the answer must say the connection
/// closes, or a client that sends its next request on it gets no answer at all (the Python
/// MCP SDK did, now and then, at the start of its OAuth flow).
#[tokio::test]
async fn an_answer_sent_before_the_body_arrived_closes_the_connection() {
    let s = server(HttpConfig::default()).await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut stream = connect(&s).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    let early = read_response(&mut stream).await;
    assert_eq!(early.status, 401, "{}", early.head);
    assert_eq!(
        early.header("connection").as_deref(),
        Some("close"),
        "{}",
        early.head
    );
    // The client that sends the body and its next request anyway sees the close.
    let _ = stream.write_all(body).await;
    let _ = stream.write_all(healthz_request()).await;
    assert!(closed_within_bound(&mut stream).await);

    // The same request sent whole keeps its connection for the next one.
    let mut stream = connect(&s).await;
    let mut whole = head.into_bytes();
    whole.extend_from_slice(body);
    stream.write_all(&whole).await.expect("request");
    let refused = read_response(&mut stream).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("connection"), None, "{}", refused.head);
    stream.write_all(healthz_request()).await.expect("next");
    assert_eq!(read_response(&mut stream).await.status, 200);
}
