//! Operators who migrate explicitly: `serve --no-migrate` refuses a database whose schema is
//! behind, `admin migrate` brings it up to date, then `serve --no-migrate` starts.

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn xmemo(args: &[&str]) -> std::process::Output {
    xmemo_testkit::clean_command(BIN)
        .args(args)
        .output()
        .expect("run xmemo")
}

#[test]
fn no_migrate_refuses_a_behind_schema_until_admin_migrate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf-8 path");

    let refused = xmemo(&[
        "serve",
        "--no-migrate",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data,
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("schema is behind") && stderr.contains("xmemo admin migrate"),
        "{stderr}"
    );
    // The environment variable says the same with `1`, as the README writes it.
    let by_env = xmemo_testkit::clean_command(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", data])
        .env("XMEMO_NO_MIGRATE", "1")
        .output()
        .expect("run xmemo");
    assert!(!by_env.status.success());
    let stderr = String::from_utf8_lossy(&by_env.stderr);
    assert!(stderr.contains("schema is behind"), "{stderr}");

    let migrated = xmemo(&["admin", "--data-dir", data, "migrate", "--json"]);
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&migrated.stdout).expect("json report");
    assert_eq!(report["migrated"], true);
    assert_eq!(report["backend"], "sqlite");

    let server =
        xmemo_testkit::ServerProcess::start(BIN, &["--no-migrate", "--data-dir", data], &[]);
    assert!(server.url.starts_with("http://127.0.0.1:"));
}

#[test]
fn a_wrong_database_url_is_a_clear_error_without_credentials() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf-8 path");
    let out = xmemo(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data,
        "--database-url",
        "postgres://xmemo:s3cret-pass@127.0.0.1:1/nowhere",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot open the database"), "{stderr}");
    assert!(!stderr.contains("s3cret-pass"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
