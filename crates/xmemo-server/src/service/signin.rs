//! Sign-in: account passwords, server-side sessions and the failure budgets that guard
//! them. The transports (the `/login` page now, the console later) hold no rule of their own:
//! they pass the cookie secret and the form fields here.

use super::Service;
use crate::auth::{Principal, hash_key};
use crate::error::{ServiceError, ServiceResult};
use crate::throttle::{LimiterConfig, retry_after_secs};
use base64::Engine;
use rand::RngCore;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use xmemo_store::{Account, Attribution, AuditDraft, NewWebSession, WebSession};

/// How long a session lives: `idle` after its last use, `absolute` after sign-in at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    pub idle: Duration,
    pub absolute: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(8 * 3600),
            absolute: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// Failed sign-ins allowed per account: 10 in 10 minutes. (Per address, sign-ins share the
/// budget of every other failed authentication.)
pub const DEFAULT_LOGIN_THROTTLE: LimiterConfig = LimiterConfig {
    max_failures: 10,
    window: Duration::from_secs(600),
    max_keys: LimiterConfig::DEFAULT_MAX_KEYS,
};

/// A session just created: the cookie secret (shown to the browser once, never stored) and
/// its row.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub secret: String,
    pub account: Account,
    pub session: WebSession,
}

/// The signed-in person behind a session cookie.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub account: Account,
    pub session: WebSession,
}

impl SignedIn {
    /// The person acting through the web pages: every scope their account has.
    pub fn principal(&self) -> Principal {
        Principal {
            client_profile: Some("web".into()),
            ..Principal::operator(self.account.clone())
        }
    }
}

fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The same answer for an unknown handle, an account without a password and a wrong one.
fn wrong_credentials() -> ServiceError {
    ServiceError::AuthRequired("wrong handle or password".into())
}

fn rate_limited(secs: u64, whose: &str) -> ServiceError {
    ServiceError::RateLimited {
        message: format!("too many failed sign-ins {whose}; retry in {secs} s"),
        retry_after_secs: secs,
    }
}

impl Service {
    /// Sets an account's password (the operator's `xmemo admin account set-password`, or the
    /// first start). Every session of the account ends.
    pub async fn set_password(
        &self,
        principal: &Principal,
        account: &Account,
        password: &str,
    ) -> ServiceResult<()> {
        if principal.account.account_id != account.account_id && !principal.account.is_admin {
            return Err(ServiceError::PermissionDenied(
                "only server administrators set other accounts' passwords".into(),
            ));
        }
        crate::password::check(password)?;
        let hash = crate::password::hash(password).await?;
        let audit = AuditDraft::new("account.password", &principal.attribution())
            .details(serde_json::json!({ "account_id": account.account_id }));
        Ok(self
            .store
            .set_password(&account.account_id, &hash, audit)
            .await?)
    }

    /// A signed-in person changes their own password: the current one must be right (a
    /// wrong one spends the account's sign-in budget, like a failed sign-in). Every session of
    /// the account ends, this one too.
    pub async fn change_password(
        &self,
        principal: &Principal,
        current: &str,
        new: &str,
    ) -> ServiceResult<()> {
        let account = principal.account.clone();
        let key = account.handle.to_ascii_lowercase();
        if let Err(wait) = self.login_failures.check(&key) {
            return Err(rate_limited(retry_after_secs(wait), "for this account"));
        }
        let stored = self.store.password_hash(&account.account_id).await?;
        if current.len() > crate::password::MAX_BYTES
            || !crate::password::verify(current, stored).await
        {
            self.login_failures.record_failure(key);
            return Err(ServiceError::validation(
                "the current password is not right",
                "current_password",
            ));
        }
        self.set_password(principal, &account, new).await
    }

