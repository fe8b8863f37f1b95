//! The text vulnerability experiment: train each model, explain the first `count` test
//! documents, and summarise how few word edits flip the decisions.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::Vocabulary;
use super::cf::{self, Background, CfConfig, Found};
use super::corpus::{self, Corpus, CorpusError};
use super::model::{TextModel, train_text};
use cent_host::blackbox::{self, BlackBox, TrainError};

/// Settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct TextRun {
    pub dataset: String,
    /// BBC class pair, `a,b`.
    pub classes: String,
    pub models: Vec<TextModel>,
    pub count: usize,
    pub vocab: usize,
    pub seed: u64,
}

/// Why the experiment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TextError {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error("training failed: {0}")]
    Train(#[from] TrainError),
    #[error(transparent)]
    Model(#[from] cent_host::blackbox::ModelError),
}

/// One explained document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocResult {
    pub doc: usize,
    pub excerpt: String,
    pub from: String,
    pub to: String,
    /// `+word` insertions and `-word` deletions; empty when nothing flipped.
    pub edits: Vec<String>,
    pub found: Option<Found>,
    pub latency_ms: f64,
}

/// The summary of one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelReport {
    pub model: TextModel,
    pub test_accuracy: f64,
    pub explained: usize,
    pub flipped: usize,
    pub flip_rate: f64,
    pub mean_edits: f64,
    pub single_word: usize,
    /// Share of explained documents flipped by one inserted or deleted word.
    pub single_word_rate: f64,
    pub by_tree: usize,
    pub by_greedy: usize,
    pub mean_latency_ms: f64,
    pub docs: Vec<DocResult>,
}

/// The whole report of one dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextReport {
    pub dataset: String,
    pub classes: [String; 2],
    pub documents: usize,
    pub train_docs: usize,
    pub test_docs: usize,
    pub vocabulary: usize,
    pub seed: u64,
    pub models: Vec<ModelReport>,
}

