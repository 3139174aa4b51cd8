//! A `name` and a `description` read from the Markdown body, for SKILL.md files whose
//! frontmatter lacks them (docs/packages.md, "Repairs"). CommonMark is parsed with
//! pulldown-cmark, so code fences, HTML blocks, setext headings and tables are told apart
//! exactly as a renderer would: a `# comment` inside a shell code block is not a heading.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The text of the body's first level-1 heading, else of its first heading of any level;
/// inline markup dropped, whitespace collapsed. `None` when there is no heading with text.
pub fn first_heading(body: &str) -> Option<String> {
    let mut first_any: Option<String> = None;
    let mut current: Option<(HeadingLevel, String)> = None;
    for event in Parser::new_ext(body, options()) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => current = Some((level, String::new())),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = current.take() {
                    let text = collapse(&text);
                    if text.is_empty() {
                        continue;
                    }
                    if level == HeadingLevel::H1 {
                        return Some(text);
                    }
                    first_any.get_or_insert(text);
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = current.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, text)) = current.as_mut() {
                    text.push(' ');
                }
            }
            _ => {}
        }
    }
    first_any
}

/// The text of the body's first paragraph (or list item) outside headings, code blocks,
/// HTML blocks, tables and images; inline markup dropped, whitespace collapsed.
pub fn first_paragraph(body: &str) -> Option<String> {
    // Depth of the blocks whose text is not prose.
    let mut skip = 0usize;
    let mut text = String::new();
    for event in Parser::new_ext(body, options()) {
        match event {
            Event::Start(
                Tag::Heading { .. }
                | Tag::CodeBlock(_)
                | Tag::HtmlBlock
                | Tag::Table(_)
                | Tag::Image { .. }
                | Tag::MetadataBlock(_),
            ) => skip += 1,
            Event::End(
                TagEnd::Heading(_)
                | TagEnd::CodeBlock
                | TagEnd::HtmlBlock
                | TagEnd::Table
                | TagEnd::Image
                | TagEnd::MetadataBlock(_),
            ) => skip = skip.saturating_sub(1),
            // A paragraph, a list item (tight lists have no paragraph events) or a quote
            // ends: the first one that held text is the answer.
            Event::Start(Tag::Paragraph | Tag::Item | Tag::BlockQuote(_))
            | Event::End(TagEnd::Paragraph | TagEnd::Item | TagEnd::BlockQuote(_)) => {
                let found = collapse(&text);
                if !found.is_empty() {
                    return Some(found);
                }
                text.clear();
            }
            Event::Text(t) | Event::Code(t) if skip == 0 => text.push_str(&t),
            Event::SoftBreak | Event::HardBreak if skip == 0 => text.push(' '),
            _ => {}
        }
    }
    let found = collapse(&text);
    (!found.is_empty()).then_some(found)
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Runs of whitespace (line breaks, tabs) as one space, trimmed; control characters
/// dropped (a derived one-line field must not carry them).
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `text` cut to at most `max` characters: at the last space in its second half when there
/// is one, with `…` marking the cut. `None` when it already fits.
pub fn cut_chars(text: &str, max: usize) -> Option<String> {
    if text.chars().count() <= max || max == 0 {
        return None;
    }
    let keep: String = text.chars().take(max - 1).collect();
    let floor = keep.len() / 2;
    let cut = match keep.rfind(char::is_whitespace) {
        Some(at) if at >= floor => &keep[..at],
        _ => keep.as_str(),
    };
    Some(format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings() {
        assert_eq!(
            first_heading("Intro\n\n## Usage\n\n# Deploy *fast*\n").as_deref(),
            Some("Deploy fast")
        );
        assert_eq!(
            first_heading("## Usage `cli`\n").as_deref(),
            Some("Usage cli")
        );
        // not headings: a shell comment in a fence, an indented code block
        assert_eq!(first_heading("```sh\n# install\n```\n\n    # code\n"), None);
        assert_eq!(
            first_heading("Title\n=====\n\ntext").as_deref(),
            Some("Title")
        );
        assert_eq!(first_heading("#\n\n# 🚀 Go\n").as_deref(), Some("🚀 Go"));
    }

    #[test]
    fn paragraphs() {
        assert_eq!(
            first_paragraph("# T\n\n```\ncode\n```\n\nFirst **bold**\nline.\n\nSecond.").as_deref(),
            Some("First bold line.")
        );
        assert_eq!(
            first_paragraph("# T\n\n- item one\n- two\n").as_deref(),
            Some("item one")
        );
        assert_eq!(
            first_paragraph(
                "<!-- c -->\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![img](x.png)\n\nText"
            )
            .as_deref(),
            Some("Text")
        );
        assert_eq!(first_paragraph("# Only a heading\n"), None);
        assert_eq!(first_paragraph("test\n").as_deref(), Some("test"));
    }

    #[test]
    fn cuts() {
        assert_eq!(cut_chars("short", 10), None);
        let cut = cut_chars("one two three four five", 12).unwrap();
        assert!(cut.chars().count() <= 12, "{cut}");
        assert_eq!(cut, "one two…");
        let cut = cut_chars(&"é".repeat(30), 10).unwrap();
        assert_eq!(cut.chars().count(), 10);
        assert!(cut.ends_with('…'));
    }
}
