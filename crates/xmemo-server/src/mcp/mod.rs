//! MCP transport: streamable HTTP at `/mcp` and `/mcp/{profile}` with the official Rust SDK
//! (rmcp), stateless so any node behind a load balancer can answer any request.
//!
//! A request crosses, in order: DNS-rebinding protection ([`auth::HostGuard`]), profile
//! resolution (path, else the key's), authentication exactly as for REST, the pre-dispatch
//! checks ([`precheck`]: media types, one unambiguous JSON-RPC message, the protocol-version
//! header), then rmcp, which hands it to [`McpHandler`]. A read-only tool call that rmcp is
//! certain to accept skips rmcp: [`direct`] answers it, byte for byte as rmcp would. Every
//! body the endpoint answers is JSON-RPC or SSE of JSON-RPC ([`wire`]). The handler only
//! translates: tools go through the [`tools`] registry filtered by the caller's
//! [`profiles::Profile`], skills through [`skills_ext`]; every rule lives in the service
//! layer.
//!
//! Two protocol eras share the endpoint (MCP 2026-07-28, Versioning): a request carrying its
//! protocol version in `_meta` is served as 2026-07-28 defines, so the methods that revision
//! removed (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`/`unsubscribe`)
//! are unknown to it (404, -32601); an `initialize` without it opens the legacy lifecycle
//! (2024-11-05 to 2025-11-25), statelessly.

pub mod auth;
mod conformance;
mod direct;
#[doc(hidden)]
pub mod envelope;
mod errors;
mod memory_tools;
mod precheck;
pub mod profiles;
mod prompts;
pub mod skills_ext;
#[doc(hidden)]
pub mod strict_json;
pub mod tools;
mod wire;

pub use wire::RewrittenPlainText;

use crate::auth::Principal;
use crate::error::ServiceError;
use crate::http::limits::BODY_LIMIT_BYTES;
use crate::metrics::McpPath;
use crate::service::Service;
use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{Json, Response};
use axum::routing::{any, get};
use profiles::{Profile, Profiles};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, CustomRequest,
    CustomResult, GetMeta, GetSkillRequestParams, GetSkillResult, Implementation,
    InitializeRequestParams, InitializeResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use std::borrow::Cow;
use std::sync::Arc;

/// Who is calling and which profile they are served: put in the request's extensions by the
/// HTTP layer, read by the handler.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: Principal,
    pub profile: Profile,
    /// Connected on the conformance path: the diagnostic tools are listed and callable.
    pub fixtures: bool,
    /// The HTTP request's id, carried into every SPEC error object this request answers.
    pub request_id: Option<String>,
}

impl Caller {
    /// A JSON-RPC error whose `data` is a SPEC error object, with this request's id in it.
    fn stamp(&self, mut error: ErrorData) -> ErrorData {
        if let (Some(id), Some(data)) = (&self.request_id, error.data.as_mut()) {
            crate::http::request_log::stamp_error_body(data, id);
        }
        error
    }
}

const INSTRUCTIONS: &str = "xmemo holds the user's Cloud Skills: saved procedures (SOPs, \
runbooks, checklists, reusable prompts) shared by every agent the user connects. When the \
recall_cloud_skill tool is available, call it with a `query` (Level 0) before starting a task \
that may already have a saved procedure, load the best match by `slug` (Level 1) and follow its \
instructions; read its resource files only when needed, pinned to the revision_id Level 1 \
returned (Level 2). When the user asks you to remember how to do something, save it with \
save_cloud_skill. Published skills are also served as skill:// resources through the MCP Skills \
extension (skills/list, skills/get).";

/// The rmcp handler: one per request (stateless), cheap to build.
#[derive(Clone)]
pub struct McpHandler {
    service: Service,
    version: &'static str,
}

impl McpHandler {
    pub fn new(service: Service, version: &'static str) -> Self {
        Self { service, version }
    }
}

fn caller(ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    ctx.extensions
        .get::<Parts>()
        .and_then(|p| p.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("request reached MCP without a caller", None))
}

