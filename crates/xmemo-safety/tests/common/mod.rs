//! Reading skill folders and zips for the corpus tests (the library itself never touches the
//! filesystem).
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use xmemo_safety::{Report, ScanFile, scan_skill};

/// A package's files: (package-relative path with `/`, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// Every file under `dir`, sorted by path.
pub fn read_folder(dir: &Path) -> Files {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let e = e.expect("dir entry");
            let p = e.path();
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let rel = p
                    .strip_prefix(dir)
                    .expect("under dir")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((rel, std::fs::read(&p).expect("read file")));
            }
        }
    }
    out.sort();
    out
}

/// Every regular file of a zip whose entries sit under one top folder, relative to it.
pub fn read_zip(path: &Path) -> Files {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut a = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    let mut out = Vec::new();
    for i in 0..a.len() {
        let mut f = a.by_index(i).expect("zip entry");
        if f.is_dir() {
            continue;
        }
        let name = f.name().expect("entry name").to_string();
        let rel = name
            .split_once('/')
            .map_or(name.clone(), |(_, r)| r.to_string());
        let mut b = Vec::new();
        f.read_to_end(&mut b).expect("read entry");
        out.push((rel, b));
    }
    out.sort();
    out
}

pub fn scan(files: &[(String, Vec<u8>)]) -> Report {
    let sf: Vec<ScanFile<'_>> = files
        .iter()
        .map(|(p, b)| ScanFile { path: p, bytes: b })
        .collect();
    scan_skill(&sf)
}

/// The repository's real-world corpus: `XMEMO_CORPUS_DIR`, else `tests/corpus` at the root.
pub fn real_corpus() -> PathBuf {
    let dir = std::env::var_os("XMEMO_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus"));
    assert!(
        dir.join("clawhub/skills").is_dir() && dir.join("anthropics-skills").is_dir(),
        "the real-world corpus is missing at {} (a missing corpus is a failure, not a skip)",
        dir.display()
    );
    dir
}

/// This crate's own hostile / benign corpus.
pub fn own_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// One line per finding: `  rule severity file:line excerpt`.
pub fn describe(r: &Report) -> String {
    r.findings
        .iter()
        .map(|f| {
            format!(
                "    {} {} {}:{} {}",
                f.rule_id,
                f.severity.as_str(),
                f.file,
                f.line,
                f.excerpt
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
