//! What a lenient import changed, and why: every repair the package readers make is one
//! [`Repair`], returned with the package and shown to the person importing (the import
//! result's `warnings`). Nothing is repaired silently; docs/packages.md ("Repairs") lists
//! every rule with an example.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The rule that made a repair (a stable name for `warnings[].kind`, logs and counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairKind {
    /// The instructions file is named `skill.md` (any case other than `SKILL.md`).
    SkillMdFileName,
    /// No frontmatter at all: the whole file is the body.
    FrontmatterMissing,
    /// The frontmatter opens after a few leading lines (an HTML comment, a quote…).
    FrontmatterNotAtStart,
    /// `key: value` lines at the top of the file without the opening `---`.
    FrontmatterNotOpened,
    /// The opening `---` is never closed: the frontmatter ends at its first blank line.
    FrontmatterNotClosed,
    /// YAML refused the frontmatter as a whole; it was read entry by entry.
    FrontmatterLineByLine,
    /// Git merge-conflict markers inside the frontmatter whose two sides do not contradict
    /// each other: both sides were kept.
    MergeConflict,
    /// Tab characters used as indentation (YAML forbids them) read as two spaces each.
    TabIndentation,
    /// A value YAML refused (or that has no JSON form: a tag, `.inf`, a list used as a key)
    /// kept as the text written after its key.
    ValueAsText,
    /// A mapping key that YAML reads as a number or a boolean (`1:`, `true:`) kept as text.
    KeyAsText,
    /// `name` or `description` given as a number, boolean or list: kept as the text written.
    NotText,
    /// `name` missing or empty: taken from the body's first heading.
    NameFromHeading,
    /// `name` missing or empty and no heading: taken from the skill's folder name.
    NameFromFolder,
    /// `name` missing or empty, no heading, no folder: taken from the slug asked for.
    NameFromSlug,
    /// `description` missing or empty: taken from the body's first paragraph.
    DescriptionFromBody,
    /// `name` longer than SPEC §1 allows: cut at the limit.
    NameCut,
    /// `description` longer than SPEC §1 allows: cut at the limit.
    DescriptionCut,
    /// A multi-skill import: several skill folders asked for the same slug; this one was
    /// given a longer one (docs/packages.md, "Slugs in a multi-skill import").
    SlugCollision,
}

impl RepairKind {
    /// Every kind, in declaration order (tests check each has its example).
    pub const ALL: [RepairKind; 18] = [
        Self::SkillMdFileName,
        Self::FrontmatterMissing,
        Self::FrontmatterNotAtStart,
        Self::FrontmatterNotOpened,
        Self::FrontmatterNotClosed,
        Self::FrontmatterLineByLine,
        Self::MergeConflict,
        Self::TabIndentation,
        Self::ValueAsText,
        Self::KeyAsText,
        Self::NotText,
        Self::NameFromHeading,
        Self::NameFromFolder,
        Self::NameFromSlug,
        Self::DescriptionFromBody,
        Self::NameCut,
        Self::DescriptionCut,
        Self::SlugCollision,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SkillMdFileName => "skill_md_file_name",
            Self::FrontmatterMissing => "frontmatter_missing",
            Self::FrontmatterNotAtStart => "frontmatter_not_at_start",
            Self::FrontmatterNotOpened => "frontmatter_not_opened",
            Self::FrontmatterNotClosed => "frontmatter_not_closed",
            Self::FrontmatterLineByLine => "frontmatter_line_by_line",
            Self::MergeConflict => "merge_conflict",
            Self::TabIndentation => "tab_indentation",
            Self::ValueAsText => "value_as_text",
            Self::KeyAsText => "key_as_text",
            Self::NotText => "not_text",
            Self::NameFromHeading => "name_from_heading",
            Self::NameFromFolder => "name_from_folder",
            Self::NameFromSlug => "name_from_slug",
            Self::DescriptionFromBody => "description_from_body",
            Self::NameCut => "name_cut",
            Self::DescriptionCut => "description_cut",
            Self::SlugCollision => "slug_collision",
        }
    }

    /// Whether the repair shaped the revision's content (name, description, metadata, body).
    /// Slug notes only say where the content went.
    pub fn changes_content(self) -> bool {
        !matches!(self, Self::SlugCollision)
    }
}

impl fmt::Display for RepairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One repair: which field, what was wrong, what was done, and where in SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    pub kind: RepairKind,
    /// `name`, `description`, `frontmatter`, `metadata.<key>`, `SKILL.md`, `slug`.
    pub field: String,
    /// What was wrong, in the words of the rule (with YAML's own message when YAML refused).
    pub problem: String,
    /// What was done instead.
    pub action: String,
    /// The line of SKILL.md the problem is on (1-based), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

impl Repair {
    pub fn new(
        kind: RepairKind,
        field: impl Into<String>,
        problem: impl Into<String>,
        action: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            problem: problem.into(),
            action: action.into(),
            line: None,
        }
    }

    pub fn at(mut self, line: usize) -> Self {
        self.line = Some(line as u64);
        self
    }
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; {}", self.field, self.problem, self.action)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        Ok(())
    }
}