/// Whether the request is served as MCP 2026-07-28 or later (its `_meta` names the version);
/// rmcp has already checked that version is supported and agrees with the header.
fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Methods the 2026-07-28 revision removed (its changelog; `ping` and the two subscription
/// methods rmcp already refuses itself when their params parse).
const REMOVED_IN_2026_07_28: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Methods rmcp models. One that reaches [`McpHandler::on_custom_request`] had params rmcp
/// could not parse.
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

/// `-32601`; on the 2026-07-28 path rmcp answers it with HTTP 404, as that revision requires.
fn method_not_found(method: &str, removed: bool) -> ErrorData {
    let message = if removed {
        format!(
            "Method not found: `{method}` is not part of MCP 2026-07-28 (requests carry their \
             protocol version in _meta instead); legacy clients use it without that _meta"
        )
    } else {
        format!("Method not found: `{method}`")
    };
    let body = ServiceError::NotFound(message.clone()).to_body();
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        message,
        Some(body),
    )
}

impl ServerHandler for McpHandler {
    // enable_logging: deprecated by SEP-2577, kept for clients on earlier protocol versions.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let version = if self.version.is_empty() {
            env!("CARGO_PKG_VERSION")
        } else {
            self.version
        };
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .enable_logging()
                .enable_skills()
                .build(),
        )
        .with_server_info(
            Implementation::new("xmemo", version)
                .with_title("xmemo")
                .with_description("Self-hostable memory server for AI agents (Cloud Skills)"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(precheck::SUPPORTED_VERSIONS)
    }

    /// The legacy handshake; a request that carries 2026-07-28 `_meta` is in the era without
    /// one, where `initialize` is an unknown method.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if is_modern(&ctx) {
            return Err(method_not_found("initialize", true));
        }
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// rmcp hands over unknown methods and known methods whose params it could not parse.
    /// The latter are invalid params, unless the request's protocol era has no such method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        let removed = is_modern(&ctx) && REMOVED_IN_2026_07_28.contains(&method);
        if STANDARD_METHODS.contains(&method) && !removed {
            let message = format!("Invalid params for `{method}`");
            let body = ServiceError::Validation(message.clone(), None).to_body();
            return Err(ErrorData::invalid_params(message, Some(body)));
        }
        Err(method_not_found(method, removed))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::find(name).map(tools::ToolDef::tool)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller(&ctx)?;
        let mut tools: Vec<Tool> = caller.profile.tools.iter().map(|t| t.tool()).collect();
        if caller.fixtures {
            tools.extend(conformance::tools());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&ctx)?;
        let name = request.name.as_ref();
        if caller.fixtures
            && let Some(answer) = conformance::call(name, &ctx).await
        {
            return answer;
        }
        let Some(tool) = caller.profile.tool(name) else {
            return Err(refused_tool(name, &caller.profile));
        };
        self.service.metrics().record_mcp_tool_call(McpPath::Rmcp);
        let args = request.arguments.unwrap_or_default();
        Ok(tools::call(
            &self.service,
            &caller.principal,
            tool,
            args,
            caller.request_id.as_deref(),
        )
        .await
        .into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = caller(&ctx)?;
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        skills_ext::list_resources(&self.service, &caller.principal, cursor)
            .await
            .map_err(|e| caller.stamp(e))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = caller(&ctx)?;
        skills_ext::read(&self.service, &caller.principal, &request.uri)
            .await
            .map(Into::into)
            .map_err(|e| caller.stamp(e))
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let caller = caller(&ctx)?;
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        prompts::list(&self.service, &caller.principal, cursor)
            .await
            .map_err(|e| caller.stamp(e))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let caller = caller(&ctx)?;
        prompts::get(&self.service, &caller.principal, &request.name)
            .await
            .map(Into::into)
            .map_err(|e| caller.stamp(e))
    }

    /// xmemo sends no log notifications; the level is accepted so clients on the legacy
    /// protocol versions that set it work. 2026-07-28 removed the method (a request asks for
    /// logs in its own `_meta` instead).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if is_modern(&ctx) {
            return Err(method_not_found("logging/setLevel", true));
        }
        caller(&ctx).map(|_| ())
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let caller = caller(&ctx)?;
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        skills_ext::list_skills(&self.service, &caller.principal, cursor)
            .await
            .map_err(|e| caller.stamp(e))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let caller = caller(&ctx)?;
        skills_ext::get_skill(&self.service, &caller.principal, &request.uri)
            .await
            .map(GetSkillResult::new)
            .map_err(|e| caller.stamp(e))
    }
}

