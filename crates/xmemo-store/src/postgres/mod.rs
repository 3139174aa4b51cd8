//! PostgreSQL backend, for running many `xmemo serve` nodes on one database. What SQLite gets
//! from its single writer connection is obtained here with row locks and advisory locks, so it
//! also holds across nodes:
//!
//! - revision numbers: every write to a skill's revisions first locks the skill row
//!   (`SELECT … FOR NO KEY UPDATE`, or `INSERT … ON CONFLICT DO NOTHING` for a new slug), so
//!   numbers are gap-free and the compare-and-set / dedupe checks see the latest state;
//! - one published revision per skill: a partial unique index, and publishes serialise on the
//!   skill row lock (the later one deprecates the earlier one);
//! - the audit chain: appends take `pg_advisory_xact_lock(AUDIT_LOCK)` inside the writing
//!   transaction, so the chain stays linear; a trigger refuses UPDATE, DELETE and TRUNCATE;
//! - migrations: applied in one transaction under `pg_advisory_xact_lock(MIGRATION_LOCK)`, so
//!   nodes starting together do not race.
//!
//! Lock order, which keeps the backend free of deadlocks: at most one skill row per
//! transaction, then blobs in content-hash order, then the audit lock last (after it a
//! transaction only reads). A group commit of saves (`sql/group.rs`) is the exception: its
//! later saves lock their skill rows while it holds the audit lock, so it can deadlock with a
//! lifecycle change of one of those skills on another connection; PostgreSQL detects it and
//! one side gets a retryable conflict. Rows, timestamps (RFC 3339 text) and JSON (text) read exactly as
//! on SQLite; the statements are the shared ones of `crate::sql`.

mod url;

pub use url::redact_url;

use crate::migrate::Migration;
use crate::model::SearchQuery;
use crate::search::{CAPPED_CANDIDATES, Plan, Term};
use crate::sql::cache::Index;
use crate::sql::{Dialect, SqlStore, Stmt, in_list};
use crate::{StoreError, StoreResult};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;

pub struct Postgres;

/// The PostgreSQL store.
pub type PostgresStore = SqlStore<Postgres>;

/// Advisory lock keys (`pg_advisory_xact_lock(bigint)`): "xmemo:au" and "xmemo:mg".
const AUDIT_LOCK: &str = "SELECT pg_advisory_xact_lock(8677703577704751477)";
const MIGRATION_LOCK: &str = "SELECT pg_advisory_xact_lock(8677703577704754535)";

impl Dialect for Postgres {
    type Driver = sqlx::Postgres;
    const BACKEND: &'static str = "postgres";
    const MIGRATIONS: &'static [Migration] = crate::embed_migrations!("postgres");
    const SCHEMA_TABLE_EXISTS: &'static str =
        "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 ELSE 1 END::bigint AS n";
    const LOCK_ROWS: &'static str = " FOR NO KEY UPDATE";
    const LOCK_AUDIT_CHAIN: Option<&'static str> = Some(AUDIT_LOCK);
    const LOCK_MIGRATIONS: Option<&'static str> = Some(MIGRATION_LOCK);
    const SEARCH_TABLE: &'static str = "skill_search";
    const SEARCH_DELETE: &'static str = "DELETE FROM skill_search WHERE skill_id = $1";
    const SEARCH_INSERT: &'static str =
        "INSERT INTO skill_search (skill_id, workspace_id, slug, name, description)
         SELECT s.skill_id, s.workspace_id, s.slug, r.name, r.description
         FROM skills s JOIN revisions r ON r.skill_id = s.skill_id AND r.status = 'published'
         WHERE s.skill_id IN ({ids}) AND s.asset_status = 'active'";

    const MEMORY_HIT_JOIN: &'static str = "m.memory_id = h.hit_key";

