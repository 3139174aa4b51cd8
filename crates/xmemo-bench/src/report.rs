//! The results: a human-readable table with each target next to its figure, and JSON.

use crate::corpus::QueryKind;
use crate::load::SeedResult;
use crate::measure::{Errors, Latency, PhaseResult};
use crate::server::Memory;
use serde_json::{Map, Value, json};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Durable saves per second while seeding.
pub const TARGET_SAVES_PER_SEC: f64 = 500.0;
/// Level 1 requests per second at this many clients.
pub const TARGET_L1_REQ_PER_SEC: f64 = 10_000.0;
pub const TARGET_L1_CLIENTS: usize = 32;
/// Level 0 p99 at this many skills.
pub const TARGET_L0_P99_MS: f64 = 10.0;
pub const TARGET_L0_SKILLS: usize = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    L0 = 0,
    L1 = 1,
    L2 = 2,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::L0 => "L0",
            Level::L1 => "L1",
            Level::L2 => "L2",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Level::L0 => "search (GET /api/v1/skills?query=…&limit=10)",
            Level::L1 => "root (GET /api/v1/skills/{slug})",
            Level::L2 => "resource (GET …/revisions/{id}/resources/{path})",
        }
    }
}

pub struct Phase {
    pub level: Level,
    pub clients: usize,
    pub result: PhaseResult,
    pub memory: Memory,
}

pub struct SizeReport {
    pub skills: usize,
    pub seed: SeedResult,
    pub memory_after_seed: Memory,
    pub phases: Vec<Phase>,
}

impl SizeReport {
    pub fn new(skills: usize, seed: SeedResult, memory_after_seed: Memory) -> Self {
        SizeReport {
            skills,
            seed,
            memory_after_seed,
            phases: Vec::new(),
        }
    }
}

pub struct Report {
    date: String,
    bin: PathBuf,
    debug_build: bool,
    backend: String,
    data_fs: Option<String>,
    cores: usize,
    settings: Vec<(String, Value)>,
    pub memory_at_start: Memory,
    load_at_start: Option<f64>,
    pub sizes: Vec<SizeReport>,
}

