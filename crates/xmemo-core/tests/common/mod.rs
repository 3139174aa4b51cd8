//! Test helpers: build ZIP archives in memory (including hostile ones, by patching raw
//! header bytes where the writer refuses to produce them) and read the real-world corpus.
#![allow(dead_code)]

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use xmemo_core::package::PackageFile;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

pub const SKILL_MD: &[u8] = b"---\nname: demo\ndescription: A demo skill\nlicense: MIT\n---\n\n# Demo\n\nRun `scripts/run.py`.\n";

pub fn options(method: CompressionMethod) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(method)
        .system(zip::System::Unix)
        .unix_permissions(0o644)
}

/// A ZIP of regular files, deflated.
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    zip_with(entries, CompressionMethod::Deflated)
}

pub fn zip_with(entries: &[(&str, &[u8])], method: CompressionMethod) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        if name.ends_with('/') {
            w.add_directory(name.trim_end_matches('/'), options(method))
                .unwrap();
        } else {
            w.start_file(*name, options(method)).unwrap();
            w.write_all(bytes).unwrap();
        }
    }
    w.finish().unwrap().into_inner()
}

/// Regular files plus one symlink entry.
pub fn zip_with_symlink(entries: &[(&str, &[u8])], link: &str, target: &str) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        w.start_file(*name, options(CompressionMethod::Deflated))
            .unwrap();
        w.write_all(bytes).unwrap();
    }
    w.add_symlink(link, target, options(CompressionMethod::Stored))
        .unwrap();
    w.finish().unwrap().into_inner()
}

/// Every entry of an archive, in order (for rewriting capsules in tests).
pub fn entries_of(zip: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut a = ZipArchive::new(Cursor::new(zip)).unwrap();
    (0..a.len())
        .map(|i| {
            let mut f = a.by_index(i).unwrap();
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).unwrap();
            (f.name().unwrap().to_string(), bytes)
        })
        .collect()
}

pub fn rezip(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let refs: Vec<(&str, &[u8])> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    zip_of(&refs)
}

/// Replaces every occurrence of `from` by `to` (same length) in the raw archive: used to
/// give entries names the writer would refuse (`../x`, `/abs`, duplicates…). Names appear
/// in the local header and the central directory; both are patched.
pub fn patch_bytes(zip: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut found = 0;
    let mut i = 0;
    while i + from.len() <= zip.len() {
        if &zip[i..i + from.len()] == from {
            zip[i..i + from.len()].copy_from_slice(to);
            found += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(
        found >= 2,
        "expected the name in both headers, found {found}"
    );
}

/// Calls `f(header_bytes_from_signature)` for the local header and the central directory
/// record of the entry named `name`.
fn for_headers_of(
    zip: &mut [u8],
    name: &str,
    mut local: impl FnMut(&mut [u8]),
    mut central: impl FnMut(&mut [u8]),
) {
    let name = name.as_bytes();
    let mut i = 0;
    let mut hits = 0;
    while i + 46 <= zip.len() {
        if zip[i..i + 4] == [0x50, 0x4b, 0x03, 0x04] {
            let len = u16::from_le_bytes([zip[i + 26], zip[i + 27]]) as usize;
            if zip.get(i + 30..i + 30 + len) == Some(name) {
                local(&mut zip[i..]);
                hits += 1;
            }
        } else if zip[i..i + 4] == [0x50, 0x4b, 0x01, 0x02] {
            let len = u16::from_le_bytes([zip[i + 28], zip[i + 29]]) as usize;
            if zip.get(i + 46..i + 46 + len) == Some(name) {
                central(&mut zip[i..]);
                hits += 1;
            }
        }
        i += 1;
    }
    assert_eq!(hits, 2, "entry {name:?} not found in both headers");
}

/// Makes both headers of one entry claim a CRC-32 its data does not have: the reader finds out
/// only once it has read the entry to its end.
pub fn set_wrong_crc(zip: &mut [u8], name: &str) {
    for_headers_of(zip, name, |h| h[14] ^= 0xff, |h| h[16] ^= 0xff);
}

/// Sets the "encrypted" bit of the general-purpose flags of one entry.
pub fn set_encrypted(zip: &mut [u8], name: &str) {
    for_headers_of(zip, name, |h| h[6] |= 1, |h| h[8] |= 1);
}

/// Sets the compression method of one entry (e.g. 12 = bzip2).
pub fn set_method(zip: &mut [u8], name: &str, method: u16) {
    let m = method.to_le_bytes();
    for_headers_of(
        zip,
        name,
        |h| h[8..10].copy_from_slice(&m),
        |h| h[10..12].copy_from_slice(&m),
    );
}

/// Makes both headers of one entry claim `size` uncompressed bytes.
pub fn set_uncompressed_size(zip: &mut [u8], name: &str, size: u32) {
    let s = size.to_le_bytes();
    for_headers_of(
        zip,
        name,
        |h| h[22..26].copy_from_slice(&s),
        |h| h[24..28].copy_from_slice(&s),
    );
}

/// Sets the unix mode (high 16 bits of the external attributes) in the central directory.
pub fn set_unix_mode(zip: &mut [u8], name: &str, mode: u32) {
    for_headers_of(
        zip,
        name,
        |_| {},
        |h| {
            let attrs = (mode << 16).to_le_bytes();
            h[38..42].copy_from_slice(&attrs);
            h[5] = 3; // version made by: Unix
        },
    );
}

/// Deterministic pseudo-random bytes (incompressible).
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// The real-world corpus: `tests/corpus/anthropics-skills` of this repository, or
/// `XMEMO_CORPUS_DIR`. It ships with the clone, so a missing one fails the test rather than
/// letting it pass on nothing.
pub fn corpus_dir() -> PathBuf {
    let dir = std::env::var_os("XMEMO_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/anthropics-skills")
        });
    assert!(
        dir.is_dir(),
        "the skill corpus is missing at {} (it ships with the repository in \
         tests/corpus/anthropics-skills; XMEMO_CORPUS_DIR overrides the path)",
        dir.display()
    );
    dir
}

