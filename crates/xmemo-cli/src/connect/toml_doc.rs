//! Adds or replaces one `[a.b]` table in a TOML file (Codex's `config.toml`) by editing the
//! text of that table only, so comments, other tables and their order stay as they were. As
//! for JSON, the result is parsed again and must equal the original but for that table.

use super::entry::{Node, toml_table_block};
use super::json_doc::Merge;

/// Merges the table `path` (e.g. `["mcp_servers", "xmemo"]`) with these fields into `text`.
pub fn merge(text: &str, path: &[&str; 2], fields: &[(String, Node)]) -> Result<Merge, String> {
    let block = toml_table_block(path, fields);
    if text.trim().is_empty() {
        return Ok(Merge::Changed {
            text: block,
            replaced: false,
        });
    }
    let before: toml::Table =
        toml::from_str(text).map_err(|e| format!("it is not valid TOML ({})", e.message()))?;
    let [parent, name] = *path;
    let existing = before.get(parent);
    if existing.is_some_and(|p| !p.is_table()) {
        return Err(format!("its `{parent}` is not a table"));
    }
    let wanted = Node::Map(fields.to_vec()).to_toml();
    let old_entry = existing.and_then(|p| p.get(name));
    if old_entry == Some(&wanted) {
        return Ok(Merge::Unchanged);
    }

    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let headers = headers(&lines);
    let ours = |p: &[String]| p.len() >= 2 && p[0] == parent && p[1] == name;
    let mut ranges = Vec::new();
    for (n, (line, header_path)) in headers.iter().enumerate() {
        if !ours(header_path) {
            continue;
        }
        let next = headers.get(n + 1).map_or(lines.len(), |(l, _)| *l);
        // Blank and comment lines before the next table belong to what follows.
        let mut end = next;
        while end > line + 1 && is_blank_or_comment(lines[end - 1]) {
            end -= 1;
        }
        ranges.push(*line..end);
    }
    // A later subtable goes with the blank lines that separated it from what came before.
    for k in 1..ranges.len() {
        let floor = ranges[k - 1].end;
        while ranges[k].start > floor && lines[ranges[k].start - 1].trim().is_empty() {
            ranges[k].start -= 1;
        }
    }
    if old_entry.is_some() && ranges.is_empty() {
        return Err(format!(
            "its `{parent}.{name}` is written as an inline table or dotted keys, which is not edited automatically"
        ));
    }

    let mut edited = String::new();
    if ranges.is_empty() {
        edited.push_str(text);
        if !edited.ends_with('\n') {
            edited.push('\n');
        }
        edited.push('\n');
        edited.push_str(&block);
    } else {
        let mut i = 0;
        while i < lines.len() {
            match ranges.iter().position(|r| r.start == i) {
                Some(k) => {
                    if k == 0 {
                        edited.push_str(&block);
                    }
                    i = ranges[k].end;
                }
                None => {
                    edited.push_str(lines[i]);
                    i += 1;
                }
            }
        }
    }

    let after: toml::Table = toml::from_str(&edited).map_err(|e| {
        format!(
            "the edit did not give valid TOML ({}); nothing written",
            e.message()
        )
    })?;
    if after.get(parent).and_then(|p| p.get(name)) != Some(&wanted)
        || without(&after, parent, name, existing.is_none())
            != without(&before, parent, name, false)
    {
        return Err(format!(
            "the edit would change more than `{parent}.{name}`; nothing written"
        ));
    }
    Ok(Merge::Changed {
        text: edited,
        replaced: old_entry.is_some(),
    })
}

fn without(doc: &toml::Table, parent: &str, name: &str, drop_parent: bool) -> toml::Table {
    let mut doc = doc.clone();
    if drop_parent {
        doc.remove(parent);
    } else if let Some(toml::Value::Table(p)) = doc.get_mut(parent) {
        p.remove(name);
    }
    doc
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// `(line index, key path)` of every table header (`[a.b]`, `[[a.b]]`) outside multi-line
/// strings.
fn headers(lines: &[&str]) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<&'static str> = None;
    for (i, line) in lines.iter().enumerate() {
        if open.is_none() && line.trim_start().starts_with('[') {
            if let Some(path) = header_path(line) {
                out.push((i, path));
            }
            continue;
        }
        open = multiline_state(line, open);
    }
    out
}

