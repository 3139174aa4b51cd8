//! Client ID Metadata Documents (MCP authorization 2026-07-28, draft-ietf-oauth-client-id-
//! metadata-document): a client whose `client_id` is an https URL publishes its metadata
//! there. We fetch it with the outbound fetcher (https only, no private or loopback address
//! unless the operator allowlists it, no redirect, 8 KiB and 5 s at most), check that its
//! `client_id` is exactly the URL and that its redirect URIs are ones we accept, and keep it
//! in a small in-memory cache (what its `Cache-Control` allows, 5 minutes by default, at
//! least a minute — `no-store` too — and an hour at most; 256 documents).
//!
//! Anyone can make the server fetch a document (a signed-out `/oauth/authorize` does), so
//! fetches are bounded: a refusal is cached for a minute like a document, the caller's
//! address pays for each cache miss from its own budget (the service), at most
//! [`MAX_CONCURRENT_FETCHES`] run at once (more are refused, not queued), every fetch shares
//! one HTTP client built once on the blocking pool, and a refusal never repeats what was
//! fetched or how the fetch went (that goes to the log): the server is not an oracle for
//! what answers at a URL.

use super::client::{Client, clean_name};
use super::error::{OAuthError, OAuthErrorKind};
use crate::fetch::{FetchConfig, FetchError, Fetcher, Limits};
use hashlink::LruCache;
use reqwest::Url;
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const MAX_DOCUMENT_BYTES: u64 = 8 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// Shortest time a document (whatever its `Cache-Control` says) or a refusal is kept.
pub const MIN_TTL: Duration = Duration::from_secs(60);
const MAX_TTL: Duration = Duration::from_secs(3600);
const MAX_ENTRIES: usize = 256;
/// Documents fetched at once; beyond it a request is refused (temporarily_unavailable).
pub const MAX_CONCURRENT_FETCHES: usize = 8;

/// Whether a `client_id` names a metadata document (an absolute http(s) URL) rather than a
/// registered client.
pub fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// Why `client_id` is not a usable document URL, or the URL.
pub fn document_url(client_id: &str, fetch: &FetchConfig) -> Result<Url, OAuthError> {
    let refuse = |why: &str| OAuthError::invalid_client(format!("client_id `{client_id}` {why}"));
    if client_id.len() > 2000 {
        return Err(refuse("is too long"));
    }
    let url = Url::parse(client_id).map_err(|_| refuse("is not a URL"))?;
    let allowed = match url.scheme() {
        "https" => true,
        // Plain http only where the operator allows it for every fetch (tests do).
        "http" => fetch.allow_http,
        _ => false,
    };
    if !allowed {
        return Err(refuse("must be an https URL"));
    }
    if url.as_str() != client_id {
        return Err(refuse(
            "is not in its normal form (as a URL parser writes it)",
        ));
    }
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("must have no fragment and no credentials"));
    }
    if url.path() == "/" || url.path().is_empty() {
        return Err(refuse("must have a path (e.g. /oauth/client.json)"));
    }
    Ok(url)
}

/// How long a document is kept: its `max-age` (5 minutes without one), between a minute and
/// an hour. `no-store` and `no-cache` are read as the minute: this cache is the server's own
/// defence against refetching on every request, not a shared HTTP cache.
fn ttl_of(cache_control: Option<&str>) -> Duration {
    let Some(cc) = cache_control else {
        return DEFAULT_TTL;
    };
    let mut ttl = DEFAULT_TTL;
    for directive in cc.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if directive == "no-store" || directive == "no-cache" {
            return MIN_TTL;
        }
        if let Some(secs) = directive
            .strip_prefix("max-age=")
            .and_then(|s| s.parse::<u64>().ok())
        {
            ttl = Duration::from_secs(secs);
        }
    }
    ttl.clamp(MIN_TTL, MAX_TTL)
}

