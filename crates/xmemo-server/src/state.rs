//! What every handler is given: the service and the facts about this server that answers
//! need (its public URL and the addresses derived from it, the MCP settings, the trusted
//! proxies). Below the transports and the HTTP plumbing, above the service.

use crate::service::Service;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Path of the protected-resource metadata document (RFC 9728 §3).
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";
/// RFC 8414 metadata of the authorization server whose issuer is the public URL.
pub const AUTHORIZATION_SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub info: Arc<ServerInfo>,
}

/// Facts about this server that responses need.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// Public base URL, e.g. `http://127.0.0.1:8420` (used in metadata documents).
    pub public_url: String,
    pub version: &'static str,
    /// MCP endpoint settings (client-profile contract, allowed hosts/origins, execute profiles).
    pub mcp: McpConfig,
    /// Peers whose `X-Forwarded-For` names the client (reverse proxies); empty: none.
    pub trusted_proxies: Vec<IpAddr>,
}

impl ServerInfo {
    /// The public URL without a trailing slash: every address below starts with it. It is
    /// also the OAuth issuer identifier.
    pub fn base_url(&self) -> &str {
        self.public_url.trim_end_matches('/')
    }

    /// The issuer identifier of the authorization server (RFC 8414): the public URL.
    pub fn issuer(&self) -> String {
        self.base_url().to_string()
    }

    /// The one resource OAuth tokens are issued for (RFC 8707): the public `/mcp` URL.
    pub fn mcp_resource(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// Where the protected-resource metadata of `/mcp` is served (the address a 401 names).
    pub fn resource_metadata_url(&self) -> String {
        format!("{}{PROTECTED_RESOURCE_PATH}", self.base_url())
    }
}

/// MCP settings an operator controls (`xmemo serve` flags / env / `xmemo.toml`). The
/// contract they name is loaded by `mcp::profiles` (`McpConfig::profiles`).
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Contract file to enforce instead of the embedded `config/mcp-documentation-contract.json`.
    pub contract_path: Option<PathBuf>,
    /// `Host` values accepted on `/mcp` (`host` or `host:port`); empty = loopback only; `*` =
    /// any (turns DNS-rebinding protection off). The public URL's host is always accepted.
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides those whose host is an allowed host
    /// (`https://app.example.com`).
    pub allowed_origins: Vec<String>,
    /// Profiles in which `execute_cloud_skill` is exposed (none by default).
    pub execute_profiles: Vec<String>,
    /// Serve the conformance suite's diagnostic tools on `/mcp/conformance` (tests only;
    /// `XMEMO_MCP_CONFORMANCE_FIXTURES=1`). They touch no data.
    pub conformance_fixtures: bool,
    /// Send every request through rmcp, also the read-only tool calls the direct path answers
    /// itself (`direct`): how the tests compare the two paths. Off in production.
    pub rmcp_only: bool,
}
