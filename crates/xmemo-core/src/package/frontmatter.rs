//! The frontmatter of a SKILL.md as JSON: YAML first, and when YAML refuses, a reader of
//! `key: value` entries that keeps what is plain and refuses what is ambiguous.
//!
//! Real authors write frontmatter that strict YAML parsers refuse but whose intent is plain:
//! `description: Use when: the user asks…` (a second `: `), `argument-hint: [a] [b]`, a flow
//! map with one brace too few, tabs. The rules, in order (docs/packages.md, "Repairs"):
//!
//! 1. The whole frontmatter is parsed as YAML. When that works, every value becomes JSON;
//!    a key that YAML reads as a number or boolean is kept as its text (`KeyAsText`), and a
//!    value with no JSON form (a tag, `.inf`, a list used as a key) is kept as the text
//!    written after its key (`ValueAsText`), or refused when it spans several lines.
//! 2. When YAML refuses it, the frontmatter is cut into entries: a line at column 0 that
//!    is `key: value` (or `key:`) starts one, indented lines and `- item` lines continue it,
//!    comments and blank lines between entries are dropped (`FrontmatterLineByLine`). Git
//!    conflict markers are read as two sides, kept together when no key differs between
//!    them (`MergeConflict`). Any other line, a key given twice, or a conflict whose sides
//!    disagree is ambiguous: refused with its line and column.
//! 3. Each entry is parsed as YAML on its own. When YAML refuses it: with tabs in its
//!    indentation, it is tried again with each tab as two spaces (`TabIndentation`); a plain
//!    value (not quoted, not a `|`/`>` block, not a nested block) is kept as the text
//!    written, its continuation lines joined by spaces (`ValueAsText`); anything else is
//!    refused with YAML's line and column.
//!
//! Nothing here is silent: every rule that changes how a value is read pushes a [`Repair`].

use super::error::PackageError;
use super::repair::{Repair, RepairKind};
use serde_json::{Map, Number, Value};

/// What the frontmatter says, before `name` and `description` are checked.
#[derive(Debug, Default)]
pub(super) struct Frontmatter {
    /// Every key, `name` and `description` included, values as JSON.
    pub values: Map<String, Value>,
    /// The text written after `name:` / `description:` when YAML read a number, a boolean
    /// or a list there (a single line only).
    pub raw_name: Option<String>,
    pub raw_description: Option<String>,
}

/// Reads `yaml`, the text between the frontmatter's delimiters, whose first line is line
/// `first_line` of SKILL.md (so every reported line is one of SKILL.md).
pub(super) fn read(
    yaml: &str,
    first_line: usize,
    repairs: &mut Vec<Repair>,
) -> Result<Frontmatter, PackageError> {
    match yaml_serde::from_str::<yaml_serde::Value>(yaml) {
        Ok(yaml_serde::Value::Null) => Ok(Frontmatter::default()),
        Ok(yaml_serde::Value::Mapping(mapping)) => from_mapping(mapping, yaml, first_line, repairs),
        Ok(_) => line_by_line(
            yaml,
            first_line,
            "the YAML frontmatter is not a mapping of keys to values".into(),
            repairs,
        ),
        Err(e) => {
            // A parser limit is a refusal, never a reason to read the text another way.
            if is_limit(&e) {
                return Err(yaml_error(&e, first_line));
            }
            let problem = format!("YAML refused the frontmatter: {}", located(&e, first_line));
            line_by_line(yaml, first_line, problem, repairs)
        }
    }
}

