//! JSON-RPC error bodies for `/mcp`, and the guarantee that every body the endpoint sends is
//! JSON-RPC (or SSE of JSON-RPC): our own refusals are built here, and whatever rmcp answers
//! in plain text is rewritten by [`ensure_jsonrpc`]. Each error carries the SPEC error object
//! in `data`, so a client sees the same codes as over REST.

use crate::error::ServiceError;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP 2026-07-28: HTTP headers disagree with the body, or are missing or malformed.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the requested protocol version is not one the server implements.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Largest plain-text body of rmcp's that is read to be rewritten (its messages are one line).
const PLAIN_BODY_LIMIT: usize = 64 * 1024;

/// A JSON-RPC error response. `id` is omitted when the request's could not be read, as MCP
/// (2025-11-25 and later) prescribes; JSON-RPC's `null` is not a valid MCP request id.
pub fn error_response(
    status: StatusCode,
    id: Option<Value>,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({ "code": code, "message": message });
    if let (Some(d), Some(obj)) = (data, error.as_object_mut()) {
        obj.insert("data".into(), d);
    }
    let mut body = json!({ "jsonrpc": "2.0", "error": error });
    if let (Some(id), Some(obj)) = (id, body.as_object_mut()) {
        obj.insert("id".into(), id);
    }
    (status, Json(body)).into_response()
}

/// An HTTP-level refusal (before any JSON-RPC message was read): the status the situation
/// calls for, and a JSON-RPC error whose `data` is the SPEC error object.
pub fn rejection(status: StatusCode, err: &ServiceError) -> Response {
    let code = if status.is_server_error() {
        INTERNAL_ERROR
    } else {
        INVALID_REQUEST
    };
    let mut response = error_response(
        status,
        None,
        code,
        &err.public_message(),
        Some(err.to_body()),
    );
    // A refusal that knows when to come back says so, as on REST.
    if let Some(secs) = err.retry_after_secs() {
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(secs),
        );
    }
    response
}

/// As [`rejection`], with the HTTP status SPEC §10 gives the error's code.
pub fn spec_rejection(err: &ServiceError) -> Response {
    let status =
        StatusCode::from_u16(err.code().http_status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    rejection(status, err)
}

/// Marks (in the response's extensions, which never leave the process) an answer that
/// [`ensure_jsonrpc`] had to rewrite, so in-process tests and the fuzzer can tell a gap in the
/// pre-dispatch checks from an answer that was right in the first place.
#[derive(Debug, Clone, Copy)]
pub struct RewrittenPlainText;

/// Passes JSON, SSE and empty answers through; rewrites any other body into a JSON-RPC error
/// with the same 4xx status (a 5xx becomes 503, per decisions.md, with a generic message).
/// Reaching the rewrite means a check in [`super::precheck`] let through something rmcp
/// refuses in plain text, so it is logged.
pub async fn ensure_jsonrpc(response: Response) -> Response {
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase());
    let is_jsonrpc = content_type.as_deref().is_some_and(|ct| {
        ct.starts_with("application/json") || ct.starts_with("text/event-stream")
    });
    if is_jsonrpc || response.status() == StatusCode::ACCEPTED {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, PLAIN_BODY_LIMIT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    if text.is_empty() && parts.status.is_success() {
        return Response::from_parts(parts, Body::empty());
    }
    tracing::warn!(status = %parts.status, body = %text, "rmcp answered /mcp outside JSON-RPC; rewritten");
    let (status, err) = match parts.status {
        s if s.is_server_error() => (
            StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Internal(text),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (parts.status, ServiceError::TooLarge(text, None)),
        StatusCode::FORBIDDEN => (parts.status, ServiceError::PermissionDenied(text)),
        StatusCode::NOT_FOUND => (parts.status, ServiceError::NotFound(text)),
        s if s.is_client_error() => (s, ServiceError::Validation(text, None)),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Internal(format!("unexpected {} from rmcp: {text}", parts.status)),
        ),
    };
    let mut rewritten = rejection(status, &err);
    rewritten.extensions_mut().insert(RewrittenPlainText);
    // Keep what the status relies on (`Allow` of a 405, a challenge), not the old body's type.
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().append(name.clone(), value.clone());
        }
    }
    rewritten
}

/// `405` for anything but POST: the stateless endpoint has no GET stream and no DELETE
/// (MCP 2026-07-28, Streamable HTTP, Backward Compatibility).
pub fn method_not_allowed(method: &axum::http::Method) -> Response {
    let err = ServiceError::Validation(
        format!("{method} is not served on the MCP endpoint; send each JSON-RPC message as a POST"),
        Some(json!({ "allowed_methods": ["POST"] })),
    );
    let mut response = rejection(StatusCode::METHOD_NOT_ALLOWED, &err);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(r: Response) -> (StatusCode, Option<String>, Value) {
        let status = r.status();
        let ct = r
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20)
            .await
            .expect("body");
        (
            status,
            ct,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn plain(status: StatusCode, text: &'static str) -> Response {
        Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .header("x-kept", "yes")
            .body(Body::from(text))
            .expect("response")
    }

    #[tokio::test]
    async fn plain_text_from_rmcp_becomes_json_rpc_and_json_passes_untouched() {
        let rewritten = ensure_jsonrpc(plain(StatusCode::NOT_ACCEPTABLE, "Not Acceptable")).await;
        assert!(rewritten.extensions().get::<RewrittenPlainText>().is_some());
        let (status, ct, body) = body_of(rewritten).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(ct.as_deref(), Some("application/json"));
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["error"]["code"], INVALID_REQUEST);
        assert_eq!(body["error"]["data"]["error"]["code"], "VALIDATION_ERROR");
        assert!(body.get("id").is_none());

        let r = ensure_jsonrpc(plain(StatusCode::INTERNAL_SERVER_ERROR, "sql: boom")).await;
        assert_eq!(
            r.headers().get("x-kept").map(|v| v.as_bytes()),
            Some(&b"yes"[..])
        );
        let (status, _, body) = body_of(r).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body["error"]["data"]["error"]["code"],
            "SERVICE_UNAVAILABLE"
        );
        assert!(
            !body.to_string().contains("boom"),
            "no internal detail: {body}"
        );

        let json_answer = error_response(StatusCode::OK, Some(json!(3)), -32601, "m", None);
        let untouched = ensure_jsonrpc(json_answer).await;
        assert!(untouched.extensions().get::<RewrittenPlainText>().is_none());
        let (status, _, body) = body_of(untouched).await;
        assert_eq!((status, body["id"].clone()), (StatusCode::OK, json!(3)));

        let accepted = Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .expect("response");
        assert_eq!(
            ensure_jsonrpc(accepted).await.status(),
            StatusCode::ACCEPTED
        );
    }
}
