//! End-to-end tests of the `xmemo` client commands: a real `xmemo serve` child process on a
//! temporary data directory, driven by the real binary.

use serde_json::Value;

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
        Self::start_with(data_dir, &[])
    }

    fn start_with(data_dir: &Path, args: &[&str]) -> xmemo_testkit::ServerProcess {
        let dir = data_dir.to_str().expect("utf-8 temp path");
        let mut all = vec!["--data-dir", dir];
        all.extend_from_slice(args);
        let server = xmemo_testkit::ServerProcess::start(BIN, &all, &[]);
        assert!(
            server.url.starts_with("http://127.0.0.1:"),
            "{}",
            server.url
        );
        server
    }
}

/// One finished client command.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// Client commands with a given server URL and key.
struct Client {
    url: String,
    key: Option<String>,
    cwd: std::path::PathBuf,
    env: Vec<(String, String)>,
}

impl Client {
    fn new(url: &str, key: Option<&str>, cwd: &Path) -> Client {
        Client {
            url: url.to_string(),
            key: key.map(str::to_string),
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
        }
    }

    fn with_key(&self, key: &str) -> Client {
        Client::new(&self.url, Some(key), &self.cwd)
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut cmd = command(&self.cwd);
        cmd.args(args)
            .env("XMEMO_URL", &self.url)
            .stdin(Stdio::null());
        if let Some(key) = &self.key {
            cmd.env("XMEMO_KEY", key);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run xmemo");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and requires success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, Some(0), "xmemo {args:?} failed:\n{run:#?}");
        run.stdout
    }

    /// Runs with `--json`, requires success, parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let run = self.run(&all);
        assert_eq!(run.code, Some(0), "xmemo {all:?} failed:\n{run:#?}");
        run.json()
    }

    /// Runs and requires exit code 1 with `error: CODE` on stderr; returns the run.
    fn fails_with(&self, args: &[&str], code: &str) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, Some(1), "xmemo {args:?} should fail:\n{run:#?}");
        assert!(
            run.stderr.contains(&format!("error: {code}")),
            "xmemo {args:?} should fail with {code}:\n{run:#?}"
        );
        run
    }
}

/// A server on a fresh data dir and a client holding its bootstrap admin key.
fn setup() -> (tempfile::TempDir, xmemo_testkit::ServerProcess, Client) {
    setup_with(&[])
}

/// [`setup`] with these `xmemo serve` flags.
fn setup_with(args: &[&str]) -> (tempfile::TempDir, xmemo_testkit::ServerProcess, Client) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let server = Server::start_with(&data, args);
    let key = std::fs::read_to_string(data.join("admin.key")).expect("admin.key written");
    let client = Client::new(&server.url, Some(key.trim()), tmp.path());
    (tmp, server, client)
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v:#}"))
}

fn search_slugs(client: &Client, query: &str) -> Vec<String> {
    let v = client.json(&["search", query]);
    assert_eq!(v["kind"], "descriptors");
    v["data"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["slug"].as_str().unwrap().to_string())
        .collect()
}

const SKILL_MD: &str = "---\nname: lint-fix\ndescription: Fix the linter findings in a Rust workspace\nlicense: MIT\nmetadata:\n  author: platform\n---\n\n# Lint fix\n\nRun `scripts/fix.sh`, then commit.\n";

fn binary_bytes() -> Vec<u8> {
    (0u8..=255).cycle().take(3000).collect()
}

