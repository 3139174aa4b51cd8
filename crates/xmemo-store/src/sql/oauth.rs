//! The OAuth authorization server's rows: registered clients, grants, codes and tokens.
//! Single use is enforced here, by compare-and-set updates: a code or refresh token that is
//! spent twice (even by two nodes at once) is exchanged exactly once.

use super::accounts::noting;
use super::{Dialect, Session, SqlStore, Stmt, audit, page};
use crate::model::{AuditDraft, CreationKey, KeysetPage, now};
use crate::signin::*;
use crate::{Record, StoreError, StoreResult};
use xmemo_core::new_id;

const CLIENT_SELECT: &str = "SELECT client_id, client_name, redirect_uris, token_endpoint_auth_method, secret_hash, metadata, created_at FROM oauth_clients";
const GRANT_COLUMNS: &str = "g.grant_id, g.account_id, g.client_id, g.client_name, g.redirect_uri, g.scopes AS grant_scopes, g.resource, g.created_at AS grant_created_at, g.revoked_at AS grant_revoked_at, g.revoked_reason";

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn json_list(r: &impl Record, column: &str) -> StoreResult<Vec<String>> {
    serde_json::from_str(&r.text(column)?)
        .map_err(|e| StoreError::Internal(format!("{column} is not a JSON list: {e}")))
}

fn client(r: &impl Record) -> StoreResult<OAuthClient> {
    Ok(OAuthClient {
        client_id: r.text("client_id")?,
        client_name: r.text("client_name")?,
        redirect_uris: json_list(r, "redirect_uris")?,
        token_endpoint_auth_method: r.text("token_endpoint_auth_method")?,
        secret_hash: r.opt_text("secret_hash")?,
        metadata: serde_json::from_str(&r.text("metadata")?)
            .map_err(|e| StoreError::Internal(format!("client metadata: {e}")))?,
        created_at: r.text("created_at")?,
    })
}

fn grant(r: &impl Record) -> StoreResult<OAuthGrant> {
    Ok(OAuthGrant {
        grant_id: r.text("grant_id")?,
        account_id: r.text("account_id")?,
        client_id: r.text("client_id")?,
        client_name: r.text("client_name")?,
        redirect_uri: r.text("redirect_uri")?,
        scopes: words(&r.text("grant_scopes")?),
        resource: r.text("resource")?,
        created_at: r.text("grant_created_at")?,
        revoked_at: r.opt_text("grant_revoked_at")?,
        revoked_reason: r.opt_text("revoked_reason")?,
    })
}

pub async fn create_client<D: Dialect>(
    store: &SqlStore<D>,
    new: NewOAuthClient,
    audit: AuditDraft,
) -> StoreResult<OAuthClient> {
    let client = OAuthClient {
        client_id: new_id("client"),
        client_name: new.client_name,
        redirect_uris: new.redirect_uris,
        token_endpoint_auth_method: new.token_endpoint_auth_method,
        secret_hash: new.secret_hash,
        metadata: new.metadata,
        created_at: now(),
    };
    let uris = serde_json::to_string(&client.redirect_uris)
        .map_err(|e| StoreError::Internal(e.to_string()))?;
    let mut s = store.write().await?;
    let mut expired = 0;
    if let Some(before) = &new.bounds.expire_unused_before {
        // Registration is open, so clients that were registered and never used would pile
        // up; each registration first removes those past their time (by the created_at
        // index, the grants' client index tells which never got a grant).
        expired = s
            .execute(
                Stmt::new(
                    "DELETE FROM oauth_clients WHERE created_at < $1
                     AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)",
                )
                .bind(before.as_str()),
            )
            .await?;
    }
    if let Some(max) = new.bounds.max_clients {
        let n = s
            .one(
                Stmt::new(format!(
                    "SELECT COUNT(*) AS n FROM (SELECT client_id FROM oauth_clients LIMIT {}) c",
                    max.saturating_add(1).min(i64::MAX as u64)
                )),
                "count",
            )
            .await?
            .int("n")?;
        if u64::try_from(n).unwrap_or(u64::MAX) >= max {
            return Err(StoreError::Limit(crate::LimitReached::RegisteredClients {
                limit: max,
            }));
        }
    }
    s.execute(
        Stmt::new("INSERT INTO oauth_clients (client_id, client_name, redirect_uris, token_endpoint_auth_method, secret_hash, metadata, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7)")
            .bind(&client.client_id)
            .bind(&client.client_name)
            .bind(uris.as_str())
            .bind(&client.token_endpoint_auth_method)
            .bind(&client.secret_hash)
            .bind(client.metadata.to_string())
            .bind(&client.created_at),
    )
    .await?;
    let mut audit = noting(audit, "client_id", &client.client_id);
    if expired > 0
        && let Some(details) = audit.details.as_object_mut()
    {
        details.insert("expired_unused_clients".into(), expired.into());
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(client)
}

