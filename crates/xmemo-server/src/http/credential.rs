//! The one credential check of every transport (REST, MCP, the metrics endpoint): which
//! credential a request presents (`Authorization: Bearer` or `X-API-Key`, exactly one), the
//! attribution headers it carries, and the service's verdict on them. Failed attempts are
//! throttled per client address ([`super::client_addr`]) by the service.

use super::client_addr::client_addr;
use super::error::ApiError;
use crate::auth::Principal;
use crate::error::ServiceError;
use crate::service::Audience;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use xmemo_core::limits::ATTRIBUTION_MAX_CHARS;

pub const AGENT_ID_HEADER: &str = "x-memory-os-agent-id";
pub const AGENT_INSTANCE_HEADER: &str = "x-memory-os-agent-instance-id";

/// The authenticated caller. Keys come from `Authorization: Bearer` or `X-API-Key`; exactly
/// one credential may be presented (see `credential`). Failed attempts are throttled per
/// client address ([`super::client_addr`]) by the service.
pub struct Authed(pub Principal);

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        authenticate(parts, state, &Audience::Rest)
            .await
            .map(Authed)
    }
}

/// The one credential check of every transport: the presented API key, or (for the MCP
/// endpoint, whose resource `audience` names) OAuth access token, with the attribution
/// headers.
pub async fn authenticate(
    parts: &Parts,
    state: &AppState,
    audience: &Audience,
) -> Result<Principal, ApiError> {
    let secret = credential(parts)?.ok_or_else(|| {
        ApiError::from(ServiceError::AuthRequired(match audience {
            Audience::Rest => {
                "send an API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`".into()
            }
            Audience::Mcp { .. } => "send an OAuth access token or an API key as `Authorization: Bearer <token>` (or the key as `X-API-Key: <key>`)".into(),
        }))
    })?;
    let agent_id = attribution_header(parts, AGENT_ID_HEADER)?;
    let instance = attribution_header(parts, AGENT_INSTANCE_HEADER)?;
    let client = client_addr(parts, &state.info.trusted_proxies);
    let principal = state
        .service
        .authenticate(&secret, audience, client, agent_id, instance)
        .await?;
    super::request_log::record_account(&parts.extensions, &principal.account.account_id);
    Ok(principal)
}

/// The key from `Authorization: Bearer …` or from `X-API-Key`. An `Authorization` header of
/// another scheme (e.g. a proxy's) does not hide an `X-API-Key`. Presenting more than one
/// credential — two `Authorization` or two `X-API-Key` headers, or a Bearer token and an
/// `X-API-Key` — is refused (AUTH_REQUIRED) rather than resolved by a precedence the client
/// may not expect: which one would be checked, and against which account, is ambiguous.
fn credential(parts: &Parts) -> Result<Option<String>, ServiceError> {
    let ambiguous = |what: &str| {
        ServiceError::AuthRequired(format!(
            "ambiguous credentials ({what}): send exactly one API key, as `Authorization: Bearer <key>` or as `X-API-Key: <key>`"
        ))
    };
    let mut authorization = parts
        .headers
        .get_all(axum::http::header::AUTHORIZATION)
        .iter();
    let mut api_keys = parts.headers.get_all("x-api-key").iter();
    let (first_auth, first_key) = (authorization.next(), api_keys.next());
    if authorization.next().is_some() {
        return Err(ambiguous("several Authorization headers"));
    }
    if api_keys.next().is_some() {
        return Err(ambiguous("several X-API-Key headers"));
    }
    let bearer = first_auth
        .and_then(|v| v.to_str().ok())
        .and_then(|text| text.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_string());
    // An undecodable X-API-Key is still a credential presented (and an invalid one).
    let api_key = first_key.map(|v| v.to_str().map(str::trim).unwrap_or("").to_string());
    match (bearer, api_key) {
        (Some(_), Some(_)) => Err(ambiguous("both a Bearer token and an X-API-Key")),
        (bearer, api_key) => Ok(bearer.or(api_key)),
    }
}

fn attribution_header(parts: &Parts, name: &str) -> Result<Option<String>, ApiError> {
    let Some(value) = parts.headers.get(name) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|t| {
            !t.is_empty()
                && t.chars().count() <= ATTRIBUTION_MAX_CHARS
                && !t.chars().any(char::is_control)
        })
        .ok_or_else(|| {
            ApiError::from(ServiceError::validation(
                format!("{name} must be 1 to {ATTRIBUTION_MAX_CHARS} printable characters"),
                name,
            ))
        })?;
    Ok(Some(text.to_string()))
}
