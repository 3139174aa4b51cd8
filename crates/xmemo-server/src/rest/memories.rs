//! Memories under `/memories` (SPEC §9): the same use-cases as the MCP memory tools.

use super::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use crate::http::credential::Authed;
use crate::http::error::ApiResult;
use crate::service::memories::*;
use crate::service::types::ToolResult;
use crate::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use xmemo_core::MemoryKind;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/memories", get(recall).post(remember))
        .route("/memories/{memory_id}", get(show).patch(update))
        .route("/memories/{memory_id}/history", get(history))
        .route("/memories/{memory_id}/forget", post(forget))
        .route("/memories/{memory_id}/restore", post(restore))
}

fn tool(result: ToolResult) -> Json<Value> {
    Json(serde_json::to_value(result).unwrap_or_else(|_| json!({})))
}

async fn remember(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(req): ApiJson<RememberRequest>,
) -> ApiResult<Response> {
    let remembered = state.service.remember(&p, req).await?;
    let status = if remembered.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, tool(ToolResult::Remembered(Box::new(remembered)))).into_response())
}

/// The recall filters as a query string; `tags` is comma-separated.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RecallQuery {
    query: Option<String>,
    kind: Option<MemoryKind>,
    tags: Option<String>,
    project: Option<String>,
    agent_instance_id: Option<String>,
    since: Option<String>,
    until: Option<String>,
    include_forgotten: Option<bool>,
    limit: Option<i64>,
    full: Option<bool>,
    min_score: Option<f64>,
    workspace: Option<String>,
}

async fn recall(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiQuery(q): ApiQuery<RecallQuery>,
) -> ApiResult<Json<Value>> {
    let req = RecallMemoriesRequest {
        query: q.query,
        memory_id: None,
        kind: q.kind,
        tags: q.tags.map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        }),
        project: q.project,
        agent_instance_id: q.agent_instance_id,
        since: q.since,
        until: q.until,
        include_forgotten: q.include_forgotten,
        limit: q.limit,
        full: q.full,
        min_score: q.min_score,
        workspace: q.workspace,
    };
    let memories = state.service.recall_memories(&p, req).await?;
    Ok(tool(ToolResult::Memories(memories)))
}

async fn show(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(memory_id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let memory = state.service.get_memory(&p, &memory_id).await?;
    Ok(tool(ToolResult::Memory(Box::new(memory))))
}

async fn history(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(memory_id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let history = state.service.memory_history(&p, &memory_id).await?;
    Ok(tool(ToolResult::MemoryHistory(history)))
}

/// `PATCH /memories/{id}`: the update without its id (the path names it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    expected_version: i64,
    content: Option<String>,
    title: Option<String>,
    tags: Option<Vec<String>>,
    kind: Option<MemoryKind>,
}

async fn update(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(memory_id): ApiPath<String>,
    ApiJson(body): ApiJson<UpdateBody>,
) -> ApiResult<Json<Value>> {
    let req = UpdateMemoryRequest {
        memory_id,
        expected_version: body.expected_version,
        content: body.content,
        title: body.title,
        tags: body.tags,
        kind: body.kind,
    };
    let memory = state.service.update_memory(&p, req).await?;
    Ok(tool(ToolResult::Memory(Box::new(memory))))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReasonBody {
    reason: Option<String>,
}

async fn forget(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(memory_id): ApiPath<String>,
    OptionalJson(body): OptionalJson<ReasonBody>,
) -> ApiResult<Json<Value>> {
    let req = ForgetRequest {
        memory_id,
        reason: body.reason,
    };
    let memory = state.service.forget(&p, req).await?;
    Ok(tool(ToolResult::Memory(Box::new(memory))))
}

async fn restore(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(memory_id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let memory = state
        .service
        .restore_memory(&p, RestoreMemoryRequest { memory_id })
        .await?;
    Ok(tool(ToolResult::Memory(Box::new(memory))))
}
