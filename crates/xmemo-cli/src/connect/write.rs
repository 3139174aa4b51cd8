//! Replaces a configuration file atomically: the new text goes to a temporary file beside the
//! target, is flushed to disk, and is renamed over it, so a client reading the file meanwhile
//! sees the old or the new version, never half of one. The original is copied to `<file>.bak`
//! first. A symlinked file (dotfile managers) is written through: the link stays a link.

use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Written {
    /// The file actually written (the symlink's target when `path` is a link).
    pub path: PathBuf,
    pub created: bool,
    pub backup: Option<PathBuf>,
}

/// The file `path` names, following symlinks; `path` itself when it does not exist yet.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// Writes `text` to `path`, which held `original` (`None`: the file does not exist).
pub fn replace(path: &Path, original: Option<&[u8]>, text: &str) -> std::io::Result<Written> {
    let target = resolve(path)?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let file_name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());

    let backup = match original {
        Some(bytes) => {
            let bak = dir.join(format!("{file_name}.bak"));
            write_new_file(&bak, bytes, permissions.clone())?;
            Some(bak)
        }
        None => None,
    };

    let tmp = dir.join(format!(".{file_name}.xmemo-{}.tmp", std::process::id()));
    let result = write_new_file(&tmp, text.as_bytes(), permissions)
        .and_then(|()| std::fs::rename(&tmp, &target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    // The rename is durable once the directory is flushed; not every platform can open one.
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(Written {
        path: target,
        created: original.is_none(),
        backup,
    })
}

/// Writes `bytes` to `path` (replacing it) with `permissions`, else owner-only for a file that
/// had none: a client config may later hold things its owner would not share.
fn write_new_file(
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if let Some(p) = permissions {
        std::fs::set_permissions(path, p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_keeps_a_backup_and_follows_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.json");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&real, &link).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(&real, &link).unwrap();
        let w = replace(&link, Some(b"old"), "new").unwrap();
        assert!(!w.created);
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(w.backup.unwrap()).unwrap(), "old");
        #[cfg(unix)]
        {
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn creates_missing_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/mcp.json");
        let w = replace(&path, None, "{}\n").unwrap();
        assert!(w.created && w.backup.is_none());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
    }
}
