//! `#skills`: the list (Level 0 search, status badges, the review banner), a skill's page
//! (rendered root instructions, resource manifest, revision timeline with attribution,
//! the lifecycle buttons the person's role allows), lifecycle and archive forms, and the
//! Source Capsule download.

use super::{
    Chrome, Ctx, PageResult, Params, Signed, SkillAt, SkillForm, link, render, see_other,
    skill_link, workspaces,
};
use crate::error::ServiceError;
use crate::service::PageRequest;
use crate::service::types::{PendingReview, RevisionSummary, WorkspaceView};
use crate::state::AppState;
use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::collections::BTreeMap;
use xmemo_core::{
    AssetStatus, LifecycleAction, RevisionStatus, Role, WorkspaceKind, asset_change_allowed,
    transition,
};

/// Skills per list page.
pub const LIST_PAGE: i64 = 50;
/// Proposals named in the review banner.
pub const BANNER_MAX: u32 = 20;

#[derive(Debug, Deserialize, Default)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    ws: String,
    #[serde(default)]
    cursor: String,
    #[serde(default)]
    notice: String,
}

pub struct SkillRow {
    pub href: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub workspace: String,
    pub badges: Vec<&'static str>,
    pub revision: String,
}

pub struct ReviewRow {
    pub href: String,
    pub label: String,
    pub by: String,
}

#[derive(Template)]
#[template(path = "console/skills.html")]
struct ListPage {
    chrome: Option<Chrome>,
    q: String,
    ws: String,
    workspaces: Vec<WorkspaceView>,
    reviews: Vec<ReviewRow>,
    rows: Vec<SkillRow>,
    searching: bool,
    next: Option<String>,
    error: Option<String>,
}

pub fn skill_href(workspace: &str, slug: &str) -> String {
    skill_link(workspace, slug, "", &[])
}

fn review_rows(reviews: Vec<PendingReview>) -> Vec<ReviewRow> {
    reviews
        .into_iter()
        .map(|r| ReviewRow {
            href: skill_link(&r.workspace, &r.slug, "", &[("rev", &r.revision_id)]),
            label: format!("{} · r{} in {}", r.name, r.revision_number, r.workspace),
            by: r.proposed_by.unwrap_or_else(|| "a deleted account".into()),
        })
        .collect()
}

pub async fn list(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    Params(query): Params<ListQuery>,
) -> Response {
    let p = &ctx.principal;
    let ws = (!query.ws.is_empty()).then_some(query.ws.as_str());
    let reviews = state
        .service
        .pending_reviews(p, BANNER_MAX)
        .await
        .map(review_rows)
        .unwrap_or_default();
    let q = query.q.trim().to_string();
    let mut error = None;
    let mut next = None;
    let rows = if !q.is_empty() {
        match state.service.search(p, &q, 50, ws).await {
            Ok(found) => found
                .skills
                .into_iter()
                .map(|d| SkillRow {
                    href: skill_href(&d.workspace, &d.slug),
                    slug: d.slug,
                    name: d.name,
                    description: d.description,
                    workspace: d.workspace,
                    badges: vec!["published"],
                    revision: String::new(),
                })
                .collect(),
            Err(e) => {
                error = Some(e.public_message());
                vec![]
            }
        }
    } else {
        let page = PageRequest {
            limit: Some(LIST_PAGE),
            cursor: (!query.cursor.is_empty()).then(|| query.cursor.clone()),
        };
        match state.service.list_skills_with_status(p, ws, &page).await {
            Ok(page) => {
                next = page
                    .next_cursor
                    .map(|c| link("/console/skills", &[("ws", &query.ws), ("cursor", &c)]));
                page.items
                    .into_iter()
                    .map(|(s, status)| {
                        let mut badges = vec![];
                        if s.asset_status == AssetStatus::Archived {
                            badges.push("archived");
                        }
                        if let Some(st) = status {
                            badges.push(st.as_str());
                        }
                        if s.published_revision_id.is_some()
                            && status != Some(RevisionStatus::Published)
                        {
                            badges.push("published");
                        }
                        SkillRow {
                            href: skill_href(&s.workspace, &s.slug),
                            revision: format!("r{}", s.latest_revision_number),
                            slug: s.slug,
                            name: s.name,
                            description: s.description,
                            workspace: s.workspace,
                            badges,
                        }
                    })
                    .collect()
            }
            Err(e) => {
                error = Some(e.public_message());
                vec![]
            }
        }
    };
    let page = ListPage {
        chrome: Some(ctx.chrome("skills").with_notice(Some(&query.notice))),
        searching: !q.is_empty(),
        q,
        ws: query.ws,
        workspaces: workspaces(&state, &ctx).await,
        reviews,
        rows,
        next,
        error,
    };
    render(StatusCode::OK, &page)
}

