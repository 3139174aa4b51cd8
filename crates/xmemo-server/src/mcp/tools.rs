//! The tool registry: every MCP tool the server implements, one entry each (name, schema,
//! annotations, and the service call it translates to). Profiles (see [`super::profiles`])
//! decide which entries a connection sees; adding a tool is adding one [`ToolDef`] to
//! [`REGISTRY`] and naming it in the contract.

use super::memory_tools;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::service::Service;
use crate::service::types::{ExecuteRequest, RecallRequest, SaveRequest, ToolResult};
use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::{Arc, LazyLock};
use xmemo_core::limits::{
    COMPONENT_CONTENT_MAX_CHARS, COMPONENT_MAX_BYTES, DESCRIPTION_MAX_CHARS,
    EXECUTE_TIMEOUT_DEFAULT_SECONDS, EXECUTE_TIMEOUT_MAX_SECONDS, EXECUTE_TIMEOUT_MIN_SECONDS,
    INSTRUCTION_BODY_MAX_BYTES, LOGICAL_PATH_MAX_BYTES, MAX_COMPONENTS, NAME_MAX_CHARS,
    QUERY_MAX_CHARS, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX, SEARCH_LIMIT_MIN, SLUG_MAX_CHARS,
};
use xmemo_core::validate::SLUG_PATTERN;

/// Runs a tool for an authenticated caller with the raw `arguments` object.
pub type ToolFn =
    for<'a> fn(&'a Service, &'a Principal, JsonObject) -> BoxFuture<'a, ServiceResult<ToolResult>>;

/// One MCP tool.
pub struct ToolDef {
    pub name: &'static str,
    /// The scope a call needs (the service checks it again; over OAuth, `/mcp` answers a
    /// token without it with an `insufficient_scope` challenge before the call runs).
    pub scope: xmemo_core::Scope,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: fn() -> Value,
    pub annotations: fn() -> ToolAnnotations,
    /// In no profile unless the operator names the profile in `execute_profiles`.
    pub operator_enabled: bool,
    pub run: ToolFn,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef").field("name", &self.name).finish()
    }
}

impl ToolDef {
    /// The `tools/list` entry. Built once per process: rmcp asks for it on every 2026-07-28
    /// tool call it serves (to check `Mcp-Param-*` headers against the schema).
    pub fn tool(&self) -> Tool {
        BUILT
            .iter()
            .find(|t| t.name == self.name)
            .cloned()
            .unwrap_or_else(|| self.build())
    }

    fn build(&self) -> Tool {
        let schema = match (self.input_schema)() {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        Tool::new(self.name, self.description, Arc::new(schema))
            .with_title(self.title)
            .with_annotations((self.annotations)())
    }
}

static BUILT: LazyLock<Vec<Tool>> = LazyLock::new(|| REGISTRY.iter().map(ToolDef::build).collect());

/// Every tool this server implements.
pub static REGISTRY: &[ToolDef] = &[
    RECALL,
    SAVE,
    EXECUTE,
    memory_tools::REMEMBER,
    memory_tools::RECALL,
    memory_tools::UPDATE,
    memory_tools::FORGET,
    memory_tools::RESTORE,
];

pub fn find(name: &str) -> Option<&'static ToolDef> {
    REGISTRY.iter().find(|t| t.name == name)
}

/// Runs `tool` for `principal`: the one place both the rmcp handler and the direct path
/// (see `super::direct`) call a tool, so the two cannot answer differently.
pub async fn call(
    service: &Service,
    principal: &Principal,
    tool: &ToolDef,
    args: JsonObject,
) -> CallToolResult {
    to_call_result((tool.run)(service, principal, args).await)
}

