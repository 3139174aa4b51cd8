//! Rows the store reads and writes. Timestamps are RFC 3339 UTC strings with milliseconds,
//! which sort lexically and read the same on every backend.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
pub use xmemo_core::ComponentManifest;
use xmemo_core::{
    AssetStatus, ComponentType, InvitationStatus, RevisionStatus, Role, WorkspaceKind,
};

/// How the store writes an instant: UTC, fixed width, milliseconds (so instants compare as
/// text, in SQL and in the search index alike).
const INSTANT: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
);

/// Now, as the store writes it.
pub fn now() -> String {
    instant_text(time::OffsetDateTime::now_utc())
}

/// `t` as the store writes it.
pub(crate) fn instant_text(t: time::OffsetDateTime) -> String {
    t.format(INSTANT)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// An instant the store wrote, if it is one.
pub(crate) fn parse_instant(t: &str) -> Option<time::OffsetDateTime> {
    time::PrimitiveDateTime::parse(t, INSTANT)
        .ok()
        .map(time::PrimitiveDateTime::assume_utc)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub account_id: String,
    pub handle: String,
    pub display_name: String,
    pub is_admin: bool,
    pub personal_workspace_id: String,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub struct NewAccount {
    pub handle: String,
    pub display_name: String,
    pub is_admin: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    pub workspace_id: String,
    /// `personal` for personal workspaces, the team handle for teams.
    pub handle: String,
    pub name: String,
    pub kind: WorkspaceKind,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub struct NewTeam {
    pub handle: String,
    pub name: String,
    pub owner_account_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    pub workspace: Workspace,
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub account_id: String,
    pub handle: String,
    pub display_name: String,
    pub role: Role,
    pub added_at: String,
}

/// An invitation to join a team (the only way an account becomes a member of a team it did
/// not create).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invitation {
    pub invitation_id: String,
    pub workspace_id: String,
    /// The team's handle and name, read with the invitation.
    pub workspace_handle: String,
    pub workspace_name: String,
    /// The handle or account id exactly as the inviter wrote it.
    pub invitee: String,
    /// The account `invitee` named when the invitation was made; `None` when it named none,
    /// and then the invitation never reaches anyone.
    pub account_id: Option<String>,
    pub role: Role,
    pub status: InvitationStatus,
    /// Account id of the inviter, and its handle.
    pub invited_by: String,
    pub invited_by_handle: String,
    pub created_at: String,
    pub responded_at: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewInvitation {
    pub workspace_id: String,
    pub invitee: String,
    pub account_id: Option<String>,
    pub role: Role,
    pub invited_by: String,
    /// Bounds checked in the inviting transaction (none: unbounded, as snapshots insert).
    pub bounds: InvitationBounds,
}

/// What an invitation must respect, checked in its own transaction (under a lock on the
/// invitee's account, so concurrent invitations of one person cannot all pass). Unknown
/// invitees (no account) are counted by the spelling they were invited under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvitationBounds {
    /// Most pending invitations one invitee may have, from all teams together.
    pub max_pending_per_invitee: Option<u64>,
    /// Refuse when the invitee declined an invitation to this team after this instant.
    pub declined_after: Option<String>,
}

/// How an invitee answers a pending invitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvitationAnswer {
    /// Becomes a member with the invitation's role.
    Accept,
    Decline,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub key_id: String,
    pub account_id: String,
    pub name: String,
    /// First characters of the secret, kept to help people recognise a key. Never the secret.
    pub prefix: String,
    #[serde(skip)]
    pub key_hash: String,
    pub scopes: Vec<String>,
    pub profile: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    /// When an authentication last used it (kept to about a minute; `None`: never).
    #[serde(default)]
    pub last_used_at: Option<String>,
}

/// A revision of some skill of a workspace whose content has a given canonical_hash
/// (imports report content that already exists under another slug, #24).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentHolder {
    pub skill_id: String,
    pub slug: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub status: RevisionStatus,
    /// This revision is its skill's latest.
    pub latest: bool,
}

