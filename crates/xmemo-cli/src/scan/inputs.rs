//! From the PATHs on the command line to skill packages, without ever running, extracting or
//! following anything.
//!
//! - **Folders** are listed (symlinks are never followed, so a link cannot lead the scan
//!   out of the folder or round in a loop; `.git/` and `node_modules/` are not entered).
//!   Every folder that directly holds a file named SKILL.md, in any case, is a package; each
//!   file belongs to the nearest such folder above it, so a skill folder nested in another
//!   one (`tools/SKILL.md` beside the outer SKILL.md) is scanned as its own package and its
//!   files are scanned once. Files in no skill folder (a repository's README) are counted,
//!   not read.
//! - **Files** are read when their package is scanned, at most [`FILE_READ_LIMIT`] each
//!   (larger ones: only the first [`HEAD_BYTES`], all the scanner reads of any file) and
//!   [`PACKAGE_READ_LIMIT`] per package, so memory stays bounded whatever the folder holds.
//! - **ZIPs** are read in memory by the package reader the server uses
//!   (`xmemo_core::package::unzip`): headers are never trusted, sizes, the entry count and
//!   the compression ratio are capped while decompressing, and unsafe names (`..`, absolute
//!   paths), symlinks and encrypted entries refuse the archive. Nothing is written to disk.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use xmemo_core::package::{self, ArchiveLimits, PackageFile};

/// The most of one file that is read whole. Nothing larger can be imported (it is the
/// server's limit for a whole package), and a larger file is read only up to [`HEAD_BYTES`].
pub const FILE_READ_LIMIT: u64 = 16 << 20;

/// What the scanner reads of any file (`xmemo_safety::MAX_FILE_BYTES`): of a file
/// over [`FILE_READ_LIMIT`], only this much is read, which scans it exactly as reading it
/// whole would.
const HEAD_BYTES: u64 = xmemo_safety::MAX_FILE_BYTES as u64;

/// The most bytes read for one package; files past it are not scanned (and named).
pub const PACKAGE_READ_LIMIT: u64 = 128 << 20;

/// The largest .zip file read.
pub const ARCHIVE_READ_LIMIT: u64 = 256 << 20;

/// The most files and folders listed under one PATH: `xmemo scan /` is a mistake, not a
/// reason to list a whole disk.
pub const MAX_LISTED_ENTRIES: usize = 1_000_000;

/// Folders that are not entered, and said so when they are inside a package. `__MACOSX/`
/// is left out silently: archive junk.
const SKIPPED_FOLDERS: [&str; 2] = [".git", "node_modules"];

const SKILL_MD: &str = "SKILL.md";

/// The bounds for reading a .zip: as many entries and bytes as a folder of skills may hold
/// (the server's defaults are for one package); the ratio check against zip bombs as is.
fn archive_limits() -> ArchiveLimits {
    ArchiveLimits {
        max_entries: 50_000,
        max_entry_bytes: FILE_READ_LIMIT,
        max_total_bytes: ARCHIVE_READ_LIMIT * 2,
        ..ArchiveLimits::default()
    }
}

/// One skill package to scan.
pub struct Package {
    /// How the package is named in the output (see [`super::Scanned::shown`]).
    pub shown: String,
    /// The SARIF artifact root its files are relative to.
    pub root: String,
    source: Source,
    /// Set for a single file scanned as SKILL.md: (the name it was scanned as, its name).
    renamed: Option<(String, String)>,
    notes: Vec<String>,
}

enum Source {
    /// Files on disk, read when the package is scanned: (path in the package, on disk).
    Disk(Vec<(String, PathBuf)>),
    /// Files already read from an archive.
    Memory(Vec<PackageFile>),
}

/// A package's files, read.
pub struct Loaded {
    pub shown: String,
    pub root: String,
    pub files: Vec<(String, Vec<u8>)>,
    pub renamed: Option<(String, String)>,
    pub notes: Vec<String>,
    /// Files that could not be read.
    pub errors: Vec<String>,
}

