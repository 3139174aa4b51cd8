//! The service layer: every use-case and access check, once. Transports call these methods
//! with an authenticated [`Principal`] and render the results.

mod access;
mod accounts;
mod execute;
mod packages;
pub mod page;
mod recall;
mod served;
mod skills;
mod teams;
pub mod types;

pub use access::Access;
pub use packages::{DiffSide, ImportOptions, Imported, SkillDiff};
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
}

impl Service {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            sandbox: None,
            metrics: Arc::new(crate::metrics::Metrics::new()),
            fetch: Arc::new(crate::fetch::FetchConfig::default()),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}
