//! Skill packages (SPEC §6): export a revision as a Source Capsule; diff two revisions; the
//! outbound-fetch settings of repository imports (the imports themselves: `imports.rs`).
//!
//! Every package rule (paths, secrets, limits, capsule verification) is in
//! `xmemo_core::package`; this module adds access checks and the reads.

use super::Service;
use super::imports::blocking;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::fetch::FetchConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use xmemo_core::diff::{DEFAULT_DIFF_BUDGET, RevisionDiff, diff_revisions};
use xmemo_core::package::{self, Capsule, CapsuleInput};
use xmemo_core::{ComponentInput, RevisionContent, RevisionStatus, Scope};
use xmemo_store::Revision;

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
