//! Destructive commands: recursive removal of `/`, `~` or `$HOME`, disk wipes (dd, mkfs,
//! shred, wipefs, diskutil), fork bombs under any name, `chmod -R 777 /`, log and history
//! wiping. `rm -rf ./build` or `rm -rf node_modules` is no finding.

use super::{CRIT, LineRule, RuleInfo, Scope, per_zone};
use crate::model::Severity::{Critical, High, Medium};

pub const INFO: &[RuleInfo] = &[
    RuleInfo {
        id: "destructive.rm-root",
        title: "Recursive removal of the root, home or a system directory",
        remediation: "Delete only paths inside the skill's own working directory, named explicitly.",
    },
    RuleInfo {
        id: "destructive.disk-wipe",
        title: "A disk or partition is overwritten, formatted or wiped",
        remediation: "Remove the device write; no skill should format or overwrite block devices.",
    },
    RuleInfo {
        id: "destructive.fork-bomb",
        title: "A fork bomb (a function that pipes into itself in the background)",
        remediation: "Remove the fork bomb.",
    },
    RuleInfo {
        id: "destructive.chmod-root",
        title: "Permissions or ownership of the root, home or system directories are changed recursively",
        remediation: "Change permissions only on the files the skill creates, never recursively on system paths.",
    },
    RuleInfo {
        id: "destructive.log-wipe",
        title: "Shell history or system logs are erased (covering tracks)",
        remediation: "Remove the history and log wiping; a legitimate skill has nothing to hide.",
    },
];

/// Targets whose recursive removal destroys a system or a home.
const TARGET: &str = r#"(?:/|/\*|~|~/|~/\*|\$home/?|\$\{home\}/?|"\$home"/?|"\$\{home\}"/?|\$home/\*|/home/?|/home/\*|/etc/?|/usr/?|/var/?|/boot/?|/bin/?|/sbin/?|/lib/?|/lib64/?|/opt/?|/root/?|/system/?|/users/?|/applications/?|c:\\?|c:/)"#;

fn recursive_flags(m: &str, _line: &str) -> Option<i8> {
    let lower = m.to_ascii_lowercase();
    let flags: Vec<&str> = lower
        .split_whitespace()
        .skip(1)
        .take_while(|w| w.starts_with('-'))
        .collect();
    let recursive = flags.iter().any(|f| {
        *f == "--recursive"
            || *f == "--no-preserve-root"
            || (!f.starts_with("--") && f.contains('r'))
    });
    recursive.then_some(0)
}

fn fork_names_equal(m: &str, _line: &str) -> Option<i8> {
    let idents: Vec<&str> = m
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '.' || c == '-'))
        .filter(|w| !w.is_empty() && *w != "function")
        .collect();
    let first = idents.first()?;
    (idents.len() >= 4 && idents.iter().all(|w| w == first)).then_some(0)
}

fn dd_source(m: &str, _line: &str) -> Option<i8> {
    let lower = m.to_ascii_lowercase();
    if lower.contains("if=/dev/zero")
        || lower.contains("if=/dev/urandom")
        || lower.contains("if=/dev/random")
    {
        Some(0)
    } else {
        // Flashing an image to a card: destructive, but a documented use.
        Some(-3)
    }
}

