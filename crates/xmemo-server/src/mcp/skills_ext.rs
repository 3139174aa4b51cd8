//! MCP Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): the caller's published
//! skills as `skill://<workspace>/<slug>/…` resources, listed with `sha256:` digests and sizes
//! by `skills/list` / `skills/get` and read with `resources/read`.
//!
//! Every file but `SKILL.md` is a stored component: its digest is the stored `content_hash`.
//! `SKILL.md` is rendered from the revision with the same renderer as capsule exports
//! ([`xmemo_core::package::render_skill_md`]), except that the frontmatter `name` is the slug,
//! as the extension requires (the URI's last segment and an Agent Skills name); its digest is
//! the SHA-256 of exactly the bytes `resources/read` serves.

use super::errors::protocol_error;
use crate::auth::Principal;
use crate::service::types::Root;
use crate::service::{Served, Service};
use base64::Engine;
use rmcp::ErrorData;
use rmcp::model::{
    ListResourcesResult, ListSkillsResult, ReadResourceResult, Resource, ResourceContents, Skill,
    SkillFrontmatter, SkillResource, SkillResources,
};
use serde_json::{Map, Value};

pub const SCHEME: &str = "skill://";
pub const SKILL_MD: &str = "SKILL.md";
/// Skills per `skills/list` / `resources/list` / `prompts/list` page. Clients walk the whole
/// catalog (a Skills listing entry is a complete manifest) and give up after a fixed number of
/// pages: the MCP Inspector and the TypeScript SDK's list-all verbs stop at 64. 500 a page
/// keeps a 32,000-skill catalog within that (10,000 skills are 20 pages) while a page stays a
/// few hundred KB.
pub const PAGE_SIZE: u32 = 500;

/// A parsed `skill://<workspace>/<slug>/<file>` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillAddress {
    pub workspace: String,
    pub slug: String,
    /// `SKILL.md` or a component's logical path (percent-decoded).
    pub file: String,
}

impl SkillAddress {
    pub fn is_skill_md(&self) -> bool {
        self.file == SKILL_MD
    }
}

pub fn skill_md_uri(workspace: &str, slug: &str) -> String {
    format!(
        "{SCHEME}{}/{}/{SKILL_MD}",
        encode_segment(workspace),
        encode_segment(slug)
    )
}

pub fn file_uri(workspace: &str, slug: &str, logical_path: &str) -> String {
    let path: Vec<String> = logical_path.split('/').map(encode_segment).collect();
    format!(
        "{SCHEME}{}/{}/{}",
        encode_segment(workspace),
        encode_segment(slug),
        path.join("/")
    )
}

/// Parses a `skill://` URI; `None` when it is not one this server could serve.
pub fn parse_uri(uri: &str) -> Option<SkillAddress> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.contains(['?', '#']) {
        return None;
    }
    let mut parts = rest.splitn(3, '/');
    let workspace = decode_segment(parts.next()?)?;
    let slug = decode_segment(parts.next()?)?;
    let file_raw = parts.next()?;
    let segments: Option<Vec<String>> = file_raw.split('/').map(decode_segment).collect();
    let segments = segments?;
    if workspace.is_empty()
        || slug.is_empty()
        || segments
            .iter()
            .any(|s| s.is_empty() || s == "." || s == ".." || s.contains('/'))
    {
        return None;
    }
    Some(SkillAddress {
        workspace,
        slug,
        file: segments.join("/"),
    })
}

/// What a path segment of a `skill://` URI escapes: everything but the unreserved characters
/// (RFC 3986 §2.3).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encode_segment(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string()
}

/// A segment decoded; `None` when a `%` does not start an escape of two hex digits (a URI
/// this server never writes) or the bytes are not UTF-8.
fn decode_segment(segment: &str) -> Option<String> {
    let well_formed = segment.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return None;
    }
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

// ---------------------------------------------------------------------------------------------
// SKILL.md rendering

