//! Declared purpose against actual behaviour: a skill whose frontmatter says "markdown
//! formatter" (or "works offline") while its scripts open network connections, or that reads
//! credentials its description never mentions.
//!
//! Only executable components count as behaviour here: a SKILL.md's code blocks document
//! commands; scripts *are* the skill.

use super::RuleInfo;
use crate::document::{Doc, Zone};
use crate::excerpt::excerpt;
use crate::frontmatter::Declared;
use crate::model::Severity::{High, Medium};
use crate::verdict::Hit;
use regex::Regex;
use std::sync::LazyLock;

pub const INFO: &[RuleInfo] = &[
    RuleInfo {
        id: "purpose.undeclared-network",
        title: "Scripts use the network but the skill's description declares nothing that needs it",
        remediation: "Say in the description which service the skill talks to and why, or remove the network access.",
    },
    RuleInfo {
        id: "purpose.contradicted-claim",
        title: "The skill claims to work offline or keep data local, and its scripts send data out",
        remediation: "Remove the network access or the claim; a skill must do what it says.",
    },
    RuleInfo {
        id: "purpose.undeclared-secrets",
        title: "The skill reads credentials its description never mentions",
        remediation: "Declare in the description which credentials the skill needs and why, or remove the access.",
    },
    RuleInfo {
        id: "purpose.tools-exceeded",
        title: "The skill's allowed-tools grant no shell or network, yet its scripts need them",
        remediation: "Make allowed-tools match what the skill does, or remove the scripts' network access.",
    },
];

