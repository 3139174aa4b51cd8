//! The semantic lane's embedder alone, in this process (no HTTP, no database): documents
//! embedded per second in the worker's batches, and how long one query's embedding takes.
//! Run by `--memories` when `XMEMO_EMBEDDING_MODEL` names a model folder, on the corpus's own
//! memory texts and queries.

use crate::measure::Latency;
use anyhow::{Context, Result};
use std::time::Instant;
use xmemo_embed::{EmbedderSpec, Purpose};

/// The embedding worker's batch (`service/semantic.rs`, `WORK_BATCH`).
const BATCH: usize = 64;

pub struct Speed {
    pub model: String,
    pub texts_per_s: f64,
    pub query: Latency,
}

pub async fn measure(model_dir: &str, texts: &[String], queries: &[String]) -> Result<Speed> {
    let spec = EmbedderSpec {
        model: Some(model_dir.to_string()),
        ..EmbedderSpec::default()
    };
    let embedder = xmemo_embed::open(&spec)
        .await
        .context("open the embedding model")?
        .context("no model")?;
    let started = Instant::now();
    for batch in texts.chunks(BATCH) {
        embedder.embed(batch, Purpose::Document).await?;
    }
    let texts_per_s = texts.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
    let mut took = Vec::with_capacity(queries.len());
    for q in queries {
        let one = std::slice::from_ref(q);
        let started = Instant::now();
        embedder.embed(one, Purpose::Query).await?;
        took.push(started.elapsed().as_micros() as u64);
    }
    Ok(Speed {
        model: embedder.model_id().to_string(),
        texts_per_s,
        query: Latency::from_micros(took),
    })
}
