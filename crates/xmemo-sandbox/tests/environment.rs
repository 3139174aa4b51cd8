//! The server's environment is not visible inside the sandbox. Own test binary: it sets an
//! environment variable before any thread exists.

mod common;

use common::py;
use xmemo_sandbox::RunStatus;

const SECRET: &str = "xmemo-test-secret-4c1f9a";

#[test]
fn server_environment_is_not_visible() {
    // SAFETY: set before the runtime (or any other thread of this test binary) starts; this
    // binary holds only this test.
    unsafe {
        std::env::set_var("XMEMO_TEST_SECRET", SECRET);
        std::env::set_var(
            "DATABASE_URL",
            format!("postgres://admin:{SECRET}@db/xmemo"),
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let Some(engine) = common::engine().await else {
            return;
        };
        let outcome = engine
            .run(py(r#"
import json, os
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (pid, name), "rb") as f:
                    if b"xmemo-test-secret" in f.read():
                        found.append("%s/%s" % (pid, name))
            except OSError:
                pass
print(json.dumps({"env": dict(os.environ), "found": found}))
"#))
            .await
            .expect("runs");
        assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
        let data = outcome.output_data.expect("json");
        let env = data["env"].as_object().expect("env");
        assert!(!env.contains_key("XMEMO_TEST_SECRET"), "{env:?}");
        assert!(!env.contains_key("DATABASE_URL"), "{env:?}");
        assert!(!outcome.stdout.contains(SECRET));
        assert_eq!(data["found"], serde_json::json!([]), "{data}");
        let keys: Vec<&String> = env.keys().collect();
        // The engine's own variables are there, so the loop below checks a real environment.
        assert!(
            env.contains_key("PATH") && env.contains_key("XMEMO_EXECUTION_ID"),
            "{keys:?}"
        );
        for key in &keys {
            assert!(
                [
                    "PATH",
                    "HOME",
                    "TMPDIR",
                    "LANG",
                    "LC_ALL",
                    "PYTHONDONTWRITEBYTECODE",
                    "PYTHONNOUSERSITE",
                    "PYTHONUNBUFFERED",
                    "USER",
                    "LOGNAME",
                    "XMEMO_EXECUTION_ID",
                    "PWD",
                    "LC_CTYPE",
                ]
                .contains(&key.as_str()),
                "unexpected variable {key} in {keys:?}"
            );
        }
    });
}
