//! Workspaces and team membership (SPEC §7).

use super::Service;
use super::page::{self, Page, PageRequest};
use super::types::*;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use xmemo_core::{Role, Scope, WorkspaceKind};
use xmemo_store::{AuditDraft, Member, Membership, NewTeam, StoreError, Workspace, WorkspaceKey};

impl Service {
    pub async fn list_workspaces(
        &self,
        principal: &Principal,
    ) -> ServiceResult<Vec<WorkspaceView>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        Ok(access.memberships.into_iter().map(workspace_view).collect())
    }

    /// One page of the caller's workspaces: personal first, then teams by handle.
    pub async fn workspaces_page(
        &self,
        principal: &Principal,
        page: &PageRequest,
    ) -> ServiceResult<Page<WorkspaceView>> {
        principal.require(Scope::Read)?;
        let (size, keyset) =
            page::keyset(page, "workspaces", |[_, kind, handle, workspace_id]| {
                Some(WorkspaceKey {
                    kind: kind.parse().ok()?,
                    handle,
                    workspace_id,
                })
            })?;
        let rows = self
            .store
            .memberships_page(&principal.account.account_id, &keyset)
            .await?;
        Ok(page::finish(rows, size, |m| {
            page::encode_cursor(&[
                "workspaces",
                m.workspace.kind.as_str(),
                &m.workspace.handle,
                &m.workspace.workspace_id,
            ])
        })
        .map(workspace_view))
    }

    pub async fn create_team(
        &self,
        principal: &Principal,
        req: CreateTeamRequest,
    ) -> ServiceResult<WorkspaceView> {
        principal.require(Scope::Write)?;
        xmemo_core::validate_slug("handle", &req.handle)?;
        if req.handle == "personal" {
            return Err(ServiceError::validation(
                "`personal` names each account's own workspace",
                "handle",
            ));
        }
        // Shown to every member and invitee: cleaned as OAuth client names are, so bidi and
        // zero-width marks cannot make it read as another team's.
        let name =
            xmemo_core::validate::strip_invisible(req.name.as_deref().unwrap_or(&req.handle))
                .trim()
                .to_string();
        xmemo_core::validate::validate_name("name", &name)?;
        self.spend_write(principal).await?;
        // Teams per account are bounded in time (each one can invite, and a taken handle is
        // the one existence signal): the token is spent whatever the outcome.
        self.team_creations
            .reserve(principal.account.account_id.clone())
            .await
            .map_err(|wait| {
                let secs = crate::throttle::retry_after_secs(wait);
                ServiceError::RateLimited {
                    message: format!(
                        "this account created too many teams lately; retry in {secs} s"
                    ),
                    retry_after_secs: secs,
                }
            })?
            .keep();
        let audit = AuditDraft::new("workspace.create", &principal.attribution())
            .details(serde_json::json!({"handle": req.handle}));
        let handle = req.handle.clone();
        let ws = self
            .store
            .create_team(
                NewTeam {
                    handle: req.handle,
                    name,
                    owner_account_id: principal.account.account_id.clone(),
                },
                audit,
            )
            .await
            .map_err(|e| match e {
                // Team handles are unique, so a create of a taken one must fail; it fails
                // alike whether or not the caller can see that team.
                StoreError::Conflict(_) => handle_unavailable(&handle),
                other => other.into(),
            })?;
        Ok(WorkspaceView {
            workspace_id: ws.workspace_id,
            handle: ws.handle,
            name: ws.name,
            kind: ws.kind,
            role: Role::Owner,
        })
    }

    pub async fn list_members(
        &self,
        principal: &Principal,
        workspace: &str,
    ) -> ServiceResult<Vec<Member>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        Ok(self.store.list_members(&m.workspace.workspace_id).await?)
    }

    /// One page of a workspace's members, by handle.
    pub async fn members_page(
        &self,
        principal: &Principal,
        workspace: &str,
        page: &PageRequest,
    ) -> ServiceResult<Page<Member>> {
        principal.require(Scope::Read)?;
        let (size, keyset) =
            page::keyset(page, "members", |[_, handle]: [String; 2]| Some(handle))?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        let rows = self
            .store
            .list_members_page(&m.workspace.workspace_id, &keyset)
            .await?;
        Ok(page::finish(rows, size, |m| {
            page::encode_cursor(&["members", &m.handle])
        }))
    }

    /// Changes the role of an existing member (by handle or account id). Owners and admins
    /// manage members; only owners grant or take away `owner`; the store keeps the last
    /// owner. Nobody becomes a member this way: a non-member is NOT_FOUND whether or not the
    /// account exists (invite them instead), so the answer reveals nothing beyond the member
    /// list the caller can read anyway.
    pub async fn set_member_role(
        &self,
        principal: &Principal,
        workspace: &str,
        account: &str,
        role: Role,
    ) -> ServiceResult<Member> {
        principal.require(Scope::Write)?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        let ws = m.workspace.clone();
        check_team_manager(ws.kind, m.role)?;
        let target = self.member_named(&ws, account).await?;
        let touches_owner = role == Role::Owner || target.role == Role::Owner;
        if touches_owner && m.role != Role::Owner {
            return Err(ServiceError::PermissionDenied(
                "only an owner may grant or change the owner role".into(),
            ));
        }
        let audit = AuditDraft::new("member.role", &principal.attribution())
            .workspace(&ws.workspace_id)
            .details(serde_json::json!({
                "account_id": target.account_id, "from": target.role, "role": role,
            }));
        self.store
            .set_member_role(&ws.workspace_id, &target.account_id, role, audit)
            .await?;
        Ok(Member { role, ..target })
    }

    /// Removes a member. Anyone may remove themselves (that is leaving); removing someone
    /// else takes an owner or admin, and an owner takes an owner. The last owner stays.
    pub async fn remove_member(
        &self,
        principal: &Principal,
        workspace: &str,
        account: &str,
    ) -> ServiceResult<()> {
        principal.require(Scope::Write)?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        let ws = m.workspace.clone();
        if ws.kind != WorkspaceKind::Team {
            return Err(personal_has_no_members());
        }
        let target = self.member_named(&ws, account).await?;
        if target.account_id == principal.account.account_id {
            return self.leave_checked(principal, &ws.workspace_id).await;
        }
        check_team_manager(ws.kind, m.role)?;
        if target.role == Role::Owner && m.role != Role::Owner {
            return Err(ServiceError::PermissionDenied(
                "only an owner may remove an owner".into(),
            ));
        }
        let audit = AuditDraft::new("member.remove", &principal.attribution())
            .workspace(&ws.workspace_id)
            .details(serde_json::json!({"account_id": target.account_id, "role": target.role}));
        self.store
            .remove_member(&ws.workspace_id, &target.account_id, audit)
            .await?;
        Ok(())
    }

    /// The caller leaves a team, whatever its role, unless it is the last owner (CONFLICT).
    pub async fn leave_team(&self, principal: &Principal, workspace: &str) -> ServiceResult<()> {
        principal.require(Scope::Write)?;
        let access = self.access(principal).await?;
        let ws = access.resolve(workspace)?.workspace.clone();
        if ws.kind != WorkspaceKind::Team {
            return Err(ServiceError::validation(
                "a personal workspace cannot be left",
                "workspace",
            ));
        }
        self.leave_checked(principal, &ws.workspace_id).await
    }

    async fn leave_checked(&self, principal: &Principal, workspace_id: &str) -> ServiceResult<()> {
        let audit = AuditDraft::new("member.leave", &principal.attribution())
            .workspace(workspace_id)
            .details(serde_json::json!({"account_id": principal.account.account_id}));
        if self
            .store
            .remove_member(workspace_id, &principal.account.account_id, audit)
            .await?
        {
            Ok(())
        } else {
            // Removed by someone else since the memberships were read.
            Err(ServiceError::NotFound("you are not a member".into()))
        }
    }

    /// A member of `ws` named by handle or account id; anyone else (an account that exists or
    /// not) is the same NOT_FOUND.
    async fn member_named(&self, ws: &Workspace, account: &str) -> ServiceResult<Member> {
        self.store
            .list_members(&ws.workspace_id)
            .await?
            .into_iter()
            .find(|x| x.account_id == account || x.handle == account)
            .ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "`{account}` is not a member of `{}`; invite them with POST /workspaces/{}/invitations",
                    ws.handle, ws.handle
                ))
            })
    }

    pub(crate) async fn find_account(
        &self,
        handle_or_id: &str,
    ) -> ServiceResult<xmemo_store::Account> {
        let found = if handle_or_id.starts_with("acct_") {
            self.store.get_account(handle_or_id).await?
        } else {
            self.store.find_account_by_handle(handle_or_id).await?
        };
        found.ok_or_else(|| ServiceError::NotFound(format!("account `{handle_or_id}` not found")))
    }
}

