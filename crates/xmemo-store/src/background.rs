//! Threads at a lower CPU priority for the search indexes' analysis of written rows
//! (tokenising, stemming: ~1.3 ms for a 16 KiB memory) and of the rows a build reads.
//!
//! The writer pays for its writes (issue #29, defect 7), and it should pay in its own time:
//! on the async workers or the blocking pool that work ran at the priority of every request,
//! so on a busy machine another account's search waited behind a stream of long memories.
//! Here the scheduler runs requests first and gives this work what is left (nice 10: about a
//! tenth of a core's share when both contend; all of it when the machine is idle).

use crate::{StoreError, StoreResult};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{LazyLock, Mutex};

/// The nice value of the pool's threads (0 is a request's; 19 the least).
const NICE: i32 = 10;

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    jobs: Mutex<Sender<Job>>,
}

static POOL: LazyLock<Pool> = LazyLock::new(|| {
    let (jobs, queue) = channel::<Job>();
    let queue = std::sync::Arc::new(Mutex::new(queue));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    for i in 0..threads {
        let queue = queue.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("xmemo-analyse-{i}"))
            .spawn(move || work(&queue));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a search analysis thread");
        }
    }
    Pool {
        jobs: Mutex::new(jobs),
    }
});

fn work(queue: &Mutex<Receiver<Job>>) {
    // On Linux the nice value is the calling thread's own (setpriority(2), "BUGS").
    if let Err(e) = rustix::process::setpriority_process(None, NICE) {
        tracing::debug!(error = %e, "search analysis threads keep the normal priority");
    }
    loop {
        let job = {
            let queue = queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            queue.recv()
        };
        let Ok(job) = job else { return };
        // A job that panics answers nobody (its caller sees an error); the thread goes on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Runs `work` on the pool and waits for its result without holding an async worker.
pub async fn run<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> StoreResult<T> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = answer.send(work());
    });
    POOL.jobs
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send(job)
        .map_err(|_| StoreError::Internal("the search analysis threads are gone".into()))?;
    answered
        .await
        .map_err(|_| StoreError::Internal("analysing rows for search failed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_runs_on_threads_of_lower_priority() {
        let nice = run(|| rustix::process::getpriority_process(None))
            .await
            .unwrap()
            .unwrap();
        assert!(nice >= NICE, "{nice}");
    }

    #[tokio::test]
    async fn a_job_that_panics_is_an_error_and_the_pool_goes_on() {
        let failed = run(|| -> u32 { panic!("boom") }).await;
        assert!(matches!(failed, Err(StoreError::Internal(_))));
        for i in 0..8u32 {
            assert_eq!(run(move || i * 2).await.unwrap(), i * 2);
        }
    }
}
