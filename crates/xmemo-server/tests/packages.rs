//! Acceptance: skill packages over HTTP (SPEC §6).
//!
//! 1. Every package of the real-world corpus imports, exports and re-imports into another
//!    workspace with the same canonical_hash and byte-identical components (read back through
//!    Level 2); the one over a limit (`claude-api`) fails naming the limit and the count, and
//!    writes nothing.
//! 2. A regression corpus of hostile archives and SKILL.md files, each with its own error,
//!    and equal row counts before and after.
//! 3. Exports are deterministic; editing one byte inside a capsule makes re-import fail with
//!    the path named.
//! 4. GitHub and ClawHub URL imports against local imitation servers (monorepo subpath,
//!    redirects, oversized archives, refused targets), and private targets refused without
//!    any connection when nothing is allowlisted.
//!
//! Plus the diff endpoint and the routes around them (`POST /imports` chooses by
//! Content-Type; slugs named like import routes are ordinary skills).

mod common;
#[path = "../../xmemo-core/tests/common/mod.rs"]
mod pkg;

use axum::Router;
use axum::extract::{Path as AxPath, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use common::*;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::{Cursor, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use xmemo_server::fetch::FetchConfig;
use zip::CompressionMethod;

const SKILL_MD: &[u8] = pkg::SKILL_MD;

// ------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------

/// A raw HTTP answer (bytes kept), for exports.
struct Raw {
    status: u16,
    headers: reqwest::header::HeaderMap,
    bytes: Vec<u8>,
}

async fn raw(s: &TestServer, method: Method, path: &str, key: &str) -> Raw {
    let resp = s
        .http
        .request(method, format!("{}{path}", s.url))
        .bearer_auth(key)
        .send()
        .await
        .expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.expect("body").to_vec();
    Raw {
        status,
        headers,
        bytes,
    }
}

async fn upload(
    s: &TestServer,
    key: &str,
    query: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Reply {
    let resp = s
        .http
        .post(format!("{}/api/v1/imports{query}", s.url))
        .bearer_auth(key)
        .header(header::CONTENT_TYPE.as_str(), content_type)
        .body(body)
        .send()
        .await
        .expect("request");
    Reply::from(resp).await
}

async fn import_zip(s: &TestServer, key: &str, query: &str, zip: Vec<u8>) -> Reply {
    upload(s, key, query, "application/zip", zip).await
}

async fn import_url(s: &TestServer, key: &str, body: Value) -> Reply {
    s.post("/api/v1/imports", key, body).await
}

async fn export(s: &TestServer, key: &str, slug: &str, query: &str) -> Raw {
    let r = raw(
        s,
        Method::GET,
        &format!("/api/v1/skills/{slug}/export{query}"),
        key,
    )
    .await;
    assert_eq!(
        r.status,
        200,
        "export {slug}{query}: {}",
        String::from_utf8_lossy(&r.bytes)
    );
    r
}

fn header_of(r: &Raw, name: &str) -> String {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn team(s: &TestServer, key: &str, handle: &str) {
    let r = s
        .post("/api/v1/workspaces", key, json!({ "handle": handle }))
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
}

/// Every component of a revision read back through pinned Level 2 reads (raw bytes).
async fn components_via_level2(
    s: &TestServer,
    key: &str,
    slug: &str,
    workspace: &str,
    revision_id: &str,
) -> BTreeMap<String, Vec<u8>> {
    let root = s
        .get(
            &format!("/api/v1/skills/{slug}?workspace={workspace}&revision_id={revision_id}"),
            key,
        )
        .await;
    let data = root.expect_ok()["data"].clone();
    assert_eq!(data["revision_id"], revision_id);
    let mut out = BTreeMap::new();
    for r in data["resources"].as_array().expect("resources") {
        let path = r["logical_path"].as_str().expect("path");
        let encoded: Vec<String> = path
            .split('/')
            .map(|seg| {
                seg.bytes()
                    .map(|b| {
                        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                            (b as char).to_string()
                        } else {
                            format!("%{b:02X}")
                        }
                    })
                    .collect()
            })
            .collect();
        let got = raw(
            s,
            Method::GET,
            &format!(
                "/api/v1/skills/{slug}/revisions/{revision_id}/resources/{}?workspace={workspace}&raw=true",
                encoded.join("/")
            ),
            key,
        )
        .await;
        assert_eq!(got.status, 200, "Level 2 {path}");
        assert_eq!(
            sha256(&got.bytes),
            r["content_hash"].as_str().unwrap_or_default(),
            "{path}"
        );
        out.insert(path.to_string(), got.bytes);
    }
    out
}

// ------------------------------------------------------------------------------------------
// 1. The corpus
// ------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_package_round_trips_or_fails_with_its_limit() {
    let packages = pkg::corpus_packages();
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    team(&s, &key, "corpus").await;
    let mut round_tripped = 0;
    for (name, dir) in &packages {
        let files: Vec<_> = pkg::read_package(dir)
            .into_iter()
            .filter(|f| !xmemo_core::package::is_ignored_path(&f.path))
            .collect();
        let zip = pkg::zip_tree(name, &files);
        let components = files.len() - 1;
        if components > 50 {
            let before = s.counts().await;
            let r = import_zip(&s, &key, "", zip).await;
            let err = r.expect_error(422, "VALIDATION_ERROR");
            assert_eq!(err["details"]["field"], "components", "{name}: {}", r.body);
            assert_eq!(err["details"]["limit"], 50, "{name}");
            assert_eq!(err["details"]["actual"], components as u64, "{name}");
            let message = err["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("50") && message.contains(&components.to_string()),
                "{name}: {message}"
            );
            assert_eq!(
                s.counts().await,
                before,
                "{name}: a refused import wrote rows"
            );
            assert_eq!(name, "claude-api", "unexpected over-limit package");
            continue;
        }

        // Import the folder as a ZIP.
        let r = import_zip(&s, &key, &format!("?filename={name}.zip"), zip.clone()).await;
        assert_eq!(r.status.as_u16(), 201, "{name}: {}", r.body);
        assert_eq!(r.body["kind"], "imported");
        let first = r.body["data"].clone();
        let slug = first["slug"].as_str().expect("slug").to_string();
        let revision_id = first["revision_id"].as_str().expect("rev").to_string();
        let hash = first["canonical_hash"].as_str().expect("hash").to_string();
        assert_eq!(first["workspace"], "personal");
        assert_eq!(first["components"], components as u64, "{name}");
        assert_eq!(first["source"]["kind"], "upload");
        assert_eq!(first["source"]["sha256"], sha256(&zip));
        assert_eq!(first["source"]["file_name"], format!("{name}.zip"));

        // Export it (twice: the same bytes).
        let capsule = export(&s, &key, &slug, &format!("?revision_id={revision_id}")).await;
        assert_eq!(header_of(&capsule, "content-type"), "application/zip");
        assert_eq!(header_of(&capsule, "x-canonical-hash"), hash, "{name}");
        assert_eq!(header_of(&capsule, "x-revision-id"), revision_id);
        assert!(
            header_of(&capsule, "content-disposition")
                .starts_with(&format!("attachment; filename=\"{slug}-r1.zip\"")),
            "{name}"
        );
        let again = export(&s, &key, &slug, &format!("?revision_id={revision_id}")).await;
        assert_eq!(
            capsule.bytes, again.bytes,
            "{name}: export is not deterministic"
        );

        // Re-import the capsule into another workspace.
        let r = import_zip(&s, &key, "?workspace=corpus&intent=publish", capsule.bytes).await;
        assert_eq!(r.status.as_u16(), 201, "{name}: {}", r.body);
        let second = r.body["data"].clone();
        assert_eq!(second["slug"], slug.as_str(), "{name}");
        assert_eq!(second["workspace"], "corpus");
        assert_eq!(second["status"], "proposed", "team publish is a proposal");
        assert_eq!(
            second["canonical_hash"],
            hash.as_str(),
            "{name}: hash changed"
        );
        assert_eq!(second["from_capsule"], true);
        assert_eq!(
            second["source"]["capsule"]["revision_id"],
            revision_id.as_str()
        );
        assert_eq!(second["source"]["capsule"]["source"]["kind"], "upload");

        // Components are byte-identical to the files on disk, on both sides.
        let expected: BTreeMap<String, Vec<u8>> = files
            .iter()
            .filter(|f| f.path != "SKILL.md")
            .map(|f| (f.path.clone(), f.bytes.clone()))
            .collect();
        let original = components_via_level2(&s, &key, &slug, "personal", &revision_id).await;
        let reimported = components_via_level2(
            &s,
            &key,
            &slug,
            "corpus",
            second["revision_id"].as_str().expect("rev"),
        )
        .await;
        assert_eq!(
            original, expected,
            "{name}: stored components differ from disk"
        );
        assert_eq!(
            reimported, expected,
            "{name}: re-imported components differ"
        );

        // Instruction body and metadata survive too.
        let a = s
            .get(&format!("/api/v1/skills/{slug}?workspace=personal"), &key)
            .await;
        let b = s
            .get(
                &format!(
                    "/api/v1/skills/{slug}?workspace=corpus&revision_id={}",
                    second["revision_id"].as_str().unwrap_or_default()
                ),
                &key,
            )
            .await;
        for field in ["name", "description", "instruction_body", "metadata"] {
            assert_eq!(
                a.body["data"][field], b.body["data"][field],
                "{name}: {field}"
            );
        }
        round_tripped += 1;
    }
    assert_eq!(round_tripped, packages.len() - 1);
}

// ------------------------------------------------------------------------------------------
// 2. Hostile input
// ------------------------------------------------------------------------------------------

struct Case {
    name: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
    /// `details.reason`, the package error kind.
    reason: &'static str,
    /// `details.field`, when it is stable.
    field: Option<&'static str>,
}

fn zip_case(
    name: &'static str,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
    reason: &'static str,
    field: Option<&'static str>,
) -> Case {
    Case {
        name,
        content_type: "application/zip",
        body,
        status,
        code,
        reason,
        field,
    }
}

fn hostile_cases() -> Vec<Case> {
    use pkg::*;
    let mut cases = Vec::new();
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("zz/evil.sh", b"rm -rf /")]);
    patch_bytes(&mut z, b"zz/evil.sh", b"../evil.sh");
    cases.push(zip_case(
        "parent traversal",
        z,
        422,
        "VALIDATION_ERROR",
        "unsafe_path",
        Some("../evil.sh"),
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("zetc/passwd", b"root")]);
    patch_bytes(&mut z, b"zetc/passwd", b"/etc/passwd");
    cases.push(zip_case(
        "absolute path",
        z,
        422,
        "VALIDATION_ERROR",
        "unsafe_path",
        Some("/etc/passwd"),
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("a_b.txt", b"x")]);
    patch_bytes(&mut z, b"a_b.txt", b"a\\b.txt");
    cases.push(zip_case(
        "backslash",
        z,
        422,
        "VALIDATION_ERROR",
        "unsafe_path",
        Some("a\\b.txt"),
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("nAme.txt", b"x")]);
    patch_bytes(&mut z, b"nAme.txt", b"n\xffme.txt");
    cases.push(zip_case(
        "non-UTF-8 name",
        z,
        422,
        "VALIDATION_ERROR",
        "unsafe_path",
        None,
    ));
    cases.push(zip_case(
        "symlink",
        zip_with_symlink(
            &[("SKILL.md", SKILL_MD)],
            "references/passwd",
            "/etc/passwd",
        ),
        422,
        "VALIDATION_ERROR",
        "symlink",
        Some("references/passwd"),
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("fifo", b"")]);
    set_unix_mode(&mut z, "fifo", 0o010_644);
    cases.push(zip_case(
        "special file",
        z,
        422,
        "VALIDATION_ERROR",
        "special_file",
        Some("fifo"),
    ));
    cases.push(zip_case(
        "case collision",
        zip_of(&[
            ("SKILL.md", SKILL_MD),
            ("scripts/Run.py", b"a"),
            ("scripts/run.py", b"b"),
        ]),
        422,
        "VALIDATION_ERROR",
        "path_collision",
        None,
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("a.txt", b"1"), ("b.txt", b"2")]);
    patch_bytes(&mut z, b"b.txt", b"a.txt");
    cases.push(zip_case(
        "duplicate entries",
        z,
        422,
        "VALIDATION_ERROR",
        "duplicate_entries",
        Some("archive"),
    ));
    let names: Vec<String> = (0..=1000).map(|i| format!("f/{i}.txt")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("SKILL.md", SKILL_MD)];
    entries.extend(names.iter().map(|n| (n.as_str(), b"x".as_slice())));
    cases.push(zip_case(
        "too many entries",
        zip_with(&entries, CompressionMethod::Stored),
        422,
        "VALIDATION_ERROR",
        "too_many_entries",
        Some("archive"),
    ));
    cases.push(zip_case(
        "entry over the per-file cap",
        zip_of(&[
            ("SKILL.md", SKILL_MD),
            ("assets/big.bin", &noise((1 << 20) + 1, 7)),
        ]),
        413,
        "PAYLOAD_TOO_LARGE",
        "entry_too_large",
        Some("assets/big.bin"),
    ));
    cases.push(zip_case(
        "zip bomb",
        zip_of(&[
            ("SKILL.md", SKILL_MD),
            ("assets/bomb.bin", &vec![0u8; 50 << 20]),
        ]),
        413,
        "PAYLOAD_TOO_LARGE",
        "entry_too_large",
        Some("assets/bomb.bin"),
    ));
    cases.push(zip_case(
        "compression ratio",
        zip_of(&[
            ("SKILL.md", SKILL_MD),
            ("assets/pad.bin", &vec![0u8; 900 << 10]),
        ]),
        422,
        "VALIDATION_ERROR",
        "compression_ratio",
        Some("assets/pad.bin"),
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("secret.txt", b"x")]);
    set_encrypted(&mut z, "secret.txt");
    cases.push(zip_case(
        "encrypted entry",
        z,
        422,
        "VALIDATION_ERROR",
        "encrypted_entry",
        Some("secret.txt"),
    ));
    let mut z = zip_of(&[("SKILL.md", SKILL_MD), ("x.txt", b"hello")]);
    set_method(&mut z, "x.txt", 12);
    cases.push(zip_case(
        "bzip2 entry",
        z,
        422,
        "VALIDATION_ERROR",
        "unsupported_compression",
        Some("x.txt"),
    ));
    cases.push(zip_case(
        "not a zip",
        b"this is not a zip archive at all".to_vec(),
        422,
        "VALIDATION_ERROR",
        "corrupt_archive",
        Some("archive"),
    ));
    cases.push(zip_case(
        "invalid UTF-8 SKILL.md",
        zip_of(&[(
            "SKILL.md",
            b"---\nname: a\ndescription: b\n---\nbad \xc3\x28 text",
        )]),
        422,
        "VALIDATION_ERROR",
        "not_utf8",
        Some("SKILL.md"),
    ));
    cases.push(zip_case(
        "missing SKILL.md",
        zip_of(&[("README.md", b"hi"), ("scripts/a.py", b"x")]),
        422,
        "VALIDATION_ERROR",
        "missing_skill_md",
        Some("archive"),
    ));
    cases.push(zip_case(
        "sensitive files",
        zip_of(&[
            ("demo/SKILL.md", SKILL_MD),
            ("demo/.env", b"API_KEY=secret"),
            ("demo/keys/id_rsa", b"-----BEGIN OPENSSH PRIVATE KEY-----"),
        ]),
        422,
        "VALIDATION_ERROR",
        "sensitive_files",
        None,
    ));
    cases.push(zip_case(
        "component over the revision limit",
        zip_of(&[
            ("SKILL.md", SKILL_MD),
            ("assets/big.bin", &noise(200_000, 9)),
        ]),
        413,
        "PAYLOAD_TOO_LARGE",
        "validation",
        Some("assets/big.bin"),
    ));
    let names: Vec<String> = (0..51).map(|i| format!("references/{i}.md")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("SKILL.md", SKILL_MD)];
    entries.extend(names.iter().map(|n| (n.as_str(), b"x".as_slice())));
    cases.push(zip_case(
        "51 components",
        zip_of(&entries),
        422,
        "VALIDATION_ERROR",
        "validation",
        Some("components"),
    ));
    cases.push(zip_case(
        "reserved component name",
        zip_of(&[("SKILL.md", SKILL_MD), ("Capsule.JSON", b"{}")]),
        422,
        "VALIDATION_ERROR",
        "validation",
        Some("Capsule.JSON"),
    ));

    // Lone SKILL.md bodies.
    let md = |name, body: &[u8], status, code, reason, field| Case {
        name,
        content_type: "text/markdown",
        body: body.to_vec(),
        status,
        code,
        reason,
        field,
    };
    cases.push(md(
        "SKILL.md: broken YAML",
        b"---\nname: demo\ndescription: \"unterminated\nlicense: MIT\n---\nbody\n",
        422,
        "VALIDATION_ERROR",
        "invalid_yaml",
        Some("SKILL.md"),
    ));
    cases.push(md(
        "SKILL.md: invalid UTF-8",
        b"---\nname: a\ndescription: b\n---\nbad \xff text\n",
        422,
        "VALIDATION_ERROR",
        "not_utf8",
        Some("SKILL.md"),
    ));
    cases.push(md(
        "SKILL.md: no frontmatter, nothing to describe it",
        b"# Just markdown\n",
        422,
        "VALIDATION_ERROR",
        "missing_field",
        Some("description"),
    ));
    cases.push(md(
        "SKILL.md: missing description, no paragraph",
        b"---\nname: n\n---\n# Title only\n",
        422,
        "VALIDATION_ERROR",
        "missing_field",
        Some("description"),
    ));
    let big = format!(
        "---\nname: a\ndescription: b\npadding: \"{}\"\n---\nbody\n",
        "x".repeat(xmemo_core::package::FRONTMATTER_MAX_BYTES)
    );
    cases.push(md(
        "SKILL.md: frontmatter too large",
        big.as_bytes(),
        413,
        "PAYLOAD_TOO_LARGE",
        "frontmatter_too_large",
        Some("SKILL.md"),
    ));
    cases.push(md(
        "SKILL.md: empty body",
        b"---\nname: n\ndescription: d\n---\n",
        422,
        "VALIDATION_ERROR",
        "validation",
        Some("instruction_body"),
    ));
    cases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_packages_get_their_own_error_and_write_nothing() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    // Something to leave untouched.
    s.save(&key, skill("existing", "Keep me")).await.expect_ok();
    let start = s.counts().await;
    for case in hostile_cases() {
        let before = s.counts().await;
        let r = upload(&s, &key, "", case.content_type, case.body).await;
        let err = r.expect_error(case.status, case.code);
        assert_eq!(
            err["details"]["reason"], case.reason,
            "{}: {}",
            case.name, r.body
        );
        if let Some(field) = case.field {
            assert_eq!(err["details"]["field"], field, "{}: {}", case.name, r.body);
        }
        assert_eq!(s.counts().await, before, "{}: rows changed", case.name);
    }

    // Specific details some clients rely on.
    let r = upload(
        &s,
        &key,
        "",
        "text/markdown",
        b"---\nname: demo\ndescription: ok\n\tlicense: MIT\n---\nbody\n".to_vec(),
    )
    .await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["line"], 4, "{}", r.body);
    assert!(err["details"]["column"].is_u64());
    let r = import_zip(
        &s,
        &key,
        "",
        pkg::zip_of(&[
            ("demo/SKILL.md", SKILL_MD),
            ("demo/.env", b"A=1"),
            ("demo/keys/id_rsa", b"k"),
        ]),
    )
    .await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    let mut paths: Vec<String> = serde_json::from_value(err["details"]["paths"].clone()).unwrap();
    paths.sort();
    assert_eq!(paths, [".env", "keys/id_rsa"]);

    // The request body limit answers in the SPEC shape.
    let r = import_zip(
        &s,
        &key,
        "",
        vec![b'P'; xmemo_server::http::limits::BODY_LIMIT_BYTES + 1],
    )
    .await;
    let err = r.expect_error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(err["details"]["field"], "body");
    // Other bodies: empty, an unknown type, a bad query.
    upload(&s, &key, "", "application/zip", Vec::new())
        .await
        .expect_error(422, "VALIDATION_ERROR");
    upload(&s, &key, "", "image/png", b"x".to_vec())
        .await
        .expect_error(422, "VALIDATION_ERROR");
    upload(
        &s,
        &key,
        "?intent=later",
        "text/markdown",
        SKILL_MD.to_vec(),
    )
    .await
    .expect_error(422, "VALIDATION_ERROR");
    assert_eq!(s.counts().await, start);
}

