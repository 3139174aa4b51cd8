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
    let decoded: Vec<String> = secrets
        .iter()
        .map(|s| {
            // Not UTF-8 once decoded: the driver refuses that in the userinfo but reads a
            // `password=` parameter lossily, so the lossy form is hidden too.
            percent_decoded(s).unwrap_or_else(|_| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
        })
        .collect();
    secrets.extend(decoded);
    secrets.retain(|s| !s.is_empty());
    secrets
}

/// The text with its `%XX` escapes decoded, as URL parsers do. An escape that is not `%`
/// followed by two hex digits (`%+5`, `%4`, `%zz`) is kept as written: the crate checks for
/// the digits themselves, where a hand-written `from_str_radix` took `+5` for 5.
fn percent_decoded(text: &str) -> Result<String, std::str::Utf8Error> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
}

/// Removes every password the URL carries from a message.
pub(crate) fn scrub(message: &str, url: &str) -> String {
    let mut out = message.to_string();
    for secret in url_secrets(url) {
        out = out.replace(&secret, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode() {
        assert_eq!(percent_decoded("s3cr%40t").as_deref(), Ok("s3cr@t"));
        assert_eq!(percent_decoded("%e2%82%ac").as_deref(), Ok("€"));
    }

    #[test]
    fn a_sign_is_not_a_hex_digit() {
        let decoded = percent_decoded("a%+5b").expect("ASCII decodes");
        assert_eq!(decoded, "a%+5b");
        assert!(!decoded.contains('\u{5}'));
        assert_eq!(percent_decoded("%-5%4%zz").as_deref(), Ok("%-5%4%zz"));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_an_error() {
        assert!(percent_decoded("pass%ffword").is_err());
        let url = "postgres://app@db/x?password=pass%ffword";
        assert_eq!(
            scrub("auth pass%ffword / pass\u{fffd}word failed", url),
            "auth *** / *** failed"
        );
    }
}