/// A revision that waits for review (status `proposed`), with its skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingProposal {
    pub skill_id: String,
    pub workspace_id: String,
    pub slug: String,
    pub name: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub account_id: String,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub struct NewApiKey {
    pub account_id: String,
    pub name: String,
    pub prefix: String,
    pub key_hash: String,
    pub scopes: Vec<String>,
    pub profile: String,
    pub expires_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    pub skill_id: String,
    pub workspace_id: String,
    pub slug: String,
    /// Display name and description of the latest revision.
    pub name: String,
    pub description: String,
    pub asset_status: AssetStatus,
    pub latest_revision_number: i64,
    pub published_revision_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Who did a write, through which credential and client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    pub account_id: String,
    pub credential_id: Option<String>,
    pub client_profile: Option<String>,
    pub agent_id: Option<String>,
    pub agent_instance_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    pub revision_id: String,
    pub skill_id: String,
    pub revision_number: i64,
    pub name: String,
    pub description: String,
    pub instruction_body: String,
    pub metadata: Map<String, Value>,
    pub canonical_hash: String,
    pub status: RevisionStatus,
    pub review_note: Option<String>,
    pub components: Vec<ComponentManifest>,
    pub attribution: Attribution,
    pub created_at: String,
    pub status_changed_at: String,
    /// Where the revision's content was imported from (URL, kind `github` | `clawhub` |
    /// `upload`, resolved ref/commit, archive SHA-256…); `None` for ordinary saves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
    /// The safety scanner's report (`xmemo_safety::Report` as JSON) written with the revision
    /// or by a rescan; `None` for a revision written before the scanner and not rescanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<Value>,
}

/// A component with its bytes, ready to store.
#[derive(Debug, Clone)]
pub struct NewComponent {
    pub manifest: ComponentManifest,
    pub content: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct SaveRevision {
    pub workspace_id: String,
    pub slug: String,
    pub expected_revision_id: Option<String>,
    pub name: String,
    pub description: String,
    pub instruction_body: String,
    pub metadata: Map<String, Value>,
    pub canonical_hash: String,
    pub status: RevisionStatus,
    pub components: Vec<NewComponent>,
    pub attribution: Attribution,
    /// Provenance of imported content, stored with the new revision (a save that creates
    /// nothing keeps the existing revision's source).
    pub source: Option<Value>,
    /// The safety scanner's report of this content, stored with the new revision.
    pub safety: Option<Value>,
    /// The quota of the account in `attribution`, charged in the save's transaction.
    pub quota: Option<Quota>,
}

/// An account's quota of stored content, charged by every write that stores content in the
/// same transaction as the write (`account_usage`), so concurrent writes cannot all pass it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Memories the account has created.
    pub memories: u64,
    /// Skills the account has created.
    pub skills: u64,
    /// Bytes the account has written (memory versions; revision bodies, metadata, files).
    pub bytes: u64,
}

/// The quotas an `xmemo serve` node enforces, as it recorded them when it started (`None`:
/// no quota of that kind on that node; a quota is at least 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeQuotas {
    /// The node, as it names itself (`host:pid`).
    pub node: String,
    /// When it started (RFC 3339, its own clock).
    pub started_at: String,
    pub memories: Option<u64>,
    pub skills: Option<u64>,
    pub bytes: Option<u64>,
}

/// What an account has used of its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub memories: u64,
    pub skills: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone)]
pub struct SaveOutcome {
    pub skill: Skill,
    pub revision: Revision,
    pub created: bool,
}

#[derive(Debug, Clone)]
pub struct StatusChange {
    pub revision_id: String,
    /// The status the revision must still have (compare-and-set).
    pub from: RevisionStatus,
    pub to: RevisionStatus,
    pub review_note: Option<String>,
    pub audit: AuditDraft,
}

/// One page of a listing in keyset order: the rows strictly after `after` (the sort key of
/// the previous page's last row; `None` for the first page), at most `limit` of them. A
/// caller that asks one more than it shows learns whether another page follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysetPage<K> {
    pub after: Option<K>,
    pub limit: u32,
}

/// Sort key of listings ordered by creation: `(created_at, id)`, the id breaking ties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreationKey {
    pub created_at: String,
    pub id: String,
}

/// Sort key of the skill list: `(slug, workspace_id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlugKey {
    pub slug: String,
    pub workspace_id: String,
}

/// Sort key of an account's workspaces: personal first, then teams by handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceKey {
    pub kind: xmemo_core::WorkspaceKind,
    pub handle: String,
    pub workspace_id: String,
}

