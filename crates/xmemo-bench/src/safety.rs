//! `--safety DIR`: the offline safety scanner over a folder of real skills (#33), in process,
//! no server. Every `SKILL.md` under DIR (any case) is read once, then scanned as a one-file
//! package on one thread and on two (the machine's cores), three times each: the table prints
//! how many skills get each verdict and the best time of each. Figures are printed, never
//! asserted (the target: the whole ClawHub corpus in at most 2 s on 2 cores).

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xmemo_safety::{Report, ScanFile, Verdict, scan_skill};

const ROUNDS: usize = 3;

fn skill_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            skill_files(&path, out)?;
        } else if kind.is_file()
            && path
                .file_name()
                .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
        {
            out.push(path);
        }
    }
    Ok(())
}

fn scan_all(files: &[(PathBuf, Vec<u8>)]) -> Vec<Report> {
    files
        .iter()
        .map(|(_, bytes)| {
            scan_skill(&[ScanFile {
                path: "SKILL.md",
                bytes,
            }])
        })
        .collect()
}

fn best_of(mut run: impl FnMut() -> Vec<Report>) -> (Duration, Vec<Report>) {
    let mut best = Duration::MAX;
    let mut reports = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        reports = run();
        best = best.min(started.elapsed());
    }
    (best, reports)
}

pub fn run(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        bail!("--safety {}: not a directory", dir.display());
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "xmemo-bench: WARNING: a debug build; scanner figures are meaningless \
             (cargo build --release -p xmemo-bench)"
        );
    }
    let mut paths = Vec::new();
    skill_files(dir, &mut paths)?;
    paths.sort();
    if paths.is_empty() {
        bail!("--safety {}: no SKILL.md under it", dir.display());
    }
    let files: Vec<(PathBuf, Vec<u8>)> = paths
        .into_iter()
        .map(|p| std::fs::read(&p).map(|b| (p, b)))
        .collect::<std::io::Result<_>>()?;
    let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    // Compiles the rules, so the figures below are the scans.
    let warm = Instant::now();
    scan_skill(&[ScanFile {
        path: "SKILL.md",
        bytes: b"# warm-up\n",
    }]);
    let compile = warm.elapsed();

    let (one, reports) = best_of(|| scan_all(&files));
    let half = files.len() / 2;
    let (first, second) = files.split_at(half);
    let (two, parallel) = best_of(|| {
        std::thread::scope(|s| {
            let a = s.spawn(|| scan_all(first));
            let mut out = scan_all(second);
            let mut joined = a.join().unwrap_or_default();
            joined.append(&mut out);
            joined
        })
    });
    if parallel != reports {
        bail!("the two-thread scan disagrees with the one-thread scan");
    }
    let count = |v: Verdict| reports.iter().filter(|r| r.verdict == v).count();
    let total = reports.len();
    let pct = |n: usize| 100.0 * n as f64 / total as f64;
    let (clean, suspicious, malicious) = (
        count(Verdict::Clean),
        count(Verdict::Suspicious),
        count(Verdict::Malicious),
    );
    println!(
        "safety scan of {} — {total} SKILL.md, {:.1} MiB, rules {}",
        dir.display(),
        bytes as f64 / (1024.0 * 1024.0),
        xmemo_safety::RULES_VERSION
    );
    println!("  clean       {clean:>6}  {:>6.2} %", pct(clean));
    println!("  suspicious  {suspicious:>6}  {:>6.2} %", pct(suspicious));
    println!("  malicious   {malicious:>6}  {:>6.2} %", pct(malicious));
    println!(
        "  rules compiled in {:.0} ms; whole folder, best of {ROUNDS}: {:.0} ms on 1 thread, {:.0} ms on 2 threads",
        compile.as_secs_f64() * 1000.0,
        one.as_secs_f64() * 1000.0,
        two.as_secs_f64() * 1000.0
    );
    for ((path, _), report) in files.iter().zip(&reports) {
        if report.verdict != Verdict::Clean {
            let mut rules: Vec<&str> = report.findings.iter().map(|f| f.rule_id.as_str()).collect();
            rules.sort_unstable();
            rules.dedup();
            let shown = path.strip_prefix(dir).unwrap_or(path);
            println!(
                "  {:<10} {}  [{}]",
                report.verdict.as_str(),
                shown.display(),
                rules.join(", ")
            );
        }
    }
    Ok(())
}
