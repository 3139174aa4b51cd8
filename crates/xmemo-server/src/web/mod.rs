//! The server-rendered pages people use: sign-in (`/login`, `/logout`), the OAuth consent
//! page (`/oauth/authorize`) and the Memory Console (`console/`). Each page is plain HTML
//! from `templates/` with one stylesheet, under a strict Content-Security-Policy; the only
//! script is the console's own file.
//!
//! - `cookies.rs`: the session and sign-in cookies (names, attributes, parsing);
//! - `guard.rs`: the same-origin check every unsafe request passes, and the form tokens;
//! - `session.rs`: who is signed in, the sign-in redirect, the checks of every form post;
//! - `pages.rs`: rendering and the security headers of every page;
//! - `login.rs`: the sign-in and sign-out handlers;
//! - `consent.rs`: the OAuth authorization endpoint, a page where a person approves a client;
//! - `console/`: the Memory Console at `/console`.

mod consent;
pub mod console;
pub mod cookies;
pub mod guard;
mod login;
pub mod pages;
pub mod session;

use crate::http::limits::FORM_LIMIT_BYTES;
use crate::state::AppState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;

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

/// `/` (the console for a browser), `/login`, `/logout`, the consent page, the stylesheet,
/// the icon and the console.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(pages::root))
        .route("/favicon.ico", get(pages::favicon))
        .route("/login", get(login::page).post(login::submit))
        .route(
            "/oauth/authorize",
            get(consent::start).post(consent::decide),
        )
        .route("/logout", axum::routing::post(login::logout))
        .route("/assets/xmemo.css", get(pages::stylesheet))
        .layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES))
        .merge(console::routes())
}
