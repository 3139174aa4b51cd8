//! The service's one error type, mapped to the SPEC §10 codes in exactly one place
//! ([`ServiceError::code`]); transports only render it.

use crate::fetch::FetchError;
use serde_json::Value;
use xmemo_core::package::PackageError;
use xmemo_core::{ErrorCode, TransitionError, ValidationError};
use xmemo_store::{LimitReached, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{0}")]
    Validation(String, Option<Value>),
    #[error("{0}")]
    TooLarge(String, Option<Value>),
    #[error("{0}")]
    AuthRequired(String),
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// A conflict whose details name what is in the way.
    #[error("{0}")]
    ConflictWith(String, Value),
    /// A concurrent write won the race; the same request may succeed when tried again.
    #[error("{0}")]
    Contention(String),
    #[error("slug `{slug}` exists in several workspaces; pass `workspace`")]
    AmbiguousSlug { slug: String, candidates: Value },
    #[error("{0}")]
    RevisionPinRequired(String),
    #[error("{0}")]
    SandboxUnavailable(String),
    /// The safety scanner called the revision malicious (service/safety.rs); details carry
    /// the verdict's summary.
    #[error("{0}")]
    SafetyBlocked(String, Value),
    #[error("{0}")]
    Unavailable(String),
    /// Too many attempts from this client (or account): RATE_LIMITED, retryable after
    /// `retry_after_secs` (sent as `Retry-After` and in `details`).
    #[error("{message}")]
    RateLimited {
        message: String,
        retry_after_secs: u64,
    },
    /// A capacity limit of this server is reached (e.g. concurrent executions, or a search
    /// while the search indexes are being built after a start): retryable
    /// SERVICE_UNAVAILABLE whose message is shown, since it describes no fault, with
    /// `retry_after_secs` as for [`ServiceError::RateLimited`].
    #[error("{message}")]
    AtCapacity {
        message: String,
        retry_after_secs: u64,
    },
    /// A remote host (repository import) failed, timed out or throttled: retryable, and
    /// unlike [`ServiceError::Unavailable`] its message is shown, since it is about the
    /// remote host, not this server.
    #[error("{0}")]
    Upstream(String),
    /// A bug or an unexpected storage failure: logged in full, shown to clients as a generic
    /// "service unavailable" without detail.
    #[error("internal error")]
    Internal(String),
}

pub type ServiceResult<T> = Result<T, ServiceError>;

impl ServiceError {
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Validation(..) => ErrorCode::ValidationError,
            Self::TooLarge(..) => ErrorCode::PayloadTooLarge,
            Self::AuthRequired(_) => ErrorCode::AuthRequired,
            Self::PermissionDenied(_) => ErrorCode::PermissionDenied,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::Conflict(_) | Self::ConflictWith(..) | Self::Contention(_) => ErrorCode::Conflict,
            Self::AmbiguousSlug { .. } => ErrorCode::AmbiguousSlug,
            Self::RevisionPinRequired(_) => ErrorCode::RevisionPinRequired,
            Self::SandboxUnavailable(_) => ErrorCode::SandboxUnavailable,
            Self::SafetyBlocked(..) => ErrorCode::SafetyBlocked,
            Self::RateLimited { .. } => ErrorCode::RateLimited,
            Self::Unavailable(_)
            | Self::AtCapacity { .. }
            | Self::Upstream(_)
            | Self::Internal(_) => ErrorCode::ServiceUnavailable,
        }
    }

    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_)
                | Self::Contention(_)
                | Self::Upstream(_)
                | Self::Internal(_)
                | Self::SandboxUnavailable(_)
                | Self::RateLimited { .. }
                | Self::AtCapacity { .. }
        )
    }

    /// Seconds after which the same request may succeed, when the error knows.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::RateLimited {
                retry_after_secs, ..
            }
            | Self::AtCapacity {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// The message a client sees (never internal detail).
    pub fn public_message(&self) -> String {
        match self {
            Self::Internal(_) => "the service failed to complete the request; try again".into(),
            Self::Unavailable(_) => "the service is temporarily unavailable; try again".into(),
            other => other.to_string(),
        }
    }

    pub fn details(&self) -> Option<Value> {
        match self {
            Self::Validation(_, d) | Self::TooLarge(_, d) => d.clone(),
            Self::ConflictWith(_, d) | Self::SafetyBlocked(_, d) => Some(d.clone()),
            Self::AmbiguousSlug { slug, candidates } => Some(serde_json::json!({
                "slug": slug,
                "candidates": candidates,
            })),
            Self::RateLimited {
                retry_after_secs, ..
            }
            | Self::AtCapacity {
                retry_after_secs, ..
            } => Some(serde_json::json!({ "retry_after_seconds": retry_after_secs })),
            _ => None,
        }
    }

    /// The SPEC error object `{"error": {code, message, retryable, details?}}`.
    pub fn to_body(&self) -> Value {
        let mut error = serde_json::json!({
            "code": self.code().as_str(),
            "message": self.public_message(),
            "retryable": self.retryable(),
        });
        if let (Some(details), Some(obj)) = (self.details(), error.as_object_mut()) {
            obj.insert("details".into(), details);
        }
        serde_json::json!({ "error": error })
    }

    pub fn validation(message: impl Into<String>, field: &str) -> Self {
        Self::Validation(message.into(), Some(serde_json::json!({ "field": field })))
    }
}

