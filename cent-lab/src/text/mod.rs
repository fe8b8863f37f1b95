//! Counterfactuals for text classifiers: which few word insertions or deletions flip a
//! document's class?
//!
//! Documents become binary bag-of-words vectors over a vocabulary of the most frequent words
//! (by document frequency on the training split). Three black boxes are trained with burn
//! ([`model`]): logistic regression, an MLP with hidden layers of 100 and 50 ReLU units, and a
//! linear SVM (hinge loss). [`cf`] searches the minimal edits CEnt-style and [`report`] turns
//! the results into the vulnerability report (markdown and JSON).

pub mod cf;
pub mod corpus;
pub mod model;
pub mod report;

use std::collections::HashMap;

/// Words too common to carry topic or spam signal; dropped before counting.
const STOPWORDS: [&str; 48] = [
    "the", "and", "for", "that", "this", "with", "was", "are", "but", "not", "you", "have", "has", "had", "his", "her",
    "its", "they", "from", "will", "would", "can", "could", "been", "were", "which", "their", "there", "what", "all",
    "one", "said", "also", "who", "more", "than", "about", "our", "out", "your", "any", "may", "into", "some", "other",
    "them", "when", "him",
];

/// Lowercase alphabetic tokens of 3..=20 letters, stopwords removed (order kept, repeats kept).
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|t| (3..=20).contains(&t.len()))
        .map(str::to_ascii_lowercase)
        .filter(|t| !STOPWORDS.contains(&t.as_str()))
        .collect()
}

/// The distinct tokens of a document, sorted.
pub fn word_set(text: &str) -> Vec<String> {
    let mut words = tokenize(text);
    words.sort();
    words.dedup();
    words
}

/// A vocabulary: word -> column.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocabulary {
    pub words: Vec<String>,
    index: HashMap<String, usize>,
}

impl Vocabulary {
    /// The `size` words of highest document frequency over `docs` (each a sorted distinct word
    /// set); ties broken alphabetically so the vocabulary is deterministic. Words in fewer than
    /// `min_df` documents are never taken.
    pub fn top_by_df(docs: &[Vec<String>], size: usize, min_df: usize) -> Self {
        let mut df: HashMap<&str, usize> = HashMap::new();
        for doc in docs {
            for w in doc {
                *df.entry(w.as_str()).or_default() += 1;
            }
        }
        let mut ranked: Vec<(&str, usize)> = df.into_iter().filter(|(_, n)| *n >= min_df).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let words: Vec<String> = ranked.into_iter().take(size).map(|(w, _)| w.to_string()).collect();
        Self::from_words(words)
    }

    /// A vocabulary in the given column order.
    pub fn from_words(words: Vec<String>) -> Self {
        let index = words.iter().enumerate().map(|(i, w)| (w.clone(), i)).collect();
        Self { words, index }
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn column(&self, word: &str) -> Option<usize> {
        self.index.get(word).copied()
    }

    /// The binary presence vector of a word set.
    pub fn encode(&self, doc: &[String]) -> Vec<f32> {
        let mut row = vec![0.0; self.len()];
        for w in doc {
            if let Some(c) = self.column(w) {
                row[c] = 1.0;
            }
        }
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn test_tokenize_lowercases_and_drops_short_and_stopwords() {
        assert_eq!(tokenize("The Labour MP, an ex-banker: 42 votes!"), vec!["labour", "banker", "votes"]);
    }

    #[test]
    fn test_vocabulary_ranks_by_document_frequency_then_alphabet() {
        let docs = vec![set(&["tax", "vote"]), set(&["tax", "goal"]), set(&["tax", "vote", "zeta"])];
        let vocab = Vocabulary::top_by_df(&docs, 3, 1);
        assert_eq!(vocab.words, vec!["tax", "vote", "goal"]);
        assert_eq!(vocab.encode(&set(&["goal", "unknown", "tax"])), vec![1.0, 0.0, 1.0]);
        assert!(Vocabulary::top_by_df(&docs, 9, 2).words.len() == 2, "min_df filters");
    }
}
