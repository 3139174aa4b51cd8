//! In-memory budgets per key: failed authentications per client address, failed sign-ins per
//! account and address, registrations, writes.
//!
//! A token bucket per key: `max_failures` tokens, refilled evenly over `window`. Callers
//! **reserve** a token *before* the guarded work ([`FailureLimiter::reserve`]) and give it
//! back when the work succeeded ([`FailureLimiter::refund`]): a check that only looked and a
//! failure recorded after the work let every request of a burst pass the check before the
//! first one recorded anything (16 concurrent guesses all passed a budget of one). With the
//! reservation taken under the lock, at most the budget's tokens are ever out, however many
//! requests arrive at once. A key with less than one token is refused until the bucket
//! refills that far, at the cost of a map lookup. A refund gives back only the reservation
//! it came from: a caller holding one valid credential cannot use it to reset its budget.
//!
//! Memory is bounded by `max_keys`: the buckets are a least-recently-used map
//! (`hashlink::LruCache`), so a new key past the bound drops the bucket touched longest ago —
//! in O(1), where a sweep over every bucket under the lock cost O(n) per failure once the
//! map was full, which is exactly when an attacker is filling it.

use hashlink::LruCache;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    updated: Instant,
}

impl Bucket {
    fn full(config: &LimiterConfig, now: Instant) -> Self {
        Self {
            tokens: f64::from(config.max_failures),
            updated: now,
        }
    }

    fn refilled(self, config: &LimiterConfig, now: Instant) -> Self {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        Self {
            tokens: (self.tokens + elapsed / config.secs_per_token())
                .min(f64::from(config.max_failures)),
            updated: now.max(self.updated),
        }
    }
}

/// One token taken from a key's bucket by [`FailureLimiter::reserve`]: keep it when the
/// guarded work failed, give it back with [`FailureLimiter::refund`] when it succeeded.
#[derive(Debug)]
#[must_use = "a reservation is kept (a failure) or refunded (a success)"]
pub struct Reservation<K> {
    key: Option<K>,
    /// This reservation took the key's last token: it is limited from now on.
    pub last: bool,
}

impl<K> Reservation<K> {
    /// A failure: the token stays spent.
    pub fn keep(self) {}
}

#[derive(Debug)]
pub struct FailureLimiter<K: Hash + Eq> {
    config: LimiterConfig,
    buckets: Mutex<LruCache<K, Bucket>>,
}

impl<K: Hash + Eq + Clone> FailureLimiter<K> {
    pub fn new(config: LimiterConfig) -> Self {
        Self {
            config,
            buckets: Mutex::new(LruCache::new(config.max_keys.max(1))),
        }
    }

    pub fn config(&self) -> LimiterConfig {
        self.config
    }

    /// `Err(retry_after)` when `key` has no token left. Looks only: use
    /// [`FailureLimiter::reserve`] before work whose failure must count.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    /// Takes one of `key`'s tokens now, or `Err(retry_after)` when it has none.
    pub fn reserve(&self, key: K) -> Result<Reservation<K>, Duration> {
        self.reserve_at(key, Instant::now())
    }

    /// Gives back the token `reservation` took (the guarded work succeeded).
    pub fn refund(&self, reservation: Reservation<K>) {
        self.refund_at(reservation, Instant::now());
    }

    /// Spends one of `key`'s tokens whatever is left; `true` when that was its last one.
    pub fn record_failure(&self, key: K) -> bool {
        self.record_failure_at(key, Instant::now())
    }

    pub fn check_at(&self, key: &K, now: Instant) -> Result<(), Duration> {
        if !self.config.enabled() {
            return Ok(());
        }
        let buckets = self.lock();
        let Some(bucket) = buckets.peek(key) else {
            return Ok(());
        };
        self.verdict(bucket.refilled(&self.config, now))
    }

    fn verdict(&self, bucket: Bucket) -> Result<(), Duration> {
        if bucket.tokens >= 1.0 {
            return Ok(());
        }
        let missing = 1.0 - bucket.tokens;
        Err(Duration::from_secs_f64(
            missing * self.config.secs_per_token(),
        ))
    }

