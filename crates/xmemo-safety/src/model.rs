//! The public data model: what goes in ([`ScanFile`]) and what comes out ([`Report`]).

use serde::{Deserialize, Serialize};

/// One file of a skill package, as bytes. `path` is the package-relative path with `/`
/// separators (`"SKILL.md"`, `"scripts/run.sh"`); the scanner never opens it.
#[derive(Clone, Copy, Debug)]
pub struct ScanFile<'a> {
    pub path: &'a str,
    pub bytes: &'a [u8],
}

/// How bad one finding is on its own.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// Moves the severity `by` steps (negative: down), clamped to `Low..=Critical`.
    pub fn shifted(self, by: i8) -> Severity {
        let i = (self as i8 + by).clamp(0, 3);
        match i {
            0 => Severity::Low,
            1 => Severity::Medium,
            2 => Severity::High,
            _ => Severity::Critical,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// The risk of a whole scan: the highest severity found, raised by dangerous combinations.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    None,
    Low,
    Medium,
    High,
    Critical,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::None => "none",
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

impl From<Severity> for Risk {
    fn from(s: Severity) -> Risk {
        match s {
            Severity::Low => Risk::Low,
            Severity::Medium => Risk::Medium,
            Severity::High => Risk::High,
            Severity::Critical => Risk::Critical,
        }
    }
}

/// The verdict of a scan.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing, or only low findings (listed for the record).
    Clean,
    /// Something a human should look at before the skill is trusted.
    Suspicious,
    /// A payload or a combination that only makes sense as an attack.
    Malicious,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Suspicious => "suspicious",
            Verdict::Malicious => "malicious",
        }
    }
}

/// One rule that fired at one place.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Stable rule id, `category.name` (see [`crate::rules::catalog`]).
    pub rule_id: String,
    pub severity: Severity,
    /// The scanned file's path as given in [`ScanFile::path`] (`"memory"` for a memory).
    pub file: String,
    /// 1-based line number.
    pub line: u32,
    /// At most [`crate::excerpt::MAX_EXCERPT_CHARS`] characters around the match; control,
    /// invisible and bidi characters are written as `<U+XXXX>`.
    pub excerpt: String,
    /// One sentence: what to do about it.
    pub remediation: String,
}

/// The result of one scan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub verdict: Verdict,
    pub risk: Risk,
    /// [`crate::RULES_VERSION`] at the time of the scan.
    pub rules_version: String,
    /// Ordered by file (in input order), then line, then rule id.
    pub findings: Vec<Finding>,
}
