//! The pre-dispatch layer: what a POST to `/mcp` must satisfy before rmcp sees it, answered
//! with JSON-RPC errors where rmcp would answer plain text (or, for a duplicate key, read a
//! different message than our checks did).
//!
//! Order follows rmcp's own, so the same request gets the same answer whichever layer
//! refuses it: media types, then the body (one unambiguous JSON object, a JSON-RPC envelope
//! rmcp can route), then the `MCP-Protocol-Version` header. Method-level rules that depend on
//! the protocol era (methods 2026-07-28 removed) live in the handler, behind rmcp's
//! per-request validation (see `McpHandler::on_custom_request`).

use super::envelope::{self, Envelope, Params, Text, TopLevel, lenient_id};
use super::strict_json::{self, StrictError};
use super::wire::{
    HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
    error_response,
};
use crate::error::ServiceError;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, ProtocolVersion};
use serde_json::{Value, json};

pub const JSON: &str = "application/json";
pub const EVENT_STREAM: &str = "text/event-stream";
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// The protocol versions this server implements (what `server/discover` lists and what
/// `UnsupportedProtocolVersionError` names): every version rmcp knows.
pub const SUPPORTED_VERSIONS: &[ProtocolVersion] = ProtocolVersion::KNOWN_VERSIONS;

/// A body that passed: its envelope (what the scope check reads) and the message as rmcp's
/// type (what the direct path answers from), each read once here for every later step.
pub struct Checked {
    pub envelope: Envelope,
    pub message: ClientJsonRpcMessage,
}

/// The parsed message when `body`, sent with `headers`, is one JSON-RPC message rmcp can
/// route.
///
/// The body is read as a tree only once it is known to be JSON with unique keys and at most
/// [`strict_json::MAX_VALUES`] values, none a string over [`strict_json::MAX_STRING_BYTES`]:
/// until then it is walked, keeping nothing.
#[allow(clippy::result_large_err)]
pub fn precheck(headers: &HeaderMap, body: &[u8]) -> Result<Checked, Response> {
    check_media_types(headers, body)?;
    match strict_json::check(body) {
        Ok(_) => {}
        Err(StrictError::Syntax(e)) => {
            return Err(bad(None, PARSE_ERROR, format!("Parse error: {e}")));
        }
        Err(StrictError::DuplicateKey(e)) => {
            return Err(bad(
                lenient_id(body),
                INVALID_REQUEST,
                format!("Invalid Request: {e}; every object key must be unique"),
            ));
        }
        Err(too_big) => return Err(too_large(body, &too_big)),
    }
    let Some(envelope) = envelope::read(body) else {
        // The check above accepted exactly what this walk reads.
        return Err(bad(
            None,
            PARSE_ERROR,
            "Parse error: the body is not one JSON value".into(),
        ));
    };
    check_envelope(&envelope)?;
    let id = envelope.id.clone();
    // Parsed from the bytes, exactly as rmcp will, so a body that passes here cannot make
    // rmcp answer its plain-text 415.
    let message = match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        Ok(m) => m,
        Err(e) => {
            return Err(match envelope.method.as_str() {
                Some(m) => bad(id, INVALID_PARAMS, format!("Invalid params for `{m}`: {e}")),
                None => bad(id, INVALID_REQUEST, format!("Invalid Request: {e}")),
            });
        }
    };
    check_protocol_version(headers, &message, id)?;
    Ok(Checked { envelope, message })
}

/// 413, as for a body over the size limit: the message is larger than any the server serves
/// (`details.reason` says which cap, `details.limit` its value).
fn too_large(body: &[u8], refusal: &StrictError) -> Response {
    let (reason, limit) = match refusal {
        StrictError::StringTooLong { limit } => ("string_too_long", *limit),
        StrictError::TooManyValues { limit } => ("too_many_values", *limit),
        StrictError::Syntax(_) | StrictError::DuplicateKey(_) => ("body", 0),
    };
    let err = ServiceError::TooLarge(
        refusal.to_string(),
        Some(json!({ "field": "body", "reason": reason, "limit": limit })),
    );
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        lenient_id(body),
        INVALID_REQUEST,
        &err.public_message(),
        Some(err.to_body()),
    )
}

fn bad(id: Option<Value>, code: i64, message: String) -> Response {
    let data = ServiceError::Validation(message.clone(), None).to_body();
    error_response(StatusCode::BAD_REQUEST, id, code, &message, Some(data))
}

