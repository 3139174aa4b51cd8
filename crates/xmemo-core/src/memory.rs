//! Memories (SPEC §9): the general memory beside Cloud Skills — preferences, project facts,
//! decisions, TODOs, progress notes. Pure checks and derivations; the service calls them
//! before anything is written.

use crate::error::ValidationError;
use crate::limits::*;
use crate::model::MemoryKind;
use crate::validate::{Lines, check_text, reject_controls, validate_slug};

/// What a client asks to remember (or to become a memory's next version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryContent {
    pub kind: MemoryKind,
    pub content: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    /// A slug naming the scope, e.g. the repository; `None` for workspace-wide memories.
    pub project: Option<String>,
}

/// Every limit of a memory, each error naming its field. Count and size limits come first,
/// so a hostile request is refused cheaply.
pub fn validate_memory(m: &MemoryContent) -> Result<(), ValidationError> {
    if m.content.len() > MEMORY_CONTENT_MAX_BYTES {
        return Err(ValidationError::too_large(
            "content",
            MEMORY_CONTENT_MAX_BYTES as u64,
            m.content.len() as u64,
        ));
    }
    if m.content.trim().is_empty() {
        return Err(ValidationError::invalid("content", "must not be empty"));
    }
    reject_controls("content", &m.content, Lines::Many)?;
    if let Some(title) = &m.title {
        check_text("title", title, MEMORY_TITLE_MAX_CHARS, Lines::One)?;
    }
    if m.tags.len() > MEMORY_TAGS_MAX {
        return Err(ValidationError::too_many(
            "tags",
            "tags",
            MEMORY_TAGS_MAX as u64,
            m.tags.len() as u64,
        ));
    }
    for tag in &m.tags {
        validate_slug("tags", tag)?;
    }
    if let Some(project) = &m.project {
        validate_slug("project", project)?;
    }
    Ok(())
}

/// Tags as stored: each once, in the order first given.
pub fn normalize_tags(tags: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    out
}

/// The key of the "identical content" rule: two active memories of one workspace, project and
/// kind never share it.
pub fn memory_content_hash(content: &str) -> String {
    crate::content_hash(content.as_bytes())
}

/// The first characters of a memory's content, cut at a character boundary, with `…` when
/// something was left out (compact recall results).
pub fn excerpt(content: &str) -> (String, bool) {
    match content.char_indices().nth(MEMORY_EXCERPT_CHARS) {
        None => (content.to_string(), false),
        Some((cut, _)) => (format!("{}…", content[..cut].trim_end()), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(content: &str) -> MemoryContent {
        MemoryContent {
            kind: MemoryKind::Preference,
            content: content.into(),
            title: None,
            tags: vec![],
            project: None,
        }
    }

    #[test]
    fn limits_at_their_boundaries() {
        assert!(validate_memory(&memory(&"a".repeat(MEMORY_CONTENT_MAX_BYTES))).is_ok());
        let e = validate_memory(&memory(&"a".repeat(MEMORY_CONTENT_MAX_BYTES + 1))).unwrap_err();
        assert_eq!((e.field.as_str(), e.limit), ("content", Some(16_384)));
        assert_eq!(e.code, crate::ErrorCode::PayloadTooLarge);
        // Bytes, not characters: 8,193 two-byte characters are over.
        assert!(validate_memory(&memory(&"é".repeat(8_193))).is_err());
        assert!(validate_memory(&memory("  \n")).is_err());
        assert!(validate_memory(&memory("a\0b")).is_err());
        assert!(validate_memory(&memory("a\u{1b}[31mb")).is_err());
        assert!(validate_memory(&memory("line one\nline two\ttab")).is_ok());

        let mut m = memory("x");
        m.title = Some("t".repeat(MEMORY_TITLE_MAX_CHARS));
        assert!(validate_memory(&m).is_ok());
        m.title = Some("t".repeat(MEMORY_TITLE_MAX_CHARS + 1));
        assert_eq!(validate_memory(&m).unwrap_err().field, "title");

        let mut m = memory("x");
        m.tags = (0..MEMORY_TAGS_MAX).map(|i| format!("t{i}")).collect();
        assert!(validate_memory(&m).is_ok());
        m.tags.push("one-more".into());
        let e = validate_memory(&m).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.limit, e.actual),
            ("tags", Some(20), Some(21))
        );
        m.tags = vec!["Not A Slug".into()];
        assert_eq!(validate_memory(&m).unwrap_err().field, "tags");
        m.tags = vec!["a".repeat(MEMORY_TAG_MAX_CHARS + 1)];
        assert_eq!(validate_memory(&m).unwrap_err().field, "tags");

        let mut m = memory("x");
        m.project = Some("my/repo".into());
        assert_eq!(validate_memory(&m).unwrap_err().field, "project");
    }

    #[test]
    fn tags_are_deduplicated_in_order() {
        let tags = normalize_tags(vec!["b".into(), "a".into(), "b".into()]);
        assert_eq!(tags, ["b", "a"]);
    }

    #[test]
    fn excerpts_cut_on_characters() {
        assert_eq!(excerpt("short"), ("short".to_string(), false));
        let long = "é".repeat(MEMORY_EXCERPT_CHARS + 5);
        let (text, cut) = excerpt(&long);
        assert!(cut);
        assert_eq!(text.chars().count(), MEMORY_EXCERPT_CHARS + 1);
    }
}
