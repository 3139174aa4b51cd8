//! Issue #29 through the real binary: what `xmemo import DIR` costs in memory (a huge file
//! is never read past the request limit; thousands of skill folders do not make the process
//! grow), and `xmemo admin account usage` reporting the quotas the server runs with.

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use xmemo_testkit::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

/// The most a `xmemo import` of these tests may hold resident at its peak. An idle client is
/// ~35 MiB (debug build); before the fixes the sparse file took 930 MiB and the 2,000 folders
/// 650 MiB.
const IMPORT_PEAK_MAX_KIB: u64 = 160 * 1024;

/// A server on `<tmp>/data` with no write rate (thousands of imports in a few seconds), its
/// admin key.
fn server(tmp: &Path, extra: &[&str]) -> (ServerProcess, String) {
    let data = tmp.join("data");
    let mut args = vec![
        "--data-dir",
        data.to_str().expect("utf-8"),
        "--write-rate",
        "0",
    ];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(BIN, &args, &[]);
    let key = std::fs::read_to_string(data.join("admin.key"))
        .expect("admin.key")
        .trim()
        .to_string();
    (server, key)
}

/// `VmHWM` (peak resident KiB) of a running process, or `None` once it has exited (a zombie's
/// status has no memory lines).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// What a measured run gave.
struct Measured {
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident size, KiB.
    peak: u64,
}

/// Runs `xmemo <args>` against the server and watches its peak resident size until it
/// exits (the high-water mark only grows, so the last reading is the peak up to the exit).
fn run_measured(tmp: &Path, url: &str, key: &str, args: &[&str]) -> Measured {
    let out_path = tmp.join("stdout");
    let err_path = tmp.join("stderr");
    let mut child = xmemo_testkit::clean_command(BIN)
        .args(args)
        .current_dir(tmp)
        .env("XMEMO_URL", url)
        .env("XMEMO_KEY", key)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("spawn xmemo");
    let pid = child.id();
    let mut peak = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(kib) = peak_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "xmemo {args:?} did not finish"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(peak > 0, "the child's memory was never read");
    Measured {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        peak,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A skill folder holding a 900 MiB sparse file (no disk used, but 900 MiB to whoever reads
/// it whole): refused PAYLOAD_TOO_LARGE, from a folder of skills and alone, without the
/// client reading more than the request limit.
#[test]
fn a_huge_file_in_a_skill_folder_is_refused_without_being_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (server, key) = server(tmp.path(), &[]);
    let skills = tmp.path().join("skills");
    write(
        &skills.join("small/SKILL.md"),
        "---\nname: small\ndescription: A small skill\n---\nDo it.\n",
    );
    write(
        &skills.join("big/SKILL.md"),
        "---\nname: big\ndescription: A big skill\n---\nDo it.\n",
    );
    std::fs::File::create(skills.join("big/blob.bin"))
        .and_then(|f| f.set_len(900 << 20))
        .expect("sparse file");

    let dir = skills.to_str().expect("utf-8");
    let run = run_measured(tmp.path(), &server.url, &key, &["import", dir, "--json"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let batch: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let summary = &batch["data"]["summary"];
    assert_eq!(summary["imported"], 1, "{batch}");
    assert_eq!(
        summary["refused_by_reason"]["PAYLOAD_TOO_LARGE"], 1,
        "{batch}"
    );
    assert!(
        run.peak < IMPORT_PEAK_MAX_KIB,
        "import DIR peaked at {} KiB",
        run.peak
    );

    let one = skills.join("big");
    let run = run_measured(
        tmp.path(),
        &server.url,
        &key,
        &["import", one.to_str().expect("utf-8")],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("is larger than 16777216 bytes"),
        "{}",
        run.stderr
    );
    assert!(
        run.peak < IMPORT_PEAK_MAX_KIB,
        "import of one folder peaked at {} KiB",
        run.peak
    );
}

/// 2,000 skill folders in one run. The client used to grow ~310 KiB per folder: a 371 KiB
/// compressor state was allocated and freed for every folder in the heap that also took the
/// run's small allocations, which split it, so the next state did not fit (glibc; it shows
/// from ~2,000 folders of this shape, once the allocator's mmap threshold has moved past the
/// state's size: 650 MiB here).
#[test]
fn importing_thousands_of_folders_does_not_grow_the_client() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (server, key) = server(tmp.path(), &[]);
    let skills = tmp.path().join("skills");
    let words = "word ".repeat(200);
    let notes = |i: usize| format!("notes {i}\n").repeat(50);
    const FOLDERS: usize = 2_000;
    for i in 0..FOLDERS {
        let folder = skills.join(format!("s{i:05}"));
        write(
            &folder.join("SKILL.md"),
            &format!(
                "---\nname: skill-{i}\ndescription: Skill number {i} for testing imports\n---\nDo thing {i}. {words}\n"
            ),
        );
        write(&folder.join("references/notes.md"), &notes(i));
    }
    let dir = skills.to_str().expect("utf-8");
    let run = run_measured(tmp.path(), &server.url, &key, &["import", dir, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let batch: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(batch["data"]["summary"]["imported"], FOLDERS);
    assert!(
        run.peak < IMPORT_PEAK_MAX_KIB,
        "importing {FOLDERS} folders peaked at {} KiB",
        run.peak
    );
}

fn admin(data: &Path, args: &[&str]) -> String {
    let out = xmemo_testkit::clean_command(BIN)
        .args(["admin", "--data-dir", data.to_str().expect("utf-8")])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("xmemo admin");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{args:?}\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `xmemo admin account usage` shows the quotas the server was started with (a flag here),
/// not the settings file's defaults; with several servers, the one started last, naming
/// the others that enforce something else; and it says when no server ever recorded any.
#[test]
fn admin_usage_reports_the_quotas_the_server_runs_with() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let (first, _) = server(tmp.path(), &["--quota-memories", "7", "--quota-bytes", "0"]);
    let text = admin(&data, &["account", "usage", "admin"]);
    assert!(
        text.contains(
            "quotas 7 memories, 10000 skills, no bytes quota (quotas of the server started last"
        ),
        "{text}"
    );
    let json: Value = serde_json::from_str(&admin(&data, &["--json", "account", "usage", "admin"]))
        .expect("json");
    assert_eq!(json["quotas"]["memories"], 7, "{json}");
    assert_eq!(json["quotas"]["bytes"], Value::Null, "{json}");
    assert_eq!(json["quotas_from"]["source"], "server", "{json}");
    drop(first);

    // A second server on the same database, started later with another quota.
    let (_second, _) = server(tmp.path(), &["--quota-memories", "9"]);
    let json: Value = serde_json::from_str(&admin(&data, &["--json", "account", "usage", "admin"]))
        .expect("json");
    assert_eq!(json["quotas"]["memories"], 9, "{json}");
    assert_eq!(json["other_nodes"][0]["memories"], 7, "{json}");
    let text = admin(&data, &["account", "usage", "admin"]);
    assert!(
        text.contains("may no longer run) enforces 7 memories"),
        "{text}"
    );

    // A database no server has run on: the settings file's quotas, said so.
    let fresh = tmp.path().join("fresh");
    admin(&fresh, &["account", "create", "bob"]);
    let text = admin(&fresh, &["account", "usage", "bob"]);
    assert!(
        text.contains(
            "no server has recorded its quotas in this database: quotas of the settings file"
        ),
        "{text}"
    );
}
