//! The scanner on real skills: every ClawHub SKILL.md and every Anthropic example skill.
//! Prints the counts per verdict and every skill it flags (`--nocapture`), and holds the
//! scanner to the acceptance bounds of issue #33:
//!
//! * every ClawHub file carrying the live `base64 -D | bash` payload is `malicious`;
//! * other real skills called `malicious`: at most 1 %;
//! * real skills flagged at all (`suspicious` + `malicious`): at most 5 %;
//! * this crate's hostile corpus flagged: at least 90 %; its benign corpus: no `malicious`.

mod common;

use common::{describe, own_corpus, read_folder, read_zip, real_corpus, scan};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use xmemo_safety::{Report, ScanFile, Verdict, scan_skill};

fn skill_md_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let e = e.expect("dir entry");
        let p = e.path();
        if e.file_type().expect("file type").is_dir() {
            skill_md_files(&p, out);
        } else if p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case("skill.md"))
        {
            out.push(p);
        }
    }
}

fn count(reports: &[(String, Report)]) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for v in [Verdict::Clean, Verdict::Suspicious, Verdict::Malicious] {
        m.insert(
            v.as_str(),
            reports.iter().filter(|(_, r)| r.verdict == v).count(),
        );
    }
    m
}

fn rule_ids(r: &Report) -> String {
    let mut ids: Vec<String> = r
        .findings
        .iter()
        .filter(|f| f.severity >= xmemo_safety::Severity::Medium)
        .map(|f| format!("{}@{}", f.rule_id, f.line))
        .collect();
    ids.dedup();
    ids.join(", ")
}

