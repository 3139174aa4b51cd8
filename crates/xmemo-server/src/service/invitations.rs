//! Team invitations (SPEC §7 "invites users"): the only way into a team one did not create.
//! Owners and admins invite; nothing of the team reaches the invitee (no membership row, so
//! every read path stays closed) until the invitee accepts.
//!
//! Inviting answers alike whether or not the handle names an account: the invitation is
//! stored either way and shown as written, never with the account it resolved to. One that
//! named no account can never be accepted — the invitee side reads by account id only, so
//! not even an account created later under that handle sees it.

use super::Service;
use super::clock;
use super::teams::check_team_manager;
use super::types::{InvitationView, InviteRequest, WorkspaceView};
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use xmemo_core::limits::{PENDING_INVITATIONS_MAX, PENDING_INVITATIONS_PER_INVITEE_MAX};
use xmemo_core::{InvitationStatus, Role, Scope, ValidationError};
use xmemo_store::{
    Account, AuditDraft, Invitation, InvitationAnswer, InvitationBounds, LimitReached,
    NewInvitation,
};

impl From<Invitation> for InvitationView {
    fn from(i: Invitation) -> Self {
        Self {
            invitation_id: i.invitation_id,
            workspace_id: i.workspace_id,
            workspace: i.workspace_handle,
            workspace_name: i.workspace_name,
            invitee: i.invitee,
            role: i.role,
            status: i.status,
            invited_by: i.invited_by_handle,
            created_at: i.created_at,
            responded_at: i.responded_at,
        }
    }
}

impl Service {
    /// Invites an account, by handle or account id, to a team with a role no higher than the
    /// inviter's own (only owners invite owners).
    pub async fn invite(
        &self,
        principal: &Principal,
        workspace: &str,
        req: InviteRequest,
    ) -> ServiceResult<InvitationView> {
        principal.require(Scope::Write)?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        let ws = m.workspace.clone();
        check_team_manager(ws.kind, m.role)?;
        if !m.role.may_grant(req.role) {
            return Err(ServiceError::PermissionDenied(format!(
                "your role `{}` may not invite as `{}`",
                m.role, req.role
            )));
        }
        check_invitee(&req.invitee)?;
        self.spend_write(principal).await?;
        let pending = self
            .store
            .workspace_invitations(&ws.workspace_id, Some(InvitationStatus::Pending))
            .await?
            .len();
        // Counted before the write; concurrent invitations may pass it by a few, which the
        // bound tolerates (it only keeps the table from growing without end).
        if pending >= PENDING_INVITATIONS_MAX {
            return Err(ValidationError::too_many(
                "invitations",
                "pending invitations",
                PENDING_INVITATIONS_MAX as u64,
                pending as u64 + 1,
            )
            .into());
        }
        let account = self.lookup_account(&req.invitee).await?;
        // Read whether or not an account was found, so both cases run the same statements.
        // Only a member can be "already a member", and the caller can read the member list,
        // so this tells nothing about accounts outside the team.
        let members = self.store.list_members(&ws.workspace_id).await?;
        let already = account
            .as_ref()
            .is_some_and(|a| members.iter().any(|x| x.account_id == a.account_id));
        if already {
            return Err(ServiceError::Conflict(format!(
                "`{}` is already a member of `{}`; change the role with PUT /workspaces/{}/members/{}",
                req.invitee, ws.handle, ws.handle, req.invitee
            )));
        }
        let req_invitee = req.invitee.clone();
        let cool_down = self.budgets.decline_cool_down;
        let audit = AuditDraft::new("invitation.create", &principal.attribution())
            .workspace(&ws.workspace_id)
            .details(serde_json::json!({
                "invitee": req.invitee,
                "account_id": account.as_ref().map(|a| a.account_id.clone()),
                "role": req.role,
            }));
        let invitation = self
            .store
            .create_invitation(
                NewInvitation {
                    workspace_id: ws.workspace_id,
                    invitee: req.invitee,
                    account_id: account.map(|a| a.account_id),
                    role: req.role,
                    invited_by: principal.account.account_id.clone(),
                    bounds: InvitationBounds {
                        max_pending_per_invitee: Some(PENDING_INVITATIONS_PER_INVITEE_MAX as u64),
                        declined_after: (!cool_down.is_zero())
                            .then(|| clock::timestamp(self.clock.now() - cool_down)),
                    },
                },
                audit,
            )
            .await
            .map_err(|e| match e {
                xmemo_store::StoreError::Limit(LimitReached::DeclinedRecently { declined_at }) => {
                    // Retry once the cool-down after that decline is over.
                    let secs = time::OffsetDateTime::parse(
                        &declined_at,
                        &time::format_description::well_known::Rfc3339,
                    )
                    .ok()
                    .map(|at| {
                        let until = at + cool_down;
                        let now = self.clock.now();
                        (until - now).whole_seconds().max(1) as u64
                    })
                    .unwrap_or(cool_down.as_secs());
                    ServiceError::RateLimited {
                        message: format!(
                            "`{invitee}` declined an invitation to this team lately; invite again in {secs} s",
                            invitee = req_invitee
                        ),
                        retry_after_secs: secs,
                    }
                }
                other => other.into(),
            })?;
        Ok(invitation.into())
    }

