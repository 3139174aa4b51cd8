//! Percent-encoding of query values and form fields. Its own module because the root
//! (`main.rs`) and the phases both need it, and a phase importing from the root would close a
//! cycle through it.

/// Everything but the unreserved characters (RFC 3986 §2.3).
const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes everything but unreserved characters.
pub fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, ESCAPED).to_string()
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
