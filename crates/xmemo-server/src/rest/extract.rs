//! Extractors that turn every malformed request into the SPEC error shape (the credential
//! check is `http::credential`, shared with the other transports).

use crate::error::ServiceError;
use crate::http::error::ApiError;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

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
