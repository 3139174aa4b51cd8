//! Keeps this node's in-memory full-text indexes ([`super::lexical`]) in step with the
//! database, for every backend and any number of nodes or processes on one database.
//!
//! Every write that changes a skill's Level 0 row, a memory's text or one of its filter fields
//! (status, `updated_at`: [`super::scope::Facets`]) appends `(kind, key)` to
//! `fulltext_log` inside its own transaction ([`log_change`], [`log_workspace`]), so the log
//! holds exactly the committed changes, in commit order (SQLite has one writer; PostgreSQL
//! appends under the audit-chain lock).
//!
//! Who pays for keeping the index current (docs/decisions.md, "Search indexes follow the
//! log"): the **writer**. A write's commit applies the log on this node before the write
//! answers (`Session::commit` → [`SqlStore::apply_own_writes`]), so the writer's next query
//! sees it. A **query** never tokenises another request's rows: it reads the log past what
//! the node applied (one indexed statement) and goes on at once when all it finds are this
//! node's own writes (their writers are applying them); only entries written by **other
//! nodes** are applied on a query's path, and a follower on every server
//! ([`SqlStore::follow_log`], every 250 ms) applies those too, so queries rarely meet any.
//! Rows are analysed (tokenised, stemmed) before the index lock is taken and off the async
//! workers; their words are then posted [`WORDS_PER_PART`] at a time while the rows are still
//! dead, the lock handed to the waiting queries between parts, and the rows made live
//! together; compaction builds a copy under the read lock and swaps it in.
//!
//! The indexes are built when the server starts ([`SqlStore::warm_search`]; `/readyz` says
//! `building` until then). A query that arrives before waits at most [`FIRST_BUILD_WAIT`]
//! for the build (a small database is built within it), then is answered
//! [`StoreError::Warming`]: retryable, with the build going on. A rebuild (a node that
//! lagged past the log's pruned point) is the follower's: queries and writes meanwhile use
//! the indexes as they are, and the rebuilt ones are swapped in.
//!
//! The log is pruned ([`SqlStore::prune_log`], run by the server's upkeep): entries older
//! than the newest `keep` go, except those an embedding model still working needs. The highest number
//! deleted is kept in `fulltext_log_floor` and read by the same statement as the log, so a
//! node that had applied less than it finds out at its next catch-up, and its follower
//! rebuilds its indexes from the tables (what it does at start anyway).

use super::lexical::{Analyzed, Index, MEMORIES, SKILLS, Schema};
use super::scope::Facets;
use super::vectors::VectorIndex;
use crate::sql::{Dialect, Record, Session, SqlStore, Stmt, in_list};
use crate::{LogPrune, StoreError, StoreResult};
use parking_lot::{
    RwLock as FairRwLock, RwLockReadGuard as FairReadGuard, RwLockWriteGuard as FairWriteGuard,
};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Which index a log entry or a query is about (the `kind` column; 2 and 3 say the vector
/// of a skill or a memory changed, see `stored_vectors.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Skills = 0,
    Memories = 1,
}

/// `kind` of a log entry that says the vector of a row of `Kind` changed.
pub(crate) const VECTOR_KIND_OFFSET: i64 = 2;

/// Log entries applied per round trip while catching up, and rows read per statement while
/// building.
const BATCH: usize = 500;
const BUILD_PAGE: i64 = 5_000;
/// Words a catch-up posts per hold of the index's lock (85 µs at the median, measured; a
/// 16 KiB memory is ~2,500).
const WORDS_PER_PART: usize = 256;

/// The `kind` under which the log read of [`log_after`] reports that entries past the
/// reader's position were pruned (its `seq` is the highest number deleted).
const PRUNED: i64 = -1;

/// The highest log number pruned (0: none), as an SQL expression.
pub(crate) const FLOOR_SEQ: &str = "(SELECT pruned_through FROM fulltext_log_floor WHERE id = 1)";
/// The newest log number handed out, as an SQL expression: the last entry's, or, when a
/// prune left the log empty, the highest number pruned (never 0 then, or a node would take
/// every later query for one past a prune and rebuild).
pub(crate) const NEWEST_SEQ: &str = "COALESCE((SELECT MAX(seq) FROM fulltext_log),
     (SELECT pruned_through FROM fulltext_log_floor WHERE id = 1), 0)";

