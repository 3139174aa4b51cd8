//! Team invitations: the one way into a team one did not create. Accepting is the only
//! statement outside account and team creation that inserts a membership.

use super::accounts::{INSERT_MEMBER, noting};
use super::rows::{self, INVITATION_SELECT};
use super::{Dialect, Session, SqlStore, Stmt, audit};
use crate::model::*;
use crate::{Record, StoreError, StoreResult};
use xmemo_core::{InvitationStatus, new_id};

async fn read_one<D: Dialect>(s: &mut Session<D>, invitation_id: &str) -> StoreResult<Invitation> {
    let row = s
        .one(
            Stmt::new(format!("{INVITATION_SELECT} WHERE i.invitation_id = $1"))
                .bind(invitation_id),
            "invitation",
        )
        .await?;
    rows::invitation(&row)
}

pub async fn create<D: Dialect>(
    store: &SqlStore<D>,
    new: NewInvitation,
    audit: AuditDraft,
) -> StoreResult<Invitation> {
    let id = new_id("inv");
    let mut s = store.write().await?;
    check_bounds(&mut s, &new).await?;
    s.execute(
        Stmt::new("INSERT INTO invitations (invitation_id, workspace_id, invitee, account_id, role, status, invited_by, created_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7)")
            .bind(&id)
            .bind(&new.workspace_id)
            .bind(&new.invitee)
            .bind(new.account_id.as_deref())
            .bind(new.role.as_str())
            .bind(&new.invited_by)
            .bind(now()),
    )
    .await
    .map_err(|e| match e {
        // The spelling (`invitations_one_pending`) or the person (by handle and by id,
        // `invitations_one_pending_account`): the same refusal either way.
        StoreError::Conflict(_) => StoreError::Conflict(format!(
            "an invitation for `{}` is already pending; revoke it to invite again",
            new.invitee
        )),
        other => other,
    })?;
    let audit = noting(audit, "invitation_id", &id).workspace(&new.workspace_id);
    audit::append(&mut s, &audit).await?;
    let invitation = read_one(&mut s, &id).await?;
    s.commit().await?;
    Ok(invitation)
}

/// The bounds of an invitation, inside its transaction. The same statements run whether or
/// not the invitee names an account (an unknown one binds an empty id), so their number
/// tells nothing about which handles exist.
async fn check_bounds<D: Dialect>(s: &mut Session<D>, new: &NewInvitation) -> StoreResult<()> {
    let b = &new.bounds;
    if b.max_pending_per_invitee.is_none() && b.declined_after.is_none() {
        return Ok(());
    }
    let account = new.account_id.as_deref().unwrap_or("");
    // Invitations of one person are serialised by a lock on their account, so a burst from
    // many teams cannot all pass the count (SQLite's single writer serialises them anyway).
    s.optional(
        Stmt::new(format!(
            "SELECT account_id FROM accounts WHERE account_id = $1{}",
            D::LOCK_ROWS
        ))
        .bind(account),
    )
    .await?;
    if let Some(max) = b.max_pending_per_invitee {
        let pending = s
            .one(
                Stmt::new(
                    "SELECT COUNT(*) AS n FROM invitations WHERE status = 'pending'
                     AND (($1 <> '' AND account_id = $1) OR ($1 = '' AND account_id IS NULL AND invitee = $2))",
                )
                .bind(account)
                .bind(&new.invitee),
                "count",
            )
            .await?
            .int("n")?;
        if u64::try_from(pending).unwrap_or(u64::MAX) >= max {
            return Err(StoreError::Limit(crate::LimitReached::PendingInvitations {
                limit: max,
            }));
        }
    }
    if let Some(after) = &b.declined_after {
        let declined = s
            .optional(
                Stmt::new(
                    "SELECT responded_at FROM invitations WHERE workspace_id = $1 AND account_id = $2
                     AND status = 'declined' AND responded_at > $3 ORDER BY responded_at DESC LIMIT 1",
                )
                .bind(&new.workspace_id)
                .bind(account)
                .bind(after.as_str()),
            )
            .await?;
        if let Some(row) = declined {
            return Err(StoreError::Limit(crate::LimitReached::DeclinedRecently {
                declined_at: row.text("responded_at")?,
            }));
        }
    }
    Ok(())
}

