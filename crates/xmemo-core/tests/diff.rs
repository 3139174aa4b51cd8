//! Revision diffs: word-level body and text components, component classes, binary by hash,
//! metadata by key, and the deadline that keeps large inputs from hanging a request.

use serde_json::json;
use std::cell::Cell;
use std::time::{Duration, Instant};
use xmemo_core::diff::{
    Clock, MetadataChangeKind, TextDiff, TextDiffStatus, WordOpKind, diff_revisions,
    diff_revisions_with_clock, word_diff,
};
use xmemo_core::{ComponentInput, ComponentType, RevisionContent};

/// For the tests about what a diff says rather than when it stops: an hour, beyond any stall of a
/// loaded machine, so the deadline never decides their outcome.
const BUDGET: Duration = Duration::from_secs(3600);

fn component(path: &str, t: ComponentType, bytes: &[u8]) -> ComponentInput {
    ComponentInput {
        logical_path: path.into(),
        component_type: t,
        content: bytes.to_vec(),
    }
}

fn base() -> RevisionContent {
    let mut metadata = serde_json::Map::new();
    metadata.insert("license".into(), json!("MIT"));
    metadata.insert("metadata".into(), json!({"team": "ops", "version": 1}));
    metadata.insert("allowed-tools".into(), json!("Bash Read"));
    RevisionContent {
        name: "Deploy".into(),
        description: "How we deploy".into(),
        instruction_body: "Run the check script, then deploy to staging.\n".into(),
        metadata,
        components: vec![
            component("scripts/check.py", ComponentType::Script, b"print('ok')\n"),
            component(
                "references/a.md",
                ComponentType::Reference,
                b"alpha beta gamma\n",
            ),
            component(
                "assets/logo.png",
                ComponentType::Artifact,
                &[0x89, 0xff, 0x00, 0x01],
            ),
            component("LICENSE.txt", ComponentType::Document, b"Apache"),
            component("old.md", ComponentType::Document, b"to be removed"),
        ],
    }
}

fn rebuild(d: &TextDiff) -> (String, String) {
    let side = |skip: WordOpKind| -> String {
        d.ops
            .iter()
            .filter(|o| o.op != skip)
            .map(|o| o.text.as_str())
            .collect()
    };
    (side(WordOpKind::Insert), side(WordOpKind::Delete))
}

#[test]
fn identical_revisions() {
    let d = diff_revisions(&base(), &base(), BUDGET);
    assert!(d.identical);
    assert!(!d.timed_out);
    assert!(!d.instruction_body.changed);
    assert_eq!(d.components.unchanged.len(), 5);
    assert!(d.metadata.is_empty());
    assert!(d.name.is_none() && d.description.is_none());
}

#[test]
fn word_level_body_diff() {
    let mut new = base();
    new.instruction_body = "Run the lint script, then deploy to production.\n".into();
    let d = diff_revisions(&base(), &new, BUDGET);
    assert!(!d.identical);
    let body = &d.instruction_body;
    assert!(body.changed);
    let deleted: Vec<&str> = body
        .ops
        .iter()
        .filter(|o| o.op == WordOpKind::Delete)
        .map(|o| o.text.as_str())
        .collect();
    let inserted: Vec<&str> = body
        .ops
        .iter()
        .filter(|o| o.op == WordOpKind::Insert)
        .map(|o| o.text.as_str())
        .collect();
    assert_eq!(deleted, ["check", "staging."]);
    assert_eq!(inserted, ["lint", "production."]);
    assert_eq!((body.words_deleted, body.words_inserted), (2, 2));
    assert_eq!(d.summary.body_words_inserted, 2);
    let (old, newer) = rebuild(body);
    assert_eq!(old, base().instruction_body);
    assert_eq!(newer, new.instruction_body);
    // ops alternate: equal runs are merged
    for pair in body.ops.windows(2) {
        assert_ne!(pair[0].op, pair[1].op);
    }
}

