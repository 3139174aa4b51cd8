//! Query handling shared by the backends' Level 0 search (the ranking itself is
//! [`super::lexical`]).

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

/// Public score, 0 to 1 (six decimals): an exact slug or name match is 1, other rows their
/// calibrated relevance ([`super::lexical::Hit::relevance`]).
pub fn score(exact: bool, relevance: f64) -> f64 {
    if exact {
        return 1.0;
    }
    (relevance.clamp(0.0, 1.0) * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_keys() {
        let k = exact_key(" Deployment Procedure ");
        assert_eq!(k.slug, "deployment-procedure");
        assert_eq!(k.name, "deployment procedure");
    }
}
