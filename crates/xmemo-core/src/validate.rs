//! The checks of SPEC §1, run before anything is written. Each error names its field.

use crate::error::ValidationError;
use crate::limits::*;
use crate::model::RevisionContent;
use std::collections::HashMap;

/// Frontmatter fields that live beside the metadata, never inside it.
pub const RESERVED_METADATA_KEYS: &[&str] = &["name", "description"];

/// Logical paths reserved by the Source Capsule layout (compared case-insensitively).
pub const RESERVED_ROOT_PATHS: &[&str] = &["skill.md", "capsule.json"];

/// The slug rule as a regular expression, for schemas; [`validate_slug`] checks it.
pub const SLUG_PATTERN: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";

/// [`SLUG_PATTERN`], 1–64 characters (the Agent Skills `name` rule).
pub fn validate_slug(field: &str, slug: &str) -> Result<(), ValidationError> {
    if slug.is_empty() {
        return Err(ValidationError::invalid(field, "must not be empty"));
    }
    if slug.len() > SLUG_MAX_CHARS {
        return Err(ValidationError::too_many(
            field,
            "characters",
            SLUG_MAX_CHARS as u64,
            slug.chars().count() as u64,
        ));
    }
    let well_formed = slug
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--");
    if !well_formed {
        return Err(ValidationError::invalid(
            field,
            format!(
                "must be lowercase letters and digits in hyphen-separated words ({SLUG_PATTERN})"
            ),
        ));
    }
    Ok(())
}

pub fn validate_name(field: &str, name: &str) -> Result<(), ValidationError> {
    check_text(field, name, NAME_MAX_CHARS)
}

pub fn validate_description(field: &str, description: &str) -> Result<(), ValidationError> {
    check_text(field, description, DESCRIPTION_MAX_CHARS)
}

fn check_text(field: &str, value: &str, max_chars: usize) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::invalid(field, "must not be empty"));
    }
    reject_nul(field, value)?;
    let chars = value.chars().count();
    if chars > max_chars {
        return Err(ValidationError::too_many(
            field,
            "characters",
            max_chars as u64,
            chars as u64,
        ));
    }
    Ok(())
}

/// U+0000 is refused in every text field: PostgreSQL cannot store it in text columns, and
/// both backends must accept exactly the same inputs.
pub fn reject_nul(field: &str, value: &str) -> Result<(), ValidationError> {
    if value.contains('\0') {
        return Err(ValidationError::invalid(
            field,
            "must not contain NUL (U+0000) characters",
        ));
    }
    Ok(())
}

/// Relative POSIX path: no leading `/`, no empty, `.` or `..` segment, no backslash or control
/// character, at most 255 bytes.
pub fn validate_logical_path(field: &str, path: &str) -> Result<(), ValidationError> {
    if path.is_empty() {
        return Err(ValidationError::invalid(field, "must not be empty"));
    }
    if path.len() > LOGICAL_PATH_MAX_BYTES {
        return Err(ValidationError::too_many(
            field,
            "bytes",
            LOGICAL_PATH_MAX_BYTES as u64,
            path.len() as u64,
        ));
    }
    if path.starts_with('/') {
        return Err(ValidationError::invalid(
            field,
            "must be relative (no leading `/`)",
        ));
    }
    if path.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(ValidationError::invalid(
            field,
            "must not contain backslashes or control characters",
        ));
    }
    for segment in path.split('/') {
        match segment {
            "" => {
                return Err(ValidationError::invalid(
                    field,
                    "must not contain an empty segment",
                ));
            }
            "." | ".." => {
                return Err(ValidationError::invalid(
                    field,
                    "must not contain `.` or `..` segments",
                ));
            }
            _ => {}
        }
    }
    if RESERVED_ROOT_PATHS.contains(&path.to_lowercase().as_str()) {
        return Err(ValidationError::invalid(
            field,
            "is reserved by the Source Capsule layout (SKILL.md, capsule.json)",
        ));
    }
    Ok(())
}

