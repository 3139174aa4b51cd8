//! The one rule for a test whose dependency (PostgreSQL, bubblewrap) is missing on the machine:
//! it fails. A test that passes without having run would hide exactly the regressions it
//! exists to catch, so skipping is never the default and never depends on guessing whether we
//! run in CI. A developer without the dependency can opt out, on purpose and visibly.

/// Set to `1` to let tests skip, loudly, when their dependency is missing. CI never sets it.
pub const ALLOW_SKIP_VAR: &str = "XMEMO_TEST_ALLOW_SKIP";

/// Whether the developer opted out with `XMEMO_TEST_ALLOW_SKIP=1`.
pub fn skipping_allowed() -> bool {
    allows_skipping(std::env::var(ALLOW_SKIP_VAR).ok().as_deref())
}

/// Only the exact value `1` opts out, so a stray `0` or `false` never turns failures into skips.
fn allows_skipping(value: Option<&str>) -> bool {
    value == Some("1")
}

/// `dependency` (e.g. "PostgreSQL at 127.0.0.1:5432") cannot be used because of `reason`.
/// Panics, failing the test, unless [`skipping_allowed`]; then prints a loud line and returns,
/// and the caller skips the test.
#[track_caller]
pub fn dependency_missing(dependency: &str, reason: &str) {
    if let Err(message) = judge(dependency, reason, skipping_allowed()) {
        panic!("{message}");
    }
}

/// `Ok` after printing the skip line when skipping is allowed, else the failure message.
fn judge(dependency: &str, reason: &str, allowed: bool) -> Result<(), String> {
    if allowed {
        eprintln!(
            "\n!!!!!!!! SKIPPED because {ALLOW_SKIP_VAR}=1: {dependency} is unavailable ({reason}). \
             This test asserted nothing. !!!!!!!!\n"
        );
        return Ok(());
    }
    Err(format!(
        "{dependency} is unavailable: {reason}. This test needs it and fails without it \
         (./scripts/test installs and starts what the tests need). To skip such tests on \
         purpose on a machine without it, set {ALLOW_SKIP_VAR}=1."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_value_1_allows_skipping() {
        assert!(allows_skipping(Some("1")));
        for value in [
            None,
            Some(""),
            Some("0"),
            Some("true"),
            Some("yes"),
            Some(" 1"),
        ] {
            assert!(!allows_skipping(value), "{value:?}");
        }
    }

    #[test]
    fn a_missing_dependency_fails_with_its_reason_and_the_way_out() {
        let message = judge("PostgreSQL at h:1", "connection refused", false).unwrap_err();
        assert!(
            message.starts_with("PostgreSQL at h:1 is unavailable: connection refused."),
            "{message}"
        );
        assert!(message.contains("XMEMO_TEST_ALLOW_SKIP=1"), "{message}");
        assert_eq!(
            judge("PostgreSQL at h:1", "connection refused", true),
            Ok(())
        );
    }
}
