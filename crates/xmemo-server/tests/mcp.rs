//! MCP over streamable HTTP, driven with rmcp's client: the three recall levels, save,
//! pinning, attribution, the Skills extension, every SPEC error code and protocol robustness.

mod mcp_harness;

use base64::Engine;
use mcp_harness::{Lifecycle, McpServer, call, code, err, ok, rpc_code, skill};
use rmcp::model::{
    GetSkillRequestParams, ReadResourceRequestParams, ResourceContents, SkillResources,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use xmemo_server::state::McpConfig;

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[tokio::test]
async fn progressive_recall_save_and_pinning_over_mcp() {
    let s = McpServer::start().await;
    let key = s
        .account("ana", &["memory:read", "memory:write"], None)
        .await;
    let client = s
        .client_with(
            "/mcp",
            &key,
            &[
                ("x-memory-os-agent-id", "rmcp-test"),
                ("x-memory-os-agent-instance-id", "inst-42"),
            ],
            Lifecycle::Initialize,
        )
        .await
        .expect("connect");

    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("xmemo")
    );
    assert!(info.capabilities.supports_skills());
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "recall_cloud_skill",
            "save_cloud_skill",
            "remember",
            "recall",
            "update_memory",
            "forget",
            "restore_memory"
        ]
    );
    let recall = &tools[0];
    let ann = recall.annotations.as_ref().expect("annotations");
    assert_eq!(
        (ann.read_only_hint, ann.idempotent_hint),
        (Some(true), Some(true))
    );
    for level in ["Level 0", "Level 1", "Level 2"] {
        assert!(recall.description.as_deref().unwrap_or("").contains(level));
    }

    // Save a draft with a text script and a binary artifact.
    let binary: Vec<u8> = (0u8..=255).rev().collect();
    let mut args = skill("deploy-procedure", "1. Check.\n2. Deploy.\n");
    args["components"] = json!([
        {"logical_path": "scripts/check.py", "type": "script", "content": "print('v1')\n"},
        {"logical_path": "assets/logo.bin", "type": "artifact",
         "content": base64::engine::general_purpose::STANDARD.encode(&binary), "encoding": "base64"}
    ]);
    let saved = ok(&call(&client, "save_cloud_skill", args.clone())
        .await
        .expect("save"));
    assert_eq!(saved["kind"], "saved");
    assert_eq!(saved["data"]["status"], "draft");
    assert_eq!(saved["data"]["created"], true);
    let rev1 = saved["data"]["revision_id"]
        .as_str()
        .expect("rev")
        .to_string();

    // Same content again: nothing new.
    let again = ok(&call(&client, "save_cloud_skill", args).await.expect("save"));
    assert_eq!(again["data"]["created"], false);
    assert_eq!(again["data"]["revision_id"], rev1.as_str());

    // Level 0 sees only published skills.
    let l0 = ok(
        &call(&client, "recall_cloud_skill", json!({"query": "deploy"}))
            .await
            .expect("l0"),
    );
    assert_eq!(l0["kind"], "descriptors");
    assert_eq!(l0["data"]["skills"], json!([]));

    // Level 1 falls back to the latest revision.
    let l1 = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "deploy-procedure"}),
    )
    .await
    .expect("l1"));
    assert_eq!(l1["kind"], "root");
    assert_eq!(l1["data"]["revision_id"], rev1.as_str());
    assert_eq!(l1["data"]["instruction_body"], "1. Check.\n2. Deploy.\n");

    // Publish a second revision (personal workspace: published at once).
    let mut v2 = skill("deploy-procedure", "1. Check twice.\n2. Deploy.\n");
    v2["intent"] = json!("publish");
    v2["expected_revision_id"] = json!(rev1);
    v2["components"] = json!([
        {"logical_path": "scripts/check.py", "type": "script", "content": "print('v2')\n"}
    ]);
    let saved2 = ok(&call(&client, "save_cloud_skill", v2)
        .await
        .expect("save v2"));
    assert_eq!(saved2["data"]["status"], "published");
    assert_eq!(saved2["data"]["revision_number"], 2);
    let rev2 = saved2["data"]["revision_id"]
        .as_str()
        .expect("rev2")
        .to_string();

    // Level 0 now finds it, without bodies.
    let l0 = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"query": "deploy procedure", "limit": 5}),
    )
    .await
    .expect("l0"));
    let hits = l0["data"]["skills"].as_array().expect("skills").clone();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["slug"], "deploy-procedure");
    assert!(hits[0].get("instruction_body").is_none());

    // Level 1: the published revision and its manifest.
    let l1 = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "deploy-procedure"}),
    )
    .await
    .expect("l1"));
    assert_eq!(l1["data"]["revision_id"], rev2.as_str());
    assert_eq!(l1["data"]["status"], "published");
    assert_eq!(l1["data"]["resources"].as_array().map(Vec::len), Some(1));

    // Level 2 pinned to rev2, and pinned to rev1 after rev2 exists (snapshot reads).
    let l2 = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "deploy-procedure", "revision_id": rev2, "resource": "scripts/check.py"}),
    )
    .await
    .expect("l2"));
    assert_eq!(l2["kind"], "resource");
    assert_eq!(l2["data"]["content"], "print('v2')\n");
    assert_eq!(l2["data"]["encoding"], "utf-8");
    let old = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "deploy-procedure", "revision_id": rev1, "resource": "scripts/check.py"}),
    )
    .await
    .expect("l2 old"));
    assert_eq!(old["data"]["content"], "print('v1')\n");
    let bin = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "deploy-procedure", "revision_id": rev1, "resource": "assets/logo.bin"}),
    )
    .await
    .expect("l2 bin"));
    assert_eq!(bin["data"]["encoding"], "base64");
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(bin["data"]["content"].as_str().expect("content"))
            .expect("base64"),
        binary
    );
    // Level 1 pinned to the older revision.
    let l1_old = ok(&call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "deploy-procedure", "revision_id": rev1}),
    )
    .await
    .expect("l1 pinned"));
    assert_eq!(l1_old["data"]["revision_id"], rev1.as_str());
    assert_eq!(l1_old["data"]["status"], "draft");

    // Attribution of MCP saves: credential, profile served, agent and instance ids.
    let ana = s.service.operator_for("ana").await.expect("ana");
    let revisions = s
        .service
        .list_revisions(&ana, "deploy-procedure", None)
        .await
        .expect("revisions");
    assert_eq!(revisions.len(), 2);
    for r in &revisions {
        assert_eq!(r.attribution.agent_id.as_deref(), Some("rmcp-test"));
        assert_eq!(r.attribution.agent_instance_id.as_deref(), Some("inst-42"));
        assert_eq!(
            r.attribution.client_profile.as_deref(),
            Some("ordinary-full")
        );
        assert!(r.attribution.credential_id.is_some());
    }
    client.cancel().await.ok();
}

