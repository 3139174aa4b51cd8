//! The fixed vocabulary of the authorization server and the settings an operator controls:
//! the scopes there are, how long codes and tokens live, the prefixes of the secrets it
//! issues, and which MCP profile a client's tokens connect as.

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
