//! Sign-in: account passwords, server-side sessions and the failure budgets that guard
//! them. The transports (the `/login` page now, the console later) hold no rule of their own:
//! they pass the cookie secret and the form fields here.

use super::Service;
use crate::auth::{Principal, hash_key};
use crate::error::{ServiceError, ServiceResult};
use crate::throttle::{Reservation, retry_after_secs};
use base64::Engine;
use hashlink::LruCache;
use rand::RngCore;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::Duration;
use xmemo_store::{Account, ApiKey, Attribution, AuditDraft, NewWebSession, WebSession};

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

pub use super::budgets::{DEFAULT_LOGIN_PAIR_THROTTLE, DEFAULT_LOGIN_THROTTLE};

/// The operator unlocks this node has applied, by account id (see [`Service::sign_in`]).
/// Unlocks recorded before this node started are not applied: its budgets were empty then.
#[derive(Debug)]
pub struct AppliedUnlocks {
    started_at: String,
    applied: Mutex<LruCache<String, String>>,
}

impl Default for AppliedUnlocks {
    fn default() -> Self {
        Self {
            started_at: super::clock::timestamp(time::OffsetDateTime::now_utc()),
            applied: Mutex::new(LruCache::new(10_000)),
        }
    }
}

impl AppliedUnlocks {
    /// Whether `unlocked_at` is an unlock this node has not applied yet; marks it applied.
    fn take(&self, account_id: &str, unlocked_at: &str) -> bool {
        if unlocked_at < self.started_at.as_str() {
            return false;
        }
        let mut applied = self
            .applied
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if applied
            .get(account_id)
            .is_some_and(|at| at.as_str() >= unlocked_at)
        {
            return false;
        }
        applied.insert(account_id.to_string(), unlocked_at.to_string());
        true
    }
}

/// What a password check reserved of the budgets: the address's, the account-and-address
/// pair's and, unless the address is one the account signed in from, the account's.
struct LoginReservations {
    address: Reservation<IpAddr>,
    pair: Reservation<(String, IpAddr)>,
    account: Option<Reservation<String>>,
}

/// What changing a password did besides.
#[derive(Debug, Clone)]
pub struct PasswordChanged {
    /// OAuth grants revoked ("sign out everywhere"): every connected app must connect again.
    pub grants_revoked: u64,
    /// The account's live API keys, which a password change does not touch: for the person
    /// to review (and revoke what they do not recognise).
    pub live_keys: Vec<ApiKey>,
}

/// A session just created: the cookie secret (shown to the browser once, never stored) and
/// its row.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub secret: String,
    pub account: Account,
    pub session: WebSession,
    /// The device cookie the browser keeps (the one it presented, or a new one): a later
    /// sign-in presenting it is one from a device the account signed in from, which the
    /// account's ceiling never refuses (see [`Service::sign_in`]).
    pub device: String,
}

/// How long a browser keeps its device cookie.
pub const DEVICE_COOKIE_LIFETIME: Duration = Duration::from_secs(400 * 24 * 3600);

