//! Credential and secret harvesting: SSH private keys, cloud and tool credentials, the macOS
//! keychain, browser cookie and login stores, wallets, the whole environment, system secret
//! files, cloud metadata endpoints, searches of the disk for keys.
//!
//! *Using* a credential (`ssh -i ~/.ssh/id_rsa`, `ssh-add`, `chmod 600`) is no finding;
//! *reading* it (cat, cp, tar, base64, open()) is, and a script touching these paths at all is.

use super::{LineRule, RuleInfo, Scope, per_zone, script_only};
use crate::model::Severity::{Critical, High, Low, Medium};

pub const INFO: &[RuleInfo] = &[
    RuleInfo {
        id: "credentials.ssh-private-key",
        title: "An SSH private key is read",
        remediation: "Use ssh-agent or the ssh command itself; a skill must never read or copy private key files.",
    },
    RuleInfo {
        id: "credentials.cloud-config",
        title: "Cloud or developer-tool credential files are read (AWS, gcloud, Azure, kube, docker, netrc, git, npm, PyPI)",
        remediation: "Let the official CLI or SDK use its own credentials; do not read, copy or print credential files.",
    },
    RuleInfo {
        id: "credentials.keychain",
        title: "The system keychain or credential store is dumped or queried",
        remediation: "Never dump the keychain; if the skill needs one secret, ask the user to provide it explicitly.",
    },
    RuleInfo {
        id: "credentials.browser-store",
        title: "Browser cookie, login or key stores are read",
        remediation: "Remove access to browser profiles; cookies and saved passwords are never a skill's input.",
    },
    RuleInfo {
        id: "credentials.wallet",
        title: "Cryptocurrency wallet files, keystores or seed phrases are read or requested",
        remediation: "Never read wallet files or ask for a seed phrase; use a hardware wallet or a signing service the user controls.",
    },
    RuleInfo {
        id: "credentials.env-dump",
        title: "The whole environment is captured or secrets are filtered out of it",
        remediation: "Read only the specific variable the skill documents, never the whole environment.",
    },
    RuleInfo {
        id: "credentials.system-secrets",
        title: "System secret files are read (/etc/shadow, sudoers, SAM hive)",
        remediation: "Remove access to system password databases.",
    },
    RuleInfo {
        id: "credentials.cloud-metadata",
        title: "A cloud instance metadata endpoint is queried (instance credentials)",
        remediation: "Do not query instance metadata from a skill; it hands out the machine's cloud credentials.",
    },
    RuleInfo {
        id: "credentials.secret-search",
        title: "The disk is searched for keys, wallets or passwords",
        remediation: "Remove the search; a skill works on files the user names, not on whatever secrets it can find.",
    },
];

/// Commands that read a file's bytes (not `ssh -i`, `ssh-add`, `chmod`).
const READ: &str = r"(?:read|cat|less|more|head|tail|cp|scp|rsync|tar|zip|7z|base64|xxd|od|strings|openssl|gpg|type|get-content|gc|copy|copy-item|curl|nc|ncat|python[0-9.]*\s+-c|open|read_text|read_bytes|readfile|readfilesync|readfile\w*|file\.read|io\.open|fs\.read\w*|load|with\s+open)";

const HOME: &str = r#"(?:~|\$home|\$\{home\}|"\$home"|/root|/home/[\w.$-]+|/users/[\w.$-]+|%userprofile%|\$env:userprofile|os\.homedir\(\)|path\.home\(\)|expanduser\(\s*["']~)"#;

