//! Request and result shapes shared by every transport (REST, MCP, CLI over REST).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use xmemo_core::{AssetStatus, ComponentManifest, ComponentType, RevisionStatus, SaveIntent};
use xmemo_store::{Attribution, Revision};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ContentEncoding {
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "base64")]
    Base64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRequest {
    pub logical_path: String,
    #[serde(rename = "type")]
    pub component_type: ComponentType,
    pub content: String,
    #[serde(default)]
    pub encoding: ContentEncoding,
}

/// `save_cloud_skill` arguments (SPEC §4).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveRequest {
    pub slug: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub instruction_body: String,
    #[serde(default)]
    pub components: Vec<ComponentRequest>,
    pub metadata: Option<Map<String, Value>>,
    pub intent: Option<SaveIntent>,
    pub workspace: Option<String>,
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
}

/// `recall_cloud_skill` arguments (SPEC §3); the level follows from which are present.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    pub query: Option<String>,
    pub limit: Option<i64>,
    pub workspace: Option<String>,
    pub slug: Option<String>,
    pub revision_id: Option<String>,
    pub resource: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkillDescriptor {
    pub skill_id: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub workspace: String,
    pub score: f64,
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

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LifecycleRequest {
    pub note: Option<String>,
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