#[derive(Debug, Deserialize, Default)]
pub struct SkillQuery {
    #[serde(default)]
    pub ws: String,
    #[serde(default)]
    pub slug: String,
    #[serde(default)]
    pub rev: String,
    #[serde(default)]
    pub notice: String,
    #[serde(default)]
    pub rcursor: String,
}

impl SkillQuery {
    /// The skill the address names, with the page's query parameters (an unreadable query
    /// string counts as none).
    fn of(at: SkillAt, Params(query): Params<SkillQuery>) -> Self {
        SkillQuery {
            ws: at.ws,
            slug: at.slug,
            ..query
        }
    }
}

pub struct ResourceRow {
    pub short_hash: String,
    pub path: String,
    pub kind: String,
    pub size: u64,
    pub media_type: String,
    pub hash: String,
}

pub struct RevisionRow {
    pub id: String,
    pub number: i64,
    pub status: &'static str,
    pub current: bool,
    pub created_at: String,
    pub account: String,
    pub credential: String,
    pub profile: String,
    pub agent: String,
    pub instance: String,
    pub note: String,
    pub href: String,
    pub diff_href: String,
    pub can_publish: bool,
    pub publish_label: &'static str,
    pub can_approve: bool,
    pub can_reject: bool,
    pub can_deprecate: bool,
}

/// One finding of the safety scanner, as the skill page lists it.
pub struct FindingRow {
    pub rule_id: String,
    pub severity: &'static str,
    pub place: String,
    pub excerpt: String,
    pub remediation: String,
}

/// The safety scanner's report of the revision shown (docs/safety.md).
pub struct SafetyView {
    pub verdict: &'static str,
    pub risk: &'static str,
    pub rules_version: String,
    pub findings: Vec<FindingRow>,
    /// The shown revision is a malicious proposal this person may approve: the page says so
    /// above everything else and offers the audited override.
    pub override_form: bool,
}

impl SafetyView {
    fn of(report: &xmemo_safety::Report, override_form: bool) -> Self {
        SafetyView {
            verdict: report.verdict.as_str(),
            risk: report.risk.as_str(),
            rules_version: report.rules_version.clone(),
            findings: report
                .findings
                .iter()
                .map(|f| FindingRow {
                    rule_id: f.rule_id.clone(),
                    severity: f.severity.as_str(),
                    place: format!("{}:{}", f.file, f.line),
                    excerpt: f.excerpt.clone(),
                    remediation: f.remediation.clone(),
                })
                .collect(),
            override_form: override_form && report.verdict == xmemo_safety::Verdict::Malicious,
        }
    }
}

#[derive(Template)]
#[template(path = "console/skill.html")]
struct SkillPage {
    chrome: Option<Chrome>,
    token: String,
    ws: String,
    slug: String,
    /// Where the lifecycle and archive forms post.
    lifecycle_action: String,
    archive_action: String,
    name: String,
    description: String,
    archived: bool,
    role: String,
    revision_id: String,
    revision_number: i64,
    status: &'static str,
    canonical_hash: String,
    body_html: String,
    metadata: String,
    resources: Vec<ResourceRow>,
    revisions: Vec<RevisionRow>,
    more_revisions: Option<String>,
    can_write: bool,
    can_archive: bool,
    edit_href: String,
    export_href: String,
    diff_href: Option<String>,
    reviews: Vec<ReviewRow>,
    safety: SafetyView,
}

/// The person's role in the workspace of this handle (none: not a member).
pub fn role_in(workspaces: &[WorkspaceView], handle: &str) -> Option<(Role, WorkspaceKind)> {
    workspaces
        .iter()
        .find(|w| w.handle == handle)
        .map(|w| (w.role, w.kind))
}

/// Whether `action` is allowed from `status` for this role: the lifecycle table the service
/// itself applies.
fn allows(
    action: LifecycleAction,
    status: RevisionStatus,
    role: Role,
    kind: WorkspaceKind,
) -> bool {
    transition(action, Some(status), kind, role).is_ok()
}

pub async fn show(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    at: SkillAt,
    query: Params<SkillQuery>,
) -> PageResult {
    let q = SkillQuery::of(at, query);
    let page = skill_page(&state, &ctx, &q)
        .await
        .map_err(ctx.fail("skills"))?;
    Ok(render(StatusCode::OK, &page))
}