    fn term_counts(index: Index, terms: &[Term], cap: u64) -> Stmt<'static> {
        let stem = index == Index::Memories;
        let from = match index {
            Index::Skills => "skill_search",
            Index::Memories => "memories",
        };
        let cap_at = 2 * terms.len() + 1;
        let columns: Vec<String> = (0..terms.len())
            .map(|i| {
                let (plain, stemmed) = (2 * i + 1, 2 * i + 2);
                // Through markers: "$2" would also match inside a renumbered "$21".
                let tsquery = TSQUERY
                    .replace("$1", "@plain")
                    .replace("$2", "@stemmed")
                    .replace("@plain", &format!("${plain}"))
                    .replace("@stemmed", &format!("${stemmed}"));
                format!(
                    "(SELECT COUNT(*)::bigint FROM (SELECT 1 FROM {from} x
                      WHERE ${plain} <> '' AND x.document @@ {tsquery} LIMIT ${cap_at}) c) AS n{i}"
                )
            })
            .collect();
        let stmt = terms.iter().fold(
            Stmt::new(format!("SELECT {}", columns.join(", "))),
            |stmt, term| {
                let q = tsqueries_of(std::slice::from_ref(term), stem);
                let (plain, stemmed) = q.map(|q| (q.plain, q.stemmed)).unwrap_or_default();
                stmt.bind(plain).bind(stemmed)
            },
        );
        stmt.bind(i64::try_from(cap).unwrap_or(i64::MAX))
    }

    /// Ranked: cover density over every memory matching a selecting word, scored over the
    /// selecting and boosting words. Capped (only very common words): a bounded number of the
    /// caller's matching memories, ranked.
    fn memory_match(plan: &Plan, workspace_ids: &[String]) -> Option<(String, Vec<String>)> {
        let (select, all, capped) = split(plan);
        let s = tsqueries_of(&select, true)?;
        let a = tsqueries_of(&all, true)?;
        let mut values = vec![s.plain, s.stemmed, a.plain, a.stemmed];
        let bound = if capped {
            values.extend(workspace_ids.iter().cloned());
            format!(
                " AND x.workspace_id IN ({}) LIMIT {CAPPED_CANDIDATES}",
                in_list(5, workspace_ids.len())
            )
        } else {
            String::new()
        };
        Some((
            format!(
                "hits AS (SELECT x.memory_id AS hit_key,
                     ts_rank_cd('{{0.1, 0.2, 0.5, 1.0}}'::float4[], x.document, q.ranking, 1)::float8 AS relevance
                 FROM memories x
                 CROSS JOIN (SELECT {TSQUERY} AS query, {ranking} AS ranking) q
                 WHERE x.document @@ q.query{bound})",
                ranking = TSQUERY.replace("$1", "$3").replace("$2", "$4"),
            ),
            values,
        ))
    }

    /// Exact slug or name matches first, then cover density (slug A=1.0, name B=0.5,
    /// description C=0.1, like SQLite's 10/5/1 BM25 column weights; divided by the document
    /// length, as BM25 favours short documents), then slug. The index holds every text both as
    /// plain words and stemmed ('english'); see [`tsqueries_of`]. Bounded work: the rows
    /// ranked are those of the rarest words ([`Plan::Ranked`], scored with the boosting words
    /// too; [`Plan::Wide`] ranks every match of its words), or a bounded number of matches
    /// ([`Plan::Capped`]); an exact slug or name is looked up by index.
    fn search_statement<'q>(query: &'q SearchQuery, plan: &Plan) -> Option<Stmt<'q>> {
        let (select, all, capped) = split(plan);
        let cap = if capped {
            format!(" LIMIT {CAPPED_CANDIDATES}")
        } else {
            String::new()
        };
        let sel = tsqueries_of(&select, false)?;
        let every = tsqueries_of(&all, false)?;
        let exact = crate::search::exact_key(&query.text);
        let ws = in_list(9, query.workspace_ids.len());
        let sql = format!(
            "WITH q AS (SELECT {tsq} AS query, {ranking} AS ranking),
             cand AS (
               (SELECT f.skill_id FROM skill_search f, q
                WHERE f.document @@ q.query AND f.workspace_id IN ({ws}){cap})
               UNION
               (SELECT skill_id FROM skills WHERE slug = $1 AND workspace_id IN ({ws}))
               UNION
               (SELECT r.skill_id FROM revisions r
                JOIN skills s ON s.skill_id = r.skill_id AND s.asset_status = 'active'
                WHERE r.status = 'published' AND lower(r.name) = $2
                  AND s.workspace_id IN ({ws}) LIMIT 8))
             SELECT s.skill_id, s.workspace_id, s.slug, f.name, f.description,
                    (s.slug = $1 OR lower(f.name) = $2) AS exact,
                    ts_rank_cd('{{0.0, 0.1, 0.5, 1.0}}'::float4[], f.document, q.ranking, 2)::float8 AS relevance
             FROM cand c
             JOIN skill_search f ON f.skill_id = c.skill_id
             JOIN skills s ON s.skill_id = c.skill_id
             CROSS JOIN q
             ORDER BY exact DESC, f.document @@ to_tsquery('simple'::regconfig, $8) DESC,
                      relevance DESC, s.slug ASC
             LIMIT $5",
            tsq = TSQUERY.replace("$1", "$3").replace("$2", "$4"),
            ranking = TSQUERY.replace("$1", "$6").replace("$2", "$7"),
        );
        Some(
            Stmt::new(sql)
                .bind(exact.slug)
                .bind(exact.name)
                .bind(sel.plain)
                .bind(sel.stemmed)
                .bind(i64::from(query.limit))
                .bind(every.plain)
                .bind(every.stemmed)
                // Rows holding every ranked word (as typed) come first, as on SQLite.
                .bind(every.plain_all)
                .bind_all(&query.workspace_ids),
        )
    }
}

