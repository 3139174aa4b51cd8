//! Regression corpus of hostile archives and SKILL.md files, generated here: each case gets
//! its own specific error (kind, code, and the path or limit it names). The archives are
//! also the hostile seeds of the fuzz targets (`scripts/fuzz-seeds`).

mod common;

use common::*;
use xmemo_core::ErrorCode;
use xmemo_core::package::{
    ArchiveLimits, FRONTMATTER_MAX_BYTES, PackageError, PackageFile, read_files, read_zip,
};
use zip::CompressionMethod;

fn refused(zip: &[u8]) -> PackageError {
    // Every hostile fixture is also a fuzz seed (`scripts/fuzz-seeds`).
    seed_archive(zip);
    match read_zip(zip, &ArchiveLimits::default()) {
        Ok(p) => panic!("accepted a hostile archive: {:?}", p.content.name),
        Err(e) => e,
    }
}

fn assert_kind(e: &PackageError, kind: &str, field: &str) {
    assert_eq!(e.kind(), kind, "{e}");
    assert_eq!(e.field(), field, "{e}");
}

#[test]
fn a_clean_archive_is_accepted() {
    let zip = zip_of(&[
        ("demo/", b""),
        ("demo/SKILL.md", SKILL_MD),
        ("demo/scripts/run.py", b"print('ok')\n"),
        ("__MACOSX/demo/._SKILL.md", b"\x00\x05\x16\x07junk"),
        ("demo/.DS_Store", b"\x00\x00\x00\x01Bud1"),
    ]);
    let p = read_zip(&zip, &ArchiveLimits::default()).unwrap();
    assert_eq!(p.root_folder.as_deref(), Some("demo"));
    let paths: Vec<&str> = p
        .content
        .components
        .iter()
        .map(|c| c.logical_path.as_str())
        .collect();
    assert_eq!(paths, ["scripts/run.py"]);
}

#[test]
fn parent_traversal() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("zz/evil.sh", b"rm -rf /")]);
    patch_bytes(&mut zip, b"zz/evil.sh", b"../evil.sh");
    let e = refused(&zip);
    assert_kind(&e, "unsafe_path", "../evil.sh");
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert!(e.to_string().contains(".."), "{e}");
}

#[test]
fn nested_traversal() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("a/zz/zz/x", b"x")]);
    patch_bytes(&mut zip, b"a/zz/zz/x", b"a/../../x");
    assert_kind(&refused(&zip), "unsafe_path", "a/../../x");
}

#[test]
fn absolute_path() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("zetc/passwd", b"root")]);
    patch_bytes(&mut zip, b"zetc/passwd", b"/etc/passwd");
    let e = refused(&zip);
    assert_kind(&e, "unsafe_path", "/etc/passwd");
    assert!(e.to_string().contains("absolute"), "{e}");
}

#[test]
fn drive_letter_path() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("Cz/x.txt", b"x")]);
    patch_bytes(&mut zip, b"Cz/x.txt", b"C:/x.txt");
    assert_kind(&refused(&zip), "unsafe_path", "C:/x.txt");
}

#[test]
fn backslash_path() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("a_b.txt", b"x")]);
    patch_bytes(&mut zip, b"a_b.txt", b"a\\b.txt");
    let e = refused(&zip);
    assert_kind(&e, "unsafe_path", "a\\b.txt");
    assert!(e.to_string().contains("backslash"), "{e}");
}

#[test]
fn non_utf8_file_name() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("nAme.txt", b"x")]);
    patch_bytes(&mut zip, b"nAme.txt", b"n\xffme.txt");
    let e = refused(&zip);
    assert_eq!(e.kind(), "unsafe_path");
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

#[test]
fn symlink_entry() {
    let zip = zip_with_symlink(
        &[("SKILL.md", SKILL_MD)],
        "references/passwd",
        "/etc/passwd",
    );
    let e = refused(&zip);
    assert_kind(&e, "symlink", "references/passwd");
    assert_eq!(e.code(), ErrorCode::ValidationError);
}