pub async fn get<D: Dialect>(
    store: &SqlStore<D>,
    invitation_id: &str,
) -> StoreResult<Option<Invitation>> {
    let mut s = store.read().await?;
    match read_one(&mut s, invitation_id).await {
        Ok(i) => Ok(Some(i)),
        Err(StoreError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

pub async fn of_workspace<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    status: Option<InvitationStatus>,
) -> StoreResult<Vec<Invitation>> {
    let mut sql = format!("{INVITATION_SELECT} WHERE i.workspace_id = $1");
    if status.is_some() {
        sql.push_str(" AND i.status = $2");
    }
    sql.push_str(" ORDER BY i.created_at, i.invitation_id");
    let mut stmt = Stmt::new(sql).bind(workspace_id);
    if let Some(st) = status {
        stmt = stmt.bind(st.as_str());
    }
    let mut s = store.read().await?;
    s.all(stmt).await?.iter().map(rows::invitation).collect()
}

pub async fn of_account<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
) -> StoreResult<Vec<Invitation>> {
    let mut s = store.read().await?;
    s.all(
        Stmt::new(format!(
            "{INVITATION_SELECT} WHERE i.account_id = $1 AND i.status = 'pending' ORDER BY i.created_at, i.invitation_id"
        ))
        .bind(account_id),
    )
    .await?
    .iter()
    .map(rows::invitation)
    .collect()
}

/// Compare-and-set of a pending invitation's status; `NotFound` unless it is pending and
/// matches the extra condition (`$4`: the invitee's account, or the workspace).
async fn close<D: Dialect>(
    s: &mut Session<D>,
    invitation_id: &str,
    to: InvitationStatus,
    condition: &'static str,
    value: &str,
) -> StoreResult<()> {
    let changed = s
        .execute(
            Stmt::new(format!(
                "UPDATE invitations SET status = $1, responded_at = $2 WHERE invitation_id = $3 AND status = 'pending' AND {condition} = $4"
            ))
            .bind(to.as_str())
            .bind(now())
            .bind(invitation_id)
            .bind(value),
        )
        .await?;
    if changed == 0 {
        return Err(StoreError::NotFound("invitation".into()));
    }
    Ok(())
}

pub async fn answer<D: Dialect>(
    store: &SqlStore<D>,
    invitation_id: &str,
    account_id: &str,
    answer: InvitationAnswer,
    audit: AuditDraft,
) -> StoreResult<Invitation> {
    let mut s = store.write().await?;
    let to = match answer {
        InvitationAnswer::Accept => InvitationStatus::Accepted,
        InvitationAnswer::Decline => InvitationStatus::Declined,
    };
    close(&mut s, invitation_id, to, "account_id", account_id).await?;
    let invitation = read_one(&mut s, invitation_id).await?;
    if answer == InvitationAnswer::Accept {
        s.execute(
            Stmt::new(INSERT_MEMBER)
                .writes_auth()
                .bind(&invitation.workspace_id)
                .bind(account_id)
                .bind(invitation.role.as_str())
                .bind(now()),
        )
        .await
        .map_err(|e| match e {
            StoreError::Conflict(_) => StoreError::Conflict(format!(
                "you are already a member of `{}`; decline this invitation instead",
                invitation.workspace_handle
            )),
            other => other,
        })?;
    }
    audit::append(&mut s, &audit.workspace(&invitation.workspace_id)).await?;
    s.commit().await?;
    Ok(invitation)
}

pub async fn revoke<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    invitation_id: &str,
    audit: AuditDraft,
) -> StoreResult<Invitation> {
    let mut s = store.write().await?;
    close(
        &mut s,
        invitation_id,
        InvitationStatus::Revoked,
        "workspace_id",
        workspace_id,
    )
    .await?;
    let invitation = read_one(&mut s, invitation_id).await?;
    audit::append(&mut s, &audit.workspace(workspace_id)).await?;
    s.commit().await?;
    Ok(invitation)
}

/// One invitation row as given (snapshot imports).
pub async fn insert<D: Dialect>(s: &mut Session<D>, i: &Invitation) -> StoreResult<()> {
    s.execute(
        Stmt::new("INSERT INTO invitations (invitation_id, workspace_id, invitee, account_id, role, status, invited_by, created_at, responded_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)")
            .bind(&i.invitation_id)
            .bind(&i.workspace_id)
            .bind(&i.invitee)
            .bind(&i.account_id)
            .bind(i.role.as_str())
            .bind(i.status.as_str())
            .bind(&i.invited_by)
            .bind(&i.created_at)
            .bind(&i.responded_at),
    )
    .await?;
    Ok(())
}
