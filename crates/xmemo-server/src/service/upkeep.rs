//! What a server does on its own, on a timer: pruning the full-text log, the table every
//! node reads to keep its search indexes current and the semantic lane reads as its queue,
//! so that it does not grow by one row per write forever. Every node runs it; a prune is
//! idempotent and serialised with the log's appends in the store.

use super::Service;
use super::budgets::{FULLTEXT_LOG_KEEP, IDLE_EMBEDDING_MODEL, UPKEEP_EVERY};
use crate::ServiceResult;
use xmemo_store::LogPrune;

/// The running upkeep; dropping it stops it.
pub struct Upkeep(tokio::task::JoinHandle<()>);

impl Drop for Upkeep {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Service {
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

    /// Starts the upkeep: now, then every [`UPKEEP_EVERY`]. A failure is logged and tried
    /// again at the next turn.
    pub fn start_upkeep(&self) -> Upkeep {
        let service = self.clone();
        Upkeep(tokio::spawn(async move {
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
        }))
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
