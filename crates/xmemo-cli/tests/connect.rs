//! `xmemo connect CLIENT`, driven as a user would: the real binary against a real server.
//! Merging into existing files keeps everything else, writes no secret, keeps a backup, and a
//! second run changes nothing; what it writes actually connects (the bridge reaches the
//! server's tools, the OAuth URL is the endpoint whose 401 starts discovery); docs/mcp.md shows
//! exactly what it prints.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Env, read};

const CLAUDE: &str = r#"{
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    }
  }
}
"#;

const CURSOR: &str = r#"{
    "mcpServers": {
        "playwright": { "command": "npx", "args": ["@playwright/mcp@latest"] }
    },
    "other": true
}
"#;

const VSCODE: &str = "{\n\t\"inputs\": [\n\t\t{ \"type\": \"promptString\", \"id\": \"gh\", \"description\": \"GitHub token\", \"password\": true }\n\t],\n\t\"servers\": {\n\t\t\"github\": { \"type\": \"http\", \"url\": \"https://api.githubcopilot.com/mcp/\", \"headers\": { \"Authorization\": \"Bearer ${input:gh}\" } }\n\t}\n}\n";

const GEMINI: &str = r#"{
  "theme": "Dracula",
  "selectedAuthType": "gemini-api-key",
  "mcpServers": {
    "git": { "command": "uvx", "args": ["mcp-server-git"] }
  }
}
"#;

const CODEX: &str = r#"# Codex settings
model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # keep this comment

[profiles.fast]
model = "o4-mini"
"#;

const COPILOT: &str = r#"{
  "mcpServers": {
    "playwright": {
      "type": "local",
      "command": "npx",
      "args": ["@playwright/mcp@latest"],
      "env": {},
      "tools": ["*"]
    }
  }
}
"#;

struct Case {
    client: &'static str,
    file: &'static str,
    original: &'static str,
    servers_key: &'static str,
    /// How the client's key entry names XMEMO_KEY (`None`: forwarded by name, Codex).
    key_reference: Option<&'static str>,
    profile: Option<&'static str>,
}

const CASES: [Case; 6] = [
    Case {
        client: "claude-code",
        file: ".mcp.json",
        original: CLAUDE,
        servers_key: "mcpServers",
        key_reference: Some("${XMEMO_KEY}"),
        profile: Some("claude-code"),
    },
    Case {
        client: "cursor",
        file: "mcp.json",
        original: CURSOR,
        servers_key: "mcpServers",
        key_reference: Some("${env:XMEMO_KEY}"),
        profile: Some("cursor-plugin"),
    },
    Case {
        client: "vscode",
        file: "mcp.json",
        original: VSCODE,
        servers_key: "servers",
        key_reference: Some("${env:XMEMO_KEY}"),
        profile: None,
    },
    Case {
        client: "gemini-cli",
        file: "settings.json",
        original: GEMINI,
        servers_key: "mcpServers",
        key_reference: Some("$XMEMO_KEY"),
        profile: None,
    },
    Case {
        client: "codex",
        file: "config.toml",
        original: CODEX,
        servers_key: "mcp_servers",
        key_reference: None,
        profile: None,
    },
    Case {
        client: "copilot",
        file: "mcp-config.json",
        original: COPILOT,
        servers_key: "mcpServers",
        key_reference: Some("${XMEMO_KEY}"),
        profile: None,
    },
];

/// The document parsed into JSON (TOML files too), for comparisons.
fn parse(case: &Case, text: &str) -> Value {
    if case.file.ends_with(".toml") {
        let table: toml::Table = toml::from_str(text).expect("TOML");
        serde_json::to_value(table).expect("TOML as JSON")
    } else {
        serde_json::from_str(text).expect("JSON")
    }
}

fn without_xmemo(case: &Case, mut doc: Value) -> Value {
    if let Some(servers) = doc.get_mut(case.servers_key).and_then(Value::as_object_mut) {
        servers.remove("xmemo");
    }
    doc
}

fn bak(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.bak", path.display()))
}

/// `connect --write` into `path` with the key in the environment.
fn connect_write(env: &Env, case: &Case, auth: &str, path: &Path) -> Value {
    env.run(
        &[
            "connect",
            case.client,
            "--auth",
            auth,
            "--write",
            "--config",
            path.to_str().unwrap(),
            "--url",
            &env.server.url,
            "--json",
        ],
        &[("XMEMO_KEY", &env.key)],
    )
    .ok()
    .json()
}

