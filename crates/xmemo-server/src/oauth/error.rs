//! The OAuth error shape `{"error": "invalid_grant", "error_description": "…"}` (RFC 6749
//! §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1). These endpoints speak OAuth to OAuth clients,
//! which parse exactly this; it is the one place the SPEC error shape does not apply
//! (docs/decisions.md).

use crate::error::ServiceError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    /// The registered error code (`invalid_request`, `invalid_client`, `invalid_grant`…).
    pub error: &'static str,
    pub description: String,
    pub status: StatusCode,
    /// `Retry-After` seconds (rate limits).
    pub retry_after: Option<u64>,
    /// The client authenticated with HTTP Basic and failed: answer with a Basic challenge.
    pub basic_challenge: bool,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        let status = match error {
            "invalid_client" => StatusCode::UNAUTHORIZED,
            "server_error" => StatusCode::INTERNAL_SERVER_ERROR,
            "temporarily_unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        Self {
            error,
            description: description.into(),
            status,
            retry_after: None,
            basic_challenge: false,
        }
    }

    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new("invalid_request", d)
    }
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new("invalid_client", d)
    }
    pub fn invalid_grant(d: impl Into<String>) -> Self {
        Self::new("invalid_grant", d)
    }
    pub fn invalid_scope(d: impl Into<String>) -> Self {
        Self::new("invalid_scope", d)
    }
    pub fn invalid_target(d: impl Into<String>) -> Self {
        Self::new("invalid_target", d)
    }

    pub fn rate_limited(secs: u64, what: &str) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            retry_after: Some(secs),
            ..Self::new(
                "temporarily_unavailable",
                format!("too many {what} from this address; retry in {secs} s"),
            )
        }
    }
}

impl From<ServiceError> for OAuthError {
    fn from(e: ServiceError) -> Self {
        match &e {
            ServiceError::RateLimited {
                retry_after_secs, ..
            } => Self {
                status: StatusCode::TOO_MANY_REQUESTS,
                retry_after: Some(*retry_after_secs),
                ..Self::new("temporarily_unavailable", e.public_message())
            },
            ServiceError::Validation(..) | ServiceError::TooLarge(..) => {
                Self::invalid_request(e.public_message())
            }
            _ if e.retryable() => Self::new("temporarily_unavailable", e.public_message()),
            _ => Self::new("server_error", e.public_message()),
        }
    }
}

/// Headers of every token-endpoint answer (RFC 6749 §5.1): never cached.
pub fn no_store(headers: &mut axum::http::HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

impl From<xmemo_store::StoreError> for OAuthError {
    fn from(e: xmemo_store::StoreError) -> Self {
        ServiceError::from(e).into()
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": self.error,
            "error_description": self.description,
        });
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        no_store(headers);
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.basic_challenge {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"xmemo\""),
            );
        }
        response
    }
}