#[test]
fn component_classes() {
    let mut new = base();
    new.components.retain(|c| c.logical_path != "old.md");
    new.components.push(component(
        "examples/new.md",
        ComponentType::Example,
        b"fresh",
    ));
    for c in &mut new.components {
        match c.logical_path.as_str() {
            "references/a.md" => c.content = b"alpha BETA gamma\n".to_vec(),
            "assets/logo.png" => c.content = vec![0x89, 0xff, 0x00, 0x02, 0x03],
            "LICENSE.txt" => c.component_type = ComponentType::Reference,
            _ => {}
        }
    }
    let d = diff_revisions(&base(), &new, BUDGET);
    let paths = |v: &Vec<xmemo_core::diff::ComponentSummary>| -> Vec<String> {
        v.iter().map(|c| c.logical_path.clone()).collect()
    };
    assert_eq!(paths(&d.components.added), ["examples/new.md"]);
    assert_eq!(paths(&d.components.removed), ["old.md"]);
    assert_eq!(paths(&d.components.unchanged), ["scripts/check.py"]);
    let modified: Vec<&str> = d
        .components
        .modified
        .iter()
        .map(|c| c.logical_path.as_str())
        .collect();
    assert_eq!(
        modified,
        ["LICENSE.txt", "assets/logo.png", "references/a.md"]
    );

    let license = &d.components.modified[0];
    assert!(license.type_changed && !license.content_changed);
    assert!(license.text_diff.is_none());

    let logo = &d.components.modified[1];
    assert!(logo.content_changed);
    assert!(
        logo.text_diff.is_none(),
        "binary components are compared by hash"
    );
    assert!(!logo.new.is_text);
    assert_ne!(logo.old.content_hash, logo.new.content_hash);
    assert_eq!((logo.old.size, logo.new.size), (4, 5));

    let reference = &d.components.modified[2];
    let td = reference.text_diff.as_ref().unwrap();
    assert_eq!((td.words_deleted, td.words_inserted), (1, 1));
    assert!(
        td.ops
            .iter()
            .any(|o| o.op == WordOpKind::Insert && o.text == "BETA")
    );

    assert_eq!(d.summary.components_added, 1);
    assert_eq!(d.summary.components_removed, 1);
    assert_eq!(d.summary.components_modified, 3);
    assert_eq!(d.summary.components_unchanged, 1);
}

#[test]
fn metadata_by_key() {
    let mut new = base();
    new.metadata.remove("allowed-tools");
    new.metadata.insert("license".into(), json!("Apache-2.0"));
    new.metadata
        .insert("compatibility".into(), json!("python>=3.11"));
    new.metadata.insert(
        "metadata".into(),
        json!({"team": "ops", "version": 2, "a/b~c": true}),
    );
    let d = diff_revisions(&base(), &new, BUDGET);
    let changes: Vec<(&str, MetadataChangeKind)> = d
        .metadata
        .iter()
        .map(|c| (c.key.as_str(), c.change))
        .collect();
    assert_eq!(
        changes,
        [
            ("/allowed-tools", MetadataChangeKind::Removed),
            ("/compatibility", MetadataChangeKind::Added),
            ("/license", MetadataChangeKind::Changed),
            ("/metadata/a~1b~0c", MetadataChangeKind::Added),
            ("/metadata/version", MetadataChangeKind::Changed),
        ]
    );
    let license = &d.metadata[2];
    assert_eq!(license.old, Some(json!("MIT")));
    assert_eq!(license.new, Some(json!("Apache-2.0")));
    assert_eq!(d.summary.metadata_changes, 5);
}

#[test]
fn name_and_description_changes() {
    let mut new = base();
    new.name = "Deploy v2".into();
    new.description = "How we deploy now".into();
    let d = diff_revisions(&base(), &new, BUDGET);
    assert_eq!(d.name.as_ref().unwrap().old, "Deploy");
    assert_eq!(d.name.as_ref().unwrap().new, "Deploy v2");
    assert_eq!(d.description.as_ref().unwrap().new, "How we deploy now");
    assert!(!d.identical);
}