/// A service result as an MCP tool result: the `{"kind","data"}` object as `structuredContent`
/// and as a JSON text block; errors as `isError: true` carrying the SPEC error object.
pub fn to_call_result(result: ServiceResult<ToolResult>) -> CallToolResult {
    match result.and_then(|r| {
        serde_json::to_value(r)
            .map_err(|e| ServiceError::Internal(format!("serialise result: {e}")))
    }) {
        Ok(value) => CallToolResult::structured(value),
        Err(e) => {
            if let ServiceError::Internal(detail) = &e {
                tracing::error!(error = %detail, "MCP tool call failed");
            }
            CallToolResult::structured_error(e.to_body())
        }
    }
}

/// Arguments → a request type; shape errors become VALIDATION_ERROR naming what is wrong.
pub(super) fn parse_args<T: DeserializeOwned>(tool: &str, args: JsonObject) -> ServiceResult<T> {
    serde_json::from_value(Value::Object(args)).map_err(|e| {
        ServiceError::Validation(
            format!("invalid arguments for {tool}: {e}"),
            Some(json!({ "tool": tool })),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// recall_cloud_skill

const RECALL: ToolDef = ToolDef {
    name: "recall_cloud_skill",
    scope: xmemo_core::Scope::Read,
    title: "Recall a Cloud Skill",
    description: "Recall the user's Cloud Skills: saved procedures (SOPs, runbooks, checklists, \
reusable prompts) shared by every agent the user connects. Use it progressively, one level at a \
time, and only go deeper when the task needs it.\n\
Level 0, discover: pass `query` (optionally `limit`, `workspace`) to get short descriptors \
(slug, name, description) of matching published skills, best first. No instructions are \
returned. Start here whenever a task might already have a saved procedure.\n\
Level 1, load: pass `slug` (from Level 0) to get that skill's full instructions \
(`instruction_body`), metadata, the list of its resource files and the `revision_id` of the \
exact version returned (the published one, else the latest; pass `revision_id` to load a \
specific version). Follow the instructions.\n\
Level 2, read one file: pass `slug`, the `revision_id` returned by Level 1 and `resource` (a \
`logical_path` from Level 1's `resources`) to read that file of that exact revision. The \
revision pin is required so a workflow never mixes files of different versions.\n\
If a slug exists in several of your workspaces the result is AMBIGUOUS_SLUG listing the \
candidates: call again with `workspace`.",
    input_schema: recall_schema,
    annotations: recall_annotations,
    operator_enabled: false,
    run: run_recall,
};

fn run_recall<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: RecallRequest = parse_args("recall_cloud_skill", args)?;
        service.recall(principal, req).await
    })
}

fn recall_annotations() -> ToolAnnotations {
    ToolAnnotations::with_title("Recall a Cloud Skill")
        .read_only(true)
        .idempotent(true)
        .destructive(false)
        .open_world(false)
}

/// A slug argument: the rule and bound of `validate_slug`.
pub(super) fn slug_schema(description: &str) -> Value {
    json!({
        "type": "string",
        "pattern": SLUG_PATTERN, "minLength": 1, "maxLength": SLUG_MAX_CHARS,
        "description": description
    })
}

/// A logical path argument (`validate_logical_path`'s bound, in bytes, is an upper bound
/// on its characters).
fn logical_path_schema(description: &str) -> Value {
    json!({
        "type": "string", "minLength": 1, "maxLength": LOGICAL_PATH_MAX_BYTES,
        "description": description
    })
}

fn recall_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string", "minLength": 1, "maxLength": QUERY_MAX_CHARS,
                "description": "Level 0: words describing the task, e.g. \"deploy the billing service\". Do not combine with `slug`."
            },
            "limit": {
                "type": "integer", "minimum": SEARCH_LIMIT_MIN, "maximum": SEARCH_LIMIT_MAX,
                "default": SEARCH_LIMIT_DEFAULT,
                "description": format!("Level 0: how many descriptors to return (default {SEARCH_LIMIT_DEFAULT}).")
            },
            "slug": slug_schema("Levels 1 and 2: the skill's slug as returned by Level 0, e.g. \"deploy-procedure\"."),
            "revision_id": {
                "type": "string",
                "description": "Level 1: load this exact revision instead of the published/latest one. Level 2: required, the revision_id returned by Level 1."
            },
            "resource": logical_path_schema("Level 2: the logical_path of one resource listed by Level 1, e.g. \"scripts/check.py\"."),
            "workspace": {
                "type": "string", "minLength": 1,
                "description": "Optional: limit to one workspace (\"personal\", a team handle or a workspace id). Needed when a slug is ambiguous."
            }
        },
        "additionalProperties": false
    })
}