/// 406 unless the client accepts both answers a request may get (MCP: JSON or an SSE
/// stream); 415 unless the body is declared JSON.
#[allow(clippy::result_large_err)]
fn check_media_types(headers: &HeaderMap, body: &[u8]) -> Result<(), Response> {
    let (mut json, mut sse) = (false, false);
    for essence in accepted_media_types(headers) {
        json |= essence.eq_ignore_ascii_case(JSON);
        sse |= essence.eq_ignore_ascii_case(EVENT_STREAM);
    }
    if !(json && sse) {
        let message =
            format!("Not Acceptable: the Accept header must list both {JSON} and {EVENT_STREAM}");
        let err = ServiceError::Validation(
            message.clone(),
            Some(json!({ "header": "accept", "required": [JSON, EVENT_STREAM] })),
        );
        return Err(error_response(
            StatusCode::NOT_ACCEPTABLE,
            lenient_id(body),
            INVALID_REQUEST,
            &message,
            Some(err.to_body()),
        ));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim());
    if !content_type.is_some_and(|ct| ct.eq_ignore_ascii_case(JSON)) {
        let message = format!("Unsupported Media Type: send the body as Content-Type: {JSON}");
        let err = ServiceError::Validation(
            message.clone(),
            Some(json!({ "header": "content-type", "required": JSON })),
        );
        return Err(error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            lenient_id(body),
            INVALID_REQUEST,
            &message,
            Some(err.to_body()),
        ));
    }
    Ok(())
}

/// Media-range essences of every `Accept` value, minus those weighted `q=0` (RFC 9110
/// §12.4.2). Commas and semicolons inside quoted strings do not split.
fn accepted_media_types(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| split_unquoted(v, ','))
        .filter_map(|entry| {
            let mut parts = split_unquoted(entry, ';');
            let essence = parts.next()?.trim();
            let refused = parts.any(|p| {
                p.split_once('=').is_some_and(|(name, q)| {
                    name.trim().eq_ignore_ascii_case("q") && is_zero_weight(q.trim())
                })
            });
            (!refused).then_some(essence)
        })
}

fn is_zero_weight(q: &str) -> bool {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    whole == "0" && fraction.len() <= 3 && fraction.bytes().all(|b| b == b'0')
}

fn split_unquoted(text: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let (mut quoted, mut escaped) = (false, false);
    text.split(move |c| {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if !quoted && c == delimiter {
            return true;
        }
        false
    })
}

/// One JSON-RPC 2.0 object with well-typed members (batches are not part of MCP).
#[allow(clippy::result_large_err)]
fn check_envelope(envelope: &Envelope) -> Result<(), Response> {
    if envelope.top != TopLevel::Object {
        let what = if envelope.top == TopLevel::Array {
            "batched requests are not supported; send one JSON-RPC message per POST"
        } else {
            "a JSON-RPC message must be a JSON object"
        };
        return Err(bad(
            None,
            INVALID_REQUEST,
            format!("Invalid Request: {what}"),
        ));
    }
    let id = envelope.id.clone();
    if envelope.has_id && id.is_none() {
        return Err(bad(
            None,
            INVALID_REQUEST,
            "Invalid Request: `id` must be a string or an integer".into(),
        ));
    }
    if envelope.jsonrpc.as_str() != Some("2.0") {
        return Err(bad(
            id,
            INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\"".into(),
        ));
    }
    if envelope.method == Text::Other {
        return Err(bad(
            id,
            INVALID_REQUEST,
            "Invalid Request: `method` must be a string".into(),
        ));
    }
    if envelope.params == Params::Other {
        return Err(bad(
            id,
            INVALID_REQUEST,
            "Invalid Request: `params` must be an object".into(),
        ));
    }
    Ok(())
}

/// A header naming a version this server does not implement is refused with MCP's
/// `UnsupportedProtocolVersionError` (HTTP 400, the supported versions in `data`). A request
/// that also carries its version in `_meta` is left to rmcp, which checks the two agree and
/// answers the same error; `initialize` negotiates in its body, as the legacy lifecycle does.
#[allow(clippy::result_large_err)]
fn check_protocol_version(
    headers: &HeaderMap,
    message: &ClientJsonRpcMessage,
    id: Option<Value>,
) -> Result<(), Response> {
    let Some(raw) = headers.get(PROTOCOL_VERSION_HEADER) else {
        return Ok(());
    };
    let Ok(requested) = raw.to_str() else {
        let message = "Header mismatch: MCP-Protocol-Version is not a valid header value";
        let err = ServiceError::Validation(
            message.into(),
            Some(json!({ "header": PROTOCOL_VERSION_HEADER })),
        );
        return Err(error_response(
            StatusCode::BAD_REQUEST,
            id,
            HEADER_MISMATCH,
            message,
            Some(err.to_body()),
        ));
    };
    // Read as rmcp reads it: only a request's `_meta` counts, not a notification's.
    let (in_meta, is_initialize) = match message {
        ClientJsonRpcMessage::Request(r) => (
            r.request.get_meta().protocol_version().is_some(),
            matches!(r.request, ClientRequest::InitializeRequest(_)),
        ),
        _ => (false, false),
    };
    if in_meta || is_initialize || SUPPORTED_VERSIONS.iter().any(|v| v.as_str() == requested) {
        return Ok(());
    }
    Err(unsupported_version(id, requested))
}

