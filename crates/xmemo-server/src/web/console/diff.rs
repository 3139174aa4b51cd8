//! The diff of two revisions of a skill (SPEC §6): word level, per text component, metadata
//! changes, binary components by hash. `from` defaults to the revision before `to`; a first
//! revision has none, and is shown whole as added (a reviewer approving a new skill must see
//! what it proposes, not "same content").

use super::{Chrome, PageResult, Params, Signed, SkillAt, render};
use crate::error::ServiceError;
use crate::service::PageRequest;
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use xmemo_core::diff::{TextDiff, WordOpKind};

#[derive(Debug, Deserialize, Default)]
pub struct DiffQuery {
    #[serde(default)]
    ws: String,
    #[serde(default)]
    slug: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
}

pub struct Op {
    /// `eq`, `ins` or `del`.
    pub kind: &'static str,
    pub text: String,
}

pub struct TextView {
    pub ops: Vec<Op>,
    pub inserted: usize,
    pub deleted: usize,
    pub note: &'static str,
}

pub struct ComponentView {
    pub path: String,
    /// `added`, `removed`, `modified`.
    pub change: &'static str,
    pub kind: String,
    pub old_hash: String,
    pub new_hash: String,
    pub old_size: u64,
    pub new_size: u64,
    pub type_change: String,
    pub text: Option<TextView>,
}

pub struct MetaView {
    pub key: String,
    pub change: String,
    pub old: String,
    pub new: String,
}

pub struct RevisionChoice {
    pub id: String,
    pub label: String,
}

#[derive(Template)]
#[template(path = "console/diff.html")]
struct DiffPage {
    chrome: Option<Chrome>,
    slug: String,
    back: String,
    /// Where the revision picker sends its choice.
    action: String,
    from_id: String,
    to_id: String,
    from_label: String,
    to_label: String,
    choices: Vec<RevisionChoice>,
    identical: bool,
    /// `to` is the skill's first revision and no `from` was asked for: everything is added.
    first: bool,
    incomplete: bool,
    name: Option<(String, String)>,
    description: Option<(String, String)>,
    body: TextView,
    metadata: Vec<MetaView>,
    components: Vec<ComponentView>,
    unchanged: usize,
}

fn text_view(d: &TextDiff) -> TextView {
    TextView {
        ops: d
            .ops
            .iter()
            .map(|o| Op {
                kind: match o.op {
                    WordOpKind::Equal => "eq",
                    WordOpKind::Insert => "ins",
                    WordOpKind::Delete => "del",
                },
                text: o.text.clone(),
            })
            .collect(),
        inserted: d.words_inserted,
        deleted: d.words_deleted,
        note: match d.status {
            xmemo_core::diff::TextDiffStatus::Complete => "",
            xmemo_core::diff::TextDiffStatus::Coarse => {
                "The comparison ran out of time: this diff is exact but coarser than minimal."
            }
            xmemo_core::diff::TextDiffStatus::NotCompared => {
                "Not compared: the time budget ran out before this text."
            }
        },
    }
}

