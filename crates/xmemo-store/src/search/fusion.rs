//! The two lanes' ranked lists made one: each lane's public score (0 to 1), weighted, or
//! reciprocal rank fusion. Pure.

use super::lexical::Hit;
use crate::model::{FusionMethod, Lanes};
use std::collections::HashMap;

/// How near a row's meaning is to the query's, 0 to 1: the cosine, negative ones at 0 (for
/// the sentence models served here, unrelated texts sit near 0 and paraphrases above 0.5).
pub fn meaning_relevance(similarity: f64) -> f64 {
    similarity.clamp(0.0, 1.0)
}

/// Reciprocal rank fusion's constant (Cormack et al.: ranks past the first few weigh
/// alike).
const RRF_K: f64 = 60.0;

/// The two lanes' candidates fused on their public scales (both 0 to 1, comparable across
/// queries: [`super::lexical::Hit::relevance`] and [`meaning_relevance`]):
/// `text_weight · text + (1 − text_weight) · meaning`. A row without a vector yet is scored by
/// its text alone. Ranked by that score, or with [`FusionMethod::Rrf`] by
/// `text_weight / (60 + text rank) + (1 − text_weight) / (60 + meaning rank)` (a lane that did
/// not find the row adds nothing), the score staying the weighted one; either way after the
/// rows holding every word of a short query (`Hit::all_words`), as full text ranks. The `k`
/// best, best first, with the lanes that found them.
pub fn fuse(
    lexical: &[Hit],
    nearest: &[(String, f32)],
    similarity_of: impl Fn(&str) -> Option<f32>,
    text_weight: f64,
    method: FusionMethod,
    k: usize,
) -> Vec<Hit> {
    let w = text_weight.clamp(0.0, 1.0);
    let mut candidates: Vec<(Hit, Option<f64>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for h in lexical {
        at.insert(h.key.clone(), candidates.len());
        let mut hit = h.clone();
        hit.lanes.text = true;
        candidates.push((hit, similarity_of(&h.key).map(f64::from)));
    }
    for (key, sim) in nearest {
        match at.get(key) {
            Some(&i) => candidates[i].0.lanes.meaning = true,
            None => {
                at.insert(key.clone(), candidates.len());
                candidates.push((
                    Hit {
                        key: key.clone(),
                        score: 0.0,
                        relevance: 0.0,
                        all_words: false,
                        every_word: false,
                        lanes: Lanes {
                            text: false,
                            meaning: true,
                        },
                    },
                    Some(f64::from(*sim)),
                ));
            }
        }
    }
    let similarities: Vec<Option<f64>> = candidates.iter().map(|(_, s)| *s).collect();
    let mut fused: Vec<Hit> = candidates
        .into_iter()
        .map(|(mut hit, similarity)| {
            let text = if hit.lanes.text { hit.relevance } else { 0.0 };
            hit.relevance = match similarity {
                Some(sim) => w * text + (1.0 - w) * meaning_relevance(sim),
                // Not embedded yet: its text decides alone.
                None => text,
            };
            hit.score = hit.relevance;
            hit
        })
        .collect();
    if method == FusionMethod::Rrf {
        let mut rrf = vec![0.0; fused.len()];
        // Text ranks are the lexical lane's order; meaning ranks, the similarity order of
        // every candidate with a vector.
        for (rank, h) in lexical.iter().enumerate() {
            if let Some(&i) = at.get(&h.key) {
                rrf[i] += w / (RRF_K + rank as f64 + 1.0);
            }
        }
        let mut by_meaning: Vec<(usize, f64)> = similarities
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (i, s)))
            .collect();
        by_meaning.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (rank, (i, _)) in by_meaning.into_iter().enumerate() {
            rrf[i] += (1.0 - w) / (RRF_K + rank as f64 + 1.0);
        }
        for (hit, r) in fused.iter_mut().zip(rrf) {
            hit.score = r;
        }
    }
    // A short query's rows holding every word stay first, as with full text alone: a row
    // named by the query's words must not fall behind one only near its meaning (the
    // memories bench's entity-and-attribute queries: hit@1 0.79 by text, 0.52 fused without
    // this tier).
    fused.sort_by(|a, b| {
        b.all_words
            .cmp(&a.all_words)
            .then(b.score.total_cmp(&a.score))
            .then(a.key.cmp(&b.key))
    });
    fused.truncate(k);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(key: &str, relevance: f64) -> Hit {
        Hit {
            key: key.into(),
            score: relevance * 10.0,
            relevance,
            all_words: false,
            every_word: relevance == 1.0,
            lanes: Lanes::default(),
        }
    }

    #[test]
    fn fusion_weighs_each_lanes_public_score() {
        let lexical = vec![hit("text-only", 1.0), hit("both", 0.5), hit("weak", 0.1)];
        let nearest = vec![("both".to_string(), 0.8), ("meaning-only".to_string(), 0.7)];
        let sims: HashMap<&str, f32> =
            HashMap::from([("both", 0.8), ("meaning-only", 0.7), ("weak", -0.2)]);
        let fused = fuse(
            &lexical,
            &nearest,
            |k| sims.get(k).copied(),
            0.5,
            FusionMethod::Weighted,
            10,
        );
        let got: Vec<(&str, f64)> = fused
            .iter()
            .map(|h| (h.key.as_str(), (h.relevance * 1000.0).round() / 1000.0))
            .collect();
        // text-only (no vector): 1.0 by its text alone; both: 0.5·0.5 + 0.5·0.8; meaning-only:
        // 0 + 0.5·0.7; weak: 0.5·0.1 + 0.5·0 (a negative cosine counts as 0).
        assert_eq!(
            got,
            vec![
                ("text-only", 1.0),
                ("both", 0.65),
                ("meaning-only", 0.35),
                ("weak", 0.05)
            ]
        );
        assert!(fused.iter().all(|h| h.score == h.relevance));
        assert!(fused[1].lanes.text && fused[1].lanes.meaning);
        assert!(!fused[2].lanes.text && fused[2].lanes.meaning);
        assert!(fused[0].every_word && !fused[2].every_word);
        // A short query's row holding every word stays first, whatever the meaning says.
        let mut tiered = lexical.clone();
        tiered[2].all_words = true;
        let first = fuse(
            &tiered,
            &nearest,
            |k| sims.get(k).copied(),
            0.5,
            FusionMethod::Weighted,
            10,
        );
        assert_eq!(first[0].key, "weak");
        assert!(first[1..].windows(2).all(|w| w[0].score >= w[1].score));
        // All text or all meaning.
        let text_only = fuse(
            &lexical,
            &nearest,
            |k| sims.get(k).copied(),
            1.0,
            FusionMethod::Weighted,
            1,
        );
        assert_eq!(text_only[0].key, "text-only");
        let meaning = fuse(
            &lexical,
            &nearest,
            |k| sims.get(k).copied(),
            0.0,
            FusionMethod::Weighted,
            3,
        );
        let keys: Vec<&str> = meaning.iter().map(|h| h.key.as_str()).collect();
        assert_eq!(keys, vec!["text-only", "both", "meaning-only"]);
        // The same row scores the same whatever else the query found: no rescaling per query.
        let alone = fuse(
            &lexical[1..2],
            &[],
            |k| sims.get(k).copied(),
            0.5,
            FusionMethod::Weighted,
            10,
        );
        assert_eq!(alone[0].relevance, fused[1].relevance);
    }

    #[test]
    fn reciprocal_rank_fusion_ranks_by_ranks_and_keeps_the_weighted_score() {
        // text ranks: a 1, b 2, c 3; meaning ranks (by similarity): c 1, b 2, a 3.
        let lexical = vec![hit("a", 0.9), hit("b", 0.3), hit("c", 0.1)];
        let sims: HashMap<&str, f32> = HashMap::from([("a", 0.1), ("b", 0.5), ("c", 0.95)]);
        let nearest = vec![("c".to_string(), 0.95), ("b".to_string(), 0.5)];
        let run = |method| {
            fuse(
                &lexical,
                &nearest,
                |k| sims.get(k).copied(),
                0.5,
                method,
                10,
            )
        };
        let (weighted, rrf) = (run(FusionMethod::Weighted), run(FusionMethod::Rrf));
        let keys = |hits: &[Hit]| hits.iter().map(|h| h.key.clone()).collect::<Vec<_>>();
        // Weighted: c 0.05 + 0.475 = 0.525, a 0.45 + 0.05 = 0.5, b 0.15 + 0.25 = 0.4.
        assert_eq!(keys(&weighted), ["c", "a", "b"]);
        // RRF (halves): a and c 1/61 + 1/63, b 2/62, a little less: a and c tie (broken by
        // key), then b.
        assert_eq!(keys(&rrf), ["a", "c", "b"]);
        // The public score is the weighted one whichever ranks.
        for h in &rrf {
            let same = weighted
                .iter()
                .find(|w| w.key == h.key)
                .map(|w| w.relevance);
            assert_eq!(Some(h.relevance), same);
        }
    }
}
