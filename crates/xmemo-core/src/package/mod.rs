//! Skill packages (SPEC §6): SKILL.md, multi-file ZIP, folder, and Source Capsule — pure
//! functions from bytes to a validated [`Package`] and back.
//!
//! ```text
//! zip bytes ──unzip / unzip_subtree──▶ Vec<PackageFile> ──read_files──▶ Package ──▶ RevisionContent
//! SKILL.md bytes ──read_skill_md────────────────────────────────────────▶ Package
//! CapsuleInput ──build_capsule──▶ Capsule { bytes, manifest }   (read_zip(bytes) reproduces it)
//! ```
//!
//! [`read_files`] is where every package rule lives, whatever the files came from (ZIP,
//! repository archive, a folder walked by the CLI):
//! 1. paths must be safe relative paths ([`unsafe_path_reason`]); junk is dropped
//!    ([`is_ignored_path`]); no two paths may differ only by case, and no path may be both
//!    a file and a folder;
//! 2. SKILL.md must be at the root, or every file must be inside one top-level folder that
//!    holds SKILL.md (that folder is stripped and reported as `root_folder`);
//! 3. secrets are refused, all named at once ([`sensitive_reason`]);
//! 4. more than 50 components is refused *before* anything is parsed (VALIDATION_ERROR
//!    with limit and actual count);
//! 5. SKILL.md is parsed ([`parse_skill_md_with`]), leniently: what it repairs is
//!    returned in [`Package::repairs`] (a `skill.md` named in another case is one);
//! 6. with a `capsule.json` beside SKILL.md, component types come from it and every file
//!    must match its SHA-256 and size (else the paths are named); without one, types come
//!    from folders ([`component_type_for_path`]);
//! 7. the content passes `validate_content` (SPEC §1 limits), errors about a component
//!    being renamed to its logical path;
//! 8. with a capsule, the content must reproduce its canonical_hash.

mod archive;
pub mod batch;
mod capsule;
mod classify;
mod derive;
mod error;
mod frontmatter;
mod repair;
mod skill_md;

pub use archive::{
    ArchiveLimits, PackageFile, archive_file_names, single_top_folder, unzip, unzip_folders,
    unzip_subtree,
};
pub use capsule::{
    CAPSULE_FORMAT, CAPSULE_FORMAT_VERSION, CAPSULE_MANIFEST, Capsule, CapsuleBody, CapsuleInput,
    CapsuleManifest, CapsuleRevision, CapsuleSkill, build_capsule, component_manifest,
    content_canonical_hash, parse_manifest,
};
pub use classify::{
    component_type_for_path, is_ignored_path, sensitive_reason, unsafe_path_reason,
};
pub use error::PackageError;
pub use repair::{Repair, RepairKind};
pub use skill_md::{
    FRONTMATTER_MAX_BYTES, NameHints, ParsedSkillMd, SKILL_MD, SKILL_MD_FRAMING_BYTES,
    SKILL_MD_MAX_BYTES, check_skill_md_size, parse_skill_md, parse_skill_md_with, render_skill_md,
};

use crate::error::ValidationError;
use crate::limits::MAX_COMPONENTS;
use crate::model::{ComponentInput, ComponentManifest, RevisionContent};
use crate::validate::{validate_content, validate_slug};
use std::collections::{BTreeSet, HashMap};

/// A validated package: ready to be saved as a revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// name, description, metadata and body from SKILL.md; components sorted by
    /// logical_path (UTF-8 bytes). Already passed `validate_content`.
    pub content: RevisionContent,
    /// The capsule manifest, when the package was a Source Capsule (its identity, status,
    /// attribution and source are informational; the content is what was verified).
    pub capsule: Option<CapsuleManifest>,
    /// The top-level folder that held SKILL.md, if the files were inside one.
    pub root_folder: Option<String>,
    /// What was repaired to read the package (docs/packages.md, "Repairs").
    pub repairs: Vec<Repair>,
}

impl Package {
    /// canonical_hash of the content (docs/canonical-hash.md).
    pub fn canonical_hash(&self) -> String {
        content_canonical_hash(&self.content)
    }

    /// Hash, size and media type of each component, sorted by path.
    pub fn manifest(&self) -> Vec<ComponentManifest> {
        component_manifest(&self.content)
    }

    /// A slug for a new skill: the capsule's slug, else the frontmatter `name` if it is
    /// already a valid slug (the Agent Skills rule), else the root folder if it is one, else
    /// [`slugify`] of the name.
    pub fn suggested_slug(&self) -> Option<String> {
        let valid = |s: &str| validate_slug("slug", s).is_ok();
        if let Some(c) = &self.capsule
            && valid(&c.skill.slug)
        {
            return Some(c.skill.slug.clone());
        }
        if valid(&self.content.name) {
            return Some(self.content.name.clone());
        }
        if let Some(root) = &self.root_folder
            && valid(root)
        {
            return Some(root.clone());
        }
        slugify(&self.content.name)
    }
}

