//! Passwords and server-side sessions.

use super::{Dialect, SqlStore, Stmt, audit};
use crate::model::{AuditDraft, now};
use crate::signin::{NewWebSession, PasswordRow, WebSession};
use crate::{Record, StoreResult};

const SESSION_SELECT: &str = "SELECT session_hash, account_id, created_at, idle_expires_at, absolute_expires_at FROM web_sessions";

fn session(r: &impl Record) -> StoreResult<WebSession> {
    Ok(WebSession {
        session_hash: r.text("session_hash")?,
        account_id: r.text("account_id")?,
        created_at: r.text("created_at")?,
        idle_expires_at: r.text("idle_expires_at")?,
        absolute_expires_at: r.text("absolute_expires_at")?,
    })
}

pub async fn set_password<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    password_hash: &str,
    audit: AuditDraft,
) -> StoreResult<()> {
    let mut s = store.write().await?;
    s.one(
        Stmt::new("SELECT account_id FROM accounts WHERE account_id = $1").bind(account_id),
        "account",
    )
    .await?;
    s.execute(Stmt::new("DELETE FROM account_passwords WHERE account_id = $1").bind(account_id))
        .await?;
    s.execute(
        Stmt::new(
            "INSERT INTO account_passwords (account_id, password_hash, updated_at) VALUES ($1, $2, $3)",
        )
        .bind(account_id)
        .bind(password_hash)
        .bind(now()),
    )
    .await?;
    // A new password ends every session signed in with the old one.
    s.execute(Stmt::new("DELETE FROM web_sessions WHERE account_id = $1").bind(account_id))
        .await?;
    audit::append(&mut s, &audit).await?;
    s.commit().await
}

pub async fn password_hash<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
) -> StoreResult<Option<String>> {
    let mut s = store.read().await?;
    s.optional(
        Stmt::new("SELECT password_hash FROM account_passwords WHERE account_id = $1")
            .bind(account_id),
    )
    .await?
    .map(|r| r.text("password_hash"))
    .transpose()
}

pub async fn list_passwords<D: Dialect>(store: &SqlStore<D>) -> StoreResult<Vec<PasswordRow>> {
    let mut s = store.read().await?;
    s.all(Stmt::new(
        "SELECT account_id, password_hash, updated_at FROM account_passwords ORDER BY account_id",
    ))
    .await?
    .iter()
    .map(|r| {
        Ok(PasswordRow {
            account_id: r.text("account_id")?,
            password_hash: r.text("password_hash")?,
            updated_at: r.text("updated_at")?,
        })
    })
    .collect()
}

/// One password row as given (snapshot imports).
pub async fn insert_password<D: Dialect>(
    s: &mut super::Session<D>,
    row: &PasswordRow,
) -> StoreResult<()> {
    s.execute(
        Stmt::new(
            "INSERT INTO account_passwords (account_id, password_hash, updated_at) VALUES ($1, $2, $3)",
        )
        .bind(&row.account_id)
        .bind(&row.password_hash)
        .bind(&row.updated_at),
    )
    .await?;
    Ok(())
}

/// Origins kept per account and kind (addresses, devices): the most recent ones it signed
/// in from.
pub const SIGNIN_ADDRESSES_KEPT: i64 = 20;

/// How a device is written among the origins of `signin_addresses`: this prefix and the
/// SHA-256 of its cookie (an address never starts with a letter and a colon like this).
pub const DEVICE_ORIGIN_PREFIX: &str = "device:";

