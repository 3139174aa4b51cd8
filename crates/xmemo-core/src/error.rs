use serde::Serialize;

/// The error codes of SPEC §10. Every library error maps to exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ValidationError,
    PayloadTooLarge,
    AuthRequired,
    PermissionDenied,
    NotFound,
    Conflict,
    AmbiguousSlug,
    RevisionPinRequired,
    RateLimited,
    SandboxUnavailable,
    /// The safety scanner called the revision malicious and the action needs it not to be
    /// (running its scripts; approving it without an override).
    SafetyBlocked,
    ServiceUnavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "VALIDATION_ERROR",
            Self::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Self::AuthRequired => "AUTH_REQUIRED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::NotFound => "NOT_FOUND",
            Self::Conflict => "CONFLICT",
            Self::AmbiguousSlug => "AMBIGUOUS_SLUG",
            Self::RevisionPinRequired => "REVISION_PIN_REQUIRED",
            Self::RateLimited => "RATE_LIMITED",
            Self::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            Self::SafetyBlocked => "SAFETY_BLOCKED",
            Self::ServiceUnavailable => "SERVICE_UNAVAILABLE",
        }
    }

    pub fn http_status(self) -> u16 {
        match self {
            Self::ValidationError | Self::RevisionPinRequired => 422,
            Self::PayloadTooLarge => 413,
            Self::AuthRequired => 401,
            Self::PermissionDenied | Self::SafetyBlocked => 403,
            Self::NotFound => 404,
            Self::Conflict | Self::AmbiguousSlug => 409,
            Self::RateLimited => 429,
            Self::SandboxUnavailable | Self::ServiceUnavailable => 503,
        }
    }
}

/// A content limit or format rule that a save broke. `field` names the offending input
/// (e.g. `components[3].content`), so a client can point at it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    pub code: ErrorCode,
    pub field: String,
    pub message: String,
    /// Limit and actual value when the error is about a size or count.
    pub limit: Option<u64>,
    pub actual: Option<u64>,
}

impl ValidationError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::ValidationError,
            field: field.into(),
            message: message.into(),
            limit: None,
            actual: None,
        }
    }

    pub fn too_many(field: impl Into<String>, what: &str, limit: u64, actual: u64) -> Self {
        Self {
            code: ErrorCode::ValidationError,
            field: field.into(),
            message: format!("at most {limit} {what} allowed, got {actual}"),
            limit: Some(limit),
            actual: Some(actual),
        }
    }

    pub fn too_large(field: impl Into<String>, limit: u64, actual: u64) -> Self {
        Self {
            code: ErrorCode::PayloadTooLarge,
            field: field.into(),
            message: format!("at most {limit} bytes allowed, got {actual}"),
            limit: Some(limit),
            actual: Some(actual),
        }
    }
}
