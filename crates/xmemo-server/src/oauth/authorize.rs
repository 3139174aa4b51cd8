//! `GET /oauth/authorize` and the consent form it leads to (`POST /oauth/authorize`).
//!
//! Code flow only, PKCE S256 required, the redirect URI matched exactly (a loopback one on
//! any port), `state` echoed and `iss` added to every answer sent back to the client
//! (RFC 9207), `resource` bound to this server's `/mcp` (RFC 8707). Until the client and its
//! redirect URI are known to be good, nothing is sent there: the browser gets a page. A
//! person who is not signed in signs in first and comes back here.

use super::redirect_uri;
use crate::oauth::error::OAuthError;
use crate::rest::AppState;
use crate::service::oauth::{Authorization, check_resource, parse_scope};
use crate::web::pages::{self, html};
use crate::web::{Site, guard};
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

/// Why a request is refused: before the redirect URI is trusted a page, after it an error
/// sent back to the client.
enum Refusal {
    Page(String),
    Redirect(Response),
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
        ("error", e.error),
        ("error_description", e.description.as_str()),
    ];
    if let Some(s) = state {
        pairs.push(("state", s));
    }
    back_to_client(redirect_uri, &pairs, issuer, status)
}

/// Every check of an authorization request, in order.
async fn check(state: &AppState, p: &Params) -> Result<Authorization, Refusal> {
    let Some(client_id) = p.client_id.as_deref().filter(|c| !c.is_empty()) else {
        return Err(Refusal::Page("the request names no client_id".into()));
    };
    let client = state
        .service
        .oauth_client(client_id)
        .await
        .map_err(|e| Refusal::Page(e.description))?;
    let redirect = match p.redirect_uri.as_deref() {
        Some(uri) => match client.redirect_uri_for(uri) {
            Some(_) => uri.to_string(),
            None => {
                return Err(Refusal::Page(format!(
                    "redirect_uri `{uri}` is not registered for this client"
                )));
            }
        },
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(Refusal::Page(
                "redirect_uri is required: this client registered several".into(),
            ));
        }
    };
    let issuer = super::issuer(&state.info);
    let fail = |e: OAuthError| {
        Refusal::Redirect(error_redirect(
            &redirect,
            p.state.as_deref(),
            &e,
            &issuer,
            StatusCode::FOUND,
        ))
    };
    if p.response_type.as_deref() != Some("code") {
        return Err(fail(OAuthError::new(
            "unsupported_response_type",
            "only response_type=code is supported",
        )));
    }
    let Some(challenge) = p.code_challenge.as_deref().filter(|c| !c.is_empty()) else {
        return Err(fail(OAuthError::invalid_request(
            "code_challenge is required (PKCE with S256)",
        )));
    };
    if p.code_challenge_method.as_deref() != Some("S256") {
        return Err(fail(OAuthError::invalid_request(
            "code_challenge_method must be S256 (plain is not accepted)",
        )));
    }
    if !super::pkce::valid_challenge(challenge) {
        return Err(fail(OAuthError::invalid_request(
            "code_challenge must be the base64url SHA-256 of the verifier (43 characters)",
        )));
    }
    if p.state.as_deref().is_some_and(|s| s.len() > 2048) {
        return Err(fail(OAuthError::invalid_request(
            "state is longer than 2048 bytes",
        )));
    }
    let scopes = parse_scope(p.scope.as_deref()).map_err(fail)?;
    let resource =
        check_resource(p.resource.as_deref(), &super::mcp_resource(&state.info)).map_err(fail)?;
    Ok(Authorization {
        client,
        redirect_uri: redirect,
        scopes,
        resource,
        code_challenge: challenge.to_string(),
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
    headers: HeaderMap,
    params: Result<Query<Params>, QueryRejection>,
) -> Response {
    let Ok(Query(p)) = params else {
        return bad_request("the query string could not be read (a parameter given twice?)");
    };
    let request = match check(&state, &p).await {
        Ok(r) => r,
        Err(Refusal::Page(m)) => return bad_request(&m),
        Err(Refusal::Redirect(r)) => return r,
    };
    let Some((who, secret)) = crate::web::signed_in(&state, &headers).await else {
        let here = uri
            .path_and_query()
            .map(|pq| pq.as_str().to_string())
            .unwrap_or_else(|| "/oauth/authorize".into());
        let to = format!("/login?next={}", urlencode(&here));
        let mut response = StatusCode::SEE_OTHER.into_response();
        if let Ok(location) = HeaderValue::from_str(&to) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        pages::secure_headers(response.headers_mut());
        return response;
    };
    consent(
        &request,
        &p,
        &who.account.handle,
        guard::session_token(&secret),
    )
}

pub async fn decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Response {
    let site = Site::new(&state.info.public_url);
    if let Err(reason) = guard::same_origin(&headers, &site) {
        return refused(reason);
    }
    let Ok(Form(p)) = form else {
        return bad_request("the consent form could not be read");
    };
    let Some((who, secret)) = crate::web::signed_in(&state, &headers).await else {
        return refused("you are not signed in any more; start connecting the app again");
    };
    if !guard::tokens_match(
        &guard::session_token(&secret),
        p.csrf.as_deref().unwrap_or(""),
    ) {
        return refused("the consent form does not belong to this session");
    }
    let request = match check(&state, &p).await {
        Ok(r) => r,
        Err(Refusal::Page(m)) => return bad_request(&m),
        Err(Refusal::Redirect(r)) => return r,
    };
    let issuer = super::issuer(&state.info);
    let state_param = p.state.as_deref();
    if p.decision.as_deref() != Some("approve") {
        let denied = OAuthError::new("access_denied", "the person denied the request");
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
        .approve_authorization(&who.principal(), &request)
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

fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
