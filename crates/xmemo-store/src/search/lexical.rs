//! An in-memory full-text index: the ranking half of Level 0 search and of memory recall.
//!
//! Ranking with the database's own full-text engines cost a few hundred microseconds to a few
//! milliseconds per query at 100k rows (SQLite FTS5 counts every row holding a query word to
//! compute BM25's IDF and reads each candidate's stored row to check its workspace; PostgreSQL
//! ranks every match). Here a query touches a bounded number of postings held in memory; the
//! database then only hydrates the few rows that rank (`sql/skills.rs`, `sql/memories.rs`).
//!
//! Scoring is BM25 (k1 = 1.2, b = 0.75) as FTS5 computes it: for each query word, `f` is the
//! weighted count of the word in the row (each field has a weight), the row's length is its
//! number of words, and a word held by more than half the rows has (almost) no weight. Terms
//! come from [`analyze`]: stemmed in the row's language without accents or stop words, CJK
//! text in character pairs; the last word of a query is also matched as a prefix, for
//! search-as-you-type. For short queries (a few terms, as people type when they look for a
//! skill), rows holding every query term rank before the others; a question's many terms are
//! ranked by BM25 alone, where requiring all of them only buried the rows that answer it.
//!
//! Bounded work: the postings of the rarest words are read whole, within a budget; for words
//! too common to fit, only their postings in heavily weighted fields (slug, name, title, tags)
//! are read, and their other postings are looked up (binary search) for the rows already
//! found. A query made only of very common words therefore ranks the rows naming them in a
//! heavy field, not every row holding them somewhere.
//!
//! Removed rows leave dead postings behind (skipped, and counted in a word's document count)
//! until dead rows reach a quarter of the index, which is then compacted.

use super::analyze::{self, Lang};
use super::scope::{Facets, MemoryFilter, Scope};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Postings a query reads in full, over all its words (the rest are probed per candidate).
pub const SCAN_BUDGET: usize = 4096;
/// Index words a query's prefix word may expand to.
pub const PREFIX_EXPANSIONS: usize = 64;
/// Candidates whose score is completed by probing the postings that were not read.
pub const COMPLETE_CAP: usize = 1024;
/// A word held by more than half the rows and by at least this many is very common: it
/// weighs nothing in BM25 and is not required of the rows holding "every word".
pub const VERY_COMMON_ROWS: usize = 5_000;
/// Query terms considered.
const MAX_QUERY_WORDS: usize = 16;
/// Level 0 searches of at most this many terms rank the skills holding every term first.
pub const EVERY_TERM_MAX_SKILLS: usize = 16;
/// Memory recalls of at most this many terms rank the rows holding every term first: an
/// agent's recall is often a question, whose many terms no one memory holds (decided on the
/// conversation benchmark, docs/decisions.md).
pub const EVERY_TERM_MAX: usize = 3;
/// A language whose rows are at least this share of the index is one a query is stemmed in
/// (besides its own, when it can be told).
const QUERY_LANGUAGE_SHARE: f64 = 0.1;
/// Words of at least this many characters, in rows of a language that writes compounds, are
/// found by their tail ([`Index::tails`]).
const COMPOUND_MIN_CHARS: usize = 8;
/// A query word of at least this many characters that no row holds is looked up as the tail
/// of compounds ("umfrag" in "kundenumfrag").
const TAIL_MIN_CHARS: usize = 5;

/// Languages that write compounds as one word ("Kundenumfrage", "klanttevredenheid").
fn writes_compounds(lang: Lang) -> bool {
    matches!(
        lang,
        Lang::German | Lang::Dutch | Lang::Swedish | Lang::Danish | Lang::Norwegian | Lang::Finnish
    )
}

fn reversed(word: &str) -> String {
    word.chars().rev().collect()
}

/// Adds the ids of `words` starting with `start` (itself too when `inclusive`), in order,
/// until `ids` holds [`PREFIX_EXPANSIONS`].
fn starting_with(
    words: &BTreeMap<Box<str>, u32>,
    start: &str,
    inclusive: bool,
    ids: &mut Vec<u32>,
) {
    let from = if inclusive {
        std::ops::Bound::Included(start)
    } else {
        std::ops::Bound::Excluded(start)
    };
    for (word, id) in words.range::<str, _>((from, std::ops::Bound::Unbounded)) {
        if !word.starts_with(start) || ids.len() >= PREFIX_EXPANSIONS {
            break;
        }
        if !ids.contains(id) {
            ids.push(*id);
        }
    }
}

/// The fields of an index's rows, in the order [`Index::upsert`] takes them.
#[derive(Debug)]
pub struct Schema {
    /// BM25 weight of each field.
    pub weights: &'static [f32],
    /// Postings whose weighted count reaches this are "strong" (the word is in a heavy field):
    /// always read, even for very common words.
    pub strong_at: f32,
    /// Queries of at most this many terms rank the rows holding every term first.
    pub every_term_max: usize,
}

/// Skills' Level 0 rows: slug (its words), name, description — the weights FTS5 ranks with.
pub const SKILLS: Schema = Schema {
    weights: &[10.0, 5.0, 1.0],
    strong_at: 5.0,
    every_term_max: EVERY_TERM_MAX_SKILLS,
};

/// Memories: title, content, tags.
pub const MEMORIES: Schema = Schema {
    weights: &[5.0, 1.0, 5.0],
    strong_at: 5.0,
    every_term_max: EVERY_TERM_MAX,
};

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// Weighted count of the word in the row.
    f: f32,
}

#[derive(Debug, Default)]
struct Lists {
    strong: Vec<Posting>,
    weak: Vec<Posting>,
    /// Largest `f` in `weak` (bounds what a weak posting can add).
    weak_max: f32,
    /// The word is in [`Index::tails`].
    in_tails: bool,
}

impl Lists {
    fn df(&self) -> usize {
        self.strong.len() + self.weak.len()
    }
}

#[derive(Debug)]
struct Doc {
    key: Box<str>,
    workspace: u32,
    len: u32,
    lang: Lang,
    live: bool,
    /// A memory's filter fields (none for skills).
    facets: Option<Box<DocFacets>>,
}

/// [`Facets`] with the repeated strings (kinds, projects, agent instances, tags) held once in
/// the index's symbol table.
#[derive(Debug, Clone)]
struct DocFacets {
    active: bool,
    kind: u32,
    project: u32,
    agent_instance_id: Option<u32>,
    tags: Box<[u32]>,
    expires_at: Option<Box<str>>,
    updated_at: Box<str>,
}

/// A [`MemoryFilter`] resolved against an index's symbols, for one query.
pub struct Admission<'a> {
    index: &'a Index,
    filter: &'a MemoryFilter,
    kind: Option<u32>,
    project: Option<u32>,
    agent_instance_id: Option<u32>,
    tags: Vec<u32>,
}

impl Admission<'_> {
    fn doc(&self, doc: &Doc) -> bool {
        let Some(f) = &doc.facets else {
            // A row indexed without its facets (tests): kept unless the filter narrows.
            return !self.filter.narrows();
        };
        (self.filter.include_forgotten || f.active)
            && f.expires_at
                .as_deref()
                .is_none_or(|e| e > self.filter.now.as_str())
            && self.kind.is_none_or(|k| f.kind == k)
            && self.project.is_none_or(|p| f.project == p)
            && self
                .agent_instance_id
                .is_none_or(|a| f.agent_instance_id == Some(a))
            && self
                .filter
                .since
                .as_deref()
                .is_none_or(|s| &*f.updated_at >= s)
            && self
                .filter
                .until
                .as_deref()
                .is_none_or(|u| &*f.updated_at <= u)
            && self.tags.iter().all(|t| f.tags.contains(t))
    }

    /// Whether the live row of `key` passes the filter.
    pub fn admits(&self, key: &str) -> bool {
        self.index
            .by_key
            .get(key)
            .and_then(|d| self.index.docs.get(*d as usize))
            .is_some_and(|d| d.live && self.doc(d))
    }

    /// The filter keeps only part of a workspace's rows (see [`MemoryFilter::narrows`]).
    pub fn narrows(&self) -> bool {
        self.filter.narrows()
    }
}

