//! Imports (SPEC §6, #24): an uploaded ZIP or SKILL.md, or a repository URL, saved through
//! the save path — one skill, or every skill folder it holds.
//!
//! Every package rule (paths, secrets, limits, repairs, which folders are skills, their
//! slugs) is in `xmemo_core::package`; this module adds access checks, provenance, the
//! same-content check and the writes:
//! - **Warnings**: what the package readers repaired is returned with the result
//!   (`warnings`), never applied silently.
//! - **Same content** (`same_content_as`): before writing, the workspace is asked for a
//!   revision with this canonical_hash under another slug. When there is one the import is
//!   a `duplicate` and writes nothing, unless `allow_duplicates`; the content identical to
//!   the slug's own latest revision is `unchanged` (`created: false`) as for any save.
//! - **Several skills**: each skill folder is read and saved on its own, in folder order,
//!   with the slug [`batch::plan_slugs`] gives it; a skill that is refused does not stop the
//!   others, and the answer lists every one (`results`) with counts (`summary`).
//! - **Cost**: an import reserves one of the account's writes before it reads anything (no
//!   write left: RATE_LIMITED at once). An import refused before its save — too large, an
//!   archive or SKILL.md that cannot be read, a slug or workspace refused, a download that
//!   failed, a multi-skill import none of whose skills could be read — spends it, as a write
//!   does; one that reaches its save gives it back, and the save spends its own. A SKILL.md
//!   larger than [`package::SKILL_MD_MAX_BYTES`] is refused before it is read; archives and SKILL.md
//!   files are read off the async workers.

use super::Service;
use super::skills::{SaveTarget, save_target};
use super::types::Saved;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::fetch::{self, RemoteSkill};
use crate::throttle::Reservation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use xmemo_core::package::batch::{self, Contents, SkillFiles};
use xmemo_core::package::{
    self, ArchiveLimits, NameHints, Package, PackageError, PackageFile, Repair, check_skill_md_size,
};
use xmemo_core::{RevisionStatus, SaveIntent, Scope};

/// How an import is saved.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Workspace id or handle; default: the caller's personal workspace.
    pub workspace: Option<String>,
    /// The skill's slug; default: the capsule's slug, else one derived from the package.
    /// Only for an import of one skill.
    pub slug: Option<String>,
    pub intent: Option<SaveIntent>,
    /// Optimistic concurrency, as for a save. Only for an import of one skill.
    pub expected_revision_id: Option<String>,
    /// Name of the uploaded file, kept in the recorded source.
    pub file_name: Option<String>,
    /// Write content even when another skill of the workspace already has it.
    pub allow_duplicates: bool,
}

/// What became of one imported skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportOutcome {
    /// A new revision was written (and the skill created on its first save).
    Created,
    /// The content equals the slug's latest revision: nothing was written.
    Unchanged,
    /// Another skill of the workspace (`same_content_as`) has this content and
    /// `allow_duplicates` was not given: nothing was written.
    Duplicate,
    /// Refused (only in a multi-skill import, whose other skills go on): see `error`.
    Refused,
}

impl ImportOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Unchanged => "unchanged",
            Self::Duplicate => "duplicate",
            Self::Refused => "refused",
        }
    }
}

/// The result of importing one skill: the save, and where the content came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Imported {
    /// For `created` and `unchanged`, the revision of `slug` holding the content. For a
    /// `duplicate`, `slug` is the slug the import was for and the revision fields name the
    /// revision of `same_content_as` that holds this content (nothing was written).
    #[serde(flatten)]
    pub saved: Saved,
    pub outcome: ImportOutcome,
    /// Another skill of the workspace with a revision of exactly this content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_content_as: Option<String>,
    /// What was repaired to read the package (empty when it needed nothing).
    pub warnings: Vec<Repair>,
    /// Components in the package.
    pub components: usize,
    /// The package was a Source Capsule (its canonical_hash was verified).
    pub from_capsule: bool,
    /// The provenance recorded with the revision (for `created: false`, the revision that
    /// already existed keeps its own).
    pub source: Value,
}