impl Package {
    /// Reads the package's files within [`FILE_READ_LIMIT`] and [`PACKAGE_READ_LIMIT`].
    pub fn load(self) -> Loaded {
        let mut notes = self.notes;
        let mut errors = Vec::new();
        let files = match self.source {
            Source::Memory(files) => files.into_iter().map(|f| (f.path, f.bytes)).collect(),
            Source::Disk(paths) => {
                let mut files = Vec::with_capacity(paths.len());
                let mut budget = PACKAGE_READ_LIMIT;
                let mut over_budget = Vec::new();
                for (relative, path) in paths {
                    match read_bounded(&path, budget) {
                        Ok(Contents::Whole(bytes)) => {
                            budget = budget.saturating_sub(bytes.len() as u64);
                            files.push((relative, bytes));
                        }
                        Ok(Contents::Head(bytes, size)) => {
                            budget = budget.saturating_sub(bytes.len() as u64);
                            notes.push(format!(
                                "`{relative}` is larger than {} ({}): only its first {} was read (the scanner reads no more of any file)",
                                mib(FILE_READ_LIMIT),
                                mib(size),
                                mib(HEAD_BYTES)
                            ));
                            files.push((relative, bytes));
                        }
                        Ok(Contents::OverBudget) => over_budget.push(relative),
                        Err(e) => {
                            // A single file is named as given, not as it was scanned.
                            let file = match &self.renamed {
                                Some(_) => self.shown.clone(),
                                None => join(&self.root, &relative),
                            };
                            errors.push(format!("cannot read `{}`: {e}", shown(&file)));
                        }
                    }
                }
                if !over_budget.is_empty() {
                    errors.push(format!(
                        "`{}`: {} file(s) past the first {} of the package were not scanned: {}",
                        shown(&self.shown),
                        over_budget.len(),
                        mib(PACKAGE_READ_LIMIT),
                        over_budget.join(", ")
                    ));
                }
                files
            }
        };
        Loaded {
            shown: self.shown,
            root: self.root,
            files,
            renamed: self.renamed,
            notes,
            errors,
        }
    }
}

enum Contents {
    Whole(Vec<u8>),
    /// The first [`HEAD_BYTES`] of a file of this many bytes.
    Head(Vec<u8>, u64),
    /// Not read: it would take the package past [`PACKAGE_READ_LIMIT`].
    OverBudget,
}

/// The file's bytes: whole up to [`FILE_READ_LIMIT`], else its head. The read is bounded
/// whatever the size said (a file may grow after the listing).
fn read_bounded(path: &Path, budget: u64) -> std::io::Result<Contents> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let (limit, whole) = if size > FILE_READ_LIMIT {
        (HEAD_BYTES, false)
    } else {
        (FILE_READ_LIMIT, true)
    };
    if limit.min(size) > budget {
        return Ok(Contents::OverBudget);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if whole && bytes.len() as u64 <= FILE_READ_LIMIT {
        return Ok(Contents::Whole(bytes));
    }
    bytes.truncate(HEAD_BYTES as usize);
    Ok(Contents::Head(bytes, size.max(FILE_READ_LIMIT + 1)))
}

/// The whole file, or `None` when it holds more than `limit` bytes (checked while reading,
/// not only from its size).
fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// What one PATH holds.
#[derive(Default)]
pub struct Collected {
    pub packages: Vec<Package>,
    pub notes: Vec<String>,
    pub errors: Vec<String>,
}

/// The packages of one PATH (which exists: `run` checked).
pub fn collect(path: &Path, cwd: Option<&Path>) -> Collected {
    let shown_path = display_path(path, cwd);
    let error = |message: String| Collected {
        errors: vec![message],
        ..Collected::default()
    };
    // The PATH itself is followed if it is a symlink: the user named it.
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => return error(format!("cannot scan `{}`: {e}", shown(&shown_path))),
    };
    if meta.is_dir() {
        collect_folder(path, &shown_path)
    } else if !meta.is_file() {
        error(format!(
            "cannot scan `{}`: not a file or folder (a device, pipe or socket)",
            shown(&shown_path)
        ))
    } else if is_zip(path) {
        collect_zip(path, &shown_path)
    } else {
        single_file(path, &shown_path)
    }
}

/// A .zip by its name, or by its first bytes whatever its name.
fn is_zip(path: &Path) -> bool {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
    {
        return true;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"PK\x03\x04")
}

/// A file on its own: a Markdown file is scanned as the SKILL.md of a one-file package
/// (whatever its name, so `my-skill.md` gets the SKILL.md rules); any other file (a script)
/// under its own name, as a component.
fn single_file(path: &Path, shown_path: &str) -> Collected {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| SKILL_MD.to_string());
    let is_markdown = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"));
    let renamed = (is_markdown && !name.eq_ignore_ascii_case(SKILL_MD))
        .then(|| (SKILL_MD.to_string(), name.clone()));
    let scanned_as = renamed
        .as_ref()
        .map_or(name, |(as_name, _)| as_name.clone());
    let root = shown_path
        .rsplit_once('/')
        .map_or(String::new(), |(dir, _)| dir.to_string());
    Collected {
        packages: vec![Package {
            shown: shown_path.to_string(),
            root,
            source: Source::Disk(vec![(scanned_as, path.to_path_buf())]),
            renamed,
            notes: Vec::new(),
        }],
        ..Collected::default()
    }
}

