//! The direct path: read-only tool calls answered without a round trip through rmcp.
//!
//! rmcp serves each stateless request by re-parsing the body, re-serialising the whole message
//! to check the SEP-2243 headers against it, and spawning a service task with channels to run
//! the handler: more than the tool itself costs on the hot read path (recall Levels 0–2). The
//! pre-dispatch layer has already parsed the message; when every check rmcp would make is
//! certain to pass, and the handler's answer is certain to be a tool result, that result is
//! built here with rmcp's own types, so the bytes are the ones rmcp would send.
//!
//! Taken only when all of these hold, otherwise the request goes to rmcp unchanged:
//! - a `tools/call` request (not a notification) for a tool of the caller's profile whose
//!   scope is read-only (writes and `execute_cloud_skill` keep rmcp's cancellation on
//!   disconnect), outside the conformance fixtures;
//! - the Host header is an authority rmcp parses (our guard also takes a bare IPv6 host,
//!   rmcp refuses it), and no Origin header that rmcp would check itself;
//! - either (2026-07-28) `_meta` names a supported protocol version, carries every key that
//!   revision requires, the `MCP-Protocol-Version` header equals it, exactly one `Mcp-Method`
//!   header says `tools/call`, exactly one `Mcp-Name` header names the tool in plain text, and
//!   no `Mcp-Param-*` header is sent; or (legacy) `_meta` names no version and the header is
//!   absent or a known version before 2026-07-28, so rmcp checks no SEP-2243 header.
//!
//! `tests/mcp_direct.rs` sends a table of requests through both paths and compares the answers.

use super::precheck::{PROTOCOL_VERSION_HEADER, SUPPORTED_VERSIONS};
use super::profiles::Profile;
use super::tools::{self, ToolDef};
use super::wire;
use crate::auth::Principal;
use crate::error::ServiceError;
use crate::service::Service;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use rmcp::model::{
    CallToolResponse, ClientJsonRpcMessage, ClientRequest, GetMeta, JsonObject, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use xmemo_core::Scope;

const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";
const MCP_PARAM_PREFIX: &str = "mcp-param-";
/// SEP-2243's wrapper of a Base64-encoded header value (`=?base64?…?=`).
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// A tool call the direct path answers.
pub(super) struct DirectCall {
    id: RequestId,
    tool: &'static ToolDef,
    args: JsonObject,
    /// The version rmcp's handler would serve the request as: the shape of the result
    /// depends on it.
    version: ProtocolVersion,
}

/// The call, when the request is one the direct path answers exactly as rmcp would; `None`
/// leaves it to rmcp. `rmcp_checks_origin`: rmcp was given an Origin allow-list.
pub(super) fn take(
    headers: &HeaderMap,
    message: ClientJsonRpcMessage,
    profile: &Profile,
    rmcp_checks_origin: bool,
) -> Option<DirectCall> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    let meta = request.request.get_meta();
    let version_in_meta = meta.protocol_version();
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let tool = profile.tool(&call.params.name)?;
    if tool.scope != Scope::Read || !host_rmcp_accepts(headers) {
        return None;
    }
    if rmcp_checks_origin && headers.contains_key(header::ORIGIN) {
        return None;
    }
    let header_version = single(headers, PROTOCOL_VERSION_HEADER)?;
    let accepted = match &version_in_meta {
        Some(version) => {
            SUPPORTED_VERSIONS.contains(version)
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
                && header_version == Some(version.as_str())
                && single(headers, MCP_METHOD)? == Some("tools/call")
                && single(headers, MCP_NAME)?.is_some_and(|name| {
                    name == tool.name
                        && !(name.starts_with(BASE64_PREFIX) && name.ends_with(BASE64_SUFFIX))
                })
                && !headers
                    .keys()
                    .any(|h| h.as_str().starts_with(MCP_PARAM_PREFIX))
        }
        None => header_version.is_none_or(|v| {
            v < ProtocolVersion::V_2026_07_28.as_str()
                && SUPPORTED_VERSIONS.iter().any(|known| known.as_str() == v)
        }),
    };
    if !accepted {
        return None;
    }
    // As rmcp's stateless path: `_meta`, else the header, else 2025-03-26.
    let version = version_in_meta
        .or_else(|| {
            let header = header_version?;
            SUPPORTED_VERSIONS
                .iter()
                .find(|v| v.as_str() == header)
                .cloned()
        })
        .unwrap_or(ProtocolVersion::V_2025_03_26);
    let id = request.id;
    let ClientRequest::CallToolRequest(call) = request.request else {
        return None;
    };
    Some(DirectCall {
        id,
        tool,
        args: call.params.arguments.unwrap_or_default(),
        version,
    })
}

/// Runs the call and answers as rmcp's stateless JSON mode does: 200, `application/json`, the
/// JSON-RPC response serialised from rmcp's model, shaped for the protocol version as rmcp's
/// handler shapes it.
pub(super) async fn answer(
    service: &Service,
    principal: &Principal,
    call: DirectCall,
    request_id: Option<&str>,
) -> Response {
    let result = tools::call(service, principal, call.tool, call.args, request_id).await;
    // The body holds the result about twice (the text block and structuredContent): sized up
    // front, it is written without growing the buffer on the way.
    let text: usize = result
        .content
        .iter()
        .filter_map(|block| block.as_text())
        .map(|t| t.text.len())
        .sum();
    let mut result = ServerResult::from(CallToolResponse::from(result));
    // rmcp's handler shapes every result for the version it serves (`resultType` and
    // object-only structured content exist from 2026-07-28 on).
    if call.version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
    }
    let message = ServerJsonRpcMessage::response(result, call.id);
    let mut body = Vec::with_capacity(256 + text * 2 + text / 4);
    match serde_json::to_writer(&mut body, &message) {
        Ok(()) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(super::precheck::JSON),
            );
            response
        }
        // What rmcp's 500 becomes once rewritten (see `wire::ensure_jsonrpc`).
        Err(e) => wire::rejection(
            StatusCode::SERVICE_UNAVAILABLE,
            &ServiceError::Internal(format!("serialize json response: {e}")),
        ),
    }
}

/// `Some(None)` when absent, `Some(Some(value))` for one textual value, `None` (leave it to
/// rmcp) for duplicates or a value that is not visible ASCII.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<Option<&'a str>> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Some(None);
    };
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok().map(Some)
}

/// rmcp refuses a Host header that is not a URI authority; our guard accepts some of those.
fn host_rmcp_accepts(headers: &HeaderMap) -> bool {
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return false;
    };
    host.to_str()
        .is_ok_and(|h| h.parse::<axum::http::uri::Authority>().is_ok())
}
