//! Save, lifecycle, archive/restore and listings.

use super::Service;
use super::access::Access;
use super::page::{self, Page, PageRequest};
use super::types::*;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use base64::Engine;
use xmemo_core::media::media_type_for;
use xmemo_core::{
    AssetStatus, ComponentInput, LifecycleAction, RevisionContent, RevisionStatus, SaveIntent,
    Scope, asset_change_allowed, canonical_hash, content_hash, transition, validate_content,
};
use xmemo_store::{
    AuditDraft, ComponentManifest, NewComponent, Revision, SaveRevision, Skill, SlugKey,
    StatusChange, Workspace, hashed_components,
};

impl Service {
    /// `save_cloud_skill`: create the skill or append its next revision (SPEC §4).
    pub async fn save(&self, principal: &Principal, req: SaveRequest) -> ServiceResult<Saved> {
        principal.require(Scope::Write)?;
        xmemo_core::validate_slug("slug", &req.slug)?;
        let access = self.access(principal).await?;
        let target = save_target(&access, req.workspace.as_deref(), req.intent)?;

        let (name, description) = match (req.name, req.description) {
            (Some(n), Some(d)) => (n, d),
            // Only a save leaving one out needs the skill's current values.
            (n, d) => {
                let existing = self
                    .store
                    .find_skills_by_slug(
                        std::slice::from_ref(&target.workspace.workspace_id),
                        &req.slug,
                    )
                    .await?
                    .into_iter()
                    .next();
                match existing {
                    Some(skill) => (n.unwrap_or(skill.name), d.unwrap_or(skill.description)),
                    None if n.is_none() => {
                        return Err(ServiceError::validation(
                            "name is required when a skill is first saved",
                            "name",
                        ));
                    }
                    None => {
                        return Err(ServiceError::validation(
                            "description is required when a skill is first saved",
                            "description",
                        ));
                    }
                }
            }
        };
        if req.components.len() > xmemo_core::limits::MAX_COMPONENTS {
            // Refuse before decoding anything.
            return Err(xmemo_core::ValidationError::too_many(
                "components",
                "components",
                xmemo_core::limits::MAX_COMPONENTS as u64,
                req.components.len() as u64,
            )
            .into());
        }
        let components = decode_components(req.components)?;
        let content = RevisionContent {
            name,
            description,
            instruction_body: req.instruction_body,
            metadata: req.metadata.unwrap_or_default(),
            components,
        };
        self.write_content(
            principal,
            target,
            req.slug,
            content,
            req.expected_revision_id,
            None,
        )
        .await
    }

    /// Saves already-decoded content (an imported package) through the same path as
    /// [`Service::save`]: scope, workspace and lifecycle checks, every SPEC §1 limit before
    /// anything is written, one atomic store write, identical content → `created: false`,
    /// team publish → `proposed`. `source` is stored with the new revision.
    #[allow(clippy::too_many_arguments)]
    pub async fn save_content(
        &self,
        principal: &Principal,
        workspace: Option<&str>,
        slug: String,
        content: RevisionContent,
        intent: Option<SaveIntent>,
        expected_revision_id: Option<String>,
        source: Option<serde_json::Value>,
    ) -> ServiceResult<Saved> {
        principal.require(Scope::Write)?;
        xmemo_core::validate_slug("slug", &slug)?;
        let access = self.access(principal).await?;
        let target = save_target(&access, workspace, intent)?;
        self.write_content(
            principal,
            target,
            slug,
            content,
            expected_revision_id,
            source,
        )
        .await
    }

