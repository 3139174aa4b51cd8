//! Skill packages over REST: import (`POST /imports`: a ZIP / SKILL.md body, or a repository
//! URL as JSON; one skill answers `imported`, several skill folders `imported_batch`),
//! Source Capsule export, revision diff. Translation only; the rules are in
//! `service/imports.rs` and `service/packages.rs`.

use super::extract::{ApiJson, ApiPath, ApiQuery};
use crate::auth::Principal;
use crate::error::ServiceError;
use crate::http::credential::Authed;
use crate::http::error::ApiResult;
use crate::http::limits::BODY_LIMIT_BYTES;
use crate::service::{ImportAnswer, ImportOptions};
use crate::state::AppState;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use xmemo_core::SaveIntent;
use xmemo_core::package::SKILL_MD_MAX_BYTES;

pub fn routes() -> Router<AppState> {
    // Imports are their own collection, so no static path shadows `/skills/{slug}`.
    Router::new()
        .route("/imports", post(import))
        .route("/skills/{slug}/export", get(export))
        .route("/skills/{slug}/diff", get(diff))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ImportQuery {
    workspace: Option<String>,
    slug: Option<String>,
    intent: Option<SaveIntent>,
    expected_revision_id: Option<String>,
    /// The uploaded file's name, recorded in the revision's source.
    filename: Option<String>,
    /// Write content another skill of the workspace already has.
    allow_duplicates: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportUrlRequest {
    url: String,
    workspace: Option<String>,
    slug: Option<String>,
    intent: Option<SaveIntent>,
    expected_revision_id: Option<String>,
    #[serde(default)]
    allow_duplicates: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    workspace: Option<String>,
    revision_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
    workspace: Option<String>,
}

/// The `Content-Type` without its parameters, lowercased.
fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
}

/// What an import body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Zip,
    SkillMd,
}

/// What the `Content-Type` says the body is: `application/zip` (or
/// `application/x-zip-compressed`) → ZIP; `text/markdown` (or `text/x-markdown`,
/// `text/plain`) → SKILL.md; `application/octet-stream` or no type → `None`, to be told by
/// the first bytes ([`format_of`]).
fn declared_format(headers: &HeaderMap) -> Result<Option<Format>, ServiceError> {
    match media_type(headers).as_deref() {
        Some("application/zip" | "application/x-zip-compressed" | "application/x-zip") => {
            Ok(Some(Format::Zip))
        }
        Some("text/markdown" | "text/x-markdown" | "text/plain") => Ok(Some(Format::SkillMd)),
        Some("application/octet-stream") | None => Ok(None),
        Some(other) => Err(ServiceError::validation(
            format!(
                "cannot import a `{other}` body: send a ZIP as `Content-Type: application/zip` or \
                 a SKILL.md as `Content-Type: text/markdown` (a repository URL goes as \
                 `{{\"url\": …}}` with `Content-Type: application/json`)"
            ),
            "Content-Type",
        )),
    }
}

/// How many first bytes tell a ZIP.
const ZIP_SIGNATURE_BYTES: usize = 4;

/// A ZIP's first bytes: a local file header, or the end record of an empty archive.
fn is_zip(body: &[u8]) -> bool {
    body.starts_with(b"PK\x03\x04") || body.starts_with(b"PK\x05\x06")
}

/// The body's format: the declared one, else by the first bytes (`PK` signature → ZIP).
fn format_of(declared: Option<Format>, body: &[u8]) -> Format {
    declared.unwrap_or(if is_zip(body) {
        Format::Zip
    } else {
        Format::SkillMd
    })
}

/// 201 when a revision was written, else 200; `imported` for one skill, `imported_batch`
/// for several.
fn imported_response(answer: ImportAnswer) -> Response {
    let status = if answer.wrote() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = match answer {
        ImportAnswer::One(imported) => json!({ "kind": "imported", "data": imported }),
        ImportAnswer::Several(batch) => json!({ "kind": "imported_batch", "data": batch }),
    };
    (status, Json(body)).into_response()
}

/// `POST /imports`: a JSON body (`Content-Type: application/json`) is a URL import whose
/// options travel in that body; any other body is an upload (ZIP or SKILL.md) whose options
/// travel in the query string.
async fn import(
    State(state): State<AppState>,
    Authed(p): Authed,
    request: Request,
) -> ApiResult<Response> {
    let (mut parts, body) = request.into_parts();
    if media_type(&parts.headers).as_deref() == Some("application/json") {
        // Silently dropping `?workspace=…` would import somewhere the caller did not ask for.
        if parts.uri.query().is_some_and(|q| !q.is_empty()) {
            return Err(ServiceError::validation(
                "a URL import takes its options in the JSON body, not in the query string",
                "query",
            )
            .into());
        }
        let request = Request::from_parts(parts, body);
        let ApiJson(req) = ApiJson::<ImportUrlRequest>::from_request(request, &state).await?;
        return import_url(&state, &p, req).await;
    }
    let ApiQuery(q) = ApiQuery::<ImportQuery>::from_request_parts(&mut parts, &state).await?;
    let declared = declared_format(&parts.headers)?;
    let length = crate::http::body::declared_length(&parts.headers);
    // A SKILL.md that says it is larger than any SKILL.md could be is refused unread.
    if let (Some(Format::SkillMd), Some(length)) = (&declared, length) {
        state.service.check_skill_md_upload(&p, length).await?;
    }
    let body = match read_upload(body, declared, length).await? {
        Upload::Read(body) => body,
        Upload::OversizedSkillMd(length) => {
            // Past SKILL_MD_MAX_BYTES, so this is the refusal (and its spent write).
            state.service.check_skill_md_upload(&p, length).await?;
            return Err(ServiceError::Internal(format!(
                "a SKILL.md of {length} bytes was not refused"
            ))
            .into());
        }
    };
    import_upload(&state, &p, q, declared, body).await
}

