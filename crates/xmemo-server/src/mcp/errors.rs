//! The one mapping of service failures onto JSON-RPC errors, for the MCP methods that have
//! no tool result to carry them (`resources/*`, `prompts/*`, `skills/*`). The SPEC error
//! object travels in `data`. Tool calls report failures as `isError` results instead
//! (`tools::to_call_result`); an absent skill, resource or prompt is answered by each method
//! with the error MCP prescribes for it, not through here.

use crate::error::ServiceError;
use rmcp::ErrorData;

pub fn protocol_error(e: ServiceError) -> ErrorData {
    if let ServiceError::Internal(detail) = &e {
        tracing::error!(error = %detail, "MCP request failed");
    }
    let data = Some(e.to_body());
    match e {
        ServiceError::Validation(..)
        | ServiceError::TooLarge(..)
        | ServiceError::NotFound(_)
        | ServiceError::AmbiguousSlug { .. }
        | ServiceError::RevisionPinRequired(_) => {
            ErrorData::invalid_params(e.public_message(), data)
        }
        ServiceError::PermissionDenied(_)
        | ServiceError::AuthRequired(_)
        | ServiceError::SafetyBlocked(..) => ErrorData::invalid_request(e.public_message(), data),
        ServiceError::Conflict(_)
        | ServiceError::ConflictWith(..)
        | ServiceError::Contention(_)
        | ServiceError::SandboxUnavailable(_)
        | ServiceError::Unavailable(_)
        | ServiceError::RateLimited { .. }
        | ServiceError::AtCapacity { .. }
        | ServiceError::Upstream(_)
        | ServiceError::Internal(_) => ErrorData::internal_error(e.public_message(), data),
    }
}
