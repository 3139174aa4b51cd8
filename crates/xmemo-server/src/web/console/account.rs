//! The account: password change, the account export (one streamed ZIP: every skill as
//! capsules plus memories, JSON) and deletion with the handle typed back.

use super::{Chrome, PageResult, Posted, Signed, render, see_other};
use crate::error::ServiceError;
use crate::state::AppState;
use crate::web::{Site, cookies};
use askama::Template;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

#[derive(Template)]
#[template(path = "console/account.html")]
struct AccountPage {
    chrome: Option<Chrome>,
    token: String,
    handle: String,
    display_name: String,
    is_admin: bool,
    created_at: String,
}

pub async fn page(State(_state): State<AppState>, Signed(ctx): Signed) -> Response {
    let a = &ctx.who.account;
    render(
        StatusCode::OK,
        &AccountPage {
            chrome: Some(ctx.chrome("account")),
            token: ctx.token.clone(),
            handle: a.handle.clone(),
            display_name: a.display_name.clone(),
            is_admin: a.is_admin,
            created_at: a.created_at.clone(),
        },
    )
}

/// One live key as the page after a password change lists it.
struct KeyRow {
    name: String,
    prefix: String,
    scopes: String,
    created_at: String,
    last_used_at: String,
}

#[derive(Template)]
#[template(path = "console/password_changed.html")]
struct PasswordChangedPage {
    chrome: Option<Chrome>,
    grants_revoked: u64,
    keys: Vec<KeyRow>,
}

/// Ends the browser's session cookie on `response`.
fn end_session_cookie(state: &AppState, mut response: Response) -> Response {
    let site = Site::new(&state.info.public_url);
    if let Some(cookie) = cookies::set(&site, &cookies::session_name(&site), "", Some(0)) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Ends the browser's session cookie and sends it to the sign-in page.
fn signed_out(state: &AppState) -> Response {
    end_session_cookie(state, see_other("/login"))
}

pub async fn password(
    State(state): State<AppState>,
    extensions: axum::http::Extensions,
    headers: axum::http::HeaderMap,
    Posted(ctx, f): Posted,
) -> PageResult {
    if f.get("new_password") != f.get("confirm_password") {
        return Err(ctx.fail("account")(ServiceError::validation(
            "the new password and its confirmation differ",
            "confirm_password",
        )));
    }
    let client =
        crate::http::client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let changed = state
        .service
        .change_password(
            &ctx.principal,
            f.get("current_password"),
            f.get("new_password"),
            client,
            f.get("sign_out_everywhere") == "on",
        )
        .await
        .map_err(ctx.fail("account"))?;
    // Every session of the account ended (this one too): the page says what else happened
    // and lists the keys that still work, then the person signs in again.
    let page = PasswordChangedPage {
        chrome: None,
        grants_revoked: changed.grants_revoked,
        keys: changed
            .live_keys
            .into_iter()
            .map(|k| KeyRow {
                name: k.name,
                prefix: k.prefix,
                scopes: k.scopes.join(" "),
                created_at: k.created_at,
                last_used_at: k.last_used_at.unwrap_or_else(|| "never".into()),
            })
            .collect(),
    };
    Ok(end_session_cookie(&state, render(StatusCode::OK, &page)))
}

pub async fn export(State(state): State<AppState>, Signed(ctx): Signed) -> PageResult {
    let mut rx = state
        .service
        .export_account(&ctx.principal)
        .await
        .map_err(ctx.fail("account"))?;
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let mut response = Body::from_stream(stream).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"xmemo-{}-export.zip\"",
        ctx.who.account.handle
    )) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    super::secure_headers(h);
    Ok(response)
}

pub async fn delete(State(state): State<AppState>, Posted(ctx, f): Posted) -> PageResult {
    state
        .service
        .delete_account(&ctx.principal, f.get("confirm").trim())
        .await
        .map_err(ctx.fail("account"))?;
    Ok(signed_out(&state))
}
