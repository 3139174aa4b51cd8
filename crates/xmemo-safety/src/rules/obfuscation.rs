//! Obfuscated code: Python rebuilt from `chr()` codes, `__import__('os')` and `getattr`
//! string building, eval/exec chains, shell commands hidden in ANSI-C escapes or split by
//! empty quotes, JavaScript obfuscator output, native executables shipped as components.

use super::{LineRule, RuleInfo, Scope, per_zone};
use crate::model::Severity::{Critical, High, Low, Medium};

pub const INFO: &[RuleInfo] = &[
    RuleInfo {
        id: "obfuscation.char-codes",
        title: "Code or strings rebuilt from character codes (chr(), String.fromCharCode)",
        remediation: "Write the string or code in clear text.",
    },
    RuleInfo {
        id: "obfuscation.dynamic-import",
        title: "Modules imported or builtins reached through strings (__import__, __builtins__)",
        remediation: "Use plain import statements so a reviewer sees which modules the code uses.",
    },
    RuleInfo {
        id: "obfuscation.getattr-string",
        title: "Functions looked up by a built or dangerous name (getattr(os, 'sys'+'tem'))",
        remediation: "Call functions by name; string-built lookups hide what runs.",
    },
    RuleInfo {
        id: "obfuscation.eval-chain",
        title: "Nested eval/exec/compile of generated code",
        remediation: "Replace dynamic evaluation with plain code.",
    },
    RuleInfo {
        id: "obfuscation.shell-escapes",
        title: "Shell commands hidden in escapes, reversed or split strings",
        remediation: "Write the command in clear text.",
    },
    RuleInfo {
        id: "obfuscation.js-obfuscator",
        title: "JavaScript obfuscator or packer output",
        remediation: "Ship the readable source instead of obfuscated JavaScript.",
    },
    RuleInfo {
        id: "obfuscation.binary-executable",
        title: "A native executable is shipped as a component",
        remediation: "Ship source code or a reproducible build recipe; a reviewer cannot read a binary.",
    },
];

fn exec_nearby(_m: &str, line: &str) -> Option<i8> {
    let lower = line.to_ascii_lowercase();
    let exec = [
        "exec(",
        "eval(",
        "system(",
        "popen(",
        "subprocess",
        "function(",
        "execsync",
        "spawn(",
        "compile(",
    ]
    .iter()
    .any(|s| lower.contains(s));
    Some(i8::from(exec))
}

fn many_hex_escapes(m: &str, _line: &str) -> Option<i8> {
    (m.matches("\\x").count() >= 24 || m.matches("\\u00").count() >= 24).then_some(0)
}