/// The variables a client would give the bridge for this entry: its `env` with the key
/// reference resolved, and for Codex the forwarded names.
fn bridge_env(case: &Case, entry: &Value, key: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (name, value) in entry["env"].as_object().expect("env") {
        let value = value.as_str().expect("string");
        let name: &'static str = Box::leak(name.clone().into_boxed_str());
        if Some(value) == case.key_reference {
            out.push((name, key.to_string()));
        } else {
            assert!(
                !value.contains('$'),
                "{name}={value}: an unexpected reference"
            );
            out.push((name, value.to_string()));
        }
    }
    if case.key_reference.is_none() {
        let forwarded: Vec<&str> = entry["env_vars"]
            .as_array()
            .expect("env_vars")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(forwarded.contains(&"XMEMO_KEY"), "{entry}");
        out.push(("XMEMO_KEY", key.to_string()));
    }
    out
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// An anonymous `tools/list` on `url`: the status and the challenge.
fn anonymous_tools_list(url: &str) -> (u16, String) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let r = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
            .send()
            .await
            .expect("request");
        let challenge = r
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (r.status().as_u16(), challenge)
    })
}

#[test]
fn write_merges_into_every_format_keeps_the_rest_writes_no_secret_and_is_idempotent() {
    let env = Env::start();
    for case in &CASES {
        for auth in ["oauth", "key"] {
            let what = format!("{} --auth {auth}", case.client);
            let dir = env.tmp.path().join(format!("{}-{auth}", case.client));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(case.file);
            std::fs::write(&path, case.original).unwrap();

            let out = connect_write(&env, case, auth, &path);
            assert_eq!(out["write"]["changed"], true, "{what}: {out}");
            assert_eq!(out["write"]["created"], false, "{what}");
            assert_eq!(out["write"]["replaced"], false, "{what}");
            let written = read(&path);

            // No secret, and the original kept as the backup.
            assert!(
                !written.contains(&env.key),
                "{what}: the key is in the file"
            );
            assert_eq!(read(&bak(&path)), case.original, "{what}: backup");

            // Everything else is as it was: same document, and every original line verbatim
            // (a line may gain the comma that separates it from the new entry).
            let before = parse(case, case.original);
            let after = parse(case, &written);
            assert_eq!(without_xmemo(case, after.clone()), before, "{what}");
            for line in case.original.lines() {
                assert!(
                    written
                        .lines()
                        .any(|l| l == line || l == format!("{line},")),
                    "{what}: line {line:?} lost:\n{written}"
                );
            }

            // The entry is the one `connect` printed, and it connects.
            let entry = &after[case.servers_key]["xmemo"];
            assert_eq!(entry, &out["entry"], "{what}");
            let mcp_url = match case.profile {
                Some(p) => format!("{}/mcp/{p}", env.server.url),
                None => format!("{}/mcp", env.server.url),
            };
            assert_eq!(out["mcp_url"], mcp_url, "{what}");
            if auth == "oauth" {
                let url = entry["url"]
                    .as_str()
                    .or(entry["httpUrl"].as_str())
                    .unwrap_or_else(|| panic!("{what}: no URL in {entry}"));
                assert_eq!(url, mcp_url, "{what}");
                assert!(entry.get("env").is_none() && entry.get("headers").is_none());
                let (status, challenge) = anonymous_tools_list(url);
                assert_eq!(status, 401, "{what}");
                assert!(
                    challenge.contains("resource_metadata="),
                    "{what}: {challenge}"
                );
            } else {
                assert_eq!(entry["command"], "xmemo", "{what}");
                assert_eq!(entry["args"], json!(["mcp"]), "{what}");
                assert_eq!(entry["env"]["XMEMO_URL"], env.server.url, "{what}");
                match case.key_reference {
                    Some(reference) => assert_eq!(entry["env"]["XMEMO_KEY"], reference, "{what}"),
                    None => assert!(entry["env"].get("XMEMO_KEY").is_none(), "{what}"),
                }
                let answers = env.bridge(
                    &bridge_env(case, entry, &env.key),
                    &[json!({"method": "tools/list", "params": {}})],
                );
                let tools = tool_names(&answers[0]);
                assert!(tools.contains(&"remember".to_string()), "{what}: {tools:?}");
                // The profile reached the server: claude-code gets skills as resources.
                assert_eq!(
                    tools.contains(&"recall_cloud_skill".to_string()),
                    case.profile != Some("claude-code"),
                    "{what}: {tools:?}"
                );
            }

            // A second run finds the entry in place and touches nothing.
            let again = connect_write(&env, case, auth, &path);
            assert_eq!(again["write"]["changed"], false, "{what}: {again}");
            assert_eq!(read(&path), written, "{what}: second run");
            assert_eq!(read(&bak(&path)), case.original, "{what}: backup kept");

            // Switching the way in replaces the entry, still keeping the rest.
            let other = if auth == "oauth" { "key" } else { "oauth" };
            let switched = connect_write(&env, case, other, &path);
            assert_eq!(switched["write"]["replaced"], true, "{what}: {switched}");
            let switched_doc = parse(case, &read(&path));
            assert_eq!(without_xmemo(case, switched_doc.clone()), before, "{what}");
            assert_eq!(switched_doc[case.servers_key]["xmemo"], switched["entry"]);
            assert!(!read(&path).contains(&env.key));
        }
    }
}

