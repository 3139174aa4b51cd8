//! `parse_skill_md` on arbitrary bytes (strict UTF-8, frontmatter cap, YAML, body), and the
//! lone-SKILL.md package path (`read_skill_md`: SPEC §1 checks) behind it: no panic, every
//! refusal well formed, every accepted package exports and imports back unchanged.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xmemo_core::package::{parse_skill_md, read_skill_md};

fuzz_target!(|data: &[u8]| {
    if let Err(e) = parse_skill_md(data) {
        common::refusal_is_well_formed(&e);
    }
    match read_skill_md(data) {
        Ok(package) => common::export_round_trips(&package),
        Err(e) => common::refusal_is_well_formed(&e),
    }
});