    /// The common tail of every save: limits, hashes, one atomic write.
    pub(super) async fn write_content(
        &self,
        principal: &Principal,
        target: SaveTarget,
        slug: String,
        content: RevisionContent,
        expected_revision_id: Option<String>,
        source: Option<serde_json::Value>,
    ) -> ServiceResult<Saved> {
        validate_content(&content)?;
        self.spend_write(principal).await?;
        let safety = super::safety::scan_revision_content(&content);

        let new_components: Vec<NewComponent> = content
            .components
            .into_iter()
            .map(|c| NewComponent {
                manifest: ComponentManifest {
                    content_hash: content_hash(&c.content),
                    size: c.content.len() as u64,
                    media_type: media_type_for(&c.logical_path, &c.content),
                    logical_path: c.logical_path,
                    component_type: c.component_type,
                },
                content: c.content,
            })
            .collect();
        let manifests: Vec<ComponentManifest> =
            new_components.iter().map(|c| c.manifest.clone()).collect();
        let hash = canonical_hash(
            &content.name,
            &content.description,
            &content.metadata,
            &content.instruction_body,
            &hashed_components(&manifests),
        );
        let workspace = target.workspace;
        let outcome = self
            .store
            .save_revision(SaveRevision {
                workspace_id: workspace.workspace_id.clone(),
                slug,
                expected_revision_id,
                name: content.name,
                description: content.description,
                instruction_body: content.instruction_body,
                metadata: content.metadata,
                canonical_hash: hash,
                status: target.status,
                components: new_components,
                attribution: principal.attribution(),
                source,
                safety: Some(super::safety::report_value(&safety)?),
                quota: self.quota(),
            })
            .await?;
        // A save that changes nothing answers with the existing revision, and its report.
        let safety = if outcome.created {
            safety
        } else {
            self.revision_safety(&outcome.revision).await?
        };
        Ok(Saved {
            skill_id: outcome.skill.skill_id,
            slug: outcome.skill.slug,
            workspace: workspace.handle,
            revision_id: outcome.revision.revision_id,
            revision_number: outcome.revision.revision_number,
            status: outcome.revision.status,
            canonical_hash: outcome.revision.canonical_hash,
            created: outcome.created,
            safety,
        })
    }

    /// Publish / approve / reject / deprecate one revision of a skill.
    pub async fn change_status(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        revision_id: &str,
        action: LifecycleAction,
        review: LifecycleRequest,
    ) -> ServiceResult<RevisionSummary> {
        let LifecycleRequest {
            note,
            override_safety,
        } = review;
        principal.require(Scope::Write)?;
        self.spend_write(principal).await?;
        let access = self.access(principal).await?;
        let (skill, ws, role) = self.resolve_skill(&access, slug, workspace).await?;
        let revision = self.revision_of(&skill, revision_id).await?;
        let to = transition(action, Some(revision.status), ws.kind, role)?;
        let note = checked_note("note", note)?;
        if action == LifecycleAction::Reject && note.is_none() {
            return Err(ServiceError::validation(
                "a rejection needs a review note",
                "note",
            ));
        }
        // Making a malicious revision the one every member's agent follows takes a
        // deliberate, explained and audited override.
        let mut safety_override = serde_json::Value::Null;
        if to == RevisionStatus::Published {
            let report = self.revision_safety(&revision).await?;
            if report.verdict == xmemo_safety::Verdict::Malicious {
                if !override_safety {
                    return Err(super::safety::blocked(
                        "Approving",
                        revision_id,
                        &report,
                        "Reject it, or approve it with override_safety and a note saying why (audited).",
                    ));
                }
                if note.is_none() {
                    return Err(ServiceError::validation(
                        "approving a revision the safety scanner called malicious needs a note saying why",
                        "note",
                    ));
                }
                safety_override =
                    serde_json::to_value(super::safety::SafetySummary::of(&report))
                        .map_err(|e| ServiceError::Internal(format!("safety summary: {e}")))?;
            }
        }
        let verb = match action {
            LifecycleAction::Publish if to == RevisionStatus::Proposed => "propose",
            LifecycleAction::Publish => "publish",
            LifecycleAction::Approve => "approve",
            LifecycleAction::Reject => "reject",
            LifecycleAction::Deprecate => "deprecate",
            LifecycleAction::SaveDraft | LifecycleAction::SavePublish => "save",
        };
        let audit = AuditDraft::new(&format!("revision.{verb}"), &principal.attribution())
            .workspace(&ws.workspace_id)
            .skill(&skill.skill_id)
            .revision(revision_id)
            .details(serde_json::json!({
                "from": revision.status,
                "to": to,
                "note": note,
                "revision_number": revision.revision_number,
                "safety_override": safety_override,
            }));
        let updated = self
            .store
            .change_revision_status(StatusChange {
                revision_id: revision_id.to_string(),
                from: revision.status,
                to,
                review_note: note,
                audit,
            })
            .await?;
        Ok(RevisionSummary::from(&updated))
    }

