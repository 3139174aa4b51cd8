//! Recall on a public benchmark of multi-session conversations: every turn of the MemoryBank
//! (SiliconFriend) evaluation histories is remembered through `POST /api/v1/memories`, each
//! of its probing questions is recalled, and R@1/5/10 says how many of the question's
//! evidence turns (labelled in `tests/corpus/memorybank/evidence_*.json`) came back in the top
//! k. The same turns are ranked by a textbook BM25 with Snowball English stemming, run here on
//! the same texts, as the baseline.
//!
//! Two layouts: `per-user` remembers each user's turns in a project of their own and recalls
//! each question in it (as one agent's memory per person); `pooled` puts every user's turns in
//! one project, so a question competes with 566 turns of 15 people.

use crate::load::client;
use crate::percent::encode;
use anyhow::{Context, Result, bail};
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

/// One remembered turn.
struct Turn {
    user: usize,
    id: String,
    text: String,
}

struct Question {
    user: usize,
    text: String,
    evidence: Vec<String>,
}

pub struct Dataset {
    pub language: String,
    users: Vec<String>,
    turns: Vec<Turn>,
    questions: Vec<Question>,
}

/// Reads the histories, questions and evidence of one language (`en` or `cn`).
pub fn load(dir: &Path, language: &str) -> Result<Dataset> {
    let read = |name: String| -> Result<String> {
        std::fs::read_to_string(dir.join(&name)).with_context(|| format!("read {name}"))
    };
    let histories: serde_json::Map<String, Value> =
        serde_json::from_str(&read(format!("memory_bank_{language}.json"))?)?;
    let evidence: serde_json::Map<String, Value> =
        serde_json::from_str(&read(format!("evidence_{language}.json"))?)?;
    let mut users = Vec::new();
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    for (u, (name, person)) in histories.iter().enumerate() {
        users.push(name.clone());
        let history = person["history"]
            .as_object()
            .with_context(|| format!("{name}: no history"))?;
        for (date, day) in history {
            for (i, turn) in day.as_array().into_iter().flatten().enumerate() {
                let query = turn["query"].as_str().unwrap_or_default();
                let response = turn["response"].as_str().unwrap_or_default();
                turns.push(Turn {
                    user: u,
                    id: format!("{date}#{i}"),
                    text: format!("[{date}] {name}: {query}\nAI: {response}"),
                });
            }
        }
        for q in evidence
            .get(name)
            .and_then(Value::as_array)
            .with_context(|| format!("{name}: no evidence"))?
        {
            let ids: Vec<String> = q["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            if ids.is_empty() {
                continue; // nothing in the history answers it
            }
            questions.push(Question {
                user: u,
                text: q["question"].as_str().unwrap_or_default().to_string(),
                evidence: ids,
            });
        }
    }
    if questions.is_empty() {
        bail!("no labelled question in {}", dir.display());
    }
    Ok(Dataset {
        language: language.to_string(),
        users,
        turns,
        questions,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    PerUser,
    Pooled,
}

impl Layout {
    pub fn label(self) -> &'static str {
        match self {
            Layout::PerUser => "per-user",
            Layout::Pooled => "pooled",
        }
    }
    fn project(self, user: usize) -> String {
        match self {
            Layout::PerUser => format!("user-{user:02}"),
            Layout::Pooled => "everyone".into(),
        }
    }
}

/// Mean over the questions of the share of their evidence turns in the top 1, 5 and 10.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recall {
    pub at1: f64,
    pub at5: f64,
    pub at10: f64,
    pub questions: usize,
}

impl Recall {
    fn add(&mut self, ranked: &[String], evidence: &[String]) {
        let found = |k: usize| {
            let top = &ranked[..ranked.len().min(k)];
            evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
        };
        self.at1 += found(1);
        self.at5 += found(5);
        self.at10 += found(10);
        self.questions += 1;
    }
    fn mean(mut self) -> Self {
        let n = self.questions.max(1) as f64;
        self.at1 /= n;
        self.at5 /= n;
        self.at10 /= n;
        self
    }
}

/// The semantic lane's gauges (`xmemo_semantic_pending`, `xmemo_semantic_vectors`), or
/// `None` when the lane is off.
pub async fn lane_gauges(
    http: &reqwest::Client,
    base: &str,
    key: &str,
) -> Result<Option<(f64, f64)>> {
    let metrics = crate::load::metrics(http, base, key).await?;
    let gauge = |name| crate::load::gauge(&metrics, name);
    Ok(gauge("xmemo_semantic_pending").zip(gauge("xmemo_semantic_vectors")))
}