pub async fn get_client<D: Dialect>(
    store: &SqlStore<D>,
    client_id: &str,
) -> StoreResult<Option<OAuthClient>> {
    let mut s = store.read().await?;
    s.optional(Stmt::new(format!("{CLIENT_SELECT} WHERE client_id = $1")).bind(client_id))
        .await?
        .map(|r| client(&r))
        .transpose()
}

async fn insert_code<D: Dialect>(
    s: &mut Session<D>,
    grant_id: &str,
    code: &NewOAuthCode,
) -> StoreResult<()> {
    s.execute(
        Stmt::new("INSERT INTO oauth_codes (code_hash, grant_id, code_challenge, expires_at) VALUES ($1,$2,$3,$4)")
            .bind(&code.code_hash)
            .bind(grant_id)
            .bind(&code.code_challenge)
            .bind(&code.expires_at),
    )
    .await?;
    Ok(())
}

pub async fn create_grant<D: Dialect>(
    store: &SqlStore<D>,
    new: NewOAuthGrant,
    audit: AuditDraft,
) -> StoreResult<OAuthGrant> {
    let grant = OAuthGrant {
        grant_id: new_id("grant"),
        account_id: new.account_id,
        client_id: new.client_id,
        client_name: new.client_name,
        redirect_uri: new.redirect_uri,
        scopes: new.scopes,
        resource: new.resource,
        created_at: now(),
        revoked_at: None,
        revoked_reason: None,
    };
    let mut s = store.write().await?;
    // Codes live a minute; the expired ones of every grant are dropped as new ones come.
    s.execute(Stmt::new("DELETE FROM oauth_codes WHERE expires_at <= $1").bind(&grant.created_at))
        .await?;
    s.execute(
        Stmt::new("INSERT INTO oauth_grants (grant_id, account_id, client_id, client_name, redirect_uri, scopes, resource, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)")
            .bind(&grant.grant_id)
            .bind(&grant.account_id)
            .bind(&grant.client_id)
            .bind(&grant.client_name)
            .bind(&grant.redirect_uri)
            .bind(grant.scopes.join(" "))
            .bind(&grant.resource)
            .bind(&grant.created_at),
    )
    .await?;
    insert_code(&mut s, &grant.grant_id, &new.code).await?;
    audit::append(&mut s, &noting(audit, "grant_id", &grant.grant_id)).await?;
    s.commit().await?;
    Ok(grant)
}

pub async fn find_code<D: Dialect>(
    store: &SqlStore<D>,
    code_hash: &str,
) -> StoreResult<Option<OAuthCode>> {
    let mut s = store.read().await?;
    let row = s
        .optional(
            Stmt::new(format!(
                "SELECT c.code_hash, c.code_challenge, c.expires_at, c.used_at, {GRANT_COLUMNS}
                 FROM oauth_codes c JOIN oauth_grants g ON g.grant_id = c.grant_id
                 WHERE c.code_hash = $1"
            ))
            .bind(code_hash),
        )
        .await?;
    row.map(|r| {
        Ok(OAuthCode {
            code_hash: r.text("code_hash")?,
            code_challenge: r.text("code_challenge")?,
            expires_at: r.text("expires_at")?,
            used_at: r.opt_text("used_at")?,
            grant: grant(&r)?,
        })
    })
    .transpose()
}

