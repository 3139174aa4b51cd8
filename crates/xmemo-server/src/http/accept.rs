//! What to do when `accept` fails.
//!
//! Errors about one connection (it was reset or aborted before we took it) are skipped.
//! Anything else — above all EMFILE/ENFILE when file descriptors run out — repeats at once
//! if retried at once, so the loop waits, doubling the wait from [`FIRST_DELAY`] up to
//! [`MAX_DELAY`], and logs at most once per [`LOG_INTERVAL`] with the number of failures
//! it did not log. One successful accept resets the wait.

use std::io;
use std::time::{Duration, Instant};

pub const FIRST_DELAY: Duration = Duration::from_millis(10);
pub const MAX_DELAY: Duration = Duration::from_secs(1);
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Errors that concern only the connection being accepted.
pub fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// The next step after a failed accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// How long to wait before accepting again.
    pub delay: Duration,
    /// `Some(n)`: log this failure, noting `n` earlier ones that were not logged.
    pub log: Option<u64>,
}

#[derive(Debug, Default)]
pub struct AcceptBackoff {
    delay: Option<Duration>,
    last_log: Option<Instant>,
    unlogged: u64,
}

impl AcceptBackoff {
    pub fn failed(&mut self, now: Instant) -> Step {
        let delay = match self.delay {
            None => FIRST_DELAY,
            Some(d) => (d * 2).min(MAX_DELAY),
        };
        self.delay = Some(delay);
        let due = self
            .last_log
            .is_none_or(|at| now.saturating_duration_since(at) >= LOG_INTERVAL);
        let log = if due {
            self.last_log = Some(now);
            Some(std::mem::take(&mut self.unlogged))
        } else {
            self.unlogged += 1;
            None
        };
        Step { delay, log }
    }

    /// An accept worked: the next failure starts from the first delay again (the log
    /// interval still holds, so a flapping error does not flood the log).
    pub fn succeeded(&mut self) {
        self.delay = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_reset_on_success() {
        let mut b = AcceptBackoff::default();
        let t0 = Instant::now();
        let delays: Vec<Duration> = (0..10).map(|_| b.failed(t0).delay).collect();
        assert_eq!(delays[0], FIRST_DELAY);
        assert_eq!(delays[1], FIRST_DELAY * 2);
        assert_eq!(delays[2], FIRST_DELAY * 4);
        assert!(delays.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*delays.last().expect("delays"), MAX_DELAY);
        // Never zero: the loop cannot spin.
        assert!(delays.iter().all(|d| *d >= FIRST_DELAY));
        b.succeeded();
        assert_eq!(b.failed(t0).delay, FIRST_DELAY);
    }

    #[test]
    fn logs_once_per_interval_counting_the_rest() {
        let mut b = AcceptBackoff::default();
        let t0 = Instant::now();
        assert_eq!(b.failed(t0).log, Some(0));
        for i in 1..=5 {
            assert_eq!(b.failed(t0 + Duration::from_secs(i)).log, None);
        }
        // A success in between does not reopen the log.
        b.succeeded();
        assert_eq!(b.failed(t0 + Duration::from_secs(6)).log, None);
        assert_eq!(b.failed(t0 + LOG_INTERVAL).log, Some(6));
        assert_eq!(b.failed(t0 + LOG_INTERVAL).log, None);
    }

    #[test]
    fn per_connection_errors_are_told_apart() {
        assert!(is_per_connection(&io::Error::from(
            io::ErrorKind::ConnectionAborted
        )));
        // EMFILE: "Too many open files".
        assert!(!is_per_connection(&io::Error::from_raw_os_error(24)));
    }
}