/// One ranked row.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub key: String,
    /// What the row is ranked by: BM25 here (unbounded, relative to the query), the fused
    /// score after [`super::fusion::fuse`].
    pub score: f64,
    /// The public score, 0 to 1, comparable across queries ([`calibrated`]; fused by
    /// [`super::fusion::fuse`]).
    pub relevance: f64,
    /// The row holds every term of a short query: the tier it ranks in, before the rows
    /// that do not (always `false` for a question of more than [`EVERY_TERM_MAX`] terms).
    pub all_words: bool,
    /// The row holds every term of the query, however long: a `min_score` never leaves it
    /// out.
    pub every_word: bool,
    /// The lanes that found it (full text here; fusion adds the semantic lane).
    pub lanes: crate::model::Lanes,
}

/// A row tokenised and counted, ready for [`Index::insert`]: the costly half of adding a
/// row, done without the index.
#[derive(Debug)]
pub struct Analyzed {
    key: Box<str>,
    workspace: Box<str>,
    lang: Lang,
    len: u32,
    /// Every distinct term, one after the other (one allocation, whatever the row's length).
    words: String,
    facets: Option<Facets>,
    /// Each term's bytes in `words` and its weighted count (terms of weight 0 left out).
    spans: Vec<(u32, u32, f32)>,
}

impl Analyzed {
    /// Analyses the row `(key, workspace, fields…)` for an index of `schema`.
    pub fn new(schema: &Schema, key: &str, workspace: &str, fields: &[&str]) -> Analyzed {
        let lang = analyze::detect(&fields.join("\n")).unwrap_or(Lang::English);
        let mut counts: HashMap<String, f32> = HashMap::new();
        let mut len = 0u32;
        for (field, text) in fields.iter().enumerate() {
            let weight = schema.weights.get(field).copied().unwrap_or(0.0);
            analyze::row_terms(text, lang, |term| {
                len = len.saturating_add(1);
                match counts.get_mut(term) {
                    Some(f) => *f += weight,
                    None => {
                        counts.insert(term.to_string(), weight);
                    }
                }
            });
        }
        let mut words = String::with_capacity(counts.keys().map(String::len).sum());
        let mut spans = Vec::with_capacity(counts.len());
        for (w, f) in counts {
            if f > 0.0 {
                let start = words.len() as u32;
                words.push_str(&w);
                spans.push((start, words.len() as u32, f));
            }
        }
        Analyzed {
            key: Box::from(key),
            workspace: Box::from(workspace),
            lang,
            len,
            words,
            spans,
            facets: None,
        }
    }

    /// The row with its filter fields (a memory's).
    pub fn with_facets(mut self, facets: Facets) -> Analyzed {
        self.facets = Some(facets);
        self
    }
}

/// Each index the process makes (new, compacted) has its own number: rows reserved in one
/// are never posted into another.
static INDEX_NUMBERS: AtomicU64 = AtomicU64::new(0);

fn next_index_number() -> u64 {
    INDEX_NUMBERS.fetch_add(1, Ordering::Relaxed)
}

/// Rows being added in parts ([`Index::reserve`], [`Index::post`], [`Index::publish`]).
/// Their row numbers are taken first and their postings go in while the rows are still dead,
/// so a query between two parts sees none of them, and a caller may let its lock go between
/// parts: a 16 KiB memory holds ~2,500 words, and posting them in one go held the index's
/// lock, and so every query, for 0.5–3 ms (issue #29, defect 7).
#[derive(Debug)]
pub struct Adding {
    rows: Vec<Analyzed>,
    /// The first reserved row number; the others follow it.
    first: u32,
    index: u64,
    /// The next word to post: row, then span in it.
    row: usize,
    span: usize,
}

impl Adding {
    /// Every word of every row is posted: [`Index::publish`] is all that is left.
    pub fn is_posted(&self) -> bool {
        self.row >= self.rows.len()
    }
}

/// An in-memory inverted index of rows `(key, workspace, fields…)`.
pub struct Index {
    schema: &'static Schema,
    /// This index's number (`INDEX_NUMBERS`).
    number: u64,
    /// Live rows per language (`Lang::index`).
    lang_rows: [u32; Lang::ALL.len()],
    /// Every word in order, for the last query word's prefix expansion.
    dict: BTreeMap<Box<str>, u32>,
    /// The long words of rows in languages that write compounds, each spelt backwards and in
    /// order: the words ending with a query word are one range (issue #30: "Überschreitung"
    /// finds "Zeitüberschreitung", "Umfrage" finds "Kundenumfrage").
    tails: BTreeMap<Box<str>, u32>,
    /// The same words hashed: adding a row looks up each of its words (a sorted map's string
    /// comparisons were most of the time a write spent holding the index's lock).
    ids: HashMap<Box<str>, u32>,
    lists: Vec<Lists>,
    docs: Vec<Doc>,
    by_key: HashMap<Box<str>, u32>,
    workspaces: HashMap<Box<str>, u32>,
    /// The strings of rows' facets, each held once.
    symbols: HashMap<Box<str>, u32>,
    live: u32,
    live_len: u64,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("rows", &self.live)
            .field("words", &self.dict.len())
            .finish()
    }
}

/// A query word resolved against the dictionary.
struct QueryWord {
    ids: Vec<u32>,
    idf: f32,
    df: usize,
}