/// The corpus packages by name, sorted: each folder of the corpus, and each `<name>.zip`
/// (a package kept zipped, its files under `<name>/`).
pub fn corpus_packages() -> Vec<(String, PathBuf)> {
    let dir = corpus_dir();
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            if p.is_dir() {
                Some((name, p))
            } else {
                let stem = name.strip_suffix(".zip")?.to_string();
                Some((stem, p))
            }
        })
        .collect();
    out.sort();
    assert!(out.len() >= 10, "expected the whole corpus in {dir:?}");
    out
}

/// A corpus package's files (see [`corpus_packages`]), paths relative to the package, sorted.
pub fn read_package(path: &Path) -> Vec<PackageFile> {
    if path.is_dir() {
        return read_tree(path);
    }
    let stem = path.file_stem().unwrap().to_str().unwrap();
    let prefix = format!("{stem}/");
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().unwrap().to_string();
        let rel = name.strip_prefix(&prefix).unwrap().to_string();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        out.push(PackageFile::new(rel, bytes));
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Every regular file under `dir`, paths relative to it with `/`, sorted.
pub fn read_tree(dir: &Path) -> Vec<PackageFile> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PackageFile>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                walk(root, &path, out);
            } else if kind.is_file() {
                let rel = path.strip_prefix(root).unwrap();
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_str().unwrap().to_string())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push(PackageFile::new(rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A ZIP of files, all under `folder/` (as a "download as ZIP" gives them).
pub fn zip_tree(folder: &str, files: &[PackageFile]) -> Vec<u8> {
    let names: Vec<String> = files
        .iter()
        .map(|f| format!("{folder}/{}", f.path))
        .collect();
    let entries: Vec<(&str, &[u8])> = names
        .iter()
        .zip(files)
        .map(|(n, f)| (n.as_str(), f.bytes.as_slice()))
        .collect();
    zip_of(&entries)
}

// ---- fuzz seeds ------------------------------------------------------------------------
// The fixtures of these tests double as seed corpora of the fuzz targets in `fuzz/`:
// with `XMEMO_FUZZ_SEEDS_DIR` set (what `scripts/fuzz-seeds` does), each fixture a test
// builds is also written to `$XMEMO_FUZZ_SEEDS_DIR/<target>/<sha256 prefix>`. Without it
// nothing is written; the tests assert the same either way.

/// Seeds bigger than this are not written: libFuzzer sizes its inputs after the largest
/// seed, and the multi-megabyte fixtures (archives over the total cap) only slow it down.
pub const SEED_MAX_BYTES: usize = 1024 * 1024;

/// Writes one seed for `target` when seeds were asked for.
pub fn seed(target: &str, bytes: &[u8]) {
    let Some(root) = std::env::var_os("XMEMO_FUZZ_SEEDS_DIR") else {
        return;
    };
    if bytes.len() > SEED_MAX_BYTES {
        return;
    }
    let dir = Path::new(&root).join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let name = &xmemo_core::content_hash(bytes)[..16];
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// An archive as seeds: the ZIP for `zip_read`, its files for `capsule_import` and its
/// SKILL.md files for `skill_md` (when it unpacks at all).
pub fn seed_archive(zip: &[u8]) {
    if std::env::var_os("XMEMO_FUZZ_SEEDS_DIR").is_none() {
        return;
    }
    seed("zip_read", zip);
    let limits = xmemo_core::package::ArchiveLimits::default();
    if let Ok(files) = xmemo_core::package::unzip(zip, &limits) {
        seed_files(&files);
    }
}

/// A file list as seeds: for `capsule_import` ([`file_list`]) and its SKILL.md files for
/// `skill_md`.
pub fn seed_files(files: &[PackageFile]) {
    seed("capsule_import", &file_list(files));
    for f in files.iter().filter(|f| f.path.ends_with("SKILL.md")) {
        seed("skill_md", &f.bytes);
    }
}

/// The `capsule_import` input format (decoded by `files_of` in `fuzz/fuzz_targets/capsule_import.rs`): per
/// file a little-endian `u16` path length, the path, a little-endian `u32` content length,
/// the content.
pub fn file_list(files: &[PackageFile]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in files {
        let path = f.path.as_bytes();
        out.extend_from_slice(&u16::try_from(path.len()).unwrap().to_le_bytes());
        out.extend_from_slice(path);
        out.extend_from_slice(&u32::try_from(f.bytes.len()).unwrap().to_le_bytes());
        out.extend_from_slice(&f.bytes);
    }
    out
}

// ---- the ClawHub corpus ----------------------------------------------------------------

/// `tests/corpus/clawhub` of this repository (1,635 SKILL.md files by several hundred
/// authors, MIT, test data), or `XMEMO_CLAWHUB_DIR`. It ships with the clone, so a missing
/// one fails the test.
pub fn clawhub_dir() -> PathBuf {
    let dir = std::env::var_os("XMEMO_CLAWHUB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/clawhub")
        });
    assert!(
        dir.join("skills").is_dir(),
        "the ClawHub corpus is missing at {} (it ships with the repository in \
         tests/corpus/clawhub; XMEMO_CLAWHUB_DIR overrides the path)",
        dir.display()
    );
    dir
}

/// One instructions file of the ClawHub corpus: its folder relative to `skills/`, the
/// folder's own name, the file's name (`SKILL.md`, or `skill.md` in another case) and bytes.
pub struct ClawhubFile {
    pub folder: String,
    pub name: String,
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// Every file named SKILL.md in any case under `skills/`, sorted by folder.
pub fn clawhub_files() -> Vec<ClawhubFile> {
    let root = clawhub_dir().join("skills");
    let mut out = Vec::new();
    for file in read_tree(&root) {
        let (folder, file_name) = file.path.rsplit_once('/').unwrap_or(("", &file.path));
        if !file_name.eq_ignore_ascii_case("SKILL.md") {
            continue;
        }
        out.push(ClawhubFile {
            folder: folder.to_string(),
            name: folder.rsplit('/').next().unwrap_or(folder).to_string(),
            file_name: file_name.to_string(),
            bytes: file.bytes,
        });
    }
    out.sort_by(|a, b| a.folder.cmp(&b.folder));
    assert!(
        out.len() >= 1_600,
        "expected the whole ClawHub corpus in {}, found {} files",
        root.display(),
        out.len()
    );
    out
}

/// The SPEC §1 hard limit a refusal is, by its code, field and limit (`None`: something
/// else refused the file).
pub fn hard_limit(e: &xmemo_core::package::PackageError) -> Option<&'static str> {
    use xmemo_core::ErrorCode;
    use xmemo_core::limits::*;
    let field = e.field();
    let message = e.message();
    if message.contains("control character") {
        return Some("control characters");
    }
    match (e.code(), field.as_str(), e.limit()) {
        (ErrorCode::PayloadTooLarge, "instruction_body", Some(l))
            if l == INSTRUCTION_BODY_MAX_BYTES as u64 =>
        {
            Some("instructions over 64 KiB")
        }
        (ErrorCode::ValidationError, "instruction_body", None)
            if message.contains("must not be empty") =>
        {
            Some("empty instructions")
        }
        (ErrorCode::ValidationError, "components", Some(l)) if l == MAX_COMPONENTS as u64 => {
            Some("more than 50 components")
        }
        (ErrorCode::PayloadTooLarge, _, Some(l)) if l == COMPONENT_MAX_BYTES as u64 => {
            Some("a component over 128 KiB")
        }
        _ => None,
    }
}
