//! The Memory Console at `/console` (docs/console.md): server-rendered pages over the same
//! service every other transport calls. A page decides nothing: it reads through the service,
//! shows only the buttons the person's role allows (asking `xmemo_core::lifecycle` the same
//! question the service asks), and the service refuses anything else anyway.
//!
//! Every page answers a signed-out visitor with the sign-in page (and back); every
//! state-changing form passes the same-origin check and carries the session's form token.
//! A post is checked for its origin and session from its head ([`SignedPost`]) before any of
//! its body is read, and each route reads at most what its form needs (`http/limits.rs`:
//! forms 64 KiB and [`FORM_FIELDS_MAX`] fields, the preview [`PREVIEW_LIMIT_BYTES`], saves
//! and imports [`UPLOAD_LIMIT_BYTES`]).
//! Pages leave with a strict Content-Security-Policy whose only script is `/assets/console.js`
//! (this server's own file: live preview, adding component rows).
//!
//! - `markdown.rs`: untrusted skill Markdown → sanitised HTML (pulldown-cmark + ammonia);
//! - `skills.rs`: the skill list (search, badges, review banner), a skill's page, lifecycle,
//!   archive/restore, capsule download; `diff.rs`: the diff of two revisions;
//! - `editor.rs`: new skill / new revision, components, live preview; `import.rs`: uploads
//!   and URLs;
//! - `memories.rs`, `keys.rs` (API keys and OAuth grants), `members.rs` (teams, members,
//!   invitations), `account.rs` (password, export, deletion), `connect.rs` (client recipes),
//!   `help.rs` (per kind of user, the usual failure and the pages that fix it).

mod account;
mod connect;
mod diff;
mod editor;
mod help;
mod import;
mod keys;
pub mod markdown;
mod members;
mod memories;
mod skills;

use super::pages::{self, secure_headers};
use super::session::{self, PostRefusal};
pub use super::session::{Ctx, see_other};
use crate::error::ServiceError;
use crate::http::limits::{
    FORM_FIELDS_MAX, FORM_LIMIT_BYTES, PREVIEW_LIMIT_BYTES, UPLOAD_LIMIT_BYTES,
};
use crate::service::types::WorkspaceView;
use crate::state::AppState;
use askama::Template;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};

/// The console's own script.
const SCRIPT: &str = include_str!("../../../templates/console/console.js");

/// The policy of every console page: nothing from another origin, scripts only from this
/// server's files (no inline script, no `eval`), requests only back to it.
pub const CONSOLE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

/// What every console page shows around its content.
pub struct Chrome {
    pub handle: String,
    pub token: String,
    pub tab: &'static str,
    pub notice: Option<String>,
    pub error: Option<String>,
    pub error_code: String,
}

impl Ctx {
    pub fn chrome(&self, tab: &'static str) -> Chrome {
        Chrome {
            handle: self.who.account.handle.clone(),
            token: self.token.clone(),
            tab,
            notice: None,
            error: None,
            error_code: String::new(),
        }
    }
}

impl Chrome {
    pub fn with_notice(mut self, notice: Option<&str>) -> Self {
        self.notice = notice.and_then(notice_text).map(str::to_string);
        self
    }
    pub fn with_error(mut self, e: &ServiceError) -> Self {
        self.error = Some(e.public_message());
        self.error_code = e.code().as_str().to_string();
        self
    }
}

/// The fixed texts a redirect after a form may show (`?notice=`): nothing a link can inject.
fn notice_text(code: &str) -> Option<&'static str> {
    Some(match code {
        "saved" => "Saved as a draft.",
        "saved-published" => "Saved and published.",
        "saved-proposed" => "Saved and proposed: an owner or admin of the team reviews it.",
        "published" => "Revision published.",
        "proposed" => "Revision proposed for review.",
        "approved" => "Proposal approved: it is the published revision now.",
        "rejected" => "Proposal sent back to draft with your note.",
        "deprecated" => "Revision deprecated.",
        "archived" => "Skill archived.",
        "restored" => "Skill restored.",
        "imported" => "Imported.",
        "forgotten" => "Memory forgotten (it can be restored).",
        "memory-restored" => "Memory restored.",
        "revoked" => "Revoked.",
        "invited" => "Invitation sent.",
        "role" => "Role changed.",
        "removed" => "Member removed.",
        "left" => "You left the team.",
        "accepted" => "Invitation accepted.",
        "declined" => "Invitation declined.",
        "team" => "Team created.",
        "unchanged" => "Nothing changed: the content equals the latest revision.",
        _ => return None,
    })
}

