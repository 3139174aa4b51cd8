//! Text to index terms, the same way for rows and for queries, in the languages people write
//! skills and memories in.
//!
//! - Unicode compatibility forms are unified (NFKC: full-width letters, ligatures) and
//!   everything is lowercased.
//! - Chinese, Japanese and Korean runs have no spaces between words: each run is cut into
//!   overlapping pairs of characters ("冒烟测试" → 冒烟 烟测 测试), which finds a word of two
//!   or more characters anywhere in a text without a dictionary (a single character stands
//!   alone).
//! - Other text is cut into runs of letters and digits. Stop words of the row's language
//!   ("the", "did", "when"; "le", "de"…) are dropped: they say nothing about what a row is
//!   about, and in a question they outweighed the words that matter.
//! - Each word is stemmed with the Snowball stemmer of the row's language (detected from its
//!   text; English when it cannot be told), then its accents are dropped, so "deploiement"
//!   finds "déploiement". A query is stemmed in its own language when that can be told, and
//!   in every language the index holds a fair share of rows in.

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashSet;
use std::sync::LazyLock;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The languages a Snowball stemmer exists for (and so the ones told apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    English,
    French,
    German,
    Spanish,
    Portuguese,
    Italian,
    Dutch,
    Swedish,
    Danish,
    Norwegian,
    Finnish,
    Hungarian,
    Romanian,
    Russian,
    Turkish,
    Greek,
    Arabic,
    Tamil,
}