#[test]
fn json_shape() {
    let mut new = base();
    new.instruction_body.push_str("Then verify.\n");
    let d = diff_revisions(&base(), &new, BUDGET);
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["instruction_body"]["ops"][0]["op"], "equal");
    assert_eq!(v["instruction_body"]["ops"][1]["op"], "insert");
    assert_eq!(v["instruction_body"]["ops"][1]["text"], "Then verify.\n");
    assert_eq!(v["components"]["unchanged"][0]["type"], "document");
    assert_eq!(v["identical"], false);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["complete"], true);
    assert_eq!(v["not_compared"], json!([]));
    assert_eq!(v["instruction_body"]["status"], "complete");
    // and back
    let back: xmemo_core::diff::RevisionDiff = serde_json::from_value(v).unwrap();
    assert_eq!(back, d);
}

fn random_words(n: usize, seed: u64) -> String {
    let mut x = seed | 1;
    let mut s = String::with_capacity(n * 6);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 1 + (x % 8) as usize;
        for k in 0..len {
            s.push((b'a' + ((x >> (k * 5)) % 26) as u8) as char);
        }
        s.push(if i % 12 == 11 { '\n' } else { ' ' });
    }
    s
}

/// A budget that was spent before the diff began, as `similar` sees it (it reads the real
/// time), while the diff's own first check still finds budget left: the clock starts a minute
/// ago and moves one second per reading, against a budget of 1.5 s. So the first changed text
/// is compared under a deadline `similar` must honour at once, and every later text finds the
/// budget spent, whatever the machine's speed.
fn a_deadline_passed_before_the_diff() -> (SteppingClock, Duration) {
    let start = Instant::now()
        .checked_sub(Duration::from_secs(60))
        .expect("the monotonic clock has run for a minute");
    let clock = SteppingClock {
        now: Cell::new(start),
        step: Duration::from_secs(1),
    };
    (clock, Duration::from_millis(1500))
}

/// At most a shared prefix, the old rest deleted, the new rest inserted, a shared suffix: what
/// a word diff stopped at once can say. The minimal diff of two unrelated texts of random
/// words has hundreds of thousands of ops.
const STOPPED_AT_ONCE_MAX_OPS: usize = 4;

#[test]
fn a_deadline_reached_during_a_large_word_diff_gives_a_coarse_exact_diff() {
    // Two unrelated texts of 200,000 words each (an unbounded diff of them takes seconds and
    // ~600,000 ops).
    let mut old = base();
    let mut new = base();
    old.instruction_body = random_words(200_000, 1);
    new.instruction_body = random_words(200_000, 2);
    let (clock, budget) = a_deadline_passed_before_the_diff();
    let d = diff_revisions_with_clock(&old, &new, budget, &clock);
    let body = &d.instruction_body;
    assert_eq!(body.status, TextDiffStatus::Coarse);
    assert!(body.changed && body.timed_out);
    assert!(
        body.ops.len() <= STOPPED_AT_ONCE_MAX_OPS,
        "the deadline did not stop the comparison: {} ops",
        body.ops.len()
    );
    let (o, n) = rebuild(body);
    assert_eq!(o, old.instruction_body, "a coarse diff is still exact");
    assert_eq!(n, new.instruction_body);
    assert!(d.timed_out);
    assert!(d.complete, "the body was compared, coarsely");
}

#[test]
fn revision_diff_reports_the_deadline() {
    let mut old = base();
    let mut new = base();
    old.instruction_body = random_words(150_000, 3);
    new.instruction_body = random_words(150_000, 4);
    old.components.push(component(
        "references/big.md",
        ComponentType::Reference,
        random_words(20_000, 5).as_bytes(),
    ));
    new.components.push(component(
        "references/big.md",
        ComponentType::Reference,
        random_words(20_000, 6).as_bytes(),
    ));
    let (clock, budget) = a_deadline_passed_before_the_diff();
    let d = diff_revisions_with_clock(&old, &new, budget, &clock);
    // The body, under way at the deadline, is finished coarser; the component, reached after
    // it, is not compared; the result says both.
    assert!(d.timed_out);
    assert_eq!(d.instruction_body.status, TextDiffStatus::Coarse);
    assert!(d.instruction_body.ops.len() <= STOPPED_AT_ONCE_MAX_OPS);
    let (o, n) = rebuild(&d.instruction_body);
    assert_eq!((o, n), (old.instruction_body, new.instruction_body));
    let big = d
        .components
        .modified
        .iter()
        .find(|c| c.logical_path == "references/big.md")
        .and_then(|c| c.text_diff.as_ref())
        .expect("big.md is a modified text component");
    assert_eq!(big.status, TextDiffStatus::NotCompared);
    assert!(!d.complete);
    assert_eq!(d.not_compared, ["components/references/big.md"]);
    assert_eq!(d.summary.texts_not_compared, 1);
}

