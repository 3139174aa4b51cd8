//! An MCP server entry as an ordered tree of strings, lists and maps, rendered as JSON or TOML
//! in the order it was built (the order the clients' own documentation shows), and converted
//! to `serde_json` / `toml` values to compare with what a file already holds.

use serde_json::Value as Json;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(String),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    pub fn str(s: impl Into<String>) -> Node {
        Node::Str(s.into())
    }

    pub fn strs<S: AsRef<str>>(items: &[S]) -> Node {
        Node::List(items.iter().map(|s| Node::str(s.as_ref())).collect())
    }

    pub fn map<K: Into<String>>(pairs: Vec<(K, Node)>) -> Node {
        Node::Map(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn to_json(&self) -> Json {
        match self {
            Node::Str(s) => Json::String(s.clone()),
            Node::List(items) => Json::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(pairs) => Json::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    pub fn to_toml(&self) -> toml::Value {
        match self {
            Node::Str(s) => toml::Value::String(s.clone()),
            Node::List(items) => toml::Value::Array(items.iter().map(Node::to_toml).collect()),
            Node::Map(pairs) => toml::Value::Table(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_toml()))
                    .collect(),
            ),
        }
    }

    /// Every string in the tree (to check that none is a secret).
    pub fn strings(&self) -> Vec<&str> {
        match self {
            Node::Str(s) => vec![s.as_str()],
            Node::List(items) => items.iter().flat_map(Node::strings).collect(),
            Node::Map(pairs) => pairs
                .iter()
                .flat_map(|(k, v)| std::iter::once(k.as_str()).chain(v.strings()))
                .collect(),
        }
    }

    fn is_flat(&self) -> bool {
        match self {
            Node::Str(_) => true,
            Node::List(items) => items.iter().all(|i| matches!(i, Node::Str(_))),
            Node::Map(_) => false,
        }
    }

    /// Pretty JSON whose first line continues the current one and whose inner lines start
    /// with `indent` plus one `unit` per level. Lists of strings stay on one line.
    pub fn json_pretty(&self, indent: &str, unit: &str) -> String {
        match self {
            Node::Str(s) => json_string(s),
            Node::List(_) if self.is_flat() => self.json_compact(),
            Node::List(items) if items.is_empty() => "[]".into(),
            Node::Map(pairs) if pairs.is_empty() => "{}".into(),
            Node::List(items) => {
                let inner = format!("{indent}{unit}");
                let lines: Vec<String> = items
                    .iter()
                    .map(|i| format!("{inner}{}", i.json_pretty(&inner, unit)))
                    .collect();
                format!("[\n{}\n{indent}]", lines.join(",\n"))
            }
            Node::Map(pairs) => {
                let inner = format!("{indent}{unit}");
                let lines: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| {
                        format!("{inner}{}: {}", json_string(k), v.json_pretty(&inner, unit))
                    })
                    .collect();
                format!("{{\n{}\n{indent}}}", lines.join(",\n"))
            }
        }
    }

    /// One-line JSON, for files written on one line.
    pub fn json_compact(&self) -> String {
        match self {
            Node::Str(s) => json_string(s),
            Node::List(items) => {
                let parts: Vec<String> = items.iter().map(Node::json_compact).collect();
                format!("[{}]", parts.join(", "))
            }
            Node::Map(pairs) => {
                let parts: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", json_string(k), v.json_compact()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }

    /// A TOML value for the right-hand side of `key = …` (maps become inline tables).
    pub fn toml_inline(&self) -> String {
        match self {
            Node::Str(s) => toml_string(s),
            Node::List(items) => {
                let parts: Vec<String> = items.iter().map(Node::toml_inline).collect();
                format!("[{}]", parts.join(", "))
            }
            Node::Map(pairs) if pairs.is_empty() => "{}".into(),
            Node::Map(pairs) => {
                let parts: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{} = {}", toml_key(k), v.toml_inline()))
                    .collect();
                format!("{{ {} }}", parts.join(", "))
            }
        }
    }
}

pub fn json_string(s: &str) -> String {
    // Serialising a string cannot fail; the fallback keeps this total anyway.
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{}\"", s.escape_default()))
}

pub fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A bare key when TOML allows one, else a quoted key.
pub fn toml_key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { k.to_string() } else { toml_string(k) }
}

/// `[a.b]` followed by one `key = value` line per field of `table`.
pub fn toml_table_block(path: &[&str], table: &[(String, Node)]) -> String {
    let header: Vec<String> = path.iter().map(|p| toml_key(p)).collect();
    let mut out = format!("[{}]\n", header.join("."));
    for (k, v) in table {
        out.push_str(&format!("{} = {}\n", toml_key(k), v.toml_inline()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Node {
        Node::map(vec![
            ("command", Node::str("xmemo")),
            ("args", Node::strs(&["mcp"])),
            (
                "env",
                Node::map(vec![("XMEMO_URL", Node::str("https://m.example/\"x\""))]),
            ),
        ])
    }

    #[test]
    fn json_renders_in_order_and_parses_back() {
        let text = sample().json_pretty("", "  ");
        assert_eq!(
            text,
            "{\n  \"command\": \"xmemo\",\n  \"args\": [\"mcp\"],\n  \"env\": {\n    \"XMEMO_URL\": \"https://m.example/\\\"x\\\"\"\n  }\n}"
        );
        let parsed: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed, sample().to_json());
        let compact: Json = serde_json::from_str(&sample().json_compact()).unwrap();
        assert_eq!(compact, sample().to_json());
    }

    #[test]
    fn toml_renders_and_parses_back() {
        let Node::Map(pairs) = sample() else {
            unreachable!()
        };
        let text = toml_table_block(&["mcp_servers", "xmemo"], &pairs);
        assert_eq!(
            text,
            "[mcp_servers.xmemo]\ncommand = \"xmemo\"\nargs = [\"mcp\"]\nenv = { XMEMO_URL = 'https://m.example/\"x\"' }\n"
        );
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed["mcp_servers"]["xmemo"], sample().to_toml());
        assert_eq!(toml_key("a.b"), "\"a.b\"");
    }
}
