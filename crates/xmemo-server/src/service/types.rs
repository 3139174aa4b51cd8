//! Request and result shapes shared by every transport (REST, MCP, CLI over REST).

use super::schema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use xmemo_core::limits::{
    COMPONENT_CONTENT_MAX_CHARS, COMPONENT_MAX_BYTES, DESCRIPTION_MAX_CHARS,
    EXECUTE_TIMEOUT_DEFAULT_SECONDS, EXECUTE_TIMEOUT_MAX_SECONDS, EXECUTE_TIMEOUT_MIN_SECONDS,
    INSTRUCTION_BODY_MAX_BYTES, LOGICAL_PATH_MAX_BYTES, MAX_COMPONENTS, NAME_MAX_CHARS,
    QUERY_MAX_CHARS, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, SEARCH_LIMIT_MIN,
};
use xmemo_core::{AssetStatus, ComponentManifest, ComponentType, RevisionStatus, SaveIntent};
use xmemo_store::{Attribution, Revision};

/// How a component's `content` is encoded (default utf-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum ContentEncoding {
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "base64")]
    Base64,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentRequest {
    /// Relative POSIX path, e.g. "scripts/check.py" or "references/api.md".
    #[schemars(length(min = 1, max = LOGICAL_PATH_MAX_BYTES))]
    pub logical_path: String,
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::component_type")]
    pub component_type: ComponentType,
    #[schemars(
        length(max = COMPONENT_CONTENT_MAX_CHARS),
        description = format!("File content (at most {COMPONENT_MAX_BYTES} bytes once decoded).")
    )]
    pub content: String,
    /// How `content` is encoded (default utf-8).
    #[serde(default)]
    pub encoding: ContentEncoding,
}

/// `save_cloud_skill` arguments (SPEC §4).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveRequest {
    /// Stable identifier: lowercase words joined by hyphens, e.g. "release-checklist".
    #[schemars(schema_with = "schema::slug")]
    pub slug: String,
    /// Display name. Required on the first save of a slug.
    #[schemars(length(min = 1, max = NAME_MAX_CHARS))]
    pub name: Option<String>,
    /// One or two sentences saying what the skill does and when to use it (this is what Level 0
    /// search shows). Required on the first save of a slug.
    #[schemars(length(min = 1, max = DESCRIPTION_MAX_CHARS))]
    pub description: Option<String>,
    #[schemars(
        length(min = 1, max = INSTRUCTION_BODY_MAX_BYTES),
        description = format!("The procedure itself, in Markdown: the steps an agent should follow (at most {INSTRUCTION_BODY_MAX_BYTES} bytes of UTF-8).")
    )]
    pub instruction_body: String,
    /// Supporting files of this revision (replaces the previous revision's set).
    #[serde(default)]
    #[schemars(length(max = MAX_COMPONENTS))]
    pub components: Vec<ComponentRequest>,
    /// Extra SKILL.md frontmatter fields (license, compatibility, allowed-tools, metadata…).
    #[serde(default)]
    #[schemars(schema_with = "schema::object")]
    pub metadata: Option<Map<String, Value>>,
    /// "draft" (default) or "publish".
    #[serde(default)]
    #[schemars(schema_with = "schema::save_intent")]
    pub intent: Option<SaveIntent>,
    /// Where to save: "personal" (default) or a team handle.
    #[schemars(length(min = 1))]
    pub workspace: Option<String>,
    /// Optimistic concurrency: the latest revision_id you know of; a stale value is refused
    /// with CONFLICT.
    pub expected_revision_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved {
    pub skill_id: String,
    pub slug: String,
    pub workspace: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub status: RevisionStatus,
    pub canonical_hash: String,
    pub created: bool,
    /// The safety scanner's report of the revision (docs/safety.md).
    pub safety: xmemo_safety::Report,
}

