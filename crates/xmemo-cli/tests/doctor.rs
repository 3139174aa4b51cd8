//! Client-side `xmemo doctor` against a real server: every check passes with a good URL, key
//! and instance id; each broken setting fails its own check with a `fix:`; the instance id it
//! reports is the one the stdio bridge actually sends.

mod support;

use serde_json::{Value, json};
use support::Env;

fn checks(out: &Value) -> Vec<(String, String)> {
    out["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn check<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {out}"))
}

/// The tools the contract gives a profile.
fn contract_tools(profile: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/mcp-documentation-contract.json");
    let contract: Value = serde_json::from_str(&support::read(&path)).unwrap();
    contract["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == profile)
        .unwrap()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn passes_against_a_good_server_and_key() {
    let env = Env::start();
    let good = [
        ("XMEMO_URL", env.server.url.as_str()),
        ("XMEMO_KEY", env.key.as_str()),
        ("XMEMO_AGENT_INSTANCE_ID", "laptop-1"),
    ];
    let run = env.run(&["doctor", "--json"], &good);
    let out = run.ok().json();
    assert_eq!(out["ok"], true, "{out}");
    assert!(!run.stdout.contains(&env.key), "the key is printed");
    assert_eq!(
        checks(&out),
        [
            ("server", "pass"),
            ("public_url", "pass"),
            ("credential", "pass"),
            ("mcp", "pass"),
            ("oauth", "skip"),
            // No client has a configuration file in this fresh home.
            ("client_config", "skip"),
            ("agent_instance", "pass"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(
        check(&out, "server")["version"],
        env!("CARGO_PKG_VERSION"),
        "{out}"
    );
    assert_eq!(
        check(&out, "credential")["scopes"],
        json!(["memory:read", "memory:write"])
    );
    let mcp = check(&out, "mcp");
    assert_eq!(mcp["profile"], "ordinary-full");
    assert_eq!(mcp["tools"], json!(contract_tools("ordinary-full")));
    let instance = check(&out, "agent_instance");
    assert_eq!(instance["agent_instance_id"], "laptop-1");
    assert_eq!(instance["source"], "environment");

    // A profile named explicitly is the one checked.
    let out = env
        .run(&["doctor", "--json", "--profile", "claude-code"], &good)
        .ok()
        .json();
    assert_eq!(
        check(&out, "mcp")["tools"],
        json!(contract_tools("claude-code"))
    );

    // Text: one line per check, no fix lines when nothing fails.
    let text = env.run(&["doctor"], &good);
    text.ok();
    assert_eq!(text.stdout.lines().count(), 7, "{}", text.stdout);
    assert!(!text.stdout.contains("fix:"), "{}", text.stdout);
}

/// Settings, the check that must fail, words its fix must contain.
type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);

#[test]
fn reports_each_failure_with_its_fix() {
    let env = Env::start();
    let url = env.server.url.as_str();
    let key = env.key.as_str();
    let id = ("XMEMO_AGENT_INSTANCE_ID", "laptop-1");
    let mcp_as_base = format!("{url}/mcp");

    let cases: Vec<Case> = vec![
        (
            vec![("XMEMO_URL", "http://127.0.0.1:1"), ("XMEMO_KEY", key), id],
            "server",
            "XMEMO_URL",
        ),
        (
            vec![("XMEMO_URL", "not a url"), ("XMEMO_KEY", key), id],
            "server",
            "XMEMO_URL",
        ),
        (
            // The MCP endpoint given as the server URL.
            vec![("XMEMO_URL", &mcp_as_base), ("XMEMO_KEY", key), id],
            "server",
            "without /mcp",
        ),
        (
            vec![("XMEMO_URL", url), ("XMEMO_KEY", "xmk_not_a_real_key"), id],
            "credential",
            "xmemo keys create",
        ),
        (vec![("XMEMO_URL", url), id], "credential", "XMEMO_KEY"),
        (
            vec![("XMEMO_URL", url), ("XMEMO_KEY", "${XMEMO_KEY}"), id],
            "credential",
            "export the key",
        ),
        (
            vec![
                ("XMEMO_URL", url),
                ("XMEMO_KEY", key),
                ("XMEMO_PROFILE", "no-such-profile"),
                id,
            ],
            "mcp",
            "XMEMO_PROFILE",
        ),
        (
            vec![
                ("XMEMO_URL", url),
                ("XMEMO_KEY", key),
                ("XMEMO_AGENT_INSTANCE_ID", "café"),
            ],
            "agent_instance",
            "export XMEMO_AGENT_INSTANCE_ID=",
        ),
    ];
    for (settings, failing, fix_words) in cases {
        let run = env.run(&["doctor", "--json"], &settings);
        assert_eq!(run.code, Some(1), "{settings:?}: {run:#?}");
        let out = run.json();
        assert_eq!(out["ok"], false);
        let failed = check(&out, failing);
        assert_eq!(failed["status"], "fail", "{settings:?}: {out}");
        let fix = failed["fix"]
            .as_str()
            .unwrap_or_else(|| panic!("no fix: {out}"));
        assert!(fix.contains(fix_words), "{settings:?}: fix {fix:?}");
        // Only that setting is wrong, so only that check (and what depends on it) fails.
        for (name, status) in checks(&out) {
            if name != failing {
                assert_ne!(status, "fail", "{settings:?}: {name} failed too: {out}");
            }
        }
        assert!(
            !run.stdout.contains(key),
            "{settings:?}: the key is printed"
        );

        // The text form prints the same failure with its fix on the next line.
        let text = env.run(&["doctor"], &settings);
        assert_eq!(text.code, Some(1));
        let lines: Vec<&str> = text.stdout.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("fail") && l.contains(failing))
            .unwrap_or_else(|| panic!("{settings:?}: no fail line:\n{}", text.stdout));
        assert!(
            lines[at + 1].trim_start().starts_with("fix: "),
            "{}",
            text.stdout
        );
        assert!(text.stderr.contains("checks failed"), "{}", text.stderr);
    }
}

#[test]
fn a_read_only_key_is_reported_without_failing() {
    let env = Env::start();
    let created = env
        .run(
            &[
                "keys",
                "create",
                "--name",
                "ro",
                "--scopes",
                "memory:read",
                "--json",
            ],
            &[("XMEMO_URL", &env.server.url), ("XMEMO_KEY", &env.key)],
        )
        .ok()
        .json();
    let ro = created["key"]["key"].as_str().expect("secret").to_string();
    let out = env
        .run(
            &["doctor", "--json"],
            &[
                ("XMEMO_URL", &env.server.url),
                ("XMEMO_KEY", &ro),
                ("XMEMO_AGENT_INSTANCE_ID", "ro-1"),
            ],
        )
        .ok()
        .json();
    let credential = check(&out, "credential");
    assert_eq!(credential["status"], "warn", "{out}");
    assert_eq!(credential["scopes"], json!(["memory:read"]));
    assert!(credential["fix"].as_str().unwrap().contains("memory:write"));
}

/// Without XMEMO_AGENT_INSTANCE_ID, doctor reports the id the bridge stored, the same on every
/// run, and it is the id the bridge really sends with a save.
#[test]
fn the_stored_instance_id_is_reported_stable_and_is_the_one_the_bridge_sends() {
    let env = Env::start();
    let conn = [
        ("XMEMO_URL", env.server.url.clone()),
        ("XMEMO_KEY", env.key.clone()),
    ];
    // The bridge makes and stores its id on first use; it saves a memory with it.
    let answers = env.bridge(
        &conn,
        &[
            json!({"method": "tools/call", "params": {"name": "remember", "arguments": {
            "kind": "note", "content": "doctor knows my instance id"}}}),
        ],
    );
    let memory = &answers[0]["result"]["structuredContent"]["data"]["memory"];
    let sent = memory["saved_by"]["agent_instance_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no instance id saved: {}", answers[0]))
        .to_string();
    let stored = support::read(&env.config_home().join("xmemo/agent-instance-id"));
    assert_eq!(stored.trim(), sent);

    let settings = [
        ("XMEMO_URL", env.server.url.as_str()),
        ("XMEMO_KEY", env.key.as_str()),
    ];
    let mut reported = Vec::new();
    for _ in 0..2 {
        let out = env.run(&["doctor", "--json"], &settings).ok().json();
        let instance = check(&out, "agent_instance");
        assert_eq!(instance["status"], "warn", "{out}");
        assert_eq!(instance["source"], "stored");
        assert!(
            instance["fix"]
                .as_str()
                .unwrap()
                .contains(&format!("export XMEMO_AGENT_INSTANCE_ID={sent}"))
        );
        reported.push(instance["agent_instance_id"].as_str().unwrap().to_string());
    }
    assert_eq!(reported, [sent.clone(), sent]);
}

fn remember(content: &str) -> Value {
    json!({"method": "tools/call", "params": {"name": "remember", "arguments": {
        "kind": "note", "content": content}}})
}

fn saved_instance(answer: &Value) -> String {
    answer["result"]["structuredContent"]["data"]["memory"]["saved_by"]["agent_instance_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no instance id saved: {answer}"))
        .to_string()
}

/// Issue #31, item 2: with nothing set and nothing kept, the id doctor suggests is kept (not
/// a throwaway), and it is the id two separate bridge runs send.
#[test]
fn the_instance_id_doctor_suggests_is_kept_and_every_bridge_run_sends_it() {
    let env = Env::start();
    let settings = [
        ("XMEMO_URL", env.server.url.as_str()),
        ("XMEMO_KEY", env.key.as_str()),
    ];
    let kept_at = env.config_home().join("xmemo/agent-instance-id");
    assert!(!kept_at.exists());
    let out = env.run(&["doctor", "--json"], &settings).ok().json();
    let instance = check(&out, "agent_instance");
    assert_eq!(instance["status"], "warn", "{out}");
    assert_eq!(instance["source"], "stored");
    assert_eq!(instance["path"], kept_at.display().to_string());
    let suggested = instance["agent_instance_id"].as_str().unwrap().to_string();
    assert!(
        instance["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("export XMEMO_AGENT_INSTANCE_ID={suggested}"))
    );
    assert_eq!(support::read(&kept_at).trim(), suggested);

    let conn = [
        ("XMEMO_URL", env.server.url.clone()),
        ("XMEMO_KEY", env.key.clone()),
    ];
    let first = env.bridge(&conn, &[remember("first run")]);
    let second = env.bridge(&conn, &[remember("second run")]);
    assert_eq!(saved_instance(&first[0]), suggested);
    assert_eq!(saved_instance(&second[0]), suggested);
}

/// The `client_config` checks of one run, by the client they name.
fn client_checks(out: &Value) -> Vec<&Value> {
    out["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "client_config")
        .collect()
}

/// Issue #31, item 6: doctor reads the MCP clients' configuration files — a missing entry,
/// an entry reaching another server, a key written in clear each fail with the `xmemo
/// connect … --write` that fixes them; what `xmemo connect --write` writes passes.
#[test]
fn doctor_checks_each_clients_config_file() {
    let env = Env::start();
    let url = env.server.url.clone();
    let settings = [
        ("XMEMO_URL", url.as_str()),
        ("XMEMO_KEY", env.key.as_str()),
        ("XMEMO_AGENT_INSTANCE_ID", "laptop-1"),
    ];
    let home = env.home();
    let cursor = home.join(".cursor/mcp.json");
    let gemini = home.join(".gemini/settings.json");
    let codex = home.join(".codex/config.toml");
    for dir in [".cursor", ".gemini", ".codex"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    // Cursor: another server only; Gemini: the bridge with the key in clear; Codex: the
    // bridge against another server.
    std::fs::write(
        &cursor,
        r#"{"mcpServers": {"github": {"url": "https://api.example/mcp"}}}"#,
    )
    .unwrap();
    let literal = format!(
        r#"{{"mcpServers": {{"xmemo": {{"command": "xmemo", "args": ["mcp"], "env": {{"XMEMO_URL": "{url}", "XMEMO_KEY": "{}"}}}}}}}}"#,
        env.key
    );
    std::fs::write(&gemini, literal).unwrap();
    std::fs::write(
        &codex,
        "[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\nenv = { XMEMO_URL = \"http://10.9.9.9:8420\" }\n",
    )
    .unwrap();

    let run = env.run(&["doctor", "--json"], &settings);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(!run.stdout.contains(&env.key), "the key is printed");
    let out = run.json();
    let found = client_checks(&out);
    let by = |client: &str| -> &Value {
        found
            .iter()
            .find(|c| c["client"] == client)
            .unwrap_or_else(|| panic!("no check of {client}: {out}"))
    };
    for (client, words, fix) in [
        (
            "cursor",
            "has no xmemo entry",
            "xmemo connect cursor --config",
        ),
        (
            "gemini-cli",
            "holds a secret in clear (env/XMEMO_KEY)",
            "--auth key",
        ),
        (
            "codex",
            "reaches http://10.9.9.9:8420",
            "xmemo connect codex --config",
        ),
    ] {
        let c = by(client);
        assert_eq!(c["status"], "fail", "{c}");
        assert!(c["summary"].as_str().unwrap().contains(words), "{c}");
        assert!(c["fix"].as_str().unwrap().contains(fix), "{c}");
    }
    assert_eq!(found.len(), 3, "{out}");

    // What connect writes passes: the key by reference, then OAuth (no grant yet: a warning
    // that says how to sign in).
    for client in ["gemini-cli", "codex"] {
        let path = if client == "codex" { &codex } else { &gemini };
        std::fs::remove_file(path).unwrap();
        env.run(&["connect", client, "--auth", "key", "--write"], &settings)
            .ok();
    }
    env.run(&["connect", "cursor", "--write"], &settings).ok();
    let out = env.run(&["doctor", "--json"], &settings).ok().json();
    let found = client_checks(&out);
    let status = |client: &str| {
        found
            .iter()
            .find(|c| c["client"] == client)
            .map(|c| {
                (
                    c["status"].as_str().unwrap().to_string(),
                    c["summary"].to_string(),
                )
            })
            .unwrap_or_else(|| panic!("no check of {client}: {out}"))
    };
    assert_eq!(status("gemini-cli").0, "pass", "{out}");
    assert_eq!(status("codex").0, "pass", "{out}");
    let (cursor_status, cursor_summary) = status("cursor");
    assert_eq!(cursor_status, "warn", "{out}");
    assert!(
        cursor_summary.contains("holds no live grant"),
        "{cursor_summary}"
    );

    // Once the client has signed in (a real consent and token exchange), the grant is there.
    let password = support::read(&env.tmp.path().join("data/admin.password"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client_id = xmemo_testkit::oauth::register_public(&url, "Cursor").await;
        let tokens =
            xmemo_testkit::oauth::tokens_for(&url, "admin", password.trim(), &client_id).await;
        assert_eq!(tokens.status, 200, "{}", tokens.body);
    });
    let out = env.run(&["doctor", "--json"], &settings).ok().json();
    let signed_in = client_checks(&out)
        .into_iter()
        .find(|c| c["client"] == "cursor")
        .cloned()
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(signed_in["status"], "pass", "{signed_in}");
    assert_eq!(signed_in["live_grants"], 1, "{signed_in}");
    assert!(
        signed_in["summary"]
            .as_str()
            .unwrap()
            .contains("1 live grant(s), latest by Cursor"),
        "{signed_in}"
    );

    // A client named on the command line whose file is missing fails with the fix.
    let run = env.run(
        &[
            "doctor",
            "--json",
            "--client",
            "vscode",
            "--config",
            "/nonexistent/mcp.json",
        ],
        &settings,
    );
    assert_eq!(run.code, Some(1));
    let out = run.json();
    let vscode = client_checks(&out);
    assert_eq!(vscode.len(), 1);
    assert_eq!(vscode[0]["status"], "fail");
    assert!(
        vscode[0]["summary"]
            .as_str()
            .unwrap()
            .contains("there is no /nonexistent/mcp.json")
    );
}
