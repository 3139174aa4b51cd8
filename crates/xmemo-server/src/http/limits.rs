//! How large a request body each kind of endpoint accepts. Every transport takes its limit
//! from here, so the REST API, `/mcp` and the console cannot drift apart.
//!
//! A route's limit is what its largest acceptable form needs, and a console post is checked
//! for its session before any of its body is read, so a visitor who is not signed in can make
//! the server read nothing.

use xmemo_core::limits::INSTRUCTION_BODY_MAX_BYTES;

/// Largest request body of the REST API and `/mcp`: 50 components of 128 KiB as base64 plus
/// the 64 KiB body and JSON framing fit well inside.
pub const BODY_LIMIT_BYTES: usize = 16 * 1024 * 1024;

/// Largest form body a page (sign-in, consent, console forms) or an OAuth endpoint accepts.
pub const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// Largest body of the console's live preview: the longest instruction body with every byte
/// percent-encoded (three bytes each), plus the form token and the field names.
pub const PREVIEW_LIMIT_BYTES: usize = 3 * INSTRUCTION_BODY_MAX_BYTES + 1024;

/// Most fields an urlencoded console form may have (the largest, a new key with every scope
/// ticked, has about a dozen). Past it the form is refused before any field is decoded, so a
/// body of `a&a&…` costs its own bytes and nothing per field.
pub const FORM_FIELDS_MAX: usize = 64;

/// Largest body of a console skill save or import (a revision holds up to 50 components of
/// 128 KiB, sent as base64 or files, plus its body).
pub const UPLOAD_LIMIT_BYTES: usize = 16 * 1024 * 1024;
