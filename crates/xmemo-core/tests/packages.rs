//! SKILL.md import, Source Capsule export / re-import, repository archive subtrees.

mod common;

use common::*;
use serde_json::{Value, json};
use xmemo_core::package::{
    ArchiveLimits, CAPSULE_FORMAT, CapsuleInput, Package, PackageFile, build_capsule, read_files,
    read_skill_md, read_zip, single_top_folder, unzip_subtree,
};
use xmemo_core::{ComponentInput, ComponentType, ErrorCode, RevisionContent, RevisionStatus};

fn content() -> RevisionContent {
    let mut metadata = serde_json::Map::new();
    metadata.insert("license".into(), json!("MIT"));
    metadata.insert("metadata".into(), json!({"team": "ops", "version": 2}));
    RevisionContent {
        name: "Deploy procedure".into(),
        description: "How we deploy to production".into(),
        instruction_body: "1. Run `scripts/check.py`.\n2. Deploy.\n".into(),
        metadata,
        components: vec![
            ComponentInput {
                logical_path: "scripts/check.py".into(),
                component_type: ComponentType::Script,
                content: b"print('ok')\n".to_vec(),
            },
            ComponentInput {
                logical_path: "references/runbook.md".into(),
                component_type: ComponentType::Reference,
                content: "# Runbook\nÉtape 1\n".as_bytes().to_vec(),
            },
        ],
    }
}

fn input(content: RevisionContent) -> CapsuleInput {
    CapsuleInput {
        slug: "deploy".into(),
        skill_id: "skill_0190a0b1c2d37e8f9a0b1c2d3e4f5a6b".into(),
        revision_id: "rev_0190a0b1c2d37e8f9a0b1c2d3e4f5a6c".into(),
        revision_number: 3,
        status: RevisionStatus::Published,
        created_at: "2025-01-02T03:04:05.678Z".into(),
        content,
        attribution: json!({"account": "alice", "client_profile": "cli"}),
        source: None,
    }
}

fn sorted(mut c: RevisionContent) -> RevisionContent {
    c.components
        .sort_by(|a, b| a.logical_path.as_bytes().cmp(b.logical_path.as_bytes()));
    c
}

fn reimport(bytes: &[u8]) -> Result<Package, xmemo_core::package::PackageError> {
    read_zip(bytes, &ArchiveLimits::default())
}

#[test]
fn worked_example_of_the_docs_survives_a_capsule() {
    let capsule = build_capsule(&input(content())).unwrap();
    assert_eq!(
        capsule.manifest.canonical_hash,
        "7feff4ea4652659b01d52b9ddaccb53fbc537e7d88f5a8d2f9b3cc89eeca46f3"
    );
    assert_eq!(capsule.file_name, "deploy-r3.zip");
    let p = reimport(&capsule.bytes).unwrap();
    assert_eq!(p.content, sorted(content()));
    assert_eq!(p.canonical_hash(), capsule.manifest.canonical_hash);
    assert_eq!(p.root_folder.as_deref(), Some("deploy"));
    assert_eq!(p.capsule.as_ref(), Some(&capsule.manifest));
    assert_eq!(p.suggested_slug().as_deref(), Some("deploy"));
}

#[test]
fn capsule_layout_and_manifest() {
    let capsule = build_capsule(&input(content())).unwrap();
    let entries = entries_of(&capsule.bytes);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "deploy/SKILL.md",
            "deploy/capsule.json",
            "deploy/references/runbook.md",
            "deploy/scripts/check.py",
        ]
    );
    let skill_md = String::from_utf8(entries[0].1.clone()).unwrap();
    assert_eq!(
        skill_md,
        "---\nname: Deploy procedure\ndescription: How we deploy to production\nlicense: MIT\nmetadata:\n  team: ops\n  version: 2\n---\n\n1. Run `scripts/check.py`.\n2. Deploy.\n"
    );
    let manifest: Value = serde_json::from_slice(&entries[1].1).unwrap();
    assert_eq!(manifest["format"], CAPSULE_FORMAT);
    assert_eq!(manifest["format_version"], 1);
    assert_eq!(manifest["skill"]["slug"], "deploy");
    assert_eq!(manifest["revision"]["revision_number"], 3);
    assert_eq!(manifest["revision"]["status"], "published");
    assert_eq!(
        manifest["revision"]["created_at"],
        "2025-01-02T03:04:05.678Z"
    );
    assert_eq!(manifest["attribution"]["account"], "alice");
    assert_eq!(manifest["source"], Value::Null);
    assert_eq!(manifest["metadata"]["metadata"]["version"], 2);
    assert_eq!(
        manifest["components"][1],
        json!({
            "logical_path": "scripts/check.py",
            "type": "script",
            "content_hash": "ad64355106bb158b020ecf9702be48f7730fc091dd4bb6a2f092b40393495b3d",
            "size": 12,
            "media_type": "text/x-python",
        })
    );
    // pretty, sorted keys, final newline
    let text = std::str::from_utf8(&entries[1].1).unwrap();
    assert!(text.ends_with("}\n"));
    assert!(text.find("\"attribution\"").unwrap() < text.find("\"canonical_hash\"").unwrap());
}

