//! SQLite backend: WAL, foreign keys on, one writer connection (so every write transaction is
//! serialised and revision numbers are gap-free without row locks) and a pool of read-only
//! connections; Level 0 is an FTS5 index (porter + unicode61, BM25).

use crate::migrate::Migration;
use crate::model::SearchQuery;
use crate::search::{CAPPED_CANDIDATES, Plan, Term};
use crate::sql::cache::Index;
use crate::sql::{Dialect, SqlStore, Stmt, in_list};
use crate::{StoreError, StoreResult};
use std::path::Path;

pub(crate) mod lite;
mod merge;

pub struct Sqlite;

/// The SQLite store.
pub type SqliteStore = SqlStore<Sqlite>;

impl Dialect for Sqlite {
    type Driver = lite::Lite;
    const BACKEND: &'static str = "sqlite";
    const MIGRATIONS: &'static [Migration] = crate::embed_migrations!("sqlite");
    const SCHEMA_TABLE_EXISTS: &'static str = "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'";
    // The Level 0 row's rowid is `skills.search_key`: `skill_id` is an unindexed FTS column,
    // so matching on it would scan the table.
    const SEARCH_TABLE: &'static str = "skills_fts";
    const SEARCH_DELETE: &'static str =
        "DELETE FROM skills_fts WHERE rowid = (SELECT search_key FROM skills WHERE skill_id = $1)";
    const SEARCH_INSERT: &'static str = "INSERT INTO skills_fts (rowid, skill_id, workspace_id, slug, name, description)
         SELECT s.search_key, s.skill_id, s.workspace_id, replace(s.slug, '-', ' '), r.name, r.description
         FROM skills s JOIN revisions r ON r.skill_id = s.skill_id AND r.status = 'published'
         WHERE s.skill_id IN ({ids}) AND s.asset_status = 'active'";

