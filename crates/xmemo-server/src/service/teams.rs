//! Workspaces and team membership (SPEC §7).

use super::Service;
use super::page::{self, Page, PageRequest};
use super::types::*;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use xmemo_core::{Role, Scope, WorkspaceKind};
use xmemo_store::{AuditDraft, Member, Membership, NewTeam, WorkspaceKey};

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
        let name = req.name.unwrap_or_else(|| req.handle.clone());
        xmemo_core::validate::validate_name("name", &name)?;
        let audit = AuditDraft::new("workspace.create", &principal.attribution())
            .details(serde_json::json!({"handle": req.handle}));
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
            .await?;
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

    /// Adds an account (by handle or id) to a team, or changes its role. Owners and admins
    /// manage members; only owners grant or take away `owner`; the last owner stays.
    pub async fn put_member(
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
        self.check_team_manager(ws.kind, m.role)?;
        let target = self.find_account(account).await?;
        let members = self.store.list_members(&ws.workspace_id).await?;
        let current = members.iter().find(|x| x.account_id == target.account_id);
        let touches_owner = role == Role::Owner || current.is_some_and(|c| c.role == Role::Owner);
        if touches_owner && m.role != Role::Owner {
            return Err(ServiceError::PermissionDenied(
                "only an owner may grant or change the owner role".into(),
            ));
        }
        if current.is_some_and(|c| c.role == Role::Owner) && role != Role::Owner {
            ensure_another_owner(&members, &target.account_id)?;
        }
        let audit = AuditDraft::new("member.put", &principal.attribution())
            .workspace(&ws.workspace_id)
            .details(serde_json::json!({"account_id": target.account_id, "role": role}));
        self.store
            .put_member(&ws.workspace_id, &target.account_id, role, audit)
            .await?;
        let members = self.store.list_members(&ws.workspace_id).await?;
        members
            .into_iter()
            .find(|x| x.account_id == target.account_id)
            .ok_or_else(|| ServiceError::Internal("member vanished after insert".into()))
    }

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
        self.check_team_manager(ws.kind, m.role)?;
        let target = self.find_account(account).await?;
        let members = self.store.list_members(&ws.workspace_id).await?;
        let Some(current) = members.iter().find(|x| x.account_id == target.account_id) else {
            return Err(ServiceError::NotFound(format!(
                "`{account}` is not a member"
            )));
        };
        if current.role == Role::Owner {
            if m.role != Role::Owner {
                return Err(ServiceError::PermissionDenied(
                    "only an owner may remove an owner".into(),
                ));
            }
            ensure_another_owner(&members, &target.account_id)?;
        }
        let audit = AuditDraft::new("member.remove", &principal.attribution())
            .workspace(&ws.workspace_id)
            .details(serde_json::json!({"account_id": target.account_id}));
        self.store
            .remove_member(&ws.workspace_id, &target.account_id, audit)
            .await?;
        Ok(())
    }

    fn check_team_manager(&self, kind: WorkspaceKind, role: Role) -> ServiceResult<()> {
        if kind != WorkspaceKind::Team {
            return Err(ServiceError::validation(
                "personal workspaces have no other members",
                "workspace",
            ));
        }
        if !role.is_manager() {
            return Err(ServiceError::PermissionDenied(format!(
                "your role `{role}` may not manage members"
            )));
        }
        Ok(())
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

fn workspace_view(m: Membership) -> WorkspaceView {
    WorkspaceView {
        workspace_id: m.workspace.workspace_id,
        handle: m.workspace.handle,
        name: m.workspace.name,
        kind: m.workspace.kind,
        role: m.role,
    }
}

fn ensure_another_owner(members: &[Member], leaving: &str) -> ServiceResult<()> {
    if members
        .iter()
        .any(|x| x.role == Role::Owner && x.account_id != leaving)
    {
        Ok(())
    } else {
        Err(ServiceError::Conflict(
            "a team keeps at least one owner".into(),
        ))
    }
}
