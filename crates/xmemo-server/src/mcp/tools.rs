//! The tool registry: every MCP tool the server implements, one entry each (name, schema,
//! annotations, and the service call it translates to). Profiles (see [`super::profiles`])
//! decide which entries a connection sees; adding a tool is adding one [`ToolDef`] to
//! [`REGISTRY`] and naming it in the contract.

use super::memory_tools;
use crate::auth::Principal;
use crate::error::{ServiceError, ServiceResult};
use crate::service::Service;
use crate::service::schema::input_schema;
use crate::service::types::{ExecuteRequest, RecallRequest, SaveRequest, ToolResult};
use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::{Arc, LazyLock};

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
    /// Derived from the request struct `run` parses the arguments into
    /// ([`input_schema`]), so the schema served is what the parser accepts.
    pub input_schema: fn() -> Value,
    pub hints: Hints,
    /// In no profile unless the operator names the profile in `execute_profiles`.
    pub operator_enabled: bool,
    pub run: ToolFn,
}

/// What a tool does to the user's data, as MCP tool annotations say it. No tool of this server
/// deletes anything (forgetting is soft, saving appends) or reaches outside it.
#[derive(Debug, Clone, Copy)]
pub struct Hints {
    pub read_only: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
}

impl Hints {
    fn annotations(self, title: &str) -> ToolAnnotations {
        ToolAnnotations::with_title(title)
            .read_only(self.read_only)
            .destructive(false)
            .idempotent(self.idempotent)
            .open_world(false)
    }
}

/// A [`ToolFn`] that parses the arguments into `$request` (a shape error is VALIDATION_ERROR
/// naming the tool) and runs `$call` on it.
macro_rules! tool_fn {
    ($tool:literal, $request:ty, |$service:ident, $principal:ident, $req:ident| $call:expr) => {{
        fn run<'a>(
            $service: &'a $crate::service::Service,
            $principal: &'a $crate::auth::Principal,
            args: ::rmcp::model::JsonObject,
        ) -> ::futures::future::BoxFuture<
            'a,
            $crate::error::ServiceResult<$crate::service::types::ToolResult>,
        > {
            Box::pin(async move {
                let $req: $request = $crate::mcp::tools::parse_args($tool, args)?;
                $call
            })
        }
        run
    }};
}
pub(super) use tool_fn;

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
            .with_annotations(self.hints.annotations(self.title))
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
/// (see `super::direct`) call a tool, so the two cannot answer differently. `request_id`
/// (the HTTP request's, see `http::request_log`) goes into a failure's SPEC object.
pub async fn call(
    service: &Service,
    principal: &Principal,
    tool: &ToolDef,
    args: JsonObject,
    request_id: Option<&str>,
) -> CallToolResult {
    to_call_result((tool.run)(service, principal, args).await, request_id)
}

/// A service result as an MCP tool result: the `{"kind","data"}` object as `structuredContent`
/// and as a JSON text block; errors as `isError: true` carrying the SPEC error object.
pub fn to_call_result(
    result: ServiceResult<ToolResult>,
    request_id: Option<&str>,
) -> CallToolResult {
    match result.and_then(|r| {
        serde_json::to_value(r)
            .map_err(|e| ServiceError::Internal(format!("serialise result: {e}")))
    }) {
        Ok(value) => CallToolResult::structured(value),
        Err(e) => {
            if let ServiceError::Internal(detail) = &e {
                tracing::error!(error = %detail, "MCP tool call failed");
            }
            let mut body = e.to_body();
            if let Some(id) = request_id {
                crate::http::request_log::stamp_error_body(&mut body, id);
            }
            CallToolResult::structured_error(body)
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
    input_schema: input_schema::<RecallRequest>,
    hints: Hints {
        read_only: true,
        idempotent: true,
    },
    operator_enabled: false,
    run: tool_fn!(
        "recall_cloud_skill",
        RecallRequest,
        |service, principal, req| service.recall(principal, req).await
    ),
};

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
    input_schema: input_schema::<SaveRequest>,
    // Append-only (never overwrites), and saving identical content creates nothing.
    hints: Hints {
        read_only: false,
        idempotent: true,
    },
    operator_enabled: false,
    run: tool_fn!(
        "save_cloud_skill",
        SaveRequest,
        |service, principal, req| service.save(principal, req).await.map(ToolResult::Saved)
    ),
};

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
    input_schema: input_schema::<ExecuteRequest>,
    hints: Hints {
        read_only: false,
        idempotent: false,
    },
    operator_enabled: true,
    run: tool_fn!(
        "execute_cloud_skill",
        ExecuteRequest,
        |service, principal, req| {
            service
                .execute(principal, req)
                .await
                .map(|r| ToolResult::Execution(Box::new(r)))
        }
    ),
};

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
        let r = to_call_result(
            Err(ServiceError::NotFound("skill `x` not found".into())),
            Some("req_1"),
        );
        assert_eq!(r.is_error, Some(true));
        let body = r.structured_content.expect("structured");
        assert_eq!(body["error"]["code"], "NOT_FOUND");
        assert_eq!(body["error"]["retryable"], false);
        assert_eq!(body["error"]["request_id"], "req_1");
    }
}