pub async fn create_session<D: Dialect>(
    store: &SqlStore<D>,
    new: NewWebSession,
    replaces: Option<&str>,
    origins: &[&str],
    audit: AuditDraft,
) -> StoreResult<WebSession> {
    let mut s = store.write().await?;
    if let Some(old) = replaces {
        s.execute(Stmt::new("DELETE FROM web_sessions WHERE session_hash = $1").bind(old))
            .await?;
    }
    // Expired sessions are dropped here, so the table holds live sessions only (plus those
    // that expired since the last sign-in).
    let at = now();
    s.execute(
        Stmt::new(
            "DELETE FROM web_sessions WHERE absolute_expires_at <= $1 OR idle_expires_at <= $1",
        )
        .bind(&at),
    )
    .await?;
    s.execute(
        Stmt::new("INSERT INTO web_sessions (session_hash, account_id, created_at, idle_expires_at, absolute_expires_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(&new.session_hash)
            .bind(&new.account_id)
            .bind(&new.created_at)
            .bind(&new.idle_expires_at)
            .bind(&new.absolute_expires_at),
    )
    .await?;
    for origin in origins {
        // Where the account signed in from: addresses and devices (`device:` + the hash of a
        // device cookie), which its sign-in ceiling never refuses (the service's budgets);
        // only the most recent few of each kind are kept.
        s.execute(
            Stmt::new(
                "INSERT INTO signin_addresses (account_id, address, last_signed_in_at) VALUES ($1, $2, $3)
                 ON CONFLICT (account_id, address) DO UPDATE SET last_signed_in_at = $3",
            )
            .bind(&new.account_id)
            .bind(*origin)
            .bind(&new.created_at),
        )
        .await?;
        let same_kind = if origin.starts_with(DEVICE_ORIGIN_PREFIX) {
            "LIKE"
        } else {
            "NOT LIKE"
        };
        s.execute(
            Stmt::new(format!(
                "DELETE FROM signin_addresses WHERE account_id = $1
                 AND address {same_kind} '{DEVICE_ORIGIN_PREFIX}%' AND address NOT IN
                 (SELECT address FROM signin_addresses WHERE account_id = $1
                  AND address {same_kind} '{DEVICE_ORIGIN_PREFIX}%'
                  ORDER BY last_signed_in_at DESC, address LIMIT {SIGNIN_ADDRESSES_KEPT})"
            ))
            .bind(&new.account_id),
        )
        .await?;
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(new)
}

/// Whether the account signed in from `address` (one of its most recent addresses, or
/// devices: see [`DEVICE_ORIGIN_PREFIX`]).
pub async fn known_signin_address<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    address: &str,
) -> StoreResult<bool> {
    let mut s = store.read().await?;
    Ok(s.optional(
        Stmt::new("SELECT 1 AS known FROM signin_addresses WHERE account_id = $1 AND address = $2")
            .bind(account_id)
            .bind(address),
    )
    .await?
    .is_some())
}

/// When an operator last unlocked the account's sign-in.
pub async fn signin_unlocked_at<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
) -> StoreResult<Option<String>> {
    let mut s = store.read().await?;
    s.optional(
        Stmt::new("SELECT unlocked_at FROM signin_unlocks WHERE account_id = $1").bind(account_id),
    )
    .await?
    .map(|r| r.text("unlocked_at"))
    .transpose()
}

/// Records an operator's unlock of the account's sign-in at `at`, audited. Every node
/// applies it when it next refuses a sign-in of the account.
pub async fn unlock_signin<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    at: &str,
    audit: AuditDraft,
) -> StoreResult<()> {
    let mut s = store.write().await?;
    s.one(
        Stmt::new("SELECT account_id FROM accounts WHERE account_id = $1").bind(account_id),
        "account",
    )
    .await?;
    s.execute(
        Stmt::new(
            "INSERT INTO signin_unlocks (account_id, unlocked_at) VALUES ($1, $2)
             ON CONFLICT (account_id) DO UPDATE SET unlocked_at = $2",
        )
        .bind(account_id)
        .bind(at),
    )
    .await?;
    audit::append(&mut s, &audit).await?;
    s.commit().await
}

pub async fn find_session<D: Dialect>(
    store: &SqlStore<D>,
    session_hash: &str,
) -> StoreResult<Option<WebSession>> {
    let mut s = store.read().await?;
    s.optional(Stmt::new(format!("{SESSION_SELECT} WHERE session_hash = $1")).bind(session_hash))
        .await?
        .map(|r| session(&r))
        .transpose()
}

/// Moves the idle expiry forward, never past the absolute one.
pub async fn extend_session<D: Dialect>(
    store: &SqlStore<D>,
    session_hash: &str,
    idle_expires_at: &str,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let n = s
        .execute(
            Stmt::new(
                "UPDATE web_sessions SET idle_expires_at = CASE WHEN $1 < absolute_expires_at THEN $1 ELSE absolute_expires_at END WHERE session_hash = $2",
            )
            .bind(idle_expires_at)
            .bind(session_hash),
        )
        .await?;
    s.commit().await?;
    Ok(n > 0)
}

pub async fn delete_session<D: Dialect>(
    store: &SqlStore<D>,
    session_hash: &str,
    audit: AuditDraft,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let n = s
        .execute(Stmt::new("DELETE FROM web_sessions WHERE session_hash = $1").bind(session_hash))
        .await?;
    if n == 0 {
        return Ok(false);
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(true)
}