/// Rule 1: the whole frontmatter parsed.
fn from_mapping(
    mapping: yaml_serde::Mapping,
    yaml: &str,
    first_line: usize,
    repairs: &mut Vec<Repair>,
) -> Result<Frontmatter, PackageError> {
    let mut out = Frontmatter::default();
    // Cut into entries only when a value needs the text written after its key.
    let mut entries: Option<Vec<Entry>> = None;
    for (key, value) in mapping {
        let key = top_key(&key, repairs)?;
        let mut local = Vec::new();
        let field = field_of(&key);
        let json = match to_json(value, &field, &mut local) {
            Ok(json) => {
                repairs.append(&mut local);
                json
            }
            Err(reason) => {
                if entries.is_none() {
                    entries = segment(yaml, first_line).ok().map(|s| s.entries);
                }
                let entry = entries
                    .as_ref()
                    .and_then(|all| all.iter().find(|e| e.key == key));
                match entry.and_then(Entry::single_line_text) {
                    Some(text) => {
                        repairs.push(value_as_text(&field, &reason, entry_line(entry)));
                        Value::String(text)
                    }
                    None => {
                        return Err(PackageError::frontmatter(format!("`{field}`: {reason}")));
                    }
                }
            }
        };
        if out.values.insert(key.clone(), json).is_some() {
            return Err(duplicate_key(&key, None));
        }
    }
    for (key, slot) in [
        ("name", &mut out.raw_name),
        ("description", &mut out.raw_description),
    ] {
        if matches!(
            out.values.get(key),
            Some(Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_))
        ) {
            if entries.is_none() {
                entries = segment(yaml, first_line).ok().map(|s| s.entries);
            }
            *slot = entries
                .as_ref()
                .and_then(|all| all.iter().find(|e| e.key == key))
                .and_then(Entry::single_line_text);
        }
    }
    Ok(out)
}

fn entry_line(entry: Option<&Entry>) -> Option<usize> {
    entry.map(|e| e.line)
}

/// Rules 2 and 3.
fn line_by_line(
    yaml: &str,
    first_line: usize,
    problem: String,
    repairs: &mut Vec<Repair>,
) -> Result<Frontmatter, PackageError> {
    let segmented = segment(yaml, first_line)?;
    repairs.push(
        Repair::new(
            RepairKind::FrontmatterLineByLine,
            "frontmatter",
            problem,
            "read it entry by entry: each `key: value` line with its indented continuation lines",
        )
        .at(first_line),
    );
    for conflict in &segmented.conflicts {
        repairs.push(
            Repair::new(
                RepairKind::MergeConflict,
                "frontmatter",
                format!(
                    "unresolved git merge-conflict markers (lines {}–{})",
                    conflict.0, conflict.1
                ),
                "no key differs between the two sides: both sides were kept, the markers dropped",
            )
            .at(conflict.0),
        );
    }
    let mut out = Frontmatter::default();
    let mut seen: Vec<(String, usize)> = Vec::new();
    for entry in &segmented.entries {
        let (key, value) = parse_entry(entry, repairs)?;
        if let Some((_, line)) = seen.iter().find(|(k, _)| *k == key) {
            return Err(duplicate_key(&key, Some((*line, entry.line))));
        }
        seen.push((key.clone(), entry.line));
        if matches!(
            value,
            Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_)
        ) {
            if key == "name" {
                out.raw_name = entry.single_line_text();
            } else if key == "description" {
                out.raw_description = entry.single_line_text();
            }
        }
        out.values.insert(key, value);
    }
    Ok(out)
}

/// One top-level entry of a frontmatter: its key line and the lines that continue it.
#[derive(Debug, Clone)]
struct Entry {
    /// The key as written (quotes removed), for finding an entry by key.
    key: String,
    /// Line number of the key line in SKILL.md.
    line: usize,
    /// The key line as written.
    key_line: String,
    /// The text after `key:` on the key line, trimmed.
    inline: String,
    /// The continuation lines, as written (trailing blank lines dropped).
    continuation: Vec<String>,
    /// Which side of a merge conflict the entry is on (0: outside one).
    side: u8,
    /// Which conflict (index) the side belongs to.
    conflict: usize,
}

impl Entry {
    fn text(&self) -> String {
        let mut text = self.key_line.clone();
        for line in &self.continuation {
            text.push('\n');
            text.push_str(line);
        }
        text.push('\n');
        text
    }

    /// The value as written, when it is on the key line alone.
    fn single_line_text(&self) -> Option<String> {
        (self.continuation.iter().all(|l| l.trim().is_empty()) && !self.inline.is_empty())
            .then(|| self.inline.clone())
    }

    /// A plain value (rule 3): not quoted, not a block scalar, not a nested block; its
    /// continuation lines, if any, look like more of the same text, not like keys or items.
    fn plain_text(&self) -> Option<String> {
        let first = self.inline.chars().next()?;
        if matches!(first, '"' | '\'' | '|' | '>') {
            return None;
        }
        let mut text = self.inline.clone();
        let mut pending_break = false;
        for line in &self.continuation {
            let t = line.trim();
            if t.is_empty() {
                pending_break = true;
                continue;
            }
            if t.starts_with("- ") || t == "-" || looks_like_key(t) {
                return None;
            }
            text.push(if pending_break { '\n' } else { ' ' });
            pending_break = false;
            text.push_str(t);
        }
        Some(text)
    }
}

