//! End-to-end: `xmemo import DIR` → `xmemo export` → `xmemo diff`, with the real binary
//! against a real `xmemo serve` child process (same approach as tests/cli.rs).

use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn command(cwd: &Path) -> Command {
    let mut cmd = xmemo_testkit::clean_command(BIN);
    cmd.current_dir(cwd);
    cmd
}

/// A running `xmemo serve` on `data_dir`, killed when dropped.
struct Server;

impl Server {
    fn start(data_dir: &Path) -> xmemo_testkit::ServerProcess {
        let dir = data_dir.to_str().expect("utf-8 temp path");
        xmemo_testkit::ServerProcess::start(BIN, &["--data-dir", dir], &[])
    }

    /// A server on `<tmp>/data` and a client of it with the admin key, working in `tmp`.
    fn with_client(tmp: &Path) -> (xmemo_testkit::ServerProcess, Client) {
        let data = tmp.join("data");
        let server = Self::start(&data);
        let key = std::fs::read_to_string(data.join("admin.key")).expect("admin.key");
        let client = Client {
            url: server.url.clone(),
            key: key.trim().to_string(),
            cwd: tmp.to_path_buf(),
        };
        (server, client)
    }
}

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

struct Client {
    url: String,
    key: String,
    cwd: std::path::PathBuf,
}

impl Client {
    fn run(&self, args: &[&str]) -> Run {
        let out = command(&self.cwd)
            .args(args)
            .env("XMEMO_URL", &self.url)
            .env("XMEMO_KEY", &self.key)
            .stdin(Stdio::null())
            .output()
            .expect("run xmemo");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, Some(0), "xmemo {args:?} failed:\n{run:#?}");
        run.stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
    }
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

const SKILL_MD_V1: &str = "---\nname: release-notes\ndescription: Write release notes from merged PRs\nlicense: MIT\n---\n\n# Release notes\n\nCollect the merged pull requests and group them by area.\n";
const SKILL_MD_V2: &str = "---\nname: release-notes\ndescription: Write release notes from merged PRs\nlicense: Apache-2.0\n---\n\n# Release notes\n\nCollect the merged pull requests and group them by team.\n";

