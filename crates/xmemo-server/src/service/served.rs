//! What the MCP catalog surfaces serve (Skills extension, `resources/*`, `prompts/*`): the
//! caller's active skills that have a published revision, each at that revision. Decided here
//! once; a page costs a fixed number of statements whatever its size (memberships once, then
//! the skills, their revisions and their components in one statement each).

use super::Service;
use super::access::Access;
use super::types::Root;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use xmemo_core::{AssetStatus, Scope};
use xmemo_store::{ComponentManifest, Revision, ServedPage, Skill, SkillKey};

/// A served skill at its published revision. Only the service builds one, after checking
/// that the caller may read it.
#[derive(Debug, Clone)]
pub struct Served {
    pub root: Root,
}

#[derive(Debug, Clone)]
pub struct ServedList {
    pub skills: Vec<Served>,
    /// Slugs of this page that also name a skill in another of the caller's workspaces, so a
    /// bare slug does not identify one skill.
    pub shared_slugs: Vec<String>,
    /// Opaque; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// The Level 1 view of a skill at one of its revisions.
pub(crate) fn root_of(skill: &Skill, workspace: String, revision: Revision) -> Root {
    Root {
        skill_id: skill.skill_id.clone(),
        slug: skill.slug.clone(),
        name: revision.name,
        description: revision.description,
        workspace,
        revision_id: revision.revision_id,
        revision_number: revision.revision_number,
        status: revision.status,
        canonical_hash: revision.canonical_hash,
        instruction_body: revision.instruction_body,
        metadata: revision.metadata,
        resources: revision.components,
        safety: revision
            .safety
            .and_then(|v| serde_json::from_value::<xmemo_safety::Report>(v).ok())
            .map(|report| super::safety::SafetySummary::of(&report)),
    }
}

// The catalog cursor predates the tagged listing cursors of `page.rs` and stays as it was
// (workspace id and slug), so cursors handed out before keep working.
fn encode_cursor(key: &SkillKey) -> String {
    super::page::encode_cursor(&[&key.workspace_id, &key.slug])
}

fn decode_cursor(cursor: &str) -> ServiceResult<SkillKey> {
    let [workspace_id, slug] = super::page::decode_cursor(cursor)?;
    Ok(SkillKey { workspace_id, slug })
}

impl Service {
    /// One page of the caller's served skills, in a stable order, and the cursor of the next.
    pub async fn served_page(
        &self,
        principal: &Principal,
        cursor: Option<&str>,
        page_size: u32,
    ) -> ServiceResult<ServedList> {
        principal.require(Scope::Read)?;
        let after = cursor.map(decode_cursor).transpose()?;
        let access = self.access(principal).await?;
        let workspace_ids = access.workspace_ids();
        let page = self
            .store
            .served_skills(&ServedPage {
                workspace_ids: workspace_ids.clone(),
                after,
                // One more than asked tells whether another page follows.
                limit: page_size.saturating_add(1),
            })
            .await?;
        let more = page.len() > page_size as usize;
        let page: Vec<_> = page.into_iter().take(page_size as usize).collect();
        let next_cursor = more.then(|| page.last()).flatten().map(|last| {
            encode_cursor(&SkillKey {
                workspace_id: last.skill.workspace_id.clone(),
                slug: last.skill.slug.clone(),
            })
        });
        let slugs: Vec<String> = page.iter().map(|p| p.skill.slug.clone()).collect();
        let shared_slugs = self.store.shared_slugs(&workspace_ids, &slugs).await?;
        let skills = page
            .into_iter()
            .map(|p| Served {
                root: root_of(&p.skill, access.handle(&p.skill.workspace_id), p.revision),
            })
            .collect();
        Ok(ServedList {
            skills,
            shared_slugs,
            next_cursor,
        })
    }

    /// The served skill a slug names (in `workspace`, or in any of the caller's workspaces
    /// when the slug is unambiguous); `None` when nothing is served under that name.
    pub async fn served_skill(
        &self,
        principal: &Principal,
        workspace: Option<&str>,
        slug: &str,
    ) -> ServiceResult<Option<Served>> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        self.served_in(&access, workspace, slug).await
    }

    async fn served_in(
        &self,
        access: &Access,
        workspace: Option<&str>,
        slug: &str,
    ) -> ServiceResult<Option<Served>> {
        let (skill, ws, _) = match self.resolve_skill(access, slug, workspace).await {
            Ok(found) => found,
            Err(ServiceError::NotFound(_) | ServiceError::Validation(..)) => return Ok(None),
            Err(e) => return Err(e),
        };
        if skill.asset_status != AssetStatus::Active {
            return Ok(None);
        }
        let Some(revision) = self.store.published_revision(&skill.skill_id).await? else {
            return Ok(None);
        };
        Ok(Some(Served {
            root: root_of(&skill, ws.handle, revision),
        }))
    }

    /// The bytes of one declared component of a served skill; `None` when the revision
    /// declares no such path.
    pub async fn served_component(
        &self,
        served: &Served,
        logical_path: &str,
    ) -> ServiceResult<Option<(ComponentManifest, Vec<u8>)>> {
        Ok(self
            .store
            .component_bytes(&served.root.revision_id, logical_path)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let key = SkillKey {
            workspace_id: "ws_1".into(),
            slug: "deploy-app".into(),
        };
        assert_eq!(decode_cursor(&encode_cursor(&key)).ok(), Some(key));
        for bad in ["", "!!", "bm8gbmV3bGluZQ"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
