//! The capsule reader path of an import, past the unzip: a list of files (see
//! [`files_of`]; seeds are unpacked Source Capsules, so `capsule.json` is usually
//! there) through `read_files` — path rules, root folder, secrets, `parse_manifest`, each
//! component against its SHA-256 and size, the canonical_hash. Mutations reach the manifest
//! and the files directly instead of dying on a ZIP checksum. No panic, every refusal well
//! formed, an accepted capsule keeps its stated hash, and it exports and imports back
//! unchanged.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xmemo_core::package::{PackageFile, read_files};

fuzz_target!(|data: &[u8]| {
    match read_files(files_of(data)) {
        Ok(package) => {
            if let Some(manifest) = &package.capsule {
                assert_eq!(
                    manifest.canonical_hash,
                    package.canonical_hash(),
                    "a capsule was accepted with another content than it states"
                );
            }
            common::export_round_trips(&package);
        }
        Err(e) => common::refusal_is_well_formed(&e),
    }
});

/// Most files one input may hold (the archive limit is 1,000 entries).
const MAX_FILES: usize = 1_100;

/// The `capsule_import` input: files one after another, each as a little-endian `u16` path
/// length, the path (UTF-8; invalid bytes are replaced), a little-endian `u32` content
/// length and the content (cut short at the end of the input). `scripts/fuzz-seeds` writes
/// seeds in this format (`file_list` in `crates/xmemo-core/tests/common/mod.rs`).
pub fn files_of(mut data: &[u8]) -> Vec<PackageFile> {
    let mut files = Vec::new();
    while files.len() < MAX_FILES {
        let Some((path_len, rest)) = take::<2>(data) else {
            break;
        };
        let path_len = u16::from_le_bytes(path_len) as usize;
        let (path, rest) = rest.split_at(path_len.min(rest.len()));
        let Some((len, rest)) = take::<4>(rest) else {
            break;
        };
        let len = u32::from_le_bytes(len) as usize;
        let (bytes, rest) = rest.split_at(len.min(rest.len()));
        files.push(PackageFile {
            path: String::from_utf8_lossy(path).into_owned(),
            bytes: bytes.to_vec(),
        });
        data = rest;
    }
    files
}

fn take<const N: usize>(data: &[u8]) -> Option<([u8; N], &[u8])> {
    let head = data.get(..N)?;
    let mut out = [0u8; N];
    out.copy_from_slice(head);
    Some((out, &data[N..]))
}
