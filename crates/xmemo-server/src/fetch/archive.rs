//! What a downloaded GitHub archive says about itself: the commit it was made from.

/// The commit a GitHub archive was made from: the ZIP comment (`git archive` writes the
/// full commit id there), else the hex suffix of its `OWNER-REPO-SHA` top folder.
pub fn archive_commit(bytes: &[u8], top_folder: Option<&str>) -> Option<String> {
    let is_hex =
        |s: &str| s.len() >= 7 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(comment) = zip_comment(bytes)
        && let Ok(text) = std::str::from_utf8(comment)
        && is_hex(text.trim())
    {
        return Some(text.trim().to_ascii_lowercase());
    }
    let suffix = top_folder?.rsplit('-').next()?;
    is_hex(suffix).then(|| suffix.to_ascii_lowercase())
}

/// The comment of the end-of-central-directory record, if one is found.
fn zip_comment(bytes: &[u8]) -> Option<&[u8]> {
    const EOCD: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    let min_start = bytes.len().saturating_sub(22 + 65_535);
    let last = bytes.len().checked_sub(22)?;
    (min_start..=last).rev().find_map(|at| {
        if bytes.get(at..at + 4)? != EOCD {
            return None;
        }
        let len = u16::from_le_bytes([*bytes.get(at + 20)?, *bytes.get(at + 21)?]) as usize;
        let comment = bytes.get(at + 22..at + 22 + len)?;
        (at + 22 + len == bytes.len()).then_some(comment)
    })
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
    }
}
