//! Level 0 relevance on queries with known answers, so a faster search is shown not to rank
//! worse: an exact slug and an exact name must come first; a skill's two rarest words, and
//! those two with its most common word added, must find it in the top five.
//! "Rarest" is by the number of seeded skills holding the word (name and description, the
//! text Level 0 indexes).
//!
//! A word query has a known answer only when its words identify the skill: at most five
//! seeded skills hold all of them (else no ranking can put this one in the top five, however
//! good). Drawn skills whose words do not are skipped, and counted. (An earlier kind, the
//! rarest word with the most common one, had no known answer at 100k skills: the rarest word
//! of a skill is held by ~50–150 skills there, the common word by ~90 %.)

use crate::corpus::{Corpus, Rng};
use crate::load::{Seeded, snippet};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    ExactSlug,
    ExactName,
    TwoRareWords,
    RareTwoAndCommon,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::ExactSlug,
        Kind::ExactName,
        Kind::TwoRareWords,
        Kind::RareTwoAndCommon,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::ExactSlug => "exact slug (must be first)",
            Kind::ExactName => "exact name (must be first)",
            Kind::TwoRareWords => "its two rarest words",
            Kind::RareTwoAndCommon => "its 2 rarest + its most common word",
        }
    }
}

#[derive(Default, Clone, Debug)]
pub struct Score {
    pub queries: usize,
    /// The known answer (or, for an exact name several skills share, a skill of that name)
    /// ranked first.
    pub first: usize,
    pub hit5: usize,
    /// Drawn skills whose query words more than five skills hold (no known answer).
    pub skipped: usize,
}

pub struct Relevance {
    pub by_kind: Vec<(Kind, Score)>,
}

impl Relevance {
    pub fn hit5(&self) -> f64 {
        let (q, h) = self
            .by_kind
            .iter()
            .fold((0, 0), |(q, h), (_, s)| (q + s.queries, h + s.hit5));
        h as f64 / q.max(1) as f64
    }

