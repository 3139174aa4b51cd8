//! Skill Markdown is untrusted (anyone who may save a skill writes it, agents included): it is
//! rendered with pulldown-cmark and the HTML is then cleaned by ammonia's allowlist, so no
//! script, event-handler attribute, `javascript:` URL, style, form or frame survives. The
//! console's Content-Security-Policy would block a script that slipped through anyway.

use std::collections::HashSet;

/// Sanitised HTML of `markdown`.
pub fn render(markdown: &str) -> String {
    let mut options = pulldown_cmark::Options::empty();
    options.insert(pulldown_cmark::Options::ENABLE_TABLES);
    options.insert(pulldown_cmark::Options::ENABLE_STRIKETHROUGH);
    options.insert(pulldown_cmark::Options::ENABLE_TASKLISTS);
    let parser = pulldown_cmark::Parser::new_ext(markdown, options);
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, parser);
    ammonia::Builder::default()
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn hostile_markdown_renders_inert() {
        let out = render(
            "# Title\n\n<script>alert(1)</script>\n\n[click](javascript:alert(2)) \
             <img src=x onerror=alert(3)> <a href=\"#\" onclick=\"alert(4)\">a</a>\n\n\
             <iframe src=\"https://evil.example\"></iframe><style>body{}</style>\
             <form action=\"https://evil.example\"><input></form>\n\n**bold** `code`",
        );
        let lower = out.to_ascii_lowercase();
        for bad in [
            "<script",
            "javascript:",
            "onerror",
            "onclick",
            "<iframe",
            "<style",
            "<form",
            "<input",
        ] {
            assert!(!lower.contains(bad), "{bad} survived in {out}");
        }
        assert!(out.contains("<h1>Title</h1>"));
        assert!(out.contains("<strong>bold</strong>"));
        assert!(out.contains("<code>code</code>"));
    }

    #[test]
    fn links_keep_safe_schemes_and_get_rel() {
        let out = render("[docs](https://example.com/a)");
        assert!(out.contains("href=\"https://example.com/a\""));
        assert!(out.contains("rel=\"noopener noreferrer nofollow\""));
    }
}