/// One skill of a multi-skill import.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchItem {
    /// The skill's folder, relative to the root of what was imported.
    pub path: String,
    pub slug: String,
    pub outcome: ImportOutcome,
    /// The slug rule's note when a collision gave this folder a longer slug, then what was
    /// repaired to read its package.
    pub warnings: Vec<Repair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_content_as: Option<String>,
    /// The revision holding the content (absent when refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<ItemRevision>,
    /// Why it was refused: the SPEC error object (`code`, `message`, `retryable`,
    /// `details`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// The revision a batch item names.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ItemRevision {
    pub skill_id: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub status: RevisionStatus,
    pub canonical_hash: String,
    pub components: usize,
}

/// Counts over the items of a multi-skill import.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSummary {
    pub skills: usize,
    /// Written (`created`).
    pub imported: usize,
    pub unchanged: usize,
    pub duplicates: usize,
    /// Not refused, and read with at least one repair of its content.
    pub repaired: usize,
    pub refused: usize,
    /// Refusals by `details.reason` (else the error code).
    pub refused_by_reason: BTreeMap<String, usize>,
    /// Skills (not refused) per repair kind.
    pub repairs_by_kind: BTreeMap<String, usize>,
}

impl BatchSummary {
    /// The counts of `items` (the one place they are computed: the server's answer and
    /// `xmemo import DIR` both use it).
    pub fn of(items: &[BatchItem]) -> Self {
        let mut s = Self {
            skills: items.len(),
            ..Self::default()
        };
        for item in items {
            match item.outcome {
                ImportOutcome::Created => s.imported += 1,
                ImportOutcome::Unchanged => s.unchanged += 1,
                ImportOutcome::Duplicate => s.duplicates += 1,
                ImportOutcome::Refused => {
                    s.refused += 1;
                    let reason = item
                        .error
                        .as_ref()
                        .and_then(|e| {
                            e["details"]["reason"]
                                .as_str()
                                .or_else(|| e["code"].as_str())
                        })
                        .unwrap_or("unknown")
                        .to_string();
                    *s.refused_by_reason.entry(reason).or_default() += 1;
                    continue;
                }
            }
            let mut kinds: Vec<&str> = item
                .warnings
                .iter()
                .filter(|w| w.kind.changes_content())
                .map(|w| w.kind.as_str())
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            if !kinds.is_empty() {
                s.repaired += 1;
            }
            for kind in kinds {
                *s.repairs_by_kind.entry(kind.to_string()).or_default() += 1;
            }
        }
        s
    }
}

/// The result of an import that held several skill folders.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchImported {
    pub workspace: String,
    pub summary: BatchSummary,
    /// One per skill folder, in folder order.
    pub results: Vec<BatchItem>,
    /// Files in no skill folder, not read.
    pub ignored_files: usize,
    /// Where the whole import came from (each written revision records it with its
    /// `path`).
    pub source: Value,
}

/// One skill or several.
#[derive(Debug, Clone)]
pub enum ImportAnswer {
    One(Box<Imported>),
    Several(BatchImported),
}

impl ImportAnswer {
    /// Whether anything was written (201 rather than 200).
    pub fn wrote(&self) -> bool {
        match self {
            Self::One(i) => i.saved.created,
            Self::Several(b) => b.summary.imported > 0,
        }
    }
}

/// One of the account's writes, reserved by an import before it reads anything.
type ImportWrite = Reservation<String>;

/// A refusal of an import before its save: the reserved write is spent.
fn refused(write: ImportWrite, error: ServiceError) -> ServiceError {
    write.keep();
    error
}

/// `result` of the part of an import before its save: a refusal spends the reserved write,
/// anything else gives it back (the save spends its own).
fn settle<T>(write: ImportWrite, result: ServiceResult<T>) -> ServiceResult<T> {
    result.map_err(|e| refused(write, e))
}

