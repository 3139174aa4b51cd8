//! Outbound fetches of skill archives for repository import (SPEC §6): which URLs are
//! accepted, where each is downloaded from, and the hygiene every download obeys.
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
//! here, one by one, at most `max_redirects`); host names are resolved by
//! [`GuardedResolver`], which drops loopback, private, link-local, unique-local, CGNAT,
//! multicast, unspecified and other special-purpose addresses unless allowlisted — the HTTP
//! client connects only to addresses it returned, so DNS rebinding cannot slip past the
//! check — and IP-literal hosts are checked before any request; no proxies; the body is
//! streamed with a running byte count and cut at `max_bytes` whatever `Content-Length` says;
//! one deadline (`timeout`) covers resolution, connection, redirects and the body.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
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
        AddressPolicy::from_config(self)?;
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

// ---------------------------------------------------------------------------------------
// Skill URLs
// ---------------------------------------------------------------------------------------

/// A skill URL the server knows how to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteSkill {
    GitHub {
        owner: String,
        repo: String,
        /// Branch, tag or commit; `None` = the default branch.
        git_ref: Option<String>,
        /// Folder of the skill inside the repository; `None` = the repository root.
        path: Option<String>,
    },
    ClawHub {
        owner: Option<String>,
        slug: String,
        version: Option<String>,
    },
}

const GITHUB_HOSTS: &[&str] = &["github.com", "www.github.com"];
const CLAWHUB_HOSTS: &[&str] = &["clawhub.ai", "www.clawhub.ai"];

/// Parses a GitHub or ClawHub skill URL.
pub fn parse_skill_url(text: &str) -> Result<RemoteSkill, FetchError> {
    let text = text.trim();
    if text.is_empty() || text.len() > 2048 {
        return Err(FetchError::BadUrl(
            "`url` must be a GitHub or ClawHub URL of at most 2048 characters".into(),
        ));
    }
    let url = reqwest::Url::parse(text)
        .map_err(|e| FetchError::BadUrl(format!("`{text}` is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(FetchError::BadUrl(format!(
            "`{text}`: only https:// GitHub and ClawHub URLs can be imported"
        )));
    }
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let segments: Vec<String> = url
        .path_segments()
        .map(|s| s.filter(|p| !p.is_empty()).map(decode_segment).collect())
        .unwrap_or_default();
    if GITHUB_HOSTS.contains(&host.as_str()) {
        parse_github(text, &segments)
    } else if CLAWHUB_HOSTS.contains(&host.as_str()) {
        parse_clawhub(text, &url, &segments)
    } else {
        Err(FetchError::BadUrl(format!(
            "`{text}` is not a supported source: give https://github.com/OWNER/REPO[/tree/REF/PATH] \
             or https://clawhub.ai/OWNER/SKILL (or upload a ZIP / SKILL.md)"
        )))
    }
}

fn decode_segment(s: &str) -> String {
    // Percent-decoding cannot fail; invalid UTF-8 becomes U+FFFD and is refused below.
    let bytes: Vec<u8> = percent_decode(s.as_bytes());
    String::from_utf8_lossy(&bytes).into_owned()
}

fn percent_decode(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%'
            && let (Some(h), Some(l)) = (input.get(i + 1), input.get(i + 2))
            && let (Some(h), Some(l)) = ((*h as char).to_digit(16), (*l as char).to_digit(16))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(input[i]);
        i += 1;
    }
    out
}

