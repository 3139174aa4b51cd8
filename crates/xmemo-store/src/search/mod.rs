//! Search: the one place rows are ranked, for Level 0 (skills) and memory recall alike,
//! through one entry point, [`SqlStore::ranked`] (issue #30: one search module).
//!
//! | part | job |
//! |---|---|
//! | [`analyze`] | text analysis per language: words, stems, stop words, CJK pairs, accents |
//! | [`lexical`] | the in-memory inverted index and its BM25 ranking, 0–1 relevance |
//! | [`vectors`] | the semantic lane's int8 vectors and the nearest rows to a query |
//! | [`fusion`] | the two lanes' ranked lists made one |
//! | [`scope`] | which rows a query may rank: workspaces, a recall's filters |
//! | [`query`] | a query's words, its exact slug/name keys, the public score |
//! | [`follow`] | the log catch-up: each node's indexes kept in step with the database |
//! | [`stored_vectors`] | the vectors kept in step with the `embeddings` table |
//!
//! The scope is applied inside both lanes while they rank, so the `k` rows asked for are
//! the best rows the scope keeps: no lane takes candidates from outside it, and no caller
//! ranks a second time because its filters left too few. The callers (`sql/skills.rs`,
//! `sql/memories.rs`) only hydrate the ranked keys.

pub mod analyze;
pub(crate) mod follow;
pub mod fusion;
pub mod lexical;
pub mod query;
pub mod scope;
pub(crate) mod stored_vectors;
pub mod vectors;

pub use lexical::Hit;
pub use scope::{Facets, MemoryFilter, Scope};

use crate::StoreResult;
use crate::model::Semantic;
use crate::sql::{Dialect, SqlStore};
use follow::Kind;

/// Candidates each lane brings to the fusion (at least; `2 × k` when more are asked for).
const CANDIDATES: usize = 50;

impl<D: Dialect> SqlStore<D> {
    /// The `k` best rows of `kind` for `text` within `scope`, best first: by full text, fused
    /// with the semantic lane when the query carries its meaning (and this node holds that
    /// model's vectors). The indexes hold every change committed before the call
    /// ([`follow`]).
    pub(crate) async fn ranked(
        &self,
        kind: Kind,
        text: &str,
        scope: &Scope,
        k: usize,
        semantic: Option<&Semantic>,
    ) -> StoreResult<Vec<Hit>> {
        self.current_for_query().await?;
        let Some(semantic) = semantic else {
            return Ok(self.fulltext.read().get(kind).search_in(text, scope, k));
        };
        self.load_vectors(&semantic.model).await?;
        let n = (k * 2).max(CANDIDATES);
        let query = vectors::quantize(&semantic.vector);
        let indexes = self.fulltext.read();
        let index = indexes.get(kind);
        let mut lexical = index.search_in(text, scope, n);
        let vectors = self.fulltext.vectors_read();
        let Some(vectors) = vectors.as_ref().filter(|i| i.model() == semantic.model) else {
            lexical.truncate(k);
            return Ok(lexical);
        };
        let admission = match &scope.memories {
            None => None,
            Some(filter) => match index.admission(filter) {
                Some(admission) => Some(admission),
                // The filter names a value no row has.
                None => return Ok(vec![]),
            },
        };
        let workspaces: Vec<&str> = scope.workspaces.iter().map(String::as_str).collect();
        let nearest = vectors.nearest_in(
            kind as u8,
            &workspaces,
            &query,
            n,
            |key| admission.as_ref().is_none_or(|a| a.admits(key)),
            admission.as_ref().is_some_and(|a| a.narrows()),
        );
        Ok(fusion::fuse(
            &lexical,
            &nearest,
            |key| vectors.similarity(kind as u8, key, &query),
            semantic.text_weight,
            semantic.method,
            k,
        ))
    }
}