async fn insert_tokens<D: Dialect>(
    s: &mut Session<D>,
    grant_id: &str,
    tokens: &[NewOAuthToken],
    at: &str,
) -> StoreResult<()> {
    // Expired tokens of the grant are of no use any more (not even to detect a reuse).
    s.execute(
        Stmt::new("DELETE FROM oauth_tokens WHERE grant_id = $1 AND expires_at <= $2")
            .bind(grant_id)
            .bind(at),
    )
    .await?;
    for t in tokens {
        s.execute(
            Stmt::new("INSERT INTO oauth_tokens (token_hash, grant_id, kind, scopes, created_at, expires_at) VALUES ($1,$2,$3,$4,$5,$6)")
                .bind(&t.token_hash)
                .bind(grant_id)
                .bind(t.kind.as_str())
                .bind(t.scopes.join(" "))
                .bind(at)
                .bind(&t.expires_at),
        )
        .await?;
    }
    Ok(())
}

/// A single-use secret's two statements. `find_grant` reads the `grant_id` it belongs to
/// (`$1`: its hash; no row when it is unknown or its grant was revoked); `spend` is the
/// compare-and-set that marks it used (`$1`: now, `$2`: its hash) and changes no row when it
/// was spent already, so of two concurrent exchanges exactly one writes.
struct SingleUse {
    find_grant: &'static str,
    spend: &'static str,
}

const AUTHORIZATION_CODE: SingleUse = SingleUse {
    find_grant: "SELECT c.grant_id FROM oauth_codes c JOIN oauth_grants g ON g.grant_id = c.grant_id WHERE c.code_hash = $1 AND g.revoked_at IS NULL",
    spend: "UPDATE oauth_codes SET used_at = $1 WHERE code_hash = $2 AND used_at IS NULL",
};

const REFRESH_TOKEN: SingleUse = SingleUse {
    find_grant: "SELECT t.grant_id FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = $1 AND t.kind = 'refresh' AND g.revoked_at IS NULL",
    spend: "UPDATE oauth_tokens SET rotated_at = $1 WHERE token_hash = $2 AND rotated_at IS NULL AND revoked_at IS NULL AND expires_at > $1",
};

/// Spends the secret and stores `tokens` in its grant with the audit entry, in one
/// transaction; when the secret cannot be spent nothing is written.
async fn exchange_once<D: Dialect>(
    store: &SqlStore<D>,
    secret: &SingleUse,
    secret_hash: &str,
    tokens: &[NewOAuthToken],
    audit: AuditDraft,
) -> StoreResult<Exchange> {
    let at = now();
    let mut s = store.write().await?;
    let Some(row) = s
        .optional(Stmt::new(secret.find_grant).bind(secret_hash))
        .await?
    else {
        return Ok(Exchange::AlreadyUsed);
    };
    let grant_id = row.text("grant_id")?;
    let spent = s
        .execute(Stmt::new(secret.spend).bind(&at).bind(secret_hash))
        .await?;
    if spent == 0 {
        return Ok(Exchange::AlreadyUsed);
    }
    insert_tokens(&mut s, &grant_id, tokens, &at).await?;
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(Exchange::Issued)
}

/// Spends the code and stores the tokens of its grant, unless the code was spent already or
/// its grant was revoked (then nothing is written).
pub async fn redeem_code<D: Dialect>(
    store: &SqlStore<D>,
    code_hash: &str,
    tokens: &[NewOAuthToken],
    audit: AuditDraft,
) -> StoreResult<Exchange> {
    exchange_once(store, &AUTHORIZATION_CODE, code_hash, tokens, audit).await
}

