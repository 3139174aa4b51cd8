//! The service layer: every use-case and access check, once. Transports call these methods
//! with an authenticated [`Principal`] and render the results.

mod access;
mod account_data;
mod accounts;
pub mod clock;
pub mod exec_slots;
mod execute;
mod imports;
mod invitations;
pub mod memories;
pub mod oauth;
mod packages;
pub mod page;
mod recall;
pub mod schema;
pub mod semantic;
mod served;
pub mod signin;
mod skills;
mod teams;
pub mod types;

pub use access::Access;
pub use accounts::{Audience, DEFAULT_AUTH_THROTTLE, DEFAULT_PROFILE, throttle_key};
pub use imports::{
    BatchImported, BatchItem, BatchSummary, ImportAnswer, ImportOptions, ImportOutcome, Imported,
    ItemRevision,
};
pub use packages::{DiffSide, SkillDiff};
pub use page::{Page, PageRequest};
pub use served::{Served, ServedList};
use std::sync::Arc;
use xmemo_store::Store;

#[derive(Clone)]
pub struct Service {
    store: Arc<dyn Store>,
    /// Runs skill scripts; `None` answers every execution with SANDBOX_UNAVAILABLE.
    sandbox: Option<xmemo_sandbox::SandboxEngine>,
    metrics: Arc<crate::metrics::Metrics>,
    /// Outbound rules and hosts of repository imports (`with_fetch_config`).
    fetch: Arc<crate::fetch::FetchConfig>,
    /// Concurrent executions, in all and per account (`with_execution_caps`).
    executions: Arc<exec_slots::ExecutionSlots>,
    /// Failed authentications per client address (`with_auth_throttle`).
    auth_failures: Arc<crate::throttle::FailureLimiter<std::net::IpAddr>>,
    /// Failed sign-ins per account handle (`with_login_throttle`).
    login_failures: Arc<crate::throttle::FailureLimiter<String>>,
    /// Lifetimes of sign-in sessions (`with_session_config`).
    sessions: signin::SessionConfig,
    /// OAuth settings (`with_oauth_config`), fetched metadata documents, and the budget of
    /// client registrations per address.
    oauth: Arc<oauth::OAuthConfig>,
    client_documents: Arc<oauth::cimd::DocumentCache>,
    registrations: Arc<crate::throttle::FailureLimiter<std::net::IpAddr>>,
    /// What expiries are decided by (`with_clock`; the system's clock by default).
    clock: Arc<dyn clock::Clock>,
    /// The semantic recall lane, when an embedding model is configured.
    semantic: Option<Arc<semantic::SemanticLane>>,
}

impl Service {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            sandbox: None,
            metrics: Arc::new(crate::metrics::Metrics::new()),
            fetch: Arc::new(crate::fetch::FetchConfig::default()),
            executions: Arc::new(exec_slots::ExecutionSlots::new(
                exec_slots::ExecutionCaps::default(),
            )),
            auth_failures: Arc::new(crate::throttle::FailureLimiter::new(
                accounts::DEFAULT_AUTH_THROTTLE,
            )),
            login_failures: Arc::new(crate::throttle::FailureLimiter::new(
                signin::DEFAULT_LOGIN_THROTTLE,
            )),
            sessions: signin::SessionConfig::default(),
            oauth: Arc::new(oauth::OAuthConfig::default()),
            client_documents: Arc::new(oauth::cimd::DocumentCache::default()),
            registrations: Arc::new(crate::throttle::FailureLimiter::new(
                oauth::DEFAULT_REGISTRATION_BUDGET,
            )),
            clock: Arc::new(clock::SystemClock),
            semantic: None,
        }
    }

    /// This service deciding expiries by `clock` (tests move a [`clock::ManualClock`]).
    pub fn with_clock(mut self, clock: Arc<dyn clock::Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Now, by this service's clock, as the store writes timestamps.
    pub(crate) fn now(&self) -> String {
        clock::timestamp(self.clock.now())
    }

    /// `d` from now, by this service's clock, as the store writes timestamps.
    pub(crate) fn instant_after(&self, d: std::time::Duration) -> String {
        clock::timestamp(self.clock.now() + d)
    }

    /// This service with these OAuth settings (client profiles).
    pub fn with_oauth_config(mut self, config: oauth::OAuthConfig) -> Self {
        self.oauth = Arc::new(config);
        self
    }

    /// This service with this budget of dynamic client registrations per address (default:
    /// 30 an hour).
    pub fn with_registration_budget(mut self, config: crate::throttle::LimiterConfig) -> Self {
        self.registrations = Arc::new(crate::throttle::FailureLimiter::new(config));
        self
    }

    /// This service with this budget of failed sign-ins per account (default: 10 in 10
    /// minutes).
    pub fn with_login_throttle(mut self, config: crate::throttle::LimiterConfig) -> Self {
        self.login_failures = Arc::new(crate::throttle::FailureLimiter::new(config));
        self
    }

    /// This service with these session lifetimes (default: 8 hours idle, 7 days at most).
    pub fn with_session_config(mut self, config: signin::SessionConfig) -> Self {
        self.sessions = config;
        self
    }

    /// This service with these concurrent-execution caps (default: twice the CPUs, two per
    /// account).
    pub fn with_execution_caps(mut self, caps: exec_slots::ExecutionCaps) -> Self {
        self.executions = Arc::new(exec_slots::ExecutionSlots::new(caps));
        self
    }

    /// This service with this budget of failed authentications per client address (default:
    /// 20 per minute).
    pub fn with_auth_throttle(mut self, config: crate::throttle::LimiterConfig) -> Self {
        self.auth_failures = Arc::new(crate::throttle::FailureLimiter::new(config));
        self
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}
