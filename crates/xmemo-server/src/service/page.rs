//! Paging, once for every list a client can ask for (skills, revisions, workspaces, members,
//! keys, accounts — and the MCP catalogs of `served.rs`): the page-size rule and the opaque
//! cursor. A cursor is the sort key of the last row shown, so the next page is a keyset read
//! in the store (`KeysetPage`): no OFFSET, no server-side state, the same cost on every page.

use crate::error::{ServiceError, ServiceResult};
use base64::Engine;
use serde::Serialize;
use xmemo_core::limits::{CURSOR_MAX_CHARS, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_LIMIT_MIN};
use xmemo_store::KeysetPage;

/// What a client asked for: `limit` (default [`PAGE_LIMIT_DEFAULT`]) and the `next_cursor` of
/// the previous page, if any.
#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

/// One page of a listing, and the cursor of the next (`None` on the last page).
#[derive(Debug, Clone, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

/// The page size a request asks for: 1–[`PAGE_LIMIT_MAX`], default [`PAGE_LIMIT_DEFAULT`].
pub(crate) fn page_size(limit: Option<i64>) -> ServiceResult<u32> {
    match limit {
        None => Ok(PAGE_LIMIT_DEFAULT),
        Some(n) if (i64::from(PAGE_LIMIT_MIN)..=i64::from(PAGE_LIMIT_MAX)).contains(&n) => {
            u32::try_from(n).map_err(|_| limit_error())
        }
        Some(_) => Err(limit_error()),
    }
}

fn limit_error() -> ServiceError {
    ServiceError::validation(
        format!("limit must be {PAGE_LIMIT_MIN} to {PAGE_LIMIT_MAX}"),
        "limit",
    )
}

/// Opaque to clients: the parts of a sort key, base64url of their lines. Parts are ids,
/// handles, slugs, timestamps and numbers, none of which holds a line break.
pub(crate) fn encode_cursor(parts: &[&str]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(parts.join("\n"))
}

/// The `N` parts of a cursor made by [`encode_cursor`]; anything else is VALIDATION_ERROR on
/// `cursor`.
pub(crate) fn decode_cursor<const N: usize>(cursor: &str) -> ServiceResult<[String; N]> {
    let invalid = || ServiceError::validation("invalid cursor", "cursor");
    if cursor.len() > CURSOR_MAX_CHARS {
        return Err(invalid());
    }
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid())?;
    let text = String::from_utf8(raw).map_err(|_| invalid())?;
    let parts: Vec<String> = text.split('\n').map(str::to_string).collect();
    parts.try_into().map_err(|_| invalid())
}

/// The keyset page a request reads: one row more than it shows, so the answer tells whether
/// another page follows. `key` turns the decoded cursor into the store's sort key; listings
/// tag their cursors (the first part) so one listing's cursor is refused by another.
pub(crate) fn keyset<K, const N: usize>(
    req: &PageRequest,
    tag: &str,
    key: impl FnOnce([String; N]) -> Option<K>,
) -> ServiceResult<(u32, KeysetPage<K>)> {
    let size = page_size(req.limit)?;
    let after = match req.cursor.as_deref() {
        None => None,
        Some(cursor) => {
            let parts: [String; N] = decode_cursor(cursor)?;
            if parts.first().map(String::as_str) != Some(tag) {
                return Err(ServiceError::validation(
                    "invalid cursor (from another listing?)",
                    "cursor",
                ));
            }
            Some(key(parts).ok_or_else(|| ServiceError::validation("invalid cursor", "cursor"))?)
        }
    };
    Ok((
        size,
        KeysetPage {
            after,
            limit: size.saturating_add(1),
        },
    ))
}

/// The page shown from rows read with [`keyset`]: at most `size`, and the cursor after the
/// last one shown when more rows follow.
pub(crate) fn finish<T>(
    mut rows: Vec<T>,
    size: u32,
    cursor_of: impl FnOnce(&T) -> String,
) -> Page<T> {
    let more = rows.len() > size as usize;
    rows.truncate(size as usize);
    let next_cursor = if more {
        rows.last().map(cursor_of)
    } else {
        None
    };
    Page {
        items: rows,
        next_cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = encode_cursor(&["ws_1", "deploy-app"]);
        assert_eq!(
            decode_cursor::<2>(&c).ok(),
            Some(["ws_1".to_string(), "deploy-app".to_string()])
        );
        assert!(decode_cursor::<3>(&c).is_err(), "wrong arity");
        for bad in [
            "",
            "!!",
            "bm8gbmV3bGluZQ",
            &"A".repeat(CURSOR_MAX_CHARS + 1),
        ] {
            assert!(decode_cursor::<2>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size(None).ok(), Some(PAGE_LIMIT_DEFAULT));
        assert_eq!(page_size(Some(1)).ok(), Some(1));
        assert_eq!(page_size(Some(100)).ok(), Some(100));
        for bad in [0, -1, 101, i64::MAX] {
            assert!(page_size(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn tags_keep_cursors_to_their_listing() {
        let req = |cursor: String| PageRequest {
            limit: Some(2),
            cursor: Some(cursor),
        };
        let ok = keyset(
            &req(encode_cursor(&["keys", "7"])),
            "keys",
            |[_, n]: [String; 2]| n.parse::<i64>().ok(),
        );
        assert_eq!(
            ok.ok().map(|(s, p)| (s, p.after, p.limit)),
            Some((2, Some(7), 3))
        );
        let other = keyset(
            &req(encode_cursor(&["skills", "7"])),
            "keys",
            |[_, n]: [String; 2]| n.parse::<i64>().ok(),
        );
        assert!(other.is_err());
        let garbage = keyset(
            &req(encode_cursor(&["keys", "x"])),
            "keys",
            |[_, n]: [String; 2]| n.parse::<i64>().ok(),
        );
        assert!(garbage.is_err());
    }

    #[test]
    fn finish_cuts_and_points_after_the_last_row_shown() {
        let page = finish(vec![1, 2, 3], 2, |n| n.to_string());
        assert_eq!(
            (page.items, page.next_cursor),
            (vec![1, 2], Some("2".into()))
        );
        let last = finish(vec![1, 2], 2, |n| n.to_string());
        assert_eq!((last.items, last.next_cursor), (vec![1, 2], None));
    }
}