/// Every content rule of SPEC §1 for one revision. Count limits are checked before any
/// per-item work so a hostile request is rejected cheaply.
pub fn validate_content(content: &RevisionContent) -> Result<(), ValidationError> {
    if content.components.len() > MAX_COMPONENTS {
        return Err(ValidationError::too_many(
            "components",
            "components",
            MAX_COMPONENTS as u64,
            content.components.len() as u64,
        ));
    }
    validate_name("name", &content.name)?;
    validate_description("description", &content.description)?;
    if content.instruction_body.trim().is_empty() {
        return Err(ValidationError::invalid(
            "instruction_body",
            "must not be empty",
        ));
    }
    reject_nul("instruction_body", &content.instruction_body)?;
    if content.instruction_body.len() > INSTRUCTION_BODY_MAX_BYTES {
        return Err(ValidationError::too_large(
            "instruction_body",
            INSTRUCTION_BODY_MAX_BYTES as u64,
            content.instruction_body.len() as u64,
        ));
    }
    let metadata_bytes = serde_json::to_vec(&content.metadata)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if let Some(key) = RESERVED_METADATA_KEYS
        .iter()
        .find(|k| content.metadata.contains_key(**k))
    {
        return Err(ValidationError::invalid(
            format!("metadata.{key}"),
            "is a top-level field of the skill, not metadata",
        ));
    }
    if metadata_bytes > METADATA_MAX_BYTES {
        return Err(ValidationError::too_large(
            "metadata",
            METADATA_MAX_BYTES as u64,
            metadata_bytes as u64,
        ));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, component) in content.components.iter().enumerate() {
        let path_field = format!("components[{i}].logical_path");
        validate_logical_path(&path_field, &component.logical_path)?;
        if component.content.len() > COMPONENT_MAX_BYTES {
            return Err(ValidationError::too_large(
                format!("components[{i}].content"),
                COMPONENT_MAX_BYTES as u64,
                component.content.len() as u64,
            ));
        }
        if let Some(first) = seen.insert(component.logical_path.to_lowercase(), i) {
            return Err(ValidationError::invalid(
                path_field,
                format!(
                    "`{}` collides case-insensitively with components[{first}]",
                    component.logical_path
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::model::{ComponentInput, ComponentType};

    fn content() -> RevisionContent {
        RevisionContent {
            name: "Deploy".into(),
            description: "How we deploy".into(),
            instruction_body: "Run it.".into(),
            metadata: Default::default(),
            components: vec![],
        }
    }

    fn component(path: &str, len: usize) -> ComponentInput {
        ComponentInput {
            logical_path: path.into(),
            component_type: ComponentType::Reference,
            content: vec![b'a'; len],
        }
    }

    #[test]
    fn slug_rule() {
        for ok in ["a", "a1", "deploy-prod", "x-1-y", &"a".repeat(64)] {
            assert!(validate_slug("slug", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "A",
            "a_b",
            "a b",
            "é",
            &"a".repeat(65),
        ] {
            let err = validate_slug("slug", bad).unwrap_err();
            assert_eq!(err.field, "slug", "{bad}");
            assert_eq!(err.code, ErrorCode::ValidationError);
        }
    }

    #[test]
    fn name_and_description_boundaries() {
        let mut c = content();
        c.name = "n".repeat(NAME_MAX_CHARS);
        assert!(validate_content(&c).is_ok());
        c.name.push('n');
        assert_eq!(validate_content(&c).unwrap_err().field, "name");
        // limit counts characters, not bytes
        c.name = "é".repeat(NAME_MAX_CHARS);
        assert!(validate_content(&c).is_ok());

        let mut c = content();
        c.description = "d".repeat(DESCRIPTION_MAX_CHARS);
        assert!(validate_content(&c).is_ok());
        c.description.push('d');
        assert_eq!(validate_content(&c).unwrap_err().field, "description");
        c.description = "  ".into();
        assert_eq!(validate_content(&c).unwrap_err().field, "description");
        c.description = "nul\0".into();
        assert_eq!(validate_content(&c).unwrap_err().field, "description");
    }

    #[test]
    fn instruction_body_limit_is_bytes() {
        let mut c = content();
        c.instruction_body = "a".repeat(INSTRUCTION_BODY_MAX_BYTES);
        assert!(validate_content(&c).is_ok());
        c.instruction_body.push('a');
        let err = validate_content(&c).unwrap_err();
        assert_eq!(err.field, "instruction_body");
        assert_eq!(err.code, ErrorCode::PayloadTooLarge);
        assert_eq!(err.actual, Some(INSTRUCTION_BODY_MAX_BYTES as u64 + 1));
        // multibyte: 21845 * 3 bytes = 65535 bytes fits, one more 3-byte char does not
        c.instruction_body = "€".repeat(21_845);
        assert!(validate_content(&c).is_ok());
        c.instruction_body.push('€');
        assert_eq!(validate_content(&c).unwrap_err().field, "instruction_body");
        c.instruction_body = String::new();
        assert_eq!(validate_content(&c).unwrap_err().field, "instruction_body");
        c.instruction_body = "a\0b".into();
        assert_eq!(validate_content(&c).unwrap_err().field, "instruction_body");
    }

    #[test]
    fn component_count_limit() {
        let mut c = content();
        c.components = (0..MAX_COMPONENTS)
            .map(|i| component(&format!("f{i}"), 1))
            .collect();
        assert!(validate_content(&c).is_ok());
        c.components.push(component("one-more", 1));
        let err = validate_content(&c).unwrap_err();
        assert_eq!(err.field, "components");
        assert_eq!(err.code, ErrorCode::ValidationError);
        assert_eq!((err.limit, err.actual), (Some(50), Some(51)));
    }

    #[test]
    fn component_size_limit() {
        let mut c = content();
        c.components = vec![
            component("a.txt", 1),
            component("big.bin", COMPONENT_MAX_BYTES),
        ];
        assert!(validate_content(&c).is_ok());
        c.components[1].content.push(0);
        let err = validate_content(&c).unwrap_err();
        assert_eq!(err.field, "components[1].content");
        assert_eq!(err.code, ErrorCode::PayloadTooLarge);
    }

    #[test]
    fn logical_path_rules() {
        let ok_255 = format!("d/{}", "p".repeat(253));
        for ok in [
            "a",
            "scripts/check.py",
            "a/b/c.d",
            ".hidden",
            "x..y",
            ok_255.as_str(),
        ] {
            assert!(validate_logical_path("p", ok).is_ok(), "{ok}");
        }
        let bad_256 = format!("d/{}", "p".repeat(254));
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/",
            "../x",
            "a/../b",
            "./a",
            "a\\b",
            "a\0b",
            "SKILL.md",
            "capsule.json",
            bad_256.as_str(),
        ] {
            assert!(validate_logical_path("p", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn case_insensitive_collision() {
        let mut c = content();
        c.components = vec![component("Docs/A.md", 1), component("docs/a.md", 1)];
        let err = validate_content(&c).unwrap_err();
        assert_eq!(err.field, "components[1].logical_path");
        assert!(err.message.contains("components[0]"));
    }

    #[test]
    fn metadata_cannot_shadow_name_or_description() {
        let mut c = content();
        c.metadata.insert("name".into(), "x".into());
        assert_eq!(validate_content(&c).unwrap_err().field, "metadata.name");
    }

    #[test]
    fn metadata_limit() {
        let mut c = content();
        // {"k":"…"} is 8 bytes of framing
        c.metadata
            .insert("k".into(), "v".repeat(METADATA_MAX_BYTES - 8).into());
        assert!(validate_content(&c).is_ok());
        c.metadata
            .insert("k".into(), "v".repeat(METADATA_MAX_BYTES - 7).into());
        assert_eq!(validate_content(&c).unwrap_err().field, "metadata");
    }
}
