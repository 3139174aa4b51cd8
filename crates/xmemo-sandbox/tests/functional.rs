//! Functional behaviour: runtimes, stdin/JSON, exit codes, limits report.

mod common;

use common::{engine, py, script};
use xmemo_sandbox::{ExecutionLimits, Isolation, Mechanism, RunStatus, SandboxFile};

#[tokio::test]
async fn python_reads_json_stdin_and_returns_output_data() {
    let Some(engine) = engine().await else { return };
    let mut req = py(
        "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': args['a'] + args['b'], 'cwd': __import__('os').getcwd()}))\n",
    );
    req.stdin = br#"{"a": 2, "b": 40}"#.to_vec();
    let outcome = engine.run(req).await.expect("runs");
    println!("{}", serde_json::to_string_pretty(&outcome).unwrap());
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.isolation, Isolation::Bubblewrap);
    assert_eq!(outcome.runtime, "python3");
    let data = outcome.output_data.expect("json output");
    assert_eq!(data["sum"], 42);
    assert_eq!(data["cwd"], "/skill");
    assert!(outcome.execution_id.starts_with("exec_"));
    assert_eq!(outcome.execution_id.len(), "exec_".len() + 32);
}

#[tokio::test]
async fn shell_script_runs_with_bash() {
    let Some(engine) = engine().await else { return };
    let mut req = script(
        "run.sh",
        "read -r input\narr=(a b c)\necho \"bash ${BASH_VERSINFO[0]} ${#arr[@]} $input\"\n",
    );
    req.stdin = b"hello\n".to_vec();
    let outcome = engine.run(req).await.expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    assert_eq!(outcome.runtime, "bash");
    assert!(outcome.stdout.starts_with("bash "), "{outcome:?}");
    assert!(outcome.stdout.ends_with(" 3 hello\n"), "{outcome:?}");
    assert_eq!(outcome.output_data, None);
}

#[tokio::test]
async fn shebang_env_python3_runs_without_extension() {
    let Some(engine) = engine().await else { return };
    let outcome = engine
        .run(script(
            "tool",
            "#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps({'py': sys.version_info[0]}))\n",
        ))
        .await
        .expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    assert_eq!(outcome.runtime, "#!/usr/bin/env python3");
    assert_eq!(outcome.output_data, Some(serde_json::json!({"py": 3})));
}

#[tokio::test]
async fn shebang_bin_sh_runs_with_sh() {
    let Some(engine) = engine().await else { return };
    let outcome = engine
        .run(script(
            "tool.txt",
            "#!/bin/sh\n# $0 is the script; /proc/$$/exe is the interpreter\nreadlink /proc/$$/exe\n",
        ))
        .await
        .expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    assert_eq!(outcome.runtime, "#!/bin/sh");
    let interpreter = outcome.stdout.trim();
    assert!(
        interpreter.ends_with("/dash")
            || interpreter.ends_with("/sh")
            || interpreter.ends_with("/bash"),
        "{interpreter}"
    );
}

#[tokio::test]
async fn non_zero_exit_is_runtime_error_with_code() {
    let Some(engine) = engine().await else { return };
    let outcome = engine
        .run(py(
            "import sys\nprint('partial')\nsys.stderr.write('boom\\n')\nsys.exit(7)\n",
        ))
        .await
        .expect("runs");
    assert_eq!(outcome.status, RunStatus::RuntimeError, "{outcome:#?}");
    assert_eq!(outcome.exit_code, Some(7));
    assert_eq!(outcome.signal, None);
    assert_eq!(outcome.stdout, "partial\n");
    assert_eq!(outcome.stderr, "boom\n");
    let outcome = engine
        .run(py("raise ValueError('bad input')\n"))
        .await
        .expect("runs");
    assert_eq!(outcome.status, RunStatus::RuntimeError);
    assert_eq!(outcome.exit_code, Some(1));
    assert!(outcome.stderr.contains("ValueError: bad input"));
}

