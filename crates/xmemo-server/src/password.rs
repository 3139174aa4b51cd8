//! Account passwords: argon2id hashes in PHC form (the parameters travel with each hash, so
//! they can be raised later without breaking old ones).
//!
//! Hashing is deliberately slow and takes 19 MiB, and anyone can make the server do it (a
//! failed sign-in needs no account). So every hash runs in one of a few **slots**
//! ([`Hashing`]): at most `concurrency` at once on the blocking pool, at most `queue`
//! requests waiting for a slot, and any request beyond that is refused at once
//! (SERVICE_UNAVAILABLE, retry in a second) instead of queueing without bound. Each slot owns
//! one argon2 memory buffer, reused from hash to hash: an allocator keeps freed memory of
//! this size in per-thread arenas, so allocating 19 MiB per hash on the blocking pool's
//! threads left hundreds of MiB with the process after a burst (RSS 19 MiB → 2.5 GiB in ten
//! bursts of 16 failed sign-ins). With the slots, hashing holds `concurrency × 19 MiB` once
//! used, whatever the load.

use crate::error::{ServiceError, ServiceResult};
use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use base64::Engine;
use rand::RngCore;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Shortest password accepted, in characters.
pub const MIN_CHARS: usize = 8;
/// Longest password accepted, in bytes: enough for any passphrase, small enough that nobody
/// makes the server hash megabytes.
pub const MAX_BYTES: usize = 1024;

/// OWASP's argon2id baseline: 19 MiB, two passes, one lane.
const M_COST_KIB: u32 = 19 * 1024;
const T_COST: u32 = 2;
const P_COST: u32 = 1;
/// Memory blocks (1 KiB each) of one hash with our parameters: the size of a slot's buffer.
const SLOT_BLOCKS: usize = M_COST_KIB as usize;

fn params() -> ServiceResult<Params> {
    Params::new(M_COST_KIB, T_COST, P_COST, None)
        .map_err(|e| ServiceError::Internal(format!("argon2 parameters: {e}")))
}

/// Refuses a password outside the length bounds (VALIDATION_ERROR on `password`).
pub fn check(password: &str) -> ServiceResult<()> {
    if password.chars().count() < MIN_CHARS {
        return Err(ServiceError::validation(
            format!("a password needs at least {MIN_CHARS} characters"),
            "password",
        ));
    }
    if password.len() > MAX_BYTES {
        return Err(ServiceError::validation(
            format!("a password is at most {MAX_BYTES} bytes"),
            "password",
        ));
    }
    Ok(())
}

/// How many hashes run at once and how many requests may wait for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashingConfig {
    /// Hashes computed at once (each holds a 19 MiB buffer once used).
    pub concurrency: usize,
    /// Requests waiting for a slot; beyond them a request is refused at once.
    pub queue: usize,
}

impl HashingConfig {
    /// At most this many slots by default: more only helps a many-core host under many
    /// concurrent sign-ins, and each slot keeps 19 MiB.
    pub const MAX_DEFAULT_CONCURRENCY: usize = 4;
    /// Waiting requests per slot by default (a wait of a few hashes, well under a second).
    pub const QUEUE_PER_SLOT: usize = 4;
}

impl Default for HashingConfig {
    /// One slot per CPU, at most [`HashingConfig::MAX_DEFAULT_CONCURRENCY`].
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let concurrency = cpus.clamp(1, Self::MAX_DEFAULT_CONCURRENCY);
        Self {
            concurrency,
            queue: concurrency * Self::QUEUE_PER_SLOT,
        }
    }
}

/// What the slots are doing, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HashingStats {
    /// Hashes running now.
    pub running: usize,
    /// Most hashes that ever ran at once.
    pub peak_running: usize,
    /// Requests waiting for a slot now.
    pub waiting: usize,
    /// Argon2 buffers ever allocated (at most one per slot unless a stored hash asked for
    /// more memory than ours).
    pub buffers_allocated: usize,
    /// Requests refused because every slot and the queue were taken.
    pub refused: usize,
}

/// The password-hashing slots of one server (see the module documentation).
#[derive(Debug)]
pub struct Hashing {
    config: HashingConfig,
    permits: Arc<Semaphore>,
    buffers: Mutex<Vec<Vec<Block>>>,
    waiting: AtomicUsize,
    running: AtomicUsize,
    peak_running: AtomicUsize,
    allocated: AtomicUsize,
    refused: AtomicUsize,
    /// A hash of a random password, made once, that nothing can match.
    dummy: OnceLock<String>,
}

/// Every slot, held by [`Hashing::occupy`] until dropped.
#[derive(Debug)]
pub struct Occupied {
    _permits: OwnedSemaphorePermit,
}

