//! The SQLite driver: rusqlite connections run on the calling task.
//!
//! A statement against a local file takes microseconds, about what handing it to a worker
//! thread and waking the task again costs (sqlx-sqlite gives every connection a thread and
//! every statement a round trip to it: most of a recall's CPU went to the scheduler). So
//! statements run where the request runs. What may wait — a commit for its fsync, `BEGIN
//! IMMEDIATE` for another process's write lock (an `xmemo admin` command), a migration
//! script — leaves the async worker ([`tokio::task::block_in_place`]) so the other requests on
//! it go on.
//!
//! A pool is a bounded set of connections opened on first use; a writer pool holds one, which
//! serialises every write transaction of the process.

use crate::sql::driver::{Arg, Driver, Held, Record, Stmt};
use crate::{StoreError, StoreResult};
use rusqlite::types::{Null, Value, ValueRef};
use rusqlite::{Connection, OpenFlags};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a writer waits for another process's write lock, and a request for a free
/// connection of the pool, before the store is reported unavailable.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);
/// Prepared statements kept per connection: the store's fixed statements and the shapes of
/// its generated ones (search plans, `IN` lists) fit.
const STATEMENT_CACHE: usize = 256;
/// KiB of page cache each reader connection may keep (SQLite's default is 2,048).
const READER_CACHE_KIB: u32 = 16 * 1024;
/// The writer's, SQLite's default (a write reads few pages; its cache is emptied by every
/// other process's write anyway).
const WRITER_CACHE_KIB: u32 = 2048;

/// The driver type the SQL core is instantiated with.
pub struct Lite;

/// Which connections a pool opens.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    ReadOnly,
}

/// A bounded pool of connections to one database file.
#[derive(Clone)]
pub struct LitePool(Arc<PoolInner>);

struct PoolInner {
    path: PathBuf,
    access: Access,
    size: u32,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    closed: AtomicBool,
}

impl LitePool {
    /// A pool of at most `size` connections; the first is opened now, so a file that cannot
    /// be opened is reported here and not on the first request.
    pub fn open(path: &Path, access: Access, size: u32) -> StoreResult<Self> {
        let size = size.max(1);
        let pool = Self(Arc::new(PoolInner {
            path: path.to_path_buf(),
            access,
            size,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size as usize)),
            closed: AtomicBool::new(false),
        }));
        let first = pool.connect()?;
        pool.idle().push(first);
        Ok(pool)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        // A panic while holding the lock cannot leave the list inconsistent (push and pop).
        self.0
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn connect(&self) -> StoreResult<Connection> {
        let flags = match self.0.access {
            Access::ReadWrite => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            Access::ReadOnly => OpenFlags::SQLITE_OPEN_READ_ONLY,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let unavailable = |e: rusqlite::Error| {
            StoreError::Unavailable(format!("cannot open {}: {e}", self.0.path.display()))
        };
        let conn = Connection::open_with_flags(&self.0.path, flags).map_err(unavailable)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(unavailable)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        if self.0.access == Access::ReadWrite {
            // Returns the mode it set: a row, so read as a query.
            conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
                .map_err(unavailable)?;
        }
        // A reader keeps more pages than SQLite's default 2 MiB: a search's hydration missed
        // that cache for most pages it read (a pread and a copy each). No memory map: SQLite
        // unmaps a connection's whole map whenever another connection wrote, so under a
        // stream of writes every read paid the page faults again (reader p99 ×4, issue #29).
        let cache = match self.0.access {
            Access::ReadOnly => READER_CACHE_KIB,
            Access::ReadWrite => WRITER_CACHE_KIB,
        };
        conn.execute_batch(&format!(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA cache_size = -{cache};"
        ))
        .map_err(unavailable)?;
        Ok(conn)
    }

    async fn acquire(&self) -> StoreResult<PooledLite> {
        let closed = || StoreError::Unavailable("the database is closed".into());
        if self.0.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let permit = tokio::time::timeout(ACQUIRE_TIMEOUT, self.0.permits.clone().acquire_owned())
            .await
            .map_err(|_| StoreError::Unavailable("no free database connection".into()))?
            .map_err(|_| closed())?;
        let idle = self.idle().pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.connect()?,
        };
        Ok(PooledLite {
            conn: Some(conn),
            pool: self.clone(),
            _permit: permit,
        })
    }

    /// Waits for every connection to come back, then closes them all.
    pub async fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
        if let Ok(all) = self.0.permits.acquire_many(self.0.size).await {
            self.idle().clear();
            all.forget();
        }
        self.0.permits.close();
    }
}

