//! `GET /login` (the form, or who is signed in), `POST /login`, `POST /logout`.

use super::pages::{self, html};
use super::session::{self, PostRefusal, see_other};
use super::{Site, cookies, guard};
use crate::error::ServiceError;
use crate::state::AppState;
use askama::Template;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use rand::RngCore;
use serde::Deserialize;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    csrf: &'a str,
    next: &'a str,
    handle: &'a str,
    error: Option<String>,
    error_code: &'a str,
}

#[derive(Template)]
#[template(path = "signed_in.html")]
struct SignedInPage<'a> {
    handle: &'a str,
    display_name: &'a str,
    csrf: &'a str,
}

#[derive(Debug, Deserialize, Default)]
pub struct LoginQuery {
    next: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    handle: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
    #[serde(default)]
    csrf: String,
}

#[derive(Debug, Deserialize)]
pub struct TokenForm {
    #[serde(default)]
    csrf: String,
}

/// Where to go after signing in: a path on this server only (never `//host` or a URL), so
/// the page cannot be used to send people elsewhere. Without one, the console: landing on the
/// sign-in page again would look as if signing in had failed.
pub fn local_target(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && n.len() <= 8192
                && !n.chars().any(|c| c.is_control() || c == '\\') =>
        {
            n.to_string()
        }
        _ => "/console".to_string(),
    }
}

fn new_form_value() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A well-formed sign-in form cookie, reused so several open tabs keep working.
fn form_cookie(headers: &HeaderMap, site: &Site) -> Option<String> {
    cookies::read(headers, &cookies::login_name(site)).filter(|v| {
        v.len() == 32
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

fn login_form(
    status: StatusCode,
    site: &Site,
    form_value: &str,
    next: &str,
    handle: &str,
    error: Option<&ServiceError>,
) -> Response {
    let page = LoginPage {
        csrf: form_value,
        next,
        handle,
        error: error.map(ServiceError::public_message),
        error_code: error.map_or("", |e| e.code().as_str()),
    };
    let mut response = html(status, &page, None);
    if let Some(cookie) = cookies::set(site, &cookies::login_name(site), form_value, None) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    if let Some(secs) = error.and_then(ServiceError::retry_after_secs) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn refused(reason: &str) -> Response {
    pages::message(
        StatusCode::FORBIDDEN,
        "Request refused",
        &format!("{reason}. Open the page again and resend the form."),
        "PERMISSION_DENIED",
    )
}

pub async fn page(
    State(state): State<AppState>,
    query: Result<Query<LoginQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let site = Site::new(&state.info.public_url);
    let asked = query.as_ref().ok().and_then(|q| q.next.as_deref());
    let next = local_target(asked);
    if let Some((who, secret)) = session::signed_in(&state, &headers).await {
        // A bare `/login` shows who is signed in (and the way out) rather than leaving.
        if asked.is_some() && next != "/login" {
            return see_other(&next);
        }
        let token = guard::session_token(&secret);
        return html(
            StatusCode::OK,
            &SignedInPage {
                handle: &who.account.handle,
                display_name: &who.account.display_name,
                csrf: &token,
            },
            None,
        );
    }
    let value = form_cookie(&headers, &site).unwrap_or_else(new_form_value);
    login_form(StatusCode::OK, &site, &value, &next, "", None)
}

pub async fn submit(
    State(state): State<AppState>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let site = Site::new(&state.info.public_url);
    if let Err(reason) = guard::same_origin(&headers, &site) {
        return refused(reason);
    }
    let Ok(Form(form)) = form else {
        return refused("the form could not be read");
    };
    let Some(expected) = form_cookie(&headers, &site) else {
        return refused("the sign-in form expired or cookies are blocked");
    };
    if !crate::auth::tokens_match(&expected, &form.csrf) {
        return refused("the sign-in form does not belong to this browser session");
    }
    let next = local_target(Some(&form.next));
    let client =
        crate::http::client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let previous = cookies::read(&headers, &cookies::session_name(&site));
    let device = cookies::read(&headers, &cookies::device_name(&site));
    match state
        .service
        .sign_in(
            &form.handle,
            &form.password,
            client,
            device.as_deref(),
            previous.as_deref(),
        )
        .await
    {
        Ok(created) => {
            let mut response = see_other(&next);
            let lifetime = state.service.session_lifetime().as_secs();
            let out = response.headers_mut();
            for cookie in [
                cookies::set(
                    &site,
                    &cookies::session_name(&site),
                    &created.secret,
                    Some(lifetime),
                ),
                cookies::set(&site, &cookies::login_name(&site), "", Some(0)),
                cookies::set(
                    &site,
                    &cookies::device_name(&site),
                    &created.device,
                    Some(crate::service::signin::DEVICE_COOKIE_LIFETIME.as_secs()),
                ),
            ]
            .into_iter()
            .flatten()
            {
                out.append(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(e) => {
            let status = StatusCode::from_u16(e.code().http_status())
                .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            login_form(status, &site, &expected, &next, &form.handle, Some(&e))
        }
    }
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    let token = form.as_ref().map_or("", |Form(f)| f.csrf.as_str());
    let secret = match session::posted(&state, &headers, token).await {
        Ok(signed) => signed.secret,
        Err(PostRefusal::CrossSite(reason)) => return refused(reason),
        Err(PostRefusal::SignedOut) => return see_other("/login"),
        Err(PostRefusal::ForeignForm) if form.is_err() => {
            return refused("the form could not be read");
        }
        Err(PostRefusal::ForeignForm) => {
            return refused("the form does not belong to this session");
        }
    };
    if let Err(e) = state.service.sign_out(&secret).await {
        tracing::warn!(error = %e, "sign-out failed");
        return pages::message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Sign-out failed",
            &e.public_message(),
            e.code().as_str(),
        );
    }
    let site = Site::new(&state.info.public_url);
    let mut response = see_other("/login");
    if let Some(cookie) = cookies::set(&site, &cookies::session_name(&site), "", Some(0)) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::local_target;

    #[test]
    fn only_local_paths_are_followed() {
        assert_eq!(
            local_target(Some("/oauth/authorize?x=1")),
            "/oauth/authorize?x=1"
        );
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil",
            "evil",
            "/a\nb",
        ] {
            assert_eq!(local_target(Some(bad)), "/console", "{bad}");
        }
        assert_eq!(local_target(None), "/console");
        assert_eq!(local_target(Some("")), "/console");
    }
}