#[test]
fn export_is_deterministic() {
    let a = build_capsule(&input(content())).unwrap();
    let b = build_capsule(&input(content())).unwrap();
    assert_eq!(a.bytes, b.bytes);
    // component order of the input does not matter
    let mut reversed = content();
    reversed.components.reverse();
    let c = build_capsule(&input(reversed)).unwrap();
    assert_eq!(a.bytes, c.bytes);
    // export → import → export gives the same bytes again
    let p = reimport(&a.bytes).unwrap();
    let d = build_capsule(&input(p.content)).unwrap();
    assert_eq!(a.bytes, d.bytes);
    // fixed dates and modes
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&a.bytes)).unwrap();
    for i in 0..archive.len() {
        let f = archive.by_index(i).unwrap();
        let t = f.last_modified().unwrap();
        assert_eq!((t.year(), t.month(), t.day()), (1980, 1, 1));
        let mode = f.unix_mode().unwrap() & 0o777;
        let expected = if f.name().unwrap().contains("scripts/") {
            0o755
        } else {
            0o644
        };
        assert_eq!(mode, expected, "{}", f.name().unwrap());
    }
}

#[test]
fn capsule_keeps_types_that_folders_would_change() {
    let mut c = content();
    c.components.push(ComponentInput {
        logical_path: "scripts/NOTES.md".into(),
        component_type: ComponentType::Document,
        content: b"notes".to_vec(),
    });
    c.components.push(ComponentInput {
        logical_path: "logo.png".into(),
        component_type: ComponentType::Artifact,
        content: vec![0x89, b'P', b'N', b'G', 0, 0xff, 0xfe, 0, 1, 2],
    });
    let capsule = build_capsule(&input(c.clone())).unwrap();
    let p = reimport(&capsule.bytes).unwrap();
    assert_eq!(p.content, sorted(c));
    assert_eq!(p.canonical_hash(), capsule.manifest.canonical_hash);
}

#[test]
fn crlf_and_unicode_bodies_survive_exactly() {
    let mut c = content();
    c.instruction_body = "\r\n# Title\r\n\r\nÉtape 1 — ok 🚀\r\n---\r\ntrailing   ".into();
    c.name = "Déploiement: \"prod\"".into();
    c.description = "multi\nline\ndescription".into();
    let capsule = build_capsule(&input(c.clone())).unwrap();
    let p = reimport(&capsule.bytes).unwrap();
    assert_eq!(p.content, sorted(c));
}

#[test]
fn editing_one_byte_of_a_component_is_refused_with_its_path() {
    let capsule = build_capsule(&input(content())).unwrap();
    let mut entries = entries_of(&capsule.bytes);
    let runbook = entries
        .iter_mut()
        .find(|(n, _)| n == "deploy/references/runbook.md")
        .unwrap();
    runbook.1[0] ^= 0x01;
    let e = reimport(&rezip(&entries)).unwrap_err();
    assert_eq!(e.kind(), "capsule_mismatch", "{e}");
    assert_eq!(e.code(), ErrorCode::ValidationError);
    assert_eq!(e.field(), "references/runbook.md");
    assert!(e.to_string().contains("references/runbook.md"), "{e}");
}

#[test]
fn flipping_a_raw_byte_inside_the_zip_names_the_entry() {
    let capsule = build_capsule(&input(content())).unwrap();
    // find the deflated data of scripts/check.py: right after its local header
    let name = b"deploy/scripts/check.py";
    let at = capsule
        .bytes
        .windows(name.len())
        .position(|w| w == name)
        .unwrap();
    let mut bytes = capsule.bytes.clone();
    bytes[at + name.len() + 2] ^= 0xff;
    let e = reimport(&bytes).unwrap_err();
    // CRC-32 detects every single-byte change
    assert_eq!(e.kind(), "corrupt_archive", "{e}");
    // archive-level errors name the entry as stored in the archive
    assert_eq!(e.field(), "deploy/scripts/check.py", "{e}");
}

