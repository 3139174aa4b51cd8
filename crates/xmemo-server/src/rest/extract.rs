//! Extractors that turn every malformed request into the SPEC error shape.

use crate::auth::Principal;
use crate::error::ServiceError;
use crate::rest::{ApiError, AppState};
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
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
        JsonRejection::BytesRejection(e) => {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ServiceError::TooLarge("request body exceeds the size limit".into(), None)
            } else {
                ServiceError::Validation(
                    format!("could not read the body: {}", e.body_text()),
                    None,
                )
            }
        }
        other => ServiceError::Validation(other.body_text(), None),
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
            .map_err(|e| {
                if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ServiceError::TooLarge("request body exceeds the size limit".into(), None)
                } else {
                    ServiceError::Validation(
                        format!("could not read the body: {}", e.body_text()),
                        None,
                    )
                }
            })?;
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

/// The authenticated caller. Keys come from `Authorization: Bearer` or `X-API-Key`.
pub struct Authed(pub Principal);

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let secret = credential(parts).ok_or_else(|| {
            ApiError::from(ServiceError::AuthRequired(
                "send an API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`".into(),
            ))
        })?;
        let agent_id = attribution_header(parts, AGENT_ID_HEADER)?;
        let instance = attribution_header(parts, AGENT_INSTANCE_HEADER)?;
        let principal = state
            .service
            .authenticate(&secret, agent_id, instance)
            .await?;
        Ok(Authed(principal))
    }
}

/// The key from `Authorization: Bearer …`, else from `X-API-Key` (an `Authorization` header
/// of another scheme, e.g. from a proxy, does not hide a valid `X-API-Key`).
fn credential(parts: &Parts) -> Option<String> {
    let bearer = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|text| text.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_string());
    bearer.or_else(|| {
        parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
    })
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