/// Per-thread scratch space of a query: a dense score array reused across queries, so a
/// query costs what it touches, not the size of the index.
#[derive(Default)]
struct Scratch {
    score: Vec<f32>,
    mask: Vec<u32>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Index {
    pub fn new(schema: &'static Schema) -> Self {
        Self {
            schema,
            number: next_index_number(),
            lang_rows: [0; Lang::ALL.len()],
            dict: BTreeMap::new(),
            tails: BTreeMap::new(),
            ids: HashMap::new(),
            lists: Vec::new(),
            docs: Vec::new(),
            by_key: HashMap::new(),
            workspaces: HashMap::new(),
            symbols: HashMap::new(),
            live: 0,
            live_len: 0,
        }
    }

    /// Rows in the index.
    pub fn len(&self) -> usize {
        self.live as usize
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Adds the row, replacing the row of the same key. `fields` follow the schema's order
    /// (missing fields are empty).
    pub fn upsert(&mut self, key: &str, workspace: &str, fields: &[&str]) {
        let row = Analyzed::new(self.schema, key, workspace, fields);
        self.insert(row);
        if self.needs_compaction() {
            *self = self.compacted();
        }
    }

    /// Adds a row analysed beforehand ([`Analyzed::new`], which takes the time: tokenising,
    /// stemming), replacing the row of the same key. What is left is dictionary look-ups and
    /// pushes, so a caller can analyse outside a lock and hold it only for this (or for parts
    /// of it: [`Index::reserve`]).
    pub fn insert(&mut self, row: Analyzed) {
        let mut adding = self.reserve(vec![row]);
        self.post(&mut adding, usize::MAX);
        self.publish(adding);
    }

    /// Takes the next row numbers for `rows`, dead until [`Index::publish`]: the first step of
    /// adding rows in parts. Until they are published no other row may be added, and the
    /// index may not be compacted (the caller serialises its writers); if one is, the
    /// reserved rows stay dead and `publish` adds them anew.
    pub fn reserve(&mut self, mut rows: Vec<Analyzed>) -> Adding {
        let first = self.docs.len();
        // Row numbers are u32: rows past the last number are not indexed.
        rows.truncate((u32::MAX as usize).saturating_sub(first));
        for row in &mut rows {
            let next = self.workspaces.len() as u32;
            let workspace = *self.workspaces.entry(row.workspace.clone()).or_insert(next);
            let facets = row.facets.take().map(|f| Box::new(self.interned(f)));
            self.docs.push(Doc {
                key: row.key.clone(),
                workspace,
                len: row.len,
                lang: row.lang,
                live: false,
                facets,
            });
        }
        Adding {
            rows,
            first: first as u32,
            index: self.number,
            row: 0,
            span: 0,
        }
    }

    fn symbol(&mut self, text: String) -> u32 {
        let next = self.symbols.len() as u32;
        *self.symbols.entry(text.into_boxed_str()).or_insert(next)
    }

    fn interned(&mut self, f: Facets) -> DocFacets {
        DocFacets {
            active: f.active,
            kind: self.symbol(f.kind),
            project: self.symbol(f.project),
            agent_instance_id: f.agent_instance_id.map(|a| self.symbol(a)),
            tags: f.tags.into_iter().map(|t| self.symbol(t)).collect(),
            expires_at: f.expires_at.map(String::into_boxed_str),
            updated_at: f.updated_at.into_boxed_str(),
        }
    }

    /// `filter` resolved for this index; `None` when it names a kind, project, agent
    /// instance or tag no row has (nothing passes).
    pub fn admission<'a>(&'a self, filter: &'a MemoryFilter) -> Option<Admission<'a>> {
        let known = |name: &Option<String>| -> Option<Option<u32>> {
            match name {
                None => Some(None),
                Some(n) => self.symbols.get(n.as_str()).map(|s| Some(*s)),
            }
        };
        Some(Admission {
            index: self,
            filter,
            kind: known(&filter.kind)?,
            project: known(&filter.project)?,
            agent_instance_id: known(&filter.agent_instance_id)?,
            tags: filter
                .tags
                .iter()
                .map(|t| self.symbols.get(t.as_str()).copied())
                .collect::<Option<Vec<u32>>>()?,
        })
    }

    /// The reserved rows of `adding` are still this index's last rows.
    fn holds(&self, adding: &Adding) -> bool {
        adding.index == self.number && self.docs.len() == adding.first as usize + adding.rows.len()
    }

    /// Posts up to `words` more words of `adding`'s rows (in row order, so every list stays
    /// sorted by row number). Nothing is posted into an index that no longer holds the
    /// reservation.
    pub fn post(&mut self, adding: &mut Adding, mut words: usize) {
        if !self.holds(adding) {
            adding.row = adding.rows.len();
            return;
        }
        while words > 0 && adding.row < adding.rows.len() {
            let row = &adding.rows[adding.row];
            let compounds = writes_compounds(row.lang);
            let doc = adding.first + adding.row as u32;
            let end = row.spans.len().min(adding.span.saturating_add(words));
            for &(start, stop, f) in &row.spans[adding.span..end] {
                let word = &row.words[start as usize..stop as usize];
                let id = match self.ids.get(word) {
                    Some(id) => *id,
                    None => {
                        let id = self.lists.len() as u32;
                        self.dict.insert(Box::from(word), id);
                        self.ids.insert(Box::from(word), id);
                        self.lists.push(Lists::default());
                        id
                    }
                };
                let lists = &mut self.lists[id as usize];
                if compounds && !lists.in_tails && word.chars().count() >= COMPOUND_MIN_CHARS {
                    lists.in_tails = true;
                    self.tails.insert(Box::from(reversed(word)), id);
                }
                if f >= self.schema.strong_at {
                    lists.strong.push(Posting { doc, f });
                } else {
                    lists.weak.push(Posting { doc, f });
                    lists.weak_max = lists.weak_max.max(f);
                }
            }
            words -= end - adding.span;
            if end == row.spans.len() {
                adding.row += 1;
                adding.span = 0;
            } else {
                adding.span = end;
            }
        }
    }

    /// Makes `adding`'s rows live (posting what is left), each replacing the row of its key.
    /// Rows whose reservation this index no longer holds are added anew.
    pub fn publish(&mut self, mut adding: Adding) {
        if !self.holds(&adding) {
            let rows = std::mem::take(&mut adding.rows);
            if !rows.is_empty() {
                let mut again = self.reserve(rows);
                self.post(&mut again, usize::MAX);
                self.publish(again);
            }
            return;
        }
        self.post(&mut adding, usize::MAX);
        for (n, row) in adding.rows.into_iter().enumerate() {
            self.remove_keeping_dead(&row.key);
            let doc = adding.first + n as u32;
            self.by_key.insert(row.key, doc);
            if let Some(d) = self.docs.get_mut(doc as usize) {
                d.live = true;
            }
            self.lang_rows[row.lang.index()] += 1;
            self.live += 1;
            self.live_len += u64::from(row.len);
        }
    }

    /// Removes the row of `key` (its postings die with it); `false` when there was none.
    /// Compacts when dead rows reach a quarter of the index (see [`Index::needs_compaction`]
    /// for a caller that compacts outside its lock instead).
    pub fn remove(&mut self, key: &str) -> bool {
        let removed = self.remove_keeping_dead(key);
        if self.needs_compaction() {
            *self = self.compacted();
        }
        removed
    }

    /// Marks the row of `key` dead; its postings stay until the next compaction.
    pub fn remove_keeping_dead(&mut self, key: &str) -> bool {
        let Some(doc) = self.by_key.remove(key) else {
            return false;
        };
        if let Some(d) = self.docs.get_mut(doc as usize) {
            d.live = false;
            let rows = &mut self.lang_rows[d.lang.index()];
            *rows = rows.saturating_sub(1);
            self.live = self.live.saturating_sub(1);
            self.live_len = self.live_len.saturating_sub(u64::from(d.len));
        }
        true
    }

    /// Dead rows are a quarter of the index (and at least 1,024): time to compact.
    pub fn needs_compaction(&self) -> bool {
        let dead = self.docs.len() - self.live as usize;
        dead >= 1024 && dead * 4 >= self.docs.len()
    }

    /// Gives back the room growing lists keep spare (after building, after compacting).
    pub fn shrink_to_fit(&mut self) {
        for lists in &mut self.lists {
            lists.strong.shrink_to_fit();
            lists.weak.shrink_to_fit();
        }
        self.docs.shrink_to_fit();
        self.by_key.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    /// A copy without the dead rows and their postings, the rest renumbered in the same
    /// order (so every list stays sorted by row number). It reads `self` only: a caller can
    /// build it under a read lock, while queries go on, and swap it in.
    pub fn compacted(&self) -> Index {
        let mut renumber = vec![u32::MAX; self.docs.len()];
        let mut docs = Vec::with_capacity(self.live as usize);
        for (old, doc) in self.docs.iter().enumerate() {
            if doc.live {
                renumber[old] = docs.len() as u32;
                docs.push(Doc {
                    key: doc.key.clone(),
                    facets: doc.facets.clone(),
                    ..*doc
                });
            }
        }
        let keep = |list: &[Posting]| -> Vec<Posting> {
            list.iter()
                .filter_map(|p| match renumber.get(p.doc as usize) {
                    Some(&n) if n != u32::MAX => Some(Posting { doc: n, f: p.f }),
                    _ => None,
                })
                .collect()
        };
        let lists = self
            .lists
            .iter()
            .map(|l| {
                let weak = keep(&l.weak);
                Lists {
                    strong: keep(&l.strong),
                    weak_max: weak.iter().map(|p| p.f).fold(0.0, f32::max),
                    weak,
                    in_tails: l.in_tails,
                }
            })
            .collect();
        let by_key = docs
            .iter()
            .enumerate()
            .map(|(n, d)| (d.key.clone(), n as u32))
            .collect();
        Index {
            schema: self.schema,
            number: next_index_number(),
            lang_rows: self.lang_rows,
            dict: self.dict.clone(),
            tails: self.tails.clone(),
            ids: self.ids.clone(),
            lists,
            docs,
            by_key,
            workspaces: self.workspaces.clone(),
            symbols: self.symbols.clone(),
            live: self.live,
            live_len: self.live_len,
        }
    }

    /// The languages a query is stemmed in: its own when it can be told among the languages
    /// the index holds rows in, then each language holding a fair share of the rows (English
    /// when none does). When every language with rows holds a fair share (an index in one
    /// language), telling the query's own would add none: it is not tried.
    fn query_languages(&self, query: &str) -> Vec<Lang> {
        let live = f64::from(self.live.max(1));
        let present: Vec<Lang> = Lang::ALL
            .into_iter()
            .filter(|l| self.lang_rows[l.index()] > 0)
            .collect();
        let mut held: Vec<(u32, Lang)> = present
            .iter()
            .map(|l| (self.lang_rows[l.index()], *l))
            .filter(|(n, _)| f64::from(*n) / live >= QUERY_LANGUAGE_SHARE)
            .collect();
        held.sort_by_key(|h| std::cmp::Reverse(h.0));
        let mut langs: Vec<Lang> = Vec::new();
        if present.len() > held.len() {
            langs.extend(analyze::detect_query(query, &present));
        }
        for (_, lang) in held {
            if !langs.contains(&lang) {
                langs.push(lang);
            }
        }
        if langs.is_empty() {
            langs.push(Lang::English);
        }
        langs
    }

    /// The query's terms resolved against the dictionary: without repeats, the last word
    /// also as a prefix.
    fn resolve(&self, query: &str) -> Vec<QueryWord> {
        // Stop words are those of the query's languages. A word none of whose stems in them
        // any row holds is stemmed in every other language the index holds rows in (a French
        // row among English ones is found by its word typed without accent: issue #30); the
        // words rows hold cost nothing more.
        let languages = self.query_languages(query);
        let terms = analyze::query_terms(query, &languages, MAX_QUERY_WORDS);
        let n = self.live.max(1) as f32;
        let mut out: Vec<(String, QueryWord)> = Vec::new();
        for term in terms {
            let mut ids: Vec<u32> = term
                .variants
                .iter()
                .filter_map(|v| self.ids.get(v.as_str()).copied())
                .collect();
            if let (true, Some(word)) = (ids.is_empty(), &term.word) {
                let mut stems: Vec<String> = term.variants.clone();
                for lang in Lang::ALL {
                    if self.lang_rows[lang.index()] > 0 && !languages.contains(&lang) {
                        let stem = analyze::stem(word, lang);
                        if let Some(id) = self.ids.get(stem.as_str())
                            && !ids.contains(id)
                        {
                            ids.push(*id);
                        }
                        if writes_compounds(lang) && !stems.contains(&stem) {
                            stems.push(stem);
                        }
                    }
                }
                if ids.is_empty() {
                    self.compounds_ending_with(&stems, &mut ids);
                }
            }
            if let Some(word) = &term.prefix {
                for start in term.variants.iter().chain([word]) {
                    starting_with(&self.dict, start, true, &mut ids);
                }
            }
            let name = term.variants.first().cloned().unwrap_or_default();
            match out.iter_mut().find(|(s, _)| *s == name) {
                Some((_, same)) => {
                    for id in ids {
                        if !same.ids.contains(&id) {
                            same.ids.push(id);
                        }
                    }
                }
                None => out.push((
                    name,
                    QueryWord {
                        ids,
                        idf: 0.0,
                        df: 0,
                    },
                )),
            }
        }
        out.into_iter()
            .map(|(_, mut w)| {
                w.df = w
                    .ids
                    .iter()
                    .map(|id| self.lists[*id as usize].df())
                    .sum::<usize>();
                let df = w.df.min(self.live as usize) as f32;
                let idf = ((n - df + 0.5) / (df + 0.5)).ln();
                // As FTS5: a word held by most rows weighs (almost) nothing.
                w.idf = if idf > 0.0 { idf } else { 1e-6 };
                w
            })
            .collect()
    }

    /// Adds the words of [`Index::tails`] that end with one of `stems` (each at least
    /// [`TAIL_MIN_CHARS`] long), at most [`PREFIX_EXPANSIONS`] in all.
    fn compounds_ending_with(&self, stems: &[String], ids: &mut Vec<u32>) {
        for stem in stems {
            if stem.chars().count() < TAIL_MIN_CHARS {
                continue;
            }
            // The word itself is no compound of it: the bound is excluded.
            starting_with(&self.tails, &reversed(stem), false, ids);
        }
    }

    /// The `k` best rows of `workspaces` for `query` (see [`Index::search_in`]).
    pub fn search(&self, query: &str, workspaces: &[&str], k: usize) -> Vec<Hit> {
        let workspaces: Vec<String> = workspaces.iter().map(|w| w.to_string()).collect();
        self.search_in(query, &Scope::workspaces(&workspaces), k)
    }

    /// The `k` best rows in `scope` for `query`: rows holding every word first, then by BM25,
    /// best first. The scope is applied as postings are read, so the `k` are the best rows
    /// the scope keeps, however few of the matching rows it keeps.
    pub fn search_in(&self, query: &str, scope: &Scope, k: usize) -> Vec<Hit> {
        let allowed: Vec<u32> = scope
            .workspaces
            .iter()
            .filter_map(|w| self.workspaces.get(w.as_str()).copied())
            .collect();
        if allowed.is_empty() || k == 0 || self.live == 0 {
            return vec![];
        }
        let admission = match &scope.memories {
            None => None,
            Some(filter) => match self.admission(filter) {
                Some(admission) => Some(admission),
                None => return vec![],
            },
        };
        let mut query_words = self.resolve(query);
        if query_words.is_empty() {
            return vec![];
        }
        query_words.sort_by_key(|w| w.df);
        let in_scope = |doc: &Doc| {
            allowed.contains(&doc.workspace) && admission.as_ref().is_none_or(|a| a.doc(doc))
        };
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            self.rank(&query_words, in_scope, k, &mut scratch)
        })
    }

    fn rank(
        &self,
        query_words: &[QueryWord],
        in_scope: impl Fn(&Doc) -> bool,
        k: usize,
        scratch: &mut Scratch,
    ) -> Vec<Hit> {
        if scratch.score.len() < self.docs.len() {
            scratch.score.resize(self.docs.len(), 0.0);
            scratch.mask.resize(self.docs.len(), 0);
        }
        let avgdl = (self.live_len as f32 / self.live.max(1) as f32).max(1.0);
        let norm = |len: u32| K1 * (1.0 - B + B * len as f32 / avgdl);
        let impact = |f: f32, len: u32| f * (K1 + 1.0) / (f + norm(len));
        // "Every word" means every word but the very common ones: a word most rows of a
        // large index hold (the query's "the") is not required, unless the query has nothing
        // else. In a small index every word counts.
        let weighing: u32 = query_words
            .iter()
            .enumerate()
            .filter(|(_, w)| w.idf > 1e-6 || w.df < VERY_COMMON_ROWS)
            .fold(0, |mask, (bit, _)| mask | (1 << bit));
        let full_mask = if weighing == 0 {
            (1u32 << query_words.len()) - 1
        } else {
            weighing
        };
        // A question's many terms: BM25 alone decides (no row is asked to hold them all).
        let tiered = full_mask.count_ones() as usize <= self.schema.every_term_max;

        // Which lists are read whole: the rarest words' lists while the budget lasts, and the
        // strong lists of the others; the rest (`pending`) are probed per candidate.
        let mut budget = SCAN_BUDGET;
        // Postings not read whole: the part of a list still unread, probed per candidate.
        let mut pending: Vec<(usize, &[Posting])> = Vec::new();
        let add = |bit: usize, p: &Posting, scratch: &mut Scratch, idf: f32| {
            let d = p.doc as usize;
            let doc = &self.docs[d];
            if !doc.live || !in_scope(doc) {
                return;
            }
            if scratch.mask[d] == 0 {
                scratch.touched.push(p.doc);
            }
            scratch.score[d] += idf * impact(p.f, doc.len);
            scratch.mask[d] |= 1 << bit;
        };
        let read = |bit: usize, list: &[Posting], scratch: &mut Scratch, idf: f32| {
            for p in list {
                add(bit, p, scratch, idf);
            }
        };
        for (bit, w) in query_words.iter().enumerate() {
            let whole = w.df <= budget;
            for id in &w.ids {
                let lists = &self.lists[*id as usize];
                for (list, strong) in [(lists.strong.as_slice(), true), (&lists.weak, false)] {
                    if whole || (strong && list.len() <= budget) {
                        budget -= list.len();
                        read(bit, list, scratch, w.idf);
                    } else if strong && budget > 0 {
                        // A strong list larger than what is left: its first part is read,
                        // the rest probed.
                        let (head, rest) = list.split_at(budget);
                        budget = 0;
                        read(bit, head, scratch, w.idf);
                        pending.push((bit, rest));
                    } else if !list.is_empty() {
                        pending.push((bit, list));
                    }
                }
            }
        }
        // Too few rows found (only very common words): draw more from the unread postings,
        // in list order; they are scored like the others.
        for (bit, rest) in pending.iter_mut() {
            if scratch.touched.len() >= k * 4 {
                break;
            }
            let mut end = 0;
            while end < rest.len() && scratch.touched.len() < k * 4 {
                add(*bit, &rest[end], scratch, query_words[*bit].idf);
                end += 1;
            }
            *rest = &rest[end..];
        }
        let mut candidates: Vec<u32> = std::mem::take(&mut scratch.touched);
        if pending.iter().any(|(_, rest)| !rest.is_empty()) {
            if candidates.len() > COMPLETE_CAP {
                candidates.select_nth_unstable_by(COMPLETE_CAP, |a, b| {
                    scratch.score[*b as usize].total_cmp(&scratch.score[*a as usize])
                });
                for d in &candidates[COMPLETE_CAP..] {
                    scratch.score[*d as usize] = 0.0;
                    scratch.mask[*d as usize] = 0;
                }
                candidates.truncate(COMPLETE_CAP);
            }
            for d in &candidates {
                let len = self.docs[*d as usize].len;
                for (bit, rest) in &pending {
                    // A row holds an index word once: a word of one index word already
                    // counted for this row is in none of its other lists.
                    if query_words[*bit].ids.len() == 1
                        && scratch.mask[*d as usize] & (1 << bit) != 0
                    {
                        continue;
                    }
                    if let Ok(at) = rest.binary_search_by_key(d, |p| p.doc) {
                        let i = *d as usize;
                        scratch.score[i] += query_words[*bit].idf * impact(rest[at].f, len);
                        scratch.mask[i] |= 1 << *bit;
                    }
                }
            }
        }
        let holds_all = |d: u32| (scratch.mask[d as usize] & full_mask) == full_mask;
        let idf_sum: f32 = query_words.iter().map(|w| w.idf).sum();
        let key = |d: u32| (tiered && holds_all(d), scratch.score[d as usize]);
        let better = |a: &u32, b: &u32| {
            let (ka, kb) = (key(*a), key(*b));
            kb.0.cmp(&ka.0).then(kb.1.total_cmp(&ka.1)).then(a.cmp(b))
        };
        if candidates.len() > k {
            candidates.select_nth_unstable_by(k, better);
        }
        let mut top: Vec<u32> = candidates.iter().take(k).copied().collect();
        top.sort_by(better);
        let hits = top
            .iter()
            .map(|d| Hit {
                key: self.docs[*d as usize].key.to_string(),
                score: f64::from(scratch.score[*d as usize]),
                relevance: calibrated(scratch.score[*d as usize], idf_sum),
                all_words: tiered && holds_all(*d),
                every_word: holds_all(*d),
                lanes: crate::model::Lanes {
                    text: true,
                    meaning: false,
                },
            })
            .collect();
        for d in &candidates {
            scratch.score[*d as usize] = 0.0;
            scratch.mask[*d as usize] = 0;
        }
        candidates.clear();
        scratch.touched = candidates;
        hits
    }
}

/// A row's BM25 score as a share of the query's weight, 0 to 1 (never 1 itself: that is an
/// exact slug or name match's). BM25 gives each query word its IDF times a term factor that
/// grows with the word's weighted count towards `K1 + 1`; the ceiling is every word at that
/// limit. So the score is the share of the query's weight the row holds, each word counted by
/// how strongly: about 0.45 of its share for a word once in a text of average length, about
/// 0.9 in a title, slug or tag. A threshold therefore means the same for every query and
/// every index; and being monotonic in BM25, it never reorders a query's rows.
fn calibrated(score: f32, idf_sum: f32) -> f64 {
    let ceiling = f64::from(idf_sum) * f64::from(K1 + 1.0);
    if ceiling <= 0.0 {
        return 0.0;
    }
    (f64::from(score) / ceiling).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skills(rows: &[(&str, &str, &str, &str, &str)]) -> Index {
        let mut index = Index::new(&SKILLS);
        for (key, ws, slug, name, description) in rows {
            index.upsert(key, ws, &[slug, name, description]);
        }
        index
    }

    /// An index of memories: (key, workspace, title, content, tags).
    fn memories(rows: &[(&str, &str, &str, &str, &str)]) -> Index {
        let mut index = Index::new(&MEMORIES);
        for (key, ws, title, content, tags) in rows {
            index.upsert(key, ws, &[title, content, tags]);
        }
        index
    }

    fn keys(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.key.as_str()).collect()
    }