    const MEMORY_INDEX_DELETE: Option<&'static str> = Some(
        "DELETE FROM memories_fts WHERE rowid = (SELECT search_key FROM memories WHERE memory_id = $1)",
    );
    const MEMORY_INDEX_INSERT: Option<&'static str> = Some(
        "INSERT INTO memories_fts (rowid, title, content, tags)
         SELECT search_key, COALESCE(title, ''), content, tags FROM memories WHERE memory_id = $1",
    );
    const MEMORY_HIT_JOIN: &'static str = "m.search_key = h.hit_key";
    const INDEX_DELETE_WORKSPACE: &'static [&'static str] = &[
        "DELETE FROM skills_fts WHERE rowid IN (SELECT search_key FROM skills WHERE workspace_id = $1)",
        "DELETE FROM memories_fts WHERE rowid IN (SELECT search_key FROM memories WHERE workspace_id = $1)",
    ];

    fn term_counts(index: Index, terms: &[Term], cap: u64) -> Stmt<'static> {
        let table = match index {
            Index::Skills => "skills_fts",
            Index::Memories => "memories_fts",
        };
        let cap_at = terms.len() + 1;
        let columns: Vec<String> = (0..terms.len())
            .map(|i| {
                format!(
                    "(SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ${} LIMIT ${cap_at})) AS n{i}",
                    i + 1
                )
            })
            .collect();
        let stmt = terms.iter().fold(
            Stmt::new(format!("SELECT {}", columns.join(", "))),
            |stmt, term| {
                stmt.bind(crate::search::fts_terms(std::slice::from_ref(term)).unwrap_or_default())
            },
        );
        stmt.bind(i64::try_from(cap).unwrap_or(i64::MAX))
    }

    /// Ranked: BM25 over the kept words (title and tags weigh more than the content).
    /// Capped: the most recent matching memories of the caller's workspaces, those naming a
    /// word in their title or tags first, without BM25 (which would count every row holding
    /// the words).
    fn memory_match(plan: &Plan, workspace_ids: &[String]) -> Option<(String, Vec<String>)> {
        let ranked = |select: &[Term], boost: &[Term]| {
            Some((
                format!(
                    "hits AS MATERIALIZED (SELECT rowid AS hit_key, -bm25(memories_fts, 5.0, 1.0, 5.0) / {} AS relevance
                 FROM memories_fts WHERE memories_fts MATCH $1)",
                    crate::search::ranked_repeats(boost)
                ),
                vec![crate::search::fts_ranked(select, boost)?],
            ))
        };
        match plan {
            Plan::Ranked { select, boost } => ranked(select, boost),
            // Every match ranked (the recall benchmark meets its targets so).
            Plan::Wide(terms) => ranked(terms, &[]),
            Plan::Capped(terms) => {
                let any = crate::search::fts_terms(terms)?;
                let ws = in_list(3, workspace_ids.len());
                // CROSS JOIN: SQLite keeps the full-text table as the outer loop, so the
                // LIMIT stops the scan of the match early.
                let tier = |n: &str, relevance: &str| {
                    format!(
                        "SELECT * FROM (SELECT f.rowid AS hit_key, {relevance} AS relevance
                         FROM memories_fts f CROSS JOIN memories x ON x.search_key = f.rowid
                         WHERE memories_fts MATCH ${n} AND x.workspace_id IN ({ws})
                         ORDER BY f.rowid DESC LIMIT {CAPPED_CANDIDATES})"
                    )
                };
                let mut values = vec![format!("{{title tags}} : ({any})"), any];
                values.extend(workspace_ids.iter().cloned());
                Some((
                    format!(
                        "hits AS MATERIALIZED (SELECT hit_key, MAX(relevance) AS relevance FROM ({} UNION ALL {}) GROUP BY hit_key)",
                        tier("1", "1.0"),
                        tier("2", "0.1")
                    ),
                    values,
                ))
            }
        }
    }

    /// Bounded work. Ranked: BM25 picks the best few rows inside FTS5 (slug and name weigh
    /// more than the description; bm25() is negative, smaller is better). Capped (only very
    /// common words): the first matching rows naming a word in their slug or name, then the
    /// first others, unscored. Wide (words of a few thousand rows): see its arm. Either way an
    /// exact slug or name is looked up by index, and only those rows are joined and ordered:
    /// exact slug or name first, then rows holding every ranked word, then rank.
    fn search_statement<'q>(query: &'q SearchQuery, plan: &Plan) -> Option<Stmt<'q>> {
        let exact = crate::search::exact_key(&query.text);
        let candidates = i64::from(query.limit) * 4 + 8;
        let (ranked, expressions) = match plan {
            Plan::Ranked { select, boost } => {
                let any = format!(
                    "SELECT rowid AS key, bm25(skills_fts, 0.0, 0.0, 10.0, 5.0, 1.0) / {} AS rank, 0 AS all_words
                     FROM skills_fts WHERE skills_fts MATCH $1 AND workspace_id IN (@ws)
                     ORDER BY rank LIMIT $2",
                    crate::search::ranked_repeats(boost)
                );
                let ranked = vec![crate::search::fts_ranked(select, boost)?];
                match crate::search::fts_all(select, boost) {
                    // Rows holding every ranked word come first (bm25 alone lets a row that
                    // names one rare word outrank the row whose description holds both). The
                    // tier writes each word once, so its bm25 is on the scale of `any`'s
                    // (halved there): `MIN(rank)` compares like with like.
                    Some(all) => (
                        format!(
                            "SELECT key, MIN(rank) AS rank, MAX(all_words) AS all_words FROM (
                               SELECT * FROM (SELECT rowid AS key, bm25(skills_fts, 0.0, 0.0, 10.0, 5.0, 1.0) AS rank, 1 AS all_words
                                 FROM skills_fts WHERE skills_fts MATCH $6 AND workspace_id IN (@ws)
                                 ORDER BY rank LIMIT $2)
                               UNION ALL
                               SELECT * FROM ({any}))
                             GROUP BY key ORDER BY all_words DESC, rank LIMIT $2"
                        ),
                        [ranked, vec![all]].concat(),
                    ),
                    None => (any, ranked),
                }
            }
            Plan::Wide(terms) => {
                let words = crate::search::fts_terms(terms)?;
                // Scored: the rows naming a word in their slug or name (weighed 10 and 5
                // against the description's 1, they hold BM25's best scores) and the rows
                // holding every word; then the first others, unscored. Scoring every match
                // of a word held by thousands of skills cost ~3 µs a row, most of it the
                // workspace check, which reads each row's stored content (5–30 ms a query).
                let scored = |n: &str, all_words: u8| {
                    format!(
                        "SELECT * FROM (SELECT rowid AS key, bm25(skills_fts, 0.0, 0.0, 10.0, 5.0, 1.0) AS rank, {all_words} AS all_words
                         FROM skills_fts WHERE skills_fts MATCH ${n} AND workspace_id IN (@ws)
                         ORDER BY rank LIMIT $2)"
                    )
                };
                let unscored = "SELECT * FROM (SELECT rowid AS key, 0.0 AS rank, 0 AS all_words
                     FROM skills_fts WHERE skills_fts MATCH $6 AND workspace_id IN (@ws) LIMIT $2)";
                let mut tiers = vec![scored("1", 0), unscored.to_string()];
                let mut values = vec![format!("{{slug name}} : ({words})"), words];
                if let Some(all) = crate::search::fts_all(terms, &[]) {
                    tiers.push(scored("7", 1));
                    values.push(all);
                }
                (
                    format!(
                        "SELECT key, MIN(rank) AS rank, MAX(all_words) AS all_words FROM ({})
                         GROUP BY key ORDER BY all_words DESC, rank LIMIT $2",
                        tiers.join(" UNION ALL ")
                    ),
                    values,
                )
            }
            Plan::Capped(terms) => {
                let any = crate::search::fts_terms(terms)?;
                (
                    "SELECT key, MIN(rank) AS rank, 0 AS all_words FROM (
                       SELECT * FROM (SELECT rowid AS key, -1.0 AS rank FROM skills_fts
                         WHERE skills_fts MATCH $1 AND workspace_id IN (@ws) LIMIT $2)
                       UNION ALL
                       SELECT * FROM (SELECT rowid AS key, -0.1 AS rank FROM skills_fts
                         WHERE skills_fts MATCH $6 AND workspace_id IN (@ws) LIMIT $2))
                     GROUP BY key ORDER BY rank, key LIMIT $2"
                        .to_string(),
                    vec![format!("{{slug name}} : ({any})"), any],
                )
            }
        };
        // An exact name is found by index (migration 0007), whatever the plan ranks by.
        let first_ws = 5 + expressions.len();
        let ws = in_list(first_ws, query.workspace_ids.len());
        let ranked = ranked.replace("@ws", &ws);
        let sql = format!(
            "WITH ranked AS MATERIALIZED ({ranked}),
             keys AS (
               SELECT key FROM ranked
               UNION SELECT search_key FROM skills WHERE slug = $3 AND workspace_id IN ({ws})
               UNION SELECT * FROM (SELECT s.search_key FROM revisions r
                 JOIN skills s ON s.skill_id = r.skill_id AND s.asset_status = 'active'
                 WHERE r.status = 'published' AND lower(r.name) = $4 AND s.workspace_id IN ({ws})
                 LIMIT 8))
             SELECT f.skill_id, f.workspace_id, s.slug, f.name, f.description,
                    (s.slug = $3 OR lower(f.name) = $4) AS exact,
                    -COALESCE(r.rank, 0.0) AS relevance
             FROM keys k
             JOIN skills_fts f ON f.rowid = k.key
             JOIN skills s ON s.search_key = k.key
             LEFT JOIN ranked r ON r.key = k.key
             ORDER BY exact DESC, COALESCE(r.all_words, 0) DESC, relevance DESC, s.slug ASC LIMIT $5"
        );
        let mut expressions = expressions.into_iter();
        let mut stmt = Stmt::new(sql)
            .bind(expressions.next().unwrap_or_default())
            .bind(candidates)
            .bind(exact.slug)
            .bind(exact.name)
            .bind(i64::from(query.limit));
        for e in expressions {
            stmt = stmt.bind(e);
        }
        Some(stmt.bind_all(&query.workspace_ids))
    }
}