/// Where a page of served skills starts: after this `(workspace_id, slug)`. The skill list
/// pages by the same key in `(slug, workspace_id)` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillKey {
    pub workspace_id: String,
    pub slug: String,
}

/// A page of served skills (active, with a published revision), ordered by
/// `(workspace_id, slug)`.
#[derive(Debug, Clone)]
pub struct ServedPage {
    pub workspace_ids: Vec<String>,
    pub after: Option<SkillKey>,
    pub limit: u32,
}

/// A served skill with its published revision (components included).
#[derive(Debug, Clone)]
pub struct ServedSkill {
    pub skill: Skill,
    pub revision: Revision,
}

#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub text: String,
    pub workspace_ids: Vec<String>,
    pub limit: u32,
    /// The query's meaning, when the semantic lane is on.
    pub semantic: Option<Semantic>,
    /// Also list skills whose published revision the safety scanner called malicious
    /// (hidden by default).
    pub include_malicious: bool,
}

/// The semantic half of a query: its vector in an embedding model's space, and how the two
/// lanes are fused.
#[derive(Debug, Clone, PartialEq)]
pub struct Semantic {
    /// The vectors' space ([`EmbeddingJob`]s were embedded in it).
    pub model: String,
    /// Unit length.
    pub vector: Vec<f32>,
    /// Weight of the lexical lane in the fused score (0 to 1; the semantic lane has the
    /// rest), each lane on its public 0 to 1 scale (`crate::search::vectors::fuse`).
    pub text_weight: f64,
    /// How the lanes' candidates are ranked together.
    pub method: FusionMethod,
}

/// How the two lanes' candidates are ranked together (docs/decisions.md, "Scores"); the
/// public score is the weighted one either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FusionMethod {
    /// By the weighted sum of the lanes' public scores.
    #[default]
    Weighted,
    /// By reciprocal rank fusion: `Σ weight / (60 + rank)` over the lanes, rank from 1.
    Rrf,
}

impl FusionMethod {
    pub fn parse(name: &str) -> Option<FusionMethod> {
        match name {
            "weighted" => Some(FusionMethod::Weighted),
            "rrf" => Some(FusionMethod::Rrf),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FusionMethod::Weighted => "weighted",
            FusionMethod::Rrf => "rrf",
        }
    }
}

/// Which lanes found a result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lanes {
    /// Full-text (BM25) matched it.
    pub text: bool,
    /// Its meaning was among the nearest to the query's.
    pub meaning: bool,
}

impl Lanes {
    pub fn names(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.text {
            out.push("text");
        }
        if self.meaning {
            out.push("meaning");
        }
        out
    }
}

/// Which rows a vector belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EmbeddingKind {
    Skill,
    Memory,
}

/// A row to embed: its text as the semantic lane sees it, and the log position of that text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingJob {
    pub kind: EmbeddingKind,
    pub key: String,
    pub workspace_id: String,
    pub text: String,
    pub seq: i64,
    /// The SHA-256 of the text its stored vector was made from, if it has one.
    pub stored_hash: Option<String>,
}

/// What a worker's claim gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmbeddingWork {
    pub jobs: Vec<EmbeddingJob>,
    /// Rows that changed and are gone (deleted, unpublished, archived): their vectors go.
    pub removed: Vec<(EmbeddingKind, String)>,
    /// The position the work starts from, and the one to record once it is saved (equal:
    /// nothing to do).
    pub from: EmbeddingProgress,
    pub next: EmbeddingProgress,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmbeddingProgress {
    pub done_seq: i64,
    pub backfill_until: i64,
    /// Where the backfill of the rows older than the lane is: `None` when done.
    pub backfill: Option<(EmbeddingKind, String)>,
}

/// A vector computed for a job, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedRow {
    pub job: EmbeddingJob,
    pub text_hash: String,
    /// `None`: the text is the one the stored vector was made from; only its position moves.
    pub vector: Option<Vec<f32>>,
}

/// Who kept this node's search indexes current, in rows applied from the full-text log
/// (`search/follow.rs`): writers apply their own writes, the follower other nodes', and a
/// query only what neither had applied yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchStats {
    /// The indexes are built (a query would not wait for the build).
    pub ready: bool,
    /// Builds from the tables: the first, then one per prune past this node.
    pub builds: u64,
    /// Rows in the indexes (skills' Level 0 rows and memories).
    pub rows: u64,
    pub applied_by_writers: u64,
    pub applied_by_follower: u64,
    pub applied_by_queries: u64,
}