/// The words a plan selects rows by, the words it ranks them by, and whether it is capped.
fn split(plan: &Plan) -> (Vec<Term>, Vec<Term>, bool) {
    match plan {
        Plan::Ranked { select, boost } => {
            let mut all = select.clone();
            all.extend(boost.iter().cloned());
            (select.clone(), all, false)
        }
        // Ranked over every match, as it was before the plan had this case.
        Plan::Wide(terms) => (terms.clone(), terms.clone(), false),
        Plan::Capped(terms) => (terms.clone(), terms.clone(), true),
    }
}

/// The tsquery of a plain (`$1`) and a stemmed (`$2`) query text ([`TsQueries`]).
const TSQUERY: &str = "(CASE WHEN $2 = '' THEN to_tsquery('simple'::regconfig, $1)
     ELSE to_tsquery('simple'::regconfig, $1) || to_tsquery('english'::regconfig, $2) END)";

/// Connection pool settings of a node.
#[derive(Debug, Clone)]
pub struct PgPoolSettings {
    /// Connections this node may hold open (keep nodes × this under the server's
    /// `max_connections`).
    pub max_connections: u32,
    /// Connections kept open even when idle.
    pub min_connections: u32,
    /// How long a query waits for a free connection before failing as unavailable.
    pub acquire_timeout: Duration,
    /// How long the first connection may take before `connect` gives up.
    pub connect_timeout: Duration,
    pub idle_timeout: Option<Duration>,
    pub max_lifetime: Option<Duration>,
    /// Shown in `pg_stat_activity`.
    pub application_name: String,
}

impl Default for PgPoolSettings {
    fn default() -> Self {
        Self {
            max_connections: 10,
            min_connections: 0,
            acquire_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(600)),
            max_lifetime: Some(Duration::from_secs(1800)),
            application_name: "xmemo".into(),
        }
    }
}

impl SqlStore<Postgres> {
    /// Connects to `postgres://user:password@host:port/database?…` without touching the
    /// schema. An invalid URL or an unreachable / refusing server is
    /// [`StoreError::Unavailable`], with a message that never contains the password.
    pub async fn connect(url: &str, settings: PgPoolSettings) -> StoreResult<Self> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("postgres" | "postgresql")) {
            return Err(StoreError::Unavailable(
                "not a PostgreSQL URL: expected postgres://user:password@host:port/database".into(),
            ));
        }
        // Messages name the target from the parsed options (never the URL text itself), and
        // are scrubbed of the URL's passwords all the same.
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Unavailable(url::scrub(&format!("invalid PostgreSQL URL: {e}"), url))
        })?;
        Self::connect_with(options, settings)
            .await
            .map_err(|e| match e {
                StoreError::Unavailable(m) => StoreError::Unavailable(url::scrub(&m, url)),
                other => other,
            })
    }

    /// Like [`PostgresStore::connect`] with already-built connect options.
    pub async fn connect_with(
        options: PgConnectOptions,
        settings: PgPoolSettings,
    ) -> StoreResult<Self> {
        let options = options.application_name(&settings.application_name);
        let target = describe(&options);
        // One direct attempt first: the pool would retry until its acquire timeout and then
        // report only "timed out", hiding the cause (refused, unknown database, bad password).
        match tokio::time::timeout(
            settings.connect_timeout,
            PgConnection::connect_with(&options),
        )
        .await
        {
            Err(_) => {
                return Err(StoreError::Unavailable(format!(
                    "cannot connect to PostgreSQL at {target}: no answer within {:?}",
                    settings.connect_timeout
                )));
            }
            Ok(Err(e)) => {
                return Err(StoreError::Unavailable(format!(
                    "cannot connect to PostgreSQL at {target}: {}",
                    connect_error_text(&e)
                )));
            }
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .min_connections(settings.min_connections)
            .acquire_timeout(settings.acquire_timeout)
            .idle_timeout(settings.idle_timeout)
            .max_lifetime(settings.max_lifetime)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // Stop-word-only text searches and `IF NOT EXISTS` raise NOTICEs, which
                    // sqlx would log at INFO on every occurrence.
                    sqlx::raw_sql("SET client_min_messages = warning")
                        .execute(conn)
                        .await?;
                    Ok(())
                })
            })
            .connect_lazy_with(options);
        Ok(Self::from_pools(pool.clone(), pool))
    }

    /// [`PostgresStore::connect`] then [`PostgresStore::migrate`].
    pub async fn connect_and_migrate(url: &str, settings: PgPoolSettings) -> StoreResult<Self> {
        let store = Self::connect(url, settings).await?;
        store.migrate().await?;
        Ok(store)
    }
}