#[tokio::test]
async fn discover_lifecycle_2026_07_28_works_statelessly() {
    let s = McpServer::start().await;
    let key = s
        .account("dee", &["memory:read", "memory:write"], None)
        .await;
    let client = s
        .client_with("/mcp", &key, &[], Lifecycle::Discover)
        .await
        .expect("discover");
    let tools = client.list_all_tools().await.expect("tools");
    assert_eq!(tools.len(), 7);
    let mut args = skill("discover-flow", "Steps.\n");
    args["intent"] = json!("publish");
    ok(&call(&client, "save_cloud_skill", args).await.expect("save"));
    let l0 = ok(
        &call(&client, "recall_cloud_skill", json!({"query": "discover"}))
            .await
            .expect("l0"),
    );
    assert_eq!(l0["data"]["skills"][0]["slug"], "discover-flow");
    let skills = client.list_all_skills().await.expect("skills/list");
    assert_eq!(skills.len(), 1);
    // Another client, another connection: no session affinity needed.
    let other = s.client("/mcp", &key).await;
    let root = ok(&call(
        &other,
        "recall_cloud_skill",
        json!({"slug": "discover-flow"}),
    )
    .await
    .expect("l1"));
    assert_eq!(root["data"]["instruction_body"], "Steps.\n");
}