struct Segmented {
    entries: Vec<Entry>,
    /// (first line, last line) of each merge conflict.
    conflicts: Vec<(usize, usize)>,
}

/// Rule 2: cuts the frontmatter into entries.
fn segment(yaml: &str, first_line: usize) -> Result<Segmented, PackageError> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut conflicts: Vec<(usize, usize)> = Vec::new();
    let mut side = 0u8;
    let mut conflict_start = 0usize;
    for (i, raw) in yaml.split_inclusive('\n').enumerate() {
        let line_no = first_line + i;
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with("<<<<<<<") {
            if side != 0 {
                return Err(ambiguous(
                    line_no,
                    1,
                    "a merge-conflict marker inside another",
                ));
            }
            side = 1;
            conflict_start = line_no;
            continue;
        }
        if line.trim_end() == "=======" && side == 1 {
            side = 2;
            continue;
        }
        if line.starts_with(">>>>>>>") {
            if side != 2 {
                return Err(ambiguous(
                    line_no,
                    1,
                    "a merge-conflict marker out of order",
                ));
            }
            side = 0;
            conflicts.push((conflict_start, line_no));
            continue;
        }
        let continues = |entries: &mut Vec<Entry>, side: u8| -> bool {
            match entries.last_mut() {
                // A conflict side starts its own entries.
                Some(last) if last.side == side => {
                    last.continuation.push(line.to_string());
                    true
                }
                _ => false,
            }
        };
        if line.trim().is_empty() {
            continues(&mut entries, side);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if !continues(&mut entries, side) {
                return Err(ambiguous(
                    line_no,
                    1,
                    "an indented line with no `key:` line above it",
                ));
            }
            continue;
        }
        if line == "-" || line.starts_with("- ") {
            // A block list at column 0 belongs to the key above it when that key has no
            // value on its own line.
            let belongs = entries
                .last()
                .is_some_and(|last| last.side == side && last.inline.is_empty());
            if belongs && continues(&mut entries, side) {
                continue;
            }
            return Err(ambiguous(
                line_no,
                1,
                "a list item that belongs to no `key:` line",
            ));
        }
        let Some((key, rest)) = split_key(line) else {
            return Err(ambiguous(
                line_no,
                1,
                "this line is neither `key: value` nor an indented continuation of the line \
                 above",
            ));
        };
        entries.push(Entry {
            key,
            line: line_no,
            key_line: line.to_string(),
            inline: rest.trim().to_string(),
            continuation: Vec::new(),
            side,
            conflict: conflicts.len(),
        });
    }
    if side != 0 {
        return Err(ambiguous(
            conflict_start,
            1,
            "a merge-conflict marker that is never closed",
        ));
    }
    for entry in &mut entries {
        while entry
            .continuation
            .last()
            .is_some_and(|l| l.trim().is_empty())
        {
            entry.continuation.pop();
        }
    }
    // Merge-conflict sides: one key set differently on the two sides is ambiguous; the
    // same entry on both sides is kept once.
    let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.side == 2
            && let Some(other) = kept
                .iter()
                .find(|k| k.side == 1 && k.conflict == entry.conflict && k.key == entry.key)
        {
            if other.text() != entry.text() {
                return Err(ambiguous(
                    entry.line,
                    1,
                    &format!(
                        "the two sides of a merge conflict set `{}` differently (lines {} and {})",
                        entry.key, other.line, entry.line
                    ),
                ));
            }
            continue;
        }
        kept.push(entry);
    }
    Ok(Segmented {
        entries: kept,
        conflicts,
    })
}

/// The key of a `key: value` line at column 0 (see [`split_key`]).
pub(super) fn key_of_line(line: &str) -> Option<String> {
    split_key(line).map(|(key, _)| key)
}

