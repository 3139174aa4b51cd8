//! Adds or replaces one server entry in a client's JSON configuration file by editing the text
//! where the entry goes, so everything else — other servers, other settings, key order,
//! formatting — stays byte for byte as it was. The result is parsed again and compared with the
//! original before anything is written: apart from the one entry it must be the same document.

use super::entry::{Node, json_string};
use serde_json::Value;

/// What merging one entry into a document gives.
#[derive(Debug, PartialEq)]
pub enum Merge {
    /// The entry is already there, exactly.
    Unchanged,
    /// The new text; `replaced` when an entry of that name was there before.
    Changed { text: String, replaced: bool },
}

/// Merges `"<servers_key>": { "<name>": entry }` into `text` (empty text: a new document).
pub fn merge(text: &str, servers_key: &str, name: &str, entry: &Node) -> Result<Merge, String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = &text[..text.len() - body.len()];
    if body.trim().is_empty() {
        let doc = Node::map(vec![(servers_key, Node::map(vec![(name, entry.clone())]))]);
        return Ok(Merge::Changed {
            text: format!("{bom}{}\n", doc.json_pretty("", "  ")),
            replaced: false,
        });
    }
    let before: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "it is not plain JSON ({e}); comments and trailing commas are not edited automatically"
        )
    })?;
    let Some(root) = before.as_object() else {
        return Err("its top level is not a JSON object".into());
    };
    let existing = root.get(servers_key);
    if existing.is_some_and(|s| !s.is_object()) {
        return Err(format!("its \"{servers_key}\" is not an object"));
    }
    let wanted = entry.to_json();
    let old_entry = existing.and_then(|s| s.get(name));
    if old_entry == Some(&wanted) {
        return Ok(Merge::Unchanged);
    }

    let scan = Scanner::new(body);
    let root_obj = scan.object_at(scan.skip_ws(0))?;
    let unit = indent_unit(body, &root_obj);
    let edited = match root_obj.member(servers_key) {
        None => {
            let servers = Node::map(vec![(name, entry.clone())]);
            insert_member(body, &root_obj, "", unit, servers_key, &servers)
        }
        Some(servers) => {
            let servers_obj = scan.object_at(servers.value_start)?;
            let outer = line_indent(body, servers.key_start);
            match servers_obj.member(name) {
                Some(m) => {
                    let indent = line_indent(body, m.key_start);
                    let rendered = if is_single_line(body, &servers_obj) {
                        entry.json_compact()
                    } else {
                        entry.json_pretty(indent, unit)
                    };
                    format!(
                        "{}{rendered}{}",
                        &body[..m.value_start],
                        &body[m.value_end..]
                    )
                }
                None => insert_member(body, &servers_obj, outer, unit, name, entry),
            }
        }
    };

    // Same document but for the one entry, or nothing is written.
    let after: Value = serde_json::from_str(&edited)
        .map_err(|e| format!("the edit did not give valid JSON ({e}); nothing written"))?;
    if after.get(servers_key).and_then(|s| s.get(name)) != Some(&wanted)
        || without(&after, servers_key, name, existing.is_none())
            != without(&before, servers_key, name, false)
    {
        return Err("the edit would change more than the xmemo entry; nothing written".into());
    }
    Ok(Merge::Changed {
        text: format!("{bom}{edited}"),
        replaced: old_entry.is_some(),
    })
}

/// The document without `servers_key.name` (and without `servers_key` itself when the edit
/// created it).
fn without(doc: &Value, servers_key: &str, name: &str, drop_servers: bool) -> Value {
    let mut doc = doc.clone();
    if let Some(root) = doc.as_object_mut() {
        if drop_servers {
            root.remove(servers_key);
        } else if let Some(servers) = root.get_mut(servers_key).and_then(Value::as_object_mut) {
            servers.remove(name);
        }
    }
    doc
}