fn personal_has_no_members() -> ServiceError {
    ServiceError::validation("personal workspaces have no other members", "workspace")
}

/// Owners and admins manage a team's members and invitations.
pub(super) fn check_team_manager(kind: WorkspaceKind, role: Role) -> ServiceResult<()> {
    if kind != WorkspaceKind::Team {
        return Err(personal_has_no_members());
    }
    if !role.is_manager() {
        return Err(ServiceError::PermissionDenied(format!(
            "your role `{role}` may not manage members"
        )));
    }
    Ok(())
}

/// The one refusal of a team handle that is taken, whether or not the caller can see the
/// team that has it.
fn handle_unavailable(handle: &str) -> ServiceError {
    ServiceError::Conflict(format!(
        "the team handle `{handle}` is not available; choose another"
    ))
}

fn workspace_view(m: Membership) -> WorkspaceView {
    WorkspaceView {
        workspace_id: m.workspace.workspace_id,
        handle: m.workspace.handle,
        name: m.workspace.name,
        kind: m.workspace.kind,
        role: m.role,
    }
}

impl Service {
    /// Teams without an owner, for the operator (`xmemo admin team ownerless`): none can be
    /// made over the API, but an installation from before the deleting transaction checked
    /// its owners may hold some.
    pub async fn ownerless_teams(&self) -> ServiceResult<Vec<Workspace>> {
        Ok(self.store.ownerless_teams().await?)
    }

    /// The operator's repair of a team (`xmemo admin team add-owner`): the account becomes
    /// an owner, a member already or not. The one way besides creation and accepting an
    /// invitation that a membership is made, so it is the operator's alone, and audited.
    pub async fn admin_add_owner(&self, team: &str, handle: &str) -> ServiceResult<Workspace> {
        let ws = self
            .store
            .find_team_by_handle(team)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no team `{team}`")))?;
        let account = self.find_account(handle).await?;
        let audit = AuditDraft::new(
            "membership.repair_owner",
            &xmemo_store::Attribution {
                client_profile: Some("operator".into()),
                ..Default::default()
            },
        )
        .details(serde_json::json!({"account_id": account.account_id, "role": "owner"}));
        self.store
            .make_team_owner(&ws.workspace_id, &account.account_id, audit)
            .await?;
        Ok(ws)
    }
}