#[tokio::test]
async fn skills_extension_serves_published_skills_with_stored_digests() {
    let s = McpServer::start().await;
    let key = s
        .account("sam", &["memory:read", "memory:write"], None)
        .await;
    let client = s.client("/mcp", &key).await;
    let mut args = skill("pdf-tools", "# PDF\n\nUse `scripts/x.py`.\n");
    args["intent"] = json!("publish");
    args["metadata"] = json!({"license": "MIT", "metadata": {"owner": "docs"}});
    args["components"] = json!([
        {"logical_path": "scripts/x.py", "type": "script", "content": "print(1)\n"},
        {"logical_path": "references/read me.md", "type": "reference", "content": "hello\n"},
        {"logical_path": "assets/blob.bin", "type": "artifact",
         "content": base64::engine::general_purpose::STANDARD.encode([0u8, 159, 146, 150]), "encoding": "base64"}
    ]);
    ok(&call(&client, "save_cloud_skill", args).await.expect("save"));
    // A draft-only skill is not served.
    ok(&call(&client, "save_cloud_skill", skill("draft-only", "x"))
        .await
        .expect("save draft"));

    let skills = client.list_all_skills().await.expect("skills/list");
    assert_eq!(skills.len(), 1, "{skills:?}");
    let entry = &skills[0];
    assert_eq!(entry.uri, "skill://personal/pdf-tools/SKILL.md");
    assert_eq!(entry.frontmatter.name, "pdf-tools");
    assert_eq!(entry.frontmatter.extra.get("license"), Some(&json!("MIT")));
    let SkillResources::Files(files) = &entry.resources else {
        panic!("static skills list their files")
    };
    assert_eq!(files.len(), 4);

    // Component digests are the stored content hashes.
    let l1 = ok(
        &call(&client, "recall_cloud_skill", json!({"slug": "pdf-tools"}))
            .await
            .expect("l1"),
    );
    let resources = l1["data"]["resources"].as_array().expect("resources");
    // Every component is a listed file; the one other file is SKILL.md itself.
    assert_eq!(resources.len(), files.len() - 1, "{resources:?}");
    for manifest in resources {
        let path = manifest["logical_path"].as_str().expect("path");
        let uri = format!("skill://personal/pdf-tools/{}", path.replace(' ', "%20"));
        let f = files.iter().find(|f| f.uri == uri).expect("listed");
        assert_eq!(
            f.digest,
            format!(
                "sha256:{}",
                manifest["content_hash"].as_str().expect("hash")
            )
        );
        assert_eq!(f.size, manifest["size"].as_u64().expect("size"));
    }

    // Every listed file reads back with exactly the size and digest listed.
    for f in files {
        let read = client
            .read_resource(ReadResourceRequestParams::new(f.uri.clone()))
            .await
            .expect("resources/read");
        let bytes = match &read.contents[0] {
            ResourceContents::TextResourceContents { text, .. } => text.as_bytes().to_vec(),
            ResourceContents::BlobResourceContents { blob, .. } => {
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .expect("blob")
            }
            other => panic!("unexpected contents {other:?}"),
        };
        assert_eq!(bytes.len() as u64, f.size, "{}", f.uri);
        assert_eq!(
            format!("sha256:{}", sha256_hex(&bytes)),
            f.digest,
            "{}",
            f.uri
        );
        if f.uri.ends_with("SKILL.md") {
            // Parses back (with the exporter's parser) to the entry's frontmatter and the body.
            let parsed = xmemo_core::package::parse_skill_md(&bytes).expect("SKILL.md parses");
            assert_eq!(parsed.name, "pdf-tools");
            assert_eq!(parsed.description, entry.frontmatter.description);
            assert_eq!(parsed.metadata, entry.frontmatter.extra);
            assert_eq!(parsed.body, "# PDF\n\nUse `scripts/x.py`.\n");
        }
    }

    let got = client
        .get_skill(GetSkillRequestParams::new(
            "skill://personal/pdf-tools/SKILL.md",
        ))
        .await
        .expect("skills/get");
    assert_eq!(&got.skill, entry);
    let missing = client
        .get_skill(GetSkillRequestParams::new(
            "skill://personal/draft-only/SKILL.md",
        ))
        .await
        .expect_err("draft is not served");
    assert_eq!(rpc_code(&missing), -32602);

    let resources = client.list_all_resources().await.expect("resources/list");
    assert_eq!(resources.len(), 4);
    let unknown = client
        .read_resource(ReadResourceRequestParams::new(
            "skill://personal/pdf-tools/nope.md",
        ))
        .await
        .expect_err("unknown file");
    assert!(matches!(rpc_code(&unknown), -32002 | -32602));

    // Another account sees none of it.
    let other_key = s.account("eve", &["memory:read"], None).await;
    let eve = s.client("/mcp", &other_key).await;
    assert!(eve.list_all_skills().await.expect("skills").is_empty());
    assert!(
        eve.read_resource(ReadResourceRequestParams::new(
            "skill://personal/pdf-tools/SKILL.md"
        ))
        .await
        .is_err()
    );
}

