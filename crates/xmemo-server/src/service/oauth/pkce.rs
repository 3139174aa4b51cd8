//! PKCE (RFC 7636) with the S256 method only: OAuth 2.1 and MCP require it, and `plain`
//! would let a code stolen from the front channel be redeemed.

use base64::Engine;
use sha2::{Digest, Sha256};

/// A challenge is base64url (no padding) of a SHA-256: exactly 43 characters.
pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A verifier is 43–128 unreserved characters (RFC 7636 §4.1).
pub fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

pub fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `verifier` is the one `challenge` was made from.
pub fn matches(verifier: &str, challenge: &str) -> bool {
    valid_verifier(verifier) && crate::auth::tokens_match(challenge, &s256(verifier))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(s256(verifier), challenge);
        assert!(valid_challenge(challenge));
        assert!(matches(verifier, challenge));
        assert!(!matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK",
            challenge
        ));
        assert!(!matches("short", challenge));
        assert!(!valid_challenge("plain-challenge"));
    }
}