#[test]
fn editing_skill_md_inside_a_capsule_is_refused() {
    let capsule = build_capsule(&input(content())).unwrap();
    let mut entries = entries_of(&capsule.bytes);
    let md = &mut entries[0].1;
    let text = String::from_utf8(md.clone())
        .unwrap()
        .replace("Deploy.", "Deploy!");
    *md = text.into_bytes();
    let e = reimport(&rezip(&entries)).unwrap_err();
    assert_eq!(e.kind(), "capsule_mismatch");
    assert_eq!(e.field(), "SKILL.md");
    assert!(e.to_string().contains("instruction body"), "{e}");

    let mut entries = entries_of(&capsule.bytes);
    let text = String::from_utf8(entries[0].1.clone())
        .unwrap()
        .replace("license: MIT", "license: GPL");
    entries[0].1 = text.into_bytes();
    let e = reimport(&rezip(&entries)).unwrap_err();
    assert_eq!(e.field(), "SKILL.md");
    assert!(e.to_string().contains("metadata"), "{e}");
}

#[test]
fn unlisted_and_missing_files_are_refused() {
    let capsule = build_capsule(&input(content())).unwrap();
    let mut entries = entries_of(&capsule.bytes);
    entries.push(("deploy/extra.md".into(), b"new".to_vec()));
    let e = reimport(&rezip(&entries)).unwrap_err();
    assert_eq!(e.kind(), "capsule_mismatch");
    assert_eq!(e.paths(), ["extra.md"]);
    assert!(e.to_string().contains("not listed"), "{e}");

    let mut entries = entries_of(&capsule.bytes);
    entries.retain(|(n, _)| !n.ends_with("check.py"));
    let e = reimport(&rezip(&entries)).unwrap_err();
    assert_eq!(e.paths(), ["scripts/check.py"]);
    assert!(e.to_string().contains("missing"), "{e}");
}

#[test]
fn a_foreign_or_future_capsule_json_is_refused() {
    let capsule = build_capsule(&input(content())).unwrap();
    for (from, to, expect) in [
        (
            "\"format_version\": 1",
            "\"format_version\": 2",
            "format_version",
        ),
        ("xmemo.source-capsule", "someone-else.format", "format"),
        ("\"type\": \"script\"", "\"type\": \"binary\"", "binary"),
    ] {
        let mut entries = entries_of(&capsule.bytes);
        let text = String::from_utf8(entries[1].1.clone()).unwrap();
        assert!(text.contains(from), "{from}");
        entries[1].1 = text.replace(from, to).into_bytes();
        let e = reimport(&rezip(&entries)).unwrap_err();
        assert_eq!(e.kind(), "capsule_invalid", "{e}");
        assert_eq!(e.field(), "capsule.json");
        assert!(e.to_string().contains(expect), "{e}");
    }
    let mut entries = entries_of(&capsule.bytes);
    entries[1].1 = b"{not json".to_vec();
    assert_eq!(
        reimport(&rezip(&entries)).unwrap_err().kind(),
        "capsule_invalid"
    );
}

#[test]
fn a_tampered_canonical_hash_is_refused() {
    let capsule = build_capsule(&input(content())).unwrap();
    let mut entries = entries_of(&capsule.bytes);
    let text = String::from_utf8(entries[1].1.clone())
        .unwrap()
        .replace(&capsule.manifest.canonical_hash, &"0".repeat(64));
    entries[1].1 = text.into_bytes();
    let e = reimport(&rezip(&entries)).unwrap_err();
    assert_eq!(e.kind(), "capsule_mismatch");
    assert_eq!(e.field(), "capsule.json");
}

#[test]
fn export_refuses_what_skill_md_cannot_carry() {
    let mut c = content();
    c.metadata.insert("name".into(), json!("shadow"));
    let e = build_capsule(&input(c)).unwrap_err();
    assert_eq!(e.kind(), "not_exportable");
    let mut i = input(content());
    i.slug = "../evil".into();
    assert_eq!(build_capsule(&i).unwrap_err().field(), "slug");
}

#[test]
fn single_skill_md_import() {
    let p = read_skill_md(SKILL_MD).unwrap();
    assert_eq!(p.content.name, "demo");
    assert_eq!(p.content.description, "A demo skill");
    assert_eq!(p.content.metadata["license"], "MIT");
    assert_eq!(
        p.content.instruction_body,
        "# Demo\n\nRun `scripts/run.py`.\n"
    );
    assert!(p.content.components.is_empty());
    assert_eq!(p.suggested_slug().as_deref(), Some("demo"));
    // a BOM and CRLF
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(b"---\r\nname: Demo Skill\r\ndescription: d\r\n---\r\n\r\nBody\r\n");
    let p = read_skill_md(&bom).unwrap();
    assert_eq!(p.content.name, "Demo Skill");
    assert_eq!(p.content.instruction_body, "Body\r\n");
    assert_eq!(p.suggested_slug().as_deref(), Some("demo-skill"));
    // name longer than 128 characters: cut, and reported (#24)
    let long = format!("---\nname: {}\ndescription: d\n---\nbody", "n".repeat(129));
    let p = read_skill_md(long.as_bytes()).unwrap();
    assert_eq!(p.content.name.chars().count(), 128);
    assert_eq!(p.repairs.len(), 1);
    assert_eq!(
        (p.repairs[0].kind.as_str(), p.repairs[0].field.as_str()),
        ("name_cut", "name")
    );
}

