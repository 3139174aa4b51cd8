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
}

/// A client name as shown to people: control and formatting characters dropped, at most
/// 100 characters.
pub fn clean_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control() && !matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .take(100)
        .collect::<String>()
        .trim()
        .to_string()
}
