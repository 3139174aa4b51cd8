//! How many script executions may run at once, in all and per account.
//!
//! Each run may take 256 MiB and half a core for up to 60 s (SPEC §5), so without a cap one
//! tenant could start enough of them to exhaust the host. A slot is taken after the access
//! checks and before anything is prepared, and given back when the run's future ends (also
//! when it is dropped). Over the account's cap the answer is RATE_LIMITED (the caller's own
//! load); over the server's cap it is a retryable SERVICE_UNAVAILABLE. Both carry a hint of
//! when to retry: the time until the earliest relevant run reaches its timeout, at most
//! [`RETRY_AFTER_MAX`] since most runs end well before their timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Longest `Retry-After` suggested for a refused execution.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(5);

/// Concurrent executions allowed (each at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutionCaps {
    pub global: usize,
    pub per_account: usize,
}

impl ExecutionCaps {
    pub const DEFAULT_PER_ACCOUNT: usize = 2;

    /// Twice the number of CPUs in all, two per account.
    pub fn default_for_host() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            global: cpus * 2,
            per_account: Self::DEFAULT_PER_ACCOUNT,
        }
    }
}

impl Default for ExecutionCaps {
    fn default() -> Self {
        Self::default_for_host()
    }
}

/// Why no slot was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRefusal {
    /// The account already runs `cap` executions.
    Account { cap: usize, retry_after: Duration },
    /// The server already runs `cap` executions.
    Server { cap: usize, retry_after: Duration },
}

#[derive(Debug)]
struct Running {
    account_id: String,
    deadline: Instant,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    running: HashMap<u64, Running>,
}

#[derive(Debug)]
pub struct ExecutionSlots {
    caps: ExecutionCaps,
    state: Mutex<State>,
}

/// A taken slot; dropping it gives the slot back.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<ExecutionSlots>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().running.remove(&self.id);
    }
}

impl ExecutionSlots {
    pub fn new(caps: ExecutionCaps) -> Self {
        Self {
            caps: ExecutionCaps {
                global: caps.global.max(1),
                per_account: caps.per_account.max(1),
            },
            state: Mutex::new(State::default()),
        }
    }

    pub fn caps(&self) -> ExecutionCaps {
        self.caps
    }

    /// Executions running now.
    pub fn running(&self) -> usize {
        self.lock().running.len()
    }

    /// A slot for a run of `account_id` that may last `timeout`.
    pub fn acquire(
        self: &Arc<Self>,
        account_id: &str,
        timeout: Duration,
    ) -> Result<Slot, SlotRefusal> {
        self.acquire_at(account_id, timeout, Instant::now())
    }

    pub fn acquire_at(
        self: &Arc<Self>,
        account_id: &str,
        timeout: Duration,
        now: Instant,
    ) -> Result<Slot, SlotRefusal> {
        let mut state = self.lock();
        let earliest = |own_only: bool| {
            state
                .running
                .values()
                .filter(|r| !own_only || r.account_id == account_id)
                .map(|r| r.deadline)
                .min()
                .map_or(Duration::from_secs(1), |d| d.saturating_duration_since(now))
                .clamp(Duration::from_secs(1), RETRY_AFTER_MAX)
        };
        let own = state
            .running
            .values()
            .filter(|r| r.account_id == account_id)
            .count();
        if own >= self.caps.per_account {
            return Err(SlotRefusal::Account {
                cap: self.caps.per_account,
                retry_after: earliest(true),
            });
        }
        if state.running.len() >= self.caps.global {
            return Err(SlotRefusal::Server {
                cap: self.caps.global,
                retry_after: earliest(false),
            });
        }
        let id = state.next_id;
        state.next_id += 1;
        state.running.insert(
            id,
            Running {
                account_id: account_id.to_string(),
                deadline: now + timeout,
            },
        );
        Ok(Slot {
            slots: Arc::clone(self),
            id,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain bookkeeping stays consistent across a panic elsewhere.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(global: usize, per_account: usize) -> Arc<ExecutionSlots> {
        Arc::new(ExecutionSlots::new(ExecutionCaps {
            global,
            per_account,
        }))
    }

    #[test]
    fn per_account_cap_first_then_the_global_cap() {
        let s = slots(3, 2);
        let t0 = Instant::now();
        let long = Duration::from_secs(30);
        let a1 = s.acquire_at("a", Duration::from_secs(3), t0).expect("a1");
        let _a2 = s.acquire_at("a", long, t0).expect("a2");
        // The hint is the earliest own deadline (3 s away).
        assert_eq!(
            s.acquire_at("a", long, t0).err(),
            Some(SlotRefusal::Account {
                cap: 2,
                retry_after: Duration::from_secs(3)
            })
        );
        let _b1 = s.acquire_at("b", long, t0).expect("b1");
        // The server is full: "b" is under its own cap but gets the server refusal, and "a"
        // still gets its own.
        assert!(matches!(
            s.acquire_at("b", long, t0),
            Err(SlotRefusal::Server { cap: 3, .. })
        ));
        assert!(matches!(
            s.acquire_at("a", long, t0),
            Err(SlotRefusal::Account { .. })
        ));
        assert_eq!(s.running(), 3);
        // Dropping a slot frees it.
        drop(a1);
        assert_eq!(s.running(), 2);
        assert!(s.acquire_at("a", long, t0).is_ok());
    }

    #[test]
    fn retry_hint_is_clamped() {
        let s = slots(1, 1);
        let t0 = Instant::now();
        let _x = s.acquire_at("x", Duration::from_secs(60), t0).expect("x");
        let refused = s.acquire_at("y", Duration::from_secs(1), t0);
        assert_eq!(
            refused.err(),
            Some(SlotRefusal::Server {
                cap: 1,
                retry_after: RETRY_AFTER_MAX
            })
        );
        // Past the deadline the hint is still at least a second.
        let late = t0 + Duration::from_secs(61);
        assert!(matches!(
            s.acquire_at("x", Duration::from_secs(1), late),
            Err(SlotRefusal::Account { retry_after, .. }) if retry_after == Duration::from_secs(1)
        ));
    }

    #[test]
    fn zero_caps_mean_one() {
        let s = slots(0, 0);
        let t0 = Instant::now();
        let _one = s.acquire_at("a", Duration::from_secs(1), t0).expect("one");
        assert!(s.acquire_at("b", Duration::from_secs(1), t0).is_err());
    }
}
