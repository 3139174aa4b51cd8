//! Which address a request comes from, for throttling: the TCP peer, unless the operator
//! named that peer as a trusted proxy, in which case the nearest untrusted hop of
//! `X-Forwarded-For` (read right to left, as each proxy appends the address it saw).
//! Without trusted proxies the header is ignored: any client can write it.

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use std::net::{IpAddr, SocketAddr};

pub const FORWARDED_FOR: &str = "x-forwarded-for";

/// The client address, or `None` when the request did not come over a TCP connection the
/// server accepted (in-process calls).
pub fn client_addr(parts: &Parts, trusted_proxies: &[IpAddr]) -> Option<IpAddr> {
    of_request(&parts.headers, &parts.extensions, trusted_proxies)
}

/// [`client_addr`] from a request's headers and extensions.
pub fn of_request(
    headers: &axum::http::HeaderMap,
    extensions: &axum::http::Extensions,
    trusted_proxies: &[IpAddr],
) -> Option<IpAddr> {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| canonical(addr.ip()))?;
    if !trusted_proxies.contains(&peer) {
        return Some(peer);
    }
    let hops: Vec<&str> = headers
        .get_all(FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        // An unreadable hop ends the chain: what lies left of it cannot be trusted.
        let Some(ip) = parse_hop(hop) else { break };
        client = ip;
        if !trusted_proxies.contains(&ip) {
            break;
        }
    }
    Some(client)
}

fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .map(canonical)
}

/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`, what a dual-stack socket reports) as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(peer: &str, xff: &[&str]) -> Parts {
        let mut b = Request::builder().uri("/");
        for v in xff {
            b = b.header(FORWARDED_FOR, *v);
        }
        let (mut parts, ()) = b.body(()).expect("request").into_parts();
        let addr: SocketAddr = peer.parse().expect("peer");
        parts.extensions.insert(ConnectInfo(addr));
        parts
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn the_peer_unless_it_is_a_trusted_proxy() {
        // Not trusted: the header is the client's own claim and is ignored.
        assert_eq!(
            client_addr(&parts("203.0.113.9:5000", &["198.51.100.1"]), &[]),
            Some(ip("203.0.113.9"))
        );
        let proxy = [ip("10.0.0.2")];
        assert_eq!(
            client_addr(&parts("10.0.0.2:5000", &["198.51.100.1"]), &proxy),
            Some(ip("198.51.100.1"))
        );
        // A client-supplied entry left of the real one is not believed.
        assert_eq!(
            client_addr(&parts("10.0.0.2:5000", &["1.1.1.1, 198.51.100.1"]), &proxy),
            Some(ip("198.51.100.1"))
        );
        // Chained trusted proxies are skipped, across header lines too.
        let proxies = [ip("10.0.0.2"), ip("10.0.0.3")];
        assert_eq!(
            client_addr(
                &parts("10.0.0.2:1", &["198.51.100.7", "10.0.0.3"]),
                &proxies
            ),
            Some(ip("198.51.100.7"))
        );
        // No header, or garbage: the proxy itself.
        assert_eq!(
            client_addr(&parts("10.0.0.2:1", &[]), &proxy),
            Some(ip("10.0.0.2"))
        );
        assert_eq!(
            client_addr(&parts("10.0.0.2:1", &["not-an-ip"]), &proxy),
            Some(ip("10.0.0.2"))
        );
        assert_eq!(
            client_addr(
                &parts("[::ffff:10.0.0.2]:1", &["[2001:db8::1]:443"]),
                &proxy
            ),
            Some(ip("2001:db8::1"))
        );
    }

    #[test]
    fn no_connection_no_address() {
        let (parts, ()) = Request::builder()
            .uri("/")
            .body(())
            .expect("request")
            .into_parts();
        assert_eq!(client_addr(&parts, &[]), None);
    }
}
