//! Memories (SPEC §9): remember, recall, update, forget, restore — access-checked like skills
//! (viewers read; members, admins and owners write), every limit checked before the store is
//! touched, every write audited. Results are compact unless the full content is asked for.

use super::Service;
use super::access::Access;
use super::schema;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xmemo_core::limits::{
    MEMORY_CONTENT_MAX_BYTES, MEMORY_RECALL_LIMIT_DEFAULT, MEMORY_RECALL_LIMIT_MAX,
    MEMORY_RECALL_LIMIT_MIN, MEMORY_TITLE_MAX_CHARS, NOTE_MAX_CHARS, QUERY_MAX_CHARS,
};
use xmemo_core::memory::{
    MemoryContent, excerpt, memory_content_hash, normalize_tags, validate_memory,
};
use xmemo_core::{MemoryKind, MemoryStatus, Scope, new_id};
use xmemo_store::{
    AuditDraft, Memory, MemoryQuery, MemoryStatusChange, MemoryUpdate, MemoryVersion, NewMemory,
};

/// A `memory_id` argument.
const MEMORY_ID: &str = "The memory_id returned by remember or recall.";

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberRequest {
    /// preference, fact, decision, todo, progress or note.
    #[schemars(schema_with = "schema::memory_kind")]
    pub kind: MemoryKind,
    #[schemars(
        length(min = 1, max = MEMORY_CONTENT_MAX_BYTES),
        description = format!("What to remember, in plain words (at most {MEMORY_CONTENT_MAX_BYTES} bytes of UTF-8).")
    )]
    pub content: String,
    /// A short title (optional).
    #[schemars(length(min = 1, max = MEMORY_TITLE_MAX_CHARS))]
    pub title: Option<String>,
    /// Tags to find it by (optional).
    #[serde(default)]
    #[schemars(schema_with = "schema::tags")]
    pub tags: Option<Vec<String>>,
    /// The project it applies to, e.g. the repository name (optional; omit for workspace-wide
    /// memories).
    #[serde(default)]
    #[schemars(schema_with = "schema::slug")]
    pub project: Option<String>,
    /// RFC 3339 instant after which it is no longer recalled (optional).
    #[serde(default)]
    #[schemars(schema_with = "schema::instant")]
    pub expires_at: Option<String>,
    /// "personal" (default) or a team handle.
    #[schemars(length(min = 1))]
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallMemoriesRequest {
    /// Words to search titles, contents and tags for.
    #[schemars(length(min = 1, max = QUERY_MAX_CHARS))]
    pub query: Option<String>,
    /// Read one memory by id (every other argument but `full` is then refused).
    #[schemars(length(min = 1), description = MEMORY_ID)]
    pub memory_id: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "schema::memory_kind")]
    pub kind: Option<MemoryKind>,
    /// Only memories carrying every one of these tags.
    #[serde(default)]
    #[schemars(schema_with = "schema::tags")]
    pub tags: Option<Vec<String>>,
    /// Only memories of this project.
    #[serde(default)]
    #[schemars(schema_with = "schema::slug")]
    pub project: Option<String>,
    /// Only memories saved by this agent instance (XMEMO_AGENT_INSTANCE_ID).
    #[schemars(length(min = 1))]
    pub agent_instance_id: Option<String>,
    /// Only memories changed at or after this instant.
    #[serde(default)]
    #[schemars(schema_with = "schema::instant")]
    pub since: Option<String>,
    /// Only memories changed at or before this instant.
    #[serde(default)]
    #[schemars(schema_with = "schema::instant")]
    pub until: Option<String>,
    /// Also recall forgotten memories (default false).
    pub include_forgotten: Option<bool>,
    #[schemars(
        range(min = MEMORY_RECALL_LIMIT_MIN, max = MEMORY_RECALL_LIMIT_MAX),
        extend("default" = MEMORY_RECALL_LIMIT_DEFAULT),
        description = format!("How many memories at most (default {MEMORY_RECALL_LIMIT_DEFAULT}).")
    )]
    pub limit: Option<i64>,
    /// Whole contents instead of excerpts (default false).
    pub full: Option<bool>,
    /// Leave out memories scoring less than this (scores run from 0 to 1 and mean the same
    /// for every query), except memories holding every word of `query`; so a recall may find
    /// nothing.
    #[schemars(range(min = xmemo_core::limits::SCORE_MIN, max = xmemo_core::limits::SCORE_MAX))]
    pub min_score: Option<f64>,
    /// Only this workspace ("personal" or a team handle); default: every workspace you can
    /// read.
    #[schemars(length(min = 1))]
    pub workspace: Option<String>,
}

