//! One scanned file cut into lines, each knowing where it stands: frontmatter, prose, a fenced
//! code block (and which), a script, data. Backslash-continued shell lines are joined into
//! logical lines so `curl … \` + `| sh` is one command.

/// The most of one file that is read; the rest is ignored (hostile huge files stay cheap).
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// What a file is, from its path (and a shebang).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// SKILL.md and other Markdown / text: instructions an agent reads.
    Instructions,
    /// An executable component: judged most strictly.
    Script,
    /// Configuration and other text (JSON, YAML, HTML…).
    Data,
}

/// Where a line stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    Frontmatter,
    Prose,
    /// Inside a fenced code block of an instructions file (an agent may run it).
    Code,
    Script,
    Data,
}

impl Zone {
    /// Index into a rule's per-zone severity table: prose, code, script.
    pub fn strictness(self) -> usize {
        match self {
            Zone::Prose => 0,
            Zone::Frontmatter | Zone::Code | Zone::Data => 1,
            Zone::Script => 2,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Line<'a> {
    pub text: &'a str,
    pub zone: Zone,
    /// Index of the fenced code block this line is in (fence lines included).
    pub block: Option<usize>,
    /// A fence line (```), a heading, or a comment line in code / scripts.
    pub is_fence: bool,
    pub heading: Option<(usize, &'a str)>,
    pub is_comment: bool,
}

#[derive(Clone, Debug)]
pub struct Block<'a> {
    /// Line index of the opening fence.
    pub open: usize,
    pub lang: &'a str,
}

/// A logical line: one or more physical lines joined where a shell line ends with `\`.
#[derive(Clone, Debug)]
pub struct Logical {
    /// Index of its first physical line.
    pub first: usize,
    /// The joined text.
    pub text: String,
    /// For each physical line after the first: the byte offset in `text` where it starts.
    pub breaks: Vec<usize>,
}

impl Logical {
    /// The physical line index holding byte `pos` of `text`.
    pub fn line_of(&self, pos: usize) -> usize {
        self.first + self.breaks.iter().take_while(|b| **b <= pos).count()
    }
}

#[derive(Clone, Debug)]
pub struct Doc<'a> {
    pub path: &'a str,
    pub kind: FileKind,
    pub text: &'a str,
    pub lines: Vec<Line<'a>>,
    pub blocks: Vec<Block<'a>>,
    /// True for the skill's own SKILL.md.
    pub is_skill_md: bool,
}

/// Lower-case extension of a path's last segment ("" when none).
pub fn extension(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}

pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

pub fn is_skill_md(path: &str) -> bool {
    file_name(path).eq_ignore_ascii_case("skill.md")
}

/// Classifies a file by its name, then by a shebang.
pub fn kind_of(path: &str, text: &str) -> FileKind {
    const SCRIPT: &[&str] = &[
        "sh",
        "bash",
        "zsh",
        "ksh",
        "fish",
        "command",
        "py",
        "pyw",
        "js",
        "mjs",
        "cjs",
        "ts",
        "mts",
        "cts",
        "jsx",
        "tsx",
        "ps1",
        "psm1",
        "psd1",
        "bat",
        "cmd",
        "vbs",
        "rb",
        "pl",
        "pm",
        "php",
        "lua",
        "go",
        "rs",
        "java",
        "kt",
        "swift",
        "r",
        "applescript",
        "scpt",
        "awk",
    ];
    const PROSE: &[&str] = &["md", "markdown", "mdx", "txt", "rst", "text", ""];
    let ext = extension(path);
    let name = file_name(path).to_ascii_lowercase();
    if text.starts_with("#!") {
        return FileKind::Script;
    }
    if SCRIPT.contains(&ext.as_str()) || name == "makefile" || name == "dockerfile" {
        return FileKind::Script;
    }
    if PROSE.contains(&ext.as_str()) {
        return FileKind::Instructions;
    }
    FileKind::Data
}

/// The comment leader of a script language, for comment lines.
fn comment_leaders(ext: &str) -> &'static [&'static str] {
    match ext {
        "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx" | "go" | "rs" | "java"
        | "kt" | "swift" => &["//", "/*", "*"],
        "php" => &["//", "#", "/*", "*"],
        "lua" => &["--"],
        "bat" | "cmd" => &["rem ", "::", "REM "],
        "vbs" => &["'"],
        _ => &["#"],
    }
}

/// Comment leaders inside a fenced block, by its language tag (any of them when unknown).
fn block_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#') && !t.starts_with("#!") || t.starts_with("//") || t.starts_with("-- ")
}

