//! One id and one log event per request, so a user's report can be found in the log.
//!
//! Every request gets an id: the client's own `X-Request-Id` when it is sane (1 to 64 of
//! `A-Z a-z 0-9 . _ : -`), else a new `req_…`. The response carries it in `X-Request-Id`, an
//! error body (`{"error": {...}}`, the SPEC's one shape) carries it as `error.request_id`, and
//! the event `request` (target `xmemo::access`) names it with the method, the path (never the
//! query string, which may hold a code or a state), the status, the duration, the client
//! address (behind trusted proxies, the one they forward) and the account the credential
//! check found. Secrets never reach it: headers are not logged at all.

use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");
/// The longest client id kept; a longer (or odd) one is replaced.
const CLIENT_ID_MAX: usize = 64;
/// Error bodies are small; a larger one (none is) is passed on as it is.
const ERROR_BODY_MAX: usize = 64 * 1024;
/// The longest path logged.
const PATH_MAX: usize = 256;

/// The request's id, in its extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Where the credential check leaves the account it found, for the request's log event.
#[derive(Debug, Clone, Default)]
pub struct AccountSlot(Arc<OnceLock<String>>);

impl AccountSlot {
    pub fn set(&self, account_id: &str) {
        let _ = self.0.set(account_id.to_string());
    }
}

/// Records the account of a request whose credential was accepted (from its extensions).
pub fn record_account(extensions: &axum::http::Extensions, account_id: &str) {
    if let Some(slot) = extensions.get::<AccountSlot>() {
        slot.set(account_id);
    }
}

pub async fn middleware(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get(&REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_sane(v))
        .map(str::to_string)
        .unwrap_or_else(|| xmemo_core::new_id("req"));
    let method = request.method().clone();
    // The client as every budget sees it: the TCP peer, or behind a trusted proxy the
    // address its X-Forwarded-For names.
    let client = super::client_addr::of_request(
        request.headers(),
        request.extensions(),
        &state.info.trusted_proxies,
    );
    let path: String = request.uri().path().chars().take(PATH_MAX).collect();
    let account = AccountSlot::default();
    request.extensions_mut().insert(account.clone());
    request.extensions_mut().insert(RequestId(id.clone()));
    if let Ok(value) = HeaderValue::from_str(&id) {
        request.headers_mut().insert(REQUEST_ID_HEADER, value);
    }

    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    let status = response.status();
    state
        .service
        .metrics()
        .record_http_response(status.as_u16());
    if status.is_client_error() || status.is_server_error() {
        response = with_id_in_error_body(response, &id).await;
    }
    tracing::info!(
        target: "xmemo::access",
        request_id = %id,
        method = %method,
        path = %path,
        status = status.as_u16(),
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        account_id = account.0.get().map(String::as_str),
        client = client.map(|c| c.to_string()),
        "request"
    );
    response
}

fn is_sane(id: &str) -> bool {
    (1..=CLIENT_ID_MAX).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// `error.request_id` added to a JSON error body; any other body is passed on unchanged.
async fn with_id_in_error_body(response: Response, id: &str) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, ERROR_BODY_MAX).await {
        Ok(b) => b,
        // Too large to be one of ours, or unreadable: nothing more can be sent of it.
        Err(_) => return Response::from_parts(parts, Body::empty()),
    };
    let mut value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    if !stamp_error_body(&mut value, id) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let Ok(out) = serde_json::to_vec(&value) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(out))
}

/// Adds `request_id` to the SPEC error object of a body: `{"error": {"code": "…", …}}`, or a
/// JSON-RPC error (`/mcp`) whose `data` is that shape; whether there was one. HTTP error
/// answers get it here in the middleware; MCP's failures answered with 200 (tool results,
/// JSON-RPC errors of a method) get it where `mcp/` builds them.
pub fn stamp_error_body(body: &mut serde_json::Value, id: &str) -> bool {
    let Some(mut error) = body.get_mut("error").and_then(|e| e.as_object_mut()) else {
        return false;
    };
    if error.get("code").is_some_and(|c| c.is_number()) {
        match error
            .get_mut("data")
            .and_then(|d| d.get_mut("error"))
            .and_then(|e| e.as_object_mut())
        {
            Some(spec) => error = spec,
            None => return false,
        }
    }
    if !error.get("code").is_some_and(|c| c.is_string()) {
        return false;
    }
    error.insert(
        "request_id".into(),
        serde_json::Value::String(id.to_string()),
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_client_ids_are_kept() {
        assert!(is_sane("0f8e2c1a-4b6d"));
        assert!(is_sane("trace:abc.def_1"));
        assert!(!is_sane(""));
        assert!(!is_sane(&"a".repeat(65)));
        assert!(!is_sane("id with space"));
        assert!(!is_sane("id\"injected"));
        assert!(!is_sane("é"));
    }

    #[test]
    fn the_id_goes_into_the_spec_object_of_either_shape() {
        let mut rest = serde_json::json!({"error": {"code": "NOT_FOUND", "message": "m"}});
        assert!(stamp_error_body(&mut rest, "req_1"));
        assert_eq!(rest["error"]["request_id"], "req_1");

        let mut rpc = serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32602, "message": "m", "data": {"error": {"code": "NOT_FOUND"}}}});
        assert!(stamp_error_body(&mut rpc, "req_2"));
        assert_eq!(rpc["error"]["data"]["error"]["request_id"], "req_2");
        assert!(
            rpc["error"].get("request_id").is_none(),
            "JSON-RPC keeps its own members"
        );

        for mut other in [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "m"}}),
            serde_json::json!({"error": "invalid_grant"}),
            serde_json::json!({"ok": true}),
        ] {
            let before = other.clone();
            assert!(!stamp_error_body(&mut other, "req_3"));
            assert_eq!(other, before);
        }
    }
}
