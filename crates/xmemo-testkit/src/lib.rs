//! Test support shared by the crates' integration tests: fresh PostgreSQL databases that drop
//! themselves, a `xmemo serve` child process, and the rule for missing dependencies
//! ([`dependency_missing`]: fail, unless `XMEMO_TEST_ALLOW_SKIP=1`). Not part of the product.

pub mod browser;
pub mod embeddings;
pub mod llama;
mod memory;
pub mod oauth;
mod skip;
pub use memory::{HealthProbe, HealthSeen, Rss, process_rss, reset_peak_rss};
pub use skip::{ALLOW_SKIP_VAR, dependency_missing, skipping_allowed};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, Connection};
use std::str::FromStr;
use std::time::Duration;
use xmemo_store::postgres::redact_url;

pub fn postgres_url() -> String {
    std::env::var("XMEMO_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A connection to the server's maintenance database. An unreachable server fails the test;
/// only with `XMEMO_TEST_ALLOW_SKIP=1` is it `None` (after a loud line), and the caller skips.
pub async fn postgres_admin() -> Option<(PgConnectOptions, PgConnection)> {
    let url = postgres_url();
    let options = PgConnectOptions::from_str(&url).unwrap_or_else(|e| {
        panic!(
            "XMEMO_TEST_POSTGRES_URL {} is invalid: {e}",
            redact_url(&url)
        )
    });
    let attempt =
        tokio::time::timeout(Duration::from_secs(5), PgConnection::connect_with(&options)).await;
    let reason = match attempt {
        Ok(Ok(conn)) => return Some((options, conn)),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer within 5 s".to_string(),
    };
    dependency_missing(
        &format!(
            "PostgreSQL at {} (XMEMO_TEST_POSTGRES_URL)",
            redact_url(&url)
        ),
        &reason,
    );
    None
}

/// Drops the test database when the test ends, also when it panicked. The DROP runs on its own
/// thread and runtime, so it works from any runtime flavour and during unwinding.
pub struct PgDropGuard {
    admin: PgConnectOptions,
    name: String,
}

impl Drop for PgDropGuard {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let mut c = PgConnection::connect_with(&admin)
                    .await
                    .map_err(|e| e.to_string())?;
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut c)
                .await
                .map_err(|e| e.to_string())?;
                let _ = c.close().await;
                Ok::<(), String>(())
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("could not drop test database {}: {e}", self.name),
            Err(_) => eprintln!(
                "could not drop test database {}: the drop thread panicked",
                self.name
            ),
        }
    }
}

/// Creates `xmemo_t_<random>` and returns its connect options with the guard that drops it.
pub async fn postgres_fresh_database() -> Option<(PgConnectOptions, PgDropGuard)> {
    let (admin, mut conn) = postgres_admin().await?;
    let name = format!("xmemo_t_{}", uuid::Uuid::now_v7().simple());
    sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut conn)
        .await
        .unwrap();
    let _ = conn.close().await;
    let guard = PgDropGuard {
        admin: admin.clone(),
        name: name.clone(),
    };
    Some((admin.database(&name), guard))
}

/// `bin` as a child command with none of the caller's `XMEMO_*` settings (nor `NO_COLOR`), so a
/// developer's environment never leaks into a test.
pub fn clean_command(bin: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
    for (key, _) in std::env::vars() {
        if key.starts_with("XMEMO_") || key == "NO_COLOR" {
            cmd.env_remove(key);
        }
    }
    // No recommended embedding model where `serve` looks for one, whatever this machine's
    // cache holds: a test's server has a semantic lane only when the test names a model (or
    // points XMEMO_MODELS_DIR at one).
    cmd.env("XMEMO_MODELS_DIR", NO_MODELS_DIR);
    cmd
}

/// A folder that does not exist, as XMEMO_MODELS_DIR of the commands [`clean_command`] makes.
pub const NO_MODELS_DIR: &str = "/nonexistent/xmemo-test-models";

