//! An OpenAI-compatible `/v1/embeddings` endpoint: Ollama, vLLM, llama.cpp's server, LM
//! Studio, OpenAI itself. Texts go in batches, each request within a timeout, a failed one
//! tried again after a pause; what still fails is a transient error the caller can wait out.

use crate::{EmbedError, EmbedResult, Embedder, Purpose, normalize};
use serde_json::{Value, json};
use std::time::Duration;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Texts per request.
pub const BATCH: usize = 32;
/// Tries per batch (the first and two more), waiting 0.5 s then 2 s in between.
const TRIES: usize = 3;
const PAUSES: [Duration; 2] = [Duration::from_millis(500), Duration::from_secs(2)];

#[derive(Debug)]
pub struct OpenAiEmbeddings {
    endpoint: String,
    model: String,
    api_key: Option<String>,
    http: reqwest::Client,
    id: String,
    dims: usize,
}

impl OpenAiEmbeddings {
    /// Checks the endpoint with one embedding (and so learns the vectors' length).
    pub async fn connect(
        base: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> EmbedResult<Self> {
        let base = base.trim_end_matches('/');
        let endpoint = if base.ends_with("/embeddings") {
            base.to_string()
        } else if base.ends_with("/v1") {
            format!("{base}/embeddings")
        } else {
            format!("{base}/v1/embeddings")
        };
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| EmbedError::Endpoint {
                url: endpoint.clone(),
                reason: e.to_string(),
            })?;
        let mut this = Self {
            id: format!("openai/{}/{model}", host_of(&endpoint)),
            endpoint,
            model: model.to_string(),
            api_key,
            http,
            dims: 0,
        };
        let probe = this.request(&["dimension probe".to_string()]).await?;
        this.dims = probe.first().map(Vec::len).unwrap_or(0);
        if this.dims == 0 {
            return Err(this.error("answered an empty vector"));
        }
        Ok(this)
    }

    fn error(&self, reason: impl Into<String>) -> EmbedError {
        EmbedError::Endpoint {
            url: self.endpoint.clone(),
            reason: reason.into(),
        }
    }

    /// One request for `texts`, tried up to [`TRIES`] times.
    async fn request(&self, texts: &[String]) -> EmbedResult<Vec<Vec<f32>>> {
        let mut last = String::new();
        for attempt in 0..TRIES {
            match self.once(texts).await {
                Ok(vectors) => return Ok(vectors),
                Err(reason) => {
                    tracing::debug!(endpoint = %self.endpoint, attempt, error = %reason, "embeddings request failed");
                    last = reason;
                }
            }
            if let Some(pause) = PAUSES.get(attempt) {
                tokio::time::sleep(*pause).await;
            }
        }
        Err(self.error(last))
    }

    async fn once(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("answered {status}: {}", summary(&body)));
        }
        let mut rows: Vec<(usize, Vec<f32>)> = body["data"]
            .as_array()
            .ok_or("no `data` list in the answer")?
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let index = item["index"].as_u64().map_or(i, |n| n as usize);
                let vector: Vec<f32> = item["embedding"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_f64)
                            .map(|x| x as f32)
                            .collect()
                    })
                    .unwrap_or_default();
                (index, vector)
            })
            .collect();
        if rows.len() != texts.len() {
            return Err(format!(
                "answered {} vectors for {} texts",
                rows.len(),
                texts.len()
            ));
        }
        rows.sort_by_key(|(i, _)| *i);
        Ok(rows
            .into_iter()
            .map(|(_, mut v)| {
                normalize(&mut v);
                v
            })
            .collect())
    }
}

/// The host (and port) of a URL, to name the vector space without the path or credentials.
fn host_of(url: &str) -> String {
    url.split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(url)
        .split(['/', '?'])
        .next()
        .unwrap_or("")
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_string()
}

/// A short description of an error answer, never its whole body.
fn summary(body: &Value) -> String {
    let text = body["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string());
    text.chars().take(200).collect()
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbeddings {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: &[String], _purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let vectors = self.request(batch).await?;
            if vectors.iter().any(|v| v.len() != self.dims) {
                return Err(self.error(format!(
                    "answered vectors of another length than {}",
                    self.dims
                )));
            }
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
}
