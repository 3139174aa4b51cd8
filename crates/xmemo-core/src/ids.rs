//! Opaque identifiers: a readable prefix plus a UUIDv7, e.g. `skill_0190…`.

/// A new identifier with the given prefix (`skill`, `rev`, `acct`, `ws`, `key`, …).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// True when `id` looks like an identifier of this prefix (cheap syntactic check).
pub fn has_prefix(id: &str, prefix: &str) -> bool {
    id.len() == prefix.len() + 33
        && id.starts_with(prefix)
        && id.as_bytes().get(prefix.len()) == Some(&b'_')
        && id[prefix.len() + 1..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_unique_and_recognised() {
        let a = new_id("skill");
        let b = new_id("skill");
        assert_ne!(a, b);
        assert!(has_prefix(&a, "skill"));
        assert!(!has_prefix(&a, "rev"));
        assert!(!has_prefix("skill_xyz", "skill"));
    }
}
