//! The multi-skill import rules on arbitrary paths (one per line): which folders are skill
//! folders (`package::batch::skill_folders`), how a file list is sorted out into one skill
//! or several (`sort_out`), and the slug plan (`plan_slugs`). No panic; every planned slug
//! is a valid slug, unique within the import, the same for the same folders in any order;
//! no skill folder is inside another; a refusal is well formed.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xmemo_core::package::PackageFile;
use xmemo_core::package::batch::{plan_slugs, skill_folders, sort_out};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let paths: Vec<&str> = text.lines().take(2_000).collect();
    let folders = skill_folders(paths.iter().copied());
    for (i, a) in folders.iter().enumerate() {
        for b in &folders[i + 1..] {
            assert!(
                !(b.starts_with(a.as_str()) && b.as_bytes().get(a.len()) == Some(&b'/')),
                "{b} is inside {a}"
            );
        }
    }
    let plan = plan_slugs(&folders);
    let mut slugs: Vec<&str> = plan.iter().map(|p| p.slug.as_str()).collect();
    for s in &slugs {
        assert!(xmemo_core::validate_slug("slug", s).is_ok(), "invalid slug {s:?}");
    }
    slugs.sort_unstable();
    let n = slugs.len();
    slugs.dedup();
    assert_eq!(slugs.len(), n, "two folders got one slug: {folders:?}");
    let mut reversed = folders.clone();
    reversed.reverse();
    let again = plan_slugs(&reversed);
    for p in &plan {
        let q = again.iter().find(|q| q.folder == p.folder).expect("same folders");
        assert_eq!(p.slug, q.slug, "the plan depends on the order");
    }
    let files: Vec<PackageFile> = paths.iter().map(|p| PackageFile::new(*p, *p)).collect();
    if let Err(e) = sort_out(files) {
        common::refusal_is_well_formed(&e);
    }
});