impl Lang {
    pub const ALL: [Lang; 18] = [
        Lang::English,
        Lang::French,
        Lang::German,
        Lang::Spanish,
        Lang::Portuguese,
        Lang::Italian,
        Lang::Dutch,
        Lang::Swedish,
        Lang::Danish,
        Lang::Norwegian,
        Lang::Finnish,
        Lang::Hungarian,
        Lang::Romanian,
        Lang::Russian,
        Lang::Turkish,
        Lang::Greek,
        Lang::Arabic,
        Lang::Tamil,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    fn from_whatlang(lang: whatlang::Lang) -> Option<Self> {
        use whatlang::Lang as W;
        Some(match lang {
            W::Eng => Lang::English,
            W::Fra => Lang::French,
            W::Deu => Lang::German,
            W::Spa => Lang::Spanish,
            W::Por => Lang::Portuguese,
            W::Ita => Lang::Italian,
            W::Nld => Lang::Dutch,
            W::Swe => Lang::Swedish,
            W::Dan => Lang::Danish,
            W::Nob => Lang::Norwegian,
            W::Fin => Lang::Finnish,
            W::Hun => Lang::Hungarian,
            W::Ron => Lang::Romanian,
            W::Rus => Lang::Russian,
            W::Tur => Lang::Turkish,
            W::Ell => Lang::Greek,
            W::Ara => Lang::Arabic,
            W::Tam => Lang::Tamil,
            _ => return None,
        })
    }

    fn algorithm(self) -> Algorithm {
        match self {
            Lang::English => Algorithm::English,
            Lang::French => Algorithm::French,
            Lang::German => Algorithm::German,
            Lang::Spanish => Algorithm::Spanish,
            Lang::Portuguese => Algorithm::Portuguese,
            Lang::Italian => Algorithm::Italian,
            Lang::Dutch => Algorithm::Dutch,
            Lang::Swedish => Algorithm::Swedish,
            Lang::Danish => Algorithm::Danish,
            Lang::Norwegian => Algorithm::Norwegian,
            Lang::Finnish => Algorithm::Finnish,
            Lang::Hungarian => Algorithm::Hungarian,
            Lang::Romanian => Algorithm::Romanian,
            Lang::Russian => Algorithm::Russian,
            Lang::Turkish => Algorithm::Turkish,
            Lang::Greek => Algorithm::Greek,
            Lang::Arabic => Algorithm::Arabic,
            Lang::Tamil => Algorithm::Tamil,
        }
    }

    /// The NLTK stop-word list of the language (`stop_words` crate), when there is one.
    fn stop_list(self) -> Option<stop_words::LANGUAGE> {
        use stop_words::LANGUAGE as S;
        Some(match self {
            Lang::English => S::English,
            Lang::French => S::French,
            Lang::German => S::German,
            Lang::Spanish => S::Spanish,
            Lang::Portuguese => S::Portuguese,
            Lang::Italian => S::Italian,
            Lang::Dutch => S::Dutch,
            Lang::Swedish => S::Swedish,
            Lang::Danish => S::Danish,
            Lang::Norwegian => S::Norwegian,
            Lang::Finnish => S::Finnish,
            Lang::Hungarian => S::Hungarian,
            Lang::Romanian => S::Romanian,
            Lang::Russian => S::Russian,
            Lang::Turkish => S::Turkish,
            Lang::Greek => S::Greek,
            Lang::Arabic => S::Arabic,
            Lang::Tamil => return None,
        })
    }
}

struct Language {
    stemmer: Stemmer,
    /// Stop words, lowercased and without accents (as the words they are compared with).
    stop: HashSet<String>,
}

static LANGUAGES: LazyLock<Vec<Language>> = LazyLock::new(|| {
    Lang::ALL
        .iter()
        .map(|lang| Language {
            stemmer: Stemmer::create(lang.algorithm()),
            stop: lang
                .stop_list()
                .map(|list| {
                    stop_words::get(list)
                        .iter()
                        .map(|w| fold(&w.to_lowercase()))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
});

fn language(lang: Lang) -> &'static Language {
    &LANGUAGES[lang.index()]
}

/// The language a text is written in, when it can be told and has a stemmer.
pub fn detect(text: &str) -> Option<Lang> {
    // The first few thousand characters are plenty, and bound the cost of long rows.
    let end = text.char_indices().nth(2000).map_or(text.len(), |(i, _)| i);
    let info = whatlang::detect(&text[..end])?;
    if !info.is_reliable() {
        return None;
    }
    Lang::from_whatlang(info.lang())
}

/// whatlang's names of the languages with a stemmer (`Lang::from_whatlang`).
const WHATLANG_STEMMED: [whatlang::Lang; 18] = {
    use whatlang::Lang as W;
    [
        W::Eng,
        W::Fra,
        W::Deu,
        W::Spa,
        W::Por,
        W::Ita,
        W::Nld,
        W::Swe,
        W::Dan,
        W::Nob,
        W::Fin,
        W::Hun,
        W::Ron,
        W::Rus,
        W::Tur,
        W::Ell,
        W::Ara,
        W::Tam,
    ]
};

/// The language a query is written in, told among `among` (the languages an index holds
/// rows in): a language no row is written in adds nothing a query could find. Weighing a few
/// words against whatlang's 36 Latin-script profiles was a fifth of a Level 0 search's CPU;
/// among a handful it costs little. Rows keep [`detect`]: a row in a language without a
/// stemmer is left to the default, not to its nearest neighbour.
pub fn detect_query(text: &str, among: &[Lang]) -> Option<Lang> {
    if among.is_empty() {
        return None;
    }
    let allowed = among.iter().map(|l| WHATLANG_STEMMED[l.index()]).collect();
    let end = text.char_indices().nth(2000).map_or(text.len(), |(i, _)| i);
    let info = whatlang::Detector::with_allowlist(allowed).detect(&text[..end])?;
    if !info.is_reliable() {
        return None;
    }
    Lang::from_whatlang(info.lang())
}

/// Chinese, Japanese (kana and kanji) and Korean characters: written without spaces, cut into
/// pairs.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // hiragana, katakana
        | 0x31F0..=0x31FF // katakana extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // compatibility ideographs
        | 0xAC00..=0xD7AF // hangul syllables
        | 0x1100..=0x11FF // hangul jamo
        | 0x3130..=0x318F // hangul compatibility jamo
        | 0x20000..=0x2FA1F // ideograph extensions B–F, compatibility supplement
    )
}

/// Drops accents and other combining marks: "déploiement" → "deploiement".
pub fn fold(word: &str) -> String {
    if word.is_ascii() {
        return word.to_string();
    }
    word.nfd()
        .filter(|c| !is_combining_mark(*c))
        .nfc()
        .collect()
}

/// One piece of text, as the analyzer cuts it.
enum Piece<'a> {
    /// Letters and digits, lowercased.
    Word(&'a str),
    /// A run of CJK characters.
    Cjk(&'a str),
}

/// Calls `each` with every piece of `normalized` (already NFKC and lowercase).
fn pieces<'a>(normalized: &'a str, mut each: impl FnMut(Piece<'a>)) {
    // The start of the current run and whether it is CJK.
    let mut run: Option<(usize, bool)> = None;
    let mut end_run = |run: Option<(usize, bool)>, end: usize| {
        if let Some((start, cjk)) = run {
            let text = &normalized[start..end];
            each(if cjk {
                Piece::Cjk(text)
            } else {
                Piece::Word(text)
            });
        }
    };
    for (i, c) in normalized.char_indices() {
        let kind = if is_cjk(c) {
            Some(true)
        } else if c.is_alphanumeric() {
            Some(false)
        } else {
            None
        };
        if run.map(|(_, cjk)| cjk) != kind {
            end_run(run, i);
            run = kind.map(|cjk| (i, cjk));
        }
    }
    end_run(run, normalized.len());
}

/// NFKC and lowercase: the form every piece is cut from.
fn normalize(text: &str) -> String {
    let nfkc: String = if text.is_ascii() {
        text.to_string()
    } else {
        text.nfkc().collect()
    };
    nfkc.to_lowercase()
}

/// The pairs of a CJK run (a single character alone).
fn bigrams(run: &str, mut each: impl FnMut(&str)) {
    let starts: Vec<usize> = run
        .char_indices()
        .map(|(i, _)| i)
        .chain([run.len()])
        .collect();
    if starts.len() <= 2 {
        each(run);
        return;
    }
    for w in starts.windows(3) {
        each(&run[w[0]..w[2]]);
    }
}

/// The stemmed, accent-free term of a word in `lang`. A number is its digits without leading
/// zeros or an ordinal suffix, so "06", "6" and "6th" are one term (dates written
/// `2023-05-06` and "May 6th").
pub fn stem(word: &str, lang: Lang) -> String {
    if let Some(number) = number(word) {
        return number.to_string();
    }
    fold(&language(lang).stemmer.stem(word))
}

fn number(word: &str) -> Option<&str> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    Some(if trimmed.is_empty() { "0" } else { trimmed })
}

fn is_stop(word: &str, lang: Lang) -> bool {
    language(lang).stop.contains(fold(word).as_str())
}

/// The index terms of a row's text written in `lang`, in order (repeats included).
pub fn row_terms(text: &str, lang: Lang, mut each: impl FnMut(&str)) {
    let normalized = normalize(text);
    pieces(&normalized, |piece| match piece {
        Piece::Cjk(run) => bigrams(run, &mut each),
        Piece::Word(word) if is_stop(word, lang) => {}
        Piece::Word(word) => each(&stem(word, lang)),
    });
}

/// One term of a query: its possible index terms (a stem per language tried, or a CJK pair)
/// and, for the query's last word, the accent-free word itself, matched as a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTerm {
    pub variants: Vec<String>,
    pub prefix: Option<String>,
    /// The word itself (not for CJK pairs), to stem in other languages ([`stem`]) when no
    /// row holds any of `variants`.
    pub word: Option<String>,
}

/// The terms of a query. `languages`: the languages to stem its words in (its own first, when
/// it can be told); stop words of any of them are dropped, unless the query has nothing else.
pub fn query_terms(query: &str, languages: &[Lang], max: usize) -> Vec<QueryTerm> {
    let normalized = normalize(query);
    let mut words: Vec<&str> = Vec::new();
    let mut out: Vec<QueryTerm> = Vec::new();
    pieces(&normalized, |piece| match piece {
        Piece::Cjk(run) => bigrams(run, |pair| {
            out.push(QueryTerm {
                variants: vec![pair.to_string()],
                prefix: None,
                word: None,
            })
        }),
        Piece::Word(word) => {
            words.push(word);
            out.push(QueryTerm {
                variants: Vec::new(),
                prefix: None,
                word: None,
            });
        }
    });
    let languages: &[Lang] = if languages.is_empty() {
        &[Lang::English]
    } else {
        languages
    };
    let all_stop = words
        .iter()
        .all(|w| languages.iter().any(|l| is_stop(w, *l)));
    let last_word = words.len().checked_sub(1);
    let mut word_at = 0usize;
    let mut kept = Vec::with_capacity(out.len());
    for term in out {
        if !term.variants.is_empty() {
            kept.push(term);
            continue;
        }
        let word = words[word_at];
        let is_last = Some(word_at) == last_word;
        word_at += 1;
        if !all_stop && languages.iter().any(|l| is_stop(word, *l)) {
            continue;
        }
        let mut variants: Vec<String> = Vec::new();
        for lang in languages {
            let s = stem(word, *lang);
            if !variants.contains(&s) {
                variants.push(s);
            }
        }
        kept.push(QueryTerm {
            variants,
            prefix: is_last.then(|| fold(word)),
            word: Some(word.to_string()),
        });
    }
    kept.truncate(max);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str, lang: Lang) -> Vec<String> {
        let mut out = Vec::new();
        row_terms(text, lang, |t| out.push(t.to_string()));
        out
    }

