//! REST transport under `/api/v1` (and `/v1`): translation only, every rule lives in the
//! service layer.

mod account_data;
mod accounts;
pub mod client_addr;
mod execute;
pub mod extract;
mod memories;
mod packages;
mod skills;

use crate::error::ServiceError;
use crate::service::Service;
use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Largest request body accepted: 50 components of 128 KiB as base64 plus the 64 KiB body
/// and JSON framing fit well inside.
pub const BODY_LIMIT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub info: Arc<ServerInfo>,
}

/// Facts about this server that responses need.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// Public base URL, e.g. `http://127.0.0.1:8420` (used in metadata documents).
    pub public_url: String,
    pub version: &'static str,
    /// MCP endpoint settings (client-profile contract, allowed hosts/origins, execute profiles).
    pub mcp: crate::mcp::McpConfig,
    /// Peers whose `X-Forwarded-For` names the client (reverse proxies); empty: none.
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

/// A service error rendered as `{"error": {...}}` with the SPEC's HTTP status.
#[derive(Debug)]
pub struct ApiError(pub ServiceError);

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        Self(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code().http_status())
            .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        let mut response = (status, axum::Json(self.0.to_body())).into_response();
        if let Some(secs) = self.0.retry_after_secs() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"xmemo\""),
            );
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// The `/api/v1` routes (also mounted at `/v1`).
pub fn api_routes() -> Router<AppState> {
    skills::routes()
        .merge(accounts::routes())
        .merge(execute::routes())
        .merge(packages::routes())
        .merge(memories::routes())
        .merge(account_data::routes())
}

/// Fallback for unknown routes, in the SPEC error shape.
pub async fn not_found() -> ApiError {
    ServiceError::NotFound("no such endpoint".into()).into()
}

pub async fn method_not_allowed() -> ApiError {
    ServiceError::NotFound("this endpoint does not accept that method".into()).into()
}
