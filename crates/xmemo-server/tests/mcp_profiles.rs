//! Client profiles: the contract file and the server never disagree, `tools/list` shows
//! exactly a profile's tools, a tool outside the profile is refused when called, the profile
//! comes from the path or else from the key, and `execute_cloud_skill` appears only where the
//! operator enabled it.

mod mcp_harness;

use mcp_harness::{McpServer, call, ok, rpc_code, skill};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use xmemo_server::mcp::tools::REGISTRY;
use xmemo_server::state::McpConfig;

/// The contract as committed in the repository (not the embedded copy).
fn contract_on_disk() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/mcp-documentation-contract.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("contract file")).expect("json")
}

fn profiles_of(contract: &Value) -> Vec<(String, Vec<String>)> {
    contract["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("name").to_string(),
                p["tools"]
                    .as_array()
                    .expect("tools")
                    .iter()
                    .map(|t| t.as_str().expect("tool").to_string())
                    .collect(),
            )
        })
        .collect()
}

/// Arguments that pass each tool's shape check (so a call that is not refused reaches the
/// service).
/// The memory tools of SPEC §9, in every profile (in contract order).
const MEMORY_TOOLS: [&str; 5] = [
    "remember",
    "recall",
    "update_memory",
    "forget",
    "restore_memory",
];

/// `extra`, then the memory tools, as owned names.
fn with_memory_tools(extra: &[&str]) -> Vec<String> {
    extra
        .iter()
        .chain(MEMORY_TOOLS.iter())
        .map(|t| t.to_string())
        .collect()
}

fn sample_args(tool: &str) -> Value {
    match tool {
        "recall_cloud_skill" => json!({"slug": "shared-skill"}),
        "save_cloud_skill" => skill("profile-save", "x"),
        "remember" => json!({"kind": "note", "content": "profile check"}),
        "recall" => json!({"query": "profile"}),
        "update_memory" | "forget" | "restore_memory" => {
            json!({"memory_id": "mem_missing", "expected_version": 1})
        }
        _ => json!({"slug": "shared-skill", "revision_id": "rev_x", "script_path": "run.py"}),
    }
}

#[tokio::test]
async fn the_contract_file_and_the_server_agree_for_every_profile() {
    let contract = contract_on_disk();
    let profiles = profiles_of(&contract);
    let names: Vec<&str> = profiles.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "cursor-plugin",
        "ordinary-full",
        "generic-public",
        "chatgpt-public",
        "claude-code",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from the contract"
        );
    }
    assert_eq!(profiles.len(), 5);
    assert_eq!(contract["default_profile"], "ordinary-full");
    // SPEC §8: recall/save only in cursor-plugin and ordinary-full; execute in none by default.
    for (name, tools) in &profiles {
        let full = name == "cursor-plugin" || name == "ordinary-full";
        assert_eq!(
            tools.clone(),
            if full {
                with_memory_tools(&["recall_cloud_skill", "save_cloud_skill"])
            } else {
                with_memory_tools(&[])
            },
            "{name}"
        );
        assert!(!tools.iter().any(|t| t == "execute_cloud_skill"));
    }

    let s = McpServer::start().await;
    let key = s
        .account("pat", &["memory:read", "memory:write"], None)
        .await;
    let client = s.client("/mcp", &key).await;
    let mut shared = skill("shared-skill", "shared");
    shared["intent"] = json!("publish");
    ok(&call(&client, "save_cloud_skill", shared)
        .await
        .expect("seed"));

    for (profile, tools) in &profiles {
        let c = s.client(&format!("/mcp/{profile}"), &key).await;
        let listed: Vec<String> = c
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(&listed, tools, "tools/list of {profile}");
        for def in REGISTRY {
            let result = call(&c, def.name, sample_args(def.name)).await;
            if tools.iter().any(|t| t == def.name) {
                // Reaches the service (a tool result, success or SPEC error), never refused.
                result.unwrap_or_else(|e| panic!("{profile} refused {}: {e}", def.name));
            } else {
                let e = result.expect_err(&format!("{profile} must refuse {}", def.name));
                assert_eq!(rpc_code(&e), -32602, "{profile}/{}", def.name);
            }
        }
        // The Skills extension is there for every profile.
        assert_eq!(
            c.list_all_skills().await.expect("skills/list").len(),
            1,
            "{profile}"
        );
    }
    // A tool nobody implements is refused the same way.
    let e = call(&client, "rm_rf", json!({}))
        .await
        .expect_err("unknown tool");
    assert_eq!(rpc_code(&e), -32602);
}

async fn tools(c: &Peer<RoleClient>) -> Vec<String> {
    c.list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test]
