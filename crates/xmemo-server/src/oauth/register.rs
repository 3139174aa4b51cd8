//! `POST /oauth/register`: dynamic client registration (RFC 7591), which some hosts (Cursor)
//! use instead of a metadata document. Public clients register `token_endpoint_auth_method:
//! none`; confidential ones `client_secret_basic` (the RFC's default) or
//! `client_secret_post` and get a secret, shown in this answer only and stored as SHA-256.
//! Registration is open, so it is bounded per address (30 an hour by default).

use super::response::no_store;
use crate::http::client_addr;
use crate::service::oauth::parse_registration;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use serde_json::{Map, Value, json};

fn unix_seconds(at: &str) -> i64 {
    time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp())
        .unwrap_or(0)
}

pub async fn register(
    State(state): State<AppState>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let new = match parse_registration(&body) {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let from = client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let (client, secret) = match state.service.register_oauth_client(new, from).await {
        Ok(done) => done,
        Err(e) => return e.into_response(),
    };
    let mut answer = match client.metadata.clone() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    answer.insert("client_id".into(), json!(client.client_id));
    answer.insert(
        "client_id_issued_at".into(),
        json!(unix_seconds(&client.created_at)),
    );
    answer.insert("client_name".into(), json!(client.client_name));
    answer.insert("redirect_uris".into(), json!(client.redirect_uris));
    answer.insert(
        "token_endpoint_auth_method".into(),
        json!(client.token_endpoint_auth_method),
    );
    if let Some(s) = secret {
        answer.insert("client_secret".into(), json!(s));
        answer.insert("client_secret_expires_at".into(), json!(0));
    }
    let mut response = (StatusCode::CREATED, Json(Value::Object(answer))).into_response();
    no_store(response.headers_mut());
    response
}