impl SqlStore<Sqlite> {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with(path, true).await
    }

    /// Opens the database file; with `migrate == false` nothing is changed and a schema that
    /// is behind this binary is refused (for operators who migrate explicitly).
    pub async fn open_with(path: &Path, migrate: bool) -> StoreResult<Self> {
        create_private_file(path).map_err(|e| {
            StoreError::Unavailable(format!("cannot create {}: {e}", path.display()))
        })?;
        let writer = lite::LitePool::open(path, lite::Access::ReadWrite, 1)?;
        let setup = Self::from_pools(writer.clone(), writer.clone());
        if migrate {
            setup.migrate().await?;
        } else if !setup.schema_is_current().await? {
            return Err(StoreError::Unavailable(
                "the database schema is behind this binary; run `xmemo admin migrate`".into(),
            ));
        }
        let readers = std::thread::available_parallelism()
            .map(|n| n.get() as u32 * 2)
            .unwrap_or(4)
            .max(4);
        let reader = lite::LitePool::open(path, lite::Access::ReadOnly, readers)?;
        let _merge_steps = merge::spawn(&writer);
        Ok(Self::from_pools(reader, writer))
    }

    /// The file a `sqlite:` URL names (`sqlite://path` or `sqlite:path`).
    pub fn url_path(url: &str) -> Option<&Path> {
        url.strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .map(Path::new)
    }

    /// `sqlite://path` or `sqlite:path` URL.
    pub async fn open_url(url: &str, migrate: bool) -> StoreResult<Self> {
        let path = Self::url_path(url)
            .ok_or_else(|| StoreError::Unavailable("not a sqlite: URL".into()))?;
        Self::open_with(path, migrate).await
    }
}

/// Mode of a database file this store creates: the file holds every skill and key hash.
pub const DATABASE_FILE_MODE: u32 = 0o600;

/// Creates a missing database file empty (a valid empty SQLite database) with mode 0600 before
/// SQLite opens it, whatever the umask: SQLite itself would create it 0644 minus the umask.
/// Its `-wal` and `-shm` files are created later by SQLite with the database file's own
/// mode, so they are 0600 too. An existing file is left as it is (`xmemo admin doctor`
/// reports one that is too open).
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(DATABASE_FILE_MODE);
    }
    match options.open(path) {
        Ok(file) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(DATABASE_FILE_MODE))?;
            }
            file.sync_all()
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
