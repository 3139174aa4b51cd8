//! Models run in this process, from a folder on disk (never downloaded by xmemo).

use crate::{EmbedError, EmbedResult, Embedder, Purpose, normalize};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Tokens of a text the encoder reads: a memory of 16 KiB is judged by its beginning, as
/// sentence-transformers itself truncates (at the model's own limit, 256 for MiniLM).
pub const MAX_TOKENS: usize = 256;
/// Texts encoded together.
const BATCH: usize = 16;

pub(crate) fn model_error(path: &Path, reason: impl Into<String>) -> EmbedError {
    EmbedError::Model {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

fn read_json(path: &Path) -> EmbedResult<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| model_error(path, e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| model_error(path, e.to_string()))
}

/// The model in `folder`: a blend of other folders (`config.json` says `xmemo-blend`), the
/// Universal Sentence Encoder (`config.json` says
/// `use-multilingual-v3`), a model2vec folder (`config.json` says `model2vec`, or its weights
/// are one `embeddings` matrix) or a sentence-transformers one of the BERT family.
pub fn open(folder: &Path) -> EmbedResult<Arc<dyn Embedder>> {
    let config = read_json(&folder.join("config.json"))?;
    let model_type = config["model_type"].as_str();
    if model_type == Some(crate::blend::MODEL_TYPE) {
        return Ok(Arc::new(crate::blend::Blend::load(folder, &config, open)?));
    }
    let weights = folder.join("model.safetensors");
    let bytes = std::fs::read(&weights).map_err(|e| model_error(&weights, e.to_string()))?;
    let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
        .map_err(|e| model_error(&weights, e.to_string()))?;
    let id = model_id(folder, &bytes)?;
    let is_static = model_type == Some("model2vec")
        || (tensors.len() == 1 && tensors.contains_key("embeddings"));
    if model_type == Some(crate::universal::MODEL_TYPE) {
        Ok(Arc::new(crate::universal::UniversalEncoder::load(
            folder, tensors, id,
        )?))
    } else if is_static {
        Ok(Arc::new(StaticModel::load(folder, tensors, id)?))
    } else {
        Ok(Arc::new(SentenceTransformer::load(
            folder, &config, tensors, id,
        )?))
    }
}

/// `local/<folder name>/<12 hex of the SHA-256 of its config, tokenizer and weights>`: the
/// same files give the same id on every node, another version of them another id.
fn model_id(folder: &Path, weights: &[u8]) -> EmbedResult<String> {
    let mut hash = Sha256::new();
    for name in ["config.json", "tokenizer.json"] {
        let path = folder.join(name);
        hash.update(std::fs::read(&path).map_err(|e| model_error(&path, e.to_string()))?);
    }
    hash.update(weights);
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    Ok(format!(
        "local/{name}/{}",
        &hex::encode(hash.finalize())[..12]
    ))
}

fn tokenizer(folder: &Path, pad: Option<u32>) -> EmbedResult<Tokenizer> {
    let path = folder.join("tokenizer.json");
    let mut tokenizer =
        Tokenizer::from_file(&path).map_err(|e| model_error(&path, e.to_string()))?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(|e| model_error(&path, e.to_string()))?;
    // A folder's tokenizer may pad every text to a fixed length (128 for MiniLM): 10× the
    // work for a short query. Pad a batch only to its longest text.
    tokenizer.with_padding(pad.map(|pad_id| PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_id,
        ..PaddingParams::default()
    }));
    Ok(tokenizer)
}

/// Runs the blocking `work` off the async runtime: a query's at once on the runtime's blocking
/// threads (someone waits for it), a document's on the background pool ([`background`]).
pub(crate) async fn blocking<T: Send + 'static>(
    purpose: Purpose,
    work: impl FnOnce() -> EmbedResult<T> + Send + 'static,
) -> EmbedResult<T> {
    let stopped =
        |e: &dyn std::fmt::Display| EmbedError::Compute(format!("embedding task stopped: {e}"));
    match (purpose, background()) {
        (Purpose::Document, Some(pool)) => {
            let (answer, answered) = tokio::sync::oneshot::channel();
            pool.spawn(move || {
                // The receiver is gone only when the caller stopped waiting.
                let _ = answer.send(work());
            });
            answered.await.map_err(|e| stopped(&e))?
        }
        _ => tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| stopped(&e))?,
    }
}

