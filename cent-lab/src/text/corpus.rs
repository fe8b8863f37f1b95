//! Loading the fetched text corpora as labelled word sets, de-duplicated and split.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use cent_host::train::SeededRng;

/// Why a corpus cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    #[error("{dir} not found: run `cent fetch {name}` first")]
    NotFetched { name: String, dir: String },
    #[error("unknown text dataset `{0}` (bbc or spam)")]
    Unknown(String),
    #[error("bbc has no class `{class}`; classes: business, entertainment, politics, sports, tech")]
    Class { class: String },
    #[error("--classes needs exactly two distinct classes, got `{0}`")]
    ClassPair(String),
    #[error("class `{0}` has no documents")]
    Empty(String),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// Labelled documents (each a sorted set of distinct words) and the class names.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    pub name: String,
    pub classes: [String; 2],
    pub docs: Vec<Vec<String>>,
    pub labels: Vec<usize>,
    /// A short excerpt (first words) of each document, for the report.
    pub titles: Vec<String>,
}

/// Groups of the SpamAssassin package: `(directory, label)`, 0 = ham, 1 = spam.
const SPAM_GROUPS: [(&str, usize); 5] =
    [("easy-ham-1", 0), ("easy-ham-2", 0), ("hard-ham-1", 0), ("spam-1", 1), ("spam-2", 1)];

/// Loads `bbc` (two of its classes) or `spam` from `cache/<name>/`.
///
/// # Errors
/// [`CorpusError`] when the corpus is not fetched, the classes are wrong, or a file is unreadable.
pub fn load(name: &str, cache: &Path, bbc_classes: &str) -> Result<Corpus, CorpusError> {
    let dir = cache.join(name);
    if !dir.join(".complete").is_file() {
        return Err(CorpusError::NotFetched { name: name.to_string(), dir: dir.display().to_string() });
    }
    match name {
        "bbc" => load_bbc(&dir, bbc_classes),
        "spam" => load_spam(&dir),
        other => Err(CorpusError::Unknown(other.to_string())),
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CorpusError + '_ {
    move |source| CorpusError::Io { path: path.display().to_string(), source }
}

/// The `.txt` files of a directory, sorted by name.
fn txt_files(dir: &Path) -> Result<Vec<PathBuf>, CorpusError> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io_err(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    Ok(files)
}

/// Parses `a,b` into two BBC class directories (`sport` is read as `sports`).
fn bbc_pair(classes: &str) -> Result<[String; 2], CorpusError> {
    let parts: Vec<String> = classes.split(',').map(|s| s.trim().to_ascii_lowercase()).collect();
    if parts.len() != 2 || parts[0] == parts[1] {
        return Err(CorpusError::ClassPair(classes.to_string()));
    }
    let known = ["business", "entertainment", "politics", "sports", "tech"];
    let fix = |c: &str| if c == "sport" { "sports".to_string() } else { c.to_string() };
    let pair = [fix(&parts[0]), fix(&parts[1])];
    for c in &pair {
        if !known.contains(&c.as_str()) {
            return Err(CorpusError::Class { class: c.clone() });
        }
    }
    Ok(pair)
}

fn load_bbc(dir: &Path, classes: &str) -> Result<Corpus, CorpusError> {
    let pair = bbc_pair(classes)?;
    let mut corpus = empty("bbc", pair.clone());
    let mut seen = HashSet::new();
    for (label, class) in pair.iter().enumerate() {
        let class_dir = dir.join(class);
        if !class_dir.is_dir() {
            return Err(CorpusError::Empty(class.clone()));
        }
        for file in txt_files(&class_dir)? {
            let bytes = fs::read(&file).map_err(io_err(&file))?;
            push_unique(&mut corpus, &mut seen, &String::from_utf8_lossy(&bytes), label);
        }
    }
    Ok(corpus)
}

fn load_spam(dir: &Path) -> Result<Corpus, CorpusError> {
    let mut corpus = empty("spam", ["ham".to_string(), "spam".to_string()]);
    let mut seen = HashSet::new();
    for (group, label) in SPAM_GROUPS {
        let group_dir = dir.join(group);
        for file in txt_files(&group_dir)? {
            let bytes = fs::read(&file).map_err(io_err(&file))?;
            push_unique(&mut corpus, &mut seen, &mail_body(&String::from_utf8_lossy(&bytes)), label);
        }
    }
    Ok(corpus)
}

fn empty(name: &str, classes: [String; 2]) -> Corpus {
    Corpus { name: name.to_string(), classes, docs: Vec::new(), labels: Vec::new(), titles: Vec::new() }
}

/// Adds a document unless the same text was added before (exact duplicates would leak
/// between the train and test splits).
fn push_unique(corpus: &mut Corpus, seen: &mut HashSet<String>, text: &str, label: usize) {
    if !seen.insert(text.to_string()) {
        return;
    }
    let title: String = text.split_whitespace().take(8).collect::<Vec<_>>().join(" ");
    corpus.docs.push(super::word_set(text));
    corpus.labels.push(label);
    corpus.titles.push(title.chars().take(70).collect());
}

/// The body of an RFC-822 mail: everything after the first blank line (headers would let a
/// model learn mailing-list names instead of content).
pub fn mail_body(raw: &str) -> String {
    let normalized = raw.replace("\r\n", "\n");
    match normalized.split_once("\n\n") {
        Some((_, body)) => body.to_string(),
        None => String::new(),
    }
}

/// A seeded split into `(train, test)` document indices; `test_fraction` of each class goes
/// to the test side.
pub fn split(labels: &[usize], test_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut rng = SeededRng::new(seed);
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for class in 0..2 {
        let members: Vec<usize> = labels.iter().enumerate().filter(|(_, l)| **l == class).map(|(i, _)| i).collect();
        let order = rng.permutation(members.len());
        let n_test = (members.len() as f64 * test_fraction).round() as usize;
        for (k, &pos) in order.iter().enumerate() {
            if k < n_test { test.push(members[pos]) } else { train.push(members[pos]) }
        }
    }
    train.sort_unstable();
    test.sort_unstable();
    (train, test)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_mail_body_strips_headers() {
        let raw = "From: a@b\r\nSubject: hi\r\n\r\nBuy cheap pills\n\nnow";
        assert_eq!(mail_body(raw), "Buy cheap pills\n\nnow");
        assert_eq!(mail_body("no blank line"), "");
    }

    #[test]
    fn test_bbc_pair_validates_classes() {
        assert_eq!(bbc_pair("politics, business").expect("valid"), ["politics".to_string(), "business".to_string()]);
        assert_eq!(bbc_pair("sport,tech").expect("valid")[0], "sports");
        assert!(matches!(bbc_pair("politics"), Err(CorpusError::ClassPair(_))));
        assert!(matches!(bbc_pair("tech,tech"), Err(CorpusError::ClassPair(_))));
        assert!(matches!(bbc_pair("tech,cooking"), Err(CorpusError::Class { .. })));
    }

    #[test]
    fn test_split_is_seeded_stratified_and_disjoint() {
        let labels = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1];
        let (train, test) = split(&labels, 0.5, 3);
        assert_eq!(test.iter().filter(|&&i| labels[i] == 1).count(), 3);
        assert_eq!(train.len() + test.len(), labels.len());
        assert!(train.iter().all(|i| !test.contains(i)));
        assert_eq!(split(&labels, 0.5, 3), (train, test));
    }

    #[test]
    fn test_missing_corpus_names_fetch_command() {
        let err = load("spam", Path::new("/nonexistent-cache"), "").expect_err("not fetched");
        assert!(err.to_string().contains("cent fetch spam"), "{err}");
    }
}