/// [`NEWEST_SEQ`] as a statement (column `n`).
pub(crate) fn newest_seq() -> Stmt<'static> {
    Stmt::new(format!("SELECT {NEWEST_SEQ} AS n"))
}

/// Log numbers one prune transaction covers at most.
const PRUNE_CHUNK: i64 = 20_000;

/// A skill's Level 0 row (an active skill's published revision), from the tables the
/// full-text rows are made of, so the statement is the same on every backend.
const SKILL_ROWS: &str = "SELECT s.skill_id AS key, s.workspace_id, s.slug, r.name, r.description
     FROM skills s JOIN revisions r ON r.skill_id = s.skill_id AND r.status = 'published'
     WHERE s.asset_status = 'active'";
const MEMORY_ROWS: &str =
    "SELECT m.memory_id AS key, m.workspace_id, COALESCE(m.title, '') AS title, m.content, m.tags,
            m.status, m.kind, m.project, m.agent_instance_id, m.expires_at, m.updated_at
     FROM memories m WHERE 1 = 1";

impl Kind {
    pub(crate) fn from_code(code: i64) -> Option<Kind> {
        match code {
            0 => Some(Kind::Skills),
            1 => Some(Kind::Memories),
            _ => None,
        }
    }
    pub(crate) fn rows(self) -> &'static str {
        match self {
            Kind::Skills => SKILL_ROWS,
            Kind::Memories => MEMORY_ROWS,
        }
    }
    pub(crate) fn key_column(self) -> &'static str {
        match self {
            Kind::Skills => "s.skill_id",
            Kind::Memories => "m.memory_id",
        }
    }
    fn schema(self) -> &'static Schema {
        match self {
            Kind::Skills => &SKILLS,
            Kind::Memories => &MEMORIES,
        }
    }
    fn fields(self) -> [&'static str; 3] {
        match self {
            Kind::Skills => ["slug", "name", "description"],
            Kind::Memories => ["title", "content", "tags"],
        }
    }
}

/// This node's indexes and how far into the log they are.
pub(crate) struct Fulltext {
    /// A fair lock: a catch-up adding long rows lets it go between parts, handing it to the
    /// queries waiting (`add_in_parts`).
    indexes: FairRwLock<Indexes>,
    /// The vectors of the embedding model the last semantic query used (`stored_vectors.rs`),
    /// kept in step by the same catch-up.
    pub(crate) vectors: RwLock<Option<VectorIndex>>,
    /// The last log number applied (-1 before the first build).
    applied: AtomicI64,
    /// Builds from the tables so far: the first, then one per prune past this node.
    builds: AtomicU64,
    built: tokio::sync::OnceCell<()>,
    /// One catch-up at a time: a second one waiting finds the log already applied.
    pub(crate) catching_up: tokio::sync::Mutex<()>,
    /// Rows applied from the log, by who applied them (writers, follower, queries).
    applied_rows: [AtomicU64; 3],
    /// Log numbers this node's own committed writes appended and no catch-up applied yet:
    /// their writers apply them before answering, so a query finding only these goes on.
    own_pending: Mutex<BTreeSet<i64>>,
}

pub(super) struct Indexes {
    skills: Index,
    memories: Index,
}

impl Indexes {
    pub(super) fn get(&self, kind: Kind) -> &Index {
        match kind {
            Kind::Skills => &self.skills,
            Kind::Memories => &self.memories,
        }
    }
    fn get_mut(&mut self, kind: Kind) -> &mut Index {
        match kind {
            Kind::Skills => &mut self.skills,
            Kind::Memories => &mut self.memories,
        }
    }
}

impl Default for Fulltext {
    fn default() -> Self {
        Self {
            indexes: FairRwLock::new(Indexes {
                skills: Index::new(&SKILLS),
                memories: Index::new(&MEMORIES),
            }),
            vectors: RwLock::new(None),
            applied: AtomicI64::new(-1),
            builds: AtomicU64::new(0),
            built: tokio::sync::OnceCell::new(),
            catching_up: tokio::sync::Mutex::new(()),
            own_pending: Mutex::new(BTreeSet::new()),
            applied_rows: Default::default(),
        }
    }
}

