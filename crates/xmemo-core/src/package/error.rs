//! One error type for everything that reading or writing a skill package can refuse.
//!
//! Every variant maps to exactly one SPEC §10 code ([`PackageError::code`]) and names what
//! is at fault ([`PackageError::field`]): a path inside the package (`scripts/run.py`,
//! `../x`), `SKILL.md`, `capsule.json`, `archive`, or a content field (`components`,
//! `instruction_body`, …). `From<PackageError> for ValidationError` lets a service render
//! it with the same `details.field` / `details.limit` / `details.actual` as any save.

use crate::error::{ErrorCode, ValidationError};
use serde_json::{Value, json};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackageError {
    /// Not a ZIP archive, or an entry cannot be decompressed (truncated data, bad deflate
    /// stream, CRC mismatch). `path` names the entry when one was being read.
    CorruptArchive {
        path: Option<String>,
        detail: String,
    },
    /// An absolute path, a `..`, `.` or empty segment, a backslash, a control character or
    /// a name that is not UTF-8.
    UnsafePath { path: String, reason: String },
    /// A symbolic link entry (unix mode `S_IFLNK`).
    Symlink { path: String },
    /// A device, FIFO or socket entry.
    SpecialFile { path: String },
    /// An entry with the "encrypted" flag.
    Encrypted { path: String },
    /// A compression method other than stored or deflate.
    UnsupportedCompression { path: String, method: String },
    /// The same path twice in the central directory.
    DuplicateEntries,
    /// Two paths that differ only by case, or a path that is both a file and a folder.
    PathCollision {
        path: String,
        other: String,
        reason: String,
    },
    /// More entries than [`super::ArchiveLimits::max_entries`]; `actual` is the number of
    /// entries the archive declares.
    TooManyEntries { limit: u64, actual: u64 },
    /// One entry decompressed to more than the per-entry limit (counted while reading).
    EntryTooLarge { path: String, limit: u64 },
    /// The entries together decompressed to more than the total limit (counted while
    /// reading); `path` is the entry at which reading stopped.
    ArchiveTooLarge { path: String, limit: u64 },
    /// Decompressed bytes exceed the compressed size by more than `limit`:1.
    CompressionRatio {
        path: String,
        limit: u64,
        actual: u64,
    },
    /// A file that must be text (SKILL.md, capsule.json) is not valid UTF-8.
    NotUtf8 {
        path: String,
        offset: u64,
        line: u64,
    },
    /// No SKILL.md where one is expected; `hint` says what was found instead.
    MissingSkillMd { hint: String },
    /// SKILL.md is not at the root and the files are not inside exactly one top-level
    /// folder.
    AmbiguousRoot { top_level: Vec<String> },
    /// More skill folders than one import takes
    /// ([`super::batch::MAX_SKILLS_PER_IMPORT`]).
    TooManySkills { limit: u64, actual: u64 },
    /// Files that look like secrets; every offending path is listed with its reason.
    SensitiveFiles { paths: Vec<(String, String)> },
    /// SKILL.md has no usable frontmatter (missing, unclosed, not a mapping, a value of the
    /// wrong type, an unsupported YAML feature).
    Frontmatter { reason: String },
    /// `name` or `description` missing or empty in the frontmatter.
    MissingField { field: String },
    /// The frontmatter is larger than [`super::FRONTMATTER_MAX_BYTES`] (checked before any
    /// YAML parsing).
    FrontmatterTooLarge { limit: u64, actual: u64 },
    /// The frontmatter is not valid YAML. `line`/`column` are 1-based positions in SKILL.md
    /// itself (after a BOM), when the parser reports one.
    Yaml {
        line: Option<u64>,
        column: Option<u64>,
        message: String,
    },
    /// capsule.json cannot be used as a manifest (not JSON, unknown format or version,
    /// duplicate or invalid paths).
    CapsuleInvalid { reason: String },
    /// Files that do not match capsule.json: `mismatches` lists `(path, reason)`, first by
    /// path order.
    CapsuleMismatch { mismatches: Vec<(String, String)> },
    /// Content that cannot be written as a Source Capsule or SKILL.md (e.g. a metadata key
    /// `name`, which would collide with the frontmatter's own `name`).
    NotExportable { field: String, reason: String },
    /// A SPEC §1 content rule (limits, counts, paths), as `validate_content` reports it;
    /// component fields are renamed to the component's logical path.
    Validation(ValidationError),
}