#[tokio::test]
async fn every_spec_error_code_is_reachable_through_mcp() {
    let s = McpServer::start_with(McpConfig {
        execute_profiles: vec!["ordinary-full".into()],
        ..Default::default()
    })
    .await;
    let key = s
        .account("kim", &["memory:read", "memory:write"], None)
        .await;
    let client = s.client("/mcp", &key).await;

    // VALIDATION_ERROR: bad slug, unknown argument, wrong argument type, missing first-save name.
    for bad in [
        json!({"slug": "Not A Slug", "name": "n", "description": "d", "instruction_body": "x"}),
        json!({"slug": "ok", "name": "n", "description": "d", "instruction_body": "x", "colour": "red"}),
        json!({"slug": "ok", "name": "n", "description": "d", "instruction_body": 42}),
        json!({"slug": "ok", "description": "d", "instruction_body": "x"}),
    ] {
        let r = call(&client, "save_cloud_skill", bad.clone())
            .await
            .expect("call");
        assert_eq!(code(&r), "VALIDATION_ERROR", "{bad}");
    }
    let r = call(
        &client,
        "recall_cloud_skill",
        json!({"query": "x", "limit": "ten"}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "VALIDATION_ERROR");
    let r = call(&client, "recall_cloud_skill", json!({}))
        .await
        .expect("call");
    assert_eq!(code(&r), "VALIDATION_ERROR");
    assert_eq!(err(&r)["error"]["retryable"], false);

    // PAYLOAD_TOO_LARGE: a body over 64 KiB, nothing written.
    let before = s.store.table_counts().await.expect("counts");
    let r = call(
        &client,
        "save_cloud_skill",
        skill("too-big", &"x".repeat(70_000)),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "PAYLOAD_TOO_LARGE");
    assert_eq!(s.store.table_counts().await.expect("counts"), before);

    // NOT_FOUND.
    let r = call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "no-such-skill"}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "NOT_FOUND");

    // REVISION_PIN_REQUIRED.
    let saved = ok(&call(&client, "save_cloud_skill", skill("pinned", "v1"))
        .await
        .expect("save"));
    let rev1 = saved["data"]["revision_id"]
        .as_str()
        .expect("rev")
        .to_string();
    let r = call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "pinned", "resource": "a.md"}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "REVISION_PIN_REQUIRED");

    // CONFLICT: stale expected_revision_id.
    ok(&call(
        &client,
        "save_cloud_skill",
        json!({"slug": "pinned", "instruction_body": "v2", "expected_revision_id": rev1}),
    )
    .await
    .expect("v2"));
    let r = call(
        &client,
        "save_cloud_skill",
        json!({"slug": "pinned", "instruction_body": "v3", "expected_revision_id": rev1}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "CONFLICT");

    // AMBIGUOUS_SLUG: the same slug in the personal and a team workspace.
    let kim = s.service.operator_for("kim").await.expect("kim");
    s.service
        .create_team(
            &kim,
            xmemo_server::service::types::CreateTeamRequest {
                handle: "ops".into(),
                name: None,
            },
        )
        .await
        .expect("team");
    let mut team_copy = skill("pinned", "team version");
    team_copy["workspace"] = json!("ops");
    ok(&call(&client, "save_cloud_skill", team_copy)
        .await
        .expect("team save"));
    let r = call(&client, "recall_cloud_skill", json!({"slug": "pinned"}))
        .await
        .expect("call");
    assert_eq!(code(&r), "AMBIGUOUS_SLUG");
    assert_eq!(
        err(&r)["error"]["details"]["candidates"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let r = call(
        &client,
        "recall_cloud_skill",
        json!({"slug": "pinned", "workspace": "ops"}),
    )
    .await
    .expect("call");
    assert_eq!(ok(&r)["data"]["instruction_body"], "team version");

    // PERMISSION_DENIED: a read-only key cannot save.
    let ro_key = s.key_for("kim", &["memory:read"], None).await;
    let ro = s.client("/mcp", &ro_key).await;
    let r = call(&ro, "save_cloud_skill", skill("nope", "x"))
        .await
        .expect("call");
    assert_eq!(code(&r), "PERMISSION_DENIED");

    // SANDBOX_UNAVAILABLE: execution enabled for the profile, no sandbox on this server.
    let mut runner = skill("runner", "Run it.");
    runner["components"] =
        json!([{"logical_path": "run.py", "type": "script", "content": "print(1)\n"}]);
    let saved = ok(&call(&client, "save_cloud_skill", runner)
        .await
        .expect("save runner"));
    let runner_rev = saved["data"]["revision_id"]
        .as_str()
        .expect("rev")
        .to_string();
    let r = call(
        &client,
        "execute_cloud_skill",
        json!({"slug": "runner", "revision_id": runner_rev, "script_path": "run.py"}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "SANDBOX_UNAVAILABLE");
    assert_eq!(err(&r)["error"]["retryable"], true);
    let r = call(
        &client,
        "execute_cloud_skill",
        json!({"slug": "pinned", "revision_id": rev1, "script_path": "run.py", "bogus": 1}),
    )
    .await
    .expect("call");
    assert_eq!(code(&r), "VALIDATION_ERROR");

    // AUTH_REQUIRED: no key, or a revoked/unknown one: HTTP 401 with the SPEC body and the
    // RFC 9728 challenge; rmcp's client fails to connect.
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    for key in [None, Some("xmk_not-a-key")] {
        let resp = s.post_raw("/mcp", key, &[], init.to_string()).await;
        assert_eq!(resp.status().as_u16(), 401);
        let challenge = resp
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .expect("challenge")
            .to_string();
        assert!(challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            s.url
        )));
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["error"]["data"]["error"]["code"], "AUTH_REQUIRED");
    }
    assert!(
        s.client_with("/mcp", "xmk_wrong", &[], Lifecycle::Initialize)
            .await
            .is_err()
    );

    // SERVICE_UNAVAILABLE: the store fails under a tool call (the full-text change log every
    // search reads is dropped): retryable, no SQL text in the message.
    let conn = rusqlite::Connection::open(&s.db_path).expect("side connection");
    conn.execute_batch("DROP TABLE fulltext_log")
        .expect("drop the log");
    let r = call(&client, "recall_cloud_skill", json!({"query": "pinned"}))
        .await
        .expect("call");
    assert_eq!(code(&r), "SERVICE_UNAVAILABLE");
    let e = err(&r);
    assert_eq!(e["error"]["retryable"], true);
    assert!(
        !e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("fulltext_log")
    );
}

