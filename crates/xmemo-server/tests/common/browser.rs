//! The browser of the sign-in and consent tests (it lives in xmemo-testkit, shared with the
//! binary tests).
#![allow(unused_imports)]

pub use xmemo_testkit::browser::*;
