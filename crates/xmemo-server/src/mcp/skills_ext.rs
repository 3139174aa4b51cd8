//! MCP Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): the caller's published
//! skills as `skill://<workspace>/<slug>/…` resources, listed with `sha256:` digests and sizes
//! by `skills/list` / `skills/get` and read with `resources/read`.
//!
//! Every file but `SKILL.md` is a stored component: its digest is the stored `content_hash`.
//! `SKILL.md` is rendered from the revision with the same renderer as capsule exports
//! ([`xmemo_core::package::render_skill_md`]), except that the frontmatter `name` is the slug,
//! as the extension requires (the URI's last segment and an Agent Skills name); its digest is
//! the SHA-256 of exactly the bytes `resources/read` serves.

use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::service::Service;
use crate::service::types::{Root, SkillView};
use base64::Engine;
use rmcp::ErrorData;
use rmcp::model::{
    ListResourcesResult, ListSkillsResult, ReadResourceResult, Resource, ResourceContents, Skill,
    SkillFrontmatter, SkillResource, SkillResources,
};
use serde_json::{Map, Value};
use xmemo_core::AssetStatus;

pub const SCHEME: &str = "skill://";
pub const SKILL_MD: &str = "SKILL.md";
/// Skills per `skills/list` / `resources/list` page.
pub const PAGE_SIZE: usize = 50;

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

fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode_segment(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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
// Catalog: what the caller is served

/// A published skill with the revision it serves.
pub struct Served {
    pub view: SkillView,
    pub root: Root,
    pub skill_md: String,
}

impl Served {
    pub fn skill_md_uri(&self) -> String {
        skill_md_uri(&self.view.workspace, &self.view.slug)
    }

    pub fn entry(&self) -> Skill {
        let fm = frontmatter(&self.view.slug, &self.root);
        let mut frontmatter = SkillFrontmatter::new(&self.view.slug, &self.root.description);
        for (k, v) in fm {
            if k != "name" && k != "description" {
                frontmatter = frontmatter.with_field(k, v);
            }
        }
        let mut files = vec![SkillResource::from_bytes(
            self.skill_md_uri(),
            self.skill_md.as_bytes(),
        )];
        for c in &self.root.resources {
            files.push(SkillResource::new(
                file_uri(&self.view.workspace, &self.view.slug, &c.logical_path),
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
            Resource::new(self.skill_md_uri(), self.view.slug.clone())
                .with_title(self.root.name.clone())
                .with_description(self.root.description.clone())
                .with_mime_type("text/markdown")
                .with_size(self.skill_md.len() as u64),
        ];
        for c in &self.root.resources {
            out.push(
                Resource::new(
                    file_uri(&self.view.workspace, &self.view.slug, &c.logical_path),
                    c.logical_path.clone(),
                )
                .with_mime_type(c.media_type.clone())
                .with_size(c.size),
            );
        }
        out
    }
}

/// The caller's skills that are served: active, with a published revision.
async fn served_views(service: &Service, principal: &Principal) -> ServiceResult<Vec<SkillView>> {
    let mut views: Vec<SkillView> = service
        .list_skills(principal, None)
        .await?
        .into_iter()
        .filter(|s| s.asset_status == AssetStatus::Active && s.published_revision_id.is_some())
        .collect();
    views.sort_by(|a, b| (&a.workspace, &a.slug).cmp(&(&b.workspace, &b.slug)));
    Ok(views)
}

async fn load(service: &Service, principal: &Principal, view: SkillView) -> ServiceResult<Served> {
    let revision = view.published_revision_id.clone().ok_or_else(|| {
        ServiceError::NotFound(format!("skill `{}` has no published revision", view.slug))
    })?;
    let root = service
        .root(
            principal,
            &view.slug,
            Some(&view.workspace),
            Some(&revision),
        )
        .await?;
    let skill_md = render_skill_md(&view.slug, &root);
    Ok(Served {
        view,
        root,
        skill_md,
    })
}

/// One page of served skills, and the cursor of the next page.
pub async fn page(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<(Vec<Served>, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| ErrorData::invalid_params("invalid cursor", None))?,
    };
    let views = served_views(service, principal)
        .await
        .map_err(protocol_error)?;
    let next = (start + PAGE_SIZE < views.len()).then(|| (start + PAGE_SIZE).to_string());
    let mut out = Vec::new();
    for view in views.into_iter().skip(start).take(PAGE_SIZE) {
        match load(service, principal, view).await {
            Ok(served) => out.push(served),
            // Archived or changed between the two reads: leave it out of this page.
            Err(ServiceError::NotFound(_)) => {}
            Err(e) => return Err(protocol_error(e)),
        }
    }
    Ok((out, next))
}

/// The served skill an address names, or `None` when this caller is not served one there.
pub async fn find(
    service: &Service,
    principal: &Principal,
    addr: &SkillAddress,
) -> Result<Option<Served>, ErrorData> {
    let view = match service
        .get_skill(principal, &addr.slug, Some(&addr.workspace))
        .await
    {
        Ok(v) => v,
        Err(ServiceError::NotFound(_) | ServiceError::Validation(..)) => return Ok(None),
        Err(e) => return Err(protocol_error(e)),
    };
    if view.asset_status != AssetStatus::Active || view.published_revision_id.is_none() {
        return Ok(None);
    }
    match load(service, principal, view).await {
        Ok(s) => Ok(Some(s)),
        Err(ServiceError::NotFound(_)) => Ok(None),
        Err(e) => Err(protocol_error(e)),
    }
}

pub async fn list_skills(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<ListSkillsResult, ErrorData> {
    let (served, next) = page(service, principal, cursor).await?;
    let mut result = ListSkillsResult::with_all_items(served.iter().map(Served::entry).collect());
    result.next_cursor = next;
    Ok(result)
}

pub async fn list_resources(
    service: &Service,
    principal: &Principal,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let (served, next) = page(service, principal, cursor).await?;
    let mut result =
        ListResourcesResult::with_all_items(served.iter().flat_map(Served::resources).collect());
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
    let served = find(service, principal, &addr)
        .await?
        .ok_or_else(not_served)?;
    if served.skill_md_uri() != uri {
        // Same skill spelled differently: answer for the canonical spelling only.
        return Err(not_served());
    }
    Ok(served.entry())
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
        let contents = ResourceContents::text(served.skill_md, uri).with_mime_type("text/markdown");
        return Ok(ReadResourceResult::new(vec![contents]));
    }
    let revision = served.root.revision_id.clone();
    let (manifest, bytes) = match service
        .resource_bytes(
            principal,
            &addr.slug,
            Some(&addr.workspace),
            &revision,
            &addr.file,
        )
        .await
    {
        Ok(found) => found,
        Err(ServiceError::NotFound(_)) => return Err(unknown()),
        Err(e) => return Err(protocol_error(e)),
    };
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

/// A service failure on a protocol method (no tool result to carry it): the SPEC error object
/// travels in `data`.
pub fn protocol_error(e: ServiceError) -> ErrorData {
    if let ServiceError::Internal(detail) = &e {
        tracing::error!(error = %detail, "MCP request failed");
    }
    let data = Some(e.to_body());
    match e {
        ServiceError::Validation(..) | ServiceError::TooLarge(..) => {
            ErrorData::invalid_params(e.public_message(), data)
        }
        ServiceError::NotFound(_) => ErrorData::resource_not_found(e.public_message(), data),
        ServiceError::PermissionDenied(_) | ServiceError::AuthRequired(_) => {
            ErrorData::invalid_request(e.public_message(), data)
        }
        _ => ErrorData::internal_error(e.public_message(), data),
    }
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
