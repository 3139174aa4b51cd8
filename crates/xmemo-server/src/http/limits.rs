//! How large a request body each kind of endpoint accepts. Every transport takes its limit
//! from here, so the REST API, `/mcp` and the console cannot drift apart.

/// Largest request body of the REST API and `/mcp`: 50 components of 128 KiB as base64 plus
/// the 64 KiB body and JSON framing fit well inside.
pub const BODY_LIMIT_BYTES: usize = 16 * 1024 * 1024;

/// Largest form body a page (sign-in, consent, console forms) or an OAuth endpoint accepts.
pub const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// Largest body of a console skill save or import (a revision holds up to 50 components of
/// 128 KiB, sent as base64 or files, plus its body).
pub const UPLOAD_LIMIT_BYTES: usize = 16 * 1024 * 1024;