/// A thread per core (up to 4), shared by every local model, at the lowest priority the system
/// has (`SCHED_IDLE` on Linux): documents are embedded with the CPU that requests leave unused,
/// so the embedding worker never slows saves or recalls down; it catches up when they stop. A
/// rayon pool of its own, so candle's matrix products run on these threads too, not on the
/// global pool. `None` if the pool cannot be started (the runtime's blocking threads are used
/// instead).
fn background() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores.min(4))
            .thread_name(|_| "xmemo-embed-background".into())
            .start_handler(|_| {
                use thread_priority::unix::{
                    NormalThreadSchedulePolicy, ThreadSchedulePolicy,
                    set_thread_priority_and_policy, thread_native_id,
                };
                let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
                if let Err(e) = set_thread_priority_and_policy(
                    thread_native_id(),
                    thread_priority::ThreadPriority::Min,
                    idle,
                ) {
                    tracing::warn!(error = ?e, "the embedding thread keeps the normal priority");
                }
            })
            .build()
            .map_err(|e| tracing::warn!(error = %e, "no background embedding thread"))
            .ok()
    })
    .as_ref()
}

/// A sentence-transformers folder of the BERT family: `config.json`, `model.safetensors`,
/// `tokenizer.json`, and `1_Pooling/config.json` / `modules.json` for pooling and
/// normalisation.
pub struct SentenceTransformer {
    inner: Arc<Encoder>,
}

struct Encoder {
    id: String,
    model: BertModel,
    tokenizer: Tokenizer,
    dims: usize,
    /// Mean of the token vectors (else the first token's).
    mean_pooling: bool,
    query_prompt: String,
    document_prompt: String,
}

impl std::fmt::Debug for SentenceTransformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceTransformer")
            .field("id", &self.inner.id)
            .finish()
    }
}

impl SentenceTransformer {
    fn load(
        folder: &Path,
        config: &Value,
        tensors: std::collections::HashMap<String, Tensor>,
        id: String,
    ) -> EmbedResult<Self> {
        let config_path = folder.join("config.json");
        let bert: BertConfig = serde_json::from_value(config.clone())
            .map_err(|e| model_error(&config_path, format!("not a BERT-family config: {e}")))?;
        let dims = config["hidden_size"]
            .as_u64()
            .ok_or_else(|| model_error(&config_path, "no hidden_size"))?
            as usize;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let model = BertModel::load(vb, &bert).map_err(|e| model_error(folder, e.to_string()))?;
        let pooling = read_json(&folder.join("1_Pooling").join("config.json")).ok();
        let mean_pooling = pooling
            .as_ref()
            .and_then(|p| p["pooling_mode_cls_token"].as_bool())
            .is_none_or(|cls| !cls);
        let prompts =
            read_json(&folder.join("config_sentence_transformers.json")).unwrap_or_default();
        let prompt = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| prompts["prompts"][n].as_str())
                .unwrap_or("")
                .to_string()
        };
        let pad = config["pad_token_id"].as_u64().unwrap_or(0) as u32;
        Ok(Self {
            inner: Arc::new(Encoder {
                id,
                model,
                tokenizer: tokenizer(folder, Some(pad))?,
                dims,
                mean_pooling,
                query_prompt: prompt(&["query"]),
                document_prompt: prompt(&["document", "passage"]),
            }),
        })
    }
}

impl Encoder {
    fn encode(&self, texts: &[String], purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>> {
        let prompt = match purpose {
            Purpose::Query => &self.query_prompt,
            Purpose::Document => &self.document_prompt,
        };
        let compute = |e: candle_core::Error| EmbedError::Compute(e.to_string());
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let inputs: Vec<String> = batch.iter().map(|t| format!("{prompt}{t}")).collect();
            let encodings = self
                .tokenizer
                .encode_batch(inputs, true)
                .map_err(|e| EmbedError::Compute(e.to_string()))?;
            let ids: Vec<Tensor> = encodings
                .iter()
                .map(|e| Tensor::new(e.get_ids(), &Device::Cpu))
                .collect::<Result<_, _>>()
                .map_err(compute)?;
            let masks: Vec<Tensor> = encodings
                .iter()
                .map(|e| Tensor::new(e.get_attention_mask(), &Device::Cpu))
                .collect::<Result<_, _>>()
                .map_err(compute)?;
            let ids = Tensor::stack(&ids, 0).map_err(compute)?;
            let mask = Tensor::stack(&masks, 0).map_err(compute)?;
            let types = ids.zeros_like().map_err(compute)?;
            let hidden = self
                .model
                .forward(&ids, &types, Some(&mask))
                .map_err(compute)?;
            let pooled = if self.mean_pooling {
                let m = mask
                    .to_dtype(DType::F32)
                    .and_then(|m| m.unsqueeze(2))
                    .map_err(compute)?;
                let summed = hidden
                    .broadcast_mul(&m)
                    .and_then(|x| x.sum(1))
                    .map_err(compute)?;
                let counts = m.sum(1).map_err(compute)?;
                summed.broadcast_div(&counts).map_err(compute)?
            } else {
                hidden
                    .narrow(1, 0, 1)
                    .and_then(|x| x.squeeze(1))
                    .map_err(compute)?
            };
            for mut v in pooled.to_vec2::<f32>().map_err(compute)? {
                normalize(&mut v);
                out.push(v);
            }
        }
        Ok(out)
    }
}

