//! Outbound fetches of skill archives for repository import (SPEC §6): which URLs are
//! accepted, where each is downloaded from, and the hygiene every download obeys. An
//! outbound adapter, not a use-case: the service (`service/packages.rs`) decides who may
//! import what, then calls [`fetch`].
//!
//! - `url.rs`: the URL grammar (GitHub / ClawHub skill URLs → archive download URLs);
//! - `policy.rs`: which addresses may be connected to, and the guarded DNS resolver;
//! - `transfer.rs`: the HTTP client, the redirect loop and the bounded streaming body;
//! - `archive.rs`: the commit a downloaded GitHub archive names.
//!
//! Accepted URLs (parsed only; never fetched themselves):
//! - GitHub: `https://github.com/OWNER/REPO` (optionally `.git`), `…/tree/REF`,
//!   `…/tree/REF/PATH` (a skill folder inside a monorepo) and `…/blob/REF/PATH/SKILL.md`.
//!   Downloaded as `{github_api_base}/repos/OWNER/REPO/zipball[/REF]`. A REF containing `/`
//!   cannot be told apart from the PATH in a tree URL; the first segment is taken as the REF.
//! - ClawHub: `https://clawhub.ai/OWNER/SLUG` or `https://clawhub.ai/skills/SLUG`, with an
//!   optional `?version=`. Downloaded as `{clawhub_base}/api/v1/download?slug=SLUG[&version=V]`,
//!   which answers the skill's files as a ZIP.
//!
//! Hygiene ([`FetchConfig`]): `https` only unless `allow_http`; the scheme and the target
//! address are checked on the first URL *and on every redirect hop* (redirects are followed
//! here, one by one, at most `max_redirects`); host names are resolved by the guarded
//! resolver of `policy.rs`, which drops loopback, private, link-local, unique-local, CGNAT,
//! multicast, unspecified and other special-purpose addresses unless allowlisted — the HTTP
//! client connects only to addresses it returned, so DNS rebinding cannot slip past the
//! check — and IP-literal hosts are checked before any request; no proxies; the body is
//! streamed with a running byte count and cut at `max_bytes` whatever `Content-Length` says;
//! one deadline (`timeout`) covers resolution, connection, redirects and the body.

mod archive;
mod policy;
mod transfer;
mod url;

pub use archive::archive_commit;
pub use transfer::{Fetched, Fetcher, Limits, fetch};
pub use url::{RemoteSkill, parse_skill_url};

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Where archives come from and the limits of every outbound fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// GitHub REST API base; archives are `{base}/repos/{owner}/{repo}/zipball/{ref}`.
    pub github_api_base: String,
    /// ClawHub base; archives are `{base}/api/v1/download?slug={slug}`.
    pub clawhub_base: String,
    /// Allow plain `http://` (initial URL and redirects). Off by default; tests turn it on.
    pub allow_http: bool,
    /// Host names (exact, case-insensitive; IP literals too) exempt from the address check.
    pub allow_hosts: Vec<String>,
    /// Address ranges in CIDR notation (`127.0.0.0/8`, `::1/128`, `10.1.2.3`) that may be
    /// connected to even though they are private/loopback/link-local.
    pub allow_private_cidrs: Vec<String>,
    /// Redirects followed per fetch.
    pub max_redirects: usize,
    /// Largest archive downloaded, in bytes.
    pub max_bytes: u64,
    /// Deadline of one whole fetch (resolution, connection, redirects, body), in seconds.
    #[serde(rename = "timeout_seconds", with = "seconds")]
    pub timeout: Duration,
    /// PEM files of extra root certificates trusted besides the system's, for hosts with a
    /// private CA. Tests use it with a self-signed one; empty (the default) trusts the
    /// system's roots only.
    pub extra_root_certificates: Vec<std::path::PathBuf>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            github_api_base: "https://api.github.com".into(),
            clawhub_base: "https://clawhub.ai".into(),
            allow_http: false,
            allow_hosts: Vec::new(),
            allow_private_cidrs: Vec::new(),
            max_redirects: 3,
            max_bytes: 32 << 20,
            timeout: Duration::from_secs(30),
            extra_root_certificates: Vec::new(),
        }
    }
}

mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs(u64::deserialize(d)?))
    }
}

impl FetchConfig {
    /// Checks the allowlists and bases; `xmemo serve` can call this at start-up.
    pub fn validate(&self) -> Result<(), String> {
        policy::AddressPolicy::from_config(self)?;
        for (name, base) in [
            ("github_api_base", &self.github_api_base),
            ("clawhub_base", &self.clawhub_base),
        ] {
            let url = reqwest::Url::parse(base).map_err(|e| format!("{name} `{base}`: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(format!(
                    "{name} `{base}` must be an http(s) URL with a host"
                ));
            }
        }
        if self.max_bytes == 0 || self.timeout.is_zero() {
            return Err("max_bytes and timeout_seconds must be positive".into());
        }
        for path in &self.extra_root_certificates {
            let pem = std::fs::read(path)
                .map_err(|e| format!("extra_root_certificates: {}: {e}", path.display()))?;
            reqwest::Certificate::from_pem(&pem)
                .map_err(|e| format!("extra_root_certificates: {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

/// Why a fetch failed; mapped to SPEC codes in `error.rs`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// Not a URL this server imports from, or a malformed one.
    #[error("{0}")]
    BadUrl(String),
    /// The target is refused by the hygiene rules (scheme, address); nothing was sent to it.
    #[error("refused to fetch {url}: {reason}")]
    Refused { url: String, reason: String },
    /// The host answered 404/410.
    #[error("{what} was not found ({url} answered {status})")]
    NotFound {
        url: String,
        what: String,
        status: u16,
    },
    /// The archive is larger than `max_bytes` (stopped while streaming, or announced).
    #[error("the archive at {url} is larger than {limit} bytes (the import download limit)")]
    TooLarge { url: String, limit: u64 },
    #[error("{url} redirected more than {limit} times")]
    TooManyRedirects { url: String, limit: usize },
    /// The host refused the request (4xx other than 404/410/401/403/408/429).
    #[error("{url} refused the download with HTTP {status}")]
    Rejected { url: String, status: u16 },
    /// The host failed or throttled (5xx, 401/403/408/429, a redirect without Location).
    #[error("{url} could not serve the archive (HTTP {status}); try again later")]
    Upstream { url: String, status: u16 },
    #[error("fetching {url} took longer than {seconds} s")]
    Timeout { url: String, seconds: u64 },
    #[error("cannot fetch {url}: {message}")]
    Network { url: String, message: String },
    /// The operator's fetch configuration is invalid.
    #[error("invalid fetch configuration: {0}")]
    Config(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_a_file() {
        let c: FetchConfig = serde_json::from_str(
            r#"{"allow_http": true, "allow_private_cidrs": ["10.1.0.0/16"], "timeout_seconds": 5}"#,
        )
        .unwrap();
        assert!(c.allow_http);
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert_eq!(c.max_redirects, 3);
        assert_eq!(c.github_api_base, "https://api.github.com");
        assert!(c.validate().is_ok());
        assert!(serde_json::from_str::<FetchConfig>(r#"{"timeout": 5}"#).is_err());
        let bad = FetchConfig {
            clawhub_base: "ftp://x".into(),
            ..FetchConfig::default()
        };
        assert!(bad.validate().is_err());
        let missing_root = FetchConfig {
            extra_root_certificates: vec!["/nonexistent/ca.pem".into()],
            ..FetchConfig::default()
        };
        assert!(
            missing_root
                .validate()
                .unwrap_err()
                .contains("/nonexistent/ca.pem")
        );
    }
}