    /// Archive (`archived = true`) or restore a skill.
    pub async fn set_archived(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        archived: bool,
        reason: Option<String>,
    ) -> ServiceResult<SkillView> {
        principal.require(Scope::Write)?;
        self.spend_write(principal).await?;
        let reason = checked_note("reason", reason)?;
        let access = self.access(principal).await?;
        let (skill, ws, role) = self.resolve_skill(&access, slug, workspace).await?;
        if !asset_change_allowed(role) {
            return Err(ServiceError::PermissionDenied(format!(
                "your role `{role}` may not archive or restore skills"
            )));
        }
        let status = if archived {
            AssetStatus::Archived
        } else {
            AssetStatus::Active
        };
        let action = if archived {
            "skill.archive"
        } else {
            "skill.restore"
        };
        let audit = AuditDraft::new(action, &principal.attribution())
            .workspace(&ws.workspace_id)
            .skill(&skill.skill_id)
            .details(
                serde_json::json!({"from": skill.asset_status, "to": status, "reason": reason}),
            );
        let skill = self
            .store
            .set_asset_status(&skill.skill_id, status, audit)
            .await?;
        Ok(skill_view(&skill, &access))
    }

    /// One page of the skills the caller can read (every status), by slug.
    pub async fn list_skills(
        &self,
        principal: &Principal,
        workspace: Option<&str>,
        page: &PageRequest,
    ) -> ServiceResult<Page<SkillView>> {
        principal.require(Scope::Read)?;
        let (size, keyset) = page::keyset(page, "skills", |[_, slug, workspace_id]| {
            Some(SlugKey { slug, workspace_id })
        })?;
        let access = self.access(principal).await?;
        let ids = access.readable(workspace)?;
        let skills = self.store.list_skills_page(&ids, &keyset).await?;
        Ok(page::finish(skills, size, |s| {
            page::encode_cursor(&["skills", &s.slug, &s.workspace_id])
        })
        .map(|s| skill_view(&s, &access)))
    }

    /// [`Service::list_skills`] with the status of each skill's latest revision (the console's
    /// badges): one more statement for the whole page.
    pub async fn list_skills_with_status(
        &self,
        principal: &Principal,
        workspace: Option<&str>,
        page: &PageRequest,
    ) -> ServiceResult<Page<(SkillView, Option<RevisionStatus>)>> {
        let skills = self.list_skills(principal, workspace, page).await?;
        let ids: Vec<String> = skills.items.iter().map(|s| s.skill_id.clone()).collect();
        let mut statuses = self.store.latest_statuses(&ids).await?;
        Ok(skills.map(|s| {
            let status = statuses.remove(&s.skill_id);
            (s, status)
        }))
    }

    /// Proposals waiting for this person's review: proposed revisions of active skills in the
    /// teams where their role may approve, oldest first, at most `limit`.
    pub async fn pending_reviews(
        &self,
        principal: &Principal,
        limit: u32,
    ) -> ServiceResult<Vec<PendingReview>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let ids: Vec<String> = access
            .memberships
            .iter()
            .filter(|m| {
                transition(
                    LifecycleAction::Approve,
                    Some(RevisionStatus::Proposed),
                    m.workspace.kind,
                    m.role,
                )
                .is_ok()
            })
            .map(|m| m.workspace.workspace_id.clone())
            .collect();
        let pending = self.store.pending_proposals(&ids, limit).await?;
        let mut handles: std::collections::BTreeMap<String, Option<String>> = Default::default();
        for p in &pending {
            if !handles.contains_key(&p.account_id) {
                let handle = self
                    .store
                    .get_account(&p.account_id)
                    .await?
                    .map(|a| a.handle);
                handles.insert(p.account_id.clone(), handle);
            }
        }
        Ok(pending
            .into_iter()
            .map(|p| PendingReview {
                workspace: access.handle(&p.workspace_id),
                proposed_by: handles.get(&p.account_id).cloned().flatten(),
                slug: p.slug,
                name: p.name,
                revision_id: p.revision_id,
                revision_number: p.revision_number,
                created_at: p.created_at,
            })
            .collect())
    }

    pub async fn get_skill(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
    ) -> ServiceResult<SkillView> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let (skill, _, _) = self.resolve_skill(&access, slug, workspace).await?;
        Ok(skill_view(&skill, &access))
    }

    /// One page of a skill's revisions (no bodies), by revision number.
    pub async fn revisions_page(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        page: &PageRequest,
    ) -> ServiceResult<Page<RevisionSummary>> {
        principal.require(Scope::Read)?;
        let (size, keyset) = page::keyset(page, "revisions", |[_, n]: [String; 2]| {
            n.parse::<i64>().ok()
        })?;
        let access = self.access(principal).await?;
        let (skill, _, _) = self.resolve_skill(&access, slug, workspace).await?;
        let revisions = self
            .store
            .list_revisions_page(&skill.skill_id, &keyset)
            .await?;
        Ok(page::finish(revisions, size, |r| {
            page::encode_cursor(&["revisions", &r.revision_number.to_string()])
        })
        .map(|r| RevisionSummary::from(&r)))
    }

    /// Every revision of a skill, for in-process callers; clients get
    /// [`Service::revisions_page`].
    pub async fn list_revisions(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
    ) -> ServiceResult<Vec<RevisionSummary>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let (skill, _, _) = self.resolve_skill(&access, slug, workspace).await?;
        let revisions = self.store.list_revisions(&skill.skill_id).await?;
        Ok(revisions.iter().map(RevisionSummary::from).collect())
    }

    /// A revision that must belong to the skill (else NOT_FOUND).
    pub(crate) async fn revision_of(
        &self,
        skill: &Skill,
        revision_id: &str,
    ) -> ServiceResult<Revision> {
        match self.store.get_revision(revision_id).await? {
            Some(r) if r.skill_id == skill.skill_id => Ok(r),
            _ => Err(ServiceError::NotFound(format!(
                "revision `{revision_id}` of skill `{}` not found",
                skill.slug
            ))),
        }
    }
}

