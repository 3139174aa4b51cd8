//! Assembles the HTTP application from the transports' routes and runs it on a given listener
//! (so tests bind port 0). The few routes that belong to no transport (health, readiness,
//! metrics, the OpenAPI document) are here too; nothing else is.

use crate::error::ServiceError;
pub use crate::http::HttpConfig;
use crate::http::credential::Authed;
use crate::http::error::ApiError;
use crate::http::limits::BODY_LIMIT_BYTES;
use crate::rest;
use crate::service::Service;
use crate::state::{AppState, ServerInfo};
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde_json::json;
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::sensitive_headers::{
    SetSensitiveRequestHeadersLayer, SetSensitiveResponseHeadersLayer,
};
use tower_http::trace::TraceLayer;

/// The OpenAPI document of the REST API, served as is.
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

pub fn build_app(service: Service, info: ServerInfo) -> Router {
    let state = AppState {
        service,
        info: Arc::new(info),
    };
    let api = rest::api_routes()
        .route("/openapi.json", get(openapi))
        .fallback(rest::not_found)
        .method_not_allowed_fallback(rest::method_not_allowed)
        // /mcp checks the same limit itself, to answer in JSON-RPC.
        .layer(axum::middleware::from_fn(|request, next| {
            crate::http::body::refuse_declared_oversize(BODY_LIMIT_BYTES, request, next)
        }));
    let mcp = crate::mcp::routes(&state);
    let request_log =
        axum::middleware::from_fn_with_state(state.clone(), crate::http::request_log::middleware);
    Router::new()
        .nest("/api/v1", api.clone())
        .nest("/v1", api)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .merge(mcp)
        .merge(crate::web::routes())
        .merge(crate::oauth::routes())
        .fallback(rest::not_found)
        .method_not_allowed_fallback(rest::method_not_allowed)
        .with_state(state)
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(CatchPanicLayer::custom(panic_response))
        // Outside the panic guard, so a panic's 500 carries its request id too.
        .layer(request_log)
        .layer(TraceLayer::new_for_http())
        // Keys, tokens and session cookies never reach traces.
        .layer(SetSensitiveResponseHeadersLayer::new([header::SET_COOKIE]))
        .layer(SetSensitiveRequestHeadersLayer::new([
            header::AUTHORIZATION,
            header::COOKIE,
            HeaderName::from_static("x-api-key"),
        ]))
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError(ServiceError::Internal("panic".into())).into_response()
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Ready when the database answers. The sandbox state is reported, not required: a server
/// without script execution still serves recall and save.
async fn readyz(State(state): State<AppState>) -> Response {
    let store = state.service.store();
    let sandbox = state.service.sandbox_state().map(|s| {
        json!({
            "available": s.available,
            "isolation": s.isolation,
            "reason": s.reason,
            "bwrap_version": s.bwrap_version,
        })
    });
    // Reported, not required: without the semantic lane recall answers by full text.
    let semantic = state.service.semantic_status();
    // A node whose search indexes are still being built would make its first searches wait
    // for the build (start-up; docs/limits.md): not ready for a load balancer yet.
    let search = if store.search_ready() {
        "ready"
    } else {
        "building"
    };
    match store.ping().await {
        Ok(()) if search == "building" => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "starting",
                "database": store.backend(),
                "search": search,
                "sandbox": sandbox,
                "semantic": semantic,
                "version": state.info.version,
            })),
        )
            .into_response(),
        Ok(()) => Json(json!({
            "status": "ready",
            "database": store.backend(),
            "search": search,
            "sandbox": sandbox,
            "semantic": semantic,
            "version": state.info.version,
        }))
        .into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "database": store.backend(), "sandbox": sandbox })),
            )
                .into_response()
        }
    }
}

/// Prometheus text exposition of the service's counters, for server administrators (every
/// endpoint but health and the OpenAPI document needs a credential).
async fn metrics(State(state): State<AppState>, Authed(principal): Authed) -> Response {
    if !principal.account.is_admin {
        return ApiError(ServiceError::PermissionDenied(
            "metrics are for server administrators".into(),
        ))
        .into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.service.render_metrics(),
    )
        .into_response()
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON).into_response()
}

/// Serves until `shutdown` resolves, with the default connection limits.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, HttpConfig::default(), shutdown).await
}

/// Serves until `shutdown` resolves, under these timeouts and connection cap.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: Router,
    config: HttpConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    crate::http::serve(listener, app, config, shutdown).await
}
