//! Pure domain model of xmemo (no IO): identifiers, Skill / SkillRevision / SkillComponent,
//! the limits of SPEC §1, lifecycle transitions of SPEC §2, the canonical hash, and skill
//! packages (SKILL.md, ZIP, Source Capsule) and revision diffs of SPEC §6.
#![forbid(unsafe_code)]

pub mod diff;
pub mod error;
pub mod hash;
pub mod ids;
pub mod lifecycle;
pub mod limits;
pub mod media;
pub mod memory;
pub mod model;
pub mod package;
pub mod validate;

pub use error::{ErrorCode, ValidationError};
pub use hash::{canonical_hash, content_hash};
pub use ids::new_id;
pub use lifecycle::{LifecycleAction, TransitionError, asset_change_allowed, transition};
pub use model::*;
pub use validate::{validate_content, validate_slug};
