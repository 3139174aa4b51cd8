//! Keyset pagination, once for every listing: the rows strictly after the previous page's
//! last sort key, in that key's order, at most `limit`. No OFFSET, so a page costs the same
//! wherever it is and rows inserted meanwhile neither repeat nor vanish.

use super::Stmt;
use crate::model::{CreationKey, KeysetPage, SlugKey, WorkspaceKey};

/// A listing's sort key as statement arguments, in its columns' order.
pub(crate) trait SortKey {
    fn bind<'a>(&'a self, stmt: Stmt<'a>) -> Stmt<'a>;
}

impl SortKey for i64 {
    fn bind<'a>(&'a self, stmt: Stmt<'a>) -> Stmt<'a> {
        stmt.bind(*self)
    }
}

impl SortKey for String {
    fn bind<'a>(&'a self, stmt: Stmt<'a>) -> Stmt<'a> {
        stmt.bind(self)
    }
}

impl SortKey for CreationKey {
    fn bind<'a>(&'a self, stmt: Stmt<'a>) -> Stmt<'a> {
        stmt.bind(&self.created_at).bind(&self.id)
    }
}

impl SortKey for SlugKey {
    fn bind<'a>(&'a self, stmt: Stmt<'a>) -> Stmt<'a> {
        stmt.bind(&self.slug).bind(&self.workspace_id)
    }
}

impl SortKey for WorkspaceKey {
    fn bind<'a>(&'a self, stmt: Stmt<'a>) -> Stmt<'a> {
        stmt.bind(self.kind.as_str())
            .bind(&self.handle)
            .bind(&self.workspace_id)
    }
}

/// The end of a listing statement whose `WHERE` clause is already written and whose
/// placeholders so far end at `$(next - 1)`: the keyset condition when the page starts after
/// a key, then `ORDER BY` the sort columns, then the limit when there is a page at all
/// (`None` lists everything, for callers that need the whole set). The row-value comparison
/// uses the columns' own collation, as `ORDER BY` does, on both backends.
pub(crate) fn tail<K>(columns: &[&str], next: usize, page: Option<&KeysetPage<K>>) -> String {
    let mut sql = String::new();
    let mut n = next;
    if page.is_some_and(|p| p.after.is_some()) {
        let marks: Vec<String> = (n..n + columns.len()).map(|i| format!("${i}")).collect();
        sql.push_str(&format!(
            " AND ({}) > ({})",
            columns.join(", "),
            marks.join(", ")
        ));
        n += columns.len();
    }
    sql.push_str(&format!(" ORDER BY {}", columns.join(", ")));
    if page.is_some() {
        sql.push_str(&format!(" LIMIT ${n}"));
    }
    sql
}

/// Binds what [`tail`] added placeholders for.
pub(crate) fn bind<'a, K: SortKey>(stmt: Stmt<'a>, page: Option<&'a KeysetPage<K>>) -> Stmt<'a> {
    let Some(page) = page else {
        return stmt;
    };
    let stmt = match &page.after {
        Some(key) => key.bind(stmt),
        None => stmt,
    };
    stmt.bind(i64::from(page.limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails() {
        let first: KeysetPage<i64> = KeysetPage {
            after: None,
            limit: 5,
        };
        let later = KeysetPage {
            after: Some(3_i64),
            limit: 5,
        };
        assert_eq!(tail(&["n"], 2, None::<&KeysetPage<i64>>), " ORDER BY n");
        assert_eq!(tail(&["n"], 2, Some(&first)), " ORDER BY n LIMIT $2");
        assert_eq!(
            tail(&["a", "b"], 2, Some(&later)),
            " AND (a, b) > ($2, $3) ORDER BY a, b LIMIT $4"
        );
    }
}
