//! Import: upload a SKILL.md or a ZIP (a skill folder, a Source Capsule, or several skill
//! folders), or name a GitHub or ClawHub URL; the service reads, checks (hostile archives
//! write nothing) and saves it. A clean import of one skill goes to its page; one with
//! warnings, a duplicate, or several skills shows what happened to each first (#24: nothing
//! is repaired silently).

use super::{
    Chrome, PageResult, Signed, SignedPost, foreign_form, render, see_other, skill_link,
    unreadable, workspaces,
};
use crate::error::ServiceError;
use crate::service::types::WorkspaceView;
use crate::service::{BatchImported, ImportAnswer, ImportOptions, ImportOutcome, Imported};
use crate::state::AppState;
use askama::Template;
use axum::body::Bytes;
use axum::extract::{Multipart, State};
use axum::http::StatusCode;
use axum::response::Response;
use xmemo_core::SaveIntent;
use xmemo_core::package::Repair;

#[derive(Template)]
#[template(path = "console/import.html")]
struct ImportPage {
    chrome: Option<Chrome>,
    token: String,
    workspaces: Vec<WorkspaceView>,
}

pub async fn page(State(state): State<AppState>, Signed(ctx): Signed) -> Response {
    let all = workspaces(&state, &ctx).await;
    render(
        StatusCode::OK,
        &ImportPage {
            chrome: Some(ctx.chrome("skills")),
            token: ctx.token.clone(),
            workspaces: all.into_iter().filter(|w| w.role.can_write()).collect(),
        },
    )
}

/// Most parts the import form is read for (it has eight fields); the rest is not read.
const IMPORT_FORM_PARTS_MAX: usize = 20;

/// The import form: same origin and signed in before its body is read ([`SignedPost`]), then
/// the form (within the upload limit) and its token; the service bounds and reads the file.
pub async fn submit(
    State(state): State<AppState>,
    SignedPost(ctx): SignedPost,
    mut multipart: Multipart,
) -> PageResult {
    let mut fields: Vec<(String, Option<String>, Bytes)> = vec![];
    while fields.len() < IMPORT_FORM_PARTS_MAX {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Ok(unreadable(e.status(), "form")),
        };
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        match field.bytes().await {
            Ok(b) => fields.push((name, file_name, b)),
            Err(e) => return Ok(unreadable(e.status(), "form")),
        }
    }
    let text = |n: &str| {
        fields
            .iter()
            .find(|(k, _, _)| k == n)
            .map(|(_, _, v)| String::from_utf8_lossy(v).trim().to_string())
            .unwrap_or_default()
    };
    if let Some(refused) = foreign_form(&ctx, &text("csrf")) {
        return Ok(refused);
    }
    let options = ImportOptions {
        workspace: Some(text("ws")).filter(|s| !s.is_empty()),
        slug: Some(text("slug")).filter(|s| !s.is_empty()),
        intent: Some(if text("intent") == "publish" {
            SaveIntent::Publish
        } else {
            SaveIntent::Draft
        }),
        expected_revision_id: None,
        file_name: None,
        allow_duplicates: text("allow_duplicates") == "1",
    };
    let url = text("url");
    let file = fields
        .iter()
        .position(|(k, f, v)| {
            k == "file" && (f.as_deref().is_some_and(|f| !f.is_empty()) || !v.is_empty())
        })
        .map(|at| fields.swap_remove(at));
    let result = match (file, url.is_empty()) {
        (Some((_, name, bytes)), _) => {
            let options = ImportOptions {
                file_name: name.clone(),
                ..options
            };
            let is_zip = bytes.starts_with(b"PK")
                || name
                    .as_deref()
                    .is_some_and(|n| n.to_ascii_lowercase().ends_with(".zip"));
            // Moved to the service, not cloned: the form is done with.
            let bytes = Vec::from(bytes);
            if is_zip {
                state
                    .service
                    .import_archive(&ctx.principal, bytes, options)
                    .await
            } else {
                state
                    .service
                    .import_skill_md(&ctx.principal, bytes, options)
                    .await
                    .map(|i| ImportAnswer::One(Box::new(i)))
            }
        }
        (None, false) => {
            state
                .service
                .import_url(&ctx.principal, &url, options)
                .await
        }
        (None, true) => Err(ServiceError::validation(
            "choose a file to upload or give a URL",
            "file",
        )),
    };
    let answer = result.map_err(ctx.fail("skills"))?;
    let chrome = Some(ctx.chrome("skills"));
    match answer {
        ImportAnswer::One(imported)
            if imported.warnings.is_empty() && imported.outcome != ImportOutcome::Duplicate =>
        {
            let notice = if imported.saved.created {
                "imported"
            } else {
                "unchanged"
            };
            Ok(see_other(&skill_link(
                &imported.saved.workspace,
                &imported.saved.slug,
                "",
                &[("rev", &imported.saved.revision_id), ("notice", notice)],
            )))
        }
        ImportAnswer::One(imported) => Ok(render(
            StatusCode::OK,
            &ImportedPage::one(chrome, &imported),
        )),
        ImportAnswer::Several(batch) => Ok(render(
            StatusCode::OK,
            &ImportedPage::several(chrome, &batch),
        )),
    }
}

