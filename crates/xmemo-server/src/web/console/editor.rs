//! Authoring: a new skill, or a new revision of one. A Markdown textarea with a live preview
//! (`/console/preview`, rendered and sanitised like the skill page), name, description,
//! metadata, components (edit text, upload a file, choose its type, remove), save as draft or
//! with publish intent. The form carries `expected_revision_id`: a concurrent save answers
//! CONFLICT, and the editor comes back with everything the person typed or uploaded.

use super::{
    Chrome, Ctx, PageResult, Params, Posted, Signed, SignedPost, SkillAt, foreign_form, render,
    see_other, unreadable, workspaces,
};
use crate::error::ServiceError;
use crate::service::types::{ComponentRequest, ContentEncoding, SaveRequest};
use crate::state::AppState;
use askama::Template;
use axum::body::Bytes;
use axum::extract::{Multipart, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use xmemo_core::limits::{
    COMPONENT_MAX_BYTES, DESCRIPTION_MAX_CHARS, INSTRUCTION_BODY_MAX_BYTES, MAX_COMPONENTS,
    NAME_MAX_CHARS, SLUG_MAX_CHARS,
};
use xmemo_core::{ComponentType, SaveIntent};

pub struct ComponentRow {
    pub index: usize,
    pub path: String,
    pub kind: String,
    /// The content when it is text (edited in a textarea).
    pub text: String,
    pub is_text: bool,
    /// The content as base64 when it is binary (carried unchanged in a hidden field).
    pub b64: String,
    pub size: usize,
}

pub struct WorkspaceChoice {
    pub handle: String,
    pub label: String,
}

#[derive(Template)]
#[template(path = "console/editor.html")]
pub struct EditorPage {
    pub chrome: Option<Chrome>,
    pub token: String,
    pub is_new: bool,
    pub workspaces: Vec<WorkspaceChoice>,
    pub ws: String,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub metadata: String,
    pub body: String,
    pub expected: String,
    pub components: Vec<ComponentRow>,
    /// Index of the empty "add a component" row.
    pub next_index: usize,
    pub types: Vec<&'static str>,
    /// After a conflict: the newer revision that is in the way.
    pub latest: Option<String>,
    pub latest_href: String,
    pub preview_html: String,
    pub slug_max: usize,
    pub name_max: usize,
    pub description_max: usize,
    pub body_max: usize,
    pub component_max: usize,
    pub components_max: usize,
}

fn types() -> Vec<&'static str> {
    ComponentType::ALL.iter().map(|t| t.as_str()).collect()
}

fn editor(ctx: &Ctx, all: &[crate::service::types::WorkspaceView]) -> EditorPage {
    EditorPage {
        chrome: Some(ctx.chrome("skills")),
        token: ctx.token.clone(),
        is_new: true,
        workspaces: all
            .iter()
            .filter(|w| w.role.can_write())
            .map(|w| WorkspaceChoice {
                handle: w.handle.clone(),
                label: format!("{} ({}, {})", w.handle, w.kind, w.role),
            })
            .collect(),
        ws: "personal".into(),
        slug: String::new(),
        name: String::new(),
        description: String::new(),
        metadata: String::new(),
        body: String::new(),
        expected: String::new(),
        components: vec![],
        next_index: 0,
        types: types(),
        latest: None,
        latest_href: String::new(),
        preview_html: String::new(),
        slug_max: SLUG_MAX_CHARS,
        name_max: NAME_MAX_CHARS,
        description_max: DESCRIPTION_MAX_CHARS,
        body_max: INSTRUCTION_BODY_MAX_BYTES,
        component_max: COMPONENT_MAX_BYTES,
        components_max: MAX_COMPONENTS,
    }
}

fn row(index: usize, path: String, kind: String, bytes: Vec<u8>) -> ComponentRow {
    let size = bytes.len();
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => ComponentRow {
            index,
            path,
            kind,
            text,
            is_text: true,
            b64: String::new(),
            size,
        },
        Ok(text) => binary_row(index, path, kind, text.into_bytes()),
        Err(e) => binary_row(index, path, kind, e.into_bytes()),
    }
}

fn binary_row(index: usize, path: String, kind: String, bytes: Vec<u8>) -> ComponentRow {
    ComponentRow {
        index,
        path,
        kind,
        text: String::new(),
        is_text: false,
        b64: base64::engine::general_purpose::STANDARD.encode(&bytes),
        size: bytes.len(),
    }
}

#[derive(Debug, Deserialize, Default)]
pub struct EditQuery {
    #[serde(default)]
    ws: String,
    #[serde(default)]
    slug: String,
}

pub async fn new_skill(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    Params(q): Params<EditQuery>,
) -> Response {
    let all = workspaces(&state, &ctx).await;
    let mut page = editor(&ctx, &all);
    if !q.ws.is_empty() {
        page.ws = q.ws;
    }
    render(StatusCode::OK, &page)
}

pub async fn edit(
    State(state): State<AppState>,
    Signed(ctx): Signed,
    SkillAt { ws, slug }: SkillAt,
) -> PageResult {
    let q = EditQuery { ws, slug };
    let page = edit_page(&state, &ctx, &q)
        .await
        .map_err(ctx.fail("skills"))?;
    Ok(render(StatusCode::OK, &page))
}