// ------------------------------------------------------------------------------------------
// 3. Export determinism and tampering
// ------------------------------------------------------------------------------------------

fn demo_zip(body: &str) -> Vec<u8> {
    let md = format!(
        "---\nname: demo\ndescription: A demo skill\nlicense: MIT\nmetadata:\n  version: \"1\"\n---\n\n{body}\n"
    );
    pkg::zip_of(&[
        ("demo/SKILL.md", md.as_bytes()),
        ("demo/scripts/run.py", b"print('ok')\n"),
        ("demo/references/guide.md", b"# Guide\n\nRead me first.\n"),
        ("demo/assets/logo.bin", &pkg::noise(3000, 5)),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_are_deterministic_and_tampering_is_named() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let r = import_zip(
        &s,
        &key,
        "?intent=publish",
        demo_zip("Run `scripts/run.py`."),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    let first = r.body["data"].clone();
    assert_eq!(first["slug"], "demo");
    assert_eq!(first["status"], "published");
    let rev1 = first["revision_id"].as_str().unwrap().to_string();

    // Importing the same package again creates nothing.
    let r = import_zip(&s, &key, "", demo_zip("Run `scripts/run.py`.")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    assert_eq!(r.body["data"]["created"], false);
    assert_eq!(r.body["data"]["revision_id"], rev1.as_str());

    let a = export(&s, &key, "demo", "").await;
    // A newer draft does not change the default export (Level 1: the published revision)…
    let r = import_zip(&s, &key, "", demo_zip("Run it twice.")).await;
    assert_eq!(r.status.as_u16(), 201);
    let rev2 = r.body["data"]["revision_id"].as_str().unwrap().to_string();
    let b = export(&s, &key, "demo", "").await;
    assert_eq!(header_of(&b, "x-revision-id"), rev1);
    // …and the same revision exports to the same bytes, now and pinned.
    let c = export(
        &s,
        &key,
        "demo",
        &format!("?revision_id={rev1}&workspace=personal"),
    )
    .await;
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(a.bytes, c.bytes);
    let d = export(&s, &key, "demo", &format!("?revision_id={rev2}")).await;
    assert_ne!(a.bytes, d.bytes);
    assert_eq!(
        header_of(&d, "content-disposition"),
        "attachment; filename=\"demo-r2.zip\""
    );

    // capsule.json carries identity, attribution and source.
    let entries = pkg::entries_of(&a.bytes);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "demo/SKILL.md",
            "demo/capsule.json",
            "demo/assets/logo.bin",
            "demo/references/guide.md",
            "demo/scripts/run.py"
        ]
    );
    let manifest: Value = serde_json::from_slice(&entries[1].1).unwrap();
    assert_eq!(manifest["format"], "xmemo.source-capsule");
    assert_eq!(manifest["revision"]["revision_id"], rev1.as_str());
    assert_eq!(manifest["revision"]["status"], "published");
    assert_eq!(manifest["canonical_hash"], first["canonical_hash"]);
    assert!(manifest["attribution"]["account_id"].as_str().is_some());
    assert_eq!(manifest["source"]["kind"], "upload");
    assert_eq!(manifest["components"].as_array().unwrap().len(), 3);

    // One byte changed in one component: the re-import names that path and writes nothing.
    let before = s.counts().await;
    let mut tampered = entries.clone();
    tampered[3].1[2] ^= 0x20;
    let r = import_zip(
        &s,
        &key,
        "?workspace=personal&slug=demo-copy",
        pkg::rezip(&tampered),
    )
    .await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["reason"], "capsule_mismatch", "{}", r.body);
    assert_eq!(err["details"]["field"], "references/guide.md");
    assert_eq!(err["details"]["paths"], json!(["references/guide.md"]));
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("references/guide.md")
    );
    // The instruction body edited: SKILL.md is named.
    let mut tampered = entries.clone();
    let md = String::from_utf8(tampered[0].1.clone())
        .unwrap()
        .replace("Run", "Ran");
    tampered[0].1 = md.into_bytes();
    let r = import_zip(&s, &key, "?slug=demo-copy", pkg::rezip(&tampered)).await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["field"], "SKILL.md", "{}", r.body);
    assert_eq!(s.counts().await, before);

    // The untouched capsule under another slug of the same workspace is a duplicate of
    // `demo` (#24), written as a copy with the same hash only when asked.
    let r = import_zip(&s, &key, "?slug=demo-copy", a.bytes.clone()).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    assert_eq!(r.body["data"]["outcome"], "duplicate");
    assert_eq!(r.body["data"]["same_content_as"], "demo");
    assert_eq!(s.counts().await, before);
    let r = import_zip(
        &s,
        &key,
        "?slug=demo-copy&allow_duplicates=true",
        a.bytes.clone(),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["data"]["canonical_hash"], first["canonical_hash"]);
    assert_eq!(r.body["data"]["slug"], "demo-copy");

    // The source is listed with the revision.
    let revs = s.get("/api/v1/skills/demo/revisions", &key).await;
    assert_eq!(revs.expect_ok()["revisions"][0]["source"]["kind"], "upload");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_conflicts_and_slugs() {
    let s = TestServer::start().await;
    let admin = s.admin_key.clone();
    let reader = s.account("reader", &["memory:read"]).await;
    let writer = s.account("writer", &["memory:write"]).await;
    let before = s.counts().await;
    import_zip(&s, &reader, "", demo_zip("x"))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    upload(&s, &reader, "", "text/markdown", SKILL_MD.to_vec())
        .await
        .expect_error(403, "PERMISSION_DENIED");
    import_url(&s, &reader, json!({"url": "https://github.com/a/b"}))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    assert_eq!(s.counts().await, before);

    // A lone SKILL.md; the slug comes from the frontmatter name.
    let r = upload(
        &s,
        &admin,
        "?intent=publish",
        "text/markdown",
        SKILL_MD.to_vec(),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["data"]["slug"], "demo");
    assert_eq!(r.body["data"]["components"], 0);
    assert_eq!(r.body["data"]["source"]["format"], "skill_md");
    let rev1 = r.body["data"]["revision_id"].as_str().unwrap().to_string();
    // Sniffed without a content type; a stale expected revision conflicts and writes nothing.
    let before = s.counts().await;
    let r = s
        .http
        .post(format!(
            "{}/api/v1/imports?expected_revision_id=rev_stale",
            s.url
        ))
        .bearer_auth(&admin)
        .body(demo_zip("Changed."))
        .send()
        .await
        .unwrap();
    Reply::from(r).await.expect_error(409, "CONFLICT");
    assert_eq!(s.counts().await, before);
    let r = import_zip(
        &s,
        &admin,
        &format!("?expected_revision_id={rev1}"),
        demo_zip("Changed."),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);

    // A name that is not a slug: slugified, or the folder; an explicit slug wins.
    let md = b"---\nname: Deploy Procedure!\ndescription: d\n---\nbody\n";
    let r = upload(&s, &admin, "", "text/markdown", md.to_vec()).await;
    assert_eq!(r.body["data"]["slug"], "deploy-procedure", "{}", r.body);
    let r = import_zip(&s, &admin, "", pkg::zip_of(&[("my-folder/SKILL.md", md)])).await;
    assert_eq!(r.body["data"]["slug"], "my-folder", "{}", r.body);
    let r = upload(&s, &admin, "?slug=Bad_Slug", "text/markdown", md.to_vec()).await;
    r.expect_error(422, "VALIDATION_ERROR");
    let r = upload(&s, &admin, "?slug=chosen", "text/markdown", md.to_vec()).await;
    assert_eq!(r.body["data"]["slug"], "chosen");
    let md = "---\nname: 日本語\ndescription: d\n---\nbody\n";
    let r = upload(&s, &admin, "", "text/markdown", md.as_bytes().to_vec()).await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["field"], "slug");

    // Export needs memory:read; a write-only key is refused, a reader may export.
    let r = raw(&s, Method::GET, "/api/v1/skills/demo/export", &writer).await;
    assert_eq!(r.status, 403);
    let writer_skill = upload(&s, &writer, "", "text/markdown", SKILL_MD.to_vec()).await;
    assert_eq!(writer_skill.status.as_u16(), 201);
    let r = raw(&s, Method::GET, "/api/v1/skills/demo/export", &writer).await;
    assert_eq!(r.status, 403);
    // Another account's skill is not found; an unknown revision too.
    let r = raw(&s, Method::GET, "/api/v1/skills/demo/export", &reader).await;
    assert_eq!(r.status, 404);
    let r = raw(
        &s,
        Method::GET,
        "/api/v1/skills/demo/export?revision_id=rev_nope",
        &admin,
    )
    .await;
    assert_eq!(r.status, 404);
}

