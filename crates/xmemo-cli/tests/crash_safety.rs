//! Crash safety: a real `xmemo serve` is killed with SIGKILL several times while client tasks
//! save concurrently over HTTP. Every save it acknowledged (201) must be there after a restart
//! on the same database — same revision id, number and canonical hash — revision numbers must
//! be gap-free, every revision must have its audit entry, and the audit chain must verify.
//! On SQLite (WAL, `synchronous=FULL`) and on PostgreSQL.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use xmemo_testkit::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");
const KILLS: usize = 3;
const WRITERS: usize = 4;
const SLUGS: [&str; 2] = ["crash-a", "crash-b"];
/// Acknowledged saves to wait for in each life of the server before killing it mid-flight.
const ACKS_PER_LIFE: usize = 24;

/// A save the server answered 201 to.
#[derive(Debug, Clone)]
struct Ack {
    slug: String,
    revision_id: String,
    revision_number: i64,
    canonical_hash: String,
}

fn start(data_dir: &Path, database_url: Option<&str>) -> ServerProcess {
    let mut args = vec!["--data-dir", data_dir.to_str().expect("utf-8 path")];
    if let Some(url) = database_url {
        args.extend(["--database-url", url]);
    }
    ServerProcess::start(BIN, &args, &[])
}

/// Saves to its slug until a request fails (the server is gone), recording each 201.
async fn writer(
    http: reqwest::Client,
    url: String,
    key: String,
    task: usize,
    life: usize,
    acks: Arc<std::sync::Mutex<Vec<Ack>>>,
    count: Arc<AtomicUsize>,
) {
    let slug = SLUGS[task % SLUGS.len()];
    for n in 0.. {
        let body = json!({
            "slug": slug, "name": "Crash", "description": "Saved while the server dies",
            "instruction_body": format!("writer {task}, life {life}, save {n}"),
        });
        let Ok(response) = http
            .post(format!("{url}/api/v1/skills"))
            .bearer_auth(&key)
            .json(&body)
            .send()
            .await
        else {
            return;
        };
        let status = response.status().as_u16();
        let Ok(reply) = response.json::<Value>().await else {
            return;
        };
        match status {
            201 => {
                let data = &reply["data"];
                let text = |k: &str| data[k].as_str().expect("saved field").to_string();
                acks.lock().expect("acks").push(Ack {
                    slug: slug.to_string(),
                    revision_id: text("revision_id"),
                    revision_number: data["revision_number"].as_i64().expect("number"),
                    canonical_hash: text("canonical_hash"),
                });
                count.fetch_add(1, Ordering::SeqCst);
            }
            // Contention between writers of one slug is retryable; anything else is a bug.
            409 if reply["error"]["retryable"] == true => {}
            503 => return,
            other => panic!("save answered {other}: {reply}"),
        }
    }
}

/// Every revision of a slug, following the list's cursors.
async fn revisions(http: &reqwest::Client, url: &str, key: &str, slug: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut page = format!("{url}/api/v1/skills/{slug}/revisions?limit=100");
        if let Some(c) = &cursor {
            page.push_str(&format!("&cursor={c}"));
        }
        let body: Value = http
            .get(page)
            .bearer_auth(key)
            .send()
            .await
            .expect("list revisions")
            .json()
            .await
            .expect("JSON");
        all.extend(body["revisions"].as_array().expect("revisions").clone());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return all,
        }
    }
}

async fn crash_cycles(data_dir: &Path, database_url: Option<&str>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let acks = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut key = String::new();
    for life in 0..KILLS {
        let server = start(data_dir, database_url);
        if life == 0 {
            key = std::fs::read_to_string(data_dir.join("admin.key"))
                .expect("admin key")
                .trim()
                .to_string();
        }
        let count = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..WRITERS)
            .map(|task| {
                tokio::spawn(writer(
                    http.clone(),
                    server.url.clone(),
                    key.clone(),
                    task,
                    life,
                    acks.clone(),
                    count.clone(),
                ))
            })
            .collect();
        // A bounded wait for the writers to get going, then SIGKILL while they are saving.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while count.load(Ordering::SeqCst) < ACKS_PER_LIFE {
            assert!(
                std::time::Instant::now() < deadline,
                "life {life}: only {} saves acknowledged",
                count.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(server); // kill -9, then reap
        for t in tasks {
            t.await.expect("writer task");
        }
    }

    // Restart on the same database: everything acknowledged is there, numbered without gaps.
    let server = start(data_dir, database_url);
    let acks = acks.lock().expect("acks").clone();
    assert!(acks.len() >= KILLS * ACKS_PER_LIFE);
    let mut total_revisions = 0;
    for slug in SLUGS {
        let listed = revisions(&http, &server.url, &key, slug).await;
        let numbers: Vec<i64> = listed
            .iter()
            .map(|r| r["revision_number"].as_i64().expect("number"))
            .collect();
        assert_eq!(
            numbers,
            (1..=listed.len() as i64).collect::<Vec<_>>(),
            "{slug}: revision numbers are 1..n without gap or duplicate"
        );
        let by_id: BTreeMap<&str, &Value> = listed
            .iter()
            .map(|r| (r["revision_id"].as_str().expect("id"), r))
            .collect();
        for ack in acks.iter().filter(|a| a.slug == slug) {
            let found = by_id
                .get(ack.revision_id.as_str())
                .unwrap_or_else(|| panic!("acknowledged save lost: {ack:?}"));
            assert_eq!(found["revision_number"], ack.revision_number, "{ack:?}");
            assert_eq!(
                found["canonical_hash"],
                ack.canonical_hash.as_str(),
                "{ack:?}"
            );
        }
        total_revisions += listed.len();
    }
    eprintln!(
        "{} saves acknowledged over {KILLS} kills; {} revisions stored (the rest were \
         committed as the server died, before their answer left)",
        acks.len(),
        total_revisions
    );
    // The server still takes writes after all that.
    let after = http
        .post(format!("{}/api/v1/skills", server.url))
        .bearer_auth(&key)
        .json(
            &json!({"slug": "after-the-crashes", "name": "After", "description": "d",
                      "instruction_body": "still writable"}),
        )
        .send()
        .await
        .expect("save after restart");
    assert_eq!(after.status().as_u16(), 201);
    total_revisions += 1;
    drop(server);

    // Every revision has its `skill.save` audit entry (written in the same transaction), and
    // the chain verifies — through the store and through `xmemo admin audit verify`.
    let store = xmemo_server::bootstrap::open_store(database_url, data_dir)
        .await
        .expect("open the database");
    let entries = store
        .list_audit(&xmemo_store::AuditFilter::default())
        .await
        .expect("audit log");
    let saves = entries.iter().filter(|e| e.action == "skill.save").count();
    assert_eq!(saves, total_revisions, "one audit entry per revision");
    xmemo_store::verify_audit_chain(&entries).expect("audit chain");
    drop(store);

    let mut verify = xmemo_testkit::clean_command(BIN);
    verify
        .args(["admin", "audit", "verify", "--json", "--data-dir"])
        .arg(data_dir);
    if let Some(url) = database_url {
        verify.args(["--database-url", url]);
    }
    let out = verify.output().expect("run xmemo admin audit verify");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["entries"].as_u64(), Some(entries.len() as u64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_saves_survive_sigkill_on_sqlite() {
    let tmp = tempfile::tempdir().expect("tempdir");
    crash_cycles(&tmp.path().join("data"), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_saves_survive_sigkill_on_postgres() {
    let Some((url, _db)) = xmemo_testkit::postgres_fresh_database_url().await else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    crash_cycles(&tmp.path().join("data"), Some(&url)).await;
}
