//! Who is signed in, for every page: the session cookie resolved through the service, the
//! sign-in redirect that brings a signed-out visitor back, and the checks of a state-changing
//! form (same origin, signed in, the session's form token). The console and the consent page
//! both use these; each renders a refusal in its own page.

use super::pages::secure_headers;
use super::{Site, cookies, guard};
use crate::auth::{Principal, tokens_match};
use crate::service::signin::SignedIn;
use crate::state::AppState;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// The signed-in person of a request.
pub struct Ctx {
    pub who: SignedIn,
    pub principal: Principal,
    /// The form token of the session, put in every form.
    pub token: String,
    /// The session cookie's secret (signing out needs it). Never rendered.
    pub secret: String,
}

/// Why a state-changing form was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostRefusal {
    /// The browser says it comes from another site (the reason, for the person).
    CrossSite(&'static str),
    /// No live session: the person signed out or the session expired.
    SignedOut,
    /// The form's token is not this session's.
    ForeignForm,
}

/// The signed-in person and their session secret, when the request carries a live session
/// cookie.
pub async fn signed_in(state: &AppState, headers: &HeaderMap) -> Option<(SignedIn, String)> {
    let site = Site::new(&state.info.public_url);
    let secret = cookies::read(headers, &cookies::session_name(&site))?;
    match state.service.session(&secret).await {
        Ok(Some(who)) => Some((who, secret)),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error = %e, "session lookup failed");
            None
        }
    }
}

fn ctx(who: SignedIn, secret: String) -> Ctx {
    Ctx {
        principal: who.principal(),
        token: guard::session_token(&secret),
        secret,
        who,
    }
}

/// The signed-in person, or the sign-in page that brings them back to `uri`.
pub async fn signed(state: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<Ctx, Response> {
    match signed_in(state, headers).await {
        Some((who, secret)) => Ok(ctx(who, secret)),
        None => {
            let here = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
            let query = serde_urlencoded::to_string([("next", here)]).unwrap_or_default();
            Err(see_other(&format!("/login?{query}")))
        }
    }
}

/// A state-changing request: from this site, signed in, with the session's form token.
pub async fn posted(
    state: &AppState,
    headers: &HeaderMap,
    token: &str,
) -> Result<Ctx, PostRefusal> {
    let signed = signed_post(state, headers).await?;
    form_token_matches(&signed, token)?;
    Ok(signed)
}

/// The checks of a state-changing request that its head answers: from this site, signed in.
/// They come before its body is read, so a visitor who is not signed in costs the server no
/// more than the request's head; the form token ([`form_token_matches`]) is checked once the
/// form is read.
pub async fn signed_post(state: &AppState, headers: &HeaderMap) -> Result<Ctx, PostRefusal> {
    let site = Site::new(&state.info.public_url);
    guard::same_origin(headers, &site).map_err(PostRefusal::CrossSite)?;
    let Some((who, secret)) = signed_in(state, headers).await else {
        return Err(PostRefusal::SignedOut);
    };
    Ok(ctx(who, secret))
}

/// The form carries the token of the session that [`signed_post`] found.
pub fn form_token_matches(signed: &Ctx, token: &str) -> Result<(), PostRefusal> {
    if tokens_match(&signed.token, token) {
        Ok(())
    } else {
        Err(PostRefusal::ForeignForm)
    }
}

/// A redirect after a form (303, so the browser does not post it again) or to sign in.
pub fn see_other(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    secure_headers(response.headers_mut());
    response
}