    /// Issue #30: a French row in a mostly English index is found by its word typed without
    /// its accent (the query is stemmed in French too, though French rows are far below a
    /// tenth of the index).
    #[test]
    fn a_french_word_is_found_in_a_mostly_english_index() {
        let english: Vec<(String, String)> = (0..40)
            .map(|i| {
                (
                    format!("e{i}"),
                    format!("the service number {i} is deployed to production every week"),
                )
            })
            .collect();
        let mut rows: Vec<(&str, &str, &str, &str, &str)> = english
            .iter()
            .map(|(k, t)| (k.as_str(), "w", "", t.as_str(), ""))
            .collect();
        rows.push((
            "fr",
            "w",
            "",
            "Le déploiement du service de facturation se fait le mardi",
            "",
        ));
        let index = memories(&rows);
        for query in ["deploiement", "déploiement", "deploiements facturation"] {
            assert_eq!(
                keys(&index.search(query, &["w"], 3)).first(),
                Some(&"fr"),
                "{query}"
            );
        }
    }

    /// Issue #29, defect 7: a long row is posted in parts, the index's lock let go between
    /// them. A query between two parts sees the row as it was before: neither half of the
    /// new one, nor a gap where the old one was.
    #[test]
    fn a_german_compound_is_found_by_its_tail() {
        let mut rows: Vec<(String, String)> = (0..30)
            .map(|i| {
                (
                    format!("en{i}"),
                    format!("The nightly job {i} rotates the logs and checks the configurations"),
                )
            })
            .collect();
        rows.push((
            "timeout".into(),
            "Bei einer Zeitüberschreitung wird die Anfrage nach zehn Sekunden abgebrochen".into(),
        ));
        rows.push((
            "survey".into(),
            "Die Kundenumfrage läuft bis Ende März und wird danach ausgewertet".into(),
        ));
        let mut index = Index::new(&MEMORIES);
        for (key, content) in &rows {
            index.upsert(key, "w", &["", content, ""]);
        }
        assert_eq!(
            keys(&index.search("Überschreitung", &["w"], 5)),
            ["timeout"]
        );
        assert_eq!(keys(&index.search("Umfrage", &["w"], 5)), ["survey"]);
        assert_eq!(
            keys(&index.search("wann endet die Umfrage", &["w"], 5))[0],
            "survey"
        );
        // A word rows hold is not looked up as a tail; a short one never is.
        assert!(
            index
                .search("rotate", &["w"], 40)
                .iter()
                .all(|h| h.key.starts_with("en"))
        );
        assert!(index.search("frage", &["w"], 5).is_empty());
        // English rows' long words are no compounds: their tails find nothing.
        assert!(index.search("figur", &["w"], 5).is_empty());
    }

