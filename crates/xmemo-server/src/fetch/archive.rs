//! What a downloaded GitHub archive says about itself: the commit it was made from.

use std::io::Cursor;

/// The commit a GitHub archive was made from: the ZIP comment (`git archive` writes the
/// full commit id there), else the hex suffix of its `OWNER-REPO-SHA` top folder.
pub fn archive_commit(bytes: &[u8], top_folder: Option<&str>) -> Option<String> {
    let is_hex =
        |s: &str| s.len() >= 7 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if let Ok(archive) = zip::ZipArchive::new(Cursor::new(bytes))
        && let Ok(text) = std::str::from_utf8(archive.comment())
        && is_hex(text.trim())
    {
        return Some(text.trim().to_ascii_lowercase());
    }
    let suffix = top_folder?.rsplit('-').next()?;
    is_hex(suffix).then(|| suffix.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_from_archives() {
        assert_eq!(
            archive_commit(b"not a zip", Some("o-r-abc1234")).as_deref(),
            Some("abc1234")
        );
        assert_eq!(archive_commit(b"", Some("o-r-main")), None);
        let mut eocd = vec![0x50, 0x4b, 0x05, 0x06];
        eocd.extend([0u8; 16]);
        let sha = "0123456789abcdef0123456789abcdef01234567";
        eocd.extend((sha.len() as u16).to_le_bytes());
        eocd.extend(sha.as_bytes());
        assert_eq!(archive_commit(&eocd, None).as_deref(), Some(sha));

        // A real archive as GitHub serves it: the comment wins over the folder's short SHA;
        // a comment that is not a commit id leaves the folder's.
        let zip_with = |comment: &str| {
            let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
            let options = zip::write::SimpleFileOptions::default();
            w.start_file("o-r-abc1234/SKILL.md", options).unwrap();
            std::io::Write::write_all(&mut w, b"---\nname: x\n---\n").unwrap();
            w.set_comment(comment.to_string()).unwrap();
            w.finish().unwrap().into_inner()
        };
        let upper = sha.to_ascii_uppercase();
        assert_eq!(
            archive_commit(&zip_with(&format!("{upper}\n")), Some("o-r-abc1234")).as_deref(),
            Some(sha)
        );
        assert_eq!(
            archive_commit(&zip_with("made by hand"), Some("o-r-abc1234")).as_deref(),
            Some("abc1234")
        );
        assert_eq!(archive_commit(&zip_with(""), None), None);
    }
}
