//! Progressive recall (SPEC §3): Level 0 descriptors, Level 1 root, Level 2 one pinned resource.

use super::Service;
use super::types::*;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use base64::Engine;
use xmemo_core::limits::{QUERY_MAX_CHARS, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX};
use xmemo_core::{AssetStatus, Scope};
use xmemo_store::SearchQuery;

impl Service {
    /// `recall_cloud_skill`: the level follows from the arguments given.
    pub async fn recall(
        &self,
        principal: &Principal,
        req: RecallRequest,
    ) -> ServiceResult<ToolResult> {
        principal.require(Scope::Read)?;
        let ws = req.workspace.as_deref();
        match (&req.query, &req.slug, &req.resource) {
            (Some(_), Some(_), _) | (Some(_), None, Some(_)) => Err(ServiceError::validation(
                "give either `query` (Level 0) or `slug` (Levels 1 and 2), not both",
                "query",
            )),
            (Some(query), None, None) => {
                if req.revision_id.is_some() {
                    return Err(ServiceError::validation(
                        "`revision_id` does not apply to a Level 0 search",
                        "revision_id",
                    ));
                }
                let limit = match req.limit {
                    None => SEARCH_LIMIT_DEFAULT,
                    Some(n) if (1..=SEARCH_LIMIT_MAX as i64).contains(&n) => n as u32,
                    Some(_) => {
                        return Err(ServiceError::validation(
                            format!("limit must be between 1 and {SEARCH_LIMIT_MAX}"),
                            "limit",
                        ));
                    }
                };
                Ok(ToolResult::Descriptors(
                    self.search_filtered(
                        principal,
                        query,
                        limit,
                        ws,
                        req.min_score,
                        req.include_malicious.unwrap_or(false),
                    )
                    .await?,
                ))
            }
            (None, Some(slug), None) => Ok(ToolResult::Root(Box::new(
                self.root(principal, slug, ws, req.revision_id.as_deref())
                    .await?,
            ))),
            (None, Some(slug), Some(resource)) => {
                let Some(revision_id) = req.revision_id.as_deref() else {
                    return Err(ServiceError::RevisionPinRequired(
                        "Level 2 reads need the revision_id returned by Level 1, so a resource cannot change under a running workflow".into(),
                    ));
                };
                Ok(ToolResult::Resource(
                    self.resource(principal, slug, ws, revision_id, resource)
                        .await?,
                ))
            }
            (None, None, Some(_)) => Err(ServiceError::validation(
                "a Level 2 read needs `slug`, `revision_id` and `resource`",
                "slug",
            )),
            (None, None, None) => Err(ServiceError::validation(
                "give `query` to discover skills (Level 0) or `slug` to recall one (Level 1)",
                "query",
            )),
        }
    }

    /// Level 0.
    pub async fn search(
        &self,
        principal: &Principal,
        query: &str,
        limit: u32,
        workspace: Option<&str>,
    ) -> ServiceResult<Descriptors> {
        self.search_filtered(principal, query, limit, workspace, None, false)
            .await
    }

