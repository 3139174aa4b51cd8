//! Every limit a client can hit, in one place: the content limits of SPEC §1 and the request
//! bounds of SPEC §3 and §5. The checks (`validate.rs`, the service) and the published
//! schemas (the MCP tools' input schemas, `openapi.json`) use these numbers;
//! `xmemo-server/tests/limits_agree.rs` fails when a schema says otherwise.

pub const SLUG_MAX_CHARS: usize = 64;
pub const NAME_MAX_CHARS: usize = 128;
pub const DESCRIPTION_MAX_CHARS: usize = 1024;
pub const INSTRUCTION_BODY_MAX_BYTES: usize = 65_536;
pub const MAX_COMPONENTS: usize = 50;
pub const COMPONENT_MAX_BYTES: usize = 131_072;
/// A component's `content` as sent in a save: UTF-8 text of at most [`COMPONENT_MAX_BYTES`]
/// bytes has at most that many characters, and base64 of that many bytes is this long, so
/// no acceptable `content` string is longer (the schemas' `maxLength`).
pub const COMPONENT_CONTENT_MAX_CHARS: usize = COMPONENT_MAX_BYTES.div_ceil(3) * 4;
pub const LOGICAL_PATH_MAX_BYTES: usize = 255;
/// Canonical metadata is a JSON object; bound it so a revision stays small.
pub const METADATA_MAX_BYTES: usize = 16_384;
/// Level 0 result count bounds.
pub const SEARCH_LIMIT_MIN: u32 = 1;
pub const SEARCH_LIMIT_MAX: u32 = 50;
pub const SEARCH_LIMIT_DEFAULT: u32 = 10;
/// Page size (`limit`) of every REST listing: accepted range and default.
pub const PAGE_LIMIT_MIN: u32 = 1;
pub const PAGE_LIMIT_MAX: u32 = 100;
pub const PAGE_LIMIT_DEFAULT: u32 = 50;
/// Longest `cursor` accepted (the server's own cursors are far shorter).
pub const CURSOR_MAX_CHARS: usize = 512;
/// Level 0 query length bound (characters).
pub const QUERY_MAX_CHARS: usize = 512;
/// Every recall score (Level 0 and memories) and every `min_score` lies in this range
/// (docs/decisions.md, "Scores").
pub const SCORE_MIN: f64 = 0.0;
pub const SCORE_MAX: f64 = 1.0;
/// Workspace and account handles and client profile names are checked by
/// `validate_slug`, so they share its bound.
pub const HANDLE_MAX_CHARS: usize = SLUG_MAX_CHARS;
/// Review notes (approve, reject, deprecate…) and archive/restore reasons, after trimming.
pub const NOTE_MAX_CHARS: usize = 2000;
/// API key names, after trimming.
pub const KEY_NAME_MAX_CHARS: usize = 128;
/// Pending invitations one team may hold at once. Invitations to handles that name no
/// account are stored like any other (so the answer does not reveal which handles exist),
/// and this bound keeps a team from filling the table with them.
pub const PENDING_INVITATIONS_MAX: usize = 100;
/// Pending invitations one invitee may have from all teams together, so nobody's list can be
/// flooded (beyond it: VALIDATION_ERROR, `details.field: invitee`).
pub const PENDING_INVITATIONS_PER_INVITEE_MAX: usize = 20;
/// Attribution header values (`X-Memory-OS-Agent-ID`, `X-Memory-OS-Agent-Instance-ID`).
pub const ATTRIBUTION_MAX_CHARS: usize = 128;
/// `execute_cloud_skill` `timeout_seconds`: accepted range and default (SPEC §5).
pub const EXECUTE_TIMEOUT_MIN_SECONDS: i64 = 1;
pub const EXECUTE_TIMEOUT_MAX_SECONDS: i64 = 60;
pub const EXECUTE_TIMEOUT_DEFAULT_SECONDS: i64 = 30;
/// Largest `input_args` of an execution, as serialized JSON bytes.
pub const EXECUTE_INPUT_ARGS_MAX_BYTES: usize = 1024 * 1024;

/// Memories (SPEC §9): content bytes (UTF-8), title characters, tag count and tag length
/// (each tag is a slug), and the result count of one recall.
pub const MEMORY_CONTENT_MAX_BYTES: usize = 16 * 1024;
pub const MEMORY_TITLE_MAX_CHARS: usize = 200;
pub const MEMORY_TAGS_MAX: usize = 20;
pub const MEMORY_TAG_MAX_CHARS: usize = SLUG_MAX_CHARS;
pub const MEMORY_RECALL_LIMIT_MIN: u32 = 1;
pub const MEMORY_RECALL_LIMIT_MAX: u32 = 50;
pub const MEMORY_RECALL_LIMIT_DEFAULT: u32 = 10;
/// Characters of content a compact recall result carries (the excerpt).
pub const MEMORY_EXCERPT_CHARS: usize = 240;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_bound_fits_the_largest_component_exactly() {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        assert_eq!(
            b64.encode(vec![0u8; COMPONENT_MAX_BYTES]).len(),
            COMPONENT_CONTENT_MAX_CHARS
        );
    }
}