#[test]
fn clawhub_and_anthropic_skills() {
    let root = real_corpus();
    let claw = root.join("clawhub/skills");
    let mut files = Vec::new();
    skill_md_files(&claw, &mut files);
    files.sort();
    assert!(
        files.len() >= 1600,
        "expected the 1,635 ClawHub SKILL.md files, found {}",
        files.len()
    );
    let contents: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&claw)
                .expect("under clawhub")
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read(p).expect("read"))
        })
        .collect();

    // Compile the rules first: the figure below is the scan itself.
    let warm = Instant::now();
    let _ = scan_skill(&[ScanFile {
        path: "SKILL.md",
        bytes: b"# warm-up\n",
    }]);
    println!(
        "rules compiled in {:.0} ms",
        warm.elapsed().as_secs_f64() * 1000.0
    );
    let start = Instant::now();
    let reports: Vec<(String, Report)> = contents
        .iter()
        .map(|(rel, bytes)| {
            (
                rel.clone(),
                scan_skill(&[ScanFile {
                    path: "SKILL.md",
                    bytes,
                }]),
            )
        })
        .collect();
    let elapsed = start.elapsed();
    let total = reports.len();
    println!(
        "ClawHub: {total} SKILL.md scanned in {:.0} ms on one thread; {:?}",
        elapsed.as_secs_f64() * 1000.0,
        count(&reports)
    );
    // The same on two threads (the machine's two cores): the library is pure and shareable.
    let start2 = Instant::now();
    let half = contents.len() / 2;
    fn scan_all(part: &[(String, Vec<u8>)]) -> Vec<Report> {
        part.iter()
            .map(|(_, bytes)| {
                scan_skill(&[ScanFile {
                    path: "SKILL.md",
                    bytes,
                }])
            })
            .collect()
    }
    let (first, second) = contents.split_at(half);
    let parallel: Vec<Report> = std::thread::scope(|s| {
        let a = s.spawn(|| scan_all(first));
        let b = scan_all(second);
        let mut a = a.join().expect("scan thread");
        a.extend(b);
        a
    });
    let elapsed2 = start2.elapsed();
    println!(
        "ClawHub: the same on two threads in {:.0} ms",
        elapsed2.as_secs_f64() * 1000.0
    );
    // The speed target (issue #33: the whole corpus in at most 2 s on two cores) is a figure of
    // `xmemo-bench safety`, not an assertion: these machines are shared and noisy.
    assert!(
        parallel.iter().zip(&reports).all(|(a, (_, b))| a == b),
        "scans are deterministic"
    );

    // The live payload: a base64 blob piped to `base64 -D | bash`.
    let live: Vec<&String> = contents
        .iter()
        .filter(|(_, b)| String::from_utf8_lossy(b).contains("base64 -D"))
        .map(|(p, _)| p)
        .collect();
    assert!(
        live.len() >= 7,
        "expected at least 7 live payloads, found {}",
        live.len()
    );
    for (rel, r) in &reports {
        if live.contains(&rel) {
            assert_eq!(
                r.verdict,
                Verdict::Malicious,
                "live payload not malicious: {rel}\n{}",
                describe(r)
            );
        }
    }
    let mut malicious_other = 0;
    println!("\nMalicious (live base64 payloads: {}):", live.len());
    for (rel, r) in &reports {
        if r.verdict == Verdict::Malicious {
            let tag = if live.contains(&rel) {
                "live payload"
            } else {
                "other"
            };
            if !live.contains(&rel) {
                malicious_other += 1;
            }
            println!("  [{tag}] {rel}: {}", rule_ids(r));
        }
    }
    println!("\nSuspicious:");
    for (rel, r) in &reports {
        if r.verdict == Verdict::Suspicious {
            println!("  {rel}: {}", rule_ids(r));
        }
    }
    let mut per_rule: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    for (_, r) in &reports {
        for f in &r.findings {
            *per_rule
                .entry((f.rule_id.clone(), f.severity.as_str()))
                .or_default() += 1;
        }
    }
    println!("\nFindings per rule and severity:");
    for ((rule, sev), n) in &per_rule {
        println!("  {rule:40} {sev:8} {n}");
    }
    if let Some(filter) = std::env::var_os("XMEMO_SCAN_SHOW") {
        let filter = filter.to_string_lossy().into_owned();
        for (rel, r) in &reports {
            for f in r.findings.iter().filter(|f| f.rule_id.starts_with(&filter)) {
                println!(
                    "  {rel}:{} {} {} {}",
                    f.line,
                    f.rule_id,
                    f.severity.as_str(),
                    f.excerpt
                );
            }
        }
    }
    if std::env::var_os("XMEMO_SCAN_VERBOSE").is_some() {
        for (rel, r) in &reports {
            if r.verdict != Verdict::Clean {
                println!("\n== {rel} ({:?})\n{}", r.verdict, describe(r));
            }
        }
    }
    let flagged = reports
        .iter()
        .filter(|(_, r)| r.verdict != Verdict::Clean)
        .count();
    println!(
        "\nClawHub: malicious other than the live payloads: {malicious_other} ({:.2} %), flagged: {flagged} ({:.2} %)",
        100.0 * malicious_other as f64 / total as f64,
        100.0 * flagged as f64 / total as f64
    );
    assert!(
        malicious_other * 100 <= total,
        "more than 1 % of real skills called malicious: {malicious_other}"
    );
    assert!(
        flagged * 100 <= total * 5,
        "more than 5 % of real skills flagged: {flagged}"
    );

    // Anthropic's example skills: folders with scripts, and claude-api.zip.
    let anth = root.join("anthropics-skills");
    let mut packages: Vec<(String, common::Files)> = Vec::new();
    for e in std::fs::read_dir(&anth).expect("anthropics-skills") {
        let p = e.expect("entry").path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if p.is_dir() {
            packages.push((name, read_folder(&p)));
        } else if name.ends_with(".zip") {
            packages.push((name, read_zip(&p)));
        }
    }
    packages.sort();
    assert!(
        packages.len() >= 10,
        "expected the Anthropic example skills, found {}",
        packages.len()
    );
    assert!(
        packages
            .iter()
            .any(|(n, f)| n == "claude-api.zip" && f.len() > 50),
        "claude-api.zip not read"
    );
    let anth_reports: Vec<(String, Report)> = packages
        .iter()
        .map(|(n, files)| (n.clone(), scan(files)))
        .collect();
    println!(
        "\nAnthropic: {} packages; {:?}",
        anth_reports.len(),
        count(&anth_reports)
    );
    for (n, r) in &anth_reports {
        println!(
            "  {n}: {} (risk {:?}) {}",
            r.verdict.as_str(),
            r.risk,
            rule_ids(r)
        );
        for f in &r.findings {
            println!(
                "      {} {} {}:{} {}",
                f.rule_id,
                f.severity.as_str(),
                f.file,
                f.line,
                f.excerpt
            );
        }
    }
    let anth_flagged = anth_reports
        .iter()
        .filter(|(_, r)| r.verdict != Verdict::Clean)
        .count();
    let anth_mal = anth_reports
        .iter()
        .filter(|(_, r)| r.verdict == Verdict::Malicious)
        .count();
    assert_eq!(anth_mal, 0, "an Anthropic example skill called malicious");
    let all = total + anth_reports.len();
    assert!((flagged + anth_flagged) * 100 <= all * 5);
}

#[test]
fn own_corpus_rates() {
    let root = own_corpus();
    let mut rates = BTreeMap::new();
    for side in ["hostile", "benign"] {
        let dir = root.join(side);
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_dir())
            .collect();
        names.sort();
        let reports: Vec<(String, Report)> = names
            .iter()
            .map(|p| {
                (
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    scan(&read_folder(p)),
                )
            })
            .collect();
        println!("{side}: {} skills; {:?}", reports.len(), count(&reports));
        rates.insert(side, reports);
    }
    let hostile = &rates["hostile"];
    let benign = &rates["benign"];
    assert!(hostile.len() >= 40 && benign.len() >= 25);
    let flagged = hostile
        .iter()
        .filter(|(_, r)| r.verdict != Verdict::Clean)
        .count();
    for (n, r) in hostile.iter().filter(|(_, r)| r.verdict == Verdict::Clean) {
        println!("  hostile but clean: {n}\n{}", describe(r));
    }
    assert!(
        flagged * 10 >= hostile.len() * 9,
        "hostile flagged {flagged}/{}",
        hostile.len()
    );
    let benign_malicious: Vec<String> = benign
        .iter()
        .filter(|(_, r)| r.verdict == Verdict::Malicious)
        .map(|(n, r)| format!("{n}:\n{}", describe(r)))
        .collect();
    assert!(
        benign_malicious.is_empty(),
        "benign skills called malicious: {}",
        benign_malicious.join("\n")
    );
}