/// A tool outside the caller's profile (or not implemented at all): JSON-RPC invalid params,
/// as MCP prescribes for unknown tools, with the SPEC error object in `data`.
fn refused_tool(name: &str, profile: &Profile) -> ErrorData {
    let message = if tools::find(name).is_some() {
        format!(
            "tool `{name}` is not available in client profile `{}`",
            profile.name
        )
    } else {
        format!("unknown tool `{name}`")
    };
    let mut body = ServiceError::NotFound(message.clone()).to_body();
    if let Some(error) = body.get_mut("error").and_then(|e| e.as_object_mut()) {
        error.insert(
            "details".into(),
            json!({ "tool": name, "profile": profile.name, "available": profile.tool_names() }),
        );
    }
    ErrorData::invalid_params(message, Some(body))
}

/// Everything `/mcp` needs, built once per application.
struct McpRuntime {
    http: Result<StreamableHttpService<McpHandler, NeverSessionManager>, String>,
    profiles: Arc<Profiles>,
    guard: auth::HostGuard,
    fixtures: bool,
    rmcp_only: bool,
    /// rmcp was handed an Origin allow-list, so it checks Origin itself.
    rmcp_checks_origin: bool,
}

impl McpRuntime {
    fn new(state: &AppState) -> Self {
        let config = &state.info.mcp;
        let guard = auth::HostGuard::new(
            &config.allowed_hosts,
            &config.allowed_origins,
            &state.info.public_url,
        );
        let (http, profiles) = match config.profiles() {
            Ok(profiles) => {
                let service = state.service.clone();
                let version = state.info.version;
                let mut http_config = StreamableHttpServerConfig::default()
                    .with_legacy_session_mode(false)
                    .with_json_response(true)
                    .with_max_request_body_bytes(BODY_LIMIT_BYTES)
                    .with_allowed_hosts(guard.rmcp_allowed_hosts());
                if !config.allowed_origins.is_empty() {
                    http_config = http_config.with_allowed_origins(config.allowed_origins.clone());
                }
                let http = StreamableHttpService::new(
                    move || Ok(McpHandler::new(service.clone(), version)),
                    Arc::new(NeverSessionManager::default()),
                    http_config,
                );
                (Ok(http), profiles)
            }
            Err(e) => {
                tracing::error!(error = %e, "MCP disabled: the client-profile contract is invalid");
                (
                    Err(e.to_string()),
                    Profiles::from_contract(profiles::DEFAULT_CONTRACT, &[])
                        .unwrap_or_else(|_| empty_profiles()),
                )
            }
        };
        Self {
            http,
            profiles: Arc::new(profiles),
            guard,
            fixtures: config.conformance_fixtures,
            rmcp_only: config.rmcp_only,
            rmcp_checks_origin: !config.allowed_origins.is_empty(),
        }
    }

