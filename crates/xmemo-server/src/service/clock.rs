//! The time the service decides expiries by (sessions, OAuth codes and tokens, API keys).
//! One clock per service, so a test can move it instead of sleeping past a lifetime.

use std::sync::Mutex;
use std::time::Duration;
use time::OffsetDateTime;

pub trait Clock: Send + Sync {
    fn now(&self) -> OffsetDateTime;
}

/// The system's clock: what every server runs on.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that stands still until it is moved: for tests of expiry, which then need no
/// sleep and cannot be beaten by a slow machine.
#[derive(Debug)]
pub struct ManualClock {
    at: Mutex<OffsetDateTime>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self {
            at: Mutex::new(OffsetDateTime::now_utc()),
        }
    }
}

impl ManualClock {
    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        *at += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.at.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An instant as the store writes timestamps (RFC 3339 UTC with milliseconds), so the text
/// order is the time order.
pub fn timestamp(at: OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.format(&format)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}