    #[test]
    fn cjk_runs_become_pairs_and_latin_words_stems() {
        assert_eq!(
            terms("部署前必须先在预发布环境运行冒烟测试", Lang::English),
            vec![
                "部署", "署前", "前必", "必须", "须先", "先在", "在预", "预发", "发布", "布环",
                "环境", "境运", "运行", "行冒", "冒烟", "烟测", "测试"
            ]
        );
        assert_eq!(terms("AI伴侣", Lang::English), vec!["ai", "伴侣"]);
        assert_eq!(terms("猫", Lang::English), vec!["猫"]);
        assert_eq!(
            terms("デプロイの前にテスト", Lang::English),
            vec![
                "デプ", "プロ", "ロイ", "イの", "の前", "前に", "にテ", "テス", "スト"
            ]
        );
    }

    #[test]
    fn stop_words_go_and_words_are_stemmed_then_folded() {
        assert_eq!(
            terms("When did the deployments run?", Lang::English),
            vec!["deploy", "run"]
        );
        assert_eq!(
            terms("Le déploiement des services", Lang::French),
            terms("le deploiement des services", Lang::French)
        );
        assert!(!terms("Le déploiement", Lang::French).contains(&"le".to_string()));
    }

    #[test]
    fn a_query_is_told_among_the_languages_with_a_stemmer() {
        let told: Vec<Lang> = WHATLANG_STEMMED
            .iter()
            .filter_map(|w| Lang::from_whatlang(*w))
            .collect();
        assert_eq!(
            told,
            Lang::ALL.to_vec(),
            "one whatlang name per stemmed language"
        );
        let held = [Lang::English, Lang::French, Lang::German];
        assert_eq!(
            detect_query(
                "comment déployer le service de paiement en production",
                &held
            ),
            Some(Lang::French)
        );
        assert_eq!(
            detect_query(
                "wie man den Zahlungsdienst in der Produktion bereitstellt",
                &held
            ),
            Some(Lang::German)
        );
        // Told only among the languages the index holds.
        assert_ne!(
            detect_query(
                "wie man den Zahlungsdienst in der Produktion bereitstellt",
                &[Lang::English, Lang::French]
            ),
            Some(Lang::German)
        );
        assert_eq!(detect_query("deploy the payment service", &[]), None);
        assert_eq!(
            detect_query("部署前必须先在预发布环境运行冒烟测试", &held),
            None
        );
    }