fn no_pub(m: &str, _line: &str) -> Option<i8> {
    let lower = m.to_ascii_lowercase();
    let key = lower
        .rsplit(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .find(|s| s.contains(".ssh"))
        .unwrap_or(&lower);
    if key.contains(".pub") || key.ends_with("known_hosts") || key.ends_with("/config") {
        None
    } else {
        Some(0)
    }
}

pub fn rules() -> Vec<LineRule> {
    use std::sync::LazyLock;
    static SSH_READ: LazyLock<String> = LazyLock::new(|| {
        format!(
            r#"(?i)\b{READ}\b[^\n|;]{{0,80}}?{HOME}["']?\s*[/\\,]\s*["']?\.ssh(?:[/\\"']\s*(?:[/\\]\s*)?["']?(?:id_[\w-]+(?:\.pub)?|[\w.-]*\.pem|identity|\*|$)|["']?(?:\s|$|\)))"#
        )
    });
    static CLOUD_READ: LazyLock<String> = LazyLock::new(|| {
        format!(
            r#"(?i)\b{READ}\b[^\n|;]{{0,80}}?(?:{HOME}["']?\s*[/\\,]\s*["']?)?\.(?:aws[/\\](?:credentials|config)\b|config[/\\]gcloud\b|azure[/\\](?:accesstokens\.json|msal_token_cache|azureprofile\.json)|kube[/\\]config\b|docker[/\\]config\.json|netrc\b|git-credentials\b|npmrc\b|pypirc\b|config[/\\]gh[/\\]hosts\.yml|terraform\.d[/\\]credentials|vault-token\b)"#
        )
    });
    vec![
        LineRule {
            id: "credentials.ssh-private-key",
            triggers: &[".ssh"],
            with: &[],
            pattern: SSH_READ.as_str(),
            sev: per_zone(Medium, Medium, High),
            scope: Scope::Command,
            refine: Some(no_pub),
            phrase: false,
        },
        LineRule {
            id: "credentials.ssh-private-key",
            triggers: &[".ssh"],
            with: &[],
            pattern: r#"(?i)\.ssh["']?\s*[/\\,]\s*["']?id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?\b(?:["'\s),]|$)"#,
            sev: script_only(Medium),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.cloud-config",
            triggers: &[
                ".aws",
                "gcloud",
                ".azure",
                ".kube",
                ".docker",
                ".netrc",
                ".git-credentials",
                ".npmrc",
                ".pypirc",
                "hosts.yml",
                ".terraform.d",
                ".vault-token",
            ],
            with: &[],
            pattern: CLOUD_READ.as_str(),
            sev: per_zone(Medium, Medium, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.cloud-config",
            triggers: &[
                ".aws",
                "gcloud",
                "application_default_credentials",
                ".azure",
                ".git-credentials",
                ".netrc",
            ],
            with: &[],
            pattern: r#"(?i)\.aws[/\\]credentials\b|application_default_credentials\.json|\.config[/\\]gcloud[/\\](?:credentials\.db|access_tokens\.db|legacy_credentials)|\.azure[/\\](?:accesstokens\.json|msal_token_cache)|\.git-credentials\b|\.netrc\b"#,
            sev: script_only(Medium),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.keychain",
            triggers: &["dump-keychain"],
            with: &[],
            pattern: r#"(?i)\bsecurity\s+(?:-\w+\s+)*dump-keychain\b"#,
            sev: per_zone(Critical, Critical, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.keychain",
            triggers: &["find-generic-password", "find-internet-password", "export"],
            with: &[],
            pattern: r#"(?i)\bsecurity\s+(?:find-(?:generic|internet)-password\b[^\n]*?\s-(?:[a-z]*[wg][a-z]*)\b|export\s+(?:-\w+\s+)*-k\b)"#,
            sev: per_zone(Low, Low, Medium),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.keychain",
            triggers: &[
                "mimikatz",
                "sekurlsa",
                "lsass",
                "cmdkey",
                "vaultcmd",
                "chainbreaker",
                "lazagne",
                "credentialmanager",
            ],
            with: &[],
            pattern: r#"(?i)\b(?:mimikatz|sekurlsa|lazagne|chainbreaker)\b|\blsass(?:\.exe|\.dmp)?\b[^\n]*\b(?:minidump|procdump|dump)\b|\b(?:procdump|minidump)\b[^\n]*\blsass\b|\bcmdkey\s+/list\b|\bvaultcmd\s+/list\w*|get-storedcredential|credentialmanager"#,
            sev: per_zone(High, Critical, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.browser-store",
            triggers: &[
                "chrome",
                "chromium",
                "brave",
                "edge",
                "opera",
                "vivaldi",
                "firefox",
                "mozilla",
                "library/cookies",
                "safe storage",
            ],
            with: &[],
            pattern: r#"(?i)(?:google[/\\ ]chrome|chromium|bravesoftware|brave-browser|microsoft[/\\ ]edge|opera software|vivaldi|firefox[/\\]profiles|mozilla[/\\]firefox|\.mozilla[/\\]firefox|library[/\\]cookies)[^\n]{0,160}?(?:login data|[/\\]cookies\b|local state|web data|logins\.json|key[34]\.db|cookies\.sqlite|signons\.sqlite|cookies\.binarycookies)|\b(?:chrome|chromium|brave|microsoft edge|opera|vivaldi)\s+safe\s+storage\b"#,
            sev: per_zone(High, High, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.browser-store",
            triggers: &[
                "login data",
                "web data",
                "local state",
                "cookies",
                "logins.json",
                "key3.db",
                "key4.db",
            ],
            with: &[],
            pattern: r#"["'/\\](?:Login Data|Web Data|Local State|Cookies|logins\.json|key[34]\.db|cookies\.sqlite|Cookies\.binarycookies)["']"#,
            sev: script_only(High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.wallet",
            triggers: &[
                "wallet.dat",
                "electrum",
                "exodus",
                "nkbihfbeogaeaoehlefnkodbefgpgknn",
                "bfnaelmomeimhlpmgjnjophhpkkoljpa",
                "hnfanknocfeofbddgcijnmhnfnkdnaad",
                "keystore",
                "solana/id.json",
                ".bitcoin",
            ],
            with: &[],
            pattern: r#"(?i)\bwallet\.dat\b|\.electrum[/\\]wallets|exodus[/\\](?:exodus\.wallet|wallet)|(?:extensions|local\s+extension\s+settings|sync\s+extension\s+settings|indexeddb)[/\\][^\s/\\]{0,40}?(?:nkbihfbeogaeaoehlefnkodbefgpgknn|bfnaelmomeimhlpmgjnjophhpkkoljpa|hnfanknocfeofbddgcijnmhnfnkdnaad)|\.ethereum[/\\]keystore|ethereum[/\\]keystore|\.bitcoin[/\\]wallets?"#,
            sev: per_zone(Medium, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.wallet",
            triggers: &["solana/id.json", ".config/solana"],
            with: &[],
            pattern: r#"(?i)\b(?:cat|cp|scp|base64|xxd|curl|open|read_text|readfilesync|readfile)\b[^\n|;]{0,80}\.config[/\\]solana[/\\]id\.json"#,
            sev: per_zone(Medium, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.wallet",
            triggers: &["seed phrase", "recovery phrase", "mnemonic", "private key"],
            with: &[],
            pattern: r#"(?i)\b(?:enter|paste|send|provide|share|type|give|input|tell)\s+(?:me\s+|us\s+|it\s+)?(?:your|their|his|her|the\s+user'?s?)\s+(?:\d+[- ]word\s+)?(?:wallet'?s?\s+)?(?:seed\s+phrase|recovery\s+phrase|secret\s+recovery\s+phrase|mnemonic(?:\s+phrase)?)\b"#,
            sev: per_zone(High, High, High),
            scope: Scope::Instruction,
            refine: None,
            phrase: true,
        },
        LineRule {
            id: "credentials.env-dump",
            triggers: &["env", "printenv"],
            with: &[],
            pattern: r#"(?i)(?:^|[\s;&(`$]|\$\()(?:env|printenv|export\s+-p|set)\s*(?:\|\s*(?:sudo\s+)?(?:curl|wget|nc|ncat|netcat|base64|xxd|openssl|gzip|ssh|socat|tee\s+/dev/tcp)\b|\|\s*grep\s+(?:-\w+\s+)*["']?[^\n|]*(?:key|token|secret|pass|aws|cred)|>\s*/tmp/|>\s*/dev/tcp/)"#,
            sev: per_zone(Medium, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.env-dump",
            triggers: &["environ", "process.env", "env:"],
            with: &[],
            pattern: r#"(?i)(?:json\.dumps?\s*\(\s*(?:dict\s*\(\s*)?os\.environ\b|dict\s*\(\s*os\.environ\s*\)|str\s*\(\s*os\.environ\s*\)|os\.environ\.copy\s*\(\)|for\s+\w+(?:\s*,\s*\w+)?\s+in\s+os\.environ(?:\.items\(\))?\s*:?[^\n]*(?:key|token|secret|pass)|JSON\.stringify\s*\(\s*process\.env\s*\)|Object\.(?:entries|keys|values)\s*\(\s*process\.env\s*\)|\{\s*\.\.\.process\.env\s*\}[^\n]*(?:post|send|fetch|axios|write)|get-childitem\s+env:|gci\s+env:|dir\s+env:)"#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.system-secrets",
            triggers: &[
                "/etc/shadow",
                "/etc/gshadow",
                "/etc/sudoers",
                "master.passwd",
                "hklm",
            ],
            with: &[],
            pattern: r#"(?i)\b(?:cat|less|more|head|tail|cp|scp|tar|base64|xxd|curl|open|readfile\w*|strings|unshadow|john)\b[^\n|;]{0,60}/etc/(?:g?shadow|sudoers|master\.passwd)\b|\breg(?:\.exe)?\s+save\s+hklm\\(?:sam|security|system)\b"#,
            sev: per_zone(High, High, Critical),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.cloud-metadata",
            triggers: &[
                "169.254.169.254",
                "metadata.google.internal",
                "100.100.100.200",
                "fd00:ec2::254",
            ],
            with: &[],
            pattern: r#"(?i)169\.254\.169\.254|metadata\.google\.internal|100\.100\.100\.200|fd00:ec2::254"#,
            sev: per_zone(Medium, High, High),
            scope: Scope::Command,
            refine: None,
            phrase: false,
        },
        LineRule {
            id: "credentials.secret-search",
            triggers: &["find ", "grep", "locate", "get-childitem"],
            with: &[],
            pattern: r#"(?i)\bfind\s+(?:/|~|\$home|\$\{home\}|/home|/users|/root)\S*\s[^\n|;]*-i?name\s+["']?[^"'\s]*(?:\.pem|id_rsa|id_ed25519|\.key\b|wallet|\.kdbx|credentials|\.env\b|\.ovpn|keystore|\.p12|\.pfx)|\bgrep\s+(?:-\w+\s+)*-\w*r\w*\s+(?:-\w+\s+)*["']?(?:-----begin|begin [a-z ]*private key|aws_secret|api[_-]?key|password|secret)[^\n]*?\s(?:/|~|\$home|/home|/root)(?:\s|$)|\blocate\s+(?:-\w+\s+)*(?:id_rsa|wallet\.dat|\.kdbx|\.pem)\b|get-childitem\b[^\n]*-recurse[^\n]*-include\s+[^\n]*(?:\.kdbx|\.pem|wallet|id_rsa)"#,
            sev: per_zone(Medium, High, High),
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
    fn reading_keys_is_flagged_using_them_is_not() {
        assert_eq!(
            first_rule("```\ncat ~/.ssh/id_rsa\n```\n").as_deref(),
            Some("credentials.ssh-private-key:medium")
        );
        assert_eq!(
            first_rule("```\nssh -i ~/.ssh/id_rsa user@host\n```\n"),
            None
        );
        assert_eq!(first_rule("```\ncat ~/.ssh/id_ed25519.pub\n```\n"), None);
        assert_eq!(
            first_rule("```\ncat ~/.aws/credentials\n```\n").as_deref(),
            Some("credentials.cloud-config:medium")
        );
        assert_eq!(
            first_rule("```\nsecurity dump-keychain -d login.keychain\n```\n").as_deref(),
            Some("credentials.keychain:critical")
        );
    }
}
