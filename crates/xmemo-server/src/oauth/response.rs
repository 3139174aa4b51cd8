//! OAuth errors and answers as HTTP: `{"error": "invalid_grant", "error_description": "…"}`
//! (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1) with the status each code takes, never
//! cached. These endpoints speak OAuth to OAuth clients, which parse exactly this; it is the
//! one place the SPEC error shape does not apply (docs/decisions.md).

use crate::service::oauth::{OAuthError, OAuthErrorKind};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};

/// The HTTP status of an OAuth error: 401 for a client that failed to authenticate, 429 for
/// a spent budget, 500/503 for the server's own failures, 400 for everything else.
pub fn status(e: &OAuthError) -> StatusCode {
    match e.kind {
        OAuthErrorKind::InvalidClient => StatusCode::UNAUTHORIZED,
        OAuthErrorKind::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        OAuthErrorKind::TemporarilyUnavailable if e.retry_after.is_some() => {
            StatusCode::TOO_MANY_REQUESTS
        }
        OAuthErrorKind::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// Headers of every token-endpoint answer (RFC 6749 §5.1): never cached.
pub fn no_store(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

/// `e` as an OAuth error answer. `basic_challenge`: the client authenticated with HTTP Basic,
/// so a failed client authentication is answered with a Basic challenge (RFC 6749 §5.2).
pub fn error_response(e: &OAuthError, basic_challenge: bool) -> Response {
    let body = serde_json::json!({
        "error": e.code(),
        "error_description": e.description,
    });
    let mut response = (status(e), Json(body)).into_response();
    let headers = response.headers_mut();
    no_store(headers);
    if let Some(secs) = e.retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if basic_challenge && e.kind == OAuthErrorKind::InvalidClient {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"xmemo\""),
        );
    }
    response
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        error_response(&self, false)
    }
}
