//! One minimal, real-shaped example per repair kind (docs/packages.md, "Repairs"): the file
//! as authors on the ClawHub registry write it, what it is read as, the repair that says so,
//! and that the repaired revision is canonical — reading it twice gives the same
//! canonical_hash, and its export reads back identically with no repair at all.
//!
//! `every_kind_has_an_example` walks `RepairKind::ALL` through an exhaustive `match`, so a
//! new kind without an example does not compile, and one whose example stops producing it
//! fails.

use serde_json::{Value, json};
use xmemo_core::RevisionStatus;
use xmemo_core::package::batch::plan_slugs;
use xmemo_core::package::{
    ArchiveLimits, CapsuleInput, NameHints, Package, PackageFile, Repair, RepairKind,
    build_capsule, read_files, read_files_with, read_zip,
};

/// A skill folder `folder/` holding one instructions file.
fn folder(folder: &str, file: &str, text: &str) -> Package {
    read_files(vec![PackageFile::new(format!("{folder}/{file}"), text)])
        .unwrap_or_else(|e| panic!("{folder}: {e}"))
}

/// The repaired content is canonical: the same bytes give the same hash, and the Source
/// Capsule export reads back to the same content without any repair.
fn round_trips(package: &Package, again: impl Fn() -> Package) {
    assert_eq!(again().canonical_hash(), package.canonical_hash());
    let capsule = build_capsule(&CapsuleInput {
        slug: "example".into(),
        skill_id: "skill_example".into(),
        revision_id: "rev_example".into(),
        revision_number: 1,
        status: RevisionStatus::Draft,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        content: package.content.clone(),
        attribution: Value::Null,
        source: None,
    })
    .unwrap_or_else(|e| panic!("export: {e}"));
    let back = read_zip(&capsule.bytes, &ArchiveLimits::default()).unwrap();
    assert_eq!(back.content, package.content);
    assert_eq!(back.canonical_hash(), package.canonical_hash());
    assert!(back.repairs.is_empty(), "{:?}", back.repairs);
}

fn only(package: &Package, kind: RepairKind) -> &Repair {
    let found: Vec<&Repair> = package.repairs.iter().filter(|r| r.kind == kind).collect();
    assert_eq!(found.len(), 1, "{kind}: {:?}", package.repairs);
    let r = found[0];
    assert!(!r.problem.is_empty() && !r.action.is_empty(), "{r:?}");
    r
}

