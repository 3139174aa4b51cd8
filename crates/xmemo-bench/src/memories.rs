//! The memory benchmark (`xmemo-bench --memories`): seeds generated memories over REST, then
//! measures recall quality on queries whose answer is known (hit@1, hit@5) and recall latency
//! (one sequential client: p50/p99; 32 clients: throughput) at each size.
//!
//! The corpus: every memory is one to three sentences of words drawn from a Zipf-distributed
//! vocabulary, plus an *entity* (a name shared by about eight memories) and an *attribute*
//! word of middle frequency. A query names the entity and the attribute of one memory — as
//! typed, inflected (so stemming must match it), or with an unrelated common word added — and
//! that memory is the answer. Distractors are many: the other memories of the entity, and
//! every memory with the attribute or the noise word.

use crate::corpus::Rng;
use crate::load::client;
use crate::measure::Latency;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const KINDS: [&str; 6] = ["preference", "fact", "decision", "todo", "progress", "note"];
const PROJECTS: usize = 20;
const TAGS: usize = 60;
/// Memories per entity: more than the five results a hit@5 looks at, so the attribute word
/// must rank the answer above the entity's other memories.
const PER_ENTITY: usize = 8;

/// The generated vocabulary and the deterministic memories built from it.
pub struct MemoryCorpus {
    words: Vec<String>,
    /// Cumulative Zipf weights of `words`.
    cumulative: Vec<f64>,
    seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    Exact,
    Inflected,
    Noisy,
}

impl QueryKind {
    pub const ALL: [QueryKind; 3] = [QueryKind::Exact, QueryKind::Inflected, QueryKind::Noisy];
    pub fn label(self) -> &'static str {
        match self {
            QueryKind::Exact => "entity + attribute",
            QueryKind::Inflected => "entity + inflected attribute",
            QueryKind::Noisy => "entity + attribute + noise word",
        }
    }
}

fn syllable_word(rng: &mut Rng, syllables: usize) -> String {
    const ONSETS: [&str; 16] = [
        "b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br",
    ];
    const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "ai"];
    (0..syllables)
        .map(|_| format!("{}{}", ONSETS[rng.below(16)], VOWELS[rng.below(6)]))
        .collect::<Vec<_>>()
        .concat()
}

impl MemoryCorpus {
    pub fn new(seed: u64, vocabulary: usize) -> Self {
        let mut rng = Rng::new(seed);
        let mut words = Vec::with_capacity(vocabulary);
        let mut seen = std::collections::HashSet::new();
        while words.len() < vocabulary {
            let syllables = rng.between(2, 3);
            let w = syllable_word(&mut rng, syllables);
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Self {
            words,
            cumulative,
            seed,
        }
    }

    fn zipf_word(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.unit() * total;
        let i = self.cumulative.partition_point(|c| *c < x);
        &self.words[i.min(self.words.len() - 1)]
    }

    /// The entity of memory `i`: a name (`q` + letters, outside the vocabulary) shared by
    /// about [`PER_ENTITY`] memories.
    fn entity(&self, i: usize) -> String {
        let mut rng = Rng::new(self.seed ^ 0xE17 ^ (i / PER_ENTITY) as u64);
        format!("q{}", syllable_word(&mut rng, 3))
    }

    /// The attribute of memory `i`: a word of middle frequency (rank 200..2000).
    fn attribute(&self, i: usize) -> &str {
        let mut rng = Rng::new(self.seed ^ 0xA77 ^ i as u64);
        let hi = self.words.len().min(2000);
        let lo = 200.min(hi.saturating_sub(1));
        &self.words[rng.between(lo, hi - 1)]
    }

    /// The REST body of memory `i`.
    pub fn memory(&self, i: usize) -> Value {
        let mut rng = Rng::new(self.seed ^ 0x3E3 ^ i as u64);
        let mut words: Vec<String> = (0..rng.between(12, 40))
            .map(|_| self.zipf_word(&mut rng).to_string())
            .collect();
        let at = rng.below(words.len());
        words.insert(at, self.entity(i));
        let at = rng.below(words.len());
        words.insert(at, self.attribute(i).to_string());
        let tags: Vec<String> = (0..rng.between(0, 3))
            .map(|_| format!("tag-{}", rng.below(TAGS)))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut body = json!({
            "kind": KINDS[i % KINDS.len()],
            // The index keeps every generated content distinct (the identical-content rule).
            "content": format!("{}. (m{i})", words.join(" ")),
            "tags": tags,
            "project": format!("project-{}", rng.below(PROJECTS)),
        });
        if rng.below(3) == 0 {
            body["title"] = json!(format!("{} {}", self.zipf_word(&mut rng), self.entity(i)));
        }
        body
    }

    /// A query whose answer is memory `i`.
    pub fn query(&self, i: usize, kind: QueryKind, rng: &mut Rng) -> String {
        let entity = self.entity(i);
        let attribute = self.attribute(i);
        match kind {
            QueryKind::Exact => format!("{entity} {attribute}"),
            QueryKind::Inflected => format!("{entity} {attribute}s"),
            QueryKind::Noisy => {
                let noise = &self.words[rng.below(50)];
                format!("{noise} {entity} {attribute}")
            }
        }
    }
}

/// Seeds memories `from..to` with `concurrency` clients; memory ids by index.
pub async fn seed(
    base: &str,
    key: &str,
    corpus: Arc<MemoryCorpus>,
    from: usize,
    to: usize,
    concurrency: usize,
    ids: &mut Vec<String>,
) -> Result<Duration> {
    let next = Arc::new(AtomicUsize::new(from));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (next, corpus) = (next.clone(), corpus.clone());
        let url = format!("{base}/api/v1/memories");
        let key = key.to_string();
        tasks.push(tokio::spawn(async move {
            let http = client()?;
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= to {
                    break;
                }
                let resp = http
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&corpus.memory(i))
                    .send()
                    .await
                    .context("remember")?;
                let status = resp.status();
                let body: Value = resp.json().await.context("remember answer")?;
                if status.as_u16() != 201 {
                    bail!("remember #{i} answered {status}: {body}");
                }
                let id = body["data"]["memory"]["memory_id"]
                    .as_str()
                    .context("no memory id")?
                    .to_string();
                out.push((i, id));
            }
            Ok::<_, anyhow::Error>(out)
        }));
    }
    ids.resize(to, String::new());
    for t in tasks {
        for (i, id) in t.await.context("seed task")?? {
            ids[i] = id;
        }
    }
    Ok(started.elapsed())
}