#[test]
fn an_old_entry_holding_a_literal_key_is_replaced_and_the_backup_flagged() {
    let env = Env::start();
    let path = env.tmp.path().join("config.toml");
    let old = format!(
        "[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\nenv = {{ XMEMO_URL = \"{}\", XMEMO_KEY = \"{}\" }}\n",
        env.server.url, env.key
    );
    std::fs::write(&path, &old).unwrap();
    let out = connect_write(&env, &CASES[4], "key", &path);
    assert_eq!(out["write"]["replaced"], true, "{out}");
    assert!(!read(&path).contains(&env.key));
    assert_eq!(read(&bak(&path)), old);
    let warnings = out["write"]["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains(&bak(&path).display().to_string())),
        "{out}"
    );
}

#[test]
fn new_files_are_created_with_exactly_what_is_printed() {
    let env = Env::start();
    for case in &CASES {
        let path = env
            .tmp
            .path()
            .join(format!("new-{}", case.client))
            .join("sub")
            .join(case.file);
        let out = connect_write(&env, case, "key", &path);
        assert_eq!(out["write"]["created"], true, "{out}");
        assert!(out["write"]["backup"].is_null());
        assert_eq!(
            read(&path),
            format!("{}\n", out["snippet"].as_str().unwrap())
        );
    }
}

#[test]
fn files_it_cannot_edit_safely_are_left_alone() {
    let env = Env::start();
    let cases = [
        (
            "vscode",
            "mcp.json",
            "// VS Code allows comments here\n{\n  \"servers\": {}\n}\n",
        ),
        ("cursor", "mcp.json", "{\"mcpServers\": [1, 2]}\n"),
        (
            "codex",
            "config.toml",
            "mcp_servers = { xmemo = { url = \"https://old\" } }\n",
        ),
    ];
    for (client, file, text) in cases {
        let path = env.tmp.path().join(format!("refused-{client}-{file}"));
        std::fs::write(&path, text).unwrap();
        let run = env.run(
            &[
                "connect",
                client,
                "--write",
                "--config",
                path.to_str().unwrap(),
                "--url",
                &env.server.url,
            ],
            &[],
        );
        assert_eq!(run.code, Some(1), "{client}: {run:#?}");
        assert!(run.stderr.contains("by hand"), "{client}: {}", run.stderr);
        assert_eq!(read(&path), text, "{client}: file touched");
        assert!(!bak(&path).exists(), "{client}: backup made");
    }
}

#[test]
fn default_locations_are_the_clients_own() {
    let env = Env::start();
    let home = env.home();
    let codex_home = env.tmp.path().join("codex-home");
    let cases = [
        ("cursor", home.join(".cursor/mcp.json")),
        ("gemini-cli", home.join(".gemini/settings.json")),
        ("vscode", env.config_home().join("Code/User/mcp.json")),
        ("claude-code", env.tmp.path().join(".mcp.json")),
        ("codex", codex_home.join("config.toml")),
        ("copilot", home.join(".copilot/mcp-config.json")),
    ];
    for (client, expected) in cases {
        let out = env
            .run(
                &[
                    "connect",
                    client,
                    "--write",
                    "--url",
                    &env.server.url,
                    "--json",
                ],
                &[("CODEX_HOME", codex_home.to_str().unwrap())],
            )
            .ok()
            .json();
        assert_eq!(out["write"]["created"], true, "{client}: {out}");
        assert!(
            expected.exists(),
            "{client}: {} missing",
            expected.display()
        );
    }
}

