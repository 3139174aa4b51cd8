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

/// Display names (skills, workspaces, accounts): one line of text.
pub fn validate_name(field: &str, name: &str) -> Result<(), ValidationError> {
    check_text(field, name, NAME_MAX_CHARS, Lines::One)
}

pub fn validate_description(field: &str, description: &str) -> Result<(), ValidationError> {
    check_text(field, description, DESCRIPTION_MAX_CHARS, Lines::Many)
}

/// API key names, already trimmed: 1 to [`KEY_NAME_MAX_CHARS`] characters on one line.
pub fn validate_key_name(field: &str, name: &str) -> Result<(), ValidationError> {
    check_text(field, name, KEY_NAME_MAX_CHARS, Lines::One)
}

/// Review notes and archive/restore reasons, already trimmed and non-empty: at most
/// [`NOTE_MAX_CHARS`] characters, line breaks allowed.
pub fn validate_note(field: &str, note: &str) -> Result<(), ValidationError> {
    check_text(field, note, NOTE_MAX_CHARS, Lines::Many)
}

/// One text field: not blank, the control characters `lines` allows, at most `max_chars`.
pub fn check_text(
    field: &str,
    value: &str,
    max_chars: usize,
    lines: Lines,
) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::invalid(field, "must not be empty"));
    }
    reject_controls(field, value, lines)?;
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

/// Which control characters (Unicode general category Cc: C0, DEL, C1) a text field may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Names, key names, metadata keys: none at all.
    One,
    /// Bodies, descriptions, notes, metadata string values: tab, line feed and carriage
    /// return only.
    Many,
}

/// Control characters are refused in every text field. NUL because PostgreSQL cannot store
/// it in text columns and both backends must accept exactly the same inputs; the rest
/// (ESC, backspace, C1 CSI…) because they reach terminals, YAML and logs as instructions
/// rather than text. Multi-line fields keep tab, LF and CR.
pub fn reject_controls(field: &str, value: &str, lines: Lines) -> Result<(), ValidationError> {
    let allowed = |c: char| lines == Lines::Many && matches!(c, '\t' | '\n' | '\r');
    match value.chars().find(|c| c.is_control() && !allowed(*c)) {
        None => Ok(()),
        Some(c) => Err(ValidationError::invalid(
            field,
            format!(
                "must not contain control character U+{:04X}{}",
                c as u32,
                match lines {
                    Lines::One => " (no control characters at all, line breaks included)",
                    Lines::Many => " (only tab, line feed and carriage return are allowed)",
                }
            ),
        )),
    }
}

/// Characters a logical path refuses besides control characters: invisible and
/// bidirectional formatting marks, which make one path display as another (U+202E turns
/// `gpj.exe` into something that reads like `exe.jpg`).
pub fn is_invisible_or_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'                   // soft hyphen
        | '\u{061C}'                 // Arabic letter mark
        | '\u{180E}'                 // Mongolian vowel separator
        | '\u{200B}'..='\u{200F}'     // zero-width space/non-joiner/joiner, LRM, RLM
        | '\u{202A}'..='\u{202E}'     // bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}'     // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}'     // bidi isolates
        | '\u{FEFF}' // zero-width no-break space (BOM)
    )
}

/// `text` without invisible or bidirectional formatting marks ([`is_invisible_or_bidi`]):
/// how names people read but others chose are kept (OAuth client names, team names), so
/// none can display as another. Control characters stay, for the field's own check to refuse.
pub fn strip_invisible(text: &str) -> String {
    text.chars().filter(|c| !is_invisible_or_bidi(*c)).collect()
}

/// The metadata object: keys follow the one-line rule and string values the multi-line
/// rule, at every depth. Fields are named `metadata.<key>[<index>]…`.
pub fn validate_metadata_text(
    metadata: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), ValidationError> {
    use serde_json::Value;
    // An explicit stack: YAML frontmatter can nest deeper than a recursion would like.
    let mut stack: Vec<(String, &Value)> = Vec::new();
    push_members("metadata", metadata, &mut stack)?;
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::String(text) => reject_controls(&path, text, Lines::Many)?,
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    stack.push((format!("{path}[{i}]"), item));
                }
            }
            Value::Object(map) => push_members(&path, map, &mut stack)?,
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    Ok(())
}