/// Lowercase ASCII letters and digits of `text`, other runs turned into single hyphens,
/// cut to 64 characters; `None` when nothing is left.
pub fn slugify(text: &str) -> Option<String> {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(crate::limits::SLUG_MAX_CHARS);
    let slug = slug.trim_end_matches('-').to_string();
    (!slug.is_empty()).then_some(slug)
}

/// A ZIP upload: [`unzip`] then [`read_files`].
pub fn read_zip(bytes: &[u8], limits: &ArchiveLimits) -> Result<Package, PackageError> {
    read_files(unzip(bytes, limits)?)
}

/// A lone SKILL.md: a package without components.
pub fn read_skill_md(bytes: &[u8]) -> Result<Package, PackageError> {
    read_skill_md_with(bytes, &NameHints::default())
}

/// [`read_skill_md`] with somewhere to take a missing name from.
pub fn read_skill_md_with(bytes: &[u8], hints: &NameHints) -> Result<Package, PackageError> {
    read_files_with(vec![PackageFile::new(SKILL_MD, bytes)], hints)
}

/// The package rules (see the module documentation) over a list of files with relative
/// `/`-separated paths. Callers bound how much they read (e.g. with [`ArchiveLimits`]).
pub fn read_files(files: Vec<PackageFile>) -> Result<Package, PackageError> {
    read_files_with(files, &NameHints::default())
}

/// [`read_files`] with somewhere to take a missing name from when the package's own
/// folder does not say (`hints.folder` is used only without a top folder).
pub fn read_files_with(
    files: Vec<PackageFile>,
    hints: &NameHints,
) -> Result<Package, PackageError> {
    // 1. paths
    let mut kept = Vec::with_capacity(files.len());
    for file in files {
        if let Some(reason) = unsafe_path_reason(&file.path) {
            return Err(PackageError::unsafe_path(&file.path, reason));
        }
        if !is_ignored_path(&file.path) {
            kept.push(file);
        }
    }
    check_collisions(&kept)?;

    // 2. root
    let (root, skill_md_name) = find_root(&kept)?;
    let files: Vec<PackageFile> = match &root {
        None => kept,
        Some(folder) => {
            let prefix = format!("{folder}/");
            kept.into_iter()
                .map(|f| PackageFile {
                    path: f.path[prefix.len()..].to_string(),
                    bytes: f.bytes,
                })
                .collect()
        }
    };

    // 3. secrets
    let sensitive: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| sensitive_reason(&f.path).map(|why| (f.path.clone(), why.to_string())))
        .collect();
    if !sensitive.is_empty() {
        return Err(PackageError::SensitiveFiles { paths: sensitive });
    }

    // 4. split and count
    let mut skill_md = None;
    let mut capsule_json = None;
    let mut components: Vec<PackageFile> = Vec::new();
    for file in files {
        if file.path == skill_md_name {
            skill_md = Some(file.bytes);
        } else if file.path == CAPSULE_MANIFEST {
            capsule_json = Some(file.bytes);
        } else {
            components.push(file);
        }
    }
    if components.len() > MAX_COMPONENTS {
        return Err(ValidationError::too_many(
            "components",
            "components",
            MAX_COMPONENTS as u64,
            components.len() as u64,
        )
        .into());
    }
    let skill_md = skill_md.ok_or_else(|| PackageError::MissingSkillMd {
        hint: String::new(),
    })?;

    // 5. SKILL.md
    let mut repairs = Vec::new();
    if skill_md_name != SKILL_MD {
        repairs.push(Repair::new(
            RepairKind::SkillMdFileName,
            "SKILL.md",
            format!("the instructions file is named `{skill_md_name}`"),
            "read as SKILL.md (an export names it SKILL.md)",
        ));
    }
    let hints = NameHints {
        folder: root.clone().or_else(|| hints.folder.clone()),
        slug: hints.slug.clone(),
    };
    let mut parsed = parse_skill_md_with(&skill_md, &hints)?;
    repairs.append(&mut parsed.repairs);

    // 6. capsule and types
    components.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let capsule = capsule_json.as_deref().map(parse_manifest).transpose()?;
    let types = match &capsule {
        Some(manifest) => capsule::verify_components(manifest, &components)?,
        None => components
            .iter()
            .map(|f| component_type_for_path(&f.path))
            .collect(),
    };
    let content = RevisionContent {
        name: parsed.name,
        description: parsed.description,
        instruction_body: parsed.body,
        metadata: parsed.metadata,
        components: components
            .into_iter()
            .zip(types)
            .map(|(f, component_type)| ComponentInput {
                logical_path: f.path,
                component_type,
                content: f.bytes,
            })
            .collect(),
    };

    // 7. SPEC §1
    validate_content(&content).map_err(|e| name_component(e, &content))?;

    // 8. capsule identity
    if let Some(manifest) = &capsule {
        capsule::verify_canonical_hash(manifest, &content)?;
    }
    Ok(Package {
        content,
        capsule,
        root_folder: root,
        repairs,
    })
}

