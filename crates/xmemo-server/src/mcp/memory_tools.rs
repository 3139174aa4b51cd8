//! The memory tools of SPEC §9 (`remember`, `recall`, `update_memory`, `forget`,
//! `restore_memory`), exposed in every client profile. Each translates its arguments to one
//! service call; descriptions tell an agent when to use which.

use super::tools::{Hints, ToolDef, tool_fn};
use crate::service::memories::{
    ForgetRequest, RecallMemoriesRequest, RememberRequest, RestoreMemoryRequest,
    UpdateMemoryRequest,
};
use crate::service::schema::input_schema;
use crate::service::types::ToolResult;

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
    input_schema: input_schema::<RememberRequest>,
    hints: Hints {
        read_only: false,
        idempotent: true,
    },
    operator_enabled: false,
    run: tool_fn!("remember", RememberRequest, |service, principal, req| {
        let remembered = service.remember(principal, req).await?;
        Ok(ToolResult::Remembered(Box::new(remembered)))
    }),
};

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
    input_schema: input_schema::<RecallMemoriesRequest>,
    hints: Hints {
        read_only: true,
        idempotent: true,
    },
    operator_enabled: false,
    run: tool_fn!(
        "recall",
        RecallMemoriesRequest,
        |service, principal, req| {
            service
                .recall_memories(principal, req)
                .await
                .map(ToolResult::Memories)
        }
    ),
};

// ---- update_memory -------------------------------------------------------------------------

pub(super) const UPDATE: ToolDef = ToolDef {
    name: "update_memory",
    scope: xmemo_core::Scope::Write,
    title: "Update a memory",
    description: "Correct or extend a memory (a changed preference, a fact that moved on, a \
TODO now in progress). Pass its `memory_id` and the `version` you read as `expected_version`; \
fields left out keep their value. If someone changed it meanwhile the result is CONFLICT and \
nothing is written: recall it again and retry. The previous content stays in its history.",
    input_schema: input_schema::<UpdateMemoryRequest>,
    hints: Hints {
        read_only: false,
        idempotent: false,
    },
    operator_enabled: false,
    run: tool_fn!(
        "update_memory",
        UpdateMemoryRequest,
        |service, principal, req| {
            let updated = service.update_memory(principal, req).await?;
            Ok(ToolResult::Memory(Box::new(updated)))
        }
    ),
};

// ---- forget / restore_memory ---------------------------------------------------------------

pub(super) const FORGET: ToolDef = ToolDef {
    name: "forget",
    scope: xmemo_core::Scope::Write,
    title: "Forget a memory",
    description: "Forget a memory that is wrong or no longer wanted (e.g. the user says \
\"forget that\"). It leaves recall at once but is kept, with your `reason`, so restore_memory \
can bring it back.",
    input_schema: input_schema::<ForgetRequest>,
    hints: Hints {
        read_only: false,
        idempotent: false,
    },
    operator_enabled: false,
    run: tool_fn!("forget", ForgetRequest, |service, principal, req| {
        let forgotten = service.forget(principal, req).await?;
        Ok(ToolResult::Memory(Box::new(forgotten)))
    }),
};

pub(super) const RESTORE: ToolDef = ToolDef {
    name: "restore_memory",
    scope: xmemo_core::Scope::Write,
    title: "Restore a memory",
    description: "Bring back a forgotten memory (find it with recall and `include_forgotten: \
true`). It is recalled again as before.",
    input_schema: input_schema::<RestoreMemoryRequest>,
    hints: Hints {
        read_only: false,
        idempotent: false,
    },
    operator_enabled: false,
    run: tool_fn!(
        "restore_memory",
        RestoreMemoryRequest,
        |service, principal, req| {
            let restored = service.restore_memory(principal, req).await?;
            Ok(ToolResult::Memory(Box::new(restored)))
        }
    ),
};
