//! A fake OpenAI-compatible embeddings endpoint on 127.0.0.1, for tests of the semantic
//! lane through a real socket: HTTP/1.1 written by hand (one answer per connection), on its
//! own thread and runtime, so a test that blocks (a server child starting) does not stop it.
//! What it answers can be changed while it runs ([`FakeEmbeddings::answer_with`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the endpoint answers to every request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A vector of `dims` numbers per input text, made from its words (texts sharing words
    /// point alike).
    Vectors { dims: usize },
    /// Vectors as [`Answer::Vectors`], after `delay`.
    Slow { delay: Duration, dims: usize },
    /// `status` with this body.
    Fail { status: u16, body: String },
    /// A 200 of `bytes` bytes of whitespace, written until the client goes: announced in
    /// `content-length`, or (`announced: false`) sent in chunks of unknown total.
    Whitespace { bytes: u64, announced: bool },
    /// Reads the request and never answers.
    Hang,
}

pub struct FakeEmbeddings {
    pub addr: SocketAddr,
    answer: Arc<Mutex<Answer>>,
    requests: Arc<AtomicU64>,
    body_bytes_sent: Arc<AtomicU64>,
    authorization: Arc<Mutex<Option<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    answer: Arc<Mutex<Answer>>,
    requests: Arc<AtomicU64>,
    body_bytes_sent: Arc<AtomicU64>,
    authorization: Arc<Mutex<Option<String>>>,
}

impl FakeEmbeddings {
    /// Listens on a free port of 127.0.0.1.
    pub fn start(answer: Answer) -> FakeEmbeddings {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        Self::start_on(std_listener, answer)
    }

    /// Listens on `addr` (a port a test chose while nothing listened there).
    pub fn start_at(addr: SocketAddr, answer: Answer) -> FakeEmbeddings {
        let std_listener = std::net::TcpListener::bind(addr).expect("bind the chosen port");
        Self::start_on(std_listener, answer)
    }

