//! `SKILL.md`: YAML frontmatter (Agent Skills specification) + Markdown body.
//!
//! # Format read
//! ```text
//! ---                        <- first line (after an optional UTF-8 BOM), only `---`
//! name: deploy               <- YAML mapping; `name` and `description` are text
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
//! - The frontmatter is capped at [`FRONTMATTER_MAX_BYTES`] before the YAML parser sees it,
//!   and the whole file at [`SKILL_MD_MAX_BYTES`] before anything is read: a larger file
//!   holds a frontmatter or an instruction body over its limit (or more than
//!   [`SKILL_MD_FRAMING_BYTES`] of blank space around its frontmatter).
//! - Reading allocates the body it keeps and nothing per line.
//! - Error line/column numbers are those of SKILL.md itself.
//! - YAML values become JSON: integers stay integers, mapping keys are text.
//!
//! # Lenient reading
//! What real authors write is read when its intent is plain, and every such repair is
//! returned as a [`Repair`] (docs/packages.md, "Repairs"): a missing, unopened, unclosed or
//! late frontmatter ([`locate`]); YAML that strict parsers refuse (`frontmatter.rs`); a
//! missing `name` (from the first heading, else the folder, else the slug) or `description`
//! (from the first paragraph), and either one cut at its SPEC §1 limit. What is ambiguous
//! is still refused, with its line and column. The repairs are a function of the bytes, so
//! the same file always gives the same content.
//!
//! # Format written
//! [`render_skill_md`] writes `---\n`, the YAML of `name`, `description` and the metadata
//! keys in sorted order, `---\n`, one empty line, then the body verbatim. It checks that
//! parsing its output gives back exactly its input, with no repair, and refuses otherwise,
//! so an export is lossless or fails loudly.

use super::derive::{cut_chars, first_heading, first_paragraph};
use super::error::PackageError;
use super::frontmatter;
use super::repair::{Repair, RepairKind};
use crate::error::{ErrorCode, ValidationError};
use crate::limits::{DESCRIPTION_MAX_CHARS, INSTRUCTION_BODY_MAX_BYTES, NAME_MAX_CHARS};
use serde_json::{Map, Value};

/// Largest YAML frontmatter accepted (bytes between the two `---` lines).
pub const FRONTMATTER_MAX_BYTES: usize = 65_536;

/// What a SKILL.md may hold besides its frontmatter and its instruction body and still be
/// read: a BOM, the two `---` lines (with blanks after them), the line break after the
/// closing one, blank lines before a frontmatter that does not open the file.
pub const SKILL_MD_FRAMING_BYTES: usize = 1024;

/// Largest SKILL.md read: the largest frontmatter and the largest instruction body
/// (SPEC §1) in their framing. Any larger file is refused before it is read, so its size,
/// not its line count, bounds what reading it costs.
pub const SKILL_MD_MAX_BYTES: usize =
    FRONTMATTER_MAX_BYTES + INSTRUCTION_BODY_MAX_BYTES + SKILL_MD_FRAMING_BYTES;

/// Refuses a SKILL.md of `len` bytes that could not hold a skill ([`SKILL_MD_MAX_BYTES`]):
/// `PAYLOAD_TOO_LARGE` for the field `SKILL.md`, with the limit and the size.
pub fn check_skill_md_size(len: u64) -> Result<(), PackageError> {
    if len <= SKILL_MD_MAX_BYTES as u64 {
        return Ok(());
    }
    Err(PackageError::Validation(ValidationError {
        code: ErrorCode::PayloadTooLarge,
        field: SKILL_MD.to_string(),
        message: format!(
            "{len} bytes, more than the {SKILL_MD_MAX_BYTES} a SKILL.md can hold \
             ({FRONTMATTER_MAX_BYTES} of frontmatter, {INSTRUCTION_BODY_MAX_BYTES} of \
             instructions, {SKILL_MD_FRAMING_BYTES} around them)"
        ),
        limit: Some(SKILL_MD_MAX_BYTES as u64),
        actual: Some(len),
    }))
}