/// Where a save writes and the status its intent gives there.
#[derive(Clone)]
pub(super) struct SaveTarget {
    pub(super) workspace: Workspace,
    pub(super) status: RevisionStatus,
}

/// The workspace a save goes to (default: personal) and the status its intent gives the new
/// revision for the caller's role there.
pub(super) fn save_target(
    access: &Access,
    workspace: Option<&str>,
    intent: Option<SaveIntent>,
) -> ServiceResult<SaveTarget> {
    let membership = match workspace {
        Some(selector) => access.resolve(selector)?,
        None => access.personal()?,
    };
    let action = match intent.unwrap_or(SaveIntent::Draft) {
        SaveIntent::Draft => LifecycleAction::SaveDraft,
        SaveIntent::Publish => LifecycleAction::SavePublish,
    };
    let status = transition(action, None, membership.workspace.kind, membership.role)?;
    Ok(SaveTarget {
        workspace: membership.workspace.clone(),
        status,
    })
}

/// Review notes and archive reasons: trimmed, empty means none, else
/// [`validate_note`](xmemo_core::validate::validate_note).
fn checked_note(field: &str, text: Option<String>) -> ServiceResult<Option<String>> {
    let text = text.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    if let Some(n) = &text {
        xmemo_core::validate::validate_note(field, n)?;
    }
    Ok(text)
}

pub(crate) fn skill_view(skill: &Skill, access: &Access) -> SkillView {
    SkillView {
        skill_id: skill.skill_id.clone(),
        slug: skill.slug.clone(),
        name: skill.name.clone(),
        description: skill.description.clone(),
        workspace: access.handle(&skill.workspace_id),
        asset_status: skill.asset_status,
        latest_revision_number: skill.latest_revision_number,
        published_revision_id: skill.published_revision_id.clone(),
        created_at: skill.created_at.clone(),
        updated_at: skill.updated_at.clone(),
    }
}

fn decode_components(components: Vec<ComponentRequest>) -> ServiceResult<Vec<ComponentInput>> {
    components
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let content = match c.encoding {
                ContentEncoding::Utf8 => c.content.into_bytes(),
                ContentEncoding::Base64 => {
                    // Refuse oversized encodings before decoding them.
                    let max_encoded = xmemo_core::limits::COMPONENT_MAX_BYTES.div_ceil(3) * 4 + 4;
                    if c.content.len() > max_encoded {
                        return Err(xmemo_core::ValidationError::too_large(
                            format!("components[{i}].content"),
                            xmemo_core::limits::COMPONENT_MAX_BYTES as u64,
                            (c.content.len() / 4 * 3) as u64,
                        )
                        .into());
                    }
                    base64::engine::general_purpose::STANDARD
                        .decode(c.content.trim())
                        .map_err(|e| {
                            ServiceError::validation(
                                format!("components[{i}].content is not valid base64: {e}"),
                                &format!("components[{i}].content"),
                            )
                        })?
                }
            };
            Ok(ComponentInput {
                logical_path: c.logical_path,
                component_type: c.component_type,
                content,
            })
        })
        .collect()
}