/// What the console answers a post that failed one of the checks of `web/session.rs`.
fn post_refused(refusal: PostRefusal) -> Response {
    match refusal {
        PostRefusal::CrossSite(reason) => refused(reason),
        PostRefusal::SignedOut => see_other("/login?next=%2Fconsole"),
        PostRefusal::ForeignForm => refused("the form does not belong to this session"),
    }
}

/// The last check of a console post, once its form is read: the refusal page when the form
/// does not carry the session's token.
pub fn foreign_form(ctx: &Ctx, token: &str) -> Option<Response> {
    session::form_token_matches(ctx, token)
        .err()
        .map(post_refused)
}

/// A console post whose body could not be read: larger than the route takes, too slow, or
/// cut off. `what` says what was being read, for the person.
pub fn unreadable(status: StatusCode, what: &str) -> Response {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        render_message(
            status,
            "Request refused",
            &format!("The {what} is larger than this page accepts."),
            "PAYLOAD_TOO_LARGE",
        )
    } else {
        render_message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Request refused",
            &format!("The {what} could not be read."),
            "VALIDATION_ERROR",
        )
    }
}

fn refused(reason: &str) -> Response {
    render_message(
        StatusCode::FORBIDDEN,
        "Request refused",
        &format!("{reason}. Open the page again and resend the form."),
        "PERMISSION_DENIED",
    )
}

/// `path?name=value&…` with each value encoded.
pub fn link(path: &str, params: &[(&str, &str)]) -> String {
    let params: Vec<(&str, &str)> = params
        .iter()
        .copied()
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if params.is_empty() {
        return path.to_string();
    }
    format!(
        "{path}?{}",
        serde_urlencoded::to_string(&params).unwrap_or_default()
    )
}

/// What a path segment escapes: everything but the unreserved characters (RFC 3986 §2.3).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The address of a skill's page (`sub` empty) or of one of its pages (`/edit`, `/diff`,
/// `/export`, and the `/lifecycle` and `/archive` forms): `/console/skills/{ws}/{slug}…`.
pub fn skill_link(ws: &str, slug: &str, sub: &str, params: &[(&str, &str)]) -> String {
    let ws = percent_encoding::utf8_percent_encode(ws, SEGMENT);
    let slug = percent_encoding::utf8_percent_encode(slug, SEGMENT);
    link(&format!("/console/skills/{ws}/{slug}{sub}"), params)
}

/// A rendered console page.
pub fn render(status: StatusCode, page: &impl Template) -> Response {
    pages::html_with_policy(status, page, CONSOLE_POLICY)
}

#[derive(Template)]
#[template(path = "console/message.html")]
struct MessagePage<'a> {
    chrome: Option<Chrome>,
    title: &'a str,
    message: &'a str,
    code: &'a str,
}

fn render_message(status: StatusCode, title: &str, message: &str, code: &str) -> Response {
    render(
        status,
        &MessagePage {
            chrome: None,
            title,
            message,
            code,
        },
    )
}

/// A service error as a console page: the SPEC status and code, inside the chrome of the page
/// that failed. Handlers return [`PageResult`] and turn errors into it with
/// `.map_err(ctx.fail("tab"))?`.
pub struct Failure {
    chrome: Chrome,
    error: ServiceError,
}

/// What a console handler answers: its page or redirect, or the page of what failed.
pub type PageResult = Result<Response, Failure>;

