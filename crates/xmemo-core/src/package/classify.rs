//! Rules about paths inside a package: which are unsafe, which are junk to ignore, which
//! are secrets to refuse, and which component type a folder implies.

use crate::model::ComponentType;

/// The component type a path gets when no capsule manifest says otherwise, from its first
/// folder (case-insensitive; the singular forms are accepted too, e.g. `reference/`):
/// `scripts/` → script, `references/` → reference, `templates/` → template, `examples/` →
/// example, `assets/` → artifact; anything else, including files at the package root such
/// as `LICENSE.txt`, → document.
pub fn component_type_for_path(path: &str) -> ComponentType {
    let Some((folder, _)) = path.split_once('/') else {
        return ComponentType::Document;
    };
    match folder.to_ascii_lowercase().as_str() {
        "scripts" | "script" => ComponentType::Script,
        "references" | "reference" => ComponentType::Reference,
        "templates" | "template" => ComponentType::Template,
        "examples" | "example" => ComponentType::Example,
        "assets" | "asset" => ComponentType::Artifact,
        _ => ComponentType::Document,
    }
}

/// Operating-system and tool droppings that are skipped silently rather than imported:
/// anything under a `__MACOSX/` or `.git/` folder, and files named `.DS_Store`,
/// `Thumbs.db` or `desktop.ini`.
pub fn is_ignored_path(path: &str) -> bool {
    let mut segments = path.split('/').peekable();
    while let Some(segment) = segments.next() {
        let is_last = segments.peek().is_none();
        if !is_last && (segment == "__MACOSX" || segment == ".git") {
            return true;
        }
        if is_last && matches!(segment, ".DS_Store" | "Thumbs.db" | "desktop.ini") {
            return true;
        }
    }
    false
}

/// Why a path looks like a secret, or `None`. Matching is on names only (contents are not
/// scanned), case-insensitively:
/// - `.env` and every `.env*` file (`.env.local`, `.envrc`, …): environment file;
/// - `id_rsa`, `id_dsa`, `id_ecdsa`, `id_ed25519` (and `_sk` variants): SSH private key;
/// - `*.pem`, `*.key`, `*.p12`, `*.pfx`, `*.p8`, `*.ppk`, `*.jks`, `*.keystore`: private key
///   or key store;
/// - `.npmrc`, `.netrc`, `_netrc`, `.pypirc`, `.git-credentials`, `.pgpass`, `.htpasswd`,
///   `.dockercfg`, `.s3cfg`: credentials file;
/// - anything under `.ssh/` or `.gnupg/`, and `.aws/credentials`, `.docker/config.json`,
///   `.kube/config`: credentials folder.
pub fn sensitive_reason(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    let segments: Vec<&str> = lower.split('/').collect();
    let base = segments.last().copied().unwrap_or_default();
    if base.starts_with(".env") {
        return Some("environment file");
    }
    if matches!(
        base,
        "id_rsa" | "id_dsa" | "id_ecdsa" | "id_ed25519" | "id_ecdsa_sk" | "id_ed25519_sk"
    ) {
        return Some("SSH private key");
    }
    if let Some((_, ext)) = base.rsplit_once('.')
        && matches!(
            ext,
            "pem" | "key" | "p12" | "pfx" | "p8" | "ppk" | "jks" | "keystore"
        )
    {
        return Some("private key or key store");
    }
    if matches!(
        base,
        ".npmrc"
            | ".netrc"
            | "_netrc"
            | ".pypirc"
            | ".git-credentials"
            | ".pgpass"
            | ".htpasswd"
            | ".dockercfg"
            | ".s3cfg"
    ) {
        return Some("credentials file");
    }
    let folders = &segments[..segments.len().saturating_sub(1)];
    if folders.iter().any(|s| *s == ".ssh" || *s == ".gnupg") {
        return Some("credentials folder");
    }
    if let [.., dir, file] = segments.as_slice()
        && matches!(
            (*dir, *file),
            (".aws", "credentials") | (".docker", "config.json") | (".kube", "config")
        )
    {
        return Some("credentials file");
    }
    None
}

/// Structural safety of a relative path taken from an archive or a folder listing. Returns
/// the reason it is refused. Rules: not empty; no leading `/` and no drive letter
/// (`C:`); no backslash; no NUL or other control character; no empty, `.` or `..` segment.
pub fn unsafe_path_reason(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("empty path");
    }
    if path.starts_with('/') {
        return Some("absolute path (leading `/`)");
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Some("absolute path (drive letter)");
    }
    if path.contains('\\') {
        return Some("backslash in path (use `/` separators)");
    }
    if path.chars().any(char::is_control) {
        return Some("control character in path");
    }
    for segment in path.split('/') {
        match segment {
            ".." => return Some("path traversal (`..` segment)"),
            "." => return Some("`.` segment in path"),
            "" => return Some("empty segment in path (`//` or trailing `/`)"),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_types() {
        assert_eq!(
            component_type_for_path("scripts/a.py"),
            ComponentType::Script
        );
        assert_eq!(
            component_type_for_path("references/x/y.md"),
            ComponentType::Reference
        );
        assert_eq!(
            component_type_for_path("reference/y.md"),
            ComponentType::Reference
        );
        assert_eq!(
            component_type_for_path("Templates/t.html"),
            ComponentType::Template
        );
        assert_eq!(
            component_type_for_path("examples/e.md"),
            ComponentType::Example
        );
        assert_eq!(
            component_type_for_path("assets/logo.png"),
            ComponentType::Artifact
        );
        assert_eq!(
            component_type_for_path("LICENSE.txt"),
            ComponentType::Document
        );
        assert_eq!(
            component_type_for_path("core/scripts/a.py"),
            ComponentType::Document
        );
        // a file *named* like a folder is not in it
        assert_eq!(component_type_for_path("scripts"), ComponentType::Document);
    }

    #[test]
    fn ignored() {
        for p in [
            "__MACOSX/._SKILL.md",
            "pkg/__MACOSX/x",
            ".DS_Store",
            "a/.DS_Store",
            ".git/config",
            "Thumbs.db",
        ] {
            assert!(is_ignored_path(p), "{p}");
        }
        for p in ["SKILL.md", ".gitignore", "a/.github/x.yml", "__MACOSX"] {
            assert!(!is_ignored_path(p), "{p}");
        }
    }

    #[test]
    fn sensitive() {
        for p in [
            ".env",
            ".env.local",
            "config/.ENV.production",
            ".envrc",
            "id_rsa",
            "keys/id_ed25519",
            "server.pem",
            "tls/private.KEY",
            "cert.p12",
            ".npmrc",
            ".netrc",
            ".pypirc",
            ".git-credentials",
            ".ssh/known_hosts",
            "home/.aws/credentials",
            ".docker/config.json",
        ] {
            assert!(sensitive_reason(p).is_some(), "{p}");
        }
        for p in [
            "SKILL.md",
            "environment.md",
            "id_rsa.pub",
            "keys.md",
            "scripts/env.py",
            "docs/.aws.md",
            "aws/credentials.md",
        ] {
            assert!(sensitive_reason(p).is_none(), "{p}");
        }
    }

    #[test]
    fn unsafe_paths() {
        for p in [
            "", "/abs", "C:/x", "c:x", "a\\b", "../x", "a/../b", "a/..", "./a", "a//b", "a/",
            "a\0b", "a\nb",
        ] {
            assert!(unsafe_path_reason(p).is_some(), "{p:?}");
        }
        for p in ["a", "a/b.c", "x..y", ".hidden/f", "é/ü.md"] {
            assert!(unsafe_path_reason(p).is_none(), "{p:?}");
        }
    }
}
