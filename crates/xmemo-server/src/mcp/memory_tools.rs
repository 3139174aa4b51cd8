//! The memory tools of SPEC §9 (`remember`, `recall`, `update_memory`, `forget`,
//! `restore_memory`), exposed in every client profile. Each translates its arguments to one
//! service call; descriptions tell an agent when to use which.

use super::tools::{ToolDef, parse_args, slug_schema};
use crate::auth::Principal;
use crate::error::ServiceResult;
use crate::service::Service;
use crate::service::memories::{
    ForgetRequest, RecallMemoriesRequest, RememberRequest, RestoreMemoryRequest,
    UpdateMemoryRequest,
};
use crate::service::types::ToolResult;
use futures::future::BoxFuture;
use rmcp::model::{JsonObject, ToolAnnotations};
use serde_json::{Value, json};
use xmemo_core::MemoryKind;
use xmemo_core::limits::{
    MEMORY_CONTENT_MAX_BYTES, MEMORY_RECALL_LIMIT_DEFAULT, MEMORY_RECALL_LIMIT_MAX,
    MEMORY_RECALL_LIMIT_MIN, MEMORY_TAGS_MAX, MEMORY_TITLE_MAX_CHARS, NOTE_MAX_CHARS,
    QUERY_MAX_CHARS,
};

fn kinds() -> Vec<&'static str> {
    MemoryKind::ALL.iter().map(|k| k.as_str()).collect()
}

fn annotations(title: &str, read_only: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(read_only)
        .destructive(false)
        .idempotent(idempotent)
        .open_world(false)
}

fn memory_id_schema() -> Value {
    json!({"type": "string", "minLength": 1, "description": "The memory_id returned by remember or recall."})
}

fn tags_schema(description: &str) -> Value {
    json!({
        "type": "array", "maxItems": MEMORY_TAGS_MAX,
        "items": slug_schema("A tag: lowercase words joined by hyphens, e.g. \"code-style\"."),
        "description": description
    })
}

// ---- remember ------------------------------------------------------------------------------

pub(super) const REMEMBER: ToolDef = ToolDef {
    name: "remember",
    scope: xmemo_core::Scope::Write,
    title: "Remember",
    description: "Save something worth knowing in later conversations: a user preference \
(\"prefers tabs\"), a project fact (\"staging DB is on port 5433\"), a decision and its reason, \
a TODO, or a progress note at the end of a work session. Every agent the user connects can \
recall it. Keep each memory to one idea; give `project` (e.g. the repository name) when it only \
applies there. Remembering content that is already remembered (same workspace, project and kind) \
returns the existing memory with `created: false`, so retrying is safe. To change a memory use \
update_memory, not a second remember.",
    input_schema: remember_schema,
    annotations: remember_annotations,
    operator_enabled: false,
    run: run_remember,
};

fn remember_annotations() -> ToolAnnotations {
    annotations("Remember", false, true)
}

fn run_remember<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: RememberRequest = parse_args("remember", args)?;
        let remembered = service.remember(principal, req).await?;
        Ok(ToolResult::Remembered(Box::new(remembered)))
    })
}

fn remember_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": kinds(), "description": "preference, fact, decision, todo, progress or note."},
            "content": {
                "type": "string", "minLength": 1, "maxLength": MEMORY_CONTENT_MAX_BYTES,
                "description": format!("What to remember, in plain words (at most {MEMORY_CONTENT_MAX_BYTES} bytes of UTF-8).")
            },
            "title": {"type": "string", "minLength": 1, "maxLength": MEMORY_TITLE_MAX_CHARS, "description": "A short title (optional)."},
            "tags": tags_schema("Tags to find it by (optional)."),
            "project": slug_schema("The project it applies to, e.g. the repository name (optional; omit for workspace-wide memories)."),
            "expires_at": {"type": "string", "format": "date-time", "description": "RFC 3339 instant after which it is no longer recalled (optional)."},
            "workspace": {"type": "string", "minLength": 1, "description": "\"personal\" (default) or a team handle."}
        },
        "required": ["kind", "content"],
        "additionalProperties": false
    })
}

// ---- recall --------------------------------------------------------------------------------

pub(super) const RECALL: ToolDef = ToolDef {
    name: "recall",
    scope: xmemo_core::Scope::Read,
    title: "Recall memories",
    description: "Recall what was remembered: call it at the start of a task or conversation \
(e.g. `query` with the task's words, `project` with the repository) and whenever the user \
refers to something from before. Results are ranked by relevance (most recent first without \
`query`) and compact: ids, kind, title, a short excerpt, tags and who saved them; pass \
`full: true` for whole contents, or `memory_id` to read one memory. Filters: kind, tags (all \
must match), project, agent_instance_id, since/until (RFC 3339, on the last change), \
include_forgotten. Expired memories are not recalled.",
    input_schema: recall_schema,
    annotations: recall_annotations,
    operator_enabled: false,
    run: run_recall,
};

fn recall_annotations() -> ToolAnnotations {
    annotations("Recall memories", true, true)
}