impl Ctx {
    /// The [`Failure`] of a page under `tab`, for `map_err`.
    pub fn fail(&self, tab: &'static str) -> impl FnOnce(ServiceError) -> Failure + '_ {
        move |error| Failure {
            chrome: self.chrome(tab),
            error,
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let e = &self.error;
        let status =
            StatusCode::from_u16(e.code().http_status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        if matches!(e, ServiceError::Internal(_) | ServiceError::Unavailable(_)) {
            tracing::warn!(error = %e, "a console page failed");
        }
        render(
            status,
            &MessagePage {
                chrome: Some(self.chrome),
                title: "That did not work",
                message: &e.public_message(),
                code: e.code().as_str(),
            },
        )
    }
}

/// A stored instant (`2026-12-01T13:39:03.223Z`) as people read it: `2026-12-01 13:39 UTC`.
/// Anything else is shown as it is.
pub fn when(at: &str) -> String {
    match (at.get(..10), at.get(11..16), at.ends_with('Z')) {
        (Some(day), Some(hm), true) if at.as_bytes().get(10) == Some(&b'T') => {
            format!("{day} {hm} UTC")
        }
        _ => at.to_string(),
    }
}

/// The fields of an urlencoded form, in order (names may repeat).
pub struct Fields(pub Vec<(String, String)>);

/// An urlencoded form with more than [`FORM_FIELDS_MAX`] fields.
#[derive(Debug, PartialEq, Eq)]
pub struct TooManyFields;

impl Fields {
    /// Reads an urlencoded body (`application/x-www-form-urlencoded`: `&`-separated
    /// `name=value` pairs, `+` for a space, percent-escapes, invalid UTF-8 replaced). The
    /// pairs are counted before any is decoded, so a form past [`FORM_FIELDS_MAX`] costs
    /// no allocation at all, and one within it at most its own size again.
    pub fn parse(body: &[u8]) -> Result<Fields, TooManyFields> {
        let pairs = || body.split(|b| *b == b'&').filter(|pair| !pair.is_empty());
        if pairs().nth(FORM_FIELDS_MAX).is_some() {
            return Err(TooManyFields);
        }
        Ok(Fields(
            pairs()
                .map(|pair| match pair.iter().position(|b| *b == b'=') {
                    Some(eq) => (form_decode(&pair[..eq]), form_decode(&pair[eq + 1..])),
                    None => (form_decode(pair), String::new()),
                })
                .collect(),
        ))
    }

    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }
    pub fn opt(&self, name: &str) -> Option<String> {
        let v = self.get(name).trim();
        (!v.is_empty()).then(|| v.to_string())
    }
}

/// One name or value of an urlencoded form, decoded.
fn form_decode(raw: &[u8]) -> String {
    let spaced: std::borrow::Cow<'_, [u8]> = if raw.contains(&b'+') {
        raw.iter()
            .map(|&b| if b == b'+' { b' ' } else { b })
            .collect::<Vec<u8>>()
            .into()
    } else {
        raw.into()
    };
    percent_encoding::percent_decode(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

/// Extractor of a console page: the signed-in person, or (rejection) the sign-in page that
/// leads back here.
pub struct Signed(pub Ctx);

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let ctx = session::signed(state, &parts.headers, &parts.uri).await?;
        crate::http::request_log::record_account(&parts.extensions, &ctx.who.account.account_id);
        Ok(Signed(ctx))
    }
}

/// Extractor of the checks of a console post that need no body (same origin, signed in):
/// the first of every post's extractors, so a refused or signed-out post is answered before
/// any of its body is read. The handler checks the form token ([`foreign_form`]) once it has
/// read the form.
pub struct SignedPost(pub Ctx);

impl FromRequestParts<AppState> for SignedPost {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let ctx = session::signed_post(state, &parts.headers)
            .await
            .map_err(post_refused)?;
        crate::http::request_log::record_account(&parts.extensions, &ctx.who.account.account_id);
        Ok(SignedPost(ctx))
    }
}

/// Extractor of a console form post: same origin and signed in ([`SignedPost`], before the
/// body), then the urlencoded body within the route's limit, at most [`FORM_FIELDS_MAX`]
/// fields, and the session's form token among them.
pub struct Posted(pub Ctx, pub Fields);

impl FromRequest<AppState> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let SignedPost(ctx) = SignedPost::from_request_parts(&mut parts, state).await?;
        let body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(|e| unreadable(e.status(), "form"))?;
        let fields = Fields::parse(&body).map_err(|TooManyFields| {
            render_message(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Request refused",
                &format!("The form has more than {FORM_FIELDS_MAX} fields."),
                "VALIDATION_ERROR",
            )
        })?;
        drop(body);
        if let Some(refused) = foreign_form(&ctx, fields.get("csrf")) {
            return Err(refused);
        }
        Ok(Posted(ctx, fields))
    }
}