/// Inserts `"key": value` as the last member of `obj`, whose own line is indented `outer`.
fn insert_member(
    text: &str,
    obj: &Object,
    outer: &str,
    unit: &str,
    key: &str,
    value: &Node,
) -> String {
    let single_line = is_single_line(text, obj);
    match obj.members.last() {
        None if single_line => {
            // `{}` on one line stays on one line.
            format!(
                "{}{{{}: {}}}{}",
                &text[..obj.open],
                json_string(key),
                value.json_compact(),
                &text[obj.close + 1..]
            )
        }
        None => {
            let inner = format!("{outer}{unit}");
            format!(
                "{}{{\n{inner}{}: {}\n{outer}}}{}",
                &text[..obj.open],
                json_string(key),
                value.json_pretty(&inner, unit),
                &text[obj.close + 1..]
            )
        }
        Some(last) if single_line => format!(
            "{}, {}: {}{}",
            &text[..last.value_end],
            json_string(key),
            value.json_compact(),
            &text[last.value_end..]
        ),
        Some(last) => {
            let indent = line_indent(text, last.key_start);
            format!(
                "{},\n{indent}{}: {}{}",
                &text[..last.value_end],
                json_string(key),
                value.json_pretty(indent, unit),
                &text[last.value_end..]
            )
        }
    }
}

fn is_single_line(text: &str, obj: &Object) -> bool {
    !text[obj.open..=obj.close].contains('\n')
}

/// The spaces and tabs that start the line holding byte `pos`, when only those precede it.
fn line_indent(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[start..pos];
    if lead.chars().all(|c| c == ' ' || c == '\t') {
        lead
    } else {
        ""
    }
}

/// The indentation of the root object's first member, the file's own unit; two spaces when
/// the file does not show one.
fn indent_unit<'a>(text: &'a str, root: &Object) -> &'a str {
    match root.members.first() {
        Some(m) if !line_indent(text, m.key_start).is_empty() => line_indent(text, m.key_start),
        _ => "  ",
    }
}

struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

struct Object {
    /// Byte offsets of `{` and of the matching `}`.
    open: usize,
    close: usize,
    members: Vec<Member>,
}

impl Object {
    /// The last member of that name (the one a JSON parser keeps).
    fn member(&self, key: &str) -> Option<&Member> {
        self.members.iter().rev().find(|m| m.key == key)
    }
}

