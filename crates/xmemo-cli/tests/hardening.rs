//! Issue #23 through the real binary: the operator's unlock of an account's sign-in on a
//! running server, the repair of a team left without an owner, an account's usage, and the
//! settings of the new budgets (`xmemo serve` flags).

use std::process::Stdio;
use xmemo_testkit::ServerProcess;
use xmemo_testkit::browser::Browser;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn admin(data_dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    xmemo_testkit::clean_command(BIN)
        .args(["admin", "--data-dir", data_dir.to_str().expect("utf-8")])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("xmemo admin")
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn password(data: &std::path::Path) -> String {
    std::fs::read_to_string(data.join("admin.password"))
        .expect("admin.password")
        .trim()
        .to_string()
}

#[tokio::test]
async fn admin_account_unlock_restores_sign_in_on_a_running_server() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let d = data.to_str().unwrap();
    // The account's ceiling at 2 (the flag of this issue), the address budget out of the way.
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            d,
            "--login-account-limit",
            "2",
            "--auth-failure-limit",
            "0",
        ],
        &[],
    );
    let pw = password(&data);
    for i in 0..2 {
        let mut b = Browser::new(&server.url);
        let page = b.sign_in("admin", &format!("wrong {i}"), "/login").await;
        assert_eq!(page.status.as_u16(), 401, "{}", page.body);
    }
    let mut b = Browser::new(&server.url);
    assert_eq!(b.sign_in("admin", &pw, "/login").await.status.as_u16(), 429);

    let out = ok(&admin(&data, &["account", "unlock", "admin"]));
    assert!(out.contains("sign-in unlocked for admin"), "{out}");
    let mut b = Browser::new(&server.url);
    let page = b.sign_in("admin", &pw, "/login").await;
    assert_eq!(page.status.as_u16(), 303, "{}", page.body);
    // An unknown account is an error.
    assert!(
        !admin(&data, &["account", "unlock", "nobody"])
            .status
            .success()
    );
    drop(server);
}

#[tokio::test]
async fn the_operator_lists_and_repairs_teams_without_an_owner() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    ok(&admin(&data, &["account", "create", "alice"]));
    let out = ok(&admin(&data, &["--json", "team", "ownerless"]));
    let listed: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(listed["teams"], serde_json::json!([]));
    // A team left as two racing deletions left teams before this issue: no owner row.
    let store = xmemo_store::sqlite::SqliteStore::open(&data.join("xmemo.db"))
        .await
        .expect("store");
    let service = xmemo_server::Service::new(std::sync::Arc::new(store));
    let alice = service.operator_for("alice").await.unwrap();
    service
        .create_team(
            &alice,
            xmemo_server::service::types::CreateTeamRequest {
                handle: "crew".into(),
                name: None,
            },
        )
        .await
        .expect("team");
    let side = rusqlite::Connection::open(data.join("xmemo.db")).expect("side connection");
    side.execute("DELETE FROM memberships WHERE role = 'owner' AND workspace_id IN (SELECT workspace_id FROM workspaces WHERE handle = 'crew')", [])
        .expect("orphan the team");
    let out = ok(&admin(&data, &["team", "ownerless"]));
    assert!(out.contains("\tcrew\t"), "{out}");
    let out = ok(&admin(&data, &["team", "add-owner", "crew", "alice"]));
    assert!(out.contains("alice is an owner of crew"), "{out}");
    let out = ok(&admin(&data, &["team", "ownerless"]));
    assert!(out.contains("every team has an owner"), "{out}");
    assert!(
        !admin(&data, &["team", "add-owner", "nope", "alice"])
            .status
            .success()
    );
}

#[tokio::test]
async fn quotas_and_write_rates_are_server_settings() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let d = data.to_str().unwrap();
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            d,
            "--quota-memories",
            "2",
            "--write-rate",
            "0",
        ],
        &[],
    );
    let key = std::fs::read_to_string(data.join("admin.key"))
        .unwrap()
        .trim()
        .to_string();
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for i in 0..3 {
        let r = http
            .post(format!("{}/api/v1/memories", server.url))
            .bearer_auth(&key)
            .json(&serde_json::json!({"kind": "note", "content": format!("m{i}")}))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [201, 201, 422], "{statuses:?}");
    let out = ok(&admin(&data, &["--json", "account", "usage", "admin"]));
    let usage: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(usage["usage"]["memories"], 2);
    drop(server);
    // An unusable setting is refused at start.
    let refused = xmemo_testkit::clean_command(BIN)
        .args([
            "serve",
            "--data-dir",
            d,
            "--listen",
            "127.0.0.1:0",
            "--password-hash-concurrency",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("password_hash_concurrency"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
