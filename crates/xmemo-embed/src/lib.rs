//! The embedders of the semantic recall lane: text in, unit vectors out. Knows nothing of
//! skills, memories or storage.
//!
//! - [`local::SentenceTransformer`]: a sentence-transformers folder of the BERT family
//!   (all-MiniLM-L6-v2, multilingual-e5-small, bge-small, gte-small…) run in pure Rust with
//!   candle: the tokenizer, the encoder, the folder's pooling and normalisation;
//! - [`local::StaticModel`]: a model2vec folder (a vector per token, averaged): microseconds
//!   per text, for hosts without the CPU for an encoder;
//! - [`universal::UniversalEncoder`]: Google's Universal Sentence Encoder multilingual v3, a
//!   deep averaging network with n-gram convolutions (16 languages, no attention);
//! - [`blend::Blend`]: several local models as one (the recommended embedder: the Universal
//!   Sentence Encoder for every language, potion-base-8M beside it for Latin-script text);
//! - [`remote::OpenAiEmbeddings`]: any OpenAI-compatible `/v1/embeddings` endpoint (Ollama,
//!   vLLM, llama.cpp, LM Studio, OpenAI), batched, one try per batch within a timeout, its
//!   answers read up to a cap; whether and when to try again is the caller's choice.
//!
//! Every vector comes back with unit length, so a dot product is the cosine similarity.
//! [`Embedder::model_id`] names the vector space: vectors of two ids are never compared.
#![forbid(unsafe_code)]

pub mod blend;
pub mod local;
pub mod remote;
pub mod sentencepiece;
pub mod universal;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a text is embedded for: some models (e5, bge) want queries and documents written
/// differently (a prompt their folder names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Query,
    Document,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model folder cannot be used (missing file, unknown architecture, bad weights).
    #[error("embedding model {path}: {reason}")]
    Model { path: String, reason: String },
    /// The embeddings endpoint could not be reached or answered badly. `url` is the
    /// endpoint's address without its credentials ([`remote::redact_url`]); the failure is a
    /// fixed description that never carries the endpoint's bytes.
    #[error("embeddings endpoint {url}: {failure}")]
    Endpoint {
        url: String,
        failure: EndpointFailure,
    },
    #[error("embedding failed: {0}")]
    Compute(String),
}

/// How an embeddings endpoint failed, in words chosen here: what it answered is never
/// repeated (an error body may echo a key, and a status page is public).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointFailure {
    #[error("the URL cannot be used (an http or https URL is needed)")]
    BadUrl,
    #[error("could not connect")]
    Unreachable,
    #[error("timed out")]
    TimedOut,
    #[error("the connection broke off")]
    Interrupted,
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("answered more than {cap} bytes")]
    TooLarge { cap: usize },
    #[error("answered something other than an embeddings document")]
    NotEmbeddings,
    #[error("answered {got} vectors for {texts} texts")]
    WrongCount { texts: usize, got: usize },
    #[error("answered a vector of {got} dimensions, not {expected}")]
    WrongLength { expected: usize, got: usize },
    #[error("answered vectors of {got} dimensions, more than the {max} accepted")]
    TooManyDimensions { got: usize, max: usize },
    #[error("answered an empty vector")]
    Empty,
}

impl EmbedError {
    /// Whether trying again later may work (an endpoint down, overloaded or slow), as
    /// opposed to a model that will never load or an endpoint that refuses the key.
    pub fn transient(&self) -> bool {
        match self {
            EmbedError::Endpoint { failure, .. } => match failure {
                EndpointFailure::Unreachable
                | EndpointFailure::TimedOut
                | EndpointFailure::Interrupted => true,
                EndpointFailure::Status(code) => *code == 408 || *code == 429 || *code >= 500,
                _ => false,
            },
            EmbedError::Model { .. } | EmbedError::Compute(_) => false,
        }
    }

    /// What may be shown to anyone (a public status page): which kind of failure, without
    /// the endpoint's address, a model's path or a library's message.
    pub fn public_reason(&self) -> String {
        match self {
            EmbedError::Endpoint { failure, .. } => format!("the embeddings endpoint {failure}"),
            EmbedError::Model { .. } => "the embedding model cannot be loaded".into(),
            EmbedError::Compute(_) => "the embedding model failed".into(),
        }
    }
}

pub type EmbedResult<T> = Result<T, EmbedError>;