/// Decrements a counter when dropped (a waiting request whose client went away).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Hashing {
    pub fn new(config: HashingConfig) -> Arc<Self> {
        let concurrency = config.concurrency.max(1);
        Arc::new(Self {
            config: HashingConfig {
                concurrency,
                ..config
            },
            permits: Arc::new(Semaphore::new(concurrency)),
            buffers: Mutex::new(Vec::new()),
            waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            peak_running: AtomicUsize::new(0),
            allocated: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            dummy: OnceLock::new(),
        })
    }

    pub fn config(&self) -> HashingConfig {
        self.config
    }

    pub fn stats(&self) -> HashingStats {
        HashingStats {
            running: self.running.load(Ordering::SeqCst),
            peak_running: self.peak_running.load(Ordering::SeqCst),
            waiting: self.waiting.load(Ordering::SeqCst),
            buffers_allocated: self.allocated.load(Ordering::SeqCst),
            refused: self.refused.load(Ordering::SeqCst),
        }
    }

    /// Takes every slot until the result is dropped, so tests can fill the queue behind them
    /// without racing real hashes.
    pub async fn occupy(&self) -> ServiceResult<Occupied> {
        let n = u32::try_from(self.config.concurrency)
            .map_err(|_| ServiceError::Internal("too many hashing slots".into()))?;
        let permits = self
            .permits
            .clone()
            .acquire_many_owned(n)
            .await
            .map_err(|_| ServiceError::Internal("hashing slots closed".into()))?;
        Ok(Occupied { _permits: permits })
    }

    fn busy(&self) -> ServiceError {
        self.refused.fetch_add(1, Ordering::SeqCst);
        ServiceError::AtCapacity {
            message: "too many passwords are being checked right now; retry in a second".into(),
            retry_after_secs: 1,
        }
    }

    /// A slot, at once or after waiting in the bounded queue; refused when that is full.
    async fn slot(&self) -> ServiceResult<OwnedSemaphorePermit> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let ahead = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        if ahead >= self.config.queue {
            return Err(self.busy());
        }
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ServiceError::Internal("hashing slots closed".into()))
    }

    /// A buffer of at least `blocks` blocks: a slot's reused one when that is enough.
    fn take(&self, blocks: usize) -> Vec<Block> {
        if blocks <= SLOT_BLOCKS
            && let Some(buffer) = self.lock_buffers().pop()
        {
            return buffer;
        }
        self.allocated.fetch_add(1, Ordering::SeqCst);
        vec![Block::default(); blocks.max(SLOT_BLOCKS)]
    }

    fn give_back(&self, buffer: Vec<Block>) {
        let mut buffers = self.lock_buffers();
        // Only our size is kept, one per slot; a larger one (a stored hash with more memory)
        // is freed.
        if buffer.len() == SLOT_BLOCKS && buffers.len() < self.config.concurrency {
            buffers.push(buffer);
        }
    }

    fn lock_buffers(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Block>>> {
        self.buffers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `work` with a buffer of `blocks` blocks in a slot, on the blocking pool. The slot
    /// goes with the blocking task, so a request whose client went away cannot free its slot
    /// while its hash still runs.
    async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        blocks: usize,
        work: impl FnOnce(&Self, &mut [Block]) -> T + Send + 'static,
    ) -> ServiceResult<T> {
        let permit = self.slot().await?;
        let pool = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let now = pool.running.fetch_add(1, Ordering::SeqCst) + 1;
            pool.peak_running.fetch_max(now, Ordering::SeqCst);
            let mut buffer = pool.take(blocks);
            let out = work(&pool, &mut buffer);
            pool.give_back(buffer);
            pool.running.fetch_sub(1, Ordering::SeqCst);
            out
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("hashing task: {e}")))
    }

    /// The PHC string of `password` with our parameters and a fresh salt.
    pub async fn hash(self: &Arc<Self>, password: &str) -> ServiceResult<String> {
        let password = password.to_string();
        self.run(SLOT_BLOCKS, move |_, memory| {
            hash_with(password.as_bytes(), memory)
        })
        .await?
    }

    /// Whether `password` matches `stored`. With no stored hash (unknown account, no
    /// password set) a dummy hash is checked anyway, so the answer takes as long either way.
    /// Err only when no slot is free (SERVICE_UNAVAILABLE, retryable) or hashing failed.
    pub async fn verify(
        self: &Arc<Self>,
        password: &str,
        stored: Option<String>,
    ) -> ServiceResult<bool> {
        let blocks = stored.as_deref().map_or(SLOT_BLOCKS, blocks_of);
        let password = password.to_string();
        self.run(blocks, move |pool, memory| {
            let (phc, real) = match stored {
                Some(s) => (s, true),
                None => (pool.dummy_hash(memory), false),
            };
            verify_with(password.as_bytes(), &phc, memory) && real
        })
        .await
    }

    fn dummy_hash(&self, memory: &mut [Block]) -> String {
        if let Some(d) = self.dummy.get() {
            return d.clone();
        }
        let made = hash_with(generate().as_bytes(), memory).unwrap_or_default();
        self.dummy.get_or_init(|| made).clone()
    }
}

/// The memory blocks a stored hash asks for (ours when it cannot be read; it then fails).
fn blocks_of(phc: &str) -> usize {
    PasswordHash::new(phc)
        .ok()
        .and_then(|parsed| Params::try_from(&parsed).ok())
        .map_or(SLOT_BLOCKS, |p| p.block_count())
}

