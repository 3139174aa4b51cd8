//! Percent-encoding of query values and form fields. Its own module because the root
//! (`main.rs`) and the phases both need it, and a phase importing from the root would close a
//! cycle through it.

/// Percent-encodes everything but unreserved characters (RFC 3986 §2.3).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn only_unreserved_characters_pass_unencoded() {
        assert_eq!(encode("aZ09-_.~"), "aZ09-_.~");
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
