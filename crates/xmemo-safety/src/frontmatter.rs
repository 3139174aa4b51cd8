//! What a skill says about itself: the frontmatter's `name`, `description`, `allowed-tools`
//! and the rest of it (requirements, metadata), read leniently line by line — a scanner must
//! read what a YAML parser would refuse.

use crate::document::{Doc, Zone};

#[derive(Clone, Debug, Default)]
pub struct Declared {
    pub name: String,
    pub description: String,
    /// `allowed-tools` (or `allowed_tools`, `tools`) as written, when present.
    pub allowed_tools: Option<String>,
    /// The whole frontmatter, lower-cased (requirements, metadata, homepage…).
    pub all_lower: String,
}

impl Declared {
    /// Name and description, lower-cased: the declared purpose.
    pub fn purpose_lower(&self) -> String {
        format!("{} {}", self.name, self.description).to_lowercase()
    }
}

/// Reads the frontmatter of a SKILL.md (empty when it has none).
pub fn declared(doc: &Doc<'_>) -> Declared {
    let fm: Vec<&str> = doc
        .lines
        .iter()
        .filter(|l| l.zone == Zone::Frontmatter && !l.is_fence)
        .map(|l| l.text)
        .collect();
    let mut d = Declared {
        all_lower: fm.join("\n").to_lowercase(),
        ..Declared::default()
    };
    let mut i = 0;
    while i < fm.len() {
        let line = fm[i];
        i += 1;
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let mut value = value.trim().to_string();
        // Block scalars and values continued on indented lines.
        let mut more = Vec::new();
        while i < fm.len() && (fm[i].starts_with([' ', '\t']) || fm[i].trim().is_empty()) {
            more.push(fm[i].trim());
            i += 1;
        }
        if value.is_empty() || value.starts_with('>') || value.starts_with('|') {
            value = more.join(" ");
        } else if !more.is_empty() && key != "metadata" {
            value = format!("{value} {}", more.join(" "));
        }
        let value = unquote(value.trim()).to_string();
        match key.as_str() {
            "name" => d.name = value,
            "description" => d.description = value,
            "allowed-tools" | "allowed_tools" | "tools" => d.allowed_tools = Some(value),
            _ => {}
        }
    }
    d
}

/// A purpose read from the body when the frontmatter has no description: the first heading
/// and the first paragraph.
pub fn body_summary(doc: &Doc<'_>) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let mut in_paragraph = false;
    for l in doc.lines.iter().filter(|l| l.zone == Zone::Prose).take(40) {
        if let Some((_, title)) = l.heading {
            if parts.is_empty() {
                parts.push(title);
            } else if in_paragraph {
                break;
            }
            continue;
        }
        let t = l.text.trim();
        if t.is_empty() {
            if in_paragraph {
                break;
            }
            continue;
        }
        in_paragraph = true;
        parts.push(t);
        if parts.len() > 6 {
            break;
        }
    }
    parts.join(" ")
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{FileKind, parse};

    #[test]
    fn reads_name_description_and_tools() {
        let t = "---\nname: fmt\ndescription: >\n  Formats markdown\n  tables.\nallowed-tools: Read, Write\n---\nbody\n";
        let doc = parse("SKILL.md", t, FileKind::Instructions);
        let d = declared(&doc);
        assert_eq!(d.name, "fmt");
        assert_eq!(d.description, "Formats markdown tables.");
        assert_eq!(d.allowed_tools.as_deref(), Some("Read, Write"));
    }

    #[test]
    fn no_frontmatter_reads_empty() {
        let doc = parse("SKILL.md", "# Hi\n", FileKind::Instructions);
        assert_eq!(declared(&doc).description, "");
    }
}
