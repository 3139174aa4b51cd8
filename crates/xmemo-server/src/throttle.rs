//! In-memory budgets per key: failed authentications per client address, failed sign-ins per
//! account and address, registrations, writes.
//!
//! A token bucket per key: `max_failures` tokens, refilled evenly over `window`. Callers
//! **reserve** a token *before* the guarded work ([`FailureLimiter::reserve`]) and settle the
//! reservation after it: [`Reservation::keep`] when the work failed (the token is spent),
//! dropping or [`Reservation::refund`]ing it when it succeeded. A check that only looked, with
//! the failure recorded after the work, let every request of a burst pass the check before the
//! first one recorded anything (16 concurrent guesses all passed a budget of one).
//!
//! A bucket counts its tokens and the reservations still in flight. A request is admitted
//! while a token is left that no reservation holds; when every token left is held by requests
//! in flight it **waits** for one of them to settle (a success gives its token back, a failure
//! spends it), and is refused once no token is left. So at most the budget's tokens can be
//! spent however many requests arrive at once, and a burst of requests that succeed (an
//! agent's parallel calls with a valid key) is delayed by the settling of the ones ahead, not
//! refused. A refused key costs a map lookup. A reservation settles only its own token: a
//! caller holding one valid credential cannot use it to reset its budget.
//!
//! Memory is bounded by `max_keys`: the buckets are a least-recently-used map
//! (`hashlink::LruCache`), so a new key past the bound drops the bucket touched longest ago —
//! in O(1), where a sweep over every bucket under the lock cost O(n) per failure once the
//! map was full, which is exactly when an attacker is filling it.

use hashlink::LruCache;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How many tokens a key has per window. `max_failures == 0` turns the limiter off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterConfig {
    pub max_failures: u32,
    pub window: Duration,
    /// Most keys tracked at once.
    pub max_keys: usize,
}

impl LimiterConfig {
    pub const DEFAULT_MAX_KEYS: usize = 100_000;

    pub const fn new(max_failures: u32, window: Duration) -> Self {
        Self {
            max_failures,
            window,
            max_keys: Self::DEFAULT_MAX_KEYS,
        }
    }

    pub const fn disabled() -> Self {
        Self::new(0, Duration::from_secs(60))
    }

    pub fn enabled(&self) -> bool {
        self.max_failures > 0 && !self.window.is_zero()
    }

    /// Seconds until one spent token is regained.
    fn secs_per_token(&self) -> f64 {
        self.window.as_secs_f64() / f64::from(self.max_failures)
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    /// Reservations not settled yet.
    pending: u32,
    updated: Instant,
}

impl Bucket {
    fn full(config: &LimiterConfig, now: Instant) -> Self {
        Self {
            tokens: f64::from(config.max_failures),
            pending: 0,
            updated: now,
        }
    }

    fn refilled(self, config: &LimiterConfig, now: Instant) -> Self {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        Self {
            tokens: (self.tokens + elapsed / config.secs_per_token())
                .min(f64::from(config.max_failures)),
            updated: now.max(self.updated),
            ..self
        }
    }
}

/// What one attempt to reserve found.
#[derive(Debug)]
pub enum Attempt<K: Hash + Eq + Clone> {
    Reserved(Reservation<K>),
    /// Every token left is held by reservations in flight: wait for one to settle.
    Busy,
    /// No token left: retry after this long.
    Limited(Duration),
}

/// One token taken from a key's bucket by [`FailureLimiter::reserve`]. [`Reservation::keep`]
/// when the guarded work failed; a reservation dropped (or [`Reservation::refund`]ed) gives
/// its token back, so a request cancelled half-way (its client went away) spends nothing.
#[derive(Debug)]
pub struct Reservation<K: Hash + Eq + Clone> {
    held: Option<(Arc<FailureLimiter<K>>, K)>,
}

impl<K: Hash + Eq + Clone> Reservation<K> {
    /// A failure: the token stays spent. `true` when that left the key limited.
    pub fn keep(self) -> bool {
        self.keep_at(Instant::now())
    }

