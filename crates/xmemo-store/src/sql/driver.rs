//! The thin layer between the SQL core and its drivers: a dialect-neutral statement
//! ([`Stmt`]), the two drivers behind one trait ([`Driver`]: sqlx for PostgreSQL here,
//! rusqlite for SQLite in `crate::sqlite::lite`), and column access that reads the same on
//! both ([`Record`]). Statements use `$n` placeholders, which both bind by number.

use crate::{StoreError, StoreResult};
use std::borrow::Cow;
use std::future::Future;

/// One bound value. Values are encoded when the statement runs, so borrowing is enough.
#[derive(Debug, Clone)]
pub enum Arg<'a> {
    Text(Option<&'a str>),
    OwnedText(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Bytes(&'a [u8]),
}

/// Conversion of a Rust value into a bound [`Arg`].
pub trait IntoArg<'a> {
    fn into_arg(self) -> Arg<'a>;
}

impl<'a> IntoArg<'a> for &'a str {
    fn into_arg(self) -> Arg<'a> {
        Arg::Text(Some(self))
    }
}
impl<'a> IntoArg<'a> for &'a String {
    fn into_arg(self) -> Arg<'a> {
        Arg::Text(Some(self))
    }
}
impl<'a> IntoArg<'a> for Option<&'a str> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Text(self)
    }
}
impl<'a> IntoArg<'a> for &'a Option<String> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Text(self.as_deref())
    }
}
impl<'a> IntoArg<'a> for String {
    fn into_arg(self) -> Arg<'a> {
        Arg::OwnedText(self)
    }
}
impl<'a> IntoArg<'a> for i64 {
    fn into_arg(self) -> Arg<'a> {
        Arg::Int(self)
    }
}
impl<'a> IntoArg<'a> for f64 {
    fn into_arg(self) -> Arg<'a> {
        Arg::Float(self)
    }
}
impl<'a> IntoArg<'a> for bool {
    fn into_arg(self) -> Arg<'a> {
        Arg::Bool(self)
    }
}
impl<'a> IntoArg<'a> for &'a [u8] {
    fn into_arg(self) -> Arg<'a> {
        Arg::Bytes(self)
    }
}
impl<'a> IntoArg<'a> for &'a Vec<u8> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Bytes(self)
    }
}

/// SQL text with its arguments.
#[derive(Debug, Clone)]
pub struct Stmt<'a> {
    sql: Cow<'static, str>,
    args: Vec<Arg<'a>>,
    /// Declared by its author: this statement may change what the credential cache holds
    /// (`sql::cache`), so its commit invalidates the cache.
    writes_auth: bool,
}

impl<'a> Stmt<'a> {
    pub fn new(sql: impl Into<Cow<'static, str>>) -> Self {
        Self {
            sql: sql.into(),
            args: Vec::new(),
            writes_auth: false,
        }
    }

    /// Marks a statement that may change a key, an account, a membership or a workspace
    /// (directly or through a cascade): the commit of its transaction empties the credential
    /// cache. An explicit mark, not a guess from the SQL text, so a write the text does not
    /// give away (a new table, a cascade, a trigger) is not missed.
    pub fn writes_auth(mut self) -> Self {
        self.writes_auth = true;
        self
    }

    pub fn is_auth_write(&self) -> bool {
        self.writes_auth
    }

    pub fn sql(&self) -> &str {
        &self.sql
    }

    pub fn args(&self) -> &[Arg<'a>] {
        &self.args
    }

    /// The same arguments under a statement built around this one's SQL.
    pub fn map_sql(self, f: impl FnOnce(&str) -> String) -> Self {
        Self {
            sql: Cow::Owned(f(&self.sql)),
            args: self.args,
            writes_auth: self.writes_auth,
        }
    }

    pub fn bind(mut self, value: impl IntoArg<'a>) -> Self {
        self.args.push(value.into_arg());
        self
    }

    pub fn bind_arg(mut self, arg: Arg<'a>) -> Self {
        self.args.push(arg);
        self
    }

    /// Binds every value in order (the values of an [`in_list`]).
    pub fn bind_all(mut self, values: &'a [String]) -> Self {
        self.args
            .extend(values.iter().map(|v| Arg::Text(Some(v.as_str()))));
        self
    }
}

/// `$from, $from+1, …` for `n` values (at least one placeholder, so `IN (…)` stays valid SQL;
/// callers return early on empty lists).
pub fn in_list(from: usize, n: usize) -> String {
    (from..from + n.max(1))
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A stored size or count as the signed 64-bit integer both schemas use.
pub fn to_i64(n: u64, what: &str) -> StoreResult<i64> {
    i64::try_from(n).map_err(|_| StoreError::Internal(format!("{what} {n} out of range")))
}

pub fn to_u64(n: i64, what: &str) -> StoreResult<u64> {
    u64::try_from(n).map_err(|_| StoreError::Internal(format!("negative {what} {n}")))
}

/// Column access, identical on both drivers.
pub trait Record: Send + Sync + 'static {
    fn text(&self, column: &str) -> StoreResult<String>;
    fn opt_text(&self, column: &str) -> StoreResult<Option<String>>;
    fn int(&self, column: &str) -> StoreResult<i64>;
    fn float(&self, column: &str) -> StoreResult<f64>;
    fn flag(&self, column: &str) -> StoreResult<bool>;
    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>>;

    /// A text column holding an enum's name (`status`, `role`, `kind`…).
    fn parsed<T: std::str::FromStr<Err = String>>(&self, column: &str) -> StoreResult<T>
    where
        Self: Sized,
    {
        self.text(column)?.parse().map_err(StoreError::Internal)
    }
}