    /// Each filter keeps or drops a row as the SQL of an unranked recall does (strings compared
    /// byte by byte, expiry strictly after now, every tag asked for).
    #[test]
    fn each_filter_keeps_or_drops_a_row_as_the_recalls_sql_does() {
        let mut index = Index::new(&MEMORIES);
        let row = |key: &str, active: bool, agent: Option<&str>| {
            Analyzed::new(&MEMORIES, key, "w", &["", "text", ""]).with_facets(Facets {
                active,
                kind: "note".into(),
                project: "billing".into(),
                agent_instance_id: agent.map(str::to_string),
                tags: vec!["ops".into(), "db".into()],
                expires_at: Some("2026-12-10T00:00:00Z".into()),
                updated_at: "2026-12-01T00:00:00Z".into(),
            })
        };
        index.insert(row("r", true, Some("a1")));
        index.insert(row("forgotten", false, Some("a1")));
        index.insert(row("anonymous", true, None));
        index.insert(
            Analyzed::new(&MEMORIES, "web", "w", &["", "text", ""]).with_facets(Facets {
                active: true,
                kind: "decision".into(),
                project: "bill".into(),
                agent_instance_id: Some("a2".into()),
                tags: vec!["web".into()],
                expires_at: None,
                updated_at: "2026-11-01T00:00:00Z".into(),
            }),
        );
        let base = MemoryFilter {
            now: "2026-12-05T00:00:00Z".into(),
            ..MemoryFilter::default()
        };
        let admits =
            |f: MemoryFilter, key: &str| index.admission(&f).is_some_and(|a| a.admits(key));
        let with = |change: &dyn Fn(&mut MemoryFilter)| {
            let mut f = base.clone();
            change(&mut f);
            f
        };
        assert!(admits(base.clone(), "r"));
        assert!(admits(with(&|f| f.project = Some("billing".into())), "r"));
        assert!(!admits(with(&|f| f.project = Some("bill".into())), "r"));
        assert!(admits(with(&|f| f.kind = Some("note".into())), "r"));
        assert!(!admits(with(&|f| f.kind = Some("decision".into())), "r"));
        assert!(admits(
            with(&|f| f.agent_instance_id = Some("a1".into())),
            "r"
        ));
        assert!(!admits(
            with(&|f| f.agent_instance_id = Some("a2".into())),
            "r"
        ));
        assert!(!admits(
            with(&|f| f.agent_instance_id = Some("a1".into())),
            "anonymous"
        ));
        assert!(admits(
            with(&|f| f.tags = vec!["db".into(), "ops".into()]),
            "r"
        ));
        assert!(!admits(
            with(&|f| f.tags = vec!["db".into(), "web".into()]),
            "r"
        ));
        assert!(admits(
            with(&|f| f.since = Some("2026-12-01T00:00:00Z".into())),
            "r"
        ));
        assert!(!admits(
            with(&|f| f.since = Some("2026-12-02T00:00:00Z".into())),
            "r"
        ));
        assert!(admits(
            with(&|f| f.until = Some("2026-12-01T00:00:00Z".into())),
            "r"
        ));
        assert!(!admits(
            with(&|f| f.until = Some("2026-11-30T00:00:00Z".into())),
            "r"
        ));
        // Expired at or before now: left out.
        assert!(!admits(
            with(&|f| f.now = "2026-12-10T00:00:00Z".into()),
            "r"
        ));
        // Forgotten: only when asked for.
        assert!(!admits(base.clone(), "forgotten"));
        assert!(admits(with(&|f| f.include_forgotten = true), "forgotten"));
        // A value no row has: nothing passes, and the filter is resolved to nothing at once.
        assert!(
            index
                .admission(&with(&|f| f.project = Some("nowhere".into())))
                .is_none()
        );
        assert!(
            index
                .admission(&with(&|f| f.tags = vec!["nowhere".into()]))
                .is_none()
        );
        assert!(!admits(base.clone(), "missing"));
        assert!(!base.narrows() && with(&|f| f.tags = vec!["db".into()]).narrows());
    }

