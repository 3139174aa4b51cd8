//! The one SQL core behind both backends: every statement, row mapping and storage rule is
//! written here once. A backend (`crate::sqlite`, `crate::postgres`) supplies only what truly
//! differs — how it connects and serialises writers, its row-lock and audit-lock statements,
//! and its Level 0 index — through [`Dialect`].

mod accounts;
mod audit;
pub mod cache;
pub(crate) mod driver;
mod embeddings;
mod group;
mod invitations;
pub(crate) mod memories;
mod migrations;
mod oauth;
mod page;
mod rows;
pub(crate) mod signin;
mod skills;
mod snapshot;
mod store;
mod usage;

pub use driver::{Driver, Record, Stmt};
pub(crate) use driver::{in_list, to_i64};
pub use signin::DEVICE_ORIGIN_PREFIX;

use crate::{StoreError, StoreResult};
use driver::Held;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one backend adds to the SQL core: its driver, its locking statements (the defaults
/// fit a backend whose single writer connection already serialises every write) and how it
/// tells that the schema exists.
pub trait Dialect: Send + Sync + Sized + 'static {
    type Driver: Driver;
    /// `sqlite` or `postgres`.
    const BACKEND: &'static str;
    /// The ordered migration scripts of this dialect ([`crate::embed_migrations`]).
    const MIGRATIONS: &'static [crate::migrate::Migration];
    /// A query answering one row with an integer column `n` > 0 when `schema_migrations`
    /// exists.
    const SCHEMA_TABLE_EXISTS: &'static str;

    /// Follows `revisions r` in Level 0's hydration: SQLite reads names and descriptions
    /// from their own index (migration 0015).
    const PUBLISHED_CARD: &'static str = "";
    /// Appended to a `SELECT` that must lock the rows it returns until commit.
    const LOCK_ROWS: &'static str = "";
    /// Run first by every audit append inside its transaction, so appends from every node
    /// form one linear chain.
    const LOCK_AUDIT_CHAIN: Option<&'static str> = None;
    /// Run first by the migration transaction, so nodes starting together migrate once.
    const LOCK_MIGRATIONS: Option<&'static str> = None;
}

type Db<D> = <D as Dialect>::Driver;
pub type Row<D> = <Db<D> as Driver>::Record;
type DbPool<D> = <Db<D> as Driver>::Pool;

/// A connection the core runs statements on: a pooled reader, or a write transaction that
/// rolls back unless committed. Counts the statements it runs (see
/// [`SqlStore::statements_run`]).
pub struct Session<D: Dialect> {
    held: Held<Db<D>>,
    statements: Arc<AtomicU64>,
    cache: Arc<cache::AuthCache>,
    /// A write transaction changed a table the auth cache holds (see [`cache`]).
    touched_auth: bool,
    /// The audit entry this transaction appended last (`seq`, `entry_hash`): it holds the
    /// chain's lock until it ends, so the next append links to it without locking or reading
    /// again. Forgotten when a savepoint rolls back (the entry may be gone).
    audit_head: Option<(i64, String)>,
    /// The `fulltext_log` numbers this transaction appended (see `search/follow.rs`).
    pub(crate) logged_search: Vec<i64>,
    /// The store of a write transaction: its commit applies the search log on this node
    /// before the write answers (`SqlStore::apply_own_writes`).
    pub(crate) store: Option<SqlStore<D>>,
}

impl<D: Dialect> Session<D> {
    /// The held connection, counting the statement about to run on it.
    fn counted(&mut self) -> &mut Held<Db<D>> {
        self.statements.fetch_add(1, Ordering::Relaxed);
        &mut self.held
    }

    /// Notes a write to a cached table (only transactions write): the statement says so
    /// ([`Stmt::writes_auth`]). Debug builds also check the SQL text, so a statement that
    /// plainly writes a cached table but was not marked fails the tests that run it.
    fn watch(&mut self, stmt: &Stmt<'_>) {
        debug_assert!(
            stmt.is_auth_write()
                || !matches!(self.held, Held::Tx(_))
                || !cache::looks_like_auth_write(stmt.sql()),
            "a statement writes a table the credential cache holds but is not marked with \
             Stmt::writes_auth(): {}",
            stmt.sql()
        );
        if stmt.is_auth_write() && matches!(self.held, Held::Tx(_)) {
            self.touched_auth = true;
        }
    }

    pub async fn execute(&mut self, stmt: Stmt<'_>) -> StoreResult<u64> {
        self.watch(&stmt);
        Db::<D>::execute(self.counted(), stmt).await
    }

    pub async fn all(&mut self, stmt: Stmt<'_>) -> StoreResult<Vec<Row<D>>> {
        self.watch(&stmt);
        Db::<D>::fetch_all(self.counted(), stmt).await
    }

    pub async fn optional(&mut self, stmt: Stmt<'_>) -> StoreResult<Option<Row<D>>> {
        self.watch(&stmt);
        Db::<D>::fetch_optional(self.counted(), stmt).await
    }

    /// Exactly one row; none is `NotFound(what)`.
    pub async fn one(&mut self, stmt: Stmt<'_>, what: &str) -> StoreResult<Row<D>> {
        self.optional(stmt)
            .await?
            .ok_or_else(|| StoreError::NotFound(what.to_string()))
    }

    pub async fn script(&mut self, script: &'static str) -> StoreResult<()> {
        self.touched_auth = true;
        Db::<D>::run_script(self.counted(), script).await
    }

    /// Runs an optional dialect statement (a lock) that returns nothing of interest.
    pub async fn lock(&mut self, statement: Option<&'static str>) -> StoreResult<()> {
        if let Some(sql) = statement {
            self.execute(Stmt::new(sql)).await?;
        }
        Ok(())
    }