/// What an upload or a download holds, read: one skill, or several skill folders (read one by
/// one later, each refused on its own).
enum Read {
    One(Box<Package>),
    Several(batch::Batch),
}

/// Sorts `files` into one skill or several and reads the one skill (CPU work: run it off the
/// async workers). `explain` rewrites the error of reading the one skill.
fn read_contents(
    files: Vec<PackageFile>,
    hints: &NameHints,
    explain: impl FnOnce(PackageError) -> PackageError,
) -> Result<Read, PackageError> {
    match batch::sort_out(files)? {
        Contents::Single(files) => package::read_files_with(files, hints)
            .map(|package| Read::One(Box::new(package)))
            .map_err(explain),
        Contents::Several(batch) => Ok(Read::Several(batch)),
    }
}

impl Service {
    /// Reserves the write an import spends when it is refused (see the module
    /// documentation): RATE_LIMITED with `Retry-After` when the account has none left.
    async fn reserve_import_write(&self, principal: &Principal) -> ServiceResult<ImportWrite> {
        self.writes
            .reserve(principal.account.account_id.clone())
            .await
            .map_err(|wait| {
                let secs = crate::throttle::retry_after_secs(wait);
                ServiceError::RateLimited {
                    message: format!("too many writes from this account; retry in {secs} s"),
                    retry_after_secs: secs,
                }
            })
    }

    /// Checks, before its body is read, an upload that says it is a SKILL.md of `declared`
    /// bytes: one larger than any SKILL.md that could be imported ([`package::SKILL_MD_MAX_BYTES`]) is
    /// refused (PAYLOAD_TOO_LARGE, `details.field: SKILL.md`) and spends a write, as every
    /// refused import does.
    pub async fn check_skill_md_upload(
        &self,
        principal: &Principal,
        declared: u64,
    ) -> ServiceResult<()> {
        principal.require(Scope::Write)?;
        let Err(too_large) = check_skill_md_size(declared) else {
            return Ok(());
        };
        let write = self.reserve_import_write(principal).await?;
        Err(refused(write, too_large.into()))
    }

    /// Imports a ZIP: a skill folder, a Source Capsule, or several skill folders.
    pub async fn import_archive(
        &self,
        principal: &Principal,
        bytes: Vec<u8>,
        options: ImportOptions,
    ) -> ServiceResult<ImportAnswer> {
        principal.require(Scope::Write)?;
        let write = self.reserve_import_write(principal).await?;
        let source = upload_source("zip", &bytes, options.file_name.as_deref());
        let files = blocking(move || package::unzip(&bytes, &ArchiveLimits::default()))
            .await
            .and_then(|read| read.map_err(ServiceError::from));
        let files = match files {
            Ok(files) => files,
            Err(e) => return Err(refused(write, e)),
        };
        self.import_files(principal, write, files, options, None, source, |e| e)
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
        let write = self.reserve_import_write(principal).await?;
        let prepared = async {
            check_skill_md_size(bytes.len() as u64)?;
            let source = upload_source("skill_md", &bytes, options.file_name.as_deref());
            let hints = NameHints {
                folder: None,
                slug: options.slug.clone(),
            };
            let package = blocking(move || package::read_skill_md_with(&bytes, &hints)).await??;
            let (slug, target) = self.plan_one(principal, &package, &options, None).await?;
            Ok((package, slug, target, source))
        }
        .await;
        let (package, slug, target, source) = settle(write, prepared)?;
        self.save_package(
            principal,
            &target,
            slug,
            package,
            options.expected_revision_id,
            options.allow_duplicates,
            source,
        )
        .await
    }

