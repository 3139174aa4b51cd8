//! Source Capsule: the lossless, deterministic export of one revision (SPEC §6).
//!
//! Layout of the ZIP, entries in this order:
//! - `<slug>/SKILL.md`: frontmatter (name, description, metadata) + instruction body, as
//!   [`render_skill_md`] writes it;
//! - `<slug>/capsule.json`: the [`CapsuleManifest`], pretty JSON with sorted keys and a
//!   final newline;
//! - `<slug>/<logical_path>` for every component, sorted by the UTF-8 bytes of the path.
//!
//! (`<slug>-skill/` instead of `<slug>/` for a slug Windows reserves as a device name, such
//! as `aux` or `con`; see [`capsule_folder`].)
//!
//! Determinism: no directory entries, every entry dated 1980-01-01 00:00 (the ZIP epoch),
//! unix permissions 0644 (0755 for `script` components), no extra fields, deflate at level
//! 6. The same revision gives the same bytes for a given build (the compressor's version is
//! pinned by Cargo.lock).

use super::archive::PackageFile;
use super::error::PackageError;
use super::skill_md::{SKILL_MD, render_skill_md};
use crate::hash::{HashedComponent, canonical_hash, content_hash};
use crate::media::media_type_for;
use crate::model::{ComponentManifest, ComponentType, RevisionContent, RevisionStatus};
use crate::validate::{validate_logical_path, validate_slug};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::{Cursor, Write};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

/// `format` of every capsule.json.
pub const CAPSULE_FORMAT: &str = "xmemo.source-capsule";
/// The `format_version` this code writes and the only one it reads.
pub const CAPSULE_FORMAT_VERSION: u32 = 1;
/// The manifest's file name, next to SKILL.md.
pub const CAPSULE_MANIFEST: &str = "capsule.json";

/// `capsule.json`. Unknown fields are ignored when reading (forward compatibility); only
/// `format`, `format_version`, `canonical_hash` and `components` are required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapsuleManifest {
    pub format: String,
    pub format_version: u32,
    #[serde(default)]
    pub skill: CapsuleSkill,
    #[serde(default)]
    pub revision: CapsuleRevision,
    /// docs/canonical-hash.md; recomputed and compared on import.
    pub canonical_hash: String,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub instruction_body: Option<CapsuleBody>,
    /// Sorted by logical_path (UTF-8 bytes).
    pub components: Vec<ComponentManifest>,
    #[serde(default)]
    pub attribution: Value,
    #[serde(default)]
    pub source: Option<Value>,
}

/// The exported skill's identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapsuleSkill {
    #[serde(default)]
    pub skill_id: String,
    #[serde(default)]
    pub slug: String,
}

/// The exported revision's identity, status and display fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapsuleRevision {
    #[serde(default)]
    pub revision_id: String,
    #[serde(default)]
    pub revision_number: u64,
    #[serde(default)]
    pub status: Option<RevisionStatus>,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// Where the instruction body is and its hash, so an edited SKILL.md body is pinpointed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapsuleBody {
    pub path: String,
    /// Lowercase hex SHA-256 of the body's UTF-8 bytes (not of the whole SKILL.md).
    pub content_hash: String,
    pub size: u64,
}

/// Everything an export needs; the service fills it from a stored revision.
#[derive(Debug, Clone, PartialEq)]
pub struct CapsuleInput {
    pub slug: String,
    pub skill_id: String,
    pub revision_id: String,
    pub revision_number: u64,
    pub status: RevisionStatus,
    /// RFC 3339, as the service stores it.
    pub created_at: String,
    pub content: RevisionContent,
    /// Who/what saved the revision (SPEC §1 attribution), as JSON.
    pub attribution: Value,
    /// Where the revision was imported from, if it was (URL, original capsule identity…).
    pub source: Option<Value>,
}

/// A built capsule.
#[derive(Debug, Clone, PartialEq)]
pub struct Capsule {
    /// `<slug>-r<revision_number>.zip`, for `Content-Disposition`.
    pub file_name: String,
    pub bytes: Vec<u8>,
    pub manifest: CapsuleManifest,
}

