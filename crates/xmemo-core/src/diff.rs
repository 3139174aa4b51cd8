//! Diff between two revisions of one skill (SPEC §6): word-level diff of the instruction
//! body and of text components, components added / removed / modified / unchanged (binary
//! ones by hash and size), metadata changes by key, name and description changes.
//!
//! Word diffs use `similar`'s Myers diff over words and whitespace runs, with one deadline
//! for the whole comparison — the body and every component share it. A text whose comparison
//! is under way when the deadline comes is finished coarser (still correct: `status:
//! "coarse"`); a text not yet reached by then is not compared at all (`status:
//! "not_compared"`, no ops), so the work after the deadline is bounded by one text, not by
//! fifty. The result says what was cut: `complete: false` and `not_compared` naming the
//! parts. Every compared [`TextDiff`] is exact in the sense that the `equal` + `delete`
//! texts concatenate to the old text and `equal` + `insert` to the new one.
//!
//! Components are matched by logical_path; a rename shows as one removal and one addition.
//! A component is text when its bytes are UTF-8 on both sides.

use crate::hash::content_hash;
use crate::media::{is_text, media_type_for};
use crate::model::{ComponentInput, ComponentType, RevisionContent};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use similar::{DiffTag, TextDiffConfig};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A sensible default budget for one diff request.
pub const DEFAULT_DIFF_BUDGET: Duration = Duration::from_secs(2);

/// Where a diff reads the time. The deadline checks go through it so that tests can make
/// the budget run out at a chosen point instead of depending on the machine's speed.
pub trait Clock {
    fn now(&self) -> Instant;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// The time budget of one diff: a deadline read through a [`Clock`].
struct Budget<'a> {
    clock: &'a dyn Clock,
    deadline: Instant,
}

