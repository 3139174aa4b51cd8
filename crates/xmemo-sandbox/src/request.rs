//! What a caller asks the engine to run, and its validation.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::SandboxError;

/// Smallest accepted timeout.
pub const MIN_TIMEOUT: Duration = Duration::from_secs(1);
/// Largest accepted timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Accepted memory range (bytes).
pub const MEMORY_RANGE: (u64, u64) = (16 << 20, 8 << 30);
/// Accepted CPU range (millicores).
pub const CPU_RANGE: (u32, u32) = (10, 64_000);
/// Accepted process range.
pub const PROCESS_RANGE: (u32, u32) = (1, 4096);
/// Accepted per-stream output cap range (bytes).
pub const OUTPUT_RANGE: (usize, usize) = (1, 64 << 20);
/// Largest stdin accepted.
pub const MAX_STDIN_BYTES: usize = 16 << 20;
/// Largest number of files in one run.
pub const MAX_FILES: usize = 4096;
/// Largest total size of the run's files.
pub const MAX_TOTAL_FILE_BYTES: u64 = 64 << 20;
/// Largest relative path accepted.
pub const MAX_PATH_LEN: usize = 1024;

/// One file of the run, placed read-only under the sandbox's scratch path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFile {
    /// Relative POSIX path (`a/b.py`): no leading `/`, no `.`/`..`/empty components, no NUL.
    pub path: String,
    /// File content.
    pub bytes: Vec<u8>,
}

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionLimits {
    /// Wall-clock limit, 1 s ..= 60 s (default 30 s).
    pub timeout: Duration,
    /// Memory limit in bytes (default 256 MiB).
    pub memory_bytes: u64,
    /// CPU bandwidth in thousandths of a core (default 500 = half a core).
    pub cpu_millicores: u32,
    /// Processes (threads count too) the script may have at once (default 32). The sandbox's
    /// own two supervisor processes (bwrap and its init) are not counted against it.
    pub max_processes: u32,
    /// Bytes kept per stream (stdout, stderr); the rest is drained and counted (default 1 MiB).
    pub max_output_bytes: usize,
}

impl Default for ExecutionLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            memory_bytes: 256 << 20,
            cpu_millicores: 500,
            max_processes: 32,
            max_output_bytes: 1 << 20,
        }
    }
}

impl ExecutionLimits {
    /// Checks every limit against its accepted range.
    pub fn validate(&self) -> Result<(), SandboxError> {
        let bad = |what: String| Err(SandboxError::InvalidRequest(what));
        if self.timeout < MIN_TIMEOUT || self.timeout > MAX_TIMEOUT {
            return bad(format!(
                "timeout must be between 1 and 60 seconds, got {:?}",
                self.timeout
            ));
        }
        if !(MEMORY_RANGE.0..=MEMORY_RANGE.1).contains(&self.memory_bytes) {
            return bad(format!(
                "memory_bytes must be between {} and {}, got {}",
                MEMORY_RANGE.0, MEMORY_RANGE.1, self.memory_bytes
            ));
        }
        if !(CPU_RANGE.0..=CPU_RANGE.1).contains(&self.cpu_millicores) {
            return bad(format!(
                "cpu_millicores must be between {} and {}, got {}",
                CPU_RANGE.0, CPU_RANGE.1, self.cpu_millicores
            ));
        }
        if !(PROCESS_RANGE.0..=PROCESS_RANGE.1).contains(&self.max_processes) {
            return bad(format!(
                "max_processes must be between {} and {}, got {}",
                PROCESS_RANGE.0, PROCESS_RANGE.1, self.max_processes
            ));
        }
        if !(OUTPUT_RANGE.0..=OUTPUT_RANGE.1).contains(&self.max_output_bytes) {
            return bad(format!(
                "max_output_bytes must be between {} and {}, got {}",
                OUTPUT_RANGE.0, OUTPUT_RANGE.1, self.max_output_bytes
            ));
        }
        Ok(())
    }
}

/// One run: the files, which of them to execute, its stdin and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRequest {
    /// Files placed read-only in the sandbox's scratch directory (`/skill`).
    pub files: Vec<SandboxFile>,
    /// Path (one of `files`) of the entry script.
    pub entry: String,
    /// Bytes given on stdin (typically JSON).
    pub stdin: Vec<u8>,
    /// Limits of this run.
    pub limits: ExecutionLimits,
}