/// Parses `text` (already cut to [`MAX_FILE_BYTES`]) as the file at `path`.
pub fn parse<'a>(path: &'a str, text: &'a str, kind: FileKind) -> Doc<'a> {
    let mut lines = Vec::new();
    let mut blocks = Vec::new();
    let raw: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // A trailing newline makes no extra line.
    let n = if text.ends_with('\n') {
        raw.len().saturating_sub(1)
    } else {
        raw.len()
    };
    match kind {
        FileKind::Instructions => {
            let fm_end = frontmatter_end(&raw[..n]);
            let mut fence: Option<(char, usize)> = None;
            for (i, l) in raw[..n].iter().enumerate() {
                if let Some(end) = fm_end
                    && i <= end
                {
                    lines.push(Line {
                        text: l,
                        zone: Zone::Frontmatter,
                        block: None,
                        is_fence: i == 0 || i == end,
                        heading: None,
                        is_comment: false,
                    });
                    continue;
                }
                let t = l.trim_start();
                let indent = l.len() - t.len();
                if let Some((fc, flen)) = fence {
                    let closes = indent < 4
                        && t.starts_with(fc)
                        && t.chars().take_while(|c| *c == fc).count() >= flen
                        && t.trim_start_matches(fc).trim().is_empty();
                    lines.push(Line {
                        text: l,
                        zone: Zone::Code,
                        block: Some(blocks.len() - 1),
                        is_fence: closes,
                        heading: None,
                        is_comment: !closes && block_comment(l),
                    });
                    if closes {
                        fence = None;
                    }
                    continue;
                }
                if indent < 4 && (t.starts_with("```") || t.starts_with("~~~")) {
                    let fc = t.chars().next().unwrap_or('`');
                    let flen = t.chars().take_while(|c| *c == fc).count();
                    let lang = t.trim_start_matches(fc).trim();
                    fence = Some((fc, flen));
                    blocks.push(Block { open: i, lang });
                    lines.push(Line {
                        text: l,
                        zone: Zone::Code,
                        block: Some(blocks.len() - 1),
                        is_fence: true,
                        heading: None,
                        is_comment: false,
                    });
                    continue;
                }
                let heading = atx_heading(t).filter(|_| indent < 4);
                lines.push(Line {
                    text: l,
                    zone: Zone::Prose,
                    block: None,
                    is_fence: false,
                    heading,
                    is_comment: false,
                });
            }
        }
        FileKind::Script | FileKind::Data => {
            let leaders = comment_leaders(&extension(path));
            let zone = if kind == FileKind::Script {
                Zone::Script
            } else {
                Zone::Data
            };
            for l in &raw[..n] {
                let t = l.trim_start();
                let is_comment =
                    kind == FileKind::Script && leaders.iter().any(|p| t.starts_with(p));
                lines.push(Line {
                    text: l,
                    zone,
                    block: None,
                    is_fence: false,
                    heading: None,
                    is_comment: is_comment && !t.starts_with("#!"),
                });
            }
        }
    }
    Doc {
        path,
        kind,
        text,
        lines,
        blocks,
        is_skill_md: is_skill_md(path),
    }
}

/// The line index of the closing `---` of a leading YAML frontmatter.
fn frontmatter_end(lines: &[&str]) -> Option<usize> {
    let first = lines.first()?.trim_start_matches('\u{FEFF}').trim_end();
    if first != "---" {
        return None;
    }
    lines
        .iter()
        .enumerate()
        .skip(1)
        .take(400)
        .find(|(_, l)| {
            let t = l.trim_end();
            t == "---" || t == "..."
        })
        .map(|(i, _)| i)
}

fn atx_heading(t: &str) -> Option<(usize, &str)> {
    let level = t.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with(' ') && !rest.starts_with('\t') {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim()))
}

/// The logical lines of a document: in code and scripts, a line ending with `\` continues
/// on the next (at most 40 lines joined).
pub fn logical_lines(doc: &Doc<'_>) -> Vec<Logical> {
    let mut out = Vec::with_capacity(doc.lines.len());
    let mut i = 0;
    while i < doc.lines.len() {
        let l = &doc.lines[i];
        let joinable = matches!(l.zone, Zone::Code | Zone::Script | Zone::Data) && !l.is_fence;
        let mut text = String::from(l.text);
        let mut breaks = Vec::new();
        let first = i;
        i += 1;
        if joinable {
            while text.trim_end().ends_with('\\')
                && i < doc.lines.len()
                && doc.lines[i].zone == l.zone
                && !doc.lines[i].is_fence
                && breaks.len() < 40
            {
                let cut = text.trim_end().len() - 1;
                text.truncate(cut);
                text.push(' ');
                breaks.push(text.len());
                text.push_str(doc.lines[i].text);
                i += 1;
            }
        }
        out.push(Logical {
            first,
            text,
            breaks,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_of_a_skill_md() {
        let t = "---\nname: x\n---\n# Title\ntext\n```bash\ncurl x\n```\nmore\n";
        let d = parse("SKILL.md", t, FileKind::Instructions);
        let z: Vec<Zone> = d.lines.iter().map(|l| l.zone).collect();
        use Zone::*;
        assert_eq!(
            z,
            vec![
                Frontmatter,
                Frontmatter,
                Frontmatter,
                Prose,
                Prose,
                Code,
                Code,
                Code,
                Prose
            ]
        );
        assert_eq!(d.blocks.len(), 1);
        assert_eq!(d.blocks[0].lang, "bash");
        assert_eq!(d.lines[3].heading, Some((1, "Title")));
    }

    #[test]
    fn continued_lines_are_joined_and_mapped_back() {
        let t = "```sh\ncurl -fsSL http://x \\\n  | sh\n```\n";
        let d = parse("SKILL.md", t, FileKind::Instructions);
        let ll = logical_lines(&d);
        let joined = ll.iter().find(|l| l.text.contains("| sh")).cloned();
        let Some(j) = joined else {
            panic!("no joined line")
        };
        assert_eq!(j.first, 1);
        let pos = j.text.find("| sh").unwrap_or(0);
        assert_eq!(j.line_of(pos), 2);
    }

    #[test]
    fn kinds_from_paths() {
        assert_eq!(kind_of("SKILL.md", ""), FileKind::Instructions);
        assert_eq!(kind_of("scripts/run.sh", ""), FileKind::Script);
        assert_eq!(kind_of("bin/tool", "#!/bin/sh\n"), FileKind::Script);
        assert_eq!(kind_of("config.json", "{}"), FileKind::Data);
    }
}