async fn skill_page(
    state: &AppState,
    ctx: &Ctx,
    q: &SkillQuery,
) -> Result<SkillPage, crate::error::ServiceError> {
    let p = &ctx.principal;
    let ws = (!q.ws.is_empty()).then_some(q.ws.as_str());
    let skill = state.service.get_skill(p, &q.slug, ws).await?;
    let page = PageRequest {
        limit: Some(100),
        cursor: (!q.rcursor.is_empty()).then(|| q.rcursor.clone()),
    };
    let revisions = state
        .service
        .revisions_page(p, &skill.slug, Some(&skill.workspace), &page)
        .await?;
    // The revision shown: the one asked for, else the published one, else the latest.
    let pin = if !q.rev.is_empty() {
        Some(q.rev.clone())
    } else if skill.asset_status == AssetStatus::Archived {
        skill
            .published_revision_id
            .clone()
            .or_else(|| revisions.items.last().map(|r| r.revision_id.clone()))
    } else {
        None
    };
    let root = state
        .service
        .root(p, &skill.slug, Some(&skill.workspace), pin.as_deref())
        .await?;
    let all = workspaces(state, ctx).await;
    let (role, kind) =
        role_in(&all, &skill.workspace).unwrap_or((Role::Viewer, WorkspaceKind::Team));
    let handles = account_handles(state, ctx, &skill.workspace, kind).await;
    let rows: Vec<RevisionRow> = revisions
        .items
        .iter()
        .rev()
        .map(|r| {
            revision_row(
                r,
                &root.revision_id,
                &skill.workspace,
                &skill.slug,
                role,
                kind,
                &handles,
            )
        })
        .collect();
    let previous = revisions
        .items
        .iter()
        .filter(|r| r.revision_number < root.revision_number)
        .max_by_key(|r| r.revision_number);
    let diff_href = previous.map(|prev| {
        skill_link(
            &skill.workspace,
            &skill.slug,
            "/diff",
            &[("from", &prev.revision_id), ("to", &root.revision_id)],
        )
    });
    let reviews = state
        .service
        .pending_reviews(p, BANNER_MAX)
        .await
        .unwrap_or_default()
        .into_iter()
        // This skill's proposals only: the same slug in another workspace is another skill.
        .filter(|r| r.slug == skill.slug && r.workspace == skill.workspace)
        .collect();
    let reviews = review_rows(reviews);
    let report = state
        .service
        .safety_report(p, &skill.slug, Some(&skill.workspace), &root.revision_id)
        .await?;
    let may_approve_shown = root.status == RevisionStatus::Proposed
        && allows(LifecycleAction::Approve, root.status, role, kind);
    let safety = SafetyView::of(&report, may_approve_shown);
    Ok(SkillPage {
        safety,
        chrome: Some(ctx.chrome("skills").with_notice(Some(&q.notice))),
        token: ctx.token.clone(),
        lifecycle_action: skill_link(&skill.workspace, &skill.slug, "/lifecycle", &[]),
        archive_action: skill_link(&skill.workspace, &skill.slug, "/archive", &[]),
        edit_href: skill_link(&skill.workspace, &skill.slug, "/edit", &[]),
        export_href: skill_link(
            &skill.workspace,
            &skill.slug,
            "/export",
            &[("rev", &root.revision_id)],
        ),
        more_revisions: revisions
            .next_cursor
            .map(|c| skill_link(&skill.workspace, &skill.slug, "", &[("rcursor", &c)])),
        diff_href,
        ws: skill.workspace.clone(),
        slug: skill.slug.clone(),
        name: root.name.clone(),
        description: root.description.clone(),
        archived: skill.asset_status == AssetStatus::Archived,
        role: role.to_string(),
        revision_id: root.revision_id.clone(),
        revision_number: root.revision_number,
        status: root.status.as_str(),
        canonical_hash: root.canonical_hash.clone(),
        body_html: super::markdown::render(&root.instruction_body),
        metadata: if root.metadata.is_empty() {
            String::new()
        } else {
            serde_json::to_string_pretty(&root.metadata).unwrap_or_default()
        },
        resources: root
            .resources
            .iter()
            .map(|c| ResourceRow {
                path: c.logical_path.clone(),
                kind: c.component_type.to_string(),
                size: c.size,
                media_type: c.media_type.clone(),
                short_hash: c.content_hash.chars().take(12).collect(),
                hash: c.content_hash.clone(),
            })
            .collect(),
        revisions: rows,
        can_write: role.can_write(),
        can_archive: asset_change_allowed(role),
        reviews,
    })
}