/// `recall_cloud_skill` arguments (SPEC §3); the level follows from which are present.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    /// Level 0: words describing the task, e.g. "deploy the billing service". Do not combine
    /// with `slug`.
    #[schemars(length(min = 1, max = QUERY_MAX_CHARS))]
    pub query: Option<String>,
    #[schemars(
        range(min = SEARCH_LIMIT_MIN, max = SEARCH_LIMIT_MAX),
        extend("default" = SEARCH_LIMIT_DEFAULT),
        description = format!("Level 0: how many descriptors to return (default {SEARCH_LIMIT_DEFAULT}).")
    )]
    pub limit: Option<i64>,
    /// Optional: limit to one workspace ("personal", a team handle or a workspace id). Needed
    /// when a slug is ambiguous.
    #[schemars(length(min = 1))]
    pub workspace: Option<String>,
    /// Levels 1 and 2: the skill's slug as returned by Level 0, e.g. "deploy-procedure".
    #[serde(default)]
    #[schemars(schema_with = "schema::slug")]
    pub slug: Option<String>,
    /// Level 1: load this exact revision instead of the published/latest one. Level 2:
    /// required, the revision_id returned by Level 1.
    pub revision_id: Option<String>,
    /// Level 2: the logical_path of one resource listed by Level 1, e.g. "scripts/check.py".
    #[schemars(length(min = 1, max = LOGICAL_PATH_MAX_BYTES))]
    pub resource: Option<String>,
    /// Level 0: leave out skills scoring less than this (scores run from 0 to 1 and mean the
    /// same for every query; an exact slug or name match is 1), except skills holding every
    /// word of the query; so a search may find nothing.
    #[schemars(range(min = xmemo_core::limits::SCORE_MIN, max = xmemo_core::limits::SCORE_MAX))]
    pub min_score: Option<f64>,
    /// Level 0: also list skills the safety scanner called malicious (left out by default;
    /// their descriptors then say `safety: "malicious"`).
    pub include_malicious: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkillDescriptor {
    pub skill_id: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub workspace: String,
    pub score: f64,
    /// Which lanes found it: `text` (full text, or an exact slug or name), `meaning` (the
    /// semantic lane).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
    /// The safety scanner's verdict when it is not `clean` (`suspicious`, or `malicious` when
    /// asked for with `include_malicious`): read the Level 1 `safety` before following it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Descriptors {
    pub skills: Vec<SkillDescriptor>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Root {
    pub skill_id: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub workspace: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub status: RevisionStatus,
    pub canonical_hash: String,
    pub instruction_body: String,
    pub metadata: Map<String, Value>,
    pub resources: Vec<ComponentManifest>,
    /// What the safety scanner found in this revision: verdict, risk, rules version, how many
    /// findings and which rules (docs/safety.md). Read it before following the instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<super::safety::SafetySummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resource {
    pub revision_id: String,
    pub logical_path: String,
    #[serde(rename = "type")]
    pub component_type: ComponentType,
    pub content_hash: String,
    pub size: u64,
    pub media_type: String,
    pub encoding: ContentEncoding,
    pub content: String,
}

/// Tool results: `{"kind": …, "data": …}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum ToolResult {
    Descriptors(Descriptors),
    Root(Box<Root>),
    Resource(Resource),
    Saved(Saved),
    Execution(Box<ExecutionResult>),
    Remembered(Box<super::memories::Remembered>),
    Memories(super::memories::Memories),
    Memory(Box<super::memories::MemoryView>),
    MemoryHistory(super::memories::MemoryHistory),
}

/// A revision as listings show it (no body).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RevisionSummary {
    pub revision_id: String,
    pub revision_number: i64,
    pub status: RevisionStatus,
    pub canonical_hash: String,
    pub name: String,
    pub description: String,
    pub review_note: Option<String>,
    pub components: usize,
    pub attribution: Attribution,
    pub created_at: String,
    pub status_changed_at: String,
    /// Where an imported revision came from (see `Revision::source`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

