//! REST transport under `/api/v1` (and `/v1`): translation only, every rule lives in the
//! service layer.

mod account_data;
mod accounts;
mod execute;
pub mod extract;
pub mod mcp_config;
mod memories;
mod packages;
mod skills;

use crate::error::ServiceError;
use crate::http::error::ApiError;
use crate::state::AppState;
use axum::Router;

/// The `/api/v1` routes (also mounted at `/v1`).
pub fn api_routes() -> Router<AppState> {
    skills::routes()
        .merge(accounts::routes())
        .merge(execute::routes())
        .merge(packages::routes())
        .merge(memories::routes())
        .merge(account_data::routes())
        .merge(mcp_config::routes())
}

/// Fallback for unknown routes, in the SPEC error shape.
pub async fn not_found() -> ApiError {
    ServiceError::NotFound("no such endpoint".into()).into()
}

pub async fn method_not_allowed() -> ApiError {
    ServiceError::NotFound("this endpoint does not accept that method".into()).into()
}