/// A running `xmemo serve` child process, killed when dropped. Its stderr is drained for its
/// whole life (so it never blocks on a full pipe) and the listening address is parsed from
/// the `xmemo: listening on http://…` line.
pub struct ServerProcess {
    child: std::process::Child,
    pub url: String,
    /// Every line the server wrote on stderr so far (its logs).
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The thread reading stderr; it ends at end of file, once the server has exited.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `bin serve --listen 127.0.0.1:0 <args…>` with the given extra environment and
    /// none of the XMEMO_* settings of the caller's environment.
    pub fn start(bin: &str, args: &[&str], envs: &[(&str, &str)]) -> ServerProcess {
        use std::io::{BufRead, BufReader};
        use std::process::Stdio;
        let mut cmd = clean_command(bin);
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("XMEMO_LOG", "warn")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn xmemo serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut all) = kept.lock() {
                    all.push(line.clone());
                }
                let _ = tx.send(line);
            }
        });
        let mut server = ServerProcess {
            child,
            url: String::new(),
            lines,
            reader: Some(reader),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        while server.url.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    // A text log has the line as it is; a JSON log (`--log-format json`) the
                    // same text as an object's `message`.
                    let message = serde_json::from_str::<serde_json::Value>(&line)
                        .ok()
                        .and_then(|v| v["message"].as_str().map(str::to_string))
                        .unwrap_or_else(|| line.clone());
                    if let Some(rest) = message.strip_prefix("xmemo: listening on ") {
                        server.url = rest.split_whitespace().next().unwrap_or("").to_string();
                    }
                    seen.push(line);
                }
                Err(_) => panic!(
                    "xmemo serve did not report its address; stderr:\n{}",
                    seen.join("\n")
                ),
            }
        }
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory now and at its peak ([`reset_peak_rss`] starts a new peak).
    pub fn rss(&self) -> Rss {
        process_rss(self.pid())
    }

    /// Starts a new peak at the resident size now.
    pub fn reset_peak_rss(&self) {
        reset_peak_rss(self.pid())
    }

    /// What the server wrote on stderr so far.
    pub fn output(&self) -> String {
        self.lines.lock().map(|l| l.join("\n")).unwrap_or_default()
    }

    /// Stops the server as an operator would (SIGTERM: the requests in progress finish, then
    /// it exits; SIGKILL if it has not within 30 s) and returns all it wrote on stderr, read
    /// to end of file: no line it logged can still be on its way.
    pub fn stop_and_collect_logs(mut self) -> String {
        use rustix::process::{Pid, Signal, kill_process};
        let _ = kill_process(Pid::from_child(&self.child), Signal::TERM);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while matches!(self.child.try_wait(), Ok(None)) {
            if std::time::Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.output()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh database as a URL for a child process (`--database-url`), with its drop guard.
pub async fn postgres_fresh_database_url() -> Option<(String, PgDropGuard)> {
    let (options, guard) = postgres_fresh_database().await?;
    let base = postgres_url();
    let without_query = base.split('?').next().unwrap_or(&base);
    let server = without_query
        .rsplit_once('/')
        .map(|(server, _)| server)
        .unwrap_or(without_query);
    let name = options.get_database().unwrap_or_default().to_string();
    Some((format!("{server}/{name}"), guard))
}

/// The model folder `variable` names, else `name` in the default models cache
/// (`~/.cache/xmemo-models`, where `scripts/models` puts it); `None` (after failing the test
/// unless skips are allowed) when it holds no `model.safetensors`. `what` names it in the
/// failure.
pub fn model_folder(variable: &str, name: &str, what: &str) -> Option<std::path::PathBuf> {
    let folder = std::env::var_os(variable)
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| {
                std::path::PathBuf::from(h)
                    .join(".cache/xmemo-models")
                    .join(name)
            })
        })?;
    if folder.join("model.safetensors").is_file() {
        Some(folder)
    } else {
        dependency_missing(
            what,
            &format!(
                "{} holds no model.safetensors (run scripts/models {name}, or set {variable})",
                folder.display()
            ),
        );
        None
    }
}