#[test]
fn small_edits_in_large_texts_stay_precise() {
    let old = random_words(50_000, 7);
    let mut new = old.clone();
    let at = old[old.len() / 2..].find(' ').unwrap() + old.len() / 2 + 1;
    new.insert_str(at, "INSERTED ");
    let d = word_diff(&old, &new, BUDGET);
    assert!(!d.timed_out);
    assert_eq!(d.words_inserted, 1);
    assert_eq!(d.words_deleted, 0);
    assert_eq!(d.ops.len(), 3);
}

/// A clock that moves `step` further on every reading, so a budget runs out after a known
/// number of deadline checks whatever the machine's speed.
struct SteppingClock {
    now: Cell<Instant>,
    step: Duration,
}

impl Clock for SteppingClock {
    fn now(&self) -> Instant {
        let t = self.now.get();
        self.now.set(t + self.step);
        t
    }
}

/// base() with the body and two text components changed, and one binary component.
fn three_text_changes() -> RevisionContent {
    let mut new = base();
    new.instruction_body = "Run the lint script, then deploy to production.\n".into();
    for c in &mut new.components {
        match c.logical_path.as_str() {
            "references/a.md" => c.content = b"alpha BETA gamma\n".to_vec(),
            "scripts/check.py" => c.content = b"print('fine')\n".to_vec(),
            "assets/logo.png" => c.content = vec![0x89, 0xff, 0x00, 0x02],
            _ => {}
        }
    }
    new
}

#[test]
fn one_deadline_covers_the_body_and_every_component() {
    // Readings: start t0 (deadline t0 + 2.5 s), before the body t0+1 s, after it t0+2 s,
    // before the first component t0+3 s — spent. So the body is compared, and no component.
    let clock = SteppingClock {
        now: Cell::new(Instant::now()),
        step: Duration::from_secs(1),
    };
    let new = three_text_changes();
    let d = diff_revisions_with_clock(&base(), &new, Duration::from_millis(2500), &clock);

    assert_eq!(d.instruction_body.status, TextDiffStatus::Complete);
    let (old_body, new_body) = rebuild(&d.instruction_body);
    assert_eq!(
        (old_body, new_body),
        (base().instruction_body, new.instruction_body)
    );

    let by_path = |p: &str| {
        d.components
            .modified
            .iter()
            .find(|c| c.logical_path == p)
            .unwrap()
    };
    for path in ["references/a.md", "scripts/check.py"] {
        let td = by_path(path).text_diff.as_ref().unwrap();
        assert_eq!(td.status, TextDiffStatus::NotCompared, "{path}");
        assert!(td.changed && td.timed_out && td.ops.is_empty(), "{path}");
        assert_eq!((td.words_inserted, td.words_deleted), (0, 0));
    }
    // A binary change needs no word diff and is reported whatever the budget.
    let logo = by_path("assets/logo.png");
    assert!(logo.content_changed && logo.text_diff.is_none());
    assert_ne!(logo.old.content_hash, logo.new.content_hash);

    assert!(!d.complete);
    assert!(d.timed_out);
    assert_eq!(
        d.not_compared,
        ["components/references/a.md", "components/scripts/check.py"]
    );
    assert_eq!(d.summary.texts_not_compared, 2);
    assert_eq!(d.summary.components_modified, 3);
    assert_eq!(d.summary.components_unchanged, 2);
}