#[test]
fn folder_types_without_a_manifest() {
    let p = read_files(vec![
        PackageFile::new("SKILL.md", SKILL_MD),
        PackageFile::new("scripts/run.py", "x"),
        PackageFile::new("references/api.md", "x"),
        PackageFile::new("reference/old.md", "x"),
        PackageFile::new("templates/t.html", "x"),
        PackageFile::new("examples/e.md", "x"),
        PackageFile::new("assets/logo.png", vec![0x89, 0xff]),
        PackageFile::new("LICENSE.txt", "x"),
        PackageFile::new("core/lib.py", "x"),
    ])
    .unwrap();
    let types: Vec<(&str, &str)> = p
        .content
        .components
        .iter()
        .map(|c| (c.logical_path.as_str(), c.component_type.as_str()))
        .collect();
    assert_eq!(
        types,
        [
            ("LICENSE.txt", "document"),
            ("assets/logo.png", "artifact"),
            ("core/lib.py", "document"),
            ("examples/e.md", "example"),
            ("reference/old.md", "reference"),
            ("references/api.md", "reference"),
            ("scripts/run.py", "script"),
            ("templates/t.html", "template"),
        ]
    );
    let manifest = p.manifest();
    assert_eq!(manifest[1].media_type, "image/png");
    assert_eq!(manifest[1].size, 2);
}

#[test]
fn repository_archive_subtree() {
    // a GitHub-style archive: one top folder, the skill in a subfolder, a symlink and a
    // big file elsewhere in the repository (not read)
    let mut zip = {
        let big = noise(2 << 20, 5);
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let o = options(zip::CompressionMethod::Stored);
        for (name, bytes) in [
            ("repo-main/README.md", b"# repo".as_slice()),
            ("repo-main/skills/pdf/SKILL.md", SKILL_MD),
            ("repo-main/skills/pdf/scripts/run.py", b"print(1)"),
            ("repo-main/skills/pdfx/SKILL.md", SKILL_MD),
            ("repo-main/other/big.bin", &big),
        ] {
            use std::io::Write;
            w.start_file(name, o).unwrap();
            w.write_all(bytes).unwrap();
        }
        w.add_symlink("repo-main/link", "/etc/passwd", o).unwrap();
        w.finish().unwrap().into_inner()
    };
    let top = single_top_folder(&zip).unwrap();
    assert_eq!(top.as_deref(), Some("repo-main"));
    let limits = ArchiveLimits::default();
    let files = unzip_subtree(&zip, &limits, "repo-main/skills/pdf").unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "scripts/run.py"]);
    let p = read_files(files).unwrap();
    assert_eq!(p.content.components.len(), 1);

    assert_eq!(
        unzip_subtree(&zip, &limits, "../x").unwrap_err().kind(),
        "unsafe_path"
    );
    // the whole archive is refused (symlink)
    assert_eq!(reimport(&zip).unwrap_err().kind(), "symlink");
    // a hostile entry inside the subtree is still refused
    patch_bytes(
        &mut zip,
        b"repo-main/skills/pdf/scripts/run.py",
        b"repo-main/skills/pdf/scripts/../x.p",
    );
    assert_eq!(
        unzip_subtree(&zip, &limits, "repo-main/skills/pdf")
            .unwrap_err()
            .kind(),
        "unsafe_path"
    );
}

#[test]
fn subtree_of_an_archive_that_lists_its_folders() {
    // GitHub archives have an entry for every folder, including the top one and the
    // subtree's own (`repo-sha/`, `repo-sha/skills/pdf/`): those are not paths to refuse.
    let zip = zip_of(&[
        ("repo-sha/", b""),
        ("repo-sha/SKILL.md", SKILL_MD),
        ("repo-sha/skills/", b""),
        ("repo-sha/skills/pdf/", b""),
        ("repo-sha/skills/pdf/SKILL.md", SKILL_MD),
        ("repo-sha/skills/pdf/scripts/", b""),
        ("repo-sha/skills/pdf/scripts/run.py", b"print(1)"),
    ]);
    let limits = ArchiveLimits::default();
    for (subtree, expected) in [
        (
            "repo-sha",
            vec![
                "SKILL.md",
                "skills/pdf/SKILL.md",
                "skills/pdf/scripts/run.py",
            ],
        ),
        ("repo-sha/skills/pdf", vec!["SKILL.md", "scripts/run.py"]),
        ("repo-sha/skills/pdf/", vec!["SKILL.md", "scripts/run.py"]),
    ] {
        let files = unzip_subtree(&zip, &limits, subtree).unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, expected, "{subtree}");
    }
}