/// An upload body, read.
enum Upload {
    Read(Vec<u8>),
    /// A SKILL.md (declared, or no ZIP by its first bytes) of this many bytes, more than
    /// any SKILL.md holds: not kept.
    OversizedSkillMd(u64),
}

/// Reads an upload body within [`BODY_LIMIT_BYTES`] into one buffer (sized from
/// `Content-Length`, so the body is held once, not as its pieces and then a copy of them).
/// A SKILL.md is kept only up to [`SKILL_MD_MAX_BYTES`]: past it, reading stops when the
/// length was announced, and otherwise the rest is only counted, for the refusal to say the
/// size.
async fn read_upload(
    body: axum::body::Body,
    declared: Option<Format>,
    length: Option<u64>,
) -> Result<Upload, ServiceError> {
    use futures::StreamExt;
    let too_large = || {
        ServiceError::TooLarge(
            format!("the package exceeds the request size limit of {BODY_LIMIT_BYTES} bytes"),
            Some(json!({ "field": "body", "limit": BODY_LIMIT_BYTES })),
        )
    };
    let capacity = length.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    if capacity > BODY_LIMIT_BYTES {
        return Err(too_large());
    }
    let mut skill_md = matches!(declared, Some(Format::SkillMd));
    let mut kept = Vec::with_capacity(if skill_md {
        capacity.min(SKILL_MD_MAX_BYTES)
    } else {
        capacity
    });
    let mut total = 0usize;
    let mut stream = body.into_data_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece.map_err(|e| {
            crate::http::body::timeout_error(&e).unwrap_or_else(|| {
                ServiceError::Validation(format!("could not read the body: {e}"), None)
            })
        })?;
        total += piece.len();
        if total > BODY_LIMIT_BYTES {
            return Err(too_large());
        }
        if total <= SKILL_MD_MAX_BYTES || !skill_md {
            kept.extend_from_slice(&piece);
        }
        if declared.is_none() && !skill_md && kept.len() >= ZIP_SIGNATURE_BYTES {
            skill_md = !is_zip(&kept);
        }
        if skill_md && total > SKILL_MD_MAX_BYTES {
            if let Some(length) = length {
                return Ok(Upload::OversizedSkillMd(length));
            }
            kept = Vec::new();
        }
    }
    if skill_md && total > SKILL_MD_MAX_BYTES {
        return Ok(Upload::OversizedSkillMd(total as u64));
    }
    Ok(Upload::Read(kept))
}

async fn import_upload(
    state: &AppState,
    p: &Principal,
    q: ImportQuery,
    declared: Option<Format>,
    body: Vec<u8>,
) -> ApiResult<Response> {
    if body.is_empty() {
        return Err(ServiceError::validation(
            "the body is empty: send a ZIP (application/zip) or a SKILL.md (text/markdown)",
            "body",
        )
        .into());
    }
    let format = format_of(declared, &body);
    let options = ImportOptions {
        workspace: q.workspace,
        slug: q.slug,
        intent: q.intent,
        expected_revision_id: q.expected_revision_id,
        file_name: q.filename,
        allow_duplicates: q.allow_duplicates.unwrap_or(false),
    };
    let answer = match format {
        Format::Zip => state.service.import_archive(p, body, options).await?,
        Format::SkillMd => ImportAnswer::One(Box::new(
            state.service.import_skill_md(p, body, options).await?,
        )),
    };
    Ok(imported_response(answer))
}

async fn import_url(state: &AppState, p: &Principal, req: ImportUrlRequest) -> ApiResult<Response> {
    let options = ImportOptions {
        workspace: req.workspace,
        slug: req.slug,
        intent: req.intent,
        expected_revision_id: req.expected_revision_id,
        file_name: None,
        allow_duplicates: req.allow_duplicates,
    };
    let answer = state.service.import_url(p, &req.url, options).await?;
    Ok(imported_response(answer))
}

async fn export(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<ExportQuery>,
) -> ApiResult<Response> {
    let capsule = state
        .service
        .export(&p, &slug, q.workspace.as_deref(), q.revision_id.as_deref())
        .await?;
    let header_value = |text: &str| {
        HeaderValue::from_str(text).map_err(|_| ServiceError::Internal("bad header".into()))
    };
    let mut response = Bytes::from(capsule.bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    // file_name is `<slug>-r<n>.zip`: slug characters only, safe to quote.
    headers.insert(
        header::CONTENT_DISPOSITION,
        header_value(&format!("attachment; filename=\"{}\"", capsule.file_name))?,
    );
    headers.insert(
        "x-canonical-hash",
        header_value(&capsule.manifest.canonical_hash)?,
    );
    headers.insert(
        "x-revision-id",
        header_value(&capsule.manifest.revision.revision_id)?,
    );
    Ok(response)
}

async fn diff(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(q): ApiQuery<DiffQuery>,
) -> ApiResult<Json<Value>> {
    let (Some(from), Some(to)) = (q.from, q.to) else {
        return Err(ServiceError::validation(
            "give the two revisions to compare: ?from=REVISION_ID&to=REVISION_ID",
            "from",
        )
        .into());
    };
    let diff = state
        .service
        .diff(&p, &slug, q.workspace.as_deref(), &from, &to)
        .await?;
    Ok(Json(
        serde_json::to_value(diff).unwrap_or_else(|_| json!({})),
    ))
}
