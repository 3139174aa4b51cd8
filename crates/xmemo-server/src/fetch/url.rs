//! The URL grammar: which GitHub and ClawHub skill URLs are accepted, and the archive URL
//! each is downloaded from (see the module documentation of `fetch`).

use super::{FetchConfig, FetchError};

/// A skill URL the server knows how to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteSkill {
    GitHub {
        owner: String,
        repo: String,
        /// Branch, tag or commit; `None` = the default branch.
        git_ref: Option<String>,
        /// Folder of the skill inside the repository; `None` = the repository root.
        path: Option<String>,
    },
    ClawHub {
        owner: Option<String>,
        slug: String,
        version: Option<String>,
    },
}

const GITHUB_HOSTS: &[&str] = &["github.com", "www.github.com"];
const CLAWHUB_HOSTS: &[&str] = &["clawhub.ai", "www.clawhub.ai"];

/// Parses a GitHub or ClawHub skill URL.
pub fn parse_skill_url(text: &str) -> Result<RemoteSkill, FetchError> {
    let text = text.trim();
    if text.is_empty() || text.len() > 2048 {
        return Err(FetchError::BadUrl(
            "`url` must be a GitHub or ClawHub URL of at most 2048 characters".into(),
        ));
    }
    let url = reqwest::Url::parse(text)
        .map_err(|e| FetchError::BadUrl(format!("`{text}` is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(FetchError::BadUrl(format!(
            "`{text}`: only https:// GitHub and ClawHub URLs can be imported"
        )));
    }
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let segments: Vec<String> = url
        .path_segments()
        .map(|s| s.filter(|p| !p.is_empty()).map(decode_segment).collect())
        .unwrap_or_default();
    if GITHUB_HOSTS.contains(&host.as_str()) {
        parse_github(text, &segments)
    } else if CLAWHUB_HOSTS.contains(&host.as_str()) {
        parse_clawhub(text, &url, &segments)
    } else {
        Err(FetchError::BadUrl(format!(
            "`{text}` is not a supported source: give https://github.com/OWNER/REPO[/tree/REF/PATH] \
             or https://clawhub.ai/OWNER/SKILL (or upload a ZIP / SKILL.md)"
        )))
    }
}

