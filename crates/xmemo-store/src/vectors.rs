//! The semantic lane's in-memory half: this node's vectors of one embedding model (int8, a
//! scale each), the nearest rows to a query vector, and the fusion of the two lanes' ranked
//! lists. Pure: `sql/vectors.rs` keeps the index in step with the database.

use crate::fulltext::Hit;
use crate::model::Lanes;
use std::collections::HashMap;

/// A vector as stored: components `q[i] * scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    pub scale: f32,
    pub values: Vec<i8>,
}

/// int8 with one scale per vector: a quarter of f32's room, and for unit vectors a cosine
/// within about 0.01 of the f32 one (ranking is what counts, and it barely moves).
pub fn quantize(v: &[f32]) -> Quantized {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return Quantized {
            scale: 0.0,
            values: vec![0; v.len()],
        };
    }
    let scale = max / 127.0;
    Quantized {
        scale,
        values: v
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect(),
    }
}

/// The stored bytes of a quantized vector, and back.
pub fn to_bytes(values: &[i8]) -> Vec<u8> {
    values.iter().map(|v| v.to_ne_bytes()[0]).collect()
}

pub fn from_bytes(bytes: &[u8]) -> Vec<i8> {
    bytes.iter().map(|b| i8::from_ne_bytes([*b])).collect()
}

fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

#[derive(Debug)]
struct Row {
    kind: u8,
    key: Box<str>,
    workspace: u32,
    /// The log position of the text the vector was made from.
    seq: i64,
    scale: f32,
    live: bool,
}

/// The vectors of one model, by (kind, key).
#[derive(Debug)]
pub struct VectorIndex {
    model: String,
    dims: usize,
    rows: Vec<Row>,
    /// `dims` values per row, in row order.
    data: Vec<i8>,
    by_key: HashMap<(u8, Box<str>), usize>,
    workspaces: HashMap<Box<str>, u32>,
    dead: usize,
}

impl VectorIndex {
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_string(),
            dims: 0,
            rows: Vec::new(),
            data: Vec::new(),
            by_key: HashMap::new(),
            workspaces: HashMap::new(),
            dead: 0,
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn len(&self) -> usize {
        self.rows.len() - self.dead
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds or replaces the vector of a row, made from its text as of log position `seq` (a
    /// vector of another length than the first is refused: it is from another model).
    pub fn upsert(&mut self, kind: u8, key: &str, workspace: &str, seq: i64, v: Quantized) -> bool {
        if self.dims == 0 {
            self.dims = v.values.len();
        }
        if v.values.len() != self.dims || self.dims == 0 {
            return false;
        }
        self.remove(kind, key);
        let next = self.workspaces.len() as u32;
        let workspace = *self.workspaces.entry(Box::from(workspace)).or_insert(next);
        self.by_key.insert((kind, Box::from(key)), self.rows.len());
        self.rows.push(Row {
            kind,
            key: Box::from(key),
            workspace,
            seq,
            scale: v.scale,
            live: true,
        });
        self.data.extend_from_slice(&v.values);
        true
    }

    /// Drops the vector of a row whose text changed at log position `seq` (a vector made
    /// from that text or a later one stays).
    pub fn stale_before(&mut self, kind: u8, key: &str, seq: i64) {
        if let Some(&at) = self.by_key.get(&(kind, Box::from(key)))
            && self.rows[at].seq < seq
        {
            self.remove(kind, key);
        }
    }

    pub fn remove(&mut self, kind: u8, key: &str) {
        if let Some(at) = self.by_key.remove(&(kind, Box::from(key))) {
            self.rows[at].live = false;
            self.dead += 1;
            if self.dead >= 1024 && self.dead * 4 >= self.rows.len() {
                self.compact();
            }
        }
    }

    fn compact(&mut self) {
        let dims = self.dims;
        let mut data = Vec::with_capacity(self.len() * dims);
        let mut rows = Vec::with_capacity(self.len());
        for (i, row) in std::mem::take(&mut self.rows).into_iter().enumerate() {
            if row.live {
                data.extend_from_slice(&self.data[i * dims..(i + 1) * dims]);
                rows.push(row);
            }
        }
        self.by_key = rows
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.kind, r.key.clone()), i))
            .collect();
        self.rows = rows;
        self.data = data;
        self.dead = 0;
    }

    fn values(&self, at: usize) -> &[i8] {
        &self.data[at * self.dims..(at + 1) * self.dims]
    }

    /// The cosine similarity of one row to `query`, if the row has a vector.
    pub fn similarity(&self, kind: u8, key: &str, query: &Quantized) -> Option<f32> {
        let at = *self.by_key.get(&(kind, Box::from(key)))?;
        (query.values.len() == self.dims)
            .then(|| dot(self.values(at), &query.values) as f32 * self.rows[at].scale * query.scale)
    }

    /// The `n` rows of `kind` in `workspaces` nearest to `query`, nearest first.
    pub fn nearest(
        &self,
        kind: u8,
        workspaces: &[&str],
        query: &Quantized,
        n: usize,
    ) -> Vec<(String, f32)> {
        let allowed: Vec<u32> = workspaces
            .iter()
            .filter_map(|w| self.workspaces.get(*w).copied())
            .collect();
        if allowed.is_empty() || n == 0 || query.values.len() != self.dims {
            return vec![];
        }
        // The best `n` so far, worst first (a small sorted buffer: n is tens).
        let mut best: Vec<(i32, usize)> = Vec::with_capacity(n + 1);
        for (at, row) in self.rows.iter().enumerate() {
            if !row.live || row.kind != kind || !allowed.contains(&row.workspace) {
                continue;
            }
            // Scales differ per row: compare on the scaled product.
            let raw = dot(self.values(at), &query.values);
            let scaled = (raw as f32 * row.scale * 1e6) as i32;
            if best.len() == n && best.first().is_some_and(|(s, _)| scaled <= *s) {
                continue;
            }
            let pos = best.partition_point(|(s, _)| *s < scaled);
            best.insert(pos, (scaled, at));
            if best.len() > n {
                best.remove(0);
            }
        }
        best.iter()
            .rev()
            .map(|(_, at)| {
                let row = &self.rows[*at];
                let sim = dot(self.values(*at), &query.values) as f32 * row.scale * query.scale;
                (row.key.to_string(), sim)
            })
            .collect()
    }
}