#[test]
fn special_file_entry() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("fifo", b"")]);
    set_unix_mode(&mut zip, "fifo", 0o010_644);
    assert_kind(&refused(&zip), "special_file", "fifo");
}

#[test]
fn case_insensitive_collision() {
    let zip = zip_of(&[
        ("SKILL.md", SKILL_MD),
        ("scripts/Run.py", b"a"),
        ("scripts/run.py", b"b"),
    ]);
    let e = refused(&zip);
    assert_eq!(e.kind(), "path_collision", "{e}");
    assert_eq!(e.paths(), ["scripts/run.py", "scripts/Run.py"]);
    assert!(e.to_string().contains("case"), "{e}");
}

#[test]
fn skill_md_case_collision() {
    let zip = zip_of(&[("SKILL.md", SKILL_MD), ("skill.md", SKILL_MD)]);
    assert_eq!(refused(&zip).kind(), "path_collision");
}

#[test]
fn duplicate_entries() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("a.txt", b"1"), ("b.txt", b"2")]);
    patch_bytes(&mut zip, b"b.txt", b"a.txt");
    // the name appears twice per header kind now; the reader sees the duplicate
    assert_kind(&refused(&zip), "duplicate_entries", "archive");
}

#[test]
fn file_that_is_also_a_folder() {
    let zip = zip_of(&[("SKILL.md", SKILL_MD), ("docs", b"x"), ("docs/a.md", b"y")]);
    assert_eq!(refused(&zip).kind(), "path_collision");
}

#[test]
fn too_many_entries() {
    let limits = ArchiveLimits::default();
    let names: Vec<String> = (0..=limits.max_entries)
        .map(|i| format!("f/{i}.txt"))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("SKILL.md", SKILL_MD)];
    entries.extend(names.iter().map(|n| (n.as_str(), b"x".as_slice())));
    let e = refused(&zip_with(&entries, CompressionMethod::Stored));
    assert_kind(&e, "too_many_entries", "archive");
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert_eq!(e.limit(), Some(limits.max_entries as u64));
    assert_eq!(e.actual(), Some(limits.max_entries as u64 + 2));
    assert!(e.to_string().contains("1000"), "{e}");
}

#[test]
fn entry_over_the_per_file_cap() {
    let limits = ArchiveLimits::default();
    let big = noise(limits.max_entry_bytes as usize + 1, 7);
    let zip = zip_of(&[("SKILL.md", SKILL_MD), ("assets/big.bin", &big)]);
    let e = refused(&zip);
    assert_kind(&e, "entry_too_large", "assets/big.bin");
    assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
    assert_eq!(e.limit(), Some(limits.max_entry_bytes));
}

#[test]
fn total_size_over_the_cap() {
    let limits = ArchiveLimits::default();
    let per_file = (limits.max_entry_bytes - 1024) as usize;
    let count = (limits.max_total_bytes as usize / per_file) + 1;
    let blobs: Vec<(String, Vec<u8>)> = (0..count)
        .map(|i| (format!("assets/{i:02}.bin"), noise(per_file, i as u64 + 1)))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("SKILL.md", SKILL_MD)];
    entries.extend(blobs.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    let e = refused(&zip_with(&entries, CompressionMethod::Stored));
    assert_eq!(e.kind(), "archive_too_large", "{e}");
    assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
    assert_eq!(e.limit(), Some(limits.max_total_bytes));
}

#[test]
fn total_size_cap_with_custom_limits() {
    let limits = ArchiveLimits {
        max_total_bytes: 10_000,
        ..ArchiveLimits::default()
    };
    let a = noise(6_000, 1);
    let b = noise(6_000, 2);
    let zip = zip_of(&[("SKILL.md", SKILL_MD), ("a.bin", &a), ("b.bin", &b)]);
    let e = read_zip(&zip, &limits).unwrap_err();
    assert_eq!(e.kind(), "archive_too_large");
    assert!(e.to_string().contains("b.bin"), "{e}");
}

