//! Accounts, API keys, authentication and the first-start bootstrap.

use super::Service;
use super::clock::timestamp;
use super::page::{self, Page, PageRequest};
use super::types::*;
use crate::auth::{Principal, generate_key, hash_key, parse_scopes};
use crate::error::{ServiceError, ServiceResult};
use crate::throttle::retry_after_secs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use xmemo_core::Scope;
use xmemo_store::{Account, ApiKey, Attribution, AuditDraft, CreationKey, NewAccount, NewApiKey};

/// What a credential is presented to: the REST API (API keys only), or the MCP endpoint
/// whose resource URL an OAuth access token must have been issued for (RFC 8707).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audience {
    Rest,
    Mcp { resource: String },
}

/// The client profile a key connects as unless told otherwise.
pub const DEFAULT_PROFILE: &str = "ordinary-full";

/// The key failures are counted under: the address, with IPv6 clients grouped by their /64
/// (one host usually holds a whole /64) and IPv4-mapped IPv6 read as IPv4.
pub fn throttle_key(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(_) => client,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// RATE_LIMITED for an address that spent its budget of failed authentications.
pub(crate) fn address_limited(secs: u64) -> ServiceError {
    ServiceError::RateLimited {
        message: format!("too many failed authentications from this address; retry in {secs} s"),
        retry_after_secs: secs,
    }
}

/// How stale a key's recorded last use may get before an authentication writes it again.
pub const KEY_USE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

impl Service {
    /// Resolves an API key secret presented from `client` (the caller's address; `None` when
    /// unknown, counted as one shared address) to a principal. Every failure reads the same,
    /// so a caller learns nothing about which keys exist. An address that has used up its
    /// failed attempts is refused with RATE_LIMITED before any key is looked up, whatever it
    /// presents; successes spend nothing.
    pub async fn authenticate(
        &self,
        secret: &str,
        audience: &Audience,
        client: Option<IpAddr>,
        agent_id: Option<String>,
        agent_instance_id: Option<String>,
    ) -> ServiceResult<Principal> {
        let client = throttle_key(client.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        // The token is taken before the lookup and given back on success, so a burst of
        // concurrent guesses cannot all pass a check made before any of them failed.
        let reserved = self
            .auth_failures
            .reserve(client)
            .await
            .map_err(|wait| address_limited(retry_after_secs(wait)))?;
        let result = if secret.starts_with(super::oauth::ACCESS_PREFIX) {
            self.resolve_access_token(secret, audience, agent_id, agent_instance_id)
                .await
        } else {
            self.resolve_key(secret, agent_id, agent_instance_id).await
        };
        self.settle_auth_failure(client, reserved, &result);
        result
    }

    /// Keeps an address's reserved token when its attempt was a failed authentication, and
    /// gives it back otherwise (a success, or a failure of the server's own).
    pub(crate) fn settle_auth_failure<T>(
        &self,
        client: IpAddr,
        reserved: crate::throttle::Reservation<IpAddr>,
        result: &ServiceResult<T>,
    ) {
        if !matches!(result, Err(ServiceError::AuthRequired(_))) {
            reserved.refund();
            return;
        }
        if reserved.keep() {
            let config = self.auth_failures.config();
            tracing::warn!(
                client = %client,
                failures = config.max_failures,
                window_secs = config.window.as_secs(),
                "client address limited after repeated failed authentications"
            );
        }
    }

    /// Records the key's use for the console's "last use", at most once per
    /// [`KEY_USE_INTERVAL`]: a key used within it costs no write. A failed write is logged and
    /// does not fail the authentication.
    async fn touch_key(&self, key: &ApiKey) {
        let now = self.clock.now();
        let since = timestamp(now - KEY_USE_INTERVAL);
        if key
            .last_used_at
            .as_deref()
            .is_some_and(|at| at >= since.as_str())
        {
            return;
        }
        if let Err(e) = self
            .store
            .touch_api_key(&key.key_id, &timestamp(now), &since)
            .await
        {
            tracing::warn!(key_id = %key.key_id, error = %e, "could not record a key's last use");
        }
    }

    async fn resolve_key(
        &self,
        secret: &str,
        agent_id: Option<String>,
        agent_instance_id: Option<String>,
    ) -> ServiceResult<Principal> {
        let invalid =
            || ServiceError::AuthRequired("invalid, revoked or expired credential".into());
        if secret.is_empty() || secret.len() > 256 {
            return Err(invalid());
        }
        let key = self
            .store
            .find_api_key_by_hash(&hash_key(secret))
            .await?
            .ok_or_else(invalid)?;
        if key.revoked_at.is_some()
            || key
                .expires_at
                .as_deref()
                .is_some_and(|e| e <= self.now().as_str())
        {
            return Err(invalid());
        }
        let account = self
            .store
            .account_of_credential(&key.account_id)
            .await?
            .ok_or_else(invalid)?;
        self.touch_key(&key).await;
        let scopes = key
            .scopes
            .iter()
            .filter_map(|s| s.parse::<Scope>().ok())
            .collect();
        Ok(Principal {
            account,
            credential_id: Some(key.key_id),
            scopes,
            client_profile: Some(key.profile),
            agent_id,
            agent_instance_id,
            registered_client: None,
            via_oauth: false,
        })
    }

    pub async fn create_key(
        &self,
        principal: &Principal,
        req: CreateKeyRequest,
    ) -> ServiceResult<CreatedKey> {
        principal.require(Scope::Write)?;
        self.spend_write(principal).await?;
        self.issue_key(principal, &principal.account, req).await
    }

    /// Issues a key for `account` (the caller's own, or any when the operator does it).
    pub async fn issue_key(
        &self,
        principal: &Principal,
        account: &Account,
        req: CreateKeyRequest,
    ) -> ServiceResult<CreatedKey> {
        let name = req.name.trim().to_string();
        xmemo_core::validate::validate_key_name("name", &name)?;
        let scopes = match req.scopes {
            None => principal.scopes.clone(),
            Some(list) => parse_scopes(&list.join(" "))?,
        };
        if scopes.is_empty() {
            return Err(ServiceError::validation(
                "at least one scope is required",
                "scopes",
            ));
        }
        if let Some(extra) = scopes.iter().find(|s| !principal.scopes.contains(s)) {
            return Err(ServiceError::PermissionDenied(format!(
                "a key cannot grant `{extra}`, which the calling credential lacks"
            )));
        }
        let expires_at = req
            .expires_at
            .as_deref()
            .map(|t| normalise_instant("expires_at", t))
            .transpose()?;
        if let Some(at) = &expires_at
            && at.as_str() <= self.now().as_str()
        {
            // Same format on both sides, so the text order is the time order. A key that
            // could never authenticate is a mistake, not a key.
            return Err(ServiceError::validation(
                format!("expires_at {at} is not in the future"),
                "expires_at",
            ));
        }
        let profile = req.profile.unwrap_or_else(|| DEFAULT_PROFILE.to_string());
        xmemo_core::validate_slug("profile", &profile)?;
        let generated = generate_key();
        let audit =
            AuditDraft::new("key.create", &principal.attribution()).details(serde_json::json!({
                "name": name,
                "scopes": scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "profile": profile,
                "expires_at": expires_at,
            }));
        let info = self
            .store
            .create_api_key(
                NewApiKey {
                    account_id: account.account_id.clone(),
                    name,
                    prefix: generated.prefix,
                    key_hash: generated.hash,
                    scopes: scopes.iter().map(|s| s.as_str().to_string()).collect(),
                    profile,
                    expires_at,
                },
                audit,
            )
            .await?;
        Ok(CreatedKey {
            key: generated.secret,
            info,
        })
    }

    pub async fn list_keys(&self, principal: &Principal) -> ServiceResult<Vec<ApiKey>> {
        principal.require(Scope::Read)?;
        Ok(self
            .store
            .list_api_keys(&principal.account.account_id)
            .await?)
    }

    /// One page of the caller's keys, in creation order.
    pub async fn keys_page(
        &self,
        principal: &Principal,
        page: &PageRequest,
    ) -> ServiceResult<Page<ApiKey>> {
        principal.require(Scope::Read)?;
        let (size, keyset) = page::keyset(page, "keys", |[_, created_at, id]| {
            Some(CreationKey { created_at, id })
        })?;
        let rows = self
            .store
            .list_api_keys_page(&principal.account.account_id, &keyset)
            .await?;
        Ok(page::finish(rows, size, |k| {
            page::encode_cursor(&["keys", &k.created_at, &k.key_id])
        }))
    }

    pub async fn revoke_key(&self, principal: &Principal, key_id: &str) -> ServiceResult<()> {
        principal.require(Scope::Write)?;
        let audit = AuditDraft::new("key.revoke", &principal.attribution())
            .details(serde_json::json!({"key_id": key_id}));
        if self
            .store
            .revoke_api_key(&principal.account.account_id, key_id, audit)
            .await?
        {
            Ok(())
        } else {
            Err(ServiceError::NotFound(format!(
                "key `{key_id}` not found or already revoked"
            )))
        }
    }

    /// Creates an account; only server admins (or the local operator) may.
    pub async fn create_account(
        &self,
        principal: &Principal,
        req: CreateAccountRequest,
    ) -> ServiceResult<Account> {
        principal.require(Scope::Write)?;
        if !principal.account.is_admin {
            return Err(ServiceError::PermissionDenied(
                "only server administrators create accounts".into(),
            ));
        }
        self.create_account_unchecked(req, principal.attribution())
            .await
    }

    pub async fn list_accounts(&self, principal: &Principal) -> ServiceResult<Vec<Account>> {
        principal.require(Scope::Read)?;
        if !principal.account.is_admin {
            return Err(ServiceError::PermissionDenied(
                "only server administrators list accounts".into(),
            ));
        }
        Ok(self.store.list_accounts().await?)
    }

    /// One page of all accounts, in creation order (server administrators only).
    pub async fn accounts_page(
        &self,
        principal: &Principal,
        page: &PageRequest,
    ) -> ServiceResult<Page<Account>> {
        principal.require(Scope::Read)?;
        if !principal.account.is_admin {
            return Err(ServiceError::PermissionDenied(
                "only server administrators list accounts".into(),
            ));
        }
        let (size, keyset) = page::keyset(page, "accounts", |[_, created_at, id]| {
            Some(CreationKey { created_at, id })
        })?;
        let rows = self.store.list_accounts_page(&keyset).await?;
        Ok(page::finish(rows, size, |a| {
            page::encode_cursor(&["accounts", &a.created_at, &a.account_id])
        }))
    }

    async fn create_account_unchecked(
        &self,
        req: CreateAccountRequest,
        actor: Attribution,
    ) -> ServiceResult<Account> {
        xmemo_core::validate_slug("handle", &req.handle)?;
        let display_name = req.display_name.unwrap_or_else(|| req.handle.clone());
        xmemo_core::validate::validate_name("display_name", &display_name)?;
        let audit = AuditDraft::new("account.create", &actor)
            .details(serde_json::json!({"handle": req.handle, "is_admin": req.is_admin}));
        self.store
            .create_account(
                NewAccount {
                    handle: req.handle.clone(),
                    display_name,
                    is_admin: req.is_admin,
                },
                audit,
            )
            .await
            .map_err(|e| match e {
                xmemo_store::StoreError::Conflict(_) => {
                    ServiceError::Conflict(format!("account `{}` already exists", req.handle))
                }
                other => other.into(),
            })
    }

    /// First start on an empty database: an admin account and its first key. Returns the
    /// secret once, or `None` when accounts already exist.
    pub async fn bootstrap(&self) -> ServiceResult<Option<(Account, CreatedKey)>> {
        if self.store.count_accounts().await? > 0 {
            return Ok(None);
        }
        let account = self
            .create_account_unchecked(
                CreateAccountRequest {
                    handle: "admin".into(),
                    display_name: Some("Administrator".into()),
                    is_admin: true,
                },
                Attribution::default(),
            )
            .await?;
        let operator = Principal::operator(account.clone());
        let key = self
            .issue_key(
                &operator,
                &account,
                CreateKeyRequest {
                    name: "bootstrap admin key".into(),
                    scopes: None,
                    expires_at: None,
                    profile: None,
                },
            )
            .await?;
        Ok(Some((account, key)))
    }

    /// The local operator acting as an existing account (for `xmemo admin`).
    pub async fn operator_for(&self, handle: &str) -> ServiceResult<Principal> {
        Ok(Principal::operator(self.find_account(handle).await?))
    }

    /// Operator-side account creation (`xmemo admin account create`), no admin check.
    pub async fn admin_create_account(&self, req: CreateAccountRequest) -> ServiceResult<Account> {
        self.create_account_unchecked(req, Attribution::default())
            .await
    }
}

/// Accepts an RFC 3339 instant and stores it in the store's own UTC millisecond format.
pub(crate) fn normalise_instant(field: &str, text: &str) -> ServiceResult<String> {
    let parsed = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| ServiceError::validation(format!("{field} is not RFC 3339: {e}"), field))?;
    let utc = parsed.to_offset(time::UtcOffset::UTC);
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    utc.format(&format)
        .map_err(|e| ServiceError::validation(format!("{field}: {e}"), field))
}
