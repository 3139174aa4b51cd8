//! Which addresses an outbound fetch may reach: special-purpose ranges are refused unless
//! the operator allowlists them, for IP-literal hosts before any request and for host names
//! inside the HTTP client's own resolver (so DNS rebinding cannot slip past the check).

use super::{FetchConfig, FetchError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

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
fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
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
pub(super) struct AddressPolicy {
    hosts: Vec<String>,
    cidrs: Vec<Cidr>,
}

impl AddressPolicy {
    pub(super) fn from_config(config: &FetchConfig) -> Result<Self, String> {
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
    pub(super) fn check(&self, host: &str, ip: IpAddr) -> Result<(), &'static str> {
        if self.host_allowed(host) || self.cidrs.iter().any(|c| c.contains(ip)) {
            return Ok(());
        }
        match blocked_reason(ip) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// Resolves `host` and keeps only the addresses that may be connected to.
    pub(super) async fn resolve(&self, host: &str) -> Result<Vec<SocketAddr>, FetchError> {
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
pub(super) struct GuardedResolver {
    pub(super) policy: Arc<AddressPolicy>,
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

/// The address of an IP-literal host (`127.0.0.1`, `[::1]`), as the URL parser normalised it.
pub(super) fn ip_literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Checks one hop's scheme and, for IP-literal hosts, its address. Host names are checked
/// when they are resolved.
pub(super) fn check_target(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