    pub fn reserve_at(&self, key: K, now: Instant) -> Result<Reservation<K>, Duration> {
        if !self.config.enabled() {
            return Ok(Reservation {
                key: None,
                last: false,
            });
        }
        let mut buckets = self.lock();
        let bucket = buckets
            .get(&key)
            .copied()
            .unwrap_or_else(|| Bucket::full(&self.config, now))
            .refilled(&self.config, now);
        self.verdict(bucket)?;
        let next = Bucket {
            tokens: bucket.tokens - 1.0,
            ..bucket
        };
        buckets.insert(key.clone(), next);
        Ok(Reservation {
            key: Some(key),
            last: next.tokens < 1.0,
        })
    }

    pub fn refund_at(&self, reservation: Reservation<K>, now: Instant) {
        let Some(key) = reservation.key else { return };
        let mut buckets = self.lock();
        // A bucket dropped meanwhile (the map was full) is full again anyway.
        if let Some(bucket) = buckets.get_mut(&key) {
            let mut next = bucket.refilled(&self.config, now);
            next.tokens = (next.tokens + 1.0).min(f64::from(self.config.max_failures));
            *bucket = next;
        }
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
    }

    /// Forgets every bucket whose key `matches`. O(n): for rare operator actions only.
    pub fn forget_where(&self, matches: impl Fn(&K) -> bool) {
        self.lock().retain(|k, _| !matches(k));
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

    fn limiter(max: u32, window_secs: u64) -> FailureLimiter<&'static str> {
        FailureLimiter::new(LimiterConfig::new(max, Duration::from_secs(window_secs)))
    }

    #[test]
    fn limits_after_the_budget_and_refills_over_the_window() {
        let l = limiter(3, 60);
        let t0 = Instant::now();
        for i in 0..3 {
            let r = l.reserve_at("a", t0).expect("a token is left");
            // Only the reservation that takes the last token reports the change.
            assert_eq!(r.last, i == 2);
            r.keep();
        }
        let wait = l.check_at(&"a", t0).expect_err("limited after 3 failures");
        assert!(l.reserve_at("a", t0).is_err());
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
        // After a whole window the bucket is full again.
        let later = t0 + Duration::from_secs(100);
        for _ in 0..3 {
            l.reserve_at("a", later).expect("refilled").keep();
        }
        assert!(l.check_at(&"a", later).is_err());
    }

    #[test]
    fn a_refund_gives_back_its_own_token_only() {
        let l = limiter(2, 600);
        let t0 = Instant::now();
        l.reserve_at("a", t0).unwrap().keep();
        let ok = l.reserve_at("a", t0).unwrap();
        assert!(l.reserve_at("a", t0).is_err(), "both tokens are out");
        l.refund_at(ok, t0);
        // The success gave its token back, not the failure's.
        l.reserve_at("a", t0).unwrap().keep();
        assert!(l.reserve_at("a", t0).is_err());
        // Refunds never fill a bucket past its budget.
        let m = limiter(2, 600);
        let r = m.reserve_at("b", t0).unwrap();
        m.refund_at(r, t0 + Duration::from_secs(3600));
        m.reserve_at("b", t0 + Duration::from_secs(3600))
            .unwrap()
            .keep();
        m.reserve_at("b", t0 + Duration::from_secs(3600))
            .unwrap()
            .keep();
        assert!(m.reserve_at("b", t0 + Duration::from_secs(3600)).is_err());
    }

    #[test]
    fn concurrent_reservations_never_exceed_the_budget() {
        let l = std::sync::Arc::new(FailureLimiter::new(LimiterConfig::new(
            5,
            Duration::from_secs(3600),
        )));
        let admitted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (l, admitted) = (l.clone(), admitted.clone());
                std::thread::spawn(move || {
                    for _ in 0..10 {
                        if let Ok(r) = l.reserve("k") {
                            admitted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            r.keep();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(admitted.load(std::sync::atomic::Ordering::SeqCst), 5);
    }

    #[test]
    fn disabled_never_limits_or_tracks() {
        let l = FailureLimiter::new(LimiterConfig::disabled());
        let t0 = Instant::now();
        for _ in 0..1000 {
            l.record_failure_at("a", t0);
            l.reserve_at("a", t0).unwrap().keep();
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