/// Checks the keys of one metadata object (the error names the object: the key itself may
/// be unprintable) and queues its values.
fn push_members<'a>(
    path: &str,
    map: &'a serde_json::Map<String, serde_json::Value>,
    stack: &mut Vec<(String, &'a serde_json::Value)>,
) -> Result<(), ValidationError> {
    for (key, value) in map {
        reject_controls(path, key, Lines::One).map_err(|e| ValidationError {
            message: format!("a key {}", e.message),
            ..e
        })?;
        stack.push((format!("{path}.{key}"), value));
    }
    Ok(())
}

/// U+0000 alone (fields whose other characters are someone else's rule); prefer
/// [`reject_controls`].
pub fn reject_nul(field: &str, value: &str) -> Result<(), ValidationError> {
    if value.contains('\0') {
        return Err(ValidationError::invalid(
            field,
            "must not contain NUL (U+0000) characters",
        ));
    }
    Ok(())
}

/// Device names Windows reserves in every folder (compared case-insensitively): a file so
/// named, whatever its extension, is the device (`CON.txt` is the console), so an archive
/// holding one cannot be unpacked there. The superscript digits are reserved too.
pub const WINDOWS_DEVICE_NAMES: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "COM1", "COM2", "COM3", "COM4", "COM5",
    "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5",
    "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³",
];

/// Whether `name` (a segment's part before its first dot, trailing spaces removed) is one of
/// [`WINDOWS_DEVICE_NAMES`], in any case.
pub fn is_windows_device_name(name: &str) -> bool {
    WINDOWS_DEVICE_NAMES
        .iter()
        .any(|device| name.eq_ignore_ascii_case(device))
}

/// Characters Windows refuses in a file name (besides `\`, `/` and control characters,
/// which every logical path refuses anyway).
pub const WINDOWS_FORBIDDEN_CHARS: &[char] = &['<', '>', ':', '"', '|', '?', '*'];

/// Characters that read as a dot or a path separator, or that Windows turns into one when
/// a program converts a name to a legacy code page ("best fit": U+FF0E `．` becomes `.`,
/// U+2215 `∕` becomes `/`, U+00A5 `¥` is the backslash of the Japanese code page). A name
/// built of them displays as `..` or as another folder (`scripts/․․/SKILL.md` reads like
/// the package's own SKILL.md), and an unpacker working in such a code page writes it as a
/// real `..\`, outside the folder it unpacks into. The ASCII dot stays allowed inside
/// a name (`.hidden`, `x..y`); these never are.
pub fn is_dot_or_separator_lookalike(c: char) -> bool {
    matches!(
        c,
        '\u{2024}'   // ONE DOT LEADER
        | '\u{2025}' // TWO DOT LEADER
        | '\u{2026}' // HORIZONTAL ELLIPSIS
        | '\u{FE52}' // SMALL FULL STOP
        | '\u{FF0E}' // FULLWIDTH FULL STOP
        | '\u{2044}' // FRACTION SLASH
        | '\u{2215}' // DIVISION SLASH
        | '\u{29F8}' // BIG SOLIDUS
        | '\u{FF0F}' // FULLWIDTH SOLIDUS
        | '\u{2216}' // SET MINUS
        | '\u{29F5}' // REVERSE SOLIDUS OPERATOR
        | '\u{29F9}' // BIG REVERSE SOLIDUS
        | '\u{FE68}' // SMALL REVERSE SOLIDUS
        | '\u{FF3C}' // FULLWIDTH REVERSE SOLIDUS
        | '\u{00A5}' // YEN SIGN (the backslash of code page 932)
        | '\u{20A9}' // WON SIGN (the backslash of code page 949)
    )
}