// ---------------------------------------------------------------------------------------------
// save_cloud_skill

const SAVE: ToolDef = ToolDef {
    name: "save_cloud_skill",
    scope: xmemo_core::Scope::Write,
    title: "Save a Cloud Skill",
    description: "Save procedural memory as a Cloud Skill so that every agent the user connects \
can recall it later. Use it when the user asks you to remember how to do something, or when you \
have worked out a reusable procedure worth keeping (check first with recall_cloud_skill Level 0 \
that it does not already exist; if it does, save a new revision of that slug).\n\
The first save of a `slug` creates the skill and needs `name` and `description`; later saves \
of the same slug append the next revision (an omitted name or description is kept). Saving \
content identical to the latest revision creates nothing and returns it (`created: false`).\n\
`intent`: \"draft\" (default) saves without publishing; \"publish\" publishes at once in a \
personal workspace, or proposes the revision for approval in a team workspace.\n\
Pass `expected_revision_id` (the revision your edit is based on, from recall Level 1) to avoid \
overwriting a newer revision: if it is stale the result is CONFLICT and nothing is written.\n\
Attach supporting files as `components`; binary content goes base64-encoded with \
`encoding: \"base64\"`.",
    input_schema: save_schema,
    annotations: save_annotations,
    operator_enabled: false,
    run: run_save,
};

fn run_save<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: SaveRequest = parse_args("save_cloud_skill", args)?;
        service.save(principal, req).await.map(ToolResult::Saved)
    })
}

fn save_annotations() -> ToolAnnotations {
    // Append-only (never overwrites), and saving identical content creates nothing.
    ToolAnnotations::with_title("Save a Cloud Skill")
        .read_only(false)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

fn save_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "slug": slug_schema("Stable identifier: lowercase words joined by hyphens, e.g. \"release-checklist\"."),
            "name": {
                "type": "string", "minLength": 1, "maxLength": NAME_MAX_CHARS,
                "description": "Display name. Required on the first save of a slug."
            },
            "description": {
                "type": "string", "minLength": 1, "maxLength": DESCRIPTION_MAX_CHARS,
                "description": "One or two sentences saying what the skill does and when to use it (this is what Level 0 search shows). Required on the first save of a slug."
            },
            "instruction_body": {
                "type": "string", "minLength": 1, "maxLength": INSTRUCTION_BODY_MAX_BYTES,
                "description": format!("The procedure itself, in Markdown: the steps an agent should follow (at most {INSTRUCTION_BODY_MAX_BYTES} bytes of UTF-8).")
            },
            "components": {
                "type": "array", "maxItems": MAX_COMPONENTS,
                "description": "Supporting files of this revision (replaces the previous revision's set).",
                "items": {
                    "type": "object",
                    "properties": {
                        "logical_path": logical_path_schema("Relative POSIX path, e.g. \"scripts/check.py\" or \"references/api.md\"."),
                        "type": {
                            "type": "string",
                            "enum": ["reference", "example", "template", "document", "artifact", "script"]
                        },
                        "content": {
                            "type": "string", "maxLength": COMPONENT_CONTENT_MAX_CHARS,
                            "description": format!("File content (at most {COMPONENT_MAX_BYTES} bytes once decoded).")
                        },
                        "encoding": {
                            "type": "string", "enum": ["utf-8", "base64"],
                            "description": "How `content` is encoded (default utf-8)."
                        }
                    },
                    "required": ["logical_path", "type", "content"],
                    "additionalProperties": false
                }
            },
            "metadata": {
                "type": "object",
                "description": "Extra SKILL.md frontmatter fields (license, compatibility, allowed-tools, metadata…)."
            },
            "intent": {
                "type": "string", "enum": ["draft", "publish"],
                "description": "\"draft\" (default) or \"publish\"."
            },
            "workspace": {
                "type": "string", "minLength": 1,
                "description": "Where to save: \"personal\" (default) or a team handle."
            },
            "expected_revision_id": {
                "type": "string",
                "description": "Optimistic concurrency: the latest revision_id you know of; a stale value is refused with CONFLICT."
            }
        },
        "required": ["slug", "instruction_body"],
        "additionalProperties": false
    })
}

