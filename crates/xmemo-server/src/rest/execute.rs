//! `POST /skills/{slug}/execute`: run a declared script of a pinned revision (SPEC §5).

use super::extract::{ApiJson, ApiPath, ApiQuery};
use crate::error::ServiceError;
use crate::http::credential::Authed;
use crate::http::error::ApiResult;
use crate::service::types::{ExecuteRequest, ToolResult};
use crate::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::Json;
use axum::routing::post;
use serde::Deserialize;
use serde_json::Value;

pub fn routes() -> Router<AppState> {
    Router::new().route("/skills/{slug}/execute", post(execute))
}

/// The body: [`ExecuteRequest`] without `slug` (it is in the path).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecuteBody {
    revision_id: Option<String>,
    script_path: String,
    input_args: Option<Value>,
    timeout_seconds: Option<i64>,
    workspace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ExecuteQuery {
    workspace: Option<String>,
}

async fn execute(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<ExecuteQuery>,
    ApiJson(body): ApiJson<ExecuteBody>,
) -> ApiResult<Json<Value>> {
    let workspace = match (q.workspace, body.workspace) {
        (Some(query), Some(body)) if query != body => {
            return Err(ServiceError::validation(
                "`workspace` is given both in the query and in the body, with different values",
                "workspace",
            )
            .into());
        }
        (query, body) => body.or(query),
    };
    let req = ExecuteRequest {
        slug,
        revision_id: body.revision_id,
        script_path: body.script_path,
        input_args: body.input_args,
        timeout_seconds: body.timeout_seconds,
        workspace,
    };
    let result = state.service.execute(&p, req).await?;
    let value = serde_json::to_value(ToolResult::Execution(Box::new(result)))
        .map_err(|e| ServiceError::Internal(format!("cannot render the execution: {e}")))?;
    Ok(Json(value))
}