/// The manifest entry of each component (hash, size, media type), sorted by path.
pub fn component_manifest(content: &RevisionContent) -> Vec<ComponentManifest> {
    let mut manifest: Vec<ComponentManifest> = content
        .components
        .iter()
        .map(|c| ComponentManifest {
            logical_path: c.logical_path.clone(),
            component_type: c.component_type,
            content_hash: content_hash(&c.content),
            size: c.content.len() as u64,
            media_type: media_type_for(&c.logical_path, &c.content),
        })
        .collect();
    manifest.sort_by(|a, b| a.logical_path.as_bytes().cmp(b.logical_path.as_bytes()));
    manifest
}

/// canonical_hash of a revision's content (docs/canonical-hash.md).
pub fn content_canonical_hash(content: &RevisionContent) -> String {
    let hashes: Vec<String> = content
        .components
        .iter()
        .map(|c| content_hash(&c.content))
        .collect();
    let hashed: Vec<HashedComponent<'_>> = content
        .components
        .iter()
        .zip(&hashes)
        .map(|(c, h)| HashedComponent {
            logical_path: &c.logical_path,
            component_type: c.component_type,
            content_hash: h,
        })
        .collect();
    canonical_hash(
        &content.name,
        &content.description,
        &content.metadata,
        &content.instruction_body,
        &hashed,
    )
}

/// Builds the Source Capsule ZIP of one revision. Fails only on content that cannot be
/// exported losslessly: an invalid slug or logical path, or metadata that SKILL.md cannot
/// carry (see [`render_skill_md`]). The canonical_hash is computed from the content.
pub fn build_capsule(input: &CapsuleInput) -> Result<Capsule, PackageError> {
    validate_slug("slug", &input.slug)?;
    let content = &input.content;
    for (i, c) in content.components.iter().enumerate() {
        validate_logical_path(&format!("components[{i}].logical_path"), &c.logical_path)?;
    }
    let skill_md = render_skill_md(
        &content.name,
        &content.description,
        &content.metadata,
        &content.instruction_body,
    )?;
    let manifest = CapsuleManifest {
        format: CAPSULE_FORMAT.to_string(),
        format_version: CAPSULE_FORMAT_VERSION,
        skill: CapsuleSkill {
            skill_id: input.skill_id.clone(),
            slug: input.slug.clone(),
        },
        revision: CapsuleRevision {
            revision_id: input.revision_id.clone(),
            revision_number: input.revision_number,
            status: Some(input.status),
            created_at: input.created_at.clone(),
            name: content.name.clone(),
            description: content.description.clone(),
        },
        canonical_hash: content_canonical_hash(content),
        metadata: content.metadata.clone(),
        instruction_body: Some(CapsuleBody {
            path: SKILL_MD.to_string(),
            content_hash: content_hash(content.instruction_body.as_bytes()),
            size: content.instruction_body.len() as u64,
        }),
        components: component_manifest(content),
        attribution: input.attribution.clone(),
        source: input.source.clone(),
    };
    let manifest_json = manifest_bytes(&manifest)?;

    let mut components: Vec<&crate::model::ComponentInput> = content.components.iter().collect();
    components.sort_by(|a, b| a.logical_path.as_bytes().cmp(b.logical_path.as_bytes()));

    let slug = &input.slug;
    let folder = capsule_folder(slug);
    let mut entries: Vec<(String, &[u8], u32)> = vec![
        (format!("{folder}/{SKILL_MD}"), skill_md.as_bytes(), 0o644),
        (
            format!("{folder}/{CAPSULE_MANIFEST}"),
            manifest_json.as_slice(),
            0o644,
        ),
    ];
    for c in components {
        let mode = if c.component_type == ComponentType::Script {
            0o755
        } else {
            0o644
        };
        entries.push((
            format!("{folder}/{}", c.logical_path),
            c.content.as_slice(),
            mode,
        ));
    }
    let bytes = write_zip(&entries)?;
    Ok(Capsule {
        file_name: format!("{slug}-r{}.zip", input.revision_number),
        bytes,
        manifest,
    })
}

/// The capsule's top folder: the slug, except for a slug Windows reserves as a device name
/// (`aux`, `con`, `com1`…), which no folder there can be named: `<slug>-skill` then. The
/// folder is not the identity (capsule.json names the slug), so nothing else changes.
fn capsule_folder(slug: &str) -> String {
    if crate::validate::is_windows_device_name(slug) {
        format!("{slug}-skill")
    } else {
        slug.to_string()
    }
}

