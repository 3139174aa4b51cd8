//! Reading a skill directory: `SKILL.md` (frontmatter + Markdown instructions) and every other
//! regular file as a component typed by its top folder.

use base64::Engine;
use serde_json::{Map, Value, json};
use std::path::Path;
use xmemo_core::ComponentType;

/// One file to upload.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub logical_path: String,
    pub component_type: ComponentType,
    pub bytes: Vec<u8>,
}

impl Component {
    /// The save request entry: text as `utf-8`, anything else (invalid UTF-8 or NUL bytes) as
    /// `base64`.
    pub fn to_json(&self) -> Value {
        let (content, encoding) = match std::str::from_utf8(&self.bytes) {
            Ok(text) if !text.contains('\0') => (text.to_string(), "utf-8"),
            _ => (
                base64::engine::general_purpose::STANDARD.encode(&self.bytes),
                "base64",
            ),
        };
        json!({
            "logical_path": self.logical_path,
            "type": self.component_type.as_str(),
            "content": content,
            "encoding": encoding,
        })
    }
}

/// What a skill directory holds.
#[derive(Debug)]
pub struct SkillDir {
    pub name: String,
    pub description: String,
    /// Frontmatter keys other than name and description.
    pub metadata: Map<String, Value>,
    pub body: String,
    pub components: Vec<Component>,
    /// Files left out (symlinks, dotfiles, special files), one sentence each.
    pub warnings: Vec<String>,
    /// The directory's own name, the slug fallback.
    pub dir_name: Option<String>,
}

/// `scripts/`→script, `references/`→reference, `templates/`→template, `examples/`→example,
/// `assets/`→artifact, anything else → document.
pub fn component_type_for(logical_path: &str) -> ComponentType {
    match logical_path.split_once('/').map(|(top, _)| top) {
        Some("scripts") => ComponentType::Script,
        Some("references") => ComponentType::Reference,
        Some("templates") => ComponentType::Template,
        Some("examples") => ComponentType::Example,
        Some("assets") => ComponentType::Artifact,
        _ => ComponentType::Document,
    }
}

pub fn read(dir: &Path) -> Result<SkillDir, String> {
    let skill_md = dir.join("SKILL.md");
    let text = std::fs::read_to_string(&skill_md)
        .map_err(|e| format!("cannot read {}: {e}", skill_md.display()))?;
    let (mut fields, body) =
        parse_skill_md(&text).map_err(|e| format!("{}: {e}", skill_md.display()))?;
    let mut take = |key: &str| match fields.remove(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        _ => Err(format!(
            "{}: the frontmatter needs a `{key}: …` line",
            skill_md.display()
        )),
    };
    let name = take("name")?;
    let description = take("description")?;
    let mut out = SkillDir {
        name,
        description,
        metadata: fields,
        body,
        components: Vec::new(),
        warnings: Vec::new(),
        dir_name: std::fs::canonicalize(dir)
            .ok()
            .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string)),
    };
    walk(dir, "", &mut out)?;
    out.components
        .sort_by(|a, b| a.logical_path.cmp(&b.logical_path));
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut SkillDir) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            out.warnings.push(format!(
                "skipping {}: its name is not UTF-8",
                path.display()
            ));
            continue;
        };
        let logical = format!("{prefix}{name}");
        if name.starts_with('.') {
            out.warnings
                .push(format!("skipping dotfile {}", path.display()));
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            out.warnings
                .push(format!("skipping symlink {}", path.display()));
        } else if kind.is_dir() {
            walk(&path, &format!("{logical}/"), out)?;
        } else if !kind.is_file() {
            out.warnings
                .push(format!("skipping {}: not a regular file", path.display()));
        } else if prefix.is_empty() && name == "SKILL.md" {
            // The instructions themselves.
        } else if prefix.is_empty() && name.eq_ignore_ascii_case("capsule.json") {
            out.warnings.push(format!(
                "skipping {}: capsule.json is an export manifest, not part of the skill",
                path.display()
            ));
        } else {
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            out.components.push(Component {
                component_type: component_type_for(&logical),
                logical_path: logical,
                bytes,
            });
        }
    }
    Ok(())
}

/// Splits `---` frontmatter from the Markdown body. Frontmatter support is deliberately small:
/// top-level `key: value` lines (quotes stripped), `key: |` / `key: >` blocks, and a key with
/// no value followed by indented `- item` lines (a list) or `sub: value` lines (a map).
/// Every value is a string.
pub fn parse_skill_md(text: &str) -> Result<(Map<String, Value>, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => {
            return Err(
                "must start with a `---` frontmatter block holding name and description".into(),
            );
        }
    }
    let mut front = Vec::new();
    let mut closed = false;
    let mut consumed = text.split_inclusive('\n').next().map_or(0, str::len);
    for line in lines.by_ref() {
        consumed += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        front.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return Err("the frontmatter is not closed by a `---` line".into());
    }
    let body = text
        .get(consumed..)
        .unwrap_or("")
        .trim_start_matches(['\n', '\r'])
        .to_string();
    Ok((parse_fields(&front)?, body))
}

