//! Skill packages (SPEC §6): import a ZIP, a SKILL.md or a repository URL through the save
//! path; export a revision as a Source Capsule; diff two revisions.
//!
//! Every package rule (paths, secrets, limits, capsule verification) is in
//! `xmemo_core::package`; this module adds access checks, provenance and the writes.

use super::Service;
use super::types::Saved;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::fetch::{self, FetchConfig, RemoteSkill};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use xmemo_core::diff::{DEFAULT_DIFF_BUDGET, RevisionDiff, diff_revisions};
use xmemo_core::package::{
    self, ArchiveLimits, Capsule, CapsuleInput, Package, PackageError, PackageFile,
};
use xmemo_core::{ComponentInput, RevisionContent, RevisionStatus, SaveIntent, Scope};
use xmemo_store::Revision;

/// How an import is saved.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Workspace id or handle; default: the caller's personal workspace.
    pub workspace: Option<String>,
    /// The skill's slug; default: the capsule's slug, else one derived from the package.
    pub slug: Option<String>,
    pub intent: Option<SaveIntent>,
    /// Optimistic concurrency, as for a save.
    pub expected_revision_id: Option<String>,
    /// Name of the uploaded file, kept in the recorded source.
    pub file_name: Option<String>,
}

/// The result of an import: the save, and where the content came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Imported {
    #[serde(flatten)]
    pub saved: Saved,
    /// Components in the package.
    pub components: usize,
    /// The package was a Source Capsule (its canonical_hash was verified).
    pub from_capsule: bool,
    /// The provenance recorded with the revision (for `created: false`, the revision that
    /// already existed keeps its own).
    pub source: Value,
}

/// One side of a diff.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiffSide {
    pub revision_id: String,
    pub revision_number: i64,
    pub status: RevisionStatus,
    pub canonical_hash: String,
    pub created_at: String,
}

impl From<&Revision> for DiffSide {
    fn from(r: &Revision) -> Self {
        Self {
            revision_id: r.revision_id.clone(),
            revision_number: r.revision_number,
            status: r.status,
            canonical_hash: r.canonical_hash.clone(),
            created_at: r.created_at.clone(),
        }
    }
}

/// A diff between two revisions of one skill.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkillDiff {
    pub skill_id: String,
    pub slug: String,
    pub workspace: String,
    pub from: DiffSide,
    pub to: DiffSide,
    pub diff: RevisionDiff,
}

impl Service {
    /// This service with the given outbound-fetch settings (hosts, allowlists, limits) for
    /// repository imports; without it, [`FetchConfig::default`] applies.
    pub fn with_fetch_config(mut self, config: FetchConfig) -> Self {
        self.fetch = Arc::new(config);
        self
    }

    /// The outbound-fetch settings in force.
    pub fn fetch_config(&self) -> Arc<FetchConfig> {
        self.fetch.clone()
    }

    /// Imports a ZIP (a skill folder, or a Source Capsule).
    pub async fn import_archive(
        &self,
        principal: &Principal,
        bytes: Vec<u8>,
        options: ImportOptions,
    ) -> ServiceResult<Imported> {
        principal.require(Scope::Write)?;
        let mut source = upload_source("zip", &bytes, options.file_name.as_deref());
        let package =
            blocking(move || package::read_zip(&bytes, &ArchiveLimits::default())).await??;
        add_capsule_origin(&mut source, &package);
        self.save_package(principal, package, options, None, source)
            .await
    }

    /// Imports a lone SKILL.md (a skill without components).
    pub async fn import_skill_md(
        &self,
        principal: &Principal,
        bytes: Vec<u8>,
        options: ImportOptions,
    ) -> ServiceResult<Imported> {
        principal.require(Scope::Write)?;
        let source = upload_source("skill_md", &bytes, options.file_name.as_deref());
        let package = package::read_skill_md(&bytes)?;
        self.save_package(principal, package, options, None, source)
            .await
    }

    /// Imports a skill from a GitHub or ClawHub URL (see [`crate::fetch`] for the accepted
    /// shapes and the outbound rules). Scope and workspace are checked before anything is
    /// fetched.
    pub async fn import_url(
        &self,
        principal: &Principal,
        url: &str,
        options: ImportOptions,
    ) -> ServiceResult<Imported> {
        principal.require(Scope::Write)?;
        let remote = fetch::parse_skill_url(url)?;
        // A workspace or role that could not take the save is refused without a download.
        let access = self.access(principal).await?;
        super::skills::save_target(&access, options.workspace.as_deref(), options.intent)?;
        let config = self.fetch_config();
        let download = remote.download_url(&config)?;
        let fetched = fetch::fetch(&config, download).await?;
        let mut source = json!({
            "kind": remote.kind(),
            "url": url.trim(),
            "archive_url": fetched.final_url,
            "sha256": fetched.sha256,
            "size": fetched.bytes.len(),
            "fetched_at": xmemo_store::now(),
        });
        let remote_for_read = remote.clone();
        let bytes = fetched.bytes;
        let (package, extra) = blocking(move || read_remote(&remote_for_read, &bytes)).await??;
        if let (Some(obj), Value::Object(extra)) = (source.as_object_mut(), extra) {
            obj.extend(extra);
        }
        add_capsule_origin(&mut source, &package);
        let folder_hint = match &remote {
            RemoteSkill::GitHub { path, repo, .. } => path
                .as_deref()
                .and_then(|p| p.rsplit('/').next())
                .or(Some(repo.as_str()))
                .map(str::to_string),
            RemoteSkill::ClawHub { slug, .. } => Some(slug.clone()),
        };
        self.save_package(principal, package, options, folder_hint, source)
            .await
    }