/// The revision's metadata as frontmatter fields (without `name` / `description`).
fn extra_fields(root: &Root) -> Map<String, Value> {
    root.metadata
        .iter()
        .filter(|(k, _)| k.as_str() != "name" && k.as_str() != "description")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The frontmatter of a revision: `name` (slug), `description`, then the stored metadata.
pub fn frontmatter(slug: &str, root: &Root) -> Map<String, Value> {
    let mut fm = Map::new();
    fm.insert("name".into(), Value::String(slug.to_string()));
    fm.insert(
        "description".into(),
        Value::String(root.description.clone()),
    );
    fm.extend(extra_fields(root));
    fm
}

/// `SKILL.md` bytes, as a capsule export writes them (with the slug as `name`).
pub fn render_skill_md(slug: &str, root: &Root) -> String {
    let extra = extra_fields(root);
    match xmemo_core::package::render_skill_md(
        slug,
        &root.description,
        &extra,
        &root.instruction_body,
    ) {
        Ok(text) => text,
        Err(e) => {
            // Metadata YAML cannot round-trip: serve a flow-style rendering, which always can.
            tracing::warn!(slug, error = %e.message(), "SKILL.md rendered in flow style");
            render_flow_style(slug, root)
        }
    }
}

/// Frontmatter with every value in JSON-compatible flow style (which YAML 1.2 parses to the
/// same values), then the body.
fn render_flow_style(slug: &str, root: &Root) -> String {
    let fm = frontmatter(slug, root);
    let mut out = String::from("---\n");
    let first = ["name", "description"];
    let ordered = first
        .iter()
        .filter_map(|k| fm.get_key_value(*k))
        .chain(fm.iter().filter(|(k, _)| !first.contains(&k.as_str())));
    for (k, v) in ordered {
        out.push_str(&yaml_key(k));
        out.push_str(": ");
        yaml_value(v, &mut out);
        out.push('\n');
    }
    out.push_str("---\n\n");
    out.push_str(&root.instruction_body);
    out
}

fn yaml_key(key: &str) -> String {
    const RESERVED: &[&str] = &["true", "false", "null", "yes", "no", "on", "off", "y", "n"];
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !RESERVED.contains(&key.to_ascii_lowercase().as_str());
    if plain {
        key.to_string()
    } else {
        let mut s = String::new();
        yaml_quoted(key, &mut s);
        s
    }
}

fn yaml_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => yaml_quoted(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                yaml_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                yaml_quoted(k, out);
                out.push_str(": ");
                yaml_value(item, out);
            }
            out.push('}');
        }
    }
}

