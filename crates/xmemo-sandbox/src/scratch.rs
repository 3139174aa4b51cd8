//! Per-run scratch directories: created private, filled, handed to the run's uid read-only,
//! and always removed (on drop, whatever happened).
//!
//! Layout of `<scratch_root>/xmemo-run-XXXXXX/` (mode 0500, owned by the run's uid):
//! - `skill/`: the run's files (dirs 0500, files 0400), mounted read-only at `/skill`;
//! - `etc/passwd`, `etc/group`: minimal name databases mounted at `/etc/passwd|group`;
//! - `tmp/` (unsafe local fallback only, 0700): HOME and TMPDIR of the process.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::SandboxFile;

/// A run's scratch directory; removed on drop.
#[derive(Debug)]
pub struct ScratchDir {
    root: PathBuf,
    removed: bool,
}

impl ScratchDir {
    /// Creates the directory, writes `files` and the name databases, then gives it to
    /// `owner` (uid, gid) — or keeps the current owner — with read-only modes.
    pub fn create(
        scratch_root: &Path,
        files: &[SandboxFile],
        owner: Option<(u32, u32)>,
        with_tmp: bool,
    ) -> io::Result<Self> {
        let root = tempfile::Builder::new()
            .prefix("xmemo-run-")
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(scratch_root)?
            .keep();
        let scratch = ScratchDir {
            root,
            removed: false,
        };
        scratch.fill(files, owner, with_tmp)?;
        Ok(scratch)
    }

    fn fill(
        &self,
        files: &[SandboxFile],
        owner: Option<(u32, u32)>,
        with_tmp: bool,
    ) -> io::Result<()> {
        let skill = self.skill_dir();
        fs::create_dir(&skill)?;
        for file in files {
            // Paths were validated as plain relative components.
            let target = skill.join(&file.path);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            let mut out = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&target)?;
            out.write_all(&file.bytes)?;
        }
        let (uid, gid) = owner.unwrap_or_else(current_ids);
        let etc = self.root.join("etc");
        fs::create_dir(&etc)?;
        fs::write(etc.join("passwd"), passwd(uid, gid))?;
        fs::write(etc.join("group"), group(gid))?;
        if with_tmp {
            fs::create_dir(self.tmp_dir())?;
        }
        // Hand over: everything owned by the run's uid, read-only modes.
        set_tree(&skill, owner, 0o500, 0o400)?;
        set_tree(&etc, owner, 0o555, 0o444)?;
        if with_tmp {
            chown(&self.tmp_dir(), owner)?;
            fs::set_permissions(self.tmp_dir(), fs::Permissions::from_mode(0o700))?;
        }
        chown(&self.root, owner)?;
        fs::set_permissions(&self.root, fs::Permissions::from_mode(0o500))?;
        Ok(())
    }

    /// The scratch directory itself.
    #[cfg(test)]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the run's files are (`/skill` inside the sandbox).
    pub fn skill_dir(&self) -> PathBuf {
        self.root.join("skill")
    }

    /// Minimal `/etc/passwd`.
    pub fn passwd(&self) -> PathBuf {
        self.root.join("etc/passwd")
    }

    /// Minimal `/etc/group`.
    pub fn group(&self) -> PathBuf {
        self.root.join("etc/group")
    }

    /// Private HOME/TMPDIR for the unsafe local fallback.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Removes the directory (idempotent).
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        make_removable(&self.root);
        let result = match fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        if result.is_ok() {
            self.removed = true;
        }
        result
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(error) = self.remove() {
            tracing::error!(dir = %self.root.display(), %error, "could not remove a run scratch directory");
        }
    }
}

fn current_ids() -> (u32, u32) {
    // SAFETY: geteuid/getegid have no preconditions.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

fn passwd(uid: u32, gid: u32) -> String {
    format!(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         sandbox:x:{uid}:{gid}:xmemo sandbox:/tmp:/usr/sbin/nologin\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
}

fn group(gid: u32) -> String {
    format!("root:x:0:\nsandbox:x:{gid}:\nnogroup:x:65534:\n")
}

fn chown(path: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
    match owner {
        Some((uid, gid)) => std::os::unix::fs::lchown(path, Some(uid), Some(gid)),
        None => Ok(()),
    }
}

/// Chowns and chmods a tree we created (no symlinks in it): dirs get `dir_mode`, files
/// `file_mode`. Children first, so read-only parents do not block.
fn set_tree(
    path: &Path,
    owner: Option<(u32, u32)>,
    dir_mode: u32,
    file_mode: u32,
) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.is_dir() {
        for entry in fs::read_dir(path)? {
            set_tree(&entry?.path(), owner, dir_mode, file_mode)?;
        }
        chown(path, owner)?;
        fs::set_permissions(path, fs::Permissions::from_mode(dir_mode))
    } else if meta.is_file() {
        chown(path, owner)?;
        fs::set_permissions(path, fs::Permissions::from_mode(file_mode))
    } else {
        Err(io::Error::other(format!(
            "unexpected file type in scratch: {}",
            path.display()
        )))
    }
}

/// Gives the owner write access to every directory (without following symlinks), so a
/// non-root server can delete a tree whose directories are read-only (or were made
/// unreadable by the script in its private tmp).
fn make_removable(path: &Path) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o700));
        if let Ok(entries) = fs::read_dir(path) {
            for entry in entries.flatten() {
                make_removable(&entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn files() -> Vec<SandboxFile> {
        vec![
            SandboxFile {
                path: "main.py".into(),
                bytes: b"print(1)".to_vec(),
            },
            SandboxFile {
                path: "lib/util.py".into(),
                bytes: b"X = 1".to_vec(),
            },
        ]
    }

    #[test]
    fn creates_read_only_tree_and_removes_it() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut scratch = ScratchDir::create(root.path(), &files(), None, true).expect("scratch");
        let main = scratch.skill_dir().join("main.py");
        assert_eq!(fs::read(&main).expect("read"), b"print(1)");
        assert_eq!(fs::metadata(&main).expect("meta").mode() & 0o777, 0o400);
        assert_eq!(
            fs::metadata(scratch.skill_dir().join("lib"))
                .expect("meta")
                .mode()
                & 0o777,
            0o500
        );
        assert_eq!(
            fs::metadata(scratch.root()).expect("meta").mode() & 0o777,
            0o500
        );
        assert!(
            fs::read_to_string(scratch.passwd())
                .expect("passwd")
                .contains("sandbox:x:")
        );
        assert!(scratch.tmp_dir().is_dir());
        let path = scratch.root().to_path_buf();
        scratch.remove().expect("remove");
        assert!(!path.exists());
        drop(scratch);
    }

    #[test]
    fn drop_removes() {
        let root = tempfile::tempdir().expect("tempdir");
        let scratch = ScratchDir::create(root.path(), &files(), None, false).expect("scratch");
        let path = scratch.root().to_path_buf();
        assert!(path.exists());
        drop(scratch);
        assert!(!path.exists());
    }
}