#[async_trait::async_trait]
impl Embedder for SentenceTransformer {
    fn model_id(&self) -> &str {
        &self.inner.id
    }

    fn dimensions(&self) -> Option<usize> {
        Some(self.inner.dims)
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>> {
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        blocking(purpose, move || inner.encode(&texts, purpose)).await
    }
}

/// A model2vec folder: `model.safetensors` holds one `embeddings` matrix (a row per token),
/// a text is the mean of its tokens' rows.
pub struct StaticModel {
    inner: Arc<Table>,
}

struct Table {
    id: String,
    /// Half precision: the table is most of the model's memory, and a mean of a few rows loses
    /// nothing a cosine can see at 16 bits.
    rows: Vec<half::f16>,
    dims: usize,
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("id", &self.inner.id)
            .finish()
    }
}

impl StaticModel {
    fn load(
        folder: &Path,
        tensors: std::collections::HashMap<String, Tensor>,
        id: String,
    ) -> EmbedResult<Self> {
        let weights: PathBuf = folder.join("model.safetensors");
        let matrix = tensors
            .get("embeddings")
            .ok_or_else(|| model_error(&weights, "no `embeddings` tensor"))?;
        let (_, dims) = matrix
            .dims2()
            .map_err(|e| model_error(&weights, e.to_string()))?;
        let rows = matrix
            .to_dtype(DType::F16)
            .and_then(|m| m.flatten_all())
            .and_then(|m| m.to_vec1::<half::f16>())
            .map_err(|e| model_error(&weights, e.to_string()))?;
        Ok(Self {
            inner: Arc::new(Table {
                id,
                rows,
                dims,
                tokenizer: tokenizer(folder, None)?,
            }),
        })
    }
}

impl Table {
    fn encode(&self, texts: &[String]) -> EmbedResult<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|text| {
                // Only the ids are used: `encode_fast` skips the offsets `encode` works out.
                let encoding = self
                    .tokenizer
                    .encode_fast(text.as_str(), false)
                    .map_err(|e| EmbedError::Compute(e.to_string()))?;
                let mut v = vec![0.0f32; self.dims];
                let mut n = 0usize;
                for id in encoding.get_ids() {
                    let start = *id as usize * self.dims;
                    if let Some(row) = self.rows.get(start..start + self.dims) {
                        for (x, r) in v.iter_mut().zip(row) {
                            *x += r.to_f32();
                        }
                        n += 1;
                    }
                }
                if n > 0 {
                    for x in &mut v {
                        *x /= n as f32;
                    }
                }
                // Unit length whatever the folder's `normalize` says: the lane compares by dot
                // product.
                normalize(&mut v);
                Ok(v)
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Embedder for StaticModel {
    fn model_id(&self) -> &str {
        &self.inner.id
    }

    fn dimensions(&self) -> Option<usize> {
        Some(self.inner.dims)
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>> {
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        blocking(purpose, move || inner.encode(&texts)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn documents_are_embedded_at_idle_priority_and_queries_are_not() {
        use thread_priority::unix::{
            NormalThreadSchedulePolicy, ThreadSchedulePolicy, thread_schedule_policy,
        };
        let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
        let policy = || thread_schedule_policy().map_err(|e| EmbedError::Compute(format!("{e:?}")));
        let document = blocking(Purpose::Document, policy).await.expect("policy");
        assert_eq!(document, idle);
        let query = blocking(Purpose::Query, policy).await.expect("policy");
        assert_ne!(query, idle);
    }
}
