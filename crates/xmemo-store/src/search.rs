//! Query handling shared by the backends' Level 0 search.

/// Keys compared for an exact match: the query as a slug, and the query as a lowercase name.
pub struct ExactKey {
    pub slug: String,
    pub name: String,
}

pub fn exact_key(query: &str) -> ExactKey {
    let name = query.trim().to_lowercase();
    let slug = name
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    ExactKey { slug, name }
}

/// Words of the query (letters and digits), lowercased, at most 16.
pub fn terms(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(16)
        .map(str::to_lowercase)
        .collect()
}

/// An FTS5 MATCH expression: any of the words, each quoted (so no query syntax reaches FTS5)
/// and the last one as a prefix, for search-as-you-type. `None` when the query has no word.
pub fn fts_expression(query: &str) -> Option<String> {
    let terms = terms(query);
    let last = terms.len().checked_sub(1)?;
    Some(
        terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i == last {
                    format!("\"{t}\"*")
                } else {
                    format!("\"{t}\"")
                }
            })
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

/// One word of a query; the last word of a query is also matched as a prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Term {
    pub word: String,
    pub prefix: bool,
}

/// The query's words ([`terms`]) without repeats, the last one as a prefix.
pub fn query_terms(query: &str) -> Vec<Term> {
    let words = terms(query);
    let last = words.len().saturating_sub(1);
    let mut out: Vec<Term> = Vec::with_capacity(words.len());
    for (i, word) in words.into_iter().enumerate() {
        let prefix = i == last;
        if let Some(same) = out.iter_mut().find(|t| t.word == word) {
            same.prefix |= prefix;
        } else {
            out.push(Term { word, prefix });
        }
    }
    out
}

/// An FTS5 expression ORing the given terms, each quoted, prefixes starred.
pub fn fts_terms(terms: &[Term]) -> Option<String> {
    fts_joined(terms.iter(), " OR ")
}

fn fts_joined<'t>(terms: impl Iterator<Item = &'t Term>, operator: &str) -> Option<String> {
    let quoted: Vec<String> = terms
        .map(|t| {
            if t.prefix {
                format!("\"{}\"*", t.word)
            } else {
                format!("\"{}\"", t.word)
            }
        })
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(operator))
}

/// How many index rows one query may score, summed over the words it ranks by: the bound on
/// a Level 0 search's (and a memory recall's) ranking work, whatever the size of the index.
pub const SCORED_ROWS_BUDGET: u64 = 200;

/// Words matching at most this many rows may still weigh in the score of the rows the rarer
/// words select ([`Plan::Ranked`]'s `boost`): BM25 counts every row holding a word of its
/// expression once per query, which stays cheap up to here. Counting is capped here too.
pub const BOOST_MAX_ROWS: u64 = 5_000;

/// Rows a query made only of very common words draws its answers from (per tier).
pub const CAPPED_CANDIDATES: u64 = 200;

/// How a full-text query is answered, decided from how many rows each word matches
/// (counted up to [`BOOST_MAX_ROWS`], so counting is bounded too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Rank the rows matching any of `select` (the rarest words of the query, as many as fit
    /// in [`SCORED_ROWS_BUDGET`]; when even the rarest does not fit, every word below
    /// [`BOOST_MAX_ROWS`]); `boost` (words of middle frequency) adds to the score of
    /// those rows without selecting more. Words more common than [`BOOST_MAX_ROWS`] are
    /// pruned when rarer ones are present: they add little to the ranking and would make it
    /// count or score most of the index.
    Ranked { select: Vec<Term>, boost: Vec<Term> },
    /// No word fits [`SCORED_ROWS_BUDGET`], but these (every word below [`BOOST_MAX_ROWS`])
    /// are not very common. Where an index can, it scores only the strongest of their rows
    /// (those naming a word in a heavily weighted field, and those holding every word) and
    /// draws the rest unscored; otherwise it ranks every match, like [`Plan::Ranked`].
    Wide(Vec<Term>),
    /// Every word matches [`BOOST_MAX_ROWS`] rows or more: the answers come from a bounded number
    /// of matching rows (those naming a word in their slug/name/title first), not from
    /// scoring every match.
    Capped(Vec<Term>),
}

/// The plan for terms with their (capped) row counts.
pub fn plan(counted: Vec<(Term, u64)>) -> Plan {
    let mut sorted = counted;
    sorted.sort_by_key(|(_, n)| *n);
    match sorted.first() {
        None => Plan::Capped(vec![]),
        Some((_, rarest)) if *rarest >= BOOST_MAX_ROWS => {
            Plan::Capped(sorted.into_iter().map(|(t, _)| t).collect())
        }
        // No word fits the budget but some are not very common: rank every match of those
        // (as before the plan existed). Capping here drew unscored rows and lost the answer
        // of two-rare-word queries at 100k skills (hit@5 0.637, see docs/benchmarks.md).
        Some((_, rarest)) if *rarest > SCORED_ROWS_BUDGET => Plan::Wide(
            sorted
                .into_iter()
                .filter(|(_, n)| *n < BOOST_MAX_ROWS)
                .map(|(t, _)| t)
                .collect(),
        ),
        Some(_) => {
            let (mut select, mut boost) = (Vec::new(), Vec::new());
            let mut sum = 0;
            for (term, n) in sorted {
                // Counts are cached for a while (see `TermCounts`): a word that matched
                // nothing may match a skill saved since, so it is kept (it costs nothing).
                if boost.is_empty() && sum + n <= SCORED_ROWS_BUDGET {
                    sum += n;
                    select.push(term);
                } else if n < BOOST_MAX_ROWS {
                    boost.push(term);
                }
            }
            Plan::Ranked { select, boost }
        }
    }
}