    async fn handle(
        &self,
        state: AppState,
        path_profile: Option<String>,
        req: Request,
    ) -> Response {
        let (mut parts, body) = req.into_parts();
        if let Err(denied) = self.guard.check(&parts) {
            return denied;
        }
        let request_id = parts
            .extensions
            .get::<crate::http::request_log::RequestId>()
            .map(|id| id.0.clone());
        let http = match &self.http {
            Ok(h) => h,
            Err(reason) => {
                return wire::spec_rejection(&ServiceError::Unavailable(format!(
                    "MCP is disabled on this server: {reason}"
                )));
            }
        };
        let fixtures = self.fixtures && path_profile.as_deref() == Some(conformance::PROFILE);
        let path_profile = match path_profile {
            None => None,
            // The fixtures come on top of the default profile's tools.
            Some(_) if fixtures => self.profiles.get(self.profiles.default_profile()).map(|p| {
                let mut p = p.clone();
                p.name = conformance::PROFILE.to_string();
                p
            }),
            Some(name) => match self.profiles.get(&name) {
                Some(p) => Some(p.clone()),
                None => {
                    return wire::spec_rejection(&ServiceError::NotFound(format!(
                        "no MCP client profile `{name}` (known: {})",
                        self.profiles.names().collect::<Vec<_>>().join(", ")
                    )));
                }
            },
        };
        let mut principal = match auth::authenticate(&mut parts, &state).await {
            Ok(p) => p,
            Err(response) => return response,
        };
        let profile = match path_profile {
            // The credential's own profile bounds what the path serves (`Profiles::bounded`).
            Some(p) => self
                .profiles
                .bounded(&p, principal.client_profile.as_deref()),
            None => {
                let name = principal
                    .client_profile
                    .clone()
                    .unwrap_or_else(|| self.profiles.default_profile().to_string());
                match self.profiles.get(&name) {
                    Some(p) => p.clone(),
                    None => {
                        return wire::spec_rejection(&ServiceError::PermissionDenied(format!(
                            "this key's client profile `{name}` is not an MCP profile of this server; connect to /mcp/{{profile}} with one of: {}",
                            self.profiles.names().collect::<Vec<_>>().join(", ")
                        )));
                    }
                }
            }
        };
        if parts.method != Method::POST {
            return wire::method_not_allowed(&parts.method);
        }
        // Saves made over MCP are attributed to the profile actually served.
        principal.client_profile = Some(profile.name.clone());
        // Refused from Content-Length before reading, so no `100 Continue` is sent.
        let declared = crate::http::body::declared_length(&parts.headers);
        let read = match declared {
            Some(n) if n > BODY_LIMIT_BYTES as u64 => Err(()),
            _ => read_body(body, declared).await,
        };
        let bytes = match read {
            Ok(b) => b,
            Err(()) => {
                let err = ServiceError::TooLarge(
                    format!("request body exceeds {} bytes", BODY_LIMIT_BYTES),
                    None,
                );
                return wire::error_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    None,
                    wire::INVALID_REQUEST,
                    &err.public_message(),
                    Some(err.to_body()),
                );
            }
        };
        let checked = match prechecked(&parts.headers, &bytes).await {
            Ok(checked) => checked,
            Err(response) => return response,
        };
        // Saves are attributed to the agent the client says it is, whichever protocol era
        // it speaks (an attribution header still wins).
        principal.name_agent(client_name(&checked.message).as_deref());
        // An OAuth token is checked for the scope of the call (403 insufficient_scope, which
        // a host can step up from); API keys keep their PERMISSION_DENIED tool results.
        if principal.via_oauth
            && let Some(needed) = needed_scope(&checked.envelope)
            && !principal.scopes.contains(&needed)
        {
            return auth::insufficient_scope(needed, &state.info);
        }
        if !self.rmcp_only
            && !fixtures
            && let Some(call) = direct::take(
                &parts.headers,
                checked.message,
                &profile,
                self.rmcp_checks_origin,
            )
        {
            state
                .service
                .metrics()
                .record_mcp_tool_call(McpPath::Direct);
            return direct::answer(&state.service, &principal, call, request_id.as_deref()).await;
        }
        parts.extensions.insert(Caller {
            principal,
            profile,
            fixtures,
            request_id,
        });
        let response = http
            .handle(Request::from_parts(parts, Body::from(bytes)))
            .await
            .map(Body::new);
        wire::ensure_jsonrpc(response).await
    }
}

/// The name the client gives itself in this message: in its `_meta` (MCP 2026-07-28, sent
/// with every request) or, on the legacy handshake, in `initialize`'s `clientInfo`.
fn client_name(message: &ClientJsonRpcMessage) -> Option<String> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    request
        .request
        .get_meta()
        .client_info()
        .map(|info| info.name)
        .or_else(|| match &request.request {
            ClientRequest::InitializeRequest(init) => Some(init.params.client_info.name.clone()),
            _ => None,
        })
}