pub fn rules() -> Vec<LineRule> {
    use std::sync::LazyLock;
    static RM: LazyLock<String> = LazyLock::new(|| {
        format!(r#"(?i)\brm\s+(?:-{{1,2}}[\w-]+\s+)+{TARGET}(?:\s|$|;|&|\||\)|`)"#)
    });
    vec![
        LineRule {
            id: "destructive.rm-root",
            triggers: &["rm "],
            with: &[],
            pattern: RM.as_str(),
            sev: CRIT,
            scope: Scope::Command,
            refine: Some(recursive_flags),
            phrase: false,
        },
        LineRule {
            id: "destructive.rm-root",
            triggers: &[
                "--no-preserve-root",
                "rmtree",
                "rd ",
                "rmdir",
                "remove-item",
                "del ",
                "fs.rm",
            ],
            with: &[],
            pattern: r#"(?i)--no-preserve-root|\bshutil\.rmtree\s*\(\s*(?:["']/["']|["']~/?["']|os\.path\.expanduser\(\s*["']~/?["']\s*\)|path\.home\(\)|pathlib\.path\.home\(\)|os\.environ\[\s*["']home["']\s*\]|os\.getenv\(\s*["']home["']\s*\))\s*[,)]|\b(?:rd|rmdir)\s+/s\s+/q\s+[a-z]:\\?(?:\s|$)|\bremove-item\b[^\n]*-recurse[^\n]*\s(?:[a-z]:\\?|~|\$home|\$env:userprofile)(?:\s|$)|\bdel\s+/[fsq]\s+/[fsq]\s+(?:/[fsq]\s+)?[a-z]:\\(?:\*|\s|$)|\bfs\.rm(?:sync)?\s*\(\s*(?:["']/["']|os\.homedir\(\))[^)\n]*recursive"#,
            sev: CRIT,
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "destructive.disk-wipe",
            triggers: &["dd "],
            with: &[],
            pattern: r#"(?i)\bdd\b[^\n|;]*\bof=/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|mapper/|md\d|root\b)"#,
            sev: CRIT,
            scope: Scope::Command,
            refine: Some(dd_source),
            phrase: false,
        },
        LineRule {
            id: "destructive.disk-wipe",
            triggers: &[
                "mkfs",
                "shred",
                "wipefs",
                "diskutil",
                "/dev/sd",
                "/dev/nvme",
                "/dev/hd",
                "/dev/disk",
                "blkdiscard",
                "clear-disk",
                "vssadmin",
                "bcdedit",
                "format ",
                "cipher ",
            ],
            with: &[],
            pattern: r#"(?i)\bmkfs(?:\.\w+)?\s+(?:-\S+\s+)*/dev/\w+|\bshred\b[^\n|;]*\s/dev/\w+|\bwipefs\b[^\n|;]*\s(?:-a|--all)\b|>\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|disk\d)\b|\bdiskutil\s+(?:erasedisk|zerodisk|randomdisk|secureerase|erasevolume|partitiondisk)\b|\bblkdiscard\b|\bclear-disk\b|\bvssadmin(?:\.exe)?\s+delete\s+shadows\b|\bbcdedit\b[^\n]*recoveryenabled\s+no\b|\bformat\s+[a-z]:\s*/[qyx]\b|\bcipher\s+/w:"#,
            sev: per_zone(High, Critical, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "destructive.fork-bomb",
            triggers: &["()", "( )", "function "],
            with: &[],
            pattern: r#"(?:\bfunction\s+)?([A-Za-z_:.][\w:.-]*|:)\s*(?:\(\s*\))?\s*\{\s*([A-Za-z_:.][\w:.-]*|:)\s*\|\s*([A-Za-z_:.][\w:.-]*|:)\s*&\s*;?\s*\}\s*;?\s*([A-Za-z_:.][\w:.-]*|:)"#,
            sev: CRIT,
            scope: Scope::Command,
            refine: Some(fork_names_equal),
            phrase: false,
        },
        LineRule {
            id: "destructive.fork-bomb",
            triggers: &["fork", "%0"],
            with: &[],
            pattern: r#"(?i)\bwhile\s*(?:true|1|\(\s*1\s*\))\s*[:{]?\s*(?:os\.fork\(\)|fork\(\))|\bfork\s+while\s+fork\b|%0\s*\|\s*%0"#,
            sev: CRIT,
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "destructive.chmod-root",
            triggers: &["chmod", "chown"],
            with: &[],
            pattern: r#"(?i)\b(?:chmod|chown)\s+(?:-\w+\s+)*(?:-R|--recursive)\s+(?:-\w+\s+)*(?:0?777|a\+rwx|ugo\+rwx|o\+w|[\w.-]+:[\w.-]*|[\w-]+)\s+(?:/|/\*|~|~/|\$home|/etc|/usr|/var|/bin|/home)(?:\s|$|;|&)|\bchmod\s+(?:0?777|a\+rwx)\s+(?:-\w+\s+)*-R\s+(?:/|~|\$home)(?:\s|$|;|&)"#,
            sev: per_zone(High, High, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "destructive.log-wipe",
            triggers: &[
                "history",
                "histfile",
                "/var/log",
                "wevtutil",
                "clear-eventlog",
            ],
            with: &[],
            pattern: r#"(?i)\bhistory\s+-c\b|\bunset\s+histfile\b|\bhistfile=/dev/null\b|\brm\s+(?:-\w+\s+)*(?:~|\$home)/\.(?:bash|zsh)_history\b|\brm\s+-\w*r\w*\s+/var/log/?(?:\s|$|\*)|>\s*/var/log/(?:auth\.log|syslog|secure|messages|wtmp|btmp|lastlog)\b|\bshred\b[^\n]*/var/log/|\bwevtutil(?:\.exe)?\s+cl\b|\bclear-eventlog\b"#,
            sev: per_zone(Medium, Medium, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
    ]
}

#[cfg(test)]
mod tests {
    use crate::engine::test_support::first_rule;

    #[test]
    fn removals() {
        assert_eq!(
            first_rule("```\nrm -rf /\n```\n").as_deref(),
            Some("destructive.rm-root:critical")
        );
        assert_eq!(
            first_rule("```\nsudo rm -fr $HOME\n```\n").as_deref(),
            Some("destructive.rm-root:critical")
        );
        assert_eq!(first_rule("```\nrm -rf ./build node_modules\n```\n"), None);
        assert_eq!(first_rule("```\nrm -rf /tmp/work\n```\n"), None);
        assert_eq!(first_rule("```\nrm -f ~/\n```\n"), None);
    }

    #[test]
    fn fork_bombs_under_any_name() {
        assert_eq!(
            first_rule("```\n:(){ :|:& };:\n```\n").as_deref(),
            Some("destructive.fork-bomb:critical")
        );
        assert_eq!(
            first_rule("```\nwarmup(){ warmup|warmup& };warmup\n```\n").as_deref(),
            Some("destructive.fork-bomb:critical")
        );
        assert_eq!(first_rule("```\nf() { g | h & }; f\n```\n"), None);
    }

    #[test]
    fn disks() {
        assert_eq!(
            first_rule("```\ndd if=/dev/zero of=/dev/sda bs=1M\n```\n").as_deref(),
            Some("destructive.disk-wipe:critical")
        );
        assert_eq!(
            first_rule("```\nsudo dd if=raspios.img of=/dev/sdb bs=4M\n```\n").as_deref(),
            Some("destructive.disk-wipe:low")
        );
        assert_eq!(
            first_rule("```\ndd if=/dev/zero of=./disk.img bs=1M count=10\n```\n"),
            None
        );
    }
}
