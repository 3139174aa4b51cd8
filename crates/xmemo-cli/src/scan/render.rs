//! The three output formats of `xmemo scan`.

use super::Outcome;
use super::inputs::shown;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt::Write;
use xmemo_safety::{RULES_VERSION, Verdict};

/// `N packages: X clean, Y suspicious, Z malicious (rules VERSION)`.
pub fn summary(outcome: &Outcome) -> String {
    let total = outcome.scanned.len();
    format!(
        "{total} package{}: {} clean, {} suspicious, {} malicious (rules {RULES_VERSION})",
        if total == 1 { "" } else { "s" },
        outcome.count(Verdict::Clean),
        outcome.count(Verdict::Suspicious),
        outcome.count(Verdict::Malicious),
    )
}

/// One block per flagged package — `path: VERDICT (risk)`, then each finding as
/// `file:line  rule  severity  excerpt` with the remediation under the first finding of
/// each rule — and the summary line. Clean packages get one line each with `verbose`.
pub fn text(outcome: &Outcome, verbose: bool) -> String {
    let mut out = String::new();
    for scanned in &outcome.scanned {
        let report = &scanned.report;
        let header = format!(
            "{}: {} ({})",
            shown(&scanned.shown),
            report.verdict.as_str().to_uppercase(),
            report.risk.as_str()
        );
        if report.verdict == Verdict::Clean {
            if verbose {
                let _ = writeln!(out, "{header}");
            }
            continue;
        }
        let _ = writeln!(out, "{header}");
        // The same rule firing on many lines has one remediation: said once.
        let mut explained = BTreeSet::new();
        for f in &report.findings {
            let _ = writeln!(
                out,
                "  {}:{}  {}  {}  {}",
                f.file,
                f.line,
                f.rule_id,
                f.severity.as_str(),
                f.excerpt
            );
            if explained.insert(f.rule_id.as_str()) {
                let _ = writeln!(out, "      fix: {}", f.remediation);
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", summary(outcome));
    out
}

/// Every report (clean ones included) with its package's path and notes, the summary, and
/// what could not be scanned.
pub fn json(outcome: &Outcome) -> String {
    let packages: Vec<Value> = outcome
        .scanned
        .iter()
        .map(|s| {
            let mut value = serde_json::to_value(&s.report).unwrap_or(Value::Null);
            if let Some(object) = value.as_object_mut() {
                object.insert("path".into(), json!(shown(&s.shown)));
                object.insert("notes".into(), json!(s.notes));
            }
            value
        })
        .collect();
    let value = json!({
        "rules_version": RULES_VERSION,
        "summary": {
            "packages": outcome.scanned.len(),
            "clean": outcome.count(Verdict::Clean),
            "suspicious": outcome.count(Verdict::Suspicious),
            "malicious": outcome.count(Verdict::Malicious),
            "worst": outcome.worst(),
        },
        "packages": packages,
        "notes": outcome.notes,
        "errors": outcome.errors,
    });
    pretty(&value)
}

/// A SARIF 2.1.0 log (`xmemo_safety::sarif`): artifact URIs are the files' paths relative
/// to the current directory (when the PATH was inside it), which is how GitHub code
/// scanning finds them when the scan runs at the repository's root. The notes and errors
/// become the invocation's tool notifications, and an error marks it unsuccessful.
pub fn sarif(outcome: &Outcome) -> String {
    let reports: Vec<(String, xmemo_safety::Report)> = outcome
        .scanned
        .iter()
        .map(|s| (s.root.clone(), s.report.clone()))
        .collect();
    let mut log = xmemo_safety::sarif(&reports);
    let notification =
        |level: &str, text: String| json!({ "level": level, "message": { "text": text } });
    let mut notifications: Vec<Value> = outcome
        .notes
        .iter()
        .map(|n| notification("note", n.clone()))
        .collect();
    for s in &outcome.scanned {
        for n in &s.notes {
            notifications.push(notification("warning", format!("{}: {n}", shown(&s.shown))));
        }
    }
    for e in &outcome.errors {
        notifications.push(notification("error", e.clone()));
    }
    let invocation = json!({
        "executionSuccessful": outcome.errors.is_empty(),
        "toolExecutionNotifications": notifications,
    });
    if let Some(run) = log
        .get_mut("runs")
        .and_then(Value::as_array_mut)
        .and_then(|runs| runs.first_mut())
        .and_then(Value::as_object_mut)
    {
        run.insert("invocations".into(), json!([invocation]));
    }
    pretty(&log)
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}
