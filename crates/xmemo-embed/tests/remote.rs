//! The OpenAI-compatible client against a real HTTP socket (the fake endpoint of
//! `xmemo_testkit::embeddings`): what it shows of a failing endpoint, how much of an answer
//! it reads, how many requests one call makes, and when it learns the vectors' length
//! (issue #29 items 4, 5 and 6).

use std::time::{Duration, Instant};
use xmemo_embed::remote::{OpenAiEmbeddings, answer_cap};
use xmemo_embed::{EmbedError, Embedder, EndpointFailure, Purpose};
use xmemo_testkit::embeddings::{Answer, FakeEmbeddings};

const PASSWORD: &str = "s3cret-pw";
const BODY_SECRET: &str = "sk-body-s3cret";

fn with_password(fake: &FakeEmbeddings) -> String {
    format!("http://user:{PASSWORD}@{}/v1", fake.addr)
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text number {i}")).collect()
}

fn failure(e: &EmbedError) -> &EndpointFailure {
    match e {
        EmbedError::Endpoint { failure, .. } => failure,
        other => panic!("not an endpoint error: {other}"),
    }
}

#[tokio::test]
async fn a_failing_endpoint_is_described_without_its_password_or_its_answer() {
    let fake = FakeEmbeddings::start(Answer::Fail {
        status: 500,
        body: format!(
            r#"{{"error":{{"message":"upstream refused key {BODY_SECRET} for user:{PASSWORD}"}}}}"#
        ),
    });
    let client = OpenAiEmbeddings::new(
        &format!("{}?api-key={PASSWORD}", with_password(&fake)),
        "m",
        None,
        Duration::from_secs(5),
    )
    .expect("a valid URL");
    let err = client
        .embed(&texts(1), Purpose::Query)
        .await
        .expect_err("the endpoint fails");
    for shown in [err.to_string(), format!("{err:?}"), err.public_reason()] {
        assert!(
            !shown.contains(PASSWORD)
                && !shown.contains(BODY_SECRET)
                && !shown.contains("upstream"),
            "{shown}"
        );
    }
    assert_eq!(failure(&err), &EndpointFailure::Status(500));
    assert!(
        err.to_string().contains(&format!(
            "http://***@{}/v1/embeddings?api-key=***",
            fake.addr
        )),
        "{err}"
    );
    assert_eq!(
        err.public_reason(),
        "the embeddings endpoint answered HTTP 500"
    );
    // The credentials still reach the endpoint, as Basic authentication.
    let sent = fake.last_authorization().expect("an Authorization header");
    assert!(sent.starts_with("Basic "), "{sent}");
}

#[tokio::test]
async fn an_answer_is_read_up_to_its_cap_and_no_further() {
    for announced in [false, true] {
        let fake = FakeEmbeddings::start(Answer::Whitespace {
            bytes: 1 << 30,
            announced,
        });
        let client = OpenAiEmbeddings::new(&fake.base_url(), "m", None, Duration::from_secs(20))
            .expect("a valid URL");
        let started = Instant::now();
        let err = client
            .embed(&texts(1), Purpose::Query)
            .await
            .expect_err("an answer past the cap");
        let cap = answer_cap(1, None);
        assert_eq!(
            failure(&err),
            &EndpointFailure::TooLarge { cap },
            "announced: {announced}"
        );
        // What the client did not read stays in the socket buffers: the fake can write little
        // more than the cap before it must wait, and gives up when the client closes.
        let sent = fake.body_bytes_sent();
        assert!(
            sent < 64 << 20,
            "{sent} bytes sent for a cap of {cap} (announced: {announced})"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn one_call_is_one_request_however_the_endpoint_fails() {
    let fake = FakeEmbeddings::start(Answer::Fail {
        status: 503,
        body: "busy".into(),
    });
    let client = OpenAiEmbeddings::new(&fake.base_url(), "m", None, Duration::from_secs(5))
        .expect("a valid URL");
    let err = client
        .embed(&texts(1), Purpose::Query)
        .await
        .expect_err("the endpoint fails");
    assert!(err.transient(), "{err}");
    assert_eq!(fake.requests(), 1, "the client tried again by itself");

    fake.answer_with(Answer::Hang);
    let client = OpenAiEmbeddings::new(&fake.base_url(), "m", None, Duration::from_millis(500))
        .expect("a valid URL");
    let started = Instant::now();
    let err = client
        .embed(&texts(1), Purpose::Document)
        .await
        .expect_err("the endpoint hangs");
    assert_eq!(failure(&err), &EndpointFailure::TimedOut);
    assert_eq!(fake.requests(), 2, "the client tried again by itself");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_length_is_learned_from_the_first_answer_and_then_held() {
    let fake = FakeEmbeddings::start(Answer::Vectors { dims: 12 });
    let client = OpenAiEmbeddings::new(&fake.base_url(), "m", None, Duration::from_secs(5))
        .expect("a valid URL");
    assert_eq!(fake.requests(), 0, "made without contacting the endpoint");
    assert_eq!(client.dimensions(), None);
    let vectors = client
        .embed(&texts(40), Purpose::Document)
        .await
        .expect("vectors");
    assert_eq!(vectors.len(), 40);
    assert_eq!(fake.requests(), 2, "two batches");
    assert_eq!(client.dimensions(), Some(12));
    assert!(
        vectors
            .iter()
            .all(|v| v.len() == 12 && (v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4)
    );

    fake.answer_with(Answer::Vectors { dims: 13 });
    let err = client
        .embed(&texts(1), Purpose::Query)
        .await
        .expect_err("another length");
    assert_eq!(
        failure(&err),
        &EndpointFailure::WrongLength {
            expected: 12,
            got: 13
        }
    );
}

#[tokio::test]
async fn open_checks_the_endpoint_once_and_open_lazily_not_at_all() {
    let fake = FakeEmbeddings::start(Answer::Fail {
        status: 500,
        body: BODY_SECRET.into(),
    });
    let spec = xmemo_embed::EmbedderSpec {
        url: Some(with_password(&fake)),
        model: Some("m".into()),
        ..Default::default()
    };
    let lazy = xmemo_embed::open_lazily(&spec)
        .await
        .expect("nothing to fail yet")
        .expect("an embedder");
    assert_eq!(fake.requests(), 0);
    assert_eq!(lazy.dimensions(), None);
    let err = xmemo_embed::open(&spec).await.expect_err("the check fails");
    assert!(!err.to_string().contains(PASSWORD), "{err}");
    assert_eq!(fake.requests(), 1, "one try");

    fake.answer_with(Answer::Vectors { dims: 8 });
    let checked = xmemo_embed::open(&spec)
        .await
        .expect("the check passes")
        .expect("an embedder");
    assert_eq!(checked.dimensions(), Some(8));
}