/// The file name of the instructions inside a package.
pub const SKILL_MD: &str = "SKILL.md";

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How many lines may come before a frontmatter that does not open the file.
const LEADING_LINES_MAX: usize = 10;

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
    /// What was repaired to read the file, in the order the rules ran (empty for a file
    /// that is exactly what the format asks for).
    pub repairs: Vec<Repair>,
}

/// Where a missing `name` may come from when the body has no heading.
#[derive(Debug, Clone, Default)]
pub struct NameHints {
    /// The skill's folder (a package's top folder, a repository path's last folder).
    pub folder: Option<String>,
    /// The slug the skill is imported as, when the caller asked for one.
    pub slug: Option<String>,
}

/// Parses SKILL.md bytes. Errors name `SKILL.md` (or the `name` / `description` field).
pub fn parse_skill_md(bytes: &[u8]) -> Result<ParsedSkillMd, PackageError> {
    parse_skill_md_with(bytes, &NameHints::default())
}

/// [`parse_skill_md`] with somewhere to take a missing name from.
pub fn parse_skill_md_with(bytes: &[u8], hints: &NameHints) -> Result<ParsedSkillMd, PackageError> {
    check_skill_md_size(bytes.len() as u64)?;
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
    let mut repairs = Vec::new();
    let located = locate(text, &mut repairs)?;
    let mut fm = match &located.yaml {
        Some((yaml, first_line)) => frontmatter::read(yaml, *first_line, &mut repairs)?,
        None => Default::default(),
    };
    let body = located.body;
    let name = text_field(
        "name",
        fm.values.remove("name"),
        fm.raw_name.take(),
        &mut repairs,
    )?;
    let description = text_field(
        "description",
        fm.values.remove("description"),
        fm.raw_description.take(),
        &mut repairs,
    )?;
    let name = match name {
        Some(name) => name,
        None => derive_name(&body, hints, located.yaml.is_some(), &mut repairs)?,
    };
    let description = match description {
        Some(d) => d,
        None => {
            let Some(paragraph) = first_paragraph(&body) else {
                return Err(PackageError::MissingField {
                    field: "description".into(),
                });
            };
            repairs.push(Repair::new(
                RepairKind::DescriptionFromBody,
                "description",
                missing("description", located.yaml.is_some()),
                "taken from the first paragraph of the instructions",
            ));
            paragraph
        }
    };
    let name = cut(
        name,
        "name",
        NAME_MAX_CHARS,
        RepairKind::NameCut,
        &mut repairs,
    );
    let description = cut(
        description,
        "description",
        DESCRIPTION_MAX_CHARS,
        RepairKind::DescriptionCut,
        &mut repairs,
    );
    Ok(ParsedSkillMd {
        name,
        description,
        metadata: fm.values,
        body,
        repairs,
    })
}

fn missing(field: &str, had_frontmatter: bool) -> String {
    if had_frontmatter {
        format!("the frontmatter has no `{field}` (or an empty one)")
    } else {
        format!("there is no frontmatter to take `{field}` from")
    }
}

/// `name` / `description` as text: a string as it is; a number, boolean or list as the
/// text written after the key (reported); missing, `null` or blank → `None`.
fn text_field(
    field: &str,
    value: Option<Value>,
    raw: Option<String>,
    repairs: &mut Vec<Repair>,
) -> Result<Option<String>, PackageError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok((!s.trim().is_empty()).then_some(s)),
        Some(other) => {
            let what = match other {
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                Value::Array(_) => "a list",
                _ => "a mapping",
            };
            let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
                return Err(PackageError::frontmatter(format!(
                    "`{field}` must be a text value (quote it if it looks like a number or a \
                     boolean)"
                )));
            };
            repairs.push(Repair::new(
                RepairKind::NotText,
                field,
                format!("YAML reads `{field}` as {what}"),
                format!("kept as the text written: \"{raw}\""),
            ));
            Ok(Some(raw))
        }
    }
}

