//! JSON-RPC framing checks before a POST reaches rmcp, so malformed input gets a JSON-RPC
//! error object (parse error, invalid request, invalid params, request too large) instead of
//! a bare HTTP status with a text body.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error response body.
pub fn error_response(
    status: StatusCode,
    id: Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({ "code": code, "message": message });
    if let (Some(d), Some(obj)) = (data, error.as_object_mut()) {
        obj.insert("data".into(), d);
    }
    (
        status,
        Json(json!({ "jsonrpc": "2.0", "id": id, "error": error })),
    )
        .into_response()
}

/// Methods rmcp models; a request naming one that still parses as "custom" had bad params.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// `Ok(())` when `body` is one JSON-RPC message rmcp can route.
#[allow(clippy::result_large_err)]
pub fn precheck(body: &[u8]) -> Result<(), Response> {
    let bad = |id: Value, code: i64, message: String| {
        Err(error_response(
            StatusCode::BAD_REQUEST,
            id,
            code,
            &message,
            None,
        ))
    };
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return bad(Value::Null, PARSE_ERROR, format!("Parse error: {e}")),
    };
    let Value::Object(obj) = &value else {
        let what = if value.is_array() {
            "batched requests are not supported; send one JSON-RPC message per POST"
        } else {
            "a JSON-RPC message must be a JSON object"
        };
        return bad(
            Value::Null,
            INVALID_REQUEST,
            format!("Invalid Request: {what}"),
        );
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = match obj.get("id") {
        None => true,
        Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    if !id_ok {
        return bad(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: `id` must be a string or an integer".into(),
        );
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return bad(
            id,
            INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\"".into(),
        );
    }
    let method = match obj.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => {
            return bad(
                id,
                INVALID_REQUEST,
                "Invalid Request: `method` must be a string".into(),
            );
        }
    };
    if let Some(params) = obj.get("params")
        && !(params.is_object() || params.is_array())
    {
        return bad(
            id,
            INVALID_REQUEST,
            "Invalid Request: `params` must be an object".into(),
        );
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        // rmcp falls back to a custom request when a known method's params do not parse;
        // that is invalid params (answered in-band, HTTP 200), not an unknown method.
        Ok(ClientJsonRpcMessage::Request(r)) => match &r.request {
            ClientRequest::CustomRequest(c) if STANDARD_METHODS.contains(&c.method.as_str()) => {
                Err(error_response(
                    StatusCode::OK,
                    id,
                    INVALID_PARAMS,
                    &format!("Invalid params for `{}`", c.method),
                    None,
                ))
            }
            _ => Ok(()),
        },
        Ok(_) => Ok(()),
        Err(e) => match method {
            Some(m) => bad(id, INVALID_PARAMS, format!("Invalid params for `{m}`: {e}")),
            None => bad(id, INVALID_REQUEST, format!("Invalid Request: {e}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<i64> {
        match precheck(body.as_bytes()) {
            Ok(()) => None,
            Err(r) => {
                assert!(matches!(
                    r.status(),
                    StatusCode::BAD_REQUEST | StatusCode::OK
                ));
                Some(0)
            }
        }
    }

    #[test]
    fn well_formed_messages_pass_and_junk_does_not() {
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"a","method":"no/such/method","params":{}}"#),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        for junk in [
            "{",
            "[]",
            "42",
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
        ] {
            assert_eq!(code(junk), Some(0), "{junk}");
        }
    }
}