fn name_ok(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_github(text: &str, segments: &[String]) -> Result<RemoteSkill, FetchError> {
    let bad = |why: &str| FetchError::BadUrl(format!("`{text}`: {why}"));
    let (owner, repo) = match segments {
        [owner, repo, ..] => (owner.as_str(), repo.trim_end_matches(".git")),
        _ => {
            return Err(bad(
                "a GitHub URL must name a repository: https://github.com/OWNER/REPO",
            ));
        }
    };
    if !name_ok(owner, 39) || !name_ok(repo, 100) {
        return Err(bad("not a valid GitHub owner/repository name"));
    }
    let (git_ref, mut path): (Option<String>, Vec<String>) = match &segments[2..] {
        [] => (None, Vec::new()),
        [kind, git_ref, rest @ ..] if kind == "tree" || kind == "blob" => {
            let mut rest = rest.to_vec();
            if kind == "blob" {
                // …/blob/REF/dir/SKILL.md → the folder holding it.
                if rest
                    .last()
                    .is_some_and(|f| f.eq_ignore_ascii_case(xmemo_core::package::SKILL_MD))
                {
                    rest.pop();
                } else {
                    return Err(bad(
                        "a /blob/ URL must point at a SKILL.md; use /tree/REF/PATH for a folder",
                    ));
                }
            }
            (Some(git_ref.clone()), rest)
        }
        _ => {
            return Err(bad(
                "use https://github.com/OWNER/REPO, …/tree/REF or …/tree/REF/PATH",
            ));
        }
    };
    if let Some(r) = &git_ref
        && (r.is_empty()
            || r.len() > 255
            || r.contains("..")
            || r.chars()
                .any(|c| c.is_control() || c.is_whitespace() || c == '\u{fffd}'))
    {
        return Err(bad("not a valid git ref"));
    }
    path.retain(|s| !s.is_empty());
    let path = if path.is_empty() {
        None
    } else {
        let joined = path.join("/");
        if let Some(reason) = xmemo_core::package::unsafe_path_reason(&joined) {
            return Err(bad(&format!("unsafe folder path `{joined}`: {reason}")));
        }
        Some(joined)
    };
    Ok(RemoteSkill::GitHub {
        owner: owner.to_string(),
        repo: repo.to_string(),
        git_ref,
        path,
    })
}

fn parse_clawhub(
    text: &str,
    url: &reqwest::Url,
    segments: &[String],
) -> Result<RemoteSkill, FetchError> {
    let bad = |why: &str| FetchError::BadUrl(format!("`{text}`: {why}"));
    let (owner, slug) = match segments {
        [first, slug] if first == "skills" => (None, slug.clone()),
        [owner, slug] => (Some(owner.clone()), slug.clone()),
        _ => {
            return Err(bad(
                "a ClawHub URL looks like https://clawhub.ai/OWNER/SKILL or https://clawhub.ai/skills/SKILL",
            ));
        }
    };
    if !name_ok(&slug, 100) || owner.as_deref().is_some_and(|o| !name_ok(o, 100)) {
        return Err(bad("not a valid ClawHub owner/skill name"));
    }
    let version = url
        .query_pairs()
        .find(|(k, _)| k == "version")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty());
    if version.as_deref().is_some_and(|v| !name_ok(v, 64)) {
        return Err(bad("not a valid version"));
    }
    Ok(RemoteSkill::ClawHub {
        owner,
        slug,
        version,
    })
}

impl RemoteSkill {
    /// `github` or `clawhub`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::GitHub { .. } => "github",
            Self::ClawHub { .. } => "clawhub",
        }
    }

    /// The archive URL on the configured host.
    pub fn download_url(&self, config: &FetchConfig) -> Result<reqwest::Url, FetchError> {
        let (base, name) = match self {
            Self::GitHub { .. } => (&config.github_api_base, "github_api_base"),
            Self::ClawHub { .. } => (&config.clawhub_base, "clawhub_base"),
        };
        let mut url = reqwest::Url::parse(base)
            .map_err(|e| FetchError::Config(format!("{name} `{base}`: {e}")))?;
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|()| FetchError::Config(format!("{name} `{base}` cannot be a base")))?;
            path.pop_if_empty();
            match self {
                Self::GitHub {
                    owner,
                    repo,
                    git_ref,
                    ..
                } => {
                    path.extend(["repos", owner.as_str(), repo.as_str(), "zipball"]);
                    if let Some(r) = git_ref {
                        path.push(r);
                    }
                }
                Self::ClawHub { .. } => {
                    path.extend(["api", "v1", "download"]);
                }
            }
        }
        if let Self::ClawHub { slug, version, .. } = self {
            let mut q = url.query_pairs_mut();
            q.append_pair("slug", slug);
            if let Some(v) = version {
                q.append_pair("version", v);
            }
        }
        Ok(url)
    }
}

