//! Text and image counterfactuals through the public API: every reported counterfactual flips
//! the classifier, the same seed gives the same report, and the image contrast follows the
//! PP/PN colour rule. The real-corpus test fetches BBC News into the shared cache when it is
//! not there (a failed fetch fails it; `CENT_OFFLINE=1` skips it explicitly).

mod common;

use cent_host::blackbox::BlackBox;
use cent_lab::images::render;
use cent_lab::text::Vocabulary;
use cent_lab::text::corpus::{self, Corpus};
use cent_lab::text::model::{TextModel, train_text};
use cent_lab::text::report::{TextRun, run_on};

/// A small two-topic corpus with overlapping vocabularies.
fn synthetic() -> Corpus {
    let politics = ["vote", "party", "minister", "election", "labour"];
    let business = ["market", "shares", "profit", "bank", "growth"];
    let mut c = Corpus {
        name: "synthetic".into(),
        classes: ["politics".into(), "business".into()],
        docs: Vec::new(),
        labels: Vec::new(),
        titles: Vec::new(),
    };
    for i in 0..80usize {
        let label = i % 2;
        let (own, other) = if label == 0 { (&politics, &business) } else { (&business, &politics) };
        let mut words: Vec<String> = (0..2 + i % 3).map(|k| own[(i + k) % 5].to_string()).collect();
        if i % 4 == 0 {
            words.push(other[i % 5].to_string());
        }
        words.push(format!("common{}", i % 3));
        words.sort();
        words.dedup();
        c.docs.push(words);
        c.labels.push(label);
        c.titles.push(format!("doc {i}"));
    }
    c
}

/// Re-applies each reported edit list to its document and checks the retrained (same seed)
/// model's decision.
fn assert_reports_flip(corpus: &Corpus, settings: &TextRun) {
    let report = run_on(corpus, settings, &mut |_| {}).expect("runs");
    let again = run_on(corpus, settings, &mut |_| {}).expect("runs");
    let strip = |r: &cent_lab::text::report::TextReport| -> Vec<Vec<Vec<String>>> {
        r.models.iter().map(|m| m.docs.iter().map(|d| d.edits.clone()).collect()).collect()
    };
    assert_eq!(strip(&report), strip(&again), "same seed, same edits");
    let (train_ids, _) = corpus::split(&corpus.labels, 0.2, settings.seed);
    let docs: Vec<Vec<String>> = train_ids.iter().map(|&i| corpus.docs[i].clone()).collect();
    let vocab = Vocabulary::top_by_df(&docs, settings.vocab, 2);
    let x: Vec<f32> = train_ids.iter().flat_map(|&i| vocab.encode(&corpus.docs[i])).collect();
    let y: Vec<usize> = train_ids.iter().map(|&i| corpus.labels[i]).collect();
    for m in &report.models {
        assert!(m.flipped > 0, "{:?}: nothing flipped", m.model);
        let model = train_text(m.model, &x, vocab.len(), &y, settings.seed).expect("trains");
        for d in m.docs.iter().filter(|d| d.found.is_some()) {
            let mut words = corpus.docs[d.doc].clone();
            for e in &d.edits {
                let (op, w) = e.split_at(1);
                if op == "-" {
                    words.retain(|v| v != w);
                } else {
                    words.push(w.to_string());
                }
            }
            let class = model.predict(&vocab.encode(&words)).expect("the text model cannot fail")[0];
            assert_eq!(corpus.classes[class], d.to, "{:?}: {d:?} does not flip", m.model);
        }
    }
}

#[test]
fn test_synthetic_text_counterfactuals_flip_every_model() {
    let settings = TextRun {
        dataset: "synthetic".into(),
        classes: String::new(),
        models: TextModel::ALL.to_vec(),
        count: 10,
        vocab: 30,
        seed: 2,
    };
    assert_reports_flip(&synthetic(), &settings);
}

#[test]
fn test_bbc_slice_counterfactuals_flip() {
    let Some(cache) = common::datasets::fetched("bbc") else { return };
    let full = corpus::load("bbc", &cache, "politics,business").expect("the fetched bbc corpus loads");
    // Every 4th document keeps the test fast while staying real text.
    let keep: Vec<usize> = (0..full.docs.len()).step_by(4).collect();
    let slice = Corpus {
        name: full.name.clone(),
        classes: full.classes.clone(),
        docs: keep.iter().map(|&i| full.docs[i].clone()).collect(),
        labels: keep.iter().map(|&i| full.labels[i]).collect(),
        titles: keep.iter().map(|&i| full.titles[i].clone()).collect(),
    };
    let settings = TextRun {
        dataset: "bbc".into(),
        classes: "politics,business".into(),
        models: vec![TextModel::Lr],
        count: 6,
        vocab: 300,
        seed: 1,
    };
    assert_reports_flip(&slice, &settings);
}

#[test]
fn test_contrast_colours_follow_pp_pn_rule() {
    let side = render::SIDE;
    let mut original = vec![0.0f32; side * side];
    original[3 * side + 3] = 1.0;
    original[3 * side + 4] = 1.0;
    let mut cf = original.clone();
    cf[3 * side + 3] = 0.0; // reduced: pertinent positive, red
    cf[24 * side + 10] = 1.0; // added: pertinent negative, green
    let tile = render::contrast(&original, &cf);
    let [r, g, b] = tile.get(3, 3);
    assert!(r > g + 100 && r > b + 100, "reduced pixel must be red: {:?}", [r, g, b]);
    let [r, g, b] = tile.get(10, 24);
    assert!(g > r + 100 && g > b + 100, "added pixel must be green: {:?}", [r, g, b]);
}