#[test]
fn a_spent_budget_compares_no_text_and_says_so() {
    let new = three_text_changes();
    let d = diff_revisions(&base(), &new, Duration::ZERO);
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["timed_out"], true);
    assert_eq!(
        v["not_compared"],
        json!([
            "instruction_body",
            "components/references/a.md",
            "components/scripts/check.py"
        ])
    );
    assert_eq!(v["instruction_body"]["status"], "not_compared");
    assert_eq!(v["instruction_body"]["ops"], json!([]));
    assert_eq!(v["summary"]["texts_not_compared"], 3);
    // What needs no word diff is still all there: classes, hashes, metadata, names.
    assert_eq!(d.components.modified.len(), 3);
    assert_eq!(d.components.unchanged.len(), 2);
    assert!(!d.identical);
    // An unchanged body costs no budget and is not reported as cut.
    let mut same_body = new.clone();
    same_body.instruction_body = base().instruction_body;
    let d = diff_revisions(&base(), &same_body, Duration::ZERO);
    assert_eq!(d.instruction_body.status, TextDiffStatus::Complete);
    assert!(!d.instruction_body.changed);
    assert_eq!(d.not_compared.len(), 2);
}

/// Space-separated single letters from a tiny alphabet: every token occurs on both sides,
/// so nothing short-cuts the Myers search and its cost grows with the square of the size.
fn dense_tokens(bytes: usize, seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s = String::with_capacity(bytes);
    while s.len() + 2 <= bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push((b'a' + (x % 4) as u8) as char);
        s.push(' ');
    }
    s
}

#[test]
fn the_real_budget_bounds_the_largest_possible_diff() {
    // The largest revision SPEC §1 allows on both sides, all texts unrelated: far more work
    // than any machine finishes in the default budget. The result must stop comparing
    // (complete: false) instead of running on, with at most the one text under way at the
    // deadline finished coarser, and what was compared still exact.
    use xmemo_core::limits::{COMPONENT_MAX_BYTES, INSTRUCTION_BODY_MAX_BYTES, MAX_COMPONENTS};
    let revision = |seed: u64| RevisionContent {
        name: "Big".into(),
        description: "Largest allowed".into(),
        instruction_body: dense_tokens(INSTRUCTION_BODY_MAX_BYTES, seed),
        metadata: Default::default(),
        components: (0..MAX_COMPONENTS as u64)
            .map(|i| {
                component(
                    &format!("references/{i:02}.md"),
                    ComponentType::Reference,
                    dense_tokens(COMPONENT_MAX_BYTES, seed * 1000 + i).as_bytes(),
                )
            })
            .collect(),
    };
    let (old, new) = (revision(1), revision(2));
    let d = diff_revisions(&old, &new, xmemo_core::diff::DEFAULT_DIFF_BUDGET);
    assert!(d.timed_out);
    assert!(!d.complete, "51 quadratic word diffs cannot all fit in 2 s");
    assert!(!d.not_compared.is_empty());

    let texts: Vec<(&TextDiff, &str, &str)> = std::iter::once((
        &d.instruction_body,
        old.instruction_body.as_str(),
        new.instruction_body.as_str(),
    ))
    .chain(d.components.modified.iter().enumerate().map(|(i, c)| {
        (
            c.text_diff.as_ref().unwrap(),
            std::str::from_utf8(&old.components[i].content).unwrap(),
            std::str::from_utf8(&new.components[i].content).unwrap(),
        )
    }))
    .collect();
    assert_eq!(texts.len(), 1 + MAX_COMPONENTS);
    // In comparison order: finished texts, at most one coarse, then only cut ones.
    let statuses: Vec<TextDiffStatus> = texts.iter().map(|t| t.0.status).collect();
    let first_cut = statuses
        .iter()
        .position(|s| *s == TextDiffStatus::NotCompared)
        .unwrap();
    assert!(
        statuses[first_cut..]
            .iter()
            .all(|s| *s == TextDiffStatus::NotCompared),
        "{statuses:?}"
    );
    let coarse = statuses[..first_cut]
        .iter()
        .filter(|s| **s == TextDiffStatus::Coarse)
        .count();
    assert!(coarse <= 1, "{statuses:?}");
    assert_eq!(d.not_compared.len(), statuses.len() - first_cut);
    for (td, o, n) in &texts[..first_cut] {
        let (ro, rn) = rebuild(td);
        assert_eq!((ro.as_str(), rn.as_str()), (*o, *n));
    }
}
