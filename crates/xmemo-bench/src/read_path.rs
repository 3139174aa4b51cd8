//! The read-path figures of issue #14 (targets 1, 2, 3 and 5's skill side): MCP phases over
//! HTTP and the stdio bridge, the side-by-side peer run, the Level 0 relevance check, and a
//! verdict per target, all run after the REST phases of each size.

use crate::corpus::{Corpus, QueryKind};
use crate::load::Seeded;
use crate::mcp::{self, Transport};
use crate::measure::{PhaseConfig, PhaseResult};
use crate::report::{Level, SizeReport};
use crate::{peer, relevance};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
pub struct ReadPathArgs {
    /// Also measure recall_cloud_skill over MCP: streamable HTTP (raw JSON-RPC client) and the
    /// stdio bridge (`xmemo mcp`)
    #[arg(long)]
    pub mcp: bool,
    /// Clients of the MCP/HTTP phases
    #[arg(long, value_delimiter = ',', default_value = "1,16,32")]
    pub mcp_clients: Vec<usize>,
    /// Clients of the MCP/stdio phases (one bridge process each)
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    pub stdio_clients: Vec<usize>,
    /// At the first size: run the reference MCP memory server (@modelcontextprotocol/server-
    /// memory, over stdio, installed with npm into --peer-dir) on the same first 1,000
    /// skills and queries, one client, next to xmemo's MCP/HTTP Level 0
    #[arg(long)]
    pub peer: bool,
    /// Where the peer is installed [default: ~/.cache/xmemo-bench/peer]
    #[arg(long)]
    pub peer_dir: Option<PathBuf>,
    /// Level 0 relevance queries per kind (known answers; 0 = skip)
    #[arg(long, default_value_t = 100)]
    pub relevance_queries: usize,
    /// Under 2 minutes: 1,000 skills, 1 and 16 clients, 2 s per phase after 1 s warm-up, with
    /// the MCP phases, the peer and a relevance check of 50 queries per kind
    #[arg(long)]
    pub quick: bool,
}

impl ReadPathArgs {
    /// `--quick`: also turns on the MCP phases (1 and 16 clients), the peer and a smaller
    /// relevance check.
    pub fn apply_quick(
        &mut self,
        sizes: &mut Vec<usize>,
        clients: &mut Vec<usize>,
        duration_secs: &mut u64,
        warmup_secs: &mut u64,
    ) {
        self.mcp = true;
        self.peer = true;
        self.mcp_clients = vec![1, 16];
        self.stdio_clients = vec![1, 16];
        self.relevance_queries = self.relevance_queries.min(50);
        apply_quick(sizes, clients, duration_secs, warmup_secs);
    }
}

fn apply_quick(
    sizes: &mut Vec<usize>,
    clients: &mut Vec<usize>,
    duration_secs: &mut u64,
    warmup_secs: &mut u64,
) {
    *sizes = vec![1000];
    *clients = vec![1, 16];
    *duration_secs = 2;
    *warmup_secs = 1;
}

pub struct SizeRun<'a> {
    pub size_no: usize,
    pub skills: usize,
    pub corpus: Arc<Corpus>,
    pub seeded: Arc<Vec<Seeded>>,
    pub base_url: &'a str,
    pub key: &'a str,
    pub server_pid: u32,
    pub xmemo_bin: &'a Path,
    pub warmup: Duration,
    pub duration: Duration,
    pub seed: u64,
    pub rest_l0: Option<&'a SizeReport>,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn phase_line(label: &str, level: Level, clients: usize, r: &PhaseResult) -> String {
    let mut line = format!(
        "  {label:<10} {:<3} {clients:>3} clients: {:>7.0} req/s  p50 {:>7.3} ms  p99 {:>7.3} ms  errors {}{}",
        level.label(),
        r.req_per_sec(),
        ms(r.latency.p50_us),
        ms(r.latency.p99_us),
        r.errors.count,
        r.server_cpu_us_per_req()
            .map(|u| format!("  server {u:.0} µs/req"))
            .unwrap_or_default(),
    );
    if let Some(o) = r.other_cpu_secs.filter(|_| r.window_secs > 0.0) {
        line.push_str(&format!("  other CPU {:.0} %", o * 100.0 / r.window_secs));
    }
    line
}

fn by_kind(r: &PhaseResult) -> String {
    QueryKind::ALL
        .iter()
        .zip(&r.by_tag)
        .map(|(k, l)| format!("{} {:.2}/{:.2}", k.label(), ms(l.p50_us), ms(l.p99_us)))
        .collect::<Vec<_>>()
        .join("; ")
}