/// A connection out of its pool; back to the pool when dropped.
pub struct PooledLite {
    conn: Option<Connection>,
    pool: LitePool,
    _permit: OwnedSemaphorePermit,
}

impl PooledLite {
    fn conn(&self) -> StoreResult<&Connection> {
        self.conn
            .as_ref()
            .ok_or_else(|| StoreError::Internal("connection already returned".into()))
    }
}

impl Drop for PooledLite {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A connection left inside a transaction (a failed rollback) is not reused.
            if conn.is_autocommit() && !self.pool.0.closed.load(Ordering::Acquire) {
                self.pool.idle().push(conn);
            }
        }
    }
}

/// A write transaction (`BEGIN IMMEDIATE`: the write lock is taken at once, so a transaction
/// never fails half-way for lack of it); rolled back when dropped uncommitted.
pub struct LiteTx {
    conn: PooledLite,
    open: bool,
}

impl Drop for LiteTx {
    fn drop(&mut self) {
        if self.open
            && let Ok(conn) = self.conn.conn()
        {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
}

/// Runs `work` off the async worker when the runtime has others to take over its tasks
/// (a commit's fsync); inline on a single-threaded runtime, where there is nobody to hand to.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// One result row, owned: the statement's column names (shared by its rows) and values.
pub struct LiteRow {
    columns: Arc<[Box<str>]>,
    values: Vec<Value>,
}

impl LiteRow {
    fn value(&self, column: &str) -> StoreResult<&Value> {
        self.columns
            .iter()
            .position(|c| c.as_ref() == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| StoreError::Internal(format!("no column {column}")))
    }

    fn mismatch(column: &str, wanted: &str, found: &Value) -> StoreError {
        StoreError::Internal(format!(
            "column {column}: expected {wanted}, found {:?}",
            found.data_type()
        ))
    }
}

impl Record for LiteRow {
    fn text(&self, column: &str) -> StoreResult<String> {
        match self.value(column)? {
            Value::Text(s) => Ok(s.clone()),
            other => Err(Self::mismatch(column, "text", other)),
        }
    }
    fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            other => Err(Self::mismatch(column, "text or null", other)),
        }
    }
    fn int(&self, column: &str) -> StoreResult<i64> {
        match self.value(column)? {
            Value::Integer(n) => Ok(*n),
            other => Err(Self::mismatch(column, "integer", other)),
        }
    }
    fn float(&self, column: &str) -> StoreResult<f64> {
        match self.value(column)? {
            Value::Real(f) => Ok(*f),
            // SQLite stores an integral REAL result of an expression as an integer.
            Value::Integer(n) => Ok(*n as f64),
            other => Err(Self::mismatch(column, "real", other)),
        }
    }
    fn flag(&self, column: &str) -> StoreResult<bool> {
        match self.value(column)? {
            Value::Integer(n) => Ok(*n != 0),
            other => Err(Self::mismatch(column, "boolean", other)),
        }
    }
    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>> {
        match self.value(column)? {
            Value::Blob(b) => Ok(b.clone()),
            Value::Text(s) => Ok(s.clone().into_bytes()),
            other => Err(Self::mismatch(column, "blob", other)),
        }
    }
}

/// The connection a held session runs on.
fn connection(held: &Held<Lite>) -> StoreResult<&Connection> {
    match held {
        Held::Pooled(c) => c.conn(),
        Held::Tx(t) => t.conn.conn(),
    }
}

