//! Target 4: durable saves per second with N concurrent clients (every save a new skill, one
//! published revision with one script component; acknowledged only after its commit).

use crate::corpus::Corpus;
use crate::load;
use crate::write_phase::{Common, WriteArgs, met};
use anyhow::Result;
use std::sync::Arc;

pub async fn run(args: &WriteArgs, common: &Common<'_>) -> Result<String> {
    let srv = common.start(false)?;
    let corpus = Arc::new(Corpus::new(common.corpus_seed, common.vocabulary));
    let n = args.saves_count.max(1);
    let c = common.seed_concurrency.max(1);
    eprintln!("xmemo-bench: saves: {n} new skills with {c} clients");
    let r = load::seed(&srv.base_url, &srv.admin_key, corpus, 0, n, c, srv.pid).await?;
    let rate = r.saves_per_sec();
    let per_save = |cpu: Option<f64>| {
        cpu.map(|s| format!("{:.0} µs", s * 1e6 / r.saves.max(1) as f64))
            .unwrap_or_else(|| "?".into())
    };
    let mut out = format!(
        "saves: {} saves at {c} clients in {:.1} s = {rate:.0} durable saves/s; p50 {:.2} ms, p99 {:.2} ms; \
         server CPU {} per save, bench {} per save, other processes {} per save; errors {}   \
         [target ≥ 1000 saves/s: {}]",
        r.saves,
        r.secs,
        r.latency.p50_us as f64 / 1000.0,
        r.latency.p99_us as f64 / 1000.0,
        per_save(r.server_cpu_secs),
        per_save(r.bench_cpu_secs),
        per_save(r.other_cpu_secs),
        r.errors.count,
        met(rate >= 1000.0),
    );
    for e in &r.errors.samples {
        out.push_str(&format!("\n  error: {e}"));
    }
    Ok(out)
}