#[tokio::test]
async fn missing_shebang_interpreter_is_runtime_error_127() {
    let Some(engine) = engine().await else { return };
    let outcome = engine
        .run(script("tool", "#!/usr/bin/no-such-interpreter\nwhatever\n"))
        .await
        .expect("runs");
    assert_eq!(outcome.status, RunStatus::RuntimeError, "{outcome:#?}");
    assert_eq!(outcome.exit_code, Some(127));
    assert!(
        outcome.stderr.contains("no-such-interpreter"),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn threads_subprocesses_and_sibling_modules_work() {
    let Some(engine) = engine().await else { return };
    let mut req = py(
        "import json, subprocess, threading, concurrent.futures as cf\nfrom helpers.util import VALUE\n\
results = []\nthreads = [threading.Thread(target=lambda i=i: results.append(i)) for i in range(4)]\n\
[t.start() for t in threads]; [t.join() for t in threads]\n\
with cf.ThreadPoolExecutor(4) as pool:\n    squares = list(pool.map(lambda x: x * x, range(5)))\n\
out = subprocess.run(['sh', '-c', 'echo sub'], capture_output=True, text=True).stdout\n\
print(json.dumps({'threads': sorted(results), 'squares': squares, 'sub': out, 'value': VALUE}))\n",
    );
    req.files.push(SandboxFile {
        path: "helpers/__init__.py".into(),
        bytes: Vec::new(),
    });
    req.files.push(SandboxFile {
        path: "helpers/util.py".into(),
        bytes: b"VALUE = 'sibling'\n".to_vec(),
    });
    let outcome = engine.run(req).await.expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    assert_eq!(
        outcome.output_data,
        Some(
            serde_json::json!({"threads": [0, 1, 2, 3], "squares": [0, 1, 4, 9, 16], "sub": "sub\n", "value": "sibling"})
        )
    );
}

#[tokio::test]
async fn stderr_is_capped_and_output_data_needs_complete_json() {
    let Some(engine) = engine().await else { return };
    let mut req = py("import sys\nsys.stderr.write('e' * 5000)\nprint('[1, 2, 3]' + ' ' * 3000)\n");
    req.limits.max_output_bytes = 1024;
    let outcome = engine.run(req).await.expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    assert!(outcome.stderr_truncated && outcome.stdout_truncated);
    assert_eq!(outcome.stderr.len(), 1024);
    assert_eq!(outcome.stderr_total_bytes, 5000);
    assert_eq!(outcome.stdout_total_bytes, 3010);
    assert_eq!(
        outcome.output_data, None,
        "truncated stdout is never parsed"
    );
}

#[tokio::test]
async fn limits_report_names_a_mechanism_for_each_limit() {
    let Some(engine) = engine().await else { return };
    let mut req = py("import time\nt = time.time()\nwhile time.time() - t < 1.0:\n    pass\n");
    req.limits = ExecutionLimits {
        cpu_millicores: 250,
        ..ExecutionLimits::default()
    };
    let outcome = engine.run(req).await.expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:#?}");
    let limits = &outcome.limits;
    eprintln!("{}", serde_json::to_string_pretty(limits).unwrap());
    eprintln!("{:?}", outcome.resources);
    assert_eq!(limits.timeout_ms.enforced_by, Mechanism::Watchdog);
    assert_eq!(limits.max_output_bytes.enforced_by, Mechanism::OutputCap);
    assert_eq!(limits.syscall_filter, Mechanism::Seccomp);
    assert_ne!(limits.memory_bytes.enforced_by, Mechanism::Unenforced);
    assert_eq!(limits.cpu_millicores.value, 250);
    if matches!(
        limits.cpu_millicores.enforced_by,
        Mechanism::CgroupV1 | Mechanism::CgroupV2
    ) {
        // A 1 s busy loop under a quarter core gets about 250 ms of CPU.
        let cpu = outcome.resources.cpu_user_ms.unwrap_or(0)
            + outcome.resources.cpu_system_ms.unwrap_or(0);
        assert!(
            cpu > 0 && cpu < 600,
            "cpu {cpu} ms in {} ms",
            outcome.duration_ms
        );
    }
    let json = serde_json::to_value(&outcome).expect("serializes");
    for key in [
        "timeout_ms",
        "memory_bytes",
        "cpu_millicores",
        "max_processes",
        "max_output_bytes",
    ] {
        assert!(json["limits"][key]["enforced_by"].is_string(), "{key}");
    }
    assert_eq!(json["isolation"], "bubblewrap");
    assert_eq!(json["status"], "success");
}

/// `SandboxEngine::start` probes in the background (so a server can listen meanwhile): a run
/// asked for at once waits for the probe and runs isolated, instead of being refused.
#[tokio::test]
async fn a_run_asked_for_while_the_probe_runs_waits_for_it() {
    // Checks the machine first (fails loudly unless bubblewrap works here).
    let Some(_) = engine().await else { return };
    let engine = xmemo_sandbox::SandboxEngine::start(xmemo_sandbox::SandboxConfig::default());
    let outcome = engine
        .run(py("print('after the probe')\n"))
        .await
        .expect("runs");
    assert_eq!(outcome.status, RunStatus::Success, "{outcome:?}");
    assert_eq!(outcome.isolation, Isolation::Bubblewrap);
    assert_eq!(outcome.stdout, "after the probe\n");
    assert!(engine.state().available);
    assert!(engine.probed().await.available);
}