fn derive_name(
    body: &str,
    hints: &NameHints,
    had_frontmatter: bool,
    repairs: &mut Vec<Repair>,
) -> Result<String, PackageError> {
    let problem = missing("name", had_frontmatter);
    if let Some(heading) = first_heading(body) {
        repairs.push(Repair::new(
            RepairKind::NameFromHeading,
            "name",
            problem,
            "taken from the first heading of the instructions",
        ));
        return Ok(heading);
    }
    let usable = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    if let Some(folder) = usable(&hints.folder) {
        repairs.push(Repair::new(
            RepairKind::NameFromFolder,
            "name",
            format!("{problem}, and the instructions have no heading"),
            "taken from the skill's folder name",
        ));
        return Ok(folder);
    }
    if let Some(slug) = usable(&hints.slug) {
        repairs.push(Repair::new(
            RepairKind::NameFromSlug,
            "name",
            format!("{problem}, the instructions have no heading and there is no folder"),
            "taken from the slug it is imported as",
        ));
        return Ok(slug);
    }
    Err(PackageError::MissingField {
        field: "name".into(),
    })
}

fn cut(
    text: String,
    field: &str,
    max: usize,
    kind: RepairKind,
    repairs: &mut Vec<Repair>,
) -> String {
    match cut_chars(&text, max) {
        None => text,
        Some(short) => {
            repairs.push(Repair::new(
                kind,
                field,
                format!(
                    "{} characters, more than the {max} allowed",
                    text.chars().count()
                ),
                format!("cut at {max} characters, ending with `…`"),
            ));
            short
        }
    }
}

/// Where the frontmatter is, and the body around it.
struct Located<'a> {
    /// The frontmatter text and the SKILL.md line it starts on; `None` without one.
    yaml: Option<(&'a str, usize)>,
    body: String,
}

