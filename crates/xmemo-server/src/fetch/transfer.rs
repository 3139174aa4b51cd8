//! The transfer: an HTTP client that follows no redirect itself, uses no proxy and resolves
//! through the guarded resolver; a loop that re-checks every redirect hop; a body streamed
//! with a running byte count; one deadline over all of it.

use super::policy::{AddressPolicy, GuardedResolver, check_target, ip_literal};
use super::{FetchConfig, FetchError};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// A downloaded archive.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    /// The URL that served the bytes (after redirects).
    pub final_url: String,
    /// Every URL requested, in order.
    pub hops: Vec<String>,
    /// Lowercase hex SHA-256 of `bytes`.
    pub sha256: String,
    /// The answer's `Cache-Control` header, when it had one (readable text only).
    pub cache_control: Option<String>,
}

/// Per-fetch bounds: bytes, one deadline over the whole fetch, redirects followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: u64,
    pub timeout: Duration,
    pub max_redirects: usize,
}

impl Limits {
    pub fn of(config: &FetchConfig) -> Self {
        Self {
            max_bytes: config.max_bytes,
            timeout: config.timeout,
            max_redirects: config.max_redirects,
        }
    }
}

/// The HTTP client of one [`FetchConfig`] with its address policy, built once and shared by
/// every fetch made under that configuration. Building it reads files (the configured extra
/// root certificates, the system's roots): [`Fetcher::prepare`] does that on the blocking
/// pool, never on an async worker.
#[derive(Debug, Clone)]
pub struct Fetcher {
    config: FetchConfig,
    policy: Arc<AddressPolicy>,
    client: reqwest::Client,
}

impl Fetcher {
    /// Builds the client now, on this thread (blocking file reads): for start-up or the
    /// blocking pool.
    pub fn new(config: FetchConfig) -> Result<Self, FetchError> {
        let policy = Arc::new(AddressPolicy::from_config(&config).map_err(FetchError::Config)?);
        let client = client(&config, policy.clone())?;
        Ok(Self {
            config,
            policy,
            client,
        })
    }

    /// [`Fetcher::new`] on the blocking pool.
    pub async fn prepare(config: FetchConfig) -> Result<Self, FetchError> {
        tokio::task::spawn_blocking(move || Self::new(config))
            .await
            .map_err(|e| FetchError::Config(format!("building the HTTP client: {e}")))?
    }

    pub fn config(&self) -> &FetchConfig {
        &self.config
    }

