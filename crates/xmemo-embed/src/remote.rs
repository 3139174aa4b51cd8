//! An OpenAI-compatible `/v1/embeddings` endpoint: Ollama, vLLM, llama.cpp's server, LM
//! Studio, OpenAI itself. Texts go in batches; each batch is one request, tried once within
//! the timeout, its answer read up to a cap derived from the batch (nothing past the cap is
//! read). Whether and when to try again is the caller's decision: a query cannot wait for
//! retries, a background worker can.
//!
//! Nothing the endpoint answers is repeated in an error, and the endpoint's address appears
//! in errors, logs and `Debug` only without its credentials ([`redact_url`]).

use crate::{EmbedError, EmbedResult, Embedder, EndpointFailure, Purpose, normalize};
use serde::Deserialize;
use std::sync::OnceLock;
use std::time::Duration;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The model asked for when the settings name none.
pub const DEFAULT_MODEL: &str = "text-embedding-3-small";
/// Texts per request.
pub const BATCH: usize = 32;
/// The longest vector accepted (the largest common models have 3,072 or 4,096): it bounds
/// the answer cap below.
pub const MAX_DIMENSIONS: usize = 8192;
/// Bytes one number of a vector may take in an answer: up to 21 characters as written by
/// the servers seen (`-0.006995407398790121`), a separator and a pretty-printer's indent.
const BYTES_PER_NUMBER: usize = 32;
/// Per text: the item's other fields (`"object":"embedding","index":31`…).
const BYTES_PER_ITEM: usize = 256;
/// Per answer: the envelope (`model`, `usage`…).
const BYTES_PER_ANSWER: usize = 64 * 1024;
/// Query parameters whose values are shown in errors; every other value is hidden, since
/// some endpoints take their key in the query string.
const SHOWN_PARAMETERS: [&str; 1] = ["api-version"];

/// The most bytes an answer for `texts` texts may take: the vectors written out at
/// [`BYTES_PER_NUMBER`] (at [`MAX_DIMENSIONS`] while the length is not known), plus slack.
/// For a query at 1,536 dimensions that is 112 KiB; for a batch of 32 at 8,192, 8.0 MiB.
pub fn answer_cap(texts: usize, dimensions: Option<usize>) -> usize {
    let dims = dimensions.unwrap_or(MAX_DIMENSIONS).min(MAX_DIMENSIONS);
    texts * (dims * BYTES_PER_NUMBER + BYTES_PER_ITEM) + BYTES_PER_ANSWER
}

pub struct OpenAiEmbeddings {
    /// Where requests go, credentials included (reqwest sends a URL's user and password as
    /// Basic authentication).
    endpoint: reqwest::Url,
    /// The endpoint as errors and logs show it.
    shown: String,
    model: String,
    api_key: Option<String>,
    http: reqwest::Client,
    timeout: Duration,
    id: String,
    /// Learned from the first answer; every later answer must have the same length.
    dims: OnceLock<usize>,
}

impl std::fmt::Debug for OpenAiEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbeddings")
            .field("endpoint", &self.shown)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("dims", &self.dims.get())
            .finish()
    }
}

