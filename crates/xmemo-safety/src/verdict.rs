//! From findings to a verdict.
//!
//! * The **risk** is the highest severity found (`none` without findings).
//! * Dangerous **combinations** add a critical `combo.*` finding: credentials read and data
//!   sent; remote code fetched and persistence installed; hidden text next to instructions,
//!   secrets or transfers; obfuscated code next to anything dangerous; two or more different
//!   high-severity rules. Findings lowered by a describing context take no part in them.
//! * The **verdict**: any critical → `malicious`; any high or medium → `suspicious`; low only
//!   or nothing → `clean` (the low findings stay listed).

use crate::model::{Finding, Report, Risk, Severity, Verdict};
use crate::rules::{category, info};

/// A finding inside the scanner: what [`Finding`] holds, plus whether a context marked it as
/// described rather than done, and the file as an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub rule: &'static str,
    pub severity: Severity,
    /// Lowered by a context (strong or weak): a mention, not an act.
    pub described: bool,
    pub file: usize,
    /// 1-based.
    pub line: u32,
    pub excerpt: String,
}

impl Hit {
    pub fn new(
        rule: &'static str,
        severity: Severity,
        file: usize,
        line: u32,
        excerpt: String,
    ) -> Hit {
        Hit {
            rule,
            severity,
            described: false,
            file,
            line,
            excerpt,
        }
    }
}

/// Most findings of one rule kept per file (the rest adds nothing to a verdict).
const PER_RULE_PER_FILE: usize = 20;
/// Most findings in one report.
const MAX_FINDINGS: usize = 500;

fn acting(hits: &[Hit], cat: &str, min: Severity) -> Option<usize> {
    hits.iter()
        .position(|h| !h.described && h.severity >= min && category(h.rule) == cat)
}

fn combos(hits: &[Hit], paths: &[&str]) -> Vec<Hit> {
    let mut out = Vec::new();
    let mut combo = |id: &'static str, a: Option<usize>, b: Option<usize>| {
        if let (Some(a), Some(b)) = (a, b) {
            let (x, y) = (&hits[a], &hits[b]);
            let later = if (y.file, y.line) >= (x.file, x.line) {
                y
            } else {
                x
            };
            out.push(Hit::new(
                id,
                Severity::Critical,
                later.file,
                later.line,
                crate::excerpt::bound(
                    &format!(
                        "{} at {}:{} + {} at {}:{}",
                        x.rule,
                        paths.get(x.file).copied().unwrap_or("?"),
                        x.line,
                        y.rule,
                        paths.get(y.file).copied().unwrap_or("?"),
                        y.line
                    ),
                    crate::excerpt::MAX_EXCERPT_CHARS,
                ),
            ));
        }
    };
    let creds = acting(hits, "credentials", Severity::Medium).or_else(|| {
        hits.iter().position(|h| {
            !h.described
                && h.severity >= Severity::Medium
                && (h.rule == "purpose.undeclared-secrets"
                    || h.rule == "injection.secret-disclosure")
        })
    });
    let send = acting(hits, "exfiltration", Severity::Low).or_else(|| {
        hits.iter().position(|h| {
            !h.described
                && (h.rule == "purpose.undeclared-network"
                    || h.rule == "purpose.contradicted-claim"
                    || h.rule == "agent-abuse.tool-exfiltration")
        })
    });
    combo("combo.read-and-send", creds, send);
    combo(
        "combo.fetch-and-persist",
        acting(hits, "remote-code", Severity::Medium)
            .filter(|i| hits[*i].rule != "remote-code.bare-ip-url"),
        acting(hits, "persistence", Severity::Medium),
    );
    let hidden = acting(hits, "hidden-text", Severity::Medium);
    let instructed = ["injection", "agent-abuse", "exfiltration", "credentials"]
        .iter()
        .filter_map(|c| acting(hits, c, Severity::Medium))
        .find(|i| {
            hidden.is_none_or(|h| hits[h].line != hits[*i].line || hits[h].rule != hits[*i].rule)
        });
    combo("combo.hidden-instructions", hidden, instructed);
    let obf = acting(hits, "obfuscation", Severity::Medium)
        .or_else(|| acting(hits, "encoded-exec", Severity::Medium));
    let harm = [
        "remote-code",
        "exfiltration",
        "credentials",
        "destructive",
        "persistence",
    ]
    .iter()
    .filter_map(|c| acting(hits, c, Severity::Medium))
    .find(|i| hits[*i].rule != "remote-code.bare-ip-url");
    combo("combo.obfuscated-payload", obf, harm);
    // Two different high rules.
    let mut highs = hits
        .iter()
        .enumerate()
        .filter(|(_, h)| !h.described && h.severity == Severity::High);
    if let Some((a, first)) = highs.next()
        && let Some((b, _)) = highs.find(|(_, h)| h.rule != first.rule)
    {
        combo("combo.multiple-high", Some(a), Some(b));
    }
    out
}

