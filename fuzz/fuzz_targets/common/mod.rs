//! What every package target checks.

use xmemo_core::ErrorCode;
use xmemo_core::RevisionStatus;
use xmemo_core::package::{
    ArchiveLimits, CapsuleInput, Package, PackageError, build_capsule, read_zip,
};

/// A refusal is one of the two content codes and names what it refuses.
pub fn refusal_is_well_formed(e: &PackageError) {
    assert!(
        matches!(
            e.code(),
            ErrorCode::ValidationError | ErrorCode::PayloadTooLarge
        ),
        "{e:?}"
    );
    assert!(!e.kind().is_empty(), "{e:?}");
    assert!(!e.to_string().is_empty(), "{e:?}");
}

/// SPEC §6: export is lossless. Whatever the readers accept exports as a Source Capsule that
/// imports back to the same content and canonical_hash — unless the export refuses it
/// (metadata SKILL.md cannot carry), which is an error, never a lossy capsule.
pub fn export_round_trips(package: &Package) {
    let slug = package
        .suggested_slug()
        .unwrap_or_else(|| "fuzzed-skill".to_string());
    let input = CapsuleInput {
        slug,
        skill_id: "skill_fuzz".into(),
        revision_id: "rev_fuzz".into(),
        revision_number: 1,
        status: RevisionStatus::Draft,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        content: package.content.clone(),
        attribution: serde_json::Value::Null,
        source: None,
    };
    let Ok(capsule) = build_capsule(&input) else {
        return;
    };
    let back = match read_zip(&capsule.bytes, &ArchiveLimits::default()) {
        Ok(back) => back,
        Err(e) => panic!("an exported capsule does not import: {e}"),
    };
    assert_eq!(
        back.content, package.content,
        "the capsule changed the content"
    );
    assert!(
        back.repairs.is_empty(),
        "an export needed repairs to read back: {:?}",
        back.repairs
    );
    assert_eq!(back.canonical_hash(), package.canonical_hash());
    assert_eq!(
        capsule.manifest.canonical_hash,
        package.canonical_hash(),
        "capsule.json states another hash"
    );
}