impl OpenAiEmbeddings {
    /// The endpoint at `base` (`…/v1`, `…/v1/embeddings`, or a server root), not contacted
    /// yet: its vectors' length is learned from its first answer.
    pub fn new(
        base: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> EmbedResult<Self> {
        let bad_url = || EmbedError::Endpoint {
            url: redact_url(base),
            failure: EndpointFailure::BadUrl,
        };
        let mut endpoint = reqwest::Url::parse(base.trim()).map_err(|_| bad_url())?;
        if !matches!(endpoint.scheme(), "http" | "https") || endpoint.host_str().is_none() {
            return Err(bad_url());
        }
        // The path alone is completed (a query string, such as Azure's `api-version`, stays).
        let path = endpoint.path().trim_end_matches('/').to_string();
        let path = if path.ends_with("/embeddings") {
            path
        } else if path.ends_with("/v1") {
            format!("{path}/embeddings")
        } else {
            format!("{path}/v1/embeddings")
        };
        endpoint.set_path(&path);
        let shown = redact_url(endpoint.as_str());
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // An embeddings endpoint has no reason to redirect, and a redirect could carry
            // the request (and its key) somewhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| bad_url())?;
        Ok(Self {
            // From the URL as given, so the name of the space stays what it was.
            id: format!("openai/{}/{model}", host_of(base)),
            endpoint,
            shown,
            model: model.to_string(),
            api_key,
            http,
            timeout,
            dims: OnceLock::new(),
        })
    }

    /// [`OpenAiEmbeddings::new`], then [`OpenAiEmbeddings::check`].
    pub async fn connect(
        base: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> EmbedResult<Self> {
        let this = Self::new(base, model, api_key, timeout)?;
        this.check().await?;
        Ok(this)
    }

    /// Asks for one embedding (one try): the endpoint answers, and its vectors' length is
    /// known from now on.
    pub async fn check(&self) -> EmbedResult<usize> {
        self.embed(&["dimension probe".to_string()], Purpose::Query)
            .await?;
        self.dims
            .get()
            .copied()
            .ok_or_else(|| self.error(EndpointFailure::WrongCount { texts: 1, got: 0 }))
    }

    /// The endpoint's address as errors show it (no credentials).
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    fn error(&self, failure: EndpointFailure) -> EmbedError {
        EmbedError::Endpoint {
            url: self.shown.clone(),
            failure,
        }
    }

    /// One request for `texts`, once, within the timeout, the whole answer included.
    async fn once(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EndpointFailure> {
        let cap = answer_cap(texts.len(), self.dimensions());
        let exchange = async {
            let mut request = self
                .http
                .post(self.endpoint.clone())
                .json(&EmbeddingsRequest {
                    model: &self.model,
                    input: texts,
                });
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let mut response = request.send().await.map_err(|e| classify(&e))?;
            let status = response.status();
            if !status.is_success() {
                // The body is not read: it is not shown anywhere, and it may be of any size.
                return Err(EndpointFailure::Status(status.as_u16()));
            }
            if response
                .content_length()
                .is_some_and(|length| length > cap as u64)
            {
                return Err(EndpointFailure::TooLarge { cap });
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| classify(&e))? {
                if body.len() + chunk.len() > cap {
                    return Err(EndpointFailure::TooLarge { cap });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        };
        // reqwest's own timeout covers the body too; this one also holds when a chunk
        // arrives just in time, again and again.
        let body = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| EndpointFailure::TimedOut)??;
        vectors_of(&body, texts.len())
    }

    /// Checks that every vector has one length, the one of earlier answers.
    fn check_lengths(&self, vectors: &[Vec<f32>]) -> Result<(), EndpointFailure> {
        let Some(first) = vectors.first() else {
            return Ok(());
        };
        let len = first.len();
        if len == 0 {
            return Err(EndpointFailure::Empty);
        }
        if len > MAX_DIMENSIONS {
            return Err(EndpointFailure::TooManyDimensions {
                got: len,
                max: MAX_DIMENSIONS,
            });
        }
        let expected = *self.dims.get().unwrap_or(&len);
        if let Some(other) = vectors.iter().map(Vec::len).find(|&l| l != expected) {
            return Err(EndpointFailure::WrongLength {
                expected,
                got: other,
            });
        }
        // Two first answers racing: the loser is checked against the winner.
        let learned = *self.dims.get_or_init(|| len);
        if learned != len {
            return Err(EndpointFailure::WrongLength {
                expected: learned,
                got: len,
            });
        }
        Ok(())
    }
}

#[derive(serde::Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct EmbeddingsAnswer {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// The vectors of an answer to `texts` texts, in the texts' order, each of unit length.
fn vectors_of(body: &[u8], texts: usize) -> Result<Vec<Vec<f32>>, EndpointFailure> {
    let answer: EmbeddingsAnswer =
        serde_json::from_slice(body).map_err(|_| EndpointFailure::NotEmbeddings)?;
    if answer.data.len() != texts {
        return Err(EndpointFailure::WrongCount {
            texts,
            got: answer.data.len(),
        });
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts];
    for (position, item) in answer.data.into_iter().enumerate() {
        let at = item.index.unwrap_or(position);
        match slots.get_mut(at) {
            Some(slot @ None) => {
                let mut vector = item.embedding;
                normalize(&mut vector);
                *slot = Some(vector);
            }
            // An index out of range or given twice: the texts cannot be matched.
            _ => return Err(EndpointFailure::NotEmbeddings),
        }
    }
    slots
        .into_iter()
        .map(|slot| slot.ok_or(EndpointFailure::NotEmbeddings))
        .collect()
}

/// A reqwest error as a fixed description (its text names the URL, query string included).
fn classify(error: &reqwest::Error) -> EndpointFailure {
    if error.is_timeout() {
        EndpointFailure::TimedOut
    } else if error.is_connect() {
        EndpointFailure::Unreachable
    } else {
        EndpointFailure::Interrupted
    }
}

/// `url` as it may be shown: the user and password replaced by `***`, every query value but
/// the harmless ones (`api-version`) by `***`, no fragment. A string that is not a URL is
/// not shown at all (it might be the key itself, pasted in the wrong place).
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "(not a valid URL)".to_string();
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // A URL that cannot have credentials has none to hide.
        let _ = parsed.set_password(None);
        let _ = parsed.set_username("***");
    }
    parsed.set_fragment(None);
    if let Some(query) = parsed.query().map(redact_query) {
        parsed.set_query(Some(&query));
    }
    parsed.to_string()
}

fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _))
                if SHOWN_PARAMETERS
                    .iter()
                    .any(|shown| name.eq_ignore_ascii_case(shown)) =>
            {
                pair.to_string()
            }
            Some((name, _)) => format!("{name}=***"),
            None if pair.is_empty() => String::new(),
            None => "***".to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The host (and port) of a URL, to name the vector space without the path or credentials.
