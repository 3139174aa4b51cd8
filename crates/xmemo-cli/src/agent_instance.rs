//! The agent instance id (`X-Memory-OS-Agent-Instance-ID`): which one `xmemo mcp` sends and
//! where it comes from. The bridge and `xmemo doctor` both ask this module, so what doctor
//! reports is what the bridge will do.
//!
//! Order: `XMEMO_AGENT_INSTANCE_ID` when set; else the id kept in
//! `$XDG_CONFIG_HOME/xmemo/agent-instance-id` (`~/.config/xmemo/…`), created by the bridge on
//! first use, so a restarted runner keeps its identity without any setting.

use std::path::PathBuf;
use xmemo_core::limits::ATTRIBUTION_MAX_CHARS;

/// The environment variable that names the instance (SPEC: fixed name).
pub const ENV_VAR: &str = "XMEMO_AGENT_INSTANCE_ID";
const FILE_NAME: &str = "agent-instance-id";

/// 1–128 printable characters (what the server accepts in attribution headers), else `None`.
pub fn attribution_value(text: &str) -> Option<String> {
    let cleaned: String = text
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(ATTRIBUTION_MAX_CHARS)
        .collect();
    let cleaned = cleaned.trim().to_string();
    // Header values must be visible ASCII for reqwest; keep the rest out.
    (!cleaned.is_empty() && cleaned.chars().all(|c| (' '..='~').contains(&c))).then_some(cleaned)
}

/// `$XDG_CONFIG_HOME/xmemo` (relative values are ignored, as the XDG spec says), else
/// `$HOME/.config/xmemo`.
pub fn config_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    xdg.or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".config"))
    })
    .map(|d| d.join("xmemo"))
}

/// Where the bridge keeps the id it generated.
pub fn stored_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join(FILE_NAME))
}

/// What the stored file holds.
pub enum Stored {
    Valid(String),
    /// The file exists but is not a usable id; the bridge replaces it.
    Invalid,
    Missing,
    Unreadable(std::io::Error),
}

pub fn read_stored(path: &std::path::Path) -> Stored {
    match std::fs::read_to_string(path) {
        Ok(text) => match attribution_value(&text) {
            Some(id) => Stored::Valid(id),
            None => Stored::Invalid,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored::Missing,
        Err(e) => Stored::Unreadable(e),
    }
}

/// The instance id kept in the user's config directory, created on first use. Falls back to a
/// fresh id (with a warning) when that directory is not writable.
pub fn stable_instance_id() -> String {
    let Some(path) = stored_path() else {
        eprintln!(
            "xmemo mcp: warning: no HOME or XDG_CONFIG_HOME; using a new agent instance id for this run (set {ENV_VAR} to keep one)"
        );
        return xmemo_core::new_id("inst");
    };
    if let Stored::Valid(id) = read_stored(&path) {
        return id;
    }
    keep_new_id(&path).unwrap_or_else(|(id, e)| {
        eprintln!(
            "xmemo mcp: warning: cannot save the agent instance id to {} ({e}); using a new one for this run (set {ENV_VAR} to keep one)",
            path.display()
        );
        id
    })
}

/// Makes a new instance id and keeps it at `path` (the bridge then sends it on every run);
/// on failure, the id that could not be kept and why.
pub fn keep_new_id(path: &std::path::Path) -> Result<String, (String, std::io::Error)> {
    let id = xmemo_core::new_id("inst");
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, format!("{id}\n")));
    match written {
        Ok(()) => Ok(id),
        Err(e) => Err((id, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribution_values_are_cleaned() {
        assert_eq!(
            attribution_value("  claude-code \n").as_deref(),
            Some("claude-code")
        );
        assert_eq!(attribution_value("\u{1}"), None);
        assert_eq!(
            attribution_value(&"x".repeat(300)).map(|s| s.len()),
            Some(128)
        );
        assert_eq!(attribution_value("café"), None);
    }
}