pub fn unsupported_version(id: Option<Value>, requested: &str) -> Response {
    let supported: Vec<&str> = SUPPORTED_VERSIONS.iter().map(|v| v.as_str()).collect();
    let message = format!(
        "Unsupported protocol version `{requested}`; this server supports {}",
        supported.join(", ")
    );
    let err = ServiceError::Validation(
        message.clone(),
        Some(json!({ "header": PROTOCOL_VERSION_HEADER, "supported": supported })),
    );
    error_response(
        StatusCode::BAD_REQUEST,
        id,
        UNSUPPORTED_PROTOCOL_VERSION,
        &message,
        Some(
            json!({ "supported": supported, "requested": requested, "error": err.to_body()["error"] }),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in pairs {
            h.insert(*name, HeaderValue::from_str(value).expect("value"));
        }
        h
    }

    fn status(h: &HeaderMap, body: &str) -> Option<StatusCode> {
        precheck(h, body.as_bytes()).err().map(|r| r.status())
    }

    #[test]
    fn envelopes_rmcp_can_route_pass_and_junk_does_not() {
        let h = headers(&[]);
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"no/such/method","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            // Bad params of a known method: the handler answers, after rmcp's own checks.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
        ] {
            assert_eq!(status(&h, ok), None, "{ok}");
        }
        for junk in [
            "{",
            "[]",
            "42",
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
        ] {
            assert_eq!(status(&h, junk), Some(StatusCode::BAD_REQUEST), "{junk}");
        }
    }

    #[test]
    fn media_types_follow_the_transport_rules() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut h = headers(&[]);
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert_eq!(status(&h, ping), Some(StatusCode::NOT_ACCEPTABLE));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json;q=0"),
        );
        assert_eq!(status(&h, ping), Some(StatusCode::NOT_ACCEPTABLE));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("Application/JSON;q=0.5, text/event-stream;q=1.0"),
        );
        assert_eq!(status(&h, ping), None);
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(status(&h, ping), Some(StatusCode::UNSUPPORTED_MEDIA_TYPE));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        assert_eq!(status(&h, ping), None);
    }

    #[test]
    fn only_a_bare_unknown_version_header_is_refused_here() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(
            status(&headers(&[(PROTOCOL_VERSION_HEADER, "2025-06-18")]), ping),
            None
        );
        assert_eq!(
            status(&headers(&[(PROTOCOL_VERSION_HEADER, "1999-01-01")]), ping),
            Some(StatusCode::BAD_REQUEST)
        );
        // With `_meta` or on initialize, rmcp compares header and body itself.
        let with_meta = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}"#;
        assert_eq!(
            status(
                &headers(&[(PROTOCOL_VERSION_HEADER, "1999-01-01")]),
                with_meta
            ),
            None
        );
        // A notification's `_meta` does not count (found by fuzzing: rmcp answered plain text).
        let notification = r#"{"jsonrpc":"2.0","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}"#;
        assert_eq!(
            status(
                &headers(&[(PROTOCOL_VERSION_HEADER, "1999-01-01")]),
                notification
            ),
            Some(StatusCode::BAD_REQUEST)
        );
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
        assert_eq!(
            status(&headers(&[(PROTOCOL_VERSION_HEADER, "1999-01-01")]), init),
            None
        );
    }

    async fn answer(response: Response) -> (StatusCode, Value) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        (status, serde_json::from_slice(&bytes).expect("json"))
    }

    #[tokio::test]
    async fn messages_past_a_cap_are_refused_413_naming_the_request() {
        let h = headers(&[]);
        let zeros = vec!["0"; strict_json::MAX_VALUES].join(",");
        let many =
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":[{zeros}]}}}}"#);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"{}"}}"#,
            "m".repeat(strict_json::MAX_STRING_BYTES + 1)
        );
        for (body, reason, limit) in [
            (many, "too_many_values", strict_json::MAX_VALUES),
            (long, "string_too_long", strict_json::MAX_STRING_BYTES),
        ] {
            let refused = precheck(&h, body.as_bytes()).err().expect("refused");
            let (status, value) = answer(refused).await;
            assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{reason}");
            assert_eq!(value["id"], 5, "{reason}");
            assert_eq!(value["error"]["code"], INVALID_REQUEST, "{reason}");
            let spec = &value["error"]["data"]["error"];
            assert_eq!(spec["code"], "PAYLOAD_TOO_LARGE", "{reason}");
            assert_eq!(spec["details"]["reason"], reason);
            assert_eq!(spec["details"]["limit"], limit);
        }
        // One value fewer passes.
        let zeros = vec!["0"; strict_json::MAX_VALUES - 6].join(",");
        let at_cap =
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":[{zeros}]}}}}"#);
        assert!(precheck(&h, at_cap.as_bytes()).is_ok());
    }

    #[tokio::test]
    async fn refusals_name_the_request_as_a_value_tree_would() {
        // A duplicate key and a wrong Accept header: the id is read without building the body.
        let dup = r#"{"jsonrpc":"2.0","id":"x","id":"last","method":"ping"}"#;
        let (status, value) =
            answer(precheck(&headers(&[]), dup.as_bytes()).err().expect("dup")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(value["id"], "last");
        let mut h = headers(&[]);
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
        let (status, value) = answer(precheck(&h, ping.as_bytes()).err().expect("406")).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(value["id"], 9);
    }
}
