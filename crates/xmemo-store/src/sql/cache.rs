//! A short-lived cache of what every authenticated request reads first: the API key by its
//! hash, its account, and the account's memberships. Without it those are three SQL
//! statements (three round trips to a database worker) per request, half of a Level 1 read.
//!
//! Invalidation:
//! - **On this store (this node), synchronously.** Every write transaction with a statement
//!   marked [`super::Stmt::writes_auth`] — each statement that may change `api_keys`,
//!   `accounts`, `memberships` or `workspaces` carries the mark — and every script (a
//!   migration, an import) bumps a generation counter when it commits; an entry filled under
//!   an older generation is never served again. The generation is read *before* the database
//!   read that fills an entry, so a fill racing a commit is stamped with the older generation
//!   and discarded. A revocation, a role change, a removal or a deletion is therefore seen by
//!   the very next request on this node.
//! - **Across nodes (several servers on one PostgreSQL) and writes from outside the server
//!   (`xmemo admin` on the same SQLite file, raw SQL): by time.** An entry lives at most
//!   [`AUTH_CACHE_TTL`], so another node serves a revoked key, a removed membership or a lowered
//!   role for at most that long.
//!
//! Only found rows are cached (an unknown key hash is always looked up, so a new key works at
//! once), and each map holds at most [`AUTH_CACHE_MAX_ENTRIES`] (a full map is emptied).

use crate::model::{Account, ApiKey, Membership};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a cached key, account or membership list may be served: the bound on how late a
/// change made elsewhere (another node, another process) is seen.
pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(2);

/// Entries per map; a full map is emptied rather than tracked entry by entry.
pub const AUTH_CACHE_MAX_ENTRIES: usize = 10_000;

/// Tables whose change invalidates the cache.
const AUTH_TABLES: [&str; 4] = ["api_keys", "accounts", "memberships", "workspaces"];

/// A check for debug builds only: a write (not a plain read) that names one of the cached
/// tables. What decides invalidation is the statement's own mark; this catches a plain
/// `UPDATE api_keys …` whose author forgot the mark.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
pub(crate) fn looks_like_auth_write(sql: &str) -> bool {
    let head = sql.trim_start();
    let write = ["INSERT", "UPDATE", "DELETE", "WITH"]
        .iter()
        .any(|w| head.len() >= w.len() && head[..w.len()].eq_ignore_ascii_case(w));
    write && AUTH_TABLES.iter().any(|t| sql.contains(t))
}

struct Entry<T> {
    value: T,
    generation: u64,
    at: Instant,
}

struct Map<T> {
    entries: Mutex<HashMap<String, Entry<T>>>,
}

impl<T: Clone> Map<T> {
    fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &str, generation: u64, ttl: Duration) -> Option<T> {
        let entries = self.entries.lock().ok()?;
        let e = entries.get(key)?;
        (e.generation == generation && e.at.elapsed() < ttl).then(|| e.value.clone())
    }

    fn put(&self, key: &str, value: T, generation: u64) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= AUTH_CACHE_MAX_ENTRIES && !entries.contains_key(key) {
                entries.clear();
            }
            entries.insert(
                key.to_string(),
                Entry {
                    value,
                    generation,
                    at: Instant::now(),
                },
            );
        }
    }
}

/// The cache one [`super::SqlStore`] and its clones share.
pub(crate) struct AuthCache {
    generation: AtomicU64,
    ttl: Duration,
    keys: Map<ApiKey>,
    accounts: Map<Account>,
    memberships: Map<Vec<Membership>>,
}

impl AuthCache {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            generation: AtomicU64::new(0),
            ttl,
            keys: Map::new(),
            accounts: Map::new(),
            memberships: Map::new(),
        }
    }

    /// The current generation: read it before the database read whose result is `put`.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// After a committed write that touched a cached table: nothing cached before is served.
    pub(crate) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn key(&self, hash: &str) -> Option<ApiKey> {
        self.keys.get(hash, self.generation(), self.ttl)
    }
    pub(crate) fn put_key(&self, hash: &str, key: ApiKey, generation: u64) {
        self.keys.put(hash, key, generation);
    }
    pub(crate) fn account(&self, id: &str) -> Option<Account> {
        self.accounts.get(id, self.generation(), self.ttl)
    }
    pub(crate) fn put_account(&self, id: &str, account: Account, generation: u64) {
        self.accounts.put(id, account, generation);
    }
    pub(crate) fn memberships(&self, account_id: &str) -> Option<Vec<Membership>> {
        self.memberships
            .get(account_id, self.generation(), self.ttl)
    }
    pub(crate) fn put_memberships(&self, account_id: &str, list: Vec<Membership>, generation: u64) {
        self.memberships.put(account_id, list, generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_writes_to_cached_tables_are_recognised_by_the_debug_check() {
        assert!(looks_like_auth_write("UPDATE api_keys SET revoked_at = $1"));
        assert!(looks_like_auth_write("  delete from memberships WHERE x"));
        assert!(looks_like_auth_write(
            "INSERT INTO workspaces (a) VALUES ($1)"
        ));
        assert!(!looks_like_auth_write(
            "SELECT * FROM api_keys WHERE key_hash = $1"
        ));
        assert!(!looks_like_auth_write(
            "INSERT INTO revisions (a) VALUES ($1)"
        ));
    }

    #[test]
    fn a_newer_generation_or_an_old_entry_is_a_miss() {
        let cache = AuthCache::new(Duration::from_secs(60));
        let g = cache.generation();
        cache.put_memberships("a", vec![], g);
        assert!(cache.memberships("a").is_some());
        cache.invalidate();
        assert!(cache.memberships("a").is_none());
        // A fill that read the database before the commit carries the old generation.
        cache.put_memberships("a", vec![], g);
        assert!(cache.memberships("a").is_none());
        let expired = AuthCache::new(Duration::ZERO);
        expired.put_memberships("a", vec![], expired.generation());
        assert!(expired.memberships("a").is_none());
    }
}