/// The skill a `/console/skills/{ws}/{slug}…` address names; an address that cannot be read
/// is the console's page-not-found.
pub struct SkillAt {
    pub ws: String,
    pub slug: String,
}

impl<S: Send + Sync> FromRequestParts<S> for SkillAt {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        match Path::<(String, String)>::from_request_parts(parts, state).await {
            Ok(Path((ws, slug))) => Ok(SkillAt { ws, slug }),
            Err(_) => Err(not_found_page().await),
        }
    }
}

/// A form about one skill: the POST checks passed ([`Posted`]), and the skill its address
/// names — or, posted to the address the forms had before skills had their own
/// (`/console/skill/lifecycle`), the skill its `ws` and `slug` fields name.
pub struct SkillForm(pub Ctx, pub SkillAt, pub Fields);

impl FromRequest<AppState> for SkillForm {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let addressed = Path::<(String, String)>::from_request_parts(&mut parts, state)
            .await
            .ok()
            .map(|Path((ws, slug))| SkillAt { ws, slug });
        let Posted(ctx, fields) =
            Posted::from_request(Request::from_parts(parts, body), state).await?;
        let at = addressed.unwrap_or_else(|| SkillAt {
            ws: fields.get("ws").to_string(),
            slug: fields.get("slug").to_string(),
        });
        Ok(SkillForm(ctx, at, fields))
    }
}

/// A console address that does not exist: a page a person can read (not the API's JSON).
pub async fn not_found_page() -> Response {
    render_message(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no console page at this address. The skill list has everything the console shows.",
        "NOT_FOUND",
    )
}

/// The skill pages moved from `/console/skill…?ws=…&slug=…` to `/console/skills/{ws}/{slug}…`:
/// an old link (a bookmark, a page opened before an upgrade) is sent to the new address, its
/// other parameters kept. Without `ws` the workspace is the one the slug resolves to.
async fn moved(state: &AppState, ctx: &Ctx, uri: &Uri, sub: &str) -> PageResult {
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(uri.query().unwrap_or("")).unwrap_or_default();
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let (ws, slug) = (get("ws"), get("slug"));
    if slug.is_empty() {
        return Ok(see_other("/console/skills"));
    }
    let ws = if ws.is_empty() {
        state
            .service
            .get_skill(&ctx.principal, slug, None)
            .await
            .map_err(ctx.fail("skills"))?
            .workspace
    } else {
        ws.to_string()
    };
    let rest: Vec<(&str, &str)> = query
        .iter()
        .filter(|(k, _)| k != "ws" && k != "slug")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut response = see_other(&skill_link(&ws, slug, sub, &rest));
    *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
    Ok(response)
}

async fn moved_show(State(state): State<AppState>, Signed(ctx): Signed, uri: Uri) -> PageResult {
    moved(&state, &ctx, &uri, "").await
}

async fn moved_edit(State(state): State<AppState>, Signed(ctx): Signed, uri: Uri) -> PageResult {
    moved(&state, &ctx, &uri, "/edit").await
}

async fn moved_diff(State(state): State<AppState>, Signed(ctx): Signed, uri: Uri) -> PageResult {
    moved(&state, &ctx, &uri, "/diff").await
}

async fn moved_export(State(state): State<AppState>, Signed(ctx): Signed, uri: Uri) -> PageResult {
    moved(&state, &ctx, &uri, "/export").await
}

/// A page's query parameters; an unreadable query string counts as none (the page shows its
/// defaults rather than an error a person cannot act on).
pub struct Params<T>(pub T);

impl<T: serde::de::DeserializeOwned + Default, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(Params(
            Query::<T>::from_request_parts(parts, state)
                .await
                .map(|Query(v)| v)
                .unwrap_or_default(),
        ))
    }
}

/// The person's workspaces, or none when the lookup fails (pages still render).
pub async fn workspaces(state: &AppState, ctx: &Ctx) -> Vec<WorkspaceView> {
    state
        .service
        .list_workspaces(&ctx.principal)
        .await
        .unwrap_or_default()
}

async fn index() -> Response {
    see_other("/console/skills")
}

async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        SCRIPT,
    )
        .into_response()
}