/// The next version of a memory: fields left out keep their current value.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemoryRequest {
    #[schemars(length(min = 1), description = MEMORY_ID)]
    pub memory_id: String,
    /// The version the change is based on.
    #[schemars(range(min = 1))]
    pub expected_version: i64,
    #[schemars(length(min = 1, max = MEMORY_CONTENT_MAX_BYTES))]
    pub content: Option<String>,
    #[schemars(length(min = 1, max = MEMORY_TITLE_MAX_CHARS))]
    pub title: Option<String>,
    /// The new set of tags (replaces the old one).
    #[serde(default)]
    #[schemars(schema_with = "schema::tags")]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    #[schemars(schema_with = "schema::memory_kind")]
    pub kind: Option<MemoryKind>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
    #[schemars(length(min = 1), description = MEMORY_ID)]
    pub memory_id: String,
    /// Why it is forgotten (optional, recorded).
    #[schemars(length(max = NOTE_MAX_CHARS))]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreMemoryRequest {
    #[schemars(length(min = 1), description = MEMORY_ID)]
    pub memory_id: String,
}

/// Who saved a memory (or one of its versions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedBy {
    pub account_id: String,
    /// `None` once the account is deleted.
    pub account: Option<String>,
    pub credential_id: Option<String>,
    pub client_profile: Option<String>,
    pub agent_id: Option<String>,
    pub agent_instance_id: Option<String>,
}

/// A memory in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryView {
    pub memory_id: String,
    pub workspace: String,
    pub kind: MemoryKind,
    pub title: Option<String>,
    pub content: String,
    pub tags: Vec<String>,
    pub project: Option<String>,
    pub expires_at: Option<String>,
    pub status: MemoryStatus,
    pub forgotten_reason: Option<String>,
    pub forgotten_at: Option<String>,
    pub version: i64,
    pub saved_by: SavedBy,
    pub created_at: String,
    pub updated_at: String,
    /// Present when the safety scanner finds instructions aimed at agents or hidden text in
    /// the memory: it is kept, and flagged so a host treats it as data (docs/safety.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<MemorySafety>,
}

/// The safety flag of a memory that carries prompt injection or hidden text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySafety {
    pub verdict: xmemo_safety::Verdict,
    pub risk: xmemo_safety::Risk,
    pub rules_version: String,
    /// Always true when present: the content is data to show, not instructions to follow.
    pub untrusted: bool,
    pub findings: Vec<xmemo_safety::Finding>,
}

/// The flag of a memory (its title and content scanned together), when there is one.
fn memory_safety(title: Option<&str>, content: &str) -> Option<MemorySafety> {
    let text = match title {
        Some(title) => format!("{title}\n{content}"),
        None => content.to_string(),
    };
    let report = xmemo_safety::scan_memory(&text);
    (report.verdict != xmemo_safety::Verdict::Clean).then_some(MemorySafety {
        verdict: report.verdict,
        risk: report.risk,
        rules_version: report.rules_version,
        untrusted: true,
        findings: report.findings,
    })
}

/// A recall hit: the content cut to an excerpt unless `full` was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHitView {
    pub memory_id: String,
    pub workspace: String,
    pub kind: MemoryKind,
    pub title: Option<String>,
    /// The excerpt, or the whole content with `full`.
    pub content: String,
    /// True when `content` is an excerpt that leaves something out.
    pub truncated: bool,
    pub tags: Vec<String>,
    pub project: Option<String>,
    pub status: MemoryStatus,
    pub version: i64,
    pub saved_by: SavedBy,
    pub updated_at: String,
    pub score: f64,
    /// Which lanes found it: `text` (full text), `meaning` (the semantic lane); none for a
    /// recall without `query`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
    /// As [`MemoryView::safety`]: the whole content is scanned, not only the excerpt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<MemorySafety>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Remembered {
    pub created: bool,
    pub memory: MemoryView,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Memories {
    pub memories: Vec<MemoryHitView>,
    /// With an empty search only: where it looked and what to check next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<EmptyRecallHint>,
}