    #[test]
    fn numbers_lose_leading_zeros_and_ordinal_suffixes() {
        assert_eq!(terms("2023-05-06", Lang::English), vec!["2023", "5", "6"]);
        assert_eq!(
            terms("May 6th, the 1st", Lang::English),
            vec!["may", "6", "1"]
        );
        assert_eq!(terms("000 v2", Lang::English), vec!["0", "v2"]);
    }

    #[test]
    fn compatibility_forms_are_unified() {
        // Full-width letters and digits, a ligature.
        assert_eq!(
            terms("ＡＰＩ２", Lang::English),
            terms("api2", Lang::English)
        );
        assert_eq!(terms("ﬁle", Lang::English), terms("file", Lang::English));
    }

    #[test]
    fn languages_are_told_apart_when_the_text_says_enough() {
        assert_eq!(
            detect(
                "Le déploiement des services doit toujours passer par la préproduction avant la mise en ligne."
            ),
            Some(Lang::French)
        );
        assert_eq!(
            detect(
                "Before every deployment we run the smoke tests against the staging environment."
            ),
            Some(Lang::English)
        );
        assert_eq!(detect("部署前必须先在预发布环境运行冒烟测试"), None);
    }

    #[test]
    fn queries_drop_stop_words_unless_nothing_else_is_left() {
        let q = query_terms(
            "When did Caroline go to the support group?",
            &[Lang::English],
            16,
        );
        let firsts: Vec<&str> = q.iter().map(|t| t.variants[0].as_str()).collect();
        assert_eq!(firsts, vec!["carolin", "go", "support", "group"]);
        assert_eq!(q.last().and_then(|t| t.prefix.as_deref()), Some("group"));
        let only = query_terms("the who", &[Lang::English], 16);
        assert_eq!(only.len(), 2);
        // Several languages: a stem for each.
        let both = query_terms("deploiement", &[Lang::English, Lang::French], 16);
        assert_eq!(both.len(), 1);
        assert!(
            both[0]
                .variants
                .contains(&stem("déploiement", Lang::French))
        );
    }
}