/// The editor filled from the skill's latest revision (what a new save must name as
/// `expected_revision_id`).
async fn edit_page(state: &AppState, ctx: &Ctx, q: &EditQuery) -> Result<EditorPage, ServiceError> {
    let p = &ctx.principal;
    let ws = (!q.ws.is_empty()).then_some(q.ws.as_str());
    let skill = state.service.get_skill(p, &q.slug, ws).await?;
    let revisions = state
        .service
        .list_revisions(p, &skill.slug, Some(&skill.workspace))
        .await?;
    let latest = revisions
        .last()
        .ok_or_else(|| ServiceError::NotFound("this skill has no revision".into()))?;
    let root = state
        .service
        .root(
            p,
            &skill.slug,
            Some(&skill.workspace),
            Some(&latest.revision_id),
        )
        .await?;
    let mut components = Vec::with_capacity(root.resources.len());
    for (i, c) in root.resources.iter().enumerate() {
        let (_, bytes) = state
            .service
            .resource_bytes(
                p,
                &skill.slug,
                Some(&skill.workspace),
                &root.revision_id,
                &c.logical_path,
            )
            .await?;
        components.push(row(
            i,
            c.logical_path.clone(),
            c.component_type.to_string(),
            bytes,
        ));
    }
    let all = workspaces(state, ctx).await;
    let mut page = editor(ctx, &all);
    page.is_new = false;
    page.ws = skill.workspace.clone();
    page.slug = skill.slug.clone();
    page.name = root.name.clone();
    page.description = root.description.clone();
    page.metadata = if root.metadata.is_empty() {
        String::new()
    } else {
        serde_json::to_string_pretty(&root.metadata).unwrap_or_default()
    };
    page.preview_html = super::markdown::render(&root.instruction_body);
    page.body = root.instruction_body;
    page.expected = root.revision_id;
    page.next_index = components.len();
    page.components = components;
    Ok(page)
}

/// One multipart part: its name, bytes and file name (for uploads).
struct Part {
    name: String,
    file_name: Option<String>,
    bytes: Bytes,
}

struct Parts(Vec<Part>);

impl Parts {
    fn bytes(&self, name: &str) -> Option<&Part> {
        self.0.iter().find(|p| p.name == name)
    }
    fn text(&self, name: &str) -> String {
        self.bytes(name)
            .map(|p| String::from_utf8_lossy(&p.bytes).into_owned())
            .unwrap_or_default()
    }
}

/// Reads a whole multipart form (the body limit of the route bounds it), each part kept as
/// the bytes it arrived in. A form that cannot be read is answered with the console's page.
async fn read_parts(mut multipart: Multipart) -> Result<Parts, Response> {
    let mut parts = vec![];
    loop {
        let field = multipart
            .next_field()
            .await
            .map_err(|e| unreadable(e.status(), "form"))?;
        let Some(field) = field else { break };
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        let bytes = field
            .bytes()
            .await
            .map_err(|e| unreadable(e.status(), "form"))?;
        parts.push(Part {
            name,
            file_name,
            bytes,
        });
        if parts.len() > 10 * MAX_COMPONENTS + 100 {
            return Err(unreadable(StatusCode::UNPROCESSABLE_ENTITY, "form"));
        }
    }
    Ok(Parts(parts))
}

/// The components of a submitted editor form, as rows (to show again) and requests.
fn submitted_components(parts: &Parts) -> Result<Vec<ComponentRow>, ServiceError> {
    let mut rows = vec![];
    for i in 0..=(2 * MAX_COMPONENTS) {
        let Some(path_part) = parts.bytes(&format!("c{i}_path")) else {
            continue;
        };
        let path = String::from_utf8_lossy(&path_part.bytes).trim().to_string();
        if parts.bytes(&format!("c{i}_remove")).is_some() {
            continue;
        }
        let kind = parts.text(&format!("c{i}_type"));
        let upload = parts.bytes(&format!("c{i}_file")).filter(|f| {
            f.file_name.as_deref().is_some_and(|n| !n.is_empty()) || !f.bytes.is_empty()
        });
        let b64 = parts.text(&format!("c{i}_b64"));
        let bytes = if let Some(file) = upload {
            file.bytes.to_vec()
        } else if !b64.is_empty() {
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|_| {
                    ServiceError::validation(
                        format!("component {path}: the carried content is not valid base64"),
                        "components",
                    )
                })?
        } else {
            // Textareas send CRLF line ends; the stored text has the person's LF ones.
            parts
                .text(&format!("c{i}_content"))
                .replace("\r\n", "\n")
                .into_bytes()
        };
        let path = if path.is_empty() {
            upload.and_then(|f| f.file_name.clone()).unwrap_or_default()
        } else {
            path
        };
        if path.is_empty() && bytes.is_empty() {
            continue; // the empty "add a component" row
        }
        rows.push(row(rows.len(), path, kind, bytes));
    }
    Ok(rows)
}

