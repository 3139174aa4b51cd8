//! Every budget, quota and cap the service enforces, with its default, in one place
//! (docs/limits.md is the table of them, with their settings and the error a client gets).
//! `xmemo serve` builds one [`Budgets`] from its settings and hands it to
//! [`super::Service::with_budgets`]; tests adjust single fields.

use crate::password::HashingConfig;
use crate::throttle::LimiterConfig;
use std::time::Duration;

/// Per-account quotas of stored content. Everything an account writes is kept (memory
/// history, forgotten memories, every skill revision), so usage only grows until the
/// account is deleted; an operator raises a quota that an account outgrows. `u64::MAX`
/// is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Memories an account has created (any status).
    pub memories: u64,
    /// Skills an account has created (in any workspace).
    pub skills: u64,
    /// Bytes of text and files an account has written: every memory version's content and
    /// title, every skill revision's body, metadata and components.
    pub bytes: u64,
}

impl Quotas {
    pub const DEFAULT: Self = Self {
        memories: 10_000,
        skills: 10_000,
        bytes: 256 << 20,
    };
    pub const UNLIMITED: Self = Self {
        memories: u64::MAX,
        skills: u64::MAX,
        bytes: u64::MAX,
    };
}

impl Default for Quotas {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Failed authentications allowed per client address: 20 a minute.
pub const DEFAULT_AUTH_THROTTLE: LimiterConfig = LimiterConfig::new(20, Duration::from_secs(60));
/// Failed sign-ins allowed per account *and address*: 10 in 10 minutes. One address cannot
/// spend another's budget, so guessing from one place cannot lock anyone else out.
pub const DEFAULT_LOGIN_PAIR_THROTTLE: LimiterConfig =
    LimiterConfig::new(10, Duration::from_secs(600));
/// Failed sign-ins allowed per account from all addresses together: 30 in 10 minutes. Past
/// it, addresses the account never signed in from are refused; those it did sign in from
/// keep their own budget ([`DEFAULT_LOGIN_PAIR_THROTTLE`]): the ceiling bounds distributed
/// guessing without locking the owner out.
pub const DEFAULT_LOGIN_THROTTLE: LimiterConfig = LimiterConfig::new(30, Duration::from_secs(600));
/// Dynamic registrations allowed per address: 30 an hour.
pub const DEFAULT_REGISTRATION_BUDGET: LimiterConfig =
    LimiterConfig::new(30, Duration::from_secs(3600));
/// Dynamic registrations allowed from all addresses together: 300 an hour (an IPv6 host has
/// a whole /64 per address budget, and many hosts have many /64s).
pub const DEFAULT_GLOBAL_REGISTRATION_BUDGET: LimiterConfig =
    LimiterConfig::new(300, Duration::from_secs(3600));
/// Registered clients kept at most.
pub const DEFAULT_MAX_REGISTERED_CLIENTS: u64 = 10_000;
/// A registered client that never got a grant is deleted this long after registering.
pub const DEFAULT_UNUSED_CLIENT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Client metadata documents fetched per address (cache misses only): 20 in 10 minutes.
pub const DEFAULT_DOCUMENT_FETCH_BUDGET: LimiterConfig =
    LimiterConfig::new(20, Duration::from_secs(600));
/// Writes per account: 1200 a minute (20 a second on average, 1200 at once).
pub const DEFAULT_WRITE_RATE: LimiterConfig = LimiterConfig::new(1200, Duration::from_secs(60));
/// Teams created per account: 10 a day.
pub const DEFAULT_TEAM_CREATION_BUDGET: LimiterConfig =
    LimiterConfig::new(10, Duration::from_secs(24 * 3600));

/// After an invitee declines, the same team may not invite them again for this long: a
/// decline is an answer, not a prompt to ask again (RATE_LIMITED with `Retry-After`).
pub const DECLINE_COOL_DOWN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Full-text log entries the upkeep keeps (every node's catch-up feed and the semantic
/// lane's queue): a node that fell further behind rebuilds its indexes from the tables,
/// which costs about what re-reading that many changed rows would.
pub const FULLTEXT_LOG_KEEP: u64 = 100_000;
/// How often a server runs its upkeep (`service/upkeep.rs`).
pub const UPKEEP_EVERY: Duration = Duration::from_secs(600);
/// How often a server applies the full-text log past its position (other nodes' writes;
/// its own are applied by their writers): the longest another node's write takes to reach
/// this node's search when no query of this node applies it first.
pub const SEARCH_FOLLOW_EVERY: Duration = Duration::from_millis(250);
/// An embedding model whose worker has held no lease for this long stops holding the
/// log's pruning back; its worker embeds every row again when it returns.
pub const IDLE_EMBEDDING_MODEL: Duration = Duration::from_secs(24 * 3600);

/// Every budget of one service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budgets {
    /// Failed authentications (keys, tokens, passwords, client secrets, codes) per address.
    pub auth_failures: LimiterConfig,
    /// Failed sign-ins per account and address.
    pub login_pair: LimiterConfig,
    /// Failed sign-ins per account, from addresses it never signed in from.
    pub login_account: LimiterConfig,
    /// Password hashes at once and waiting.
    pub hashing: HashingConfig,
    /// Dynamic client registrations per address.
    pub registrations: LimiterConfig,
    /// Dynamic client registrations in all.
    pub registrations_global: LimiterConfig,
    /// Registered clients kept at most.
    pub max_registered_clients: u64,
    /// Life of a registered client that never got a grant.
    pub unused_client_ttl: Duration,
    /// Client metadata document fetches per address.
    pub document_fetches: LimiterConfig,
    /// Writes per account.
    pub writes: LimiterConfig,
    /// Teams created per account.
    pub team_creations: LimiterConfig,
    /// How long after a decline the same team may not invite the same person again (zero:
    /// no cool-down).
    pub decline_cool_down: Duration,
    /// Stored content per account.
    pub quotas: Quotas,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            auth_failures: DEFAULT_AUTH_THROTTLE,
            login_pair: DEFAULT_LOGIN_PAIR_THROTTLE,
            login_account: DEFAULT_LOGIN_THROTTLE,
            hashing: HashingConfig::default(),
            registrations: DEFAULT_REGISTRATION_BUDGET,
            registrations_global: DEFAULT_GLOBAL_REGISTRATION_BUDGET,
            max_registered_clients: DEFAULT_MAX_REGISTERED_CLIENTS,
            unused_client_ttl: DEFAULT_UNUSED_CLIENT_TTL,
            document_fetches: DEFAULT_DOCUMENT_FETCH_BUDGET,
            writes: DEFAULT_WRITE_RATE,
            team_creations: DEFAULT_TEAM_CREATION_BUDGET,
            decline_cool_down: DECLINE_COOL_DOWN,
            quotas: Quotas::DEFAULT,
        }
    }
}

