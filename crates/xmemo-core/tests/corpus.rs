//! Every real-world package of `tests/corpus/anthropics-skills/` (or `XMEMO_CORPUS_DIR`):
//! the ones within the limits import, export and re-import with the same canonical_hash and
//! byte-identical components; the ones over a limit (`claude-api`, 65 components) fail with
//! VALIDATION_ERROR naming the limit and the count. A missing corpus fails the tests.

mod common;

use common::*;
use std::time::Duration;
use xmemo_core::diff::diff_revisions;
use xmemo_core::package::{
    ArchiveLimits, CapsuleInput, PackageFile, build_capsule, read_files, read_zip,
};
use xmemo_core::{ErrorCode, RevisionStatus};

/// Packages that exceed a limit on purpose of their authors, with the expected
/// (field, limit, actual).
const OVER_LIMIT: &[(&str, &str, u64, u64)] = &[("claude-api", "components", 50, 65)];

fn capsule_input(slug: &str, content: xmemo_core::RevisionContent) -> CapsuleInput {
    CapsuleInput {
        slug: slug.to_string(),
        skill_id: format!("skill_{slug}"),
        revision_id: format!("rev_{slug}"),
        revision_number: 1,
        status: RevisionStatus::Draft,
        created_at: "2025-01-01T00:00:00.000Z".into(),
        content,
        attribution: serde_json::json!({"account": "corpus"}),
        source: Some(serde_json::json!({"corpus": "anthropics/skills"})),
    }
}

fn by_path(files: &[PackageFile], path: &str) -> Vec<u8> {
    files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not on disk"))
        .bytes
        .clone()
}

#[test]
fn every_corpus_package_round_trips_or_fails_with_its_limit() {
    let limits = ArchiveLimits::default();
    let mut imported = 0;
    for (name, path) in corpus_packages() {
        let files = read_package(&path);
        let zip = zip_tree(&name, &files);
        let result = read_zip(&zip, &limits);

        if let Some((_, field, limit, actual)) = OVER_LIMIT.iter().find(|(n, ..)| *n == name) {
            let e = result.expect_err(&name);
            assert_eq!(e.code(), ErrorCode::ValidationError, "{name}: {e}");
            assert_eq!(e.field(), *field, "{name}: {e}");
            assert_eq!(
                (e.limit(), e.actual()),
                (Some(*limit), Some(*actual)),
                "{name}"
            );
            let text = e.to_string();
            assert!(
                text.contains(&limit.to_string()) && text.contains(&actual.to_string()),
                "{text}"
            );
            // the folder form fails the same way
            assert_eq!(read_files(files.clone()).unwrap_err(), e);
            continue;
        }

        let package = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        imported += 1;
        assert_eq!(package.root_folder.as_deref(), Some(name.as_str()));
        assert_eq!(package.content.components.len(), files.len() - 1, "{name}");
        for c in &package.content.components {
            assert_eq!(
                c.content,
                by_path(&files, &c.logical_path),
                "{name}/{}",
                c.logical_path
            );
        }
        let hash = package.canonical_hash();
        // a plain folder gives the same package
        assert_eq!(
            read_files(files.clone()).unwrap().canonical_hash(),
            hash,
            "{name}"
        );

        // export, twice: byte-identical
        let slug = package.suggested_slug().unwrap();
        assert_eq!(slug, name);
        let capsule = build_capsule(&capsule_input(&slug, package.content.clone()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let again = build_capsule(&capsule_input(&slug, package.content.clone())).unwrap();
        assert_eq!(
            capsule.bytes, again.bytes,
            "{name}: export is not deterministic"
        );
        assert_eq!(capsule.manifest.canonical_hash, hash, "{name}");

        // re-import: same canonical hash, same bytes, same types
        let back = read_zip(&capsule.bytes, &limits).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.canonical_hash(), hash, "{name}");
        assert_eq!(back.content, package.content, "{name}");
        for c in &back.content.components {
            assert_eq!(
                c.content,
                by_path(&files, &c.logical_path),
                "{name}/{}",
                c.logical_path
            );
        }
        // and the diff of the two is empty
        let diff = diff_revisions(&package.content, &back.content, Duration::from_secs(2));
        assert!(diff.identical, "{name}");

        // one byte edited in one component of the capsule: refused, path named
        let mut entries = entries_of(&capsule.bytes);
        let victim = entries
            .iter_mut()
            .find(|(n, _)| !n.ends_with("/SKILL.md") && !n.ends_with("/capsule.json"))
            .expect("every corpus package has a component");
        let logical = victim.0[name.len() + 1..].to_string();
        victim.1[0] ^= 0x20;
        let e = read_zip(&rezip(&entries), &limits).unwrap_err();
        assert_eq!(e.kind(), "capsule_mismatch", "{name}: {e}");
        assert_eq!(e.paths(), std::slice::from_ref(&logical), "{name}");
        assert!(e.to_string().contains(&logical), "{e}");
    }
    assert!(imported >= 10, "only {imported} corpus packages imported");
}

#[test]
fn corpus_packages_diff_against_each_other() {
    let packages: Vec<_> = corpus_packages()
        .into_iter()
        .filter(|(n, _)| !OVER_LIMIT.iter().any(|(o, ..)| o == n))
        .map(|(_, path)| read_files(read_package(&path)).unwrap())
        .collect();
    for pair in packages.windows(2) {
        let d = diff_revisions(&pair[0].content, &pair[1].content, Duration::from_secs(2));
        assert!(!d.identical);
        assert!(d.name.is_some());
        // the body diff rebuilds both texts
        let old: String = d
            .instruction_body
            .ops
            .iter()
            .filter(|o| o.op != xmemo_core::diff::WordOpKind::Insert)
            .map(|o| o.text.as_str())
            .collect();
        let new: String = d
            .instruction_body
            .ops
            .iter()
            .filter(|o| o.op != xmemo_core::diff::WordOpKind::Delete)
            .map(|o| o.text.as_str())
            .collect();
        assert_eq!(old, pair[0].content.instruction_body);
        assert_eq!(new, pair[1].content.instruction_body);
        // LICENSE.txt is the same Apache-2.0 text in most packages
        let total = d.summary.components_added
            + d.summary.components_modified
            + d.summary.components_unchanged;
        assert_eq!(total, pair[1].content.components.len());
    }
}

#[test]
fn exported_skill_md_matches_the_original_for_simple_frontmatter() {
    // Not a requirement (the canonical content is what must survive), but a readable
    // export: for the frontmatter styles of this corpus, the rendered SKILL.md is the
    // original file byte for byte.
    let mut same = 0;
    let mut total = 0;
    for (name, path) in corpus_packages() {
        let files = read_package(&path);
        let Ok(p) = read_files(files.clone()) else {
            continue;
        };
        total += 1;
        let capsule = build_capsule(&capsule_input(&name, p.content)).unwrap();
        let rendered = &entries_of(&capsule.bytes)[0].1;
        if *rendered == by_path(&files, "SKILL.md") {
            same += 1;
        } else {
            eprintln!("{name}: exported SKILL.md differs in layout from the original");
        }
    }
    eprintln!("{same}/{total} SKILL.md files re-rendered byte-identically");
    // true of the whole current corpus; relax if a package with block-style values arrives
    assert_eq!(same, total);
}