/// The editor's form: same origin and signed in before its body is read ([`SignedPost`]),
/// then the form and its token.
pub async fn save(
    State(state): State<AppState>,
    SignedPost(ctx): SignedPost,
    multipart: Multipart,
) -> Response {
    let parts = match read_parts(multipart).await {
        Ok(p) => p,
        Err(refused) => return refused,
    };
    if let Some(refused) = foreign_form(&ctx, &parts.text("csrf")) {
        return refused;
    }
    let all = workspaces(&state, &ctx).await;
    let mut page = editor(&ctx, &all);
    page.is_new = parts.text("mode") == "new";
    page.ws = parts.text("ws");
    page.slug = parts.text("slug").trim().to_string();
    page.name = parts.text("name");
    page.description = parts.text("description");
    page.metadata = parts.text("metadata");
    page.body = parts.text("body").replace("\r\n", "\n");
    page.expected = parts.text("expected_revision_id");
    let components = match submitted_components(&parts) {
        Ok(c) => c,
        Err(e) => return editor_error(&ctx, page, &e),
    };
    page.next_index = components.len();
    page.components = components;
    // After a conflict the person may say they checked the newer revision and save over it.
    if parts.bytes("over_latest").is_some() {
        page.expected = parts.text("latest_revision_id");
    }
    let intent = if parts.text("intent") == "publish" {
        SaveIntent::Publish
    } else {
        SaveIntent::Draft
    };
    let metadata = if page.metadata.trim().is_empty() {
        None
    } else {
        match serde_json::from_str::<serde_json::Value>(&page.metadata) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => {
                let e = ServiceError::validation("metadata must be a JSON object", "metadata");
                return editor_error(&ctx, page, &e);
            }
        }
    };
    let component_types: Result<Vec<ComponentType>, ServiceError> = page
        .components
        .iter()
        .map(|c| {
            c.kind.parse::<ComponentType>().map_err(|e| {
                ServiceError::validation(format!("component {}: {e}", c.path), "components")
            })
        })
        .collect();
    let component_types = match component_types {
        Ok(t) => t,
        Err(e) => return editor_error(&ctx, page, &e),
    };
    let request = SaveRequest {
        slug: page.slug.clone(),
        name: Some(page.name.trim().to_string()),
        description: Some(page.description.trim().to_string()),
        instruction_body: page.body.clone(),
        components: page
            .components
            .iter()
            .zip(component_types)
            .map(|(c, t)| ComponentRequest {
                logical_path: c.path.clone(),
                component_type: t,
                content: if c.is_text {
                    base64::engine::general_purpose::STANDARD.encode(c.text.as_bytes())
                } else {
                    c.b64.clone()
                },
                encoding: ContentEncoding::Base64,
            })
            .collect(),
        metadata,
        intent: Some(intent),
        workspace: (!page.ws.is_empty()).then(|| page.ws.clone()),
        expected_revision_id: (!page.expected.is_empty()).then(|| page.expected.clone()),
    };
    match state.service.save(&ctx.principal, request).await {
        Ok(saved) => {
            let notice = match (saved.created, saved.status) {
                (false, _) => "unchanged",
                (true, xmemo_core::RevisionStatus::Published) => "saved-published",
                (true, xmemo_core::RevisionStatus::Proposed) => "saved-proposed",
                (true, _) => "saved",
            };
            see_other(&super::skill_link(
                &saved.workspace,
                &saved.slug,
                "",
                &[("rev", &saved.revision_id), ("notice", notice)],
            ))
        }
        Err(ServiceError::Conflict(message)) if !page.is_new || !page.expected.is_empty() => {
            // Name the revision in the way, so the person can look at it and save over it.
            let latest = state
                .service
                .list_revisions(&ctx.principal, &page.slug, Some(&page.ws))
                .await
                .ok()
                .and_then(|r| r.last().map(|r| (r.revision_id.clone(), r.revision_number)));
            if let Some((id, number)) = &latest {
                page.latest_href = super::skill_link(&page.ws, &page.slug, "", &[("rev", id)]);
                page.latest = Some(id.clone());
                let e = ServiceError::Conflict(format!(
                    "Someone saved revision {number} of this skill while you were editing, so \
                     nothing was saved. Your text is below, unchanged. Look at revision {number}, \
                     then tick “save over it” to save yours as the next revision."
                ));
                return editor_error(&ctx, page, &e);
            }
            editor_error(&ctx, page, &ServiceError::Conflict(message))
        }
        Err(e) => editor_error(&ctx, page, &e),
    }
}

fn editor_error(ctx: &Ctx, mut page: EditorPage, e: &ServiceError) -> Response {
    page.chrome = Some(ctx.chrome("skills").with_error(e));
    page.preview_html = super::markdown::render(&page.body);
    let status =
        StatusCode::from_u16(e.code().http_status()).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
    render(status, &page)
}

/// The live preview: the body rendered and sanitised exactly as the skill page does.
pub async fn preview(Posted(_, fields): Posted) -> Response {
    let mut response = super::markdown::render(fields.get("body")).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(super::CONSOLE_POLICY) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    super::secure_headers(h);
    response
}
