//! API keys: random secrets shown once, stored as SHA-256, looked up by hash; and the
//! constant-time comparison every secret check uses (form tokens, PKCE, client secrets).

use crate::error::{ServiceError, ServiceResult};
use base64::Engine;
use rand::RngCore;
use subtle::ConstantTimeEq;
use xmemo_core::Scope;
use xmemo_core::limits::ATTRIBUTION_MAX_CHARS;
use xmemo_store::{Account, Attribution};

/// Every key starts with this, so leaked keys are easy to scan for.
pub const KEY_PREFIX: &str = "xmk_";
/// Characters of the key kept in clear to help people tell keys apart.
const SHOWN_PREFIX_LEN: usize = 12;

/// Whether two secrets (tokens, hashes) are equal, in time independent of where they differ.
/// An empty secret matches nothing.
pub fn tokens_match(expected: &str, given: &str) -> bool {
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// Who is calling, through which credential, from which agent.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account: Account,
    pub credential_id: Option<String>,
    pub scopes: Vec<Scope>,
    pub client_profile: Option<String>,
    pub agent_id: Option<String>,
    pub agent_instance_id: Option<String>,
    /// The name the OAuth client registered with (`client_name`), when the credential is an
    /// OAuth access token: the agent's name when the client sends none of its own.
    pub registered_client: Option<String>,
    /// Authenticated by an OAuth access token (`credential_id` is then its grant): scope
    /// refusals on `/mcp` are answered with an OAuth `insufficient_scope` challenge.
    pub via_oauth: bool,
}

impl Principal {
    /// A principal with every scope, for the local operator (`xmemo admin`) and bootstrap.
    pub fn operator(account: Account) -> Self {
        Self {
            account,
            credential_id: None,
            scopes: vec![Scope::Read, Scope::Write],
            client_profile: Some("operator".into()),
            agent_id: None,
            agent_instance_id: None,
            registered_client: None,
            via_oauth: false,
        }
    }

    pub fn require(&self, scope: Scope) -> ServiceResult<()> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(ServiceError::PermissionDenied(format!(
                "this credential lacks the `{scope}` scope"
            )))
        }
    }

    /// Names the agent after what its client says of itself (MCP `clientInfo`), else after
    /// the OAuth client's registered name, unless an attribution header already named it.
    pub fn name_agent(&mut self, client_name: Option<&str>) {
        if self.agent_id.is_none() {
            self.agent_id = client_name
                .or(self.registered_client.as_deref())
                .and_then(attribution_name);
        }
    }

    pub fn attribution(&self) -> Attribution {
        Attribution {
            account_id: self.account.account_id.clone(),
            credential_id: self.credential_id.clone(),
            client_profile: self.client_profile.clone(),
            agent_id: self.agent_id.clone(),
            agent_instance_id: self.agent_instance_id.clone(),
        }
    }
}

/// `text` as an attribution value: trimmed, without control characters, at most
/// [`ATTRIBUTION_MAX_CHARS`] characters; `None` when nothing is left.
pub fn attribution_name(text: &str) -> Option<String> {
    let cleaned: String = text
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim()
        .chars()
        .take(ATTRIBUTION_MAX_CHARS)
        .collect();
    let cleaned = cleaned.trim_end();
    (!cleaned.is_empty()).then(|| cleaned.to_string())
}

/// A new random key (256 bits) and what is stored of it.
pub struct GeneratedKey {
    pub secret: String,
    pub prefix: String,
    pub hash: String,
}

pub fn generate_key() -> GeneratedKey {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    GeneratedKey {
        prefix: secret[..SHOWN_PREFIX_LEN].to_string(),
        hash: hash_key(&secret),
        secret,
    }
}

pub fn hash_key(secret: &str) -> String {
    xmemo_core::content_hash(secret.as_bytes())
}

/// Parses `memory:read memory:write` style lists (space or comma separated).
pub fn parse_scopes(text: &str) -> ServiceResult<Vec<Scope>> {
    let mut scopes = Vec::new();
    for part in text.split([' ', ',']).filter(|s| !s.is_empty()) {
        let scope: Scope = part
            .parse()
            .map_err(|e: String| ServiceError::validation(e, "scopes"))?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_prefixed_and_hashed() {
        let a = generate_key();
        let b = generate_key();
        assert_ne!(a.secret, b.secret);
        assert!(a.secret.starts_with(KEY_PREFIX));
        assert_eq!(a.secret.len(), KEY_PREFIX.len() + 43);
        assert_eq!(a.hash, hash_key(&a.secret));
        assert!(a.secret.starts_with(&a.prefix));
        assert!(!a.hash.contains(&a.secret));
    }

    #[test]
    fn scope_parsing() {
        assert_eq!(
            parse_scopes("memory:read,memory:write memory:read").unwrap(),
            vec![Scope::Read, Scope::Write]
        );
        assert!(parse_scopes("memory:admin").is_err());
    }
}