impl super::Service {
    /// Spends one of the account's writes, before the write: reserved under the lock, so a
    /// burst cannot pass it, and never given back (the rate counts write requests, whether
    /// they store anything or not). RATE_LIMITED with `Retry-After` when none is left.
    pub(crate) async fn spend_write(
        &self,
        principal: &crate::auth::Principal,
    ) -> crate::ServiceResult<()> {
        self.writes
            .reserve(principal.account.account_id.clone())
            .await
            .map(|r| {
                r.keep();
            })
            .map_err(|wait| {
                let secs = crate::throttle::retry_after_secs(wait);
                crate::ServiceError::RateLimited {
                    message: format!("too many writes from this account; retry in {secs} s"),
                    retry_after_secs: secs,
                }
            })
    }

    /// The quota the store charges each content write with (`None`: unlimited).
    pub(crate) fn quota(&self) -> Option<xmemo_store::Quota> {
        let q = self.budgets.quotas;
        (q != Quotas::UNLIMITED).then_some(xmemo_store::Quota {
            memories: q.memories,
            skills: q.skills,
            bytes: q.bytes,
        })
    }

    /// What the account has used of its quotas, with the quotas.
    pub async fn usage(
        &self,
        principal: &crate::auth::Principal,
    ) -> crate::ServiceResult<(xmemo_store::Usage, Quotas)> {
        principal.require(xmemo_core::Scope::Read)?;
        Ok((
            self.store
                .account_usage(&principal.account.account_id)
                .await?,
            self.budgets.quotas,
        ))
    }
}