impl From<ValidationError> for ServiceError {
    fn from(e: ValidationError) -> Self {
        let mut details = serde_json::json!({ "field": e.field });
        if let (Some(limit), Some(actual), Some(obj)) = (e.limit, e.actual, details.as_object_mut())
        {
            obj.insert("limit".into(), limit.into());
            obj.insert("actual".into(), actual.into());
        }
        let message = e.to_string();
        match e.code {
            ErrorCode::PayloadTooLarge => Self::TooLarge(message, Some(details)),
            _ => Self::Validation(message, Some(details)),
        }
    }
}

/// Skill packages: the code the package error chose, its message, and its details (`field`,
/// `reason`, `limit`/`actual`, `paths`, `line`/`column`).
impl From<PackageError> for ServiceError {
    fn from(e: PackageError) -> Self {
        let details = Some(e.details());
        let message = e.to_string();
        match e.code() {
            ErrorCode::PayloadTooLarge => Self::TooLarge(message, details),
            _ => Self::Validation(message, details),
        }
    }
}

/// Repository import downloads: a refused target or an unusable URL is the caller's to fix
/// (VALIDATION_ERROR), a missing repository/ref is NOT_FOUND, an oversized archive is
/// PAYLOAD_TOO_LARGE, and network failures, timeouts and a failing or throttling host are
/// retryable SERVICE_UNAVAILABLE.
impl From<FetchError> for ServiceError {
    fn from(e: FetchError) -> Self {
        let message = e.to_string();
        let details = |reason: &str| Some(serde_json::json!({ "field": "url", "reason": reason }));
        match e {
            FetchError::BadUrl(_) => Self::Validation(message, details("unsupported_url")),
            FetchError::Refused { .. } => Self::Validation(message, details("refused_target")),
            FetchError::TooManyRedirects { limit, .. } => Self::Validation(
                message,
                Some(serde_json::json!({
                    "field": "url", "reason": "too_many_redirects", "limit": limit,
                })),
            ),
            FetchError::Rejected { status, .. } => Self::Validation(
                message,
                Some(serde_json::json!({
                    "field": "url", "reason": "rejected_by_host", "status": status,
                })),
            ),
            FetchError::NotFound { .. } => Self::NotFound(message),
            FetchError::TooLarge { limit, .. } => Self::TooLarge(
                message,
                Some(serde_json::json!({
                    "field": "url", "reason": "archive_too_large", "limit": limit,
                })),
            ),
            FetchError::Upstream { .. }
            | FetchError::Timeout { .. }
            | FetchError::Network { .. } => {
                tracing::warn!(error = %message, "repository import fetch failed");
                Self::Upstream(message)
            }
            FetchError::Config(msg) => {
                tracing::error!(error = %msg, "invalid fetch configuration");
                Self::Internal(msg)
            }
        }
    }
}

impl From<TransitionError> for ServiceError {
    fn from(e: TransitionError) -> Self {
        match e {
            TransitionError::NotPermitted { .. } => Self::PermissionDenied(e.to_string()),
            TransitionError::IllegalFrom { .. } => Self::Conflict(e.to_string()),
        }
    }
}

/// A bound the store checked in the write's transaction. A quota of bytes is
/// PAYLOAD_TOO_LARGE and a quota of counts VALIDATION_ERROR, as the content limits are (the
/// decisions' rule), both with `details.field` `quota.<name>`, `reason: quota`, and the
/// limit and what the write would make it; neither is retryable: the operator raises it.
impl From<LimitReached> for ServiceError {
    fn from(l: LimitReached) -> Self {
        let message = l.to_string();
        match l {
            LimitReached::Quota {
                quota,
                limit,
                used,
                requested,
            } => {
                let details = Some(serde_json::json!({
                    "field": format!("quota.{quota}"),
                    "reason": "quota",
                    "limit": limit,
                    "actual": used.saturating_add(requested),
                }));
                if quota == "bytes" {
                    Self::TooLarge(message, details)
                } else {
                    Self::Validation(message, details)
                }
            }
            LimitReached::PendingInvitations { limit } => Self::Validation(
                message,
                Some(serde_json::json!({
                    "field": "invitee", "reason": "pending_invitations", "limit": limit,
                })),
            ),
            LimitReached::DeclinedRecently { .. } => Self::Conflict(message),
            LimitReached::RegisteredClients { .. } => Self::AtCapacity {
                message,
                retry_after_secs: 3600,
            },
        }
    }
}

/// What a search answered while the server builds its search indexes tells the client to
/// wait before trying again.
const SEARCH_WARMING_RETRY_SECS: u64 = 2;

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => Self::NotFound(format!("{what} not found")),
            StoreError::Conflict(msg) => Self::Conflict(msg),
            StoreError::Contention(msg) => Self::Contention(msg),
            StoreError::Unavailable(msg) => {
                tracing::error!(error = %msg, "database unavailable");
                Self::Unavailable(msg)
            }
            StoreError::Internal(msg) => {
                tracing::error!(error = %msg, "storage failure");
                Self::Internal(msg)
            }
            StoreError::Limit(limit) => limit.into(),
            StoreError::Warming(message) => Self::AtCapacity {
                message,
                retry_after_secs: SEARCH_WARMING_RETRY_SECS,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search while the indexes are built is a retryable 503 that says when to come back,
    /// with a message the client can act on (not the generic "unavailable").
    #[test]
    fn a_search_while_the_indexes_are_built_is_a_retryable_503() {
        let e = ServiceError::from(StoreError::Warming("building its search indexes".into()));
        assert_eq!(e.code(), ErrorCode::ServiceUnavailable);
        assert!(e.retryable());
        assert_eq!(e.retry_after_secs(), Some(SEARCH_WARMING_RETRY_SECS));
        assert!(
            e.public_message().contains("search indexes"),
            "{}",
            e.public_message()
        );
    }
}
