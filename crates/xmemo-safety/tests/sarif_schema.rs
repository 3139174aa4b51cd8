//! The scanner's SARIF output against the official SARIF 2.1.0 JSON schema
//! (`tests/schema/sarif-schema-2.1.0.json`, see its README), validated with the `jsonschema`
//! crate (draft 4, formats checked). Broken logs are checked too, so the test can fail.

mod common;

use common::{own_corpus, read_folder, scan};
use serde_json::{Value, json};
use xmemo_safety::{Report, sarif};

fn validator() -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schema/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("schema parses");
    jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

fn errors_of(v: &jsonschema::Validator, log: &Value) -> Vec<String> {
    v.iter_errors(log)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn corpus_reports() -> Vec<(String, Report)> {
    let mut out = Vec::new();
    for side in ["hostile", "benign"] {
        let dir = own_corpus().join(side);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("corpus")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_dir())
            .collect();
        names.sort();
        for p in names {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((format!("{side}/{name}"), scan(&read_folder(&p))));
        }
    }
    out
}

#[test]
fn sarif_of_the_whole_corpus_is_valid_sarif_2_1_0() {
    let v = validator();
    let reports = corpus_reports();
    let log = sarif(&reports);
    let results = log["runs"][0]["results"].as_array().map_or(0, Vec::len);
    assert!(results > 100, "expected many results, got {results}");
    // For an external validator: XMEMO_SARIF_OUT=path writes this log.
    if let Some(out) = std::env::var_os("XMEMO_SARIF_OUT") {
        std::fs::write(&out, serde_json::to_vec_pretty(&log).expect("serialise"))
            .expect("write log");
    }
    let errors = errors_of(&v, &log);
    assert!(
        errors.is_empty(),
        "{} schema violations:\n{}",
        errors.len(),
        errors[..errors.len().min(40)].join("\n")
    );
    // The empty log and a path that needs escaping are valid too.
    assert!(errors_of(&v, &sarif(&[])).is_empty());
    let odd = sarif(&[("dir with spaces/ünï".to_string(), reports[0].1.clone())]);
    assert!(errors_of(&v, &odd).is_empty(), "{:?}", errors_of(&v, &odd));
}

#[test]
fn broken_logs_are_rejected() {
    let v = validator();
    let reports = corpus_reports();
    let good = sarif(&reports[..3]);
    assert!(errors_of(&v, &good).is_empty());
    let broken: [(&str, Value); 4] = [
        ("/version", json!("2.0.0")),
        ("/runs/0/tool/driver/unknownField", json!(1)),
        (
            "/runs/0/results/0/locations/0/physicalLocation/region/startLine",
            json!(0),
        ),
        ("/runs/0/results/0/level", json!("fatal")),
    ];
    for (pointer, value) in broken {
        let mut bad = good.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        let slot = bad.pointer_mut(parent).and_then(Value::as_object_mut);
        slot.expect("parent exists").insert(key.to_string(), value);
        assert!(!errors_of(&v, &bad).is_empty(), "{pointer} accepted");
    }
}
