//! The rules of dynamic client registration (RFC 7591): which redirect URIs, authentication
//! methods, grant and response types a client may register, which of its metadata is kept
//! (and echoed), and how large it may be. `oauth/register.rs` is the endpoint.

use super::client::clean_name;
use super::error::{OAuthError, OAuthErrorKind};
use super::{parse_scope, redirect_uri};
use serde_json::{Map, Value, json};
use xmemo_store::NewOAuthClient;

const AUTH_METHODS: [&str; 3] = ["none", "client_secret_basic", "client_secret_post"];
const GRANT_TYPES: [&str; 2] = ["authorization_code", "refresh_token"];
/// Registration fields kept (and echoed); anything else is ignored, as RFC 7591 §2 allows.
const KEPT: [&str; 10] = [
    "client_uri",
    "logo_uri",
    "contacts",
    "tos_uri",
    "policy_uri",
    "software_id",
    "software_version",
    "application_type",
    "grant_types",
    "response_types",
];

/// Redirect URIs one client may register.
pub const MAX_REDIRECT_URIS: usize = 10;
/// Longest redirect URI, and longest URL field (`client_uri`, `logo_uri`, …), in bytes.
pub const MAX_URI_BYTES: usize = 512;
/// Most `contacts`, each at most [`MAX_SHORT_BYTES`]·2.
pub const MAX_CONTACTS: usize = 5;
/// Longest short text field (`software_id`, `software_version`, `application_type`).
pub const MAX_SHORT_BYTES: usize = 128;
/// Largest registration stored: redirect URIs and kept metadata together, serialised.
pub const MAX_STORED_BYTES: usize = 4 * 1024;

fn metadata_error(d: impl Into<String>) -> OAuthError {
    OAuthError::new(OAuthErrorKind::InvalidClientMetadata, d)
}

fn strings(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| metadata_error(format!("`{key}` must be a list of strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(metadata_error(format!("`{key}` must be a list of strings"))),
    }
}

/// The bounds of one kept field: URLs and short texts are strings of bounded length, contacts
/// a short list of them (the lists of grant and response types are checked on their own).
fn check_field(key: &str, v: &Value) -> Result<(), OAuthError> {
    let text = |max: usize| match v {
        Value::String(s) if s.len() <= max => Ok(()),
        Value::String(_) => Err(metadata_error(format!(
            "`{key}` is longer than {max} bytes"
        ))),
        _ => Err(metadata_error(format!("`{key}` must be a string"))),
    };
    match key {
        "client_uri" | "logo_uri" | "tos_uri" | "policy_uri" => text(MAX_URI_BYTES),
        "software_id" | "software_version" | "application_type" => text(MAX_SHORT_BYTES),
        "contacts" => match v {
            Value::Array(items)
                if items.len() <= MAX_CONTACTS
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| s.len() <= 2 * MAX_SHORT_BYTES)) =>
            {
                Ok(())
            }
            _ => Err(metadata_error(format!(
                "`contacts` must be at most {MAX_CONTACTS} strings of at most {} bytes",
                2 * MAX_SHORT_BYTES
            ))),
        },
        _ => Ok(()),
    }
}

/// The registration request checked and turned into the client to store.
pub fn parse_registration(body: &[u8]) -> Result<NewOAuthClient, OAuthError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| metadata_error(format!("the registration request is not JSON: {e}")))?;
    let Some(obj) = value.as_object() else {
        return Err(metadata_error(
            "the registration request must be a JSON object",
        ));
    };
    let redirect_uris = strings(obj, "redirect_uris")?.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new(
            OAuthErrorKind::InvalidRedirectUri,
            format!(
                "register 1 to {MAX_REDIRECT_URIS} redirect_uris (this server only does the authorization code flow)"
            ),
        ));
    }
    if redirect_uris.iter().any(|u| u.len() > MAX_URI_BYTES) {
        return Err(OAuthError::new(
            OAuthErrorKind::InvalidRedirectUri,
            format!("a redirect URI is at most {MAX_URI_BYTES} bytes"),
        ));
    }
    if let Some(why) = redirect_uris.iter().find_map(|u| redirect_uri::refusal(u)) {
        return Err(OAuthError::new(OAuthErrorKind::InvalidRedirectUri, why));
    }
    let method = match obj.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => "client_secret_basic".to_string(),
        Some(Value::String(m)) if AUTH_METHODS.contains(&m.as_str()) => m.clone(),
        Some(other) => {
            return Err(metadata_error(format!(
                "token_endpoint_auth_method {other} is not supported; use one of {}",
                AUTH_METHODS.join(", ")
            )));
        }
    };
    let grant_types =
        strings(obj, "grant_types")?.unwrap_or_else(|| vec!["authorization_code".into()]);
    if let Some(g) = grant_types
        .iter()
        .find(|g| !GRANT_TYPES.contains(&g.as_str()))
    {
        return Err(metadata_error(format!(
            "grant type `{g}` is not supported; use {}",
            GRANT_TYPES.join(" and ")
        )));
    }
    if !grant_types.iter().any(|g| g == "authorization_code") {
        return Err(metadata_error(
            "grant_types must include authorization_code",
        ));
    }
    let response_types = strings(obj, "response_types")?.unwrap_or_else(|| vec!["code".into()]);
    if response_types != ["code"] {
        return Err(metadata_error("response_types must be [\"code\"]"));
    }
    let name = match obj.get("client_name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(n)) => clean_name(n),
        Some(_) => return Err(metadata_error("client_name must be a string")),
    };
    let scope = match obj.get("scope") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            parse_scope(Some(s))
                .map_err(|e| metadata_error(e.description))?
                .join(" "),
        ),
        Some(_) => return Err(metadata_error("scope must be a string")),
    };
    let mut metadata = Map::new();
    for key in KEPT {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            check_field(key, v)?;
            metadata.insert(key.to_string(), v.clone());
        }
    }
    metadata.insert("grant_types".into(), json!(grant_types));
    metadata.insert("response_types".into(), json!(response_types));
    if let Some(s) = scope {
        metadata.insert("scope".into(), json!(s));
    }
    let stored = serde_json::to_vec(&metadata).map_or(usize::MAX, |v| v.len())
        + serde_json::to_vec(&redirect_uris).map_or(usize::MAX, |v| v.len());
    if stored > MAX_STORED_BYTES {
        return Err(metadata_error(format!(
            "the registration (redirect URIs and metadata) is larger than {MAX_STORED_BYTES} bytes"
        )));
    }
    Ok(NewOAuthClient {
        client_name: if name.is_empty() {
            "Unnamed client".into()
        } else {
            name
        },
        redirect_uris,
        token_endpoint_auth_method: method,
        secret_hash: None,
        metadata: Value::Object(metadata),
        bounds: Default::default(),
    })
}