#[tokio::test]
async fn the_protocol_layer_answers_bad_input_with_json_rpc_errors() {
    let s = McpServer::start().await;
    let key = s.admin_key.clone();
    let v = [("mcp-protocol-version", "2025-06-18")];

    // Unknown method: -32601, the connection stays usable.
    let resp = s
        .post_raw(
            "/mcp",
            Some(&key),
            &v,
            r#"{"jsonrpc":"2.0","id":7,"method":"no/such/method","params":{}}"#,
        )
        .await;
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["code"], -32601);
    assert_eq!(body["id"], 7);

    // Malformed JSON, batches, bad envelopes: parse error / invalid request, HTTP 400.
    for (input, code) in [
        ("{\"jsonrpc\":", -32700),
        ("not json at all", -32700),
        (
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            -32600,
        ),
        ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
            -32600,
        ),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":17}", -32600),
    ] {
        let resp = s.post_raw("/mcp", Some(&key), &v, input.to_string()).await;
        assert_eq!(resp.status().as_u16(), 400, "{input}");
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["error"]["code"], code, "{input}");
    }

    // Wrong parameter types for known methods: invalid params.
    for input in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":["x"]}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall_cloud_skill","arguments":"slug"}}"#,
    ] {
        let resp = s.post_raw("/mcp", Some(&key), &v, input.to_string()).await;
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["error"]["code"], -32602, "{input}: {body}");
        assert_eq!(body["id"], 3);
    }

    // Oversized request: 413 with a JSON-RPC error carrying PAYLOAD_TOO_LARGE.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"save_cloud_skill","arguments":{{"slug":"x","instruction_body":"{}"}}}}}}"#,
        "a".repeat(17 * 1024 * 1024)
    );
    let resp = s.post_raw("/mcp", Some(&key), &v, huge).await;
    assert_eq!(resp.status().as_u16(), 413);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["data"]["error"]["code"], "PAYLOAD_TOO_LARGE");

    // Still serving after all of that.
    let client = s.client("/mcp", &key).await;
    assert_eq!(client.list_all_tools().await.expect("tools").len(), 7);

    // DNS-rebinding protection: foreign Host or Origin refused before anything else.
    let resp = s
        .post_raw("/mcp", Some(&key), &[("host", "evil.example.com")], "{}")
        .await;
    assert_eq!(resp.status().as_u16(), 403);
    let resp = s
        .post_raw("/mcp", None, &[("origin", "http://evil.example.com")], "{}")
        .await;
    assert_eq!(resp.status().as_u16(), 403);

    // Unknown profile path: 404; GET (no stream in stateless mode): 405.
    let resp = s
        .post_raw("/mcp/no-such-profile", Some(&key), &v, "{}")
        .await;
    assert_eq!(resp.status().as_u16(), 404);
    let resp = reqwest::Client::new()
        .get(format!("{}/mcp", s.url))
        .bearer_auth(&key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 405);

    // RFC 9728 metadata.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let doc: Value = reqwest::get(format!("{}{path}", s.url))
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        assert_eq!(doc["resource"], format!("{}/mcp", s.url));
        assert_eq!(
            doc["scopes_supported"],
            json!(["memory:read", "memory:write"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
}

#[tokio::test]
async fn allowed_hosts_are_configurable() {
    let s = McpServer::start_with(McpConfig {
        allowed_hosts: vec!["memory.internal".into()],
        ..Default::default()
    })
    .await;
    let key = s.admin_key.clone();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let resp = s
        .post_raw("/mcp", Some(&key), &[("host", "memory.internal")], ping)
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    // The configured list replaces the loopback default; the public URL's host stays allowed.
    let resp = s
        .post_raw("/mcp", Some(&key), &[("host", "localhost")], ping)
        .await;
    assert_eq!(resp.status().as_u16(), 403);
    let resp = s.post_raw("/mcp", Some(&key), &[], ping).await;
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn two_nodes_serve_one_client_without_session_affinity() {
    let a = McpServer::start().await;
    // A second node on the same database.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let b_url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = xmemo_server::app::build_app(
        a.service.clone(),
        xmemo_server::state::ServerInfo {
            public_url: b_url.clone(),
            version: "test",
            ..Default::default()
        },
    );
    tokio::spawn(xmemo_server::app::serve(
        listener,
        app,
        std::future::pending(),
    ));
    let key = a
        .account("nia", &["memory:read", "memory:write"], None)
        .await;
    let post = |url: String, body: Value| {
        let key = key.clone();
        async move {
            let resp = reqwest::Client::new()
                .post(format!("{url}/mcp"))
                .bearer_auth(key)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .json(&body)
                .send()
                .await
                .expect("post");
            assert!(
                resp.headers().get("mcp-session-id").is_none(),
                "stateless: no session"
            );
            resp.json::<Value>().await.expect("json")
        }
    };
    let init = post(
        a.url.clone(),
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lb","version":"1"}}}),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let mut args = skill("balanced", "Works on any node.\n");
    args["intent"] = json!("publish");
    let saved = post(
        b_url.clone(),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"save_cloud_skill","arguments": args}}),
    )
    .await;
    assert_eq!(saved["result"]["structuredContent"]["kind"], "saved");
    let root = post(
        a.url.clone(),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall_cloud_skill","arguments":{"slug":"balanced"}}}),
    )
    .await;
    assert_eq!(
        root["result"]["structuredContent"]["data"]["instruction_body"],
        "Works on any node.\n"
    );
}