/// The strings of a list field (other items are ignored), if the field is a list.
fn strings(obj: &serde_json::Map<String, Value>, key: &str) -> Option<Vec<String>> {
    obj.get(key).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

/// The client a document describes, after every check.
pub fn parse_document(client_id: &str, bytes: &[u8]) -> Result<Client, OAuthError> {
    let bad = |why: String| {
        OAuthError::invalid_client(format!("the client metadata document at {client_id} {why}"))
    };
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("is not JSON: {e}")))?;
    let Some(obj) = doc.as_object() else {
        return Err(bad("is not a JSON object".into()));
    };
    match obj.get("client_id").and_then(Value::as_str) {
        Some(id) if id == client_id => {}
        Some(other) => {
            return Err(bad(format!(
                "names another client_id (`{other}`); it must be exactly the document's URL"
            )));
        }
        None => return Err(bad("has no client_id".into())),
    }
    if obj.contains_key("client_secret") || obj.contains_key("client_secret_expires_at") {
        return Err(bad(
            "holds a client secret, which a public document must not".into(),
        ));
    }
    let method = obj
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .unwrap_or("none");
    if method != "none" {
        return Err(bad(format!(
            "asks for token_endpoint_auth_method `{method}`; this server accepts `none` for metadata-document clients"
        )));
    }
    let redirect_uris = strings(obj, "redirect_uris").unwrap_or_default();
    if redirect_uris.is_empty() {
        return Err(bad("lists no redirect_uris".into()));
    }
    if let Some(why) = redirect_uris
        .iter()
        .find_map(|u| super::redirect_uri::refusal(u))
    {
        return Err(bad(why));
    }
    let name = obj
        .get("client_name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bad("has no client_name".into()))?;
    let grant_types =
        strings(obj, "grant_types").unwrap_or_else(|| vec!["authorization_code".to_string()]);
    let scopes = match obj.get("scope") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            super::parse_scope(Some(s)).map_err(|e| bad(format!("declares {}", e.description)))?,
        ),
        Some(_) => return Err(bad("has a scope that is not a string".into())),
    };
    Ok(Client {
        client_id: client_id.to_string(),
        name: clean_name(name),
        redirect_uris,
        auth_method: "none".into(),
        secret_hash: None,
        grant_types,
        scopes,
        metadata_document: true,
    })
}

/// What the cache knows of a `client_id`.
#[derive(Debug, Clone)]
enum Known {
    Client(Client),
    /// The document could not be used (fetch failed or it failed a check).
    Refused,
}

/// Fetched documents and recent refusals, by client_id, with the shared fetcher.
#[derive(Debug)]
pub struct DocumentCache {
    entries: Mutex<LruCache<String, (Known, Instant)>>,
    fetches: tokio::sync::Semaphore,
    fetcher: Mutex<Option<Fetcher>>,
}

impl Default for DocumentCache {
    fn default() -> Self {
        Self {
            entries: Mutex::new(LruCache::new(MAX_ENTRIES)),
            fetches: tokio::sync::Semaphore::new(MAX_CONCURRENT_FETCHES),
            fetcher: Mutex::new(None),
        }
    }
}

/// The one refusal of a document, whatever went wrong: neither what was fetched nor how the
/// fetch went is repeated (the log has it).
fn unusable(client_id: &str) -> OAuthError {
    OAuthError::invalid_client(format!(
        "the client metadata document at {client_id} cannot be used (the server's log says why)"
    ))
}