    fn start_on(std_listener: std::net::TcpListener, answer: Answer) -> FakeEmbeddings {
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local address");
        let answer = Arc::new(Mutex::new(answer));
        let requests = Arc::new(AtomicU64::new(0));
        let body_bytes_sent = Arc::new(AtomicU64::new(0));
        let authorization = Arc::new(Mutex::new(None));
        let shared = Arc::new(Shared {
            answer: answer.clone(),
            requests: requests.clone(),
            body_bytes_sent: body_bytes_sent.clone(),
            authorization: authorization.clone(),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime of the fake endpoint");
            rt.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(std_listener).expect("tokio listener");
                let accept = async {
                    loop {
                        let Ok((socket, _)) = listener.accept().await else {
                            continue;
                        };
                        tokio::spawn(serve(socket, shared.clone()));
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stopped => {}
                }
            });
        });
        FakeEmbeddings {
            addr,
            answer,
            requests,
            body_bytes_sent,
            authorization,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`, what `--embeddings-url` takes.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// From the next request on, answer this.
    pub fn answer_with(&self, answer: Answer) {
        *self.answer.lock().unwrap_or_else(|p| p.into_inner()) = answer;
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Bytes of answer bodies written so far (a streamed body stops when the client goes).
    pub fn body_bytes_sent(&self) -> u64 {
        self.body_bytes_sent.load(Ordering::Relaxed)
    }

    /// The `Authorization` header of the latest request.
    pub fn last_authorization(&self) -> Option<String> {
        self.authorization
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for FakeEmbeddings {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One request on `socket`, one answer, then the connection is closed.
async fn serve(mut socket: tokio::net::TcpStream, shared: Arc<Shared>) {
    let Some((head, body)) = read_request(&mut socket).await else {
        return;
    };
    shared.requests.fetch_add(1, Ordering::Relaxed);
    *shared
        .authorization
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = header(&head, "authorization");
    let answer = shared
        .answer
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let texts: Vec<String> = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v["input"].as_array().map(|a| {
                a.iter()
                    .map(|t| t.as_str().unwrap_or("").to_string())
                    .collect()
            })
        })
        .unwrap_or_default();
    match answer {
        Answer::Vectors { dims } => {
            let body = vectors_answer(&texts, dims);
            respond(
                &mut socket,
                200,
                "application/json",
                body.as_bytes(),
                &shared,
            )
            .await;
        }
        Answer::Slow { delay, dims } => {
            tokio::time::sleep(delay).await;
            let body = vectors_answer(&texts, dims);
            respond(
                &mut socket,
                200,
                "application/json",
                body.as_bytes(),
                &shared,
            )
            .await;
        }
        Answer::Fail { status, body } => {
            respond(
                &mut socket,
                status,
                "application/json",
                body.as_bytes(),
                &shared,
            )
            .await;
        }
        Answer::Whitespace { bytes, announced } => {
            let framing = if announced {
                format!("content-length: {bytes}")
            } else {
                "transfer-encoding: chunked".to_string()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{framing}\r\nconnection: close\r\n\r\n"
            );
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let spaces = vec![b' '; 64 * 1024];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(spaces.len() as u64) as usize;
                let written = if announced {
                    socket.write_all(&spaces[..n]).await
                } else {
                    let mut chunk = format!("{n:x}\r\n").into_bytes();
                    chunk.extend_from_slice(&spaces[..n]);
                    chunk.extend_from_slice(b"\r\n");
                    socket.write_all(&chunk).await
                };
                if written.is_err() {
                    return;
                }
                shared
                    .body_bytes_sent
                    .fetch_add(n as u64, Ordering::Relaxed);
                left -= n as u64;
            }
            if !announced {
                let _ = socket.write_all(b"0\r\n\r\n").await;
            }
        }
        Answer::Hang => {
            // Hold the connection open until the client gives up.
            let mut sink = [0u8; 1024];
            while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > 1 << 20 {
            return None;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = header(&head, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

async fn respond(
    socket: &mut tokio::net::TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    shared: &Shared,
) {
    let head = format!(
        "HTTP/1.1 {status} Answer\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    if socket.write_all(head.as_bytes()).await.is_ok() && socket.write_all(body).await.is_ok() {
        shared
            .body_bytes_sent
            .fetch_add(body.len() as u64, Ordering::Relaxed);
    }
    let _ = socket.shutdown().await;
}

/// An OpenAI-shaped answer with one vector per text.
pub fn vectors_answer(texts: &[String], dims: usize) -> String {
    let data: Vec<serde_json::Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector_of(t, dims)}))
        .collect();
    serde_json::json!({"object": "list", "data": data, "model": "fake"}).to_string()
}

/// A bag of hashed words: texts sharing words get similar vectors.
pub fn vector_of(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims.max(1)];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.to_lowercase().bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let at = (hash % v.len() as u64) as usize;
        v[at] += if hash & (1 << 63) == 0 { 1.0 } else { -1.0 };
    }
    // A text without words still gets a non-zero vector.
    v[0] += 0.01;
    v
}

/// Waits (at most 30 s, else panics) until the semantic lane of the server at `base` is
/// `ok` in `/readyz` and holds at least `vectors` vectors (`xmemo_semantic_vectors` in
/// `/metrics`, read with the admin `key`).
pub async fn wait_until_embedded(http: &reqwest::Client, base: &str, key: &str, vectors: f64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let ready: serde_json::Value = match http.get(format!("{base}/readyz")).send().await {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(_) => serde_json::Value::Null,
        };
        let metrics = match http
            .get(format!("{base}/metrics"))
            .bearer_auth(key)
            .send()
            .await
        {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let held = metrics
            .lines()
            .find_map(|l| {
                l.strip_prefix("xmemo_semantic_vectors ")?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0);
        if ready["semantic"]["state"] == "ok" && held >= vectors {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the lane did not embed {vectors} rows (holds {held}): {ready}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