    async fn save_package(
        &self,
        principal: &Principal,
        package: Package,
        options: ImportOptions,
        folder_hint: Option<String>,
        source: Value,
    ) -> ServiceResult<Imported> {
        let slug = choose_slug(options.slug, &package, folder_hint.as_deref())?;
        let components = package.content.components.len();
        let from_capsule = package.capsule.is_some();
        let saved = self
            .save_content(
                principal,
                options.workspace.as_deref(),
                slug,
                package.content,
                options.intent,
                options.expected_revision_id,
                Some(source.clone()),
            )
            .await?;
        Ok(Imported {
            saved,
            components,
            from_capsule,
            source,
        })
    }

    /// Exports one revision as a Source Capsule: `revision_id`, else the revision Level 1
    /// returns (the published one, else the latest). Needs `memory:read`.
    pub async fn export(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        revision_id: Option<&str>,
    ) -> ServiceResult<Capsule> {
        let root = self.root(principal, slug, workspace, revision_id).await?;
        let revision = self
            .store
            .get_revision(&root.revision_id)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!("revision `{}` not found", root.revision_id))
            })?;
        self.capsule_of(&root.slug, &root.skill_id, &revision).await
    }

    /// The Source Capsule of one revision (after the caller's access was checked).
    pub(super) async fn capsule_of(
        &self,
        slug: &str,
        skill_id: &str,
        revision: &Revision,
    ) -> ServiceResult<Capsule> {
        let content = self.revision_content(revision).await?;
        let input = CapsuleInput {
            slug: slug.to_string(),
            skill_id: skill_id.to_string(),
            revision_id: revision.revision_id.clone(),
            revision_number: u64::try_from(revision.revision_number).unwrap_or(0),
            status: revision.status,
            created_at: revision.created_at.clone(),
            content,
            attribution: serde_json::to_value(&revision.attribution).unwrap_or(Value::Null),
            source: revision.source.clone(),
        };
        Ok(blocking(move || package::build_capsule(&input)).await??)
    }

    /// Word-level diff between two revisions of one skill (SPEC §6), bounded by
    /// [`DEFAULT_DIFF_BUDGET`]. Needs `memory:read`.
    pub async fn diff(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        from_revision_id: &str,
        to_revision_id: &str,
    ) -> ServiceResult<SkillDiff> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let (skill, ws, _) = self.resolve_skill(&access, slug, workspace).await?;
        let from = self.revision_of(&skill, from_revision_id).await?;
        let to = self.revision_of(&skill, to_revision_id).await?;
        let old = self.revision_content(&from).await?;
        let new = self.revision_content(&to).await?;
        let diff = blocking(move || diff_revisions(&old, &new, DEFAULT_DIFF_BUDGET)).await?;
        Ok(SkillDiff {
            skill_id: skill.skill_id,
            slug: skill.slug,
            workspace: ws.handle,
            from: DiffSide::from(&from),
            to: DiffSide::from(&to),
            diff,
        })
    }

    /// A stored revision with its component bytes.
    async fn revision_content(&self, revision: &Revision) -> ServiceResult<RevisionContent> {
        let mut components = Vec::with_capacity(revision.components.len());
        for c in &revision.components {
            let (_, bytes) = self
                .store
                .component_bytes(&revision.revision_id, &c.logical_path)
                .await?
                .ok_or_else(|| {
                    ServiceError::Internal(format!(
                        "component `{}` of revision `{}` has no stored bytes",
                        c.logical_path, revision.revision_id
                    ))
                })?;
            components.push(ComponentInput {
                logical_path: c.logical_path.clone(),
                component_type: c.component_type,
                content: bytes,
            });
        }
        Ok(RevisionContent {
            name: revision.name.clone(),
            description: revision.description.clone(),
            instruction_body: revision.instruction_body.clone(),
            metadata: revision.metadata.clone(),
            components,
        })
    }
}