/// The key path a header line declares, read by the TOML parser itself.
fn header_path(line: &str) -> Option<Vec<String>> {
    let table: toml::Table = toml::from_str(line).ok()?;
    let mut path = Vec::new();
    let mut current = &table;
    loop {
        let mut keys = current.iter();
        let Some((key, value)) = keys.next() else {
            return Some(path);
        };
        if keys.next().is_some() {
            return None;
        }
        path.push(key.clone());
        current = match value {
            toml::Value::Table(t) => t,
            toml::Value::Array(items) => match items.first() {
                Some(toml::Value::Table(t)) => t,
                _ => return Some(path),
            },
            _ => return None,
        };
    }
}

/// Whether a multi-line string (`"""` or `'''`) is open after this line.
fn multiline_state(line: &str, mut open: Option<&'static str>) -> Option<&'static str> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match open {
            Some(delim) => {
                if delim == "\"\"\"" && b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i..].starts_with(delim.as_bytes()) {
                    open = None;
                    i += 3;
                    continue;
                }
                i += 1;
            }
            None => match b[i] {
                b'#' => break,
                b'"' | b'\'' => {
                    let quote = b[i];
                    let triple = if quote == b'"' { "\"\"\"" } else { "'''" };
                    if b[i..].starts_with(triple.as_bytes()) {
                        open = Some(triple);
                        i += 3;
                        continue;
                    }
                    // A one-line string: skip to its closing quote.
                    i += 1;
                    while i < b.len() && b[i] != quote {
                        if quote == b'"' && b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                _ => i += 1,
            },
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Vec<(String, Node)> {
        vec![
            ("command".into(), Node::str("xmemo")),
            ("args".into(), Node::strs(&["mcp"])),
        ]
    }

    fn merged(text: &str) -> String {
        match merge(text, &["mcp_servers", "xmemo"], &fields()).unwrap() {
            Merge::Changed { text, .. } => text,
            Merge::Unchanged => panic!("unchanged"),
        }
    }

    #[test]
    fn appended_keeping_comments_and_tables() {
        let text =
            "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\" # trailing\n";
        assert_eq!(
            merged(text),
            format!("{text}\n[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\n")
        );
    }

    #[test]
    fn replaced_in_place_with_its_subtables() {
        let text = "[mcp_servers.xmemo]\nurl = \"old\"\n\n[mcp_servers.xmemo.env]\nXMEMO_KEY = \"xmk_s\"\n\n# next\n[profiles.x]\nmodel = \"y\"\n";
        let out = merged(text);
        assert_eq!(
            out,
            "[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\n\n# next\n[profiles.x]\nmodel = \"y\"\n"
        );
        assert_eq!(
            merge(&out, &["mcp_servers", "xmemo"], &fields()).unwrap(),
            Merge::Unchanged
        );
    }

    #[test]
    fn headers_inside_multiline_strings_are_not_tables() {
        let text = "[a]\nnote = \"\"\"\n[mcp_servers.xmemo]\n\"\"\"\n";
        assert_eq!(
            headers(&text.split_inclusive('\n').collect::<Vec<_>>()).len(),
            1
        );
        let out = merged(text);
        assert!(out.starts_with(text), "{out}");
    }

    #[test]
    fn non_ascii_text_is_scanned_by_bytes() {
        let text = "# réglages — ü\nnote = \"\"\"\nété [x]\n\"\"\" # «\n[a]\nb = 'ç'\n";
        let out = merged(text);
        assert!(out.starts_with(text), "{out}");
    }

    #[test]
    fn refused_documents() {
        for text in [
            "mcp_servers = 3\n",
            "mcp_servers = { xmemo = { url = \"u\" } }\n",
            "[mcp_servers]\nxmemo.url = \"u\"\n",
            "not toml at all = = \n",
        ] {
            assert!(
                merge(text, &["mcp_servers", "xmemo"], &fields()).is_err(),
                "{text}"
            );
        }
    }
}