/// A YAML double-quoted scalar; anything outside YAML's printable set is escaped.
fn yaml_quoted(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ) =>
            {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------------------------
// Catalog: what the service serves the caller, as extension entries and resources

/// A served skill with its rendered `SKILL.md`.
pub struct Entry {
    pub root: Root,
    pub skill_md: String,
}

impl From<Served> for Entry {
    fn from(served: Served) -> Self {
        let skill_md = render_skill_md(&served.root.slug, &served.root);
        Self {
            root: served.root,
            skill_md,
        }
    }
}

impl Entry {
    pub fn skill_md_uri(&self) -> String {
        skill_md_uri(&self.root.workspace, &self.root.slug)
    }

    fn file_uri(&self, logical_path: &str) -> String {
        file_uri(&self.root.workspace, &self.root.slug, logical_path)
    }

    pub fn entry(&self) -> Skill {
        let mut frontmatter = SkillFrontmatter::new(&self.root.slug, &self.root.description);
        for (k, v) in extra_fields(&self.root) {
            frontmatter = frontmatter.with_field(k, v);
        }
        let mut files = vec![SkillResource::from_bytes(
            self.skill_md_uri(),
            self.skill_md.as_bytes(),
        )];
        for c in &self.root.resources {
            files.push(SkillResource::new(
                self.file_uri(&c.logical_path),
                format!("sha256:{}", c.content_hash),
                c.size,
            ));
        }
        Skill::new(
            self.skill_md_uri(),
            frontmatter,
            SkillResources::Files(files),
        )
    }

    pub fn resources(&self) -> Vec<Resource> {
        let mut out = vec![
            Resource::new(self.skill_md_uri(), self.root.slug.clone())
                .with_title(self.root.name.clone())
                .with_description(self.root.description.clone())
                .with_mime_type("text/markdown")
                .with_size(self.skill_md.len() as u64),
        ];
        for c in &self.root.resources {
            out.push(
                Resource::new(self.file_uri(&c.logical_path), c.logical_path.clone())
                    .with_mime_type(c.media_type.clone())
                    .with_size(c.size),
            );
        }
        out
    }
}

async fn page(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<(Vec<Entry>, Option<String>), ErrorData> {
    let list = service
        .served_page(principal, cursor, PAGE_SIZE)
        .await
        .map_err(protocol_error)?;
    Ok((
        list.skills.into_iter().map(Entry::from).collect(),
        list.next_cursor,
    ))
}

/// The served skill an address names, or `None` when this caller is not served one there.
async fn find(
    service: &Service,
    principal: &Principal,
    addr: &SkillAddress,
) -> Result<Option<Served>, ErrorData> {
    service
        .served_skill(principal, Some(&addr.workspace), &addr.slug)
        .await
        .map_err(protocol_error)
}

pub async fn list_skills(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<ListSkillsResult, ErrorData> {
    let (entries, next) = page(service, principal, cursor).await?;
    let mut result = ListSkillsResult::with_all_items(entries.iter().map(Entry::entry).collect());
    result.next_cursor = next;
    Ok(result)
}

pub async fn list_resources(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let (entries, next) = page(service, principal, cursor).await?;
    let mut result =
        ListResourcesResult::with_all_items(entries.iter().flat_map(Entry::resources).collect());
    result.next_cursor = next;
    Ok(result)
}

pub async fn get_skill(
    service: &Service,
    principal: &Principal,
    uri: &str,
) -> Result<Skill, ErrorData> {
    let not_served = || ErrorData::invalid_params(format!("No skill is served at {uri}"), None);
    let addr = parse_uri(uri)
        .filter(SkillAddress::is_skill_md)
        .ok_or_else(not_served)?;
    let entry = Entry::from(
        find(service, principal, &addr)
            .await?
            .ok_or_else(not_served)?,
    );
    if entry.skill_md_uri() != uri {
        // Same skill spelled differently: answer for the canonical spelling only.
        return Err(not_served());
    }
    Ok(entry.entry())
}

pub async fn read(
    service: &Service,
    principal: &Principal,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let unknown = || ErrorData::resource_not_found(format!("no resource is served at {uri}"), None);
    let addr = parse_uri(uri).ok_or_else(unknown)?;
    let served = find(service, principal, &addr).await?.ok_or_else(unknown)?;
    if addr.is_skill_md() {
        let entry = Entry::from(served);
        let contents = ResourceContents::text(entry.skill_md, uri).with_mime_type("text/markdown");
        return Ok(ReadResourceResult::new(vec![contents]));
    }
    let (manifest, bytes) = service
        .served_component(&served, &addr.file)
        .await
        .map_err(protocol_error)?
        .ok_or_else(unknown)?;
    let contents = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => ResourceContents::text(text, uri),
        Ok(text) => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes()),
            uri,
        ),
        Err(e) => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            uri,
        ),
    }
    .with_mime_type(manifest.media_type);
    Ok(ReadResourceResult::new(vec![contents]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xmemo_core::{ComponentManifest, ComponentType, RevisionStatus};

    fn root(metadata: Value) -> Root {
        Root {
            skill_id: "skill_1".into(),
            slug: "deploy".into(),
            name: "Deploy".into(),
            description: "Ship it \"safely\"\n(twice)".into(),
            workspace: "personal".into(),
            revision_id: "rev_1".into(),
            revision_number: 1,
            status: RevisionStatus::Published,
            canonical_hash: "00".into(),
            instruction_body: "1. Build.\n2. Ship.\n".into(),
            metadata: match metadata {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            safety: None,
            resources: vec![ComponentManifest {
                logical_path: "scripts/check me.py".into(),
                component_type: ComponentType::Script,
                content_hash: "ab".repeat(32),
                size: 12,
                media_type: "text/x-python".into(),
            }],
        }
    }

    #[test]
    fn uris_round_trip_with_percent_encoding() {
        let uri = file_uri("personal", "deploy", "scripts/check me.py");
        assert_eq!(uri, "skill://personal/deploy/scripts/check%20me.py");
        let addr = parse_uri(&uri).expect("parses");
        assert_eq!(addr.file, "scripts/check me.py");
        assert_eq!(addr.workspace, "personal");
        assert!(parse_uri(&skill_md_uri("acme", "x")).is_some_and(|a| a.is_skill_md()));
        for bad in [
            "skill://personal/deploy",
            "skill://personal//SKILL.md",
            "skill://personal/deploy/../x",
            "skill://personal/deploy/a%2Fb",
            "skill://personal/deploy/x?y",
            "file:///etc/passwd",
            "skill://personal/deploy/%ZZ",
            "skill://personal/deploy/%+5",
            "skill://personal/deploy/%4",
            "skill://personal/deploy/%FF",
        ] {
            assert_eq!(parse_uri(bad), None, "{bad}");
        }
    }

    #[test]
    fn skill_md_parses_back_to_the_entry_frontmatter_and_body() {
        let r = root(serde_json::json!({
            "license": "MIT",
            "allowed-tools": ["Read", "Bash(git:*)"],
            "metadata": {"owner": "ops", "n": 2, "ok": true, "none": null},
            "true": "odd key"
        }));
        let fm = frontmatter("deploy", &r);
        assert_eq!(fm["name"], "deploy");
        assert_eq!(fm["metadata"]["n"], 2);
        for md in [
            render_skill_md("deploy", &r),
            render_flow_style("deploy", &r),
        ] {
            let parsed = xmemo_core::package::parse_skill_md(md.as_bytes()).expect("parses");
            assert_eq!(parsed.name, "deploy");
            assert_eq!(parsed.description, r.description);
            assert_eq!(parsed.body, r.instruction_body);
            let mut back = parsed.metadata.clone();
            back.insert("name".into(), json_str("deploy"));
            back.insert("description".into(), json_str(&r.description));
            assert_eq!(back, fm, "{md}");
        }
    }

    fn json_str(s: &str) -> Value {
        Value::String(s.to_string())
    }

    #[test]
    fn quoted_scalars_escape_non_printables() {
        let mut s = String::new();
        yaml_quoted("a\u{1}b\u{85}c\u{2028}é", &mut s);
        assert_eq!(s, "\"a\\u0001b\\u0085c\\u2028é\"");
    }
}
