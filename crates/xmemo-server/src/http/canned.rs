//! Whole HTTP responses written straight to a socket, for answers given below the
//! application: hyper's parse-error answers rewritten in the SPEC error shape, and the
//! refusal of a connection over the cap.
//!
//! hyper 1.x answers a request head it cannot parse by itself (`role.rs`, `on_error`): 400
//! for a bad method, URI, version or header (bad bytes, a duplicate or negative
//! `Content-Length`), 414 for a URI over 65,534 bytes, 431 for too many or too large headers
//! — a bare status line with `content-length: 0`, and there is no hook to change it. The
//! connection IO ([`super::io::GuardedIo`]) captures that head (it is written while no
//! request of ours is in progress) and sends [`replacement`] instead: the same status, the
//! SPEC error object as a JSON body, `connection: close` (hyper closes next anyway) and
//! hyper's `date`.

use super::{MAX_HEAD_BYTES, MAX_HEADERS};
use crate::error::ServiceError;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// hyper's limit on the request target (`MAX_URI_LEN` in `proto/h1/role.rs`).
pub const MAX_URI_BYTES: usize = 65_534;

/// The response to send instead of hyper's captured head, once the head is complete
/// (`None` until then). Anything that does not read as a status line is passed on as it
/// came.
pub fn replacement(captured: &[u8]) -> Option<Vec<u8>> {
    let end = find(captured, b"\r\n\r\n")?;
    let head = &captured[..end];
    let Some(status) = status_of(head) else {
        return Some(captured.to_vec());
    };
    let date = std::str::from_utf8(head)
        .ok()
        .and_then(|h| {
            h.split("\r\n")
                .find(|l| l.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("date:")))
        })
        .map(|l| l.get(5..).unwrap_or("").trim().to_string());
    let mut headers = Vec::new();
    if let Some(date) = date {
        headers.push(("date", date));
    }
    Some(response(status, &headers, &error_for(status).to_body()))
}

/// 503 for a connection the server cannot take (at the cap, none idle to displace).
pub fn at_capacity_response() -> Vec<u8> {
    let err = ServiceError::AtCapacity {
        message: "the server has as many open connections as it serves; retry shortly".into(),
        retry_after_secs: 1,
    };
    response(
        StatusCode::SERVICE_UNAVAILABLE,
        &[("retry-after", "1".into())],
        &err.to_body(),
    )
}

fn error_for(status: StatusCode) -> ServiceError {
    match status {
        StatusCode::URI_TOO_LONG => ServiceError::TooLarge(
            format!("the request URI is longer than {MAX_URI_BYTES} bytes"),
            Some(json!({"field": "uri", "reason": "uri_too_long", "limit": MAX_URI_BYTES})),
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ServiceError::TooLarge(
            format!(
                "the request head is too large: at most {MAX_HEADERS} header fields and {MAX_HEAD_BYTES} bytes with the request line"
            ),
            Some(json!({
                "field": "headers",
                "reason": "headers_too_large",
                "max_headers": MAX_HEADERS,
                "limit": MAX_HEAD_BYTES,
            })),
        ),
        _ => ServiceError::Validation(
            "the request is not valid HTTP/1.1: a malformed request line or header field, or a missing, duplicate or invalid Content-Length or Transfer-Encoding".into(),
            Some(json!({"reason": "malformed_request"})),
        ),
    }
}

fn response(status: StatusCode, headers: &[(&str, String)], body: &Value) -> Vec<u8> {
    let body = body.to_string();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    out.into_bytes()
}

/// `HTTP/1.x NNN …` → the status.
fn status_of(head: &[u8]) -> Option<StatusCode> {
    let line = head.split(|b| *b == b'\n').next()?;
    let rest = line.strip_prefix(b"HTTP/1.")?;
    let code = rest.get(2..5)?;
    StatusCode::from_bytes(code).ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(response: &[u8]) -> (String, Value) {
        let text = String::from_utf8(response.to_vec()).expect("utf-8");
        let (head, body) = text.split_once("\r\n\r\n").expect("head");
        (
            head.to_string(),
            serde_json::from_str(body).expect("json body"),
        )
    }

    #[test]
    fn hyper_heads_become_spec_errors_with_the_same_status() {
        for (status, code, reason) in [
            ("400 Bad Request", "VALIDATION_ERROR", "malformed_request"),
            ("414 URI Too Long", "PAYLOAD_TOO_LARGE", "uri_too_long"),
            (
                "431 Request Header Fields Too Large",
                "PAYLOAD_TOO_LARGE",
                "headers_too_large",
            ),
        ] {
            let hyper = format!(
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\ndate: Tue, 01 Jul 2025 10:00:00 GMT\r\n\r\n"
            );
            // Nothing until the head is complete.
            assert_eq!(replacement(&hyper.as_bytes()[..10]), None);
            let out = replacement(hyper.as_bytes()).expect("complete head");
            let (head, body) = split(&out);
            assert!(
                head.starts_with(&format!("HTTP/1.1 {status}\r\n")),
                "{head}"
            );
            assert!(head.contains("content-type: application/json"), "{head}");
            assert!(head.contains("connection: close"), "{head}");
            assert!(
                head.contains("date: Tue, 01 Jul 2025 10:00:00 GMT"),
                "{head}"
            );
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.parse().ok())
                .expect("content-length");
            assert_eq!(length, body.to_string().len());
            assert_eq!(body["error"]["code"], code);
            assert_eq!(body["error"]["retryable"], false);
            assert_eq!(body["error"]["details"]["reason"], reason);
            assert!(
                body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty())
            );
        }
    }

    #[test]
    fn unreadable_heads_pass_unchanged() {
        let odd = b"garbage\r\n\r\n";
        assert_eq!(replacement(odd), Some(odd.to_vec()));
    }

    #[test]
    fn the_capacity_refusal_is_a_retryable_503() {
        let (head, body) = split(&at_capacity_response());
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains("retry-after: 1"));
        assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
        assert_eq!(body["error"]["retryable"], true);
        assert_eq!(body["error"]["details"]["retry_after_seconds"], 1);
    }
}
