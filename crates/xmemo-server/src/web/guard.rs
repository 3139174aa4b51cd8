//! Cross-site request forgery defences of the pages, two of them on every unsafe request:
//! the browser's own word on where the request comes from (`Sec-Fetch-Site`, else `Origin`)
//! must be this site, and the form must carry a token only this site could have put in it.

use super::Site;
use axum::http::{HeaderMap, header};
use base64::Engine;
use sha2::{Digest, Sha256};

/// Refuses a request a browser says comes from another site. Requests without either header
/// (non-browser clients) pass on to the form-token check.
pub fn same_origin(headers: &HeaderMap, site: &Site) -> Result<(), &'static str> {
    if let Some(fetch_site) = headers.get("sec-fetch-site")
        && fetch_site.as_bytes() != b"same-origin"
    {
        return Err("this form was sent from another site");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if site.origin.is_empty() || !origin.eq_ignore_ascii_case(&site.origin) {
            return Err("this form was sent from another origin than this server's public URL");
        }
    }
    Ok(())
}

/// The form token of a session: derived from its secret, so it is never stored, differs per
/// session and cannot be computed without the session cookie.
pub fn session_token(session_secret: &str) -> String {
    let digest = Sha256::digest(format!("xmemo form token\n{session_secret}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn same_origin_rules() {
        let site = Site::new("http://127.0.0.1:8420");
        assert!(same_origin(&with(&[]), &site).is_ok());
        assert!(same_origin(&with(&[("sec-fetch-site", "same-origin")]), &site).is_ok());
        assert!(same_origin(&with(&[("sec-fetch-site", "cross-site")]), &site).is_err());
        assert!(same_origin(&with(&[("sec-fetch-site", "same-site")]), &site).is_err());
        assert!(same_origin(&with(&[("origin", "http://127.0.0.1:8420")]), &site).is_ok());
        assert!(same_origin(&with(&[("origin", "http://evil.example")]), &site).is_err());
        assert!(same_origin(&with(&[("origin", "null")]), &site).is_err());
    }

    #[test]
    fn tokens() {
        let t = session_token("secret-a");
        assert_eq!(t, session_token("secret-a"));
        assert_ne!(t, session_token("secret-b"));
        assert!(crate::auth::tokens_match(&t, &t.clone()));
        assert!(!crate::auth::tokens_match(&t, "x"));
        assert!(!crate::auth::tokens_match(&t, &session_token("secret-b")));
        assert!(!crate::auth::tokens_match("", ""));
    }
}