/// Finds value boundaries in text that `serde_json` has already accepted.
struct Scanner<'a> {
    b: &'a [u8],
    text: &'a str,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            b: text.as_bytes(),
            text,
        }
    }

    fn skip_ws(&self, mut i: usize) -> usize {
        while i < self.b.len() && matches!(self.b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }

    fn at(&self, i: usize) -> Result<u8, String> {
        self.b
            .get(i)
            .copied()
            .ok_or_else(|| "unexpected end of the file".to_string())
    }

    /// End (exclusive) of the string starting at `i`.
    fn string_end(&self, mut i: usize) -> Result<usize, String> {
        i += 1;
        loop {
            match self.at(i)? {
                b'"' => return Ok(i + 1),
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
    }

    /// End (exclusive) of the value starting at `i`.
    fn value_end(&self, i: usize) -> Result<usize, String> {
        match self.at(i)? {
            b'"' => self.string_end(i),
            b'{' => Ok(self.object_at(i)?.close + 1),
            b'[' => {
                let mut j = self.skip_ws(i + 1);
                if self.at(j)? == b']' {
                    return Ok(j + 1);
                }
                loop {
                    j = self.skip_ws(self.value_end(j)?);
                    match self.at(j)? {
                        b',' => j = self.skip_ws(j + 1),
                        b']' => return Ok(j + 1),
                        _ => return Err("malformed array".into()),
                    }
                }
            }
            _ => {
                let mut j = i;
                while j < self.b.len()
                    && !matches!(self.b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    j += 1;
                }
                Ok(j)
            }
        }
    }

    fn object_at(&self, open: usize) -> Result<Object, String> {
        if self.at(open)? != b'{' {
            return Err("expected a JSON object".into());
        }
        let mut members = Vec::new();
        let mut i = self.skip_ws(open + 1);
        if self.at(i)? == b'}' {
            return Ok(Object {
                open,
                close: i,
                members,
            });
        }
        loop {
            if self.at(i)? != b'"' {
                return Err("malformed object".into());
            }
            let key_end = self.string_end(i)?;
            let key: String = serde_json::from_str(&self.text[i..key_end])
                .map_err(|e| format!("malformed key: {e}"))?;
            let colon = self.skip_ws(key_end);
            if self.at(colon)? != b':' {
                return Err("malformed object".into());
            }
            let value_start = self.skip_ws(colon + 1);
            let value_end = self.value_end(value_start)?;
            members.push(Member {
                key,
                key_start: i,
                value_start,
                value_end,
            });
            let next = self.skip_ws(value_end);
            match self.at(next)? {
                b',' => i = self.skip_ws(next + 1),
                b'}' => {
                    return Ok(Object {
                        open,
                        close: next,
                        members,
                    });
                }
                _ => return Err("malformed object".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Node {
        Node::map(vec![
            ("type", Node::str("http")),
            ("url", Node::str("https://m/mcp")),
        ])
    }

    fn merged(text: &str) -> String {
        match merge(text, "mcpServers", "xmemo", &entry()).unwrap() {
            Merge::Changed { text, .. } => text,
            Merge::Unchanged => panic!("unchanged"),
        }
    }

    #[test]
    fn new_document() {
        assert_eq!(
            merged(""),
            "{\n  \"mcpServers\": {\n    \"xmemo\": {\n      \"type\": \"http\",\n      \"url\": \"https://m/mcp\"\n    }\n  }\n}\n"
        );
    }

    #[test]
    fn added_beside_other_servers_keeping_their_text() {
        let text = "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"}\n    },\n    \"z\": [1, 2]\n}\n";
        assert_eq!(
            merged(text),
            "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"},\n        \"xmemo\": {\n            \"type\": \"http\",\n            \"url\": \"https://m/mcp\"\n        }\n    },\n    \"z\": [1, 2]\n}\n"
        );
    }

    #[test]
    fn servers_object_created_at_the_end() {
        let text = "{\n\t\"a\": {\"b\": \"}\\\"{\"}\n}";
        assert_eq!(
            merged(text),
            "{\n\t\"a\": {\"b\": \"}\\\"{\"},\n\t\"mcpServers\": {\n\t\t\"xmemo\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://m/mcp\"\n\t\t}\n\t}\n}"
        );
        assert_eq!(
            merged("{}"),
            "{\"mcpServers\": {\"xmemo\": {\"type\": \"http\", \"url\": \"https://m/mcp\"}}}"
        );
        assert_eq!(
            merged("{\"a\": 1, \"mcpServers\": {}}"),
            "{\"a\": 1, \"mcpServers\": {\"xmemo\": {\"type\": \"http\", \"url\": \"https://m/mcp\"}}}"
        );
    }

    #[test]
    fn an_old_entry_is_replaced_and_a_current_one_left_alone() {
        let text = "{\n  \"mcpServers\": {\n    \"xmemo\": {\n      \"command\": \"old\",\n      \"env\": {\"XMEMO_KEY\": \"xmk_secret\"}\n    },\n    \"b\": {}\n  }\n}\n";
        let Merge::Changed {
            text: out,
            replaced,
        } = merge(text, "mcpServers", "xmemo", &entry()).unwrap()
        else {
            panic!("unchanged")
        };
        assert!(replaced);
        assert_eq!(
            out,
            "{\n  \"mcpServers\": {\n    \"xmemo\": {\n      \"type\": \"http\",\n      \"url\": \"https://m/mcp\"\n    },\n    \"b\": {}\n  }\n}\n"
        );
        assert_eq!(
            merge(&out, "mcpServers", "xmemo", &entry()).unwrap(),
            Merge::Unchanged
        );
    }

    #[test]
    fn refused_documents() {
        for text in [
            "// comment\n{}",
            "{\"a\": 1,}",
            "[]",
            "{\"mcpServers\": []}",
        ] {
            assert!(
                merge(text, "mcpServers", "xmemo", &entry()).is_err(),
                "{text}"
            );
        }
    }
}