impl PackageError {
    /// The SPEC §10 code: byte-size limits are `PAYLOAD_TOO_LARGE`, everything else
    /// `VALIDATION_ERROR` (see docs/decisions.md).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::EntryTooLarge { .. }
            | Self::ArchiveTooLarge { .. }
            | Self::FrontmatterTooLarge { .. } => ErrorCode::PayloadTooLarge,
            Self::Validation(e) => e.code,
            _ => ErrorCode::ValidationError,
        }
    }

    /// A stable machine-readable name of the variant (for `details.reason`, logs, tests).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::CorruptArchive { .. } => "corrupt_archive",
            Self::UnsafePath { .. } => "unsafe_path",
            Self::Symlink { .. } => "symlink",
            Self::SpecialFile { .. } => "special_file",
            Self::Encrypted { .. } => "encrypted_entry",
            Self::UnsupportedCompression { .. } => "unsupported_compression",
            Self::DuplicateEntries => "duplicate_entries",
            Self::PathCollision { .. } => "path_collision",
            Self::TooManyEntries { .. } => "too_many_entries",
            Self::EntryTooLarge { .. } => "entry_too_large",
            Self::ArchiveTooLarge { .. } => "archive_too_large",
            Self::CompressionRatio { .. } => "compression_ratio",
            Self::NotUtf8 { .. } => "not_utf8",
            Self::MissingSkillMd { .. } => "missing_skill_md",
            Self::AmbiguousRoot { .. } => "ambiguous_root",
            Self::TooManySkills { .. } => "too_many_skills",
            Self::SensitiveFiles { .. } => "sensitive_files",
            Self::Frontmatter { .. } => "frontmatter",
            Self::MissingField { .. } => "missing_field",
            Self::FrontmatterTooLarge { .. } => "frontmatter_too_large",
            Self::Yaml { .. } => "invalid_yaml",
            Self::CapsuleInvalid { .. } => "capsule_invalid",
            Self::CapsuleMismatch { .. } => "capsule_mismatch",
            Self::NotExportable { .. } => "not_exportable",
            Self::Validation(_) => "validation",
        }
    }

    /// What is at fault: a path inside the package, `SKILL.md`, `capsule.json`, `archive`,
    /// or a content field.
    pub fn field(&self) -> String {
        match self {
            Self::CorruptArchive { path, .. } => {
                path.clone().unwrap_or_else(|| "archive".to_string())
            }
            Self::UnsafePath { path, .. }
            | Self::Symlink { path }
            | Self::SpecialFile { path }
            | Self::Encrypted { path }
            | Self::UnsupportedCompression { path, .. }
            | Self::PathCollision { path, .. }
            | Self::EntryTooLarge { path, .. }
            | Self::CompressionRatio { path, .. }
            | Self::NotUtf8 { path, .. } => path.clone(),
            Self::DuplicateEntries
            | Self::TooManyEntries { .. }
            | Self::ArchiveTooLarge { .. }
            | Self::MissingSkillMd { .. }
            | Self::AmbiguousRoot { .. }
            | Self::TooManySkills { .. } => "archive".to_string(),
            Self::SensitiveFiles { paths } => paths
                .first()
                .map(|(p, _)| p.clone())
                .unwrap_or_else(|| "archive".to_string()),
            Self::Frontmatter { .. } | Self::FrontmatterTooLarge { .. } | Self::Yaml { .. } => {
                "SKILL.md".to_string()
            }
            Self::MissingField { field } => field.clone(),
            Self::CapsuleInvalid { .. } => "capsule.json".to_string(),
            Self::CapsuleMismatch { mismatches } => mismatches
                .first()
                .map(|(p, _)| p.clone())
                .unwrap_or_else(|| "capsule.json".to_string()),
            Self::NotExportable { field, .. } => field.clone(),
            Self::Validation(e) => e.field.clone(),
        }
    }

    /// The limit that was exceeded, when the error is about a number.
    pub fn limit(&self) -> Option<u64> {
        match self {
            Self::TooManyEntries { limit, .. }
            | Self::EntryTooLarge { limit, .. }
            | Self::ArchiveTooLarge { limit, .. }
            | Self::CompressionRatio { limit, .. }
            | Self::TooManySkills { limit, .. }
            | Self::FrontmatterTooLarge { limit, .. } => Some(*limit),
            Self::Validation(e) => e.limit,
            _ => None,
        }
    }

    /// The actual number, when known. For streamed size limits it is not: reading stops one
    /// byte past the limit, so `actual` is absent and the message says "more than".
    pub fn actual(&self) -> Option<u64> {
        match self {
            Self::TooManyEntries { actual, .. }
            | Self::TooManySkills { actual, .. }
            | Self::CompressionRatio { actual, .. }
            | Self::FrontmatterTooLarge { actual, .. } => Some(*actual),
            Self::Validation(e) => e.actual,
            _ => None,
        }
    }

    /// Every path the error names (sensitive files, capsule mismatches, collisions…).
    pub fn paths(&self) -> Vec<String> {
        match self {
            Self::SensitiveFiles { paths } => paths.iter().map(|(p, _)| p.clone()).collect(),
            Self::CapsuleMismatch { mismatches } => {
                mismatches.iter().map(|(p, _)| p.clone()).collect()
            }
            Self::PathCollision { path, other, .. } => vec![path.clone(), other.clone()],
            Self::AmbiguousRoot { top_level } => top_level.clone(),
            _ => vec![self.field()],
        }
    }

    /// A JSON object for `error.details`: `field`, `reason` (the [`kind`](Self::kind)),
    /// `limit`/`actual` when known, `paths` when several, `line`/`column` for YAML errors.
    pub fn details(&self) -> Value {
        let mut d = json!({ "field": self.field(), "reason": self.kind() });
        if let Some(obj) = d.as_object_mut() {
            if let Some(limit) = self.limit() {
                obj.insert("limit".into(), limit.into());
            }
            if let Some(actual) = self.actual() {
                obj.insert("actual".into(), actual.into());
            }
            match self {
                Self::SensitiveFiles { .. }
                | Self::CapsuleMismatch { .. }
                | Self::PathCollision { .. }
                | Self::AmbiguousRoot { .. } => {
                    obj.insert("paths".into(), json!(self.paths()));
                }
                Self::Yaml { line, column, .. } => {
                    obj.insert("line".into(), json!(line));
                    obj.insert("column".into(), json!(column));
                }
                _ => {}
            }
        }
        d
    }

    /// The message without the leading `field: ` (which `Display` adds).
    pub fn message(&self) -> String {
        match self {
            Self::CorruptArchive { path: _, detail } => {
                format!("the archive cannot be read: {detail}")
            }
            Self::UnsafePath { reason, .. } => format!("unsafe path: {reason}"),
            Self::Symlink { .. } => "symbolic links are not allowed in a skill package".into(),
            Self::SpecialFile { .. } => {
                "special files (devices, pipes, sockets) are not allowed in a skill package".into()
            }
            Self::Encrypted { .. } => {
                "encrypted (password-protected) entries are not supported".into()
            }
            Self::UnsupportedCompression { method, .. } => {
                format!("compression method {method} is not supported (use stored or deflate)")
            }
            Self::DuplicateEntries => "the archive lists the same path more than once".into(),
            Self::PathCollision { other, reason, .. } => format!("{reason} `{other}`"),
            Self::TooManyEntries { limit, actual } => {
                format!("at most {limit} archive entries allowed, got {actual}")
            }
            Self::EntryTooLarge { limit, .. } => {
                format!("decompresses to more than {limit} bytes (the per-file limit)")
            }
            Self::ArchiveTooLarge { path, limit } => format!(
                "the files decompress to more than {limit} bytes in total (stopped at `{path}`)"
            ),
            Self::CompressionRatio { limit, actual, .. } => format!(
                "compression ratio {actual}:1 exceeds {limit}:1 (refused as a possible zip bomb)"
            ),
            Self::NotUtf8 { offset, line, .. } => {
                format!("is not valid UTF-8 (byte {offset}, line {line})")
            }
            Self::MissingSkillMd { hint } => {
                let mut m = "no SKILL.md at the package root or inside a single top-level folder"
                    .to_string();
                if !hint.is_empty() {
                    m.push_str("; ");
                    m.push_str(hint);
                }
                m
            }
            Self::AmbiguousRoot { top_level } => format!(
                "SKILL.md must be at the archive root or inside exactly one top-level folder; \
                 found at the top level: {}",
                top_level.join(", ")
            ),
            Self::TooManySkills { limit, actual } => format!(
                "the import holds {actual} skill folders, at most {limit} are imported in one \
                 request: import its folders one at a time (a repository's `/tree/REF/PATH` \
                 URL, `xmemo import DIR`, which sends one skill per request)"
            ),
            Self::SensitiveFiles { paths } => format!(
                "sensitive files are never imported, remove them and retry: {}",
                paths
                    .iter()
                    .map(|(p, why)| format!("{p} ({why})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::Frontmatter { reason } => reason.clone(),
            Self::MissingField { field } => format!(
                "SKILL.md frontmatter must have a non-empty `{field}` (Agent Skills: name and \
                 description are required)"
            ),
            Self::FrontmatterTooLarge { limit, actual } => {
                format!("the YAML frontmatter is {actual} bytes, at most {limit} bytes allowed")
            }
            Self::Yaml {
                line,
                column,
                message,
            } => match (line, column) {
                (Some(l), Some(c)) => {
                    format!("invalid YAML frontmatter at line {l}, column {c}: {message}")
                }
                _ => format!("invalid YAML frontmatter: {message}"),
            },
            Self::CapsuleInvalid { reason } => {
                format!("not a usable Source Capsule manifest: {reason}")
            }
            Self::CapsuleMismatch { mismatches } => format!(
                "the package does not match capsule.json: {}",
                mismatches
                    .iter()
                    .map(|(p, why)| format!("{p} ({why})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::NotExportable { reason, .. } => reason.clone(),
            Self::Validation(e) => e.message.clone(),
        }
    }

    pub(crate) fn corrupt(path: Option<&str>, detail: impl fmt::Display) -> Self {
        Self::CorruptArchive {
            path: path.map(str::to_string),
            detail: detail.to_string(),
        }
    }

    pub(crate) fn unsafe_path(path: &str, reason: impl Into<String>) -> Self {
        Self::UnsafePath {
            path: path.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn frontmatter(reason: impl Into<String>) -> Self {
        Self::Frontmatter {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for PackageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.message())
    }
}

impl std::error::Error for PackageError {}

impl From<ValidationError> for PackageError {
    fn from(e: ValidationError) -> Self {
        Self::Validation(e)
    }
}

impl From<PackageError> for ValidationError {
    fn from(e: PackageError) -> Self {
        match e {
            PackageError::Validation(v) => v,
            other => ValidationError {
                code: other.code(),
                field: other.field(),
                message: other.message(),
                limit: other.limit(),
                actual: other.actual(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_fields_and_conversion() {
        let e = PackageError::EntryTooLarge {
            path: "a.bin".into(),
            limit: 10,
        };
        assert_eq!(e.code(), ErrorCode::PayloadTooLarge);
        assert_eq!(e.field(), "a.bin");
        assert!(e.to_string().starts_with("a.bin: "));
        let v: ValidationError = e.into();
        assert_eq!(v.code, ErrorCode::PayloadTooLarge);
        assert_eq!((v.field.as_str(), v.limit), ("a.bin", Some(10)));

        let e = PackageError::SensitiveFiles {
            paths: vec![
                (".env".into(), "environment file".into()),
                ("id_rsa".into(), "SSH private key".into()),
            ],
        };
        assert_eq!(e.code(), ErrorCode::ValidationError);
        assert!(e.to_string().contains(".env") && e.to_string().contains("id_rsa"));
        assert_eq!(e.details()["paths"], json!([".env", "id_rsa"]));

        let inner = ValidationError::too_many("components", "components", 50, 65);
        let e = PackageError::from(inner.clone());
        assert_eq!(ValidationError::from(e), inner);
    }
}