/// Handles of the accounts that may appear in a workspace's timeline (its members, or the
/// person in a personal workspace), by account id.
async fn account_handles(
    state: &AppState,
    ctx: &Ctx,
    workspace: &str,
    kind: WorkspaceKind,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert(
        ctx.who.account.account_id.clone(),
        ctx.who.account.handle.clone(),
    );
    if kind == WorkspaceKind::Team
        && let Ok(members) = state.service.list_members(&ctx.principal, workspace).await
    {
        for m in members {
            out.insert(m.account_id, m.handle);
        }
    }
    out
}

fn revision_row(
    r: &RevisionSummary,
    current: &str,
    ws: &str,
    slug: &str,
    role: Role,
    kind: WorkspaceKind,
    handles: &BTreeMap<String, String>,
) -> RevisionRow {
    let a = &r.attribution;
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
    RevisionRow {
        id: r.revision_id.clone(),
        number: r.revision_number,
        status: r.status.as_str(),
        current: r.revision_id == current,
        created_at: super::when(&r.created_at),
        account: handles
            .get(&a.account_id)
            .cloned()
            .unwrap_or_else(|| a.account_id.clone()),
        credential: or_dash(&a.credential_id),
        profile: or_dash(&a.client_profile),
        agent: or_dash(&a.agent_id),
        instance: or_dash(&a.agent_instance_id),
        note: r.review_note.clone().unwrap_or_default(),
        href: skill_link(ws, slug, "", &[("rev", &r.revision_id)]),
        diff_href: skill_link(ws, slug, "/diff", &[("to", &r.revision_id)]),
        can_publish: allows(LifecycleAction::Publish, r.status, role, kind),
        publish_label: if kind == WorkspaceKind::Team && !role.is_manager() {
            "Propose"
        } else {
            "Publish"
        },
        can_approve: allows(LifecycleAction::Approve, r.status, role, kind),
        can_reject: allows(LifecycleAction::Reject, r.status, role, kind),
        can_deprecate: allows(LifecycleAction::Deprecate, r.status, role, kind),
    }
}

fn back_to(at: &SkillAt, notice: &str) -> String {
    skill_link(&at.ws, &at.slug, "", &[("notice", notice)])
}

/// Publish, approve, reject or deprecate one revision.
pub async fn lifecycle(
    State(state): State<AppState>,
    SkillForm(ctx, at, f): SkillForm,
) -> PageResult {
    let action = match f.get("action") {
        "publish" => LifecycleAction::Publish,
        "approve" => LifecycleAction::Approve,
        "reject" => LifecycleAction::Reject,
        "deprecate" => LifecycleAction::Deprecate,
        _ => {
            return Err(ctx.fail("skills")(ServiceError::validation(
                "unknown action",
                "action",
            )));
        }
    };
    let ws = (!at.ws.is_empty()).then_some(at.ws.as_str());
    let updated = state
        .service
        .change_status(
            &ctx.principal,
            &at.slug,
            ws,
            f.get("revision_id"),
            action,
            crate::service::types::LifecycleRequest {
                note: f.opt("note"),
                override_safety: f.get("override_safety") == "1",
            },
        )
        .await
        .map_err(ctx.fail("skills"))?;
    let notice = match (action, updated.status) {
        (LifecycleAction::Publish, RevisionStatus::Proposed) => "proposed",
        (LifecycleAction::Publish, _) => "published",
        (LifecycleAction::Approve, _) => "approved",
        (LifecycleAction::Reject, _) => "rejected",
        _ => "deprecated",
    };
    Ok(see_other(&back_to(&at, notice)))
}

/// Archive or restore the skill.
pub async fn archive(
    State(state): State<AppState>,
    SkillForm(ctx, at, f): SkillForm,
) -> PageResult {
    let archived = f.get("archived") == "1";
    let ws = (!at.ws.is_empty()).then_some(at.ws.as_str());
    state
        .service
        .set_archived(&ctx.principal, &at.slug, ws, archived, f.opt("reason"))
        .await
        .map_err(ctx.fail("skills"))?;
    Ok(see_other(&back_to(
        &at,
        if archived { "archived" } else { "restored" },
    )))
}

pub async fn export(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    at: SkillAt,
    query: Params<SkillQuery>,
) -> PageResult {
    let q = SkillQuery::of(at, query);
    let ws = (!q.ws.is_empty()).then_some(q.ws.as_str());
    let rev = (!q.rev.is_empty()).then_some(q.rev.as_str());
    let capsule = state
        .service
        .export(&ctx.principal, &q.slug, ws, rev)
        .await
        .map_err(ctx.fail("skills"))?;
    let mut response = Bytes::from(capsule.bytes).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", capsule.file_name))
    {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    super::secure_headers(h);
    Ok(response)
}