#[async_trait::async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Names the vector space (model and its files): stored beside every vector, so a change
    /// of model is seen and re-embeds.
    fn model_id(&self) -> &str;
    /// Length of every vector; `None` while it is not known yet (a remote endpoint opened
    /// by [`open_lazily`] tells it with its first answer).
    fn dimensions(&self) -> Option<usize>;
    /// One unit vector per text, in order.
    async fn embed(&self, texts: &[String], purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>>;
}

/// Which embedder to run (`xmemo serve --embedding-model` / `--embeddings-url`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedderSpec {
    /// A local model folder, or with `url` the model name the endpoint serves.
    pub model: Option<String>,
    /// An OpenAI-compatible base URL (`http://127.0.0.1:11434/v1`, `https://api.openai.com/v1`).
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer` to the endpoint (e.g. from `XMEMO_EMBEDDINGS_API_KEY`).
    pub api_key: Option<String>,
    /// Per request to the endpoint.
    pub timeout: Option<Duration>,
}

impl EmbedderSpec {
    /// Whether a semantic lane is configured at all.
    pub fn is_set(&self) -> bool {
        self.model.is_some() || self.url.is_some()
    }
}

/// The embedder a spec names, loaded and checked: a local model is read, an endpoint must
/// answer one embedding (one try, so a caller such as `xmemo admin doctor` knows at once);
/// `None` when the spec names none (the semantic lane is off).
pub async fn open(spec: &EmbedderSpec) -> EmbedResult<Option<Arc<dyn Embedder>>> {
    match (&spec.url, &spec.model) {
        (Some(url), model) => {
            let remote = remote_of(url, model.as_deref(), spec)?;
            remote.check().await?;
            Ok(Some(Arc::new(remote)))
        }
        (None, Some(folder)) => local_of(folder).await.map(Some),
        (None, None) => Ok(None),
    }
}

/// As [`open`], but an endpoint is not contacted: a server starts whether it answers or
/// not, and learns the vectors' length from its first answer ([`Embedder::dimensions`] is
/// `None` until then). A local model is still read now: a folder that cannot be used is a
/// mistake in the settings, not an outage.
pub async fn open_lazily(spec: &EmbedderSpec) -> EmbedResult<Option<Arc<dyn Embedder>>> {
    match (&spec.url, &spec.model) {
        (Some(url), model) => Ok(Some(Arc::new(remote_of(url, model.as_deref(), spec)?))),
        (None, Some(folder)) => local_of(folder).await.map(Some),
        (None, None) => Ok(None),
    }
}

fn remote_of(
    url: &str,
    model: Option<&str>,
    spec: &EmbedderSpec,
) -> EmbedResult<remote::OpenAiEmbeddings> {
    remote::OpenAiEmbeddings::new(
        url,
        model.unwrap_or(remote::DEFAULT_MODEL),
        spec.api_key.clone(),
        spec.timeout.unwrap_or(remote::DEFAULT_TIMEOUT),
    )
}

async fn local_of(folder: &str) -> EmbedResult<Arc<dyn Embedder>> {
    let folder = PathBuf::from(folder);
    tokio::task::spawn_blocking(move || local::open(&folder))
        .await
        .map_err(|e| EmbedError::Compute(format!("model loader stopped: {e}")))?
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_scaled_to_unit_length() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 3]);
    }

    #[tokio::test]
    async fn no_spec_no_embedder() {
        assert!(
            open(&EmbedderSpec::default())
                .await
                .expect("open")
                .is_none()
        );
        assert!(!EmbedderSpec::default().is_set());
        assert!(
            open_lazily(&EmbedderSpec::default())
                .await
                .expect("open")
                .is_none()
        );
    }

    #[test]
    fn only_outages_are_transient() {
        let endpoint = |failure| EmbedError::Endpoint {
            url: "http://127.0.0.1:1/v1/embeddings".into(),
            failure,
        };
        assert!(endpoint(EndpointFailure::TimedOut).transient());
        assert!(endpoint(EndpointFailure::Status(503)).transient());
        assert!(endpoint(EndpointFailure::Status(429)).transient());
        assert!(!endpoint(EndpointFailure::Status(401)).transient());
        assert!(!endpoint(EndpointFailure::TooLarge { cap: 1 }).transient());
        assert_eq!(
            endpoint(EndpointFailure::Status(500)).public_reason(),
            "the embeddings endpoint answered HTTP 500"
        );
    }
}