fn run_recall<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: RecallMemoriesRequest = parse_args("recall", args)?;
        service
            .recall_memories(principal, req)
            .await
            .map(ToolResult::Memories)
    })
}

fn recall_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": QUERY_MAX_CHARS, "description": "Words to search titles, contents and tags for."},
            "memory_id": memory_id_schema(),
            "kind": {"type": "string", "enum": kinds()},
            "tags": tags_schema("Only memories carrying every one of these tags."),
            "project": slug_schema("Only memories of this project."),
            "agent_instance_id": {"type": "string", "minLength": 1, "description": "Only memories saved by this agent instance (XMEMO_AGENT_INSTANCE_ID)."},
            "since": {"type": "string", "format": "date-time", "description": "Only memories changed at or after this instant."},
            "until": {"type": "string", "format": "date-time", "description": "Only memories changed at or before this instant."},
            "include_forgotten": {"type": "boolean", "description": "Also recall forgotten memories (default false)."},
            "limit": {
                "type": "integer", "minimum": MEMORY_RECALL_LIMIT_MIN, "maximum": MEMORY_RECALL_LIMIT_MAX,
                "default": MEMORY_RECALL_LIMIT_DEFAULT,
                "description": format!("How many memories at most (default {MEMORY_RECALL_LIMIT_DEFAULT}).")
            },
            "full": {"type": "boolean", "description": "Whole contents instead of excerpts (default false)."},
            "workspace": {"type": "string", "minLength": 1, "description": "Only this workspace (\"personal\" or a team handle); default: every workspace you can read."}
        },
        "additionalProperties": false
    })
}

// ---- update_memory -------------------------------------------------------------------------

pub(super) const UPDATE: ToolDef = ToolDef {
    name: "update_memory",
    scope: xmemo_core::Scope::Write,
    title: "Update a memory",
    description: "Correct or extend a memory (a changed preference, a fact that moved on, a \
TODO now in progress). Pass its `memory_id` and the `version` you read as `expected_version`; \
fields left out keep their value. If someone changed it meanwhile the result is CONFLICT and \
nothing is written: recall it again and retry. The previous content stays in its history.",
    input_schema: update_schema,
    annotations: update_annotations,
    operator_enabled: false,
    run: run_update,
};

fn update_annotations() -> ToolAnnotations {
    annotations("Update a memory", false, false)
}

fn run_update<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: UpdateMemoryRequest = parse_args("update_memory", args)?;
        let updated = service.update_memory(principal, req).await?;
        Ok(ToolResult::Memory(Box::new(updated)))
    })
}

fn update_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "memory_id": memory_id_schema(),
            "expected_version": {"type": "integer", "minimum": 1, "description": "The version the change is based on."},
            "content": {"type": "string", "minLength": 1, "maxLength": MEMORY_CONTENT_MAX_BYTES},
            "title": {"type": "string", "minLength": 1, "maxLength": MEMORY_TITLE_MAX_CHARS},
            "tags": tags_schema("The new set of tags (replaces the old one)."),
            "kind": {"type": "string", "enum": kinds()}
        },
        "required": ["memory_id", "expected_version"],
        "additionalProperties": false
    })
}

// ---- forget / restore_memory ---------------------------------------------------------------

pub(super) const FORGET: ToolDef = ToolDef {
    name: "forget",
    scope: xmemo_core::Scope::Write,
    title: "Forget a memory",
    description: "Forget a memory that is wrong or no longer wanted (e.g. the user says \
\"forget that\"). It leaves recall at once but is kept, with your `reason`, so restore_memory \
can bring it back.",
    input_schema: forget_schema,
    annotations: forget_annotations,
    operator_enabled: false,
    run: run_forget,
};

fn forget_annotations() -> ToolAnnotations {
    annotations("Forget a memory", false, false)
}

fn run_forget<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: ForgetRequest = parse_args("forget", args)?;
        let forgotten = service.forget(principal, req).await?;
        Ok(ToolResult::Memory(Box::new(forgotten)))
    })
}

fn forget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "memory_id": memory_id_schema(),
            "reason": {"type": "string", "maxLength": NOTE_MAX_CHARS, "description": "Why it is forgotten (optional, recorded)."}
        },
        "required": ["memory_id"],
        "additionalProperties": false
    })
}

pub(super) const RESTORE: ToolDef = ToolDef {
    name: "restore_memory",
    scope: xmemo_core::Scope::Write,
    title: "Restore a memory",
    description: "Bring back a forgotten memory (find it with recall and `include_forgotten: \
true`). It is recalled again as before.",
    input_schema: restore_schema,
    annotations: restore_annotations,
    operator_enabled: false,
    run: run_restore,
};

fn restore_annotations() -> ToolAnnotations {
    annotations("Restore a memory", false, false)
}

fn run_restore<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: RestoreMemoryRequest = parse_args("restore_memory", args)?;
        let restored = service.restore_memory(principal, req).await?;
        Ok(ToolResult::Memory(Box::new(restored)))
    })
}

fn restore_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"memory_id": memory_id_schema()},
        "required": ["memory_id"],
        "additionalProperties": false
    })
}
