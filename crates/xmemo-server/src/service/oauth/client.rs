//! A client as the authorization server knows it: registered (RFC 7591), or described by its
//! Client ID Metadata Document (`cimd.rs`).

use super::redirect_uri;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
    pub secret_hash: Option<String>,
    pub grant_types: Vec<String>,
    /// The scopes it registered or its document declares (`scope`); `None`: any. A request
    /// may ask for no more than these.
    pub scopes: Option<Vec<String>>,
    /// Described by a Client ID Metadata Document (its `client_id` is that URL).
    pub metadata_document: bool,
}

impl Client {
    /// The registered redirect URI `uri` matches, if any.
    pub fn redirect_uri_for(&self, uri: &str) -> Option<&str> {
        self.redirect_uris
            .iter()
            .find(|r| redirect_uri::matches(r, uri))
            .map(String::as_str)
    }

    pub fn may_refresh(&self) -> bool {
        self.grant_types.iter().any(|g| g == "refresh_token")
    }

    /// The scopes a request gets: what it asked for (already parsed), or without `scope`
    /// everything the client may have; `Err(scope)` naming the first one beyond what it
    /// registered.
    pub fn allowed_scopes(
        &self,
        asked: Option<Vec<String>>,
        all: Vec<String>,
    ) -> Result<Vec<String>, String> {
        let Some(allowed) = &self.scopes else {
            return Ok(asked.unwrap_or(all));
        };
        match asked {
            None => Ok(all.into_iter().filter(|s| allowed.contains(s)).collect()),
            Some(asked) => match asked.iter().find(|s| !allowed.contains(s)) {
                Some(extra) => Err(extra.clone()),
                None => Ok(asked),
            },
        }
    }
}

/// A client name as shown to people: control characters and invisible or bidirectional
/// formatting marks dropped (the set paths refuse, `xmemo_core::validate`), at most 100
/// characters.
pub fn clean_name(name: &str) -> String {
    xmemo_core::validate::strip_invisible(name)
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect::<String>()
        .trim()
        .to_string()
}
