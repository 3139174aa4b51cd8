//! Text for people: aligned tables (a list answer of the server shown as one), shortened
//! hashes, one-line excerpts and sizes.

use super::http::decode_field;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Columns padded to their widest cell (the last column is not padded).
pub fn table<const N: usize>(headers: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = headers.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(w - cell.chars().count() + 2));
            }
        }
        out.trim_end().to_string()
    };
    let mut lines = vec![line(headers.to_vec())];
    lines.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    lines.join("\n")
}

/// A table with a row of `row` per item.
pub fn table_of<T, const N: usize>(
    headers: [&str; N],
    items: &[T],
    row: impl Fn(&T) -> [String; N],
) -> String {
    let rows: Vec<[String; N]> = items.iter().map(row).collect();
    table(headers, &rows)
}

/// Under `json` the server's answer; else the list under `key` in it (`what` names it when it
/// is not one) as a table.
pub fn print_list_result<T: DeserializeOwned, const N: usize>(
    json: bool,
    value: Value,
    key: &str,
    what: &str,
    headers: [&str; N],
    row: impl Fn(&T) -> [String; N],
) -> anyhow::Result<()> {
    crate::output::print_result(json, value, |value| {
        let items: Vec<T> = decode_field(&value, key, what)?;
        println!("{}", table_of(headers, &items, row));
        Ok(())
    })
}

/// The first 12 hex digits of a hash, enough to tell revisions apart.
pub fn short_hash(hash: &str) -> String {
    hash.chars().take(12).collect()
}

/// One line, at most `max` characters (with an ellipsis when cut).
pub fn excerpt(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

/// `1.2 KiB` style sizes.
pub fn size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

pub fn or_dash(value: Option<&str>) -> String {
    value.filter(|v| !v.is_empty()).unwrap_or("-").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align() {
        let t = table(
            ["A", "LONGER"],
            &[
                ["xyz".to_string(), "1".to_string()],
                ["q".to_string(), "22".to_string()],
            ],
        );
        assert_eq!(t, "A    LONGER\nxyz  1\nq    22");
    }

    #[test]
    fn a_table_of_items_has_a_row_per_item() {
        let t = table_of(["N", "SQUARE"], &[3u32, 12], |n| {
            [n.to_string(), (n * n).to_string()]
        });
        assert_eq!(t, "N   SQUARE\n3   9\n12  144");
    }

    #[test]
    fn excerpts_cut() {
        assert_eq!(excerpt("a  b\nc", 10), "a b c");
        assert_eq!(excerpt("abcdefghij", 5), "abcd…");
    }
}