/// Why Windows cannot unpack a file at `path` under that name, or `None`. Per segment: a
/// reserved device name ([`WINDOWS_DEVICE_NAMES`]) before the first dot, trailing spaces
/// ignored as Windows ignores them; a trailing space or dot (Windows drops it, so `a.` and
/// `a` are one file); a character of [`WINDOWS_FORBIDDEN_CHARS`]. Anywhere: a look-alike of
/// a dot or a separator ([`is_dot_or_separator_lookalike`]). Control characters and
/// backslashes are refused by [`validate_logical_path`] before this is asked.
pub fn windows_unsafe_reason(path: &str) -> Option<String> {
    if let Some(c) = path.chars().find(|c| is_dot_or_separator_lookalike(*c)) {
        return Some(format!(
            "holds U+{:04X} `{c}`, which reads as a dot or a path separator (and becomes one \
             when Windows converts the name to a legacy code page)",
            c as u32
        ));
    }
    for segment in path.split('/') {
        if let Some(c) = segment
            .chars()
            .find(|c| WINDOWS_FORBIDDEN_CHARS.contains(c))
        {
            return Some(format!(
                "`{segment}` holds `{c}`, which Windows does not allow in file names \
                 (< > : \" | ? *)"
            ));
        }
        if segment.ends_with(' ') || segment.ends_with('.') {
            return Some(format!(
                "`{segment}` ends with a {}, which Windows drops from file names",
                if segment.ends_with(' ') {
                    "space"
                } else {
                    "dot"
                }
            ));
        }
        let stem = segment
            .split('.')
            .next()
            .unwrap_or(segment)
            .trim_end_matches(' ');
        if is_windows_device_name(stem) {
            return Some(format!(
                "`{segment}` is a device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9, \
                 with any extension, in any case)"
            ));
        }
    }
    None
}

