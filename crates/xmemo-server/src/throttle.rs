//! In-memory throttling of failures per key (a client address today; an account and an
//! address for password logins later).
//!
//! A token bucket per key: `max_failures` tokens, refilled evenly over `window`, one spent per
//! failure. A key with less than one token left is limited until the bucket refills that far;
//! callers check [`FailureLimiter::check`] *before* doing the guarded work, so a limited key
//! costs nothing more than a map lookup. Successes spend nothing and restore nothing: a
//! caller holding one valid credential cannot use it to reset its guessing budget.
//!
//! Memory is bounded by `max_keys`; past it, buckets that have refilled completely (they
//! carry no information) are dropped first, then an arbitrary one.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many failures a key may have per window. `max_failures == 0` turns the limiter off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterConfig {
    pub max_failures: u32,
    pub window: Duration,
    /// Most keys tracked at once.
    pub max_keys: usize,
}

impl LimiterConfig {
    pub const DEFAULT_MAX_KEYS: usize = 100_000;

    pub fn new(max_failures: u32, window: Duration) -> Self {
        Self {
            max_failures,
            window,
            max_keys: Self::DEFAULT_MAX_KEYS,
        }
    }

    pub fn disabled() -> Self {
        Self::new(0, Duration::from_secs(60))
    }

    fn enabled(&self) -> bool {
        self.max_failures > 0 && !self.window.is_zero()
    }

    /// Seconds until one spent failure is regained.
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
    fn refilled(self, config: &LimiterConfig, now: Instant) -> Self {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        Self {
            tokens: (self.tokens + elapsed / config.secs_per_token())
                .min(f64::from(config.max_failures)),
            updated: now,
        }
    }

    fn is_full(&self, config: &LimiterConfig) -> bool {
        self.tokens >= f64::from(config.max_failures)
    }
}

#[derive(Debug)]
pub struct FailureLimiter<K> {
    config: LimiterConfig,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: Hash + Eq + Clone> FailureLimiter<K> {
    pub fn new(config: LimiterConfig) -> Self {
        Self {
            config,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    pub fn config(&self) -> LimiterConfig {
        self.config
    }

    /// `Err(retry_after)` when `key` has no failure left to spend.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    /// Spends one of `key`'s failures; `true` when that was its last one (it is limited now).
    pub fn record_failure(&self, key: K) -> bool {
        self.record_failure_at(key, Instant::now())
    }

    pub fn check_at(&self, key: &K, now: Instant) -> Result<(), Duration> {
        if !self.config.enabled() {
            return Ok(());
        }
        let buckets = self.lock();
        let Some(bucket) = buckets.get(key) else {
            return Ok(());
        };
        let bucket = bucket.refilled(&self.config, now);
        if bucket.tokens >= 1.0 {
            return Ok(());
        }
        let missing = 1.0 - bucket.tokens;
        Err(Duration::from_secs_f64(
            missing * self.config.secs_per_token(),
        ))
    }

    pub fn record_failure_at(&self, key: K, now: Instant) -> bool {
        if !self.config.enabled() {
            return false;
        }
        let mut buckets = self.lock();
        if !buckets.contains_key(&key) && buckets.len() >= self.config.max_keys {
            let config = self.config;
            buckets.retain(|_, b| !b.refilled(&config, now).is_full(&config));
            if buckets.len() >= self.config.max_keys
                && let Some(victim) = buckets.keys().next().cloned()
            {
                buckets.remove(&victim);
            }
        }
        let full = Bucket {
            tokens: f64::from(self.config.max_failures),
            updated: now,
        };
        let bucket = buckets.entry(key).or_insert(full);
        let mut next = bucket.refilled(&self.config, now);
        let had_one = next.tokens >= 1.0;
        next.tokens = (next.tokens - 1.0).max(0.0);
        *bucket = next;
        had_one && next.tokens < 1.0
    }

    /// Keys currently tracked.
    pub fn tracked(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Bucket>> {
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
            assert!(l.check_at(&"a", t0).is_ok());
            // Only the failure that spends the last token reports the change.
            assert_eq!(l.record_failure_at("a", t0), i == 2);
        }
        let wait = l.check_at(&"a", t0).expect_err("limited after 3 failures");
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
            assert!(l.check_at(&"a", later).is_ok());
            l.record_failure_at("a", later);
        }
        assert!(l.check_at(&"a", later).is_err());
    }

    #[test]
    fn disabled_never_limits_or_tracks() {
        let l = FailureLimiter::new(LimiterConfig::disabled());
        let t0 = Instant::now();
        for _ in 0..1000 {
            l.record_failure_at("a", t0);
        }
        assert!(l.check_at(&"a", t0).is_ok());
        assert_eq!(l.tracked(), 0);
    }

    #[test]
    fn memory_is_bounded_and_refilled_buckets_go_first() {
        let l = FailureLimiter::new(LimiterConfig {
            max_keys: 2,
            ..LimiterConfig::new(1, Duration::from_secs(10))
        });
        let t0 = Instant::now();
        l.record_failure_at("old", t0);
        l.record_failure_at("busy", t0 + Duration::from_secs(9));
        // "old" has refilled by t0 + 11 s, "busy" has not: "old" is the one dropped.
        l.record_failure_at("new", t0 + Duration::from_secs(11));
        assert_eq!(l.tracked(), 2);
        assert!(l.check_at(&"busy", t0 + Duration::from_secs(11)).is_err());
        assert!(l.check_at(&"new", t0 + Duration::from_secs(11)).is_err());
        // Full of limited keys: one is forgotten, the bound holds.
        l.record_failure_at("third", t0 + Duration::from_secs(11));
        assert_eq!(l.tracked(), 2);
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
        assert_eq!(retry_after_secs(Duration::from_secs(4)), 4);
    }
}
