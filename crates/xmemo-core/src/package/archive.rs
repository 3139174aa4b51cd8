//! ZIP → list of files, in memory, refusing hostile archives.
//!
//! Nothing is ever written to disk. Sizes in the archive's headers are never trusted: every
//! entry is decompressed through a counting loop that stops one chunk past the per-entry
//! limit, the running total, or the compression-ratio cap, so a zip bomb costs at most
//! about the limit in memory and time. Paths are checked on the raw names (UTF-8 required)
//! *and* with the `zip` crate's `enclosed_name`.

use super::classify::{is_ignored_path, unsafe_path_reason};
use super::error::PackageError;
use serde::{Deserialize, Serialize};
use std::io::{Cursor, Read};
use zip::{CompressionMethod, ZipArchive};

/// Bounds applied while reading an archive. [`Default`] gives the server's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveLimits {
    /// Entries (files, folders, ignored junk) the archive may declare. For
    /// [`unzip_subtree`], only the entries inside the subtree count.
    pub max_entries: usize,
    /// Decompressed bytes of one entry.
    pub max_entry_bytes: u64,
    /// Decompressed bytes of all entries read.
    pub max_total_bytes: u64,
    /// Largest allowed ratio of an entry's decompressed bytes so far to its whole compressed
    /// size…
    pub max_ratio: u64,
    /// …checked once the entry has produced more than this many bytes (small files with
    /// a high ratio, e.g. a few KiB of spaces, are harmless).
    pub ratio_grace_bytes: u64,
}

/// At most 1,000 entries; 1 MiB per file; 16 MiB in total (the server's request-body
/// limit); a ratio of 100:1 past 256 KiB. A valid revision needs far less (≤ 50 components
/// of ≤ 128 KiB), so these only decide *which* error an oversized package gets: a file of
/// 200 KiB is read whole and then refused by the content rules with its exact size.
impl Default for ArchiveLimits {
    fn default() -> Self {
        Self {
            max_entries: 1_000,
            max_entry_bytes: 1 << 20,
            max_total_bytes: 16 << 20,
            max_ratio: 100,
            ratio_grace_bytes: 256 << 10,
        }
    }
}

/// One file of a package: a relative `/`-separated path and its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

impl PackageFile {
    pub fn new(path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            path: path.into(),
            bytes: bytes.into(),
        }
    }
}

impl From<(String, Vec<u8>)> for PackageFile {
    fn from((path, bytes): (String, Vec<u8>)) -> Self {
        Self { path, bytes }
    }
}

/// Every regular file of the archive, in archive order, with its path as stored.
/// Directory entries and junk ([`super::is_ignored_path`]) are skipped (junk is not even
/// decompressed). Refuses: unreadable archives, duplicate names, more than `max_entries`,
/// unsafe names (see [`super::unsafe_path_reason`]), symlinks and other special files,
/// encrypted entries, compression other than stored/deflate, and the size/ratio limits.
pub fn unzip(bytes: &[u8], limits: &ArchiveLimits) -> Result<Vec<PackageFile>, PackageError> {
    unzip_impl(bytes, limits, "", None)
}

/// Like [`unzip`], but only for the entries under `subtree/` (a safe relative path; empty
/// means everything); the returned paths are relative to it. Entries outside the subtree
/// are neither checked nor decompressed, so a repository archive may hold symlinks or huge
/// files elsewhere. For a GitHub-style archive, pass
/// `format!("{}/{}", single_top_folder(bytes)?.unwrap_or_default(), skill_dir)`.
pub fn unzip_subtree(
    bytes: &[u8],
    limits: &ArchiveLimits,
    subtree: &str,
) -> Result<Vec<PackageFile>, PackageError> {
    let subtree = subtree.trim_matches('/');
    if !subtree.is_empty()
        && let Some(reason) = unsafe_path_reason(subtree)
    {
        return Err(PackageError::unsafe_path(subtree, reason));
    }
    unzip_impl(bytes, limits, subtree, None)
}

/// Like [`unzip_subtree`], but only for the entries inside one of `folders` (relative to
/// `subtree`): the skill folders of a repository, whose other entries are never read.
pub fn unzip_folders(
    bytes: &[u8],
    limits: &ArchiveLimits,
    subtree: &str,
    folders: &[String],
) -> Result<Vec<PackageFile>, PackageError> {
    let subtree = subtree.trim_matches('/');
    for path in std::iter::once(subtree).chain(folders.iter().map(String::as_str)) {
        if !path.is_empty()
            && let Some(reason) = unsafe_path_reason(path)
        {
            return Err(PackageError::unsafe_path(path, reason));
        }
    }
    unzip_impl(bytes, limits, subtree, Some(folders))
}

/// The paths of the files under `subtree/` (relative to it), from the central directory
/// alone: no entry is decompressed or checked, names that are not UTF-8 and junk are left
/// out. For finding the skill folders of a repository before reading them.
pub fn archive_file_names(bytes: &[u8], subtree: &str) -> Result<Vec<String>, PackageError> {
    let archive =
        ZipArchive::new(Cursor::new(bytes)).map_err(|e| PackageError::corrupt(None, e))?;
    let subtree = subtree.trim_matches('/');
    let prefix = if subtree.is_empty() {
        String::new()
    } else {
        format!("{subtree}/")
    };
    Ok(archive
        .file_names_raw()
        .filter_map(|raw| std::str::from_utf8(raw).ok())
        .filter_map(|name| name.strip_prefix(prefix.as_str()))
        .filter(|rel| !rel.is_empty() && !rel.ends_with('/') && !is_ignored_path(rel))
        .map(str::to_string)
        .collect())
}

