//! `read_zip` with the default `ArchiveLimits` on arbitrary bytes: the hostile-archive
//! reader (headers never trusted, sizes counted while inflating) and every package rule
//! after it. No panic, every refusal well formed, every accepted package exports and
//! imports back unchanged.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xmemo_core::package::{ArchiveLimits, read_zip};

fuzz_target!(|data: &[u8]| {
    match read_zip(data, &ArchiveLimits::default()) {
        Ok(package) => common::export_round_trips(&package),
        Err(e) => common::refusal_is_well_formed(&e),
    }
});
