//! Account passwords: argon2id hashes in PHC form (the parameters travel with each hash, so
//! they can be raised later without breaking old ones). Hashing is deliberately slow, so it
//! runs on the blocking pool.

use crate::error::{ServiceError, ServiceResult};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine;
use rand::RngCore;

/// Shortest password accepted, in characters.
pub const MIN_CHARS: usize = 8;
/// Longest password accepted, in bytes: enough for any passphrase, small enough that nobody
/// makes the server hash megabytes.
pub const MAX_BYTES: usize = 1024;

/// OWASP's argon2id baseline: 19 MiB, two passes, one lane.
fn hasher() -> ServiceResult<Argon2<'static>> {
    let params = Params::new(19 * 1024, 2, 1, None)
        .map_err(|e| ServiceError::Internal(format!("argon2 parameters: {e}")))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Refuses a password outside the length bounds (VALIDATION_ERROR on `password`).
pub fn check(password: &str) -> ServiceResult<()> {
    if password.chars().count() < MIN_CHARS {
        return Err(ServiceError::validation(
            format!("a password needs at least {MIN_CHARS} characters"),
            "password",
        ));
    }
    if password.len() > MAX_BYTES {
        return Err(ServiceError::validation(
            format!("a password is at most {MAX_BYTES} bytes"),
            "password",
        ));
    }
    Ok(())
}

pub async fn hash(password: &str) -> ServiceResult<String> {
    let password = password.to_string();
    tokio::task::spawn_blocking(move || {
        let salt = salt()?;
        hasher()?
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| ServiceError::Internal(format!("argon2: {e}")))
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("hashing task: {e}")))?
}

/// Whether `password` matches `stored`. With no stored hash (unknown account, no password
/// set) a dummy hash is checked anyway, so the answer takes as long either way.
pub async fn verify(password: &str, stored: Option<String>) -> bool {
    let password = password.to_string();
    let checked = tokio::task::spawn_blocking(move || {
        let Ok(argon) = hasher() else { return false };
        let (phc, real) = match stored {
            Some(s) => (s, true),
            None => (dummy_hash(&argon), false),
        };
        let Ok(parsed) = PasswordHash::new(&phc) else {
            return false;
        };
        argon.verify_password(password.as_bytes(), &parsed).is_ok() && real
    })
    .await;
    checked.unwrap_or(false)
}

/// 16 random bytes, as the PHC string wants them.
fn salt() -> ServiceResult<SaltString> {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    SaltString::encode_b64(&bytes).map_err(|e| ServiceError::Internal(format!("salt: {e}")))
}

/// A hash of a random password, made once, that nothing can match.
fn dummy_hash(argon: &Argon2<'_>) -> String {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY
        .get_or_init(|| {
            let Ok(salt) = salt() else {
                return String::new();
            };
            argon
                .hash_password(generate().as_bytes(), &salt)
                .map(|h| h.to_string())
                .unwrap_or_default()
        })
        .clone()
}

/// A random password for the first-start admin account: 24 base64url characters (144 bits).
pub fn generate() -> String {
    let mut bytes = [0u8; 18];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_are_argon2id_salted_and_verify() {
        let a = hash("correct horse").await.unwrap();
        let b = hash("correct horse").await.unwrap();
        assert!(a.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{a}");
        assert_ne!(a, b, "salted");
        assert!(verify("correct horse", Some(a.clone())).await);
        assert!(!verify("wrong horse", Some(a)).await);
        assert!(!verify("anything", None).await);
        assert!(!verify("anything", Some("not a hash".into())).await);
    }

    #[test]
    fn bounds_and_generated_passwords() {
        assert!(check("short").is_err());
        assert!(check("long enough").is_ok());
        assert!(check(&"x".repeat(MAX_BYTES + 1)).is_err());
        let p = generate();
        assert_eq!(p.len(), 24);
        assert!(check(&p).is_ok());
        assert_ne!(p, generate());
    }
}
