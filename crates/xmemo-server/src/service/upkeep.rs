//! What a server does on its own, on a timer: building its search indexes at start and then
//! following the full-text log (other nodes' writes reach this node's search without a
//! query paying for them), and pruning that log, the table every node reads to keep its
//! search indexes current and the semantic lane reads as its queue, so that it does not
//! grow by one row per write forever. Every node runs it; a prune is idempotent and
//! serialised with the log's appends in the store.

use super::Service;
use super::budgets::{FULLTEXT_LOG_KEEP, IDLE_EMBEDDING_MODEL, SEARCH_FOLLOW_EVERY, UPKEEP_EVERY};
use crate::ServiceResult;
use xmemo_store::LogPrune;

/// The running upkeep; dropping it stops it.
pub struct Upkeep {
    prune: tokio::task::JoinHandle<()>,
    search: tokio::task::JoinHandle<()>,
}

impl Drop for Upkeep {
    fn drop(&mut self) {
        self.prune.abort();
        self.search.abort();
    }
}

impl Service {
    /// The Prometheus lines of this node's search indexes: built or not, their rows, and who
    /// kept them current (rows applied by writers, by the follower, by queries).
    pub(crate) fn render_search_metrics(&self, out: &mut String) {
        use crate::metrics::render_gauge;
        let stats = self.store.search_stats();
        render_gauge(
            out,
            "xmemo_search_ready",
            "1 once this node's search indexes are built (queries do not wait for a build).",
            u64::from(stats.ready),
        );
        render_gauge(
            out,
            "xmemo_search_rows",
            "Rows in this node's search indexes (Level 0 skills and memories).",
            stats.rows,
        );
        for (name, help, value) in [
            (
                "xmemo_search_builds_total",
                "Builds of this node's search indexes from the tables (start, or after a prune past it).",
                stats.builds,
            ),
            (
                "xmemo_search_rows_applied_by_writers_total",
                "Rows this node's writes applied to its search indexes before answering.",
                stats.applied_by_writers,
            ),
            (
                "xmemo_search_rows_applied_by_follower_total",
                "Rows the log follower applied (other nodes' writes).",
                stats.applied_by_follower,
            ),
            (
                "xmemo_search_rows_applied_by_queries_total",
                "Rows a query applied before it could answer (other nodes' writes the follower had not applied yet).",
                stats.applied_by_queries,
            ),
        ] {
            let _ = std::fmt::Write::write_fmt(
                out,
                format_args!("# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"),
            );
        }
    }

    /// Deletes the full-text log's entries older than the newest [`FULLTEXT_LOG_KEEP`] that
    /// no live embedding model still needs.
    pub async fn prune_fulltext_log(&self) -> ServiceResult<LogPrune> {
        self.prune_fulltext_log_keeping(FULLTEXT_LOG_KEEP).await
    }

    /// [`Self::prune_fulltext_log`] keeping the newest `keep` entries.
    pub async fn prune_fulltext_log_keeping(&self, keep: u64) -> ServiceResult<LogPrune> {
        let idle_before = super::clock::timestamp(self.clock.now() - IDLE_EMBEDDING_MODEL);
        Ok(self.store.prune_fulltext_log(keep, &idle_before).await?)
    }

    /// Starts the upkeep: the search indexes built now and the log followed every
    /// [`SEARCH_FOLLOW_EVERY`]; the prune now, then every [`UPKEEP_EVERY`]. A failure is
    /// logged and tried again at the next turn.
    pub fn start_upkeep(&self) -> Upkeep {
        let store = self.store.clone();
        let search = tokio::spawn(async move {
            let mut failing = false;
            loop {
                match store.follow_search_log().await {
                    Ok(()) => failing = false,
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!(error = %e, "following the full-text log failed; queries apply what they find until it works again");
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(SEARCH_FOLLOW_EVERY).await;
            }
        });
        let service = self.clone();
        let prune = tokio::spawn(async move {
            loop {
                match service.prune_fulltext_log().await {
                    Ok(p) if p.deleted > 0 => tracing::info!(
                        deleted = p.deleted,
                        kept = p.kept,
                        pruned_through = p.pruned_through,
                        "full-text log pruned"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "pruning the full-text log failed"),
                }
                tokio::time::sleep(UPKEEP_EVERY).await;
            }
        });
        Upkeep { prune, search }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use crate::service::clock::ManualClock;
    use std::sync::Arc;
    use std::time::Duration;

    /// The service's wiring of the prune: an embedding model whose worker held its lease
    /// within [`IDLE_EMBEDDING_MODEL`] (by the service's clock) holds it back, an older one
    /// does not.
    #[tokio::test]
    async fn a_model_idle_longer_than_a_day_no_longer_holds_the_prune_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = xmemo_store::sqlite::SqliteStore::open(&dir.path().join("x.db"))
            .await
            .unwrap();
        let clock = Arc::new(ManualClock::default());
        let service = Service::new(Arc::new(store)).with_clock(clock.clone());
        let (account, _) = service
            .bootstrap()
            .await
            .unwrap()
            .expect("an empty database");
        let admin = Principal::operator(account);
        // The model's worker takes its lease now, for a minute, at the log's start.
        let lease = service.instant_after(Duration::from_secs(60));
        let work = service
            .store()
            .embedding_work("zq-model", "node-a", &lease, 10)
            .await
            .unwrap()
            .expect("a free lease");
        assert_eq!(work.from.done_seq, 0);
        for i in 0..3 {
            let req = serde_json::from_value(
                serde_json::json!({"kind": "fact", "content": format!("fact {i}")}),
            )
            .unwrap();
            service.remember(&admin, req).await.unwrap();
        }
        let held = service.prune_fulltext_log_keeping(0).await.unwrap();
        assert_eq!((held.deleted, held.kept), (0, 3), "{held:?}");
        clock.advance(IDLE_EMBEDDING_MODEL - Duration::from_secs(3600));
        let still = service.prune_fulltext_log_keeping(0).await.unwrap();
        assert_eq!((still.deleted, still.kept), (0, 3), "{still:?}");
        clock.advance(Duration::from_secs(2 * 3600));
        let gone = service.prune_fulltext_log_keeping(0).await.unwrap();
        assert_eq!((gone.deleted, gone.kept), (3, 0), "{gone:?}");
    }
}