fn decode_segment(s: &str) -> String {
    // Percent-decoding cannot fail; invalid UTF-8 becomes U+FFFD and is refused below.
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn name_ok(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_github(text: &str, segments: &[String]) -> Result<RemoteSkill, FetchError> {
    let bad = |why: &str| FetchError::BadUrl(format!("`{text}`: {why}"));
    let (owner, repo) = match segments {
        [owner, repo, ..] => (owner.as_str(), repo.trim_end_matches(".git")),
        _ => {
            return Err(bad(
                "a GitHub URL must name a repository: https://github.com/OWNER/REPO",
            ));
        }
    };
    if !name_ok(owner, 39) || !name_ok(repo, 100) {
        return Err(bad("not a valid GitHub owner/repository name"));
    }
    let (git_ref, mut path): (Option<String>, Vec<String>) = match &segments[2..] {
        [] => (None, Vec::new()),
        [kind, git_ref, rest @ ..] if kind == "tree" || kind == "blob" => {
            let mut rest = rest.to_vec();
            if kind == "blob" {
                // …/blob/REF/dir/SKILL.md → the folder holding it.
                if rest
                    .last()
                    .is_some_and(|f| f.eq_ignore_ascii_case(xmemo_core::package::SKILL_MD))
                {
                    rest.pop();
                } else {
                    return Err(bad(
                        "a /blob/ URL must point at a SKILL.md; use /tree/REF/PATH for a folder",
                    ));
                }
            }
            (Some(git_ref.clone()), rest)
        }
        _ => {
            return Err(bad(
                "use https://github.com/OWNER/REPO, …/tree/REF or …/tree/REF/PATH",
            ));
        }
    };
    if let Some(r) = &git_ref
        && (r.is_empty()
            || r.len() > 255
            || r.contains("..")
            || r.chars()
                .any(|c| c.is_control() || c.is_whitespace() || c == '\u{fffd}'))
    {
        return Err(bad("not a valid git ref"));
    }
    path.retain(|s| !s.is_empty());
    let path = if path.is_empty() {
        None
    } else {
        let joined = path.join("/");
        if let Some(reason) = xmemo_core::package::unsafe_path_reason(&joined) {
            return Err(bad(&format!("unsafe folder path `{joined}`: {reason}")));
        }
        Some(joined)
    };
    Ok(RemoteSkill::GitHub {
        owner: owner.to_string(),
        repo: repo.to_string(),
        git_ref,
        path,
    })
}

fn parse_clawhub(
    text: &str,
    url: &reqwest::Url,
    segments: &[String],
) -> Result<RemoteSkill, FetchError> {
    let bad = |why: &str| FetchError::BadUrl(format!("`{text}`: {why}"));
    let (owner, slug) = match segments {
        [first, slug] if first == "skills" => (None, slug.clone()),
        [owner, slug] => (Some(owner.clone()), slug.clone()),
        _ => {
            return Err(bad(
                "a ClawHub URL looks like https://clawhub.ai/OWNER/SKILL or https://clawhub.ai/skills/SKILL",
            ));
        }
    };
    if !name_ok(&slug, 100) || owner.as_deref().is_some_and(|o| !name_ok(o, 100)) {
        return Err(bad("not a valid ClawHub owner/skill name"));
    }
    let version = url
        .query_pairs()
        .find(|(k, _)| k == "version")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty());
    if version.as_deref().is_some_and(|v| !name_ok(v, 64)) {
        return Err(bad("not a valid version"));
    }
    Ok(RemoteSkill::ClawHub {
        owner,
        slug,
        version,
    })
}

impl RemoteSkill {
    /// `github` or `clawhub`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::GitHub { .. } => "github",
            Self::ClawHub { .. } => "clawhub",
        }
    }

    /// The archive URL on the configured host.
    pub fn download_url(&self, config: &FetchConfig) -> Result<reqwest::Url, FetchError> {
        let (base, name) = match self {
            Self::GitHub { .. } => (&config.github_api_base, "github_api_base"),
            Self::ClawHub { .. } => (&config.clawhub_base, "clawhub_base"),
        };
        let mut url = reqwest::Url::parse(base)
            .map_err(|e| FetchError::Config(format!("{name} `{base}`: {e}")))?;
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|()| FetchError::Config(format!("{name} `{base}` cannot be a base")))?;
            path.pop_if_empty();
            match self {
                Self::GitHub {
                    owner,
                    repo,
                    git_ref,
                    ..
                } => {
                    path.extend(["repos", owner.as_str(), repo.as_str(), "zipball"]);
                    if let Some(r) = git_ref {
                        path.push(r);
                    }
                }
                Self::ClawHub { .. } => {
                    path.extend(["api", "v1", "download"]);
                }
            }
        }
        if let Self::ClawHub { slug, version, .. } = self {
            let mut q = url.query_pairs_mut();
            q.append_pair("slug", slug);
            if let Some(v) = version {
                q.append_pair("version", v);
            }
        }
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_urls() {
        let p = |s: &str| parse_skill_url(s).unwrap();
        assert_eq!(
            p("https://github.com/anthropics/skills"),
            RemoteSkill::GitHub {
                owner: "anthropics".into(),
                repo: "skills".into(),
                git_ref: None,
                path: None
            }
        );
        assert_eq!(
            p("https://github.com/anthropics/skills.git"),
            p("https://github.com/anthropics/skills/")
        );
        assert_eq!(
            p("https://github.com/a/b/tree/main/skills/pdf?x=1#frag"),
            RemoteSkill::GitHub {
                owner: "a".into(),
                repo: "b".into(),
                git_ref: Some("main".into()),
                path: Some("skills/pdf".into())
            }
        );
        assert_eq!(
            p("https://github.com/a/b/blob/v1.2/skills/pdf/SKILL.md"),
            p("https://github.com/a/b/tree/v1.2/skills/pdf")
        );
        for bad in [
            "https://github.com/a",
            "https://github.com/a/b/issues/3",
            // (`../` segments are resolved by the URL parser itself; encoded ones are not)
            "https://github.com/a/b/tree/main/a%2F..%2Fx",
            "https://github.com/a/b/tree/main/%2Fetc",
            // A control character, escaped.
            "https://github.com/a/b/tree/main/%05",
            "https://github.com/a/b/blob/main/README.md",
            "https://gitlab.com/a/b",
            "ftp://github.com/a/b",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(
                matches!(parse_skill_url(bad), Err(FetchError::BadUrl(_))),
                "{bad}"
            );
        }
        // `%+5` is no escape (never the byte 0x05): the folder is named as written.
        assert!(matches!(
            parse_skill_url("https://github.com/a/b/tree/main/a%+5b"),
            Ok(RemoteSkill::GitHub { path: Some(p), .. }) if p == "a%+5b"
        ));
    }

    #[test]
    fn clawhub_urls() {
        assert_eq!(
            parse_skill_url("https://clawhub.ai/steipete/gog").unwrap(),
            RemoteSkill::ClawHub {
                owner: Some("steipete".into()),
                slug: "gog".into(),
                version: None
            }
        );
        assert_eq!(
            parse_skill_url("https://clawhub.ai/skills/gog?version=1.2.0").unwrap(),
            RemoteSkill::ClawHub {
                owner: None,
                slug: "gog".into(),
                version: Some("1.2.0".into())
            }
        );
        assert!(parse_skill_url("https://clawhub.ai/gog").is_err());
        let url = parse_skill_url("https://clawhub.ai/o/my-skill?version=2")
            .unwrap()
            .download_url(&FetchConfig::default())
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://clawhub.ai/api/v1/download?slug=my-skill&version=2"
        );
        let url = parse_skill_url("https://github.com/o/r/tree/feature%2Fx/s")
            .unwrap()
            .download_url(&FetchConfig {
                github_api_base: "http://127.0.0.1:9/gh/".into(),
                ..FetchConfig::default()
            })
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/gh/repos/o/r/zipball/feature%2Fx"
        );
    }
}