/// Runs the experiment on a fetched corpus in `cache`.
///
/// # Errors
/// [`TextError`] when the corpus is missing or a model cannot be trained.
pub fn run(settings: &TextRun, cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<TextReport, TextError> {
    let corpus = corpus::load(&settings.dataset, cache, &settings.classes)?;
    run_on(&corpus, settings, progress)
}

/// Runs the experiment on an already loaded corpus.
///
/// # Errors
/// [`TextError::Train`] when a model cannot be trained.
pub fn run_on(corpus: &Corpus, settings: &TextRun, progress: &mut dyn FnMut(&str)) -> Result<TextReport, TextError> {
    let (train_ids, test_ids) = corpus::split(&corpus.labels, 0.2, settings.seed);
    let train_docs: Vec<Vec<String>> = train_ids.iter().map(|&i| corpus.docs[i].clone()).collect();
    let vocab = Vocabulary::top_by_df(&train_docs, settings.vocab, 2);
    let encode = |ids: &[usize]| -> Vec<f32> { ids.iter().flat_map(|&i| vocab.encode(&corpus.docs[i])).collect() };
    let (train_x, test_x) = (encode(&train_ids), encode(&test_ids));
    let train_y: Vec<usize> = train_ids.iter().map(|&i| corpus.labels[i]).collect();
    let test_y: Vec<usize> = test_ids.iter().map(|&i| corpus.labels[i]).collect();
    progress(&format!(
        "{}: {} documents ({} train / {} test), vocabulary {}",
        corpus.name,
        corpus.docs.len(),
        train_ids.len(),
        test_ids.len(),
        vocab.len()
    ));
    let present: Vec<Vec<usize>> = train_x.chunks_exact(vocab.len()).map(cf::present_cols).collect();
    let mut models = Vec::new();
    for &kind in &settings.models {
        progress(&format!("{}: training {}", corpus.name, kind.name()));
        let model = train_text(kind, &train_x, vocab.len(), &train_y, settings.seed)?;
        let accuracy = blackbox::accuracy(&model, &test_x, &test_y)?;
        let predicted = model.predict(&train_x)?;
        let bg = Background { rows: &train_x, predicted: &predicted, present: &present, n_cols: vocab.len() };
        let docs: Vec<DocResult> = test_ids
            .iter()
            .enumerate()
            .take(settings.count)
            .map(|(k, &doc)| {
                explain_one(
                    &model,
                    &bg,
                    &vocab,
                    corpus,
                    doc,
                    &test_x[k * vocab.len()..(k + 1) * vocab.len()],
                    settings.seed + k as u64,
                )
            })
            .collect();
        progress(&format!("{}: {} explained {} documents", corpus.name, kind.name(), docs.len()));
        models.push(summarise(kind, accuracy, docs));
    }
    Ok(TextReport {
        dataset: corpus.name.clone(),
        classes: corpus.classes.clone(),
        documents: corpus.docs.len(),
        train_docs: train_ids.len(),
        test_docs: test_ids.len(),
        vocabulary: vocab.len(),
        seed: settings.seed,
        models,
    })
}

fn explain_one<M: BlackBox>(
    model: &M,
    bg: &Background<'_>,
    vocab: &Vocabulary,
    corpus: &Corpus,
    doc: usize,
    x: &[f32],
    seed: u64,
) -> DocResult {
    let start = Instant::now();
    let found = cf::explain(model, bg, x, &CfConfig::default(), seed);
    let latency_ms = start.elapsed().as_secs_f64() * 1e3;
    let class = model.predict(x).ok().and_then(|c| c.first().copied()).unwrap_or(0).min(1);
    let edits = found
        .as_ref()
        .map(|cf| {
            cf.toggles.iter().map(|&c| format!("{}{}", if x[c] > 0.5 { '-' } else { '+' }, vocab.words[c])).collect()
        })
        .unwrap_or_default();
    DocResult {
        doc,
        excerpt: corpus.titles[doc].clone(),
        from: corpus.classes[class].clone(),
        to: corpus.classes[1 - class].clone(),
        edits,
        found: found.map(|cf| cf.found),
        latency_ms,
    }
}

fn summarise(model: TextModel, test_accuracy: f64, docs: Vec<DocResult>) -> ModelReport {
    let explained = docs.len();
    let flipped_docs: Vec<&DocResult> = docs.iter().filter(|d| d.found.is_some()).collect();
    let flipped = flipped_docs.len();
    let total_edits: usize = flipped_docs.iter().map(|d| d.edits.len()).sum();
    let single_word = flipped_docs.iter().filter(|d| d.edits.len() == 1).count();
    let count = |f: Found| flipped_docs.iter().filter(|d| d.found == Some(f)).count();
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    ModelReport {
        model,
        test_accuracy,
        explained,
        flipped,
        flip_rate: ratio(flipped, explained),
        mean_edits: ratio(total_edits, flipped),
        single_word,
        single_word_rate: ratio(single_word, explained),
        by_tree: count(Found::Tree),
        by_greedy: count(Found::Greedy),
        mean_latency_ms: if explained == 0 {
            0.0
        } else {
            docs.iter().map(|d| d.latency_ms).sum::<f64>() / explained as f64
        },
        docs,
    }
}

/// The markdown report of several datasets: one summary table and a few examples per model.
pub fn markdown(reports: &[TextReport], command: &str) -> String {
    let mut md = String::from("# Text counterfactuals: how many words flip a classifier?\n\n");
    md.push_str(&format!("Generated by `{command}`.\n\n"));
    md.push_str("Binary bag-of-words models; a counterfactual inserts (`+word`) or deletes (`-word`) words, found by the CEnt-style search of `cent_lab::text::cf` and verified with the model. *single word* is the share of explained test documents whose decision flips with one edit.\n\n");
    md.push_str("| dataset | classes | model | test acc. | explained | flipped | mean edits | single word | tree / greedy | ms / doc |\n");
    md.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in reports {
        for m in &r.models {
            md.push_str(&format!(
                "| {} | {} vs {} | {} | {:.3} | {} | {} ({:.0}%) | {:.2} | {} ({:.0}%) | {} / {} | {:.1} |\n",
                r.dataset,
                r.classes[0],
                r.classes[1],
                m.model.name(),
                m.test_accuracy,
                m.explained,
                m.flipped,
                100.0 * m.flip_rate,
                m.mean_edits,
                m.single_word,
                100.0 * m.single_word_rate,
                m.by_tree,
                m.by_greedy,
                m.mean_latency_ms
            ));
        }
    }
    for r in reports {
        md.push_str(&format!(
            "\n## {} ({} documents after de-duplication, {} train / {} test, vocabulary {}, seed {})\n\n",
            r.dataset, r.documents, r.train_docs, r.test_docs, r.vocabulary, r.seed
        ));
        for m in &r.models {
            md.push_str(&format!("**{}** — first examples:\n\n", m.model.name()));
            for d in m.docs.iter().filter(|d| d.found.is_some()).take(4) {
                md.push_str(&format!("- \"{}…\": {} → {} by `{}`\n", d.excerpt, d.from, d.to, d.edits.join(" ")));
            }
            md.push('\n');
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two topics with marker words; some documents carry a word of both.
    fn toy_corpus() -> Corpus {
        let topics = [["vote", "party", "minister"], ["market", "shares", "profit"]];
        let mut corpus = Corpus {
            name: "toy".into(),
            classes: ["politics".into(), "business".into()],
            docs: Vec::new(),
            labels: Vec::new(),
            titles: Vec::new(),
        };
        for i in 0..60usize {
            let label = i % 2;
            let mut words: Vec<String> = topics[label].iter().take(1 + i % 3).map(|w| w.to_string()).collect();
            if i % 5 == 0 {
                words.push(topics[1 - label][0].to_string());
            }
            words.push(format!("filler{}", i % 4));
            words.sort();
            words.dedup();
            corpus.docs.push(words);
            corpus.labels.push(label);
            corpus.titles.push(format!("doc {i}"));
        }
        corpus
    }

    #[test]
    fn test_every_reported_counterfactual_flips_the_model() {
        let corpus = toy_corpus();
        let settings = TextRun {
            dataset: "toy".into(),
            classes: String::new(),
            models: vec![TextModel::Lr, TextModel::Svm],
            count: 12,
            vocab: 20,
            seed: 5,
        };
        let report = run_on(&corpus, &settings, &mut |_| {}).expect("runs");
        let (train_ids, _) = corpus::split(&corpus.labels, 0.2, 5);
        let train_docs: Vec<Vec<String>> = train_ids.iter().map(|&i| corpus.docs[i].clone()).collect();
        let vocab = Vocabulary::top_by_df(&train_docs, 20, 2);
        let y: Vec<usize> = train_ids.iter().map(|&i| corpus.labels[i]).collect();
        let x: Vec<f32> = train_ids.iter().flat_map(|&i| vocab.encode(&corpus.docs[i])).collect();
        for m in &report.models {
            assert!(m.flipped > 0, "{:?} flipped nothing", m.model);
            let model = train_text(m.model, &x, vocab.len(), &y, 5).expect("same training");
            for d in m.docs.iter().filter(|d| d.found.is_some()) {
                let mut words = corpus.docs[d.doc].clone();
                for e in &d.edits {
                    let (op, w) = e.split_at(1);
                    if op == "-" { words.retain(|x| x != w) } else { words.push(w.to_string()) }
                }
                let class = model.predict(&vocab.encode(&words)).expect("the text model cannot fail")[0];
                assert_eq!(corpus.classes[class], d.to, "{d:?}");
            }
        }
        assert!(markdown(&[report], "cent text").contains("| toy | politics vs business | lr |"));
    }
}