/// Prepares (from the connection's cache) and binds `stmt`: `$n` names argument `n`, as
/// PostgreSQL reads it, wherever and however often it appears.
fn prepared<'c>(
    conn: &'c Connection,
    stmt: &Stmt<'_>,
) -> StoreResult<rusqlite::CachedStatement<'c>> {
    let args = stmt.args();
    let mut prepared = conn.prepare_cached(&inline_limits(stmt.sql(), args))?;
    for index in 1..=prepared.parameter_count() {
        let number = match prepared.parameter_name(index) {
            Some(name) => name
                .strip_prefix(['$', '?'])
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| StoreError::Internal(format!("unnumbered parameter {name}")))?,
            None => index,
        };
        let arg = number
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .ok_or_else(|| StoreError::Internal(format!("no value for parameter ${number}")))?;
        match arg {
            Arg::Text(Some(s)) => prepared.raw_bind_parameter(index, s)?,
            Arg::Text(None) => prepared.raw_bind_parameter(index, Null)?,
            Arg::OwnedText(s) => prepared.raw_bind_parameter(index, s)?,
            Arg::Int(n) => prepared.raw_bind_parameter(index, n)?,
            Arg::Float(f) => prepared.raw_bind_parameter(index, f)?,
            Arg::Bool(b) => prepared.raw_bind_parameter(index, b)?,
            Arg::Bytes(b) => prepared.raw_bind_parameter(index, b)?,
        }
    }
    Ok(prepared)
}

