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

    /// [`Self::prune_fulltext_log`] keeping the newest `keep` entries (tests and operators).
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
