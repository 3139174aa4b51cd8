//! Per-account usage counters (`account_usage`) behind the service's quotas. A write that
//! stores content charges its account in its own transaction with one conditional `UPDATE`:
//! the row lock it takes (PostgreSQL) or the single writer (SQLite) serialises the account's
//! writes, so the quota holds however many arrive at once — a count read before the write
//! would let each of a burst pass on the same number.

use super::{Dialect, Session, SqlStore, Stmt};
use crate::model::{NodeQuotas, Quota, Usage};
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

/// How many nodes' quotas are kept: every start of `xmemo serve` adds a row (its pid is part
/// of its name), so the oldest go.
pub const NODE_QUOTAS_KEPT: usize = 16;

/// Records the quotas a starting node enforces, replacing its earlier row, and keeps the
/// newest [`NODE_QUOTAS_KEPT`] rows.
pub async fn record_node_quotas<D: Dialect>(
    store: &SqlStore<D>,
    record: &NodeQuotas,
) -> StoreResult<()> {
    // 0 is no quota, as on the command line (a quota of 0 cannot be set).
    let quota = |q: Option<u64>| q.map_or(Ok(0), |q| int(q.min(i64::MAX as u64)));
    let mut s = store.write().await?;
    s.execute(
        Stmt::new(
            "INSERT INTO node_quotas (node, started_at, memories, skills, bytes) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (node) DO UPDATE SET started_at = $2, memories = $3, skills = $4, bytes = $5",
        )
        .bind(record.node.as_str())
        .bind(record.started_at.as_str())
        .bind(quota(record.memories)?)
        .bind(quota(record.skills)?)
        .bind(quota(record.bytes)?),
    )
    .await?;
    s.execute(Stmt::new(format!(
        "DELETE FROM node_quotas WHERE node NOT IN
         (SELECT node FROM node_quotas ORDER BY started_at DESC, node DESC LIMIT {NODE_QUOTAS_KEPT})"
    )))
    .await?;
    s.commit().await
}

/// The quotas nodes recorded when they started, the newest start first.
pub async fn node_quotas<D: Dialect>(store: &SqlStore<D>) -> StoreResult<Vec<NodeQuotas>> {
    let mut s = store.read().await?;
    let rows = s
        .all(Stmt::new(
            "SELECT node, started_at, memories, skills, bytes FROM node_quotas
             ORDER BY started_at DESC, node DESC",
        ))
        .await?;
    let quota = |r: &super::Row<D>, c: &str| -> StoreResult<Option<u64>> {
        let n = super::driver::to_u64(r.int(c)?, "quota")?;
        Ok((n > 0).then_some(n))
    };
    rows.iter()
        .map(|r| {
            Ok(NodeQuotas {
                node: r.text("node")?,
                started_at: r.text("started_at")?,
                memories: quota(r, "memories")?,
                skills: quota(r, "skills")?,
                bytes: quota(r, "bytes")?,
            })
        })
        .collect()
}