    /// Imports from a GitHub or ClawHub URL (see [`crate::fetch`] for the accepted shapes
    /// and the outbound rules): the skill the URL names, or every skill folder under it.
    /// Scope and workspace are checked before anything is fetched.
    pub async fn import_url(
        &self,
        principal: &Principal,
        url: &str,
        options: ImportOptions,
    ) -> ServiceResult<ImportAnswer> {
        principal.require(Scope::Write)?;
        let write = self.reserve_import_write(principal).await?;
        let fetched = async {
            let remote = fetch::parse_skill_url(url)?;
            // A workspace or role that could not take the save is refused without a download.
            let access = self.access(principal).await?;
            save_target(&access, options.workspace.as_deref(), options.intent)?;
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
            let (files, extra) = blocking(move || remote_files(&remote_for_read, &bytes)).await??;
            if let (Some(obj), Value::Object(extra)) = (source.as_object_mut(), extra) {
                obj.extend(extra);
            }
            Ok((remote, files, source))
        }
        .await;
        let (remote, files, source) = match fetched {
            Ok(fetched) => fetched,
            Err(e) => return Err(refused(write, e)),
        };
        let folder_hint = match &remote {
            RemoteSkill::GitHub { path, repo, .. } => path
                .as_deref()
                .and_then(|p| p.rsplit('/').next())
                .or(Some(repo.as_str()))
                .map(str::to_string),
            RemoteSkill::ClawHub { slug, .. } => Some(slug.clone()),
        };
        let hint = missing_root_hint(&remote);
        self.import_files(principal, write, files, options, folder_hint, source, hint)
            .await
    }

    /// One skill or several, by what `files` hold; `write` is the import's reserved write.
    #[allow(clippy::too_many_arguments)]
    async fn import_files(
        &self,
        principal: &Principal,
        write: ImportWrite,
        files: Vec<PackageFile>,
        options: ImportOptions,
        folder_hint: Option<String>,
        source: Value,
        explain: impl FnOnce(PackageError) -> PackageError + Send + 'static,
    ) -> ServiceResult<ImportAnswer> {
        let hints = NameHints {
            folder: folder_hint.clone(),
            slug: options.slug.clone(),
        };
        let read = blocking(move || read_contents(files, &hints, explain))
            .await
            .and_then(|read| read.map_err(ServiceError::from));
        match read {
            Err(e) => Err(refused(write, e)),
            Ok(Read::One(package)) => {
                let package = *package;
                let mut source = source;
                add_capsule_origin(&mut source, &package);
                let planned = self
                    .plan_one(principal, &package, &options, folder_hint.as_deref())
                    .await;
                let (slug, target) = settle(write, planned)?;
                let imported = self
                    .save_package(
                        principal,
                        &target,
                        slug,
                        package,
                        options.expected_revision_id,
                        options.allow_duplicates,
                        source,
                    )
                    .await?;
                Ok(ImportAnswer::One(Box::new(imported)))
            }
            Ok(Read::Several(batch)) => Ok(ImportAnswer::Several(
                self.import_batch(principal, write, batch, options, source)
                    .await?,
            )),
        }
    }

    /// The slug and the workspace one skill is saved as (every check before its save).
    async fn plan_one(
        &self,
        principal: &Principal,
        package: &Package,
        options: &ImportOptions,
        folder_hint: Option<&str>,
    ) -> ServiceResult<(String, SaveTarget)> {
        let slug = choose_slug(options.slug.clone(), package, folder_hint)?;
        xmemo_core::validate_slug("slug", &slug)?;
        let access = self.access(principal).await?;
        let target = save_target(&access, options.workspace.as_deref(), options.intent)?;
        Ok((slug, target))
    }