/// CPU-bound work (decompression, diffing) off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> ServiceResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ServiceError::Internal(format!("package task failed: {e}")))
}

/// Slug: the option, else the capsule's, else the frontmatter name when it is a valid slug,
/// else the package's folder (or the URL's folder/skill name), else the name slugified.
fn choose_slug(
    option: Option<String>,
    package: &Package,
    folder_hint: Option<&str>,
) -> ServiceResult<String> {
    if let Some(slug) = option
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    {
        xmemo_core::validate_slug("slug", &slug)?;
        return Ok(slug);
    }
    let valid = |s: &str| xmemo_core::validate_slug("slug", s).is_ok();
    if let Some(slug) = package
        .capsule
        .as_ref()
        .map(|c| c.skill.slug.clone())
        .filter(|s| valid(s))
    {
        return Ok(slug);
    }
    if valid(&package.content.name) {
        return Ok(package.content.name.clone());
    }
    if let Some(folder) = package
        .root_folder
        .as_deref()
        .or(folder_hint)
        .filter(|f| valid(f))
    {
        return Ok(folder.to_string());
    }
    package::slugify(&package.content.name).ok_or_else(|| {
        ServiceError::validation(
            format!(
                "cannot derive a slug from the package (name `{}`); pass `slug`",
                package.content.name
            ),
            "slug",
        )
    })
}

/// Provenance of an upload.
fn upload_source(format: &str, bytes: &[u8], file_name: Option<&str>) -> Value {
    let mut source = json!({
        "kind": "upload",
        "format": format,
        "sha256": hex::encode(Sha256::digest(bytes)),
        "size": bytes.len(),
        "imported_at": xmemo_store::now(),
    });
    let name = file_name.map(|n| {
        n.chars()
            .filter(|c| !c.is_control())
            .take(255)
            .collect::<String>()
    });
    if let (Some(name), Some(obj)) = (name.filter(|n| !n.is_empty()), source.as_object_mut()) {
        obj.insert("file_name".into(), name.into());
    }
    source
}

/// A re-imported capsule records the identity it was exported with (and that revision's
/// own source, so provenance chains across servers).
fn add_capsule_origin(source: &mut Value, package: &Package) {
    let (Some(capsule), Some(obj)) = (&package.capsule, source.as_object_mut()) else {
        return;
    };
    obj.insert(
        "capsule".into(),
        json!({
            "skill_id": capsule.skill.skill_id,
            "slug": capsule.skill.slug,
            "revision_id": capsule.revision.revision_id,
            "revision_number": capsule.revision.revision_number,
            "canonical_hash": capsule.canonical_hash,
            "source": capsule.source,
        }),
    );
}

/// Reads a downloaded archive: for GitHub, only the skill's folder inside the repository
/// archive's top folder; for ClawHub, the whole archive. Returns the package and the
/// source fields learned from the archive (the commit).
fn read_remote(remote: &RemoteSkill, bytes: &[u8]) -> Result<(Package, Value), ServiceError> {
    let limits = ArchiveLimits::default();
    match remote {
        RemoteSkill::GitHub {
            owner,
            repo,
            git_ref,
            path,
        } => {
            let top = package::single_top_folder(bytes)?;
            let commit = fetch::archive_commit(bytes, top.as_deref());
            let subtree = match (&top, path) {
                (Some(t), Some(p)) => format!("{t}/{p}"),
                (Some(t), None) => t.clone(),
                (None, Some(p)) => p.clone(),
                (None, None) => String::new(),
            };
            let files: Vec<PackageFile> = package::unzip_subtree(bytes, &limits, &subtree)?;
            let where_ = format!(
                "{owner}/{repo}{}",
                git_ref
                    .as_deref()
                    .map(|r| format!("@{r}"))
                    .unwrap_or_default()
            );
            if files.is_empty()
                && let Some(p) = path
            {
                return Err(ServiceError::NotFound(format!(
                    "the folder `{p}` does not exist in {where_} (or holds no files)"
                )));
            }
            let package = package::read_files(files).map_err(|e| match e {
                PackageError::MissingSkillMd { hint } if hint.is_empty() && path.is_none() => {
                    PackageError::MissingSkillMd {
                        hint: format!(
                            "{where_} has no SKILL.md at its root; point the URL at the skill's \
                             folder: https://github.com/{owner}/{repo}/tree/REF/PATH"
                        ),
                    }
                }
                other => other,
            })?;
            Ok((
                package,
                json!({
                    "repository": format!("{owner}/{repo}"),
                    "ref": git_ref,
                    "path": path,
                    "commit": commit,
                }),
            ))
        }
        RemoteSkill::ClawHub {
            owner,
            slug,
            version,
        } => {
            let package = package::read_zip(bytes, &limits)?;
            Ok((
                package,
                json!({ "owner": owner, "skill": slug, "version": version }),
            ))
        }
    }
}
