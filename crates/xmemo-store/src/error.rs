/// Storage failures, as the service layer needs to tell them apart.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found: {0}")]
    NotFound(String),
    /// A uniqueness rule or a compare-and-set failed; nothing was written.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A concurrent transaction won (serialization failure, deadlock, a row created meanwhile);
    /// nothing was written and the same request may succeed when tried again.
    #[error("concurrent update: {0}")]
    Contention(String),
    /// The database cannot be reached or refused the connection.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// This node is building its search indexes (after its start): a search cannot be
    /// answered yet; the same request succeeds once they are built.
    #[error("search warming up: {0}")]
    Warming(String),
    /// A bound the caller set on this write would be passed; nothing was written. Checked
    /// inside the write's transaction, so concurrent writes cannot all pass it.
    #[error("limit reached: {0}")]
    Limit(LimitReached),
    /// Anything else; the message is for logs, never for clients.
    #[error("storage error: {0}")]
    Internal(String),
}

/// Which bound a write would pass (see [`StoreError::Limit`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitReached {
    /// The account's quota of `quota` (`memories`, `skills` or `bytes`): it has `used`, the
    /// write needs `requested` more, `limit` is the most.
    #[error(
        "the account's {quota} quota ({limit}) is used up: {used} used, {requested} more asked for"
    )]
    Quota {
        quota: &'static str,
        limit: u64,
        used: u64,
        requested: u64,
    },
    /// The invitee already has `limit` pending invitations.
    #[error("the invitee already has {limit} pending invitations")]
    PendingInvitations { limit: u64 },
    /// The invitee declined an invitation to this team at `declined_at`, within the
    /// cool-down the caller gave.
    #[error("the invitee declined an invitation to this team at {declined_at}")]
    DeclinedRecently { declined_at: String },
    /// The server already holds `limit` registered OAuth clients.
    #[error("{limit} OAuth clients are registered already")]
    RegisteredClients { limit: u64 },
}

impl StoreError {
    /// True when trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Contention(_) | Self::Unavailable(_) | Self::Warming(_)
        )
    }
}

/// SQLite primary result codes (the low byte of an extended code).
const SQLITE_BUSY: i64 = 5;
const SQLITE_LOCKED: i64 = 6;
const SQLITE_NOMEM: i64 = 7;
const SQLITE_IOERR: i64 = 10;
const SQLITE_FULL: i64 = 13;
const SQLITE_CANTOPEN: i64 = 14;

/// Which driver reported a database error: their codes overlap (SQLSTATEs can be all digits).
#[derive(Clone, Copy)]
enum Driver {
    Sqlite,
    Postgres,
}

/// The one classification of database errors, for both drivers: SQLite result codes (decimal,
/// extended) and PostgreSQL SQLSTATEs.
fn classify(driver: Driver, code: &str, message: &str) -> Option<StoreError> {
    if let Driver::Sqlite = driver {
        return match code.parse::<i64>().ok()? & 0xff {
            SQLITE_BUSY | SQLITE_LOCKED => Some(StoreError::Contention(message.to_string())),
            SQLITE_NOMEM | SQLITE_IOERR | SQLITE_FULL | SQLITE_CANTOPEN => {
                Some(StoreError::Unavailable(message.to_string()))
            }
            _ => None,
        };
    }
    match code {
        // serialization_failure, deadlock_detected, lock_not_available
        "40001" | "40P01" | "55P03" => Some(StoreError::Contention(message.to_string())),
        // connection exceptions, admin/crash shutdown, cannot connect now, too many connections
        c if c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03" | "53300") => {
            Some(StoreError::Unavailable(message.to_string()))
        }
        _ => None,
    }
}

/// SQLite's extended codes for a UNIQUE and a PRIMARY KEY constraint failing.
const SQLITE_CONSTRAINT_PRIMARYKEY: i32 = 1555;
const SQLITE_CONSTRAINT_UNIQUE: i32 = 2067;

/// A SQLite failure by its extended result code.
fn classify_sqlite(extended_code: i32, message: &str) -> StoreError {
    if matches!(
        extended_code,
        SQLITE_CONSTRAINT_UNIQUE | SQLITE_CONSTRAINT_PRIMARYKEY
    ) {
        return StoreError::Conflict(message.to_string());
    }
    classify(Driver::Sqlite, &extended_code.to_string(), message)
        .unwrap_or_else(|| StoreError::Internal(message.to_string()))
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::RowNotFound => StoreError::NotFound("row".into()),
            sqlx::Error::Database(db) => {
                if db.is_unique_violation() {
                    return StoreError::Conflict(db.message().to_string());
                }
                db.code()
                    .and_then(|code| classify(Driver::Postgres, &code, db.message()))
                    .unwrap_or_else(|| StoreError::Internal(err.to_string()))
            }
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_) => StoreError::Unavailable(err.to_string()),
            _ => StoreError::Internal(err.to_string()),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        match &err {
            rusqlite::Error::QueryReturnedNoRows => StoreError::NotFound("row".into()),
            rusqlite::Error::SqliteFailure(failure, message) => {
                let message = message.clone().unwrap_or_else(|| failure.to_string());
                classify_sqlite(failure.extended_code, &message)
            }
            _ => StoreError::Internal(err.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Driver::{Postgres, Sqlite};
    use super::{StoreError, classify};

    #[test]
    fn codes_of_both_drivers_are_classified() {
        let pg = |c| classify(Postgres, c, "m");
        let lite = |c| classify(Sqlite, c, "m");
        assert!(matches!(pg("40001"), Some(StoreError::Contention(_))));
        assert!(matches!(pg("40P01"), Some(StoreError::Contention(_))));
        assert!(matches!(pg("08006"), Some(StoreError::Unavailable(_))));
        assert!(pg("23503").is_none());
        assert!(matches!(lite("5"), Some(StoreError::Contention(_))));
        // SQLITE_BUSY_SNAPSHOT (517) is a BUSY.
        assert!(matches!(lite("517"), Some(StoreError::Contention(_))));
        assert!(matches!(lite("13"), Some(StoreError::Unavailable(_))));
        assert!(lite("787").is_none());
        assert!(lite("40001").is_none());
    }
}