    /// Every skill folder of `batch`, one after the other, into one workspace. The import's
    /// write is spent when the import is refused as a whole or none of its skills can be
    /// read; each skill saved spends its own.
    async fn import_batch(
        &self,
        principal: &Principal,
        write: ImportWrite,
        batch: batch::Batch,
        options: ImportOptions,
        source: Value,
    ) -> ServiceResult<BatchImported> {
        let count = batch.skills.len();
        for (field, given) in [
            ("slug", options.slug.is_some()),
            (
                "expected_revision_id",
                options.expected_revision_id.is_some(),
            ),
        ] {
            if given {
                return Err(refused(
                    write,
                    ServiceError::validation(
                        format!(
                            "`{field}` is for an import of one skill, and this one holds \
                             {count} skill folders (their slugs come from their folders)"
                        ),
                        field,
                    ),
                ));
            }
        }
        let target =
            match self.access(principal).await.and_then(|access| {
                save_target(&access, options.workspace.as_deref(), options.intent)
            }) {
                Ok(target) => target,
                Err(e) => return Err(refused(write, e)),
            };
        let folders: Vec<String> = batch.skills.iter().map(|s| s.folder.clone()).collect();
        let plan = batch::plan_slugs(&folders);
        // Reading is CPU work: every folder at once, off the async workers.
        let skills = batch.skills;
        let packages = blocking(move || {
            skills
                .into_iter()
                .map(|SkillFiles { files, .. }| package::read_files(files))
                .collect::<Vec<Result<Package, PackageError>>>()
        })
        .await;
        let packages = match packages {
            Ok(packages) => packages,
            Err(e) => return Err(refused(write, e)),
        };
        if packages.iter().all(Result::is_err) {
            write.keep();
        } else {
            // Given back before the saves, each of which reserves from the same budget.
            drop(write);
        }
        let mut results = Vec::with_capacity(count);
        for (plan, read) in plan.into_iter().zip(packages) {
            let mut warnings: Vec<Repair> = plan.note.into_iter().collect();
            let outcome = match read {
                Err(e) => Err(ServiceError::from(e)),
                Ok(package) => {
                    let mut source = source.clone();
                    if let Some(obj) = source.as_object_mut() {
                        let path = match obj.get("path").and_then(Value::as_str) {
                            Some(base) if !base.is_empty() => format!("{base}/{}", plan.folder),
                            _ => plan.folder.clone(),
                        };
                        obj.insert("path".into(), path.into());
                    }
                    add_capsule_origin(&mut source, &package);
                    self.save_package(
                        principal,
                        &target,
                        plan.slug.clone(),
                        package,
                        None,
                        options.allow_duplicates,
                        source,
                    )
                    .await
                }
            };
            results.push(match outcome {
                Ok(imported) => {
                    warnings.extend(imported.warnings);
                    BatchItem {
                        path: plan.folder,
                        slug: plan.slug,
                        outcome: imported.outcome,
                        warnings,
                        same_content_as: imported.same_content_as,
                        revision: Some(ItemRevision {
                            skill_id: imported.saved.skill_id,
                            revision_id: imported.saved.revision_id,
                            revision_number: imported.saved.revision_number,
                            status: imported.saved.status,
                            canonical_hash: imported.saved.canonical_hash,
                            components: imported.components,
                        }),
                        error: None,
                    }
                }
                // The store or the server failing is no verdict on this skill: stop, and
                // let the caller run the import again (it is idempotent).
                Err(e @ (ServiceError::Unavailable(_) | ServiceError::Internal(_))) => {
                    return Err(e);
                }
                Err(e) => BatchItem {
                    path: plan.folder,
                    slug: plan.slug,
                    outcome: ImportOutcome::Refused,
                    warnings,
                    same_content_as: None,
                    revision: None,
                    error: Some(e.to_body()["error"].clone()),
                },
            });
        }
        Ok(BatchImported {
            workspace: target.workspace.handle.clone(),
            summary: BatchSummary::of(&results),
            results,
            ignored_files: batch.ignored_files,
            source,
        })
    }