impl Fulltext {
    // No poisoning: a panic while writing leaves at worst a row missing until its next change.
    pub(super) fn read(&self) -> FairReadGuard<'_, Indexes> {
        self.indexes.read()
    }
    fn write(&self) -> FairWriteGuard<'_, Indexes> {
        self.indexes.write()
    }
    pub(crate) fn vectors_read(&self) -> RwLockReadGuard<'_, Option<VectorIndex>> {
        self.vectors
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    pub(crate) fn vectors_write(&self) -> RwLockWriteGuard<'_, Option<VectorIndex>> {
        self.vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    fn own(&self) -> std::sync::MutexGuard<'_, BTreeSet<i64>> {
        self.own_pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    /// Records the log numbers a write of this node committed.
    pub(crate) fn note_own_writes(&self, seqs: &[i64]) {
        let applied = self.applied.load(Ordering::Acquire);
        self.own()
            .extend(seqs.iter().copied().filter(|s| *s > applied));
    }
    /// Whether every entry is one of this node's own writes or applied meanwhile (none a
    /// prune, none another node's still pending).
    fn all_own(&self, entries: &[(i64, i64, String)]) -> bool {
        let own = self.own();
        // Read after the lock: a catch-up that applied an entry forgot it under that lock.
        let applied = self.applied.load(Ordering::Acquire);
        entries
            .iter()
            .all(|(seq, code, _)| *code != PRUNED && (*seq <= applied || own.contains(seq)))
    }
    /// Forgets the own writes a catch-up applied (everything up to `newest`).
    fn applied_through(&self, newest: i64) {
        let mut own = self.own();
        self.applied.store(newest, Ordering::Release);
        *own = own.split_off(&(newest + 1));
    }
    /// Whether the indexes have been built (a node that never searched has nothing to keep
    /// in step).
    pub(crate) fn is_built(&self) -> bool {
        self.built.initialized()
    }
    pub(crate) fn stats(&self) -> crate::SearchStats {
        let rows = {
            let indexes = self.read();
            (indexes.skills.len() + indexes.memories.len()) as u64
        };
        let [writers, follower, queries] = &self.applied_rows;
        crate::SearchStats {
            ready: self.is_built(),
            builds: self.builds.load(Ordering::Relaxed),
            rows,
            applied_by_writers: writers.load(Ordering::Relaxed),
            applied_by_follower: follower.load(Ordering::Relaxed),
            applied_by_queries: queries.load(Ordering::Relaxed),
        }
    }
}

/// Records, inside the writing transaction, that the full-text row `key` of `kind` changed.
pub(crate) async fn log_change<D: Dialect>(
    s: &mut Session<D>,
    kind: Kind,
    key: &str,
) -> StoreResult<()> {
    log_changes(s, kind, &[key.to_string()]).await
}

/// Records, inside the writing transaction, that the full-text rows `keys` of `kind` changed
/// (one statement for a batch of saves).
pub(crate) async fn log_changes<D: Dialect>(
    s: &mut Session<D>,
    kind: Kind,
    keys: &[String],
) -> StoreResult<()> {
    log_codes(s, kind as i64, keys).await
}

/// Appends `(code, key)` for every key: a row change (`Kind`) or a vector change
/// (`Kind` + [`VECTOR_KIND_OFFSET`]).
pub(crate) async fn log_codes<D: Dialect>(
    s: &mut Session<D>,
    code: i64,
    keys: &[String],
) -> StoreResult<()> {
    if keys.is_empty() {
        return Ok(());
    }
    s.lock(D::LOCK_AUDIT_CHAIN).await?;
    for chunk in keys.chunks(BATCH) {
        let values: Vec<String> = (1..=chunk.len())
            .map(|n| format!("({code}, ${n})"))
            .collect();
        let rows = s
            .all(
                Stmt::new(format!(
                    "INSERT INTO fulltext_log (kind, key) VALUES {} RETURNING seq",
                    values.join(", ")
                ))
                .bind_all(chunk),
            )
            .await?;
        note_logged(s, &rows)?;
    }
    Ok(())
}

/// Records the log numbers a write appended as this node's own, before it commits: a query
/// that sees them committed must find them marked, or it would apply them itself (see
/// [`Fulltext::own_pending`]). The commit then applies them; a transaction that does not
/// commit leaves numbers no entry has, which the next catch-up past them forgets.
fn note_logged<D: Dialect>(s: &mut Session<D>, rows: &[crate::sql::Row<D>]) -> StoreResult<()> {
    let seqs = rows
        .iter()
        .map(|r| r.int("seq"))
        .collect::<StoreResult<Vec<i64>>>()?;
    if let Some(store) = s.store.as_ref() {
        store.fulltext.note_own_writes(&seqs);
    }
    s.logged_search.extend(seqs);
    Ok(())
}