/// The two lanes' candidates fused: each lane's scores scaled to 0..1 over its candidates
/// (min to max), then `text_weight · text + (1 − text_weight) · meaning`. A row without a
/// vector yet is ranked by text alone; with `min_similarity`, a row whose vector is less
/// similar than that is left out. The `k` best, best first, with the lanes that found them.
pub fn fuse(
    lexical: &[Hit],
    nearest: &[(String, f32)],
    similarity_of: impl Fn(&str) -> Option<f32>,
    text_weight: f64,
    min_similarity: Option<f64>,
    k: usize,
) -> Vec<Hit> {
    let w = text_weight.clamp(0.0, 1.0);
    struct Candidate {
        key: String,
        bm25: f64,
        similarity: Option<f64>,
        lanes: Lanes,
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for h in lexical {
        at.insert(h.key.clone(), candidates.len());
        candidates.push(Candidate {
            key: h.key.clone(),
            bm25: h.score,
            similarity: similarity_of(&h.key).map(f64::from),
            lanes: Lanes {
                text: true,
                meaning: false,
            },
        });
    }
    for (key, sim) in nearest {
        match at.get(key) {
            Some(&i) => candidates[i].lanes.meaning = true,
            None => {
                at.insert(key.clone(), candidates.len());
                candidates.push(Candidate {
                    key: key.clone(),
                    bm25: 0.0,
                    similarity: Some(f64::from(*sim)),
                    lanes: Lanes {
                        text: false,
                        meaning: true,
                    },
                });
            }
        }
    }
    let range = |values: &mut dyn Iterator<Item = f64>| {
        values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
    };
    let (bm_lo, bm_hi) = range(&mut candidates.iter().filter(|c| c.lanes.text).map(|c| c.bm25));
    let (sim_lo, sim_hi) = range(&mut candidates.iter().filter_map(|c| c.similarity));
    let scale = |v: f64, lo: f64, hi: f64| {
        if hi > lo { (v - lo) / (hi - lo) } else { 1.0 }
    };
    let mut fused: Vec<(f64, Candidate)> = candidates
        .into_iter()
        .filter(|c| match (min_similarity, c.similarity) {
            (Some(min), Some(sim)) => sim >= min,
            _ => true,
        })
        .map(|c| {
            let text = if c.lanes.text {
                scale(c.bm25, bm_lo, bm_hi)
            } else {
                0.0
            };
            let score = match c.similarity {
                Some(sim) => w * text + (1.0 - w) * scale(sim, sim_lo, sim_hi),
                // Not embedded yet: its text decides alone.
                None => text,
            };
            (score, c)
        })
        .collect();
    fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.key.cmp(&b.1.key)));
    fused.truncate(k);
    fused
        .into_iter()
        .map(|(score, c)| Hit {
            key: c.key,
            score,
            all_words: false,
            lanes: c.lanes,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn quantized_cosines_stay_close_and_bytes_round_trip() {
        let a = unit(&[0.3, -0.2, 0.9, 0.1]);
        let b = unit(&[0.25, -0.1, 0.95, 0.0]);
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let (qa, qb) = (quantize(&a), quantize(&b));
        let approx = dot(&qa.values, &qb.values) as f32 * qa.scale * qb.scale;
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
        assert_eq!(from_bytes(&to_bytes(&qa.values)), qa.values);
        assert_eq!(quantize(&[0.0, 0.0]).scale, 0.0);
    }

    #[test]
    fn nearest_rows_in_allowed_workspaces_only() {
        let mut index = VectorIndex::new("m");
        index.upsert(1, "near", "w1", 5, quantize(&unit(&[1.0, 0.1, 0.0])));
        index.upsert(1, "far", "w1", 5, quantize(&unit(&[0.0, 1.0, 0.0])));
        index.upsert(1, "other", "w2", 5, quantize(&unit(&[1.0, 0.0, 0.0])));
        index.upsert(0, "skill", "w1", 5, quantize(&unit(&[1.0, 0.0, 0.0])));
        assert!(
            !index.upsert(1, "bad", "w1", 5, quantize(&[1.0, 0.0])),
            "other length"
        );
        let q = quantize(&unit(&[1.0, 0.0, 0.0]));
        let got = index.nearest(1, &["w1"], &q, 10);
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, vec!["near", "far"]);
        assert!(got[0].1 > 0.98 && got[1].1 < 0.02, "{got:?}");
        assert_eq!(index.nearest(1, &["w1"], &q, 1).len(), 1);
        // A change at or before the vector's own text keeps it; a later one makes it stale.
        index.stale_before(1, "near", 5);
        assert_eq!(index.nearest(1, &["w1"], &q, 10)[0].0, "near");
        index.stale_before(1, "near", 6);
        assert_eq!(index.nearest(1, &["w1"], &q, 10)[0].0, "far");
        assert_eq!(index.similarity(1, "near", &q), None);
        assert!(index.similarity(0, "skill", &q).is_some_and(|s| s > 0.98));
    }

    fn hit(key: &str, score: f64) -> Hit {
        Hit {
            key: key.into(),
            score,
            all_words: false,
            lanes: Lanes::default(),
        }
    }

    #[test]
    fn fusion_scales_each_lane_and_weighs_them() {
        let lexical = vec![hit("text-only", 9.0), hit("both", 5.0), hit("weak", 1.0)];
        let nearest = vec![("both".to_string(), 0.8), ("meaning-only".to_string(), 0.7)];
        let sims: HashMap<&str, f32> =
            HashMap::from([("both", 0.8), ("meaning-only", 0.7), ("weak", 0.1)]);
        let fused = fuse(&lexical, &nearest, |k| sims.get(k).copied(), 0.5, None, 10);
        let keys: Vec<&str> = fused.iter().map(|h| h.key.as_str()).collect();
        // both: 0.5·0.5 + 0.5·1.0; text-only (no vector): 1.0 by text alone; meaning-only:
        // 0.5·0 + 0.5·0.857; weak: 0 + 0.
        assert_eq!(keys, vec!["text-only", "both", "meaning-only", "weak"]);
        assert!(fused[1].lanes.text && fused[1].lanes.meaning);
        assert!(!fused[2].lanes.text && fused[2].lanes.meaning);
        // A floor on similarity leaves out what is not near enough (the row without a
        // vector is judged by text).
        let floored = fuse(
            &lexical,
            &nearest,
            |k| sims.get(k).copied(),
            0.5,
            Some(0.75),
            10,
        );
        let keys: Vec<&str> = floored.iter().map(|h| h.key.as_str()).collect();
        assert_eq!(keys, vec!["text-only", "both"]);
        // All text or all meaning.
        let text_only = fuse(&lexical, &nearest, |k| sims.get(k).copied(), 1.0, None, 1);
        assert_eq!(text_only[0].key, "text-only");
        // Meaning alone: the nearest row leads, and the row without a vector keeps its text
        // score (the best, 1.0: a tie, broken by key).
        let meaning = fuse(&lexical, &nearest, |k| sims.get(k).copied(), 0.0, None, 3);
        let keys: Vec<&str> = meaning.iter().map(|h| h.key.as_str()).collect();
        assert_eq!(keys, vec!["both", "text-only", "meaning-only"]);
    }
}