    /// Signs in with a handle and a password from `client`. Refused with RATE_LIMITED before
    /// anything is checked when the address (shared with every failed authentication) or
    /// the account has no failure left; every other failure is the same AUTH_REQUIRED. A
    /// success creates a new session and deletes `replaces` (the session the browser held):
    /// a session id is never carried across a sign-in.
    pub async fn sign_in(
        &self,
        handle: &str,
        password: &str,
        client: Option<IpAddr>,
        replaces: Option<&str>,
    ) -> ServiceResult<NewSession> {
        let address = super::throttle_key(client.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        let account_key = handle.trim().to_ascii_lowercase();
        if let Err(wait) = self.auth_failures.check(&address) {
            return Err(rate_limited(retry_after_secs(wait), "from this address"));
        }
        if let Err(wait) = self.login_failures.check(&account_key) {
            return Err(rate_limited(retry_after_secs(wait), "for this account"));
        }
        let account = if account_key.is_empty() || account_key.len() > 64 {
            None
        } else {
            self.store.find_account_by_handle(&account_key).await?
        };
        let stored = match &account {
            Some(a) => self.store.password_hash(&a.account_id).await?,
            None => None,
        };
        let ok = password.len() <= crate::password::MAX_BYTES
            && crate::password::verify(password, stored).await;
        let Some(account) = account.filter(|_| ok) else {
            self.login_failures.record_failure(account_key);
            if self.auth_failures.record_failure(address) {
                tracing::warn!(client = %address, "client address limited after repeated failed authentications");
            }
            return Err(wrong_credentials());
        };
        let secret = random_secret();
        let created_at = self.now();
        let session = NewWebSession {
            session_hash: hash_key(&secret),
            account_id: account.account_id.clone(),
            created_at,
            idle_expires_at: self.instant_after(self.sessions.idle.min(self.sessions.absolute)),
            absolute_expires_at: self.instant_after(self.sessions.absolute),
        };
        let actor = Attribution {
            account_id: account.account_id.clone(),
            client_profile: Some("web".into()),
            ..Attribution::default()
        };
        let session = self
            .store
            .create_session(
                session,
                replaces.map(hash_key).as_deref(),
                AuditDraft::new("session.create", &actor),
            )
            .await?;
        Ok(NewSession {
            secret,
            account,
            session,
        })
    }

    /// The live session a cookie secret names, or `None` (unknown, expired, or its account
    /// gone). Using a session moves its idle expiry forward, at most about once a minute.
    pub async fn session(&self, secret: &str) -> ServiceResult<Option<SignedIn>> {
        if secret.is_empty() || secret.len() > 256 {
            return Ok(None);
        }
        let hash = hash_key(secret);
        let Some(session) = self.store.find_session(&hash).await? else {
            return Ok(None);
        };
        let now = self.now();
        if session.idle_expires_at <= now || session.absolute_expires_at <= now {
            return Ok(None);
        }
        let Some(account) = self.store.get_account(&session.account_id).await? else {
            return Ok(None);
        };
        let idle = self.sessions.idle;
        let refreshed = self.instant_after(idle);
        let due = self.instant_after(idle.saturating_sub(Duration::from_secs(60)));
        if session.idle_expires_at < due && session.idle_expires_at < session.absolute_expires_at {
            self.store.extend_session(&hash, &refreshed).await?;
        }
        Ok(Some(SignedIn { account, session }))
    }

    /// Ends the session a cookie secret names; nothing happens for an unknown one.
    pub async fn sign_out(&self, secret: &str) -> ServiceResult<()> {
        if let Some(signed_in) = self.session(secret).await? {
            let actor = Attribution {
                account_id: signed_in.account.account_id.clone(),
                client_profile: Some("web".into()),
                ..Attribution::default()
            };
            self.store
                .delete_session(&hash_key(secret), AuditDraft::new("session.delete", &actor))
                .await?;
        }
        Ok(())
    }

    /// How long a session cookie is kept at most (its absolute lifetime).
    pub fn session_lifetime(&self) -> Duration {
        self.sessions.absolute
    }

    /// First start: a random password for the new admin account, returned once.
    pub async fn bootstrap_password(&self, account: &Account) -> ServiceResult<String> {
        let password = crate::password::generate();
        self.set_password(&Principal::operator(account.clone()), account, &password)
            .await?;
        Ok(password)
    }
}