/// Reads the example of `kind` and checks what it was read as; returns the package (the
/// slug kind has none and returns `None`).
fn example(kind: RepairKind) -> Option<Package> {
    use RepairKind::*;
    let text: &str;
    let p = match kind {
        SkillMdFileName => {
            text =
                "---\nname: moltchan\ndescription: Post to Moltchan boards.\n---\n\n# Moltchan\n";
            let p = folder("moltchan", "skill.md", text);
            assert_eq!(only(&p, kind).field, "SKILL.md");
            assert_eq!(p.content.name, "moltchan");
            round_trips(&p, || folder("moltchan", "skill.md", text));
            p
        }
        FrontmatterMissing => {
            text = "# Spotify CLI\n\nControl Spotify playback from the terminal.\n";
            let p = folder("spotify-cli", "SKILL.md", text);
            only(&p, kind);
            assert_eq!(p.content.instruction_body, text);
            round_trips(&p, || folder("spotify-cli", "SKILL.md", text));
            p
        }
        FrontmatterNotAtStart => {
            text = "<!-- https://github.com/gillberto1/moltwallet -->\n---\nname: moltwallet\n\
                    description: Molt-first Solana wallet CLI.\n---\n\n# Moltwallet\n";
            let p = folder("moltwallet", "SKILL.md", text);
            assert_eq!(only(&p, kind).line, Some(2));
            assert_eq!(p.content.name, "moltwallet");
            assert_eq!(
                p.content.instruction_body,
                "<!-- https://github.com/gillberto1/moltwallet -->\n# Moltwallet\n"
            );
            round_trips(&p, || folder("moltwallet", "SKILL.md", text));
            p
        }
        FrontmatterNotOpened => {
            text = "name: hvac-takeoff\ndescription: HVAC takeoff from PDF plans.\n\
                    file_types: [pdf]\n---\n\n# HVAC takeoff\n";
            let p = folder("hvac-takeoff", "SKILL.md", text);
            only(&p, kind);
            assert_eq!(p.content.metadata["file_types"], json!(["pdf"]));
            assert_eq!(p.content.instruction_body, "# HVAC takeoff\n");
            round_trips(&p, || folder("hvac-takeoff", "SKILL.md", text));
            p
        }
        FrontmatterNotClosed => {
            text = "---\nname: gogcli\ndescription: Google Workspace CLI for Gmail and Drive.\n\n\
                    # gogcli - Google Workspace CLI\n";
            let p = folder("gogcli", "SKILL.md", text);
            only(&p, kind);
            assert_eq!(
                p.content.description,
                "Google Workspace CLI for Gmail and Drive."
            );
            assert_eq!(
                p.content.instruction_body,
                "# gogcli - Google Workspace CLI\n"
            );
            round_trips(&p, || folder("gogcli", "SKILL.md", text));
            p
        }
        FrontmatterLineByLine | ValueAsText => {
            text = "---\nname: discord\ndescription: Use when you need to control Discord: send \
                    messages, react.\nargument-hint: [channel] [message]\n---\n\n# Discord\n";
            let p = folder("discord", "SKILL.md", text);
            assert_eq!(only(&p, FrontmatterLineByLine).line, Some(2));
            let texts: Vec<&Repair> = p.repairs.iter().filter(|r| r.kind == ValueAsText).collect();
            assert_eq!(
                texts.iter().map(|r| r.field.as_str()).collect::<Vec<_>>(),
                ["description", "metadata.argument-hint"]
            );
            assert_eq!(
                p.content.description,
                "Use when you need to control Discord: send messages, react."
            );
            assert_eq!(p.content.metadata["argument-hint"], "[channel] [message]");
            round_trips(&p, || folder("discord", "SKILL.md", text));
            p
        }
        MergeConflict => {
            text = "---\nname: obsidian-daily\ndescription: Manage Obsidian Daily Notes.\n\
                    <<<<<<< Updated upstream\nmetadata:\n  author: github.com/bastos\n\
                    =======\n>>>>>>> Stashed changes\n---\n\n# Obsidian Daily\n";
            let p = folder("obsidian-daily", "SKILL.md", text);
            assert_eq!(only(&p, kind).line, Some(4));
            assert_eq!(
                p.content.metadata["metadata"],
                json!({"author": "github.com/bastos"})
            );
            round_trips(&p, || folder("obsidian-daily", "SKILL.md", text));
            p
        }
        TabIndentation => {
            text = "---\nname: tabs\ndescription: Indented with tabs.\nmetadata:\n\tauthor: ops\n\t\
                    version: 2\n---\n\n# Tabs\n";
            let p = folder("tabs", "SKILL.md", text);
            assert_eq!(only(&p, kind).field, "metadata.metadata");
            assert_eq!(
                p.content.metadata["metadata"],
                json!({"author": "ops", "version": 2})
            );
            round_trips(&p, || folder("tabs", "SKILL.md", text));
            p
        }
        KeyAsText => {
            text = "---\nname: steps\ndescription: Numbered steps.\nmetadata:\n  1: install\n  \
                    true: always\n---\n\n# Steps\n";
            let p = folder("steps", "SKILL.md", text);
            let keys: Vec<&str> = p
                .repairs
                .iter()
                .filter(|r| r.kind == kind)
                .map(|r| r.field.as_str())
                .collect();
            assert_eq!(keys, ["metadata.metadata.1", "metadata.metadata.true"]);
            assert_eq!(
                p.content.metadata["metadata"],
                json!({"1": "install", "true": "always"})
            );
            round_trips(&p, || folder("steps", "SKILL.md", text));
            p
        }
        NotText => {
            text = "---\nname: 2048\ndescription: Play 2048 in the terminal.\n---\n\n# 2048\n";
            let p = folder("game-2048", "SKILL.md", text);
            assert_eq!(only(&p, kind).field, "name");
            assert_eq!(p.content.name, "2048");
            round_trips(&p, || folder("game-2048", "SKILL.md", text));
            p
        }
        NameFromHeading => {
            text =
                "---\ndescription: Control your Pi-hole DNS ad blocker.\n---\n\n# Pi-hole Skill\n";
            let p = folder("pihole", "SKILL.md", text);
            only(&p, kind);
            assert_eq!(p.content.name, "Pi-hole Skill");
            round_trips(&p, || folder("pihole", "SKILL.md", text));
            p
        }
        NameFromFolder => {
            text = "test\n";
            let p = folder("tin-test", "SKILL.md", text);
            only(&p, kind);
            assert_eq!(
                (p.content.name.as_str(), p.content.description.as_str()),
                ("tin-test", "test")
            );
            round_trips(&p, || folder("tin-test", "SKILL.md", text));
            p
        }
        NameFromSlug => {
            text = "NOTHING HERE BRO\n";
            let read = || {
                read_files_with(
                    vec![PackageFile::new("SKILL.md", text)],
                    &NameHints {
                        folder: None,
                        slug: Some("tin-test".into()),
                    },
                )
                .unwrap()
            };
            let p = read();
            only(&p, kind);
            assert_eq!(p.content.name, "tin-test");
            round_trips(&p, read);
            p
        }
        DescriptionFromBody => {
            text = "---\nname: parcel\n---\n\n# Parcel\n\n```sh\nparcel track 123\n```\n\n\
                    Track **packages** across\ncarriers.\n";
            let p = folder("parcel", "SKILL.md", text);
            only(&p, kind);
            assert_eq!(p.content.description, "Track packages across carriers.");
            round_trips(&p, || folder("parcel", "SKILL.md", text));
            p
        }
        NameCut => {
            let long = format!(
                "---\nname: {}\ndescription: d\n---\n\nbody\n",
                "Word ".repeat(40)
            );
            let p = folder("long", "SKILL.md", &long);
            only(&p, kind);
            assert!(p.content.name.chars().count() <= 128);
            assert!(p.content.name.ends_with('…'));
            round_trips(&p, || folder("long", "SKILL.md", &long));
            p
        }
        DescriptionCut => {
            let long = format!(
                "---\nname: long\ndescription: {}\n---\n\nbody\n",
                "Use it. ".repeat(200)
            );
            let p = folder("long", "SKILL.md", &long);
            only(&p, kind);
            assert!(p.content.description.chars().count() <= 1024);
            round_trips(&p, || folder("long", "SKILL.md", &long));
            p
        }
        SlugCollision => {
            let plan = plan_slugs(&["skills/alice/weather".into(), "skills/bob/weather".into()]);
            let slugs: Vec<&str> = plan.iter().map(|p| p.slug.as_str()).collect();
            assert_eq!(slugs, ["alice-weather", "bob-weather"]);
            for p in &plan {
                let note = p.note.as_ref().expect("a collision note");
                assert_eq!((note.kind, note.field.as_str()), (kind, "slug"));
                assert!(note.problem.contains("skills/alice/weather"), "{note:?}");
            }
            return None;
        }
    };
    Some(p)
}

