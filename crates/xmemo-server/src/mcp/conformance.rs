//! Diagnostic tools the official MCP conformance suite calls to observe protocol rules xmemo
//! keeps by construction: it never needs a client capability, never sends the client a
//! request, and never logs to it. A suite cannot see an absence, so these tools make each
//! rule observable through the real transport (rmcp, the pre-dispatch layer, the JSON/SSE
//! choice).
//!
//! They touch no data and are served only on the `conformance` profile path, which exists only
//! when the operator turns them on (`XMEMO_MCP_CONFORMANCE_FIXTURES=1`; tests/interop does).
//! Names and behaviour follow the suite's reference server.

use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, JsonObject,
    ProgressNotificationParam, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;
use std::sync::Arc;

/// The profile path (`/mcp/conformance`) on which the fixtures are listed.
pub const PROFILE: &str = "conformance";

const MISSING_CAPABILITY: &str = "test_missing_capability";
const STREAMING: &str = "test_streaming_elicitation";
const LOGGING: &str = "test_logging_tool";

/// `(name, description)` of every fixture, in `tools/list` order.
const FIXTURES: [(&str, &str); 3] = [
    (
        MISSING_CAPABILITY,
        "Conformance fixture: needs the client's sampling capability and refuses the call \
         with MissingRequiredClientCapabilityError (-32021) when it was not declared.",
    ),
    (
        STREAMING,
        "Conformance fixture: needs the elicitation capability, reports progress on the \
         request's own stream when given a progressToken, and never sends the client a request.",
    ),
    (
        LOGGING,
        "Conformance fixture: logs one info message, delivered only when the request's _meta \
         asks for io.modelcontextprotocol/logLevel info or lower.",
    ),
];

pub fn tools() -> Vec<Tool> {
    FIXTURES
        .iter()
        .map(|(name, description)| {
            let mut schema = JsonObject::new();
            schema.insert("type".into(), json!("object"));
            schema.insert("properties".into(), json!({}));
            Tool::new(*name, *description, Arc::new(schema))
        })
        .collect()
}

/// Runs the fixture `name`, or `None` when `name` is not one.
pub async fn call(
    name: &str,
    ctx: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let capabilities = ctx.client_capabilities().unwrap_or_default();
    let result = match name {
        MISSING_CAPABILITY => match capabilities.sampling {
            #[allow(deprecated)] // Sampling is deprecated by SEP-2577; the suite still asks.
            None => Err(missing(
                ClientCapabilities::builder().enable_sampling().build(),
            )),
            Some(_) => Ok(text(
                "sampling is declared; xmemo sends no sampling request",
            )),
        },
        STREAMING => match capabilities.elicitation {
            None => Err(missing(
                ClientCapabilities::builder().enable_elicitation().build(),
            )),
            Some(_) => {
                if let Some(token) = ctx.meta.get_progress_token() {
                    // A notification about this request, on this request's stream; rmcp
                    // switches the answer from JSON to SSE for it.
                    let _ = ctx
                        .peer
                        .notify_progress(ProgressNotificationParam::new(token, 1.0).with_total(1.0))
                        .await;
                }
                Ok(text("streamed without any request to the client"))
            }
        },
        LOGGING => {
            if wants_log(ctx, Severity::Info) {
                send_info(
                    ctx,
                    "conformance fixture: the request asked for this log message",
                )
                .await;
            }
            Ok(text("logging evaluated"))
        }
        _ => return None,
    };
    Some(result.map(CallToolResponse::from))
}

fn text(message: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

fn missing(required: ClientCapabilities) -> ErrorData {
    ErrorData::missing_required_client_capability(required)
}

/// Log severities in RFC 5424 order, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Severity {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

#[allow(deprecated)] // Logging is deprecated by SEP-2577; 2026-07-28 still defines logLevel.
fn severity(level: rmcp::model::LoggingLevel) -> Severity {
    use rmcp::model::LoggingLevel as L;
    match level {
        L::Debug => Severity::Debug,
        L::Info => Severity::Info,
        L::Notice => Severity::Notice,
        L::Warning => Severity::Warning,
        L::Error => Severity::Error,
        L::Critical => Severity::Critical,
        L::Alert => Severity::Alert,
        L::Emergency => Severity::Emergency,
    }
}

/// MCP 2026-07-28: a server sends `notifications/message` for a request only when that
/// request's `_meta` names a log level, and only at or above it. Nothing else opts in: the
/// legacy `logging/setLevel` has no session to remember it on a stateless server.
fn wants_log(ctx: &RequestContext<RoleServer>, level: Severity) -> bool {
    ctx.meta
        .log_level()
        .is_some_and(|requested| level >= severity(requested))
}

#[allow(deprecated)] // See `severity`.
async fn send_info(ctx: &RequestContext<RoleServer>, message: &str) {
    use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
    let _ = ctx
        .peer
        .notify_logging_message(
            LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                .with_logger("xmemo"),
        )
        .await;
}
