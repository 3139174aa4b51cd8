//! The server-rendered pages people use: sign-in (`/login`, `/logout`), the OAuth consent
//! page (`oauth/`) beside it, and the Memory Console (`console/`). Each page is plain HTML
//! from `templates/` with one stylesheet, under a strict Content-Security-Policy; the only
//! script is the console's own file.
//!
//! - `cookies.rs`: the session and sign-in cookies (names, attributes, parsing);
//! - `guard.rs`: the same-origin check every unsafe request passes, and the form tokens;
//! - `pages.rs`: rendering and the security headers of every page;
//! - `login.rs`: the sign-in and sign-out handlers;
//! - `console/`: the Memory Console at `/console`.

pub mod console;
pub mod cookies;
pub mod guard;
mod login;
pub mod pages;

use crate::rest::AppState;
use crate::service::signin::SignedIn;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::get;

/// Largest form body a page accepts.
pub const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// What the pages need to know about where they are served.
#[derive(Debug, Clone)]
pub struct Site {
    /// `scheme://host[:port]` of the public URL, what browsers send as `Origin`.
    pub origin: String,
    /// Cookies get `Secure` (and the `__Host-` prefix) when the public URL is https.
    pub secure: bool,
}

impl Site {
    pub fn new(public_url: &str) -> Self {
        let parsed = reqwest::Url::parse(public_url.trim_end_matches('/')).ok();
        let origin = parsed
            .as_ref()
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        Self {
            secure: parsed.is_some_and(|u| u.scheme() == "https"),
            origin,
        }
    }
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

/// `/login`, `/logout` and the stylesheet.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/login", get(login::page).post(login::submit))
        .route("/logout", axum::routing::post(login::logout))
        .route("/assets/xmemo.css", get(pages::stylesheet))
        .layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES))
        .merge(console::routes())
}