#[test]
fn every_kind_has_an_example() {
    for kind in RepairKind::ALL {
        if let Some(p) = example(kind) {
            assert!(
                p.repairs.iter().any(|r| r.kind == kind),
                "{kind}: {:?}",
                p.repairs
            );
            // a repair says where content came from: a file needing none has none
            assert!(p.repairs.iter().all(|r| r.kind.changes_content()));
        }
    }
}

#[test]
fn a_well_formed_file_has_no_repair() {
    let p = folder(
        "deploy",
        "SKILL.md",
        "---\nname: deploy\ndescription: How we deploy.\nlicense: MIT\n---\n\n# Deploy\n",
    );
    assert!(p.repairs.is_empty(), "{:?}", p.repairs);
}

#[test]
fn ambiguous_files_are_refused_with_line_and_column() {
    for (text, line, column) in [
        // where does the quoted description end?
        (
            "---\nname: a\ndescription: \"Use when: asked\nlicense: MIT\n---\nbody\n",
            3,
            14,
        ),
        // a stray line inside the frontmatter
        (
            "---\nname: a\ndescription: b: c\nsee the README\n---\nbody\n",
            4,
            1,
        ),
        // the two sides of a merge conflict disagree
        (
            "---\nname: a\n<<<<<<< HEAD\ndescription: one\n=======\ndescription: two\n>>>>>>> x\n---\nbody\n",
            6,
            1,
        ),
        // the same key twice
        (
            "---\nname: a\ndescription: b: c\nname: d\n---\nbody\n",
            4,
            1,
        ),
    ] {
        let e = read_files(vec![PackageFile::new("SKILL.md", text)]).unwrap_err();
        assert_eq!(e.kind(), "invalid_yaml", "{text:?}: {e}");
        assert_eq!(
            (e.details()["line"].clone(), e.details()["column"].clone()),
            (json!(line), json!(column)),
            "{text:?}: {e}"
        );
        assert!(e.to_string().contains(&format!("line {line}")), "{e}");
    }
}
