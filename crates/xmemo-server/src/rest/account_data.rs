//! The caller's own data: `GET /account/export` (one streamed ZIP) and `DELETE /account`.

use super::extract::ApiJson;
use crate::http::credential::Authed;
use crate::http::error::ApiResult;
use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/account", axum::routing::delete(delete_account))
        .route("/account/export", get(export))
}

async fn export(State(state): State<AppState>, Authed(p): Authed) -> ApiResult<Response> {
    let chunks = state.service.export_account(&p).await?;
    let body = Body::from_stream(chunk_stream(chunks));
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    let disposition = format!(
        "attachment; filename=\"xmemo-{}-export.zip\"",
        p.account.handle
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// The receiver of export chunks as a body stream.
fn chunk_stream(
    mut rx: tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteBody {
    /// The account's handle, typed back.
    confirm: String,
}

async fn delete_account(
    State(state): State<AppState>,
    Authed(p): Authed,
    ApiJson(body): ApiJson<DeleteBody>,
) -> ApiResult<Json<Value>> {
    let report = state.service.delete_account(&p, &body.confirm).await?;
    Ok(Json(json!({"kind": "account_deleted", "data": report})))
}
