//! Runs the line rules: one Aho-Corasick pass over a line finds which rules may match, then
//! only those rules' regexes run. Everything is compiled once.

use crate::document::{Logical, Zone};
use crate::model::Severity;
use crate::rules::{LineRule, Scope, line_rules};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;
use std::sync::LazyLock;

/// Which rules a scan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A skill's files.
    Skill,
    /// A memory: prompt injection only (a memory is data).
    Memory,
    /// Text the reader cannot see (an HTML comment, a link title, a decoded blob): every
    /// rule, judged as code.
    Hidden,
}

/// A match before its context is judged.
#[derive(Clone, Debug)]
pub struct RawHit {
    pub rule: &'static str,
    pub severity: Severity,
    /// Physical line index (0-based) the finding points at.
    pub phys: usize,
    /// Logical line index whose text `start..end` indexes.
    pub logical: usize,
    pub start: usize,
    pub end: usize,
    /// Context may lower it (false for hidden text).
    pub describable: bool,
    pub phrase: bool,
    /// A ready excerpt (hits found in hidden or decoded text).
    pub excerpt: Option<String>,
    /// Text shown before the excerpt (what a blob decodes to).
    pub prefix: Option<String>,
}

impl RawHit {
    /// A describable hit at `start..end` of logical line `logical`.
    pub fn at(
        rule: &'static str,
        severity: Severity,
        logicals: &[Logical],
        logical: usize,
        start: usize,
        end: usize,
    ) -> RawHit {
        let phys = logicals.get(logical).map_or(0, |l| l.line_of(start));
        RawHit {
            rule,
            severity,
            phys,
            logical,
            start,
            end,
            describable: true,
            phrase: false,
            excerpt: None,
            prefix: None,
        }
    }
}

/// One line rule's match in a text.
#[derive(Clone, Copy, Debug)]
pub struct LineMatch {
    pub rule: &'static str,
    pub severity: Severity,
    pub start: usize,
    pub end: usize,
    pub phrase: bool,
}

pub struct Engine {
    rules: Vec<LineRule>,
    regexes: Vec<Regex>,
    ac: AhoCorasick,
    /// For each literal: the rules it wakes (as a trigger).
    woken: Vec<Vec<u16>>,
    /// For each rule: the literal ids of its `with` group (empty: none required).
    with: Vec<Vec<u16>>,
}

/// At most this many matches of one rule on one line.
const PER_RULE_PER_LINE: usize = 3;

pub static ENGINE: LazyLock<Engine> = LazyLock::new(Engine::new);

impl Engine {
    fn new() -> Engine {
        let rules = line_rules();
        let regexes = rules
            .iter()
            .map(|r| {
                // ASCII word boundaries: a Unicode `\b` stops the lazy DFA at the first
                // non-ASCII byte and falls back to slower engines.
                regex::RegexBuilder::new(&r.pattern.replace(r"\b", r"(?-u:\b)"))
                    .size_limit(64 << 20)
                    .build()
                    .unwrap_or_else(|e| panic!("rule {}: {e}", r.id))
            })
            .collect();
        let mut literals: Vec<&'static str> = Vec::new();
        let id_of = |t: &'static str, literals: &mut Vec<&'static str>| -> u16 {
            match literals.iter().position(|x| *x == t) {
                Some(p) => p as u16,
                None => {
                    literals.push(t);
                    (literals.len() - 1) as u16
                }
            }
        };
        let mut woken: Vec<Vec<u16>> = Vec::new();
        let mut with: Vec<Vec<u16>> = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            for t in r.triggers {
                let id = id_of(t, &mut literals) as usize;
                if woken.len() <= id {
                    woken.resize(id + 1, Vec::new());
                }
                woken[id].push(i as u16);
            }
            with.push(r.with.iter().map(|t| id_of(t, &mut literals)).collect());
        }
        woken.resize(literals.len(), Vec::new());
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&literals)
            .expect("constant triggers");
        Engine {
            rules,
            regexes,
            ac,
            woken,
            with,
        }
    }

    fn applies(rule: &LineRule, zone: Zone, mode: Mode) -> Option<Severity> {
        let ok = match (mode, rule.scope) {
            (Mode::Hidden, _) => true,
            (Mode::Memory, Scope::Instruction) => zone != Zone::Script,
            (Mode::Memory, _) => false,
            (Mode::Skill, Scope::Command) => true,
            (Mode::Skill, Scope::Instruction | Scope::Agent) => zone != Zone::Script,
        };
        if !ok {
            return None;
        }
        let z = if mode == Mode::Hidden {
            Zone::Code
        } else {
            zone
        };
        rule.sev[z.strictness()]
    }

    /// Every line rule's matches in `text`, as if it stood in `zone`.
    pub fn matches(&self, text: &str, zone: Zone, mode: Mode, out: &mut Vec<LineMatch>) {
        let mut found: Vec<u16> = Vec::new();
        for m in self.ac.find_overlapping_iter(text) {
            let id = m.pattern().as_usize() as u16;
            if !found.contains(&id) {
                found.push(id);
            }
        }
        if found.is_empty() {
            return;
        }
        let mut seen: Vec<u16> = Vec::new();
        for id in &found {
            for r in &self.woken[*id as usize] {
                if !seen.contains(r) {
                    let with = &self.with[*r as usize];
                    if with.is_empty() || with.iter().any(|w| found.contains(w)) {
                        seen.push(*r);
                    }
                }
            }
        }
        seen.sort_unstable();
        for r in seen {
            let rule = &self.rules[r as usize];
            let Some(base) = Self::applies(rule, zone, mode) else {
                continue;
            };
            for m in self.regexes[r as usize]
                .find_iter(text)
                .take(PER_RULE_PER_LINE)
            {
                let severity = match rule.refine {
                    Some(f) => match f(m.as_str(), text) {
                        Some(shift) => base.shifted(shift),
                        None => continue,
                    },
                    None => base,
                };
                out.push(LineMatch {
                    rule: rule.id,
                    severity,
                    start: m.start(),
                    end: m.end(),
                    phrase: rule.phrase,
                });
            }
        }
    }
}

#[cfg(test)]
pub mod test_support {
    //! Helpers for the rule modules' unit tests.
    use crate::{ScanFile, scan_skill};

    /// The first finding of a SKILL.md, as `rule:severity`, ignoring `bare-ip-url`.
    pub fn first_rule(skill_md: &str) -> Option<String> {
        rules_of(&[("SKILL.md", skill_md)]).into_iter().next()
    }

    /// Every finding (`rule:severity`) of a package, highest severity first, without the
    /// `remote-code.bare-ip-url` and `combo.*` findings that accompany others.
    pub fn rules_of(files: &[(&str, &str)]) -> Vec<String> {
        let files: Vec<ScanFile<'_>> = files
            .iter()
            .map(|(p, t)| ScanFile {
                path: p,
                bytes: t.as_bytes(),
            })
            .collect();
        let mut f = scan_skill(&files).findings;
        f.retain(|f| f.rule_id != "remote-code.bare-ip-url" && !f.rule_id.starts_with("combo."));
        f.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.line.cmp(&b.line)));
        f.into_iter()
            .map(|f| format!("{}:{}", f.rule_id, f.severity.as_str()))
            .collect()
    }
}