fn connect_error_text(err: &sqlx::Error) -> String {
    match err {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    }
}

/// `postgres://user@host:port/database`, for messages (the password is never part of it).
fn describe(options: &PgConnectOptions) -> String {
    let database = options
        .get_database()
        .unwrap_or_else(|| options.get_username());
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    format!("postgres://{}@{host}/{database}", options.get_username())
}

/// The Level 0 query as two `to_tsquery` texts, ORed together by the search: every word as
/// typed ('simple' config), the last one as a prefix for search-as-you-type; and the words but
/// the last for the stemmed ('english') index, which is how SQLite's porter tokenizer treats
/// them (its prefix term is not stemmed). Words are letters and digits only
/// (`crate::search::terms`), single-quoted, so no tsquery syntax from the input survives; both
/// texts are passed as bound parameters. `None` when the query has no word.
pub(crate) struct TsQueries {
    pub plain: String,
    pub stemmed: String,
    /// Every word as typed (`&`): the rows holding them all.
    pub plain_all: String,
}

#[cfg(test)]
pub(crate) fn tsqueries(query: &str) -> Option<TsQueries> {
    tsqueries_with(query, false)
}

/// With `stem_last`, the last word is also matched stemmed (memory recall: words are typed
/// whole, and "deploys" should find "deploy"), beside its prefix.
#[cfg(test)]
fn tsqueries_with(query: &str, stem_last: bool) -> Option<TsQueries> {
    tsqueries_of(&crate::search::query_terms(query), stem_last)
}

/// [`TsQueries`] of some terms: prefixes as `:*` in the plain text, and stemmed only with
/// `stem_prefix`.
fn tsqueries_of(terms: &[Term], stem_prefix: bool) -> Option<TsQueries> {
    let terms: Vec<&Term> = terms
        .iter()
        .filter(|t| !t.word.is_empty() && t.word.chars().all(char::is_alphanumeric))
        .collect();
    if terms.is_empty() {
        return None;
    }
    let plain: Vec<String> = terms
        .iter()
        .map(|t| {
            if t.prefix {
                format!("'{}':*", t.word)
            } else {
                format!("'{}'", t.word)
            }
        })
        .collect();
    let stemmed: Vec<String> = terms
        .iter()
        .filter(|t| !t.prefix || stem_prefix)
        .map(|t| format!("'{}'", t.word))
        .collect();
    Some(TsQueries {
        plain: plain.join(" | "),
        stemmed: stemmed.join(" | "),
        plain_all: plain.join(" & "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsquery_quotes_words_and_prefixes_the_last() {
        let q = tsqueries("deploy  prod").unwrap();
        assert_eq!(q.plain, "'deploy' | 'prod':*");
        assert_eq!(q.stemmed, "'deploy'");
        assert_eq!(q.plain_all, "'deploy' & 'prod':*");
        let q = tsqueries("a' OR NEAR(b) & !c:*").unwrap();
        assert_eq!(q.plain, "'a' | 'or' | 'near' | 'b' | 'c':*");
        assert_eq!(q.stemmed, "'a' | 'or' | 'near' | 'b'");
        assert!(tsqueries("  -- ** ' \" ").is_none());
        let q = tsqueries("Über").unwrap();
        assert_eq!((q.plain.as_str(), q.stemmed.as_str()), ("'über':*", ""));
    }

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("postgres://app:s3cr%40t@db.example:5432/xmemo?sslmode=require"),
            "postgres://app:***@db.example:5432/xmemo?sslmode=require"
        );
        assert_eq!(
            redact_url("postgres://app@db/xmemo?password=hunter2&application_name=x"),
            "postgres://app@db/xmemo?password=***&application_name=x"
        );
        assert_eq!(redact_url("postgres://db/xmemo"), "postgres://db/xmemo");
        assert_eq!(redact_url("garbage"), "garbage");
        assert_eq!(
            redact_url("postgres://app:pa/ss?w@rd@db:5432/x?sslmode=disable"),
            "postgres://app:***@db:5432/x?sslmode=disable"
        );
    }

    #[test]
    fn scrub_removes_raw_and_decoded_passwords() {
        let url = "postgres://app:s3cr%40t@db/x?password=other";
        let m = url::scrub("a s3cr%40t b s3cr@t c other", url);
        assert!(!m.contains("s3cr") && !m.contains("other"), "{m}");
    }
}
