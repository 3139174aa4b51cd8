//! The OAuth use-cases (SPEC §7): which client a `client_id` names, approving an
//! authorization (a grant and its code), exchanging a code, rotating refresh tokens, revoking,
//! the account's grants, and resolving an access token presented at `/mcp`. The endpoints in
//! `crate::oauth` and the consent page (`web/consent.rs`) parse the protocol and render its
//! answers; every rule is here:
//!
//! - `config.rs`: scopes, lifetimes, secret prefixes, the operator's client profiles;
//! - `client.rs`: a client as the server knows it; `registration.rs`: what a client may
//!   register (RFC 7591); `cimd.rs`: Client ID Metadata Documents (fetched, checked, cached);
//! - `authorize.rs`: the checks of an authorization request; `redirect_uri.rs`, `pkce.rs`: the
//!   rules for redirect URIs and PKCE S256;
//! - `error.rs`: what a rule refuses, in OAuth's words (the transport picks the status).
//!
//! A grant is one approved consent and one token family: a code that is presented twice, or
//! a refresh token presented after it was rotated, revokes the grant and so every token it
//! led to.

mod authorize;
pub mod cimd;
mod client;
mod config;
mod error;
pub mod pkce;
pub mod redirect_uri;
mod registration;

pub use authorize::{Authorization, AuthorizationParams, AuthorizationRefusal, MAX_STATE_BYTES};
pub use client::{Client, clean_name};
pub use config::*;
pub use error::{OAuthError, OAuthErrorKind};
pub use registration::parse_registration;

use super::Service;
use super::accounts::Audience;
use super::page::{self, Page, PageRequest};
use crate::auth::{Principal, hash_key, tokens_match};
use crate::error::{ServiceError, ServiceResult};
use crate::throttle::retry_after_secs;
use base64::Engine;
use rand::RngCore;
use std::net::{IpAddr, Ipv4Addr};
use xmemo_core::Scope;
use xmemo_store::{
    Attribution, AuditDraft, ClientBounds, CreationKey, Exchange, LimitReached, NewOAuthClient,
    NewOAuthCode, NewOAuthGrant, NewOAuthToken, OAuthClient, OAuthGrant, OAuthTokenKind,
    StoreError,
};

pub use super::budgets::DEFAULT_REGISTRATION_BUDGET;

/// What the token endpoint hands out.
#[derive(Debug, Clone)]
pub struct IssuedTokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: u64,
    pub scopes: Vec<String>,
}

/// How a client authenticated at the token or revocation endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientSecret {
    /// A public client: `client_id` only.
    None,
    /// HTTP Basic (`client_secret_basic`).
    Basic(String),
    /// In the form (`client_secret_post`).
    Post(String),
}

fn secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// The requested scopes (space-separated), defaulting to all; unknown ones are refused.
pub fn parse_scope(scope: Option<&str>) -> Result<Vec<String>, OAuthError> {
    let Some(text) = scope.filter(|s| !s.trim().is_empty()) else {
        return Ok(SCOPES.iter().map(|s| s.to_string()).collect());
    };
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        if !SCOPES.contains(&word) {
            return Err(OAuthError::invalid_scope(format!(
                "unknown scope `{word}`; this server has {}",
                SCOPES.join(" ")
            )));
        }
        if !out.iter().any(|s| s == word) {
            out.push(word.to_string());
        }
    }
    // Stored and shown in one order whatever the client sent.
    out.sort_by_key(|s| SCOPES.iter().position(|k| k == s));
    Ok(out)
}

/// The `resource` a request names, checked against the one resource there is; absent means
/// that one. Scheme and host compare case-insensitively, a trailing slash is ignored.
pub fn check_resource(given: Option<&str>, expected: &str) -> Result<String, OAuthError> {
    let Some(given) = given.filter(|g| !g.is_empty()) else {
        return Ok(expected.to_string());
    };
    let normal = |u: &str| {
        reqwest::Url::parse(u.trim_end_matches('/'))
            .ok()
            .map(|p| p.as_str().trim_end_matches('/').to_string())
    };
    match (normal(given), normal(expected)) {
        (Some(a), Some(b)) if a == b => Ok(expected.to_string()),
        _ => Err(OAuthError::invalid_target(format!(
            "tokens of this server are for {expected} only, not `{given}`"
        ))),
    }
}

