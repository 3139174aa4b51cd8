//! Connection-URL redaction: messages and logs never carry a database password.

/// The parts of a connection URL that matter for redaction. The userinfo runs to the *last*
/// `@`, so a password with an unencoded `/`, `?` or `@` is still recognised as one (erring on
/// the side of hiding too much).
struct UrlParts<'a> {
    scheme: Option<&'a str>,
    user: Option<&'a str>,
    password: Option<&'a str>,
    host_and_path: &'a str,
    query: Option<&'a str>,
}

fn url_parts(url: &str) -> UrlParts<'_> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let (userinfo, after) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let (user, password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((user, password)) => (Some(user), Some(password)),
            None => (Some(u), None),
        },
        None => (None, None),
    };
    let (host_and_path, query) = match after.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (after, None),
    };
    UrlParts {
        scheme,
        user,
        password,
        host_and_path,
        query,
    }
}

/// The URL with its password (userinfo or `password=` query parameter) replaced by `***`,
/// for logs and messages.
pub fn redact_url(url: &str) -> String {
    let p = url_parts(url);
    let mut out = String::new();
    if let Some(scheme) = p.scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    if let Some(user) = p.user {
        out.push_str(user);
        if p.password.is_some() {
            out.push_str(":***");
        }
        out.push('@');
    }
    out.push_str(p.host_and_path);
    if let Some(query) = p.query {
        let params: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// The passwords a URL carries, raw and percent-decoded.
fn url_secrets(url: &str) -> Vec<String> {
    let p = url_parts(url);
    let mut secrets: Vec<String> = p.password.map(str::to_string).into_iter().collect();
    if let Some(query) = p.query {
        for kv in query.split('&') {
            if let Some((k, v)) = kv.split_once('=')
                && k.eq_ignore_ascii_case("password")
            {
                secrets.push(v.to_string());
            }
        }
    }
    let decoded: Vec<String> = secrets.iter().map(|s| percent_decode(s)).collect();
    secrets.extend(decoded);
    secrets.retain(|s| !s.is_empty());
    secrets
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes every password the URL carries from a message.
pub(crate) fn scrub(message: &str, url: &str) -> String {
    let mut out = message.to_string();
    for secret in url_secrets(url) {
        out = out.replace(&secret, "***");
    }
    out
}
