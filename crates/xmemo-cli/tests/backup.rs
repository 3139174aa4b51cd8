//! Issue #32, item 3: `xmemo admin backup` copies a running SQLite installation while saves
//! keep being acknowledged; `xmemo admin restore` puts the copy into a new data directory,
//! where it holds every save acknowledged before the backup began, an intact audit chain, and
//! a server starts on it; a restore over a directory holding a database is refused.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use xmemo_testkit::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");
/// Saves in the stream at most: all of them fit one recall page (50).
const STREAM_MAX: usize = 45;
/// Saves acknowledged before the backup starts.
const BEFORE_BACKUP: usize = 15;

fn admin(data: &std::path::Path, args: &[&str]) -> std::process::Output {
    xmemo_testkit::clean_command(BIN)
        .args(["admin", "--data-dir", data.to_str().expect("utf-8 path")])
        .args(args)
        .output()
        .expect("run xmemo admin")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_during_saves_restores_every_acknowledged_save() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let live = tmp.path().join("live");
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            live.to_str().expect("utf-8 path"),
            "--write-rate",
            "0",
        ],
        &[],
    );
    let key = std::fs::read_to_string(live.join("admin.key")).expect("admin.key");
    let key = key.trim().to_string();

    // A stream of saves, each recorded once the server acknowledged it.
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        let (url, key) = (server.url.clone(), key.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..STREAM_MAX {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let r = http
                    .post(format!("{url}/api/v1/memories"))
                    .bearer_auth(&key)
                    .json(&json!({"kind": "progress", "content": format!("stream entry {i}")}))
                    .send()
                    .await
                    .expect("save");
                assert_eq!(r.status().as_u16(), 201);
                let body: Value = r.json().await.expect("json");
                let id = body["data"]["memory"]["memory_id"]
                    .as_str()
                    .expect("memory_id")
                    .to_string();
                acknowledged.lock().expect("lock").push(id);
            }
        })
    };
    while acknowledged.lock().expect("lock").len() < BEFORE_BACKUP {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let before: Vec<String> = acknowledged.lock().expect("lock").clone();
    let file = tmp.path().join("xmemo-backup.db");
    let dir = live.clone();
    let to = file.to_str().expect("utf-8 path").to_string();
    let backup = tokio::task::spawn_blocking(move || admin(&dir, &["backup", "--to", &to]))
        .await
        .expect("backup ran");
    let during = acknowledged.lock().expect("lock").len();
    stop.store(true, Ordering::SeqCst);
    writer.await.expect("writer");
    assert!(
        backup.status.success(),
        "{}",
        String::from_utf8_lossy(&backup.stderr)
    );
    let said = String::from_utf8_lossy(&backup.stdout);
    assert!(
        said.contains("quick_check ok; audit chain intact"),
        "{said}"
    );
    assert!(
        during > before.len(),
        "saves were acknowledged while the backup ran ({} then {during})",
        before.len()
    );

    // Never over a live installation.
    let over = admin(&live, &["restore", "--from", file.to_str().expect("utf-8")]);
    assert!(!over.status.success());
    let why = String::from_utf8_lossy(&over.stderr);
    assert!(
        why.contains("already holds a database") && why.contains("new data directory"),
        "{why}"
    );

    // Into a new directory: the audit chain holds, a server starts, every save acknowledged
    // before the backup began is there.
    let restored = tmp.path().join("restored");
    let put = admin(
        &restored,
        &["restore", "--from", file.to_str().expect("utf-8")],
    );
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let verify = admin(&restored, &["audit", "verify"]);
    assert!(
        verify.status.success() && String::from_utf8_lossy(&verify.stdout).contains("intact"),
        "{verify:?}"
    );
    let whole = admin(&restored, &["verify"]);
    assert!(
        whole.status.success()
            && String::from_utf8_lossy(&whole.stdout).contains("every hash recomputed and equal"),
        "{whole:?}"
    );
    drop(server);
    let again = ServerProcess::start(
        BIN,
        &["--data-dir", restored.to_str().expect("utf-8 path")],
        &[],
    );
    let found: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/memories?limit=50", again.url))
        .bearer_auth(&key)
        .send()
        .await
        .expect("recall")
        .json()
        .await
        .expect("json");
    let ids: Vec<&str> = found["data"]["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .filter_map(|m| m["memory_id"].as_str())
        .collect();
    for id in &before {
        assert!(
            ids.contains(&id.as_str()),
            "{id} was acknowledged before the backup"
        );
    }
    assert!(ids.len() >= before.len() && ids.len() <= STREAM_MAX);
}

/// `serve --backup-dir` takes a backup at start and one every `--backup-every`, keeping
/// `--backup-keep`; `xmemo admin doctor` reports the schedule's newest backup.
#[test]
fn serve_takes_scheduled_backups_and_keeps_the_newest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let backups = tmp.path().join("backups");
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8 path"),
            "--backup-dir",
            backups.to_str().expect("utf-8 path"),
            "--backup-every",
            "1s",
            "--backup-keep",
            "2",
        ],
        &[("XMEMO_LOG", "warn,xmemo::admin_backup=info")],
    );
    let taken = |server: &ServerProcess| {
        server
            .output()
            .matches("scheduled backup taken and checked")
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while taken(&server) < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "no third backup: {}",
            server.output()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The event is logged once the old ones are deleted, a second before the next backup.
    let files: Vec<_> = std::fs::read_dir(&backups)
        .expect("backups")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("xmemo-") && n.ends_with(".db"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(!server.output().contains("scheduled backup failed"));

    let doctor = admin(
        &data,
        &[
            "--backup-dir",
            backups.to_str().expect("utf-8"),
            "--backup-every",
            "1s",
            "--json",
            "doctor",
        ],
    );
    let report: Value = serde_json::from_slice(&doctor.stdout).expect("doctor json");
    assert_eq!(report["backups"]["ok"], true, "{report}");
    assert_eq!(report["backups"]["count"], 2, "{report}");
}

fn run(program: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn admin_url(url: &str, args: &[&str]) -> std::process::Output {
    xmemo_testkit::clean_command(BIN)
        .args(["admin", "--database-url", url])
        .args(args)
        .output()
        .expect("run xmemo admin")
}

/// The PostgreSQL procedure of docs/operations.md: pg_dump, pg_restore into a new database,
/// `xmemo admin verify` (audit chain, recomputed hashes); a server on the restored database
/// finds what was saved; a tampered revision fails the verification.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgresql_procedure_restores_a_verified_installation() {
    let Some((source_url, _source)) = xmemo_testkit::postgres_fresh_database_url().await else {
        return;
    };
    let Some((restored_url, _restored)) = xmemo_testkit::postgres_fresh_database_url().await else {
        return;
    };
    if run("pg_dump", &["--version"]).status.code() != Some(0) {
        xmemo_testkit::dependency_missing("pg_dump", "the PostgreSQL client tools");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let server = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--database-url",
            &source_url,
        ],
        &[],
    );
    let key = std::fs::read_to_string(data.join("admin.key")).expect("admin.key");
    let key = key.trim().to_string();
    let http = reqwest::Client::new();
    for (path, body) in [
        (
            "skills",
            json!({"slug": "deploy", "name": "Deploy", "description": "Ship it",
                          "instruction_body": "1. Build.\n2. Ship.", "intent": "publish"}),
        ),
        (
            "memories",
            json!({"kind": "fact", "content": "restored through pg_dump"}),
        ),
    ] {
        let r = http
            .post(format!("{}/api/v1/{path}", server.url))
            .bearer_auth(&key)
            .json(&body)
            .send()
            .await
            .expect("save");
        assert_eq!(r.status().as_u16(), 201, "{path}");
    }
    drop(server);

    // xmemo's own backup refuses PostgreSQL and names the tool to use.
    let refused = admin_url(&source_url, &["backup", "--to", "/tmp/never.db"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("pg_dump"));

    let dump = tmp.path().join("xmemo.dump");
    let dumped = run(
        "pg_dump",
        &["-Fc", "-f", dump.to_str().expect("utf-8"), &source_url],
    );
    assert!(dumped.status.success(), "{dumped:?}");
    let put = run(
        "pg_restore",
        &[
            "--no-owner",
            "-d",
            &restored_url,
            dump.to_str().expect("utf-8"),
        ],
    );
    assert!(put.status.success(), "{put:?}");
    let verified = admin_url(&restored_url, &["verify"]);
    let said = String::from_utf8_lossy(&verified.stdout);
    assert!(
        verified.status.success() && said.contains("audit chain intact, every hash recomputed"),
        "{said} {}",
        String::from_utf8_lossy(&verified.stderr)
    );

    let again = ServerProcess::start(
        BIN,
        &[
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--database-url",
            &restored_url,
        ],
        &[],
    );
    let found: Value = http
        .get(format!("{}/api/v1/memories?query=pg_dump", again.url))
        .bearer_auth(&key)
        .send()
        .await
        .expect("recall")
        .json()
        .await
        .expect("json");
    assert_eq!(
        found["data"]["memories"][0]["content"],
        "restored through pg_dump"
    );
    drop(again);

    // A revision changed behind xmemo's back no longer hashes to its canonical hash.
    let tampered = run(
        "psql",
        &[
            &restored_url,
            "-c",
            "UPDATE revisions SET instruction_body = 'tampered'",
        ],
    );
    assert!(tampered.status.success(), "{tampered:?}");
    let caught = admin_url(&restored_url, &["verify"]);
    assert!(!caught.status.success());
    assert!(
        String::from_utf8_lossy(&caught.stdout).contains("hashes to"),
        "{}",
        String::from_utf8_lossy(&caught.stdout)
    );
}