pub async fn after_size(
    args: &ReadPathArgs,
    run: SizeRun<'_>,
    out: &mut Vec<String>,
) -> Result<()> {
    let n = run.skills;
    let mut lines = vec![format!("== {n} skills: read path (issue #14) ==")];
    if args.relevance_queries > 0 {
        eprintln!("xmemo-bench: N={n} Level 0 relevance check");
        let r = relevance::check(
            run.base_url,
            run.key,
            &run.corpus,
            &run.seeded,
            args.relevance_queries,
            run.seed,
        )
        .await?;
        lines.push("  Level 0 relevance (REST, known answers):".into());
        lines.extend(r.lines());
    }
    // Targets 2 and 3 from the REST phases.
    if let Some(size) = run.rest_l0 {
        for p in &size.phases {
            let r = &p.result;
            match p.level {
                Level::L0 => {
                    let worst = r.by_tag.iter().map(|l| l.p99_us).max().unwrap_or(0);
                    let mut t = format!(
                        "  REST L0 @{}: {:.0} req/s, p99 of the worst query kind {:.2} ms [{}]",
                        p.clients,
                        r.req_per_sec(),
                        ms(worst),
                        by_kind(r)
                    );
                    if n >= 100_000 {
                        t.push_str(&format!(
                            "  target 3 (p99 <= 10 ms every kind{}): {}",
                            if p.clients >= 32 { ", >= 5,000 req/s" } else { "" },
                            verdict(
                                worst <= 10_000 && (p.clients < 32 || r.req_per_sec() >= 5000.0)
                            )
                        ));
                    }
                    lines.push(t);
                }
                Level::L1 if p.clients >= 32 && n >= 100_000 => lines.push(format!(
                    "  REST L1 @{}: {:.0} req/s p99 {:.2} ms  target 2 (>= 10,000 req/s SQLite / 6,000 PostgreSQL, p99 <= 10 ms): see backend; {}",
                    p.clients,
                    r.req_per_sec(),
                    ms(r.latency.p99_us),
                    verdict(r.req_per_sec() >= 10_000.0 && r.latency.p99_us <= 10_000)
                )),
                _ => {}
            }
        }
    }
    let mut http_l0_one: Option<(u64, u64)> = None;
    if args.mcp {
        let target = mcp::Target {
            base_url: run.base_url,
            key: run.key,
            server_pid: run.server_pid,
            xmemo_bin: run.xmemo_bin,
        };
        for (transport, clients) in [
            (Transport::Http, &args.mcp_clients),
            (Transport::Stdio, &args.stdio_clients),
        ] {
            for level in [Level::L0, Level::L1, Level::L2] {
                for &c in clients.iter().filter(|c| **c > 0) {
                    eprintln!(
                        "xmemo-bench: N={n} {} {} with {c} client(s)",
                        transport.label(),
                        level.label()
                    );
                    let tags = if level == Level::L0 {
                        QueryKind::ALL.len()
                    } else {
                        1
                    };
                    let r = mcp::run(
                        &target,
                        transport,
                        PhaseConfig {
                            clients: c,
                            warmup: run.warmup,
                            duration: run.duration,
                        },
                        tags,
                        run.seed ^ ((run.size_no as u64) << 40) ^ ((c as u64) << 20) ^ 0x3c,
                        mcp::args_gen(level, run.corpus.clone(), run.seeded.clone()),
                    )
                    .await?;
                    let mut line = phase_line(transport.label(), level, c, &r);
                    if transport == Transport::Http && c == 1 && n <= 1000 {
                        let goal = if level == Level::L0 { 350 } else { 250 };
                        line.push_str(&format!(
                            "  target 1 (p50 <= {:.2} ms): {}",
                            goal as f64 / 1000.0,
                            verdict(r.latency.p50_us <= goal)
                        ));
                    }
                    if transport == Transport::Http && level == Level::L1 && c >= 32 && n >= 100_000
                    {
                        line.push_str(&format!(
                            "  target 2 (>= 10,000 req/s, p99 <= 10 ms): {}",
                            verdict(r.req_per_sec() >= 10_000.0 && r.latency.p99_us <= 10_000)
                        ));
                    }
                    for e in &r.errors.samples {
                        line.push_str(&format!("\n      error: {e}"));
                    }
                    if level == Level::L0 {
                        line.push_str(&format!("\n      by kind p50/p99 ms: {}", by_kind(&r)));
                        if transport == Transport::Http && c == 1 {
                            http_l0_one = Some((r.latency.p50_us, r.latency.p99_us));
                        }
                    }
                    eprintln!("{line}");
                    lines.push(line);
                }
            }
        }
    }
    if args.peer && run.size_no == 0 {
        let dir = args.peer_dir.clone().unwrap_or_else(peer::default_dir);
        let first: Vec<Seeded> = run.seeded.iter().take(1000).cloned().collect();
        eprintln!(
            "xmemo-bench: peer {} seeded with {} skills, 1 client",
            peer::PACKAGE,
            first.len()
        );
        match peer::run(
            &dir,
            run.corpus.clone(),
            Arc::new(first),
            PhaseConfig {
                clients: 1,
                warmup: run.warmup,
                duration: run.duration,
            },
            run.seed ^ 0x3c,
        )
        .await
        {
            Ok(p) => {
                let r = &p.result;
                let mut line = format!(
                    "  peer {}@{} over stdio, {} entities, search_nodes, 1 client: {:.0} req/s  p50 {:.3} ms  p99 {:.3} ms  errors {}\n      by kind p50/p99 ms: {}",
                    peer::PACKAGE,
                    p.version.as_deref().unwrap_or("?"),
                    p.entities,
                    r.req_per_sec(),
                    ms(r.latency.p50_us),
                    ms(r.latency.p99_us),
                    r.errors.count,
                    by_kind(r)
                );
                if let Some((p50, p99)) = http_l0_one {
                    let ratio = r.latency.p50_us as f64 / (p50.max(1)) as f64;
                    line.push_str(&format!(
                        "\n  side by side, Level 0, 1 client: xmemo MCP/HTTP p50 {:.3} / p99 {:.3} ms vs peer p50 {:.3} / p99 {:.3} ms: xmemo {ratio:.1}x faster at p50 (target 1: >= 10x: {})",
                        ms(p50),
                        ms(p99),
                        ms(r.latency.p50_us),
                        ms(r.latency.p99_us),
                        verdict(ratio >= 10.0)
                    ));
                }
                eprintln!("{line}");
                lines.push(line);
            }
            Err(e) => {
                let line = format!("  peer run failed: {e:#}");
                eprintln!("{line}");
                lines.push(line);
            }
        }
    }
    out.extend(lines);
    Ok(())
}