    /// Issue #30, item 4: a memory recall's filters are applied while postings are read, so
    /// the `k` asked for are the best rows the filters keep, however many better rows they
    /// leave out; and they follow the row's latest facets.
    #[test]
    fn filters_are_applied_inside_the_ranking() {
        let facets = |project: &str, active: bool| Facets {
            active,
            kind: "note".into(),
            project: project.into(),
            updated_at: "2026-12-01T00:00:00Z".into(),
            ..Facets::default()
        };
        let mut index = Index::new(&MEMORIES);
        for i in 0..200 {
            index.insert(
                Analyzed::new(
                    &MEMORIES,
                    &format!("fleet{i}"),
                    "w",
                    &["harbour pilot", "the harbour pilot boards", ""],
                )
                .with_facets(facets("fleet", true)),
            );
        }
        let port = |key: &str, text: &str, active: bool| {
            Analyzed::new(&MEMORIES, key, "w", &["", text, ""]).with_facets(facets("port", active))
        };
        index.insert(port("p1", "a pilot waits in the harbour office", true));
        index.insert(port("p2", "the harbour pilot has retired", false));
        let scope = |project: Option<&str>, include_forgotten: bool| Scope {
            workspaces: vec!["w".into()],
            memories: Some(MemoryFilter {
                include_forgotten,
                now: "2026-12-05T00:00:00Z".into(),
                project: project.map(str::to_string),
                ..MemoryFilter::default()
            }),
        };
        assert_eq!(
            keys(&index.search_in("harbour pilot", &scope(Some("port"), false), 1)),
            ["p1"]
        );
        let both = index.search_in("harbour pilot", &scope(Some("port"), true), 5);
        let mut both = keys(&both);
        both.sort_unstable();
        assert_eq!(both, ["p1", "p2"]);
        // No filter: the fleet's title hits come first.
        assert!(
            index
                .search_in("harbour pilot", &scope(None, false), 5)
                .iter()
                .all(|h| h.key.starts_with("fleet"))
        );
        // A project no row has: nothing, at once.
        assert!(
            index
                .admission(scope(Some("nowhere"), false).memories.as_ref().unwrap())
                .is_none()
        );
        assert!(
            index
                .search_in("harbour pilot", &scope(Some("nowhere"), false), 5)
                .is_empty()
        );
        // The row changes (restored): its new facets count.
        index.insert(port("p2", "the harbour pilot has retired", true));
        assert_eq!(
            index
                .search_in("harbour pilot", &scope(Some("port"), false), 5)
                .len(),
            2
        );
        // Compaction keeps the facets.
        let compacted = index.compacted();
        let mut kept = keys(&compacted.search_in("harbour pilot", &scope(Some("port"), false), 5))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
        kept.sort_unstable();
        assert_eq!(kept, ["p1", "p2"]);
        let port_scope = scope(Some("port"), false);
        let admission = compacted.admission(port_scope.memories.as_ref().unwrap());
        assert!(
            admission
                .as_ref()
                .is_some_and(|a| a.admits("p1") && !a.admits("fleet3"))
        );
    }

    #[test]
    fn a_row_added_in_parts_is_seen_whole_or_not_at_all() {
        let mut index = memories(&[
            ("m1", "w", "", "the harbour pilot boards at dawn", ""),
            ("m2", "w", "", "tide tables for the northern channel", ""),
        ]);
        let long: String = (0..600).map(|i| format!("zq{i} ")).collect();
        let new = Analyzed::new(
            &MEMORIES,
            "m1",
            "w",
            &["", &format!("the harbour pilot waits {long}"), ""],
        );
        let words = new.spans.len();
        assert!(words > 600, "{words}");
        let mut adding = index.reserve(vec![new]);
        let mut parts = 0;
        while !adding.is_posted() {
            index.post(&mut adding, 64);
            parts += 1;
            // Between parts: the old m1 is found by its old words, nothing by the new ones.
            assert_eq!(keys(&index.search("dawn", &["w"], 5)), ["m1"]);
            assert!(index.search("zq5", &["w"], 5).is_empty(), "part {parts}");
            assert!(index.search("waits", &["w"], 5).is_empty(), "part {parts}");
            assert_eq!(index.len(), 2);
        }
        assert!(parts >= words / 64, "{parts} parts for {words} words");
        index.publish(adding);
        assert!(index.search("dawn", &["w"], 5).is_empty());
        assert_eq!(keys(&index.search("zq599", &["w"], 5)), ["m1"]);
        assert_eq!(keys(&index.search("waits pilot", &["w"], 5)), ["m1"]);
        assert_eq!(keys(&index.search("tide", &["w"], 5)), ["m2"]);
        assert_eq!(index.len(), 2);
    }