/// Finds the frontmatter: at the top between `---` lines (the format); else, reported, one
/// that is never closed (it ends at its first blank line), one preceded by a few lines,
/// `key: value` lines at the top without the opening `---`, or none at all. Lines are
/// walked by their byte offsets, never collected.
fn locate<'a>(text: &'a str, repairs: &mut Vec<Repair>) -> Result<Located<'a>, PackageError> {
    let is_delimiter = |line: &str| strip_eol(line).trim_end_matches([' ', '\t']) == "---";
    let first = line_at(text, 0);
    if let Some(first) = first.filter(|l| is_delimiter(l) && l.ends_with('\n')) {
        let start = first.len();
        return Ok(match closing(text, start, is_delimiter) {
            Some((close, after)) => {
                check_size(close - start)?;
                Located {
                    yaml: Some((&text[start..close], 2)),
                    body: drop_one_break(&text[after..]).to_string(),
                }
            }
            None => {
                check_size(text.len() - start)?;
                match key_block(text, start) {
                    Some(end_byte) => {
                        let end = line_index(text, end_byte);
                        repairs.push(
                            Repair::new(
                                RepairKind::FrontmatterNotClosed,
                                "frontmatter",
                                "the `---` on line 1 is never closed by another `---` line",
                                format!(
                                    "the frontmatter ends at line {end} (its first line that is \
                                     not `key: value`); the rest is the instructions"
                                ),
                            )
                            .at(1),
                        );
                        Located {
                            yaml: Some((&text[start..end_byte], 2)),
                            body: drop_blank_line(&text[end_byte..]).to_string(),
                        }
                    }
                    None => {
                        repairs.push(no_frontmatter(
                            "the `---` on line 1 is never closed, and no `key: value` line \
                             follows it",
                        ));
                        Located {
                            yaml: None,
                            body: text.to_string(),
                        }
                    }
                }
            }
        });
    }
    // A frontmatter after a few leading lines (a comment, a quote, blank lines).
    for (i, (at, line)) in lines_from(text, 0).enumerate().take(LEADING_LINES_MAX) {
        if strip_eol(line).trim_start().starts_with('#') {
            break; // a heading: the instructions have begun
        }
        let start = at + line.len();
        if i == 0 || !is_delimiter(line) || !next_key_is_name_or_description(text, start) {
            continue;
        }
        let Some((close, after)) = closing(text, start, is_delimiter) else {
            continue;
        };
        check_size(close - start)?;
        let leading = &text[..at];
        let kept = !leading.trim().is_empty();
        repairs.push(
            Repair::new(
                RepairKind::FrontmatterNotAtStart,
                "frontmatter",
                format!("the frontmatter opens on line {} instead of line 1", i + 1),
                if kept {
                    "read from there; the lines before it are kept at the start of the \
                     instructions"
                } else {
                    "read from there; the blank lines before it are dropped"
                },
            )
            .at(i + 1),
        );
        let rest = drop_one_break(&text[after..]);
        return Ok(Located {
            yaml: Some((&text[start..close], i + 2)),
            body: if kept {
                format!("{leading}{rest}")
            } else {
                rest.to_string()
            },
        });
    }
    // `name:` / `description:` lines at the top without the opening `---`.
    if next_key_is_name_or_description(text, 0)
        && first.is_some_and(|l| !l.trim().is_empty())
        && let Some(end_byte) = key_block(text, 0)
    {
        check_size(end_byte)?;
        let closing_line = line_at(text, end_byte).filter(|l| is_delimiter(l));
        repairs.push(
            Repair::new(
                RepairKind::FrontmatterNotOpened,
                "frontmatter",
                "the file starts with `key: value` lines but no `---` line opens them",
                if closing_line.is_some() {
                    "read them as the frontmatter, up to the `---` line that closes them"
                } else {
                    "read them as the frontmatter, up to their first blank line"
                },
            )
            .at(1),
        );
        let body = match closing_line {
            Some(line) => drop_one_break(&text[end_byte + line.len()..]),
            None => drop_blank_line(&text[end_byte..]),
        };
        return Ok(Located {
            yaml: Some((&text[..end_byte], 1)),
            body: body.to_string(),
        });
    }
    repairs.push(no_frontmatter(
        "SKILL.md has no frontmatter (it does not start with a `---` line)",
    ));
    Ok(Located {
        yaml: None,
        body: text.to_string(),
    })
}

fn no_frontmatter(problem: &str) -> Repair {
    Repair::new(
        RepairKind::FrontmatterMissing,
        "frontmatter",
        problem,
        "the whole file is the instructions; name and description come from it",
    )
}

/// The lines of `text` from byte `from` (a line's start), each with its line break and the
/// byte it starts at.
fn lines_from(text: &str, from: usize) -> impl Iterator<Item = (usize, &str)> {
    text[from..].split_inclusive('\n').scan(from, |at, line| {
        let start = *at;
        *at += line.len();
        Some((start, line))
    })
}

/// The line that starts at byte `at`, with its line break; `None` at the end of the text.
fn line_at(text: &str, at: usize) -> Option<&str> {
    text.get(at..)?.split_inclusive('\n').next()
}

/// The index (from 0) of the line that starts at byte `at`: how many lines come before it.
fn line_index(text: &str, at: usize) -> usize {
    let before = &text[..at];
    before.bytes().filter(|b| *b == b'\n').count()
        + usize::from(!before.is_empty() && !before.ends_with('\n'))
}

/// Where the frontmatter that starts at byte `from` ends, and where what follows its closing
/// line starts.
fn closing(text: &str, from: usize, is_delimiter: impl Fn(&str) -> bool) -> Option<(usize, usize)> {
    lines_from(text, from)
        .find(|(_, line)| is_delimiter(line))
        .map(|(at, line)| (at, at + line.len()))
}

