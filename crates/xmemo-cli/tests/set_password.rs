//! `xmemo admin account set-password HANDLE`: the password comes from standard input (or a
//! prompt), never from the command line, is stored as argon2id, and ends the account's
//! sessions.

use std::io::Write;
use std::process::Stdio;
use xmemo_store::Store;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn admin(data_dir: &std::path::Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut cmd = xmemo_testkit::clean_command(BIN);
    cmd.args(["admin", "--data-dir", data_dir.to_str().expect("utf-8")])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn xmemo admin");
    {
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("write stdin");
        }
    }
    child.wait_with_output().expect("xmemo admin")
}

#[tokio::test]
async fn set_password_reads_stdin_and_stores_argon2id() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let created = admin(&data, &["account", "create", "bob"], None);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );

    let set = admin(
        &data,
        &["account", "set-password", "bob"],
        Some("a long passphrase\n"),
    );
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let out = String::from_utf8_lossy(&set.stdout);
    assert!(out.contains("password set for bob"), "{out}");
    assert!(
        !out.contains("a long passphrase"),
        "the password is never echoed"
    );

    // Too short: refused, nothing changed.
    let short = admin(&data, &["account", "set-password", "bob"], Some("short\n"));
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 8 characters"));
    // Never from the command line.
    let argv = admin(
        &data,
        &["account", "set-password", "bob", "a long passphrase"],
        None,
    );
    assert!(!argv.status.success());
    // An unknown account.
    let nobody = admin(
        &data,
        &["account", "set-password", "nobody"],
        Some("a long passphrase\n"),
    );
    assert!(!nobody.status.success());

    let store = xmemo_store::sqlite::SqliteStore::open(&data.join("xmemo.db"))
        .await
        .expect("open");
    let bob = store
        .find_account_by_handle("bob")
        .await
        .unwrap()
        .expect("bob");
    let hash = store
        .password_hash(&bob.account_id)
        .await
        .unwrap()
        .expect("a hash");
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    let hashing = xmemo_server::password::Hashing::new(Default::default());
    assert!(
        hashing
            .verify("a long passphrase", Some(hash.clone()))
            .await
            .unwrap()
    );
    assert!(!hashing.verify("short", Some(hash)).await.unwrap());
}