    /// Level 0, leaving out what scores less than `min_score` (0 to 1, the same with the
    /// semantic lane on or off) unless it matches the query's words exactly, and skills the
    /// safety scanner called malicious unless `include_malicious`.
    pub async fn search_filtered(
        &self,
        principal: &Principal,
        query: &str,
        limit: u32,
        workspace: Option<&str>,
        min_score: Option<f64>,
        include_malicious: bool,
    ) -> ServiceResult<Descriptors> {
        principal.require(Scope::Read)?;
        let chars = query.chars().count();
        if query.trim().is_empty() || chars > QUERY_MAX_CHARS {
            return Err(ServiceError::validation(
                format!("query must be 1 to {QUERY_MAX_CHARS} characters"),
                "query",
            ));
        }
        // Not stored, but sent to the database: PostgreSQL refuses NUL where SQLite finds
        // nothing, and both must answer alike.
        xmemo_core::validate::reject_controls("query", query, xmemo_core::validate::Lines::Many)?;
        let access = self.access(principal).await?;
        let workspace_ids = access.readable(workspace)?;
        let min_score = super::semantic::check_min_score(min_score)?;
        let semantic = self.query_meaning(query).await;
        let hits = self
            .store
            .search(&SearchQuery {
                text: query.to_string(),
                workspace_ids,
                limit: limit.clamp(1, SEARCH_LIMIT_MAX),
                semantic,
                include_malicious,
            })
            .await?;
        Ok(Descriptors {
            skills: hits
                .into_iter()
                .filter(|d| super::semantic::above_floor(min_score, d.score, d.every_word))
                .map(|d| SkillDescriptor {
                    matched: d.matched.names().into_iter().map(String::from).collect(),
                    workspace: access.handle(&d.workspace_id),
                    skill_id: d.skill_id,
                    slug: d.slug,
                    name: d.name,
                    description: d.description,
                    score: d.score,
                    safety: d.safety_verdict.filter(|v| v != "clean"),
                })
                .collect(),
        })
    }

    /// Level 1: the pinned revision, else the published one, else the latest.
    pub async fn root(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        revision_id: Option<&str>,
    ) -> ServiceResult<Root> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let (skill, ws, _) = self.resolve_skill(&access, slug, workspace).await?;
        let revision = match revision_id {
            Some(id) => self.revision_of(&skill, id).await?,
            None => {
                if skill.asset_status == AssetStatus::Archived {
                    return Err(ServiceError::NotFound(format!(
                        "skill `{slug}` is archived; pinned revisions stay readable with revision_id"
                    )));
                }
                match self.store.published_revision(&skill.skill_id).await? {
                    Some(r) => r,
                    None => self
                        .store
                        .latest_revision(&skill.skill_id)
                        .await?
                        .ok_or_else(|| {
                            ServiceError::NotFound(format!("skill `{slug}` has no revision"))
                        })?,
                }
            }
        };
        // A revision stored before the scanner has no report yet: scan it now.
        let unscanned = revision.safety.is_none().then(|| revision.clone());
        let mut root = super::served::root_of(&skill, ws.handle, revision);
        if let Some(revision) = unscanned {
            let report = self.revision_safety(&revision).await?;
            root.safety = Some(super::safety::SafetySummary::of(&report));
        }
        Ok(root)
    }

    /// Level 2: one component of one pinned revision.
    pub async fn resource(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        revision_id: &str,
        logical_path: &str,
    ) -> ServiceResult<Resource> {
        let (manifest, bytes) = self
            .resource_bytes(principal, slug, workspace, revision_id, logical_path)
            .await?;
        let (encoding, content) = match String::from_utf8(bytes) {
            Ok(text) => (ContentEncoding::Utf8, text),
            Err(e) => (
                ContentEncoding::Base64,
                base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            ),
        };
        Ok(Resource {
            revision_id: revision_id.to_string(),
            logical_path: manifest.logical_path,
            component_type: manifest.component_type,
            content_hash: manifest.content_hash,
            size: manifest.size,
            media_type: manifest.media_type,
            encoding,
            content,
        })
    }

    /// Level 2 as raw bytes (for downloads and the CLI).
    pub async fn resource_bytes(
        &self,
        principal: &Principal,
        slug: &str,
        workspace: Option<&str>,
        revision_id: &str,
        logical_path: &str,
    ) -> ServiceResult<(xmemo_store::ComponentManifest, Vec<u8>)> {
        principal.require(Scope::Read)?;
        let access = self.access(principal).await?;
        let (skill, _, _) = self.resolve_skill(&access, slug, workspace).await?;
        let revision = self.revision_of(&skill, revision_id).await?;
        self.store
            .component_bytes(&revision.revision_id, logical_path)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "resource `{logical_path}` is not declared in revision `{revision_id}`"
                ))
            })
    }
}
