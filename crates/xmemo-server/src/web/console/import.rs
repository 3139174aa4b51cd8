//! Import: upload a SKILL.md or a ZIP (a skill folder or a Source Capsule), or name a GitHub
//! or ClawHub URL; the service reads, checks (hostile archives write nothing) and saves it.

use super::{Chrome, PageResult, Signed, posted, render, see_other, workspaces};
use crate::error::ServiceError;
use crate::service::ImportOptions;
use crate::service::types::WorkspaceView;
use crate::state::AppState;
use askama::Template;
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use xmemo_core::SaveIntent;

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

pub async fn submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    mut multipart: Multipart,
) -> PageResult {
    let mut fields: Vec<(String, Option<String>, Vec<u8>)> = vec![];
    loop {
        match multipart.next_field().await {
            Ok(Some(field)) => {
                let name = field.name().unwrap_or_default().to_string();
                let file_name = field.file_name().map(str::to_string);
                match field.bytes().await {
                    Ok(b) => fields.push((name, file_name, b.to_vec())),
                    Err(_) => break,
                }
                if fields.len() > 20 {
                    break;
                }
            }
            Ok(None) => break,
            Err(_) => {
                return Ok((
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "the form could not be read",
                )
                    .into_response());
            }
        }
    }
    let text = |n: &str| {
        fields
            .iter()
            .find(|(k, _, _)| k == n)
            .map(|(_, _, v)| String::from_utf8_lossy(v).trim().to_string())
            .unwrap_or_default()
    };
    let ctx = match posted(&state, &headers, &text("csrf")).await {
        Ok(c) => c,
        Err(r) => return Ok(r),
    };
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
    };
    let url = text("url");
    let file = fields.iter().find(|(k, f, v)| {
        k == "file" && (f.as_deref().is_some_and(|f| !f.is_empty()) || !v.is_empty())
    });
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
            if is_zip {
                state
                    .service
                    .import_archive(&ctx.principal, bytes.clone(), options)
                    .await
            } else {
                state
                    .service
                    .import_skill_md(&ctx.principal, bytes.clone(), options)
                    .await
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
    let imported = result.map_err(ctx.fail("skills"))?;
    let notice = if imported.saved.created {
        "imported"
    } else {
        "unchanged"
    };
    Ok(see_other(&super::skill_link(
        &imported.saved.workspace,
        &imported.saved.slug,
        "",
        &[("rev", &imported.saved.revision_id), ("notice", notice)],
    )))
}