/// What one prune of the full-text log did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogPrune {
    /// Every entry numbered up to this is gone (0: nothing was ever pruned).
    pub pruned_through: i64,
    /// Entries deleted by this prune.
    pub deleted: u64,
    /// Entries left.
    pub kept: u64,
}

/// How far behind the semantic lane of a model is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingLag {
    /// Log entries not embedded yet.
    pub pending: i64,
    /// The rows older than the lane are still being embedded.
    pub backfilling: bool,
    pub vectors: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Descriptor {
    pub skill_id: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub workspace_id: String,
    /// 0 to 1, comparable across queries (docs/decisions.md, "Scores"); 1 for an exact slug
    /// or name match.
    pub score: f64,
    /// The lanes that found it (an exact slug or name match is `text`).
    pub matched: Lanes,
    /// An exact slug or name match, or a row holding every word of the query: kept whatever
    /// the `min_score`.
    #[serde(default)]
    pub every_word: bool,
    /// The published revision's safety verdict (`None`: not scanned yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_verdict: Option<String>,
}

/// An audit entry before the store numbers and chains it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AuditDraft {
    pub action: String,
    pub actor: Attribution,
    pub workspace_id: Option<String>,
    pub skill_id: Option<String>,
    pub revision_id: Option<String>,
    pub details: Value,
}

impl AuditDraft {
    pub fn new(action: &str, actor: &Attribution) -> Self {
        Self {
            action: action.to_string(),
            actor: actor.clone(),
            details: Value::Object(Map::new()),
            ..Default::default()
        }
    }
    pub fn workspace(mut self, id: &str) -> Self {
        self.workspace_id = Some(id.to_string());
        self
    }
    pub fn skill(mut self, id: &str) -> Self {
        self.skill_id = Some(id.to_string());
        self
    }
    pub fn revision(mut self, id: &str) -> Self {
        self.revision_id = Some(id.to_string());
        self
    }
    pub fn details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub seq: i64,
    pub at: String,
    pub action: String,
    pub actor: Attribution,
    pub workspace_id: Option<String>,
    pub skill_id: Option<String>,
    pub revision_id: Option<String>,
    pub details: Value,
    pub prev_hash: String,
    pub entry_hash: String,
}

#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub workspace_ids: Option<Vec<String>>,
    pub skill_id: Option<String>,
    pub limit: u32,
}

/// The hash that chains an audit entry to the previous one: SHA-256 over the previous hash and
/// the entry's own fields, so editing or deleting any entry breaks every later link.
pub fn audit_entry_hash(prev_hash: &str, seq: i64, at: &str, draft: &AuditDraft) -> String {
    let body = serde_json::json!({
        "prev_hash": prev_hash,
        "seq": seq,
        "at": at,
        "action": draft.action,
        "actor": draft.actor,
        "workspace_id": draft.workspace_id,
        "skill_id": draft.skill_id,
        "revision_id": draft.revision_id,
        "details": draft.details,
    });
    xmemo_core::content_hash(xmemo_core::hash::jcs(&body).as_bytes())
}

/// Checks an ordered run of audit entries; returns the seq of the first broken link.
pub fn verify_audit_chain(entries: &[AuditEntry]) -> Result<(), i64> {
    let mut prev = entries
        .first()
        .map(|e| e.prev_hash.clone())
        .unwrap_or_default();
    for e in entries {
        let draft = AuditDraft {
            action: e.action.clone(),
            actor: e.actor.clone(),
            workspace_id: e.workspace_id.clone(),
            skill_id: e.skill_id.clone(),
            revision_id: e.revision_id.clone(),
            details: e.details.clone(),
        };
        if e.prev_hash != prev || audit_entry_hash(&prev, e.seq, &e.at, &draft) != e.entry_hash {
            return Err(e.seq);
        }
        prev = e.entry_hash.clone();
    }
    Ok(())
}

/// Component type and hash as the canonical hash sees them.
pub fn hashed_components(
    components: &[ComponentManifest],
) -> Vec<xmemo_core::hash::HashedComponent<'_>> {
    components
        .iter()
        .map(|c| xmemo_core::hash::HashedComponent {
            logical_path: &c.logical_path,
            component_type: c.component_type,
            content_hash: &c.content_hash,
        })
        .collect()
}