pub fn rules() -> Vec<LineRule> {
    vec![
        LineRule {
            id: "obfuscation.char-codes",
            triggers: &["chr(", "chr (", "fromcharcode", "bytes(["],
            with: &[],
            pattern: r#"(?i)(?:''|""|str\(\))\s*\.join\s*\(\s*(?:map\s*\(\s*chr\b|\[?\s*chr\s*\(|\(?\s*chr\s*\()|(?:\bchr\s*\(\s*\d+\s*\)\s*\+\s*){3,}\bchr\s*\(|String\.fromCharCode\s*\(\s*(?:\d+\s*,\s*){5,}|String\.fromCharCode\s*\(\s*\.\.\.|\bbytes\s*\(\s*\[\s*(?:\d+\s*,\s*){12,}"#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: Some(exec_nearby),
            phrase: false,
        },
        LineRule {
            id: "obfuscation.char-codes",
            triggers: &["chr(", "chr (", "fromcharcode"],
            with: &["exec", "eval", "system", "popen", "function"],
            pattern: r#"(?i)\b(?:exec|eval|system|popen|new\s+function|function)\s*\(\s*(?:(?:''|""|str\(\))\s*\.join\s*\(\s*(?:map\s*\(\s*chr\b|\[?\s*chr\s*\(|\(?\s*chr\s*\()|String\.fromCharCode\s*\()"#,
            sev: per_zone(High, Critical, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "obfuscation.dynamic-import",
            triggers: &["__import__", "__builtins__", "builtins"],
            with: &[],
            pattern: r#"(?i)\b__import__\s*\(\s*(?:["'](?:os|subprocess|socket|pty|base64|zlib|marshal|ctypes|urllib(?:\.request)?|requests|builtins|sys|shutil|importlib|codecs)["']|["'][^"'\n]*["']\s*\+|[\w.]*(?:decode|join|chr)\s*\()|\b__builtins__\s*(?:\[|\.__dict__|\.\s*(?:exec|eval|__import__))|\bgetattr\s*\(\s*__builtins__|\bglobals\s*\(\s*\)\s*\[\s*["']__builtins__|\bimportlib\.import_module\s*\(\s*[\w.]*(?:decode|join|chr)\s*\("#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: Some(exec_nearby),
            phrase: false,
        },
        LineRule {
            id: "obfuscation.getattr-string",
            triggers: &["getattr"],
            with: &[],
            pattern: r#"(?i)\bgetattr\s*\(\s*[^,\n]{1,80},\s*(?:["'][^"'\n]*["']\s*\+|[\w.]*(?:decode|join|chr)\s*\(|["'][^"'\n]*["']\s*\[::-1\]|["'](?:system|popen|exec|eval|spawnl?p?e?|check_output|getoutput|__import__)["']\s*\))"#,
            sev: per_zone(Low, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "obfuscation.eval-chain",
            triggers: &["exec", "eval", "compile"],
            with: &[],
            pattern: r#"(?i)\b(?:exec|eval)\s*\(\s*(?:exec|eval|compile)\s*\(|\b(?:exec|eval)\s*\([^\n]*\[::-1\]|\bcompile\s*\([^\n]*,\s*["']exec["']\s*\)[^\n]*\bexec\s*\(|\beval\s*\(\s*function\s*\(\s*p\s*,\s*a\s*,\s*c\s*,\s*k\s*,\s*e\s*,"#,
            sev: per_zone(Low, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "obfuscation.shell-escapes",
            triggers: &["$'", "eval", "rev", "''", "\"\""],
            with: &[],
            pattern: r#"(?i)\$'(?:\\x[0-9a-f]{2}|\\[0-7]{3}){4,}'|\beval\s+["']?\$\(\s*(?:echo|printf)\b[^)\n]*\|\s*(?:rev|tr\s|base32|openssl|sed\s)|\b(?:echo|printf)\s+["'][^"'\n]+["']\s*\|\s*rev\s*\|\s*(?:ba|z)?sh\b|\b(?:[a-z]{1,3}(?:''|""))(?:[a-z]{1,3}(?:''|"")){1,}[a-z]{1,3}\s+(?:-\S+\s+)*(?:https?://|\S+\s*\|)"#,
            sev: per_zone(Medium, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "obfuscation.shell-escapes",
            triggers: &["://"],
            with: &["$"],
            pattern: r#"(?i)(?:^|[;&|]\s*)\$\{?[a-z_]\w*\}?\$\{?[a-z_]\w*\}?(?:\$\{?[a-z_]\w*\}?)*\s+(?:-\S+\s+)*["']?(?:https?|ftp)://"#,
            sev: per_zone(Medium, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "obfuscation.js-obfuscator",
            triggers: &["_0x"],
            with: &[],
            pattern: r#"\b_0x[0-9a-f]{4,6}\b(?:[^\n]*?\b_0x[0-9a-f]{4,6}\b){4,}"#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "obfuscation.js-obfuscator",
            triggers: &["\\x", "\\u00"],
            with: &[],
            pattern: r#"(?i)(?:\\x[0-9a-f]{2}|\\u00[0-9a-f]{2})(?:[^\n]{0,4}(?:\\x[0-9a-f]{2}|\\u00[0-9a-f]{2})){23,}"#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: Some(many_hex_escapes),
            phrase: false,
        },
    ]
}

#[cfg(test)]
mod tests {
    use crate::engine::test_support::first_rule;

    #[test]
    fn python_tricks() {
        assert_eq!(
            first_rule("```python\nexec(''.join(chr(c) for c in [105,109,112]))\n```\n").as_deref(),
            Some("obfuscation.char-codes:critical")
        );
        assert_eq!(
            first_rule("```python\n__import__('os').system('id')\n```\n").as_deref(),
            Some("obfuscation.dynamic-import:high")
        );
        assert_eq!(
            first_rule("```python\ngetattr(os, 'sys' + 'tem')('id')\n```\n").as_deref(),
            Some("obfuscation.getattr-string:high")
        );
        assert_eq!(
            first_rule("```python\nvalue = getattr(obj, name, None)\n```\n"),
            None
        );
    }
}