#[test]
fn nothing_printed_holds_the_key() {
    let env = Env::start();
    for case in &CASES {
        for auth in ["oauth", "key"] {
            for json in [false, true] {
                let mut args = vec!["connect", case.client, "--auth", auth];
                if json {
                    args.push("--json");
                }
                let run = env.run(
                    &args,
                    &[("XMEMO_KEY", &env.key), ("XMEMO_URL", &env.server.url)],
                );
                run.ok();
                assert!(!run.stdout.contains(&env.key), "{args:?}");
                assert!(
                    run.stdout.contains(&env.server.url),
                    "{args:?}: XMEMO_URL used"
                );
            }
        }
    }
}

#[test]
fn headless_prints_the_environment_and_the_servers_recipe() {
    let env = Env::start();
    let run = env.run(
        &["connect", "headless", "--json"],
        &[
            ("XMEMO_URL", &env.server.url),
            ("XMEMO_KEY", &env.key),
            ("XMEMO_AGENT_INSTANCE_ID", "nightly-ci-1"),
        ],
    );
    let out = run.ok().json();
    assert!(!run.stdout.contains(&env.key));
    assert_eq!(out["env"]["XMEMO_URL"], env.server.url);
    assert_eq!(out["env"]["XMEMO_AGENT_INSTANCE_ID"], "nightly-ci-1");
    assert_eq!(out["env_from_secret_store"], json!(["XMEMO_KEY"]));
    assert_eq!(out["recipe"]["mcp_url"], format!("{}/mcp", env.server.url));
    assert_eq!(
        out["recipe"]["auth_modes"]["xmemo_key"]["env_var"],
        "XMEMO_KEY"
    );

    let text = env.run(&["connect", "headless"], &[("XMEMO_URL", &env.server.url)]);
    text.ok();
    assert!(
        text.stdout
            .contains(&format!("export XMEMO_URL={}", env.server.url))
    );
    assert!(text.stdout.contains("xmemo mcp"));

    let refused = env.run(
        &["connect", "headless", "--write"],
        &[("XMEMO_URL", &env.server.url)],
    );
    assert_eq!(refused.code, Some(1), "{refused:#?}");
    let unreachable = env.run(&["connect", "headless", "--url", "http://127.0.0.1:1"], &[]);
    assert_eq!(unreachable.code, Some(1));
    assert!(
        unreachable.stderr.contains("XMEMO_URL"),
        "{}",
        unreachable.stderr
    );
}

#[test]
fn the_bridge_stops_on_a_key_reference_its_client_left_unexpanded() {
    let env = Env::start();
    for reference in ["${XMEMO_KEY}", "${env:XMEMO_KEY}", "$XMEMO_KEY"] {
        let run = env.run(
            &["mcp"],
            &[("XMEMO_URL", &env.server.url), ("XMEMO_KEY", reference)],
        );
        assert_eq!(run.code, Some(1), "{reference}: {run:#?}");
        assert!(
            run.stderr.contains("Export XMEMO_KEY") && run.stderr.contains(reference),
            "{reference}: {}",
            run.stderr
        );
    }
}

/// docs/mcp.md shows, in fenced blocks, exactly what `xmemo connect` prints for the example
/// server: `connect` is the source of truth.
#[test]
fn docs_show_what_connect_prints() {
    let docs_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md");
    let docs = read(&docs_path);
    let env = Env::start();
    for case in &CASES {
        for auth in ["oauth", "key"] {
            let out = env
                .run(
                    &[
                        "connect",
                        case.client,
                        "--auth",
                        auth,
                        "--url",
                        "https://memory.example.com",
                        "--json",
                    ],
                    &[],
                )
                .ok()
                .json();
            let lang = if case.file.ends_with(".toml") {
                "toml"
            } else {
                "json"
            };
            let block = format!("```{lang}\n{}\n```", out["snippet"].as_str().unwrap());
            assert!(
                docs.contains(&block),
                "docs/mcp.md lacks `xmemo connect {} --auth {auth}`'s output:\n{block}",
                case.client
            );
            if let Some(cmd) = out["command"].as_array() {
                let words: Vec<&str> = cmd.iter().filter_map(Value::as_str).collect();
                assert!(
                    docs.contains(&words.join(" ")),
                    "docs/mcp.md lacks {words:?}"
                );
            }
        }
    }
}