    /// Runs `rollback` (a `ROLLBACK TO SAVEPOINT`), forgetting what the transaction knew of
    /// rows written since that savepoint.
    pub async fn rollback_to(&mut self, rollback: &'static str) -> StoreResult<()> {
        self.audit_head = None;
        self.execute(Stmt::new(rollback)).await?;
        Ok(())
    }

    pub async fn commit(self) -> StoreResult<()> {
        let Session {
            held,
            cache,
            touched_auth,
            logged_search,
            store,
            ..
        } = self;
        if let Held::Tx(tx) = held {
            Db::<D>::commit(tx).await?;
            if touched_auth {
                cache.invalidate();
            }
            if let Some(store) = store.filter(|_| !logged_search.is_empty()) {
                store.apply_own_writes().await;
            }
        }
        Ok(())
    }
}

/// A [`crate::Store`] over one SQL database: a pool of readers and a pool of writers (the
/// same pool on PostgreSQL; one connection on SQLite, which serialises writes).
pub struct SqlStore<D: Dialect> {
    reader: DbPool<D>,
    writer: DbPool<D>,
    statements: Arc<AtomicU64>,
    saves: Arc<group::SaveGroup>,
    cache: Arc<cache::AuthCache>,
    pub(crate) fulltext: Arc<crate::search::follow::Fulltext>,
    dialect: PhantomData<D>,
}

impl<D: Dialect> std::fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &D::BACKEND)
            .finish_non_exhaustive()
    }
}

impl<D: Dialect> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        Self {
            reader: self.reader.clone(),
            writer: self.writer.clone(),
            statements: self.statements.clone(),
            saves: self.saves.clone(),
            cache: self.cache.clone(),
            fulltext: self.fulltext.clone(),
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> SqlStore<D> {
    pub(crate) fn from_pools(reader: DbPool<D>, writer: DbPool<D>) -> Self {
        Self {
            reader,
            writer,
            statements: Arc::new(AtomicU64::new(0)),
            saves: Arc::new(group::SaveGroup::default()),
            cache: Arc::new(cache::AuthCache::new(cache::AUTH_CACHE_TTL)),
            fulltext: Arc::new(crate::search::follow::Fulltext::default()),
            dialect: PhantomData,
        }
    }

    /// This store with another bound on how long a credential lookup stays cached
    /// ([`cache::AUTH_CACHE_TTL`] by default; writes on this node invalidate at once whatever
    /// the bound). Tests that count a request's statements set it long, so an entry expiring
    /// mid-test cannot add the three lookups of a cold cache to one request and not another.
    pub fn with_auth_cache_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.cache = Arc::new(cache::AuthCache::new(ttl));
        self
    }

    /// SQL statements this store (and its clones) has run so far, for tests and diagnostics
    /// that bound the work of one request.
    pub fn statements_run(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// Write transactions that carried skill saves so far; fewer than the saves means
    /// concurrent saves shared a commit (group commit, see `sql/group.rs`).
    pub fn save_transactions(&self) -> u64 {
        self.saves.batches()
    }

    pub(crate) fn auth_cache(&self) -> &cache::AuthCache {
        &self.cache
    }

    pub(crate) async fn read(&self) -> StoreResult<Session<D>> {
        Ok(Session {
            held: Held::Pooled(Db::<D>::acquire(&self.reader).await?),
            statements: self.statements.clone(),
            cache: self.cache.clone(),
            touched_auth: false,
            audit_head: None,
            logged_search: Vec::new(),
            store: None,
        })
    }

    pub(crate) async fn write(&self) -> StoreResult<Session<D>> {
        Ok(Session {
            held: Held::Tx(Db::<D>::begin(&self.writer).await?),
            statements: self.statements.clone(),
            cache: self.cache.clone(),
            touched_auth: false,
            audit_head: None,
            logged_search: Vec::new(),
            store: Some(self.clone()),
        })
    }

    /// Applies pending migrations in one transaction (under the dialect's migration lock).
    pub async fn migrate(&self) -> StoreResult<()> {
        migrations::migrate(self).await
    }

    /// True when every migration this binary embeds has been applied (an operator can refuse
    /// to start a node on a schema that is behind instead of migrating it).
    pub async fn schema_is_current(&self) -> StoreResult<bool> {
        migrations::schema_is_current(self).await
    }

    /// Closes the pools, waiting for checked-out connections to come back.
    pub async fn close(&self) {
        Db::<D>::close(&self.reader).await;
        Db::<D>::close(&self.writer).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What empties the credential cache is the statement's own mark, not a reading of its
    /// text: a write the text check does not recognise (here a comment first) still
    /// invalidates when marked, and an unmarked statement never does.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_mark_on_a_statement_decides_invalidation_not_its_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::sqlite::SqliteStore::open(&dir.path().join("x.db"))
            .await
            .expect("open");
        let sql = "/* an operator's rename */ UPDATE api_keys SET name = 'renamed'";
        assert!(
            !cache::looks_like_auth_write(sql),
            "a write the SQL-text check misses"
        );
        let before = store.auth_cache().generation();
        let mut s = store.write().await.expect("tx");
        s.execute(Stmt::new(sql).writes_auth())
            .await
            .expect("update");
        s.commit().await.expect("commit");
        assert!(
            store.auth_cache().generation() > before,
            "marked: invalidated"
        );

        let before = store.auth_cache().generation();
        let mut s = store.write().await.expect("tx");
        s.execute(Stmt::new(sql)).await.expect("update");
        s.commit().await.expect("commit");
        assert_eq!(
            store.auth_cache().generation(),
            before,
            "unmarked: untouched"
        );
    }
}
