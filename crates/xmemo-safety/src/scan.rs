//! One scan: read each file as text (bounded), run every rule, judge each match in its
//! context, add the skill-level purpose checks, and hand the hits to the verdict.

use crate::context::{Annotator, Describe, combine, local, security_purpose};
use crate::document::{Doc, FileKind, Logical, MAX_FILE_BYTES, kind_of, logical_lines, parse};
use crate::engine::{ENGINE, LineMatch, Mode, RawHit};
use crate::excerpt::{excerpt, excerpt_prefixed};
use crate::frontmatter::{Declared, body_summary, declared};
use crate::model::{Report, ScanFile, Severity};
use crate::rules::{encoded, hidden_text, purpose, remote_code};
use crate::verdict::{Hit, report};

/// The text of a file, cut to [`MAX_FILE_BYTES`]; `None` for binary content.
fn text_of(bytes: &[u8]) -> Option<&str> {
    let cut = &bytes[..bytes.len().min(MAX_FILE_BYTES)];
    match std::str::from_utf8(cut) {
        Ok(t) => Some(t),
        // A character cut in two by the bound, not binary.
        Err(e) if e.error_len().is_none() && cut.len() == MAX_FILE_BYTES => {
            std::str::from_utf8(&cut[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

/// What kind of native executable the bytes are, if any.
fn executable_kind(bytes: &[u8]) -> Option<&'static str> {
    let head = &bytes[..bytes.len().min(4)];
    match head {
        [0x7f, b'E', b'L', b'F'] => Some("ELF executable"),
        [0xfe, 0xed, 0xfa, 0xce | 0xcf] | [0xce | 0xcf, 0xfa, 0xed, 0xfe] => {
            Some("Mach-O executable")
        }
        [0xca, 0xfe, 0xba, 0xbe] if bytes.len() > 8 && bytes[7] < 40 => {
            Some("Mach-O universal binary")
        }
        [b'M', b'Z', ..] if bytes.len() > 64 => {
            let off = u32::from_le_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]) as usize;
            (bytes.get(off..off + 4) == Some(b"PE\0\0")).then_some("Windows PE executable")
        }
        _ => None,
    }
}

struct Parsed<'a> {
    index: usize,
    doc: Doc<'a>,
    logicals: Vec<Logical>,
    to_logical: Vec<usize>,
}

fn prepare<'a>(index: usize, path: &'a str, text: &'a str, kind: FileKind) -> Parsed<'a> {
    let doc = parse(path, text, kind);
    let logicals = logical_lines(&doc);
    let mut to_logical = vec![0; doc.lines.len()];
    for (li, l) in logicals.iter().enumerate() {
        let last = l.first + l.breaks.len();
        for slot in to_logical.iter_mut().take(last + 1).skip(l.first) {
            *slot = li;
        }
    }
    Parsed {
        index,
        doc,
        logicals,
        to_logical,
    }
}

/// Characters removed before rules read a line: zero-width, soft hyphen, tags, bidi
/// controls.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// The line without invisible characters, and for each byte of it (plus its end) the offset
/// in the original; `None` when there is nothing to remove.
fn visible(s: &str) -> Option<(String, Vec<usize>)> {
    if s.is_ascii() || !s.chars().any(invisible) {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len() + 1);
    for (i, c) in s.char_indices() {
        if invisible(c) {
            continue;
        }
        map.extend(i..i + c.len_utf8());
        out.push(c);
    }
    map.push(s.len());
    Some((out, map))
}

/// Every raw hit of one file.
fn raw_hits(p: &Parsed<'_>, mode: Mode) -> Vec<RawHit> {
    let mut out = Vec::new();
    let mut matches: Vec<LineMatch> = Vec::new();
    for (li, l) in p.logicals.iter().enumerate() {
        let line = &p.doc.lines[l.first];
        if line.is_fence {
            continue;
        }
        matches.clear();
        // Invisible characters inserted to split keywords ("ig\u{200B}nore") must not hide a
        // match: rules read the visible text, offsets are mapped back.
        match visible(&l.text) {
            None => ENGINE.matches(&l.text, line.zone, mode, &mut matches),
            Some((clean, map)) => {
                ENGINE.matches(&clean, line.zone, mode, &mut matches);
                for m in &mut matches {
                    m.start = map.get(m.start).copied().unwrap_or(l.text.len());
                    m.end = map.get(m.end).copied().unwrap_or(l.text.len());
                }
            }
        }
        for m in &matches {
            let mut h = RawHit::at(m.rule, m.severity, &p.logicals, li, m.start, m.end);
            h.phrase = m.phrase;
            out.push(h);
        }
    }
    if mode == Mode::Skill {
        out.extend(remote_code::download_then_run(&p.doc, &p.logicals));
    }
    out.extend(encoded::decoded_payloads(&p.doc, &p.logicals, mode));
    out.extend(hidden_text::characters(&p.doc, &p.to_logical));
    out.extend(hidden_text::markup(&p.doc, &p.to_logical));
    // A file that repeats a pattern thousands of times says nothing more with each copy; the
    // worst hits are kept (the verdict keeps 20 per rule anyway).
    if out.len() > MAX_RAW_HITS {
        out.sort_by_key(|h| std::cmp::Reverse(h.severity));
        out.truncate(MAX_RAW_HITS);
    }
    out
}

/// Most raw hits of one file judged in context.
const MAX_RAW_HITS: usize = 2000;

/// Judges raw hits in their context.
fn judge(p: &Parsed<'_>, raws: Vec<RawHit>, file_weak: bool) -> Vec<Hit> {
    if raws.is_empty() {
        return Vec::new();
    }
    let ann = Annotator::new(&p.doc, file_weak);
    raws.into_iter()
        .map(|r| {
            let text = p.logicals.get(r.logical).map_or("", |l| l.text.as_str());
            let excerpt = match (r.excerpt, &r.prefix) {
                (Some(e), _) => e,
                (None, Some(prefix)) => excerpt_prefixed(prefix, text, r.start, r.end),
                (None, None) => excerpt(text, r.start, r.end),
            };
            let mut hit = Hit::new(
                r.rule,
                r.severity,
                p.index,
                (r.phys as u32).saturating_add(1),
                excerpt,
            );
            if r.describable {
                match combine(ann.at(r.phys), local(text, r.start, r.end, r.phrase)) {
                    Describe::Strong => {
                        hit.severity = Severity::Low;
                        hit.described = true;
                    }
                    Describe::Weak => {
                        hit.severity = hit.severity.shifted(-2);
                        hit.described = true;
                    }
                    Describe::None => {}
                }
            }
            hit
        })
        .collect()
}

/// Scans a skill package (see [`crate::scan_skill`]).
pub fn skill(files: &[ScanFile<'_>]) -> Report {
    let paths: Vec<&str> = files.iter().map(|f| f.path).collect();
    let mut hits: Vec<Hit> = Vec::new();
    let mut parsed: Vec<Parsed<'_>> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(kind) = executable_kind(f.bytes) {
            hits.push(Hit::new(
                "obfuscation.binary-executable",
                Severity::Medium,
                i,
                1,
                format!("[{kind}, {} bytes]", f.bytes.len()),
            ));
            continue;
        }
        // NUL bytes early on: binary data (images, archives), not text to read.
        if f.bytes[..f.bytes.len().min(8192)].contains(&0) {
            continue;
        }
        if let Some(text) = text_of(f.bytes) {
            parsed.push(prepare(i, f.path, text, kind_of(f.path, text)));
        }
    }
    // The skill's own SKILL.md: at the root if there is one.
    let skill_md = parsed
        .iter()
        .find(|p| p.doc.is_skill_md && !p.doc.path.contains('/'))
        .or_else(|| parsed.iter().find(|p| p.doc.is_skill_md));
    let mut decl: Declared = skill_md.map(|p| declared(&p.doc)).unwrap_or_default();
    if decl.description.trim().is_empty()
        && let Some(p) = skill_md
    {
        decl.description = body_summary(&p.doc);
    }
    let file_weak = security_purpose(&decl.purpose_lower());
    for p in &parsed {
        let raws = raw_hits(p, Mode::Skill);
        hits.extend(judge(p, raws, file_weak));
    }
    let docs: Vec<(usize, Doc<'_>)> = parsed.iter().map(|p| (p.index, p.doc.clone())).collect();
    let extra = purpose::check(&decl, &docs, &hits);
    hits.extend(extra);
    report(hits, &paths)
}

/// Scans a memory (see [`crate::scan_memory`]).
pub fn memory(text: &str) -> Report {
    let cut = &text[..floor(text, MAX_FILE_BYTES)];
    let p = prepare(0, "memory", cut, FileKind::Instructions);
    let raws = raw_hits(&p, Mode::Memory);
    let hits = judge(&p, raws, false);
    report(hits, &["memory"])
}

fn floor(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