/// A target verdict: `Some(true)` met, `Some(false)` missed, `None` not applicable.
fn verdict(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "",
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn pct(cpu: Option<f64>, secs: f64) -> String {
    match cpu {
        Some(c) if secs > 0.0 => format!("{:.0}%", 100.0 * c / secs),
        _ => "?".into(),
    }
}

impl Report {
    pub fn new(
        bin: &Path,
        debug_build: bool,
        backend: &str,
        data_fs: Option<String>,
        settings: &[(String, Value)],
    ) -> Self {
        Report {
            date: utc_now(),
            bin: bin.to_path_buf(),
            debug_build,
            backend: backend.to_string(),
            data_fs,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            settings: settings.to_vec(),
            memory_at_start: Memory::default(),
            load_at_start: crate::server::load_average(),
            sizes: Vec::new(),
        }
    }

    fn seed_target(seed: &SeedResult) -> Option<bool> {
        Some(seed.saves_per_sec() >= TARGET_SAVES_PER_SEC && seed.errors.count == 0)
    }

    fn phase_target(skills: usize, p: &Phase) -> (Option<bool>, String) {
        let r = &p.result;
        let clean = r.errors.count == 0;
        match p.level {
            Level::L1 if p.clients == TARGET_L1_CLIENTS => (
                Some(r.req_per_sec() >= TARGET_L1_REQ_PER_SEC && clean),
                format!("≥ {TARGET_L1_REQ_PER_SEC:.0} req/s"),
            ),
            Level::L0 if skills >= TARGET_L0_SKILLS => (
                Some(ms(r.latency.p99_us) <= TARGET_L0_P99_MS && clean),
                format!("p99 ≤ {TARGET_L0_P99_MS:.0} ms"),
            ),
            Level::L0 => (
                None,
                format!("(p99 ≤ {TARGET_L0_P99_MS:.0} ms applies at {TARGET_L0_SKILLS} skills)"),
            ),
            _ => (None, String::new()),
        }
    }

    fn total_errors(&self) -> usize {
        self.sizes
            .iter()
            .map(|s| {
                s.seed.errors.count
                    + s.phases
                        .iter()
                        .map(|p| p.result.errors.count)
                        .sum::<usize>()
            })
            .sum()
    }

    pub fn table(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "xmemo-bench — {} — {} cores — backend {}{} — server {}{}",
            self.date,
            self.cores,
            self.backend,
            self.data_fs
                .as_deref()
                .map(|f| format!(" (data dir on {f})"))
                .unwrap_or_default(),
            self.bin.display(),
            if self.debug_build {
                " — DEBUG BUILD: FIGURES ARE MEANINGLESS"
            } else {
                ""
            }
        );
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            o,
            "settings: {}; server RSS at start {:.1} MiB; 1-min load average at start {}",
            settings.join(", "),
            mib(self.memory_at_start.rss_kib),
            self.load_at_start
                .map(|l| format!("{l:.2}"))
                .unwrap_or_else(|| "?".into())
        );
        let _ = writeln!(
            o,
            "CPU columns: % of one core over the measured window (200% = both cores of a 2-core \
             machine); \"other\" is everything else on the machine and should be near 0%; srv µs/req = \
             server CPU time per request; cs/req = server thread context switches per request"
        );
        let _ = writeln!(
            o,
            "levels: L0 = {}; L1 = {}; L2 = {}",
            Level::L0.what(),
            Level::L1.what(),
            Level::L2.what()
        );
        for s in &self.sizes {
            let seed = &s.seed;
            let _ = writeln!(o);
            let _ = writeln!(o, "== {} skills ==", s.skills);
            let _ = writeln!(
                o,
                "seed {} → {}: {} saves ({} new revisions) in {:.1} s = {:.0} saves/s; save p50 {:.1} ms, p99 {:.1} ms; CPU server {} / bench {} / other processes {}; errors {}   [target ≥ {TARGET_SAVES_PER_SEC:.0} durable saves/s: {}]",
                seed.from,
                seed.to,
                seed.saves,
                seed.created,
                seed.secs,
                seed.saves_per_sec(),
                ms(seed.latency.p50_us),
                ms(seed.latency.p99_us),
                pct(seed.server_cpu_secs, seed.secs),
                pct(seed.bench_cpu_secs, seed.secs),
                pct(seed.other_cpu_secs, seed.secs),
                seed.errors.count,
                verdict(Self::seed_target(seed)),
            );
            write_errors(&mut o, &seed.errors);
            let _ = writeln!(
                o,
                "server RSS after seeding: {:.1} MiB (peak {:.1} MiB)",
                mib(s.memory_after_seed.rss_kib),
                mib(s.memory_after_seed.hwm_kib)
            );
            let _ = writeln!(o);
            let _ = writeln!(
                o,
                "{:<5} {:>7} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8} {:>9} {:>9} {:>10} {:>7} {:>8} {:>8}  target",
                "level",
                "clients",
                "requests",
                "req/s",
                "p50 ms",
                "p99 ms",
                "errors",
                "srv CPU",
                "bench CPU",
                "other CPU",
                "srv µs/req",
                "cs/req",
                "RSS MiB",
                "peak MiB"
            );
            for p in &s.phases {
                let r = &p.result;
                let (v, label) = Self::phase_target(s.skills, p);
                let target = match v {
                    Some(_) => format!("{label}: {}", verdict(v)),
                    None => label,
                };
                let _ = writeln!(
                    o,
                    "{:<5} {:>7} {:>9} {:>9.0} {:>8.2} {:>8.2} {:>7} {:>8} {:>9} {:>9} {:>10} {:>7} {:>8.1} {:>8.1}  {}",
                    p.level.label(),
                    p.clients,
                    r.requests,
                    r.req_per_sec(),
                    ms(r.latency.p50_us),
                    ms(r.latency.p99_us),
                    r.errors.count,
                    pct(r.server_cpu_secs, r.window_secs),
                    pct(r.bench_cpu_secs, r.window_secs),
                    pct(r.other_cpu_secs, r.window_secs),
                    r.server_cpu_us_per_req()
                        .map(|v| format!("{v:.0}"))
                        .unwrap_or_else(|| "?".into()),
                    r.context_switches_per_req()
                        .map(|v| format!("{v:.1}"))
                        .unwrap_or_else(|| "?".into()),
                    mib(p.memory.rss_kib),
                    mib(p.memory.hwm_kib),
                    target
                );
            }
            for p in s.phases.iter().filter(|p| p.level == Level::L0) {
                let kinds: Vec<String> = QueryKind::ALL
                    .iter()
                    .zip(&p.result.by_tag)
                    .map(|(k, l)| {
                        format!(
                            "{} p50 {:.2} / p99 {:.2} ms",
                            k.label(),
                            ms(l.p50_us),
                            ms(l.p99_us)
                        )
                    })
                    .collect();
                let _ = writeln!(
                    o,
                    "  L0 by query kind, {} client(s): {}",
                    p.clients,
                    kinds.join("; ")
                );
            }
            for p in &s.phases {
                if p.result.errors.count > 0 {
                    let _ = writeln!(
                        o,
                        "  {} at {} client(s): {} errors",
                        p.level.label(),
                        p.clients,
                        p.result.errors.count
                    );
                    write_errors(&mut o, &p.result.errors);
                }
            }
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "targets:");
        for (name, figure, v) in self.targets() {
            let _ = writeln!(o, "  {name}: {figure} — {}", verdict(Some(v)));
        }
        let errors = self.total_errors();
        if errors > 0 {
            let _ = writeln!(
                o,
                "THIS RUN HAD {errors} FAILED REQUESTS: its figures are not valid measurements."
            );
        } else {
            let _ = writeln!(o, "no failed requests.");
        }
        if self.debug_build {
            let _ = writeln!(
                o,
                "DEBUG BUILD OF THE SERVER: these figures are meaningless."
            );
        }
        o
    }

    /// (target, measured figure, met) for every figure a target applies to.
    fn targets(&self) -> Vec<(String, String, bool)> {
        let mut out = Vec::new();
        for s in &self.sizes {
            out.push((
                format!(
                    "≥ {TARGET_SAVES_PER_SEC:.0} durable saves/s (seeding {} → {})",
                    s.seed.from, s.seed.to
                ),
                format!("{:.0} saves/s", s.seed.saves_per_sec()),
                Self::seed_target(&s.seed).unwrap_or(false),
            ));
            for p in &s.phases {
                if let (Some(v), label) = Self::phase_target(s.skills, p) {
                    let figure = match p.level {
                        Level::L1 => format!("{:.0} req/s", p.result.req_per_sec()),
                        _ => format!("p99 {:.2} ms", ms(p.result.latency.p99_us)),
                    };
                    out.push((
                        format!(
                            "{} {label} at {} clients, {} skills",
                            p.level.label(),
                            p.clients,
                            s.skills
                        ),
                        figure,
                        v,
                    ));
                }
            }
        }
        out
    }

    pub fn json(&self) -> Value {
        let mut settings = Map::new();
        for (k, v) in &self.settings {
            settings.insert(k.clone(), v.clone());
        }
        let sizes: Vec<Value> = self
            .sizes
            .iter()
            .map(|s| {
                let seed = &s.seed;
                let phases: Vec<Value> = s
                    .phases
                    .iter()
                    .map(|p| {
                        let r = &p.result;
                        let (v, label) = Self::phase_target(s.skills, p);
                        let mut phase = json!({
                            "level": p.level.label(),
                            "clients": p.clients,
                            "requests": r.requests,
                            "errors": r.errors.count,
                            "error_samples": r.errors.samples,
                            "window_secs": r.window_secs,
                            "req_per_sec": r.req_per_sec(),
                            "latency_ms": latency_json(&r.latency),
                            "server_cpu_secs": r.server_cpu_secs,
                            "bench_cpu_secs": r.bench_cpu_secs,
                            "other_processes_cpu_secs": r.other_cpu_secs,
                            "server_cpu_us_per_req": r.server_cpu_us_per_req(),
                            "server_context_switches": r.server_context_switches,
                            "server_context_switches_per_req": r.context_switches_per_req(),
                            "server_rss_kib": p.memory.rss_kib,
                            "server_peak_rss_kib": p.memory.hwm_kib,
                            "target": if v.is_some() { Value::from(label) } else { Value::Null },
                            "target_met": v,
                        });
                        if p.level == Level::L0 {
                            let by_kind: Map<String, Value> = QueryKind::ALL
                                .iter()
                                .zip(&r.by_tag)
                                .map(|(k, l)| (k.label().replace(' ', "_"), latency_json(l)))
                                .collect();
                            phase["latency_ms_by_query_kind"] = Value::Object(by_kind);
                        }
                        phase
                    })
                    .collect();
                json!({
                    "skills": s.skills,
                    "seed": {
                        "from": seed.from,
                        "to": seed.to,
                        "saves": seed.saves,
                        "created": seed.created,
                        "errors": seed.errors.count,
                        "error_samples": seed.errors.samples,
                        "secs": seed.secs,
                        "saves_per_sec": seed.saves_per_sec(),
                        "latency_ms": latency_json(&seed.latency),
                        "server_cpu_secs": seed.server_cpu_secs,
                        "bench_cpu_secs": seed.bench_cpu_secs,
                        "other_processes_cpu_secs": seed.other_cpu_secs,
                        "target": format!("≥ {TARGET_SAVES_PER_SEC:.0} saves/s"),
                        "target_met": Self::seed_target(seed),
                    },
                    "server_rss_kib_after_seed": s.memory_after_seed.rss_kib,
                    "server_peak_rss_kib_after_seed": s.memory_after_seed.hwm_kib,
                    "phases": phases,
                })
            })
            .collect();
        json!({
            "date": self.date,
            "cores": self.cores,
            "backend": self.backend,
            "data_dir_filesystem": self.data_fs,
            "xmemo_bin": self.bin.display().to_string(),
            "debug_build": self.debug_build,
            "settings": settings,
            "server_rss_kib_at_start": self.memory_at_start.rss_kib,
            "load_average_1min_at_start": self.load_at_start,
            "sizes": sizes,
            "targets": self.targets().into_iter().map(|(t, f, v)| json!({"target": t, "measured": f, "met": v})).collect::<Vec<_>>(),
            "errors_total": self.total_errors(),
        })
    }
}

fn latency_json(l: &Latency) -> Value {
    json!({
        "count": l.count,
        "p50": ms(l.p50_us),
        "p99": ms(l.p99_us),
        "max": ms(l.max_us),
        "mean": l.mean_us / 1000.0,
    })
}

fn write_errors(o: &mut String, errors: &Errors) {
    for e in &errors.samples {
        let _ = writeln!(o, "    error: {e}");
    }
}

/// `YYYY-MM-DD HH:MM UTC` from the system clock.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}
