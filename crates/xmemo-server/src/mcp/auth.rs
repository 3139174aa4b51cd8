//! HTTP-level guards in front of the MCP endpoint: DNS-rebinding protection (Host / Origin),
//! authentication (API keys as for REST, and OAuth access tokens issued for this `/mcp`),
//! the RFC 9728 protected-resource metadata, the 401 that points to it and the 403
//! `insufficient_scope` challenge of an OAuth token that lacks a scope.

use super::wire;
use crate::error::ServiceError;
use crate::http::credential;
use crate::service::Audience;
use crate::service::oauth::SCOPES;
use crate::state::{AppState, ServerInfo};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::json;

use crate::auth::Principal;

/// Hosts accepted when the operator configures none (rmcp's loopback default).
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Host/Origin allow-lists. An empty host list means "any host" (protection off, only when the
/// operator configured `*`).
#[derive(Debug, Clone)]
pub struct HostGuard {
    hosts: Vec<Authority>,
    origins: Vec<String>,
    any_host: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

fn parse_authority(text: &str) -> Option<Authority> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match text.parse::<axum::http::uri::Authority>() {
        Ok(a) => Some(Authority {
            host: normalise_host(a.host()),
            port: a.port_u16(),
        }),
        // A bare IPv6 address (`::1`) is not an authority; take it as a host.
        Err(_) => Some(Authority {
            host: normalise_host(text),
            port: None,
        }),
    }
}

fn normalise_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// The host part of a URL such as `https://memory.example.com:8443/base`.
pub fn url_authority(url: &str) -> Option<String> {
    let rest = url.split_once("://").map(|(_, r)| r)?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    (!authority.is_empty()).then(|| authority.to_string())
}

impl HostGuard {
    /// `allowed_hosts` empty → loopback only; an entry `*` → any host. The public URL's host is
    /// always accepted (clients reach the server there by definition).
    pub fn new(allowed_hosts: &[String], allowed_origins: &[String], public_url: &str) -> Self {
        let any_host = allowed_hosts.iter().any(|h| h.trim() == "*");
        let mut entries: Vec<String> = if allowed_hosts.iter().all(|h| h.trim().is_empty()) {
            LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect()
        } else {
            allowed_hosts.to_vec()
        };
        if let Some(public) = url_authority(public_url) {
            entries.push(public);
        }
        Self {
            hosts: entries.iter().filter_map(|h| parse_authority(h)).collect(),
            origins: allowed_origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
            any_host,
        }
    }

    /// The list handed to rmcp's own check (empty = accept any).
    pub fn rmcp_allowed_hosts(&self) -> Vec<String> {
        if self.any_host {
            return Vec::new();
        }
        self.hosts
            .iter()
            .map(|a| match (a.host.contains(':'), a.port) {
                (true, Some(p)) => format!("[{}]:{p}", a.host),
                (true, None) => a.host.clone(),
                (false, Some(p)) => format!("{}:{p}", a.host),
                (false, None) => a.host.clone(),
            })
            .collect()
    }

    fn host_allowed(&self, authority: &Authority) -> bool {
        self.any_host
            || self.hosts.iter().any(|allowed| {
                allowed.host == authority.host
                    && allowed.port.is_none_or(|p| authority.port == Some(p))
            })
    }

    /// 403 when the Host (or a present Origin) is not allowed: a page on another site that
    /// resolves its name to this server must not reach it.
    #[allow(clippy::result_large_err)]
    pub fn check(&self, parts: &Parts) -> Result<(), Response> {
        let host = match parts.headers.get(header::HOST) {
            Some(v) => v.to_str().ok().and_then(parse_authority),
            None => parts
                .uri
                .authority()
                .and_then(|a| parse_authority(a.as_str())),
        };
        let Some(host) = host else {
            return Err(forbidden("missing or malformed Host header"));
        };
        if !self.host_allowed(&host) {
            tracing::warn!(host = %host.host, "MCP request refused: Host not allowed (DNS rebinding protection)");
            return Err(forbidden(
                "this Host is not allowed; the operator can add it with --allowed-hosts / XMEMO_ALLOWED_HOSTS",
            ));
        }
        if let Some(origin) = parts.headers.get(header::ORIGIN) {
            let text = origin.to_str().unwrap_or("").trim().trim_end_matches('/');
            let lower = text.to_ascii_lowercase();
            let allowed = self.origins.contains(&lower)
                || url_authority(&lower)
                    .and_then(|a| parse_authority(&a))
                    .is_some_and(|a| self.host_allowed(&a));
            if !allowed {
                tracing::warn!(origin = %text, "MCP request refused: Origin not allowed");
                return Err(forbidden(
                    "this Origin is not allowed; the operator can add it with --allowed-origins / XMEMO_ALLOWED_ORIGINS",
                ));
            }
        }
        Ok(())
    }
}

fn forbidden(message: &str) -> Response {
    wire::rejection(
        StatusCode::FORBIDDEN,
        &ServiceError::PermissionDenied(message.to_string()),
    )
}

/// RFC 9728 protected-resource metadata for `/mcp`: this server is its own authorization
/// server (the issuer is the public URL).
pub fn protected_resource_document(info: &ServerInfo) -> serde_json::Value {
    json!({
        "resource": info.mcp_resource(),
        "resource_name": "xmemo",
        "authorization_servers": [info.issuer()],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
    })
}

/// Authenticates an API key as REST does, or an OAuth access token issued for this
/// server's `/mcp` (with the attribution headers either way).
#[allow(clippy::result_large_err)]
pub async fn authenticate(parts: &mut Parts, state: &AppState) -> Result<Principal, Response> {
    let presented = parts.headers.contains_key(header::AUTHORIZATION)
        || parts.headers.contains_key("x-api-key");
    let audience = Audience::Mcp {
        resource: state.info.mcp_resource(),
    };
    match credential::authenticate(parts, state, &audience).await {
        Ok(principal) => Ok(principal),
        Err(rejection) => {
            let err = rejection.0;
            if matches!(err, ServiceError::AuthRequired(_)) {
                Err(unauthorized(&err, &state.info, presented))
            } else {
                Err(wire::spec_rejection(&err))
            }
        }
    }
}

/// 401 with a JSON-RPC error (the SPEC error object in `data`) and a `WWW-Authenticate`
/// challenge naming the metadata document, so OAuth-capable clients can discover how to get
/// a token.
pub fn unauthorized(err: &ServiceError, info: &ServerInfo, presented: bool) -> Response {
    let mut challenge = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{}\"",
        info.resource_metadata_url(),
        SCOPES.join(" ")
    );
    if presented {
        challenge.push_str(", error=\"invalid_token\"");
    }
    let mut response = wire::rejection(StatusCode::UNAUTHORIZED, err);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// 403 for an OAuth token without the scope an operation needs (RFC 6750 §3.1), so the
/// client can ask the person for it (step-up authorization).
pub fn insufficient_scope(needed: xmemo_core::Scope, info: &ServerInfo) -> Response {
    let err = ServiceError::PermissionDenied(format!(
        "this token lacks the `{needed}` scope; authorize again with it"
    ));
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"this operation needs {needed}\"",
        SCOPES.join(" "),
        info.resource_metadata_url(),
    );
    // Like every /mcp answer, a JSON-RPC error carrying the SPEC object.
    let mut response = wire::rejection(StatusCode::FORBIDDEN, &err);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(host: &str, origin: Option<&str>) -> Parts {
        let mut b = Request::builder().uri("/mcp").header(header::HOST, host);
        if let Some(o) = origin {
            b = b.header(header::ORIGIN, o);
        }
        b.body(()).map(|r| r.into_parts().0).expect("request")
    }

    #[test]
    fn loopback_by_default_plus_the_public_host() {
        let g = HostGuard::new(&[], &[], "https://memory.example.com");
        assert!(g.check(&parts("localhost:8420", None)).is_ok());
        assert!(g.check(&parts("127.0.0.1", None)).is_ok());
        assert!(g.check(&parts("[::1]:9", None)).is_ok());
        assert!(g.check(&parts("memory.example.com", None)).is_ok());
        assert!(g.check(&parts("evil.example.com", None)).is_err());
        assert!(
            g.check(&parts("localhost", Some("http://evil.example.com")))
                .is_err()
        );
        assert!(
            g.check(&parts("localhost", Some("http://localhost:3000")))
                .is_ok()
        );
    }

    #[test]
    fn configured_hosts_ports_and_wildcard() {
        let g = HostGuard::new(
            &["mem.internal:8443".into()],
            &["https://app.example".into()],
            "",
        );
        assert!(g.check(&parts("mem.internal:8443", None)).is_ok());
        assert!(g.check(&parts("mem.internal:80", None)).is_err());
        assert!(g.check(&parts("localhost", None)).is_err());
        assert!(
            g.check(&parts("mem.internal:8443", Some("https://app.example")))
                .is_ok()
        );
        let any = HostGuard::new(&["*".into()], &[], "");
        assert!(any.check(&parts("whatever.example", None)).is_ok());
        assert!(any.rmcp_allowed_hosts().is_empty());
    }

    #[test]
    fn authority_of_urls() {
        assert_eq!(
            url_authority("http://127.0.0.1:8420/x").as_deref(),
            Some("127.0.0.1:8420")
        );
        assert_eq!(
            url_authority("https://u@h.example").as_deref(),
            Some("h.example")
        );
        assert_eq!(url_authority("nope"), None);
    }
}
