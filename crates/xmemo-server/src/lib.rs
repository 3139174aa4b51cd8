//! xmemo server: the service layer (use-cases, access checks, audit), authentication and the
//! transports that call it (REST, MCP, the OAuth endpoints, the pages). The layers, top
//! down, are in ARCHITECTURE.md ("Layers of xmemo-server"); `tests/layers.rs` keeps them.
#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod bootstrap;
pub mod error;
pub mod fetch;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod password;
pub mod rest;
pub mod service;
pub mod state;
pub mod throttle;
pub mod web;

pub use error::{ServiceError, ServiceResult};
pub use service::Service;
/// The sandbox engine crate, re-exported for the binary (`xmemo admin doctor`, `serve`).
pub use xmemo_sandbox as sandbox;