// ---------------------------------------------------------------------------------------------
// execute_cloud_skill (in no profile unless the operator enables it)

const EXECUTE: ToolDef = ToolDef {
    name: "execute_cloud_skill",
    scope: xmemo_core::Scope::Write,
    title: "Run a Cloud Skill script",
    description: "Run one `script` component of a pinned revision of a Cloud Skill in the server's \
sandbox (no network, read-only files, time and memory limits) and return its exit code, stdout \
(parsed as JSON into `output_data` when it is JSON) and stderr. Pass the `revision_id` from \
recall_cloud_skill Level 1 and the script's `logical_path` as `script_path`; `input_args` \
arrive as JSON on the script's stdin.",
    input_schema: execute_schema,
    annotations: execute_annotations,
    operator_enabled: true,
    run: run_execute,
};

fn run_execute<'a>(
    service: &'a Service,
    principal: &'a Principal,
    args: JsonObject,
) -> BoxFuture<'a, ServiceResult<ToolResult>> {
    Box::pin(async move {
        let req: ExecuteRequest = parse_args("execute_cloud_skill", args)?;
        service
            .execute(principal, req)
            .await
            .map(|r| ToolResult::Execution(Box::new(r)))
    })
}

fn execute_annotations() -> ToolAnnotations {
    ToolAnnotations::with_title("Run a Cloud Skill script")
        .read_only(false)
        .destructive(false)
        .idempotent(false)
        .open_world(false)
}

fn execute_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "slug": slug_schema("The skill's slug."),
            "revision_id": { "type": "string", "minLength": 1, "description": "The pinned revision (from recall Level 1)." },
            "script_path": logical_path_schema("logical_path of a `script` component of that revision."),
            "input_args": { "type": "object", "description": "JSON object passed to the script on stdin." },
            "timeout_seconds": {
                "type": "integer",
                "minimum": EXECUTE_TIMEOUT_MIN_SECONDS, "maximum": EXECUTE_TIMEOUT_MAX_SECONDS,
                "default": EXECUTE_TIMEOUT_DEFAULT_SECONDS,
                "description": format!("Wall-clock limit in seconds (default {EXECUTE_TIMEOUT_DEFAULT_SECONDS}).")
            },
            "workspace": { "type": "string", "minLength": 1, "description": "Optional workspace (\"personal\", a team handle or id)." }
        },
        "required": ["slug", "revision_id", "script_path"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_schemas_are_objects() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
        for t in REGISTRY {
            let tool = t.tool();
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
            assert!(tool.description.is_some_and(|d| !d.is_empty()));
        }
    }

    #[test]
    fn recall_is_read_only_and_idempotent() {
        let tool = RECALL.tool();
        let a = tool.annotations.expect("annotations");
        assert_eq!(a.read_only_hint, Some(true));
        assert_eq!(a.idempotent_hint, Some(true));
    }

    #[test]
    fn errors_become_is_error_results_with_the_spec_object() {
        let r = to_call_result(Err(ServiceError::NotFound("skill `x` not found".into())));
        assert_eq!(r.is_error, Some(true));
        let body = r.structured_content.expect("structured");
        assert_eq!(body["error"]["code"], "NOT_FOUND");
        assert_eq!(body["error"]["retryable"], false);
    }
}