#[derive(Debug, Default, Clone)]
pub struct Quality {
    pub queries: usize,
    pub hit1: usize,
    pub hit5: usize,
}

impl Quality {
    fn rate(n: usize, of: usize) -> f64 {
        if of == 0 { 0.0 } else { n as f64 / of as f64 }
    }
    pub fn hit1_rate(&self) -> f64 {
        Self::rate(self.hit1, self.queries)
    }
    pub fn hit5_rate(&self) -> f64 {
        Self::rate(self.hit5, self.queries)
    }
}

async fn recall_ids(http: &reqwest::Client, base: &str, key: &str, q: &str) -> Result<Vec<String>> {
    let mut url = reqwest::Url::parse(&format!("{base}/api/v1/memories")).context("recall URL")?;
    url.query_pairs_mut()
        .append_pair("query", q)
        .append_pair("limit", "5");
    let resp = http
        .get(url)
        .bearer_auth(key)
        .send()
        .await
        .context("recall")?;
    let status = resp.status();
    let body: Value = resp.json().await.context("recall answer")?;
    if !status.is_success() {
        bail!("recall `{q}` answered {status}: {body}");
    }
    Ok(body["data"]["memories"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["memory_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// hit@1 and hit@5 per query kind over `per_kind` targets spread over the seeded memories,
/// and the latency of each recall (one client, sequential).
pub async fn quality_and_latency(
    base: &str,
    key: &str,
    corpus: &MemoryCorpus,
    ids: &[String],
    per_kind: usize,
    seed: u64,
) -> Result<(Vec<(QueryKind, Quality)>, Latency)> {
    let http = client()?;
    let mut rng = Rng::new(seed ^ 0x9E7);
    let mut out = Vec::new();
    let mut micros = Vec::new();
    // The server builds its full-text index on the first query after start (seconds at 100k
    // memories): that one-off is not a recall latency.
    let warm = Instant::now();
    recall_ids(&http, base, key, "warm up").await?;
    eprintln!(
        "xmemo-bench: first recall after seeding (the server builds its index): {:.0} ms",
        warm.elapsed().as_secs_f64() * 1000.0
    );
    for kind in QueryKind::ALL {
        let mut q = Quality::default();
        for _ in 0..per_kind {
            let target = rng.below(ids.len());
            let text = corpus.query(target, kind, &mut rng);
            let started = Instant::now();
            let found = recall_ids(&http, base, key, &text).await?;
            micros.push(started.elapsed().as_micros() as u64);
            q.queries += 1;
            if found.first() == Some(&ids[target]) {
                q.hit1 += 1;
            }
            if found.iter().any(|id| id == &ids[target]) {
                q.hit5 += 1;
            }
        }
        out.push((kind, q));
    }
    Ok((out, Latency::from_micros(micros)))
}

/// Recall requests per second with `clients` concurrent keep-alive clients for `duration`.
pub async fn throughput(
    base: &str,
    key: &str,
    corpus: Arc<MemoryCorpus>,
    seeded: usize,
    clients: usize,
    duration: Duration,
) -> Result<(f64, Latency)> {
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for c in 0..clients.max(1) {
        let (base, key, corpus) = (base.to_string(), key.to_string(), corpus.clone());
        tasks.push(tokio::spawn(async move {
            let http = client()?;
            let mut rng = Rng::new(0xC11E ^ c as u64);
            let mut micros = Vec::new();
            while Instant::now() < deadline {
                let kind = QueryKind::ALL[rng.below(3)];
                let text = corpus.query(rng.below(seeded), kind, &mut rng);
                let started = Instant::now();
                recall_ids(&http, &base, &key, &text).await?;
                micros.push(started.elapsed().as_micros() as u64);
            }
            Ok::<_, anyhow::Error>(micros)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.context("load task")??);
    }
    let rate = all.len() as f64 / duration.as_secs_f64();
    Ok((rate, Latency::from_micros(all)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_is_deterministic_and_its_answers_contain_their_query() {
        let a = MemoryCorpus::new(7, 3000);
        let b = MemoryCorpus::new(7, 3000);
        assert_eq!(a.memory(42), b.memory(42));
        let content = a.memory(42)["content"].as_str().unwrap_or("").to_string();
        let mut rng = Rng::new(1);
        for word in a.query(42, QueryKind::Exact, &mut rng).split(' ') {
            assert!(content.contains(word), "{word} not in {content}");
        }
        // Entities are shared by a few memories, not by all.
        assert_eq!(a.entity(0), a.entity(PER_ENTITY - 1));
        assert_ne!(a.entity(0), a.entity(PER_ENTITY));
    }
}