pub async fn page(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    SkillAt { ws, slug }: SkillAt,
    Params(query): Params<DiffQuery>,
) -> PageResult {
    let q = DiffQuery { ws, slug, ..query };
    let p = &ctx.principal;
    let result: Result<DiffPage, ServiceError> = async {
        let ws = (!q.ws.is_empty()).then_some(q.ws.as_str());
        let skill = state.service.get_skill(p, &q.slug, ws).await?;
        let revisions = state
            .service
            .revisions_page(
                p,
                &skill.slug,
                Some(&skill.workspace),
                &PageRequest {
                    limit: Some(100),
                    cursor: None,
                },
            )
            .await?
            .items;
        let to = if q.to.is_empty() {
            revisions.last().map(|r| r.revision_id.clone())
        } else {
            Some(q.to.clone())
        };
        let Some(to) = to else {
            return Err(ServiceError::NotFound("this skill has no revision".into()));
        };
        let to_number = revisions
            .iter()
            .find(|r| r.revision_id == to)
            .map_or(i64::MAX, |r| r.revision_number);
        let earlier = revisions
            .iter()
            .filter(|r| r.revision_number < to_number)
            .max_by_key(|r| r.revision_number);
        // No earlier revision: the service compares `to` with itself, which gives its whole
        // content as unchanged; the page turns that into "all added" below.
        let first = q.from.is_empty() && earlier.is_none();
        let from = if q.from.is_empty() {
            earlier.map_or_else(|| to.clone(), |r| r.revision_id.clone())
        } else {
            q.from.clone()
        };
        let d = state
            .service
            .diff(p, &skill.slug, Some(&skill.workspace), &from, &to)
            .await?;
        let comps = &d.diff.components;
        let mut components = vec![];
        let added = comps
            .added
            .iter()
            .chain(comps.unchanged.iter().filter(|_| first));
        for c in added {
            components.push(ComponentView {
                path: c.logical_path.clone(),
                change: "added",
                kind: c.component_type.to_string(),
                old_hash: String::new(),
                new_hash: c.content_hash.clone(),
                old_size: 0,
                new_size: c.size,
                type_change: String::new(),
                text: None,
            });
        }
        for c in &comps.removed {
            components.push(ComponentView {
                path: c.logical_path.clone(),
                change: "removed",
                kind: c.component_type.to_string(),
                old_hash: c.content_hash.clone(),
                new_hash: String::new(),
                old_size: c.size,
                new_size: 0,
                type_change: String::new(),
                text: None,
            });
        }
        for c in &comps.modified {
            components.push(ComponentView {
                path: c.logical_path.clone(),
                change: "modified",
                kind: c.new.component_type.to_string(),
                old_hash: c.old.content_hash.clone(),
                new_hash: c.new.content_hash.clone(),
                old_size: c.old.size,
                new_size: c.new.size,
                type_change: if c.type_changed {
                    format!("{} → {}", c.old.component_type, c.new.component_type)
                } else {
                    String::new()
                },
                text: c.text_diff.as_ref().map(text_view),
            });
        }
        components.sort_by(|a, b| a.path.cmp(&b.path));
        let mut body = text_view(&d.diff.instruction_body);
        let (mut name, mut description) = (
            d.diff.name.as_ref().map(|c| (c.old.clone(), c.new.clone())),
            d.diff
                .description
                .as_ref()
                .map(|c| (c.old.clone(), c.new.clone())),
        );
        if first {
            for op in &mut body.ops {
                op.kind = "ins";
            }
            body.inserted = body
                .ops
                .iter()
                .map(|o| o.text.split_whitespace().count())
                .sum();
            if let Some(r) = revisions.iter().find(|r| r.revision_id == d.to.revision_id) {
                name = Some((String::new(), r.name.clone()));
                description = Some((String::new(), r.description.clone()));
            }
        }
        let label = |n: i64, s: xmemo_core::RevisionStatus| format!("r{n} ({s})");
        Ok(DiffPage {
            chrome: Some(ctx.chrome("skills")),
            back: super::skills::skill_href(&d.workspace, &d.slug),
            action: super::skill_link(&d.workspace, &d.slug, "/diff", &[]),
            from_label: label(d.from.revision_number, d.from.status),
            to_label: label(d.to.revision_number, d.to.status),
            from_id: d.from.revision_id.clone(),
            to_id: d.to.revision_id.clone(),
            choices: revisions
                .iter()
                .rev()
                .map(|r| RevisionChoice {
                    id: r.revision_id.clone(),
                    label: label(r.revision_number, r.status),
                })
                .collect(),
            identical: d.diff.identical && !first,
            first,
            incomplete: !d.diff.complete || d.diff.timed_out,
            name,
            description,
            body,
            metadata: d
                .diff
                .metadata
                .iter()
                .map(|m| MetaView {
                    key: m.key.clone(),
                    change: format!("{:?}", m.change).to_lowercase(),
                    old: m.old.as_ref().map(|v| v.to_string()).unwrap_or_default(),
                    new: m.new.as_ref().map(|v| v.to_string()).unwrap_or_default(),
                })
                .collect(),
            unchanged: if first { 0 } else { comps.unchanged.len() },
            components,
            slug: d.slug,
        })
    }
    .await;
    let page = result.map_err(ctx.fail("skills"))?;
    Ok(render(StatusCode::OK, &page))
}