/// A device cookie as this server makes them (URL-safe base64 of 32 random bytes), or
/// `None` for anything else (which then gets a new one).
fn device_secret(presented: Option<&str>) -> Option<&str> {
    presented.filter(|d| {
        d.len() == 43
            && d.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// A device as the store remembers it among the origins of sign-ins.
fn device_origin(secret: &str) -> String {
    format!(
        "{}{}",
        xmemo_store::sql::DEVICE_ORIGIN_PREFIX,
        hash_key(secret)
    )
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

/// The key an account's sign-in budgets are counted under: the handle as typed, trimmed and
/// lowercased, at most a handle's length (a longer one names no account; its budget is
/// still bounded, shared by every such spelling).
fn account_key(handle: &str) -> String {
    handle
        .trim()
        .to_ascii_lowercase()
        .chars()
        .take(xmemo_core::limits::HANDLE_MAX_CHARS + 1)
        .collect()
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
        let hash = self.hashing.hash(password).await?;
        let audit = AuditDraft::new("account.password", &principal.attribution())
            .details(serde_json::json!({ "account_id": account.account_id }));
        Ok(self
            .store
            .set_password(&account.account_id, &hash, audit)
            .await?)
    }

    /// A signed-in person changes their own password from `client`: the current one must
    /// be right (a wrong one spends the same budgets as a failed sign-in). Every session of
    /// the account ends, this one too; with `sign_out_everywhere` every OAuth grant is
    /// revoked as well (the apps connected with the old password must connect again). API
    /// keys are not touched: they are returned for the person to review.
    pub async fn change_password(
        &self,
        principal: &Principal,
        current: &str,
        new: &str,
        client: Option<IpAddr>,
        sign_out_everywhere: bool,
    ) -> ServiceResult<PasswordChanged> {
        let account = principal.account.clone();
        crate::password::check(new)?;
        let address = super::throttle_key(client.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        let key = account_key(&account.handle);
        let reserved = self
            .reserve_login(&key, address, None, Some(&account))
            .await?;
        let stored = match self.store.password_hash(&account.account_id).await {
            Ok(stored) => stored,
            Err(e) => {
                self.refund_login(reserved);
                return Err(e.into());
            }
        };
        match self.check_password(current, stored).await {
            Ok(true) => self.refund_login(reserved),
            Ok(false) => {
                self.keep_login(reserved);
                return Err(ServiceError::validation(
                    "the current password is not right",
                    "current_password",
                ));
            }
            Err(e) => {
                self.refund_login(reserved);
                return Err(e);
            }
        }
        self.set_password(principal, &account, new).await?;
        let grants_revoked = if sign_out_everywhere {
            let audit = AuditDraft::new("oauth.grant.revoke_all", &principal.attribution())
                .details(serde_json::json!({"reason": "password_changed"}));
            self.store
                .revoke_account_grants(&account.account_id, "password_changed", audit)
                .await?
        } else {
            0
        };
        let live_keys = self
            .store
            .list_api_keys(&account.account_id)
            .await?
            .into_iter()
            .filter(|k| {
                k.revoked_at.is_none()
                    && k.expires_at
                        .as_deref()
                        .is_none_or(|e| e > self.now().as_str())
            })
            .collect();
        Ok(PasswordChanged {
            grants_revoked,
            live_keys,
        })
    }

    /// `password` against `stored` (a dummy when none), in a hashing slot: `Ok(false)` for a
    /// wrong or oversized one, Err when no slot is free.
    async fn check_password(&self, password: &str, stored: Option<String>) -> ServiceResult<bool> {
        if password.len() > crate::password::MAX_BYTES {
            return Ok(false);
        }
        self.hashing.verify(password, stored).await
    }

    /// Takes a token from each budget a password check spends, before the check: the
    /// address's was taken by the caller; here the account-and-address pair's, then the
    /// account's — which an address the account signed in from does not need (the owner is
    /// never locked out by guesses from elsewhere). An operator's unlock recorded since
    /// this node last looked restores the account's budgets once. Refusals are RATE_LIMITED.
    async fn reserve_account_budgets(
        &self,
        key: &str,
        address: IpAddr,
        device: Option<&str>,
        account: Option<&Account>,
    ) -> ServiceResult<(Reservation<(String, IpAddr)>, Option<Reservation<String>>)> {
        let mut unlock_looked = false;
        loop {
            let pair = match self.login_pairs.reserve((key.to_string(), address)).await {
                Ok(r) => r,
                Err(wait) => {
                    if !unlock_looked && self.apply_unlock(key, account).await? {
                        unlock_looked = true;
                        continue;
                    }
                    return Err(rate_limited(
                        retry_after_secs(wait),
                        "for this account from this address",
                    ));
                }
            };
            match self.login_failures.reserve(key.to_string()).await {
                Ok(r) => return Ok((pair, Some(r))),
                Err(wait) => {
                    // The same statements whether or not the handle names an account.
                    let id = account.map_or("", |a| a.account_id.as_str());
                    let known = self.known_origin(id, address, device).await;
                    match known {
                        Ok(true) => return Ok((pair, None)),
                        Ok(false) => {}
                        Err(e) => {
                            pair.refund();
                            return Err(e);
                        }
                    }
                    pair.refund();
                    if !unlock_looked && self.apply_unlock(key, account).await? {
                        unlock_looked = true;
                        continue;
                    }
                    return Err(rate_limited(retry_after_secs(wait), "for this account"));
                }
            }
        }
    }

    /// Whether the account signed in from `address`, or from the browser holding the device
    /// cookie `device`.
    async fn known_origin(
        &self,
        account_id: &str,
        address: IpAddr,
        device: Option<&str>,
    ) -> ServiceResult<bool> {
        if self
            .store
            .known_signin_address(account_id, &address.to_string())
            .await?
        {
            return Ok(true);
        }
        match device {
            Some(d) => Ok(self
                .store
                .known_signin_address(account_id, &device_origin(d))
                .await?),
            None => Ok(false),
        }
    }

    /// The address's token, then the account's budgets (see `reserve_account_budgets`). A
    /// refusal by the account's budgets keeps the address's token: refused attempts cost
    /// the address, so its budget bounds the work (lookups) they cause.
    async fn reserve_login(
        &self,
        key: &str,
        address: IpAddr,
        device: Option<&str>,
        account: Option<&Account>,
    ) -> ServiceResult<LoginReservations> {
        let address_token = self
            .auth_failures
            .reserve(address)
            .await
            .map_err(|wait| rate_limited(retry_after_secs(wait), "from this address"))?;
        match self
            .reserve_account_budgets(key, address, device, account)
            .await
        {
            Ok((pair, account)) => Ok(LoginReservations {
                address: address_token,
                pair,
                account,
            }),
            Err(e) => {
                if matches!(e, ServiceError::RateLimited { .. }) {
                    address_token.keep();
                } else {
                    address_token.refund();
                }
                Err(e)
            }
        }
    }

    /// The password check failed: every reserved token stays spent.
    fn keep_login(&self, r: LoginReservations) {
        if r.address.keep() {
            tracing::warn!("client address limited after repeated failed authentications");
        }
        r.pair.keep();
        if r.account.is_some_and(Reservation::keep) {
            tracing::warn!("an account's sign-ins limited after repeated failures");
        }
    }

    /// The check succeeded (or could not run): every reserved token comes back.
    fn refund_login(&self, r: LoginReservations) {
        r.address.refund();
        r.pair.refund();
        if let Some(a) = r.account {
            a.refund();
        }
    }

    /// Restores the account's sign-in budgets on this node when an operator unlocked it
    /// since this node last looked; whether it did.
    async fn apply_unlock(&self, key: &str, account: Option<&Account>) -> ServiceResult<bool> {
        let Some(account) = account else {
            return Ok(false);
        };
        let Some(at) = self.store.signin_unlocked_at(&account.account_id).await? else {
            return Ok(false);
        };
        if !self.unlocks.take(&account.account_id, &at) {
            return Ok(false);
        }
        self.forget_login_failures(key);
        Ok(true)
    }

    fn forget_login_failures(&self, key: &str) {
        self.login_failures.forget(&key.to_string());
        self.login_pairs.forget_where(|(k, _)| k == key);
    }

    /// The operator unlocks an account's sign-in (`xmemo admin account unlock`): its
    /// failure budgets are whole again, on this node at once and on every node at its next
    /// refusal (the unlock is recorded in the database, audited).
    pub async fn unlock_sign_in(
        &self,
        principal: &Principal,
        account: &Account,
    ) -> ServiceResult<()> {
        if !principal.account.is_admin && principal.account.account_id != account.account_id {
            return Err(ServiceError::PermissionDenied(
                "only server administrators unlock other accounts".into(),
            ));
        }
        let audit = AuditDraft::new("account.signin.unlock", &principal.attribution())
            .details(serde_json::json!({ "account_id": account.account_id }));
        let at = self.now();
        self.store
            .unlock_signin(&account.account_id, &at, audit)
            .await?;
        self.unlocks.take(&account.account_id, &at);
        self.forget_login_failures(&account_key(&account.handle));
        Ok(())
    }

    /// Signs in with a handle and a password from `client`. The budgets it spends are
    /// reserved before anything is checked — the address's (shared with every failed
    /// authentication), the account-and-address pair's, and the account's unless `client`
    /// is an address it signed in from, or the browser presents the device cookie of one
    /// (`device`) — and given back on success; an exhausted one is RATE_LIMITED. So guesses
    /// from elsewhere, however many addresses they come from, never refuse the owner on a
    /// network or in a browser they signed in from before (docs/decisions.md, "Sign-in
    /// budgets"). Every other failure is the same AUTH_REQUIRED; no free hashing slot is a
    /// retryable SERVICE_UNAVAILABLE. A success creates a new session and deletes
    /// `replaces` (the session the browser held): a session id is never carried across a
    /// sign-in; the browser's device (a new one when it presented none) is remembered.
    pub async fn sign_in(
        &self,
        handle: &str,
        password: &str,
        client: Option<IpAddr>,
        device: Option<&str>,
        replaces: Option<&str>,
    ) -> ServiceResult<NewSession> {
        let device = device_secret(device);
        let address = super::throttle_key(client.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        let key = account_key(handle);
        // The address budget comes first, so a limited address costs no lookup at all.
        if let Err(wait) = self.auth_failures.check(&address) {
            return Err(rate_limited(retry_after_secs(wait), "from this address"));
        }
        let account = if key.is_empty() || key.len() > xmemo_core::limits::HANDLE_MAX_CHARS {
            None
        } else {
            self.store.find_account_by_handle(&key).await?
        };
        let reserved = self
            .reserve_login(&key, address, device, account.as_ref())
            .await?;
        let stored = match &account {
            Some(a) => match self.store.password_hash(&a.account_id).await {
                Ok(s) => s,
                Err(e) => {
                    self.refund_login(reserved);
                    return Err(e.into());
                }
            },
            None => None,
        };
        let ok = match self.check_password(password, stored).await {
            Ok(ok) => ok,
            Err(e) => {
                self.refund_login(reserved);
                return Err(e);
            }
        };
        let Some(account) = account.filter(|_| ok) else {
            self.keep_login(reserved);
            return Err(wrong_credentials());
        };
        self.refund_login(reserved);
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
        let device = device.map_or_else(random_secret, str::to_string);
        let mut origins = vec![device_origin(&device)];
        if client.is_some() {
            origins.push(address.to_string());
        }
        let origins: Vec<&str> = origins.iter().map(String::as_str).collect();
        let session = self
            .store
            .create_session(
                session,
                replaces.map(hash_key).as_deref(),
                &origins,
                AuditDraft::new("session.create", &actor),
            )
            .await?;
        Ok(NewSession {
            secret,
            account,
            session,
            device,
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
