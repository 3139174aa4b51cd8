//! The data directory and the files in it are private: `xmemo serve` creates the directory
//! 0700 and the database, its `-wal`/`-shm` and `admin.key` 0600 whatever the umask, and
//! `xmemo admin doctor` reports an existing directory or file that group or others can reach,
//! with the command that fixes it.
#![cfg(unix)]

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A wrapper that starts the real binary under `umask 000`, so the modes checked below come
/// from the server and not from the test's own umask.
fn permissive_wrapper(dir: &Path) -> PathBuf {
    let script = dir.join("xmemo-umask-000");
    let seen = dir.join("umask-seen");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\numask 000\numask > '{}'\nexec '{BIN}' \"$@\"\n",
            seen.display()
        ),
    )
    .expect("write wrapper");
    chmod(&script, 0o755);
    script
}

#[tokio::test]
async fn serve_creates_a_private_data_dir_and_files_whatever_the_umask() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let wrapper = permissive_wrapper(tmp.path());
    let data_dir = tmp.path().join("fresh/data");
    let server = xmemo_testkit::ServerProcess::start(
        wrapper.to_str().expect("utf-8 path"),
        &["--data-dir", data_dir.to_str().expect("utf-8 path")],
        &[],
    );
    assert_eq!(mode(&data_dir), 0o700, "data directory");
    assert_eq!(mode(&data_dir.join("xmemo.db")), 0o600, "database");
    assert_eq!(mode(&data_dir.join("admin.key")), 0o600, "admin key");
    assert_eq!(
        mode(&data_dir.join("admin.password")),
        0o600,
        "admin password"
    );

    // A write goes through the WAL: -wal and -shm exist now, as private as the database.
    let key = std::fs::read_to_string(data_dir.join("admin.key")).expect("admin key");
    let reply = reqwest::Client::new()
        .post(format!("{}/api/v1/skills", server.url))
        .bearer_auth(key.trim())
        .json(&serde_json::json!({
            "slug": "modes", "name": "Modes", "description": "d", "instruction_body": "b"
        }))
        .send()
        .await
        .expect("save");
    assert_eq!(reply.status().as_u16(), 201);
    for name in ["xmemo.db-wal", "xmemo.db-shm"] {
        assert_eq!(mode(&data_dir.join(name)), 0o600, "{name}");
    }
    // The server really ran under a permissive umask.
    let seen = std::fs::read_to_string(tmp.path().join("umask-seen")).expect("umask-seen");
    assert_eq!(seen.trim(), "0000");
    drop(server);
}

fn doctor(data_dir: &Path, json: bool) -> (Value, String) {
    let mut cmd = xmemo_testkit::clean_command(BIN);
    cmd.args(["admin", "doctor", "--data-dir"]).arg(data_dir);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run doctor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let value = if json {
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    } else {
        Value::Null
    };
    (value, stdout)
}

#[test]
fn doctor_reports_an_open_data_dir_and_files_with_the_fix() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data_dir = tmp.path().join("data");
    std::fs::create_dir(&data_dir).expect("mkdir");
    chmod(&data_dir, 0o755);
    // As an older xmemo (or a careless copy) left them.
    for name in ["xmemo.db", "admin.key"] {
        std::fs::write(data_dir.join(name), "").expect("write");
        chmod(&data_dir.join(name), 0o644);
    }

    let (report, _) = doctor(&data_dir, true);
    let permissions = &report["permissions"];
    assert_eq!(permissions["ok"], false, "{report:#}");
    let problems: Vec<(String, String, String, String)> = permissions["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            let f = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            (f("path"), f("mode"), f("expected"), f("fix"))
        })
        .collect();
    let at = |name: &str| data_dir.join(name).display().to_string();
    let dir = data_dir.display().to_string();
    assert_eq!(
        problems,
        [
            (
                dir.clone(),
                "0755".into(),
                "0700".into(),
                format!("chmod 700 {dir}")
            ),
            (
                at("xmemo.db"),
                "0644".into(),
                "0600".into(),
                format!("chmod 600 {}", at("xmemo.db"))
            ),
            (
                at("admin.key"),
                "0644".into(),
                "0600".into(),
                format!("chmod 600 {}", at("admin.key"))
            ),
        ]
    );
    // The doctor reports; it does not change what the operator made.
    assert_eq!(mode(&data_dir), 0o755);

    let (_, text) = doctor(&data_dir, false);
    assert!(text.contains("permissions: TOO OPEN"), "{text}");
    assert!(text.contains(&format!("fix: chmod 700 {dir}")), "{text}");

    // After the fix it says so.
    chmod(&data_dir, 0o700);
    for name in ["xmemo.db", "admin.key", "xmemo.db-wal", "xmemo.db-shm"] {
        if data_dir.join(name).exists() {
            chmod(&data_dir.join(name), 0o600);
        }
    }
    let (report, _) = doctor(&data_dir, true);
    assert_eq!(report["permissions"]["ok"], true, "{report:#}");
}
