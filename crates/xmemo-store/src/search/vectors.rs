//! The semantic lane's in-memory half: this node's vectors of one embedding model (int8, a
//! scale each) and the nearest rows to a query vector. Pure: [`super::stored_vectors`] keeps
//! the index in step with the database.

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

/// Rows of the allowed kind and workspaces up to which a query compares every vector; past
/// it, their sign bits choose [`SHORTLIST_PER_RESULT`] × n candidates first (issue #30: an
/// exact scan of 100k vectors of 256 dimensions took ~8 ms a recall).
const EXACT_SCAN_MAX: usize = 8_192;
/// Candidates per wanted row that the sign bits keep for the exact comparison.
const SHORTLIST_PER_RESULT: usize = 10;
/// At least this many candidates are compared exactly.
const SHORTLIST_MIN: usize = 500;
/// Vectors longer than this many words of sign bits (256 dimensions) are first cut on these
/// words alone, keeping [`COARSE_KEEP`] × the shortlist: with the 768 dimensions of the
/// recommended blend, reading every bit of 100k rows was a fifth of a recall's CPU.
const COARSE_WORDS: usize = 4;
const COARSE_KEEP: usize = 4;

/// The sign of each component, 64 to a word: two vectors' Hamming distance orders them
/// roughly as their cosine does, at a few instructions per row.
fn sign_bits(values: &[i8], out: &mut Vec<u64>) {
    for chunk in values.chunks(64) {
        let mut word = 0u64;
        for (i, v) in chunk.iter().enumerate() {
            if *v > 0 {
                word |= 1 << i;
            }
        }
        out.push(word);
    }
}

fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
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
    /// Each row's [`sign_bits`], `words` per row, in row order.
    bits: Vec<u64>,
    words: usize,
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
            bits: Vec::new(),
            words: 0,
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
            self.words = self.dims.div_ceil(64);
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
        sign_bits(&v.values, &mut self.bits);
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
        let words = self.words;
        let mut data = Vec::with_capacity(self.len() * dims);
        let mut bits = Vec::with_capacity(self.len() * words);
        let mut rows = Vec::with_capacity(self.len());
        for (i, row) in std::mem::take(&mut self.rows).into_iter().enumerate() {
            if row.live {
                data.extend_from_slice(&self.data[i * dims..(i + 1) * dims]);
                bits.extend_from_slice(&self.bits[i * words..(i + 1) * words]);
                rows.push(row);
            }
        }
        self.bits = bits;
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

    /// The `n` rows of `kind` in `workspaces` nearest to `query` (see [`VectorIndex::nearest_in`]).
    pub fn nearest(
        &self,
        kind: u8,
        workspaces: &[&str],
        query: &Quantized,
        n: usize,
    ) -> Vec<(String, f32)> {
        self.nearest_in(kind, workspaces, query, n, |_| true, false)
    }

    /// The `n` rows of `kind` in `workspaces` that `admits` keeps nearest to `query`, nearest
    /// first: every row compared when they are few ([`EXACT_SCAN_MAX`]), else the rows whose
    /// sign bits are nearest to the query's ([`SHORTLIST_PER_RESULT`] × n of them) compared
    /// exactly. `admits` is asked before the shortlist when the filter `narrows` (so the
    /// shortlist holds rows it keeps), else only of the rows that would enter the best `n`
    /// (forgotten and expired rows are few: asking it of every row would double the scan).
    pub fn nearest_in(
        &self,
        kind: u8,
        workspaces: &[&str],
        query: &Quantized,
        n: usize,
        admits: impl Fn(&str) -> bool,
        narrows: bool,
    ) -> Vec<(String, f32)> {
        let allowed: Vec<u32> = workspaces
            .iter()
            .filter_map(|w| self.workspaces.get(*w).copied())
            .collect();
        if allowed.is_empty() || n == 0 || query.values.len() != self.dims {
            return vec![];
        }
        let eligible = |row: &Row| {
            row.live
                && row.kind == kind
                && allowed.contains(&row.workspace)
                && (!narrows || admits(&row.key))
        };
        let candidates: Vec<usize> = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, row)| eligible(row))
            .map(|(at, _)| at)
            .collect();
        let shortlist = (n * SHORTLIST_PER_RESULT).max(SHORTLIST_MIN);
        let candidates = if candidates.len() <= EXACT_SCAN_MAX || candidates.len() <= shortlist {
            candidates
        } else {
            let mut query_bits = Vec::with_capacity(self.words);
            sign_bits(&query.values, &mut query_bits);
            let words = self.words;
            // Long vectors: a first cut on their first bits only, then every bit of what it
            // keeps.
            let coarse =
                (words > COARSE_WORDS && candidates.len() > COARSE_KEEP * shortlist).then(|| {
                    let mut by_bits: Vec<(u32, usize)> = candidates
                        .iter()
                        .map(|&at| {
                            let bits = &self.bits[at * words..at * words + COARSE_WORDS];
                            (hamming(bits, &query_bits[..COARSE_WORDS]), at)
                        })
                        .collect();
                    by_bits.select_nth_unstable(COARSE_KEEP * shortlist - 1);
                    by_bits.truncate(COARSE_KEEP * shortlist);
                    by_bits.into_iter().map(|(_, at)| at).collect::<Vec<_>>()
                });
            let mut by_bits: Vec<(u32, usize)> = coarse
                .unwrap_or(candidates)
                .into_iter()
                .map(|at| {
                    let bits = &self.bits[at * words..(at + 1) * words];
                    (hamming(bits, &query_bits), at)
                })
                .collect();
            by_bits.select_nth_unstable(shortlist - 1);
            by_bits.truncate(shortlist);
            by_bits.into_iter().map(|(_, at)| at).collect()
        };
        // The best `n` so far, worst first (a small sorted buffer: n is tens).
        let mut best: Vec<(i32, usize)> = Vec::with_capacity(n + 1);
        for at in candidates {
            let row = &self.rows[at];
            // Scales differ per row: compare on the scaled product.
            let raw = dot(self.values(at), &query.values);
            let scaled = (raw as f32 * row.scale * 1e6) as i32;
            if best.len() == n && best.first().is_some_and(|(s, _)| scaled <= *s) {
                continue;
            }
            if !narrows && !admits(&row.key) {
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

    /// A reproducible stream of numbers in -1..1.
    fn noise(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 10_000.0 - 1.0
        }
    }

    #[test]
    fn many_rows_are_shortlisted_by_their_sign_bits_and_the_nearest_still_found() {
        // 64 dimensions: one cut on every bit; 320: a first cut on the first 256 bits.
        for dims in [64, 320] {
            shortlisted_rows_keep_the_nearest(dims);
        }
    }

    fn shortlisted_rows_keep_the_nearest(dims: usize) {
        let rows = EXACT_SCAN_MAX * 2;
        let mut next = noise(7);
        let mut index = VectorIndex::new("m");
        let mut kept: Vec<Vec<f32>> = Vec::new();
        for i in 0..rows {
            let v = unit(&(0..dims).map(|_| next()).collect::<Vec<_>>());
            // Another kind and another workspace hold the same vectors: never answered.
            index.upsert(0, &format!("skill{i}"), "w", 1, quantize(&v));
            index.upsert(1, &format!("other{i}"), "elsewhere", 1, quantize(&v));
            index.upsert(1, &format!("row{i}"), "w", 1, quantize(&v));
            kept.push(v);
        }
        let (mut found_first, mut targets) = (0, 0);
        for target in (0..rows).step_by(rows / 50) {
            targets += 1;
            // The row itself, moved a little: it is the nearest by far.
            let q: Vec<f32> = kept[target].iter().map(|x| x + 0.1 * next()).collect();
            let got = index.nearest(1, &["w"], &quantize(&unit(&q)), 10);
            assert_eq!(got.len(), 10);
            assert!(got.iter().all(|(k, _)| k.starts_with("row")), "{got:?}");
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "{got:?}");
            if got[0].0 == format!("row{target}") {
                found_first += 1;
            }
        }
        assert_eq!(found_first, targets, "every moved row is found first");
        // A narrowing filter is applied before the shortlist: the nearest rows it keeps.
        let q = quantize(&unit(&kept[3]));
        let sevens = index.nearest_in(1, &["w"], &q, 10, |k| k.ends_with('7'), true);
        assert_eq!(sevens.len(), 10);
        assert!(
            sevens
                .iter()
                .all(|(k, _)| k.starts_with("row") && k.ends_with('7'))
        );
        // One that does not narrow is asked only of the rows entering the best: still kept.
        let not3 = index.nearest_in(1, &["w"], &q, 10, |k| k != "row3", false);
        assert_eq!(not3.len(), 10);
        assert!(not3.iter().all(|(k, _)| k != "row3"));
        assert_eq!(index.nearest(1, &["w"], &q, 1)[0].0, "row3");
        // What the shortlist keeps is what an exact scan ranks first, for an unrelated query
        // too: most of the exact top 10 (random vectors are the sign bits' worst case).
        let q = quantize(&unit(&(0..dims).map(|_| next()).collect::<Vec<_>>()));
        let got = index.nearest(1, &["w"], &q, 10);
        let mut exact: Vec<(f32, String)> = kept
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let sim = dot(&quantize(v).values, &q.values) as f32 * quantize(v).scale * q.scale;
                (sim, format!("row{i}"))
            })
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top: Vec<&String> = exact.iter().take(10).map(|(_, k)| k).collect();
        let shared = got.iter().filter(|(k, _)| top.contains(&k)).count();
        assert!(
            shared >= 7,
            "{shared} of the exact top 10: {got:?} vs {top:?}"
        );
    }
}
