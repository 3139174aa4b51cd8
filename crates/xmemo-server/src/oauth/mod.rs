//! The OAuth 2.1 authorization server's endpoints, which MCP hosts connect through (SPEC §7,
//! docs/oauth.md). The issuer is the public URL; tokens are for the `/mcp` resource only.
//!
//! - `metadata.rs`: RFC 8414 metadata (also served as OpenID discovery);
//! - `register.rs`: dynamic client registration (RFC 7591);
//! - `token.rs`: the token endpoint and revocation (RFC 7009);
//! - `response.rs`: OAuth errors as HTTP (status, Basic challenge, never cached).
//!
//! These parse the protocol and render its answers. Every rule (clients, PKCE, redirect
//! URIs, metadata documents, codes, tokens) is in the service (`service/oauth/`); the
//! authorization endpoint is a page a person sees (`web/consent.rs`).

mod metadata;
mod register;
pub mod response;
mod token;

use crate::http::limits::FORM_LIMIT_BYTES;
use crate::state::{AUTHORIZATION_SERVER_METADATA_PATH, AppState};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

/// The authorization server's metadata documents and endpoints, but for the authorization
/// endpoint (a page: `web::consent`).
pub fn routes() -> Router<AppState> {
    let documents = Router::new()
        .route(AUTHORIZATION_SERVER_METADATA_PATH, get(metadata::document))
        .route("/.well-known/openid-configuration", get(metadata::document));
    let endpoints = Router::new()
        .route("/oauth/register", post(register::register))
        .route("/oauth/token", post(token::token))
        .route("/oauth/revoke", post(token::revoke))
        .layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES));
    documents.merge(endpoints)
}
