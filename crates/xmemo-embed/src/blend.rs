//! Several local models as one: a text's vector is its parts' vectors side by side, each
//! scaled by the square root of its share, so the dot product of two blended vectors is the
//! share-weighted sum of the parts' cosines.
//!
//! A part may speak only Latin-script text (`"scripts": "latin"`: potion-base-8M is an English
//! model, its vectors of a Chinese text say little): its share in a text is then its weight
//! times the share of the text's letters that are Latin, and the other parts' shares grow to
//! fill the rest. Two Chinese texts are compared by the multilingual part alone; two English
//! ones by both.
//!
//! The folder holds only `config.json`:
//!
//! ```json
//! {"model_type": "xmemo-blend",
//!  "parts": [{"model": "../use-multilingual", "weight": 0.6},
//!            {"model": "../potion-base-8m", "weight": 0.4, "scripts": "latin"}]}
//! ```
//!
//! A part's path is read from the blend folder's real place (a blend folder reached through a
//! symbolic link still finds its parts); a part cannot be a blend itself.

use crate::local::model_error;
use crate::{EmbedResult, Embedder, Purpose, normalize};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// What a blend folder's `config.json` says its `model_type` is.
pub const MODEL_TYPE: &str = "xmemo-blend";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Read only to decide that the folder is a blend ([`MODEL_TYPE`]).
    #[serde(rename = "model_type")]
    _model_type: serde::de::IgnoredAny,
    parts: Vec<PartConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartConfig {
    model: String,
    weight: f32,
    #[serde(default)]
    scripts: Scripts,
}

/// Which texts a part speaks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Scripts {
    #[default]
    All,
    /// Letters of the Latin script (Basic Latin to Latin Extended-B).
    Latin,
}

#[derive(Debug)]
struct Part {
    embedder: Arc<dyn Embedder>,
    weight: f32,
    scripts: Scripts,
}

#[derive(Debug)]
pub struct Blend {
    id: String,
    parts: Vec<Part>,
    dims: usize,
}

impl Blend {
    /// The blend `config` (read from `folder/config.json`) describes; `open_part` loads a
    /// part's folder.
    pub(crate) fn load(
        folder: &Path,
        config: &serde_json::Value,
        open_part: impl Fn(&Path) -> EmbedResult<Arc<dyn Embedder>>,
    ) -> EmbedResult<Self> {
        let config_path = folder.join("config.json");
        let config = Config::deserialize(config)
            .map_err(|e| model_error(&config_path, format!("not a blend: {e}")))?;
        if config.parts.is_empty() {
            return Err(model_error(&config_path, "a blend needs at least one part"));
        }
        let home = std::fs::canonicalize(folder).map_err(|e| model_error(folder, e.to_string()))?;
        let mut parts = Vec::new();
        let mut hash = Sha256::new();
        let mut dims = 0;
        for part in config.parts {
            if !(part.weight.is_finite() && part.weight > 0.0) {
                return Err(model_error(
                    &config_path,
                    format!("the weight of {} must be a number above 0", part.model),
                ));
            }
            let path = home.join(&part.model);
            let is_blend = std::fs::read_to_string(path.join("config.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .is_some_and(|c| c["model_type"].as_str() == Some(MODEL_TYPE));
            if is_blend {
                return Err(model_error(&path, "a blend cannot be part of a blend"));
            }
            let embedder = open_part(&path)?;
            let part_dims = embedder
                .dimensions()
                .ok_or_else(|| model_error(&path, "a part's vector length is not known"))?;
            dims += part_dims;
            hash.update(format!(
                "{} {} {:?}\n",
                embedder.model_id(),
                part.weight,
                part.scripts
            ));
            parts.push(Part {
                embedder,
                weight: part.weight,
                scripts: part.scripts,
            });
        }
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "blend".into());
        Ok(Self {
            id: format!("blend/{name}/{}", &hex::encode(hash.finalize())[..12]),
            parts,
            dims,
        })
    }

    /// Each part's share of `text`'s vector (they add up to 1, or are all 0).
    fn shares(&self, text: &str) -> Vec<f32> {
        let latin = latin_share(text);
        let raw: Vec<f32> = self
            .parts
            .iter()
            .map(|p| match p.scripts {
                Scripts::All => p.weight,
                Scripts::Latin => p.weight * latin,
            })
            .collect();
        let total: f32 = raw.iter().sum();
        if total > 0.0 {
            raw.iter().map(|w| w / total).collect()
        } else {
            raw
        }
    }
}

/// The share of `text`'s letters that are Latin (1 for a text without letters: digits and
/// signs are read alike by every part).
fn latin_share(text: &str) -> f32 {
    let (mut letters, mut latin) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if c < '\u{0250}' {
            latin += 1;
        }
    }
    if letters == 0 {
        1.0
    } else {
        latin as f32 / letters as f32
    }
}

#[async_trait::async_trait]
impl Embedder for Blend {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> Option<usize> {
        Some(self.dims)
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> EmbedResult<Vec<Vec<f32>>> {
        let mut vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|_| Vec::with_capacity(self.dims))
            .collect();
        let shares: Vec<Vec<f32>> = texts.iter().map(|t| self.shares(t)).collect();
        for (index, part) in self.parts.iter().enumerate() {
            let part_vectors = part.embedder.embed(texts, purpose).await?;
            for ((vector, part_vector), share) in vectors.iter_mut().zip(part_vectors).zip(&shares)
            {
                let scale = share[index].sqrt();
                vector.extend(part_vector.iter().map(|x| x * scale));
            }
        }
        for vector in &mut vectors {
            // Unit length already when every part's vector is; a part's zero vector (a text
            // it has no piece for) would leave it shorter.
            normalize(vector);
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_letters_are_counted_among_letters_only() {
        assert_eq!(latin_share("Le déploiement, 2026!"), 1.0);
        assert_eq!(latin_share("部署失败"), 0.0);
        assert_eq!(latin_share("2026 — 42"), 1.0);
        assert!((latin_share("deploy 部署") - 6.0 / 8.0).abs() < 1e-6);
        assert_eq!(latin_share("Привет"), 0.0);
    }
}