/// `key: rest` of a line at column 0: the key up to the first `:` followed by a space, a
/// tab or the end of the line (or a quoted key). `None` for anything else.
fn split_key(line: &str) -> Option<(String, &str)> {
    let first = line.chars().next()?;
    if first.is_whitespace() || first == '#' || line.starts_with("- ") || line == "-" {
        return None;
    }
    if matches!(first, '"' | '\'') {
        let close = line[1..].find(first)? + 1;
        let key = &line[1..close];
        let after = line[close + 1..].trim_start_matches([' ', '\t']);
        let rest = after.strip_prefix(':')?;
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            return None;
        }
        return Some((key.to_string(), rest));
    }
    // Characters YAML gives a meaning at the start of a key.
    if matches!(
        first,
        '[' | '{' | '&' | '*' | '!' | '|' | '>' | '%' | '@' | '`' | '?' | ':' | ','
    ) {
        return None;
    }
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b':' && matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')) {
            let key = line[..i].trim_end();
            if key.is_empty() {
                return None;
            }
            return Some((key.to_string(), &line[i + 1..]));
        }
    }
    None
}

fn looks_like_key(trimmed: &str) -> bool {
    split_key(trimmed).is_some()
}

/// Rule 3: one entry.
fn parse_entry(entry: &Entry, repairs: &mut Vec<Repair>) -> Result<(String, Value), PackageError> {
    let text = entry.text();
    let first = match parse_one(&text, entry) {
        Ok((key, value, mut local)) => {
            repairs.append(&mut local);
            return Ok((key, value));
        }
        Err(e) => e,
    };
    let has_tabs = text
        .lines()
        .any(|l| l.trim_start_matches(' ').starts_with('\t') && !l.trim().is_empty());
    if has_tabs {
        let spaced: String = text
            .lines()
            .map(|l| {
                let body = l.trim_start_matches([' ', '\t']);
                let indent = &l[..l.len() - body.len()];
                format!("{}{body}\n", indent.replace('\t', "  "))
            })
            .collect();
        if let Ok((key, value, mut local)) = parse_one(&spaced, entry) {
            repairs.push(
                Repair::new(
                    RepairKind::TabIndentation,
                    field_of(&key),
                    "tab characters used as indentation (YAML allows only spaces)",
                    "each tab read as two spaces",
                )
                .at(entry.line),
            );
            repairs.append(&mut local);
            return Ok((key, value));
        }
    }
    match (entry.plain_text(), first) {
        (Some(text), EntryError::Yaml { message, .. } | EntryError::Convert(message)) => {
            repairs.push(value_as_text(
                &field_of(&entry.key),
                &message,
                Some(entry.line),
            ));
            Ok((entry.key.clone(), Value::String(text)))
        }
        // A quoted value YAML cannot close: where the text ends is anyone's guess, so the
        // position reported is where the quote opens, not where YAML gave up.
        (None, EntryError::Yaml { message, .. }) if entry.inline.starts_with(['"', '\'']) => {
            let at = entry
                .key_line
                .find(entry.inline.as_str())
                .map_or(0, |byte| entry.key_line[..byte].chars().count());
            Err(ambiguous(
                entry.line,
                at + 1,
                &format!(
                    "`{}`: a quoted value that is never closed ({message})",
                    field_of(&entry.key)
                ),
            ))
        }
        (None, EntryError::Yaml { error, .. }) => Err(error),
        (None, EntryError::Convert(reason)) => Err(PackageError::Yaml {
            line: Some(entry.line as u64),
            column: Some(1),
            message: format!("`{}`: {reason}", field_of(&entry.key)),
        }),
    }
}

enum EntryError {
    /// YAML refused the entry: the error to report, and its message for a repair.
    Yaml {
        error: PackageError,
        message: String,
    },
    /// YAML read it, but the value has no JSON form.
    Convert(String),
}

fn parse_one(text: &str, entry: &Entry) -> Result<(String, Value, Vec<Repair>), EntryError> {
    let parsed = yaml_serde::from_str::<yaml_serde::Value>(text).map_err(|e| EntryError::Yaml {
        error: yaml_error(&e, entry.line),
        message: format!("YAML refused the value: {}", located(&e, entry.line)),
    })?;
    let yaml_serde::Value::Mapping(mapping) = parsed else {
        return Err(EntryError::Convert("not a `key: value` entry".into()));
    };
    let mut local = Vec::new();
    let mut iter = mapping.into_iter();
    let Some((key, value)) = iter.next() else {
        return Err(EntryError::Convert("not a `key: value` entry".into()));
    };
    if iter.next().is_some() {
        return Err(EntryError::Convert("more than one key in one entry".into()));
    }
    let key = top_key(&key, &mut local).map_err(|e| EntryError::Convert(e.message()))?;
    let value = to_json(value, &field_of(&key), &mut local).map_err(EntryError::Convert)?;
    Ok((key, value, local))
}