/// Records that every skill and memory of workspace `ws` changed (before the workspace and
/// everything in it is deleted).
pub(crate) async fn log_workspace<D: Dialect>(s: &mut Session<D>, ws: &str) -> StoreResult<()> {
    s.lock(D::LOCK_AUDIT_CHAIN).await?;
    for (kind, table, key) in [
        (Kind::Skills, "skills", "skill_id"),
        (Kind::Memories, "memories", "memory_id"),
    ] {
        let rows = s
            .all(
                Stmt::new(format!(
                    "INSERT INTO fulltext_log (kind, key) SELECT {}, {key} FROM {table}
                     WHERE workspace_id = $1 ORDER BY {key} RETURNING seq",
                    kind as i64
                ))
                .bind(ws),
            )
            .await?;
        note_logged(s, &rows)?;
    }
    Ok(())
}

/// Who runs a catch-up (each counts the rows it applied: [`crate::SearchStats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applier {
    Writer,
    Follower,
    Query,
}

/// How long a query waits for the indexes a server builds at its start before it is told to
/// come back (issue #29, defect 7: the first search after a restart used to build them on
/// its own path, 19.2 s for 11,185 memories of 16 KiB).
const FIRST_BUILD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Texts of a page of rows above which their analysis leaves the async worker.
const ANALYSE_INLINE_BYTES: usize = 8 * 1024;

/// A row read for the index.
struct RowText {
    key: String,
    workspace: String,
    /// In the order of the kind's schema.
    fields: [String; 3],
    /// A memory's filter fields.
    facets: Option<Facets>,
}

impl RowText {
    fn analysed(&self, kind: Kind) -> Analyzed {
        let [a, b, c] = &self.fields;
        let row = Analyzed::new(kind.schema(), &self.key, &self.workspace, &[a, b, c]);
        match &self.facets {
            Some(facets) => row.with_facets(facets.clone()),
            None => row,
        }
    }
}

/// Analyses rows for `kind`'s index: on a blocking thread when there is much text, so a
/// long memory never holds an async worker (and the requests queued on it).
async fn analyse(kind: Kind, rows: Vec<RowText>) -> StoreResult<Vec<Analyzed>> {
    let bytes: usize = rows
        .iter()
        .map(|r| r.fields.iter().map(String::len).sum::<usize>())
        .sum();
    let work = move || rows.iter().map(|r| r.analysed(kind)).collect::<Vec<_>>();
    if bytes <= ANALYSE_INLINE_BYTES {
        return Ok(work());
    }
    crate::background::run(work).await
}

fn row_text<D: Dialect>(kind: Kind, row: &crate::sql::Row<D>) -> StoreResult<RowText> {
    let [a, b, c] = kind.fields();
    let facets = match kind {
        Kind::Skills => None,
        Kind::Memories => Some(Facets {
            active: row.text("status")? == "active",
            kind: row.text("kind")?,
            project: row.text("project")?,
            agent_instance_id: row.opt_text("agent_instance_id")?,
            tags: crate::sql::memories::tags_from(row)?,
            expires_at: row.opt_text("expires_at")?,
            updated_at: row.text("updated_at")?,
        }),
    };
    Ok(RowText {
        key: row.text("key")?,
        workspace: row.text("workspace_id")?,
        fields: [row.text(a)?, row.text(b)?, row.text(c)?],
        facets,
    })
}

impl<D: Dialect> SqlStore<D> {
    /// Brings the indexes to where a query must find them: holding every change this
    /// node's writes committed before this call and every change of other nodes found in the
    /// log (see the module's head: a query never applies this node's own pending writes, and
    /// never waits for their writers).
    pub(super) async fn current_for_query(&self) -> StoreResult<()> {
        self.built_for_query().await?;
        self.apply_others_writes().await
    }

    /// Builds this node's indexes unless they are built (the server calls it at start; a
    /// query that comes first waits for it).
    pub(crate) async fn warm_search(&self) -> StoreResult<()> {
        self.fulltext
            .built
            .get_or_try_init(|| self.build_fulltext())
            .await?;
        Ok(())
    }