impl Budget<'_> {
    fn spent(&self) -> bool {
        self.clock.now() >= self.deadline
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevisionDiff {
    /// Same canonical content (name, description, metadata, body, components and types).
    pub identical: bool,
    /// The deadline was reached: some word diffs are coarser than minimal, or not made.
    pub timed_out: bool,
    /// Every changed text was compared. `false` when the budget ran out before some were
    /// reached; `not_compared` names them.
    #[serde(default = "yes")]
    pub complete: bool,
    /// The texts the budget did not reach: `instruction_body` and/or
    /// `components/<logical_path>`, in comparison order (body first, then by path).
    #[serde(default)]
    pub not_compared: Vec<String>,
    pub name: Option<Change<String>>,
    pub description: Option<Change<String>>,
    pub instruction_body: TextDiff,
    /// Changes by key, as JSON Pointers (`/license`, `/metadata/version`): objects present on
    /// both sides are compared key by key, anything else as a whole.
    pub metadata: Vec<MetadataChange>,
    pub components: ComponentsDiff,
    pub summary: DiffSummary,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change<T> {
    pub old: T,
    pub new: T,
}

fn yes() -> bool {
    true
}

/// How far the word diff of one text got within the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextDiffStatus {
    /// Finished within the budget: a minimal word diff.
    #[default]
    Complete,
    /// The deadline came during the comparison: exact, but coarser than minimal.
    Coarse,
    /// The budget was spent before this text was reached: `ops` is empty and the word
    /// counts are 0; only the sizes and hashes tell the change.
    NotCompared,
}

/// A word-level diff of two texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDiff {
    pub changed: bool,
    /// `status` is not `complete`.
    pub timed_out: bool,
    #[serde(default)]
    pub status: TextDiffStatus,
    /// Consecutive tokens with the same op are merged into one.
    pub ops: Vec<WordOp>,
    /// Words (non-whitespace tokens) inserted / deleted.
    pub words_inserted: usize,
    pub words_deleted: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordOp {
    pub op: WordOpKind,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WordOpKind {
    Equal,
    Insert,
    Delete,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetadataChangeKind {
    Added,
    Removed,
    Changed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetadataChange {
    /// JSON Pointer (RFC 6901) of the key.
    pub key: String,
    pub change: MetadataChangeKind,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub old: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub new: Option<Value>,
}

/// All lists are sorted by logical_path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ComponentsDiff {
    pub added: Vec<ComponentSummary>,
    pub removed: Vec<ComponentSummary>,
    pub modified: Vec<ComponentChange>,
    pub unchanged: Vec<ComponentSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentSummary {
    pub logical_path: String,
    #[serde(rename = "type")]
    pub component_type: ComponentType,
    pub content_hash: String,
    pub size: u64,
    pub media_type: String,
    pub is_text: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentChange {
    pub logical_path: String,
    pub old: ComponentSummary,
    pub new: ComponentSummary,
    pub type_changed: bool,
    pub content_changed: bool,
    /// Word diff when the content changed and both sides are text; binary changes are told
    /// by `old`/`new` hash and size.
    pub text_diff: Option<TextDiff>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DiffSummary {
    pub components_added: usize,
    pub components_removed: usize,
    pub components_modified: usize,
    pub components_unchanged: usize,
    pub metadata_changes: usize,
    pub body_words_inserted: usize,
    pub body_words_deleted: usize,
    /// Changed texts (body and components) the budget did not reach.
    #[serde(default)]
    pub texts_not_compared: usize,
}

/// Compares two revisions of a skill; `budget` bounds the time spent on word diffs, for the
/// body and all components together.
pub fn diff_revisions(
    old: &RevisionContent,
    new: &RevisionContent,
    budget: Duration,
) -> RevisionDiff {
    diff_revisions_with_clock(old, new, budget, &SystemClock)
}

/// [`diff_revisions`] reading the time from `clock`.
pub fn diff_revisions_with_clock(
    old: &RevisionContent,
    new: &RevisionContent,
    budget: Duration,
    clock: &dyn Clock,
) -> RevisionDiff {
    let budget = Budget {
        clock,
        deadline: clock.now() + budget,
    };
    let instruction_body = word_diff_within(&old.instruction_body, &new.instruction_body, &budget);
    let metadata = diff_metadata(&old.metadata, &new.metadata);
    let components = diff_components(&old.components, &new.components, &budget);
    let change = |a: &String, b: &String| {
        (a != b).then(|| Change {
            old: a.clone(),
            new: b.clone(),
        })
    };
    let name = change(&old.name, &new.name);
    let description = change(&old.description, &new.description);
    let timed_out = instruction_body.timed_out
        || components
            .modified
            .iter()
            .any(|c| c.text_diff.as_ref().is_some_and(|d| d.timed_out));
    let cut = |d: &TextDiff| d.status == TextDiffStatus::NotCompared;
    let not_compared: Vec<String> = cut(&instruction_body)
        .then(|| "instruction_body".to_string())
        .into_iter()
        .chain(
            components
                .modified
                .iter()
                .filter(|c| c.text_diff.as_ref().is_some_and(cut))
                .map(|c| format!("components/{}", c.logical_path)),
        )
        .collect();
    let summary = DiffSummary {
        components_added: components.added.len(),
        components_removed: components.removed.len(),
        components_modified: components.modified.len(),
        components_unchanged: components.unchanged.len(),
        metadata_changes: metadata.len(),
        body_words_inserted: instruction_body.words_inserted,
        body_words_deleted: instruction_body.words_deleted,
        texts_not_compared: not_compared.len(),
    };
    RevisionDiff {
        identical: name.is_none()
            && description.is_none()
            && !instruction_body.changed
            && metadata.is_empty()
            && components.added.is_empty()
            && components.removed.is_empty()
            && components.modified.is_empty(),
        timed_out,
        complete: not_compared.is_empty(),
        not_compared,
        name,
        description,
        instruction_body,
        metadata,
        components,
        summary,
    }
}

/// A word diff of two texts within `budget`.
pub fn word_diff(old: &str, new: &str, budget: Duration) -> TextDiff {
    let clock = SystemClock;
    word_diff_within(
        old,
        new,
        &Budget {
            clock: &clock,
            deadline: clock.now() + budget,
        },
    )
}

fn word_diff_within(old: &str, new: &str, budget: &Budget<'_>) -> TextDiff {
    if old == new {
        return TextDiff {
            changed: false,
            timed_out: false,
            status: TextDiffStatus::Complete,
            ops: if old.is_empty() {
                Vec::new()
            } else {
                vec![WordOp {
                    op: WordOpKind::Equal,
                    text: old.to_string(),
                }]
            },
            words_inserted: 0,
            words_deleted: 0,
        };
    }
    if budget.spent() {
        return TextDiff {
            changed: true,
            timed_out: true,
            status: TextDiffStatus::NotCompared,
            ops: Vec::new(),
            words_inserted: 0,
            words_deleted: 0,
        };
    }
    let diff = TextDiffConfig::default()
        .deadline(budget.deadline)
        .diff_words(old, new);
    let status = if budget.spent() {
        TextDiffStatus::Coarse
    } else {
        TextDiffStatus::Complete
    };
    let mut ops: Vec<WordOp> = Vec::new();
    let mut words_inserted = 0;
    let mut words_deleted = 0;
    let mut push = |kind: WordOpKind, tokens: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        let mut words = 0;
        for t in tokens {
            if !t.trim().is_empty() {
                words += 1;
            }
            text.push_str(t);
        }
        if text.is_empty() {
            return;
        }
        match kind {
            WordOpKind::Insert => words_inserted += words,
            WordOpKind::Delete => words_deleted += words,
            WordOpKind::Equal => {}
        }
        match ops.last_mut() {
            Some(last) if last.op == kind => last.text.push_str(&text),
            _ => ops.push(WordOp { op: kind, text }),
        }
    };
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let mut old_tokens = old_range.clone().filter_map(|i| diff.old_slice(i));
        let mut new_tokens = new_range.clone().filter_map(|i| diff.new_slice(i));
        match tag {
            DiffTag::Equal => push(WordOpKind::Equal, &mut old_tokens),
            DiffTag::Delete => push(WordOpKind::Delete, &mut old_tokens),
            DiffTag::Insert => push(WordOpKind::Insert, &mut new_tokens),
            DiffTag::Replace => {
                push(WordOpKind::Delete, &mut old_tokens);
                push(WordOpKind::Insert, &mut new_tokens);
            }
        }
    }
    TextDiff {
        changed: true,
        timed_out: status != TextDiffStatus::Complete,
        status,
        ops,
        words_inserted,
        words_deleted,
    }
}

fn summary(c: &ComponentInput) -> ComponentSummary {
    ComponentSummary {
        logical_path: c.logical_path.clone(),
        component_type: c.component_type,
        content_hash: content_hash(&c.content),
        size: c.content.len() as u64,
        media_type: media_type_for(&c.logical_path, &c.content),
        is_text: is_text(&c.content),
    }
}

fn diff_components(
    old: &[ComponentInput],
    new: &[ComponentInput],
    budget: &Budget<'_>,
) -> ComponentsDiff {
    let old_by_path: BTreeMap<&[u8], &ComponentInput> =
        old.iter().map(|c| (c.logical_path.as_bytes(), c)).collect();
    let new_by_path: BTreeMap<&[u8], &ComponentInput> =
        new.iter().map(|c| (c.logical_path.as_bytes(), c)).collect();
    let mut out = ComponentsDiff::default();
    for (path, o) in &old_by_path {
        if !new_by_path.contains_key(path) {
            out.removed.push(summary(o));
        }
    }
    for (path, n) in &new_by_path {
        let Some(o) = old_by_path.get(path) else {
            out.added.push(summary(n));
            continue;
        };
        let (os, ns) = (summary(o), summary(n));
        let content_changed = os.content_hash != ns.content_hash;
        let type_changed = os.component_type != ns.component_type;
        if !content_changed && !type_changed {
            out.unchanged.push(ns);
            continue;
        }
        let text_diff = match (
            content_changed,
            std::str::from_utf8(&o.content),
            std::str::from_utf8(&n.content),
        ) {
            (true, Ok(a), Ok(b)) => Some(word_diff_within(a, b, budget)),
            _ => None,
        };
        out.modified.push(ComponentChange {
            logical_path: n.logical_path.clone(),
            old: os,
            new: ns,
            type_changed,
            content_changed,
            text_diff,
        });
    }
    out
}

fn diff_metadata(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<MetadataChange> {
    let mut changes = Vec::new();
    diff_objects("", old, new, &mut changes);
    changes
}

fn diff_objects(
    prefix: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    out: &mut Vec<MetadataChange>,
) {
    let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let pointer = format!("{prefix}/{}", key.replace('~', "~0").replace('/', "~1"));
        match (old.get(key.as_str()), new.get(key.as_str())) {
            (Some(a), Some(b)) if a == b => {}
            (Some(Value::Object(a)), Some(Value::Object(b))) => diff_objects(&pointer, a, b, out),
            (Some(a), Some(b)) => out.push(MetadataChange {
                key: pointer,
                change: MetadataChangeKind::Changed,
                old: Some(a.clone()),
                new: Some(b.clone()),
            }),
            (Some(a), None) => out.push(MetadataChange {
                key: pointer,
                change: MetadataChangeKind::Removed,
                old: Some(a.clone()),
                new: None,
            }),
            (None, Some(b)) => out.push(MetadataChange {
                key: pointer,
                change: MetadataChangeKind::Added,
                old: None,
                new: Some(b.clone()),
            }),
            (None, None) => {}
        }
    }
}
