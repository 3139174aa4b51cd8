//! Media type guessed from a logical path's extension, and the text/binary decision.

pub fn media_type_for(path: &str, bytes: &[u8]) -> String {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let known = match ext.as_str() {
        "md" | "markdown" => Some("text/markdown"),
        "txt" => Some("text/plain"),
        "py" => Some("text/x-python"),
        "sh" | "bash" => Some("application/x-sh"),
        "js" | "mjs" | "cjs" => Some("text/javascript"),
        "ts" => Some("text/x-typescript"),
        "json" => Some("application/json"),
        "yaml" | "yml" => Some("application/yaml"),
        "toml" => Some("application/toml"),
        "html" | "htm" => Some("text/html"),
        "css" => Some("text/css"),
        "csv" => Some("text/csv"),
        "xml" | "xsd" => Some("application/xml"),
        "svg" => Some("image/svg+xml"),
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        "pdf" => Some("application/pdf"),
        "zip" => Some("application/zip"),
        "ttf" => Some("font/ttf"),
        "otf" => Some("font/otf"),
        "woff2" => Some("font/woff2"),
        _ => None,
    };
    match known {
        Some(t) => t.to_string(),
        None if is_text(bytes) => "text/plain".to_string(),
        None => "application/octet-stream".to_string(),
    }
}

/// Content is served as `utf-8` text when it decodes as UTF-8, else as base64.
pub fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        assert_eq!(
            media_type_for("scripts/check.py", b"print(1)"),
            "text/x-python"
        );
        assert_eq!(media_type_for("a/NOTES", b"hello"), "text/plain");
        assert_eq!(
            media_type_for("a/blob", &[0xff, 0xfe, 0x00]),
            "application/octet-stream"
        );
        assert_eq!(media_type_for("logo.PNG", &[0x89]), "image/png");
    }
}