/// The name of the one folder that holds every entry of the archive (as in GitHub's
/// `<repo>-<ref>/` archives), or `None` when entries sit at the root or in several folders.
/// Reads only the central directory.
pub fn single_top_folder(bytes: &[u8]) -> Result<Option<String>, PackageError> {
    let archive =
        ZipArchive::new(Cursor::new(bytes)).map_err(|e| PackageError::corrupt(None, e))?;
    let mut top: Option<&str> = None;
    for raw in archive.file_names_raw() {
        let Ok(name) = std::str::from_utf8(raw) else {
            return Ok(None);
        };
        let Some((first, _)) = name.split_once('/') else {
            return Ok(None);
        };
        match top {
            None => top = Some(first),
            Some(t) if t == first => {}
            Some(_) => return Ok(None),
        }
    }
    Ok(top
        .filter(|t| unsafe_path_reason(t).is_none())
        .map(str::to_string))
}

fn unzip_impl(
    bytes: &[u8],
    limits: &ArchiveLimits,
    subtree: &str,
    folders: Option<&[String]>,
) -> Result<Vec<PackageFile>, PackageError> {
    let mut archive =
        ZipArchive::new(Cursor::new(bytes)).map_err(|e| PackageError::corrupt(None, e))?;
    if archive.has_duplicate_names() {
        return Err(PackageError::DuplicateEntries);
    }
    let prefix = if subtree.is_empty() {
        String::new()
    } else {
        format!("{subtree}/")
    };
    let inside: Option<Vec<String>> =
        folders.map(|f| f.iter().map(|f| format!("{prefix}{f}/")).collect());
    let selects = |raw: &[u8]| match &inside {
        None => raw.starts_with(prefix.as_bytes()),
        Some(all) => all.iter().any(|p| raw.starts_with(p.as_bytes())),
    };

    // Pass 1, central directory only: select, count, and check every selected name and
    // entry kind before decompressing anything.
    let mut selected: Vec<(usize, String)> = Vec::new();
    for index in 0..archive.len() {
        let entry = archive
            .by_index_data(index)
            .map_err(|e| PackageError::corrupt(None, e))?;
        let raw = entry.name_raw();
        if !selects(raw) {
            continue;
        }
        if selected.len() >= limits.max_entries {
            return Err(PackageError::TooManyEntries {
                limit: limits.max_entries as u64,
                actual: archive.file_names_raw().filter(|n| selects(n)).count() as u64,
            });
        }
        let name = std::str::from_utf8(raw).map_err(|_| {
            PackageError::unsafe_path(
                &String::from_utf8_lossy(raw),
                "file name is not valid UTF-8",
            )
        })?;
        let relative = &name[prefix.len()..];
        let is_dir = relative.ends_with('/');
        let checked = if is_dir {
            &relative[..relative.len() - 1]
        } else {
            relative
        };
        // The subtree's own folder entry: `sub/` relative to the `sub/` prefix is empty
        // (GitHub archives list every folder, e.g. `owner-repo-sha/skills/foo/`).
        if (checked.is_empty() && is_dir) || (!prefix.is_empty() && relative.is_empty()) {
            continue;
        }
        if let Some(reason) = unsafe_path_reason(checked) {
            return Err(PackageError::unsafe_path(name, reason));
        }
        if entry.enclosed_name().is_none() {
            return Err(PackageError::unsafe_path(name, "path escapes the archive"));
        }
        if let Some(mode) = entry.unix_mode() {
            match mode & 0o170_000 {
                0o120_000 => {
                    return Err(PackageError::Symlink {
                        path: name.to_string(),
                    });
                }
                0 | 0o100_000 | 0o040_000 => {}
                _ => {
                    return Err(PackageError::SpecialFile {
                        path: name.to_string(),
                    });
                }
            }
        }
        if entry.encrypted() {
            return Err(PackageError::Encrypted {
                path: name.to_string(),
            });
        }
        if is_dir || is_ignored_path(checked) {
            continue;
        }
        let method = entry.compression();
        if !matches!(
            method,
            CompressionMethod::Stored | CompressionMethod::Deflated
        ) {
            return Err(PackageError::UnsupportedCompression {
                path: name.to_string(),
                method: format!("{method:?}"),
            });
        }
        selected.push((index, checked.to_string()));
    }

    // Pass 2: decompress the selected entries under the byte, total and ratio caps.
    let mut total: u64 = 0;
    let mut files = Vec::with_capacity(selected.len());
    for (index, path) in selected {
        let mut file = archive
            .by_index(index)
            .map_err(|e| PackageError::corrupt(Some(&path), e))?;
        // The header's compressed size bounds how much the decompressor may consume; a
        // lie cannot exceed the archive itself.
        let compressed = file.compressed_size().clamp(1, bytes.len().max(1) as u64);
        let mut out = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = file
                .read(&mut chunk)
                .map_err(|e| PackageError::corrupt(Some(&path), e))?;
            if n == 0 {
                break;
            }
            let len = out.len() as u64 + n as u64;
            if len > limits.max_entry_bytes {
                return Err(PackageError::EntryTooLarge {
                    path,
                    limit: limits.max_entry_bytes,
                });
            }
            total += n as u64;
            if total > limits.max_total_bytes {
                return Err(PackageError::ArchiveTooLarge {
                    path,
                    limit: limits.max_total_bytes,
                });
            }
            out.extend_from_slice(&chunk[..n]);
            if len > limits.ratio_grace_bytes && len / compressed > limits.max_ratio {
                return Err(PackageError::CompressionRatio {
                    path,
                    limit: limits.max_ratio,
                    actual: len / compressed,
                });
            }
        }
        files.push(PackageFile { path, bytes: out });
    }
    Ok(files)
}