/// `components[3].content` → the component's logical path.
fn name_component(mut e: ValidationError, content: &RevisionContent) -> PackageError {
    if let Some(rest) = e.field.strip_prefix("components[")
        && let Some((index, _)) = rest.split_once(']')
        && let Ok(index) = index.parse::<usize>()
        && let Some(component) = content.components.get(index)
    {
        e.field = component.logical_path.clone();
    }
    PackageError::Validation(e)
}

fn check_collisions(files: &[PackageFile]) -> Result<(), PackageError> {
    let mut seen: HashMap<String, &str> = HashMap::new();
    for file in files {
        if let Some(other) = seen.insert(file.path.to_lowercase(), &file.path) {
            let reason = if other == file.path {
                "appears twice:"
            } else {
                "differs only by case from"
            };
            return Err(PackageError::PathCollision {
                path: file.path.clone(),
                other: other.to_string(),
                reason: reason.into(),
            });
        }
    }
    for file in files {
        let lower = file.path.to_lowercase();
        let mut at = 0;
        while let Some(i) = lower[at..].find('/') {
            let folder = &lower[..at + i];
            if let Some(other) = seen.get(folder) {
                return Err(PackageError::PathCollision {
                    path: file.path.clone(),
                    other: other.to_string(),
                    reason: "is inside a folder that is also a file:".into(),
                });
            }
            at += i + 1;
        }
    }
    Ok(())
}

/// The root folder (`None`: the package root itself) and the path of SKILL.md inside it:
/// `SKILL.md`, or the one file whose name is SKILL.md in another case (`skill.md`), which
/// is read as SKILL.md and reported.
fn find_root(files: &[PackageFile]) -> Result<(Option<String>, String), PackageError> {
    if files.is_empty() {
        return Err(PackageError::MissingSkillMd {
            hint: "the package holds no files".into(),
        });
    }
    // Names differing only by case were refused already, so there is at most one.
    let instructions_in = |prefix: &str| -> Option<String> {
        files
            .iter()
            .filter_map(|f| f.path.strip_prefix(prefix))
            .find(|rest| rest.eq_ignore_ascii_case(SKILL_MD))
            .map(str::to_string)
    };
    if let Some(name) = instructions_in("") {
        return Ok((None, name));
    }
    let mut top_level = BTreeSet::new();
    for f in files {
        match f.path.split_once('/') {
            Some((folder, _)) => top_level.insert(format!("{folder}/")),
            None => top_level.insert(f.path.clone()),
        };
    }
    if top_level.len() == 1
        && let Some(folder) = top_level.first().and_then(|t| t.strip_suffix('/'))
        && let Some(name) = instructions_in(&format!("{folder}/"))
    {
        return Ok((Some(folder.to_string()), name));
    }
    let nested_skill_md = files.iter().any(|f| {
        f.path
            .split_once('/')
            .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(SKILL_MD))
    });
    if nested_skill_md {
        return Err(PackageError::AmbiguousRoot {
            top_level: top_level.into_iter().take(20).collect(),
        });
    }
    Err(PackageError::MissingSkillMd {
        hint: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &[u8] = b"---\nname: demo\ndescription: A demo\n---\n\nDo it.\n";

    #[test]
    fn root_and_single_folder_layouts() {
        let p = read_files(vec![
            PackageFile::new("SKILL.md", MD),
            PackageFile::new("scripts/a.py", "print(1)"),
        ])
        .unwrap();
        assert_eq!(p.root_folder, None);
        assert_eq!(p.content.components[0].logical_path, "scripts/a.py");

        let p = read_files(vec![
            PackageFile::new("demo/SKILL.md", MD),
            PackageFile::new("demo/LICENSE.txt", "Apache"),
        ])
        .unwrap();
        assert_eq!(p.root_folder.as_deref(), Some("demo"));
        assert_eq!(p.content.components[0].logical_path, "LICENSE.txt");
        assert_eq!(p.suggested_slug().as_deref(), Some("demo"));
    }

    #[test]
    fn slugify_rules() {
        assert_eq!(
            slugify("Deploy Procedure!").as_deref(),
            Some("deploy-procedure")
        );
        assert_eq!(slugify("--A__b--").as_deref(), Some("a-b"));
        assert_eq!(slugify("日本"), None);
        assert_eq!(slugify(&"a".repeat(100)).map(|s| s.len()), Some(64));
    }

    #[test]
    fn file_and_folder_collision() {
        let e = read_files(vec![
            PackageFile::new("SKILL.md", MD),
            PackageFile::new("docs", "x"),
            PackageFile::new("Docs/a.md", "y"),
        ])
        .unwrap_err();
        assert_eq!(e.kind(), "path_collision");
    }
}
