//! What the `connect` and `doctor` tests share: a real server, the real binary run in a
//! sandboxed home (HOME and XDG_CONFIG_HOME in a temporary directory, no XMEMO_* from the
//! caller), and the stdio bridge driven over its pipes.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

/// A server on a fresh data directory, its admin key, and a home directory for the client.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub server: xmemo_testkit::ServerProcess,
    pub key: String,
}

impl Env {
    pub fn start() -> Env {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data = tmp.path().join("data");
        let server = xmemo_testkit::ServerProcess::start(
            BIN,
            &["--data-dir", data.to_str().expect("utf-8 path")],
            &[],
        );
        let key = std::fs::read_to_string(data.join("admin.key"))
            .expect("admin.key")
            .trim()
            .to_string();
        std::fs::create_dir_all(tmp.path().join("home/.config")).expect("home");
        Env { tmp, server, key }
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    pub fn config_home(&self) -> PathBuf {
        self.home().join(".config")
    }

    /// `xmemo <args>` in the sandboxed home with exactly these XMEMO_* variables.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(env);
        cmd.args(args).stdin(Stdio::null());
        let out = cmd.output().expect("run xmemo");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn command(&self, env: &[(&str, &str)]) -> Command {
        let mut cmd = xmemo_testkit::clean_command(BIN);
        cmd.current_dir(self.tmp.path())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.config_home())
            .env_remove("CODEX_HOME")
            .envs(env.iter().copied());
        cmd
    }

    /// Runs the stdio bridge with `env`, sends a legacy `initialize` (client
    /// `connect-test`) then `messages` (ids from 2 on) and returns the answers to those.
    pub fn bridge(&self, env: &[(&str, String)], messages: &[Value]) -> Vec<Value> {
        let init = json!({"method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "connect-test", "version": "1"}}});
        let initialized = json!({"method": "notifications/initialized"});
        let mut all = vec![init, initialized];
        all.extend(messages.iter().cloned());
        let mut answers = self.bridge_raw(env, &all);
        let first = answers.remove(0);
        assert!(first["result"]["protocolVersion"].is_string(), "{first}");
        answers
    }

    /// Runs the stdio bridge with `env` and sends `messages` as they are (a request gets the
    /// id of its place, from 1); returns the answers to the requests, in order.
    pub fn bridge_raw(&self, env: &[(&str, String)], messages: &[Value]) -> Vec<Value> {
        let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut cmd = self.command(&env_refs);
        cmd.arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn xmemo mcp");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let mut answers = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let mut m = m.clone();
            m["jsonrpc"] = json!("2.0");
            let notification = m["method"]
                .as_str()
                .is_some_and(|method| method.starts_with("notifications/"));
            if !notification {
                m["id"] = json!(i + 1);
            }
            writeln!(stdin, "{m}").expect("write");
            if notification {
                continue;
            }
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => answers.push(serde_json::from_str(&line).expect("JSON line")),
                Err(_) => panic!("no answer to {m}; stderr: {}", stderr_of(child)),
            }
        }
        drop(stdin);
        let _ = child.wait();
        answers
    }
}

fn stderr_of(mut child: std::process::Child) -> String {
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "{self:#?}");
        self
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self:#?}"))
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