    /// Exact slug and exact name queries answered by an exact match first.
    pub fn exact_first(&self) -> f64 {
        let (q, f) = self
            .by_kind
            .iter()
            .filter(|(k, _)| matches!(k, Kind::ExactSlug | Kind::ExactName))
            .fold((0, 0), |(q, f), (_, s)| (q + s.queries, f + s.first));
        f as f64 / q.max(1) as f64
    }

    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, s)| {
                format!(
                    "    {:<36} first {:.3}  hit@5 {:.3}  ({} queries{})",
                    k.label(),
                    s.first as f64 / s.queries.max(1) as f64,
                    s.hit5 as f64 / s.queries.max(1) as f64,
                    s.queries,
                    if s.skipped > 0 {
                        format!(
                            "; {} drawn skills skipped: more than {MAX_HOLDERS} skills hold their words",
                            s.skipped
                        )
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        out.push(format!(
            "    {:<36} exact first {:.3}  hit@5 {:.3}  (target: exact first 1.000, hit@5 >= 0.95: {})",
            "all",
            self.exact_first(),
            self.hit5(),
            if self.hit5() >= 0.95 && self.exact_first() >= 1.0 {
                "met"
            } else {
                "MISSED"
            }
        ));
        out
    }
}

/// A word query identifies its skill when at most this many skills hold all its words.
const MAX_HOLDERS: usize = 5;

/// Draws per query before a kind gives up finding an identifying one.
const DRAWS_PER_QUERY: usize = 50;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `per_kind` queries of each kind, from skills picked at random among `seeded`.
pub async fn check(
    base: &str,
    key: &str,
    corpus: &Corpus,
    seeded: &[Seeded],
    per_kind: usize,
    seed: u64,
) -> Result<Relevance> {
    if seeded.is_empty() {
        bail!("no skill to query");
    }
    // Document frequency over what Level 0 indexes.
    let mut df: HashMap<String, usize> = HashMap::new();
    let mut texts = Vec::with_capacity(seeded.len());
    let mut holders_of: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, s) in seeded.iter().enumerate() {
        let (_, body) = corpus.skill(s.index);
        let name = body["name"].as_str().unwrap_or("").to_string();
        let description = body["description"].as_str().unwrap_or("").to_string();
        let mut ws = words(&name);
        ws.extend(words(&description));
        ws.sort();
        ws.dedup();
        for w in &ws {
            *df.entry(w.clone()).or_default() += 1;
            holders_of.entry(w.clone()).or_default().push(i);
        }
        texts.push((name, ws));
    }
    // Skills holding every word of `query` (through the postings of its rarest word).
    let holders = |query: &[&String]| -> usize {
        let Some(rarest) = query
            .iter()
            .min_by_key(|w| df.get(w.as_str()).copied().unwrap_or(0))
        else {
            return 0;
        };
        holders_of
            .get(rarest.as_str())
            .map(|skills| {
                skills
                    .iter()
                    .filter(|&&i| query.iter().all(|w| texts[i].1.binary_search(w).is_ok()))
                    .count()
            })
            .unwrap_or(0)
    };
    let client = crate::load::client()?;
    let mut rng = Rng::new(seed ^ 0x5e1e_7a9c);
    let mut by_kind = Vec::new();
    for kind in Kind::ALL {
        let mut score = Score::default();
        for _ in 0..per_kind {
            let mut drawn = None;
            for _ in 0..DRAWS_PER_QUERY {
                let i = rng.below(seeded.len());
                let (name, ws) = &texts[i];
                let mut by_df: Vec<&String> = ws.iter().collect();
                by_df.sort_by_key(|w| (df.get(*w).copied().unwrap_or(0), (*w).clone()));
                let query_words: Vec<&String> = match (kind, by_df.as_slice()) {
                    (Kind::ExactSlug | Kind::ExactName, _) => vec![],
                    (Kind::TwoRareWords, [a, b, ..]) => vec![a, b],
                    (Kind::RareTwoAndCommon, [a, b, .., c]) => vec![a, b, c],
                    _ => continue,
                };
                if !query_words.is_empty() && holders(&query_words) > MAX_HOLDERS {
                    score.skipped += 1;
                    continue;
                }
                let query = match kind {
                    Kind::ExactSlug => seeded[i].slug.clone(),
                    Kind::ExactName => name.clone(),
                    _ => query_words
                        .iter()
                        .map(|w| w.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                };
                drawn = Some((i, query));
                break;
            }
            let Some((i, query)) = drawn else { continue };
            let s = &seeded[i];
            let name = &texts[i].0;
            let url = format!(
                "{base}/api/v1/skills?query={}&limit=10",
                crate::percent::encode(&query)
            );
            let resp = client
                .get(&url)
                .bearer_auth(key)
                .send()
                .await
                .with_context(|| format!("GET {url}"))?;
            let status = resp.status();
            let bytes = resp.bytes().await?;
            if !status.is_success() {
                bail!(
                    "relevance query {query:?}: HTTP {status}: {}",
                    snippet(&bytes)
                );
            }
            let v: Value = serde_json::from_slice(&bytes).context("not JSON")?;
            let hits: Vec<(String, String)> = v
                .pointer("/data/skills")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|h| {
                            (
                                h["slug"].as_str().unwrap_or("").to_string(),
                                h["name"].as_str().unwrap_or("").to_lowercase(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            score.queries += 1;
            let first_ok = match kind {
                Kind::ExactName => hits.first().is_some_and(|(_, n)| *n == name.to_lowercase()),
                _ => hits.first().is_some_and(|(slug, _)| *slug == s.slug),
            };
            if first_ok {
                score.first += 1;
            }
            let in_top5 = hits.iter().take(5).any(|(slug, _)| *slug == s.slug);
            // An exact name shared by more than five skills cannot put this one in the top
            // five: exact-first is what that query checks.
            if in_top5 || (kind == Kind::ExactName && first_ok) {
                score.hit5 += 1;
            }
        }
        by_kind.push((kind, score));
    }
    Ok(Relevance { by_kind })
}
