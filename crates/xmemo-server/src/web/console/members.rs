//! Teams: create one, members (change role, remove), invitations by handle (pending ones to
//! revoke), the person's own pending invitations (accept, decline), leave. Owners only hand
//! out owner; the service refuses what a role may not do.

use super::{Chrome, PageResult, Params, Posted, Signed, link, render, see_other, workspaces};
use crate::error::ServiceError;
use crate::service::types::{CreateTeamRequest, InvitationView, InviteRequest};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use xmemo_core::{InvitationStatus, Role, WorkspaceKind};

#[derive(Debug, Deserialize, Default)]
pub struct MembersQuery {
    #[serde(default)]
    ws: String,
    #[serde(default)]
    notice: String,
}

pub struct TeamRow {
    pub handle: String,
    pub name: String,
    pub role: String,
    pub href: String,
    pub selected: bool,
}

pub struct MemberRow {
    pub handle: String,
    pub display_name: String,
    pub role: String,
    pub is_me: bool,
    /// Roles the person may set for this member (empty: no change allowed).
    pub roles: Vec<&'static str>,
    pub can_remove: bool,
    /// The person's own row when no other member is an owner: the store keeps every team's
    /// last owner, so a Leave button would only lead to a refusal.
    pub sole_owner: bool,
}

pub struct InvitationRow {
    pub id: String,
    pub team: String,
    pub team_name: String,
    pub invitee: String,
    pub role: String,
    pub by: String,
    pub created_at: String,
}

#[derive(Template)]
#[template(path = "console/members.html")]
struct MembersPage {
    chrome: Option<Chrome>,
    token: String,
    teams: Vec<TeamRow>,
    mine: Vec<InvitationRow>,
    ws: String,
    my_role: String,
    manager: bool,
    members: Vec<MemberRow>,
    pending: Vec<InvitationRow>,
    grantable: Vec<&'static str>,
}

fn invitation_row(i: InvitationView) -> InvitationRow {
    InvitationRow {
        id: i.invitation_id,
        team: i.workspace,
        team_name: i.workspace_name,
        invitee: i.invitee,
        role: i.role.to_string(),
        by: i.invited_by,
        created_at: i.created_at,
    }
}

pub async fn page(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    Params(q): Params<MembersQuery>,
) -> PageResult {
    let p = &ctx.principal;
    let all = workspaces(&state, &ctx).await;
    let teams: Vec<_> = all
        .iter()
        .filter(|w| w.kind == WorkspaceKind::Team)
        .collect();
    let ws = if q.ws.is_empty() {
        teams.first().map(|t| t.handle.clone()).unwrap_or_default()
    } else {
        q.ws.clone()
    };
    let mine = state
        .service
        .my_invitations(p)
        .await
        .map_err(ctx.fail("members"))?
        .into_iter()
        .filter(|i| i.status == InvitationStatus::Pending)
        .map(invitation_row)
        .collect();
    let current = teams.iter().find(|t| t.handle == ws);
    let my_role = current.map(|t| t.role);
    let manager = my_role.is_some_and(Role::is_manager);
    let mut members = vec![];
    let mut pending = vec![];
    if let Some(role) = my_role {
        let list = state
            .service
            .list_members(p, &ws)
            .await
            .map_err(ctx.fail("members"))?;
        let owners = list.iter().filter(|m| m.role == Role::Owner).count();
        for m in list {
            let is_me = m.account_id == ctx.who.account.account_id;
            let may_touch = manager && !is_me && role.may_grant(m.role);
            members.push(MemberRow {
                roles: if may_touch {
                    Role::ALL
                        .iter()
                        .filter(|r| role.may_grant(**r))
                        .map(|r| r.as_str())
                        .collect()
                } else {
                    vec![]
                },
                can_remove: may_touch,
                sole_owner: is_me && m.role == Role::Owner && owners == 1,
                handle: m.handle,
                display_name: m.display_name,
                role: m.role.to_string(),
                is_me,
            });
        }
        if manager && let Ok(list) = state.service.team_invitations(p, &ws).await {
            pending = list
                .into_iter()
                .filter(|i| i.status == InvitationStatus::Pending)
                .map(invitation_row)
                .collect();
        }
    }
    let grantable = my_role
        .filter(|r| r.is_manager())
        .map(|mine| {
            Role::ALL
                .iter()
                .filter(|r| mine.may_grant(**r))
                .map(|r| r.as_str())
                .collect()
        })
        .unwrap_or_default();
    let page = MembersPage {
        chrome: Some(ctx.chrome("members").with_notice(Some(&q.notice))),
        token: ctx.token.clone(),
        teams: teams
            .iter()
            .map(|t| TeamRow {
                handle: t.handle.clone(),
                name: t.name.clone(),
                role: t.role.to_string(),
                href: link("/console/members", &[("ws", &t.handle)]),
                selected: t.handle == ws,
            })
            .collect(),
        mine,
        my_role: my_role.map(|r| r.to_string()).unwrap_or_default(),
        ws: if current.is_some() { ws } else { String::new() },
        manager,
        members,
        pending,
        grantable,
    };
    Ok(render(StatusCode::OK, &page))
}

pub async fn action(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    let p = &ctx.principal;
    let ws = f.get("ws").to_string();
    let role = |name: &str| {
        f.get(name)
            .parse::<Role>()
            .map_err(|e| ServiceError::validation(e, "role"))
    };
    let back = |ws: &str, notice: &str| link("/console/members", &[("ws", ws), ("notice", notice)]);
    let result: Result<String, ServiceError> = async {
        Ok(match f.get("action") {
            "create-team" => {
                let team = state
                    .service
                    .create_team(
                        p,
                        CreateTeamRequest {
                            handle: f.get("handle").trim().to_string(),
                            name: f.opt("name"),
                        },
                    )
                    .await?;
                back(&team.handle, "team")
            }
            "invite" => {
                state
                    .service
                    .invite(
                        p,
                        &ws,
                        InviteRequest {
                            invitee: f.get("invitee").trim().to_string(),
                            role: role("role")?,
                        },
                    )
                    .await?;
                back(&ws, "invited")
            }
            "role" => {
                state
                    .service
                    .set_member_role(p, &ws, f.get("account"), role("role")?)
                    .await?;
                back(&ws, "role")
            }
            "remove" => {
                state
                    .service
                    .remove_member(p, &ws, f.get("account"))
                    .await?;
                back(&ws, "removed")
            }
            "leave" => {
                state.service.leave_team(p, &ws).await?;
                back("", "left")
            }
            "accept" => {
                let (_, team) = state
                    .service
                    .accept_invitation(p, f.get("invitation_id"))
                    .await?;
                back(&team.handle, "accepted")
            }
            "decline" => {
                state
                    .service
                    .decline_invitation(p, f.get("invitation_id"))
                    .await?;
                back(&ws, "declined")
            }
            "revoke-invitation" => {
                state
                    .service
                    .revoke_invitation(p, &ws, f.get("invitation_id"))
                    .await?;
                back(&ws, "revoked")
            }
            _ => return Err(ServiceError::validation("unknown action", "action")),
        })
    }
    .await;
    let to = result.map_err(ctx.fail("members"))?;
    Ok(see_other(&to))
}