    /// A reservation the index no longer holds (it was compacted, or a row was added in
    /// between) posts nothing more into it; publishing adds its rows anew, whole.
    #[test]
    fn a_reservation_the_index_lost_adds_its_rows_anew() {
        let mut index = memories(&[("m1", "w", "", "lighthouse keeper's log", "")]);
        let row = |key: &str, text: &str| Analyzed::new(&MEMORIES, key, "w", &["", text, ""]);
        let mut adding = index.reserve(vec![row("m2", "buoy chart harbour entrance")]);
        index.post(&mut adding, 1);
        // Another row comes in meanwhile (a writer that did not hold the catch-up lock).
        index.insert(row("m3", "harbour master office hours"));
        index.post(&mut adding, usize::MAX);
        index.publish(adding);
        assert_eq!(keys(&index.search("buoy", &["w"], 5)), ["m2"]);
        let found = index.search("harbour", &["w"], 5);
        let mut both = keys(&found);
        both.sort_unstable();
        assert_eq!(both, ["m2", "m3"]);
        assert_eq!(index.len(), 3);
        // A compacted copy is another index: the reservation made in the old one is void.
        let mut adding = index.reserve(vec![row("m4", "fog horn maintenance")]);
        let mut copy = index.compacted();
        copy.post(&mut adding, usize::MAX);
        copy.publish(adding);
        assert_eq!(keys(&copy.search("fog horn", &["w"], 5)), ["m4"]);
        assert_eq!(copy.len(), 4);
    }

    /// Issue #29, defect 8: telling a query's language was up to a fifth of a Level 0
    /// search. It is told only among the languages rows are written in, and not tried when
    /// each of them holds its share.
    #[test]
    fn a_query_is_stemmed_in_the_languages_its_index_holds() {
        let english_rows = [
            (
                "a",
                "w",
                "deploy",
                "Deploy",
                "how we deploy the billing service to production",
            ),
            (
                "b",
                "w",
                "rollback",
                "Rollback",
                "how we roll back a release that went wrong",
            ),
        ];
        let french_query = "comment déployer le service de facturation en production";
        assert_eq!(
            skills(&english_rows).query_languages(french_query),
            vec![Lang::English],
            "no row is French: the query's language is not tried"
        );
        let mut mixed = skills(&english_rows);
        for i in 0..30 {
            mixed.upsert(
                &format!("e{i}"),
                "w",
                &[
                    "release",
                    "Release",
                    "how we check a release before it goes out to every customer",
                ],
            );
        }
        mixed.upsert(
            "f",
            "w",
            &[
                "facturation",
                "Facturation",
                "comment nous déployons le service de facturation en production chaque semaine",
            ],
        );
        assert_eq!(
            mixed.query_languages(french_query),
            vec![Lang::French, Lang::English],
            "French rows are below the share: the query's own language is told"
        );
    }

    #[test]
    fn heavy_fields_rank_first_and_other_workspaces_are_invisible() {
        let index = skills(&[
            (
                "a",
                "w1",
                "notes",
                "Notes",
                "how we deploy the billing service",
            ),
            (
                "b",
                "w1",
                "deploy billing",
                "Deploy billing",
                "the release steps",
            ),
            (
                "c",
                "w2",
                "deploy billing",
                "Deploy billing",
                "someone else's",
            ),
            ("d", "w1", "unrelated", "Unrelated", "nothing to see"),
        ]);
        let hits = index.search("deploy", &["w1"], 10);
        assert_eq!(keys(&hits), vec!["b", "a"]);
        assert!(hits[0].score > hits[1].score);
        assert_eq!(keys(&index.search("deploy", &["w2"], 10)), vec!["c"]);
        assert!(index.search("deploy", &["w3"], 10).is_empty());
    }

    #[test]
    fn rows_holding_every_word_come_first_even_with_a_lower_score() {
        let index = skills(&[
            ("one", "w", "zebra zebra", "Zebra", "a zebra"),
            ("both", "w", "misc", "Misc", "zebra and lion"),
            ("filler1", "w", "x", "X", "lion"),
            ("filler2", "w", "y", "Y", "other"),
        ]);
        let hits = index.search("zebra lion", &["w"], 10);
        assert_eq!(hits[0].key, "both");
        assert!(hits[0].all_words);
        assert!(!hits[1].all_words);
        assert!(hits[1].score > hits[0].score, "{hits:?}");
    }

    #[test]
    fn a_word_most_rows_of_a_large_index_hold_is_not_required_for_every_word() {
        // "team" is no stop word: held by most rows, BM25 gives it (almost) no weight.
        let mut rows = vec![
            ("both", "w", "misc", "Misc", "zebra and lion"),
            ("one", "w", "zebra zebra", "Zebra", "team zebra"),
        ];
        let fillers: Vec<String> = (0..VERY_COMMON_ROWS).map(|i| format!("f{i}")).collect();
        for f in &fillers {
            rows.push((f.as_str(), "w", "x", "X", "team filler"));
        }
        let index = skills(&rows);
        let hits = index.search("team zebra lion", &["w"], 10);
        assert_eq!(hits[0].key, "both");
        assert!(hits[0].all_words, "{hits:?}");
        // With nothing else to go by, the common word itself is required.
        assert!(index.search("team", &["w"], 20).iter().all(|h| h.all_words));
        // In a small index, a word most rows hold still counts.
        let small = skills(&rows[..12]);
        let hits = small.search("team zebra lion", &["w"], 10);
        assert_eq!(hits[0].key, "both");
        assert!(!hits[0].all_words, "{hits:?}");
    }

    #[test]
    fn a_question_to_the_memories_is_ranked_by_bm25_alone() {
        // Four terms: no memory is asked to hold them all, so the one naming the rare ones
        // outranks the one that merely holds every word.
        let index = memories(&[
            (
                "answer",
                "w",
                "",
                "caroline joined the lgbtq support group",
                "",
            ),
            (
                "every",
                "w",
                "",
                "caroline went to a group meeting, support was weak",
                "",
            ),
            ("f1", "w", "", "group", ""),
            ("f2", "w", "", "support", ""),
            ("f3", "w", "", "went", ""),
        ]);
        let hits = index.search(
            "When did Caroline go to the LGBTQ support group?",
            &["w"],
            10,
        );
        assert!(hits.iter().all(|h| !h.all_words), "{hits:?}");
        assert_eq!(hits[0].key, "answer", "{hits:?}");
    }

    #[test]
    fn a_long_level_0_query_still_puts_the_skills_holding_every_word_first() {
        // The first words of a skill's description, typed to find it: the skill holding them
        // all comes before one naming a rare word of them in its slug.
        let index = skills(&[
            (
                "wanted",
                "w",
                "notes-sync",
                "Notes sync",
                "sync obsidian notes to a remote vault nightly",
            ),
            ("loud", "w", "obsidian", "Obsidian", "open the app"),
            ("f1", "w", "x", "X", "sync"),
            ("f2", "w", "y", "Y", "remote"),
            ("f3", "w", "z", "Z", "vault"),
        ]);
        let hits = index.search("Sync Obsidian notes to a remote vault", &["w"], 10);
        assert_eq!(hits[0].key, "wanted", "{hits:?}");
        assert!(hits[0].all_words, "{hits:?}");
        assert!(!hits[1].all_words, "{hits:?}");
    }

