//! Redirect URIs: which ones a client may register, and when a requested one matches.
//!
//! Registered URIs must be `https`, `http` on a loopback host (`127.0.0.1`, `[::1]`,
//! `localhost`: native apps, RFC 8252 §7.3), or a private-use scheme of a native app
//! (`cursor://…`, `com.example.app:/cb`, RFC 8252 §7.1) — never one a browser would run
//! (`javascript:`, `data:`…). No fragment. Matching is exact, character for character, except
//! that a loopback `http` URI matches any port (native apps listen on an ephemeral one).

use reqwest::Url;

const FORBIDDEN_SCHEMES: &[&str] = &[
    "javascript",
    "data",
    "file",
    "vbscript",
    "about",
    "blob",
    "ftp",
    "ws",
    "wss",
    "filesystem",
];

pub fn is_loopback_host(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "[::1]" | "localhost")
}

/// Why `uri` cannot be registered, or `None` when it can.
pub fn refusal(uri: &str) -> Option<String> {
    if uri.len() > 2000 || uri.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some(format!("redirect URI `{uri}` is too long or holds spaces"));
    }
    let Ok(url) = Url::parse(uri) else {
        return Some(format!("redirect URI `{uri}` is not an absolute URI"));
    };
    if url.fragment().is_some() {
        return Some(format!("redirect URI `{uri}` must not have a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Some(format!("redirect URI `{uri}` must not hold credentials"));
    }
    match url.scheme() {
        "https" => None,
        "http" if url.host_str().is_some_and(is_loopback_host) => None,
        "http" => Some(format!(
            "redirect URI `{uri}`: plain http is allowed on a loopback host only"
        )),
        scheme if FORBIDDEN_SCHEMES.contains(&scheme) => Some(format!(
            "redirect URI `{uri}`: the `{scheme}:` scheme is not allowed"
        )),
        _ => None,
    }
}

/// Whether the requested `uri` is the registered `registered` (exact, or loopback with
/// another port).
pub fn matches(registered: &str, uri: &str) -> bool {
    if registered == uri {
        return true;
    }
    let (Ok(r), Ok(u)) = (Url::parse(registered), Url::parse(uri)) else {
        return false;
    };
    r.scheme() == "http"
        && u.scheme() == "http"
        && r.host_str().is_some_and(is_loopback_host)
        && r.host_str() == u.host_str()
        && without_port(registered) == without_port(uri)
}

/// The URI with its authority's port removed, as written (so nothing else is normalised).
fn without_port(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("http://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !host.is_empty() => host,
        _ => authority,
    };
    let path = if tail.is_empty() { "/" } else { tail };
    Some(format!("http://{host}{path}"))
}

/// What the consent page shows as "where the code goes": the host (with its port) of a web
/// redirect, or the scheme of an app's.
pub fn shown_target(uri: &str) -> String {
    match Url::parse(uri) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => uri.to_string(),
        },
        Ok(u) => format!("the app that handles {}: links", u.scheme()),
        Err(_) => uri.to_string(),
    }
}

/// The `form-action` source a consent form needs to be allowed to redirect there.
pub fn form_action_source(uri: &str) -> Option<String> {
    let u = Url::parse(uri).ok()?;
    match u.scheme() {
        "http" | "https" => Some(u.origin().ascii_serialization()),
        scheme => Some(format!("{scheme}:")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_rules() {
        for ok in [
            "https://app.example.com/callback",
            "http://127.0.0.1/callback",
            "http://127.0.0.1:3000/cb?x=1",
            "http://[::1]:8080/cb",
            "http://localhost:9000/callback",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
            "com.example.app:/oauth2redirect",
        ] {
            assert_eq!(refusal(ok), None, "{ok}");
        }
        for bad in [
            "http://app.example.com/callback",
            "https://app.example.com/cb#frag",
            "javascript:alert(1)",
            "data:text/html,hi",
            "/relative",
            "https://user:pw@app.example.com/cb",
            "https://app.example.com/a b",
        ] {
            assert!(refusal(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn matching_is_exact_except_loopback_ports() {
        assert!(matches("https://a.example/cb", "https://a.example/cb"));
        assert!(!matches("https://a.example/cb", "https://a.example/cb/"));
        assert!(!matches("https://a.example/cb", "https://a.example:444/cb"));
        assert!(!matches("https://a.example/cb", "https://A.example/cb"));
        assert!(matches(
            "http://127.0.0.1/callback",
            "http://127.0.0.1:53117/callback"
        ));
        assert!(matches(
            "http://127.0.0.1:3000/callback",
            "http://127.0.0.1:4000/callback"
        ));
        assert!(matches("http://localhost:3000/cb", "http://localhost:5/cb"));
        assert!(!matches(
            "http://127.0.0.1:3000/callback",
            "http://127.0.0.1:4000/other"
        ));
        assert!(!matches(
            "http://127.0.0.1/callback",
            "http://localhost:4000/callback"
        ));
        assert!(!matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1.evil.example/cb"
        ));
        assert!(!matches(
            "http://127.0.0.1:3000/cb?a=1",
            "http://127.0.0.1:3000/cb?a=2"
        ));
    }

    #[test]
    fn what_the_consent_page_shows() {
        assert_eq!(
            shown_target("https://app.example.com/cb"),
            "app.example.com"
        );
        assert_eq!(shown_target("http://127.0.0.1:5000/cb"), "127.0.0.1:5000");
        assert!(shown_target("cursor://x/cb").contains("cursor:"));
        assert_eq!(
            form_action_source("http://127.0.0.1:5000/cb?x").as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(
            form_action_source("cursor://x/cb").as_deref(),
            Some("cursor:")
        );
    }
}