/// What an import did, skill by skill.
#[derive(Template)]
#[template(path = "console/imported.html")]
struct ImportedPage {
    chrome: Option<Chrome>,
    /// `(label, count)` for several skills; empty for one.
    summary: Vec<(&'static str, usize)>,
    rows: Vec<ImportedRow>,
    ignored_files: usize,
}

struct ImportedRow {
    path: String,
    slug: String,
    /// The skill's page, when the import left a revision to look at.
    link: Option<String>,
    outcome: &'static str,
    same_content_as: Option<(String, String)>,
    warnings: Vec<Repair>,
    error: Option<String>,
}

impl ImportedPage {
    fn one(chrome: Option<Chrome>, i: &Imported) -> Self {
        let ws = &i.saved.workspace;
        let link = (i.outcome != ImportOutcome::Duplicate)
            .then(|| skill_link(ws, &i.saved.slug, "", &[("rev", &i.saved.revision_id)]));
        Self {
            chrome,
            summary: vec![],
            rows: vec![ImportedRow {
                path: String::new(),
                slug: i.saved.slug.clone(),
                link,
                outcome: i.outcome.as_str(),
                same_content_as: i
                    .same_content_as
                    .as_ref()
                    .map(|s| (s.clone(), skill_link(ws, s, "", &[]))),
                warnings: i.warnings.clone(),
                error: None,
            }],
            ignored_files: 0,
        }
    }

    fn several(chrome: Option<Chrome>, b: &BatchImported) -> Self {
        let s = &b.summary;
        let ws = &b.workspace;
        Self {
            chrome,
            summary: vec![
                ("skills", s.skills),
                ("imported", s.imported),
                ("unchanged", s.unchanged),
                ("duplicates", s.duplicates),
                ("repaired", s.repaired),
                ("refused", s.refused),
            ],
            rows: b
                .results
                .iter()
                .map(|item| ImportedRow {
                    path: item.path.clone(),
                    slug: item.slug.clone(),
                    link: item
                        .revision
                        .as_ref()
                        .filter(|_| item.outcome != ImportOutcome::Duplicate)
                        .map(|r| skill_link(ws, &item.slug, "", &[("rev", &r.revision_id)])),
                    outcome: item.outcome.as_str(),
                    same_content_as: item
                        .same_content_as
                        .as_ref()
                        .map(|s| (s.clone(), skill_link(ws, s, "", &[]))),
                    warnings: item.warnings.clone(),
                    error: item
                        .error
                        .as_ref()
                        .and_then(|e| e["message"].as_str())
                        .map(str::to_string),
                })
                .collect(),
            ignored_files: b.ignored_files,
        }
    }
}