fn host_of(url: &str) -> String {
    url.split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(url)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_string()
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbeddings {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> Option<usize> {
        self.dims.get().copied()
    }

    async fn embed(&self, texts: &[String], _purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let vectors = self.once(batch).await.map_err(|f| self.error(f))?;
            self.check_lengths(&vectors).map_err(|f| self.error(f))?;
            out.extend(vectors);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_space_is_named_by_host_and_model_only() {
        assert_eq!(
            host_of("http://user:pw@127.0.0.1:11434/v1/embeddings"),
            "127.0.0.1:11434"
        );
        assert_eq!(host_of("https://api.openai.com/v1"), "api.openai.com");
    }

    #[test]
    fn shown_urls_carry_no_credentials() {
        assert_eq!(
            redact_url("http://user:s3cret@127.0.0.1:11434/v1/embeddings"),
            "http://***@127.0.0.1:11434/v1/embeddings"
        );
        assert_eq!(
            redact_url("https://tok3n@example.com/v1/embeddings"),
            "https://***@example.com/v1/embeddings"
        );
        assert_eq!(
            redact_url(
                "https://x.example/openai/embeddings?api-version=2024-02-01&api-key=s3cret&sk-s3cret#s3cret"
            ),
            "https://x.example/openai/embeddings?api-version=2024-02-01&api-key=***&***"
        );
        assert_eq!(redact_url("s3cret"), "(not a valid URL)");
        assert_eq!(
            redact_url("http://127.0.0.1:11434/v1"),
            "http://127.0.0.1:11434/v1"
        );
    }

    #[test]
    fn the_cap_follows_the_batch_and_the_length() {
        let query = answer_cap(1, Some(1536));
        assert!(query > 1536 * 21 && query < 128 * 1024, "{query}");
        let batch = answer_cap(BATCH, None);
        assert!(batch > BATCH * MAX_DIMENSIONS * 21, "{batch}");
        assert!(batch < 9 * 1024 * 1024, "{batch}");
        // A length past the maximum does not widen the cap.
        assert_eq!(answer_cap(2, Some(1 << 30)), answer_cap(2, None));
    }

    #[test]
    fn answers_are_put_in_the_texts_order_and_checked() {
        let body = br#"{"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}],"model":"m"}"#;
        let v = vectors_of(body, 2).expect("vectors");
        assert!((v[0][0] - 0.6).abs() < 1e-6 && (v[1][1] - 1.0).abs() < 1e-6);
        assert_eq!(
            vectors_of(body, 3),
            Err(EndpointFailure::WrongCount { texts: 3, got: 2 })
        );
        let twice = br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#;
        assert_eq!(vectors_of(twice, 2), Err(EndpointFailure::NotEmbeddings));
        assert_eq!(
            vectors_of(b"<html>s3cret</html>", 1),
            Err(EndpointFailure::NotEmbeddings)
        );
    }

    #[test]
    fn debug_shows_no_credentials() {
        let e = OpenAiEmbeddings::new(
            "http://user:s3cret@127.0.0.1:9/v1",
            "m",
            Some("sk-s3cret".into()),
            DEFAULT_TIMEOUT,
        )
        .expect("a valid URL");
        let shown = format!("{e:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        let azure = OpenAiEmbeddings::new(
            "https://x.example/openai/?api-version=1&api-key=s3cret",
            "m",
            None,
            DEFAULT_TIMEOUT,
        )
        .expect("a valid URL");
        assert_eq!(
            azure.shown_url(),
            "https://x.example/openai/v1/embeddings?api-version=1&api-key=***"
        );
        assert_eq!(azure.model_id(), "openai/x.example/m");
        assert!(
            matches!(
                OpenAiEmbeddings::new("ftp://h/v1", "m", None, DEFAULT_TIMEOUT),
                Err(EmbedError::Endpoint {
                    failure: EndpointFailure::BadUrl,
                    ..
                })
            ),
            "only http and https"
        );
    }
}
