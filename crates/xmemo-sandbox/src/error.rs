//! Errors returned by the engine before or instead of a run.

/// Why a run did not produce a [`crate::RunOutcome`].
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox cannot run anything (bwrap missing, probe failed) and the unsafe local
    /// fallback is not enabled. Nothing was executed. Maps to `SANDBOX_UNAVAILABLE`.
    #[error("sandbox unavailable: {reason}")]
    Unavailable {
        /// Human-readable cause, also logged at start-up.
        reason: String,
    },
    /// The request itself is malformed (bad path, limits out of range, ...). Nothing ran.
    #[error("invalid sandbox request: {0}")]
    InvalidRequest(String),
    /// Every sandbox uid slot is taken (by this or another server process). Nothing ran.
    #[error("sandbox busy: {0}")]
    Busy(String),
    /// Preparing the run failed on the host (scratch directory, pipes, ...). Nothing ran.
    #[error("sandbox i/o error: {0}")]
    Io(#[from] std::io::Error),
}
