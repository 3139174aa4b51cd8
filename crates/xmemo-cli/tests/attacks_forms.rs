//! Issue #29, defects 1 and 3, through the real binary: a console form or a SKILL.md upload
//! costs the server memory in proportion to what its route accepts, and a refused upload
//! spends the account's write budget.
//!
//! - Defect 1: `POST /console/preview` took 16 MiB and parsed the whole urlencoded body into
//!   a vector of pairs before it checked the session: `a&` × 8,388,544 with no cookie held
//!   hundreds of MiB. Now a post is checked for its session from its head, before any of its
//!   body is read; the preview takes what the longest instruction body needs, and a form of
//!   more fields than any console form has is refused before any field is decoded.
//! - Defect 3: a SKILL.md upload of 16 MiB of newlines was parsed (a vector entry per line)
//!   before any size rule, and refusals spent no write budget. Now a SKILL.md larger than any
//!   SKILL.md could be is refused before it is read or parsed, and a refused import spends a
//!   write.
//!
//! The attacks go over plain TCP: a server that answers before reading a body closes the
//! connection, which an HTTP client may report as a reset instead of the answer. Each test
//! measures the server process: its peak resident memory (an unauthenticated request: at
//! most +16 MiB; an authenticated one: at most 4× the bytes in flight), its memory 10 s
//! later (within 32 MiB of the start), and `/healthz` meanwhile (under 1 s: the machines
//! running the tests are shared; the benchmark reports the real figure).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;
use xmemo_testkit::browser::Browser;
use xmemo_testkit::{HealthProbe, ServerProcess};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");
const MIB: u64 = 1024 * 1024;
/// The attack of the issue: `a&` repeated up to the old 16 MiB upload limit.
const PAIRS_16_MIB: usize = 8_388_544;
/// The preview's body limit (`http/limits.rs`, PREVIEW_LIMIT_BYTES): 3 × 65,536 + 1,024.
const PREVIEW_LIMIT: usize = 3 * 65_536 + 1024;
/// The largest SKILL.md read (`xmemo_core::package::SKILL_MD_MAX_BYTES`).
const SKILL_MD_MAX: usize = 65_536 + 65_536 + 1024;

struct Target {
    _dir: tempfile::TempDir,
    server: ServerProcess,
    admin_key: String,
    password: String,
}

