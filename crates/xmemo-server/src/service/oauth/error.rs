//! What an OAuth rule refuses, in OAuth's own words: the registered error code (RFC 6749
//! §4.1.2.1 and §5.2, RFC 7591 §3.2.2, RFC 8707), a description for the client's developer,
//! and, for rate limits, when to retry. How that reaches the client (a JSON body with an HTTP
//! status and a Basic challenge, or a redirect back to it) is the transport's business
//! (`oauth/response.rs`, `web/consent.rs`).

use crate::error::ServiceError;

/// The registered OAuth error codes this server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthErrorKind {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    InvalidScope,
    InvalidTarget,
    UnsupportedGrantType,
    UnsupportedResponseType,
    AccessDenied,
    InvalidRedirectUri,
    InvalidClientMetadata,
    ServerError,
    TemporarilyUnavailable,
}

impl OAuthErrorKind {
    /// The code as OAuth writes it (`invalid_grant`…).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidGrant => "invalid_grant",
            Self::InvalidScope => "invalid_scope",
            Self::InvalidTarget => "invalid_target",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::UnsupportedResponseType => "unsupported_response_type",
            Self::AccessDenied => "access_denied",
            Self::InvalidRedirectUri => "invalid_redirect_uri",
            Self::InvalidClientMetadata => "invalid_client_metadata",
            Self::ServerError => "server_error",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub kind: OAuthErrorKind,
    pub description: String,
    /// Seconds until the client may try again: set for rate limits only.
    pub retry_after: Option<u64>,
}

impl OAuthError {
    pub fn new(kind: OAuthErrorKind, description: impl Into<String>) -> Self {
        Self {
            kind,
            description: description.into(),
            retry_after: None,
        }
    }

    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::InvalidRequest, d)
    }
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::InvalidClient, d)
    }
    pub fn invalid_grant(d: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::InvalidGrant, d)
    }
    pub fn invalid_scope(d: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::InvalidScope, d)
    }
    pub fn invalid_target(d: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::InvalidTarget, d)
    }

    /// A budget is spent: `temporarily_unavailable`, retry in `secs`.
    pub fn rate_limited(secs: u64, what: &str) -> Self {
        Self {
            retry_after: Some(secs),
            ..Self::new(
                OAuthErrorKind::TemporarilyUnavailable,
                format!("too many {what} from this address; retry in {secs} s"),
            )
        }
    }

    /// The registered code (`invalid_grant`…).
    pub fn code(&self) -> &'static str {
        self.kind.as_str()
    }
}

impl From<ServiceError> for OAuthError {
    fn from(e: ServiceError) -> Self {
        match &e {
            ServiceError::RateLimited {
                retry_after_secs, ..
            } => Self {
                retry_after: Some(*retry_after_secs),
                ..Self::new(OAuthErrorKind::TemporarilyUnavailable, e.public_message())
            },
            ServiceError::Validation(..) | ServiceError::TooLarge(..) => {
                Self::invalid_request(e.public_message())
            }
            _ if e.retryable() => {
                Self::new(OAuthErrorKind::TemporarilyUnavailable, e.public_message())
            }
            _ => Self::new(OAuthErrorKind::ServerError, e.public_message()),
        }
    }
}

impl From<xmemo_store::StoreError> for OAuthError {
    fn from(e: xmemo_store::StoreError) -> Self {
        ServiceError::from(e).into()
    }
}
