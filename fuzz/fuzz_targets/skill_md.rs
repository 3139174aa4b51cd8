//! `parse_skill_md` on arbitrary bytes (strict UTF-8, frontmatter cap, YAML, the lenient
//! readers of #24: a frontmatter located late, unopened or unclosed, the line-by-line
//! fallback when YAML refuses, name/description from the body), and the lone-SKILL.md
//! package path (`read_skill_md`: SPEC §1 checks) behind it: no panic, every refusal well
//! formed, every repair says what and why, reading is deterministic, and every accepted
//! package exports and imports back unchanged with nothing left to repair.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xmemo_core::package::{NameHints, parse_skill_md, parse_skill_md_with, read_skill_md};

fuzz_target!(|data: &[u8]| {
    match parse_skill_md(data) {
        Err(e) => common::refusal_is_well_formed(&e),
        Ok(parsed) => {
            for r in &parsed.repairs {
                assert!(!r.field.is_empty() && !r.problem.is_empty() && !r.action.is_empty());
            }
            assert_eq!(parse_skill_md(data).ok(), Some(parsed), "not deterministic");
        }
    }
    // With a folder to take a name from, a file without one may be accepted too.
    let hints = NameHints {
        folder: Some("fuzzed-skill".into()),
        slug: None,
    };
    if let Err(e) = parse_skill_md_with(data, &hints) {
        common::refusal_is_well_formed(&e);
    }
    match read_skill_md(data) {
        Ok(package) => common::export_round_trips(&package),
        Err(e) => common::refusal_is_well_formed(&e),
    }
});