async fn the_profile_comes_from_the_key_unless_the_path_names_one() {
    let s = McpServer::start().await;
    let cursor_key = s
        .account(
            "cur",
            &["memory:read", "memory:write"],
            Some("cursor-plugin"),
        )
        .await;
    let claude_key = s
        .key_for("cur", &["memory:read", "memory:write"], Some("claude-code"))
        .await;
    let default_key = s
        .key_for("cur", &["memory:read", "memory:write"], None)
        .await;
    let odd_key = s
        .key_for("cur", &["memory:read"], Some("some-other-client"))
        .await;

    let by_key_cursor = s.client("/mcp", &cursor_key).await;
    assert_eq!(tools(&by_key_cursor).await.len(), 7);
    let by_key_claude = s.client("/mcp", &claude_key).await;
    assert_eq!(tools(&by_key_claude).await, with_memory_tools(&[]));
    let e = call(&by_key_claude, "recall_cloud_skill", json!({"query": "x"}))
        .await
        .expect_err("claude-code has no recall tool");
    assert_eq!(rpc_code(&e), -32602);
    let by_default = s.client("/mcp", &default_key).await;
    assert_eq!(tools(&by_default).await.len(), 7);

    // A path can hide tools from a key, never add any: the key's own profile bounds it
    // (issue #23: a key of `claude-code` at `/mcp/ordinary-full` stays within claude-code).
    let path_bounded = s.client("/mcp/ordinary-full", &claude_key).await;
    assert_eq!(tools(&path_bounded).await, with_memory_tools(&[]));
    let e = call(
        &path_bounded,
        "save_cloud_skill",
        skill("not-via-path", "x"),
    )
    .await
    .expect_err("the key's profile has no save tool");
    assert_eq!(rpc_code(&e), -32602);
    let path_hides = s.client("/mcp/chatgpt-public", &cursor_key).await;
    assert_eq!(tools(&path_hides).await, with_memory_tools(&[]));
    // A key of the default profile is bounded by nothing: the path decides.
    let path_wins = s.client("/mcp/cursor-plugin", &default_key).await;
    assert_eq!(tools(&path_wins).await.len(), 7);

    // Saves record the profile actually served.
    ok(
        &call(&path_wins, "save_cloud_skill", skill("via-path", "x"))
            .await
            .expect("save"),
    );
    let owner = s.service.operator_for("cur").await.expect("cur");
    let revs = s
        .service
        .list_revisions(&owner, "via-path", None)
        .await
        .expect("revs");
    assert_eq!(
        revs[0].attribution.client_profile.as_deref(),
        Some("cursor-plugin")
    );

    // A key whose profile the contract does not define: refused on /mcp, fine on a path.
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let resp = s
        .post_raw("/mcp", Some(&odd_key), &[], init.to_string())
        .await;
    assert_eq!(resp.status().as_u16(), 403);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["data"]["error"]["code"], "PERMISSION_DENIED");
    let ok_path = s.client("/mcp/generic-public", &odd_key).await;
    assert_eq!(tools(&ok_path).await, with_memory_tools(&[]));
}

#[tokio::test]
async fn execute_appears_only_in_operator_enabled_profiles() {
    let s = McpServer::start_with(McpConfig {
        execute_profiles: vec!["claude-code".into(), "cursor-plugin".into()],
        ..Default::default()
    })
    .await;
    let key = s
        .account("op", &["memory:read", "memory:write"], None)
        .await;
    let with_execute = |extra: &[&str]| {
        let mut tools = with_memory_tools(extra);
        tools.push("execute_cloud_skill".to_string());
        tools
    };
    for (profile, expected) in [
        ("claude-code", with_execute(&[])),
        (
            "cursor-plugin",
            with_execute(&["recall_cloud_skill", "save_cloud_skill"]),
        ),
        (
            "ordinary-full",
            with_memory_tools(&["recall_cloud_skill", "save_cloud_skill"]),
        ),
        ("generic-public", with_memory_tools(&[])),
        ("chatgpt-public", with_memory_tools(&[])),
    ] {
        let c = s.client(&format!("/mcp/{profile}"), &key).await;
        let names: Vec<String> = c
            .list_all_tools()
            .await
            .expect("tools")
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(names, expected, "{profile}");
        let r = call(
            &c,
            "execute_cloud_skill",
            json!({"slug": "x", "revision_id": "rev_x", "script_path": "a.py"}),
        )
        .await;
        if expected.iter().any(|t| t == "execute_cloud_skill") {
            let r = r.expect("not refused");
            assert_eq!(r.is_error, Some(true));
        } else {
            assert_eq!(rpc_code(&r.expect_err("refused")), -32602);
        }
    }
}