/// `LIMIT $n` and `OFFSET $n` with argument `n`'s integer written in the text. SQLite's planner
/// reads a LIMIT's bound value, and a statement whose planner read a parameter is re-prepared
/// (parsed and planned again) every time that parameter is bound: every run of a cached
/// `… LIMIT $2` paid a full prepare, a fifth of a Level 0 search. Integers cannot inject SQL;
/// the statement cache then keeps one statement per limit actually used.
fn inline_limits<'s>(sql: &'s str, args: &[Arg<'_>]) -> Cow<'s, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = sql[from..].find('$') {
        let at = from + found;
        let digits = sql[at + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let end = at + 1 + digits;
        from = end;
        let before = &sql[..at];
        if !(before.ends_with("LIMIT ") || before.ends_with("OFFSET ")) {
            continue;
        }
        let value = sql[at + 1..end]
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| args.get(i));
        if let Some(Arg::Int(n)) = value {
            out.push_str(&sql[copied..at]);
            out.push_str(&n.to_string());
            copied = end;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(sql);
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
}

fn owned(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::Integer(n),
        ValueRef::Real(f) => Value::Real(f),
        // Every text the store writes is UTF-8; SQL functions over it keep it so.
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// Runs `stmt` and keeps at most `limit` rows (every row is still stepped through, so a
/// write statement returning rows completes).
fn run(held: &Held<Lite>, stmt: &Stmt<'_>, limit: usize) -> StoreResult<(Vec<LiteRow>, u64)> {
    let conn = connection(held)?;
    let mut prepared = prepared(conn, stmt)?;
    let writes = !prepared.readonly();
    let columns: Arc<[Box<str>]> = prepared.column_names().into_iter().map(Box::from).collect();
    let mut out = Vec::new();
    let mut rows = prepared.raw_query();
    while let Some(row) = rows.next()? {
        if out.len() < limit {
            let values = (0..columns.len())
                .map(|i| row.get_ref(i).map(owned))
                .collect::<Result<Vec<_>, _>>()?;
            out.push(LiteRow {
                columns: columns.clone(),
                values,
            });
        }
    }
    drop(rows);
    let changed = if writes { conn.changes() } else { 0 };
    Ok((out, changed))
}

impl Driver for Lite {
    type Record = LiteRow;
    type Pool = LitePool;
    type Conn = PooledLite;
    type Tx = LiteTx;

    async fn acquire(pool: &LitePool) -> StoreResult<PooledLite> {
        pool.acquire().await
    }

    async fn begin(pool: &LitePool) -> StoreResult<LiteTx> {
        let conn = pool.acquire().await?;
        let raw = conn.conn()?;
        blocking(|| raw.execute_batch("BEGIN IMMEDIATE"))?;
        Ok(LiteTx { conn, open: true })
    }

    async fn commit(mut tx: LiteTx) -> StoreResult<()> {
        let conn = tx.conn.conn()?;
        blocking(|| conn.execute_batch("COMMIT"))?;
        tx.open = false;
        Ok(())
    }

    async fn close(pool: &LitePool) {
        pool.close().await;
    }

    async fn execute(held: &mut Held<Self>, stmt: Stmt<'_>) -> StoreResult<u64> {
        Ok(run(held, &stmt, 0)?.1)
    }

    async fn fetch_all(held: &mut Held<Self>, stmt: Stmt<'_>) -> StoreResult<Vec<LiteRow>> {
        Ok(run(held, &stmt, usize::MAX)?.0)
    }

    async fn fetch_optional(held: &mut Held<Self>, stmt: Stmt<'_>) -> StoreResult<Option<LiteRow>> {
        Ok(run(held, &stmt, 1)?.0.into_iter().next())
    }

    async fn run_script(held: &mut Held<Self>, script: &'static str) -> StoreResult<()> {
        let conn = connection(held)?;
        blocking(|| conn.execute_batch(script))?;
        Ok(())
    }

    fn spawn_batch(batch: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || handle.block_on(batch));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(pool_conn: PooledLite) -> Held<Lite> {
        Held::Pooled(pool_conn)
    }

    /// A fresh database with `script` run on it, its one-connection writer pool and a held
    /// connection (the directory lives as long as the first value).
    async fn scratch(script: &'static str) -> (tempfile::TempDir, LitePool, Held<Lite>) {
        let dir = tempfile::tempdir().unwrap();
        let pool = LitePool::open(&dir.path().join("t.db"), Access::ReadWrite, 1).unwrap();
        let mut h = held(pool.acquire().await.unwrap());
        Lite::run_script(&mut h, script).await.unwrap();
        (dir, pool, h)
    }

    #[tokio::test]
    async fn numbered_parameters_bind_by_number_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let pool = LitePool::open(&dir.path().join("t.db"), Access::ReadWrite, 1).unwrap();
        let mut h = held(pool.acquire().await.unwrap());
        let rows = Lite::fetch_all(
            &mut h,
            Stmt::new("SELECT $2 AS b, $1 AS a, $2 || $1 AS ba")
                .bind("x")
                .bind("y"),
        )
        .await
        .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].text("a").unwrap(), "x");
        assert_eq!(rows[0].text("b").unwrap(), "y");
        assert_eq!(rows[0].text("ba").unwrap(), "yx");
    }

    /// Issue #29, defect 8: readers keep a larger page cache, and no connection maps the
    /// file (a write elsewhere unmaps every reader's map).
    #[tokio::test]
    async fn readers_keep_a_larger_page_cache_and_map_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let writer = LitePool::open(&path, Access::ReadWrite, 1).unwrap();
        let reader = LitePool::open(&path, Access::ReadOnly, 2).unwrap();
        for (pool, cache) in [(&writer, WRITER_CACHE_KIB), (&reader, READER_CACHE_KIB)] {
            let mut h = held(pool.acquire().await.unwrap());
            let rows = Lite::fetch_all(&mut h, Stmt::new("PRAGMA cache_size"))
                .await
                .unwrap();
            assert_eq!(rows[0].int("cache_size").unwrap(), -i64::from(cache));
            let rows = Lite::fetch_all(&mut h, Stmt::new("PRAGMA mmap_size"))
                .await
                .unwrap();
            assert_eq!(rows[0].int("mmap_size").unwrap(), 0);
        }
    }

    #[test]
    fn limits_bound_as_integers_are_written_into_the_text() {
        let args = [Arg::Text(Some("w")), Arg::Int(40), Arg::Int(5)];
        assert_eq!(
            inline_limits("SELECT a FROM t WHERE b = $1 LIMIT $2 OFFSET $3", &args),
            "SELECT a FROM t WHERE b = $1 LIMIT 40 OFFSET 5"
        );
        assert_eq!(
            inline_limits(
                "SELECT * FROM (SELECT a LIMIT $2) WHERE c = $2 LIMIT $3",
                &args
            ),
            "SELECT * FROM (SELECT a LIMIT 40) WHERE c = $2 LIMIT 5"
        );
        // A text argument stays a parameter; no LIMIT leaves the text as it is.
        assert_eq!(
            inline_limits("SELECT 1 LIMIT $1", &args),
            "SELECT 1 LIMIT $1"
        );
        assert!(matches!(
            inline_limits("SELECT $2 AS n", &args),
            Cow::Borrowed("SELECT $2 AS n")
        ));
    }

    #[tokio::test]
    async fn a_limit_parameter_does_not_make_sqlite_prepare_again() {
        let (_dir, _pool, mut h) =
            scratch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3);").await;
        let sql = "SELECT n FROM t WHERE n > $1 ORDER BY n LIMIT $2";
        for floor in 0..3i64 {
            let rows = Lite::fetch_all(&mut h, Stmt::new(sql).bind(floor).bind(2i64))
                .await
                .unwrap();
            assert_eq!(rows.len(), (3 - floor).min(2) as usize);
        }
        let conn = connection(&h).unwrap();
        let cached = conn
            .prepare_cached(&inline_limits(sql, &[Arg::Int(0), Arg::Int(2)]))
            .unwrap();
        assert_eq!(
            cached.get_status(rusqlite::StatementStatus::RePrepare),
            0,
            "rebinding $1 re-prepared the statement"
        );
    }

    #[tokio::test]
    async fn a_dropped_transaction_rolls_back_and_a_committed_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        let pool = LitePool::open(&dir.path().join("t.db"), Access::ReadWrite, 1).unwrap();
        let mut h = Held::Tx(Lite::begin(&pool).await.unwrap());
        Lite::run_script(&mut h, "CREATE TABLE t (n INTEGER)")
            .await
            .unwrap();
        let Held::Tx(tx) = h else { unreachable!() };
        Lite::commit(tx).await.unwrap();

        let mut h = Held::Tx(Lite::begin(&pool).await.unwrap());
        let changed = Lite::execute(
            &mut h,
            Stmt::new("INSERT INTO t VALUES ($1), ($1)").bind(7i64),
        )
        .await
        .unwrap();
        assert_eq!(changed, 2);
        drop(h);

        let mut h = held(pool.acquire().await.unwrap());
        let row = Lite::fetch_optional(&mut h, Stmt::new("SELECT COUNT(*) AS n FROM t"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            row.int("n").unwrap(),
            0,
            "the dropped transaction's rows are gone"
        );
        let changed = Lite::execute(&mut h, Stmt::new("SELECT 1")).await.unwrap();
        assert_eq!(changed, 0, "a read changes nothing, whatever ran before");
    }

    #[tokio::test]
    async fn unique_violations_are_conflicts() {
        let (_dir, _pool, mut h) =
            scratch("CREATE TABLE t (n INTEGER PRIMARY KEY, u TEXT UNIQUE)").await;
        Lite::execute(&mut h, Stmt::new("INSERT INTO t VALUES (1, 'a')"))
            .await
            .unwrap();
        let again = Lite::execute(&mut h, Stmt::new("INSERT INTO t VALUES (2, 'a')")).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        let again = Lite::execute(&mut h, Stmt::new("INSERT INTO t VALUES (1, 'b')")).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    }

    #[tokio::test]
    async fn a_closed_pool_refuses_new_requests() {
        let dir = tempfile::tempdir().unwrap();
        let pool = LitePool::open(&dir.path().join("t.db"), Access::ReadWrite, 2).unwrap();
        pool.close().await;
        assert!(matches!(
            pool.acquire().await,
            Err(StoreError::Unavailable(_))
        ));
    }
}
