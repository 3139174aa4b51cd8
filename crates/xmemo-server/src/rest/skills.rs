//! Skills, revisions, resources, recall/save and lifecycle actions.

use super::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use crate::error::ServiceError;
use crate::http::credential::Authed;
use crate::http::error::ApiResult;
use crate::service::PageRequest;
use crate::service::types::*;
use crate::state::AppState;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use xmemo_core::LifecycleAction;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/skills", get(list_or_search).post(save))
        .route("/recall", post(recall))
        .route("/skills/{slug}", get(root))
        .route("/skills/{slug}/revisions", get(revisions))
        .route("/skills/{slug}/revisions/{revision_id}", get(pinned_root))
        .route(
            "/skills/{slug}/revisions/{revision_id}/resources/{*path}",
            get(resource),
        )
        .route("/skills/{slug}/resources/{*path}", get(unpinned_resource))
        .route(
            "/skills/{slug}/revisions/{revision_id}/{action}",
            post(lifecycle),
        )
        .route("/skills/{slug}/archive", post(archive))
        .route("/skills/{slug}/restore", post(restore))
}

/// `GET /skills`: Level 0 with `query` (`limit` = result count), else one page of the
/// list (`limit` = page size, `cursor` = the previous page's `next_cursor`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    query: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
    workspace: Option<String>,
    min_score: Option<f64>,
    /// Also list skills the safety scanner called malicious (hidden by default).
    include_malicious: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RevisionsQuery {
    workspace: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WorkspaceQuery {
    workspace: Option<String>,
    revision_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ResourceQuery {
    workspace: Option<String>,
    /// `true` returns the raw bytes with their media type instead of JSON.
    #[serde(default)]
    raw: bool,
}

fn tool(result: ToolResult) -> Json<Value> {
    Json(serde_json::to_value(result).unwrap_or_else(|_| json!({})))
}

async fn list_or_search(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    if q.query.is_some() {
        if q.cursor.is_some() {
            return Err(ServiceError::validation(
                "`cursor` pages the skill list; a search answers its best `limit` matches at once",
                "cursor",
            )
            .into());
        }
        let req = RecallRequest {
            query: q.query,
            limit: q.limit,
            workspace: q.workspace,
            min_score: q.min_score,
            include_malicious: q.include_malicious,
            ..Default::default()
        };
        return Ok(tool(state.service.recall(&p, req).await?));
    }
    let page = PageRequest {
        limit: q.limit,
        cursor: q.cursor,
    };
    let skills = state
        .service
        .list_skills(&p, q.workspace.as_deref(), &page)
        .await?;
    Ok(Json(
        json!({ "skills": skills.items, "next_cursor": skills.next_cursor }),
    ))
}

async fn save(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(req): ApiJson<SaveRequest>,
) -> ApiResult<Response> {
    let saved = state.service.save(&p, req).await?;
    let status = if saved.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, tool(ToolResult::Saved(saved))).into_response())
}

async fn recall(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(req): ApiJson<RecallRequest>,
) -> ApiResult<Json<Value>> {
    Ok(tool(state.service.recall(&p, req).await?))
}

async fn root(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
) -> ApiResult<Json<Value>> {
    let root = state
        .service
        .root(&p, &slug, q.workspace.as_deref(), q.revision_id.as_deref())
        .await?;
    Ok(tool(ToolResult::Root(Box::new(root))))
}

async fn pinned_root(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((slug, revision_id)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
) -> ApiResult<Json<Value>> {
    let root = state
        .service
        .root(&p, &slug, q.workspace.as_deref(), Some(&revision_id))
        .await?;
    Ok(tool(ToolResult::Root(Box::new(root))))
}

async fn revisions(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<RevisionsQuery>,
) -> ApiResult<Json<Value>> {
    let page = PageRequest {
        limit: q.limit,
        cursor: q.cursor,
    };
    let revisions = state
        .service
        .revisions_page(&p, &slug, q.workspace.as_deref(), &page)
        .await?;
    Ok(Json(json!({
        "slug": slug,
        "revisions": revisions.items,
        "next_cursor": revisions.next_cursor,
    })))
}

async fn resource(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((slug, revision_id, path)): ApiPath<(String, String, String)>,
    ApiQuery(q): ApiQuery<ResourceQuery>,
) -> ApiResult<Response> {
    if q.raw {
        let (manifest, bytes) = state
            .service
            .resource_bytes(&p, &slug, q.workspace.as_deref(), &revision_id, &path)
            .await?;
        // The bytes are a skill author's, whatever their media type (an HTML file, an SVG
        // with script): a browser must neither sniff nor render them as this server's page.
        // A download (attachment), no sniffing, and a policy that runs nothing even when
        // opened.
        let filename = download_name(&manifest.logical_path);
        return Ok((
            [
                (header::CONTENT_TYPE, manifest.media_type),
                (
                    header::ETAG,
                    format!("\"sha256:{}\"", manifest.content_hash),
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'none'; sandbox".to_string(),
                ),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{filename}\""),
                ),
            ],
            Bytes::from(bytes),
        )
            .into_response());
    }
    let resource = state
        .service
        .resource(&p, &slug, q.workspace.as_deref(), &revision_id, &path)
        .await?;
    Ok(tool(ToolResult::Resource(resource)).into_response())
}

/// The file name a raw component is downloaded as: the last segment of its path, with
/// anything but ASCII letters, digits, `.`, `-` and `_` replaced (a header value, quoted).
fn download_name(logical_path: &str) -> String {
    let last = logical_path.rsplit('/').next().unwrap_or(logical_path);
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "component".into()
    } else {
        name
    }
}

async fn unpinned_resource(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((slug, path)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
) -> ApiResult<Json<Value>> {
    let req = RecallRequest {
        slug: Some(slug),
        resource: Some(path),
        workspace: q.workspace,
        revision_id: q.revision_id,
        ..Default::default()
    };
    Ok(tool(state.service.recall(&p, req).await?))
}

async fn lifecycle(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((slug, revision_id, action)): ApiPath<(String, String, String)>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
    OptionalJson(req): OptionalJson<LifecycleRequest>,
) -> ApiResult<Json<Value>> {
    let action = match action.as_str() {
        "publish" => LifecycleAction::Publish,
        "approve" => LifecycleAction::Approve,
        "reject" => LifecycleAction::Reject,
        "deprecate" => LifecycleAction::Deprecate,
        other => {
            return Err(ServiceError::NotFound(format!(
                "unknown action `{other}` (publish, approve, reject, deprecate)"
            ))
            .into());
        }
    };
    let revision = state
        .service
        .change_status(&p, &slug, q.workspace.as_deref(), &revision_id, action, req)
        .await?;
    Ok(Json(json!({ "slug": slug, "revision": revision })))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReasonBody {
    reason: Option<String>,
}

async fn archive(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
    OptionalJson(req): OptionalJson<ReasonBody>,
) -> ApiResult<Json<Value>> {
    let skill = state
        .service
        .set_archived(&p, &slug, q.workspace.as_deref(), true, req.reason)
        .await?;
    Ok(Json(json!({ "skill": skill })))
}

async fn restore(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
    OptionalJson(req): OptionalJson<ReasonBody>,
) -> ApiResult<Json<Value>> {
    let skill = state
        .service
        .set_archived(&p, &slug, q.workspace.as_deref(), false, req.reason)
        .await?;
    Ok(Json(json!({ "skill": skill })))
}