fn parse_fields(lines: &[&str]) -> Result<Map<String, Value>, String> {
    let mut fields = Map::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!(
                "frontmatter line {i} is indented but follows no key: `{line}`"
            ));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "frontmatter line {i} is not `key: value`: `{line}`"
            ));
        };
        let key = key.trim().to_string();
        let value = value.trim();
        // Indented lines that follow belong to this key.
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let block: Vec<&str> = lines[start..i].to_vec();
        let parsed = if let Some(style) = value.chars().next().filter(|c| *c == '|' || *c == '>') {
            Value::String(block_scalar(&block, style == '|'))
        } else if value.is_empty() {
            nested(&block)
        } else if block.iter().any(|l| !l.trim().is_empty()) {
            // A plain scalar continued on indented lines folds into one line.
            let mut text = unquote(value);
            for l in block.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
                text.push(' ');
                text.push_str(l);
            }
            Value::String(text)
        } else {
            Value::String(unquote(value))
        };
        fields.insert(key, parsed);
    }
    Ok(fields)
}

fn block_scalar(block: &[&str], literal: bool) -> String {
    let indent = block
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = block
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect();
    let text = if literal {
        lines.join("\n")
    } else {
        lines
            .split(|l| l.is_empty())
            .map(|para| para.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    text.trim_end().to_string()
}

fn nested(block: &[&str]) -> Value {
    let items: Vec<&str> = block
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if items.is_empty() {
        return Value::String(String::new());
    }
    if items.iter().all(|l| l.starts_with('-')) {
        return Value::Array(
            items
                .iter()
                .map(|l| Value::String(unquote(l.trim_start_matches('-').trim())))
                .collect(),
        );
    }
    let mut map = Map::new();
    for item in items {
        match item.split_once(':') {
            Some((k, v)) => map.insert(k.trim().to_string(), Value::String(unquote(v.trim()))),
            None => map.insert(item.to_string(), Value::String(String::new())),
        };
    }
    Value::Object(map)
}

fn unquote(value: &str) -> String {
    let quoted = |q: char| value.len() >= 2 && value.starts_with(q) && value.ends_with(q);
    if quoted('"') {
        value[1..value.len() - 1]
            .replace("\\\"", "\"")
            .replace("\\\\", "\\")
    } else if quoted('\'') {
        value[1..value.len() - 1].replace("''", "'")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_and_body() {
        let text = "---\nname: deploy-prod\ndescription: \"Ship it: safely\"\nlicense: MIT\nallowed-tools: Bash Read\nmetadata:\n  author: ops\n  version: '1.0'\ntags:\n  - a\n  - b\nnotes: >\n  one\n  two\n---\n\n# Deploy\n\nRun `make`.\n";
        let (fields, body) = parse_skill_md(text).unwrap();
        assert_eq!(fields["name"], "deploy-prod");
        assert_eq!(fields["description"], "Ship it: safely");
        assert_eq!(fields["license"], "MIT");
        assert_eq!(fields["allowed-tools"], "Bash Read");
        assert_eq!(
            fields["metadata"],
            json!({"author": "ops", "version": "1.0"})
        );
        assert_eq!(fields["tags"], json!(["a", "b"]));
        assert_eq!(fields["notes"], "one two");
        assert_eq!(body, "# Deploy\n\nRun `make`.\n");
    }

    #[test]
    fn literal_blocks_keep_lines() {
        let (fields, _) =
            parse_skill_md("---\nname: x\ndescription: |\n  a\n  b\n---\nbody").unwrap();
        assert_eq!(fields["description"], "a\nb");
    }

    #[test]
    fn refuses_missing_or_unclosed_frontmatter() {
        assert!(parse_skill_md("# no frontmatter").is_err());
        assert!(parse_skill_md("---\nname: x\n").is_err());
        assert!(parse_skill_md("---\njust text\n---\n").is_err());
    }

    #[test]
    fn crlf_files() {
        let (fields, body) =
            parse_skill_md("---\r\nname: x\r\ndescription: y\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(fields["name"], "x");
        assert_eq!(fields["description"], "y");
        assert_eq!(body, "body\r\n");
    }

    #[test]
    fn types_by_top_folder() {
        assert_eq!(component_type_for("scripts/run.py"), ComponentType::Script);
        assert_eq!(
            component_type_for("references/a/b.md"),
            ComponentType::Reference
        );
        assert_eq!(
            component_type_for("templates/t.txt"),
            ComponentType::Template
        );
        assert_eq!(component_type_for("examples/e.md"), ComponentType::Example);
        assert_eq!(
            component_type_for("assets/logo.png"),
            ComponentType::Artifact
        );
        assert_eq!(component_type_for("notes.md"), ComponentType::Document);
        assert_eq!(component_type_for("other/x"), ComponentType::Document);
    }

    #[test]
    fn binary_goes_as_base64() {
        let c = Component {
            logical_path: "assets/x.bin".into(),
            component_type: ComponentType::Artifact,
            bytes: vec![0, 159, 146, 150],
        };
        assert_eq!(c.to_json()["encoding"], "base64");
        let t = Component {
            bytes: b"hello".to_vec(),
            ..c
        };
        assert_eq!(t.to_json()["encoding"], "utf-8");
        assert_eq!(t.to_json()["content"], "hello");
    }
}
