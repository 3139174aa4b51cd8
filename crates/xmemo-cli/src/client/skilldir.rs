//! A skill directory on disk, as one package.
//!
//! There is one package reader, `xmemo_core::package`, and both commands that take a
//! directory go through it: `xmemo import DIR` sends [`zip`]'s bytes to the server, which
//! reads them with `package::read_zip`; `xmemo save --dir DIR` reads the very same bytes
//! with the very same function here ([`read`]) and sends the content it yields. So the
//! frontmatter (real YAML: lists and maps stay lists and maps), the folder → component type
//! rule (case-insensitive, singular forms too), junk that is skipped, secrets and symlinks
//! that are refused, and a capsule manifest's types are decided in one place, and both
//! commands give the same `canonical_hash`.

use super::http::{Failure, fail};
use base64::Engine;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use xmemo_core::ComponentInput;
use xmemo_core::package::{self, ArchiveLimits, Package};
use xmemo_server::ServiceError;

/// The server's request body limit (`rest::BODY_LIMIT_BYTES`): larger packages are refused
/// here before anything is sent.
pub const BODY_LIMIT: usize = xmemo_server::http::limits::BODY_LIMIT_BYTES;

/// A directory zipped for import.
pub struct Zipped {
    pub bytes: Vec<u8>,
    /// The directory's own name, when it has one (the server may use it as the slug).
    pub folder: Option<String>,
}

/// The directory as the package the server would import from it.
pub fn read(dir: &Path) -> anyhow::Result<Package> {
    let meta = std::fs::metadata(dir).map_err(|e| {
        fail(Failure::input(format!(
            "cannot read the skill directory `{}`: {e} (a skill directory holds a SKILL.md)",
            dir.display()
        )))
    })?;
    if !meta.is_dir() {
        return Err(fail(Failure::input(format!(
            "`{}` is not a directory (a skill directory holds a SKILL.md; import a single file with `xmemo import FILE`)",
            dir.display()
        ))));
    }
    let zipped = zip(dir)?;
    package::read_zip(&zipped.bytes, &ArchiveLimits::default()).map_err(refused)
}

/// A package refused here is reported exactly as the server reports it on import.
fn refused(e: package::PackageError) -> anyhow::Error {
    fail(Failure::Object {
        body: ServiceError::from(e).to_body(),
    })
}

/// A component as a save request entry: text as `utf-8`, anything else (invalid UTF-8 or
/// NUL bytes) as `base64`. The server hashes the decoded bytes, so either way the
/// `content_hash` is the same.
pub fn component_json(c: &ComponentInput) -> Value {
    let (content, encoding) = match std::str::from_utf8(&c.content) {
        Ok(text) if !text.contains('\0') => (text.to_string(), "utf-8"),
        _ => (
            base64::engine::general_purpose::STANDARD.encode(&c.content),
            "base64",
        ),
    };
    json!({
        "logical_path": c.logical_path,
        "type": c.component_type.as_str(),
        "content": content,
        "encoding": encoding,
    })
}

pub fn too_large(path: &Path) -> anyhow::Error {
    fail(Failure::local(
        "PAYLOAD_TOO_LARGE",
        format!(
            "`{}` is larger than {} bytes, the most the server accepts in one import",
            path.display(),
            BODY_LIMIT
        ),
    ))
}

/// Zips a skill directory in memory: every file, symlinks included, so the package rules
/// judge them (only the junk those rules ignore anyway — `.git/`, `__MACOSX/`,
/// `.DS_Store`… — is left out); entries sorted, under `<folder>/` when the folder's name
/// can be a path, with fixed timestamps so the same directory always gives the same bytes.
pub fn zip(dir: &Path) -> anyhow::Result<Zipped> {
    use zip::write::SimpleFileOptions;
    let folder = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string));
    let prefix = folder
        .as_deref()
        .filter(|f| package::unsafe_path_reason(f).is_none())
        .map(|f| format!("{f}/"))
        .unwrap_or_default();
    let mut entries = Vec::new();
    walk(dir, "", &mut entries)?;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = |mode: u32| {
        SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(mode)
    };
    let zip_err = |e: zip::result::ZipError| {
        fail(Failure::input(format!(
            "cannot zip `{}`: {e}",
            dir.display()
        )))
    };
    let mut total: u64 = 0;
    for entry in entries {
        let name = format!("{prefix}{}", entry.relative);
        match entry.kind {
            EntryKind::Symlink(target) => writer
                .add_symlink(name, target, options(0o777))
                .map_err(zip_err)?,
            EntryKind::File { executable } => {
                let room = (BODY_LIMIT as u64).saturating_sub(total);
                let Some(bytes) = read_at_most(&entry.path, room)? else {
                    return Err(too_large(dir));
                };
                total += bytes.len() as u64;
                let mode = if executable { 0o755 } else { 0o644 };
                writer.start_file(name, options(mode)).map_err(zip_err)?;
                writer.write_all(&bytes).map_err(|e| {
                    fail(Failure::input(format!(
                        "cannot zip `{}`: {e}",
                        dir.display()
                    )))
                })?;
            }
        }
    }
    let bytes = writer.finish().map_err(zip_err)?.into_inner();
    if bytes.len() > BODY_LIMIT {
        return Err(too_large(dir));
    }
    Ok(Zipped { bytes, folder })
}

