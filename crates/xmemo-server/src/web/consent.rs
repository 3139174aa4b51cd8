//! `GET /oauth/authorize` and the consent form it leads to (`POST /oauth/authorize`): the
//! OAuth authorization endpoint is a page a person sees.
//!
//! The service checks the request (`service/oauth/authorize.rs`: code flow, PKCE S256, the
//! redirect URI, `state`, scopes, `resource`); this page shows the consent form, and answers
//! the client at its redirect URI with `state` echoed and `iss` added (RFC 9207). Until the
//! client and its redirect URI are known to be good, nothing is sent there: the browser gets
//! a page. A person who is not signed in signs in first and comes back here; the form passes
//! the same session and form-token checks as every console form (`session.rs`).

use super::pages::{self, html};
use super::session::{self, PostRefusal};
use crate::service::oauth::{
    Authorization, AuthorizationParams, AuthorizationRefusal, OAuthError, OAuthErrorKind,
    redirect_uri,
};
use crate::state::AppState;
use askama::Template;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

#[derive(Debug, Deserialize, Default)]
pub struct Params {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    scope: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    resource: Option<String>,
    /// Consent form only.
    csrf: Option<String>,
    decision: Option<String>,
}

#[derive(Template)]
#[template(path = "consent.html")]
struct ConsentPage<'a> {
    handle: &'a str,
    client_name: &'a str,
    client_id: &'a str,
    metadata_document: bool,
    scopes: Vec<(&'a str, &'static str)>,
    target: String,
    loopback: bool,
    csrf: String,
    redirect_uri: &'a str,
    scope: String,
    state: &'a str,
    code_challenge: &'a str,
    resource: &'a str,
}

fn scope_text(scope: &str) -> &'static str {
    match scope {
        "memory:read" => "find and read your skills and memories (search, recall, list, export)",
        "memory:write" => {
            "save and change your skills and memories, and run skill scripts where the operator allows it"
        }
        _ => "",
    }
}

fn back_to_client(
    redirect_uri: &str,
    pairs: &[(&str, &str)],
    issuer: &str,
    status: StatusCode,
) -> Response {
    let Ok(mut url) = reqwest::Url::parse(redirect_uri) else {
        return pages::message(
            StatusCode::BAD_REQUEST,
            "Authorization refused",
            "the redirect URI cannot be used",
            "VALIDATION_ERROR",
        );
    };
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in pairs {
            query.append_pair(k, v);
        }
        query.append_pair("iss", issuer);
    }
    let mut response = status.into_response();
    if let Ok(location) = HeaderValue::from_str(url.as_str()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    pages::secure_headers(response.headers_mut());
    response
}

/// The error sent back to the client: 302 from the authorization request, 303 from the
/// consent form (so the browser does not repost it).
fn error_redirect(
    redirect_uri: &str,
    state: Option<&str>,
    e: &OAuthError,
    issuer: &str,
    status: StatusCode,
) -> Response {
    let mut pairs = vec![
        ("error", e.code()),
        ("error_description", e.description.as_str()),
    ];
    if let Some(s) = state {
        pairs.push(("state", s));
    }
    back_to_client(redirect_uri, &pairs, issuer, status)
}

impl Params {
    fn authorization(&self) -> AuthorizationParams<'_> {
        AuthorizationParams {
            response_type: self.response_type.as_deref(),
            client_id: self.client_id.as_deref(),
            redirect_uri: self.redirect_uri.as_deref(),
            scope: self.scope.as_deref(),
            state: self.state.as_deref(),
            code_challenge: self.code_challenge.as_deref(),
            code_challenge_method: self.code_challenge_method.as_deref(),
            resource: self.resource.as_deref(),
        }
    }
}

/// The service's checks of the request from `from`; a refusal as the page or the redirect
/// it leads to.
async fn check(
    state: &AppState,
    p: &Params,
    from: Option<std::net::IpAddr>,
) -> Result<Authorization, Response> {
    state
        .service
        .check_authorization(&p.authorization(), &state.info.mcp_resource(), from)
        .await
        .map_err(|refusal| match refusal {
            AuthorizationRefusal::Untrusted(message) => bad_request(&message),
            AuthorizationRefusal::ToClient {
                redirect_uri,
                error,
            } => error_redirect(
                &redirect_uri,
                p.state.as_deref(),
                &error,
                &state.info.issuer(),
                StatusCode::FOUND,
            ),
        })
}