pub async fn find_token<D: Dialect>(
    store: &SqlStore<D>,
    token_hash: &str,
) -> StoreResult<Option<OAuthToken>> {
    let mut s = store.read().await?;
    let row = s
        .optional(
            Stmt::new(format!(
                "SELECT t.token_hash, t.kind, t.scopes, t.created_at, t.expires_at, t.rotated_at, t.revoked_at, {GRANT_COLUMNS}
                 FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id
                 WHERE t.token_hash = $1"
            ))
            .bind(token_hash),
        )
        .await?;
    row.map(|r| {
        Ok(OAuthToken {
            token_hash: r.text("token_hash")?,
            kind: r.parsed("kind")?,
            scopes: words(&r.text("scopes")?),
            created_at: r.text("created_at")?,
            expires_at: r.text("expires_at")?,
            rotated_at: r.opt_text("rotated_at")?,
            revoked_at: r.opt_text("revoked_at")?,
            grant: grant(&r)?,
        })
    })
    .transpose()
}

/// Spends a live refresh token and stores its successors in its grant, unless it was spent
/// already, revoked or expired, or its grant was revoked (then nothing is written).
pub async fn rotate_refresh_token<D: Dialect>(
    store: &SqlStore<D>,
    token_hash: &str,
    tokens: &[NewOAuthToken],
    audit: AuditDraft,
) -> StoreResult<Exchange> {
    exchange_once(store, &REFRESH_TOKEN, token_hash, tokens, audit).await
}

pub async fn revoke_token<D: Dialect>(
    store: &SqlStore<D>,
    token_hash: &str,
    audit: AuditDraft,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let n = s
        .execute(
            Stmt::new(
                "UPDATE oauth_tokens SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL",
            )
            .bind(now())
            .bind(token_hash),
        )
        .await?;
    if n == 0 {
        return Ok(false);
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(true)
}

/// Revokes a live grant (of `account_id` when given), and with it every code and token.
pub async fn revoke_grant<D: Dialect>(
    store: &SqlStore<D>,
    grant_id: &str,
    account_id: Option<&str>,
    reason: &str,
    audit: AuditDraft,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let n = s
        .execute(
            Stmt::new(
                "UPDATE oauth_grants SET revoked_at = $1, revoked_reason = $2 WHERE grant_id = $3 AND revoked_at IS NULL AND ($4 = '' OR account_id = $4)",
            )
            .bind(now())
            .bind(reason)
            .bind(grant_id)
            .bind(account_id.unwrap_or("")),
        )
        .await?;
    if n == 0 {
        return Ok(false);
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(true)
}

/// Revokes every live grant of the account (sign out everywhere); how many.
pub async fn revoke_account_grants<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    reason: &str,
    audit: AuditDraft,
) -> StoreResult<u64> {
    let mut s = store.write().await?;
    let n = s
        .execute(
            Stmt::new(
                "UPDATE oauth_grants SET revoked_at = $1, revoked_reason = $2 WHERE account_id = $3 AND revoked_at IS NULL",
            )
            .bind(now())
            .bind(reason)
            .bind(account_id),
        )
        .await?;
    if n > 0 {
        let mut audit = audit;
        if let Some(details) = audit.details.as_object_mut() {
            details.insert("grants".into(), n.into());
        }
        audit::append(&mut s, &audit).await?;
        s.commit().await?;
    }
    Ok(n)
}

pub async fn get_grant<D: Dialect>(
    store: &SqlStore<D>,
    grant_id: &str,
) -> StoreResult<Option<OAuthGrant>> {
    let mut s = store.read().await?;
    s.optional(
        Stmt::new(format!(
            "SELECT {GRANT_COLUMNS} FROM oauth_grants g WHERE g.grant_id = $1"
        ))
        .bind(grant_id),
    )
    .await?
    .map(|r| grant(&r))
    .transpose()
}

/// One page of the account's live (unrevoked) grants in `(created_at, grant_id)` order.
pub async fn list_grants<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    page: &KeysetPage<CreationKey>,
) -> StoreResult<Vec<OAuthGrant>> {
    let sql = format!(
        "SELECT {GRANT_COLUMNS} FROM oauth_grants g WHERE g.account_id = $1 AND g.revoked_at IS NULL{}",
        page::tail(&["g.created_at", "g.grant_id"], 2, Some(page))
    );
    let mut s = store.read().await?;
    s.all(page::bind(Stmt::new(sql).bind(account_id), Some(page)))
        .await?
        .iter()
        .map(grant)
        .collect()
}