/// A connection the core runs statements on: a pooled reader, or a write transaction that
/// rolls back unless committed.
pub enum Held<D: Driver> {
    Pooled(D::Conn),
    Tx(D::Tx),
}

/// A database driver as the SQL core uses it: where connections come from, transactions, and
/// statements run on a held connection.
pub trait Driver: Send + Sync + Sized + 'static {
    type Record: Record;
    type Pool: Clone + Send + Sync + 'static;
    /// A connection out of the pool, back in it when dropped.
    type Conn: Send + 'static;
    /// A write transaction, rolled back when dropped uncommitted.
    type Tx: Send + 'static;

    fn acquire(pool: &Self::Pool) -> impl Future<Output = StoreResult<Self::Conn>> + Send;
    fn begin(pool: &Self::Pool) -> impl Future<Output = StoreResult<Self::Tx>> + Send;
    fn commit(tx: Self::Tx) -> impl Future<Output = StoreResult<()>> + Send;
    /// Waits for checked-out connections to come back, then closes every connection.
    fn close(pool: &Self::Pool) -> impl Future<Output = ()> + Send;

    fn execute(
        held: &mut Held<Self>,
        stmt: Stmt<'_>,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
    fn fetch_all(
        held: &mut Held<Self>,
        stmt: Stmt<'_>,
    ) -> impl Future<Output = StoreResult<Vec<Self::Record>>> + Send;
    fn fetch_optional(
        held: &mut Held<Self>,
        stmt: Stmt<'_>,
    ) -> impl Future<Output = StoreResult<Option<Self::Record>>> + Send;
    /// Runs a script of several statements without arguments (a migration file).
    fn run_script(
        held: &mut Held<Self>,
        script: &'static str,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Runs `batch` (a group commit holding the writer) to its end in the background. A
    /// driver whose statements run on the calling thread runs it off the async workers.
    fn spawn_batch(batch: impl Future<Output = ()> + Send + 'static) {
        tokio::spawn(batch);
    }
}

impl Record for sqlx::postgres::PgRow {
    fn text(&self, column: &str) -> StoreResult<String> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
    fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
    fn int(&self, column: &str) -> StoreResult<i64> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
    fn float(&self, column: &str) -> StoreResult<f64> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
    fn flag(&self, column: &str) -> StoreResult<bool> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
}

type Pg = sqlx::Postgres;

fn pg_conn(held: &mut Held<Pg>) -> &mut sqlx::PgConnection {
    match held {
        Held::Pooled(c) => c,
        Held::Tx(t) => t,
    }
}

impl Driver for Pg {
    type Record = sqlx::postgres::PgRow;
    type Pool = sqlx::PgPool;
    type Conn = sqlx::pool::PoolConnection<Pg>;
    type Tx = sqlx::Transaction<'static, Pg>;

    async fn acquire(pool: &sqlx::PgPool) -> StoreResult<Self::Conn> {
        Ok(pool.acquire().await?)
    }

    async fn begin(pool: &sqlx::PgPool) -> StoreResult<Self::Tx> {
        Ok(pool.begin().await?)
    }

    async fn commit(tx: Self::Tx) -> StoreResult<()> {
        Ok(tx.commit().await?)
    }

    async fn close(pool: &sqlx::PgPool) {
        pool.close().await;
    }

    async fn execute(held: &mut Held<Self>, stmt: Stmt<'_>) -> StoreResult<u64> {
        let done = native(stmt).execute(pg_conn(held)).await?;
        Ok(done.rows_affected())
    }

    async fn fetch_all(held: &mut Held<Self>, stmt: Stmt<'_>) -> StoreResult<Vec<Self::Record>> {
        Ok(native(stmt).fetch_all(pg_conn(held)).await?)
    }

    async fn fetch_optional(
        held: &mut Held<Self>,
        stmt: Stmt<'_>,
    ) -> StoreResult<Option<Self::Record>> {
        Ok(native(stmt).fetch_optional(pg_conn(held)).await?)
    }

    async fn run_script(held: &mut Held<Self>, script: &'static str) -> StoreResult<()> {
        sqlx::raw_sql(script).execute(pg_conn(held)).await?;
        Ok(())
    }
}

/// The sqlx query for a statement, with every argument bound.
fn native(stmt: Stmt<'_>) -> sqlx::query::Query<'static, Pg, sqlx::postgres::PgArguments> {
    let mut q = match stmt.sql {
        Cow::Borrowed(sql) => sqlx::query::<Pg>(sql),
        Cow::Owned(sql) => sqlx::query::<Pg>(sqlx::AssertSqlSafe(sql)),
    };
    for arg in stmt.args {
        q = match arg {
            Arg::Text(v) => q.bind(v),
            Arg::OwnedText(v) => q.bind(Some(v.as_str())),
            Arg::Int(v) => q.bind(v),
            Arg::Float(v) => q.bind(v),
            Arg::Bool(v) => q.bind(v),
            Arg::Bytes(v) => q.bind(v),
        };
    }
    q
}

#[cfg(test)]
mod tests {
    #[test]
    fn in_lists_number_from_the_given_placeholder() {
        assert_eq!(super::in_list(3, 2), "$3,$4");
        assert_eq!(super::in_list(1, 0), "$1");
    }
}