/// From byte `from`, the `key: value` lines and their continuations (indented lines,
/// `- item` lines); returns the byte where the first line past them starts, when at least
/// one key line was seen.
fn key_block(text: &str, from: usize) -> Option<usize> {
    let mut saw_key = false;
    for (at, line) in lines_from(text, from) {
        let l = strip_eol(line);
        let continues = saw_key && (l.starts_with([' ', '\t']) || l.starts_with("- ") || l == "-");
        let key = super::frontmatter::key_of_line(l).is_some();
        if l.trim().is_empty() || !(key || continues) {
            return saw_key.then_some(at);
        }
        saw_key |= key;
    }
    saw_key.then_some(text.len())
}

fn next_key_is_name_or_description(text: &str, from: usize) -> bool {
    lines_from(text, from)
        .map(|(_, l)| strip_eol(l))
        .find(|l| !l.trim().is_empty())
        .and_then(super::frontmatter::key_of_line)
        .is_some_and(|k| k == "name" || k == "description")
}

fn check_size(len: usize) -> Result<(), PackageError> {
    if len > FRONTMATTER_MAX_BYTES {
        return Err(PackageError::FrontmatterTooLarge {
            limit: FRONTMATTER_MAX_BYTES as u64,
            actual: len as u64,
        });
    }
    Ok(())
}

/// One line break right after the closing line is not part of the body.
fn drop_one_break(after: &str) -> &str {
    after
        .strip_prefix("\r\n")
        .or_else(|| after.strip_prefix('\n'))
        .unwrap_or(after)
}

