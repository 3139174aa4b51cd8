//! TLS certificate verification turned off: `curl -k`, `wget --no-check-certificate`,
//! `verify=False`, `NODE_TLS_REJECT_UNAUTHORIZED=0`, `GIT_SSL_NO_VERIFY`, `rejectUnauthorized:
//! false`, `InsecureSkipVerify`, `strict-ssl false`… Against `localhost` (a local gateway with a
//! self-signed certificate) it is only noted.

use super::{LineRule, RuleInfo, Scope, per_zone};
use crate::model::Severity::{Low, Medium};

pub const INFO: &[RuleInfo] = &[RuleInfo {
    id: "tls.verification-disabled",
    title: "TLS certificate verification is turned off",
    remediation: "Keep certificate verification on; for a private CA pass its certificate (--cacert, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS).",
}];

fn local_target(_m: &str, line: &str) -> Option<i8> {
    let lower = line.to_ascii_lowercase();
    if lower.contains("localhost") || lower.contains("127.0.0.1") || lower.contains("[::1]") {
        Some(-1)
    } else {
        Some(0)
    }
}

pub fn rules() -> Vec<LineRule> {
    vec![
        LineRule {
            id: "tls.verification-disabled",
            triggers: &["curl", "--insecure"],
            with: &[],
            pattern: r#"\bcurl\b[^\n|;]*?\s(?:-[a-zA-JL-Z]*k[a-zA-JL-Z]*|--insecure)(?:\s|$)"#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: Some(local_target),
            phrase: false,
        },
        LineRule {
            id: "tls.verification-disabled",
            triggers: &[
                "no-check-certificate",
                "verify",
                "unverified_context",
                "cert_none",
                "check_hostname",
                "pythonhttpsverify",
                "tls_reject_unauthorized",
                "rejectunauthorized",
                "ssl_no_verify",
                "sslverify",
                "strict-ssl",
                "insecureskipverify",
                "servercertificatevalidationcallback",
                "skipcertificatecheck",
                "trusted-host",
                "disable_warnings",
            ],
            with: &[],
            pattern: r#"(?i)--no-check-certificate\b|\bverify\s*=\s*False\b|\bssl\._create_unverified_context\b|\bssl\.CERT_NONE\b|\bcheck_hostname\s*=\s*False\b|\bPYTHONHTTPSVERIFY\s*=\s*["']?0|\bNODE_TLS_REJECT_UNAUTHORIZED\s*[=:]\s*["']?0|\brejectUnauthorized\s*[:=]\s*false\b|\bGIT_SSL_NO_VERIFY\s*=\s*["']?(?:1|true)|\bhttp\.sslVerify\s*(?:=\s*|\s+)["']?false|\bstrict-ssl\s*(?:=\s*|\s+)false\b|\bInsecureSkipVerify\s*:\s*true\b|ServerCertificateValidationCallback\s*=\s*\{\s*\$true\s*\}|-SkipCertificateCheck\b|--trusted-host\b"#,
            sev: per_zone(Low, Medium, Medium),
            scope: Scope::Command,
            refine: Some(local_target),
            phrase: false,
        },
    ]
}

#[cfg(test)]
mod tests {
    use crate::engine::test_support::first_rule;

    #[test]
    fn tls_off() {
        assert_eq!(
            first_rule("```\ncurl -sk https://internal.example/x\n```\n").as_deref(),
            Some("tls.verification-disabled:medium")
        );
        assert_eq!(
            first_rule("```\ncurl -sSL -K cfg https://x.example\n```\n"),
            None
        );
        assert_eq!(
            first_rule("```python\nrequests.get(u, verify=False)\n```\n").as_deref(),
            Some("tls.verification-disabled:medium")
        );
        assert_eq!(
            first_rule("```python\nrequests.get('https://localhost:5000/x', verify=False)\n```\n")
                .as_deref(),
            Some("tls.verification-disabled:low")
        );
    }
}
