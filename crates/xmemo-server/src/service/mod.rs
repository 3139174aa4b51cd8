//! The service layer: every use-case and access check, once. Transports call these methods
//! with an authenticated [`Principal`] and render the results.

mod access;
mod account_data;
mod accounts;
pub mod budgets;
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
pub mod safety;
pub mod schema;
pub mod semantic;
mod served;
pub mod signin;
mod skills;
mod teams;
pub mod types;
mod upkeep;

use crate::throttle::{FailureLimiter, LimiterConfig};
pub use access::Access;
pub use accounts::{Audience, DEFAULT_PROFILE, throttle_key};
pub use budgets::{Budgets, DEFAULT_AUTH_THROTTLE, Quotas};
pub use imports::{
    BatchImported, BatchItem, BatchSummary, ImportAnswer, ImportOptions, ImportOutcome, Imported,
    ItemRevision,
};
pub use packages::{DiffSide, SkillDiff};
pub use page::{Page, PageRequest};
pub use served::{Served, ServedList};
use std::net::IpAddr;
use std::sync::Arc;
pub use upkeep::Upkeep;
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
    /// Every budget's and quota's settings (`with_budgets`; docs/limits.md).
    budgets: Budgets,
    /// Password hashing slots (`password.rs`).
    hashing: Arc<crate::password::Hashing>,
    /// Failed authentications per client address.
    auth_failures: Arc<FailureLimiter<IpAddr>>,
    /// Failed sign-ins per account handle and address.
    login_pairs: Arc<FailureLimiter<(String, IpAddr)>>,
    /// Failed sign-ins per account handle, from addresses it never signed in from.
    login_failures: Arc<FailureLimiter<String>>,
    /// Operator unlocks this node has applied (`signin.rs`).
    unlocks: Arc<signin::AppliedUnlocks>,
    /// Lifetimes of sign-in sessions (`with_session_config`).
    sessions: signin::SessionConfig,
    /// OAuth settings (`with_oauth_config`), fetched metadata documents, and the budgets of
    /// client registrations (per address and in all) and document fetches (per address).
    oauth: Arc<oauth::OAuthConfig>,
    client_documents: Arc<oauth::cimd::DocumentCache>,
    registrations: Arc<FailureLimiter<IpAddr>>,
    registrations_global: Arc<FailureLimiter<()>>,
    document_fetches: Arc<FailureLimiter<IpAddr>>,
    /// Writes and team creations per account id.
    writes: Arc<FailureLimiter<String>>,
    team_creations: Arc<FailureLimiter<String>>,
    /// What expiries are decided by (`with_clock`; the system's clock by default).
    clock: Arc<dyn clock::Clock>,
    /// The semantic recall lane, when an embedding model is configured.
    semantic: Option<Arc<semantic::SemanticLane>>,
    /// Run scripts of revisions the safety scanner called malicious (off: SAFETY_BLOCKED).
    allow_malicious_scripts: bool,
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
            budgets: Budgets::default(),
            hashing: crate::password::Hashing::new(Default::default()),
            auth_failures: limiter(budgets::DEFAULT_AUTH_THROTTLE),
            login_pairs: limiter(budgets::DEFAULT_LOGIN_PAIR_THROTTLE),
            login_failures: limiter(budgets::DEFAULT_LOGIN_THROTTLE),
            unlocks: Arc::new(signin::AppliedUnlocks::default()),
            sessions: signin::SessionConfig::default(),
            oauth: Arc::new(oauth::OAuthConfig::default()),
            client_documents: Arc::new(oauth::cimd::DocumentCache::default()),
            registrations: limiter(budgets::DEFAULT_REGISTRATION_BUDGET),
            registrations_global: limiter(budgets::DEFAULT_GLOBAL_REGISTRATION_BUDGET),
            document_fetches: limiter(budgets::DEFAULT_DOCUMENT_FETCH_BUDGET),
            writes: limiter(budgets::DEFAULT_WRITE_RATE),
            team_creations: limiter(budgets::DEFAULT_TEAM_CREATION_BUDGET),
            clock: Arc::new(clock::SystemClock),
            semantic: None,
            allow_malicious_scripts: false,
        }
    }

    /// This service running scripts of revisions the safety scanner called malicious
    /// (`allow_malicious_scripts`; off by default, docs/safety.md).
    pub fn with_malicious_scripts_allowed(mut self, allowed: bool) -> Self {
        self.allow_malicious_scripts = allowed;
        self
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

    /// This service with these budgets, quotas and caps (docs/limits.md); every limiter
    /// starts empty.
    pub fn with_budgets(mut self, b: Budgets) -> Self {
        self.hashing = crate::password::Hashing::new(b.hashing);
        self.auth_failures = limiter(b.auth_failures);
        self.login_pairs = limiter(b.login_pair);
        self.login_failures = limiter(b.login_account);
        self.registrations = limiter(b.registrations);
        self.registrations_global = limiter(b.registrations_global);
        self.document_fetches = limiter(b.document_fetches);
        self.writes = limiter(b.writes);
        self.team_creations = limiter(b.team_creations);
        self.budgets = b;
        self
    }

    /// The budgets this service runs with.
    pub fn budgets(&self) -> &Budgets {
        &self.budgets
    }

    /// This service with these budgets changed by `change` (tests adjust one field).
    pub fn with_budgets_changed(self, change: impl FnOnce(&mut Budgets)) -> Self {
        let mut b = self.budgets.clone();
        change(&mut b);
        self.with_budgets(b)
    }

    /// This service with this budget of dynamic client registrations per address (default:
    /// 30 an hour).
    pub fn with_registration_budget(self, config: LimiterConfig) -> Self {
        self.with_budgets_changed(|b| b.registrations = config)
    }

    /// This service with this budget of failed sign-ins per account from addresses it never
    /// signed in from (default: 30 in 10 minutes).
    pub fn with_login_throttle(self, config: LimiterConfig) -> Self {
        self.with_budgets_changed(|b| b.login_account = config)
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
    pub fn with_auth_throttle(self, config: LimiterConfig) -> Self {
        self.with_budgets_changed(|b| b.auth_failures = config)
    }

    /// The password-hashing slots (stats for metrics and tests; `occupy` for tests).
    pub fn password_hashing(&self) -> &Arc<crate::password::Hashing> {
        &self.hashing
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

fn limiter<K: std::hash::Hash + Eq + Clone>(config: LimiterConfig) -> Arc<FailureLimiter<K>> {
    Arc::new(FailureLimiter::new(config))
}