/// Builds the report of a scan from its hits. `paths[i]` is the path of file `i`.
pub fn report(mut hits: Vec<Hit>, paths: &[&str]) -> Report {
    // One finding per rule and line (the worst), a bounded number per rule and file.
    hits.sort_by(|a, b| {
        (a.file, a.line, a.rule)
            .cmp(&(b.file, b.line, b.rule))
            .then(b.severity.cmp(&a.severity))
    });
    hits.dedup_by(|b, a| a.file == b.file && a.line == b.line && a.rule == b.rule);
    let mut counts: std::collections::HashMap<(usize, &str), usize> = Default::default();
    hits.retain(|h| {
        let n = counts.entry((h.file, h.rule)).or_default();
        *n += 1;
        *n <= PER_RULE_PER_FILE
    });
    let has_combo_worthy = hits
        .iter()
        .any(|h| !h.described && h.severity >= Severity::Low);
    if has_combo_worthy {
        let extra = combos(&hits, paths);
        hits.extend(extra);
        hits.sort_by(|a, b| (a.file, a.line, a.rule).cmp(&(b.file, b.line, b.rule)));
    }
    hits.truncate(MAX_FINDINGS);
    let risk = hits
        .iter()
        .map(|h| Risk::from(h.severity))
        .max()
        .unwrap_or(Risk::None);
    let verdict = match risk {
        Risk::Critical => Verdict::Malicious,
        Risk::High | Risk::Medium => Verdict::Suspicious,
        Risk::Low | Risk::None => Verdict::Clean,
    };
    let findings = hits
        .into_iter()
        .map(|h| Finding {
            rule_id: h.rule.to_string(),
            severity: h.severity,
            file: paths.get(h.file).copied().unwrap_or("").to_string(),
            line: h.line.max(1),
            excerpt: h.excerpt,
            remediation: info(h.rule)
                .map_or("Review this finding.", |i| i.remediation)
                .to_string(),
        })
        .collect();
    Report {
        verdict,
        risk,
        rules_version: crate::RULES_VERSION.to_string(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(rule: &'static str, s: Severity, line: u32) -> Hit {
        Hit::new(rule, s, 0, line, String::new())
    }

    #[test]
    fn verdict_levels() {
        assert_eq!(report(vec![], &["SKILL.md"]).verdict, Verdict::Clean);
        assert_eq!(report(vec![], &["SKILL.md"]).risk, Risk::None);
        let r = report(
            vec![h("tls.verification-disabled", Severity::Low, 1)],
            &["SKILL.md"],
        );
        assert_eq!((r.verdict, r.risk), (Verdict::Clean, Risk::Low));
        let r = report(
            vec![h("tls.verification-disabled", Severity::Medium, 1)],
            &["SKILL.md"],
        );
        assert_eq!((r.verdict, r.risk), (Verdict::Suspicious, Risk::Medium));
        let r = report(
            vec![h("destructive.rm-root", Severity::Critical, 1)],
            &["SKILL.md"],
        );
        assert_eq!((r.verdict, r.risk), (Verdict::Malicious, Risk::Critical));
    }

    #[test]
    fn combinations_escalate() {
        let r = report(
            vec![
                h("credentials.cloud-config", Severity::Medium, 3),
                h("exfiltration.webhook-host", Severity::Low, 9),
            ],
            &["SKILL.md"],
        );
        assert_eq!(r.verdict, Verdict::Malicious);
        assert!(
            r.findings
                .iter()
                .any(|f| f.rule_id == "combo.read-and-send" && f.line == 9)
        );
        let mut described = h("credentials.cloud-config", Severity::Low, 3);
        described.described = true;
        let r = report(
            vec![described, h("exfiltration.webhook-host", Severity::Low, 9)],
            &["SKILL.md"],
        );
        assert_eq!(r.verdict, Verdict::Clean);
        let r = report(
            vec![
                h("injection.override", Severity::High, 1),
                h("injection.secret-disclosure", Severity::High, 1),
            ],
            &["SKILL.md"],
        );
        assert_eq!(r.verdict, Verdict::Malicious);
    }
}
