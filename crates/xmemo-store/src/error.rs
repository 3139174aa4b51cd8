/// Storage failures, as the service layer needs to tell them apart.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found: {0}")]
    NotFound(String),
    /// A uniqueness rule or a compare-and-set failed; nothing was written.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The database cannot be reached or refused the connection.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Anything else; the message is for logs, never for clients.
    #[error("storage error: {0}")]
    Internal(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::RowNotFound => StoreError::NotFound("row".into()),
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                StoreError::Conflict(db.message().to_string())
            }
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_) => StoreError::Unavailable(err.to_string()),
            _ => StoreError::Internal(err.to_string()),
        }
    }
}
