//! Every rule, by category, and the catalog of their ids.
//!
//! A rule id is `category.name` and never changes meaning; a changed rule bumps
//! [`crate::RULES_VERSION`]. Most rules are *line rules*: a regex over one logical line,
//! run only when one of its literal triggers occurs in the line (one Aho-Corasick pass), with
//! a severity per zone (prose, code block / data, script) and an optional refinement that
//! drops a match or moves its severity (a bare IP makes `curl | sh` critical). A few rules
//! look at a whole file (hidden characters, HTML comments, download-then-run) or a whole
//! skill (declared purpose).

pub mod agent_abuse;
pub mod credentials;
pub mod destructive;
pub mod encoded;
pub mod exfiltration;
pub mod hidden_text;
pub mod injection;
pub mod net;
pub mod obfuscation;
pub mod persistence;
pub mod purpose;
pub mod remote_code;
pub mod tls;

use crate::model::Severity;
use std::sync::LazyLock;

/// What the catalog says about one rule (SARIF `rules[]`, and each finding's remediation).
#[derive(Clone, Copy, Debug)]
pub struct RuleInfo {
    pub id: &'static str,
    /// A short description of what the rule finds.
    pub title: &'static str,
    /// One sentence: what to do about it.
    pub remediation: &'static str,
}

/// Which texts a line rule reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Commands and code: every zone of a skill's files; not memories.
    Command,
    /// Instructions to the agent (prompt injection): prose, code blocks, frontmatter, data,
    /// hidden comments, memories; not scripts.
    Instruction,
    /// Abuse of the agent's other tools: like `Instruction`, but skills only.
    Agent,
}

/// Refinement of one match: `None` drops it, `Some(n)` moves its severity `n` levels.
pub type Refine = fn(matched: &str, line: &str) -> Option<i8>;

#[derive(Clone, Copy)]
pub struct LineRule {
    pub id: &'static str,
    /// Lower-case literals; the regex runs only on lines holding one of them (ASCII case
    /// insensitive). Every match of the regex must contain one.
    pub triggers: &'static [&'static str],
    /// When not empty, the line must also hold one of these (lower-case) literals.
    pub with: &'static [&'static str],
    pub pattern: &'static str,
    /// Severity in prose, in a code block / frontmatter / data file, in a script; `None`: the
    /// rule does not apply there.
    pub sev: [Option<Severity>; 3],
    pub scope: Scope,
    pub refine: Option<Refine>,
    /// A phrase (not a command): quotation marks around it make it a mention.
    pub phrase: bool,
}

use Severity::{Critical, High};

/// Same severity in every zone.
pub const fn all(s: Severity) -> [Option<Severity>; 3] {
    [Some(s), Some(s), Some(s)]
}

/// Prose, code, script.
pub const fn per_zone(p: Severity, c: Severity, s: Severity) -> [Option<Severity>; 3] {
    [Some(p), Some(c), Some(s)]
}

/// Instructions only: prose and code/data, never scripts.
pub const fn text_only(p: Severity, c: Severity) -> [Option<Severity>; 3] {
    [Some(p), Some(c), None]
}

/// Scripts only.
pub const fn script_only(s: Severity) -> [Option<Severity>; 3] {
    [None, None, Some(s)]
}

pub const CRIT: [Option<Severity>; 3] = all(Critical);
pub const HIGH: [Option<Severity>; 3] = all(High);

/// The combination rules (see the crate documentation, "Verdict").
pub const COMBO_INFO: &[RuleInfo] = &[
    RuleInfo {
        id: "combo.read-and-send",
        title: "Credentials are read and data is sent to a network endpoint in the same skill",
        remediation: "Remove the credential access or the outbound transfer; a skill that needs both must name the endpoint and the data in its description.",
    },
    RuleInfo {
        id: "combo.fetch-and-persist",
        title: "Remote code is fetched and persistence is installed in the same skill",
        remediation: "Do not install a skill that downloads code and makes it survive a reboot; remove both or justify them.",
    },
    RuleInfo {
        id: "combo.hidden-instructions",
        title: "Hidden text travels with instructions, secrets or network transfers",
        remediation: "Remove the invisible text and review what it was hiding.",
    },
    RuleInfo {
        id: "combo.obfuscated-payload",
        title: "Obfuscated code next to code that fetches, sends, reads secrets, destroys or persists",
        remediation: "Replace the obfuscated code with plain, reviewable code.",
    },
    RuleInfo {
        id: "combo.multiple-high",
        title: "Several independent high-severity findings",
        remediation: "Review every high-severity finding; together they describe an attack.",
    },
];

/// Every rule id with its title and remediation, in a stable order.
pub fn catalog() -> &'static [RuleInfo] {
    static CATALOG: LazyLock<Vec<RuleInfo>> = LazyLock::new(|| {
        [
            remote_code::INFO,
            encoded::INFO,
            credentials::INFO,
            exfiltration::INFO,
            destructive::INFO,
            persistence::INFO,
            tls::INFO,
            obfuscation::INFO,
            injection::INFO,
            hidden_text::INFO,
            purpose::INFO,
            agent_abuse::INFO,
            COMBO_INFO,
        ]
        .concat()
    });
    &CATALOG
}

/// The catalog entry of `id`.
pub fn info(id: &str) -> Option<&'static RuleInfo> {
    catalog().iter().find(|r| r.id == id)
}

/// The category of a rule id (`"remote-code"` for `"remote-code.pipe-to-shell"`).
pub fn category(id: &str) -> &str {
    id.split_once('.').map_or(id, |(c, _)| c)
}

/// Every line rule.
pub fn line_rules() -> Vec<LineRule> {
    [
        remote_code::rules(),
        encoded::rules(),
        credentials::rules(),
        exfiltration::rules(),
        destructive::rules(),
        persistence::rules(),
        tls::rules(),
        obfuscation::rules(),
        injection::rules(),
        agent_abuse::rules(),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for r in catalog() {
            assert!(seen.insert(r.id), "duplicate id {}", r.id);
            let (cat, name) = r.id.split_once('.').unwrap_or(("", ""));
            assert!(!cat.is_empty() && !name.is_empty(), "{}", r.id);
            assert!(
                r.id.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c == '.' || c.is_ascii_digit()),
                "{}",
                r.id
            );
            assert!(r.remediation.ends_with('.'), "{}", r.id);
        }
    }

    #[test]
    fn every_line_rule_is_in_the_catalog_and_has_lowercase_triggers() {
        for r in line_rules() {
            assert!(info(r.id).is_some(), "{} missing from the catalog", r.id);
            assert!(!r.triggers.is_empty(), "{}", r.id);
            for t in r.triggers.iter().chain(r.with) {
                assert_eq!(*t, t.to_ascii_lowercase(), "{}", r.id);
            }
        }
    }
}
