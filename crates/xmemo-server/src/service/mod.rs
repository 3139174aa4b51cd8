//! The service layer: every use-case and access check, once. Transports call these methods
//! with an authenticated [`Principal`] and render the results.

mod access;
mod accounts;
mod recall;
mod skills;
mod teams;
pub mod types;

pub use access::Access;
use std::sync::Arc;
use xmemo_store::Store;

#[derive(Clone)]
pub struct Service {
    store: Arc<dyn Store>,
}

impl Service {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}