/// Imports live at `/imports`, so slugs named like the old import routes (`import`,
/// `import-url`) or like the new collection (`imports`) are ordinary skills, and the old
/// routes are gone (in the SPEC error shape, writing nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_route_names_are_ordinary_slugs() {
    let s = TestServer::start().await;
    let admin = s.admin_key.clone();
    for slug in ["import", "imports", "import-url"] {
        let body = format!("The {slug} procedure.");
        let saved = s.save(&admin, skill(slug, &body)).await;
        assert_eq!(saved.status.as_u16(), 201, "{}", saved.body);
        let rev = saved.body["data"]["revision_id"].as_str().unwrap();
        for prefix in ["/api/v1", "/v1"] {
            let root = s.get(&format!("{prefix}/skills/{slug}"), &admin).await;
            let root = root.expect_ok();
            assert_eq!(root["kind"], "root", "{root}");
            assert_eq!(root["data"]["slug"], slug);
            assert_eq!(root["data"]["revision_id"], rev);
            assert_eq!(root["data"]["instruction_body"], body.as_str());
        }
        let pinned = s
            .get(&format!("/api/v1/skills/{slug}/revisions/{rev}"), &admin)
            .await;
        assert_eq!(
            pinned.expect_ok()["data"]["instruction_body"],
            body.as_str()
        );
        let revisions = s
            .get(&format!("/api/v1/skills/{slug}/revisions"), &admin)
            .await;
        assert!(revisions.expect_ok().to_string().contains(rev));
        export(&s, &admin, slug, "").await;
    }

    // The old import routes answer NOT_FOUND in the SPEC shape and import nothing.
    let before = s.counts().await;
    for path in ["/api/v1/skills/import", "/api/v1/skills/import-url"] {
        for (content_type, body) in [
            ("text/markdown", SKILL_MD.to_vec()),
            ("application/zip", demo_zip("x")),
            (
                "application/json",
                br#"{"url":"https://github.com/a/b"}"#.to_vec(),
            ),
        ] {
            let r = s
                .http
                .post(format!("{}{path}", s.url))
                .bearer_auth(&admin)
                .header(header::CONTENT_TYPE.as_str(), content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            let r = Reply::from(r).await;
            let err = r.expect_error(404, "NOT_FOUND");
            assert_eq!(r.body.as_object().unwrap().len(), 1, "{}", r.body);
            for key in err.as_object().unwrap().keys() {
                assert!(
                    ["code", "message", "retryable", "details", "request_id"]
                        .contains(&key.as_str()),
                    "{path}: unexpected error field {key}"
                );
            }
        }
    }
    assert_eq!(s.counts().await, before);
    let r = s.get("/api/v1/imports", &admin).await;
    r.expect_error(404, "NOT_FOUND");

    // `/imports` picks the kind of import from the Content-Type: JSON (with or without
    // parameters) is a URL import, under `/v1` too…
    for (path, content_type) in [
        ("/api/v1/imports", "application/json"),
        ("/v1/imports", "Application/JSON; charset=utf-8"),
    ] {
        let r = s
            .http
            .post(format!("{}{path}", s.url))
            .bearer_auth(&admin)
            .header(header::CONTENT_TYPE.as_str(), content_type)
            .body(r#"{"url":"https://gitlab.com/a/b"}"#)
            .send()
            .await
            .unwrap();
        let r = Reply::from(r).await;
        let err = r.expect_error(422, "VALIDATION_ERROR");
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("not a supported source"),
            "{path}: {}",
            r.body
        );
    }
    // …whose options go in the body, never in the query string…
    let r = s
        .http
        .post(format!("{}/api/v1/imports?workspace=personal", s.url))
        .bearer_auth(&admin)
        .json(&json!({"url": "https://github.com/a/b"}))
        .send()
        .await
        .unwrap();
    let err = Reply::from(r).await;
    let err = err.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["field"], "query");
    // …and anything else is an upload, under `/v1` too.
    let r = s
        .http
        .post(format!("{}/v1/imports?slug=via-v1", s.url))
        .bearer_auth(&admin)
        .header(header::CONTENT_TYPE.as_str(), "text/markdown")
        .body(SKILL_MD.to_vec())
        .send()
        .await
        .unwrap();
    let r = Reply::from(r).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["kind"], "imported");
    assert_eq!(r.body["data"]["slug"], "via-v1");
}