    /// [`Reservation::keep`] at `now` (tests move time by hand).
    pub fn keep_at(mut self, now: Instant) -> bool {
        match self.held.take() {
            Some((limiter, key)) => limiter.settle(&key, true, now),
            None => false,
        }
    }

    /// A success: the token comes back (as when the reservation is dropped).
    pub fn refund(self) {}
}

impl<K: Hash + Eq + Clone> Drop for Reservation<K> {
    fn drop(&mut self) {
        if let Some((limiter, key)) = self.held.take() {
            limiter.settle(&key, false, Instant::now());
        }
    }
}

#[derive(Debug)]
pub struct FailureLimiter<K: Hash + Eq> {
    config: LimiterConfig,
    buckets: Mutex<LruCache<K, Bucket>>,
    /// Woken whenever a reservation settles, for requests waiting on a busy bucket.
    settled: Notify,
}

impl<K: Hash + Eq + Clone> FailureLimiter<K> {
    pub fn new(config: LimiterConfig) -> Self {
        Self {
            config,
            buckets: Mutex::new(LruCache::new(config.max_keys.max(1))),
            settled: Notify::new(),
        }
    }

    pub fn config(&self) -> LimiterConfig {
        self.config
    }

    /// `Err(retry_after)` when `key` has no token left (reservations in flight aside).
    /// Looks only: use [`FailureLimiter::reserve`] before work whose failure must count.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    pub fn check_at(&self, key: &K, now: Instant) -> Result<(), Duration> {
        if !self.config.enabled() {
            return Ok(());
        }
        let buckets = self.lock();
        let Some(bucket) = buckets.peek(key) else {
            return Ok(());
        };
        let bucket = bucket.refilled(&self.config, now);
        if bucket.tokens >= 1.0 {
            Ok(())
        } else {
            Err(self.wait_for(bucket.tokens))
        }
    }

    fn wait_for(&self, tokens: f64) -> Duration {
        Duration::from_secs_f64((1.0 - tokens).max(0.0) * self.config.secs_per_token())
    }

    /// Takes one of `key`'s tokens, waiting while every token left is held by requests in
    /// flight; `Err(retry_after)` once none is left.
    pub async fn reserve(self: &Arc<Self>, key: K) -> Result<Reservation<K>, Duration> {
        loop {
            // Registered before the attempt, so a settle between the two is not missed.
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            match self.try_reserve_at(key.clone(), Instant::now()) {
                Attempt::Reserved(r) => return Ok(r),
                Attempt::Limited(wait) => return Err(wait),
                Attempt::Busy => settled.await,
            }
        }
    }

    /// One attempt to reserve a token of `key` at `now`.
    pub fn try_reserve_at(self: &Arc<Self>, key: K, now: Instant) -> Attempt<K> {
        if !self.config.enabled() {
            return Attempt::Reserved(Reservation { held: None });
        }
        let mut buckets = self.lock();
        let bucket = buckets
            .get(&key)
            .copied()
            .unwrap_or_else(|| Bucket::full(&self.config, now))
            .refilled(&self.config, now);
        if bucket.tokens < 1.0 {
            return Attempt::Limited(self.wait_for(bucket.tokens));
        }
        if bucket.tokens - f64::from(bucket.pending) < 1.0 {
            return Attempt::Busy;
        }
        buckets.insert(
            key.clone(),
            Bucket {
                pending: bucket.pending + 1,
                ..bucket
            },
        );
        Attempt::Reserved(Reservation {
            held: Some((self.clone(), key)),
        })
    }

    /// Settles one reservation of `key`: spends its token (`failed`) or gives it back.
    /// `true` when a spent token left the key limited.
    fn settle(&self, key: &K, failed: bool, now: Instant) -> bool {
        let limited = {
            let mut buckets = self.lock();
            // A bucket dropped meanwhile (the map was full) is full again anyway.
            match buckets.get_mut(key) {
                Some(bucket) => {
                    let mut next = bucket.refilled(&self.config, now);
                    next.pending = next.pending.saturating_sub(1);
                    if failed {
                        next.tokens = (next.tokens - 1.0).max(0.0);
                    }
                    *bucket = next;
                    failed && next.tokens < 1.0
                }
                None => false,
            }
        };
        self.settled.notify_waiters();
        limited
    }

