//! `GET /mcp/config/autonomous-agent` (SPEC §7): the connection recipe for headless runners,
//! built from this server's public URL.
//!
//! It needs no credential: everything in it is either public anyway (the metadata documents it
//! points to, the MCP URL a 401 names) or a fixed name, and a runner asks for it before it
//! has a key or a token (decisions.md, "The autonomous-agent recipe is public").

use crate::state::{
    AUTHORIZATION_SERVER_METADATA_PATH, AppState, PROTECTED_RESOURCE_PATH, ServerInfo,
};
use axum::Router;
use axum::extract::State;
use axum::response::Json;
use axum::routing::get;
use serde_json::{Value, json};
use xmemo_core::model::Scope;

pub fn routes() -> Router<AppState> {
    Router::new().route("/mcp/config/autonomous-agent", get(autonomous_agent))
}

async fn autonomous_agent(State(state): State<AppState>) -> Json<Value> {
    Json(autonomous_agent_recipe(&state.info))
}

/// The recipe itself. The protected-resource URL is the RFC 9728 form for the resource
/// `<public>/mcp` (the well-known suffix followed by the resource's path).
pub fn autonomous_agent_recipe(info: &ServerInfo) -> Value {
    let base = info.base_url();
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    json!({
        "mcp_url": format!("{base}/mcp"),
        "auth_modes": {
            "oauth": {
                "authorization_server_metadata_url":
                    format!("{base}{AUTHORIZATION_SERVER_METADATA_PATH}"),
                "protected_resource_metadata_url":
                    format!("{base}{PROTECTED_RESOURCE_PATH}/mcp"),
                "scopes": scopes,
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
            "env": { "XMEMO_URL": base },
        },
    })
}