/// Every console route. A skill's pages live under `/console/skills/{ws}/{slug}`; the old
/// query-string addresses redirect there (GET) or are still served (the two forms, for pages
/// opened before an upgrade); any other `/console/…` address is the page-not-found.
pub fn routes() -> Router<AppState> {
    let skill = "/console/skills/{ws}/{slug}";
    let forms = Router::new()
        .route("/console", get(index))
        .route("/console/", get(index))
        .route("/console/skills", get(skills::list))
        .route("/console/skills/new", get(editor::new_skill))
        .route(skill, get(skills::show))
        .route(&format!("{skill}/edit"), get(editor::edit))
        .route(&format!("{skill}/diff"), get(diff::page))
        .route(&format!("{skill}/export"), get(skills::export))
        .route(&format!("{skill}/lifecycle"), post(skills::lifecycle))
        .route(&format!("{skill}/archive"), post(skills::archive))
        .route("/console/skill", get(moved_show))
        .route("/console/skill/edit", get(moved_edit))
        .route("/console/skill/diff", get(moved_diff))
        .route("/console/skill/export", get(moved_export))
        .route("/console/skill/lifecycle", post(skills::lifecycle))
        .route("/console/skill/archive", post(skills::archive))
        .route("/console/import", get(import::page))
        .route("/console/memories", get(memories::page))
        .route("/console/memories/forget", post(memories::forget))
        .route("/console/memories/restore", post(memories::restore))
        .route("/console/keys", get(keys::page))
        .route("/console/keys/create", post(keys::create))
        .route("/console/keys/revoke", post(keys::revoke))
        .route("/console/grants", get(keys::grants))
        .route("/console/grants/revoke", post(keys::revoke_grant))
        .route("/console/members", get(members::page))
        .route("/console/members/action", post(members::action))
        .route("/console/account", get(account::page))
        .route("/console/account/password", post(account::password))
        .route("/console/account/export", get(account::export))
        .route("/console/account/delete", post(account::delete))
        .route("/console/connect", get(connect::page))
        .route("/console/help", get(help::page))
        .route("/console/{*unknown}", any(not_found_page))
        .route("/assets/console.js", get(script))
        .layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES));
    let preview = Router::new()
        .route("/console/preview", post(editor::preview))
        .layer(DefaultBodyLimit::max(PREVIEW_LIMIT_BYTES));
    let uploads = Router::new()
        .route("/console/skills/save", post(editor::save))
        .route("/console/import", post(import::submit))
        .layer(DefaultBodyLimit::max(UPLOAD_LIMIT_BYTES));
    forms.merge(preview).merge(uploads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(body: &str) -> Vec<(String, String)> {
        Fields::parse(body.as_bytes()).expect("within the cap").0
    }

    #[test]
    fn forms_are_read_as_browsers_write_them() {
        let owned = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            pairs("csrf=t%2Bk&body=a+b%0D%0Ac&scope=x&scope=y"),
            owned(&[
                ("csrf", "t+k"),
                ("body", "a b\r\nc"),
                ("scope", "x"),
                ("scope", "y")
            ])
        );
        // Empty pieces are no fields; a name without `=` has an empty value; bad escapes and
        // bytes that are not UTF-8 are kept as text rather than refused.
        assert_eq!(
            pairs("&&flag&n=%zz&u=%FF&&"),
            owned(&[("flag", ""), ("n", "%zz"), ("u", "\u{fffd}")])
        );
        assert_eq!(pairs(""), owned(&[]));
        // What serde_urlencoded (the reader before) gives, for a body with every feature.
        let body = "a=1&b=%E2%9C%93+ok&c&=v&d=x%3Dy";
        let before: Vec<(String, String)> = serde_urlencoded::from_str(body).unwrap();
        assert_eq!(pairs(body), before);
    }

    #[test]
    fn a_form_past_the_field_cap_is_refused_whole() {
        let at_cap = "a&".repeat(FORM_FIELDS_MAX);
        assert_eq!(pairs(&at_cap).len(), FORM_FIELDS_MAX);
        let past = "a&".repeat(FORM_FIELDS_MAX + 1);
        assert_eq!(Fields::parse(past.as_bytes()).err(), Some(TooManyFields));
        // The attack of #29: one byte pair per field, the whole preview limit of them.
        let attack = "a&".repeat(PREVIEW_LIMIT_BYTES / 2);
        assert_eq!(Fields::parse(attack.as_bytes()).err(), Some(TooManyFields));
    }
}