#[test]
fn zip_bomb_is_stopped_early() {
    // 50 MiB of zeros deflates to ~50 KiB; the reader must stop long before 50 MiB: it
    // counts what it decompresses and stops one chunk past the 1 MiB per-file cap.
    let zeros = vec![0u8; 50 << 20];
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("assets/bomb.bin", &zeros)]);
    drop(zeros);
    assert!(zip.len() < 1 << 20);
    // With a wrong CRC the bomb is refused as oversized only by a reader that stopped before
    // its end: one that decompressed all 50 MiB (and only then measured) would have reached
    // the CRC check and called the archive corrupt. The error, not a clock, is the evidence.
    set_wrong_crc(&mut zip, "assets/bomb.bin");
    let e = refused(&zip);
    assert_kind(&e, "entry_too_large", "assets/bomb.bin");
    assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
    assert_eq!(e.limit(), Some(ArchiveLimits::default().max_entry_bytes));
    // The wrong CRC is caught where an entry is read to its end.
    let mut small = zip_of(&[("SKILL.md", SKILL_MD), ("assets/small.bin", &[0u8; 4096])]);
    set_wrong_crc(&mut small, "assets/small.bin");
    assert_kind(&refused(&small), "corrupt_archive", "assets/small.bin");
}

#[test]
fn compression_ratio_cap() {
    // 900 KiB of zeros: under the per-file cap, but ~1000:1; refused once past the
    // 256 KiB grace size.
    let zeros = vec![0u8; 900 << 10];
    let zip = zip_of(&[("SKILL.md", SKILL_MD), ("assets/pad.bin", &zeros)]);
    let e = refused(&zip);
    assert_kind(&e, "compression_ratio", "assets/pad.bin");
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert_eq!(e.limit(), Some(100));
    assert!(e.actual().unwrap() > 100);
}

#[test]
fn zip_bomb_with_lying_headers() {
    let zeros = vec![0u8; 20 << 20];
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("bomb.txt", &zeros)]);
    drop(zeros);
    // headers claim 10 bytes; what is decompressed is counted, and the `zip` crate also
    // refuses output past the declared size (seen as a corrupt entry)
    set_uncompressed_size(&mut zip, "bomb.txt", 10);
    let e = refused(&zip);
    assert!(
        matches!(
            e.kind(),
            "compression_ratio" | "corrupt_archive" | "entry_too_large"
        ),
        "{e}"
    );
    assert_eq!(e.field(), "bomb.txt");
}

#[test]
fn a_highly_compressible_but_small_file_is_fine() {
    // 100 KiB of spaces: ratio ~1000:1, but below the ratio grace size
    let spaces = vec![b' '; 100 << 10];
    let zip = zip_of(&[("SKILL.md", SKILL_MD), ("assets/pad.txt", &spaces)]);
    assert!(read_zip(&zip, &ArchiveLimits::default()).is_ok());
}

#[test]
fn encrypted_entry() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("secret.txt", b"x")]);
    set_encrypted(&mut zip, "secret.txt");
    let e = refused(&zip);
    assert_kind(&e, "encrypted_entry", "secret.txt");
}

#[test]
fn unsupported_compression_method() {
    let mut zip = zip_of(&[("SKILL.md", SKILL_MD), ("x.txt", b"hello")]);
    set_method(&mut zip, "x.txt", 12);
    assert_kind(&refused(&zip), "unsupported_compression", "x.txt");
}

#[test]
fn not_a_zip() {
    let e = refused(b"this is not a zip archive at all");
    assert_kind(&e, "corrupt_archive", "archive");
}

#[test]
fn corrupted_entry_data_names_the_entry() {
    let body = noise(4096, 3);
    let mut zip = zip_with(
        &[("SKILL.md", SKILL_MD), ("assets/data.bin", &body)],
        CompressionMethod::Stored,
    );
    // flip one byte of the stored data: the CRC check fails
    let at = zip.windows(16).position(|w| w == &body[..16]).unwrap() + 100;
    zip[at] ^= 0xff;
    let e = refused(&zip);
    assert_kind(&e, "corrupt_archive", "assets/data.bin");
}