fn hash_with(password: &[u8], memory: &mut [Block]) -> ServiceResult<String> {
    let fail = |e: &dyn std::fmt::Display| ServiceError::Internal(format!("argon2: {e}"));
    let params = params()?;
    let salt = salt()?;
    let mut salt_bytes = [0u8; 64];
    let salt_bytes = salt
        .as_salt()
        .decode_b64(&mut salt_bytes)
        .map_err(|e| fail(&e))?;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone())
        .hash_password_into_with_memory(password, salt_bytes, &mut out, memory)
        .map_err(|e| fail(&e))?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(|e| fail(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(|e| fail(&e))?),
    };
    Ok(phc.to_string())
}

/// `password` against a PHC string, computed in `memory`; the outputs compare in constant
/// time (`Output`'s equality).
fn verify_with(password: &[u8], phc: &str, memory: &mut [Block]) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) = (
        Algorithm::try_from(parsed.algorithm),
        Params::try_from(&parsed),
    ) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from).transpose() {
        Ok(v) => v.unwrap_or_default(),
        Err(_) => return false,
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    if Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password, salt, &mut out, memory)
        .is_err()
    {
        return false;
    }
    Output::new(&out).is_ok_and(|computed| computed == expected)
}

/// 16 random bytes, as the PHC string wants them.
fn salt() -> ServiceResult<SaltString> {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    SaltString::encode_b64(&bytes).map_err(|e| ServiceError::Internal(format!("salt: {e}")))
}

/// A random password for the first-start admin account: 24 base64url characters (144 bits).
pub fn generate() -> String {
    let mut bytes = [0u8; 18];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};

    fn pool(concurrency: usize, queue: usize) -> Arc<Hashing> {
        Hashing::new(HashingConfig { concurrency, queue })
    }

    #[tokio::test]
    async fn hashes_are_argon2id_salted_and_verify() {
        let h = pool(1, 4);
        let a = h.hash("correct horse").await.unwrap();
        let b = h.hash("correct horse").await.unwrap();
        assert!(a.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{a}");
        assert_ne!(a, b, "salted");
        assert!(h.verify("correct horse", Some(a.clone())).await.unwrap());
        assert!(!h.verify("wrong horse", Some(a)).await.unwrap());
        assert!(!h.verify("anything", None).await.unwrap());
        assert!(
            !h.verify("anything", Some("not a hash".into()))
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn hashes_agree_with_the_argon2_crate_both_ways() {
        let h = pool(1, 4);
        let ours = h.hash("correct horse").await.unwrap();
        let theirs_argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params().unwrap());
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            theirs_argon
                .verify_password(b"correct horse", &parsed)
                .is_ok()
        );
        // A hash with other parameters (more memory than a slot holds) verifies too.
        let other = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(32 * 1024, 1, 1, None).unwrap(),
        )
        .hash_password(b"battery staple", &salt().unwrap())
        .unwrap()
        .to_string();
        assert!(
            h.verify("battery staple", Some(other.clone()))
                .await
                .unwrap()
        );
        assert!(!h.verify("battery", Some(other)).await.unwrap());
    }

    #[tokio::test]
    async fn one_buffer_per_slot_is_reused() {
        let h = pool(2, 16);
        let stored = h.hash("correct horse").await.unwrap();
        let checks: Vec<_> = (0..12)
            .map(|i| {
                let (h, stored) = (h.clone(), stored.clone());
                tokio::spawn(async move { h.verify(&format!("guess {i}"), Some(stored)).await })
            })
            .collect();
        for c in checks {
            assert!(!c.await.unwrap().unwrap());
        }
        let stats = h.stats();
        assert!(stats.peak_running <= 2, "{stats:?}");
        assert!(stats.buffers_allocated <= 2, "{stats:?}");
        assert_eq!(stats.running, 0);
    }

    #[tokio::test]
    async fn past_the_slots_and_the_queue_requests_are_refused_at_once() {
        let h = pool(1, 1);
        let held = h.occupy().await.unwrap();
        // One request may wait behind the occupied slot…
        let waiter = {
            let h = h.clone();
            tokio::spawn(async move { h.verify("guess", None).await })
        };
        while h.stats().waiting < 1 {
            tokio::task::yield_now().await;
        }
        // …the next one is refused without waiting.
        let refused = h.verify("guess", None).await.unwrap_err();
        assert_eq!(refused.code(), xmemo_core::ErrorCode::ServiceUnavailable);
        assert_eq!(refused.retry_after_secs(), Some(1));
        assert_eq!(h.stats().refused, 1);
        drop(held);
        assert!(!waiter.await.unwrap().unwrap());
        assert_eq!(h.stats().waiting, 0);
    }

    #[test]
    fn bounds_and_generated_passwords() {
        assert!(check("short").is_err());
        assert!(check("long enough").is_ok());
        assert!(check(&"x".repeat(MAX_BYTES + 1)).is_err());
        let p = generate();
        assert_eq!(p.len(), 24);
        assert!(check(&p).is_ok());
        assert_ne!(p, generate());
    }
}
