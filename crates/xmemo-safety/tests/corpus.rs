//! This crate's own corpus (`tests/corpus/`): hostile skills, one or more per attack the
//! scanner must catch (including every miss of the open-source scanner that issue #33
//! lists), and benign skills a naive scanner would flag. `tests/corpus/expected.toml` names the
//! verdict of each and, for hostile skills, the rule-id prefix that must fire.

mod common;

use common::{describe, own_corpus, read_folder, scan};
use std::collections::BTreeMap;
use std::path::PathBuf;
use xmemo_safety::Verdict;

#[derive(serde::Deserialize, Debug)]
struct Expect {
    verdict: Verdict,
    /// Rule-id prefixes; at least one finding must start with one of them.
    #[serde(default)]
    expect: Vec<String>,
    /// Why (for the reader).
    #[serde(default)]
    #[allow(dead_code)]
    why: String,
}

fn skills() -> Vec<(String, PathBuf)> {
    let root = own_corpus();
    let mut out = Vec::new();
    for side in ["hostile", "benign"] {
        let dir = root.join(side);
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.expect("entry").path();
            if p.is_dir() {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((format!("{side}/{name}"), p));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_corpus_skill_gets_its_expected_verdict() {
    let text = std::fs::read_to_string(own_corpus().join("expected.toml")).expect("expected.toml");
    let expected: BTreeMap<String, Expect> = toml::from_str(&text).expect("expected.toml parses");
    let skills = skills();
    let mut failures = Vec::new();
    for (name, dir) in &skills {
        let report = scan(&read_folder(dir));
        let ids: Vec<&str> = report.findings.iter().map(|f| f.rule_id.as_str()).collect();
        println!(
            "{name}: {} {:?} {:?}",
            report.verdict.as_str(),
            report.risk,
            ids
        );
        let Some(exp) = expected.get(name) else {
            failures.push(format!("{name}: no entry in expected.toml"));
            continue;
        };
        if report.verdict != exp.verdict {
            failures.push(format!(
                "{name}: expected {}, got {}\n{}",
                exp.verdict.as_str(),
                report.verdict.as_str(),
                describe(&report)
            ));
        }
        if name.starts_with("hostile/") {
            assert!(
                !exp.expect.is_empty(),
                "{name}: hostile entries name the rule prefix they expect"
            );
        }
        for prefix in &exp.expect {
            if !ids.iter().any(|id| id.starts_with(prefix.as_str())) {
                failures.push(format!(
                    "{name}: no finding starting with {prefix}\n{}",
                    describe(&report)
                ));
            }
        }
    }
    for name in expected.keys() {
        if !skills.iter().any(|(n, _)| n == name) {
            failures.push(format!("{name}: in expected.toml but not in the corpus"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn corpus_sizes_and_coverage() {
    let skills = skills();
    let hostile = skills
        .iter()
        .filter(|(n, _)| n.starts_with("hostile/"))
        .count();
    let benign = skills
        .iter()
        .filter(|(n, _)| n.starts_with("benign/"))
        .count();
    assert!(hostile >= 40, "{hostile} hostile skills");
    assert!(benign >= 25, "{benign} benign skills");
    // Every category of the catalog but the combinations is exercised by a hostile skill.
    let mut fired = std::collections::BTreeSet::new();
    for (name, dir) in skills.iter().filter(|(n, _)| n.starts_with("hostile/")) {
        let r = scan(&read_folder(dir));
        assert_ne!(r.verdict, Verdict::Clean, "{name}");
        for f in r.findings {
            fired.insert(xmemo_safety::rules::category(&f.rule_id).to_string());
        }
    }
    for cat in [
        "remote-code",
        "encoded-exec",
        "credentials",
        "exfiltration",
        "destructive",
        "persistence",
        "tls",
        "obfuscation",
        "injection",
        "hidden-text",
        "purpose",
        "agent-abuse",
        "combo",
    ] {
        assert!(fired.contains(cat), "no hostile skill fires {cat}");
    }
}