fn target(extra: &[&str]) -> Target {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut args = vec!["--data-dir", data.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(BIN, &args, &[]);
    let read = |name: &str| {
        std::fs::read_to_string(data.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .trim()
            .to_string()
    };
    Target {
        admin_key: read("admin.key"),
        password: read("admin.password"),
        _dir: dir,
        server,
    }
}

impl Target {
    fn address(&self) -> String {
        self.server.url.trim_start_matches("http://").to_string()
    }

    /// A signed-in browser and its form token.
    async fn signed_in(&self) -> (Browser, String) {
        let mut b = Browser::new(&self.server.url);
        let page = b.sign_in("admin", &self.password, "/console").await;
        assert_eq!(page.status.as_u16(), 303, "{}", page.body);
        let editor = b.get("/console/skills/new").await;
        let csrf = editor.field("csrf").expect("the editor's form token");
        (b, csrf)
    }
}

/// The `Cookie` header of a browser.
fn cookie_of(b: &Browser) -> String {
    b.cookies
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One POST over its own TCP connection.
#[derive(Clone)]
struct Post {
    path: String,
    headers: Vec<(String, String)>,
    body: Arc<Vec<u8>>,
    /// Sent with `Transfer-Encoding: chunked` (no `Content-Length`).
    chunked: bool,
}

impl Post {
    fn new(path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Post {
        Post {
            path: path.to_string(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Arc::new(body),
            chunked: false,
        }
    }

    fn chunked(self) -> Post {
        Post {
            chunked: true,
            ..self
        }
    }

    fn head(&self, address: &str, expect_continue: bool) -> String {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\n",
            self.path,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if expect_continue {
            head.push_str("Expect: 100-continue\r\n");
        }
        head.push_str("\r\n");
        head
    }

    /// Sends the head and the body (from another thread, in 64 KiB pieces, stopping when the
    /// server closes) and reads the status line and headers of the answer; `None` when the
    /// connection ended before one (the server answered early and the reset overtook it).
    fn send(&self, address: &str) -> Option<(u16, String)> {
        if self.chunked {
            return Some(self.send_chunked(address));
        }
        let stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let mut writer = stream.try_clone().expect("clone");
        writer
            .write_all(self.head(address, false).as_bytes())
            .expect("head");
        let body = Arc::clone(&self.body);
        let sender = std::thread::spawn(move || {
            for piece in body.chunks(64 * 1024) {
                if writer.write_all(piece).is_err() {
                    break;
                }
            }
        });
        let answer = read_head(&stream);
        drop(stream);
        let _ = sender.join();
        answer
    }

    /// Sends the body in chunks (`Transfer-Encoding: chunked`, so the server cannot tell its
    /// size from the head and reads it to its end) and reads the whole answer: its status
    /// and body.
    fn send_chunked(&self, address: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let mut head = format!("POST {} HTTP/1.1\r\nHost: {address}\r\n", self.path);
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        let mut request = head.into_bytes();
        for piece in self.body.chunks(64 * 1024) {
            request.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            request.extend_from_slice(piece);
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"0\r\n\r\n");
        stream.write_all(&request).expect("request");
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut stream, &mut answer).expect("answer");
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {answer}"));
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    /// Sends the head with `Expect: 100-continue` and no body: the first answer's status and
    /// headers. A server that reads the body first asks for it (`100`); one that checks the
    /// head first answers at once.
    fn first_answer_to_head(&self, address: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        stream
            .write_all(self.head(address, true).as_bytes())
            .expect("head");
        read_head(&stream).expect("an answer to the head alone")
    }
}

/// The status and the head of an answer.
fn read_head(stream: &TcpStream) -> Option<(u16, String)> {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => head.push_str(&line),
        }
    }
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, head))
}

/// What an attack cost the server.
#[derive(Debug)]
struct Cost {
    start_kib: u64,
    peak_kib: u64,
    settled_kib: u64,
    slowest_health: Duration,
    health_answers: u64,
}

impl Cost {
    fn peak_growth(&self) -> u64 {
        self.peak_kib.saturating_sub(self.start_kib) * 1024
    }
}

/// Sends `streams` connections at once, each sending `posts` one after the other, and
/// measures. The answers (`None`: reset before one), in no particular order.
fn attack(t: &Target, streams: usize, posts: &[Post]) -> (Vec<Option<u16>>, Cost) {
    std::thread::sleep(Duration::from_millis(500));
    let start_kib = t.server.rss().now_kib;
    t.server.reset_peak_rss();
    let probe = HealthProbe::start(&t.server.url);
    let address = t.address();
    let answers: Vec<Option<u16>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..streams)
            .map(|_| {
                let address = address.clone();
                scope.spawn(move || {
                    posts
                        .iter()
                        .map(|p| p.send(&address).map(|(status, _)| status))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("attack thread"))
            .collect()
    });
    // The probe keeps running a moment after the answers, for work left behind them.
    std::thread::sleep(Duration::from_millis(300));
    let seen = probe.finish();
    let peak_kib = t.server.rss().peak_kib;
    std::thread::sleep(Duration::from_secs(10));
    let cost = Cost {
        start_kib,
        peak_kib,
        settled_kib: t.server.rss().now_kib,
        slowest_health: seen.slowest,
        health_answers: seen.answered,
    };
    eprintln!("{streams} × {} posts: {answers:?}: {cost:?}", posts.len());
    assert!(
        cost.settled_kib <= cost.start_kib + 32 * 1024,
        "RSS 10 s after the attack is {} MiB over its start: {cost:?}",
        cost.settled_kib.saturating_sub(cost.start_kib) / 1024,
    );
    assert!(
        cost.health_answers > 0 && cost.slowest_health < Duration::from_secs(1),
        "/healthz stalled during the attack: {cost:?}"
    );
    (answers, cost)
}

/// `a&` repeated `pairs` times after `prefix`.
fn pairs_body(prefix: &str, pairs: usize) -> Vec<u8> {
    let mut body = prefix.as_bytes().to_vec();
    body.reserve(pairs * 2);
    for _ in 0..pairs {
        body.extend_from_slice(b"a&");
    }
    body
}

const FORM: &str = "application/x-www-form-urlencoded";

#[tokio::test]
async fn an_unauthenticated_preview_is_answered_before_its_body_is_read() {
    let t = target(&[]);
    let attack_post = Post::new(
        "/console/preview",
        &[("Content-Type", FORM)],
        pairs_body("", PAIRS_16_MIB),
    );
    assert!(attack_post.body.len() as u64 <= 16 * MIB);
    // The head alone is answered: the sign-in page, without the body being asked for.
    let (status, head) = attack_post.first_answer_to_head(&t.address());
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("/login?next="), "{head}");
    // Warm up the path, then the attack of the issue: 4 streams × 3 of those, sent whole.
    let small = Post::new(
        "/console/preview",
        &[("Content-Type", FORM)],
        b"a&".to_vec(),
    );
    assert_eq!(small.send(&t.address()).map(|a| a.0), Some(303));
    let (answers, cost) = attack(
        &t,
        4,
        &[attack_post.clone(), attack_post.clone(), attack_post],
    );
    assert!(
        answers.iter().all(|a| matches!(a, Some(303) | None)),
        "{answers:?}"
    );
    assert!(
        cost.peak_growth() <= 16 * MIB,
        "peak RSS grew by {} MiB for unauthenticated requests (at most 16): {cost:?}",
        cost.peak_growth() / MIB
    );
    // A cross-site post is refused from its head too.
    let cross = Post::new(
        "/console/preview",
        &[("Content-Type", FORM), ("Sec-Fetch-Site", "cross-site")],
        pairs_body("", 1000),
    );
    assert_eq!(cross.first_answer_to_head(&t.address()).0, 403);
}