/// A package being put together: its files, and notes about what was left out of it.
struct Assembly<F> {
    files: Vec<(String, F)>,
    notes: Vec<String>,
}

impl<F> Assembly<F> {
    fn new() -> Self {
        Self {
            files: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// The skill folders among `paths` (relative, `/`-separated): those that directly hold a
/// file named SKILL.md in any case; "" for the root.
fn skill_folders<'a>(paths: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    paths
        .into_iter()
        .filter_map(|p| {
            let (folder, name) = p.rsplit_once('/').unwrap_or(("", p));
            name.eq_ignore_ascii_case(SKILL_MD)
                .then(|| folder.to_string())
        })
        .collect()
}

/// The nearest skill folder that holds `path` (a file or folder), and `path` relative to it.
fn owner<'a>(folders: &BTreeSet<String>, path: &'a str) -> Option<(String, &'a str)> {
    let mut end = path.len();
    while let Some(slash) = path[..end].rfind('/') {
        let folder = &path[..slash];
        if folders.contains(folder) {
            return Some((folder.to_string(), &path[slash + 1..]));
        }
        end = slash;
    }
    folders.contains("").then(|| (String::new(), path))
}

/// Sorts `files` into their packages; `leftovers` are (path, note) about what was not read,
/// noted on the package they are in. Returns the packages by folder, and how many files
/// are in no package.
fn assemble<F>(
    files: Vec<(String, F)>,
    leftovers: Vec<(String, String)>,
) -> (BTreeMap<String, Assembly<F>>, usize) {
    let folders = skill_folders(files.iter().map(|(p, _)| p.as_str()));
    let mut packages: BTreeMap<String, Assembly<F>> = folders
        .iter()
        .map(|f| (f.clone(), Assembly::new()))
        .collect();
    let mut outside = 0;
    for (path, file) in files {
        match owner(&folders, &path) {
            Some((folder, relative)) => {
                let relative = relative.to_string();
                if let Some(p) = packages.get_mut(&folder) {
                    p.files.push((relative, file));
                }
            }
            None => outside += 1,
        }
    }
    for (path, note) in leftovers {
        if let Some((folder, relative)) = owner(&folders, &path)
            && let Some(p) = packages.get_mut(&folder)
        {
            p.notes.push(format!("`{relative}` {note}"));
        }
    }
    (packages, outside)
}

fn no_skill_md(shown_path: &str) -> String {
    format!(
        "no SKILL.md (in any case) in `{}`: give a skill folder, a folder of skill folders, a SKILL.md or a .zip of a skill",
        shown(shown_path)
    )
}

fn outside_note(shown_path: &str, outside: usize) -> Vec<String> {
    if outside == 0 {
        return Vec::new();
    }
    vec![format!(
        "{}: {outside} file(s) in no skill folder (none holds a SKILL.md) were not scanned",
        shown(shown_path)
    )]
}

fn collect_folder(dir: &Path, shown_path: &str) -> Collected {
    let listing = match list(dir) {
        Ok(listing) => listing,
        Err(e) => {
            return Collected {
                errors: vec![format!("cannot scan `{}`: {e}", shown(shown_path))],
                ..Collected::default()
            };
        }
    };
    let errors = listing
        .unreadable
        .iter()
        .map(|(relative, e)| {
            format!(
                "cannot read the folder `{}`: {e}",
                shown(&join(shown_path, relative))
            )
        })
        .collect();
    let (assembled, outside) = assemble(listing.files, listing.leftovers);
    if assembled.is_empty() {
        return Collected {
            errors: [no_skill_md(shown_path)]
                .into_iter()
                .chain(errors)
                .collect(),
            ..Collected::default()
        };
    }
    let packages = assembled
        .into_iter()
        .map(|(folder, a)| {
            let shown = join(shown_path, &folder);
            Package {
                root: shown.clone(),
                shown,
                source: Source::Disk(a.files),
                renamed: None,
                notes: a.notes,
            }
        })
        .collect();
    Collected {
        packages,
        notes: outside_note(shown_path, outside),
        errors,
    }
}

fn collect_zip(path: &Path, shown_path: &str) -> Collected {
    let error = |message: String| Collected {
        errors: vec![message],
        ..Collected::default()
    };
    let bytes = match read_at_most(path, ARCHIVE_READ_LIMIT) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return error(format!(
                "cannot scan `{}`: archives larger than {} are not read",
                shown(shown_path),
                mib(ARCHIVE_READ_LIMIT)
            ));
        }
        Err(e) => return error(format!("cannot read `{}`: {e}", shown(shown_path))),
    };
    let entries = match package::unzip(&bytes, &archive_limits()) {
        Ok(entries) => entries,
        Err(e) => {
            return error(format!(
                "cannot scan `{}`: the archive is refused, as the server would refuse it: {e}",
                shown(shown_path)
            ));
        }
    };
    drop(bytes);
    // Junk (`.git/`, `__MACOSX/`, `.DS_Store`) is already left out by the reader.
    let mut files = Vec::with_capacity(entries.len());
    let mut skipped_folders = BTreeSet::new();
    for entry in entries {
        match skipped_folder(&entry.path) {
            Some(folder) => {
                skipped_folders.insert(folder);
            }
            None => files.push((entry.path.clone(), entry)),
        }
    }
    let leftovers = skipped_folders
        .into_iter()
        .map(|folder| (format!("{folder}/"), "was not scanned".to_string()))
        .collect();
    let (assembled, outside) = assemble(files, leftovers);
    if assembled.is_empty() {
        return error(no_skill_md(shown_path));
    }
    let packages = assembled
        .into_iter()
        .map(|(folder, a)| {
            let shown = join(shown_path, &folder);
            Package {
                root: shown.clone(),
                shown,
                source: Source::Memory(
                    a.files
                        .into_iter()
                        .map(|(relative, mut file)| {
                            file.path = relative;
                            file
                        })
                        .collect(),
                ),
                renamed: None,
                notes: a.notes,
            }
        })
        .collect();
    Collected {
        packages,
        notes: outside_note(shown_path, outside),
        errors: Vec::new(),
    }
}

