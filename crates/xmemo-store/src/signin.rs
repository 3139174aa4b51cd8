//! Rows of sign-in (passwords, server-side sessions) and of the OAuth 2.1 authorization
//! server (registered clients, grants, codes, tokens). Secrets never appear here in clear:
//! only their hashes, which are not serialised either.

use serde::{Deserialize, Serialize};

/// A signed-in person's session. The cookie value is a secret; the store knows only its
/// SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    pub session_hash: String,
    pub account_id: String,
    pub created_at: String,
    pub idle_expires_at: String,
    pub absolute_expires_at: String,
}

/// An account's password hash, as `xmemo admin copy` moves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordRow {
    pub account_id: String,
    pub password_hash: String,
    pub updated_at: String,
}

/// A session to create: every field given by the caller (the service decides lifetimes).
pub type NewWebSession = WebSession;

/// A client registered through dynamic client registration (RFC 7591).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthClient {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub token_endpoint_auth_method: String,
    #[serde(skip)]
    pub secret_hash: Option<String>,
    /// The registration metadata as accepted (client_uri, logo_uri, grant_types…).
    pub metadata: serde_json::Value,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub struct NewOAuthClient {
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: String,
    pub secret_hash: Option<String>,
    pub metadata: serde_json::Value,
    /// Bounds of the registering transaction (none: unbounded).
    pub bounds: ClientBounds,
}

/// What a registration must respect, in its own transaction: clients registered before
/// `expire_unused_before` that never got a grant are deleted first, then the new one must
/// fit under `max_clients`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientBounds {
    pub max_clients: Option<u64>,
    pub expire_unused_before: Option<String>,
}

/// One approved consent: an account let a client act with `scopes` on `resource`. Its
/// codes and tokens all hang off it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthGrant {
    pub grant_id: String,
    pub account_id: String,
    /// A registered client's id, or the URL of a Client ID Metadata Document.
    pub client_id: String,
    /// The client's name when the person approved it.
    pub client_name: String,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
    /// Why it was revoked: `revoked` (by the person or the client), `code_reused`,
    /// `refresh_token_reused`.
    pub revoked_reason: Option<String>,
}

/// A grant to create with its first authorization code.
#[derive(Debug, Clone)]
pub struct NewOAuthGrant {
    pub account_id: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub code: NewOAuthCode,
}

#[derive(Debug, Clone)]
pub struct NewOAuthCode {
    pub code_hash: String,
    /// The PKCE S256 challenge (base64url of the verifier's SHA-256).
    pub code_challenge: String,
    pub expires_at: String,
}

/// An authorization code with the grant it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthCode {
    pub code_hash: String,
    pub code_challenge: String,
    pub expires_at: String,
    pub used_at: Option<String>,
    pub grant: OAuthGrant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OAuthTokenKind {
    Access,
    Refresh,
}

impl OAuthTokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Access => "access",
            Self::Refresh => "refresh",
        }
    }
}

impl std::str::FromStr for OAuthTokenKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "access" => Ok(Self::Access),
            "refresh" => Ok(Self::Refresh),
            other => Err(format!("unknown token kind `{other}`")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct NewOAuthToken {
    pub token_hash: String,
    pub kind: OAuthTokenKind,
    pub scopes: Vec<String>,
    pub expires_at: String,
}

/// A token with the grant it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthToken {
    pub token_hash: String,
    pub kind: OAuthTokenKind,
    pub scopes: Vec<String>,
    pub created_at: String,
    pub expires_at: String,
    /// When a refresh token was exchanged for its successor.
    pub rotated_at: Option<String>,
    pub revoked_at: Option<String>,
    pub grant: OAuthGrant,
}

/// What exchanging a single-use secret (a code, a refresh token) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exchange {
    /// It was unused: it is spent now and the new tokens are stored.
    Issued,
    /// It had been spent already (or was spent concurrently): nothing was stored. The caller
    /// revokes the grant.
    AlreadyUsed,
}
