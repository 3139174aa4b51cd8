//! Per-account usage counters (`account_usage`) behind the service's quotas. A write that
//! stores content charges its account in its own transaction with one conditional `UPDATE`:
//! the row lock it takes (PostgreSQL) or the single writer (SQLite) serialises the account's
//! writes, so the quota holds however many arrive at once — a count read before the write
//! would let each of a burst pass on the same number.

use super::{Dialect, Session, SqlStore, Stmt};
use crate::model::{Quota, Usage};
use crate::{LimitReached, Record, StoreError, StoreResult};

/// What one write adds to its account's usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Charge {
    pub memories: u64,
    pub skills: u64,
    pub bytes: u64,
}

fn int(n: u64) -> StoreResult<i64> {
    super::to_i64(n, "usage")
}

fn usage_of(r: &impl Record) -> StoreResult<Usage> {
    let n = |c: &str| -> StoreResult<u64> { super::driver::to_u64(r.int(c)?, "usage") };
    Ok(Usage {
        memories: n("memories")?,
        skills: n("skills")?,
        bytes: n("bytes")?,
    })
}

/// Adds `charge` to the account's usage within `quota`, or refuses with
/// [`LimitReached::Quota`] naming the first quota it would pass (nothing is written then:
/// the caller's transaction rolls back).
pub(crate) async fn charge<D: Dialect>(
    s: &mut Session<D>,
    account_id: &str,
    charge: Charge,
    quota: &Quota,
) -> StoreResult<()> {
    if charge == Charge::default() {
        return Ok(());
    }
    // A limit past i64 is no limit: the comparison is written so it cannot overflow.
    let cap = |q: u64| int(q.min(i64::MAX as u64));
    // A few rounds: the first charge of an account creates its row, and on PostgreSQL a
    // row created by a concurrent first charge becomes visible only to the next statement.
    for _ in 0..4 {
        let changed = s
            .execute(
                Stmt::new(
                    "UPDATE account_usage SET memories = memories + $2, skills = skills + $3, bytes = bytes + $4
                     WHERE account_id = $1 AND memories <= $5 - $2 AND skills <= $6 - $3 AND bytes <= $7 - $4",
                )
                .bind(account_id)
                .bind(int(charge.memories)?)
                .bind(int(charge.skills)?)
                .bind(int(charge.bytes)?)
                .bind(cap(quota.memories)?)
                .bind(cap(quota.skills)?)
                .bind(cap(quota.bytes)?),
            )
            .await?;
        if changed == 1 {
            return Ok(());
        }
        let row = s
            .optional(
                Stmt::new(
                    "SELECT memories, skills, bytes FROM account_usage WHERE account_id = $1",
                )
                .bind(account_id),
            )
            .await?;
        let Some(row) = row else {
            // The account's first charge: its row, then the same update once more.
            s.execute(
                Stmt::new(
                    "INSERT INTO account_usage (account_id, memories, skills, bytes) VALUES ($1, 0, 0, 0)
                     ON CONFLICT (account_id) DO NOTHING",
                )
                .bind(account_id),
            )
            .await?;
            continue;
        };
        let used = usage_of(&row)?;
        let over = [
            ("memories", used.memories, charge.memories, quota.memories),
            ("skills", used.skills, charge.skills, quota.skills),
            ("bytes", used.bytes, charge.bytes, quota.bytes),
        ]
        .into_iter()
        .find(|(_, used, asked, limit)| *asked > 0 && used.saturating_add(*asked) > *limit);
        if let Some((quota, used, requested, limit)) = over {
            return Err(StoreError::Limit(LimitReached::Quota {
                quota,
                limit,
                used,
                requested,
            }));
        }
        // It fits now: the row changed between the update and the read; again.
    }
    Err(StoreError::Contention(
        "the account's usage changed concurrently; try again".into(),
    ))
}

pub async fn usage<D: Dialect>(store: &SqlStore<D>, account_id: &str) -> StoreResult<Usage> {
    let mut s = store.read().await?;
    s.optional(
        Stmt::new("SELECT memories, skills, bytes FROM account_usage WHERE account_id = $1")
            .bind(account_id),
    )
    .await?
    .map(|r| usage_of(&r))
    .transpose()
    .map(Option::unwrap_or_default)
}
