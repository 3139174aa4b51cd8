//! Rendering: every page leaves here with the same security headers. The policy allows only
//! this server's stylesheet; no script, no frame, no other origin — except the one origin a
//! consent form may redirect to, which Chromium checks against `form-action`.

use crate::error::ServiceError;
use crate::http::error::ApiError;
use askama::Template;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("../../templates/xmemo.css");
/// A 32×32 icon (one PNG inside an ICO), so browsers stop asking for a missing one.
const FAVICON: &[u8] = include_bytes!("../../templates/favicon.ico");

/// The Content-Security-Policy of a page whose forms may also lead to `form_target` (an
/// origin such as `http://127.0.0.1:53117`, or a scheme such as `cursor:`).
pub fn policy(form_target: Option<&str>) -> String {
    let extra = form_target
        .filter(|t| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ":/.-[]+".contains(c))
        })
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    format!(
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'{extra}; frame-ancestors 'none'; base-uri 'none'"
    )
}

/// A rendered page with its status and headers.
pub fn html(status: StatusCode, page: &impl Template, form_target: Option<&str>) -> Response {
    html_with_policy(status, page, &policy(form_target))
}

/// A rendered page under the Content-Security-Policy `csp` (the console's admits its own
/// script file).
pub fn html_with_policy(status: StatusCode, page: &impl Template, csp: &str) -> Response {
    let body = match page.render() {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "a page template failed to render");
            return (StatusCode::SERVICE_UNAVAILABLE, "page unavailable").into_response();
        }
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    secure_headers(headers);
    response
}

/// Headers every page and redirect of the sign-in and OAuth flows carries.
pub fn secure_headers(headers: &mut axum::http::HeaderMap) {
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Not `no-referrer`: with it browsers send `Origin: null` on form posts, and the
    // same-origin check could not tell this site from any other.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// A page that only says what went wrong (a refused form, a bad authorization request).
#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage<'a> {
    pub title: &'a str,
    pub message: &'a str,
    /// The SPEC error code, also in the page for scripts and tests.
    pub code: &'a str,
}

pub fn message(status: StatusCode, title: &str, message: &str, code: &str) -> Response {
    html(
        status,
        &MessagePage {
            title,
            message,
            code,
        },
        None,
    )
}

pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        STYLESHEET,
    )
        .into_response()
}

pub async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/x-icon"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        FAVICON,
    )
        .into_response()
}

/// `GET /`: a person who types the server's address reaches the console; an API client (one
/// that does not ask for HTML) keeps the JSON 404 every unknown address answers.
pub async fn root(headers: HeaderMap) -> Response {
    if wants_html(&headers) {
        return super::session::see_other("/console");
    }
    ApiError(ServiceError::NotFound("no such endpoint".into())).into_response()
}

/// Whether the request's `Accept` names `text/html`, as every browser's navigation does
/// (`*/*` alone, what curl and most HTTP libraries send, is not a browser).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let kind = parts.next().unwrap_or("").trim();
            // `text/html;q=0` says the client does not want HTML.
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            kind.eq_ignore_ascii_case("text/html") && !refused
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_admits_only_a_plain_form_target() {
        assert!(policy(None).contains("form-action 'self';"));
        assert!(
            policy(Some("http://127.0.0.1:5000"))
                .contains("form-action 'self' http://127.0.0.1:5000;")
        );
        assert!(policy(Some("cursor:")).contains("form-action 'self' cursor:;"));
        // Anything that could end the directive is dropped.
        assert!(policy(Some("x; script-src *")).contains("form-action 'self';"));
        assert!(policy(None).contains("default-src 'none'"));
    }

    #[test]
    fn only_a_request_that_asks_for_html_is_a_browser() {
        let accept = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            wants_html(&h)
        };
        assert!(accept(
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
        ));
        assert!(accept("TEXT/HTML"));
        assert!(!accept("application/json"));
        assert!(!accept("*/*"));
        assert!(!accept("text/html;q=0, application/json"));
        assert!(!wants_html(&HeaderMap::new()));
    }
}