/// The first `.git` or `node_modules` folder on an archive path (`a/node_modules`).
fn skipped_folder(path: &str) -> Option<String> {
    let mut end = 0;
    for segment in path.split('/') {
        let folder_end = end + segment.len();
        // Only folders: the last segment is the file's own name.
        if folder_end < path.len() && SKIPPED_FOLDERS.contains(&segment) {
            return Some(path[..folder_end].to_string());
        }
        end = folder_end + 1;
    }
    None
}

/// Every regular file under a folder, and what was left out.
struct Listing {
    /// (relative path, path on disk), sorted by relative path.
    files: Vec<(String, PathBuf)>,
    /// (relative path, what happened to it): skipped folders, symlinks, special files.
    leftovers: Vec<(String, String)>,
    /// Folders that could not be listed: (relative path, error).
    unreadable: Vec<(String, std::io::Error)>,
}

fn list(dir: &Path) -> Result<Listing, String> {
    let mut listing = Listing {
        files: Vec::new(),
        leftovers: Vec::new(),
        unreadable: Vec::new(),
    };
    let mut entries = 0usize;
    // (path on disk, relative path): an explicit stack, as folders can nest deeper than a
    // thread's stack would let a recursion go.
    let mut stack: Vec<(PathBuf, String)> = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, relative)) = stack.pop() {
        let read = match std::fs::read_dir(&folder) {
            Ok(read) => read,
            Err(e) if relative.is_empty() => return Err(e.to_string()),
            Err(e) => {
                listing.unreadable.push((relative, e));
                continue;
            }
        };
        let mut children = Vec::new();
        for entry in read {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    listing.unreadable.push((relative.clone(), e));
                    break;
                }
            };
            entries += 1;
            if entries > MAX_LISTED_ENTRIES {
                return Err(format!(
                    "more than {MAX_LISTED_ENTRIES} files and folders: give the folders that hold the skills"
                ));
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = join(&relative, &name);
            // `DirEntry::file_type` does not follow symlinks.
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    if SKIPPED_FOLDERS.contains(&name.as_str()) {
                        listing
                            .leftovers
                            .push((format!("{child}/"), "was not scanned".to_string()));
                    } else if !package::is_ignored_path(&format!("{child}/x")) {
                        children.push((entry.path(), child));
                    }
                }
                Ok(t) if t.is_file() => {
                    if !package::is_ignored_path(&child) {
                        listing.files.push((child, entry.path()));
                    }
                }
                Ok(t) if t.is_symlink() => listing
                    .leftovers
                    .push((child, "is a symlink: not followed".to_string())),
                Ok(_) => listing
                    .leftovers
                    .push((child, "is a device, pipe or socket: not read".to_string())),
                Err(e) => listing.unreadable.push((child, e)),
            }
        }
        children.sort();
        stack.extend(children.into_iter().rev());
    }
    listing.files.sort();
    Ok(listing)
}