/// `name`, `description`, or `metadata.<key>` for every other top-level key (where
/// SPEC §1 keeps it).
fn field_of(key: &str) -> String {
    match key {
        "name" | "description" => key.to_string(),
        other => format!("metadata.{other}"),
    }
}

fn value_as_text(field: &str, reason: &str, line: Option<usize>) -> Repair {
    let key = field.strip_prefix("metadata.").unwrap_or(field);
    let repair = Repair::new(
        RepairKind::ValueAsText,
        field,
        reason.to_string(),
        format!("kept as the text written after `{key}:`"),
    );
    match line {
        Some(l) => repair.at(l),
        None => repair,
    }
}

fn top_key(key: &yaml_serde::Value, repairs: &mut Vec<Repair>) -> Result<String, PackageError> {
    json_key(key, "", repairs).map_err(PackageError::frontmatter)
}

/// A mapping key as text: strings as they are, numbers and booleans as their text
/// (reported); anything else has no JSON form.
fn json_key(
    key: &yaml_serde::Value,
    at: &str,
    repairs: &mut Vec<Repair>,
) -> Result<String, String> {
    let (text, what) = match key {
        yaml_serde::Value::String(s) => return Ok(s.clone()),
        yaml_serde::Value::Bool(b) => (b.to_string(), "a boolean"),
        yaml_serde::Value::Number(n) => (n.to_string(), "a number"),
        _ => {
            return Err(format!(
                "mapping keys must be text (at `{}`)",
                if at.is_empty() { "top level" } else { at }
            ));
        }
    };
    let path = if at.is_empty() {
        field_of(&text)
    } else {
        format!("{at}.{text}")
    };
    repairs.push(Repair::new(
        RepairKind::KeyAsText,
        path,
        format!("YAML reads the key `{text}` as {what}"),
        format!("kept as the text \"{text}\""),
    ));
    Ok(text)
}

/// A YAML value as JSON (integers stay integers); `Err` names why it has no JSON form.
fn to_json(value: yaml_serde::Value, at: &str, repairs: &mut Vec<Repair>) -> Result<Value, String> {
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
                        format!("`{at}`: only finite numbers have a JSON form (not .inf or .nan)")
                    })?
            }
        }
        yaml_serde::Value::String(s) => Value::String(s),
        yaml_serde::Value::Sequence(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &format!("{at}[{i}]"), repairs))
                .collect::<Result<_, _>>()?,
        ),
        yaml_serde::Value::Mapping(mapping) => {
            let mut object = Map::new();
            for (k, v) in mapping {
                let key = json_key(&k, at, repairs)?;
                let path = format!("{at}.{key}");
                let json = to_json(v, &path, repairs)?;
                if object.insert(key, json).is_some() {
                    return Err(format!("duplicate key `{path}`"));
                }
            }
            Value::Object(object)
        }
        yaml_serde::Value::Tagged(tagged) => {
            return Err(format!(
                "`{at}`: YAML tags ({}) have no JSON form",
                tagged.tag
            ));
        }
    })
}

fn duplicate_key(key: &str, lines: Option<(usize, usize)>) -> PackageError {
    match lines {
        Some((first, second)) => ambiguous(
            second,
            1,
            &format!("the key `{key}` is given twice (lines {first} and {second})"),
        ),
        None => PackageError::frontmatter(format!("duplicate key `{key}` in the YAML frontmatter")),
    }
}

fn ambiguous(line: usize, column: usize, message: &str) -> PackageError {
    PackageError::Yaml {
        line: Some(line as u64),
        column: Some(column as u64),
        message: message.to_string(),
    }
}