    /// Waits at most [`FIRST_BUILD_WAIT`] for this node's first build. The build runs on a
    /// task of its own (joined if the server's upkeep started it), so a query that stops
    /// waiting leaves it going on.
    async fn built_for_query(&self) -> StoreResult<()> {
        if self.fulltext.is_built() {
            return Ok(());
        }
        let store = self.clone();
        let build = tokio::spawn(async move { store.warm_search().await });
        match tokio::time::timeout(FIRST_BUILD_WAIT, build).await {
            Ok(Ok(built)) => built,
            Ok(Err(e)) => Err(StoreError::Internal(format!(
                "building the search indexes stopped: {e}"
            ))),
            Err(_) => Err(StoreError::Warming(
                "this server is building its search indexes after its start; try again in a \
                 few seconds (/readyz answers 200 once they are built)"
                    .into(),
            )),
        }
    }

    /// What a query applies: entries other nodes wrote (or a prune past this node). When
    /// every entry past this node's position is one of its own writes, their writers are
    /// applying them: the query goes on without them.
    async fn apply_others_writes(&self) -> StoreResult<()> {
        let entries = self
            .log_past(self.fulltext.applied.load(Ordering::Acquire))
            .await?;
        if entries.is_empty() || self.fulltext.all_own(&entries) {
            return Ok(());
        }
        self.catch_up(Applier::Query).await
    }

    /// After a write of this node committed (`Session::commit`): applies the log, so the
    /// writer's next query sees its write. A failure is logged, not returned: the write is
    /// durable, and the next catch-up (the follower's, or a query's) applies it.
    pub(crate) async fn apply_own_writes(&self) {
        if !self.fulltext.is_built() {
            return;
        }
        if let Err(e) = self.catch_up(Applier::Writer).await {
            tracing::warn!(error = %e, "applying this node's writes to its search indexes failed; the next catch-up applies them");
        }
    }

    /// The server's follower: applies what the log holds past this node's position (other
    /// nodes' writes), so queries rarely meet any. Builds the indexes first if needed.
    pub(crate) async fn follow_log(&self) -> StoreResult<()> {
        self.warm_search().await?;
        self.catch_up(Applier::Follower).await
    }