// ---------------------------------------------------------------------------------------
// Address policy
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let net: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| format!("`{text}` is not an IP address or CIDR range"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{text}`: prefix must be 0–{max}"))?,
        };
        Ok(Self { net, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, canonical(ip)) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(
                u128::from(u32::from(n)) << 96,
                u128::from(u32::from(a)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(u128::from(n), u128::from(a), self.prefix),
            _ => false,
        }
    }
}

fn prefix_eq(a: u128, b: u128, prefix: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - u32::from(prefix.min(128)));
    a & mask == b & mask
}

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are judged as the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Why an address must not be fetched from, or `None` for an ordinary public address.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_unspecified() || a == 0 => "an unspecified / \"this network\" address",
        (127, ..) => "a loopback address",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "a private address",
        (169, 254, _) => "a link-local address",
        (100, 64..=127, _) => "a carrier-grade NAT address",
        (192, 0, 0) => "an IETF protocol assignment address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        (224..=239, ..) => "a multicast address",
        (240..=255, ..) => "a reserved or broadcast address",
        _ => return None,
    })
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded_v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if s[0] & 0xffc0 == 0xfe80 {
        return Some("a link-local address");
    }
    if s[0] & 0xffc0 == 0xfec0 {
        return Some("a site-local address");
    }
    if s[0] & 0xfe00 == 0xfc00 {
        return Some("a unique-local address");
    }
    if s[0] & 0xff00 == 0xff00 {
        return Some("a multicast address");
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Some("a documentation address");
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some("a Teredo tunnel address");
    }
    if s[..6] == [0; 6] {
        return Some("an IPv4-compatible (deprecated) address");
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) embed an IPv4 address: judge that one.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return blocked_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return blocked_v4(embedded_v4(s[1], s[2]));
    }
    None
}

/// The configured exceptions to [`blocked_reason`].
#[derive(Debug, Clone, Default)]
pub(crate) struct AddressPolicy {
    hosts: Vec<String>,
    cidrs: Vec<Cidr>,
}

impl AddressPolicy {
    pub(crate) fn from_config(config: &FetchConfig) -> Result<Self, String> {
        Ok(Self {
            hosts: config
                .allow_hosts
                .iter()
                .map(|h| {
                    h.trim()
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_ascii_lowercase()
                })
                .filter(|h| !h.is_empty())
                .collect(),
            cidrs: config
                .allow_private_cidrs
                .iter()
                .map(|c| Cidr::parse(c))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("allow_private_cidrs: {e}"))?,
        })
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    /// `Err(reason)` when `ip` (reached through `host`) may not be connected to.
    fn check(&self, host: &str, ip: IpAddr) -> Result<(), &'static str> {
        if self.host_allowed(host) || self.cidrs.iter().any(|c| c.contains(ip)) {
            return Ok(());
        }
        match blocked_reason(ip) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// Resolves `host` and keeps only the addresses that may be connected to.
    async fn resolve(&self, host: &str) -> Result<Vec<SocketAddr>, FetchError> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
            .await
            .map_err(|e| FetchError::Network {
                url: host.to_string(),
                message: format!("cannot resolve `{host}`: {e}"),
            })?
            .collect();
        let mut kept = Vec::new();
        let mut refused = Vec::new();
        for addr in found {
            match self.check(host, addr.ip()) {
                Ok(()) => kept.push(addr),
                Err(reason) => refused.push(format!("{} ({reason})", addr.ip())),
            }
        }
        if kept.is_empty() {
            if refused.is_empty() {
                return Err(FetchError::Network {
                    url: host.to_string(),
                    message: format!("`{host}` has no address"),
                });
            }
            return Err(FetchError::Refused {
                url: host.to_string(),
                reason: format!(
                    "`{host}` resolves only to addresses that are never fetched from: {} \
                     (an operator can allowlist them in the fetch configuration)",
                    refused.join(", ")
                ),
            });
        }
        Ok(kept)
    }
}

/// The HTTP client's DNS resolver: the same check as the pre-flight one, at connection
/// time, so a name that re-resolves to a private address (DNS rebinding) is refused too.
struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = policy
                .resolve(&host)
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

// ---------------------------------------------------------------------------------------
// Fetch
// ---------------------------------------------------------------------------------------

/// A downloaded archive.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    /// The URL that served the bytes (after redirects).
    pub final_url: String,
    /// Every URL requested, in order.
    pub hops: Vec<String>,
    /// Lowercase hex SHA-256 of `bytes`.
    pub sha256: String,
}

/// The address of an IP-literal host (`127.0.0.1`, `[::1]`), as the URL parser normalised it.
fn ip_literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Checks one hop's scheme and, for IP-literal hosts, its address. Host names are checked
/// when they are resolved.
fn check_target(
    url: &reqwest::Url,
    policy: &AddressPolicy,
    config: &FetchConfig,
) -> Result<(), FetchError> {
    let refused = |reason: String| FetchError::Refused {
        url: url.to_string(),
        reason,
    };
    match url.scheme() {
        "https" => {}
        "http" if config.allow_http => {}
        "http" => {
            return Err(refused(
                "only https:// is fetched (plain http is allowed only when the operator enables allow_http)"
                    .into(),
            ));
        }
        other => return Err(refused(format!("the scheme `{other}` is never fetched"))),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused("URLs with credentials are never fetched".into()));
    }
    let host = url
        .host_str()
        .ok_or_else(|| refused("the URL has no host".into()))?;
    let Some(ip) = ip_literal(host) else {
        return Ok(());
    };
    policy
        .check(host, ip)
        .map_err(|reason| refused(format!("{ip} is {reason}")))
}

fn client(config: &FetchConfig, policy: Arc<AddressPolicy>) -> Result<reqwest::Client, FetchError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .https_only(!config.allow_http)
        .timeout(config.timeout)
        .connect_timeout(config.timeout.min(Duration::from_secs(10)))
        .user_agent(concat!(
            "xmemo/",
            env!("CARGO_PKG_VERSION"),
            " (skill import)"
        ))
        .build()
        .map_err(|e| FetchError::Config(format!("cannot build the HTTP client: {e}")))
}

/// Downloads `url` under the hygiene rules of `config`.
pub async fn fetch(config: &FetchConfig, url: reqwest::Url) -> Result<Fetched, FetchError> {
    let policy = Arc::new(AddressPolicy::from_config(config).map_err(FetchError::Config)?);
    let first = url.to_string();
    match tokio::time::timeout(config.timeout, fetch_inner(config, policy, url)).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout {
            url: first,
            seconds: config.timeout.as_secs().max(1),
        }),
    }
}

async fn fetch_inner(
    config: &FetchConfig,
    policy: Arc<AddressPolicy>,
    mut url: reqwest::Url,
) -> Result<Fetched, FetchError> {
    let client = client(config, policy.clone())?;
    let mut hops = Vec::new();
    loop {
        check_target(&url, &policy, config)?;
        if let Some(domain) = url.host_str().filter(|h| ip_literal(h).is_none()) {
            // Pre-flight: a clear refusal before any connection (the resolver repeats it).
            policy
                .resolve(domain)
                .await
                .map_err(|e| with_url(e, &url))?;
        }
        hops.push(url.to_string());
        let mut response = client
            .get(url.clone())
            .header(reqwest::header::ACCEPT_ENCODING, "identity")
            .send()
            .await
            .map_err(|e| transport_error(e, &url, config))?;
        let status = response.status();
        if status.is_redirection() {
            if hops.len() > config.max_redirects {
                return Err(FetchError::TooManyRedirects {
                    url: hops[0].clone(),
                    limit: config.max_redirects,
                });
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| FetchError::Upstream {
                    url: url.to_string(),
                    status: status.as_u16(),
                })?;
            url = url.join(location).map_err(|e| FetchError::Refused {
                url: url.to_string(),
                reason: format!("invalid redirect target `{location}`: {e}"),
            })?;
            continue;
        }
        if !status.is_success() {
            let code = status.as_u16();
            let url = url.to_string();
            return Err(match code {
                404 | 410 => FetchError::NotFound {
                    url,
                    what: "the archive".into(),
                    status: code,
                },
                401 | 403 | 408 | 429 => FetchError::Upstream { url, status: code },
                400..=499 => FetchError::Rejected { url, status: code },
                _ => FetchError::Upstream { url, status: code },
            });
        }
        let limit = config.max_bytes;
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        let initial = response
            .content_length()
            .unwrap_or(0)
            .min(limit)
            .min(1 << 20);
        let mut bytes = Vec::with_capacity(initial as usize);
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_error(e, &url, config))?
        {
            if bytes.len() as u64 + chunk.len() as u64 > limit {
                return Err(FetchError::TooLarge {
                    url: url.to_string(),
                    limit,
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        let sha256 = hex::encode(Sha256::digest(&bytes));
        return Ok(Fetched {
            bytes,
            final_url: url.to_string(),
            hops,
            sha256,
        });
    }
}

/// Resolver errors carry the host; report the URL being fetched instead.
fn with_url(e: FetchError, url: &reqwest::Url) -> FetchError {
    match e {
        FetchError::Refused { reason, .. } => FetchError::Refused {
            url: url.to_string(),
            reason,
        },
        FetchError::Network { message, .. } => FetchError::Network {
            url: url.to_string(),
            message,
        },
        other => other,
    }
}

fn transport_error(e: reqwest::Error, url: &reqwest::Url, config: &FetchConfig) -> FetchError {
    // A refusal by the resolver (e.g. DNS rebinding between the pre-flight and the
    // connection) travels inside the client's error.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut last = String::new();
    while let Some(c) = cause {
        if let Some(fetch) = c.downcast_ref::<FetchError>() {
            return with_url(fetch.clone(), url);
        }
        last = c.to_string();
        cause = c.source();
    }
    if e.is_timeout() {
        return FetchError::Timeout {
            url: url.to_string(),
            seconds: config.timeout.as_secs().max(1),
        };
    }
    FetchError::Network {
        url: url.to_string(),
        message: last,
    }
}

/// The commit a GitHub archive was made from: the ZIP comment (`git archive` writes the
/// full commit id there), else the hex suffix of its `OWNER-REPO-SHA` top folder.
pub fn archive_commit(bytes: &[u8], top_folder: Option<&str>) -> Option<String> {
    let is_hex =
        |s: &str| s.len() >= 7 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(comment) = zip_comment(bytes)
        && let Ok(text) = std::str::from_utf8(comment)
        && is_hex(text.trim())
    {
        return Some(text.trim().to_ascii_lowercase());
    }
    let suffix = top_folder?.rsplit('-').next()?;
    is_hex(suffix).then(|| suffix.to_ascii_lowercase())
}

/// The comment of the end-of-central-directory record, if one is found.
fn zip_comment(bytes: &[u8]) -> Option<&[u8]> {
    const EOCD: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    let min_start = bytes.len().saturating_sub(22 + 65_535);
    let last = bytes.len().checked_sub(22)?;
    (min_start..=last).rev().find_map(|at| {
        if bytes.get(at..at + 4)? != EOCD {
            return None;
        }
        let len = u16::from_le_bytes([*bytes.get(at + 20)?, *bytes.get(at + 21)?]) as usize;
        let comment = bytes.get(at + 22..at + 22 + len)?;
        (at + 22 + len == bytes.len()).then_some(comment)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_urls() {
        let p = |s: &str| parse_skill_url(s).unwrap();
        assert_eq!(
            p("https://github.com/anthropics/skills"),
            RemoteSkill::GitHub {
                owner: "anthropics".into(),
                repo: "skills".into(),
                git_ref: None,
                path: None
            }
        );
        assert_eq!(
            p("https://github.com/anthropics/skills.git"),
            p("https://github.com/anthropics/skills/")
        );
        assert_eq!(
            p("https://github.com/a/b/tree/main/skills/pdf?x=1#frag"),
            RemoteSkill::GitHub {
                owner: "a".into(),
                repo: "b".into(),
                git_ref: Some("main".into()),
                path: Some("skills/pdf".into())
            }
        );
        assert_eq!(
            p("https://github.com/a/b/blob/v1.2/skills/pdf/SKILL.md"),
            p("https://github.com/a/b/tree/v1.2/skills/pdf")
        );
        for bad in [
            "https://github.com/a",
            "https://github.com/a/b/issues/3",
            // (`../` segments are resolved by the URL parser itself; encoded ones are not)
            "https://github.com/a/b/tree/main/a%2F..%2Fx",
            "https://github.com/a/b/tree/main/%2Fetc",
            "https://github.com/a/b/blob/main/README.md",
            "https://gitlab.com/a/b",
            "ftp://github.com/a/b",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(
                matches!(parse_skill_url(bad), Err(FetchError::BadUrl(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn clawhub_urls() {
        assert_eq!(
            parse_skill_url("https://clawhub.ai/steipete/gog").unwrap(),
            RemoteSkill::ClawHub {
                owner: Some("steipete".into()),
                slug: "gog".into(),
                version: None
            }
        );
        assert_eq!(
            parse_skill_url("https://clawhub.ai/skills/gog?version=1.2.0").unwrap(),
            RemoteSkill::ClawHub {
                owner: None,
                slug: "gog".into(),
                version: Some("1.2.0".into())
            }
        );
        assert!(parse_skill_url("https://clawhub.ai/gog").is_err());
        let url = parse_skill_url("https://clawhub.ai/o/my-skill?version=2")
            .unwrap()
            .download_url(&FetchConfig::default())
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://clawhub.ai/api/v1/download?slug=my-skill&version=2"
        );
        let url = parse_skill_url("https://github.com/o/r/tree/feature%2Fx/s")
            .unwrap()
            .download_url(&FetchConfig {
                github_api_base: "http://127.0.0.1:9/gh/".into(),
                ..FetchConfig::default()
            })
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/gh/repos/o/r/zipball/feature%2Fx"
        );
    }

    #[test]
    fn special_addresses_are_blocked() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
            "::7f00:1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(blocked_reason(ip).is_some(), "{ip}");
        }
        for ip in [
            "140.82.112.3",
            "8.8.8.8",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(blocked_reason(ip), None, "{ip}");
        }
    }

    #[test]
    fn allowlists() {
        let config = FetchConfig {
            allow_hosts: vec!["Internal.Example".into()],
            allow_private_cidrs: vec!["127.0.0.0/8".into(), "::1".into()],
            ..FetchConfig::default()
        };
        let policy = AddressPolicy::from_config(&config).unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(policy.check("x", ip("127.0.0.1")).is_ok());
        assert!(policy.check("x", ip("::ffff:127.0.0.2")).is_ok());
        assert!(policy.check("x", ip("::1")).is_ok());
        assert!(policy.check("x", ip("10.0.0.1")).is_err());
        assert!(policy.check("internal.example", ip("10.0.0.1")).is_ok());
        assert!(
            AddressPolicy::from_config(&FetchConfig {
                allow_private_cidrs: vec!["10.0.0.0/33".into()],
                ..FetchConfig::default()
            })
            .is_err()
        );
        assert!(FetchConfig::default().validate().is_ok());
    }

    #[test]
    fn scheme_and_literal_checks() {
        let policy = AddressPolicy::default();
        let config = FetchConfig::default();
        let check = |s: &str| check_target(&reqwest::Url::parse(s).unwrap(), &policy, &config);
        assert!(check("https://example.com/x").is_ok());
        assert!(matches!(
            check("http://example.com/x"),
            Err(FetchError::Refused { .. })
        ));
        assert!(matches!(
            check("file:///etc/passwd"),
            Err(FetchError::Refused { .. })
        ));
        assert!(matches!(
            check("https://10.0.0.1/x"),
            Err(FetchError::Refused { .. })
        ));
        assert!(matches!(
            check("https://[::1]/x"),
            Err(FetchError::Refused { .. })
        ));
        // WHATWG parsing turns odd IPv4 spellings into the address they mean.
        assert!(matches!(
            check("https://2130706433/x"),
            Err(FetchError::Refused { .. })
        ));
        assert!(matches!(
            check("https://0x7f.1/x"),
            Err(FetchError::Refused { .. })
        ));
        assert!(matches!(
            check("https://u:p@example.com/"),
            Err(FetchError::Refused { .. })
        ));
    }

    /// The client itself only connects to addresses the guarded resolver returned: a name
    /// that (re-)resolves to a refused address fails at connection time, with the refusal
    /// recognisable in the client's error (the DNS-rebinding defence).
    #[tokio::test]
    async fn the_client_resolver_refuses_private_addresses() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let config = FetchConfig {
            allow_http: true,
            ..FetchConfig::default()
        };
        let policy = Arc::new(AddressPolicy::from_config(&config).unwrap());
        let url = reqwest::Url::parse(&format!("http://localhost:{port}/x")).unwrap();
        let err = client(&config, policy)
            .unwrap()
            .get(url.clone())
            .send()
            .await
            .unwrap_err();
        match transport_error(err, &url, &config) {
            FetchError::Refused { reason, .. } => assert!(reason.contains("loopback"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
        assert!(
            accepted.is_err(),
            "the client connected to a refused address"
        );

        // Allowlisted, the same request goes through to the listener.
        let config = FetchConfig {
            allow_http: true,
            allow_private_cidrs: vec!["127.0.0.0/8".into(), "::1/128".into()],
            ..FetchConfig::default()
        };
        let policy = Arc::new(AddressPolicy::from_config(&config).unwrap());
        let request = client(&config, policy).unwrap().get(url).send();
        let (accepted, _) = tokio::join!(
            tokio::time::timeout(Duration::from_secs(5), listener.accept()),
            tokio::time::timeout(Duration::from_millis(500), request)
        );
        assert!(accepted.is_ok(), "allowlisted address not reached");
    }

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
    }

    #[test]
    fn commits_from_archives() {
        assert_eq!(
            archive_commit(b"not a zip", Some("o-r-abc1234")).as_deref(),
            Some("abc1234")
        );
        assert_eq!(archive_commit(b"", Some("o-r-main")), None);
        let mut eocd = vec![0x50, 0x4b, 0x05, 0x06];
        eocd.extend([0u8; 16]);
        let sha = "0123456789abcdef0123456789abcdef01234567";
        eocd.extend((sha.len() as u16).to_le_bytes());
        eocd.extend(sha.as_bytes());
        assert_eq!(archive_commit(&eocd, None).as_deref(), Some(sha));
    }
}