impl Service {
    /// The client a `client_id` names: a registered one, or the one its metadata document
    /// describes (fetched on a cache miss, which the caller's address `from` pays for).
    /// Unknown → `invalid_client`.
    pub async fn oauth_client(
        &self,
        client_id: &str,
        from: Option<IpAddr>,
    ) -> Result<Client, OAuthError> {
        if client_id.is_empty() || client_id.len() > 2000 {
            return Err(OAuthError::invalid_client("missing or malformed client_id"));
        }
        if cimd::is_document_url(client_id) {
            return self.document_client(client_id, from).await;
        }
        let Some(row) = self.store.get_oauth_client(client_id).await? else {
            return Err(OAuthError::invalid_client(format!(
                "unknown client `{client_id}`: register it first"
            )));
        };
        Ok(registered(row))
    }

    /// A metadata-document client: from the cache (a document or a recent refusal), else
    /// fetched after the caller's address paid one of its document fetches.
    async fn document_client(
        &self,
        client_id: &str,
        from: Option<IpAddr>,
    ) -> Result<Client, OAuthError> {
        cimd::document_url(client_id, &self.fetch)?;
        if let Some(known) = self.client_documents.cached(client_id) {
            return known;
        }
        let address = super::throttle_key(from.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        self.document_fetches
            .reserve(address)
            .await
            .map_err(|wait| {
                OAuthError::rate_limited(retry_after_secs(wait), "client metadata document fetches")
            })?
            .keep();
        self.client_documents.fetch(client_id, &self.fetch).await
    }

    /// Stores a dynamically registered client (already checked by the endpoint), within the
    /// budgets of registrations per address and in all, and the bound on registered clients
    /// (clients that never got a grant expire first); the secret of a confidential client is
    /// returned once.
    pub async fn register_oauth_client(
        &self,
        mut new: NewOAuthClient,
        from: Option<IpAddr>,
    ) -> Result<(OAuthClient, Option<String>), OAuthError> {
        let address = super::throttle_key(from.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        // Reserved before the write; a registration that fails gives its tokens back.
        let here = self.registrations.reserve(address).await.map_err(|wait| {
            OAuthError::rate_limited(retry_after_secs(wait), "client registrations")
        })?;
        let all = match self.registrations_global.reserve(()).await {
            Ok(r) => r,
            Err(wait) => {
                here.refund();
                return Err(OAuthError {
                    retry_after: Some(retry_after_secs(wait)),
                    ..OAuthError::new(
                        OAuthErrorKind::TemporarilyUnavailable,
                        format!(
                            "this server takes no more client registrations for now; retry in {} s",
                            retry_after_secs(wait)
                        ),
                    )
                });
            }
        };
        let secret =
            (new.token_endpoint_auth_method != "none").then(|| secret(CLIENT_SECRET_PREFIX));
        new.secret_hash = secret.as_deref().map(hash_key);
        new.bounds = ClientBounds {
            max_clients: Some(self.budgets.max_registered_clients),
            expire_unused_before: Some(super::clock::timestamp(
                self.clock.now() - self.budgets.unused_client_ttl,
            )),
        };
        // The audit entry names the client, not its whole metadata (bounded by the
        // registration rules; the row holds it).
        let audit =
            AuditDraft::new("oauth.register", &Attribution::default()).details(serde_json::json!({
                "client_name": new.client_name,
                "redirect_uris": new.redirect_uris.len(),
                "token_endpoint_auth_method": new.token_endpoint_auth_method,
            }));
        match self.store.create_oauth_client(new, audit).await {
            Ok(client) => {
                here.keep();
                all.keep();
                Ok((client, secret))
            }
            Err(e) => {
                here.refund();
                all.refund();
                Err(match e {
                    StoreError::Limit(LimitReached::RegisteredClients { limit }) => {
                        tracing::warn!(
                            limit,
                            "OAuth client registrations refused: the cap is reached"
                        );
                        // The server's capacity, not the caller's rate: 503, not 429.
                        OAuthError::new(
                            OAuthErrorKind::TemporarilyUnavailable,
                            format!(
                                "this server holds {limit} registered clients, its most; try again later"
                            ),
                        )
                    }
                    other => other.into(),
                })
            }
        }
    }

    /// The signed-in person approves `request`: a grant and its single-use code (returned
    /// once), bound to the client, the redirect URI, the PKCE challenge and the resource.
    pub async fn approve_authorization(
        &self,
        principal: &Principal,
        request: &Authorization,
    ) -> ServiceResult<String> {
        let code = secret(CODE_PREFIX);
        let audit = AuditDraft::new("oauth.authorize", &principal.attribution()).details(
            serde_json::json!({
                "client_id": request.client.client_id,
                "client_name": request.client.name,
                "redirect_uri": request.redirect_uri,
                "scopes": request.scopes,
                "resource": request.resource,
            }),
        );
        self.store
            .create_oauth_grant(
                NewOAuthGrant {
                    account_id: principal.account.account_id.clone(),
                    client_id: request.client.client_id.clone(),
                    client_name: request.client.name.clone(),
                    redirect_uri: request.redirect_uri.clone(),
                    scopes: request.scopes.clone(),
                    resource: request.resource.clone(),
                    code: NewOAuthCode {
                        code_hash: hash_key(&code),
                        code_challenge: request.code_challenge.clone(),
                        expires_at: self.instant_after(self.oauth.lifetimes.code),
                    },
                },
                audit,
            )
            .await?;
        Ok(code)
    }

    /// Authenticates a client at the token and revocation endpoints by the method it
    /// registered: public clients send no secret, confidential ones theirs, by their method.
    pub async fn authenticate_oauth_client(
        &self,
        client_id: &str,
        presented: &ClientSecret,
        from: Option<IpAddr>,
    ) -> Result<Client, OAuthError> {
        let fail = |why: &str| OAuthError::invalid_client(why.to_string());
        let client = if cimd::is_document_url(client_id) {
            // Public, and usually still cached from the authorization request.
            self.document_client(client_id, from).await?
        } else {
            match self.store.get_oauth_client(client_id).await? {
                Some(row) => registered(row),
                None => return Err(fail("unknown client")),
            }
        };
        let ok = match (client.auth_method.as_str(), presented) {
            ("none", ClientSecret::None) => true,
            ("client_secret_basic", ClientSecret::Basic(s))
            | ("client_secret_post", ClientSecret::Post(s)) => client
                .secret_hash
                .as_deref()
                .is_some_and(|h| tokens_match(h, &hash_key(s))),
            _ => false,
        };
        if !ok {
            return Err(fail(&format!(
                "client authentication failed (this client authenticates with `{}`)",
                client.auth_method
            )));
        }
        Ok(client)
    }

    /// Runs one request of the token or revocation endpoint from `from` under the
    /// address's budget of failed authentications (the one keys, tokens and passwords
    /// spend): a token is reserved before the client secret, code or refresh token is
    /// checked and given back unless the answer is `invalid_client` or `invalid_grant`, so
    /// neither client secrets nor codes can be guessed faster than the budget, bursts
    /// included.
    pub async fn guarded_token_request<T>(
        &self,
        from: Option<IpAddr>,
        request: impl std::future::Future<Output = Result<T, OAuthError>>,
    ) -> Result<T, OAuthError> {
        let address = super::throttle_key(from.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        let reserved = self.auth_failures.reserve(address).await.map_err(|wait| {
            OAuthError::rate_limited(retry_after_secs(wait), "failed client authentications")
        })?;
        let result = request.await;
        match &result {
            Err(e)
                if matches!(
                    e.kind,
                    OAuthErrorKind::InvalidClient | OAuthErrorKind::InvalidGrant
                ) =>
            {
                if reserved.keep() {
                    tracing::warn!(client = %address, "client address limited after repeated failed authentications");
                }
            }
            _ => reserved.refund(),
        }
        result
    }

    fn tokens_for(&self, client: &Client, scopes: &[String]) -> (IssuedTokens, Vec<NewOAuthToken>) {
        let access = secret(ACCESS_PREFIX);
        let refresh = client.may_refresh().then(|| secret(REFRESH_PREFIX));
        let mut rows = vec![NewOAuthToken {
            token_hash: hash_key(&access),
            kind: OAuthTokenKind::Access,
            scopes: scopes.to_vec(),
            expires_at: self.instant_after(self.oauth.lifetimes.access),
        }];
        if let Some(r) = &refresh {
            rows.push(NewOAuthToken {
                token_hash: hash_key(r),
                kind: OAuthTokenKind::Refresh,
                scopes: scopes.to_vec(),
                expires_at: self.instant_after(self.oauth.lifetimes.refresh),
            });
        }
        (
            IssuedTokens {
                access_token: access,
                refresh_token: refresh,
                expires_in: self.oauth.lifetimes.access.as_secs(),
                scopes: scopes.to_vec(),
            },
            rows,
        )
    }

    /// Revokes a grant because one of its single-use secrets came back, and says so.
    async fn revoke_family(&self, grant: &OAuthGrant, reason: &str) -> OAuthError {
        let actor = Attribution {
            account_id: grant.account_id.clone(),
            credential_id: Some(grant.grant_id.clone()),
            ..Attribution::default()
        };
        let audit = AuditDraft::new("oauth.grant.revoke", &actor)
            .details(serde_json::json!({"grant_id": grant.grant_id, "reason": reason}));
        match self
            .store
            .revoke_oauth_grant(&grant.grant_id, None, reason, audit)
            .await
        {
            Ok(_) => {
                tracing::warn!(grant_id = %grant.grant_id, reason, "OAuth grant revoked: a single-use secret was presented again")
            }
            Err(e) => {
                tracing::error!(error = %e, grant_id = %grant.grant_id, "could not revoke an OAuth grant")
            }
        }
        OAuthError::invalid_grant(match reason {
            "code_reused" => {
                "this authorization code was already used; every token it led to is revoked"
            }
            _ => "this refresh token was already used; every token of its grant is revoked",
        })
    }

    /// `grant_type=authorization_code`.
    pub async fn exchange_code(
        &self,
        client: &Client,
        code: &str,
        redirect_uri: Option<&str>,
        verifier: Option<&str>,
        resource: Option<&str>,
    ) -> Result<IssuedTokens, OAuthError> {
        let Some(found) = self.store.find_oauth_code(&hash_key(code)).await? else {
            return Err(OAuthError::invalid_grant("unknown authorization code"));
        };
        let grant = &found.grant;
        if grant.client_id != client.client_id {
            return Err(OAuthError::invalid_grant(
                "this authorization code was issued to another client",
            ));
        }
        if found.used_at.is_some() {
            return Err(self.revoke_family(grant, "code_reused").await);
        }
        if grant.revoked_at.is_some() {
            return Err(OAuthError::invalid_grant("this authorization was revoked"));
        }
        if found.expires_at <= self.now() {
            return Err(OAuthError::invalid_grant("this authorization code expired"));
        }
        if redirect_uri != Some(grant.redirect_uri.as_str()) {
            return Err(OAuthError::invalid_grant(
                "redirect_uri differs from the one of the authorization request",
            ));
        }
        let Some(verifier) = verifier.filter(|v| !v.is_empty()) else {
            return Err(OAuthError::invalid_request(
                "code_verifier is required (PKCE S256)",
            ));
        };
        if !pkce::matches(verifier, &found.code_challenge) {
            return Err(OAuthError::invalid_grant(
                "code_verifier does not match the code_challenge",
            ));
        }
        check_resource(resource, &grant.resource)?;
        let (issued, rows) = self.tokens_for(client, &grant.scopes);
        let audit = AuditDraft::new("oauth.token", &grant_actor(grant)).details(
            serde_json::json!({"grant_id": grant.grant_id, "grant_type": "authorization_code"}),
        );
        match self
            .store
            .redeem_oauth_code(&found.code_hash, &rows, audit)
            .await?
        {
            Exchange::Issued => Ok(issued),
            Exchange::AlreadyUsed => Err(self.revoke_family(grant, "code_reused").await),
        }
    }

    /// `grant_type=refresh_token`: the refresh token is rotated; a rotated one presented
    /// again revokes its whole family.
    pub async fn refresh_tokens(
        &self,
        client: &Client,
        refresh_token: &str,
        scope: Option<&str>,
        resource: Option<&str>,
    ) -> Result<IssuedTokens, OAuthError> {
        let found = self
            .store
            .find_oauth_token(&hash_key(refresh_token))
            .await?
            .filter(|t| t.kind == OAuthTokenKind::Refresh);
        let Some(found) = found else {
            return Err(OAuthError::invalid_grant("unknown refresh token"));
        };
        let grant = &found.grant;
        if grant.client_id != client.client_id {
            return Err(OAuthError::invalid_grant(
                "this refresh token was issued to another client",
            ));
        }
        if grant.revoked_at.is_some() || found.revoked_at.is_some() {
            return Err(OAuthError::invalid_grant("this refresh token was revoked"));
        }
        if found.rotated_at.is_some() {
            return Err(self.revoke_family(grant, "refresh_token_reused").await);
        }
        if found.expires_at <= self.now() {
            return Err(OAuthError::invalid_grant("this refresh token expired"));
        }
        check_resource(resource, &grant.resource)?;
        let scopes = match scope.filter(|s| !s.trim().is_empty()) {
            None => found.scopes.clone(),
            Some(s) => {
                let asked = parse_scope(Some(s))?;
                if let Some(extra) = asked.iter().find(|a| !found.scopes.contains(a)) {
                    return Err(OAuthError::invalid_scope(format!(
                        "`{extra}` was not granted; authorize again to get it"
                    )));
                }
                asked
            }
        };
        let (issued, rows) = self.tokens_for(client, &scopes);
        let audit = AuditDraft::new("oauth.token", &grant_actor(grant)).details(
            serde_json::json!({"grant_id": grant.grant_id, "grant_type": "refresh_token"}),
        );
        match self
            .store
            .rotate_oauth_refresh_token(&found.token_hash, &rows, audit)
            .await?
        {
            Exchange::Issued => Ok(issued),
            Exchange::AlreadyUsed => Err(self.revoke_family(grant, "refresh_token_reused").await),
        }
    }

    /// RFC 7009: a client revokes one of its tokens. A refresh token takes its grant (every
    /// token of it) along; an access token goes alone. Tokens that are unknown, or not this
    /// client's, are ignored: the answer is the same either way.
    pub async fn revoke_by_client(&self, client: &Client, token: &str) -> ServiceResult<()> {
        let Some(found) = self.store.find_oauth_token(&hash_key(token)).await? else {
            return Ok(());
        };
        if found.grant.client_id != client.client_id {
            return Ok(());
        }
        let actor = grant_actor(&found.grant);
        match found.kind {
            OAuthTokenKind::Refresh => {
                let audit = AuditDraft::new("oauth.grant.revoke", &actor).details(
                    serde_json::json!({"grant_id": found.grant.grant_id, "reason": "revoked"}),
                );
                self.store
                    .revoke_oauth_grant(&found.grant.grant_id, None, "revoked", audit)
                    .await?;
            }
            OAuthTokenKind::Access => {
                let audit = AuditDraft::new("oauth.token.revoke", &actor)
                    .details(serde_json::json!({"grant_id": found.grant.grant_id}));
                self.store
                    .revoke_oauth_token(&found.token_hash, audit)
                    .await?;
            }
        }
        Ok(())
    }

    /// One page of the caller's live grants (consents not revoked), oldest first.
    pub async fn oauth_grants_page(
        &self,
        principal: &Principal,
        page: &PageRequest,
    ) -> ServiceResult<Page<OAuthGrant>> {
        principal.require(Scope::Read)?;
        let (size, keyset) = page::keyset(page, "grants", |[_, created_at, id]| {
            Some(CreationKey { created_at, id })
        })?;
        let rows = self
            .store
            .list_oauth_grants_page(&principal.account.account_id, &keyset)
            .await?;
        Ok(page::finish(rows, size, |g| {
            page::encode_cursor(&["grants", &g.created_at, &g.grant_id])
        }))
    }

    /// The caller revokes one of its grants: every token of it stops working at once.
    pub async fn revoke_oauth_grant(
        &self,
        principal: &Principal,
        grant_id: &str,
    ) -> ServiceResult<()> {
        principal.require(Scope::Write)?;
        let audit = AuditDraft::new("oauth.grant.revoke", &principal.attribution())
            .details(serde_json::json!({"grant_id": grant_id, "reason": "revoked"}));
        if self
            .store
            .revoke_oauth_grant(
                grant_id,
                Some(&principal.account.account_id),
                "revoked",
                audit,
            )
            .await?
        {
            Ok(())
        } else {
            Err(ServiceError::NotFound(format!(
                "grant `{grant_id}` not found or already revoked"
            )))
        }
    }

    /// An access token presented to `audience`: live, unexpired, of a live grant, and issued
    /// for exactly that resource. Every failure reads the same.
    pub(crate) async fn resolve_access_token(
        &self,
        secret: &str,
        audience: &Audience,
        agent_id: Option<String>,
        agent_instance_id: Option<String>,
    ) -> ServiceResult<Principal> {
        let invalid =
            || ServiceError::AuthRequired("invalid, revoked or expired credential".into());
        let Audience::Mcp { resource } = audience else {
            return Err(ServiceError::AuthRequired(
                "OAuth access tokens are for the MCP endpoint (/mcp) only; use an API key here"
                    .into(),
            ));
        };
        if secret.len() > 256 {
            return Err(invalid());
        }
        let token = self
            .store
            .find_oauth_token(&hash_key(secret))
            .await?
            .filter(|t| t.kind == OAuthTokenKind::Access)
            .ok_or_else(invalid)?;
        let now = self.now();
        if token.revoked_at.is_some()
            || token.grant.revoked_at.is_some()
            || token.expires_at <= now
            || token.grant.resource != *resource
        {
            return Err(invalid());
        }
        let account = self
            .store
            .account_of_credential(&token.grant.account_id)
            .await?
            .ok_or_else(invalid)?;
        Ok(Principal {
            account,
            credential_id: Some(token.grant.grant_id.clone()),
            scopes: token
                .scopes
                .iter()
                .filter_map(|s| s.parse::<Scope>().ok())
                .collect(),
            client_profile: Some(
                self.oauth
                    .profile_for(&token.grant.client_id, &token.grant.client_name),
            ),
            agent_id,
            agent_instance_id,
            registered_client: Some(token.grant.client_name.clone()),
            via_oauth: true,
        })
    }
}

fn registered(row: OAuthClient) -> Client {
    let grant_types = row
        .metadata
        .get("grant_types")
        .and_then(|g| g.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_else(|| vec!["authorization_code".to_string()]);
    // The scope it registered (checked then), which bounds what it may ask for.
    let scopes = row
        .metadata
        .get("scope")
        .and_then(|s| s.as_str())
        .map(|s| s.split_whitespace().map(str::to_string).collect());
    Client {
        client_id: row.client_id,
        name: row.client_name,
        redirect_uris: row.redirect_uris,
        auth_method: row.token_endpoint_auth_method,
        secret_hash: row.secret_hash,
        grant_types,
        scopes,
        metadata_document: false,
    }
}

/// Writes done on behalf of a grant (token issuance, family revocation) are attributed to
/// its account, through the grant.
fn grant_actor(grant: &OAuthGrant) -> Attribution {
    Attribution {
        account_id: grant.account_id.clone(),
        credential_id: Some(grant.grant_id.clone()),
        ..Attribution::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_and_resources() {
        assert_eq!(parse_scope(None).unwrap(), ["memory:read", "memory:write"]);
        assert_eq!(
            parse_scope(Some("memory:write memory:read memory:write")).unwrap(),
            ["memory:read", "memory:write"]
        );
        assert_eq!(parse_scope(Some("memory:read")).unwrap(), ["memory:read"]);
        assert_eq!(
            parse_scope(Some("memory:admin")).unwrap_err().code(),
            "invalid_scope"
        );
        let mcp = "http://127.0.0.1:8420/mcp";
        assert_eq!(check_resource(None, mcp).unwrap(), mcp);
        assert!(check_resource(Some("HTTP://127.0.0.1:8420/mcp/"), mcp).is_ok());
        for other in [
            "http://127.0.0.1:8420/",
            "http://127.0.0.1:8421/mcp",
            "https://evil.example/mcp",
        ] {
            assert_eq!(
                check_resource(Some(other), mcp).unwrap_err().code(),
                "invalid_target"
            );
        }
    }
}