#[test]
fn skills_end_to_end() {
    let (tmp, _server, client) = setup();
    let root = tmp.path();

    // Save from flags, with one component.
    write(
        &root.join("checklist.md"),
        b"- [ ] tests green\n- [ ] changelog\n",
    );
    let component = format!(
        "reference:references/checklist.md={}",
        root.join("checklist.md").display()
    );
    let save = [
        "save",
        "deploy-prod",
        "--name",
        "Deploy to production",
        "--description",
        "How we ship the web app",
        "--body",
        "Run make deploy, then watch the dashboards.",
        "--component",
        &component,
    ];
    let out = client.ok(&save);
    assert!(
        out.contains("created deploy-prod revision 1 (draft)"),
        "{out}"
    );
    assert!(out.contains("xmemo publish deploy-prod rev_"), "{out}");
    let again = client.ok(&save);
    assert!(
        again.contains("unchanged: deploy-prod revision 1"),
        "{again}"
    );

    // Drafts are not discoverable.
    let out = client.ok(&["search", "deploy"]);
    assert!(out.contains("no published skill matches"), "{out}");
    assert!(search_slugs(&client, "deploy").is_empty());

    let root_v = client.json(&["recall", "deploy-prod"]);
    assert_eq!(root_v["kind"], "root");
    assert_eq!(root_v["data"]["status"], "draft");
    let deploy_rev = str_at(&root_v, "/data/revision_id").to_string();

    let out = client.ok(&[
        "publish",
        "deploy-prod",
        &deploy_rev,
        "--note",
        "first release",
    ]);
    assert!(out.contains("is now published"), "{out}");
    let out = client.ok(&["search", "deploy"]);
    assert!(
        out.contains("deploy-prod") && out.contains("Deploy to production"),
        "{out}"
    );
    assert_eq!(search_slugs(&client, "deploy"), vec!["deploy-prod"]);

    // Save a skill directory: frontmatter, a script, a binary asset. It is read by the
    // import rules, so a secret or a symlink refuses the whole directory (naming the path)
    // and nothing is saved.
    let dir = root.join("lint-fix");
    write(&dir.join("SKILL.md"), SKILL_MD.as_bytes());
    write(
        &dir.join("scripts/fix.sh"),
        b"#!/bin/sh\ncargo clippy --fix\n",
    );
    write(&dir.join("assets/logo.bin"), &binary_bytes());
    write(&dir.join(".env"), b"SECRET=1\n");
    let dir_arg = dir.display().to_string();
    let run = client.fails_with(&["save", "--dir", &dir_arg], "VALIDATION_ERROR");
    assert!(
        run.stderr.contains(".env") && run.stderr.contains("sensitive_files"),
        "{run:#?}"
    );
    std::fs::remove_file(dir.join(".env")).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link.txt")).unwrap();
        let run = client.fails_with(&["save", "--dir", &dir_arg], "VALIDATION_ERROR");
        assert!(run.stderr.contains("link.txt"), "{run:#?}");
        std::fs::remove_file(dir.join("link.txt")).unwrap();
    }
    client.fails_with(&["recall", "lint-fix"], "NOT_FOUND");
    // Junk the package rules ignore is skipped silently.
    write(&dir.join(".DS_Store"), b"\x00\x00\x00\x01Bud1");
    let mut saved = client.with_key(client.key.as_deref().unwrap());
    saved
        .env
        .push(("XMEMO_AGENT_INSTANCE_ID".into(), "ci-runner-7".into()));
    let run = saved.run(&["save", "--dir", &dir_arg, "--publish"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout
            .contains("created lint-fix revision 1 (published)"),
        "{run:#?}"
    );
    assert_eq!(search_slugs(&client, "linter"), vec!["lint-fix"]);

    // Level 1.
    let out = client.ok(&["recall", "lint-fix"]);
    for needle in [
        "lint-fix",
        "Run `scripts/fix.sh`, then commit.",
        "published",
        "scripts/fix.sh",
        "script",
        "assets/logo.bin",
        "artifact",
        "\"license\":\"MIT\"",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    assert!(!out.contains(".DS_Store"), "{out}");
    let lint = client.json(&["recall", "lint-fix"]);
    let rev1 = str_at(&lint, "/data/revision_id").to_string();
    assert_eq!(lint["data"]["resources"].as_array().unwrap().len(), 2);
    assert_eq!(lint["data"]["metadata"]["metadata"]["author"], "platform");
    assert_eq!(
        lint["data"]["instruction_body"],
        "# Lint fix\n\nRun `scripts/fix.sh`, then commit.\n"
    );

    // Level 2: text, binary notice, raw download.
    let out = client.ok(&[
        "recall",
        "lint-fix",
        "--revision",
        &rev1,
        "--resource",
        "scripts/fix.sh",
    ]);
    assert_eq!(out, "#!/bin/sh\ncargo clippy --fix\n");
    let out = client.ok(&[
        "recall",
        "lint-fix",
        "--revision",
        &rev1,
        "--resource",
        "assets/logo.bin",
    ]);
    assert!(out.contains("binary") && out.contains("-o FILE"), "{out}");
    let v = client.json(&[
        "recall",
        "lint-fix",
        "--revision",
        &rev1,
        "--resource",
        "assets/logo.bin",
    ]);
    assert_eq!(v["kind"], "resource");
    assert_eq!(v["data"]["encoding"], "base64");
    let target = root.join("logo.out");
    let target_arg = target.display().to_string();
    let run = client.run(&[
        "recall",
        "lint-fix",
        "--revision",
        &rev1,
        "--resource",
        "assets/logo.bin",
        "-o",
        &target_arg,
    ]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stderr.contains("wrote"), "{run:#?}");
    assert_eq!(std::fs::read(&target).unwrap(), binary_bytes());

    // An unpinned Level 2 read goes to the server and comes back refused.
    let run = client.fails_with(
        &["recall", "lint-fix", "--resource", "assets/logo.bin"],
        "REVISION_PIN_REQUIRED",
    );
    assert!(run.stdout.is_empty(), "{run:#?}");
    let run = client.run(&[
        "recall",
        "lint-fix",
        "--resource",
        "assets/logo.bin",
        "--json",
    ]);
    assert_eq!(run.code, Some(1));
    let err = run.json();
    assert_eq!(err["error"]["code"], "REVISION_PIN_REQUIRED");
    assert_eq!(err["error"]["retryable"], false);
    client.fails_with(
        &[
            "recall",
            "lint-fix",
            "--revision",
            &rev1,
            "--resource",
            "nope.txt",
        ],
        "NOT_FOUND",
    );
    let run = client.run(&[
        "recall",
        "lint-fix",
        "--revision",
        &rev1,
        "--resource",
        "scripts/../fix.sh",
    ]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("`..`"), "{run:#?}");

    // The slug comes from the directory name when the frontmatter name is not a valid slug,
    // and an explicit SLUG wins over both.
    let pretty = root.join("pretty-dir");
    write(
        &pretty.join("SKILL.md"),
        b"---\nname: Pretty Name\ndescription: A display name\n---\nBody.\n",
    );
    let pretty_arg = pretty.display().to_string();
    let out = client.ok(&["save", "--dir", &pretty_arg]);
    assert!(out.contains("created pretty-dir revision 1"), "{out}");
    let out = client.ok(&["save", "--dir", &pretty_arg, "explicit-slug"]);
    assert!(out.contains("created explicit-slug revision 1"), "{out}");
    let named = client.json(&["recall", "explicit-slug"]);
    assert_eq!(named["data"]["name"], "Pretty Name");

    // A second revision; the pinned first one still reads the same.
    write(
        &dir.join("SKILL.md"),
        SKILL_MD.replace("then commit", "then push").as_bytes(),
    );
    let out = client.ok(&["save", "--dir", &dir_arg]);
    assert!(out.contains("created lint-fix revision 2 (draft)"), "{out}");
    let saved2 = client.json(&["save", "--dir", &dir_arg]);
    assert_eq!(saved2["kind"], "saved");
    assert_eq!(saved2["data"]["created"], false);
    let rev2 = str_at(&saved2, "/data/revision_id").to_string();
    let pinned = client.json(&["recall", "lint-fix", "--revision", &rev1]);
    assert!(str_at(&pinned, "/data/instruction_body").contains("then commit"));

    // Revisions, with the attribution header of the first save.
    let out = client.ok(&["revisions", "lint-fix"]);
    assert!(out.contains(&rev1) && out.contains(&rev2), "{out}");
    assert!(out.contains("published") && out.contains("draft"), "{out}");
    assert!(out.contains("ci-runner-7"), "{out}");
    let list = client.json(&["revisions", "lint-fix"]);
    assert_eq!(list["revisions"].as_array().unwrap().len(), 2);

    // Deprecate; the deprecated revision stays readable when pinned.
    let out = client.ok(&["deprecate", "lint-fix", &rev1, "--note", "superseded"]);
    assert!(out.contains("is now deprecated"), "{out}");
    let out = client.ok(&["revisions", "lint-fix"]);
    assert!(out.contains("deprecated"), "{out}");
    client.ok(&[
        "recall",
        "lint-fix",
        "--revision",
        &rev1,
        "--resource",
        "scripts/fix.sh",
    ]);

    // Archive removes from search; restore brings it back.
    let out = client.ok(&["archive", "deploy-prod", "--reason", "replaced"]);
    assert!(out.contains("archived deploy-prod"), "{out}");
    assert!(search_slugs(&client, "deploy").is_empty());
    let out = client.ok(&["restore", "deploy-prod"]);
    assert!(out.contains("restored deploy-prod"), "{out}");
    assert_eq!(search_slugs(&client, "deploy"), vec!["deploy-prod"]);

    // Errors from the server keep their code.
    let missing = client.fails_with(&["recall", "no-such-skill"], "NOT_FOUND");
    // The server's refusal names its request, for the operator's log (issue #32 item 5).
    assert!(
        missing.stderr.contains("\n  request id: req_"),
        "{}",
        missing.stderr
    );
    let run = client.fails_with(&["save", "Bad_Slug", "--body", "x"], "VALIDATION_ERROR");
    assert!(run.stderr.contains("slug"), "{run:#?}");
    let run = client.run(&["save", "x", "--body", "x", "--component", "bogus:a=b"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("unknown value `bogus`"), "{run:#?}");
    assert!(run.stderr.contains("TYPE:PATH=FILE"), "{run:#?}");
}

#[test]
fn workspaces_members_keys_and_review() {
    // Bob declines an invitation and is invited again at once below: without the week's
    // cool-down after a decline (issue #23; tests/hardening.rs of the server tests it).
    let (tmp, server, admin) = setup_with(&["--invitation-cool-down-secs", "0"]);
    let data = tmp.path().join("data");
    let data_arg = data.display().to_string();

    let out = admin.ok(&[
        "workspaces",
        "create",
        "platform",
        "--name",
        "Platform team",
    ]);
    assert!(out.contains("created team workspace platform"), "{out}");
    let out = admin.ok(&["workspaces", "list"]);
    assert!(
        out.contains("platform") && out.contains("team") && out.contains("owner"),
        "{out}"
    );
    let list = admin.json(&["workspaces", "list"]);
    assert_eq!(list["workspaces"].as_array().unwrap().len(), 2);

    // A second account, created by the operator command while the server runs.
    let bob = admin.ok(&[
        "admin",
        "--data-dir",
        &data_arg,
        "account",
        "create",
        "bob",
        "--with-key",
    ]);
    let bob_key = bob
        .lines()
        .find_map(|l| l.strip_prefix("API key (shown once): "))
        .unwrap_or_else(|| panic!("no key in:\n{bob}"))
        .trim()
        .to_string();
    let bob = admin.with_key(&bob_key);
    assert!(bob.ok(&["whoami"]).contains("bob"));

    // Joining a team takes an invitation the invitee accepts.
    let out = admin.ok(&[
        "workspaces",
        "invite",
        "platform",
        "bob",
        "--role",
        "viewer",
    ]);
    assert!(out.contains("invited bob to platform as viewer"), "{out}");
    bob.fails_with(&["workspaces", "members", "platform"], "NOT_FOUND");
    let pending = admin.json(&["workspaces", "invitations", "platform"]);
    let first = str_at(&pending, "/invitations/0/invitation_id").to_string();
    assert!(
        admin
            .ok(&["workspaces", "invitations", "platform"])
            .contains(&first)
    );
    let out = bob.ok(&["invitations"]);
    assert!(out.contains(&first) && out.contains("platform"), "{out}");
    let declined = bob.json(&["invitations", "decline", &first]);
    assert_eq!(declined["invitation"]["status"], "declined");
    assert!(
        bob.ok(&["invitations", "list"])
            .contains("no pending invitations")
    );
    // Invited again at once: this server runs without the cool-down after a decline (see
    // the top of the test).
    let invited = admin.json(&[
        "workspaces",
        "invite",
        "platform",
        "bob",
        "--role",
        "member",
    ]);
    let second = str_at(&invited, "/invitation/invitation_id").to_string();
    let out = bob.ok(&["invitations", "accept", &second]);
    assert!(out.contains("joined platform as member"), "{out}");
    let out = admin.ok(&["workspaces", "members", "platform"]);
    assert!(out.contains("admin") && out.contains("owner"), "{out}");
    assert!(out.contains("bob") && out.contains("member"), "{out}");
    let members = admin.json(&["workspaces", "members", "platform"]);
    assert_eq!(members["members"].as_array().unwrap().len(), 2);
    admin.fails_with(
        &[
            "workspaces",
            "set-role",
            "platform",
            "bob",
            "--role",
            "emperor",
        ],
        "VALIDATION_ERROR",
    );
    // A role change is for members only; an invitation can be withdrawn.
    admin.fails_with(
        &[
            "workspaces",
            "set-role",
            "platform",
            "carol",
            "--role",
            "viewer",
        ],
        "NOT_FOUND",
    );
    let third = admin.json(&[
        "workspaces",
        "invite",
        "platform",
        "carol",
        "--role",
        "viewer",
    ]);
    let third = str_at(&third, "/invitation/invitation_id").to_string();
    let out = admin.ok(&["workspaces", "revoke-invitation", "platform", &third]);
    assert!(out.contains("revoked invitation"), "{out}");
    assert_eq!(
        admin.json(&["workspaces", "invitations", "platform"])["invitations"],
        serde_json::json!([])
    );

    // Team review: a member's publish becomes a proposal, an owner approves or rejects.
    let save = |who: &Client, body: &str| {
        who.json(&[
            "save",
            "onboard",
            "--workspace",
            "platform",
            "--name",
            "Onboarding",
            "--description",
            "Set up a new laptop",
            "--body",
            body,
            "--publish",
        ])
    };
    let proposed = save(&bob, "Install the toolchain.");
    assert_eq!(proposed["data"]["status"], "proposed");
    let rev1 = str_at(&proposed, "/data/revision_id").to_string();
    bob.fails_with(
        &["approve", "onboard", &rev1, "--workspace", "platform"],
        "PERMISSION_DENIED",
    );
    let out = admin.ok(&["approve", "onboard", &rev1, "--workspace", "platform"]);
    assert!(out.contains("is now published"), "{out}");
    let second = save(&bob, "Install the toolchain and the VPN.");
    let rev2 = str_at(&second, "/data/revision_id").to_string();
    let out = admin.ok(&[
        "reject",
        "onboard",
        &rev2,
        "--note",
        "needs the VPN profile",
        "--workspace",
        "platform",
    ]);
    assert!(
        out.contains("is now draft") && out.contains("needs the VPN profile"),
        "{out}"
    );

    // The same slug in two readable workspaces is ambiguous without --workspace.
    admin.ok(&[
        "save",
        "onboard",
        "--name",
        "Mine",
        "--description",
        "Personal notes",
        "--body",
        "Mine.",
    ]);
    let run = admin.fails_with(&["recall", "onboard"], "AMBIGUOUS_SLUG");
    assert!(
        run.stderr.contains("candidate") && run.stderr.contains("platform"),
        "{run:#?}"
    );
    let run = admin.run(&["recall", "onboard", "--json"]);
    assert_eq!(run.json()["error"]["code"], "AMBIGUOUS_SLUG");
    assert!(
        run.json()["error"]["details"]["candidates"]
            .as_array()
            .unwrap()
            .len()
            == 2
    );
    let out = admin.ok(&["recall", "onboard", "--workspace", "platform"]);
    assert!(out.contains("Install the toolchain."), "{out}");

    let out = admin.ok(&["workspaces", "remove-member", "platform", "bob"]);
    assert!(out.contains("removed bob from platform"), "{out}");
    bob.fails_with(&["workspaces", "members", "platform"], "NOT_FOUND");

    // Any member may leave; the last owner may not.
    let again = admin.json(&[
        "workspaces",
        "invite",
        "platform",
        "bob",
        "--role",
        "viewer",
    ]);
    bob.ok(&[
        "invitations",
        "accept",
        str_at(&again, "/invitation/invitation_id"),
    ]);
    let left = bob.json(&["workspaces", "leave", "platform"]);
    assert_eq!(left["left"]["workspace"], "platform");
    bob.fails_with(&["workspaces", "members", "platform"], "NOT_FOUND");
    let run = admin.fails_with(&["workspaces", "leave", "platform"], "CONFLICT");
    assert!(run.stderr.contains("at least one owner"), "{run:#?}");
    let run = admin.run(&["workspaces", "leave", "platform", "--json"]);
    assert_eq!(run.json()["error"]["code"], "CONFLICT");

    // Keys: create (secret once), list, use, revoke.
    let out = admin.ok(&["keys", "create", "--name", "laptop"]);
    assert!(
        out.contains("created key key_") && out.contains("xmk_"),
        "{out}"
    );
    assert!(out.contains("shown once"), "{out}");
    let created = admin.json(&["keys", "create", "--name", "ci", "--scopes", "memory:read"]);
    let ci_key = str_at(&created, "/key/key").to_string();
    let ci_id = str_at(&created, "/key/key_id").to_string();
    let out = admin.ok(&["keys", "list"]);
    assert!(out.contains(&ci_id) && out.contains("active"), "{out}");
    assert!(!out.contains(&ci_key), "keys list must never show a secret");
    let ci = admin.with_key(&ci_key);
    let me = ci.json(&["whoami"]);
    assert_eq!(me["scopes"], serde_json::json!(["memory:read"]));
    ci.fails_with(
        &[
            "save",
            "ci-skill",
            "--name",
            "n",
            "--description",
            "d",
            "--body",
            "b",
        ],
        "PERMISSION_DENIED",
    );
    let out = admin.ok(&["keys", "revoke", &ci_id]);
    assert!(out.contains(&format!("revoked {ci_id}")), "{out}");
    ci.fails_with(&["whoami"], "AUTH_REQUIRED");
    let run = ci.run(&["whoami", "--json"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.json()["error"]["code"], "AUTH_REQUIRED");
    assert!(!run.stdout.contains(&ci_key) && !run.stderr.contains(&ci_key));
    let keys = admin.json(&["keys", "list"]);
    let revoked = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key_id"] == ci_id.as_str())
        .unwrap();
    assert!(revoked["revoked_at"].is_string());

    // Flags override the environment.
    let other = Client::new("http://127.0.0.1:9", None, tmp.path());
    let out = other.ok(&["whoami", "--url", &server.url, "--key", &bob_key]);
    assert!(out.contains("bob"), "{out}");
}

#[test]
fn client_errors_are_clear_without_a_server() {
    let tmp = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");

    let no_key = Client::new(&url, None, tmp.path());
    let run = no_key.run(&["whoami"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("XMEMO_KEY") && run.stderr.contains("admin.key"),
        "{run:#?}"
    );
    let run = no_key.run(&["search", "x", "--json"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.json()["error"]["code"], "AUTH_REQUIRED");
    let empty_key = Client::new(&url, Some(""), tmp.path());
    assert!(empty_key.run(&["whoami"]).stderr.contains("XMEMO_KEY"));

    let secret = "xmk_this-secret-must-never-be-printed";
    let unreachable = Client::new(&url, Some(secret), tmp.path());
    let run = unreachable.run(&["search", "deploy"]);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("cannot reach the xmemo server") && run.stderr.contains(&url),
        "{run:#?}"
    );
    assert!(!run.stderr.contains(secret) && !run.stdout.contains(secret));
    let run = unreachable.run(&["recall", "deploy", "--json"]);
    assert_eq!(run.code, Some(1));
    let err = run.json();
    assert_eq!(err["error"]["code"], "SERVICE_UNAVAILABLE");
    assert_eq!(err["error"]["retryable"], true);
    assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));

    let bad_url = Client::new("not a url", Some(secret), tmp.path());
    let run = bad_url.run(&["whoami"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("not a url"), "{run:#?}");

    // Local input problems are reported before any request.
    let run = unreachable.run(&["save", "x", "--name", "n", "--description", "d"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("--body"), "{run:#?}");
    let run = unreachable.run(&["save", "--dir", "/nonexistent/skill"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("SKILL.md"), "{run:#?}");
    let run = unreachable.run(&["save", "x", "--body", "b", "--metadata", "[1]"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("--metadata"), "{run:#?}");
    // -o only makes sense with --resource.
    let run = unreachable.run(&["recall", "x", "-o", "file"]);
    assert_eq!(run.code, Some(2), "{run:#?}");
}

#[test]
fn admin_creates_an_account_on_a_stopped_server_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let data_arg = data.display().to_string();
    drop(Server::start(&data));

    let admin = Client::new("http://127.0.0.1:9", None, tmp.path());
    let out = admin.ok(&[
        "admin",
        "--data-dir",
        &data_arg,
        "account",
        "create",
        "bob",
        "--with-key",
    ]);
    assert!(out.contains("created account bob"), "{out}");
    let bob_key = out
        .lines()
        .find_map(|l| l.strip_prefix("API key (shown once): "))
        .unwrap_or_else(|| panic!("no key in:\n{out}"))
        .trim()
        .to_string();
    let listed = admin.json(&["admin", "--data-dir", &data_arg, "account", "list"]);
    assert_eq!(listed["accounts"].as_array().unwrap().len(), 2);

    let server = Server::start(&data);
    let bob = Client::new(&server.url, Some(&bob_key), tmp.path());
    let me = bob.json(&["whoami"]);
    assert_eq!(me["account"]["handle"], "bob");
    let out = bob.ok(&["whoami"]);
    assert!(out.contains("bob") && out.contains("personal"), "{out}");
}

#[test]
fn memories_and_account_end_to_end() {
    let (tmp, _server, admin) = setup();
    let data_arg = tmp.path().join("data").display().to_string();
    let created = admin.ok(&[
        "admin",
        "--data-dir",
        &data_arg,
        "account",
        "create",
        "mona",
        "--with-key",
    ]);
    let key = created
        .lines()
        .find_map(|l| l.strip_prefix("API key (shown once): "))
        .unwrap_or_else(|| panic!("no key in:\n{created}"))
        .trim()
        .to_string();
    let mut mona = admin.with_key(&key);
    mona.env = vec![("XMEMO_AGENT_INSTANCE_ID".into(), "mona-runner-1".into())];

    // Issue #31, item 6: an empty recall says where it looked and what to check next — here,
    // a new account with nothing saved: the key and the server this client uses.
    let empty = mona.ok(&["memories", "staging port"]);
    for said in [
        "no memory matches",
        "searched:   personal",
        "filters:    query \"staging port\"",
        "recallable: 0 (",
        "no memory is saved where mona can read yet",
        "XMEMO_KEY",
        "xmemo doctor",
    ] {
        assert!(empty.contains(said), "{said:?} not in:\n{empty}");
    }

    let args = [
        "remember",
        "The staging database listens on port 5433",
        "--kind",
        "fact",
        "--tag",
        "db",
        "--project",
        "shop",
        "--title",
        "Staging DB",
    ];
    let first = mona.json(&args);
    assert_eq!(first["kind"], "remembered");
    assert_eq!(first["data"]["created"], true);
    let id = str_at(&first, "/data/memory/memory_id").to_string();
    assert_eq!(
        first["data"]["memory"]["saved_by"]["agent_instance_id"],
        "mona-runner-1"
    );
    let again = mona.json(&args);
    assert_eq!(again["data"]["created"], false);
    assert_eq!(str_at(&again, "/data/memory/memory_id"), id);
    assert!(mona.ok(&args).contains("already remembered"));

    let found = mona.json(&["memories", "staging port", "--project", "shop"]);
    assert_eq!(str_at(&found, "/data/memories/0/memory_id"), id);
    assert!(found["data"].get("hint").is_none(), "{found}");
    // Something to find, but not with these words: say so.
    let missed = mona.ok(&["memories", "zebra", "--project", "shop"]);
    for said in [
        "no memory matches",
        "filters:    query \"zebra\"; project shop",
        "recallable: 1 (",
        "1 memory is recallable in personal, but none matches",
    ] {
        assert!(missed.contains(said), "{said:?} not in:\n{missed}");
    }
    let by_instance = mona.json(&["memories", "--instance", "mona-runner-1"]);
    assert_eq!(
        by_instance["data"]["memories"].as_array().map(Vec::len),
        Some(1)
    );
    let table = mona.ok(&["memories", "--tag", "db"]);
    assert!(
        table.contains(&id) && table.contains("Staging DB"),
        "{table}"
    );
    assert!(mona.ok(&["memory", "show", &id]).contains("port 5433"));

    let updated = mona.json(&[
        "memory",
        "update",
        &id,
        "--expected-version",
        "1",
        "--content",
        "The staging database listens on port 5434",
    ]);
    assert_eq!(updated["data"]["version"], 2);
    mona.fails_with(
        &[
            "memory",
            "update",
            &id,
            "--expected-version",
            "1",
            "--content",
            "stale",
        ],
        "CONFLICT",
    );
    let history = mona.json(&["memory", "history", &id]);
    assert_eq!(
        history["data"]["versions"].as_array().map(Vec::len),
        Some(2)
    );

    mona.json(&["memory", "forget", &id, "--reason", "moved"]);
    assert_eq!(
        mona.json(&["memories"])["data"]["memories"],
        serde_json::json!([])
    );
    let with = mona.json(&["memories", "--forgotten"]);
    assert_eq!(str_at(&with, "/data/memories/0/status"), "forgotten");
    mona.fails_with(&["memory", "forget", &id], "CONFLICT");
    mona.json(&["memory", "restore", &id]);
    mona.fails_with(&["memory", "restore", &id], "CONFLICT");
    mona.fails_with(
        &["remember", "x", "--kind", "note", "--tag", "Not A Tag"],
        "VALIDATION_ERROR",
    );

    // The account: export to a file, then delete with the handle typed back.
    let out = tmp.path().join("mona-export.zip");
    let out_arg = out.display().to_string();
    let written = mona.json(&["account", "export", "-o", &out_arg]);
    assert_eq!(
        written["size"].as_u64(),
        std::fs::metadata(&out).ok().map(|m| m.len())
    );
    let bytes = std::fs::read(&out).expect("export file");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip");
    let mut lines = String::new();
    std::io::Read::read_to_string(
        &mut archive
            .by_name("xmemo-export/memories.jsonl")
            .expect("memories.jsonl"),
        &mut lines,
    )
    .expect("read");
    assert!(lines.contains("port 5434"), "{lines}");
    assert!(!tmp.path().join("mona-export.zip.partial").exists());

    mona.fails_with(
        &["account", "delete", "--confirm", "not-mona"],
        "VALIDATION_ERROR",
    );
    let deleted = mona.json(&["account", "delete", "--confirm", "mona"]);
    assert_eq!(deleted["data"]["memories"], 1);
    mona.fails_with(&["whoami"], "AUTH_REQUIRED");
    // The last administrator keeps its account.
    admin.fails_with(&["account", "delete", "--confirm", "admin"], "CONFLICT");
}
