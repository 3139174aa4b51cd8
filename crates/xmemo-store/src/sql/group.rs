//! Group commit of skill saves: concurrent saves share one write transaction (one WAL fsync
//! on SQLite, one commit flush on PostgreSQL) instead of paying a commit each.
//!
//! Every save queues itself and waits for the group lock. The holder (the "leader") takes
//! every save queued so far (up to [`MAX_BATCH`]) and runs them in one transaction, each
//! inside its own savepoint: a save that fails (a stale `expected_revision_id`, a limit, a
//! database error) is rolled back to its savepoint and answers its own error while the others
//! go on. Nobody is answered before the commit: an acknowledged save is durable. When the
//! batch itself cannot go on (a savepoint statement fails, SQLite rolled the whole
//! transaction back) every save of the batch is run again alone, in its own transaction.
//! A save queued while a batch runs waits for the next one, so under load batches grow to the
//! number of concurrent writers and with one client every save commits alone, as before.
//!
//! The batch runs in a spawned task that owns the group lock, so a client that goes away
//! (its request future dropped) cannot cut a transaction short; a save whose client has
//! gone before its batch starts is skipped (never written later behind the client's back).

use super::{Dialect, SqlStore, Stmt, skills};
use crate::model::{SaveOutcome, SaveRevision};
use crate::{StoreError, StoreResult};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// At most this many saves share a transaction, so one batch holds the writer for a bounded
/// time (a few milliseconds) and its statements stay within the database's limits.
pub const MAX_BATCH: usize = 32;

struct Pending {
    save: SaveRevision,
    reply: oneshot::Sender<StoreResult<SaveOutcome>>,
}

/// The queue and group lock of one store (shared by its clones).
#[derive(Default)]
pub struct SaveGroup {
    pending: Mutex<Vec<Pending>>,
    leader: Arc<tokio::sync::Mutex<()>>,
    batches: std::sync::atomic::AtomicU64,
}

impl SaveGroup {
    fn take(&self) -> Vec<Pending> {
        let mut pending = match self.pending.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        let n = pending.len().min(MAX_BATCH);
        pending.drain(..n).collect()
    }

    fn push(&self, job: Pending) {
        match self.pending.lock() {
            Ok(mut p) => p.push(job),
            Err(poisoned) => poisoned.into_inner().push(job),
        }
    }

    /// Write transactions that carried at least one save (for tests and diagnostics: fewer
    /// than the saves means saves shared commits).
    pub fn batches(&self) -> u64 {
        self.batches.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Saves `save` in the next group commit and answers after that commit.
pub async fn save<D: Dialect>(store: &SqlStore<D>, save: SaveRevision) -> StoreResult<SaveOutcome> {
    let (reply, answer) = oneshot::channel();
    store.saves.push(Pending { save, reply });
    let guard = store.saves.leader.clone().lock_owned().await;
    let jobs = store.saves.take();
    if jobs.is_empty() {
        // An earlier leader took this save into its batch (which has answered or will).
        drop(guard);
    } else {
        let store = store.clone();
        tokio::spawn(async move {
            let _leader = guard;
            run_batch(&store, jobs).await;
        });
    }
    answer.await.unwrap_or_else(|_| {
        Err(StoreError::Unavailable(
            "the save was interrupted before it was written; try again".into(),
        ))
    })
}

async fn run_batch<D: Dialect>(store: &SqlStore<D>, jobs: Vec<Pending>) {
    let jobs: Vec<Pending> = jobs.into_iter().filter(|j| !j.reply.is_closed()).collect();
    if jobs.is_empty() {
        return;
    }
    store
        .saves
        .batches
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(saves = jobs.len(), "group commit");
    if jobs.len() == 1 {
        for job in jobs {
            let result = skills::save_alone(store, &job.save).await;
            let _ = job.reply.send(result);
        }
        return;
    }
    match batch_in_one_transaction(store, &jobs).await {
        Ok(results) => {
            for (job, result) in jobs.into_iter().zip(results) {
                let _ = job.reply.send(result);
            }
        }
        Err(Failure::Commit(e)) => {
            // The outcome of a failed COMMIT is not known to this node: answer the error
            // (as a single save would) rather than risk writing twice.
            for job in jobs {
                let _ = job.reply.send(Err(same_error(&e)));
            }
        }
        Err(Failure::Batch(e)) => {
            tracing::warn!(error = %e, saves = jobs.len(), "a group commit could not go on; its saves are run one by one");
            for job in jobs {
                let result = skills::save_alone(store, &job.save).await;
                let _ = job.reply.send(result);
            }
        }
    }
}

enum Failure {
    /// The batch could not go on; nothing of it was committed.
    Batch(StoreError),
    /// COMMIT itself failed.
    Commit(StoreError),
}

/// Each save's own result, in order, once the transaction holding all of them committed.
async fn batch_in_one_transaction<D: Dialect>(
    store: &SqlStore<D>,
    jobs: &[Pending],
) -> Result<Vec<StoreResult<SaveOutcome>>, Failure> {
    let mut s = store.write().await.map_err(Failure::Batch)?;
    let mut results = Vec::with_capacity(jobs.len());
    for job in jobs {
        s.execute(Stmt::new("SAVEPOINT group_save"))
            .await
            .map_err(Failure::Batch)?;
        let result = skills::save_in(&mut s, &job.save).await;
        let keep = matches!(&result, Ok(outcome) if outcome.created);
        if !keep {
            s.execute(Stmt::new("ROLLBACK TO SAVEPOINT group_save"))
                .await
                .map_err(Failure::Batch)?;
        }
        s.execute(Stmt::new("RELEASE SAVEPOINT group_save"))
            .await
            .map_err(Failure::Batch)?;
        results.push(result);
    }
    s.commit().await.map_err(Failure::Commit)?;
    Ok(results)
}

/// The same failure for every save of a batch (`StoreError` holds only strings).
fn same_error(e: &StoreError) -> StoreError {
    match e {
        StoreError::NotFound(m) => StoreError::NotFound(m.clone()),
        StoreError::Conflict(m) => StoreError::Conflict(m.clone()),
        StoreError::Contention(m) => StoreError::Contention(m.clone()),
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        StoreError::Internal(m) => StoreError::Internal(m.clone()),
    }
}