/// The bytes of the file at `path`, or `None` when it holds more than `limit`: its size is
/// checked before anything is read, and the read stops one byte past `limit` (a file can
/// grow after the check, and a special file such as `/dev/zero` reports no size at all), so
/// a huge or sparse file costs no more memory than the limit.
pub fn read_at_most(path: &Path, limit: u64) -> anyhow::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        fail(Failure::input(format!(
            "cannot read `{}`: {e}",
            path.display()
        )))
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    if size > limit {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// Every file under `dir` (symlinks included, junk and its folders left out), as
/// `(relative path, size in bytes)`, sorted: for finding the skill folders of a directory
/// before reading any of them.
pub fn listing(dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
    let mut entries = Vec::new();
    walk(dir, "", &mut entries)?;
    Ok(entries
        .into_iter()
        .map(|e| {
            let size = match e.kind {
                EntryKind::File { .. } => std::fs::metadata(&e.path).map_or(0, |m| m.len()),
                EntryKind::Symlink(_) => 0,
            };
            (e.relative, size)
        })
        .collect())
}

enum EntryKind {
    File { executable: bool },
    Symlink(String),
}

struct Entry {
    path: PathBuf,
    relative: String,
    kind: EntryKind,
}

fn walk(dir: &Path, relative: &str, out: &mut Vec<Entry>) -> anyhow::Result<()> {
    let read_err = |p: &Path, e: std::io::Error| {
        fail(Failure::input(format!(
            "cannot read `{}`: {e}",
            p.display()
        )))
    };
    let mut children: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| read_err(dir, e))? {
        let entry = entry.map_err(|e| read_err(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().into_string().map_err(|raw| {
            fail(Failure::input(format!(
                "`{}`: file names must be UTF-8 ({:?})",
                dir.display(),
                raw
            )))
        })?;
        children.push((name, path));
    }
    children.sort();
    for (name, path) in children {
        let rel = if relative.is_empty() {
            name
        } else {
            format!("{relative}/{name}")
        };
        let meta = std::fs::symlink_metadata(&path).map_err(|e| read_err(&path, e))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            // Folders the package rules ignore (`.git/`, `__MACOSX/`) are not even read.
            if !package::is_ignored_path(&format!("{rel}/x")) {
                walk(&path, &rel, out)?;
            }
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&path).map_err(|e| read_err(&path, e))?;
            out.push(Entry {
                path,
                relative: rel,
                kind: EntryKind::Symlink(target.to_string_lossy().into_owned()),
            });
        } else if kind.is_file() {
            if package::is_ignored_path(&rel) {
                continue;
            }
            #[cfg(unix)]
            let executable = {
                use std::os::unix::fs::PermissionsExt;
                meta.permissions().mode() & 0o111 != 0
            };
            #[cfg(not(unix))]
            let executable = false;
            out.push(Entry {
                path,
                relative: rel,
                kind: EntryKind::File { executable },
            });
        } else {
            return Err(fail(Failure::input(format!(
                "`{}` is not a regular file, folder or symlink (devices, pipes and sockets cannot be part of a skill)",
                path.display()
            ))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xmemo_core::ComponentType;

    fn write(path: &Path, bytes: &[u8]) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn reads_yaml_and_folder_types_like_the_server() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lists-skill");
        write(
            &dir.join("SKILL.md"),
            b"---\nname: lists-skill\ndescription: Lists\nallowed-tools: [Read, Bash]\nmetadata: {tags: [a, b]}\n---\nBody.\n",
        );
        write(&dir.join("Scripts/x.py"), b"print(1)\n");
        write(&dir.join("reference/r.md"), b"r\n");
        write(&dir.join(".DS_Store"), b"junk");
        let p = read(&dir).unwrap();
        assert_eq!(p.root_folder.as_deref(), Some("lists-skill"));
        assert_eq!(p.content.metadata["allowed-tools"], json!(["Read", "Bash"]));
        assert_eq!(p.content.metadata["metadata"], json!({"tags": ["a", "b"]}));
        let types: Vec<(&str, ComponentType)> = p
            .content
            .components
            .iter()
            .map(|c| (c.logical_path.as_str(), c.component_type))
            .collect();
        assert_eq!(
            types,
            vec![
                ("Scripts/x.py", ComponentType::Script),
                ("reference/r.md", ComponentType::Reference)
            ]
        );
        // The same bytes the server would read give the same content.
        let server_side =
            package::read_zip(&zip(&dir).unwrap().bytes, &ArchiveLimits::default()).unwrap();
        assert_eq!(server_side, p);
    }

    #[test]
    fn refusals_carry_the_server_error_object() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        write(
            &dir.join("SKILL.md"),
            b"---\nname: s\ndescription: d\n---\nB\n",
        );
        write(&dir.join(".env"), b"TOKEN=x\n");
        let e = read(&dir).unwrap_err();
        let body = Failure::json_of(&e);
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(body["error"]["details"]["reason"], "sensitive_files");
        assert!(read(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn binary_goes_as_base64() {
        let c = ComponentInput {
            logical_path: "assets/x.bin".into(),
            component_type: ComponentType::Artifact,
            content: vec![0, 159, 146, 150],
        };
        assert_eq!(component_json(&c)["encoding"], "base64");
        let t = ComponentInput {
            content: b"hello".to_vec(),
            ..c
        };
        assert_eq!(component_json(&t)["encoding"], "utf-8");
        assert_eq!(component_json(&t)["content"], "hello");
    }
}
