//! Every content limit of SPEC §1, in one place.

pub const SLUG_MAX_CHARS: usize = 64;
pub const NAME_MAX_CHARS: usize = 128;
pub const DESCRIPTION_MAX_CHARS: usize = 1024;
pub const INSTRUCTION_BODY_MAX_BYTES: usize = 65_536;
pub const MAX_COMPONENTS: usize = 50;
pub const COMPONENT_MAX_BYTES: usize = 131_072;
pub const LOGICAL_PATH_MAX_BYTES: usize = 255;
/// Canonical metadata is a JSON object; bound it so a revision stays small.
pub const METADATA_MAX_BYTES: usize = 16_384;
/// Level 0 result count bounds.
pub const SEARCH_LIMIT_MAX: u32 = 50;
pub const SEARCH_LIMIT_DEFAULT: u32 = 10;
/// Level 0 query length bound (characters).
pub const QUERY_MAX_CHARS: usize = 512;
/// Workspace handle rule shares the slug rule, with this length bound.
pub const HANDLE_MAX_CHARS: usize = 64;