#[test]
fn invalid_utf8_skill_md() {
    let zip = zip_of(&[(
        "SKILL.md",
        b"---\nname: a\ndescription: b\n---\nbad \xc3\x28 text",
    )]);
    let e = refused(&zip);
    assert_kind(&e, "not_utf8", "SKILL.md");
    assert!(e.to_string().contains("line 5"), "{e}");
}

#[test]
fn missing_skill_md() {
    let e = refused(&zip_of(&[("README.md", b"hi"), ("scripts/a.py", b"x")]));
    assert_kind(&e, "missing_skill_md", "archive");
}

#[test]
fn wrongly_cased_skill_md_is_read_and_reported() {
    // Not hostile: 20 authors of the ClawHub corpus name it `skill.md` (#24).
    let zip = zip_of(&[("demo/skill.md", SKILL_MD)]);
    seed_archive(&zip);
    let p = read_zip(&zip, &ArchiveLimits::default()).unwrap();
    assert_eq!(p.content.name, "demo");
    assert_eq!(p.repairs.len(), 1, "{:?}", p.repairs);
    assert_eq!(p.repairs[0].kind.as_str(), "skill_md_file_name");
    // deeper than the one top folder it is no skill's instructions
    let e = refused(&zip_of(&[("a/b/skill.md", SKILL_MD)]));
    assert_eq!(e.kind(), "missing_skill_md");
}

#[test]
fn empty_archive() {
    let e = refused(&zip_of(&[]));
    assert_eq!(e.kind(), "missing_skill_md");
}

#[test]
fn two_top_level_folders() {
    let e = refused(&zip_of(&[
        ("one/SKILL.md", SKILL_MD),
        ("two/SKILL.md", SKILL_MD),
    ]));
    assert_kind(&e, "ambiguous_root", "archive");
    assert_eq!(e.paths(), ["one/", "two/"]);
}

#[test]
fn a_folder_and_a_stray_root_file() {
    let e = refused(&zip_of(&[("one/SKILL.md", SKILL_MD), ("README.md", b"x")]));
    assert_eq!(e.kind(), "ambiguous_root");
}

#[test]
fn frontmatter_too_big() {
    let md = format!(
        "---\nname: a\ndescription: b\npadding: \"{}\"\n---\nbody\n",
        "x".repeat(FRONTMATTER_MAX_BYTES)
    );
    let e = refused(&zip_of(&[("SKILL.md", md.as_bytes())]));
    assert_kind(&e, "frontmatter_too_large", "SKILL.md");
    assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
    assert_eq!(e.limit(), Some(FRONTMATTER_MAX_BYTES as u64));
    assert!(e.actual().unwrap() > FRONTMATTER_MAX_BYTES as u64);
}