impl From<&Revision> for RevisionSummary {
    fn from(r: &Revision) -> Self {
        Self {
            revision_id: r.revision_id.clone(),
            revision_number: r.revision_number,
            status: r.status,
            canonical_hash: r.canonical_hash.clone(),
            name: r.name.clone(),
            description: r.description.clone(),
            review_note: r.review_note.clone(),
            components: r.components.len(),
            attribution: r.attribution.clone(),
            created_at: r.created_at.clone(),
            status_changed_at: r.status_changed_at.clone(),
            source: r.source.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkillView {
    pub skill_id: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub workspace: String,
    pub asset_status: AssetStatus,
    pub latest_revision_number: i64,
    pub published_revision_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A proposal that waits for the person's approval (the console's review banner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingReview {
    pub workspace: String,
    pub slug: String,
    pub name: String,
    pub revision_id: String,
    pub revision_number: i64,
    /// Handle of the account that proposed it (`None` once that account is deleted).
    pub proposed_by: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LifecycleRequest {
    pub note: Option<String>,
    /// Approve or publish a revision the safety scanner called malicious anyway; needs a
    /// `note` saying why, and is audited (docs/safety.md).
    #[serde(default)]
    pub override_safety: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTeamRequest {
    pub handle: String,
    pub name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutMemberRequest {
    pub role: xmemo_core::Role,
}

/// `POST /workspaces/{ws}/invitations`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InviteRequest {
    /// An account handle or account id.
    pub invitee: String,
    pub role: xmemo_core::Role,
}

/// An invitation as both sides see it. It never shows which account, if any, the invitee
/// named: an invitation to a handle with no account reads exactly like any other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitationView {
    pub invitation_id: String,
    pub workspace_id: String,
    /// The team's handle.
    pub workspace: String,
    pub workspace_name: String,
    /// The handle or account id as the inviter wrote it.
    pub invitee: String,
    pub role: xmemo_core::Role,
    pub status: xmemo_core::InvitationStatus,
    /// The inviter's handle.
    pub invited_by: String,
    pub created_at: String,
    pub responded_at: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    pub name: String,
    /// Defaults to the scopes of the calling credential.
    pub scopes: Option<Vec<String>>,
    /// RFC 3339 instant after which the key stops working.
    pub expires_at: Option<String>,
    /// MCP client profile this key connects as (default `ordinary-full`).
    pub profile: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreatedKey {
    /// The secret, shown this once.
    pub key: String,
    #[serde(flatten)]
    pub info: xmemo_store::ApiKey,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateAccountRequest {
    pub handle: String,
    pub display_name: Option<String>,
    #[serde(default)]
    pub is_admin: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkspaceView {
    pub workspace_id: String,
    pub handle: String,
    pub name: String,
    pub kind: xmemo_core::WorkspaceKind,
    pub role: xmemo_core::Role,
}

/// `execute_cloud_skill` arguments (SPEC §5). `revision_id` is required (a missing one is
/// `REVISION_PIN_REQUIRED`, so a script cannot change under a running workflow).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteRequest {
    /// The skill's slug.
    #[schemars(schema_with = "schema::slug")]
    pub slug: String,
    // Optional here so that a missing pin is REVISION_PIN_REQUIRED, not a shape error; the
    // schema says it is required.
    /// The pinned revision (from recall Level 1).
    #[schemars(required, length(min = 1))]
    pub revision_id: Option<String>,
    /// logical_path of a `script` component of that revision.
    #[schemars(length(min = 1, max = LOGICAL_PATH_MAX_BYTES))]
    pub script_path: String,
    /// JSON object passed to the script on stdin.
    #[serde(default)]
    #[schemars(schema_with = "schema::object")]
    pub input_args: Option<Value>,
    #[schemars(
        range(min = EXECUTE_TIMEOUT_MIN_SECONDS, max = EXECUTE_TIMEOUT_MAX_SECONDS),
        extend("default" = EXECUTE_TIMEOUT_DEFAULT_SECONDS),
        description = format!("Wall-clock limit in seconds (default {EXECUTE_TIMEOUT_DEFAULT_SECONDS}).")
    )]
    pub timeout_seconds: Option<i64>,
    /// Optional workspace ("personal", a team handle or id).
    #[schemars(length(min = 1))]
    pub workspace: Option<String>,
}

/// Final classification of an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    Success,
    RuntimeError,
    Timeout,
    Oom,
    SystemError,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::RuntimeError => "runtime_error",
            Self::Timeout => "timeout",
            Self::Oom => "oom",
            Self::SystemError => "system_error",
        }
    }
}

/// How an execution was isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionIsolation {
    /// bubblewrap namespaces + seccomp.
    Bubblewrap,
    /// A plain local process (`XMEMO_SANDBOX_ALLOW_UNSAFE_LOCAL_FALLBACK=1`).
    UnsafeLocal,
}

impl ExecutionIsolation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bubblewrap => "bubblewrap",
            Self::UnsafeLocal => "unsafe_local",
        }
    }
}

/// `kind: "execution"` data (SPEC §5), plus identity and measurement fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutionResult {
    /// `exec_<uuidv7>`; the same id is in the audit entry and the logs.
    pub execution_id: String,
    pub status: ExecutionStatus,
    /// Exit status of the script; `null` when it was killed (timeout) or never started.
    pub exit_code: Option<i32>,
    /// stdout parsed as JSON when complete and valid, else `null`.
    pub output_data: Option<Value>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub duration_ms: u64,
    /// Every limit with its value and `enforced_by` mechanism.
    pub limits: Value,
    pub isolation: ExecutionIsolation,
    /// Signal that ended the script, when known.
    pub signal: Option<i32>,
    /// Interpreter chosen (`python3`, `bash`, `#!/bin/sh`).
    pub runtime: String,
    /// Measured figures (CPU ms, peak memory, OOM kills, peak tasks) where measurable.
    pub resources: Value,
    /// Bytes written to each stream, kept or not.
    pub stdout_total_bytes: u64,
    pub stderr_total_bytes: u64,
    pub skill_id: String,
    pub slug: String,
    pub workspace: String,
    pub revision_id: String,
    pub revision_number: i64,
    pub revision_status: RevisionStatus,
    pub script_path: String,
}
