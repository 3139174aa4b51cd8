//! Group commit of skill saves: concurrent saves share one write transaction (one WAL fsync
//! on SQLite, one commit flush on PostgreSQL) instead of paying a commit each.
//!
//! Every save queues itself. A save that finds no leader running starts one; the leader takes
//! every save queued so far (up to [`MAX_BATCH`]), runs them in one transaction and goes on
//! with whatever queued meanwhile until the queue is empty. A save that fails (a stale
//! `expected_revision_id`, a limit, a database error) answers its own error while the others
//! go on: the batch is then run again with each save inside its own savepoint, and the failed
//! one is rolled back to it. Nobody is answered
//! before the commit: an acknowledged save is durable. When the batch itself cannot go on (a
//! savepoint statement fails, SQLite rolled the whole transaction back) every save of the
//! batch is run again alone, in its own transaction. Under load batches grow to the number of
//! concurrent writers; with one client every save commits alone, as before.
//!
//! A waiting save waits for its answer only, never for a turn at a lock: with a lock that
//! every save had to take in turn (the first design), a save already answered by someone
//! else's batch still queued for the lock behind the next batch, and each batch then held
//! only the one save that arrived while the previous one committed — batches of one under
//! eight clients.
//!
//! The leader is a task of its own (on SQLite a blocking thread: its statements and fsync
//! run there, not on the async workers), so a client that goes away (its request future
//! dropped) cannot cut a transaction short; a save whose client has gone before its batch
//! starts is skipped (never written later behind the client's back).

use super::{Dialect, Driver, SqlStore, Stmt, skills};
use crate::model::{SaveOutcome, SaveRevision};
use crate::{StoreError, StoreResult};
use std::sync::Mutex;
use tokio::sync::oneshot;

/// At most this many saves share a transaction, so one batch holds the writer for a bounded
/// time (a few milliseconds) and its statements stay within the database's limits.
pub const MAX_BATCH: usize = 32;

struct Pending {
    save: SaveRevision,
    reply: oneshot::Sender<StoreResult<SaveOutcome>>,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Pending>,
    /// A leader is running: it will take what is pending before it stops.
    leading: bool,
}

/// The queue of one store (shared by its clones).
#[derive(Default)]
pub struct SaveGroup {
    queue: Mutex<Queue>,
    batches: std::sync::atomic::AtomicU64,
}

impl SaveGroup {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        // Pushes and drains only: a panic elsewhere cannot leave the queue inconsistent.
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `job`; true when the caller must start a leader.
    fn push(&self, job: Pending) -> bool {
        let mut q = self.queue();
        q.pending.push(job);
        !std::mem::replace(&mut q.leading, true)
    }

    /// The next batch, or none — and then the leader has stopped (under the same lock as
    /// [`Self::push`], so a save queued after this starts the next leader).
    fn next_batch(&self) -> Option<Vec<Pending>> {
        let mut q = self.queue();
        if q.pending.is_empty() {
            q.leading = false;
            return None;
        }
        let n = q.pending.len().min(MAX_BATCH);
        Some(q.pending.drain(..n).collect())
    }

    /// Saves waiting for a batch to take them.
    pub fn queued(&self) -> usize {
        self.queue().pending.len()
    }

    /// Write transactions that carried at least one save (for tests and diagnostics: fewer
    /// than the saves means saves shared commits).
    pub fn batches(&self) -> u64 {
        self.batches.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The running leader. Should it end without stopping (a panic, a runtime shutting down), the
/// queued saves are answered as interrupted (their senders dropped) and the next save starts
/// a new leader, instead of every later save waiting for a leader that is gone.
struct Leader<'a> {
    group: &'a SaveGroup,
    stopped: bool,
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        if !self.stopped {
            let mut q = self.group.queue();
            q.pending.clear();
            q.leading = false;
        }
    }
}

/// Saves `save` in the next group commit and answers after that commit.
pub async fn save<D: Dialect>(store: &SqlStore<D>, save: SaveRevision) -> StoreResult<SaveOutcome> {
    let (reply, answer) = oneshot::channel();
    if store.saves.push(Pending { save, reply }) {
        let store = store.clone();
        <D::Driver as Driver>::spawn_batch(async move {
            let mut leader = Leader {
                group: &store.saves,
                stopped: false,
            };
            while let Some(jobs) = store.saves.next_batch() {
                run_batch(&store, jobs).await;
            }
            leader.stopped = true;
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
///
/// First without savepoints (two statements a save fewer): while every save goes through,
/// they are not needed. When one fails, that transaction is dropped — rolled back, nobody
/// answered — and the batch runs again with a savepoint around each save, so the failed one
/// rolls back alone.
async fn batch_in_one_transaction<D: Dialect>(
    store: &SqlStore<D>,
    jobs: &[Pending],
) -> Result<Vec<StoreResult<SaveOutcome>>, Failure> {
    let mut s = store.write().await.map_err(Failure::Batch)?;
    let mut outcomes = Vec::with_capacity(jobs.len());
    let mut search = skills::SearchRows::default();
    let mut failed = None;
    for job in jobs {
        match skills::save_in(&mut s, &job.save, &mut search).await {
            // An unchanged save wrote nothing: there is nothing to roll back.
            Ok(outcome) => outcomes.push(Ok(outcome)),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if failed.is_none()
        && let Err(e) = search.write(&mut s).await
    {
        failed = Some(e);
    }
    if let Some(e) = failed {
        tracing::debug!(error = %e, saves = jobs.len(), "a save of the batch failed; the batch runs again with savepoints");
        drop(s);
        return batch_with_savepoints(store, jobs).await;
    }
    s.commit().await.map_err(Failure::Commit)?;
    Ok(outcomes)
}

async fn batch_with_savepoints<D: Dialect>(
    store: &SqlStore<D>,
    jobs: &[Pending],
) -> Result<Vec<StoreResult<SaveOutcome>>, Failure> {
    let mut s = store.write().await.map_err(Failure::Batch)?;
    let mut results = Vec::with_capacity(jobs.len());
    for job in jobs {
        s.execute(Stmt::new("SAVEPOINT group_save"))
            .await
            .map_err(Failure::Batch)?;
        let mut search = skills::SearchRows::default();
        let mut result = skills::save_in(&mut s, &job.save, &mut search).await;
        if result.is_ok()
            && let Err(e) = search.write(&mut s).await
        {
            result = Err(e);
        }
        let keep = matches!(&result, Ok(outcome) if outcome.created);
        if !keep {
            s.rollback_to("ROLLBACK TO SAVEPOINT group_save")
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

/// The same failure for every save of a batch (`StoreError` holds only plain data).
fn same_error(e: &StoreError) -> StoreError {
    match e {
        StoreError::Limit(l) => StoreError::Limit(l.clone()),
        StoreError::NotFound(m) => StoreError::NotFound(m.clone()),
        StoreError::Conflict(m) => StoreError::Conflict(m.clone()),
        StoreError::Contention(m) => StoreError::Contention(m.clone()),
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        StoreError::Warming(m) => StoreError::Warming(m.clone()),
        StoreError::Internal(m) => StoreError::Internal(m.clone()),
    }
}