/// The blank line that ended a frontmatter without a closing `---` is not part of the
/// body either.
fn drop_blank_line(rest: &str) -> &str {
    match rest.split_inclusive('\n').next() {
        Some(line) if line.trim().is_empty() => &rest[line.len()..],
        _ => rest,
    }
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
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
    if !reparsed.repairs.is_empty()
        || reparsed.name != name
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
    fn what_cannot_be_repaired_is_refused() {
        // nothing to take a description from
        let e = parse("name: a\n").unwrap_err();
        assert_eq!(
            (e.kind(), e.field().as_str()),
            ("missing_field", "description")
        );
        let e = parse("# Only a heading\n").unwrap_err();
        assert_eq!(e.field(), "description");
        // no name: no heading, no folder, no slug
        let e = parse("---\ndescription: b\n---\nx").unwrap_err();
        assert_eq!(e.field(), "name");
        // a name that is a multi-line list has no one-line text form
        let e = parse("---\nname:\n  - a\n  - b\ndescription: b\n---\nx").unwrap_err();
        assert!(e.to_string().contains("text value"), "{e}");
        // multi-line values with no JSON form
        let e = parse("---\nname: a\ndescription: b\nx: !tag\n  k: 1\n---\nx").unwrap_err();
        assert!(e.to_string().contains("tags"), "{e}");
        let e = parse("---\nname: a\ndescription: b\nx:\n  - .inf\n---\nx").unwrap_err();
        assert!(e.to_string().contains("finite"), "{e}");
    }

    #[test]
    fn plain_intent_is_repaired_and_reported() {
        let p = parse("---\nname: a\ndescription: b\n").unwrap();
        assert_eq!((p.name.as_str(), p.body.as_str()), ("a", ""));
        assert_eq!(p.repairs[0].kind, RepairKind::FrontmatterNotClosed);
        let p = parse("---\nname: 12\ndescription: b\n---\nx").unwrap();
        assert_eq!(p.name, "12");
        assert_eq!(p.repairs[0].kind, RepairKind::NotText);
        let p = parse("---\nname: a\ndescription: b\nx: !tag 1\ny: .inf\n---\nx").unwrap();
        assert_eq!(
            Value::Object(p.metadata),
            json!({"x": "!tag 1", "y": ".inf"})
        );
        assert!(p.repairs.iter().all(|r| r.kind == RepairKind::ValueAsText));
        let p = parse("---\n- a\n---\n# A\n\nDoes a.").unwrap_err();
        assert_eq!(p.kind(), "invalid_yaml");
        let p = parse("---\nname: a\ndescription: [unclosed\n---\nbody").unwrap();
        assert_eq!(p.description, "[unclosed");
    }

    #[test]
    fn yaml_errors_point_into_the_file() {
        // line 3 of the file holds the quote that never closes
        let e = parse("---\nname: a\ndescription: \"unclosed\n---\nbody").unwrap_err();
        match &e {
            PackageError::Yaml { line, column, .. } => {
                assert_eq!((*line, *column), (Some(3), Some(14)), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let e = parse("---\nname: a\n  bad: indent\ndescription: b\n---\nbody").unwrap_err();
        match &e {
            PackageError::Yaml { line, .. } => assert_eq!(*line, Some(3), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("line 3"), "{e}");
        // a late frontmatter: still lines of the file
        let e = parse("<!-- c -->\n---\nname: a\ndescription: b\n  k: v\n---\nbody").unwrap_err();
        match &e {
            PackageError::Yaml { line, .. } => assert_eq!(*line, Some(5), "{e}"),
            other => panic!("{other:?}"),
        }
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
    fn a_file_larger_than_any_skill_md_is_refused_before_it_is_read() {
        // Not UTF-8 past the limit: the size is the answer, so nothing was read.
        let mut big = vec![b'\n'; SKILL_MD_MAX_BYTES];
        big.push(0xff);
        let e = parse_skill_md(&big).unwrap_err();
        assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
        assert_eq!(e.field(), SKILL_MD);
        assert_eq!(e.limit(), Some(SKILL_MD_MAX_BYTES as u64));
        assert_eq!(e.actual(), Some(SKILL_MD_MAX_BYTES as u64 + 1));
        assert!(check_skill_md_size(SKILL_MD_MAX_BYTES as u64).is_ok());
    }

    #[test]
    fn the_largest_skill_md_fits_the_bound() {
        // A frontmatter of exactly its limit and a body of exactly its limit, CRLF framing and
        // a BOM: the bound must not refuse what the other limits accept.
        let head = "name: big\r\ndescription: the largest file\r\n# ";
        let fm = format!(
            "{head}{}\r\n",
            "y".repeat(FRONTMATTER_MAX_BYTES - head.len() - 2)
        );
        assert_eq!(fm.len(), FRONTMATTER_MAX_BYTES);
        let body = "b".repeat(INSTRUCTION_BODY_MAX_BYTES);
        let text = format!("\u{feff}---  \r\n{fm}---\t\r\n\r\n{body}");
        assert!(text.len() <= SKILL_MD_MAX_BYTES, "{}", text.len());
        let p = parse_skill_md(text.as_bytes()).unwrap();
        assert_eq!(
            (p.name.as_str(), p.body.len()),
            ("big", INSTRUCTION_BODY_MAX_BYTES)
        );
    }

    #[test]
    fn locating_by_offsets_keeps_line_numbers() {
        // An unclosed frontmatter ends at its first line that is not `key: value`, with or
        // without a final line break.
        for text in [
            "---\nname: a\ndescription: b\n\nbody",
            "---\nname: a\ndescription: b",
        ] {
            let p = parse(text).unwrap();
            assert_eq!(p.repairs[0].kind, RepairKind::FrontmatterNotClosed);
            assert!(
                p.repairs[0].action.contains("ends at line 3"),
                "{:?}",
                p.repairs[0]
            );
        }
        // A late frontmatter after blank lines: its YAML errors name lines of the file.
        let e = parse("\n\n---\nname: a\n  bad: x\ndescription: b\n---\nbody").unwrap_err();
        match &e {
            PackageError::Yaml { line, .. } => assert_eq!(*line, Some(5), "{e}"),
            other => panic!("{other:?}"),
        }
        // `key: value` lines without the opening `---`, closed by one.
        let p = parse("name: a\ndescription: b\n---\n\nbody").unwrap();
        assert_eq!((p.name.as_str(), p.body.as_str()), ("a", "body"));
        assert_eq!(p.repairs[0].kind, RepairKind::FrontmatterNotOpened);
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