fn bad_request(message: &str) -> Response {
    pages::message(
        StatusCode::BAD_REQUEST,
        "This authorization request cannot be used",
        message,
        "VALIDATION_ERROR",
    )
}

fn consent(request: &Authorization, p: &Params, handle: &str, csrf: String) -> Response {
    let target = redirect_uri::shown_target(&request.redirect_uri);
    let loopback = reqwest::Url::parse(&request.redirect_uri)
        .ok()
        .is_some_and(|u| {
            u.scheme() == "http" && u.host_str().is_some_and(redirect_uri::is_loopback_host)
        });
    let page = ConsentPage {
        handle,
        client_name: &request.client.name,
        client_id: &request.client.client_id,
        metadata_document: request.client.metadata_document,
        scopes: request
            .scopes
            .iter()
            .map(|s| (s.as_str(), scope_text(s)))
            .collect(),
        target,
        loopback,
        csrf,
        redirect_uri: &request.redirect_uri,
        scope: request.scopes.join(" "),
        state: p.state.as_deref().unwrap_or(""),
        code_challenge: &request.code_challenge,
        resource: &request.resource,
    };
    let form_action = redirect_uri::form_action_source(&request.redirect_uri);
    html(StatusCode::OK, &page, form_action.as_deref())
}

pub async fn start(
    State(state): State<AppState>,
    uri: Uri,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    params: Result<Query<Params>, QueryRejection>,
) -> Response {
    let Ok(Query(p)) = params else {
        return bad_request("the query string could not be read (a parameter given twice?)");
    };
    let from =
        crate::http::client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let request = match check(&state, &p, from).await {
        Ok(r) => r,
        Err(refusal) => return refusal,
    };
    match session::signed(&state, &headers, &uri).await {
        Ok(signed) => consent(&request, &p, &signed.who.account.handle, signed.token),
        Err(sign_in) => sign_in,
    }
}

pub async fn decide(
    State(state): State<AppState>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Response {
    let token = form
        .as_ref()
        .ok()
        .and_then(|Form(p)| p.csrf.as_deref())
        .unwrap_or("");
    let signed = match session::posted(&state, &headers, token).await {
        Ok(signed) => signed,
        Err(PostRefusal::CrossSite(reason)) => return refused(reason),
        Err(_) if form.is_err() => return bad_request("the consent form could not be read"),
        Err(PostRefusal::SignedOut) => {
            return refused("you are not signed in any more; start connecting the app again");
        }
        Err(PostRefusal::ForeignForm) => {
            return refused("the consent form does not belong to this session");
        }
    };
    let Ok(Form(p)) = form else {
        return bad_request("the consent form could not be read");
    };
    let from =
        crate::http::client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let request = match check(&state, &p, from).await {
        Ok(r) => r,
        Err(refusal) => return refusal,
    };
    let issuer = state.info.issuer();
    let state_param = p.state.as_deref();
    if p.decision.as_deref() != Some("approve") {
        let denied = OAuthError::new(
            OAuthErrorKind::AccessDenied,
            "the person denied the request",
        );
        return error_redirect(
            &request.redirect_uri,
            state_param,
            &denied,
            &issuer,
            StatusCode::SEE_OTHER,
        );
    }
    match state
        .service
        .approve_authorization(&signed.principal, &request)
        .await
    {
        Ok(code) => {
            let mut pairs = vec![("code", code.as_str())];
            if let Some(s) = state_param {
                pairs.push(("state", s));
            }
            back_to_client(
                &request.redirect_uri,
                &pairs,
                &issuer,
                StatusCode::SEE_OTHER,
            )
        }
        Err(e) => error_redirect(
            &request.redirect_uri,
            state_param,
            &OAuthError::from(e),
            &issuer,
            StatusCode::SEE_OTHER,
        ),
    }
}

fn refused(reason: &str) -> Response {
    pages::message(
        StatusCode::FORBIDDEN,
        "Request refused",
        &format!("{reason}."),
        "PERMISSION_DENIED",
    )
}