static NETWORK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:requests|httpx|aiohttp|urllib3)\.(?:get|post|put|patch|delete|request|session|client|asyncclient|clientsession)\b|\burllib\.request\b|\burlopen\s*\(|\bhttp\.client\b|\bsocket\.(?:socket|create_connection)\s*\(|\bfetch\s*\(\s*[`'"h]|\baxios\b|\bxmlhttprequest\b|\bnet\.(?:connect|createconnection|socket)\b|\bhttps?\.(?:get|request)\s*\(|^\s*(?:[^#\n]*[;&|]\s*)?(?:curl|wget)\s|\binvoke-webrequest\b|\binvoke-restmethod\b|\bnet\.webclient\b|\bsmtplib\b|\bftplib\b|\bparamiko\b|\bwebsocket\b|/dev/tcp/|\bnc\s+(?:-\w+\s+)*[\w.-]+\s+\d+"#)
        .expect("constant regex")
});

/// Words in a declared purpose that cover network use.
const NETWORK_WORDS: &[&str] = &[
    "api",
    "http",
    "web",
    "url",
    "fetch",
    "download",
    "upload",
    "online",
    "internet",
    "remote",
    "server",
    "cloud",
    "sync",
    "send",
    "post",
    "email",
    "mail",
    "slack",
    "discord",
    "telegram",
    "github",
    "gitlab",
    "search",
    "scrape",
    "crawl",
    "browse",
    "weather",
    "news",
    "notif",
    "webhook",
    "deploy",
    "publish",
    "stock",
    "price",
    "market",
    "trad",
    "crypto",
    "wallet",
    "chain",
    "rpc",
    "llm",
    "openai",
    "anthropic",
    "gpt",
    "claude",
    "gemini",
    "model",
    "translat",
    "install",
    "update",
    "monitor",
    "integrat",
    "service",
    "endpoint",
    "network",
    "request",
    "query",
    "connect",
    "stream",
    "feed",
    "rss",
    "map",
    "social",
    "twitter",
    "reddit",
    "youtube",
    "spotify",
    "calendar",
    "drive",
    "notion",
    "jira",
    "linear",
    "database",
    "report",
    "check",
    "status",
    "lookup",
    "look up",
    "dns",
    "domain",
    "ssh",
    "backup",
    "share",
    "message",
    "chat",
    "bot",
    "agent",
    "mcp",
    "oauth",
    "login",
    "account",
    "issue",
    "ticket",
    "pay",
    "invoice",
    "order",
    "book",
    "flight",
    "hotel",
    "image",
    "video",
    "audio",
    "speech",
    "voice",
    "generat",
    "transcri",
    "research",
    "crm",
    "sheet",
    "doc",
    "store",
    "analytics",
    "track",
    "saas",
    "dashboard",
    "ship",
    "telemetry",
    "metric",
];

const OFFLINE_CLAIM: &[&str] = &[
    "offline",
    "no network",
    "without network",
    "without internet",
    "no internet",
    "local-only",
    "local only",
    "runs locally",
    "runs entirely locally",
    "never leaves your",
    "no data is sent",
    "no data leaves",
    "does not send",
    "doesn't send",
    "never sends",
    "does not connect",
    "no external",
    "no outbound",
    "air-gapped",
    "airgapped",
    "privacy-first",
];

const SECRET_WORDS: &[&str] = &[
    "ssh",
    "aws",
    "gcp",
    "gcloud",
    "azure",
    "cloud",
    "credential",
    "key",
    "secret",
    "token",
    "password",
    "keychain",
    "vault",
    "wallet",
    "auth",
    "login",
    "kube",
    "docker",
    "deploy",
    "git",
    "backup",
    "sync",
    "migrat",
    "server",
    "devops",
    "infra",
    "account",
    "security",
    "audit",
];

const SHELL_TOOLS: &[&str] = &[
    "bash", "shell", "terminal", "exec", "run", "command", "computer", "*", "all", "webfetch",
    "fetch", "http", "network", "browser",
];

/// Purpose checks over a whole skill. `docs` are the parsed files with their index in the
/// scan; `hits` the findings so far (after context).
pub fn check(declared: &Declared, docs: &[(usize, Doc<'_>)], hits: &[Hit]) -> Vec<Hit> {
    let mut out = Vec::new();
    let purpose = declared.purpose_lower();
    let has_purpose = !purpose.trim().is_empty();
    // First network use in a script.
    let mut network: Option<(usize, usize, String)> = None;
    for (fi, doc) in docs {
        if network.is_some() {
            break;
        }
        for (li, line) in doc.lines.iter().enumerate() {
            if line.zone != Zone::Script || line.is_comment {
                continue;
            }
            if let Some(m) = NETWORK.find(line.text) {
                network = Some((*fi, li, excerpt(line.text, m.start(), m.end())));
                break;
            }
        }
    }
    if let Some((file, li, ex)) = &network
        && has_purpose
    {
        let line = (*li as u32) + 1;
        let whole = format!("{purpose} {}", declared.all_lower);
        if OFFLINE_CLAIM.iter().any(|c| whole.contains(c)) {
            out.push(Hit::new(
                "purpose.contradicted-claim",
                High,
                *file,
                line,
                ex.clone(),
            ));
        } else if !NETWORK_WORDS.iter().any(|w| purpose.contains(w)) {
            out.push(Hit::new(
                "purpose.undeclared-network",
                Medium,
                *file,
                line,
                ex.clone(),
            ));
        }
        if let Some(tools) = &declared.allowed_tools {
            let t = tools.to_lowercase();
            if !t.trim().is_empty() && !SHELL_TOOLS.iter().any(|w| t.contains(w)) {
                out.push(Hit::new(
                    "purpose.tools-exceeded",
                    Medium,
                    *file,
                    line,
                    ex.clone(),
                ));
            }
        }
    }
    if has_purpose && !SECRET_WORDS.iter().any(|w| purpose.contains(w)) {
        let cred = hits.iter().find(|h| {
            h.rule.starts_with("credentials.")
                && !h.described
                && h.severity >= Medium
                && h.rule != "credentials.wallet"
        });
        if let Some(h) = cred {
            out.push(Hit::new(
                "purpose.undeclared-secrets",
                High,
                h.file,
                h.line,
                h.excerpt.clone(),
            ));
        }
    }
    out
}