    /// Spends one of `key`'s tokens whatever is left; `true` when that left it limited.
    pub fn record_failure(&self, key: K) -> bool {
        self.record_failure_at(key, Instant::now())
    }

    pub fn record_failure_at(&self, key: K, now: Instant) -> bool {
        if !self.config.enabled() {
            return false;
        }
        let mut buckets = self.lock();
        let bucket = buckets
            .get(&key)
            .copied()
            .unwrap_or_else(|| Bucket::full(&self.config, now))
            .refilled(&self.config, now);
        let had_one = bucket.tokens >= 1.0;
        let next = Bucket {
            tokens: (bucket.tokens - 1.0).max(0.0),
            ..bucket
        };
        buckets.insert(key, next);
        had_one && next.tokens < 1.0
    }

    /// Forgets `key`'s bucket: its budget is whole again (an operator's unlock).
    pub fn forget(&self, key: &K) {
        self.lock().remove(key);
        self.settled.notify_waiters();
    }

    /// Forgets every bucket whose key `matches`. O(n): for rare operator actions only.
    pub fn forget_where(&self, matches: impl Fn(&K) -> bool) {
        self.lock().retain(|k, _| !matches(k));
        self.settled.notify_waiters();
    }

    /// Keys currently tracked.
    pub fn tracked(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<K, Bucket>> {
        // A panic while holding the lock leaves consistent plain data; keep using it.
        self.buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whole seconds for a `Retry-After` header: rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(max: u32, window_secs: u64) -> Arc<FailureLimiter<&'static str>> {
        Arc::new(FailureLimiter::new(LimiterConfig::new(
            max,
            Duration::from_secs(window_secs),
        )))
    }

    fn reserved<K: Hash + Eq + Clone + std::fmt::Debug>(a: Attempt<K>) -> Reservation<K> {
        match a {
            Attempt::Reserved(r) => r,
            other => panic!("not reserved: {other:?}"),
        }
    }

    #[test]
    fn limits_after_the_budget_and_refills_over_the_window() {
        let l = limiter(3, 60);
        let t0 = Instant::now();
        for i in 0..3 {
            let r = reserved(l.try_reserve_at("a", t0));
            // Only the failure that spends the last token reports the change.
            assert_eq!(r.keep_at(t0), i == 2);
        }
        let wait = l.check_at(&"a", t0).expect_err("limited after 3 failures");
        assert!(matches!(l.try_reserve_at("a", t0), Attempt::Limited(_)));
        // One token comes back every 20 s.
        assert_eq!(retry_after_secs(wait), 20);
        // Other keys are not affected.
        assert!(l.check_at(&"b", t0).is_ok());
        // Still limited just before a token is back, free right after.
        assert!(l.check_at(&"a", t0 + Duration::from_secs(19)).is_err());
        assert!(l.check_at(&"a", t0 + Duration::from_secs(20)).is_ok());
        // Spending that one token limits again.
        l.record_failure_at("a", t0 + Duration::from_secs(20));
        assert!(l.check_at(&"a", t0 + Duration::from_secs(21)).is_err());
    }

    #[test]
    fn reservations_in_flight_hold_tokens_until_they_settle() {
        let l = limiter(2, 600);
        let t0 = Instant::now();
        let a = reserved(l.try_reserve_at("k", t0));
        let b = reserved(l.try_reserve_at("k", t0));
        // Both tokens are held: a third request waits (it is not refused).
        assert!(matches!(l.try_reserve_at("k", t0), Attempt::Busy));
        // A success gives its token back.
        b.refund();
        let c = reserved(l.try_reserve_at("k", t0));
        // Two failures spend the budget: now it is refused, not kept waiting.
        a.keep_at(t0);
        c.keep_at(t0);
        assert!(matches!(l.try_reserve_at("k", t0), Attempt::Limited(_)));
        // A dropped reservation (a cancelled request) spends nothing.
        let m = limiter(1, 600);
        drop(reserved(m.try_reserve_at("k", t0)));
        reserved(m.try_reserve_at("k", t0)).keep_at(t0);
        assert!(matches!(m.try_reserve_at("k", t0), Attempt::Limited(_)));
    }

    #[tokio::test]
    async fn a_burst_never_spends_more_than_the_budget_and_successes_only_wait() {
        let l = Arc::new(FailureLimiter::new(LimiterConfig::new(
            5,
            Duration::from_secs(3600),
        )));
        // 64 failing requests at once: exactly 5 are let through.
        let attempts: Vec<_> = (0..64)
            .map(|_| {
                let l = l.clone();
                tokio::spawn(async move {
                    match l.reserve("bad").await {
                        Ok(r) => {
                            tokio::task::yield_now().await;
                            r.keep();
                            1
                        }
                        Err(_) => 0,
                    }
                })
            })
            .collect();
        let mut admitted = 0;
        for a in attempts {
            admitted += a.await.unwrap();
        }
        assert_eq!(admitted, 5);
        // 64 succeeding requests at once from a fresh key: every one goes through.
        let attempts: Vec<_> = (0..64)
            .map(|_| {
                let l = l.clone();
                tokio::spawn(async move {
                    let r = l.reserve("good").await;
                    tokio::task::yield_now().await;
                    r.is_ok()
                })
            })
            .collect();
        for a in attempts {
            assert!(a.await.unwrap());
        }
    }

    #[test]
    fn disabled_never_limits_or_tracks() {
        let l = Arc::new(FailureLimiter::new(LimiterConfig::disabled()));
        let t0 = Instant::now();
        for _ in 0..1000 {
            l.record_failure_at("a", t0);
            reserved(l.try_reserve_at("a", t0)).keep();
        }
        assert!(l.check_at(&"a", t0).is_ok());
        assert_eq!(l.tracked(), 0);
    }

    #[test]
    fn memory_is_bounded_and_the_least_recently_used_bucket_goes() {
        let l = FailureLimiter::new(LimiterConfig {
            max_keys: 2,
            ..LimiterConfig::new(1, Duration::from_secs(10))
        });
        let t0 = Instant::now();
        l.record_failure_at("old", t0);
        l.record_failure_at("busy", t0 + Duration::from_secs(9));
        // "old" was touched longest ago: it is the one dropped.
        l.record_failure_at("new", t0 + Duration::from_secs(9));
        assert_eq!(l.tracked(), 2);
        assert!(l.check_at(&"busy", t0 + Duration::from_secs(9)).is_err());
        assert!(l.check_at(&"new", t0 + Duration::from_secs(9)).is_err());
        assert!(l.check_at(&"old", t0 + Duration::from_secs(9)).is_ok());
        // Full of limited keys: one is forgotten, the bound holds.
        l.record_failure_at("third", t0 + Duration::from_secs(9));
        assert_eq!(l.tracked(), 2);
    }

    #[test]
    fn forgetting_restores_the_budget() {
        let l = FailureLimiter::new(LimiterConfig::new(1, Duration::from_secs(600)));
        let t0 = Instant::now();
        l.record_failure_at(("acct", 1), t0);
        l.record_failure_at(("acct", 2), t0);
        l.record_failure_at(("other", 1), t0);
        l.forget_where(|(a, _)| *a == "acct");
        assert!(l.check_at(&("acct", 1), t0).is_ok());
        assert!(l.check_at(&("acct", 2), t0).is_ok());
        assert!(l.check_at(&("other", 1), t0).is_err());
        l.forget(&("other", 1));
        assert!(l.check_at(&("other", 1), t0).is_ok());
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
        assert_eq!(retry_after_secs(Duration::from_secs(4)), 4);
    }
}