pub fn parse_component_type(s: &str) -> Result<ComponentType, crate::StoreError> {
    s.parse().map_err(crate::StoreError::Internal)
}

// ---- memories (SPEC §9) ----

/// A memory at its current version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub memory_id: String,
    pub workspace_id: String,
    pub kind: xmemo_core::MemoryKind,
    pub title: Option<String>,
    pub content: String,
    pub tags: Vec<String>,
    pub project: Option<String>,
    pub expires_at: Option<String>,
    pub status: xmemo_core::MemoryStatus,
    pub forgotten_reason: Option<String>,
    pub forgotten_at: Option<String>,
    /// 1 when remembered; +1 on every update of its content, title, tags or kind.
    pub version: i64,
    /// Who remembered it.
    pub attribution: Attribution,
    /// That account's handle (`None` once the account is deleted).
    pub account_handle: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// One version of a memory's content, as it was written (the history readable by id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryVersion {
    pub memory_id: String,
    pub version: i64,
    pub kind: xmemo_core::MemoryKind,
    pub title: Option<String>,
    pub content: String,
    pub tags: Vec<String>,
    /// Who wrote this version.
    pub attribution: Attribution,
    pub created_at: String,
}

/// A memory to create; `memory_id` is chosen by the caller.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub memory_id: String,
    pub workspace_id: String,
    pub content: xmemo_core::memory::MemoryContent,
    pub content_hash: String,
    pub expires_at: Option<String>,
    pub attribution: Attribution,
    /// The quota of the account in `attribution`, charged when a memory is created.
    pub quota: Option<Quota>,
}

#[derive(Debug, Clone)]
pub struct RememberOutcome {
    pub memory: Memory,
    /// False when an identical active memory (same workspace, project, kind and content)
    /// already existed: it is returned and nothing is written.
    pub created: bool,
}

/// The next version of a memory, if it is still at `expected_version` and active.
#[derive(Debug, Clone)]
pub struct MemoryUpdate {
    pub memory_id: String,
    pub expected_version: i64,
    pub content: xmemo_core::memory::MemoryContent,
    pub content_hash: String,
    pub attribution: Attribution,
    pub audit: AuditDraft,
    /// The quota of the account in `attribution`, charged for the new version's bytes.
    pub quota: Option<Quota>,
}

/// Forget (active → forgotten, with a reason) or restore (forgotten → active).
#[derive(Debug, Clone)]
pub struct MemoryStatusChange {
    pub memory_id: String,
    pub from: xmemo_core::MemoryStatus,
    pub to: xmemo_core::MemoryStatus,
    pub reason: Option<String>,
    pub audit: AuditDraft,
}

/// A recall: full text (optional) and filters, in the given workspaces.
#[derive(Debug, Clone, Default)]
pub struct MemoryQuery {
    pub workspace_ids: Vec<String>,
    pub text: Option<String>,
    pub kind: Option<xmemo_core::MemoryKind>,
    /// Memories carrying every one of these tags.
    pub tags: Vec<String>,
    pub project: Option<String>,
    pub agent_instance_id: Option<String>,
    /// Bounds on `updated_at` (inclusive), RFC 3339 in the store's format.
    pub since: Option<String>,
    pub until: Option<String>,
    pub include_forgotten: bool,
    /// Memories whose `expires_at` is at or before this instant are left out.
    pub now: String,
    pub limit: u32,
    /// The query's meaning, when the semantic lane is on (with `text`).
    pub semantic: Option<Semantic>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    pub memory: Memory,
    /// 0 to 1, comparable across queries (docs/decisions.md, "Scores"): the text lane's
    /// calibrated BM25, or the fused score with the semantic lane; 0 for a recall without
    /// text.
    pub score: f64,
    pub matched: Lanes,
    /// The memory holds every word of the query: kept whatever the `min_score`.
    pub every_word: bool,
}

/// What deleting an account removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountDeletion {
    pub skills: u64,
    pub memories: u64,
    pub keys: u64,
    pub memberships: u64,
    /// Component blobs no longer referenced by any revision.
    pub blobs: u64,
}