    /// The same-content check, then the save.
    #[allow(clippy::too_many_arguments)]
    async fn save_package(
        &self,
        principal: &Principal,
        target: &SaveTarget,
        slug: String,
        package: Package,
        expected_revision_id: Option<String>,
        allow_duplicates: bool,
        source: Value,
    ) -> ServiceResult<Imported> {
        let hash = package.canonical_hash();
        let components = package.content.components.len();
        let from_capsule = package.capsule.is_some();
        let holders = self
            .store
            .content_holders(&target.workspace.workspace_id, &hash, 20)
            .await?;
        let other = holders.iter().find(|h| h.slug != slug);
        let unchanged = holders.iter().any(|h| h.slug == slug && h.latest);
        if let Some(other) = other
            && !unchanged
            && !allow_duplicates
        {
            return Ok(Imported {
                saved: Saved {
                    skill_id: other.skill_id.clone(),
                    slug,
                    workspace: target.workspace.handle.clone(),
                    revision_id: other.revision_id.clone(),
                    revision_number: other.revision_number,
                    status: other.status,
                    canonical_hash: hash,
                    created: false,
                    // The same content as that revision, so the same report.
                    safety: super::safety::scan_revision_content(&package.content),
                },
                outcome: ImportOutcome::Duplicate,
                same_content_as: Some(other.slug.clone()),
                warnings: package.repairs,
                components,
                from_capsule,
                source,
            });
        }
        let same_content_as = other.map(|o| o.slug.clone());
        let saved = self
            .write_content(
                principal,
                target.clone(),
                slug,
                package.content,
                expected_revision_id,
                Some(source.clone()),
            )
            .await?;
        Ok(Imported {
            outcome: if saved.created {
                ImportOutcome::Created
            } else {
                ImportOutcome::Unchanged
            },
            saved,
            same_content_as,
            warnings: package.repairs,
            components,
            from_capsule,
            source,
        })
    }
}

/// CPU-bound work (decompression, parsing) off the async workers.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> ServiceResult<T> {
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

/// A downloaded archive's files: for GitHub, those of the named folder inside the
/// repository archive's top folder (paths relative to that folder); for ClawHub, the whole
/// archive. Returns them with the source fields learned from the archive (the commit).
fn remote_files(
    remote: &RemoteSkill,
    bytes: &[u8],
) -> Result<(Vec<PackageFile>, Value), ServiceError> {
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
            // A repository: only its skill folders are read (its other files — symlinks,
            // secrets, binaries — neither count nor fail the import), as for a tree URL.
            let names = package::archive_file_names(bytes, &subtree)?;
            let folders = batch::skill_folders(names.iter().map(String::as_str));
            let several = !(folders.is_empty() || folders.iter().any(String::is_empty));
            if several && folders.len() > batch::MAX_SKILLS_PER_IMPORT {
                return Err(PackageError::TooManySkills {
                    limit: batch::MAX_SKILLS_PER_IMPORT as u64,
                    actual: folders.len() as u64,
                }
                .into());
            }
            let files: Vec<PackageFile> = if several {
                package::unzip_folders(bytes, &limits, &subtree, &folders)?
            } else {
                package::unzip_subtree(bytes, &limits, &subtree)?
            };
            if files.is_empty()
                && let Some(p) = path
            {
                return Err(ServiceError::NotFound(format!(
                    "the folder `{p}` does not exist in {} (or holds no files)",
                    where_(owner, repo, git_ref.as_deref())
                )));
            }
            Ok((
                files,
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
        } => Ok((
            package::unzip(bytes, &limits)?,
            json!({ "owner": owner, "skill": slug, "version": version }),
        )),
    }
}

fn where_(owner: &str, repo: &str, git_ref: Option<&str>) -> String {
    format!(
        "{owner}/{repo}{}",
        git_ref.map(|r| format!("@{r}")).unwrap_or_default()
    )
}

