//! Memories (SPEC §9): search and filter (kind, project, agent instance, forgotten ones too),
//! forget with a reason, restore.

use super::{Chrome, Fields, PageResult, Params, Posted, Signed, link, render, see_other};
use crate::service::memories::{
    ForgetRequest, MemoryHitView, RecallMemoriesRequest, RestoreMemoryRequest,
};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use xmemo_core::{MemoryKind, MemoryStatus};

#[derive(Debug, Deserialize, Default)]
pub struct MemoryQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    project: String,
    #[serde(default)]
    instance: String,
    #[serde(default)]
    forgotten: String,
    #[serde(default)]
    notice: String,
}

pub struct MemoryRow {
    pub id: String,
    pub title: String,
    pub content: String,
    pub kind: String,
    pub workspace: String,
    pub project: String,
    pub tags: String,
    pub forgotten: bool,
    pub version: i64,
    pub by: String,
    pub updated_at: String,
}

#[derive(Template)]
#[template(path = "console/memories.html")]
struct MemoriesPage {
    chrome: Option<Chrome>,
    token: String,
    q: String,
    kind: String,
    project: String,
    instance: String,
    forgotten: bool,
    kinds: Vec<&'static str>,
    rows: Vec<MemoryRow>,
    error: Option<String>,
    back: String,
}

fn row(m: MemoryHitView) -> MemoryRow {
    let s = &m.saved_by;
    let mut by = s.account.clone().unwrap_or_else(|| s.account_id.clone());
    for (label, v) in [
        ("profile", &s.client_profile),
        ("agent", &s.agent_id),
        ("instance", &s.agent_instance_id),
    ] {
        if let Some(v) = v {
            by.push_str(&format!(" · {label} {v}"));
        }
    }
    MemoryRow {
        id: m.memory_id,
        title: m.title.unwrap_or_default(),
        content: m.content,
        kind: m.kind.to_string(),
        workspace: m.workspace,
        project: m.project.unwrap_or_default(),
        tags: m.tags.join(", "),
        forgotten: m.status == MemoryStatus::Forgotten,
        version: m.version,
        by,
        updated_at: super::when(&m.updated_at),
    }
}

pub async fn page(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    Params(q): Params<MemoryQuery>,
) -> PageResult {
    let opt = |s: &str| {
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_string())
    };
    let kind = opt(&q.kind)
        .map(|k| k.parse::<MemoryKind>())
        .transpose()
        .map_err(|e| ctx.fail("memories")(crate::error::ServiceError::validation(e, "kind")))?;
    let forgotten = q.forgotten == "1";
    let request = RecallMemoriesRequest {
        query: opt(&q.q),
        kind,
        project: opt(&q.project),
        agent_instance_id: opt(&q.instance),
        include_forgotten: Some(forgotten),
        limit: Some(50),
        full: Some(true),
        ..Default::default()
    };
    let (rows, error) = match state.service.recall_memories(&ctx.principal, request).await {
        Ok(found) => (found.memories.into_iter().map(row).collect(), None),
        Err(e) => (vec![], Some(e.public_message())),
    };
    let back = link(
        "/console/memories",
        &[
            ("q", &q.q),
            ("kind", &q.kind),
            ("project", &q.project),
            ("instance", &q.instance),
            ("forgotten", &q.forgotten),
        ],
    );
    Ok(render(
        StatusCode::OK,
        &MemoriesPage {
            chrome: Some(ctx.chrome("memories").with_notice(Some(&q.notice))),
            token: ctx.token.clone(),
            q: q.q,
            kind: q.kind,
            project: q.project,
            instance: q.instance,
            forgotten,
            kinds: MemoryKind::ALL.iter().map(|k| k.as_str()).collect(),
            rows,
            error,
            back,
        },
    ))
}

/// Back to the list the form came from (a local path only), with a notice.
fn back(fields: &Fields, notice: &str) -> String {
    let to = fields.get("back");
    let to = if to.starts_with("/console/memories") {
        to
    } else {
        "/console/memories"
    };
    let sep = if to.contains('?') { '&' } else { '?' };
    format!("{to}{sep}notice={notice}")
}

pub async fn forget(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    let req = ForgetRequest {
        memory_id: f.get("memory_id").to_string(),
        reason: f.opt("reason"),
    };
    state
        .service
        .forget(&ctx.principal, req)
        .await
        .map_err(ctx.fail("memories"))?;
    Ok(see_other(&back(&f, "forgotten")))
}

pub async fn restore(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    let req = RestoreMemoryRequest {
        memory_id: f.get("memory_id").to_string(),
    };
    state
        .service
        .restore_memory(&ctx.principal, req)
        .await
        .map_err(ctx.fail("memories"))?;
    Ok(see_other(&back(&f, "memory-restored")))
}