    /// Downloads `url` under this fetcher's rules, within `limits`.
    pub async fn fetch(&self, url: reqwest::Url, limits: Limits) -> Result<Fetched, FetchError> {
        let first = url.to_string();
        match tokio::time::timeout(limits.timeout, self.fetch_inner(url, limits)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout {
                url: first,
                seconds: limits.timeout.as_secs().max(1),
            }),
        }
    }

    async fn fetch_inner(
        &self,
        mut url: reqwest::Url,
        limits: Limits,
    ) -> Result<Fetched, FetchError> {
        let mut hops = Vec::new();
        loop {
            check_target(&url, &self.policy, &self.config)?;
            if let Some(domain) = url.host_str().filter(|h| ip_literal(h).is_none()) {
                // Pre-flight: a clear refusal before any connection (the resolver repeats it).
                self.policy
                    .resolve(domain)
                    .await
                    .map_err(|e| with_url(e, &url))?;
            }
            hops.push(url.to_string());
            let mut response = self
                .client
                .get(url.clone())
                .header(reqwest::header::ACCEPT_ENCODING, "identity")
                .timeout(limits.timeout)
                .send()
                .await
                .map_err(|e| transport_error(e, &url, limits.timeout))?;
            let status = response.status();
            if status.is_redirection() {
                if hops.len() > limits.max_redirects {
                    return Err(FetchError::TooManyRedirects {
                        url: hops[0].clone(),
                        limit: limits.max_redirects,
                    });
                }
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| FetchError::Upstream {
                        url: url.to_string(),
                        status: status.as_u16(),
                    })?;
                url = url.join(location).map_err(|e| FetchError::Refused {
                    url: url.to_string(),
                    reason: format!("invalid redirect target `{location}`: {e}"),
                })?;
                continue;
            }
            if !status.is_success() {
                let code = status.as_u16();
                let url = url.to_string();
                return Err(match code {
                    404 | 410 => FetchError::NotFound {
                        url,
                        what: "the archive".into(),
                        status: code,
                    },
                    401 | 403 | 408 | 429 => FetchError::Upstream { url, status: code },
                    400..=499 => FetchError::Rejected { url, status: code },
                    _ => FetchError::Upstream { url, status: code },
                });
            }
            let limit = limits.max_bytes;
            if response.content_length().is_some_and(|n| n > limit) {
                return Err(FetchError::TooLarge {
                    url: url.to_string(),
                    limit,
                });
            }
            let cache_control = response
                .headers()
                .get(reqwest::header::CACHE_CONTROL)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let initial = response
                .content_length()
                .unwrap_or(0)
                .min(limit)
                .min(1 << 20);
            let mut bytes = Vec::with_capacity(initial as usize);
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| transport_error(e, &url, limits.timeout))?
            {
                if bytes.len() as u64 + chunk.len() as u64 > limit {
                    return Err(FetchError::TooLarge {
                        url: url.to_string(),
                        limit,
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            let sha256 = hex::encode(Sha256::digest(&bytes));
            return Ok(Fetched {
                bytes,
                final_url: url.to_string(),
                hops,
                sha256,
                cache_control,
            });
        }
    }
}

fn client(config: &FetchConfig, policy: Arc<AddressPolicy>) -> Result<reqwest::Client, FetchError> {
    let mut roots = Vec::new();
    for path in &config.extra_root_certificates {
        let pem = std::fs::read(path).map_err(|e| {
            FetchError::Config(format!(
                "cannot read root certificate {}: {e}",
                path.display()
            ))
        })?;
        roots.push(reqwest::Certificate::from_pem(&pem).map_err(|e| {
            FetchError::Config(format!("root certificate {}: {e}", path.display()))
        })?);
    }
    let builder = if roots.is_empty() {
        reqwest::Client::builder()
    } else {
        reqwest::Client::builder().tls_certs_merge(roots)
    };
    builder
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .https_only(!config.allow_http)
        .timeout(config.timeout)
        .connect_timeout(config.timeout.min(Duration::from_secs(10)))
        .user_agent(concat!(
            "xmemo/",
            env!("CARGO_PKG_VERSION"),
            " (skill import)"
        ))
        .build()
        .map_err(|e| FetchError::Config(format!("cannot build the HTTP client: {e}")))
}

/// Downloads `url` under the hygiene rules of `config`, with a client built for this fetch
/// (on the blocking pool). Callers that fetch often keep a [`Fetcher`].
pub async fn fetch(config: &FetchConfig, url: reqwest::Url) -> Result<Fetched, FetchError> {
    Fetcher::prepare(config.clone())
        .await?
        .fetch(url, Limits::of(config))
        .await
}

/// Resolver errors carry the host; report the URL being fetched instead.
fn with_url(e: FetchError, url: &reqwest::Url) -> FetchError {
    match e {
        FetchError::Refused { reason, .. } => FetchError::Refused {
            url: url.to_string(),
            reason,
        },
        FetchError::Network { message, .. } => FetchError::Network {
            url: url.to_string(),
            message,
        },
        other => other,
    }
}

fn transport_error(e: reqwest::Error, url: &reqwest::Url, timeout: Duration) -> FetchError {
    // A refusal by the resolver (e.g. DNS rebinding between the pre-flight and the
    // connection) travels inside the client's error.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut last = String::new();
    while let Some(c) = cause {
        if let Some(fetch) = c.downcast_ref::<FetchError>() {
            return with_url(fetch.clone(), url);
        }
        last = c.to_string();
        cause = c.source();
    }
    if e.is_timeout() {
        return FetchError::Timeout {
            url: url.to_string(),
            seconds: timeout.as_secs().max(1),
        };
    }
    FetchError::Network {
        url: url.to_string(),
        message: last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client itself only connects to addresses the guarded resolver returned: a name
    /// that (re-)resolves to a refused address fails at connection time, with the refusal
    /// recognisable in the client's error (the DNS-rebinding defence).
    #[tokio::test]
    async fn the_client_resolver_refuses_private_addresses() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let config = FetchConfig {
            allow_http: true,
            ..FetchConfig::default()
        };
        let policy = Arc::new(AddressPolicy::from_config(&config).unwrap());
        let url = reqwest::Url::parse(&format!("http://localhost:{port}/x")).unwrap();
        let err = client(&config, policy)
            .unwrap()
            .get(url.clone())
            .send()
            .await
            .unwrap_err();
        match transport_error(err, &url, config.timeout) {
            FetchError::Refused { reason, .. } => assert!(reason.contains("loopback"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
        assert!(
            accepted.is_err(),
            "the client connected to a refused address"
        );

        // Allowlisted, the same request goes through to the listener.
        let config = FetchConfig {
            allow_http: true,
            allow_private_cidrs: vec!["127.0.0.0/8".into(), "::1/128".into()],
            ..FetchConfig::default()
        };
        let policy = Arc::new(AddressPolicy::from_config(&config).unwrap());
        let request = client(&config, policy).unwrap().get(url).send();
        let (accepted, _) = tokio::join!(
            tokio::time::timeout(Duration::from_secs(5), listener.accept()),
            tokio::time::timeout(Duration::from_millis(500), request)
        );
        assert!(accepted.is_ok(), "allowlisted address not reached");
    }
}