/// With the semantic lane on (the server was started with `XMEMO_EMBEDDING_MODEL` or
/// `XMEMO_EMBEDDINGS_URL` in the bench's environment), waits until its worker has embedded
/// the `vectors` rows expected, so the questions meet them; with the lane off, returns at once.
pub async fn embedded(http: &reqwest::Client, base: &str, key: &str, vectors: f64) -> Result<()> {
    let deadline = Instant::now() + std::time::Duration::from_secs(1800);
    while let Some((pending, stored)) = lane_gauges(http, base, key).await? {
        if pending == 0.0 && stored >= vectors {
            break;
        }
        if Instant::now() > deadline {
            bail!("the semantic lane still had {pending} rows to embed after 30 minutes");
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Ok(())
}

pub struct Outcome {
    pub xmemo: Recall,
    pub baseline: Recall,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Remembers every turn on the server (in its own workspace project per layout) and recalls
/// every question; ranks the same turns with the baseline.
pub async fn run(base: &str, key: &str, data: &Dataset, layout: Layout) -> Result<Outcome> {
    let http = client()?;
    // A project name of its own per run, so two layouts on one server do not meet.
    let run_tag = format!("{}-{}", data.language, layout.label());
    let mut by_memory: HashMap<String, String> = HashMap::new();
    let vectors_before = lane_gauges(&http, base, key).await?.map_or(0.0, |(_, v)| v);
    for (i, turn) in data.turns.iter().enumerate() {
        let project = format!("{run_tag}-{}", layout.project(turn.user));
        let resp = http
            .post(format!("{base}/api/v1/memories"))
            .bearer_auth(key)
            .json(&json!({"kind": "note", "content": turn.text, "project": project}))
            .send()
            .await
            .context("remember")?;
        let status = resp.status();
        let body: Value = resp.json().await.context("remember answer")?;
        if !status.is_success() {
            bail!("remember turn {i} answered {status}: {body}");
        }
        let id = body["data"]["memory"]["memory_id"]
            .as_str()
            .context("no memory id")?;
        by_memory.insert(id.to_string(), format!("{}|{}", turn.user, turn.id));
    }
    embedded(&http, base, key, vectors_before + by_memory.len() as f64).await?;
    let mut xmemo = Recall::default();
    let mut micros = Vec::new();
    for q in &data.questions {
        let project = format!("{run_tag}-{}", layout.project(q.user));
        let started = Instant::now();
        let url = format!(
            "{base}/api/v1/memories?query={}&project={}&limit=10",
            encode(&q.text),
            encode(&project)
        );
        let resp = http
            .get(url)
            .bearer_auth(key)
            .send()
            .await
            .context("recall")?;
        micros.push(started.elapsed().as_micros() as f64);
        let status = resp.status();
        let body: Value = resp.json().await.context("recall answer")?;
        if !status.is_success() {
            bail!("recall `{}` answered {status}: {body}", q.text);
        }
        let ranked: Vec<String> = body["data"]["memories"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["memory_id"].as_str())
            .filter_map(|id| by_memory.get(id))
            .map(|tagged| tagged.to_string())
            .collect();
        let evidence: Vec<String> = q
            .evidence
            .iter()
            .map(|e| format!("{}|{e}", q.user))
            .collect();
        xmemo.add(&ranked, &evidence);
    }
    micros.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        let rank = ((p * micros.len() as f64).ceil() as usize).clamp(1, micros.len().max(1));
        micros.get(rank - 1).copied().unwrap_or(0.0) / 1000.0
    };
    Ok(Outcome {
        xmemo: xmemo.mean(),
        baseline: baseline(data, layout).mean(),
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
    })
}

/// Textbook BM25 (k1 1.2, b 0.75, IDF ln(1 + (N − df + ½)/(df + ½))) over lowercased runs of
/// letters and digits stemmed with Snowball English, each question ranked against the turns
/// of its project.
fn baseline(data: &Dataset, layout: Layout) -> Recall {
    let stemmer = Stemmer::create(Algorithm::English);
    let tokens = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| stemmer.stem(&w.to_lowercase()).into_owned())
            .collect()
    };
    let mut projects: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, t) in data.turns.iter().enumerate() {
        projects.entry(layout.project(t.user)).or_default().push(i);
    }
    let docs: Vec<(HashMap<String, f64>, f64)> = data
        .turns
        .iter()
        .map(|t| {
            let words = tokens(&t.text);
            let mut tf = HashMap::new();
            for w in &words {
                *tf.entry(w.clone()).or_insert(0.0) += 1.0;
            }
            (tf, words.len() as f64)
        })
        .collect();
    let mut recall = Recall::default();
    for q in &data.questions {
        let members = &projects[&layout.project(q.user)];
        let n = members.len() as f64;
        let avgdl = members.iter().map(|&d| docs[d].1).sum::<f64>() / n.max(1.0);
        let terms = tokens(&q.text);
        let mut scored: Vec<(f64, usize)> = members
            .iter()
            .map(|&d| {
                let (tf, len) = &docs[d];
                let score: f64 = terms
                    .iter()
                    .map(|t| {
                        let df = members
                            .iter()
                            .filter(|&&m| docs[m].0.contains_key(t))
                            .count() as f64;
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        let f = tf.get(t).copied().unwrap_or(0.0);
                        idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len / avgdl))
                    })
                    .sum();
                (score, d)
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let ranked: Vec<String> = scored
            .iter()
            .take(10)
            .map(|(_, d)| format!("{}|{}", data.turns[*d].user, data.turns[*d].id))
            .collect();
        let evidence: Vec<String> = q
            .evidence
            .iter()
            .map(|e| format!("{}|{e}", q.user))
            .collect();
        recall.add(&ranked, &evidence);
    }
    recall
}

/// The table the run prints.
pub fn row(data: &Dataset, layout: Layout, o: &Outcome) -> String {
    format!(
        "{:<3} {:<9} {:>4} q | xmemo R@1 {:.3} R@5 {:.3} R@10 {:.3} | BM25+stemming R@1 {:.3} R@5 {:.3} R@10 {:.3} | recall p50 {:.2} ms p99 {:.2} ms ({} users, {} turns)",
        data.language,
        layout.label(),
        o.xmemo.questions,
        o.xmemo.at1,
        o.xmemo.at5,
        o.xmemo.at10,
        o.baseline.at1,
        o.baseline.at5,
        o.baseline.at10,
        o.p50_ms,
        o.p99_ms,
        data.users.len(),
        data.turns.len(),
    )
}
