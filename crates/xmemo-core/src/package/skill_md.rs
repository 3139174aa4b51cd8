//! `SKILL.md`: YAML frontmatter (Agent Skills specification) + Markdown body.
//!
//! # Format read
//! ```text
//! ---                        <- first line (after an optional UTF-8 BOM), only `---`
//! name: deploy               <- YAML mapping; `name` and `description` are required strings
//! description: How we deploy
//! license: MIT               <- every other key is kept in `metadata`, values as JSON
//! ---                        <- the first later line that is exactly `---` closes it
//!                            <- ONE line break right after the closing line is dropped
//! # Body…                    <- the rest, verbatim: the instruction body
//! ```
//! Choices (also in docs):
//! - Strict UTF-8; a leading BOM is stripped. Line endings are not normalised: `---\r\n`
//!   delimiters are recognised and a CRLF body is kept byte for byte, so the canonical hash
//!   is of exactly what was imported.
//! - The frontmatter is capped at [`FRONTMATTER_MAX_BYTES`] before the YAML parser sees it.
//! - YAML is parsed together with its opening `---` line, so error line/column numbers are
//!   those of SKILL.md itself.
//! - YAML values become JSON: integers stay integers, floats must be finite, mapping keys
//!   must be strings (numbers and booleans are turned into their text), tags (`!x`) are
//!   refused. Aliases are expanded (with the parser's repetition limit).
//!
//! # Format written
//! [`render_skill_md`] writes `---\n`, the YAML of `name`, `description` and the metadata
//! keys in sorted order, `---\n`, one empty line, then the body verbatim. It checks that
//! parsing its output gives back exactly its input and refuses otherwise, so an export is
//! lossless or fails loudly.

use super::error::PackageError;
use serde_json::{Map, Number, Value};

/// Largest YAML frontmatter accepted (bytes between the two `---` lines).
pub const FRONTMATTER_MAX_BYTES: usize = 65_536;

/// The file name of the instructions inside a package.
pub const SKILL_MD: &str = "SKILL.md";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The content of a SKILL.md file.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSkillMd {
    pub name: String,
    pub description: String,
    /// Every frontmatter key except `name` and `description` (`license`, `compatibility`,
    /// `metadata`, `allowed-tools`, and unknown ones), values as JSON.
    pub metadata: Map<String, Value>,
    /// The instruction body, verbatim.
    pub body: String,
}

/// Parses SKILL.md bytes. Errors name `SKILL.md` (or the `name` / `description` field).
pub fn parse_skill_md(bytes: &[u8]) -> Result<ParsedSkillMd, PackageError> {
    let (bytes, bom_len) = match bytes.strip_prefix(BOM) {
        Some(rest) => (rest, BOM.len()),
        None => (bytes, 0),
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        PackageError::NotUtf8 {
            path: SKILL_MD.to_string(),
            offset: (valid + bom_len) as u64,
            line: bytes[..valid].iter().filter(|b| **b == b'\n').count() as u64 + 1,
        }
    })?;
    let (yaml_with_opening, after) = split_frontmatter(text)?;
    let frontmatter = parse_frontmatter(yaml_with_opening)?;
    let body = after
        .strip_prefix("\r\n")
        .or_else(|| after.strip_prefix('\n'))
        .unwrap_or(after)
        .to_string();
    Ok(ParsedSkillMd {
        name: frontmatter.0,
        description: frontmatter.1,
        metadata: frontmatter.2,
        body,
    })
}

