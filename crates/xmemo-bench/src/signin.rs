//! Issue #23, targets 1 and 2: bursts of concurrent failed sign-ins from one address (handles
//! that need not exist). Prints the server's resident memory when idle and after the bursts
//! (the target: within 100 MiB of idle), and how many password checks the bursts got
//! through (answered 401) against what the documented per-address budget admits at those
//! instants (20 at once, one more every 3 s). Run twice: with the server's default budgets,
//! and with every failed-authentication budget off, so only the password-hashing slots stand
//! between the bursts and the server's memory.

use crate::server::{Budgets, Server, StartOptions};
use crate::write_phase::{Common, WriteArgs, met};
use anyhow::{Context, Result, anyhow};
use std::time::{Duration, Instant};

/// The documented budget of failed authentications per address (docs/limits.md).
const ADDRESS_BUDGET: f64 = 20.0;
const REFILL_SECS: f64 = 3.0;
/// Target: resident memory after the bursts within this much of the idle figure.
const RSS_TARGET_KIB: u64 = 100 * 1024;

/// What one run measured.
struct Run {
    idle_kib: u64,
    after_kib: u64,
    peak_kib: u64,
    checked: usize,
    refused_429: usize,
    refused_503: usize,
    other: usize,
    /// Seconds since the first burst at which each burst started.
    starts: Vec<f64>,
}

/// The form cookie and its token: one GET /login, reused by every POST (the form cookie is
/// reusable, as several open tabs need).
async fn form(client: &reqwest::Client, base: &str) -> Result<(String, String)> {
    let r = client
        .get(format!("{base}/login"))
        .send()
        .await
        .context("GET /login")?;
    let cookie = r
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.contains("xmemo_login="))
        .and_then(|c| c.split(';').next())
        .map(str::to_string)
        .ok_or_else(|| anyhow!("no sign-in form cookie"))?;
    let body = r.text().await?;
    let csrf = body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(str::to_string)
        .ok_or_else(|| anyhow!("no form token on /login"))?;
    Ok((cookie, csrf))
}

async fn failed_sign_in(
    client: reqwest::Client,
    base: String,
    cookie: String,
    csrf: String,
    n: usize,
) -> u16 {
    let handle = format!("nobody-{n}");
    let body = format!(
        "handle={handle}&password=wrong-password-{n}&next=%2Flogin&csrf={}",
        percent_encoding::utf8_percent_encode(&csrf, percent_encoding::NON_ALPHANUMERIC)
    );
    client
        .post(format!("{base}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", cookie)
        .header("origin", base.as_str())
        .header("sec-fetch-site", "same-origin")
        .body(body)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

async fn run_once(args: &WriteArgs, common: &Common<'_>, settings: &[(&str, &str)]) -> Result<Run> {
    let srv = Server::start(&StartOptions {
        bin: common.bin,
        database_url: common.database_url,
        admin_key_file: common.admin_key_file,
        keep_data: common.keep_data,
        data_parent: common.data_parent,
        budgets: Budgets::Defaults(settings),
    })?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let (cookie, csrf) = form(&client, &srv.base_url).await?;
    // Idle: after the first request, settled.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_kib = srv.memory().rss_kib;
    let t0 = Instant::now();
    let mut statuses = Vec::new();
    let mut starts = Vec::new();
    let mut n = 0;
    for burst in 0..args.signin_bursts {
        let due = Duration::from_secs_f64(args.signin_burst_gap_secs * burst as f64);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        starts.push(t0.elapsed().as_secs_f64());
        let tasks: Vec<_> = (0..args.signin_burst_size)
            .map(|_| {
                n += 1;
                tokio::spawn(failed_sign_in(
                    client.clone(),
                    srv.base_url.clone(),
                    cookie.clone(),
                    csrf.clone(),
                    n,
                ))
            })
            .collect();
        for t in tasks {
            statuses.push(t.await.unwrap_or(0));
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mem = srv.memory();
    let count = |code: u16| statuses.iter().filter(|s| **s == code).count();
    Ok(Run {
        idle_kib,
        after_kib: mem.rss_kib,
        peak_kib: mem.hwm_kib,
        checked: count(401),
        refused_429: count(429),
        refused_503: count(503),
        other: statuses
            .iter()
            .filter(|s| !matches!(s, 401 | 429 | 503))
            .count(),
        starts,
    })
}

/// Password checks the documented per-address budget admits for bursts of `size` at these
/// instants: a bucket of 20 tokens, one back every 3 s.
fn budget_admits(starts: &[f64], size: usize) -> usize {
    let mut tokens = ADDRESS_BUDGET;
    let mut last = 0.0;
    let mut admitted = 0;
    for &t in starts {
        tokens = (tokens + (t - last) / REFILL_SECS).min(ADDRESS_BUDGET);
        last = t;
        let here = (tokens.floor() as usize).min(size);
        tokens -= here as f64;
        admitted += here;
    }
    admitted
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<String> {
    let budgets = run_once(args, common, &[]).await?;
    let off = run_once(
        args,
        common,
        &[
            ("XMEMO_AUTH_FAILURE_LIMIT", "0"),
            ("XMEMO_LOGIN_FAILURE_LIMIT", "0"),
            ("XMEMO_LOGIN_ACCOUNT_LIMIT", "0"),
        ],
    )
    .await?;
    let span = budgets.starts.last().copied().unwrap_or(0.0);
    let allowed = budget_admits(&budgets.starts, args.signin_burst_size);
    let grew = |r: &Run| r.after_kib.saturating_sub(r.idle_kib);
    let mut out = format!(
        "signin: {} bursts of {} concurrent failed sign-ins from one address, {:.1} s apart ({span:.1} s from first to last)\n",
        args.signin_bursts, args.signin_burst_size, args.signin_burst_gap_secs
    );
    for (what, r) in [
        ("default budgets", &budgets),
        ("failed-authentication budgets off", &off),
    ] {
        out.push_str(&format!(
            "  {what}: RSS idle {:.1} MiB, after the bursts {:.1} MiB (+{:.1} MiB; target: within {} MiB: {}), peak {:.1} MiB; answers: {} checked (401), {} refused 429, {} refused 503, {} other\n",
            mib(r.idle_kib),
            mib(r.after_kib),
            mib(grew(r)),
            RSS_TARGET_KIB / 1024,
            met(grew(r) <= RSS_TARGET_KIB),
            mib(r.peak_kib),
            r.checked,
            r.refused_429,
            r.refused_503,
            r.other,
        ));
    }
    out.push_str(&format!(
        "  password checks admitted from the address: {} over {span:.1} s ({:.1} a minute); the documented budget (20 at once, one more every 3 s) admits {allowed} at these instants (target: equal, ±1 for the requests' arrival after the burst's start): {}",
        budgets.checked,
        if span > 0.0 { budgets.checked as f64 * 60.0 / span } else { budgets.checked as f64 },
        met(budgets.checked.abs_diff(allowed) <= 1),
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::budget_admits;

    #[test]
    fn the_documented_budget_at_given_instants() {
        // 16 at once, then 4 left + 1 after 3 s, …
        assert_eq!(budget_admits(&[0.0], 16), 16);
        assert_eq!(budget_admits(&[0.0, 3.0], 16), 16 + 5);
        assert_eq!(budget_admits(&[0.0, 0.0, 0.0], 16), 20);
        // A full window later the bucket is whole again.
        assert_eq!(budget_admits(&[0.0, 60.0], 16), 32);
    }
}