/// Pretty JSON, keys sorted at every level, final newline.
fn manifest_bytes(manifest: &CapsuleManifest) -> Result<Vec<u8>, PackageError> {
    let value = serde_json::to_value(manifest).map_err(not_exportable)?;
    let mut bytes = serde_json::to_vec_pretty(&sorted(value)).map_err(not_exportable)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn not_exportable(e: impl std::fmt::Display) -> PackageError {
    PackageError::NotExportable {
        field: "capsule".into(),
        reason: format!("the capsule cannot be written: {e}"),
    }
}

fn write_zip(entries: &[(String, &[u8], u32)]) -> Result<Vec<u8>, PackageError> {
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes, mode) in entries {
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(6))
            .last_modified_time(DateTime::default())
            .system(zip::System::Unix)
            .unix_permissions(*mode);
        writer
            .start_file(name.as_str(), options)
            .map_err(not_exportable)?;
        writer.write_all(bytes).map_err(not_exportable)?;
    }
    Ok(writer.finish().map_err(not_exportable)?.into_inner())
}

/// Parses capsule.json bytes (strict UTF-8, known format and version).
pub fn parse_manifest(bytes: &[u8]) -> Result<CapsuleManifest, PackageError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        PackageError::NotUtf8 {
            path: CAPSULE_MANIFEST.to_string(),
            offset: valid as u64,
            line: bytes[..valid].iter().filter(|b| **b == b'\n').count() as u64 + 1,
        }
    })?;
    let head: Value = serde_json::from_str(text).map_err(|e| PackageError::CapsuleInvalid {
        reason: format!("not valid JSON: {e}"),
    })?;
    if head.get("format").and_then(Value::as_str) != Some(CAPSULE_FORMAT) {
        return Err(PackageError::CapsuleInvalid {
            reason: format!(
                "`format` must be \"{CAPSULE_FORMAT}\" (capsule.json is reserved for the \
                 Source Capsule manifest)"
            ),
        });
    }
    match head.get("format_version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(CAPSULE_FORMAT_VERSION) => {}
        other => {
            return Err(PackageError::CapsuleInvalid {
                reason: format!(
                    "unsupported `format_version` {}; this server reads version \
                     {CAPSULE_FORMAT_VERSION}",
                    other.map_or_else(|| "(missing)".to_string(), |v| v.to_string())
                ),
            });
        }
    }
    serde_json::from_value(head).map_err(|e| PackageError::CapsuleInvalid {
        reason: e.to_string(),
    })
}

/// Checks the package's files against the manifest and returns the component type of each
/// path. Every component must be listed, every listed component present, and every file's
/// SHA-256 and size must match; all mismatches are reported together, in path order.
pub(crate) fn verify_components(
    manifest: &CapsuleManifest,
    files: &[PackageFile],
) -> Result<Vec<ComponentType>, PackageError> {
    let mut listed = std::collections::BTreeMap::new();
    for entry in &manifest.components {
        if listed.insert(entry.logical_path.as_str(), entry).is_some() {
            return Err(PackageError::CapsuleInvalid {
                reason: format!("`{}` is listed twice", entry.logical_path),
            });
        }
    }
    let mut mismatches: Vec<(String, String)> = Vec::new();
    let mut types = Vec::with_capacity(files.len());
    for file in files {
        match listed.remove(file.path.as_str()) {
            None => {
                mismatches.push((file.path.clone(), "not listed in capsule.json".into()));
                types.push(ComponentType::Document);
            }
            Some(entry) => {
                types.push(entry.component_type);
                let hash = content_hash(&file.bytes);
                if hash != entry.content_hash {
                    mismatches.push((
                        file.path.clone(),
                        format!(
                            "SHA-256 {hash} differs from {} in capsule.json",
                            entry.content_hash
                        ),
                    ));
                } else if file.bytes.len() as u64 != entry.size {
                    mismatches.push((
                        file.path.clone(),
                        format!(
                            "size {} differs from {} in capsule.json",
                            file.bytes.len(),
                            entry.size
                        ),
                    ));
                }
            }
        }
    }
    for missing in listed.keys() {
        mismatches.push((
            missing.to_string(),
            "listed in capsule.json but missing".into(),
        ));
    }
    if mismatches.is_empty() {
        Ok(types)
    } else {
        mismatches.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Err(PackageError::CapsuleMismatch { mismatches })
    }
}

