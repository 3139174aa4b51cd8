//! The one rendering of a service error over HTTP: `{"error": {...}}` with the SPEC's status,
//! `Retry-After` for rate limits and a Bearer challenge on 401. REST handlers, extractors and
//! the HTTP plumbing answer with it; `/mcp` wraps the same object in JSON-RPC (`mcp/wire.rs`).

use crate::error::ServiceError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

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