impl DocumentCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, (Known, Instant)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client, or the cached refusal, when this `client_id` was resolved recently.
    pub fn cached(&self, client_id: &str) -> Option<Result<Client, OAuthError>> {
        let mut entries = self.lock();
        let (known, until) = entries.get(client_id)?.clone();
        if until <= Instant::now() {
            entries.remove(client_id);
            return None;
        }
        Some(match known {
            Known::Client(c) => Ok(c),
            Known::Refused => Err(unusable(client_id)),
        })
    }

    fn keep(&self, client_id: &str, known: Known, ttl: Duration) {
        self.lock()
            .insert(client_id.to_string(), (known, Instant::now() + ttl));
    }

    /// The fetcher for `config`: built once (on the blocking pool), rebuilt only if the
    /// configuration changed.
    async fn fetcher(&self, config: &FetchConfig) -> Result<Fetcher, FetchError> {
        let current = self
            .fetcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .filter(|f| f.config() == config);
        if let Some(f) = current {
            return Ok(f);
        }
        let built = Fetcher::prepare(config.clone()).await?;
        *self.fetcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(built.clone());
        Ok(built)
    }

    /// Fetches and checks the document of `client_id` (a cache miss the caller paid for);
    /// the outcome is cached either way.
    pub async fn fetch(&self, client_id: &str, fetch: &FetchConfig) -> Result<Client, OAuthError> {
        let url = document_url(client_id, fetch)?;
        let Ok(_slot) = self.fetches.try_acquire() else {
            return Err(OAuthError::new(
                OAuthErrorKind::TemporarilyUnavailable,
                "too many client metadata documents are being fetched right now; try again",
            ));
        };
        let fetcher = self.fetcher(fetch).await.map_err(|e| {
            tracing::error!(error = %e, "cannot build the client for metadata documents");
            OAuthError::new(
                OAuthErrorKind::ServerError,
                "client metadata documents cannot be fetched on this server",
            )
        })?;
        let limits = Limits {
            max_bytes: MAX_DOCUMENT_BYTES,
            timeout: FETCH_TIMEOUT,
            max_redirects: 0,
        };
        let outcome = match fetcher.fetch(url, limits).await {
            Ok(fetched) => parse_document(client_id, &fetched.bytes)
                .map(|client| (client, ttl_of(fetched.cache_control.as_deref()))),
            Err(e) => Err(OAuthError::invalid_client(format!("fetch failed: {e}"))),
        };
        match outcome {
            Ok((client, ttl)) => {
                self.keep(client_id, Known::Client(client.clone()), ttl);
                Ok(client)
            }
            Err(why) => {
                tracing::info!(client_id, reason = %why.description, "client metadata document refused");
                self.keep(client_id, Known::Refused, MIN_TTL);
                Err(unusable(client_id))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "https://app.example.com/oauth/client.json";

    fn doc(extra: serde_json::Value) -> Vec<u8> {
        let mut base = serde_json::json!({
            "client_id": ID,
            "client_name": "Example",
            "redirect_uris": ["http://127.0.0.1/callback"],
        });
        if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        serde_json::to_vec(&base).unwrap()
    }

    /// Issue #23 (7): fetches past the cap are refused at once, not queued, so signed-out
    /// requests cannot pile up outbound connections.
    #[tokio::test]
    async fn fetches_past_the_cap_are_refused_at_once() {
        // A host that accepts every connection and never answers: each fetch holds its slot.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let config = FetchConfig {
            allow_http: true,
            allow_private_cidrs: vec!["127.0.0.0/8".into()],
            ..Default::default()
        };
        let cache = std::sync::Arc::new(DocumentCache::default());
        let mut slow = Vec::new();
        for i in 0..MAX_CONCURRENT_FETCHES {
            let (cache, config) = (cache.clone(), config.clone());
            let id = format!("{base}/client-{i}.json");
            slow.push(tokio::spawn(async move { cache.fetch(&id, &config).await }));
        }
        for _ in 0..1_000 {
            if cache.fetches.available_permits() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(cache.fetches.available_permits(), 0, "every slot taken");
        let started = Instant::now();
        let refused = cache
            .fetch(&format!("{base}/one-more.json"), &config)
            .await
            .unwrap_err();
        assert_eq!(refused.kind, OAuthErrorKind::TemporarilyUnavailable);
        assert!(
            started.elapsed() < FETCH_TIMEOUT,
            "refused at once, not after waiting for a slot"
        );
        assert!(cache.cached(&format!("{base}/one-more.json")).is_none());
        for s in slow {
            s.abort();
        }
    }

    #[test]
    fn documents_must_name_themselves_and_stay_public() {
        let client = parse_document(ID, &doc(serde_json::json!({}))).unwrap();
        assert_eq!(client.name, "Example");
        assert!(client.metadata_document);
        let other = parse_document(
            ID,
            &doc(serde_json::json!({"client_id": "https://evil.example/c.json"})),
        );
        assert!(other.unwrap_err().description.contains("another client_id"));
        for extra in [
            serde_json::json!({"client_secret": "s"}),
            serde_json::json!({"token_endpoint_auth_method": "private_key_jwt"}),
            serde_json::json!({"redirect_uris": ["javascript:alert(1)"]}),
            serde_json::json!({"redirect_uris": []}),
            serde_json::json!({"client_name": ""}),
        ] {
            assert!(parse_document(ID, &doc(extra.clone())).is_err(), "{extra}");
        }
        assert!(parse_document(ID, b"[1]").is_err());
    }

    #[test]
    fn document_urls() {
        let fetch = FetchConfig::default();
        assert!(document_url(ID, &fetch).is_ok());
        for bad in [
            "http://app.example.com/c.json",
            "https://app.example.com",
            "https://app.example.com/",
            "https://u:p@app.example.com/c.json",
            "https://app.example.com/c.json#x",
            "https://APP.example.com/c.json",
        ] {
            assert!(document_url(bad, &fetch).is_err(), "{bad}");
        }
    }

    #[test]
    fn cache_lifetimes() {
        assert_eq!(ttl_of(None), DEFAULT_TTL);
        assert_eq!(
            ttl_of(Some("public, max-age=120")),
            Duration::from_secs(120)
        );
        assert_eq!(ttl_of(Some("max-age=999999")), MAX_TTL);
        assert_eq!(ttl_of(Some("max-age=0")), MIN_TTL);
        assert_eq!(ttl_of(Some("no-store")), MIN_TTL);
    }
}
