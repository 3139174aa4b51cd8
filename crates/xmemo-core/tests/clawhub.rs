//! Acceptance (#24): what real authors write imports. Every SKILL.md of the ClawHub corpus
//! (`tests/corpus/clawhub`, 1,635 files by several hundred authors) is read as its skill
//! folder; at least 99% must import, and every refusal must be one of SPEC §1's hard limits
//! (instructions over 64 KiB, empty instructions, control characters, components) and name
//! it. Every imported file is canonical: read twice it gives one canonical_hash, and its
//! Source Capsule export reads back to the same content with no repair. The repairs are
//! counted by kind and printed (`--nocapture`), not asserted: the table is a report.

mod common;

use common::*;
use std::collections::BTreeMap;
use xmemo_core::RevisionStatus;
use xmemo_core::package::{
    ArchiveLimits, CapsuleInput, PackageFile, build_capsule, read_files, read_zip,
};

#[test]
fn ninety_nine_percent_of_the_clawhub_corpus_imports_and_refusals_are_hard_limits() {
    let files = clawhub_files();
    let total = files.len();
    let mut imported = 0usize;
    let mut repaired = 0usize;
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    let mut refused: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut not_hard: Vec<String> = Vec::new();
    for f in &files {
        let read = || {
            read_files(vec![PackageFile::new(
                format!("{}/{}", f.name, f.file_name),
                f.bytes.clone(),
            )])
        };
        let package = match read() {
            Ok(p) => p,
            Err(e) => {
                match hard_limit(&e) {
                    Some(rule) => {
                        // the refusal names what is at fault
                        assert!(!e.field().is_empty() && !e.message().is_empty(), "{e:?}");
                        refused.entry(rule).or_default().push(f.folder.clone());
                    }
                    None => not_hard.push(format!("{}: {e}", f.folder)),
                }
                continue;
            }
        };
        imported += 1;
        if !package.repairs.is_empty() {
            repaired += 1;
        }
        let mut kinds: Vec<String> = package.repairs.iter().map(|r| r.kind.to_string()).collect();
        kinds.sort();
        kinds.dedup();
        for k in kinds {
            *by_kind.entry(k).or_default() += 1;
        }
        // deterministic: the same bytes, the same revision
        let again = read().unwrap();
        assert_eq!(
            again.canonical_hash(),
            package.canonical_hash(),
            "{}",
            f.folder
        );
        assert_eq!(again.repairs, package.repairs, "{}", f.folder);
        // the export round-trips, and is canonical (nothing left to repair)
        let capsule = build_capsule(&CapsuleInput {
            slug: "corpus-skill".into(),
            skill_id: "skill_corpus".into(),
            revision_id: "rev_corpus".into(),
            revision_number: 1,
            status: RevisionStatus::Draft,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            content: package.content.clone(),
            attribution: serde_json::Value::Null,
            source: None,
        })
        .unwrap_or_else(|e| panic!("{}: export refused: {e}", f.folder));
        let back = read_zip(&capsule.bytes, &ArchiveLimits::default())
            .unwrap_or_else(|e| panic!("{}: the export does not read back: {e}", f.folder));
        assert_eq!(back.content, package.content, "{}", f.folder);
        assert!(back.repairs.is_empty(), "{}: {:?}", f.folder, back.repairs);
    }
    println!("ClawHub corpus: {imported} of {total} imported, {repaired} of them repaired");
    println!("repairs by kind (files):");
    for (kind, n) in &by_kind {
        println!("  {kind:<28} {n:>5}");
    }
    println!("refused by rule:");
    for (rule, folders) in &refused {
        println!("  {rule:<28} {:>5}  {}", folders.len(), folders.join(", "));
    }
    assert!(
        not_hard.is_empty(),
        "refusals that are not a SPEC hard limit:\n{}",
        not_hard.join("\n")
    );
    assert!(
        imported * 100 >= total * 99,
        "only {imported} of {total} imported (at least 99% must)"
    );
}