/// The parser's own bounds (alias expansion, nesting depth) are refusals: the input is
/// built to exhaust a reader, and reading it another way would do the work anyway.
fn is_limit(e: &yaml_serde::Error) -> bool {
    let text = e.to_string();
    text.contains("repetition limit exceeded") || text.contains("recursion limit exceeded")
}

/// A YAML error with its position in SKILL.md: `first_line` is the SKILL.md line of the
/// parsed text's line 1.
pub(super) fn yaml_error(e: &yaml_serde::Error, first_line: usize) -> PackageError {
    let location = e.location();
    PackageError::Yaml {
        line: location
            .as_ref()
            .map(|l| (l.line() + first_line - 1) as u64),
        column: location.as_ref().map(|l| l.column() as u64),
        message: shift_lines(&e.to_string(), first_line - 1),
    }
}

fn located(e: &yaml_serde::Error, first_line: usize) -> String {
    shift_lines(&e.to_string(), first_line - 1)
}

/// YAML's messages say "at line N column M" of the text it was given; this adds `by` to
/// every such N so the message names lines of SKILL.md.
fn shift_lines(message: &str, by: usize) -> String {
    if by == 0 {
        return message.to_string();
    }
    let mut out = String::with_capacity(message.len() + 8);
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (head, tail) = rest.split_at(at + "line ".len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&tail[..digits]),
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_ok(yaml: &str) -> (Frontmatter, Vec<Repair>) {
        let mut repairs = Vec::new();
        let fm = read(yaml, 2, &mut repairs).unwrap_or_else(|e| panic!("{yaml:?}: {e}"));
        (fm, repairs)
    }

    fn kinds(repairs: &[Repair]) -> Vec<RepairKind> {
        repairs.iter().map(|r| r.kind).collect()
    }

    #[test]
    fn shift_lines_rewrites_every_position() {
        assert_eq!(
            shift_lines(
                "could not find expected ':' at line 5 column 1, while scanning a simple key at line 4 column 1",
                3
            ),
            "could not find expected ':' at line 8 column 1, while scanning a simple key at line 7 column 1"
        );
        assert_eq!(shift_lines("no position", 3), "no position");
    }

    #[test]
    fn split_key_rules() {
        assert_eq!(
            split_key("description: Use when: x"),
            Some(("description".into(), " Use when: x"))
        );
        assert_eq!(split_key("key:"), Some(("key".into(), "")));
        assert_eq!(
            split_key("url: https://x"),
            Some(("url".into(), " https://x"))
        );
        assert_eq!(split_key("'a b': 1"), Some(("a b".into(), " 1")));
        assert_eq!(split_key("https://example.com"), None);
        assert_eq!(split_key("just words"), None);
        assert_eq!(split_key("[a]: b"), None);
    }

    #[test]
    fn plain_values_yaml_refuses_are_kept_as_text() {
        let (fm, repairs) =
            read_ok("name: a\ndescription: Use when: the user asks\n  about b\nlicense: MIT\n");
        assert_eq!(fm.values["description"], "Use when: the user asks about b");
        assert_eq!(fm.values["license"], "MIT");
        assert_eq!(
            kinds(&repairs),
            [RepairKind::FrontmatterLineByLine, RepairKind::ValueAsText]
        );
        assert_eq!(repairs[1].field, "description");
        assert_eq!(repairs[1].line, Some(3));
        assert!(
            repairs[0].problem.contains("line 3"),
            "{}",
            repairs[0].problem
        );
    }

    #[test]
    fn ambiguous_entries_are_refused_with_their_line() {
        for (yaml, line) in [
            ("name: a\ndescription: \"unterminated\nlicense: MIT\n", 3),
            ("name: a\n  bad: indent\ndescription: b\n", 3),
            ("name: a\nstray words\ndescription: b\n", 3),
            ("name: a\nname: b\ndescription: c: d\n", 3),
            (
                "name: a\n<<<<<<< ours\nx: 1\n=======\nx: 2\n>>>>>>> theirs\ndescription: d: e\n",
                6,
            ),
        ] {
            let mut repairs = Vec::new();
            match read(yaml, 2, &mut repairs) {
                Err(PackageError::Yaml {
                    line: Some(l),
                    column: Some(_),
                    ..
                }) => {
                    assert_eq!(l, line, "{yaml:?}")
                }
                other => panic!("{yaml:?}: {other:?}"),
            }
        }
    }
}