/// A repository with no skill folder at all: say where one would be found.
fn missing_root_hint(
    remote: &RemoteSkill,
) -> impl FnOnce(PackageError) -> PackageError + Send + 'static + use<> {
    let hint = match remote {
        RemoteSkill::GitHub {
            owner,
            repo,
            git_ref,
            path: None,
        } => Some(format!(
            "{} holds no SKILL.md, at its root or in any folder; point the URL at the skill's \
             folder: https://github.com/{owner}/{repo}/tree/REF/PATH",
            where_(owner, repo, git_ref.as_deref())
        )),
        _ => None,
    };
    move |e| match (e, hint) {
        (PackageError::MissingSkillMd { hint: h }, Some(hint)) if h.is_empty() => {
            PackageError::MissingSkillMd { hint }
        }
        (e, _) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::LimiterConfig;
    use std::sync::Arc;
    use std::time::Duration;
    use xmemo_core::package::SKILL_MD_MAX_BYTES;

    /// A service whose accounts have `writes` writes (none regained during a test), and its
    /// first account with every scope.
    async fn service_with_writes(writes: u32) -> (Service, Principal, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = xmemo_store::sqlite::SqliteStore::open(&dir.path().join("x.db"))
            .await
            .unwrap();
        let service = Service::new(Arc::new(store)).with_budgets_changed(|b| {
            b.writes = LimiterConfig::new(writes, Duration::from_secs(3600));
        });
        let (account, _) = service
            .bootstrap()
            .await
            .unwrap()
            .expect("an empty database");
        (service, Principal::operator(account), dir)
    }

    fn skill_md(slug: &str) -> Vec<u8> {
        format!("---\nname: {slug}\ndescription: Does {slug}.\n---\n\n# {slug}\n").into_bytes()
    }

    fn code(result: ServiceResult<impl std::fmt::Debug>) -> &'static str {
        result.expect_err("refused").code().as_str()
    }

    #[tokio::test]
    async fn a_refused_import_spends_a_write_and_a_spent_budget_refuses_before_reading() {
        let (service, admin, _dir) = service_with_writes(4).await;
        let options = ImportOptions::default;
        // Too large to be a SKILL.md: refused unread, with the limit named.
        let oversized = vec![b'\n'; SKILL_MD_MAX_BYTES + 1];
        let e = service
            .import_skill_md(&admin, oversized.clone(), options())
            .await
            .unwrap_err();
        assert_eq!(e.code().as_str(), "PAYLOAD_TOO_LARGE");
        assert_eq!(e.details().unwrap()["field"], "SKILL.md", "{e:?}");
        assert_eq!(e.details().unwrap()["limit"], SKILL_MD_MAX_BYTES);
        // An upload that announced its size, before its body was read.
        let declared = service
            .check_skill_md_upload(&admin, SKILL_MD_MAX_BYTES as u64 + 1)
            .await;
        assert_eq!(code(declared), "PAYLOAD_TOO_LARGE");
        service
            .check_skill_md_upload(&admin, SKILL_MD_MAX_BYTES as u64)
            .await
            .expect("a size a SKILL.md can have spends nothing");
        // A ZIP that is not one, and a SKILL.md that cannot be read.
        let zip = service
            .import_archive(&admin, b"PK\x03\x04 not a zip".to_vec(), options())
            .await;
        assert_eq!(code(zip), "VALIDATION_ERROR");
        let unreadable = service
            .import_skill_md(&admin, b"no name, no heading".to_vec(), options())
            .await;
        assert_eq!(code(unreadable), "VALIDATION_ERROR");
        // Four refusals spent the four writes: now even a good import is refused, unread.
        for refused in [
            code(service.import_skill_md(&admin, oversized, options()).await),
            code(
                service
                    .import_skill_md(&admin, skill_md("ok"), options())
                    .await,
            ),
            code(service.import_archive(&admin, vec![], options()).await),
        ] {
            assert_eq!(refused, "RATE_LIMITED");
        }
    }

    #[tokio::test]
    async fn an_import_that_is_saved_spends_one_write() {
        let (service, admin, _dir) = service_with_writes(3).await;
        for slug in ["one", "two", "three"] {
            let imported = service
                .import_skill_md(&admin, skill_md(slug), ImportOptions::default())
                .await
                .unwrap();
            assert!(imported.saved.created, "{slug}");
        }
        let fourth = service
            .import_skill_md(&admin, skill_md("four"), ImportOptions::default())
            .await;
        assert_eq!(code(fourth), "RATE_LIMITED");
    }
}