/// Returns (`---` line + YAML text, everything after the closing line).
fn split_frontmatter(text: &str) -> Result<(&str, &str), PackageError> {
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next().unwrap_or_default();
    if strip_eol(opening).trim_end_matches([' ', '\t']) != "---" || !opening.ends_with('\n') {
        return Err(PackageError::frontmatter(
            "must start with a `---` line opening the YAML frontmatter (name, description)",
        ));
    }
    let mut offset = opening.len();
    for line in lines {
        if strip_eol(line).trim_end_matches([' ', '\t']) == "---" {
            let yaml_len = offset - opening.len();
            if yaml_len > FRONTMATTER_MAX_BYTES {
                return Err(PackageError::FrontmatterTooLarge {
                    limit: FRONTMATTER_MAX_BYTES as u64,
                    actual: yaml_len as u64,
                });
            }
            return Ok((&text[..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    if offset - opening.len() > FRONTMATTER_MAX_BYTES {
        return Err(PackageError::FrontmatterTooLarge {
            limit: FRONTMATTER_MAX_BYTES as u64,
            actual: (offset - opening.len()) as u64,
        });
    }
    Err(PackageError::frontmatter(
        "the YAML frontmatter is not closed by a `---` line",
    ))
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

type Frontmatter = (String, String, Map<String, Value>);

fn parse_frontmatter(yaml: &str) -> Result<Frontmatter, PackageError> {
    let value: yaml_serde::Value = yaml_serde::from_str(yaml).map_err(yaml_error)?;
    let yaml_serde::Value::Mapping(mapping) = value else {
        return Err(PackageError::frontmatter(
            "the YAML frontmatter must be a mapping with `name` and `description`",
        ));
    };
    let mut metadata = Map::new();
    let mut name = None;
    let mut description = None;
    for (key, value) in mapping {
        let key = json_key(&key, "")?;
        match key.as_str() {
            "name" | "description" => {
                let text = match value {
                    yaml_serde::Value::String(s) => s,
                    yaml_serde::Value::Null => String::new(),
                    _ => {
                        return Err(PackageError::frontmatter(format!(
                            "`{key}` must be a text value (quote it if it looks like a number \
                             or a boolean)"
                        )));
                    }
                };
                if key == "name" {
                    name = Some(text);
                } else {
                    description = Some(text);
                }
            }
            _ => {
                let json = to_json(value, &key)?;
                if metadata.insert(key.clone(), json).is_some() {
                    return Err(duplicate_key(&key));
                }
            }
        }
    }
    let name = name
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| PackageError::MissingField {
            field: "name".into(),
        })?;
    let description = description
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| PackageError::MissingField {
            field: "description".into(),
        })?;
    Ok((name, description, metadata))
}

fn yaml_error(e: yaml_serde::Error) -> PackageError {
    let location = e.location();
    PackageError::Yaml {
        line: location.as_ref().map(|l| l.line() as u64),
        column: location.as_ref().map(|l| l.column() as u64),
        message: e.to_string(),
    }
}

fn duplicate_key(key: &str) -> PackageError {
    PackageError::frontmatter(format!("duplicate key `{key}` in the YAML frontmatter"))
}

fn json_key(key: &yaml_serde::Value, at: &str) -> Result<String, PackageError> {
    match key {
        yaml_serde::Value::String(s) => Ok(s.clone()),
        yaml_serde::Value::Bool(b) => Ok(b.to_string()),
        yaml_serde::Value::Number(n) => Ok(n.to_string()),
        _ => Err(PackageError::frontmatter(format!(
            "mapping keys must be text (at `{}`)",
            if at.is_empty() { "top level" } else { at }
        ))),
    }
}

fn to_json(value: yaml_serde::Value, at: &str) -> Result<Value, PackageError> {
    Ok(match value {
        yaml_serde::Value::Null => Value::Null,
        yaml_serde::Value::Bool(b) => Value::Bool(b),
        yaml_serde::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| {
                        PackageError::frontmatter(format!(
                            "`{at}`: only finite numbers are supported (no .inf or .nan)"
                        ))
                    })?
            }
        }
        yaml_serde::Value::String(s) => Value::String(s),
        yaml_serde::Value::Sequence(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        yaml_serde::Value::Mapping(mapping) => {
            let mut object = Map::new();
            for (k, v) in mapping {
                let key = json_key(&k, at)?;
                let path = format!("{at}.{key}");
                let json = to_json(v, &path)?;
                if object.insert(key, json).is_some() {
                    return Err(duplicate_key(&path));
                }
            }
            Value::Object(object)
        }
        yaml_serde::Value::Tagged(tagged) => {
            return Err(PackageError::frontmatter(format!(
                "`{at}`: YAML tags ({}) are not supported",
                tagged.tag
            )));
        }
    })
}

/// Writes a SKILL.md for export (see the module documentation for the layout). Refuses
/// metadata keys `name` / `description` and anything whose rendering would not parse back
/// to exactly the same name, description, metadata and body.
pub fn render_skill_md(
    name: &str,
    description: &str,
    metadata: &Map<String, Value>,
    body: &str,
) -> Result<String, PackageError> {
    for reserved in ["name", "description"] {
        if metadata.contains_key(reserved) {
            return Err(PackageError::NotExportable {
                field: "metadata".into(),
                reason: format!(
                    "metadata key `{reserved}` collides with the SKILL.md frontmatter field \
                     `{reserved}`"
                ),
            });
        }
    }
    let not_exportable = |reason: String| PackageError::NotExportable {
        field: "metadata".into(),
        reason,
    };
    let mut mapping = yaml_serde::Mapping::new();
    mapping.insert("name".into(), name.into());
    mapping.insert("description".into(), description.into());
    let mut keys: Vec<&String> = metadata.keys().collect();
    keys.sort();
    for key in keys {
        let value = yaml_serde::to_value(&metadata[key.as_str()])
            .map_err(|e| not_exportable(format!("`{key}` cannot be written as YAML: {e}")))?;
        mapping.insert(key.as_str().into(), value);
    }
    let yaml = yaml_serde::to_string(&yaml_serde::Value::Mapping(mapping))
        .map_err(|e| not_exportable(format!("the frontmatter cannot be written as YAML: {e}")))?;
    let text = format!("---\n{yaml}---\n\n{body}");
    let reparsed = parse_skill_md(text.as_bytes()).map_err(|e| {
        not_exportable(format!(
            "the rendered SKILL.md does not parse back ({})",
            e.message()
        ))
    })?;
    if reparsed.name != name
        || reparsed.description != description
        || &reparsed.metadata != metadata
        || reparsed.body != body
    {
        return Err(not_exportable(
            "the content cannot be written as SKILL.md without changing it".into(),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<ParsedSkillMd, PackageError> {
        parse_skill_md(text.as_bytes())
    }

    #[test]
    fn minimal() {
        let p = parse("---\nname: deploy\ndescription: How we deploy\n---\n\n# Deploy\nRun it.\n")
            .unwrap();
        assert_eq!(p.name, "deploy");
        assert_eq!(p.description, "How we deploy");
        assert!(p.metadata.is_empty());
        assert_eq!(p.body, "# Deploy\nRun it.\n");
    }

    #[test]
    fn only_one_line_break_after_the_frontmatter_is_dropped() {
        let p = parse("---\nname: a\ndescription: b\n---\nbody").unwrap();
        assert_eq!(p.body, "body");
        let p = parse("---\nname: a\ndescription: b\n---\n\n\nbody").unwrap();
        assert_eq!(p.body, "\nbody");
        let p = parse("---\r\nname: a\r\ndescription: b\r\n---\r\n\r\nbody\r\n").unwrap();
        assert_eq!(p.body, "body\r\n");
    }

    #[test]
    fn unknown_keys_are_metadata() {
        let p = parse(
            "---\nname: a\ndescription: b\nlicense: MIT\nallowed-tools: Bash(git:*) Read\n\
             metadata:\n  author: ops\n  version: \"1.0\"\nx-custom: [1, 2.5, true, null]\n---\nB",
        )
        .unwrap();
        assert_eq!(
            Value::Object(p.metadata),
            json!({
                "license": "MIT",
                "allowed-tools": "Bash(git:*) Read",
                "metadata": {"author": "ops", "version": "1.0"},
                "x-custom": [1, 2.5, true, null],
            })
        );
    }

    #[test]
    fn errors() {
        let e = parse("name: a\n").unwrap_err();
        assert_eq!(e.kind(), "frontmatter");
        let e = parse("---\nname: a\ndescription: b\n").unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
        let e = parse("---\ndescription: b\n---\nx").unwrap_err();
        assert_eq!(e.field(), "name");
        let e = parse("---\nname: a\ndescription: ''\n---\nx").unwrap_err();
        assert_eq!(e.field(), "description");
        let e = parse("---\nname: 12\ndescription: b\n---\nx").unwrap_err();
        assert!(e.to_string().contains("text value"), "{e}");
        let e = parse("---\n- a\n---\nx").unwrap_err();
        assert!(e.to_string().contains("mapping"), "{e}");
        let e = parse("---\nname: a\ndescription: b\nx: !tag 1\n---\nx").unwrap_err();
        assert!(e.to_string().contains("tags"), "{e}");
        let e = parse("---\nname: a\ndescription: b\nx: .inf\n---\nx").unwrap_err();
        assert!(e.to_string().contains("finite"), "{e}");
    }

    #[test]
    fn yaml_errors_point_into_the_file() {
        // line 3 of the file holds the broken value
        let e = parse("---\nname: a\ndescription: [unclosed\n---\nbody").unwrap_err();
        match &e {
            PackageError::Yaml { line, column, .. } => {
                assert!(line.is_some() && column.is_some(), "{e}");
                assert!(line.unwrap() >= 3, "{e}");
            }
            other => panic!("{other:?}"),
        }
        let e = parse("---\nname: a\n  bad: indent\ndescription: b\n---\nbody").unwrap_err();
        match &e {
            PackageError::Yaml { line, .. } => assert_eq!(*line, Some(3), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let e = parse("---\nname: a\nname: b\ndescription: c\n---\nx").unwrap_err();
        assert!(matches!(
            e,
            PackageError::Yaml { .. } | PackageError::Frontmatter { .. }
        ));
        let e = parse("---\nname: a\ndescription: c\n1: x\n'1': y\n---\nx").unwrap_err();
        assert!(matches!(
            e,
            PackageError::Yaml { .. } | PackageError::Frontmatter { .. }
        ));
    }

    #[test]
    fn alias_bombs_are_bounded() {
        let mut y =
            String::from("---\nname: a\ndescription: b\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            y.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        y.push_str("---\nbody");
        // Expanded, the aliases name 10^12 nodes. The parser's bound on alias expansion (a
        // fixed multiple of the document's events) stops it: that error, not a clock, shows
        // the work was bounded.
        match parse(&y) {
            Err(PackageError::Yaml { message, .. }) => {
                assert!(message.contains("repetition limit exceeded"), "{message}");
            }
            other => panic!("an alias bomb was not stopped by the expansion bound: {other:?}"),
        }
    }

    #[test]
    fn render_round_trips() {
        let tricky = [
            "plain",
            "",
            "123",
            "1.0",
            "true",
            "null",
            "~",
            "yes",
            "no",
            "-",
            "---",
            "...",
            "a: b",
            "# not a comment",
            " leading and trailing ",
            "multi\nline\n",
            "multi\nline\n\n",
            "\n---\n",
            "tab\there",
            "quote ' and \" both",
            "unicode é 中文 🚀",
            "control \u{1} \u{7f} \u{85} \u{2028}",
            "&anchor",
            "*alias",
            "!tag",
            "%directive",
            "@at",
            "`tick",
            "{flow}",
            "[seq]",
            "0x1F",
            "0o17",
            "1e3",
            ".inf",
            "+1",
            "2024-01-01",
            "\r\n",
            "trailing\r",
        ];
        for s in tricky {
            let mut metadata = Map::new();
            metadata.insert(s.to_string(), json!(s));
            metadata.insert(
                "nested".into(),
                json!({ "k": s, "list": [s, 1, -2, 1.5, 1e300, u64::MAX, i64::MIN, null, false] }),
            );
            metadata.insert("metadata".into(), json!({}));
            metadata.insert("empty-list".into(), json!([]));
            let name = if s.trim().is_empty() { "x" } else { s };
            let body = format!("# Body\n{s}\n---\n");
            let text = render_skill_md(name, "desc", &metadata, &body)
                .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            let p = parse(&text).unwrap();
            assert_eq!(p.name, name);
            assert_eq!(p.metadata, metadata, "{s:?}\n{text}");
            assert_eq!(p.body, body);
        }
    }

    #[test]
    fn render_reproduces_typical_files_exactly() {
        let original = "---\nname: brand-guidelines\ndescription: Applies brand colors.\nlicense: Complete terms in LICENSE.txt\n---\n\n# Brand\n";
        let p = parse(original).unwrap();
        let rendered = render_skill_md(&p.name, &p.description, &p.metadata, &p.body).unwrap();
        assert_eq!(rendered, original);
    }

    #[test]
    fn render_refuses_reserved_metadata_keys() {
        let mut metadata = Map::new();
        metadata.insert("name".into(), json!("x"));
        let e = render_skill_md("a", "b", &metadata, "c").unwrap_err();
        assert_eq!(e.kind(), "not_exportable");
    }

    #[test]
    fn bom_and_utf8() {
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend_from_slice(b"---\nname: a\ndescription: b\n---\nbody");
        assert_eq!(parse_skill_md(&bytes).unwrap().body, "body");
        let e = parse_skill_md(b"---\nname: a\ndescription: b\n---\nbad \xff byte").unwrap_err();
        match e {
            PackageError::NotUtf8 { path, line, offset } => {
                assert_eq!(path, "SKILL.md");
                assert_eq!(line, 5);
                assert_eq!(offset, 35);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frontmatter_cap_is_checked_before_parsing() {
        let big = format!(
            "---\nname: a\ndescription: b\nx: \"{}\"\n---\nbody",
            "y".repeat(FRONTMATTER_MAX_BYTES)
        );
        let e = parse(&big).unwrap_err();
        assert_eq!(e.kind(), "frontmatter_too_large");
        assert_eq!(e.limit(), Some(FRONTMATTER_MAX_BYTES as u64));
        // unclosed and huge: still the size error, not a parse attempt
        let big = format!("---\nname: a\n{}", "z: 1\n".repeat(20_000));
        assert_eq!(parse(&big).unwrap_err().kind(), "frontmatter_too_large");
    }
}
