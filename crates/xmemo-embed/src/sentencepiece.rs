//! A SentencePiece unigram tokenizer as SentencePiece itself cuts text: the model's own
//! normalisation table, runs of spaces made one, `▁` for a space and before the text, then the
//! most likely cut by Viterbi; a character no piece holds is one unknown piece.
//!
//! Why not `tokenizers`' Unigram model: it keeps its 128k pieces in a trie of hash maps, 123 MiB
//! for the Universal Sentence Encoder's vocabulary; here the pieces are one hash map of strings
//! (a few MiB), looked up for each span up to the longest piece. Its normaliser is used as it is.

use serde::Deserialize;
use std::collections::HashMap;
use tokenizers::normalizers::Precompiled;
use tokenizers::{NormalizedString, Normalizer};

/// The part of a `tokenizer.json` read here (as `scripts/models` writes it).
#[derive(Deserialize)]
struct File {
    normalizer: NormalizerFile,
    model: ModelFile,
}

#[derive(Deserialize)]
struct NormalizerFile {
    normalizers: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct ModelFile {
    #[serde(rename = "type")]
    kind: String,
    unk_id: u32,
    vocab: Vec<(String, f64)>,
}

/// SentencePiece's penalty below the least likely piece for an unknown character.
const UNKNOWN_PENALTY: f32 = 10.0;

pub struct Unigram {
    /// The model's normalisation table (none: the text is cut as it is).
    normalizer: Option<Precompiled>,
    ids: HashMap<Box<str>, u32>,
    scores: Vec<f32>,
    /// Characters in the longest piece: no longer span is looked up.
    longest: usize,
    unknown: u32,
    unknown_score: f32,
    begin: u32,
    end: u32,
}

impl Unigram {
    /// The tokenizer in `json` (a `tokenizer.json` with a Unigram model and a precompiled
    /// normalisation table); the reason it cannot be used otherwise.
    pub fn from_json(json: &str) -> Result<Self, String> {
        let file: File = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if file.model.kind != "Unigram" {
            return Err(format!("a {} model, not Unigram", file.model.kind));
        }
        let normalizer = match file
            .normalizer
            .normalizers
            .into_iter()
            .find(|n| n["type"] == "Precompiled")
        {
            // Its deserializer borrows the table's text: read from a string, not a `Value`.
            Some(table) => Some(
                serde_json::from_str::<Precompiled>(&table.to_string())
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let mut ids = HashMap::with_capacity(file.model.vocab.len());
        let mut scores = Vec::with_capacity(file.model.vocab.len());
        let mut longest = 1;
        for (id, (piece, score)) in file.model.vocab.into_iter().enumerate() {
            longest = longest.max(piece.chars().count());
            scores.push(score as f32);
            ids.insert(piece.into_boxed_str(), id as u32);
        }
        let id_of = |piece: &str| {
            ids.get(piece)
                .copied()
                .ok_or_else(|| format!("no {piece} piece"))
        };
        let (begin, end) = (id_of("<s>")?, id_of("</s>")?);
        let unknown = file.model.unk_id;
        if unknown as usize >= scores.len() {
            return Err("the unknown piece is not in the vocabulary".into());
        }
        let least = scores.iter().copied().fold(f32::INFINITY, f32::min);
        Ok(Self {
            normalizer,
            ids,
            scores,
            longest,
            unknown,
            unknown_score: least - UNKNOWN_PENALTY,
            begin,
            end,
        })
    }

    /// The pieces of `text` between `<s>` and `</s>`, at most `max` in all (the text's
    /// beginning is kept).
    pub fn encode(&self, text: &str, max: usize) -> Result<Vec<u32>, String> {
        let mut normalized = NormalizedString::from(text);
        if let Some(normalizer) = &self.normalizer {
            normalizer
                .normalize(&mut normalized)
                .map_err(|e| e.to_string())?;
        }
        let escaped = escape_spaces(normalized.get());
        let mut ids = Vec::with_capacity(max.min(escaped.len() + 2));
        ids.push(self.begin);
        if escaped.is_empty() {
            ids.push(self.unknown);
        } else {
            ids.extend(self.viterbi(&escaped));
        }
        ids.truncate(max.saturating_sub(1).max(1));
        ids.push(self.end);
        Ok(ids)
    }

    /// The most likely cut of `text` (SentencePiece's lattice: for each end, the best start,
    /// the earliest on a tie).
    fn viterbi(&self, text: &str) -> Vec<u32> {
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(at, _)| at)
            .chain(std::iter::once(text.len()))
            .collect();
        let chars = bounds.len() - 1;
        let mut best = vec![f32::NEG_INFINITY; chars + 1];
        let mut start_of = vec![0usize; chars + 1];
        let mut piece_of = vec![self.unknown; chars + 1];
        best[0] = 0.0;
        for i in 0..chars {
            let base = best[i];
            let mut single = false;
            for j in i + 1..=chars.min(i + self.longest) {
                let Some(&id) = self.ids.get(&text[bounds[i]..bounds[j]]) else {
                    continue;
                };
                let score = base + self.scores[id as usize];
                if score > best[j] {
                    best[j] = score;
                    start_of[j] = i;
                    piece_of[j] = id;
                }
                single |= j == i + 1;
            }
            if !single {
                let score = base + self.unknown_score;
                if score > best[i + 1] {
                    best[i + 1] = score;
                    start_of[i + 1] = i;
                    piece_of[i + 1] = self.unknown;
                }
            }
        }
        let mut ids = Vec::new();
        let mut at = chars;
        while at > 0 {
            ids.push(piece_of[at]);
            at = start_of[at];
        }
        ids.reverse();
        ids
    }
}

/// SentencePiece's spaces: none at either end, one for a run, each written `▁`, and one
/// before the text; empty when the text holds nothing but spaces.
fn escape_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 3);
    let mut after_space = true;
    for c in text.chars() {
        if c == ' ' {
            after_space = true;
        } else {
            if after_space {
                out.push('▁');
                after_space = false;
            }
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_are_marked_once_and_never_at_the_end() {
        assert_eq!(escape_spaces("  two   words "), "▁two▁words");
        assert_eq!(escape_spaces("一二"), "▁一二");
        assert_eq!(escape_spaces("   "), "");
    }

    fn tiny() -> Unigram {
        // "▁ab" is likelier than "▁a" + "b"; "c" is no piece.
        let json = serde_json::json!({
            "normalizer": {"type": "Sequence", "normalizers": []},
            "model": {"type": "Unigram", "unk_id": 0, "vocab": [
                ["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0],
                ["▁a", -1.0], ["b", -1.5], ["▁ab", -2.0], ["▁", -3.0], ["a", -2.5]]}
        });
        Unigram::from_json(&json.to_string()).expect("tokenizer")
    }

    #[test]
    fn the_likeliest_cut_wins_and_each_unknown_character_is_one_piece() {
        let t = tiny();
        assert_eq!(t.encode("ab", 100).expect("encode"), vec![1, 5, 2]);
        // Two unknown characters are two unknown pieces (as SentencePiece, unlike a fused run).
        assert_eq!(
            t.encode("a cc", 100).expect("encode"),
            vec![1, 3, 6, 0, 0, 2]
        );
        assert_eq!(t.encode("   ", 100).expect("encode"), vec![1, 0, 2]);
        // At most `max` pieces, the end marker kept.
        assert_eq!(t.encode("a cc", 3).expect("encode"), vec![1, 3, 2]);
    }
}