impl RunRequest {
    /// Validates limits, paths and sizes; returns the entry file's bytes.
    pub fn validate(&self) -> Result<&[u8], SandboxError> {
        self.limits.validate()?;
        if self.stdin.len() > MAX_STDIN_BYTES {
            return Err(SandboxError::InvalidRequest(format!(
                "stdin is larger than {MAX_STDIN_BYTES} bytes"
            )));
        }
        if self.files.len() > MAX_FILES {
            return Err(SandboxError::InvalidRequest(format!(
                "more than {MAX_FILES} files"
            )));
        }
        let total: u64 = self.files.iter().map(|f| f.bytes.len() as u64).sum();
        if total > MAX_TOTAL_FILE_BYTES {
            return Err(SandboxError::InvalidRequest(format!(
                "files are larger than {MAX_TOTAL_FILE_BYTES} bytes in total"
            )));
        }
        let mut seen = BTreeSet::new();
        for file in &self.files {
            validate_relative_path(&file.path)?;
            if !seen.insert(file.path.as_str()) {
                return Err(SandboxError::InvalidRequest(format!(
                    "duplicate file path {:?}",
                    file.path
                )));
            }
        }
        // A file may not also be a directory of another file ("a" and "a/b").
        for file in &self.files {
            let mut prefix = String::new();
            for component in file.path.split('/') {
                if !prefix.is_empty() && seen.contains(prefix.as_str()) {
                    return Err(SandboxError::InvalidRequest(format!(
                        "{:?} is both a file and a directory",
                        prefix
                    )));
                }
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(component);
            }
        }
        validate_relative_path(&self.entry)?;
        self.files
            .iter()
            .find(|f| f.path == self.entry)
            .map(|f| f.bytes.as_slice())
            .ok_or_else(|| {
                SandboxError::InvalidRequest(format!(
                    "entry {:?} is not one of the run's files",
                    self.entry
                ))
            })
    }
}

/// Accepts only relative POSIX paths whose components are plain names.
pub fn validate_relative_path(path: &str) -> Result<(), SandboxError> {
    let bad = |why: &str| {
        Err(SandboxError::InvalidRequest(format!(
            "file path {path:?} {why}"
        )))
    };
    if path.is_empty() {
        return bad("is empty");
    }
    if path.len() > MAX_PATH_LEN {
        return bad("is too long");
    }
    if path.starts_with('/') {
        return bad("must be relative");
    }
    if path.contains('\0') {
        return bad("contains NUL");
    }
    if path.contains('\\') {
        return bad("contains a backslash (POSIX paths only)");
    }
    for component in path.split('/') {
        match component {
            "" => return bad("has an empty component"),
            "." | ".." => return bad("has a '.' or '..' component"),
            c if c.len() > 255 => return bad("has a component longer than 255 bytes"),
            c if c.chars().any(char::is_control) => return bad("contains control characters"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(paths: &[&str], entry: &str) -> RunRequest {
        RunRequest {
            files: paths
                .iter()
                .map(|p| SandboxFile {
                    path: (*p).to_owned(),
                    bytes: b"print(1)".to_vec(),
                })
                .collect(),
            entry: entry.to_owned(),
            stdin: Vec::new(),
            limits: ExecutionLimits::default(),
        }
    }

    #[test]
    fn default_limits_are_the_spec_defaults_and_valid() {
        let limits = ExecutionLimits::default();
        assert_eq!(limits.timeout, Duration::from_secs(30));
        assert_eq!(limits.memory_bytes, 256 * 1024 * 1024);
        assert_eq!(limits.cpu_millicores, 500);
        assert_eq!(limits.max_processes, 32);
        assert_eq!(limits.max_output_bytes, 1024 * 1024);
        assert!(limits.validate().is_ok());
    }

    #[test]
    fn timeout_bounds() {
        for (secs, ok) in [(0, false), (1, true), (60, true), (61, false)] {
            let limits = ExecutionLimits {
                timeout: Duration::from_secs(secs),
                ..ExecutionLimits::default()
            };
            assert_eq!(limits.validate().is_ok(), ok, "{secs}s");
        }
        let limits = ExecutionLimits {
            timeout: Duration::from_millis(999),
            ..ExecutionLimits::default()
        };
        assert!(limits.validate().is_err());
    }

    #[test]
    fn other_limit_bounds() {
        let base = ExecutionLimits::default();
        let cases = [
            ExecutionLimits {
                memory_bytes: 1,
                ..base.clone()
            },
            ExecutionLimits {
                cpu_millicores: 0,
                ..base.clone()
            },
            ExecutionLimits {
                max_processes: 0,
                ..base.clone()
            },
            ExecutionLimits {
                max_output_bytes: 0,
                ..base.clone()
            },
            ExecutionLimits {
                memory_bytes: u64::MAX,
                ..base.clone()
            },
        ];
        for case in cases {
            assert!(
                matches!(case.validate(), Err(SandboxError::InvalidRequest(_))),
                "{case:?}"
            );
        }
    }

    #[test]
    fn paths_must_be_plain_relative() {
        for bad in [
            "",
            "/etc/passwd",
            "../x.py",
            "a/../../x",
            "a//b",
            "./a",
            "a/.",
            "a\0b",
            "a\\b",
            "a\nb",
        ] {
            assert!(validate_relative_path(bad).is_err(), "{bad:?}");
        }
        for good in [
            "main.py",
            "scripts/run.sh",
            ".hidden",
            "a b/c-d_e.py",
            "..a",
        ] {
            assert!(validate_relative_path(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn entry_must_be_a_file_and_paths_unique() {
        assert!(request(&["a.py"], "a.py").validate().is_ok());
        assert!(request(&["a.py"], "b.py").validate().is_err());
        assert!(request(&["a.py", "a.py"], "a.py").validate().is_err());
        assert!(request(&["a", "a/b.py"], "a/b.py").validate().is_err());
        assert!(request(&["a/b.py", "a/c.py"], "a/b.py").validate().is_ok());
    }
}
