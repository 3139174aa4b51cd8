//! The caller, workspaces, members and invitations, API keys and (for administrators)
//! accounts.

use super::extract::{ApiJson, ApiPath, ApiQuery};
use crate::http::credential::Authed;
use crate::http::error::ApiResult;
use crate::service::types::*;
use crate::service::{Page, PageRequest};
use crate::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Json;
use axum::routing::{delete, get, post, put};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/me", get(me))
        .route("/workspaces", get(list_workspaces).post(create_team))
        .route("/workspaces/{workspace}/members", get(list_members))
        .route(
            "/workspaces/{workspace}/members/{account}",
            put(put_member).delete(remove_member),
        )
        .route(
            "/workspaces/{workspace}/invitations",
            get(team_invitations).post(invite),
        )
        .route(
            "/workspaces/{workspace}/invitations/{invitation_id}",
            delete(revoke_invitation),
        )
        .route("/workspaces/{workspace}/leave", post(leave))
        .route("/invitations", get(my_invitations))
        .route(
            "/invitations/{invitation_id}/accept",
            post(accept_invitation),
        )
        .route(
            "/invitations/{invitation_id}/decline",
            post(decline_invitation),
        )
        .route("/keys", get(list_keys).post(create_key))
        .route("/keys/{key_id}", delete(revoke_key))
        .route("/oauth/grants", get(list_grants))
        .route("/oauth/grants/{grant_id}", delete(revoke_grant))
        .route("/accounts", get(list_accounts).post(create_account))
}

async fn me(State(state): State<AppState>, Authed(p): Authed) -> ApiResult<Json<Value>> {
    let workspaces = state.service.list_workspaces(&p).await?;
    Ok(Json(json!({
        "account": p.account,
        "credential_id": p.credential_id,
        "scopes": p.scopes,
        "client_profile": p.client_profile,
        "agent_id": p.agent_id,
        "agent_instance_id": p.agent_instance_id,
        "workspaces": workspaces,
    })))
}

/// `?limit=&cursor=` of every list below.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    limit: Option<i64>,
    cursor: Option<String>,
}

impl From<PageQuery> for PageRequest {
    fn from(q: PageQuery) -> Self {
        PageRequest {
            limit: q.limit,
            cursor: q.cursor,
        }
    }
}

/// `{"<key>": [...], "next_cursor": …}`: the list under the key it always had.
fn listed<T: Serialize>(key: &str, page: Page<T>) -> Json<Value> {
    let mut body = serde_json::Map::new();
    body.insert(key.into(), json!(page.items));
    body.insert("next_cursor".into(), json!(page.next_cursor));
    Json(Value::Object(body))
}

async fn list_workspaces(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    let page = state.service.workspaces_page(&p, &q.into()).await?;
    Ok(listed("workspaces", page))
}

async fn create_team(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(req): ApiJson<CreateTeamRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let ws = state.service.create_team(&p, req).await?;
    Ok((StatusCode::CREATED, Json(json!({ "workspace": ws }))))
}

async fn list_members(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(workspace): ApiPath<String>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    let page = state
        .service
        .members_page(&p, &workspace, &q.into())
        .await?;
    Ok(listed("members", page))
}

/// Changes an existing member's role; a non-member is NOT_FOUND (invite instead).
async fn put_member(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((workspace, account)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<PutMemberRequest>,
) -> ApiResult<Json<Value>> {
    let member = state
        .service
        .set_member_role(&p, &workspace, &account, req.role)
        .await?;
    Ok(Json(json!({ "member": member })))
}

async fn remove_member(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((workspace, account)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    state
        .service
        .remove_member(&p, &workspace, &account)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn leave(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(workspace): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.service.leave_team(&p, &workspace).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn team_invitations(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(workspace): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(
        json!({ "invitations": state.service.team_invitations(&p, &workspace).await? }),
    ))
}

/// 202: the invitation is recorded; membership follows only if the invitee accepts. The
/// answer is the same whether or not the invitee names an account.
async fn invite(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(workspace): ApiPath<String>,
    ApiJson(req): ApiJson<InviteRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let invitation = state.service.invite(&p, &workspace, req).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "invitation": invitation })),
    ))
}

async fn revoke_invitation(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath((workspace, invitation_id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    state
        .service
        .revoke_invitation(&p, &workspace, &invitation_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn my_invitations(
    State(state): State<AppState>,
    Authed(p): Authed,
) -> ApiResult<Json<Value>> {
    Ok(Json(
        json!({ "invitations": state.service.my_invitations(&p).await? }),
    ))
}

async fn accept_invitation(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(invitation_id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let (invitation, workspace) = state.service.accept_invitation(&p, &invitation_id).await?;
    Ok(Json(
        json!({ "invitation": invitation, "workspace": workspace }),
    ))
}

async fn decline_invitation(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(invitation_id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let invitation = state.service.decline_invitation(&p, &invitation_id).await?;
    Ok(Json(json!({ "invitation": invitation })))
}

async fn list_keys(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    Ok(listed(
        "keys",
        state.service.keys_page(&p, &q.into()).await?,
    ))
}

async fn create_key(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(req): ApiJson<CreateKeyRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let created = state.service.create_key(&p, req).await?;
    Ok((StatusCode::CREATED, Json(json!({ "key": created }))))
}

async fn revoke_key(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(key_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.service.revoke_key(&p, &key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's OAuth grants (approved consents not revoked): which client, which scopes,
/// since when.
async fn list_grants(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    Ok(listed(
        "grants",
        state.service.oauth_grants_page(&p, &q.into()).await?,
    ))
}

async fn revoke_grant(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(grant_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.service.revoke_oauth_grant(&p, &grant_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_accounts(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    let page = state.service.accounts_page(&p, &q.into()).await?;
    Ok(listed("accounts", page))
}

async fn create_account(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(req): ApiJson<CreateAccountRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let account = state.service.create_account(&p, req).await?;
    Ok((StatusCode::CREATED, Json(json!({ "account": account }))))
}