#[test]
fn import_directory_export_and_diff() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_server, client) = Server::with_client(tmp.path());

    // A skill directory (with junk the server ignores anyway).
    let dir = tmp.path().join("release-notes");
    write(&dir.join("SKILL.md"), SKILL_MD_V1.as_bytes());
    write(&dir.join("scripts/collect.py"), b"print('prs')\n");
    write(&dir.join("references/style.md"), b"Use short sentences.\n");
    write(&dir.join("assets/logo.bin"), &[0u8, 159, 146, 150, 1, 2]);
    write(&dir.join(".git/HEAD"), b"ref: refs/heads/main\n");
    write(&dir.join(".DS_Store"), b"\x00\x00\x00\x01Bud1");
    let dir_arg = dir.display().to_string();

    let first = client.json(&["import", &dir_arg]);
    assert_eq!(first["kind"], "imported");
    let d = &first["data"];
    assert_eq!(d["slug"], "release-notes");
    assert_eq!(d["created"], true);
    assert_eq!(d["components"], 3);
    assert_eq!(d["source"]["kind"], "upload");
    assert_eq!(d["source"]["file_name"], "release-notes/");
    let rev1 = d["revision_id"].as_str().unwrap().to_string();
    let hash1 = d["canonical_hash"].as_str().unwrap().to_string();

    // The same directory again: unchanged (text output).
    let out = client.ok(&["import", &dir_arg]);
    assert!(out.contains("unchanged: release-notes revision 1"), "{out}");

    // Export: a file, whose capsule re-imports with the same hash elsewhere.
    let capsule = tmp.path().join("out.zip");
    let capsule_arg = capsule.display().to_string();
    let out = client.ok(&[
        "export",
        "release-notes",
        "--revision",
        &rev1,
        "-o",
        &capsule_arg,
    ]);
    assert!(out.contains("wrote") && out.contains(&hash1), "{out}");
    let bytes = std::fs::read(&capsule).unwrap();
    assert!(bytes.starts_with(b"PK"));
    let summary = client.json(&["export", "release-notes", "-o", &capsule_arg]);
    assert_eq!(summary["revision_id"], rev1.as_str());
    assert_eq!(summary["canonical_hash"], hash1.as_str());
    assert_eq!(
        std::fs::read(&capsule).unwrap(),
        bytes,
        "exports are deterministic"
    );
    // Default file name, in the working directory.
    client.ok(&["export", "release-notes"]);
    assert_eq!(
        std::fs::read(tmp.path().join("release-notes-r1.zip")).unwrap(),
        bytes
    );
    // To stdout.
    let mut child = command(tmp.path())
        .args(["export", "release-notes", "-o", "-"])
        .env("XMEMO_URL", &client.url)
        .env("XMEMO_KEY", &client.key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut piped = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut piped)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(piped, bytes);

    let copy = client.json(&["import", &capsule_arg, "--slug", "release-notes-copy"]);
    assert_eq!(copy["data"]["canonical_hash"], hash1.as_str());
    assert_eq!(copy["data"]["from_capsule"], true);

    // A lone SKILL.md file.
    let md = tmp.path().join("SKILL.md");
    write(&md, SKILL_MD_V2.as_bytes());
    let lone = client.json(&["import", &md.display().to_string(), "--slug", "lone"]);
    assert_eq!(lone["data"]["components"], 0);
    assert_eq!(lone["data"]["source"]["format"], "skill_md");

    // Edit and re-import: revision 2, published.
    write(&dir.join("SKILL.md"), SKILL_MD_V2.as_bytes());
    write(
        &dir.join("references/style.md"),
        b"Use short, active sentences.\n",
    );
    std::fs::remove_file(dir.join("scripts/collect.py")).unwrap();
    write(&dir.join("templates/notes.md"), b"## {{version}}\n");
    let out = client.ok(&["import", &dir_arg, "--publish"]);
    assert!(
        out.contains("imported release-notes revision 2 (published)"),
        "{out}"
    );

    // Diff as JSON (by revision numbers) and as text without a terminal.
    let diff = client.json(&["diff", "release-notes", "1", "2"]);
    assert_eq!(diff["from"]["revision_id"], rev1.as_str());
    assert_eq!(diff["diff"]["summary"]["components_added"], 1);
    assert_eq!(diff["diff"]["summary"]["components_removed"], 1);
    assert_eq!(diff["diff"]["summary"]["components_modified"], 1);
    assert_eq!(diff["diff"]["metadata"][0]["key"], "/license");
    let rev2 = diff["to"]["revision_id"].as_str().unwrap().to_string();

    let text = client.ok(&["diff", "release-notes", &rev1, &rev2]);
    assert!(text.contains("[-area.-]{+team.+}"), "{text}");
    assert!(
        text.contains("~ /license: [-\"MIT\"-] → {+\"Apache-2.0\"+}"),
        "{text}"
    );
    assert!(text.contains("{++ templates/notes.md (template"), "{text}");
    assert!(text.contains("[-- scripts/collect.py (script"), "{text}");
    assert!(
        text.contains("~ references/style.md (reference): +2 −1 words"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "no colours without a terminal: {text}"
    );
    let coloured = client.ok(&["diff", "release-notes", "r1", "r2", "--color", "always"]);
    assert!(coloured.contains("\x1b[32mteam.\x1b[0m"), "{coloured}");
    assert!(coloured.contains("\x1b[31;9marea.\x1b[0m"), "{coloured}");

    // Errors: a missing path, an unknown revision number, a hostile directory.
    let run = client.run(&["import", "/nonexistent/skill"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("cannot read"), "{run:#?}");
    let run = client.run(&["diff", "release-notes", "1", "9"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("no revision number 9"), "{run:#?}");
    let bad = tmp.path().join("bad");
    write(&bad.join("SKILL.md"), SKILL_MD_V1.as_bytes());
    write(&bad.join(".env"), b"TOKEN=x\n");
    let run = client.run(&["import", &bad.display().to_string(), "--json"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    let err: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(err["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(err["error"]["details"]["reason"], "sensitive_files");
    assert!(run.stderr.contains(".env"), "{run:#?}");

    // URLs go to the server's URL import (`POST /imports` as JSON): its own refusals come
    // back, for the URL and for the options carried in the body, and nothing is fetched.
    let run = client.run(&["import", "https://gitlab.com/a/b", "--json"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    let err: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(err["error"]["code"], "VALIDATION_ERROR", "{run:#?}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a supported source"),
        "{run:#?}"
    );
    let run = client.run(&[
        "import",
        "https://github.com/a/b",
        "--workspace",
        "no-such-team",
        "--json",
    ]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    let err: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(err["error"]["code"], "NOT_FOUND", "{run:#?}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-team"),
        "{run:#?}"
    );
}

/// Frontmatter with YAML flow lists and maps: a second reader that took every value as a
/// string used to turn these into `"[a, b]"`.
const LISTS_SKILL_MD: &str = "---\nname: one-reader\ndescription: Import and save --dir read a directory alike\nallowed-tools: [Read, Bash]\nmetadata: {tags: [a, b]}\n---\n\n# One reader\n\nRun `Scripts/x.py`.\n";

/// The first bytes of a PNG file, with a NUL and invalid UTF-8 after the signature.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\xff\xfe";

#[test]
fn import_and_save_dir_give_the_same_revision() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_server, client) = Server::with_client(tmp.path());
    let dir = tmp.path().join("skill-folder");
    write(&dir.join("SKILL.md"), LISTS_SKILL_MD.as_bytes());
    write(&dir.join("Scripts/x.py"), b"print('ok')\n");
    write(&dir.join("assets/logo.png"), PNG);
    let dir_arg = dir.display().to_string();

    // import, then save --dir into the slug import chose (the frontmatter name).
    let imported = client.json(&["import", &dir_arg]);
    assert_eq!(imported["data"]["slug"], "one-reader", "{imported:#}");
    assert_eq!(imported["data"]["created"], true);
    let hash = imported["data"]["canonical_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let saved = client.json(&["save", "one-reader", "--dir", &dir_arg]);
    assert_eq!(saved["kind"], "saved", "{saved:#}");
    assert_eq!(saved["data"]["canonical_hash"], hash.as_str(), "{saved:#}");
    assert_eq!(saved["data"]["created"], false, "{saved:#}");
    assert_eq!(saved["data"]["revision_number"], 1);

    // What both saved: lists stay lists, a capitalised `Scripts/` holds scripts, the PNG
    // keeps its bytes.
    let root = client.json(&["recall", "one-reader"]);
    let d = &root["data"];
    assert_eq!(
        d["metadata"]["metadata"]["tags"],
        serde_json::json!(["a", "b"])
    );
    assert_eq!(
        d["metadata"]["allowed-tools"],
        serde_json::json!(["Read", "Bash"])
    );
    let resources: Vec<(String, String)> = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["logical_path"].as_str().unwrap().to_string(),
                r["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        resources,
        vec![
            ("Scripts/x.py".to_string(), "script".to_string()),
            ("assets/logo.png".to_string(), "artifact".to_string()),
        ]
    );
    let rev = d["revision_id"].as_str().unwrap();
    let png = client.json(&[
        "recall",
        "one-reader",
        "--revision",
        rev,
        "--resource",
        "assets/logo.png",
    ]);
    assert_eq!(png["data"]["encoding"], "base64");
    assert_eq!(png["data"]["size"], PNG.len());

    // The other order, in a team workspace (the workspace flag works for both): save
    // --dir first, then import.
    client.ok(&["workspaces", "create", "ops", "--name", "Ops"]);
    let saved = client.json(&["save", "--dir", &dir_arg, "--workspace", "ops"]);
    assert_eq!(saved["data"]["slug"], "one-reader", "{saved:#}");
    assert_eq!(saved["data"]["workspace"], "ops");
    assert_eq!(saved["data"]["created"], true);
    assert_eq!(saved["data"]["canonical_hash"], hash.as_str());
    let imported = client.json(&["import", &dir_arg, "--workspace", "ops"]);
    assert_eq!(imported["data"]["canonical_hash"], hash.as_str());
    assert_eq!(imported["data"]["created"], false, "{imported:#}");

    // --name overrides the frontmatter (documented): a different revision.
    let renamed = client.json(&["save", "one-reader", "--dir", &dir_arg, "--name", "Renamed"]);
    assert_eq!(renamed["data"]["created"], true);
    assert_ne!(renamed["data"]["canonical_hash"], hash.as_str());
}

/// Acceptance (#24): the whole ClawHub corpus folder (`tests/corpus/clawhub`, 1,635
/// SKILL.md files) in one `xmemo import DIR`. Each skill folder gets its own result; the
/// summary's counts are those of the results; at least 99% import (written or found
/// already there under another slug); every refusal is a SPEC hard limit; the exit status
/// says something was refused; and a second run writes nothing.
#[test]
fn the_clawhub_corpus_imports_in_one_command_and_a_second_run_writes_nothing() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/clawhub");
    assert!(
        corpus.join("skills").is_dir(),
        "the ClawHub corpus is missing at {} (it ships with the repository)",
        corpus.display()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let (_server, client) = Server::with_client(tmp.path());
    let corpus_arg = corpus.display().to_string();
    // What the server has stored for the account, read from the database by the operator's
    // command (not from the import's own report).
    let stored = || -> Value {
        let out = command(tmp.path())
            .args(["admin", "--data-dir", data.to_str().expect("utf-8")])
            .args(["--json", "account", "usage", "admin"])
            .stdin(Stdio::null())
            .output()
            .expect("xmemo admin account usage");
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON")["usage"].clone()
    };

    let run = client.run(&["import", &corpus_arg, "--json"]);
    assert_eq!(
        run.code,
        Some(3),
        "some corpus files are over a hard limit:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("refused"), "{}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(value["kind"], "imported_batch");
    let after_first = stored();
    let data = &value["data"];
    let results = data["results"].as_array().unwrap();
    // Every outermost folder holding a SKILL.md (any case) is one result, in folder order.
    let mut folders = Vec::new();
    collect_skill_folders(&corpus, &corpus, &mut folders);
    folders.sort();
    let paths: Vec<&str> = results
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, folders);
    assert!(folders.len() >= 1_400, "{} skill folders", folders.len());

    // The summary is the count of the per-skill results.
    let count = |outcome: &str| results.iter().filter(|r| r["outcome"] == outcome).count();
    let mut by_reason = std::collections::BTreeMap::<String, usize>::new();
    let mut by_kind = std::collections::BTreeMap::<String, usize>::new();
    let mut repaired = 0;
    for r in results {
        if r["outcome"] == "refused" {
            let e = &r["error"];
            *by_reason
                .entry(e["details"]["reason"].as_str().unwrap().to_string())
                .or_default() += 1;
            // a SPEC hard limit, named: instructions empty or over 64 KiB, control characters
            let field = e["details"]["field"].as_str().unwrap_or_default();
            let message = e["message"].as_str().unwrap_or_default();
            let hard = message.contains("control character")
                || (field == "instruction_body"
                    && (message.contains("must not be empty") || e["details"]["limit"] == 65_536));
            assert!(hard, "not a hard limit: {r}");
            continue;
        }
        let mut kinds: Vec<&str> = r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["kind"].as_str().unwrap())
            .filter(|k| *k != "slug_collision")
            .collect();
        kinds.sort();
        kinds.dedup();
        repaired += usize::from(!kinds.is_empty());
        for k in kinds {
            *by_kind.entry(k.to_string()).or_default() += 1;
        }
    }
    let summary = &data["summary"];
    assert_eq!(summary["skills"], results.len());
    assert_eq!(summary["imported"], count("created"));
    assert_eq!(summary["unchanged"], count("unchanged"));
    assert_eq!(summary["duplicates"], count("duplicate"));
    assert_eq!(summary["refused"], count("refused"));
    assert_eq!(summary["repaired"], repaired);
    assert_eq!(summary["refused_by_reason"], serde_json::json!(by_reason));
    assert_eq!(summary["repairs_by_kind"], serde_json::json!(by_kind));
    assert_eq!(count("unchanged"), 0, "a fresh server");
    // One skill stored per created result; a duplicate is reported, not written.
    assert_eq!(after_first["skills"], count("created"), "{after_first}");
    let accepted = count("created") + count("duplicate");
    assert!(
        accepted * 100 >= results.len() * 99,
        "{accepted} of {} skill folders imported",
        results.len()
    );
    // The registry's byte-identical copies are named, and point at a skill of this run.
    assert!(count("duplicate") > 0);
    for r in results.iter().filter(|r| r["outcome"] == "duplicate") {
        let other = r["same_content_as"].as_str().unwrap();
        assert!(
            results
                .iter()
                .any(|o| o["slug"] == other && o["outcome"] == "created"),
            "{r}"
        );
    }
    // Slugs are unique, and collisions are explained.
    let mut slugs: Vec<&str> = results
        .iter()
        .map(|r| r["slug"].as_str().unwrap())
        .collect();
    slugs.sort();
    let before = slugs.len();
    slugs.dedup();
    assert_eq!(slugs.len(), before, "two folders got the same slug");
    println!(
        "ClawHub corpus through `xmemo import DIR`: {}",
        serde_json::to_string_pretty(summary).unwrap()
    );

    // A second run, as text: nothing new is written.
    let again = client.run(&["import", &corpus_arg]);
    assert_eq!(again.code, Some(3), "{}", again.stderr);
    let number = |label: &str| -> usize {
        again
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("  {label}")))
            .and_then(|rest| rest.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{}", again.stdout))
    };
    assert_eq!(number("imported"), 0, "the second run wrote");
    assert_eq!(stored(), after_first, "the second run stored something");
    assert_eq!(number("unchanged"), count("created"));
    assert_eq!(number("duplicates"), count("duplicate"));
    assert_eq!(number("refused"), count("refused"));
    assert!(
        again.stdout.contains("refused by reason"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_folder_import_prints_its_repairs_and_writes_duplicates_only_if_asked() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_server, client) = Server::with_client(tmp.path());
    let dir = tmp.path().join("skills");
    // No frontmatter at all: name from the heading, description from the first paragraph.
    write(
        &dir.join("alpha/SKILL.md"),
        b"# Alpha helper\n\nTidies the alpha reports before the weekly review.\n\n1. Open them.\n",
    );
    let same = b"---\nname: beta-steps\ndescription: Beta steps for the release\n---\n\nDo beta.\n";
    write(&dir.join("beta/SKILL.md"), same);
    write(&dir.join("gamma/SKILL.md"), same);
    let dir_arg = dir.display().to_string();

    let text = client.run(&["import", &dir_arg]);
    assert_eq!(text.code, Some(0), "{text:#?}");
    assert!(
        text.stdout.contains("warning name:") && text.stdout.contains("warning description:"),
        "the repairs are printed:\n{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("duplicate  gamma → same content as `beta`, not written"),
        "{}",
        text.stdout
    );
    let listed = |slug: &str| {
        client
            .run(&["recall", slug, "--json"])
            .code
            .is_some_and(|c| c == 0)
    };
    assert!(listed("alpha") && listed("beta"));
    assert!(
        !listed("gamma"),
        "a duplicate was written without being asked"
    );

    let asked = client.json(&["import", &dir_arg, "--allow-duplicates"]);
    let outcome = |path: &str| {
        asked["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == path)
            .map(|r| r["outcome"].clone())
            .unwrap_or_else(|| panic!("no {path} in {asked}"))
    };
    assert_eq!(outcome("alpha"), "unchanged");
    assert_eq!(outcome("beta"), "unchanged");
    assert_eq!(outcome("gamma"), "created");
    assert!(listed("gamma"));
}

#[test]
fn a_folder_over_the_cap_is_refused_before_anything_is_sent() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("many");
    for i in 0..=xmemo_core::package::batch::MAX_SKILLS_PER_DIRECTORY {
        write(
            &dir.join(format!("s{i}/SKILL.md")),
            format!("---\nname: s{i}\ndescription: Skill {i}\n---\n\nStep.\n").as_bytes(),
        );
    }
    // Nothing listens there: a request sent would fail with a connection error instead.
    let client = Client {
        url: "http://127.0.0.1:9".into(),
        key: "xmk_unused".into(),
        cwd: tmp.path().to_path_buf(),
    };
    let run = client.run(&["import", &dir.display().to_string()]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("10001 skill folders") && run.stderr.contains("at most 10000"),
        "{}",
        run.stderr
    );
}

/// The outermost folders under `root` holding a file named SKILL.md in any case, relative
/// to `root` (written out here, not taken from the code under test).
fn collect_skill_folders(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let holds = entries.iter().any(|p| {
        p.is_file()
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
    });
    if holds && dir != root {
        let rel = dir.strip_prefix(root).unwrap();
        out.push(rel.to_str().unwrap().replace('\\', "/"));
        return;
    }
    for p in entries.iter().filter(|p| p.is_dir()) {
        collect_skill_folders(root, p, out);
    }
}
