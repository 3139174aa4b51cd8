//! `POST /oauth/token` (grants `authorization_code` and `refresh_token`) and
//! `POST /oauth/revoke` (RFC 7009). Form bodies in, JSON out, never cached. Clients
//! authenticate the way they registered: public ones by `client_id` alone, confidential ones
//! with HTTP Basic or the form's `client_secret` — one way per request.

use super::response::{error_response, no_store};
use crate::http::client_addr;
use crate::service::oauth::{ClientSecret, IssuedTokens, OAuthError, OAuthErrorKind};
use crate::state::AppState;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use base64::Engine;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, Default)]
pub struct TokenForm {
    grant_type: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    scope: Option<String>,
    resource: Option<String>,
    /// Revocation only.
    token: Option<String>,
    #[allow(dead_code)]
    token_type_hint: Option<String>,
}

/// One `application/x-www-form-urlencoded` value (RFC 6749 §2.3.1 encodes Basic credentials
/// this way): `+` is a space, `%XX` a byte; the bytes must be UTF-8. A `%` not followed by two
/// hex digits stays as it is, as `percent-encoding` (and every form parser built on it) reads
/// it.
fn form_decode(s: &str) -> Option<String> {
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// The client's id and how it proves it.
fn credentials(
    headers: &HeaderMap,
    form: &TokenForm,
) -> Result<(String, ClientSecret), OAuthError> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .map(|(_, value)| value.trim().to_string());
    match basic {
        Some(encoded) => {
            let malformed = || OAuthError::invalid_client("malformed HTTP Basic credentials");
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(malformed)?;
            let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
            let (id, secret) = (
                form_decode(id).ok_or_else(malformed)?,
                form_decode(secret).ok_or_else(malformed)?,
            );
            if form.client_secret.is_some() {
                return Err(OAuthError::invalid_request(
                    "authenticate one way only: HTTP Basic or client_secret, not both",
                ));
            }
            if form.client_id.as_deref().is_some_and(|c| c != id) {
                return Err(OAuthError::invalid_request(
                    "client_id differs from the one in HTTP Basic",
                ));
            }
            Ok((id, ClientSecret::Basic(secret)))
        }
        None => {
            let id = form
                .client_id
                .clone()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| OAuthError::invalid_client("client_id is required"))?;
            let secret = match &form.client_secret {
                Some(s) => ClientSecret::Post(s.clone()),
                None => ClientSecret::None,
            };
            Ok((id, secret))
        }
    }
}

fn unreadable(e: &FormRejection) -> OAuthError {
    OAuthError::invalid_request(format!(
        "send the parameters once each as application/x-www-form-urlencoded: {}",
        e.body_text()
    ))
}

pub async fn token(
    State(state): State<AppState>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    let from = client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let answer = state
        .service
        .guarded_token_request(from, grant(&state, &headers, form, from))
        .await;
    match answer {
        Ok(tokens) => {
            let mut body = json!({
                "access_token": tokens.access_token,
                "token_type": "Bearer",
                "expires_in": tokens.expires_in,
                "scope": tokens.scopes.join(" "),
            });
            if let (Some(r), Some(obj)) = (tokens.refresh_token, body.as_object_mut()) {
                obj.insert("refresh_token".into(), json!(r));
            }
            let mut response = (StatusCode::OK, Json(body)).into_response();
            no_store(response.headers_mut());
            response
        }
        Err(e) => error_response(&e, presents_basic(&headers)),
    }
}

/// Whether the client authenticates with HTTP Basic: then a failed client authentication is
/// answered with a Basic challenge.
fn presents_basic(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
}

async fn grant(
    state: &AppState,
    headers: &HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
    from: Option<std::net::IpAddr>,
) -> Result<IssuedTokens, OAuthError> {
    let form = form.map_err(|e| unreadable(&e))?.0;
    let (client_id, secret) = credentials(headers, &form)?;
    let client = state
        .service
        .authenticate_oauth_client(&client_id, &secret, from)
        .await?;
    match form.grant_type.as_deref() {
        Some("authorization_code") => {
            let code = form
                .code
                .as_deref()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| OAuthError::invalid_request("code is required"))?;
            state
                .service
                .exchange_code(
                    &client,
                    code,
                    form.redirect_uri.as_deref(),
                    form.code_verifier.as_deref(),
                    form.resource.as_deref(),
                )
                .await
        }
        Some("refresh_token") => {
            let refresh = form
                .refresh_token
                .as_deref()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| OAuthError::invalid_request("refresh_token is required"))?;
            state
                .service
                .refresh_tokens(
                    &client,
                    refresh,
                    form.scope.as_deref(),
                    form.resource.as_deref(),
                )
                .await
        }
        Some(other) => Err(OAuthError::new(
            OAuthErrorKind::UnsupportedGrantType,
            format!(
                "grant_type `{other}` is not supported; use authorization_code or refresh_token"
            ),
        )),
        None => Err(OAuthError::invalid_request("grant_type is required")),
    }
}

pub async fn revoke(
    State(state): State<AppState>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    let from = client_addr::of_request(&headers, &extensions, &state.info.trusted_proxies);
    let request = async {
        let form = form.map_err(|e| unreadable(&e))?.0;
        let (client_id, secret) = credentials(&headers, &form)?;
        let client = state
            .service
            .authenticate_oauth_client(&client_id, &secret, from)
            .await?;
        let token = form
            .token
            .as_deref()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
        state
            .service
            .revoke_by_client(&client, token)
            .await
            .map_err(OAuthError::from)
    };
    let result = state.service.guarded_token_request(from, request).await;
    match result {
        Ok(()) => {
            let mut response = StatusCode::OK.into_response();
            no_store(response.headers_mut());
            response
        }
        Err(e) => error_response(&e, presents_basic(&headers)),
    }
}

#[cfg(test)]
mod tests {
    use super::form_decode;

    #[test]
    fn basic_credentials_are_form_decoded() {
        assert_eq!(form_decode("a%3Ab+c").as_deref(), Some("a:b c"));
        assert_eq!(form_decode("%2B").as_deref(), Some("+"));
        // Not an escape: kept as written, as the crate reads it (never the byte 0x05).
        assert_eq!(form_decode("%+5").as_deref(), Some("% 5"));
        assert_eq!(form_decode("%zz").as_deref(), Some("%zz"));
        assert_eq!(form_decode("%4").as_deref(), Some("%4"));
        // Bytes that are not UTF-8 are malformed credentials.
        assert_eq!(form_decode("%FF"), None);
    }
}