/// The body, at most [`BODY_LIMIT_BYTES`], in one buffer sized from `Content-Length` when
/// the request gives it: each frame is copied in and dropped as it arrives, so the body is
/// held once (collecting the frames first and then joining them held it twice). `Err` when
/// it is larger than the limit or could not be read.
async fn read_body(mut body: Body, declared: Option<u64>) -> Result<axum::body::Bytes, ()> {
    use http_body::Body as _;
    let expected = declared.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut bytes = Vec::with_capacity(expected.min(BODY_LIMIT_BYTES));
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let Ok(data) = frame.map_err(drop)?.into_data() else {
            continue;
        };
        if bytes.len() + data.len() > BODY_LIMIT_BYTES {
            return Err(());
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes.into())
}

/// Bodies up to this size are checked on the async worker; larger ones on a blocking thread,
/// as the walk and the parse take time in proportion to the body (a 15 MiB body is walked
/// to its end whenever a refusal names its request).
const INLINE_PRECHECK_MAX_BYTES: usize = 64 * 1024;

/// [`precheck::precheck`], off the async workers for a large body.
#[allow(clippy::result_large_err)]
async fn prechecked(
    headers: &axum::http::HeaderMap,
    bytes: &axum::body::Bytes,
) -> Result<precheck::Checked, Response> {
    if bytes.len() <= INLINE_PRECHECK_MAX_BYTES {
        return precheck::precheck(headers, bytes);
    }
    let (headers, body) = (headers.clone(), bytes.clone());
    match tokio::task::spawn_blocking(move || precheck::precheck(&headers, &body)).await {
        Ok(checked) => checked,
        // A panic stays a panic, for the panic catcher to answer as on the inline path.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(wire::spec_rejection(&ServiceError::Unavailable(format!(
            "the request check did not run: {e}"
        )))),
    }
}

/// The scope a JSON-RPC request needs: a tool's own for `tools/call`, `memory:read` for
/// everything else that reads, nothing for the lifecycle (`initialize`, `ping`,
/// notifications, `server/discover`).
fn needed_scope(envelope: &envelope::Envelope) -> Option<xmemo_core::Scope> {
    let method = envelope.method.as_str()?;
    if matches!(method, "initialize" | "ping" | "server/discover")
        || method.starts_with("notifications/")
    {
        return None;
    }
    if method == "tools/call" {
        return tools::find(envelope.params_name()?).map(|t| t.scope);
    }
    Some(xmemo_core::Scope::Read)
}

fn empty_profiles() -> Profiles {
    // Only reached if the embedded contract itself were broken (a unit test guards it).
    Profiles::from_contract(
        r#"{"version":1,"description":"","default_profile":"none","profiles":[{"name":"none","description":"","tools":[]}]}"#,
        &[],
    )
    .unwrap_or_else(|e| unreachable!("static contract: {e}"))
}

/// `/mcp`, `/mcp/{profile}` and the protected-resource metadata documents.
pub fn routes(state: &AppState) -> Router<AppState> {
    let runtime = Arc::new(McpRuntime::new(state));
    let plain = runtime.clone();
    let by_profile = runtime;
    Router::new()
        .route(
            "/mcp",
            any(move |State(s): State<AppState>, req: Request| {
                let rt = plain.clone();
                async move { rt.handle(s, None, req).await }
            }),
        )
        .route(
            "/mcp/{profile}",
            any(
                move |State(s): State<AppState>, Path(profile): Path<String>, req: Request| {
                    let rt = by_profile.clone();
                    async move { rt.handle(s, Some(profile), req).await }
                },
            ),
        )
        .route(
            crate::state::PROTECTED_RESOURCE_PATH,
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp/{profile}",
            get(protected_resource),
        )
}

async fn protected_resource(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(auth::protected_resource_document(&state.info))
}
