//! `content_hash` and `canonical_hash` exactly as SPEC §1 defines them
//! (see docs/canonical-hash.md for a worked example).

use crate::model::ComponentType;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of raw bytes.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One component as the canonical hash sees it.
pub struct HashedComponent<'a> {
    pub logical_path: &'a str,
    pub component_type: ComponentType,
    pub content_hash: &'a str,
}

/// The JSON document whose RFC 8785 (JCS) serialisation is hashed. Components are sorted by
/// `logical_path`, comparing the UTF-8 bytes, so submission order never changes the hash.
pub fn canonical_document(
    name: &str,
    description: &str,
    metadata: &Map<String, Value>,
    instruction_body: &str,
    components: &[HashedComponent<'_>],
) -> Value {
    let mut sorted: Vec<&HashedComponent<'_>> = components.iter().collect();
    sorted.sort_by(|a, b| a.logical_path.as_bytes().cmp(b.logical_path.as_bytes()));
    let components: Vec<Value> = sorted
        .into_iter()
        .map(|c| {
            json!({
                "logical_path": c.logical_path,
                "type": c.component_type.as_str(),
                "content_hash": c.content_hash,
            })
        })
        .collect();
    json!({
        "name": name,
        "description": description,
        "metadata": metadata,
        "instruction_body": instruction_body,
        "components": components,
    })
}

/// RFC 8785 canonical JSON text of a value.
pub fn jcs(value: &Value) -> String {
    // serde_json values always hold finite numbers and valid strings, which is all JCS needs;
    // the fallback keeps this total without a panic path.
    serde_json_canonicalizer::to_string(value).unwrap_or_else(|_| value.to_string())
}

pub fn canonical_hash(
    name: &str,
    description: &str,
    metadata: &Map<String, Value>,
    instruction_body: &str,
    components: &[HashedComponent<'_>],
) -> String {
    let doc = canonical_document(name, description, metadata, instruction_body, components);
    content_hash(jcs(&doc).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Components = Vec<(String, ComponentType, String)>;

    /// The worked example of docs/canonical-hash.md: if this changes, the doc must change too.
    pub(crate) fn worked_example() -> (Map<String, Value>, Components) {
        let mut metadata = Map::new();
        metadata.insert("license".into(), json!("MIT"));
        metadata.insert("metadata".into(), json!({"team": "ops", "version": 2}));
        let components = vec![
            (
                "scripts/check.py".to_string(),
                ComponentType::Script,
                content_hash(b"print('ok')\n"),
            ),
            (
                "references/runbook.md".to_string(),
                ComponentType::Reference,
                content_hash("# Runbook\nÉtape 1\n".as_bytes()),
            ),
        ];
        (metadata, components)
    }

    fn hash_of(
        metadata: &Map<String, Value>,
        body: &str,
        components: &[(String, ComponentType, String)],
    ) -> String {
        let hc: Vec<HashedComponent<'_>> = components
            .iter()
            .map(|(p, t, h)| HashedComponent {
                logical_path: p,
                component_type: *t,
                content_hash: h,
            })
            .collect();
        canonical_hash(
            "Deploy procedure",
            "How we deploy to production",
            metadata,
            body,
            &hc,
        )
    }

    const BODY: &str = "1. Run `scripts/check.py`.\n2. Deploy.\n";

    #[test]
    fn content_hash_of_known_bytes() {
        assert_eq!(
            content_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn worked_example_matches_docs() {
        let (metadata, components) = worked_example();
        let hc: Vec<HashedComponent<'_>> = components
            .iter()
            .map(|(p, t, h)| HashedComponent {
                logical_path: p,
                component_type: *t,
                content_hash: h,
            })
            .collect();
        let doc = canonical_document(
            "Deploy procedure",
            "How we deploy to production",
            &metadata,
            BODY,
            &hc,
        );
        let text = jcs(&doc);
        let docs = include_str!("../../../docs/canonical-hash.md");
        assert!(
            docs.contains(&text),
            "docs must show the canonical JSON:\n{text}"
        );
        let hash = content_hash(text.as_bytes());
        assert!(docs.contains(&hash), "docs must show the hash {hash}");
        assert_eq!(hash, hash_of(&metadata, BODY, &components));
    }

    #[test]
    fn component_order_does_not_change_the_hash() {
        let (metadata, mut components) = worked_example();
        let a = hash_of(&metadata, BODY, &components);
        components.reverse();
        assert_eq!(a, hash_of(&metadata, BODY, &components));
    }

    #[test]
    fn any_content_change_changes_the_hash() {
        let (metadata, components) = worked_example();
        let base = hash_of(&metadata, BODY, &components);
        assert_ne!(base, hash_of(&metadata, "1. Run it.\n", &components));
        let mut m2 = metadata.clone();
        m2.insert("license".into(), json!("Apache-2.0"));
        assert_ne!(base, hash_of(&m2, BODY, &components));
        let mut c2 = components.clone();
        c2[0].2 = content_hash(b"print('changed')\n");
        assert_ne!(base, hash_of(&metadata, BODY, &c2));
        let mut c3 = components.clone();
        c3[0].1 = ComponentType::Document;
        assert_ne!(base, hash_of(&metadata, BODY, &c3));
        let mut c4 = components.clone();
        c4[0].0 = "scripts/check2.py".into();
        assert_ne!(base, hash_of(&metadata, BODY, &c4));
        assert_ne!(base, hash_of(&metadata, BODY, &components[..1]));
        let hc: Vec<HashedComponent<'_>> = components
            .iter()
            .map(|(p, t, h)| HashedComponent {
                logical_path: p,
                component_type: *t,
                content_hash: h,
            })
            .collect();
        assert_ne!(
            base,
            canonical_hash(
                "Deploy",
                "How we deploy to production",
                &metadata,
                BODY,
                &hc
            )
        );
    }
}
