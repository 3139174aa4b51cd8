//! Extractors that turn every malformed request into the SPEC error shape.

use crate::auth::Principal;
use crate::error::ServiceError;
use crate::rest::{ApiError, AppState};
use crate::service::Audience;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use xmemo_core::limits::ATTRIBUTION_MAX_CHARS;

pub const AGENT_ID_HEADER: &str = "x-memory-os-agent-id";
pub const AGENT_INSTANCE_HEADER: &str = "x-memory-os-agent-instance-id";

/// JSON body; syntax errors, wrong types and unknown fields → VALIDATION_ERROR, over the body
/// limit → PAYLOAD_TOO_LARGE.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => Err(json_rejection(rejection).into()),
        }
    }
}

fn json_rejection(r: JsonRejection) -> ServiceError {
    match r {
        JsonRejection::JsonDataError(e) => ServiceError::Validation(
            format!(
                "request body does not match the expected shape: {}",
                e.body_text()
            ),
            None,
        ),
        JsonRejection::JsonSyntaxError(e) => ServiceError::Validation(
            format!("request body is not valid JSON: {}", e.body_text()),
            None,
        ),
        JsonRejection::MissingJsonContentType(_) => ServiceError::Validation(
            "send the body as `Content-Type: application/json`".into(),
            None,
        ),
        JsonRejection::BytesRejection(e) => body_rejection(&e),
        other => ServiceError::Validation(other.body_text(), None),
    }
}

/// A body that could not be read: over the limit → PAYLOAD_TOO_LARGE; not complete within
/// the body timeout → VALIDATION_ERROR (`details.reason: body_timeout`); else
/// VALIDATION_ERROR.
pub fn body_rejection(e: &BytesRejection) -> ServiceError {
    if let Some(timeout) = crate::http::body::timeout_error(e) {
        return timeout;
    }
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        ServiceError::TooLarge("request body exceeds the size limit".into(), None)
    } else {
        ServiceError::Validation(format!("could not read the body: {}", e.body_text()), None)
    }
}

/// An optional JSON body: empty means `T::default()`; malformed → VALIDATION_ERROR, over the
/// body limit → PAYLOAD_TOO_LARGE.
pub struct OptionalJson<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let body = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| body_rejection(&e))?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        serde_json::from_slice(&body)
            .map(OptionalJson)
            .map_err(|e| {
                ServiceError::Validation(format!("request body is not valid: {e}"), None).into()
            })
    }
}

/// Query string; bad values → VALIDATION_ERROR.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e: QueryRejection| {
                ServiceError::Validation(format!("invalid query string: {}", e.body_text()), None)
                    .into()
            })
    }
}

/// Path parameters; bad values → VALIDATION_ERROR.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e: PathRejection| {
                ServiceError::Validation(format!("invalid path: {}", e.body_text()), None).into()
            })
    }
}

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
    let client = super::client_addr::client_addr(parts, &state.info.trusted_proxies);
    Ok(state
        .service
        .authenticate(&secret, audience, client, agent_id, instance)
        .await?)
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
