//! What a principal may see: its memberships, and how `workspace` selectors resolve.
//! A workspace the caller does not belong to is reported as not found, never as forbidden,
//! so its existence does not leak.

use super::Service;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use xmemo_core::{Role, WorkspaceKind};
use xmemo_store::{Membership, Skill, Workspace};

/// The caller's memberships, loaded once per request.
pub struct Access {
    pub memberships: Vec<Membership>,
}

impl Access {
    pub fn workspace_ids(&self) -> Vec<String> {
        self.memberships
            .iter()
            .map(|m| m.workspace.workspace_id.clone())
            .collect()
    }

    pub fn membership(&self, workspace_id: &str) -> Option<&Membership> {
        self.memberships
            .iter()
            .find(|m| m.workspace.workspace_id == workspace_id)
    }

    pub fn role(&self, workspace_id: &str) -> Option<Role> {
        self.membership(workspace_id).map(|m| m.role)
    }

    pub fn handle(&self, workspace_id: &str) -> String {
        self.membership(workspace_id)
            .map(|m| m.workspace.handle.clone())
            .unwrap_or_else(|| workspace_id.to_string())
    }

    /// A workspace id, `personal`, or a team handle → one of the caller's workspaces.
    pub fn resolve(&self, selector: &str) -> ServiceResult<&Membership> {
        let found = if selector == "personal" {
            self.memberships
                .iter()
                .find(|m| m.workspace.kind == WorkspaceKind::Personal)
        } else {
            self.memberships.iter().find(|m| {
                m.workspace.workspace_id == selector
                    || (m.workspace.kind == WorkspaceKind::Team && m.workspace.handle == selector)
            })
        };
        found.ok_or_else(|| ServiceError::NotFound(format!("workspace `{selector}` not found")))
    }

    pub fn personal(&self) -> ServiceResult<&Membership> {
        self.resolve("personal")
    }

    /// Workspaces a read may look in: the selected one, or all of the caller's.
    pub fn readable(&self, selector: Option<&str>) -> ServiceResult<Vec<String>> {
        match selector {
            Some(s) => Ok(vec![self.resolve(s)?.workspace.workspace_id.clone()]),
            None => Ok(self.workspace_ids()),
        }
    }
}

impl Service {
    pub async fn access(&self, principal: &Principal) -> ServiceResult<Access> {
        Ok(Access {
            memberships: self
                .store
                .memberships(&principal.account.account_id)
                .await?,
        })
    }

    /// The one skill a slug names for this caller, or NOT_FOUND / AMBIGUOUS_SLUG.
    pub(crate) async fn resolve_skill(
        &self,
        access: &Access,
        slug: &str,
        workspace: Option<&str>,
    ) -> ServiceResult<(Skill, Workspace, Role)> {
        xmemo_core::validate_slug("slug", slug)?;
        let ids = access.readable(workspace)?;
        let mut skills = self.store.find_skills_by_slug(&ids, slug).await?;
        match skills.len() {
            0 => Err(ServiceError::NotFound(format!("skill `{slug}` not found"))),
            1 => {
                let skill = skills.remove(0);
                let m = access
                    .membership(&skill.workspace_id)
                    .ok_or_else(|| ServiceError::NotFound(format!("skill `{slug}` not found")))?;
                Ok((skill, m.workspace.clone(), m.role))
            }
            _ => Err(ServiceError::AmbiguousSlug {
                slug: slug.to_string(),
                candidates: skills
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "workspace": access.handle(&s.workspace_id),
                            "workspace_id": s.workspace_id,
                            "skill_id": s.skill_id,
                        })
                    })
                    .collect(),
            }),
        }
    }
}