/// Relative POSIX path: no leading `/`, no empty, `.` or `..` segment, no backslash, control
/// character or invisible/bidirectional mark ([`is_invisible_or_bidi`]), nothing Windows
/// cannot unpack ([`windows_unsafe_reason`]), at most 255 bytes.
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
    if let Some(c) = path.chars().find(|c| is_invisible_or_bidi(*c)) {
        return Err(ValidationError::invalid(
            field,
            format!(
                "must not contain invisible or bidirectional formatting character U+{:04X} (it makes one path display as another)",
                c as u32
            ),
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
    if let Some(reason) = windows_unsafe_reason(path) {
        return Err(ValidationError::invalid(
            field,
            format!("`{path}` cannot be unpacked on Windows: {reason}"),
        ));
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
    reject_controls("instruction_body", &content.instruction_body, Lines::Many)?;
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
    validate_metadata_text(&content.metadata)?;
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
    use serde_json::json;

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

    fn field_of(c: &RevisionContent) -> String {
        validate_content(c).unwrap_err().field
    }

    #[test]
    fn metadata_refuses_control_characters_at_every_depth() {
        let with = |metadata: serde_json::Value| {
            let mut c = content();
            c.metadata = metadata.as_object().unwrap().clone();
            c
        };
        let refused = [
            (json!({"k": "a\u{0}b"}), "metadata.k"),
            (json!({"a\u{0}b": "v"}), "metadata"),
            (json!({"k": "\u{1b}[31mred"}), "metadata.k"),
            (json!({"k": "c1 \u{9b}"}), "metadata.k"),
            (
                json!({"metadata": {"team": ["ok", "x\u{0}"]}}),
                "metadata.metadata.team[1]",
            ),
            (json!({"metadata": {"bad\nkey": 1}}), "metadata.metadata"),
            (
                json!({"list": [{"deep": {"deeper": "\u{7f}"}}]}),
                "metadata.list[0].deep.deeper",
            ),
        ];
        for (metadata, field) in refused {
            let c = with(metadata.clone());
            let err = validate_content(&c).unwrap_err();
            assert_eq!(err.field, field, "{metadata}");
            assert_eq!(err.code, ErrorCode::ValidationError);
            assert!(
                err.message.contains("control character U+"),
                "{}",
                err.message
            );
        }
        // Line breaks and tabs are text in values; numbers, booleans and nulls are not text.
        let ok = with(json!({
            "k": "line one\nline two\r\n\tindented",
            "n": 1, "b": true, "z": null, "nested": {"é": ["ü", 2]}
        }));
        assert!(validate_content(&ok).is_ok());
    }

    #[test]
    fn text_fields_refuse_control_characters() {
        let mut c = content();
        c.name = "two\nlines".into();
        assert_eq!(field_of(&c), "name");
        c.name = "tab\there".into();
        assert_eq!(field_of(&c), "name");

        let mut c = content();
        c.description = "Folded YAML ends with a line break\n".into();
        assert!(validate_content(&c).is_ok());
        c.description = "bell\u{7}".into();
        assert_eq!(field_of(&c), "description");

        let mut c = content();
        c.instruction_body = "# Steps\r\n\t1. run\n".into();
        assert!(validate_content(&c).is_ok());
        c.instruction_body = "clear the screen \u{1b}[2J".into();
        let err = validate_content(&c).unwrap_err();
        assert_eq!(err.field, "instruction_body");
        assert!(err.message.contains("U+001B"), "{}", err.message);

        assert!(validate_key_name("name", "laptop key").is_ok());
        assert_eq!(
            validate_key_name("name", "a\u{0}").unwrap_err().field,
            "name"
        );
        assert_eq!(
            validate_key_name("name", &"k".repeat(KEY_NAME_MAX_CHARS + 1))
                .unwrap_err()
                .field,
            "name"
        );
        assert!(validate_note("note", "looks good\nship it").is_ok());
        assert_eq!(validate_note("note", "x\u{0}").unwrap_err().field, "note");
        assert_eq!(
            validate_note("reason", &"n".repeat(NOTE_MAX_CHARS + 1))
                .unwrap_err()
                .field,
            "reason"
        );
    }

    #[test]
    fn logical_paths_refuse_invisible_and_bidi_marks() {
        for ok in ["références/é.md", "docs/日本語.md", "emoji-😀.txt"] {
            assert!(validate_logical_path("p", ok).is_ok(), "{ok}");
        }
        for bad in [
            "scripts/gpj\u{202E}exe.sh",
            "a\u{200B}b",
            "\u{FEFF}x",
            "x\u{2066}y",
            "soft\u{AD}hyphen",
            "rlm\u{200F}",
            "word\u{2060}joiner",
        ] {
            let err = validate_logical_path("p", bad).unwrap_err();
            assert!(
                err.message.contains("bidirectional"),
                "{bad:?}: {}",
                err.message
            );
        }
    }

    #[test]
    fn logical_paths_refuse_what_windows_cannot_unpack() {
        for ok in [
            "references/CONTRIBUTING.md",
            "con-notes.md",
            "docs/console.txt",
            "auxiliary/readme.md",
            "COM10.txt",
            "LPT0",
            "x..y",
            ".hidden",
            "notes/a b.md",
            "a/b.c/d",
            "資料（最新）.md",
            "wait—then.md",
        ] {
            assert!(validate_logical_path("p", ok).is_ok(), "{ok}");
        }
        let refused = [
            ("references/CON", "device name"),
            ("con", "device name"),
            ("Aux.md", "device name"),
            ("scripts/nul.tar.gz", "device name"),
            ("COM1", "device name"),
            ("lpt9.txt", "device name"),
            ("com\u{00B9}.txt", "device name"),
            ("CON .txt", "device name"),
            ("conin$", "device name"),
            ("aux/readme.md", "device name"),
            ("notes ", "ends with a space"),
            ("docs /a.md", "ends with a space"),
            ("file.", "ends with a dot"),
            ("dir./x.md", "ends with a dot"),
            ("...", "ends with a dot"),
            ("a<b", "`<`"),
            ("a>b", "`>`"),
            ("c:d", "`:`"),
            ("what?.md", "`?`"),
            ("star*.md", "`*`"),
            ("pipe|x", "`|`"),
            ("say\"x\"", "`\"`"),
            ("references/\u{2024}\u{2024}/SKILL.md", "U+2024"),
            ("\u{2025}/x.md", "U+2025"),
            ("scripts/\u{2026}", "U+2026"),
            ("\u{FF0E}\u{FF0E}\u{FF0F}x", "U+FF0E"),
            ("a\u{FF0F}b", "U+FF0F"),
            ("a\u{2215}b", "U+2215"),
            ("a\u{FF3C}b", "U+FF3C"),
            ("..\u{00A5}..\u{00A5}x", "U+00A5"),
        ];
        for (bad, says) in refused {
            let err = validate_logical_path("components[0].logical_path", bad).unwrap_err();
            assert_eq!(err.field, "components[0].logical_path", "{bad:?}");
            assert_eq!(err.code, ErrorCode::ValidationError, "{bad:?}");
            assert!(
                err.message
                    .contains(&format!("`{bad}` cannot be unpacked on Windows"))
                    && err.message.contains(says),
                "{bad:?}: {}",
                err.message
            );
        }
        // A save names the component it refuses.
        let mut c = content();
        c.components = vec![
            component("references/a.md", 1),
            component("references/CON", 1),
        ];
        let err = validate_content(&c).unwrap_err();
        assert_eq!(err.field, "components[1].logical_path");
        assert!(err.message.contains("`references/CON`"), "{}", err.message);
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
