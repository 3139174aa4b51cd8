//! Deterministic synthetic skills: a generated vocabulary with a Zipf word distribution, so a
//! Level 0 query can hit a handful of skills (rare word) or most of them (common word).

use serde_json::{Value, json};
use std::collections::HashSet;

/// SplitMix64: small, fast, deterministic, good enough for load generation.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut r = Rng(seed ^ 0x9E37_79B9_7F4A_7C15);
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
    "cr", "dr", "fl", "gr", "kl", "pr", "st", "tr", "sh", "ch", "th",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou", "ea"];
const CODAS: &[&str] = &["", "", "", "n", "r", "s", "l", "x", "m"];

/// The kinds of Level 0 query in the mix, in equal shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    RareWord,
    CommonWord,
    TwoWords,
    ExactSlug,
}

impl QueryKind {
    pub const ALL: [QueryKind; 4] = [
        QueryKind::RareWord,
        QueryKind::CommonWord,
        QueryKind::TwoWords,
        QueryKind::ExactSlug,
    ];

    pub fn label(self) -> &'static str {
        match self {
            QueryKind::RareWord => "rare word",
            QueryKind::CommonWord => "common word",
            QueryKind::TwoWords => "two words",
            QueryKind::ExactSlug => "exact slug",
        }
    }
}

pub struct Corpus {
    seed: u64,
    words: Vec<String>,
    /// Cumulative Zipf (s = 1) probabilities over `words`, most frequent first.
    cdf: Vec<f64>,
}

/// Path of the single component each seeded skill carries.
pub const SCRIPT_PATH: &str = "scripts/run.sh";

impl Corpus {
    pub fn new(seed: u64, vocabulary: usize) -> Self {
        let vocabulary = vocabulary.max(100);
        let mut rng = Rng::new(seed);
        let mut seen = HashSet::new();
        let mut words = Vec::with_capacity(vocabulary);
        while words.len() < vocabulary {
            let syllables = rng.between(2, 3);
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(ONSETS[rng.below(ONSETS.len())]);
                w.push_str(VOWELS[rng.below(VOWELS.len())]);
                w.push_str(CODAS[rng.below(CODAS.len())]);
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let weights: Vec<f64> = (1..=words.len()).map(|r| 1.0 / r as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        Corpus { seed, words, cdf }
    }

    fn zipf(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        let i = self
            .cdf
            .partition_point(|&c| c < u)
            .min(self.words.len() - 1);
        &self.words[i]
    }

    fn zipf_words(&self, rng: &mut Rng, n: usize) -> Vec<&str> {
        (0..n).map(|_| self.zipf(rng)).collect()
    }

    fn sentence(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        let n = rng.between(lo, hi);
        let mut s = self.zipf_words(rng, n).join(" ");
        if let Some(first) = s.get(..1) {
            s = first.to_uppercase() + &s[1..];
        }
        s.push('.');
        s
    }

    /// The save request body of skill number `index` (deterministic) and its slug.
    pub fn skill(&self, index: usize) -> (String, Value) {
        let mut rng = Rng::new(self.seed.wrapping_mul(1_000_003).wrapping_add(index as u64));
        let name_len = rng.between(2, 4);
        let name_words = self.zipf_words(&mut rng, name_len);
        let slug = format!("{}-{}-n{}", name_words[0], name_words[1], base36(index));
        let name = name_words
            .iter()
            .map(|w| {
                let mut c = w.chars();
                match c.next() {
                    Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                    None => String::new(),
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let description = format!("Use when {}", self.sentence(&mut rng, 12, 30));
        let mut body = format!("# {name}\n\n");
        for _ in 0..rng.between(3, 6) {
            let sentences = rng.between(2, 4);
            let para: Vec<String> = (0..sentences)
                .map(|_| self.sentence(&mut rng, 6, 14))
                .collect();
            body.push_str(&para.join(" "));
            body.push_str("\n\n");
        }
        body.push_str("## Steps\n\n");
        for step in 1..=rng.between(3, 6) {
            body.push_str(&format!("{step}. {}\n", self.sentence(&mut rng, 4, 10)));
        }
        body.push_str(&format!("\nRun `{SCRIPT_PATH}` when done.\n"));
        let script = format!(
            "#!/bin/sh\n# {slug}: {}\nset -eu\necho \"{}\"\n",
            self.sentence(&mut rng, 4, 8),
            self.zipf_words(&mut rng, 5).join(" ")
        );
        let req = json!({
            "slug": slug,
            "name": name,
            "description": description,
            "instruction_body": body,
            "components": [{"logical_path": SCRIPT_PATH, "type": "script", "content": script}],
            "intent": "publish",
        });
        (slug, req)
    }

    /// A Level 0 query of the given kind; `slug` is a seeded slug for `ExactSlug`.
    pub fn query(&self, rng: &mut Rng, kind: QueryKind, slug: &str) -> String {
        let v = self.words.len();
        match kind {
            // Lower half of the frequency ranking: a few to a few dozen skills per 100k.
            QueryKind::RareWord => self.words[v / 2 + rng.below(v - v / 2)].clone(),
            // Top 50 ranks: from ~3 % to ~90 % of all skills contain it.
            QueryKind::CommonWord => self.words[rng.below(50)].clone(),
            QueryKind::TwoWords => format!(
                "{} {}",
                self.words[rng.below(200)],
                self.words[200 + rng.below(v - 200)]
            ),
            QueryKind::ExactSlug => slug.to_string(),
        }
    }
}

fn base36(mut n: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[n % 36]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}