/// `path` as shown and used in SARIF: relative to the current directory when it is inside
/// it, `/` separators, no `./` in front and no `/` at the end; "" for the current directory.
pub fn display_path(path: &Path, cwd: Option<&Path>) -> String {
    let relative = match cwd {
        Some(cwd) if path.is_absolute() => path.strip_prefix(cwd).unwrap_or(path),
        _ => path,
    };
    let mut text = relative.to_string_lossy().into_owned();
    if std::path::MAIN_SEPARATOR == '\\' {
        text = text.replace('\\', "/");
    }
    let mut rest = text.as_str();
    loop {
        if rest == "." {
            rest = "";
        } else if let Some(after) = rest.strip_prefix("./") {
            rest = after.trim_start_matches('/');
            continue;
        }
        break;
    }
    let trimmed = rest.trim_end_matches('/');
    if trimmed.is_empty() && rest.starts_with('/') {
        "/".to_string()
    } else {
        trimmed.to_string()
    }
}

/// `a/b`, where either may be "" (the current directory, the package root).
pub fn join(a: &str, b: &str) -> String {
    match (a, b) {
        ("", b) => b.to_string(),
        (a, "") => a.to_string(),
        ("/", b) => format!("/{b}"),
        (a, b) => format!("{a}/{b}"),
    }
}

/// A path for a person: "." for the current directory.
pub fn shown(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_relative_with_slashes() {
        let cwd = Path::new("/work/repo");
        assert_eq!(display_path(Path::new("./skills/"), Some(cwd)), "skills");
        assert_eq!(display_path(Path::new("."), Some(cwd)), "");
        assert_eq!(display_path(Path::new("./"), Some(cwd)), "");
        assert_eq!(
            display_path(Path::new("/work/repo/skills/a"), Some(cwd)),
            "skills/a"
        );
        assert_eq!(display_path(Path::new("/work/repo"), Some(cwd)), "");
        assert_eq!(
            display_path(Path::new("/elsewhere/a"), Some(cwd)),
            "/elsewhere/a"
        );
        assert_eq!(display_path(Path::new("/"), Some(cwd)), "/");
        assert_eq!(display_path(Path::new("../x"), Some(cwd)), "../x");
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a", ""), "a");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("a", "b/c"), "a/b/c");
    }

    #[test]
    fn each_file_belongs_to_the_nearest_skill_folder() {
        let files = [
            "README.md",
            "a/SKILL.md",
            "a/scripts/run.sh",
            "a/tools/skill.md",
            "a/tools/t.py",
            "b/c/Skill.MD",
            "b/other.txt",
        ];
        let files: Vec<(String, ())> = files.iter().map(|f| (f.to_string(), ())).collect();
        let leftovers = vec![("a/node_modules/".to_string(), "was not scanned".to_string())];
        let (packages, outside) = assemble(files, leftovers);
        let shape: Vec<(&str, Vec<&str>)> = packages
            .iter()
            .map(|(folder, a)| {
                (
                    folder.as_str(),
                    a.files.iter().map(|(p, ())| p.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("a", vec!["SKILL.md", "scripts/run.sh"]),
                ("a/tools", vec!["skill.md", "t.py"]),
                ("b/c", vec!["Skill.MD"]),
            ]
        );
        assert_eq!(outside, 2);
        assert_eq!(packages["a"].notes, vec!["`node_modules/` was not scanned"]);
    }

    #[test]
    fn a_skill_md_at_the_root_owns_the_rest() {
        let files: Vec<(String, ())> = ["SKILL.md", "x/y.sh"]
            .iter()
            .map(|f| (f.to_string(), ()))
            .collect();
        let (packages, outside) = assemble(files, Vec::new());
        assert_eq!(outside, 0);
        assert_eq!(packages.keys().collect::<Vec<_>>(), vec![""]);
        assert_eq!(packages[""].files.len(), 2);
    }

    #[test]
    fn skipped_archive_folders() {
        assert_eq!(
            skipped_folder("s/node_modules/x/y.js").as_deref(),
            Some("s/node_modules")
        );
        assert_eq!(skipped_folder("node_modules"), None);
        assert_eq!(skipped_folder("s/.git/config").as_deref(), Some("s/.git"));
        assert_eq!(skipped_folder("s/scripts/run.sh"), None);
    }
}