    /// Reads every row into fresh indexes. The log's newest number is read first: a change
    /// committed after it is applied by the next catch-up (re-reading a row is idempotent),
    /// so the rows need not come from one snapshot. Rows are analysed off the async workers
    /// while the next page is read.
    async fn build_fulltext(&self) -> StoreResult<()> {
        let started = std::time::Instant::now();
        let newest = self
            .read()
            .await?
            .one(newest_seq(), "log")
            .await?
            .int("n")?;
        let mut built = Indexes {
            skills: Index::new(&SKILLS),
            memories: Index::new(&MEMORIES),
        };
        for kind in [Kind::Skills, Kind::Memories] {
            let mut after = String::new();
            let mut analysing: Option<tokio::task::JoinHandle<StoreResult<Vec<Analyzed>>>> = None;
            loop {
                // A connection for the page's statement only (the pool is the requests').
                let rows = self
                    .read()
                    .await?
                    .all(
                        Stmt::new(format!(
                            "{} AND {col} > $1 ORDER BY {col} LIMIT {BUILD_PAGE}",
                            kind.rows(),
                            col = kind.key_column()
                        ))
                        .bind(after.clone()),
                    )
                    .await?;
                let last_page = (rows.len() as i64) < BUILD_PAGE;
                let texts = rows
                    .iter()
                    .map(|r| row_text::<D>(kind, r))
                    .collect::<StoreResult<Vec<_>>>()?;
                if let Some(last) = texts.last() {
                    after = last.key.clone();
                }
                drop(rows);
                // The previous page's analysis ran while this page was read.
                if let Some(previous) = analysing.take() {
                    insert_all(built.get_mut(kind), joined(previous).await?);
                }
                if !texts.is_empty() {
                    analysing = Some(tokio::spawn(analyse_on_every_core(kind, texts)));
                }
                if last_page {
                    break;
                }
            }
            if let Some(previous) = analysing.take() {
                insert_all(built.get_mut(kind), joined(previous).await?);
            }
        }
        built.skills.shrink_to_fit();
        built.memories.shrink_to_fit();
        tracing::info!(
            builds = self.fulltext.builds.load(Ordering::Relaxed) + 1,
            skills = built.skills.len(),
            memories = built.memories.len(),
            ms = started.elapsed().as_millis() as u64,
            "full-text indexes built"
        );
        let old = std::mem::replace(&mut *self.fulltext.write(), built);
        drop(old);
        self.fulltext.applied_through(newest);
        self.fulltext.builds.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The log entries past `after`, on a connection held for that statement only.
    async fn log_past(&self, after: i64) -> StoreResult<Vec<(i64, i64, String)>> {
        let mut s = self.read().await?;
        log_after(&mut s, after).await
    }

    /// Applies the log entries past the last one applied. A connection is held for each
    /// statement only, never while rows are analysed or a lock is awaited: the readers' pool
    /// is the requests' (issue #29, defect 7: a writer's catch-up holding one through its
    /// analysis left the other accounts' searches one connection short).
    pub(crate) async fn catch_up(&self, by: Applier) -> StoreResult<()> {
        let mut applied = self.fulltext.applied.load(Ordering::Acquire);
        let mut entries = self.log_past(applied).await?;
        if entries.is_empty() || (by != Applier::Follower && starts_pruned(&entries)) {
            // Past the pruned point only the follower goes on (it rebuilds, holding
            // `catching_up` meanwhile): a request must not wait for that lock.
            return Ok(());
        }
        let _one_at_a_time = self.fulltext.catching_up.lock().await;
        let now = self.fulltext.applied.load(Ordering::Acquire);
        if now != applied {
            // Another catch-up applied (part of) these meanwhile: start from where it stopped.
            applied = now;
            entries = self.log_past(applied).await?;
        }
        while let Some(&(newest, _, _)) = entries.last() {
            if starts_pruned(&entries) {
                if by != Applier::Follower {
                    // The follower rebuilds; a request goes on with the indexes as they are.
                    return Ok(());
                }
                // What this node missed is gone from the log: read every row again.
                *self.fulltext.vectors_write() = None;
                tracing::info!(
                    applied,
                    "the full-text log was pruned past this node's position: rebuilding its indexes"
                );
                return self.build_fulltext().await;
            }
            for kind in [Kind::Skills, Kind::Memories] {
                let changed: Vec<(i64, String)> = entries
                    .iter()
                    .filter(|(_, code, _)| *code == kind as i64)
                    .map(|(seq, _, key)| (*seq, key.clone()))
                    .collect();
                let revectored: Vec<String> = entries
                    .iter()
                    .filter(|(_, code, _)| *code == kind as i64 + VECTOR_KIND_OFFSET)
                    .map(|(_, _, key)| key.clone())
                    .collect();
                if !changed.is_empty() {
                    let keys: Vec<String> = changed.iter().map(|(_, k)| k.clone()).collect();
                    let rows = self
                        .read()
                        .await?
                        .all(
                            Stmt::new(format!(
                                "{} AND {} IN ({})",
                                kind.rows(),
                                kind.key_column(),
                                in_list(1, keys.len())
                            ))
                            .bind_all(&keys),
                        )
                        .await?;
                    let texts = rows
                        .iter()
                        .map(|r| row_text::<D>(kind, r))
                        .collect::<StoreResult<Vec<_>>>()?;
                    drop(rows);
                    self.fulltext.applied_rows[by as usize]
                        .fetch_add(keys.len() as u64, Ordering::Relaxed);
                    let analysed = analyse(kind, texts).await?;
                    self.add_in_parts(kind, &keys, analysed).await;
                    self.compact_if_needed(kind);
                    // Its vector was made from the text before this change.
                    if let Some(vectors) = self.fulltext.vectors_write().as_mut() {
                        for (seq, key) in &changed {
                            vectors.stale_before(kind as u8, key, *seq);
                        }
                    }
                }
                if !revectored.is_empty() {
                    let mut s = self.read().await?;
                    self.reload_vectors(&mut s, kind, &revectored).await?;
                }
            }
            self.fulltext.applied_through(newest);
            if entries.len() < BATCH {
                break;
            }
            entries = self.log_past(newest).await?;
        }
        Ok(())
    }

    /// Replaces the rows of `keys` with `rows` (a key without a row now has none: deleted,
    /// unpublished, archived), holding the index's lock for at most [`WORDS_PER_PART`] words
    /// at a time; between parts the lock is handed to the queries waiting for it. The rows
    /// become visible together, at the end. Callers hold `catching_up` (no other row is added
    /// meanwhile).
    async fn add_in_parts(&self, kind: Kind, keys: &[String], rows: Vec<Analyzed>) {
        let mut adding = self.fulltext.write().get_mut(kind).reserve(rows);
        while !adding.is_posted() {
            {
                let mut indexes = self.fulltext.write();
                indexes.get_mut(kind).post(&mut adding, WORDS_PER_PART);
                FairWriteGuard::unlock_fair(indexes);
            }
            tokio::task::yield_now().await;
        }
        let mut indexes = self.fulltext.write();
        let index = indexes.get_mut(kind);
        for key in keys {
            index.remove_keeping_dead(key);
        }
        index.publish(adding);
    }

    /// Compacts `kind`'s index when its dead rows call for it: the copy is built under the
    /// read lock (queries go on; catch-ups, the only writers, hold `catching_up`), then
    /// swapped in.
    fn compact_if_needed(&self, kind: Kind) {
        let compacted = {
            let indexes = self.fulltext.read();
            let index = indexes.get(kind);
            if !index.needs_compaction() {
                return;
            }
            index.compacted()
        };
        // The old index is dropped after the lock is let go (freeing it takes a while).
        let old = std::mem::replace(self.fulltext.write().get_mut(kind), compacted);
        drop(old);
    }
}

/// Whether this node's position is past the log's pruned point: the pruned point sorts
/// before every entry left (see `log_after`).
fn starts_pruned(entries: &[(i64, i64, String)]) -> bool {
    entries.first().is_some_and(|(_, code, _)| *code == PRUNED)
}

fn insert_all(index: &mut Index, rows: Vec<Analyzed>) {
    for row in rows {
        index.insert(row);
    }
}

/// The rows an analysis task made; it fails only if the analysis panicked or the runtime
/// is shutting down.
async fn joined(
    task: tokio::task::JoinHandle<StoreResult<Vec<Analyzed>>>,
) -> StoreResult<Vec<Analyzed>> {
    task.await
        .map_err(|e| StoreError::Internal(format!("analysing rows for search failed: {e}")))?
}

/// A build's page of rows analysed in as many parts as the analysis threads, at once (the
/// build at start is most of a restart's wait), in the page's order.
async fn analyse_on_every_core(kind: Kind, mut texts: Vec<RowText>) -> StoreResult<Vec<Analyzed>> {
    let parts = std::thread::available_parallelism().map_or(2, |n| n.get());
    let size = texts.len().div_ceil(parts).max(1);
    let mut chunks = Vec::with_capacity(parts);
    while !texts.is_empty() {
        let rest = texts.split_off(size.min(texts.len()));
        chunks.push(std::mem::replace(&mut texts, rest));
    }
    let running: Vec<_> = chunks
        .into_iter()
        .map(|chunk| {
            crate::background::run(move || {
                chunk.iter().map(|r| r.analysed(kind)).collect::<Vec<_>>()
            })
        })
        .collect();
    let mut out = Vec::new();
    for part in running {
        out.extend(part.await?);
    }
    Ok(out)
}

impl<D: Dialect> SqlStore<D> {
    /// See [`crate::Store::prune_fulltext_log`]. Under the lock log appends take, so no entry
    /// is being added below the cut meanwhile; in transactions of at most [`PRUNE_CHUNK`]
    /// numbers, so a long-unpruned log does not hold the writer for long.
    pub(crate) async fn prune_log(&self, keep: u64, idle_before: &str) -> StoreResult<LogPrune> {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let mut deleted = 0u64;
        loop {
            let mut s = self.write().await?;
            s.lock(D::LOCK_AUDIT_CHAIN).await?;
            let row = s
                .one(
                    Stmt::new(format!(
                        "SELECT {NEWEST_SEQ} AS newest, {FLOOR_SEQ} AS floor,
                                COALESCE((SELECT MIN(done_seq) FROM embedding_progress
                                          WHERE lease_until > $1), -1) AS pin"
                    ))
                    .bind(idle_before),
                    "log bounds",
                )
                .await?;
            let (newest, floor) = (row.int("newest")?, row.int("floor")?);
            let mut through = newest.saturating_sub(keep);
            let pin = row.int("pin")?;
            if pin >= 0 {
                through = through.min(pin);
            }
            through = through.min(floor.saturating_add(PRUNE_CHUNK));
            if through <= floor {
                let kept = s
                    .one(
                        Stmt::new("SELECT COUNT(*) AS n FROM fulltext_log"),
                        "log size",
                    )
                    .await?
                    .int("n")?;
                return Ok(LogPrune {
                    pruned_through: floor,
                    deleted,
                    kept: crate::sql::driver::to_u64(kept, "log size")?,
                });
            }
            deleted += s
                .execute(Stmt::new("DELETE FROM fulltext_log WHERE seq <= $1").bind(through))
                .await?;
            s.execute(
                Stmt::new("UPDATE fulltext_log_floor SET pruned_through = $1 WHERE id = 1")
                    .bind(through),
            )
            .await?;
            s.commit().await?;
        }
    }
}

/// The log entries past `after`, in order; first, when entries past `after` were pruned, one
/// `(highest number pruned, PRUNED, "")` (it sorts first: every entry up to it is gone).
async fn log_after<D: Dialect>(
    s: &mut Session<D>,
    after: i64,
) -> StoreResult<Vec<(i64, i64, String)>> {
    s.all(
        Stmt::new(format!(
            "SELECT seq, kind, key FROM fulltext_log WHERE seq > $1
             UNION ALL SELECT pruned_through AS seq, {PRUNED} AS kind, '' AS key
               FROM fulltext_log_floor WHERE pruned_through > $1
             ORDER BY seq LIMIT {BATCH}"
        ))
        .bind(after),
    )
    .await?
    .iter()
    .map(|r| {
        let code = r.int("kind")?;
        if !(PRUNED..2 + VECTOR_KIND_OFFSET).contains(&code) {
            return Err(StoreError::Internal(format!(
                "fulltext_log: unknown kind {code}"
            )));
        }
        Ok((r.int("seq")?, code, r.text("key")?))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::{Sqlite, SqliteStore};

    async fn log_entries(store: &SqliteStore, n: usize) {
        let mut s = store.write().await.unwrap();
        let keys: Vec<String> = (0..n).map(|i| format!("mem_{i}")).collect();
        log_changes(&mut s, Kind::Memories, &keys).await.unwrap();
        s.commit().await.unwrap();
    }

    async fn query(store: &SqlStore<Sqlite>) {
        store
            .ranked(
                Kind::Memories,
                "anything",
                &crate::search::Scope::default(),
                5,
                None,
            )
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_node_behind_the_pruned_point_rebuilds_once_and_then_follows_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("x.db")).await.unwrap();
        // Another node writes (a node's own writes are applied by their commit).
        let other = SqliteStore::open(&dir.path().join("x.db")).await.unwrap();
        log_entries(&other, 3).await;
        query(&store).await;
        let builds = || store.fulltext.builds.load(Ordering::Relaxed);
        assert_eq!(builds(), 1);
        assert_eq!(store.fulltext.applied.load(Ordering::Relaxed), 3);
        // Pruning what this node has applied costs it nothing.
        let p = store
            .prune_log(0, "2999-01-01T00:00:00.000Z")
            .await
            .unwrap();
        assert_eq!((p.pruned_through, p.deleted, p.kept), (3, 3, 0));
        query(&store).await;
        assert_eq!(builds(), 1);
        // Entries it never applied pruned: a query goes on with the index as it is, and
        // the follower rebuilds it once, at the pruned point.
        log_entries(&other, 2).await;
        store
            .prune_log(0, "2999-01-01T00:00:00.000Z")
            .await
            .unwrap();
        query(&store).await;
        assert_eq!(builds(), 1);
        assert_eq!(store.fulltext.applied.load(Ordering::Relaxed), 3);
        {
            // Nor does a query wait for a follower that is rebuilding (it holds this lock).
            let _rebuilding = store.fulltext.catching_up.lock().await;
            tokio::time::timeout(std::time::Duration::from_secs(5), query(&store))
                .await
                .expect("a query waited for the follower's rebuild");
        }
        store.follow_log().await.unwrap();
        assert_eq!(builds(), 2);
        assert_eq!(store.fulltext.applied.load(Ordering::Relaxed), 5);
        // The log is empty now; later queries and entries need no rebuild.
        query(&store).await;
        log_entries(&other, 1).await;
        query(&store).await;
        assert_eq!(builds(), 2);
        assert_eq!(store.fulltext.applied.load(Ordering::Relaxed), 6);
    }
}