    #[test]
    fn chinese_japanese_and_accents_are_found() {
        let index = skills(&[
            (
                "zh",
                "w",
                "smoke",
                "冒烟测试",
                "部署前必须先在预发布环境运行冒烟测试",
            ),
            (
                "ja",
                "w",
                "deploy",
                "デプロイ",
                "本番環境へデプロイする前に必ずステージングで確認する",
            ),
            (
                "fr",
                "w",
                "deploiement",
                "Déploiement",
                "Le déploiement passe toujours par la préproduction.",
            ),
            ("en", "w", "other", "Other", "nothing related"),
        ]);
        for (query, expected) in [
            ("冒烟测试", "zh"),
            ("预发布环境", "zh"),
            ("部署", "zh"),
            ("ステージング", "ja"),
            ("本番環境", "ja"),
            ("deploiement", "fr"),
            ("déploiement", "fr"),
            ("preproduction", "fr"),
        ] {
            let hits = index.search(query, &["w"], 10);
            assert_eq!(
                hits.first().map(|h| h.key.as_str()),
                Some(expected),
                "{query}: {hits:?}"
            );
        }
    }

    #[test]
    fn words_are_stemmed_and_the_last_one_is_a_prefix() {
        let index = skills(&[
            ("a", "w", "deployment", "Deployment", "deploying services"),
            ("b", "w", "billing", "Billing", "invoices"),
        ]);
        assert_eq!(keys(&index.search("deploys", &["w"], 10)), vec!["a"]);
        assert_eq!(keys(&index.search("deplo", &["w"], 10)), vec!["a"]);
        // Only the last word is a prefix.
        assert_eq!(keys(&index.search("deplo billing", &["w"], 10)), vec!["b"]);
        assert!(index.search("-- ** ", &["w"], 10).is_empty());
    }

    #[test]
    fn upsert_replaces_and_remove_forgets() {
        let mut index = skills(&[("a", "w", "alpha", "Alpha", "first")]);
        index.upsert("a", "w", &["beta", "Beta", "second"]);
        assert_eq!(index.len(), 1);
        assert!(index.search("alpha", &["w"], 10).is_empty());
        assert_eq!(keys(&index.search("beta", &["w"], 10)), vec!["a"]);
        assert!(index.remove("a"));
        assert!(!index.remove("a"));
        assert!(index.search("beta", &["w"], 10).is_empty());
        assert!(index.is_empty());
    }

    /// A tiny deterministic generator, so the corpora below are the same on every run.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    fn corpus(rows: usize, vocabulary: usize, seed: u64) -> Vec<(String, String, Vec<String>)> {
        let mut rng = Lcg(seed);
        let word = |rng: &mut Lcg| format!("w{:05}", rng.next(vocabulary));
        (0..rows)
            .map(|i| {
                let name: Vec<String> = (0..3).map(|_| word(&mut rng)).collect();
                let description: Vec<String> = (0..12).map(|_| word(&mut rng)).collect();
                (
                    format!("k{i}"),
                    format!("ws{}", rng.next(3)),
                    vec![name.join(" "), name.join(" "), description.join(" ")],
                )
            })
            .collect()
    }

    /// BM25 over every row, as the index defines it, without any bound on the work.
    fn exhaustive(
        rows: &[(String, String, Vec<String>)],
        query: &[&str],
        workspaces: &[&str],
        k: usize,
    ) -> Vec<(String, bool)> {
        let counts: Vec<(HashMap<String, f32>, u32)> = rows
            .iter()
            .map(|(_, _, fields)| {
                let mut c = HashMap::new();
                let mut len = 0;
                for (i, text) in fields.iter().enumerate() {
                    analyze::row_terms(text, Lang::English, |t| {
                        len += 1;
                        *c.entry(t.to_string()).or_insert(0.0) += SKILLS.weights[i];
                    });
                }
                (c, len)
            })
            .collect();
        let n = rows.len() as f32;
        let avgdl = counts.iter().map(|(_, l)| *l as f32).sum::<f32>() / n;
        let idfs: Vec<(String, f32)> = query
            .iter()
            .map(|q| {
                let stem = analyze::query_terms(q, &[Lang::English], 1)[0].variants[0].clone();
                let df = counts.iter().filter(|(c, _)| c.contains_key(&stem)).count() as f32;
                let idf = ((n - df + 0.5) / (df + 0.5)).ln();
                (stem, if idf > 0.0 { idf } else { 1e-6 })
            })
            .collect();
        // Ties keep the order rows were added in, as the index does.
        let mut scored: Vec<(String, bool, f32)> = rows
            .iter()
            .zip(&counts)
            .filter(|((_, ws, _), _)| workspaces.contains(&ws.as_str()))
            .filter_map(|((key, _, _), (c, len))| {
                let mut score = 0.0;
                let mut held = 0;
                for (stem, idf) in &idfs {
                    if let Some(f) = c.get(stem) {
                        held += 1;
                        score +=
                            *idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * *len as f32 / avgdl));
                    }
                }
                (held > 0).then(|| (key.clone(), held == query.len(), score))
            })
            .collect();
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)));
        scored
            .into_iter()
            .take(k)
            .map(|(k, all, _)| (k, all))
            .collect()
    }

    #[test]
    fn within_the_budget_the_ranking_is_exact_bm25() {
        let rows = corpus(2000, 3000, 7);
        let mut index = Index::new(&SKILLS);
        for (key, ws, fields) in &rows {
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            index.upsert(key, ws, &fields);
        }
        let mut rng = Lcg(99);
        for _ in 0..200 {
            let query: Vec<String> = (0..1 + rng.next(3))
                .map(|_| format!("w{:05}", rng.next(3000)))
                .collect();
            let query: Vec<&str> = query.iter().map(String::as_str).collect();
            // Fixed-width words: the last word, a prefix, matches only itself.
            let text = query.join(" ");
            let got: Vec<(String, bool)> = index
                .search(&text, &["ws0", "ws2"], 10)
                .into_iter()
                .map(|h| (h.key, h.all_words))
                .collect();
            assert_eq!(
                got,
                exhaustive(&rows, &query, &["ws0", "ws2"], 10),
                "{text}"
            );
        }
    }

    #[test]
    fn compaction_keeps_every_answer() {
        let rows = corpus(3000, 500, 3);
        let mut churned = Index::new(&SKILLS);
        let mut fresh = Index::new(&SKILLS);
        for (i, (key, ws, fields)) in rows.iter().enumerate() {
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            churned.upsert(key, ws, &fields);
            if i % 2 == 1 {
                fresh.upsert(key, ws, &fields);
            }
        }
        let before = churned.docs.len();
        for (key, _, _) in rows.iter().step_by(2) {
            assert!(churned.remove(key));
        }
        assert!(churned.docs.len() < before, "no compaction happened");
        assert_eq!(churned.len(), fresh.len());
        churned = churned.compacted();
        for w in 0..500 {
            let q = format!("w{w:05}");
            assert_eq!(
                churned.search(&q, &["ws0", "ws1", "ws2"], 10),
                fresh.search(&q, &["ws0", "ws1", "ws2"], 10),
                "{q}"
            );
        }
    }

    #[test]
    fn very_common_words_are_answered_from_their_heavy_fields_within_the_budget() {
        // Every row holds "common" in its description; one in ten names it.
        let mut index = Index::new(&SKILLS);
        for i in 0..40_000 {
            let name = if i % 10 == 0 { "common thing" } else { "thing" };
            index.upsert(&format!("k{i}"), "w", &["x", name, "a common description"]);
        }
        let hits = index.search("common ", &["w"], 10);
        assert_eq!(hits.len(), 10);
        for h in &hits {
            let n: usize = h.key[1..].parse().unwrap_or(1);
            assert_eq!(n % 10, 0, "{h:?} does not name the word");
        }
        // Only common words, none in a heavy field: still answered.
        let hits = index.search("description ", &["w"], 10);
        assert_eq!(hits.len(), 10);
    }
}
