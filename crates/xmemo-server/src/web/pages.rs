//! Rendering: every page leaves here with the same security headers. The policy allows only
//! this server's stylesheet; no script, no frame, no other origin — except the one origin a
//! consent form may redirect to, which Chromium checks against `form-action`.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("../../templates/xmemo.css");

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
}
