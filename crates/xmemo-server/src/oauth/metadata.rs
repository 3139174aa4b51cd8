//! Authorization-server metadata (RFC 8414), also served at the OpenID discovery address
//! that some MCP clients try first (it carries `code_challenge_methods_supported`, which MCP
//! requires of both).

use crate::service::oauth::SCOPES;
use crate::state::{AppState, ServerInfo};
use axum::extract::State;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

pub fn document_for(info: &ServerInfo) -> serde_json::Value {
    let issuer = info.issuer();
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "scopes_supported": SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    })
}

pub async fn document(State(state): State<AppState>) -> Response {
    let mut response = Json(document_for(&state.info)).into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("public, max-age=300"),
    );
    response
}