#[tokio::test]
async fn a_signed_in_preview_holds_at_most_four_times_its_body() {
    let t = target(&[]);
    let (mut b, csrf) = t.signed_in().await;
    let cookie = cookie_of(&b);
    let headers = [("Content-Type", FORM), ("Cookie", cookie.as_str())];
    // The real preview still works, with the longest body percent-encoded whole.
    let longest = "é".repeat(65_536 / 2);
    let page = b
        .post_form("/console/preview", &[("csrf", &csrf), ("body", &longest)])
        .await;
    assert_eq!(page.status.as_u16(), 200, "{}", page.body);
    assert!(page.body.contains(&longest), "the preview renders the body");

    // Within the preview's limit, as many fields as fit: refused, having cost its bytes.
    let prefix = format!("csrf={csrf}&body=x&");
    let in_limit = pairs_body(&prefix, (PREVIEW_LIMIT - prefix.len()) / 2);
    assert!(in_limit.len() <= PREVIEW_LIMIT);
    let fields = Post::new("/console/preview", &headers, in_limit);
    let (answers, cost) = attack(&t, 4, &[fields.clone(), fields.clone(), fields.clone()]);
    assert!(answers.iter().all(|a| *a == Some(422)), "{answers:?}");
    let in_flight = 4 * fields.body.len() as u64;
    assert!(
        cost.peak_growth() <= 4 * in_flight,
        "peak RSS grew by {} KiB for {} KiB in flight (at most 4×): {cost:?}",
        cost.peak_growth() / 1024,
        in_flight / 1024
    );

    // The attack of the issue, signed in: refused once the preview's limit is read.
    let whole = Post::new(
        "/console/preview",
        &headers,
        pairs_body(&prefix, PAIRS_16_MIB - prefix.len() / 2),
    );
    let (answers, cost) = attack(&t, 4, &[whole.clone(), whole.clone(), whole.clone()]);
    assert!(
        answers.iter().all(|a| matches!(a, Some(413) | None)),
        "{answers:?}"
    );
    let in_flight = 4 * whole.body.len() as u64;
    assert!(
        cost.peak_growth() <= 4 * in_flight,
        "peak RSS grew by {} MiB for {} MiB in flight (at most 4×): {cost:?}",
        cost.peak_growth() / MIB,
        in_flight / MIB
    );
    // The form token is still checked once the form is read.
    let foreign = Post::new("/console/preview", &headers, b"csrf=nope&body=x".to_vec());
    assert_eq!(foreign.send(&t.address()).map(|a| a.0), Some(403));
}

