//! The real-world corpus as fuzz seeds (`scripts/fuzz-seeds` runs this with
//! `XMEMO_FUZZ_SEEDS_DIR`): each package's SKILL.md (`skill_md`), the package zipped and its
//! exported Source Capsule (`zip_read`), and the capsule's files in the `capsule_import`
//! format. Without the variable nothing is written, and the test still checks what the
//! seeds stand for: the capsule's file list, read the way `capsule_import` reads it, is the
//! package with the capsule's hash, and the file-list format keeps every byte.

mod common;

use common::*;
use xmemo_core::RevisionStatus;
use xmemo_core::package::{
    ArchiveLimits, CapsuleInput, build_capsule, read_files, read_zip, unzip,
};

#[test]
fn corpus_seeds() {
    let limits = ArchiveLimits::default();
    let mut capsules = 0;
    for (name, path) in corpus_packages() {
        let files = read_package(&path);
        seed_files(&files);
        let zip = zip_tree(&name, &files);
        seed("zip_read", &zip);
        let Ok(package) = read_zip(&zip, &limits) else {
            // Over a limit on purpose (corpus.rs checks how); still a seed.
            continue;
        };
        let capsule = build_capsule(&CapsuleInput {
            slug: name.clone(),
            skill_id: format!("skill_{name}"),
            revision_id: format!("rev_{name}"),
            revision_number: 1,
            status: RevisionStatus::Published,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            content: package.content.clone(),
            attribution: serde_json::json!({"account_id": "acct_seed"}),
            source: None,
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        seed("zip_read", &capsule.bytes);
        let unpacked = unzip(&capsule.bytes, &limits).unwrap();
        seed_files(&unpacked);
        let again = read_files(unpacked.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            again.canonical_hash(),
            capsule.manifest.canonical_hash,
            "{name}"
        );
        assert_eq!(again.content, package.content, "{name}");
        assert!(again.capsule.is_some(), "{name}: capsule.json was read");
        assert_eq!(decode_file_list(&file_list(&unpacked)), unpacked, "{name}");
        capsules += 1;
    }
    assert!(
        capsules >= 9,
        "only {capsules} corpus packages gave capsule seeds"
    );
}

/// The decoder of `fuzz/fuzz_targets/capsule_import.rs`, restated for well-formed lists (the
/// fuzz crate builds outside the workspace, so the two are tied by this round trip and the
/// format's description in both places).
fn decode_file_list(mut data: &[u8]) -> Vec<xmemo_core::package::PackageFile> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let path_len = u16::from_le_bytes([data[0], data[1]]) as usize;
        let path = String::from_utf8(data[2..2 + path_len].to_vec()).unwrap();
        data = &data[2 + path_len..];
        let len = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
        out.push(xmemo_core::package::PackageFile::new(
            path,
            &data[4..4 + len],
        ));
        data = &data[4 + len..];
    }
    out
}

/// The ClawHub corpus as seeds, bounded: the SKILL.md files that need a repair or are
/// refused (the lenient readers' real inputs; the ~1,470 clean ones add nothing the
/// anthropics packages do not) for `skill_md`, and the corpus's paths for `skill_folders`.
#[test]
fn clawhub_seeds_are_the_files_that_need_a_repair() {
    let files = clawhub_files();
    let mut seeded = 0;
    let mut paths = String::new();
    for f in &files {
        paths.push_str(&format!("skills/{}/{}\n", f.folder, f.file_name));
        let package = read_files(vec![xmemo_core::package::PackageFile::new(
            format!("{}/{}", f.name, f.file_name),
            f.bytes.clone(),
        )]);
        if package.is_ok_and(|p| p.repairs.is_empty()) {
            continue;
        }
        seed("skill_md", &f.bytes);
        seeded += 1;
    }
    seed("skill_folders", paths.as_bytes());
    // Bounded: libFuzzer reads every seed at start, so this must stay a few hundred files.
    assert!(
        (100..=400).contains(&seeded),
        "{seeded} ClawHub seeds for skill_md"
    );
}
