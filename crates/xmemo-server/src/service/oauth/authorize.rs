//! The rules of an authorization request (`/oauth/authorize`), in the order they are
//! checked: code flow only, PKCE S256 required, the redirect URI matched against the
//! client's, `state` bounded, the scopes known, `resource` bound to this server's `/mcp`
//! (RFC 8707). Until the client and its redirect URI are known to be good nothing may be sent
//! there, so a refusal says whether it may go back to the client.

use super::error::{OAuthError, OAuthErrorKind};
use super::{Client, check_resource, parse_scope, pkce};
use crate::service::Service;

/// Longest `state` a client may send (it is echoed in a URL).
pub const MAX_STATE_BYTES: usize = 2048;

/// The parameters of an authorization request, as the client sent them.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuthorizationParams<'a> {
    pub response_type: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub redirect_uri: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub state: Option<&'a str>,
    pub code_challenge: Option<&'a str>,
    pub code_challenge_method: Option<&'a str>,
    pub resource: Option<&'a str>,
}

/// An authorization request that passed every check, as the consent page shows it and the
/// approval stores it.
#[derive(Debug, Clone)]
pub struct Authorization {
    pub client: Client,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub code_challenge: String,
}

/// Why an authorization request is refused.
#[derive(Debug)]
pub enum AuthorizationRefusal {
    /// The client or its redirect URI is not known to be good: the person is told, the client
    /// is sent nothing.
    Untrusted(String),
    /// The redirect URI is the client's: the error goes back to it there.
    ToClient {
        redirect_uri: String,
        error: OAuthError,
    },
}

impl Service {
    /// Every check of an authorization request, in order; `resource` is the one resource this
    /// server issues tokens for.
    pub async fn check_authorization(
        &self,
        p: &AuthorizationParams<'_>,
        resource: &str,
        from: Option<std::net::IpAddr>,
    ) -> Result<Authorization, AuthorizationRefusal> {
        let Some(client_id) = p.client_id.filter(|c| !c.is_empty()) else {
            return Err(AuthorizationRefusal::Untrusted(
                "the request names no client_id".into(),
            ));
        };
        let client = self
            .oauth_client(client_id, from)
            .await
            .map_err(|e| AuthorizationRefusal::Untrusted(e.description))?;
        let redirect_uri = match p.redirect_uri {
            Some(uri) if client.redirect_uri_for(uri).is_some() => uri.to_string(),
            Some(uri) => {
                return Err(AuthorizationRefusal::Untrusted(format!(
                    "redirect_uri `{uri}` is not registered for this client"
                )));
            }
            None => match client.redirect_uris.as_slice() {
                [only] => only.clone(),
                _ => {
                    return Err(AuthorizationRefusal::Untrusted(
                        "redirect_uri is required: this client registered several".into(),
                    ));
                }
            },
        };
        let fail = |error: OAuthError| AuthorizationRefusal::ToClient {
            redirect_uri: redirect_uri.clone(),
            error,
        };
        if p.response_type != Some("code") {
            return Err(fail(OAuthError::new(
                OAuthErrorKind::UnsupportedResponseType,
                "only response_type=code is supported",
            )));
        }
        let Some(challenge) = p.code_challenge.filter(|c| !c.is_empty()) else {
            return Err(fail(OAuthError::invalid_request(
                "code_challenge is required (PKCE with S256)",
            )));
        };
        if p.code_challenge_method != Some("S256") {
            return Err(fail(OAuthError::invalid_request(
                "code_challenge_method must be S256 (plain is not accepted)",
            )));
        }
        if !pkce::valid_challenge(challenge) {
            return Err(fail(OAuthError::invalid_request(
                "code_challenge must be the base64url SHA-256 of the verifier (43 characters)",
            )));
        }
        if p.state.is_some_and(|s| s.len() > MAX_STATE_BYTES) {
            return Err(fail(OAuthError::invalid_request(format!(
                "state is longer than {MAX_STATE_BYTES} bytes"
            ))));
        }
        // A client gets no scope beyond what it registered (or its document declares).
        let asked = p
            .scope
            .filter(|s| !s.trim().is_empty())
            .map(|s| parse_scope(Some(s)))
            .transpose()
            .map_err(fail)?;
        let scopes = client
            .allowed_scopes(asked, parse_scope(None).map_err(fail)?)
            .map_err(|extra| {
                fail(OAuthError::invalid_scope(format!(
                    "this client registered no `{extra}`; register it again with that scope"
                )))
            })?;
        if scopes.is_empty() {
            return Err(fail(OAuthError::invalid_scope(
                "this client registered no scope this server has",
            )));
        }
        let resource = check_resource(p.resource, resource).map_err(fail)?;
        Ok(Authorization {
            client,
            redirect_uri,
            scopes,
            resource,
            code_challenge: challenge.to_string(),
        })
    }
}