    /// A team's pending invitations, for its owners and admins.
    pub async fn team_invitations(
        &self,
        principal: &Principal,
        workspace: &str,
    ) -> ServiceResult<Vec<InvitationView>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        check_team_manager(m.workspace.kind, m.role)?;
        Ok(self
            .store
            .workspace_invitations(&m.workspace.workspace_id, Some(InvitationStatus::Pending))
            .await?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Withdraws a pending invitation of the team (an owner invitation: owners only).
    pub async fn revoke_invitation(
        &self,
        principal: &Principal,
        workspace: &str,
        invitation_id: &str,
    ) -> ServiceResult<InvitationView> {
        principal.require(Scope::Write)?;
        let access = self.access(principal).await?;
        let m = access.resolve(workspace)?;
        let ws = m.workspace.clone();
        check_team_manager(ws.kind, m.role)?;
        let not_found = || {
            ServiceError::NotFound(format!(
                "no pending invitation `{invitation_id}` in `{}`",
                ws.handle
            ))
        };
        let invitation = self
            .store
            .get_invitation(invitation_id)
            .await?
            .filter(|i| i.workspace_id == ws.workspace_id && i.status == InvitationStatus::Pending)
            .ok_or_else(not_found)?;
        if invitation.role == Role::Owner && m.role != Role::Owner {
            return Err(ServiceError::PermissionDenied(
                "only an owner may revoke an owner invitation".into(),
            ));
        }
        let audit = AuditDraft::new("invitation.revoke", &principal.attribution())
            .details(serde_json::json!({"invitation_id": invitation_id}));
        match self
            .store
            .revoke_invitation(&ws.workspace_id, invitation_id, audit)
            .await
        {
            Ok(i) => Ok(i.into()),
            Err(xmemo_store::StoreError::NotFound(_)) => Err(not_found()),
            Err(e) => Err(e.into()),
        }
    }

    /// The caller's pending invitations.
    pub async fn my_invitations(
        &self,
        principal: &Principal,
    ) -> ServiceResult<Vec<InvitationView>> {
        principal.require(Scope::Read)?;
        Ok(self
            .store
            .account_invitations(&principal.account.account_id)
            .await?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Accepts one of the caller's pending invitations: from now on the team is one of the
    /// caller's workspaces, with the invitation's role.
    pub async fn accept_invitation(
        &self,
        principal: &Principal,
        invitation_id: &str,
    ) -> ServiceResult<(InvitationView, WorkspaceView)> {
        let invitation = self
            .answer(principal, invitation_id, InvitationAnswer::Accept)
            .await?;
        let workspace = WorkspaceView {
            workspace_id: invitation.workspace_id.clone(),
            handle: invitation.workspace.clone(),
            name: invitation.workspace_name.clone(),
            kind: xmemo_core::WorkspaceKind::Team,
            role: invitation.role,
        };
        Ok((invitation, workspace))
    }

    pub async fn decline_invitation(
        &self,
        principal: &Principal,
        invitation_id: &str,
    ) -> ServiceResult<InvitationView> {
        self.answer(principal, invitation_id, InvitationAnswer::Decline)
            .await
    }

    async fn answer(
        &self,
        principal: &Principal,
        invitation_id: &str,
        answer: InvitationAnswer,
    ) -> ServiceResult<InvitationView> {
        principal.require(Scope::Write)?;
        let action = match answer {
            InvitationAnswer::Accept => "invitation.accept",
            InvitationAnswer::Decline => "invitation.decline",
        };
        let audit = AuditDraft::new(action, &principal.attribution())
            .details(serde_json::json!({"invitation_id": invitation_id}));
        match self
            .store
            .answer_invitation(invitation_id, &principal.account.account_id, answer, audit)
            .await
        {
            Ok(i) => Ok(i.into()),
            // Someone else's, answered, revoked or absent: all read the same.
            Err(xmemo_store::StoreError::NotFound(_)) => Err(ServiceError::NotFound(format!(
                "no pending invitation `{invitation_id}` for you"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// The account an invitee names, if any: an account id (`acct_…`) or a handle.
    async fn lookup_account(&self, invitee: &str) -> ServiceResult<Option<Account>> {
        Ok(if invitee.starts_with("acct_") {
            self.store.get_account(invitee).await?
        } else {
            self.store.find_account_by_handle(invitee).await?
        })
    }
}

/// An invitee is a handle (the slug rule accounts are created with) or an account id. The
/// check is on the spelling alone, so it reveals nothing about which accounts exist.
fn check_invitee(invitee: &str) -> ServiceResult<()> {
    if invitee.starts_with("acct_") {
        if xmemo_core::ids::has_prefix(invitee, "acct") {
            return Ok(());
        }
        return Err(ServiceError::validation(
            "an account id is `acct_` followed by 32 hexadecimal digits",
            "invitee",
        ));
    }
    Ok(xmemo_core::validate_slug("invitee", invitee)?)
}
