//! The embedders of the semantic recall lane: text in, unit vectors out. Knows nothing of
//! skills, memories or storage.
//!
//! - [`local::SentenceTransformer`]: a sentence-transformers folder of the BERT family
//!   (all-MiniLM-L6-v2, multilingual-e5-small, bge-small, gte-small…) run in pure Rust with
//!   candle: the tokenizer, the encoder, the folder's pooling and normalisation;
//! - [`local::StaticModel`]: a model2vec folder (a vector per token, averaged): microseconds
//!   per text, for hosts without the CPU for an encoder;
//! - [`remote::OpenAiEmbeddings`]: any OpenAI-compatible `/v1/embeddings` endpoint (Ollama,
//!   vLLM, llama.cpp, LM Studio, OpenAI), batched, with a timeout and retries.
//!
//! Every vector comes back with unit length, so a dot product is the cosine similarity.
//! [`Embedder::model_id`] names the vector space: vectors of two ids are never compared.
#![forbid(unsafe_code)]

pub mod local;
pub mod remote;

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
    /// The embeddings endpoint could not be reached or answered badly (after its retries).
    #[error("embeddings endpoint {url}: {reason}")]
    Endpoint { url: String, reason: String },
    #[error("embedding failed: {0}")]
    Compute(String),
}

impl EmbedError {
    /// Whether trying again later may work (an endpoint down, a timeout), as opposed to a
    /// model that will never load.
    pub fn transient(&self) -> bool {
        matches!(self, EmbedError::Endpoint { .. })
    }
}

pub type EmbedResult<T> = Result<T, EmbedError>;

#[async_trait::async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Names the vector space (model and its files): stored beside every vector, so a change
    /// of model is seen and re-embeds.
    fn model_id(&self) -> &str;
    /// Length of every vector.
    fn dimensions(&self) -> usize;
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

/// The embedder a spec names, loaded (a local model is read and checked now); `None` when
/// the spec names none (the semantic lane is off).
pub async fn open(spec: &EmbedderSpec) -> EmbedResult<Option<Arc<dyn Embedder>>> {
    match (&spec.url, &spec.model) {
        (Some(url), model) => {
            let model = model
                .clone()
                .unwrap_or_else(|| "text-embedding-3-small".into());
            let remote = remote::OpenAiEmbeddings::connect(
                url,
                &model,
                spec.api_key.clone(),
                spec.timeout.unwrap_or(remote::DEFAULT_TIMEOUT),
            )
            .await?;
            Ok(Some(Arc::new(remote)))
        }
        (None, Some(folder)) => {
            let folder = PathBuf::from(folder);
            let model = tokio::task::spawn_blocking(move || local::open(&folder))
                .await
                .map_err(|e| EmbedError::Compute(format!("model loader stopped: {e}")))??;
            Ok(Some(model))
        }
        (None, None) => Ok(None),
    }
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
    }
}
