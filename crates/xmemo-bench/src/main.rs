//! `xmemo-bench`: seeds an `xmemo serve` process with synthetic skills over HTTP and measures
//! save throughput and Level 0/1/2 recall throughput and latency. A benchmark, not a test:
//! it never fails on a figure; it prints each target next to what was measured.

mod calls;
mod clawhub;
mod console;
mod conversation;
mod corpus;
mod embed_endpoint;
mod embedder_speed;
mod load;
mod mcp;
mod measure;
mod memories;
mod neighbours;
mod peer;
mod percent;
mod read_path;
mod relevance;
mod report;
mod safety;
mod sandbox;
mod saves;
mod server;
mod signin;
mod skills_list;
mod startup;
mod write_phase;
mod writes;

use anyhow::{Context, Result, bail};
use clap::Parser;
use corpus::{Corpus, QueryKind, Rng, SCRIPT_PATH};
use load::{RequestGen, Seeded};
use measure::PhaseConfig;
use percent::encode;
use report::{Level, Phase, Report, SizeReport};
use serde_json::Value;
use server::{Server, StartOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "xmemo-bench",
    about = "Seed an xmemo server with skills and measure saves and recall over HTTP"
)]
struct Args {
    /// The xmemo server binary [default: $CARGO_TARGET_DIR/release/xmemo, target/release/xmemo,
    /// then the debug build with a warning]
    #[arg(long)]
    xmemo_bin: Option<PathBuf>,
    /// Database URL passed to `xmemo serve --database-url` (e.g. postgres://… on an EMPTY
    /// database); default: SQLite in a temporary data directory
    #[arg(long)]
    database_url: Option<String>,
    /// Admin API key file, when the server does not write <data-dir>/admin.key (a database that
    /// was not empty)
    #[arg(long)]
    admin_key_file: Option<PathBuf>,
    /// Skill counts to measure at; one server is seeded up to each in turn
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    sizes: Vec<usize>,
    /// Concurrent clients for the read phases
    #[arg(long, value_delimiter = ',', default_value = "1,32")]
    clients: Vec<usize>,
    /// Concurrent clients while seeding
    #[arg(long, default_value_t = 8)]
    seed_concurrency: usize,
    /// Measured seconds per read phase
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Unmeasured warm-up seconds before each read phase
    #[arg(long, default_value_t = 2)]
    warmup_secs: u64,
    /// Seed of the generated vocabulary, skills and request mix
    #[arg(long, default_value_t = 42)]
    corpus_seed: u64,
    /// Words in the generated vocabulary
    #[arg(long, default_value_t = 6000)]
    vocabulary: usize,
    /// Directory in which the temporary data directory is created [default: the system temp dir]
    #[arg(long)]
    data_parent: Option<PathBuf>,
    /// Keep the data directory after the run (its path is printed)
    #[arg(long)]
    keep_data: bool,
    /// Print the results as JSON on stdout (the human-readable table then goes to stderr)
    #[arg(long)]
    json: bool,
    /// Benchmark memories instead of skills (SPEC §9): recall quality (hit@1, hit@5 on queries
    /// with known answers) and recall latency at each of --sizes memories
    #[arg(long)]
    memories: bool,
    /// Recall quality on the public conversation benchmark instead (MemoryBank histories with
    /// our evidence labels, English and Chinese, per-user and pooled projects), against a
    /// textbook BM25 with Snowball stemming on the same turns
    #[arg(long)]
    conversations: bool,
    /// Where the conversation benchmark's files are
    #[arg(long, default_value = "tests/corpus/memorybank")]
    conversations_dir: PathBuf,
    /// Time the Memory Console's pages (p50/p99 each) at the smallest of --sizes skills
    #[arg(long)]
    console: bool,
    /// Known-item search on real skills: import this corpus folder (e.g.
    /// tests/corpus/clawhub) with `xmemo import DIR --publish`, then query each imported
    /// skill by the first words of its description (top-1 / top-5 hit rate, p50/p99)
    #[arg(long, value_name = "DIR")]
    clawhub: Option<PathBuf>,
    /// The offline safety scanner in process, no server: every SKILL.md under DIR (e.g.
    /// tests/corpus/clawhub) scanned on 1 and 2 threads; prints the verdict counts, the
    /// skills flagged and the best time of 3
    #[arg(long, value_name = "DIR")]
    safety: Option<PathBuf>,
    /// Memories only: queries per query kind in the quality check
    #[arg(long, default_value_t = 200)]
    quality_queries: usize,
    #[command(flatten)]
    writes: write_phase::WriteArgs,
    #[command(flatten)]
    read_path: read_path::ReadPathArgs,
    #[command(flatten)]
    embed_endpoint: embed_endpoint::EmbedEndpointArgs,
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = Args::parse();
    if let Some(dir) = &args.safety {
        return safety::run(dir);
    }
    if args.read_path.quick {
        args.read_path.apply_quick(
            &mut args.sizes,
            &mut args.clients,
            &mut args.duration_secs,
            &mut args.warmup_secs,
        );
    }
    let mut sizes = args.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    sizes.retain(|&n| n > 0);
    if sizes.is_empty() {
        bail!("--sizes needs at least one positive skill count");
    }
    let mut clients = args.clients.clone();
    clients.retain(|&c| c > 0);
    clients.dedup();
    if clients.is_empty() {
        bail!("--clients needs at least one positive client count");
    }
    let bin = resolve_bin(args.xmemo_bin.as_deref())?;
    let debug_build = looks_like_debug(&bin);
    if debug_build {
        eprintln!();
        eprintln!(
            "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        );
        eprintln!(
            "!! WARNING: benchmarking a DEBUG build ({}).",
            bin.display()
        );
        eprintln!("!! Debug figures are meaningless. Build the server with:");
        eprintln!("!!   cargo build --release -p xmemo-cli");
        eprintln!(
            "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        );
        eprintln!();
    }
    let backend = match args.database_url.as_deref() {
        None => "sqlite".to_string(),
        Some(u) if u.starts_with("postgres") => "postgresql".to_string(),
        Some(u) if u.starts_with("sqlite:") => "sqlite".to_string(),
        Some(_) => "other".to_string(),
    };

    if args.embed_endpoint.embed_endpoint {
        let settings = embed_endpoint::Settings {
            embed_endpoint: args.embed_endpoint.clone(),
            database_url: args.database_url.clone(),
            corpus_seed: args.corpus_seed,
            vocabulary: args.vocabulary,
            duration_secs: args.duration_secs,
            clients: args.clients.clone(),
            keep_data: args.keep_data,
            data_parent: args.data_parent.clone(),
            seed_concurrency: args.seed_concurrency,
        };
        return embed_endpoint::run(&settings, &bin).await;
    }
    if !args.writes.phases.is_empty() {
        let common = write_phase::Common {
            bin: &bin,
            database_url: args.database_url.as_deref(),
            admin_key_file: args.admin_key_file.as_deref(),
            data_parent: args.data_parent.as_deref(),
            keep_data: args.keep_data,
            seed_concurrency: args.seed_concurrency,
            corpus_seed: args.corpus_seed,
            vocabulary: args.vocabulary,
        };
        return writes::run(&args.writes, &common).await;
    }
    if let Some(load) = server::load_average().filter(|l| *l > 1.0) {
        eprintln!(
            "xmemo-bench: WARNING: 1-min load average is {load:.2}: other processes are busy and \
             will lower the figures (see the \"other CPU\" column)"
        );
    }
    let mut srv = Server::start(&StartOptions {
        bin: &bin,
        database_url: args.database_url.as_deref(),
        admin_key_file: args.admin_key_file.as_deref(),
        keep_data: args.keep_data,
        data_parent: args.data_parent.as_deref(),
        budgets: server::Budgets::WritesUnbounded,
    })?;
    let data_fs = if args.database_url.is_none() {
        server::filesystem_of(&srv.data_dir)
    } else {
        None
    };
    eprintln!(
        "xmemo-bench: server pid {} at {} (data dir {}{}, backend {backend})",
        srv.pid,
        srv.base_url,
        srv.data_dir.display(),
        data_fs
            .as_deref()
            .map(|f| format!(" on {f}"))
            .unwrap_or_default()
    );
    if data_fs.as_deref() == Some("tmpfs") {
        eprintln!(
            "xmemo-bench: WARNING: the data dir is on tmpfs, so fsync is free and save figures are \
             not durable-save figures; pass --data-parent on a real disk"
        );
    }

    let mut report = Report::new(
        &bin,
        debug_build,
        &backend,
        data_fs.clone(),
        &args_summary(&args),
    );
    report.memory_at_start = srv.memory();

    if let Some(dir) = &args.clawhub {
        let result = clawhub::run(&srv, &bin, dir).await;
        if let Err(e) = &result {
            eprintln!(
                "xmemo-bench: clawhub run failed: {e:#}\n{}",
                srv.stderr_tail()
            );
        }
        srv.stop();
        return result;
    }
    if args.console {
        let corpus = Arc::new(Corpus::new(args.corpus_seed, args.vocabulary));
        let result = console::run(&srv, corpus, sizes[0], args.seed_concurrency).await;
        if let Err(e) = &result {
            eprintln!(
                "xmemo-bench: console run failed: {e:#}\n{}",
                srv.stderr_tail()
            );
        }
        srv.stop();
        return result;
    }
    if args.conversations {
        let result = run_conversations(&args, &srv).await;
        if let Err(e) = &result {
            eprintln!("xmemo-bench: run failed: {e:#}\n{}", srv.stderr_tail());
        }
        srv.stop();
        return result;
    }
    if args.memories {
        let result = tokio::select! {
            r = run_memories(&args, &sizes, &srv) => r,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted (Ctrl-C)")),
        };
        if let Err(e) = &result {
            eprintln!("xmemo-bench: run failed: {e:#}\n{}", srv.stderr_tail());
        }
        srv.stop();
        return result;
    }

    // Ctrl-C stops the run but still prints what was measured so far.
    let mut extra = Vec::new();
    let result = tokio::select! {
        r = run(&args, &sizes, &clients, &mut srv, &mut report, &bin, &mut extra) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted (Ctrl-C); the report below is partial")),
    };
    if let Err(e) = &result {
        let alive = srv.alive();
        eprintln!(
            "xmemo-bench: run failed: {e:#}\n  server {}; last server stderr lines:\n{}",
            if alive { "still running" } else { "has EXITED" },
            srv.stderr_tail()
        );
    }
    srv.stop();
    if args.keep_data {
        eprintln!("xmemo-bench: data kept in {}", srv.data_dir.display());
    }
    // Print whatever was measured, even after a failure.
    let mut table = report.table();
    for line in &extra {
        table.push('\n');
        table.push_str(line);
    }
    if args.json {
        eprintln!("{table}");
        println!(
            "{}",
            serde_json::to_string_pretty(&report.json()).context("cannot encode the report")?
        );
    } else {
        println!("{table}");
    }
    result
}

/// The conversation benchmark: a row per language and layout.
async fn run_conversations(args: &Args, srv: &Server) -> Result<()> {
    let mut rows = Vec::new();
    for language in ["en", "cn"] {
        let data = conversation::load(&args.conversations_dir, language)?;
        for layout in [conversation::Layout::PerUser, conversation::Layout::Pooled] {
            let outcome = conversation::run(&srv.base_url, &srv.admin_key, &data, layout).await?;
            let row = conversation::row(&data, layout, &outcome);
            eprintln!("{row}");
            rows.push(row);
        }
    }
    println!("conversation recall (MemoryBank eval histories, our evidence labels)");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

/// The memory benchmark: one table row per size, printed as it is measured.
async fn run_memories(args: &Args, sizes: &[usize], srv: &Server) -> Result<()> {
    let corpus = Arc::new(memories::MemoryCorpus::new(
        args.corpus_seed,
        args.vocabulary,
    ));
    let mut ids = Vec::new();
    let mut count = 0;
    let duration = Duration::from_secs(args.duration_secs.max(1));
    let throughput_clients = args.clients.iter().copied().max().unwrap_or(32);
    let mut rows = Vec::new();
    // With a semantic lane from a model folder: the embedder alone first, on the corpus's own
    // texts (the largest size's first 10,000 memories) and 1,000 of its queries.
    if let Some(dir) = std::env::var("XMEMO_EMBEDDING_MODEL")
        .ok()
        .filter(|d| Path::new(d).is_dir())
    {
        let top = sizes.iter().copied().max().unwrap_or(0).clamp(1, 10_000);
        let texts: Vec<String> = (0..top)
            .map(|i| {
                corpus.memory(i)["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        let mut rng = Rng::new(args.corpus_seed);
        let queries: Vec<String> = (0..1000)
            .map(|i| corpus.query(i % top, memories::QueryKind::Noisy, &mut rng))
            .collect();
        let speed = embedder_speed::measure(&dir, &texts, &queries).await?;
        rows.push(format!(
            "embedder {} in process: {:.0} texts/s ({} memory texts, batches of 64; target >= 300)  |  one query p50 {:.2} ms p99 {:.2} ms (target p50 <= 3 ms)",
            speed.model,
            speed.texts_per_s,
            texts.len(),
            speed.query.p50_us as f64 / 1000.0,
            speed.query.p99_us as f64 / 1000.0,
        ));
        eprintln!("{}", rows[rows.len() - 1]);
    }
    let http = load::client()?;
    for &n in sizes {
        let seeding = std::time::Instant::now();
        eprintln!(
            "xmemo-bench: remembering {count}..{n} with {} clients",
            args.seed_concurrency
        );
        let took = memories::seed(
            &srv.base_url,
            &srv.admin_key,
            corpus.clone(),
            count,
            n,
            args.seed_concurrency,
            &mut ids,
        )
        .await?;
        eprintln!(
            "  {} memories in {:.1} s = {:.0} remembers/s",
            n - count,
            took.as_secs_f64(),
            (n - count) as f64 / took.as_secs_f64().max(1e-9)
        );
        let saves_per_s = (n - count) as f64 / took.as_secs_f64().max(1e-9);
        count = n;
        // With the lane on, its worker embedded while the saves went on: wait for the rest,
        // then the server's memory with every vector held.
        if conversation::lane_gauges(&http, &srv.base_url, &srv.admin_key)
            .await?
            .is_some()
        {
            conversation::embedded(&http, &srv.base_url, &srv.admin_key, n as f64).await?;
            let all = seeding.elapsed();
            let line = format!(
                "N={n:>7}  lane on: {saves_per_s:.0} saves/s while the worker embeds (target >= 1,000); every row embedded {:.1} s after the first save, {:.1} s after the last; server RSS {:.0} MiB with {n} vectors (target <= 200 MiB at 10k)",
                all.as_secs_f64(),
                (all - took).as_secs_f64(),
                srv.memory().rss_kib as f64 / 1024.0,
            );
            eprintln!("{line}");
            rows.push(line);
        } else {
            let line = format!(
                "N={n:>7}  text lane: {saves_per_s:.0} saves/s; server RSS {:.0} MiB",
                srv.memory().rss_kib as f64 / 1024.0,
            );
            eprintln!("{line}");
            rows.push(line);
        }
        let (quality, sequential) = memories::quality_and_latency(
            &srv.base_url,
            &srv.admin_key,
            &corpus,
            &ids,
            args.quality_queries,
            args.corpus_seed,
        )
        .await?;
        eprintln!(
            "xmemo-bench: N={n} recall with {throughput_clients} clients for {}s",
            duration.as_secs()
        );
        let (rate, loaded) = memories::throughput(
            &srv.base_url,
            &srv.admin_key,
            corpus.clone(),
            n,
            throughput_clients,
            duration,
        )
        .await?;
        let mut line = format!(
            "N={n:>7}  1 client: p50 {:>6.2} ms  p99 {:>6.2} ms  |  {throughput_clients} clients: {rate:>7.0} req/s  p99 {:>6.2} ms",
            sequential.p50_us as f64 / 1000.0,
            sequential.p99_us as f64 / 1000.0,
            loaded.p99_us as f64 / 1000.0,
        );
        let (mut all, mut hit1, mut hit5) = (0, 0, 0);
        for (kind, q) in &quality {
            line.push_str(&format!(
                "\n           {:<32} hit@1 {:.3}  hit@5 {:.3}  ({} queries)",
                kind.label(),
                q.hit1_rate(),
                q.hit5_rate(),
                q.queries
            ));
            all += q.queries;
            hit1 += q.hit1;
            hit5 += q.hit5;
        }
        line.push_str(&format!(
            "\n           {:<32} hit@1 {:.3}  hit@5 {:.3}  (target hit@5 >= 0.95; p99 <= 10 ms)",
            "all",
            hit1 as f64 / all.max(1) as f64,
            hit5 as f64 / all.max(1) as f64
        ));
        eprintln!("{line}");
        rows.push(line);
    }
    println!(
        "\nxmemo-bench --memories (backend: {}, {})",
        if args.database_url.is_some() {
            "postgresql"
        } else {
            "sqlite"
        },
        srv.base_url
    );
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

async fn run(
    args: &Args,
    sizes: &[usize],
    clients: &[usize],
    srv: &mut Server,
    report: &mut Report,
    bin: &Path,
    extra: &mut Vec<String>,
) -> Result<()> {
    let corpus = Arc::new(Corpus::new(args.corpus_seed, args.vocabulary));
    let mut seeded: Vec<Seeded> = Vec::new();
    let mut count = 0usize;
    let warmup = Duration::from_secs(args.warmup_secs);
    let duration = Duration::from_secs(args.duration_secs.max(1));
    for (size_no, &n) in sizes.iter().enumerate() {
        eprintln!(
            "xmemo-bench: seeding skills {count}..{n} with {} clients",
            args.seed_concurrency
        );
        let seed = load::seed(
            &srv.base_url,
            &srv.admin_key,
            corpus.clone(),
            count,
            n,
            args.seed_concurrency,
            srv.pid,
        )
        .await?;
        count = n;
        eprintln!(
            "  {} saves in {:.1} s = {:.0} saves/s, {} errors",
            seed.saves,
            seed.secs,
            seed.saves_per_sec(),
            seed.errors.count
        );
        for e in &seed.errors.samples {
            eprintln!("  error: {e}");
        }
        seeded.extend(seed.seeded.iter().cloned());
        report.sizes.push(SizeReport::new(n, seed, srv.memory()));
        if seeded.is_empty() {
            bail!("no skill could be saved; nothing to read");
        }
        sanity_check(&srv.base_url, &srv.admin_key, &corpus, &seeded).await?;

        let skills = Arc::new(seeded.clone());
        for level in [Level::L0, Level::L1, Level::L2] {
            for &c in clients {
                eprintln!(
                    "xmemo-bench: N={n} {} with {c} client(s): {}s warm-up + {}s",
                    level.label(),
                    warmup.as_secs(),
                    duration.as_secs()
                );
                let generate = request_gen(level, corpus.clone(), skills.clone());
                let tags = if level == Level::L0 {
                    QueryKind::ALL.len()
                } else {
                    1
                };
                let phase_seed = args.corpus_seed
                    ^ ((size_no as u64) << 40)
                    ^ ((level as u64) << 48)
                    ^ ((c as u64) << 20);
                let r = load::run_phase(
                    &srv.base_url,
                    &srv.admin_key,
                    PhaseConfig {
                        clients: c,
                        warmup,
                        duration,
                    },
                    tags,
                    phase_seed,
                    srv.pid,
                    generate,
                )
                .await?;
                eprintln!(
                    "  {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {} errors",
                    r.req_per_sec(),
                    r.latency.p50_us as f64 / 1000.0,
                    r.latency.p99_us as f64 / 1000.0,
                    r.errors.count
                );
                for e in &r.errors.samples {
                    eprintln!("  error: {e}");
                }
                let memory = srv.memory();
                if let Some(size) = report.sizes.last_mut() {
                    size.phases.push(Phase {
                        level,
                        clients: c,
                        result: r,
                        memory,
                    });
                }
                if !srv.alive() {
                    bail!("the server exited during the run");
                }
            }
        }
        read_path::after_size(
            &args.read_path,
            read_path::SizeRun {
                size_no,
                skills: n,
                corpus: corpus.clone(),
                seeded: skills.clone(),
                base_url: &srv.base_url,
                key: &srv.admin_key,
                server_pid: srv.pid,
                xmemo_bin: bin,
                warmup,
                duration,
                seed: args.corpus_seed,
                rest_l0: report.sizes.last(),
            },
            extra,
        )
        .await?;
        if !srv.alive() {
            bail!("the server exited during the run");
        }
    }
    Ok(())
}

/// Requests for one level: L0 cycles through the query kinds; L1 and L2 pick seeded skills
/// uniformly at random.
fn request_gen(level: Level, corpus: Arc<Corpus>, skills: Arc<Vec<Seeded>>) -> Arc<RequestGen> {
    match level {
        Level::L0 => Arc::new(move |rng: &mut Rng| {
            let tag = rng.below(QueryKind::ALL.len());
            let kind = QueryKind::ALL[tag];
            let slug = &skills[rng.below(skills.len())].slug;
            let q = corpus.query(rng, kind, slug);
            (tag, format!("/api/v1/skills?query={}&limit=10", encode(&q)))
        }),
        Level::L1 => Arc::new(move |rng: &mut Rng| {
            let s = &skills[rng.below(skills.len())];
            (0, format!("/api/v1/skills/{}", s.slug))
        }),
        Level::L2 => Arc::new(move |rng: &mut Rng| {
            let s = &skills[rng.below(skills.len())];
            (
                0,
                format!(
                    "/api/v1/skills/{}/revisions/{}/resources/{SCRIPT_PATH}",
                    s.slug,
                    encode(&s.revision_id)
                ),
            )
        }),
    }
}

/// Before measuring: the requests the phases send return what they should.
async fn sanity_check(base: &str, key: &str, corpus: &Corpus, seeded: &[Seeded]) -> Result<()> {
    let client = load::client()?;
    let s = &seeded[seeded.len() / 2];
    let get = |path: String| {
        let client = client.clone();
        async move {
            let resp = client
                .get(format!("{base}{path}"))
                .bearer_auth(key)
                .send()
                .await
                .with_context(|| format!("GET {path}"))?;
            let status = resp.status();
            let bytes = resp.bytes().await?;
            if !status.is_success() {
                bail!(
                    "sanity check GET {path}: HTTP {status}: {}",
                    load::snippet(&bytes)
                );
            }
            serde_json::from_slice::<Value>(&bytes)
                .with_context(|| format!("sanity check GET {path}: response is not JSON"))
        }
    };
    let l0 = get(format!("/api/v1/skills?query={}&limit=10", encode(&s.slug))).await?;
    let first = l0
        .pointer("/data/skills/0/slug")
        .and_then(Value::as_str)
        .unwrap_or("");
    if first != s.slug {
        bail!(
            "sanity check: searching for slug {} does not rank it first (got `{first}`)",
            s.slug
        );
    }
    let l1 = get(format!("/api/v1/skills/{}", s.slug)).await?;
    let rev = l1
        .pointer("/data/revision_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    if rev != s.revision_id {
        bail!(
            "sanity check: Level 1 of {} returned revision `{rev}`, saved was {}",
            s.slug,
            s.revision_id
        );
    }
    let l2 = get(format!(
        "/api/v1/skills/{}/revisions/{}/resources/{SCRIPT_PATH}",
        s.slug,
        encode(&s.revision_id)
    ))
    .await?;
    let (_, body) = corpus.skill(s.index);
    let expected = body
        .pointer("/components/0/content")
        .and_then(Value::as_str)
        .unwrap_or("");
    let got = l2
        .pointer("/data/content")
        .and_then(Value::as_str)
        .unwrap_or("");
    if got != expected {
        bail!(
            "sanity check: Level 2 content of {} differs from what was saved",
            s.slug
        );
    }
    Ok(())
}

fn resolve_bin(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return p
            .canonicalize()
            .with_context(|| format!("--xmemo-bin {} not found", p.display()));
    }
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(PathBuf::from(&dir).join("release/xmemo"));
    }
    candidates.push(PathBuf::from("target/release/xmemo"));
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(PathBuf::from(&dir).join("debug/xmemo"));
    }
    candidates.push(PathBuf::from("target/debug/xmemo"));
    for c in &candidates {
        if c.is_file() {
            return c
                .canonicalize()
                .with_context(|| format!("cannot resolve {}", c.display()));
        }
    }
    bail!(
        "no xmemo binary found (looked at {}); build it with `cargo build --release -p xmemo-cli` \
         or pass --xmemo-bin",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn looks_like_debug(bin: &Path) -> bool {
    bin.components().any(|c| c.as_os_str() == "debug")
}

fn args_summary(args: &Args) -> Vec<(String, Value)> {
    vec![
        ("duration_secs".into(), args.duration_secs.into()),
        ("warmup_secs".into(), args.warmup_secs.into()),
        ("seed_concurrency".into(), args.seed_concurrency.into()),
        ("corpus_seed".into(), args.corpus_seed.into()),
        ("vocabulary".into(), args.vocabulary.into()),
    ]
}