#[tokio::test]
async fn an_oversized_markdown_upload_is_refused_before_it_is_parsed() {
    let t = target(&["--write-rate", "0"]);
    let auth = format!("Bearer {}", t.admin_key);
    let newlines = vec![b'\n'; 16 * MIB as usize - 1];
    let markdown = Post::new(
        "/api/v1/imports",
        &[("Authorization", &auth), ("Content-Type", "text/markdown")],
        newlines.clone(),
    );
    // A SKILL.md that says it is 16 MiB is refused from its head.
    let (status, head) = markdown.first_answer_to_head(&t.address());
    assert_eq!(status, 413, "{head}");
    let (answers, cost) = attack(&t, 2, &[markdown.clone(), markdown.clone(), markdown]);
    assert!(
        answers.iter().all(|a| matches!(a, Some(413) | None)),
        "{answers:?}"
    );
    let in_flight = 2 * newlines.len() as u64;
    assert!(
        cost.peak_growth() <= 4 * in_flight,
        "peak RSS grew by {} MiB for {} MiB in flight (at most 4×): {cost:?}",
        cost.peak_growth() / MIB,
        in_flight / MIB
    );

    // Without a type it could be a ZIP: read only until its first bytes show it is not one.
    let untyped = Post::new(
        "/api/v1/imports",
        &[("Authorization", &auth)],
        newlines.clone(),
    );
    let (answers, cost) = attack(&t, 2, &[untyped.clone(), untyped.clone(), untyped]);
    assert!(
        answers.iter().all(|a| matches!(a, Some(413) | None)),
        "{answers:?}"
    );
    assert!(
        cost.peak_growth() <= 4 * in_flight,
        "peak RSS grew by {} MiB for {} MiB in flight (at most 4×): {cost:?}",
        cost.peak_growth() / MIB,
        in_flight / MIB
    );

    // Sent in chunks its size is unknown until it is read: kept only up to the largest
    // SKILL.md, the rest counted, then refused unparsed.
    let chunked = Post::new("/api/v1/imports", &[("Authorization", &auth)], newlines).chunked();
    let (answers, cost) = attack(&t, 2, &[chunked.clone(), chunked.clone(), chunked]);
    assert!(answers.iter().all(|a| *a == Some(413)), "{answers:?}");
    assert!(
        cost.peak_growth() <= 4 * in_flight,
        "peak RSS grew by {} MiB for {} MiB in flight (at most 4×): {cost:?}",
        cost.peak_growth() / MIB,
        in_flight / MIB
    );
    let small = Post::new(
        "/api/v1/imports",
        &[("Authorization", &auth)],
        vec![b'\n'; SKILL_MD_MAX + 1],
    );
    let (status, body) = small.send_chunked(&t.address());
    assert_eq!(status, 413, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE", "{body}");
    assert_eq!(body["error"]["details"]["field"], "SKILL.md", "{body}");
    assert_eq!(body["error"]["details"]["limit"], SKILL_MD_MAX, "{body}");
}

#[tokio::test]
async fn refused_uploads_spend_the_write_rate() {
    let t = target(&["--write-rate", "60"]);
    let http = reqwest::Client::new();
    let auth = format!("Bearer {}", t.admin_key);
    let announced = Post::new(
        "/api/v1/imports",
        &[("Authorization", &auth), ("Content-Type", "text/markdown")],
        vec![b'\n'; SKILL_MD_MAX + 1],
    );
    // Sent in chunks: read to its end (its size is unknown before), then refused.
    let chunked = Post::new(
        "/api/v1/imports",
        &[("Authorization", &auth)],
        vec![b'\n'; SKILL_MD_MAX + 1],
    )
    .chunked();
    // 80 oversized uploads in a row, every other one refused from its head alone; the
    // budget is 60 a minute, so the last ones find none left.
    let mut statuses = Vec::new();
    for i in 0..80 {
        let status = if i % 2 == 0 {
            announced.first_answer_to_head(&t.address()).0
        } else {
            chunked.send_chunked(&t.address()).0
        };
        statuses.push(status);
    }
    let refused_for_size = statuses.iter().filter(|s| **s == 413).count();
    let rate_limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(refused_for_size + rate_limited, 80, "{statuses:?}");
    assert!(
        (60..75).contains(&refused_for_size) && statuses[..60].iter().all(|s| *s == 413),
        "{statuses:?}"
    );
    assert!(rate_limited >= 5, "{statuses:?}");
    // A spent budget refuses a good import too, and says when to come back.
    let good = http
        .post(format!("{}/api/v1/imports", t.server.url))
        .bearer_auth(&t.admin_key)
        .header("content-type", "text/markdown")
        .body("---\nname: fine\ndescription: A fine skill.\n---\n\nBody.\n")
        .send()
        .await
        .expect("upload");
    assert_eq!(good.status().as_u16(), 429);
    assert!(good.headers().contains_key("retry-after"));
}