/// After the components matched: the SKILL.md content must reproduce the manifest's
/// canonical_hash. Says which part of SKILL.md differs when it can tell.
pub(crate) fn verify_canonical_hash(
    manifest: &CapsuleManifest,
    content: &RevisionContent,
) -> Result<(), PackageError> {
    let actual = content_canonical_hash(content);
    if actual == manifest.canonical_hash {
        return Ok(());
    }
    let mut differs = Vec::new();
    if !manifest.revision.name.is_empty() && manifest.revision.name != content.name {
        differs.push("name");
    }
    if !manifest.revision.description.is_empty()
        && manifest.revision.description != content.description
    {
        differs.push("description");
    }
    if manifest.metadata != content.metadata {
        differs.push("metadata");
    }
    if let Some(body) = &manifest.instruction_body
        && body.content_hash != content_hash(content.instruction_body.as_bytes())
    {
        differs.push("instruction body");
    }
    let (path, reason) = if differs.is_empty() {
        (
            CAPSULE_MANIFEST.to_string(),
            format!(
                "canonical_hash {} does not match the package ({actual})",
                manifest.canonical_hash
            ),
        )
    } else {
        (
            SKILL_MD.to_string(),
            format!(
                "{} differ from capsule.json (canonical_hash {} expected, got {actual})",
                differs.join(", "),
                manifest.canonical_hash
            ),
        )
    };
    Err(PackageError::CapsuleMismatch {
        mismatches: vec![(path, reason)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ComponentInput;
    use crate::package::{ArchiveLimits, PackageError, read_zip};

    fn input(slug: &str, paths: &[&str]) -> CapsuleInput {
        CapsuleInput {
            slug: slug.into(),
            skill_id: "skill_1".into(),
            revision_id: "rev_1".into(),
            revision_number: 1,
            status: RevisionStatus::Draft,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            content: RevisionContent {
                name: "Demo".into(),
                description: "A demo".into(),
                instruction_body: "Do it.\n".into(),
                metadata: Map::new(),
                components: paths
                    .iter()
                    .map(|p| ComponentInput {
                        logical_path: (*p).into(),
                        component_type: ComponentType::Reference,
                        content: b"x".to_vec(),
                    })
                    .collect(),
            },
            attribution: Value::Null,
            source: None,
        }
    }

    fn entry_names(bytes: &[u8]) -> Vec<String> {
        let archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        archive
            .file_names()
            .map(|n| n.unwrap().to_string())
            .collect()
    }

    /// The names Windows cannot unpack are refused on the way out, and on the way in: a ZIP
    /// holding one (written by hand, or exported before the rule) is not imported.
    #[test]
    fn windows_names_are_neither_exported_nor_imported() {
        for bad in [
            "references/CON",
            "notes ",
            "references/\u{2024}\u{2024}/x.md",
        ] {
            let Err(PackageError::Validation(e)) = build_capsule(&input("demo", &[bad])) else {
                panic!("{bad:?} exported");
            };
            assert_eq!(e.field, "components[0].logical_path");
            assert!(
                e.message.contains("cannot be unpacked on Windows"),
                "{}",
                e.message
            );

            let zip = write_zip(&[
                (
                    "demo/SKILL.md".into(),
                    b"---\nname: demo\ndescription: d\n---\nBody\n",
                    0o644,
                ),
                (format!("demo/{bad}"), b"x", 0o644),
            ])
            .unwrap();
            let Err(PackageError::Validation(e)) = read_zip(&zip, &ArchiveLimits::default()) else {
                panic!("{bad:?} imported");
            };
            assert_eq!(e.field, bad, "the import names the path");
            assert!(
                e.message.contains("cannot be unpacked on Windows"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn a_device_name_slug_gets_a_folder_windows_can_create() {
        let capsule = build_capsule(&input("aux", &["references/a.md"])).unwrap();
        assert_eq!(
            entry_names(&capsule.bytes),
            [
                "aux-skill/SKILL.md",
                "aux-skill/capsule.json",
                "aux-skill/references/a.md"
            ]
        );
        assert_eq!(capsule.file_name, "aux-r1.zip");
        let back = read_zip(&capsule.bytes, &ArchiveLimits::default()).unwrap();
        assert_eq!(back.suggested_slug().as_deref(), Some("aux"));
        assert_eq!(back.canonical_hash(), capsule.manifest.canonical_hash);
        let plain = build_capsule(&input("auxiliary", &[])).unwrap();
        assert_eq!(
            entry_names(&plain.bytes),
            ["auxiliary/SKILL.md", "auxiliary/capsule.json"]
        );
    }
}
