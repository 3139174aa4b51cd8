//! The OAuth 2.1 authorization server MCP hosts connect through (SPEC §7, docs/oauth.md).
//! The issuer is the public URL; tokens are for the `/mcp` resource only.
//!
//! - `metadata.rs`: RFC 8414 metadata (also served as OpenID discovery);
//! - `register.rs`: dynamic client registration (RFC 7591);
//! - `cimd.rs`: Client ID Metadata Documents (fetched, checked, cached);
//! - `authorize.rs`: the authorization endpoint and its consent page;
//! - `token.rs`: the token endpoint and revocation (RFC 7009);
//! - `redirect_uri.rs`, `pkce.rs`: the rules for redirect URIs and PKCE S256;
//! - `error.rs`: the OAuth error shape these endpoints answer in.
//!
//! The rules about grants, codes and tokens live in the service (`service/oauth.rs`).

mod authorize;
pub mod cimd;
pub mod error;
mod metadata;
pub mod pkce;
pub mod redirect_uri;
mod register;
mod token;

use crate::rest::AppState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use std::collections::BTreeMap;
use std::time::Duration;

/// The scopes there are (SPEC "OAuth scopes").
pub const SCOPES: [&str; 2] = ["memory:read", "memory:write"];
/// An authorization code is redeemed within a minute or never.
pub const CODE_TTL: Duration = Duration::from_secs(60);
/// Access tokens are short-lived: an hour.
pub const ACCESS_TTL: Duration = Duration::from_secs(3600);
/// Refresh tokens: 30 days, renewed at each rotation.
pub const REFRESH_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// How long codes and tokens live (the defaults above; tests shorten them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    pub code: Duration,
    pub access: Duration,
    pub refresh: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self {
            code: CODE_TTL,
            access: ACCESS_TTL,
            refresh: REFRESH_TTL,
        }
    }
}

/// Prefixes of the secrets this server issues, so a leaked one is easy to recognise.
pub const ACCESS_PREFIX: &str = "xmat_";
pub const REFRESH_PREFIX: &str = "xmrt_";
pub const CODE_PREFIX: &str = "xmac_";
pub const CLIENT_SECRET_PREFIX: &str = "xmcs_";

/// OAuth settings an operator controls.
#[derive(Debug, Clone, Default)]
pub struct OAuthConfig {
    /// The MCP client profile a client's tokens connect as, by client id (a registered id or
    /// a metadata-document URL) or else by client name; other clients get `ordinary-full`.
    pub client_profiles: BTreeMap<String, String>,
    pub lifetimes: Lifetimes,
}

impl OAuthConfig {
    pub fn profile_for(&self, client_id: &str, client_name: &str) -> String {
        self.client_profiles
            .get(client_id)
            .or_else(|| self.client_profiles.get(client_name))
            .cloned()
            .unwrap_or_else(|| crate::service::DEFAULT_PROFILE.to_string())
    }
}

/// A client as the authorization server knows it: registered, or described by its
/// metadata document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
    pub secret_hash: Option<String>,
    pub grant_types: Vec<String>,
    /// Described by a Client ID Metadata Document (its `client_id` is that URL).
    pub metadata_document: bool,
}

impl Client {
    /// The registered redirect URI `uri` matches, if any.
    pub fn redirect_uri_for(&self, uri: &str) -> Option<&str> {
        self.redirect_uris
            .iter()
            .find(|r| redirect_uri::matches(r, uri))
            .map(String::as_str)
    }

    pub fn may_refresh(&self) -> bool {
        self.grant_types.iter().any(|g| g == "refresh_token")
    }
}

/// A client name as shown to people: control and formatting characters dropped, at most
/// 100 characters.
pub fn clean_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control() && !matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .take(100)
        .collect::<String>()
        .trim()
        .to_string()
}

/// The issuer identifier: the public URL without a trailing slash.
pub fn issuer(info: &crate::rest::ServerInfo) -> String {
    info.public_url.trim_end_matches('/').to_string()
}

/// The one resource tokens are issued for (RFC 8707): the public `/mcp` URL.
pub fn mcp_resource(info: &crate::rest::ServerInfo) -> String {
    format!("{}/mcp", issuer(info))
}

/// The authorization server's endpoints and metadata documents.
pub fn routes() -> Router<AppState> {
    let documents = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata::document),
        )
        .route("/.well-known/openid-configuration", get(metadata::document));
    let endpoints = Router::new()
        .route("/oauth/register", post(register::register))
        .route(
            "/oauth/authorize",
            get(authorize::start).post(authorize::decide),
        )
        .route("/oauth/token", post(token::token))
        .route("/oauth/revoke", post(token::revoke))
        .layer(DefaultBodyLimit::max(crate::web::FORM_LIMIT_BYTES));
    documents.merge(endpoints)
}
