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
    fn exact_keys() {
        let k = exact_key(" Deployment Procedure ");
        assert_eq!(k.slug, "deployment-procedure");
        assert_eq!(k.name, "deployment procedure");
    }
}
