//! Issue #30, item 1: when the recommended embedder (the blend of the Universal Sentence
//! Encoder multilingual and potion-base-8M, which `scripts/models` puts in its default folder)
//! is there, `xmemo serve` turns the semantic lane on without a flag and
//! says so at start; `--embedding-model none` turns it off. The models are the real ones from
//! their PyPI packages (`XMEMO_TEST_DEFAULT_MODEL`, or the default cache folder); without it
//! this test fails unless `XMEMO_TEST_ALLOW_SKIP=1`.

use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xmemo_testkit::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_xmemo");

fn recommended_model() -> Option<PathBuf> {
    let folder = std::env::var_os("XMEMO_TEST_DEFAULT_MODEL")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/xmemo-models/recommended"))
        })?;
    if folder.join("config.json").is_file() {
        Some(folder)
    } else {
        xmemo_testkit::dependency_missing(
            "the recommended embedder (use-multilingual + potion-base-8m)",
            &format!(
                "{} holds no config.json (run scripts/models, or set XMEMO_TEST_DEFAULT_MODEL)",
                folder.display()
            ),
        );
        None
    }
}

async fn readyz(server: &ServerProcess) -> Value {
    reqwest::get(format!("{}/readyz", server.url))
        .await
        .expect("readyz")
        .json()
        .await
        .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_turns_the_lane_on_with_the_recommended_model_in_its_folder_and_none_turns_it_off() {
    let Some(model) = recommended_model() else {
        return;
    };
    // A models folder holding the recommended blend under its default name (a link: the
    // blend finds its parts beside its real folder).
    let models = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(&model, models.path().join("recommended")).expect("symlink");
    let models_dir = models.path().to_str().expect("utf-8 path");
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let data_arg = data.to_str().expect("utf-8 path");

    let on = ServerProcess::start(
        BIN,
        &["--data-dir", data_arg],
        &[("XMEMO_MODELS_DIR", models_dir)],
    );
    let said = on.output();
    assert!(
        said.contains("semantic recall on with the recommended model found in")
            && said.contains("--embedding-model none turns it off"),
        "{said}"
    );
    let ready = readyz(&on).await;
    assert_eq!(ready["semantic"]["state"], "ok", "{ready}");
    assert!(
        ready["semantic"]["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("blend/recommended/")),
        "{ready}"
    );
    // The lane really runs: a memory is embedded and found by meaning alone.
    let key = std::fs::read_to_string(data.join("admin.key")).expect("admin.key");
    let key = key.trim();
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/api/v1/memories", on.url))
        .bearer_auth(key)
        .json(&json!({"kind": "fact", "content": "The cat sleeps on the warm windowsill"}))
        .send()
        .await
        .expect("remember");
    assert_eq!(r.status().as_u16(), 201);
    // Chinese too: a memory about a cat and one about a budget, asked for a pet's nap in words
    // neither holds.
    for content in ["猫在温暖的窗台上睡觉", "季度预算审查在周五"] {
        let r = http
            .post(format!("{}/api/v1/memories", on.url))
            .bearer_auth(key)
            .json(&json!({"kind": "fact", "content": content, "project": "zh"}))
            .send()
            .await
            .expect("remember");
        assert_eq!(r.status().as_u16(), 201);
    }
    for (query, project, expected) in [
        (
            "kitten%20nap",
            None,
            "The cat sleeps on the warm windowsill",
        ),
        ("宠物打盹", Some("zh"), "猫在温暖的窗台上睡觉"),
    ] {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut url = format!("{}/api/v1/memories?query={query}", on.url);
            if let Some(project) = project {
                url.push_str(&format!("&project={project}"));
            }
            let found: Value = http
                .get(url)
                .bearer_auth(key)
                .send()
                .await
                .expect("recall")
                .json()
                .await
                .expect("json");
            let first = &found["data"]["memories"][0];
            if first["matched"] == json!(["meaning"]) {
                assert_eq!(first["content"], expected, "{found}");
                break;
            }
            assert!(Instant::now() < deadline, "never found by meaning: {found}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    drop(on);

    let off = ServerProcess::start(
        BIN,
        &["--data-dir", data_arg, "--embedding-model", "none"],
        &[("XMEMO_MODELS_DIR", models_dir)],
    );
    let ready = readyz(&off).await;
    assert!(ready["semantic"].is_null(), "{ready}");
    assert!(
        !off.output()
            .contains("semantic recall on with the recommended model"),
        "{}",
        off.output()
    );
}