/// A capped plan's term, given how many rows hold its word whole: a prefix whose word alone
/// fills the capped draw is matched whole (the longer words add only cost); a word that may
/// still be being typed stays a prefix.
pub fn capped_term(term: Term, whole_rows: u64) -> Term {
    if term.prefix && whole_rows >= CAPPED_CANDIDATES {
        Term {
            prefix: false,
            ..term
        }
    } else {
        term
    }
}

/// The FTS5 expression of a ranked plan: rows matching a `select` word, scored over every
/// word: `(S) AND (S OR B OR B)`. The second clause holds for every selected row. FTS5's bm25
/// sums over the expression's phrases, so S, written twice, would count twice against B once
/// (the memory benchmark's hit@5 fell from 0.977 to 0.948 at 100k so); with B written twice too
/// every word counts twice, and the score is exactly twice that of `S OR B` ([`ranked_repeats`] halves it back).
pub fn fts_ranked(select: &[Term], boost: &[Term]) -> Option<String> {
    let s = fts_terms(select)?;
    Some(match fts_terms(boost) {
        None => s,
        Some(b) => format!("({s}) AND ({s} OR {b} OR {b})"),
    })
}

/// An FTS5 expression requiring every ranked word (`select` and `boost`), each once; `None`
/// for fewer than two (then it is the ranked expression itself).
pub fn fts_all(select: &[Term], boost: &[Term]) -> Option<String> {
    if select.len() + boost.len() < 2 {
        return None;
    }
    fts_joined(select.iter().chain(boost), " AND ")
}

/// How many times [`fts_ranked`] writes each word (as `f64` SQL text): bm25 over its
/// expression divided by this is the score of the plain OR of the words.
pub fn ranked_repeats(boost: &[Term]) -> &'static str {
    if boost.is_empty() { "1.0" } else { "2.0" }
}

/// Public score: higher is better; exact slug/name matches are lifted above every other hit.
pub fn score(exact: bool, relevance: f64) -> f64 {
    let relevance = (relevance.max(0.0) * 1e6).round() / 1e6;
    if exact { 1000.0 + relevance } else { relevance }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_quote_words_and_drop_syntax() {
        assert_eq!(
            fts_expression("deploy  prod").as_deref(),
            Some("\"deploy\" OR \"prod\"*")
        );
        assert_eq!(
            fts_expression("a\" OR NEAR(b)").as_deref(),
            Some("\"a\" OR \"or\" OR \"near\" OR \"b\"*")
        );
        assert_eq!(fts_expression("  -- ** "), None);
    }

    #[test]
    fn terms_dedupe_and_prefix_the_last() {
        let t = query_terms("Deploy prod deploy");
        assert_eq!(
            t,
            vec![
                Term {
                    word: "deploy".into(),
                    prefix: true
                },
                Term {
                    word: "prod".into(),
                    prefix: false
                },
            ]
        );
        assert_eq!(fts_terms(&t).as_deref(), Some("\"deploy\"* OR \"prod\""));
    }

    #[test]
    fn plans_prune_common_words_and_cap_all_common_queries() {
        let t = |w: &str| Term {
            word: w.into(),
            prefix: false,
        };
        let (big, mid) = (BOOST_MAX_ROWS, SCORED_ROWS_BUDGET + 1);
        assert_eq!(
            plan(vec![
                (t("the"), big),
                (t("rare"), 7),
                (t("mid"), mid),
                (t("low"), 90)
            ]),
            Plan::Ranked {
                select: vec![t("rare"), t("low")],
                boost: vec![t("mid")]
            }
        );
        assert_eq!(
            plan(vec![(t("a"), 150), (t("b"), 150)]),
            Plan::Ranked {
                select: vec![t("a")],
                boost: vec![t("b")]
            }
        );
        assert_eq!(
            plan(vec![(t("the"), big), (t("of"), mid)]),
            Plan::Wide(vec![t("of")])
        );
        assert_eq!(
            plan(vec![(t("x"), mid), (t("the"), big), (t("y"), big - 1)]),
            Plan::Wide(vec![t("x"), t("y")])
        );
        assert_eq!(
            plan(vec![(t("the"), big), (t("a"), big)]),
            Plan::Capped(vec![t("the"), t("a")])
        );
        assert_eq!(
            plan(vec![(t("new"), 0)]),
            Plan::Ranked {
                select: vec![t("new")],
                boost: vec![]
            }
        );
        assert_eq!(fts_all(&[t("a")], &[]), None);
        assert_eq!(
            fts_all(&[t("a")], &[t("b"), t("c")]).as_deref(),
            Some("\"a\" AND \"b\" AND \"c\"")
        );
        assert_eq!(
            fts_ranked(&[t("a")], &[t("b")]).as_deref(),
            Some("(\"a\") AND (\"a\" OR \"b\" OR \"b\")")
        );
    }

    #[test]
    fn a_capped_prefix_is_matched_whole_only_when_the_word_fills_the_draw() {
        let prefix = Term {
            word: "dep".into(),
            prefix: true,
        };
        assert!(!capped_term(prefix.clone(), CAPPED_CANDIDATES).prefix);
        assert_eq!(capped_term(prefix.clone(), CAPPED_CANDIDATES - 1), prefix);
        assert_eq!(capped_term(prefix.clone(), 0), prefix);
        let whole = Term {
            word: "deploy".into(),
            prefix: false,
        };
        assert_eq!(capped_term(whole.clone(), 0), whole);
    }

    #[test]
    fn exact_keys() {
        let k = exact_key(" Deployment Procedure ");
        assert_eq!(k.slug, "deployment-procedure");
        assert_eq!(k.name, "deployment procedure");
    }
}