#[test]
fn broken_yaml_reports_line_and_column() {
    let md = b"---\nname: demo\ndescription: \"unterminated\nlicense: MIT\n---\nbody\n";
    let e = refused(&zip_of(&[("SKILL.md", md)]));
    assert_kind(&e, "invalid_yaml", "SKILL.md");
    let details = e.details();
    assert!(details["line"].as_u64().unwrap() >= 3, "{e}");
    assert!(details["column"].as_u64().is_some(), "{e}");
    assert!(e.to_string().contains("line"), "{e}");

    let md = b"---\nname: demo\ndescription: ok\n\tlicense: MIT\n---\nbody\n";
    let e = refused(&zip_of(&[("SKILL.md", md)]));
    match e {
        PackageError::Yaml { line, column, .. } => {
            assert_eq!(line, Some(4));
            assert!(column.is_some());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_name() {
    let e = refused(&zip_of(&[(
        "SKILL.md",
        b"---\ndescription: d\n---\nbody\n",
    )]));
    assert_kind(&e, "missing_field", "name");
}

#[test]
fn missing_description() {
    // No `description`, and no paragraph in the body to take one from (#24: a paragraph
    // would be taken, and reported).
    let e = refused(&zip_of(&[(
        "SKILL.md",
        b"---\nname: n\n---\n# Heading only\n",
    )]));
    assert_kind(&e, "missing_field", "description");
}

#[test]
fn no_frontmatter_and_nothing_to_describe_it() {
    let e = refused(&zip_of(&[("SKILL.md", b"# Just markdown\n")]));
    assert_kind(&e, "missing_field", "description");
}

#[test]
fn empty_body() {
    let e = refused(&zip_of(&[(
        "SKILL.md",
        b"---\nname: n\ndescription: d\n---\n",
    )]));
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert_eq!(e.field(), "instruction_body");
}

#[test]
fn sensitive_files_are_all_named() {
    let e = refused(&zip_of(&[
        ("demo/SKILL.md", SKILL_MD),
        ("demo/.env", b"API_KEY=secret"),
        ("demo/keys/id_rsa", b"-----BEGIN OPENSSH PRIVATE KEY-----"),
        ("demo/.npmrc", b"//registry/:_authToken=x"),
        ("demo/scripts/run.py", b"print(1)"),
    ]));
    assert_eq!(e.kind(), "sensitive_files");
    assert_eq!(e.code(), ErrorCode::ValidationError);
    let mut paths = e.paths();
    paths.sort();
    assert_eq!(paths, [".env", ".npmrc", "keys/id_rsa"]);
    let text = e.to_string();
    for p in [
        ".env",
        ".npmrc",
        "keys/id_rsa",
        "private key",
        "environment file",
    ] {
        assert!(text.contains(p), "{p} missing from: {text}");
    }
}

#[test]
fn more_sensitive_names() {
    for name in [
        ".env.local",
        "config/.env.production",
        "certs/server.pem",
        "tls.key",
        ".netrc",
        ".pypirc",
        ".git-credentials",
        ".aws/credentials",
        ".ssh/config",
        "id_ed25519",
    ] {
        let e = refused(&zip_of(&[("SKILL.md", SKILL_MD), (name, b"x")]));
        assert_eq!(e.kind(), "sensitive_files", "{name}");
        assert_eq!(e.paths(), [name], "{name}");
    }
}

#[test]
fn component_over_the_revision_limit() {
    let big = noise(200_000, 9);
    let e = refused(&zip_of(&[("SKILL.md", SKILL_MD), ("assets/big.bin", &big)]));
    assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
    assert_eq!(e.field(), "assets/big.bin");
    assert_eq!((e.limit(), e.actual()), (Some(131_072), Some(200_000)));
}

#[test]
fn more_than_fifty_components() {
    let names: Vec<String> = (0..51).map(|i| format!("references/{i}.md")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("SKILL.md", SKILL_MD)];
    entries.extend(names.iter().map(|n| (n.as_str(), b"x".as_slice())));
    let e = refused(&zip_of(&entries));
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert_eq!(e.field(), "components");
    assert_eq!((e.limit(), e.actual()), (Some(50), Some(51)));
}

#[test]
fn reserved_component_name() {
    let e = refused(&zip_of(&[("SKILL.md", SKILL_MD), ("Capsule.JSON", b"{}")]));
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert_eq!(e.field(), "Capsule.JSON");
}

#[test]
fn folder_listings_get_the_same_rules() {
    let traversal = vec![
        PackageFile::new("SKILL.md", SKILL_MD),
        PackageFile::new("../x", "y"),
    ];
    seed_files(&traversal);
    let e = read_files(traversal).unwrap_err();
    assert_kind(&e, "unsafe_path", "../x");
    let secret = vec![
        PackageFile::new("SKILL.md", SKILL_MD),
        PackageFile::new(".env", "y"),
    ];
    seed_files(&secret);
    let e = read_files(secret).unwrap_err();
    assert_eq!(e.kind(), "sensitive_files");
}
