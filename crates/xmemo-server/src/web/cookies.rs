//! The cookies of the pages: a session cookie (its value is the session secret), a
//! sign-in form cookie (a random value the sign-in form must echo, before any session
//! exists) and a device cookie (a random value kept across sessions). All `HttpOnly`, `SameSite=Lax`, `Path=/`; with an https public URL also
//! `Secure` and the `__Host-` prefix, which browsers only accept from a secure origin with
//! no `Domain`, so no sibling host can plant them.

use super::Site;
use axum::http::{HeaderMap, HeaderValue, header};

pub fn session_name(site: &Site) -> String {
    prefixed(site, "xmemo_session")
}

pub fn login_name(site: &Site) -> String {
    prefixed(site, "xmemo_login")
}

/// The device cookie: a random value a browser keeps across sessions (a year), so a sign-in
/// from it counts as one from a device the account used before (service/signin.rs).
pub fn device_name(site: &Site) -> String {
    prefixed(site, "xmemo_device")
}

fn prefixed(site: &Site, name: &str) -> String {
    if site.secure {
        format!("__Host-{name}")
    } else {
        name.to_string()
    }
}

/// The value of cookie `name`, when it is sent exactly once (two means someone planted one).
pub fn read(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut found = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string());
    let first = found.next()?;
    (found.next().is_none() && !first.is_empty()).then_some(first)
}

/// A `Set-Cookie` value; `max_age: Some(0)` deletes the cookie.
pub fn set(site: &Site, name: &str, value: &str, max_age: Option<u64>) -> Option<HeaderValue> {
    let mut text = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
    if site.secure {
        text.push_str("; Secure");
    }
    if let Some(age) = max_age {
        text.push_str(&format!("; Max-Age={age}"));
    }
    HeaderValue::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(cookie: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(cookie).unwrap());
        h
    }

    #[test]
    fn names_attributes_and_parsing() {
        let http = Site::new("http://127.0.0.1:8420");
        let https = Site::new("https://memory.example.com/");
        assert_eq!(session_name(&http), "xmemo_session");
        assert_eq!(session_name(&https), "__Host-xmemo_session");
        assert_eq!(https.origin, "https://memory.example.com");
        let plain = set(&http, "xmemo_session", "v", Some(60)).unwrap();
        assert_eq!(
            plain.to_str().unwrap(),
            "xmemo_session=v; Path=/; HttpOnly; SameSite=Lax; Max-Age=60"
        );
        let secure = set(&https, "__Host-xmemo_session", "v", None).unwrap();
        assert!(secure.to_str().unwrap().ends_with("; Secure"));
        assert_eq!(
            read(&headers("a=1; xmemo_session=abc; b=2"), "xmemo_session").as_deref(),
            Some("abc")
        );
        assert_eq!(
            read(
                &headers("xmemo_session=a; xmemo_session=b"),
                "xmemo_session"
            ),
            None
        );
        assert_eq!(read(&headers("other=1"), "xmemo_session"), None);
    }
}
