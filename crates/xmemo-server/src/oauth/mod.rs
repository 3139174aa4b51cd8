//! The OAuth 2.1 authorization server MCP hosts connect through (SPEC §7): metadata
//! (RFC 8414), client registration (Client ID Metadata Documents and RFC 7591), the
//! authorization endpoint with its consent page, the token and revocation endpoints. The
//! issuer is the public URL; tokens are for the `/mcp` resource only.

use std::collections::BTreeMap;

/// OAuth settings an operator controls.
#[derive(Debug, Clone, Default)]
pub struct OAuthConfig {
    /// The MCP client profile a client's tokens connect as, by client id (a registered id or
    /// a metadata-document URL) or, failing that, by client name; unlisted clients get
    /// `ordinary-full`.
    pub client_profiles: BTreeMap<String, String>,
}