/// What an empty recall tells its caller, so "nothing found" can be told apart from "looking
/// in the wrong place" (the product page: verify the MCP config path, XMEMO_KEY for direct
/// clients, and any stale OAuth credential).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EmptyRecallHint {
    /// The handles of the workspaces searched (`personal` is the caller's own).
    pub workspaces: Vec<String>,
    /// The filters that narrowed the search, as given (`query`, `kind`, `project`…).
    pub filters: Vec<String>,
    /// Memories those workspaces hold that a recall with no query or filter finds.
    pub recallable: u64,
    /// The next thing to check.
    pub next: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryVersionView {
    pub version: i64,
    pub kind: MemoryKind,
    pub title: Option<String>,
    pub content: String,
    pub tags: Vec<String>,
    pub saved_by: SavedBy,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryHistory {
    pub memory_id: String,
    pub versions: Vec<MemoryVersionView>,
}

/// The filters a recall was given, named as its arguments are.
fn given_filters(req: &RecallMemoriesRequest, tags: &[String], min_score: bool) -> Vec<String> {
    let mut given = Vec::new();
    if let Some(q) = &req.query {
        given.push(format!("query {q:?}"));
    }
    if let Some(kind) = req.kind {
        given.push(format!("kind {kind}"));
    }
    if !tags.is_empty() {
        given.push(format!("tags {}", tags.join(",")));
    }
    for (name, value) in [
        ("project", &req.project),
        ("agent_instance_id", &req.agent_instance_id),
        ("since", &req.since),
        ("until", &req.until),
    ] {
        if let Some(v) = value {
            given.push(format!("{name} {v}"));
        }
    }
    if min_score {
        given.push("min_score".into());
    }
    given
}

/// The hint of an empty recall: the next check depends on whether anything was there to find.
fn empty_recall_hint(
    principal: &Principal,
    workspaces: Vec<String>,
    filters: Vec<String>,
    recallable: u64,
    readable_workspaces: usize,
) -> EmptyRecallHint {
    let next = if recallable > 0 {
        let held = if recallable == 1 {
            "1 memory is".to_string()
        } else {
            format!("{recallable} memories are")
        };
        format!(
            "{held} recallable in {}, but none matches: use fewer or other words, drop a filter, or lower min_score",
            workspaces.join(", ")
        )
    } else if workspaces.len() < readable_workspaces {
        format!(
            "{} holds no memory yet; leave out `workspace` to search all {readable_workspaces} workspaces you can read",
            workspaces.join(", ")
        )
    } else {
        let credential = if principal.via_oauth {
            "this OAuth grant (an old grant may belong to another account: sign in to the console, Account, and reconnect)"
        } else {
            "this API key (XMEMO_KEY for direct clients; the console's Keys page shows whose it is)"
        };
        format!(
            "no memory is saved where {} can read yet. If you saved some, check that this client uses the same server (its MCP config path and XMEMO_URL) and the same account as {credential}; `xmemo doctor` checks both",
            principal.account.handle
        )
    };
    EmptyRecallHint {
        workspaces,
        filters,
        recallable,
        next,
    }
}

fn saved_by(a: &xmemo_store::Attribution, account: Option<String>) -> SavedBy {
    SavedBy {
        account_id: a.account_id.clone(),
        account,
        credential_id: a.credential_id.clone(),
        client_profile: a.client_profile.clone(),
        agent_id: a.agent_id.clone(),
        agent_instance_id: a.agent_instance_id.clone(),
    }
}

fn view(m: Memory, access: &Access) -> MemoryView {
    MemoryView {
        safety: memory_safety(m.title.as_deref(), &m.content),
        workspace: access.handle(&m.workspace_id),
        saved_by: saved_by(&m.attribution, m.account_handle.clone()),
        memory_id: m.memory_id,
        kind: m.kind,
        title: m.title,
        content: m.content,
        tags: m.tags,
        project: m.project,
        expires_at: m.expires_at,
        status: m.status,
        forgotten_reason: m.forgotten_reason,
        forgotten_at: m.forgotten_at,
        version: m.version,
        created_at: m.created_at,
        updated_at: m.updated_at,
    }
}

fn hit_view(hit: xmemo_store::MemoryHit, full: bool, access: &Access) -> MemoryHitView {
    let xmemo_store::MemoryHit {
        memory: m,
        score,
        matched,
        every_word: _,
    } = hit;
    let safety = memory_safety(m.title.as_deref(), &m.content);
    let (content, truncated) = if full {
        (m.content, false)
    } else {
        excerpt(&m.content)
    };
    MemoryHitView {
        safety,
        workspace: access.handle(&m.workspace_id),
        saved_by: saved_by(&m.attribution, m.account_handle.clone()),
        memory_id: m.memory_id,
        kind: m.kind,
        title: m.title,
        content,
        truncated,
        tags: m.tags,
        project: m.project,
        status: m.status,
        version: m.version,
        updated_at: m.updated_at,
        score,
        matched: matched.names().into_iter().map(String::from).collect(),
    }
}

fn version_view(v: MemoryVersion) -> MemoryVersionView {
    MemoryVersionView {
        saved_by: saved_by(&v.attribution, None),
        version: v.version,
        kind: v.kind,
        title: v.title,
        content: v.content,
        tags: v.tags,
        created_at: v.created_at,
    }
}

/// An optional RFC 3339 instant in the store's format.
fn instant(field: &str, text: Option<&str>) -> ServiceResult<Option<String>> {
    text.map(|t| super::accounts::normalise_instant(field, t))
        .transpose()
}

fn check_reason(reason: Option<String>) -> ServiceResult<Option<String>> {
    let reason = reason
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    if let Some(r) = &reason {
        xmemo_core::validate::validate_note("reason", r)?;
    }
    Ok(reason)
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound(format!("memory `{id}` not found"))
}

impl Service {
    /// A memory the caller may read, with their access (NOT_FOUND outside their workspaces).
    async fn readable_memory(
        &self,
        principal: &Principal,
        memory_id: &str,
    ) -> ServiceResult<(Memory, Access)> {
        let access = self.access(principal).await?;
        let memory = self
            .store
            .get_memory(memory_id)
            .await?
            .filter(|m| access.membership(&m.workspace_id).is_some())
            .ok_or_else(|| not_found(memory_id))?;
        Ok((memory, access))
    }

    /// A memory the caller may change: readable, and the caller writes in its workspace.
    async fn writable_memory(
        &self,
        principal: &Principal,
        memory_id: &str,
    ) -> ServiceResult<(Memory, Access)> {
        principal.require(Scope::Write)?;
        self.spend_write(principal).await?;
        let (memory, access) = self.readable_memory(principal, memory_id).await?;
        if !access
            .role(&memory.workspace_id)
            .is_some_and(|r| r.can_write())
        {
            return Err(ServiceError::PermissionDenied(
                "viewers read memories; changing them needs the member role or above".into(),
            ));
        }
        Ok((memory, access))
    }

    pub async fn remember(
        &self,
        principal: &Principal,
        req: RememberRequest,
    ) -> ServiceResult<Remembered> {
        principal.require(Scope::Write)?;
        let content = MemoryContent {
            kind: req.kind,
            content: req.content,
            title: req.title,
            tags: normalize_tags(req.tags.unwrap_or_default()),
            project: req.project,
        };
        validate_memory(&content)?;
        self.spend_write(principal).await?;
        let expires_at = instant("expires_at", req.expires_at.as_deref())?;
        if expires_at
            .as_deref()
            .is_some_and(|e| e <= self.now().as_str())
        {
            return Err(ServiceError::validation(
                "expires_at must be in the future",
                "expires_at",
            ));
        }
        let access = self.access(principal).await?;
        let membership = match req.workspace.as_deref() {
            Some(selector) => access.resolve(selector)?,
            None => access.personal()?,
        };
        if !membership.role.can_write() {
            return Err(ServiceError::PermissionDenied(format!(
                "viewers cannot remember in workspace `{}`",
                membership.workspace.handle
            )));
        }
        let workspace_id = membership.workspace.workspace_id.clone();
        let memory_id = new_id("mem");
        let attribution = principal.attribution();
        let audit = AuditDraft::new("memory.remember", &attribution)
            .workspace(&workspace_id)
            .details(serde_json::json!({
                "memory_id": memory_id,
                "kind": content.kind,
                "project": content.project,
            }));
        let outcome = self
            .store
            .remember(
                NewMemory {
                    memory_id,
                    workspace_id,
                    content_hash: memory_content_hash(&content.content),
                    content,
                    expires_at,
                    attribution,
                    quota: self.quota(),
                },
                audit,
            )
            .await?;
        Ok(Remembered {
            created: outcome.created,
            memory: view(outcome.memory, &access),
        })
    }

    pub async fn recall_memories(
        &self,
        principal: &Principal,
        mut req: RecallMemoriesRequest,
    ) -> ServiceResult<Memories> {
        principal.require(Scope::Read)?;
        let full = req.full.unwrap_or(false);
        if let Some(id) = req.memory_id.as_deref() {
            let filtered = req.query.is_some()
                || req.kind.is_some()
                || req.tags.is_some()
                || req.project.is_some()
                || req.agent_instance_id.is_some()
                || req.since.is_some()
                || req.until.is_some()
                || req.limit.is_some()
                || req.workspace.is_some();
            if filtered {
                return Err(ServiceError::validation(
                    "`memory_id` reads one memory; give it alone (with `full`), or search with `query` and filters",
                    "memory_id",
                ));
            }
            let (memory, access) = self.readable_memory(principal, id).await?;
            return Ok(Memories {
                hint: None,
                memories: vec![hit_view(
                    xmemo_store::MemoryHit {
                        memory,
                        score: 0.0,
                        matched: xmemo_store::Lanes::default(),
                        every_word: false,
                    },
                    full,
                    &access,
                )],
            });
        }
        let limit = match req.limit {
            None => MEMORY_RECALL_LIMIT_DEFAULT,
            Some(n)
                if (i64::from(MEMORY_RECALL_LIMIT_MIN)..=i64::from(MEMORY_RECALL_LIMIT_MAX))
                    .contains(&n) =>
            {
                n as u32
            }
            Some(_) => {
                return Err(ServiceError::validation(
                    format!(
                        "limit must be between {MEMORY_RECALL_LIMIT_MIN} and {MEMORY_RECALL_LIMIT_MAX}"
                    ),
                    "limit",
                ));
            }
        };
        if let Some(q) = &req.query {
            if q.trim().is_empty() || q.chars().count() > QUERY_MAX_CHARS {
                return Err(ServiceError::validation(
                    format!("query must be 1 to {QUERY_MAX_CHARS} characters"),
                    "query",
                ));
            }
            // As Level 0 (recall.rs): the query is not stored, but PostgreSQL refuses NUL
            // where SQLite finds nothing, and both must answer alike.
            xmemo_core::validate::reject_controls("query", q, xmemo_core::validate::Lines::Many)?;
        }
        let tags = req.tags.take().unwrap_or_default();
        for tag in &tags {
            xmemo_core::validate_slug("tags", tag)?;
        }
        if let Some(project) = &req.project {
            xmemo_core::validate_slug("project", project)?;
        }
        if let Some(instance) = &req.agent_instance_id {
            xmemo_core::validate::reject_controls(
                "agent_instance_id",
                instance,
                xmemo_core::validate::Lines::One,
            )?;
        }
        let access = self.access(principal).await?;
        let min_score = super::semantic::check_min_score(req.min_score)?;
        let semantic = match req.query.as_deref() {
            Some(text) => self.query_meaning(text).await,
            None => None,
        };
        let filters = given_filters(&req, &tags, min_score.is_some());
        let workspace_ids = access.readable(req.workspace.as_deref())?;
        let hits = self
            .store
            .recall_memories(&MemoryQuery {
                workspace_ids: workspace_ids.clone(),
                text: req.query,
                kind: req.kind,
                tags,
                project: req.project,
                agent_instance_id: req.agent_instance_id,
                since: instant("since", req.since.as_deref())?,
                until: instant("until", req.until.as_deref())?,
                include_forgotten: req.include_forgotten.unwrap_or(false),
                now: self.now(),
                limit,
                semantic,
            })
            .await?;
        let memories: Vec<MemoryHitView> = hits
            .into_iter()
            .filter(|h| super::semantic::above_floor(min_score, h.score, h.every_word))
            .map(|h| hit_view(h, full, &access))
            .collect();
        let hint = if memories.is_empty() {
            let recallable = self
                .store
                .count_recallable_memories(&workspace_ids, &self.now())
                .await?;
            let searched = workspace_ids.iter().map(|w| access.handle(w)).collect();
            Some(empty_recall_hint(
                principal,
                searched,
                filters,
                recallable,
                access.workspace_ids().len(),
            ))
        } else {
            None
        };
        Ok(Memories { memories, hint })
    }

    pub async fn get_memory(
        &self,
        principal: &Principal,
        memory_id: &str,
    ) -> ServiceResult<MemoryView> {
        principal.require(Scope::Read)?;
        let (memory, access) = self.readable_memory(principal, memory_id).await?;
        Ok(view(memory, &access))
    }

    pub async fn memory_history(
        &self,
        principal: &Principal,
        memory_id: &str,
    ) -> ServiceResult<MemoryHistory> {
        principal.require(Scope::Read)?;
        let (memory, _) = self.readable_memory(principal, memory_id).await?;
        let versions = self
            .store
            .memory_history(std::slice::from_ref(&memory.memory_id))
            .await?;
        Ok(MemoryHistory {
            memory_id: memory.memory_id,
            versions: versions.into_iter().map(version_view).collect(),
        })
    }

    pub async fn update_memory(
        &self,
        principal: &Principal,
        req: UpdateMemoryRequest,
    ) -> ServiceResult<MemoryView> {
        principal.require(Scope::Write)?;
        if req.content.is_none() && req.title.is_none() && req.tags.is_none() && req.kind.is_none()
        {
            return Err(ServiceError::validation(
                "give at least one of content, title, tags or kind",
                "content",
            ));
        }
        let (current, access) = self.writable_memory(principal, &req.memory_id).await?;
        let content = MemoryContent {
            kind: req.kind.unwrap_or(current.kind),
            content: req.content.unwrap_or(current.content),
            title: req.title.or(current.title),
            tags: normalize_tags(req.tags.unwrap_or(current.tags)),
            project: current.project,
        };
        validate_memory(&content)?;
        let attribution = principal.attribution();
        let audit = AuditDraft::new("memory.update", &attribution)
            .workspace(&current.workspace_id)
            .details(serde_json::json!({
                "memory_id": req.memory_id,
                "version": req.expected_version + 1,
            }));
        let updated = self
            .store
            .update_memory(MemoryUpdate {
                memory_id: req.memory_id,
                expected_version: req.expected_version,
                content_hash: memory_content_hash(&content.content),
                content,
                attribution,
                audit,
                quota: self.quota(),
            })
            .await?;
        Ok(view(updated, &access))
    }

    pub async fn forget(
        &self,
        principal: &Principal,
        req: ForgetRequest,
    ) -> ServiceResult<MemoryView> {
        let reason = check_reason(req.reason)?;
        self.change_memory_status(principal, &req.memory_id, MemoryStatus::Forgotten, reason)
            .await
    }

    pub async fn restore_memory(
        &self,
        principal: &Principal,
        req: RestoreMemoryRequest,
    ) -> ServiceResult<MemoryView> {
        self.change_memory_status(principal, &req.memory_id, MemoryStatus::Active, None)
            .await
    }

    async fn change_memory_status(
        &self,
        principal: &Principal,
        memory_id: &str,
        to: MemoryStatus,
        reason: Option<String>,
    ) -> ServiceResult<MemoryView> {
        let (current, access) = self.writable_memory(principal, memory_id).await?;
        let from = match to {
            MemoryStatus::Forgotten => MemoryStatus::Active,
            MemoryStatus::Active => MemoryStatus::Forgotten,
        };
        if current.status != from {
            return Err(ServiceError::Conflict(format!(
                "memory `{memory_id}` is already {}",
                current.status
            )));
        }
        let action = match to {
            MemoryStatus::Forgotten => "memory.forget",
            MemoryStatus::Active => "memory.restore",
        };
        let audit = AuditDraft::new(action, &principal.attribution())
            .workspace(&current.workspace_id)
            .details(serde_json::json!({"memory_id": memory_id, "reason": reason}));
        let changed = self
            .store
            .set_memory_status(MemoryStatusChange {
                memory_id: memory_id.to_string(),
                from,
                to,
                reason,
                audit,
            })
            .await?;
        Ok(view(changed, &access))
    }
}