#[test]
fn copilot_entries_are_copilot_clis_own_shape_and_follow_copilot_home() {
    let env = Env::start();
    let oauth = env
        .run(
            &["connect", "copilot", "--url", &env.server.url, "--json"],
            &[],
        )
        .ok()
        .json();
    // Copilot CLI refuses a server without `type` and `tools`.
    assert_eq!(
        oauth["entry"],
        json!({"type": "http", "url": format!("{}/mcp", env.server.url), "tools": ["*"]})
    );
    let key = env
        .run(
            &[
                "connect",
                "copilot",
                "--auth",
                "key",
                "--url",
                &env.server.url,
                "--json",
            ],
            &[],
        )
        .ok()
        .json();
    assert_eq!(key["entry"]["type"], "local");
    assert_eq!(key["entry"]["tools"], json!(["*"]));
    assert_eq!(key["entry"]["env"]["XMEMO_KEY"], "${XMEMO_KEY}");

    let copilot_home = env.tmp.path().join("copilot-home");
    let out = env
        .run(
            &[
                "connect",
                "copilot",
                "--write",
                "--url",
                &env.server.url,
                "--json",
            ],
            &[("COPILOT_HOME", copilot_home.to_str().unwrap())],
        )
        .ok()
        .json();
    assert_eq!(out["write"]["created"], true, "{out}");
    assert!(copilot_home.join("mcp-config.json").exists());
}

#[test]
fn the_suggested_write_command_keeps_the_choices_made() {
    let env = Env::start();
    let url = env.server.url.clone();
    let text = |args: &[&str]| {
        let mut all = vec!["connect"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", &url]);
        env.run(&all, &[]).ok().stdout.clone()
    };
    let key = text(&["codex", "--auth", "key"]);
    assert!(
        key.contains("`xmemo connect codex --auth key --write`"),
        "{key}"
    );
    let plain = text(&["codex"]);
    assert!(plain.contains("`xmemo connect codex --write`"), "{plain}");
    let profiled = text(&["cursor", "--auth", "key", "--profile", "minimal"]);
    assert!(
        profiled.contains("`xmemo connect cursor --auth key --profile minimal --write`"),
        "{profiled}"
    );
    // Cursor's own profile is its default: not repeated.
    let cursor = text(&["cursor", "--profile", "cursor-plugin"]);
    assert!(
        cursor.contains("`xmemo connect cursor --write`"),
        "{cursor}"
    );
}

/// The console's "Connect a client" page shows, character for character, every entry and
/// command `xmemo connect` prints for this server, for both ways in.
#[test]
fn the_console_connect_page_shows_what_connect_prints() {
    use xmemo_testkit::browser::{Browser, html_unescape};
    let env = Env::start();
    let password = read(&env.tmp.path().join("data/admin.password"));
    let page = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut b = Browser::new(&env.server.url);
        let signed = b
            .sign_in("admin", password.trim(), "/console/connect")
            .await;
        assert_eq!(signed.status, 303, "{}", signed.body);
        b.get("/console/connect").await
    });
    assert_eq!(page.status, 200);
    let shown = html_unescape(&page.body);
    for case in &CASES {
        for auth in ["oauth", "key"] {
            let out = env
                .run(
                    &[
                        "connect",
                        case.client,
                        "--auth",
                        auth,
                        "--url",
                        &env.server.url,
                        "--json",
                    ],
                    &[],
                )
                .ok()
                .json();
            let snippet = out["snippet"].as_str().unwrap();
            assert!(
                shown.contains(&format!("<code>{snippet}</code>")),
                "the connect page lacks `xmemo connect {} --auth {auth}`:\n{snippet}",
                case.client
            );
            if let Some(cmd) = out["command"].as_array() {
                let words: Vec<&str> = cmd.iter().filter_map(Value::as_str).collect();
                let line = words.join(" ");
                assert!(
                    shown.contains(&format!("<code>{line}</code>")),
                    "the connect page lacks {line}"
                );
            }
        }
    }
}
