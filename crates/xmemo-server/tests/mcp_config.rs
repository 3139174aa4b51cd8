//! `GET /api/v1/mcp/config/autonomous-agent` (SPEC §7): the recipe is built from the public
//! URL, needs no credential, and the documents it points to are the ones this server serves.

use serde_json::{Value, json};
use std::sync::Arc;
use xmemo_server::Service;
use xmemo_server::app::{build_app, serve};
use xmemo_server::state::ServerInfo;

/// A server listening on a local port that calls itself `public_url`.
async fn start(public_url: &str) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = xmemo_store::sqlite::SqliteStore::open(&dir.path().join("x.db"))
        .await
        .expect("open store");
    let service = Service::new(Arc::new(store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let local = format!("http://{}", listener.local_addr().expect("local addr"));
    let app = build_app(
        service,
        ServerInfo {
            public_url: public_url.to_string(),
            version: "test",
            ..Default::default()
        },
    );
    tokio::spawn(serve(listener, app, std::future::pending()));
    (local, dir)
}

async fn get(url: &str, auth: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let body = response.json().await.expect("JSON body");
    (status, body)
}

#[tokio::test]
async fn recipe_is_built_from_the_public_url_and_needs_no_credential() {
    // A trailing slash in the setting must not double up in the URLs.
    let (local, _dir) = start("https://memory.example.com/").await;
    let expected = json!({
        "mcp_url": "https://memory.example.com/mcp",
        "auth_modes": {
            "oauth": {
                "authorization_server_metadata_url":
                    "https://memory.example.com/.well-known/oauth-authorization-server",
                "protected_resource_metadata_url":
                    "https://memory.example.com/.well-known/oauth-protected-resource/mcp",
                "scopes": ["memory:read", "memory:write"],
            },
            "xmemo_key": {
                "header": "Authorization: Bearer",
                "alt_header": "X-API-Key",
                "env_var": "XMEMO_KEY",
            },
        },
        "agent_instance": {
            "header": "X-Memory-OS-Agent-Instance-ID",
            "env_var": "XMEMO_AGENT_INSTANCE_ID",
        },
        "agent_id": {
            "header": "X-Memory-OS-Agent-ID",
            "env_var": "XMEMO_AGENT_ID",
        },
        "stdio_bridge": {
            "command": "xmemo",
            "args": ["mcp"],
            "env": { "XMEMO_URL": "https://memory.example.com" },
        },
    });
    for prefix in ["/api/v1", "/v1"] {
        let url = format!("{local}{prefix}/mcp/config/autonomous-agent");
        // Anonymous, and with a credential that is no key at all: the same answer.
        for auth in [None, Some("Bearer xmk_not_a_key")] {
            let (status, body) = get(&url, auth).await;
            assert_eq!(status, 200, "{url} {auth:?}: {body}");
            assert_eq!(body, expected, "{url} {auth:?}");
        }
    }
}

#[tokio::test]
async fn recipe_names_what_this_server_serves() {
    let (local, _dir) = start("http://127.0.0.1:1").await;
    let (_, recipe) = get(&format!("{local}/api/v1/mcp/config/autonomous-agent"), None).await;
    // The public URL here is not where the test reaches the server; follow the paths.
    let path_of = |url: &str| {
        url.strip_prefix("http://127.0.0.1:1")
            .unwrap_or_else(|| panic!("{url} is not under the public URL"))
            .to_string()
    };
    let prm_url = recipe["auth_modes"]["oauth"]["protected_resource_metadata_url"]
        .as_str()
        .expect("protected_resource_metadata_url");
    let (status, prm) = get(&format!("{local}{}", path_of(prm_url)), None).await;
    assert_eq!(status, 200, "{prm}");
    assert_eq!(prm["resource"], recipe["mcp_url"], "{prm}");
    assert_eq!(
        prm["scopes_supported"], recipe["auth_modes"]["oauth"]["scopes"],
        "{prm}"
    );
    // The header names are the ones the server reads attribution from.
    for (field, header) in [
        (
            "agent_instance",
            xmemo_server::http::credential::AGENT_INSTANCE_HEADER,
        ),
        ("agent_id", xmemo_server::http::credential::AGENT_ID_HEADER),
    ] {
        let named = recipe[field]["header"].as_str().expect("header");
        assert!(named.eq_ignore_ascii_case(header), "{field}: {named}");
    }
}