// ------------------------------------------------------------------------------------------
// Diff
// ------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_between_revisions() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let r1 = s
        .save(
            &key,
            json!({
                "slug": "deploy",
                "name": "Deploy",
                "description": "Ship it",
                "instruction_body": "Deploy the app to staging then production",
                "metadata": {"license": "MIT", "metadata": {"version": "1"}},
                "components": [
                    {"logical_path": "references/a.md", "type": "reference", "content": "alpha beta"},
                    {"logical_path": "scripts/old.py", "type": "script", "content": "print(1)"},
                    {"logical_path": "assets/logo.bin", "type": "artifact", "content": b64(&[0, 159, 146, 150]), "encoding": "base64"},
                    {"logical_path": "templates/t.md", "type": "template", "content": "same"},
                ],
            }),
        )
        .await;
    let rev1 = r1.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r2 = s
        .save(
            &key,
            json!({
                "slug": "deploy",
                "instruction_body": "Deploy the service to staging then production carefully",
                "metadata": {"license": "Apache-2.0", "metadata": {"version": "2"}, "compatibility": "linux"},
                "components": [
                    {"logical_path": "references/a.md", "type": "reference", "content": "alpha gamma"},
                    {"logical_path": "scripts/new.py", "type": "script", "content": "print(2)"},
                    {"logical_path": "assets/logo.bin", "type": "artifact", "content": b64(&[0, 159, 146, 151]), "encoding": "base64"},
                    {"logical_path": "templates/t.md", "type": "template", "content": "same"},
                ],
            }),
        )
        .await;
    let rev2 = r2.expect_ok()["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();

    let r = s
        .get(
            &format!("/api/v1/skills/deploy/diff?from={rev1}&to={rev2}"),
            &key,
        )
        .await;
    let body = r.expect_ok().clone();
    assert_eq!(body["slug"], "deploy");
    assert_eq!(body["from"]["revision_id"], rev1.as_str());
    assert_eq!(body["to"]["revision_number"], 2);
    let d = &body["diff"];
    assert_eq!(d["identical"], false);
    assert_eq!(d["timed_out"], false);
    assert_eq!(d["complete"], true);
    assert_eq!(d["not_compared"], serde_json::json!([]));
    assert_eq!(d["instruction_body"]["status"], "complete");
    let ops: Vec<(String, String)> = d["instruction_body"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["op"].as_str().unwrap().into(),
                o["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(ops.contains(&("delete".into(), "app".into())), "{ops:?}");
    assert!(
        ops.contains(&("insert".into(), "service".into())),
        "{ops:?}"
    );
    assert!(
        ops.iter()
            .any(|(op, t)| op == "insert" && t.contains("carefully")),
        "{ops:?}"
    );
    assert_eq!(d["instruction_body"]["words_inserted"], 2);
    assert_eq!(d["instruction_body"]["words_deleted"], 1);
    let c = &d["components"];
    assert_eq!(c["added"][0]["logical_path"], "scripts/new.py");
    assert_eq!(c["removed"][0]["logical_path"], "scripts/old.py");
    assert_eq!(c["unchanged"][0]["logical_path"], "templates/t.md");
    let modified: HashMap<&str, &Value> = c["modified"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["logical_path"].as_str().unwrap(), m))
        .collect();
    let text = modified["references/a.md"];
    assert_eq!(
        text["text_diff"]["ops"][1],
        json!({"op": "delete", "text": "beta"})
    );
    assert_eq!(
        text["text_diff"]["ops"][2],
        json!({"op": "insert", "text": "gamma"})
    );
    let binary = modified["assets/logo.bin"];
    assert!(binary["text_diff"].is_null());
    assert_ne!(binary["old"]["content_hash"], binary["new"]["content_hash"]);
    assert_eq!(binary["new"]["is_text"], false);
    let meta: Vec<(String, String)> = d["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["key"].as_str().unwrap().into(),
                m["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        meta,
        [
            ("/compatibility".into(), "added".into()),
            ("/license".into(), "changed".into()),
            ("/metadata/version".into(), "changed".into()),
        ]
    );
    assert_eq!(d["summary"]["components_modified"], 2);

    // Same revision on both sides; wrong or missing revisions.
    let same = s
        .get(
            &format!("/api/v1/skills/deploy/diff?from={rev1}&to={rev1}"),
            &key,
        )
        .await;
    assert_eq!(same.expect_ok()["diff"]["identical"], true);
    s.get("/api/v1/skills/deploy/diff", &key)
        .await
        .expect_error(422, "VALIDATION_ERROR");
    s.get(
        &format!("/api/v1/skills/deploy/diff?from={rev1}&to=rev_nope"),
        &key,
    )
    .await
    .expect_error(404, "NOT_FOUND");
    let other = s.save(&key, skill("other", "x")).await;
    let other_rev = other.body["data"]["revision_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.get(
        &format!("/api/v1/skills/deploy/diff?from={rev1}&to={other_rev}"),
        &key,
    )
    .await
    .expect_error(404, "NOT_FOUND");
    let stranger = s.account("stranger", &["memory:read"]).await;
    s.get(
        &format!("/api/v1/skills/deploy/diff?from={rev1}&to={rev2}"),
        &stranger,
    )
    .await
    .expect_error(404, "NOT_FOUND");

    // Large inputs are bounded by the deadline, not allowed to hang the request.
    let words = |seed: u64| -> String {
        let mut x = seed | 1;
        (0..9000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("w{}", x % 5000)
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let big = |seed| json!({"slug": "big", "name": "Big", "description": "d", "instruction_body": words(seed)});
    let a = s.save(&key, big(1)).await;
    let b = s.save(&key, big(2)).await;
    let (a, b) = (
        a.expect_ok()["data"]["revision_id"]
            .as_str()
            .unwrap()
            .to_string(),
        b.expect_ok()["data"]["revision_id"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    let started = Instant::now();
    let r = s
        .get(&format!("/api/v1/skills/big/diff?from={a}&to={b}"), &key)
        .await;
    r.expect_ok();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

// ------------------------------------------------------------------------------------------
// 4. Repository import by URL
// ------------------------------------------------------------------------------------------

const SHA: &str = "1f2e3d4c5b6a79880716253443526170899a0b1c";

/// A local server imitating GitHub's zipball API + codeload redirect, and ClawHub's download
/// endpoint. `hits` counts requests.
struct Imitation {
    base: String,
    hits: Arc<AtomicUsize>,
    zips: Arc<HashMap<String, Vec<u8>>>,
}

#[derive(Clone)]
struct ImitationState {
    base: String,
    hits: Arc<AtomicUsize>,
    zips: Arc<HashMap<String, Vec<u8>>>,
    huge: usize,
}

fn zip_with_comment(
    entries: &[(&str, &[u8])],
    comment: Option<&str>,
    symlink: Option<(&str, &str)>,
) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        if name.ends_with('/') {
            w.add_directory(
                name.trim_end_matches('/'),
                pkg::options(CompressionMethod::Deflated),
            )
            .unwrap();
        } else {
            w.start_file(*name, pkg::options(CompressionMethod::Deflated))
                .unwrap();
            w.write_all(bytes).unwrap();
        }
    }
    if let Some((link, target)) = symlink {
        w.add_symlink(link, target, pkg::options(CompressionMethod::Stored))
            .unwrap();
    }
    if let Some(c) = comment {
        w.set_comment(c.to_string()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn imitation_zips() -> HashMap<String, Vec<u8>> {
    let foo_md: &[u8] =
        b"---\nname: foo\ndescription: The foo skill of a monorepo\n---\n\nRun `scripts/run.py`.\n";
    let top = format!("acme-mono-{}", &SHA[..7]);
    let mono: Vec<(String, Vec<u8>)> = vec![
        (format!("{top}/"), vec![]),
        (format!("{top}/README.md"), b"# Monorepo\n".to_vec()),
        (
            format!("{top}/.env"),
            b"SECRET=outside the skill folder".to_vec(),
        ),
        // Like GitHub, every folder has its own entry.
        (format!("{top}/skills/"), vec![]),
        (format!("{top}/skills/foo/"), vec![]),
        (format!("{top}/skills/foo/SKILL.md"), foo_md.to_vec()),
        (format!("{top}/skills/foo/scripts/"), vec![]),
        (
            format!("{top}/skills/foo/scripts/run.py"),
            b"print('foo')\n".to_vec(),
        ),
        (
            format!("{top}/skills/foo/references/guide.md"),
            b"# Guide\n".to_vec(),
        ),
        (
            format!("{top}/skills/bar/SKILL.md"),
            b"---\nname: bar\ndescription: Bar\n---\nBar.\n".to_vec(),
        ),
    ];
    let refs: Vec<(&str, &[u8])> = mono
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let link = format!("{top}/docs/passwd");
    let mono = zip_with_comment(&refs, Some(SHA), Some((&link, "/etc/passwd")));
    let single = zip_with_comment(
        &[
            ("acme-single-abcdef1/", b""),
            ("acme-single-abcdef1/SKILL.md", b"---\nname: single\ndescription: A one-skill repository\n---\n\nDo the single thing.\n"),
            ("acme-single-abcdef1/templates/t.md", b"Hello {{name}}\n"),
        ],
        None,
        None,
    );
    let noskill = zip_with_comment(
        &[("acme-noskill-1234567/README.md", b"nothing here")],
        None,
        None,
    );
    let weather = pkg::zip_of(&[
        ("SKILL.md", b"---\nname: weather\ndescription: Weather from ClawHub\nversion: 1.0.0\n---\n\nCall `scripts/fetch.sh`.\n"),
        ("scripts/fetch.sh", b"#!/bin/sh\necho sunny\n"),
    ]);
    HashMap::from([
        ("mono".to_string(), mono),
        ("single".to_string(), single),
        ("noskill".to_string(), noskill),
        ("weather".to_string(), weather),
    ])
}

async fn zipball(
    State(st): State<ImitationState>,
    AxPath(params): AxPath<Vec<(String, String)>>,
) -> Response {
    st.hits.fetch_add(1, Ordering::SeqCst);
    let get = |k: &str| {
        params
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (owner, repo) = (get("owner"), get("repo"));
    let git_ref = params
        .iter()
        .find(|(n, _)| n == "ref")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "HEAD".into());
    let redirect = |to: String| (StatusCode::FOUND, [(header::LOCATION, to)]).into_response();
    match repo.as_str() {
        "missing" => (StatusCode::NOT_FOUND, "Not Found").into_response(),
        "loop" => redirect(format!(
            "{}/gh/repos/{owner}/{repo}/zipball/{git_ref}",
            st.base
        )),
        "metadata" => redirect("http://169.254.169.254/latest/meta-data/".into()),
        "file" => redirect("file:///etc/passwd".into()),
        "ratelimited" => StatusCode::TOO_MANY_REQUESTS.into_response(),
        "slow" => {
            // Far past any fetch timeout a test sets, so only the timeout can end the wait.
            tokio::time::sleep(Duration::from_secs(SLOW_HOST_SECONDS)).await;
            StatusCode::NOT_FOUND.into_response()
        }
        // Like GitHub: a relative-looking redirect to codeload.
        _ => redirect(format!("/codeload/{owner}/{repo}/legacy.zip/{git_ref}")),
    }
}

async fn codeload(
    State(st): State<ImitationState>,
    AxPath((_owner, repo, _ref)): AxPath<(String, String, String)>,
) -> Response {
    st.hits.fetch_add(1, Ordering::SeqCst);
    match repo.as_str() {
        "huge" => {
            // Announced size.
            (
                [(header::CONTENT_TYPE, "application/zip")],
                vec![b'P'; st.huge],
            )
                .into_response()
        }
        "huge-stream" => {
            // No Content-Length: only a running count can stop it.
            let chunks = (0..(st.huge / 65_536 + 2))
                .map(|_| Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'P'; 65_536])));
            let body = axum::body::Body::from_stream(futures::stream::iter(chunks));
            ([(header::CONTENT_TYPE, "application/zip")], body).into_response()
        }
        name => match st.zips.get(name) {
            Some(zip) => ([(header::CONTENT_TYPE, "application/zip")], zip.clone()).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        },
    }
}

async fn clawhub(
    State(st): State<ImitationState>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    st.hits.fetch_add(1, Ordering::SeqCst);
    assert!(headers.get(header::USER_AGENT).is_some());
    match q.get("slug").and_then(|s| st.zips.get(s)) {
        Some(zip) => ([(header::CONTENT_TYPE, "application/zip")], zip.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "{\"error\":\"not found\"}").into_response(),
    }
}

/// How long the imitation's `slow` repository takes to answer.
const SLOW_HOST_SECONDS: u64 = 60;

async fn start_imitation(huge: usize) -> Imitation {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let zips = Arc::new(imitation_zips());
    let state = ImitationState {
        base: base.clone(),
        hits: hits.clone(),
        zips: zips.clone(),
        huge,
    };
    let app = Router::new()
        .route("/gh/repos/{owner}/{repo}/zipball", get(zipball))
        .route("/gh/repos/{owner}/{repo}/zipball/{ref}", get(zipball))
        .route("/codeload/{owner}/{repo}/legacy.zip/{ref}", get(codeload))
        .route("/claw/api/v1/download", get(clawhub))
        .with_state(state);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Imitation { base, hits, zips }
}

fn local_config(imitation: &Imitation) -> FetchConfig {
    FetchConfig {
        github_api_base: format!("{}/gh", imitation.base),
        clawhub_base: format!("{}/claw", imitation.base),
        allow_http: true,
        allow_private_cidrs: vec!["127.0.0.0/8".into()],
        max_bytes: 1 << 20,
        timeout: Duration::from_secs(10),
        ..FetchConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_and_clawhub_urls_import_end_to_end() {
    let imitation = start_imitation((1 << 20) + 1).await;
    let config = local_config(&imitation);
    let s = TestServer::start_configured(move |svc| svc.with_fetch_config(config)).await;
    let key = s.admin_key.clone();
    team(&s, &key, "platform").await;

    // A skill inside a monorepo, through the codeload redirect.
    let url = "https://github.com/acme/mono/tree/main/skills/foo";
    let r = import_url(&s, &key, json!({ "url": url })).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    let data = r.body["data"].clone();
    assert_eq!(data["slug"], "foo");
    assert_eq!(data["components"], 2, "only the skill's folder: {data}");
    let src = &data["source"];
    assert_eq!(src["kind"], "github");
    assert_eq!(src["url"], url);
    assert_eq!(src["repository"], "acme/mono");
    assert_eq!(src["ref"], "main");
    assert_eq!(src["path"], "skills/foo");
    assert_eq!(src["commit"], SHA, "the commit from the archive comment");
    assert_eq!(
        src["archive_url"],
        format!("{}/codeload/acme/mono/legacy.zip/main", imitation.base)
    );
    assert_eq!(src["sha256"], sha256(&imitation.zips["mono"]));
    assert_eq!(src["size"], imitation.zips["mono"].len());
    let root = s.get("/api/v1/skills/foo", &key).await;
    let paths: Vec<&str> = root.body["data"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["logical_path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["references/guide.md", "scripts/run.py"]);
    // The source is recorded with the revision and travels in the capsule.
    let revs = s.get("/api/v1/skills/foo/revisions", &key).await;
    assert_eq!(revs.body["revisions"][0]["source"]["commit"], SHA);
    let capsule = export(&s, &key, "foo", "").await;
    let manifest: Value = serde_json::from_slice(
        &pkg::entries_of(&capsule.bytes)
            .into_iter()
            .find(|(n, _)| n == "foo/capsule.json")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(manifest["source"]["repository"], "acme/mono");

    // The same URL again: nothing new.
    let r = import_url(&s, &key, json!({ "url": url })).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    assert_eq!(r.body["data"]["created"], false);

    // A whole repository on its default branch, published into a team: proposed.
    let r = import_url(
        &s,
        &key,
        json!({"url": "https://github.com/acme/single.git", "workspace": "platform", "intent": "publish"}),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["data"]["slug"], "single");
    assert_eq!(r.body["data"]["status"], "proposed");
    assert_eq!(r.body["data"]["workspace"], "platform");
    assert_eq!(r.body["data"]["source"]["ref"], Value::Null);
    assert_eq!(
        r.body["data"]["source"]["commit"], "abcdef1",
        "from the top folder"
    );
    assert!(
        r.body["data"]["source"]["archive_url"]
            .as_str()
            .unwrap()
            .ends_with("/legacy.zip/HEAD")
    );

    // ClawHub.
    let r = import_url(
        &s,
        &key,
        json!({"url": "https://clawhub.ai/someone/weather", "slug": "weather-report"}),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["data"]["slug"], "weather-report");
    assert_eq!(r.body["data"]["source"]["kind"], "clawhub");
    assert_eq!(r.body["data"]["source"]["skill"], "weather");
    assert_eq!(r.body["data"]["source"]["owner"], "someone");
    assert_eq!(
        r.body["data"]["source"]["archive_url"],
        format!("{}/claw/api/v1/download?slug=weather", imitation.base)
    );
    let root = s.get("/api/v1/skills/weather-report", &key).await;
    assert_eq!(root.body["data"]["metadata"]["version"], "1.0.0");

    // Failures: each its own error, nothing written.
    let before = s.counts().await;
    let failures: Vec<(&str, u16, &str, &str)> = vec![
        ("https://github.com/acme/missing", 404, "NOT_FOUND", ""),
        ("https://clawhub.ai/skills/missing", 404, "NOT_FOUND", ""),
        (
            "https://github.com/acme/mono/tree/main/skills/nope",
            404,
            "NOT_FOUND",
            "skills/nope",
        ),
        (
            "https://github.com/acme/huge",
            413,
            "PAYLOAD_TOO_LARGE",
            "1048576",
        ),
        (
            "https://github.com/acme/huge-stream",
            413,
            "PAYLOAD_TOO_LARGE",
            "1048576",
        ),
        (
            "https://github.com/acme/loop",
            422,
            "VALIDATION_ERROR",
            "redirected more than 3",
        ),
        (
            "https://github.com/acme/metadata",
            422,
            "VALIDATION_ERROR",
            "169.254.169.254",
        ),
        (
            "https://github.com/acme/file",
            422,
            "VALIDATION_ERROR",
            "file",
        ),
        (
            "https://github.com/acme/noskill",
            422,
            "VALIDATION_ERROR",
            "tree/REF/PATH",
        ),
        (
            "https://github.com/acme/ratelimited",
            503,
            "SERVICE_UNAVAILABLE",
            "429",
        ),
        (
            "https://gitlab.com/acme/mono",
            422,
            "VALIDATION_ERROR",
            "not a supported source",
        ),
        (
            "https://github.com/acme",
            422,
            "VALIDATION_ERROR",
            "OWNER/REPO",
        ),
    ];
    for (url, status, code, needle) in failures {
        let r = import_url(&s, &key, json!({ "url": url })).await;
        let err = r.expect_error(status, code);
        let message = err["message"].as_str().unwrap();
        assert!(message.contains(needle), "{url}: {message}");
        assert_eq!(err["retryable"], code == "SERVICE_UNAVAILABLE", "{url}");
    }
    let r = import_url(
        &s,
        &key,
        json!({ "url": "https://github.com/acme/metadata" }),
    )
    .await;
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("link-local"),
        "{}",
        r.body
    );
    assert_eq!(r.body["error"]["details"]["reason"], "refused_target");
    assert_eq!(s.counts().await, before);

    // A workspace the caller cannot use is refused before anything is downloaded.
    let hits = imitation.hits.load(Ordering::SeqCst);
    import_url(&s, &key, json!({"url": url, "workspace": "nope"}))
        .await
        .expect_error(404, "NOT_FOUND");
    import_url(&s, &key, json!({"url": url, "extra": 1}))
        .await
        .expect_error(422, "VALIDATION_ERROR");
    // …and so is a role that may not write there.
    let viewer = s.account("viewer", &["memory:read", "memory:write"]).await;
    s.join("platform", &key, "viewer", &viewer, "viewer").await;
    import_url(&s, &viewer, json!({"url": url, "workspace": "platform"}))
        .await
        .expect_error(403, "PERMISSION_DENIED");
    assert_eq!(imitation.hits.load(Ordering::SeqCst), hits);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_hosts_time_out_and_http_needs_allow_http() {
    let imitation = start_imitation(10).await;
    let config = FetchConfig {
        timeout: Duration::from_secs(1),
        ..local_config(&imitation)
    };
    let s = TestServer::start_configured(move |svc| svc.with_fetch_config(config)).await;
    let started = Instant::now();
    let r = import_url(
        &s,
        &s.admin_key,
        json!({"url": "https://github.com/acme/slow"}),
    )
    .await;
    let err = r.expect_error(503, "SERVICE_UNAVAILABLE");
    assert_eq!(err["retryable"], true);
    assert!(
        err["message"].as_str().unwrap().contains("longer than"),
        "{}",
        r.body
    );
    // The 1 s timeout, not the host, ended it: a fetch without a timeout waits the host's
    // full minute. The bound leaves a loaded machine plenty of room.
    assert!(
        started.elapsed() < Duration::from_secs(SLOW_HOST_SECONDS / 2),
        "{:?}",
        started.elapsed()
    );

    // Without allow_http, a plain-http base is refused before any request.
    let config = FetchConfig {
        allow_http: false,
        ..local_config(&imitation)
    };
    let s = TestServer::start_configured(move |svc| svc.with_fetch_config(config)).await;
    let hits = imitation.hits.load(Ordering::SeqCst);
    let r = import_url(
        &s,
        &s.admin_key,
        json!({"url": "https://github.com/acme/mono"}),
    )
    .await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert!(
        err["message"].as_str().unwrap().contains("https"),
        "{}",
        r.body
    );
    assert_eq!(imitation.hits.load(Ordering::SeqCst), hits);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_targets_are_refused_without_an_allowlist() {
    // Listeners that must never see a connection.
    let v4 = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let v4_port = v4.local_addr().unwrap().port();
    let v6 = tokio::net::TcpListener::bind("[::1]:0").await.ok();
    let mut bases = vec![
        format!("http://127.0.0.1:{v4_port}"),
        format!("http://localhost:{v4_port}"),
        // Literal addresses: refused before any resolution or connection.
        "http://10.0.0.1".to_string(),
        "http://169.254.169.254".to_string(),
        "https://[fd00::1]".to_string(),
        "http://2130706433".to_string(),
    ];
    match &v6 {
        Some(l) => bases.push(format!("http://[::1]:{}", l.local_addr().unwrap().port())),
        None => bases.push("http://[::1]:9".to_string()),
    }
    for base in bases {
        let config = FetchConfig {
            github_api_base: base.clone(),
            clawhub_base: base.clone(),
            allow_http: true,
            ..FetchConfig::default()
        };
        let s = TestServer::start_configured(move |svc| svc.with_fetch_config(config)).await;
        let before = s.counts().await;
        for url in [
            "https://github.com/acme/mono",
            "https://clawhub.ai/o/weather",
        ] {
            let r = import_url(&s, &s.admin_key, json!({ "url": url })).await;
            let err = r.expect_error(422, "VALIDATION_ERROR");
            assert_eq!(
                err["details"]["reason"], "refused_target",
                "{base}: {}",
                r.body
            );
            let message = err["message"].as_str().unwrap();
            assert!(
                ["loopback", "private", "link-local", "unique-local"]
                    .iter()
                    .any(|w| message.contains(w)),
                "{base}: {message}"
            );
        }
        assert_eq!(s.counts().await, before, "{base}");
    }
    for (name, listener) in [("127.0.0.1", Some(&v4)), ("[::1]", v6.as_ref())] {
        if let Some(l) = listener {
            let accepted = tokio::time::timeout(Duration::from_millis(200), l.accept()).await;
            assert!(accepted.is_err(), "a connection reached {name}");
        }
    }
}

// ------------------------------------------------------------------------------------------
// 5. What real authors write (#24): repairs reported, duplicates named, several skills at once
// ------------------------------------------------------------------------------------------

/// Real-shaped files that need a repair: each imports with its warnings, imports again as
/// `created: false` with nothing written, and its export re-imports elsewhere with the same
/// canonical_hash and no warning at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repaired_imports_are_reported_idempotent_and_round_trip() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    team(&s, &key, "mirror").await;
    let cases: Vec<(&str, &[u8], &[&str])> = vec![
        (
            "spotify-cli",
            b"# Spotify CLI\n\nControl Spotify playback from the terminal.\n",
            &["frontmatter_missing", "name_from_heading", "description_from_body"],
        ),
        (
            "discord",
            b"---\nname: discord\ndescription: Use when you need to control Discord: send messages.\n---\n\n# Discord\n",
            &["frontmatter_line_by_line", "value_as_text"],
        ),
        (
            "gogcli",
            b"---\nname: gogcli\ndescription: Google Workspace CLI.\n\n# gogcli\n",
            &["frontmatter_not_closed"],
        ),
        (
            "steps",
            b"---\nname: steps\ndescription: Numbered steps.\nmetadata:\n  1: install\n---\n\nDo it.\n",
            &["key_as_text"],
        ),
    ];
    for (slug, md, kinds) in cases {
        let query = format!("?slug={slug}");
        let r = upload(&s, &key, &query, "text/markdown", md.to_vec()).await;
        assert_eq!(r.status.as_u16(), 201, "{slug}: {}", r.body);
        let data = &r.body["data"];
        assert_eq!(data["outcome"], "created", "{slug}");
        let got: Vec<&str> = data["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                // each warning names the field, what was wrong and what was done
                for k in ["field", "problem", "action"] {
                    assert!(w[k].as_str().is_some_and(|t| !t.is_empty()), "{slug}: {w}");
                }
                w["kind"].as_str().unwrap()
            })
            .collect();
        assert_eq!(got, kinds, "{slug}: {}", data["warnings"]);
        let hash = data["canonical_hash"].clone();

        // the same file again: one revision
        let before = s.counts().await;
        let again = upload(&s, &key, &query, "text/markdown", md.to_vec()).await;
        assert_eq!(again.status.as_u16(), 200, "{slug}: {}", again.body);
        assert_eq!(again.body["data"]["created"], false);
        assert_eq!(again.body["data"]["outcome"], "unchanged");
        assert_eq!(again.body["data"]["canonical_hash"], hash);
        assert_eq!(s.counts().await, before, "{slug}: the second import wrote");

        // the export round-trips, canonical (nothing left to repair)
        let capsule = export(&s, &key, slug, "").await;
        let back = import_zip(&s, &key, "?workspace=mirror", capsule.bytes).await;
        assert_eq!(back.status.as_u16(), 201, "{slug}: {}", back.body);
        assert_eq!(back.body["data"]["canonical_hash"], hash, "{slug}");
        assert_eq!(back.body["data"]["warnings"], json!([]), "{slug}");
    }
    // An ambiguous file is still refused, with line and column, and writes nothing.
    let before = s.counts().await;
    let r = upload(
        &s,
        &key,
        "",
        "text/markdown",
        b"---\nname: a\ndescription: \"Use when: asked\nlicense: MIT\n---\nbody\n".to_vec(),
    )
    .await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(
        (&err["details"]["line"], &err["details"]["column"]),
        (&json!(3), &json!(14)),
        "{}",
        r.body
    );
    assert_eq!(s.counts().await, before);
}

/// Content another skill of the workspace already has is a `duplicate` naming it, and is
/// written only with `allow_duplicates`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_content_under_another_slug_is_named_and_written_only_if_asked() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let md = b"---\nname: weather\ndescription: Forecasts.\n---\n\n# Weather\n".to_vec();
    let first = upload(&s, &key, "", "text/markdown", md.clone()).await;
    assert_eq!(first.status.as_u16(), 201, "{}", first.body);
    assert_eq!(first.body["data"]["slug"], "weather");
    assert!(first.body["data"].get("same_content_as").is_none());

    let before = s.counts().await;
    let r = upload(&s, &key, "?slug=weather-copy", "text/markdown", md.clone()).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    let data = &r.body["data"];
    assert_eq!(data["outcome"], "duplicate");
    assert_eq!(data["same_content_as"], "weather");
    assert_eq!(data["slug"], "weather-copy");
    assert_eq!(data["created"], false);
    assert_eq!(data["revision_id"], first.body["data"]["revision_id"]);
    assert_eq!(s.counts().await, before, "a duplicate wrote");
    s.get("/api/v1/skills/weather-copy", &key)
        .await
        .expect_error(404, "NOT_FOUND");

    let r = upload(
        &s,
        &key,
        "?slug=weather-copy&allow_duplicates=true",
        "text/markdown",
        md.clone(),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["data"]["outcome"], "created");
    assert_eq!(r.body["data"]["same_content_as"], "weather");
    // the slug's own content again is unchanged, whatever else has it
    let r = upload(&s, &key, "?slug=weather-copy", "text/markdown", md).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    assert_eq!(r.body["data"]["outcome"], "unchanged");
    assert_eq!(r.body["data"]["same_content_as"], "weather");
}

fn several_skills_zip() -> Vec<u8> {
    let weather: &[u8] = b"---\nname: weather\ndescription: Forecasts.\n---\n\n# Weather\n";
    pkg::zip_of(&[
        ("repo/README.md", b"# Skills\n"),
        ("repo/skills/alice/weather/SKILL.md", weather),
        ("repo/skills/alice/weather/scripts/get.sh", b"echo sunny\n"),
        // byte-identical to alice's SKILL.md, but alice's folder has a script: not the same
        ("repo/skills/bob/weather/SKILL.md", weather),
        // byte-identical to bob's: the same content
        ("repo/skills/carol/weather/skill.md", weather),
        (
            "repo/skills/carol/notes/SKILL.md",
            b"# Notes\n\nKeep notes.\n",
        ),
        (
            "repo/skills/dave/empty/SKILL.md",
            b"---\nname: empty\ndescription: Nothing.\n---\n",
        ),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_of_several_skill_folders_imports_each_and_a_second_run_writes_nothing() {
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let r = import_zip(&s, &key, "", several_skills_zip()).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["kind"], "imported_batch");
    let data = &r.body["data"];
    let rows: Vec<(String, String, String)> = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["slug"].as_str().unwrap().to_string(),
                i["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let row = |p: &str, sl: &str, o: &str| (p.to_string(), sl.to_string(), o.to_string());
    assert_eq!(
        rows,
        [
            row("repo/skills/alice/weather", "alice-weather", "created"),
            row("repo/skills/bob/weather", "bob-weather", "created"),
            row("repo/skills/carol/notes", "notes", "created"),
            row("repo/skills/carol/weather", "carol-weather", "duplicate"),
            row("repo/skills/dave/empty", "empty", "refused"),
        ]
    );
    let results = data["results"].as_array().unwrap();
    assert_eq!(results[3]["same_content_as"], "bob-weather");
    let refused = &results[4]["error"];
    assert_eq!(refused["code"], "VALIDATION_ERROR");
    assert_eq!(refused["details"]["field"], "instruction_body");
    let kinds = |i: usize| -> Vec<String> {
        results[i]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(0), ["slug_collision"]);
    assert_eq!(kinds(3), ["slug_collision", "skill_md_file_name"]);
    assert_eq!(
        kinds(2),
        [
            "frontmatter_missing",
            "name_from_heading",
            "description_from_body"
        ]
    );
    assert_eq!(
        data["summary"],
        json!({
            "skills": 5, "imported": 3, "unchanged": 0, "duplicates": 1, "repaired": 2,
            "refused": 1, "refused_by_reason": {"validation": 1},
            "repairs_by_kind": {"description_from_body": 1, "frontmatter_missing": 1,
                                "name_from_heading": 1, "skill_md_file_name": 1},
        })
    );
    assert_eq!(data["ignored_files"], 1);
    // each revision records where in the archive it came from
    let revs = s.get("/api/v1/skills/alice-weather/revisions", &key).await;
    assert_eq!(
        revs.body["revisions"][0]["source"]["path"],
        "repo/skills/alice/weather"
    );

    // again: nothing written, the same answer but unchanged
    let before = s.counts().await;
    let r = import_zip(&s, &key, "", several_skills_zip()).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    let summary = &r.body["data"]["summary"];
    assert_eq!(
        (
            &summary["imported"],
            &summary["unchanged"],
            &summary["duplicates"],
            &summary["refused"]
        ),
        (&json!(0), &json!(3), &json!(1), &json!(1))
    );
    assert_eq!(s.counts().await, before);

    // the duplicate is written when asked for
    let r = import_zip(&s, &key, "?allow_duplicates=true", several_skills_zip()).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["data"]["summary"]["imported"], 1);
    assert_eq!(r.body["data"]["results"][3]["outcome"], "created");

    // one-skill options do not apply to several, and more than the cap is refused whole
    let before = s.counts().await;
    let r = import_zip(&s, &key, "?slug=x", several_skills_zip()).await;
    assert_eq!(
        r.expect_error(422, "VALIDATION_ERROR")["details"]["field"],
        "slug"
    );
    let md: &[u8] = b"---\nname: n\ndescription: d\n---\nbody\n";
    let names: Vec<String> = (0..=xmemo_core::package::batch::MAX_SKILLS_PER_IMPORT)
        .map(|i| format!("s{i}/SKILL.md"))
        .collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), md)).collect();
    let r = import_zip(&s, &key, "", pkg::zip_of(&entries)).await;
    let err = r.expect_error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["reason"], "too_many_skills");
    assert_eq!(
        err["details"]["limit"],
        xmemo_core::package::batch::MAX_SKILLS_PER_IMPORT
    );
    assert_eq!(s.counts().await, before);
}

/// A whole repository by URL: every skill folder, nothing outside them read (the mono
/// repository has a symlink and a `.env` outside its skill folders).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_url_imports_every_skill_folder() {
    let imitation = start_imitation(10).await;
    let config = local_config(&imitation);
    let s = TestServer::start_configured(move |svc| svc.with_fetch_config(config)).await;
    let key = s.admin_key.clone();
    let r = import_url(&s, &key, json!({"url": "https://github.com/acme/mono"})).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.body);
    assert_eq!(r.body["kind"], "imported_batch");
    let data = &r.body["data"];
    assert_eq!(data["summary"]["imported"], 2, "{data}");
    let slugs: Vec<&str> = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["bar", "foo"]);
    assert_eq!(data["source"]["repository"], "acme/mono");
    let revs = s.get("/api/v1/skills/foo/revisions", &key).await;
    let src = &revs.body["revisions"][0]["source"];
    assert_eq!(src["path"], "skills/foo");
    assert_eq!(src["commit"], SHA);
    // again: nothing new
    let before = s.counts().await;
    let r = import_url(&s, &key, json!({"url": "https://github.com/acme/mono"})).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.body);
    assert_eq!(r.body["data"]["summary"]["unchanged"], 2);
    assert_eq!(s.counts().await, before);
}

/// The import results carry exactly the fields `openapi.json` documents for them: every
/// required one, and no other (#24 added outcome, warnings, same_content_as, imported_batch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_results_carry_the_documented_fields() {
    let doc: Value = serde_json::from_str(include_str!("../openapi.json")).unwrap();
    let schemas = &doc["components"]["schemas"];
    // (properties, required) of a schema, `allOf` parts merged.
    fn fields(schemas: &Value, name: &str) -> (Vec<String>, Vec<String>) {
        let s = &schemas[name];
        let parts: Vec<&Value> = match s["allOf"].as_array() {
            Some(all) => all
                .iter()
                .map(|p| match p["$ref"].as_str() {
                    Some(r) => &schemas[r.rsplit('/').next().unwrap()],
                    None => p,
                })
                .collect(),
            None => vec![s],
        };
        let mut props = Vec::new();
        let mut required = Vec::new();
        for p in parts {
            props.extend(p["properties"].as_object().unwrap().keys().cloned());
            if let Some(r) = p["required"].as_array() {
                required.extend(r.iter().map(|k| k.as_str().unwrap().to_string()));
            }
        }
        (props, required)
    }
    let check = |name: &str, value: &Value| {
        let (props, required) = fields(schemas, name);
        let obj = value
            .as_object()
            .unwrap_or_else(|| panic!("{name}: {value}"));
        for key in obj.keys() {
            assert!(
                props.contains(key),
                "{name}: `{key}` is not documented: {value}"
            );
        }
        for key in &required {
            assert!(
                obj.contains_key(key),
                "{name}: required `{key}` missing: {value}"
            );
        }
    };
    let s = TestServer::start().await;
    let key = s.admin_key.clone();
    let md = b"# Weather\n\nForecasts for a place.\n".to_vec();
    let r = upload(&s, &key, "?slug=weather", "text/markdown", md.clone()).await;
    check("ImportedResult", &r.body);
    check("Imported", &r.body["data"]);
    for w in r.body["data"]["warnings"].as_array().unwrap() {
        check("ImportWarning", w);
    }
    let r = upload(&s, &key, "?slug=weather-copy", "text/markdown", md).await;
    assert_eq!(r.body["data"]["outcome"], "duplicate");
    check("Imported", &r.body["data"]);
    let r = import_zip(&s, &key, "", several_skills_zip()).await;
    check("ImportedBatchResult", &r.body);
    let data = &r.body["data"];
    check("ImportedBatch", data);
    check("BatchSummary", &data["summary"]);
    for item in data["results"].as_array().unwrap() {
        check("BatchItem", item);
        if let Some(rev) = item.get("revision") {
            check("ItemRevision", rev);
        }
        for w in item["warnings"].as_array().unwrap() {
            check("ImportWarning", w);
        }
    }
    assert!(
        data["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["outcome"] == "refused"),
        "the sample holds a refusal"
    );
}
