//! The host pipeline end to end on the embedded Adult data: every returned counterfactual flips
//! the model and respects every constraint; the same seed gives the same output.

mod common;

use cent_host::blackbox::BlackBox;
use cent_host::data::{QueryError, Value};
use cent_host::explain::{Config, ExplainError, Explainer};
use cent_nostd::counterfactual;
use cent_nostd::schema::Mutability;
use common::adult;
use std::sync::atomic::Ordering::Relaxed;

#[test]
fn test_counterfactuals_flip_and_respect_constraints() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let mut query = schema.default_query();
    // Tighten on top of the schema: education may only grow (already), hours only grow.
    let hours = enc.feature_index("hours-per-week").unwrap();
    query.mutability[hours] = Mutability::IncreaseOnly;
    let explainer = Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default())
        .expect("the built-in model labels the pool");
    let (mut found, mut tried) = (0, 0);
    for row in 0..40 {
        let x = a.prepared.test.row(row);
        tried += 1;
        let e = match explainer.explain(x, &query, None) {
            Ok(e) => e,
            Err(ExplainError::NotFound(_)) => continue,
            Err(other) => panic!("row {row}: {other}"),
        };
        found += 1;
        let before = enc.decode(x).unwrap();
        for cf in &e.counterfactuals {
            let class = a.model().unwrap().classify(&cf.encoded)[0];
            assert_ne!(class, e.fact.index, "row {row}: counterfactual does not flip the model");
            assert_eq!(class, cf.class.index);
            assert!(counterfactual::check(&schema, &query, x, &cf.encoded).is_ok(), "row {row}: constraint broken");
            let after = enc.decode(&cf.encoded).unwrap();
            for (j, m) in query.mutability.iter().take(enc.n_features()).enumerate() {
                match (m, before[j], after[j]) {
                    (Mutability::Immutable, b, a) => assert_eq!(b, a, "row {row}: immutable feature {j} changed"),
                    (Mutability::IncreaseOnly, Value::Number(b), Value::Number(a)) => {
                        assert!(a >= b, "row {row}: feature {j} decreased")
                    }
                    _ => {}
                }
            }
            assert!(!cf.changes.is_empty() && cf.l0 == cf.changes.len());
        }
        let leaves: std::collections::HashSet<_> = e.counterfactuals.iter().map(|c| c.leaf).collect();
        assert_eq!(leaves.len(), e.counterfactuals.len(), "results come from distinct leaves");
    }
    assert!(found * 10 >= tried * 8, "only {found} of {tried} explained");
}

#[test]
fn test_same_seed_same_output() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let run = || {
        let explainer =
            Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default())
                .expect("the built-in model labels the pool");
        (0..10)
            .map(|r| format!("{:?}", explainer.explain(a.prepared.test.row(r), &query, None).ok()))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn test_json_output_is_valid() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let explainer = Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default())
        .expect("the built-in model labels the pool");
    let e = (0..20).find_map(|r| explainer.explain(a.prepared.test.row(r), &query, None).ok()).expect("an explanation");
    let text = serde_json::to_string(&e).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["counterfactuals"][0]["changes"][0]["feature"].is_string());
    assert!(v["fidelity"].as_f64().unwrap() > 0.5);
}

/// Changes a schema link ties into one move (Adult: marital-status × relationship × sex, held
/// by at least `min_rows` training rows) are listed side by side, each naming the others: tied
/// when setting one of them back alone leaves a combination too few training rows hold, as
/// counted here from the rows themselves. Linked features that each hold alone name none.
#[test]
fn test_linked_changes_are_listed_together() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let config = Config { n: 3, ..Config::default() };
    let explainer = Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, config)
        .expect("the built-in model labels the pool");
    let link = &enc.links()[0];
    let combination =
        |raw: &[Value]| -> Vec<String> { link.features.iter().map(|&j| format!("{:?}", raw[j])).collect() };
    let mut rows_holding: std::collections::HashMap<Vec<String>, usize> = std::collections::HashMap::new();
    for row in a.prepared.train.rows() {
        *rows_holding.entry(combination(&enc.decode(row).unwrap())).or_default() += 1;
    }
    let (mut tied, mut apart) = (0, 0);
    for row in 0..60 {
        let x = a.prepared.test.row(row);
        let Ok(e) = explainer.explain(x, &query, None) else { continue };
        let before = enc.decode(x).unwrap();
        for cf in &e.counterfactuals {
            let after = enc.decode(&cf.encoded).unwrap();
            let moved: Vec<usize> = link.features.iter().copied().filter(|&j| before[j] != after[j]).collect();
            // Set back alone, a moved feature leaves the factual's own combination or one at
            // least `min_rows` training rows hold; otherwise the moves are one.
            let needs_the_others = |j: usize| {
                let mut back = after.clone();
                back[j] = before[j];
                let held = combination(&back) == combination(&before)
                    || rows_holding.get(&combination(&back)).is_some_and(|&n| n >= link.min_rows);
                !held
            };
            let one_move = moved.len() > 1 && moved.iter().any(|&j| needs_the_others(j));
            let names: Vec<&str> = cf.changes.iter().map(|c| c.feature.as_str()).collect();
            let at: Vec<usize> =
                (0..names.len()).filter(|&i| moved.iter().any(|&j| enc.attributes()[j].name == names[i])).collect();
            for (i, c) in cf.changes.iter().enumerate() {
                let mut want: Vec<&str> =
                    if one_move && at.contains(&i) { at.iter().map(|&k| names[k]).collect() } else { vec![] };
                want.retain(|f| *f != c.feature);
                assert_eq!(c.linked, want, "row {row}: {names:?}");
            }
            if one_move {
                assert_eq!(
                    at.last().unwrap() - at.first().unwrap() + 1,
                    at.len(),
                    "row {row}: tied changes apart in {names:?}"
                );
                tied += 1;
            } else if moved.len() > 1 {
                apart += 1;
            }
        }
    }
    assert!(tied > 0, "no answer moved two linked features as one: the test saw nothing to check");
    eprintln!("{tied} answers with tied changes, {apart} with linked changes made apart");
}

/// The built-in model behind a fault: answers the first `ok` calls, then fails, as an ONNX
/// runtime or a user's model may after load.
struct Flaky<'a> {
    inner: &'a cent_host::blackbox::Model,
    calls: std::sync::atomic::AtomicUsize,
    ok: usize,
}

impl BlackBox for Flaky<'_> {
    fn classes(&self) -> usize {
        self.inner.classes()
    }
    fn inputs(&self) -> usize {
        self.inner.inputs()
    }
    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
        if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < self.ok {
            return self.inner.predict_proba(rows);
        }
        Err(cent_host::blackbox::ModelError::Failed {
            model: "flaky".into(),
            rows: rows.len() / self.inputs(),
            message: "device lost".into(),
        })
    }
}

#[test]
fn test_a_model_failing_at_run_time_is_an_error_naming_the_model_and_the_batch() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let x = a.prepared.test.row(0);
    // Fails on the pool: the explainer cannot be built.
    let dead = Flaky { inner: a.model().unwrap(), calls: 0.into(), ok: 0 };
    let err = Explainer::new(enc, &dead, &a.vae.encoder, &a.prepared.train.data, Config::default())
        .expect_err("a model that fails on the pool is an error");
    let text = err.to_string();
    assert!(text.contains("flaky") && text.contains(&format!("{} row(s)", a.prepared.train_labels.len())), "{text}");
    // Fails at each later call of a query (the query's class, the neighbours, the candidates).
    for ok in 1..5 {
        let flaky = Flaky { inner: a.model().unwrap(), calls: 0.into(), ok };
        let explainer = Explainer::new(enc, &flaky, &a.vae.encoder, &a.prepared.train.data, Config::default())
            .expect("the pool is labelled");
        match explainer.explain(x, &query, None) {
            Err(ExplainError::Model(e)) => {
                let text = e.to_string();
                assert!(
                    text.contains("the model flaky failed on a batch of") && text.contains("device lost"),
                    "{text}"
                );
            }
            Err(e) => panic!("call {ok}: expected a model error, got {e}"),
            Ok(e) if ok < 3 => panic!("call {ok}: explained without the model ({} results)", e.counterfactuals.len()),
            Ok(_) => {} // The query needed fewer calls than `ok`.
        }
    }
    // Baselines and the evaluation harness report it too, never a panic.
    let flaky = Flaky { inner: a.model().unwrap(), calls: 0.into(), ok: 2 };
    let bench = cent_lab::evaluate::Bench::new(&a.prepared, &flaky, &a.vae, cent_lab::evaluate::Config::new(2, 1));
    let bench = bench.expect("pool and reference labelled");
    let err = bench.factuals().expect_err("the third call fails");
    assert!(err.to_string().contains("flaky"), "{err}");
}

/// A model that returns one probability too few is refused, not indexed out of bounds.
#[test]
fn test_a_model_returning_the_wrong_number_of_probabilities_is_an_error() {
    struct Short;
    impl BlackBox for Short {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            3
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
            Ok(vec![0.5; (rows.len() / 3 * 2).saturating_sub(1)])
        }
    }
    let err = Short.predict(&[0.0; 6]).expect_err("3 values for 2 rows of 2 classes");
    assert!(err.to_string().contains("3 values returned, 4 expected"), "{err}");
    struct NotANumber;
    impl BlackBox for NotANumber {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            1
        }
        fn predict_proba(&self, _: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
            Ok(vec![0.5, f32::NAN])
        }
    }
    let err = NotANumber.probabilities(&[0.0]).expect_err("NaN");
    assert!(err.to_string().contains("NaN"), "{err}");
}

#[test]
fn test_direction_on_unordered_categorical_is_a_query_error() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let mut query = enc.to_core_schema().default_query();
    let workclass = enc.feature_index("workclass").unwrap();
    query.mutability[workclass] = Mutability::IncreaseOnly;
    let explainer = Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default())
        .expect("the built-in model labels the pool");
    match explainer.explain(a.prepared.test.row(0), &query, None) {
        Err(ExplainError::Query(QueryError::Unordered { feature, direction })) => {
            assert_eq!((feature.as_str(), direction), ("workclass", "increase-only"));
        }
        other => panic!("expected a query error naming workclass, got {other:?}"),
    }
}

/// When no candidate of the first neighbourhood is confirmed, wider ones are tried (k × 4, up
/// to `widen` times) before the last resort: queries that only the last resort answers with a
/// small k are answered from a tree leaf of a larger neighbourhood, and every answer still flips
/// the model and passes the core's check.
#[test]
fn test_widening_the_neighbourhood_recovers_unconfirmed_queries() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let narrow = Config { k: 16, widen: 0, ..Config::default() };
    let wide = Config { widen: 2, ..narrow };
    let explain =
        |config: Config| Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, config);
    let (narrow, wide) = (explain(narrow).expect("labels"), explain(wide).expect("labels"));
    // The last resort's answers have no surrogate (a person may also win over a region: that is
    // still an answer from a neighbourhood).
    let from_leaf = |e: &cent_host::explain::Explanation| e.tree_nodes > 0;
    let (mut recovered, mut lost) = (0, 0);
    for row in 0..60 {
        let x = a.prepared.test.row(row);
        match (narrow.explain(x, &query, None), wide.explain(x, &query, None)) {
            (Ok(n), Ok(w)) if !from_leaf(&n) && from_leaf(&w) => {
                recovered += 1;
                assert!(w.neighbours > 16, "row {row}: answered from {} neighbours", w.neighbours);
                for cf in &w.counterfactuals {
                    assert_ne!(a.model().unwrap().classify(&cf.encoded)[0], w.fact.index, "row {row}: not flipped");
                    assert!(counterfactual::check(&enc.to_core_schema(), &query, x, &cf.encoded).is_ok());
                }
            }
            (Ok(n), Ok(w)) if from_leaf(&n) && !from_leaf(&w) => lost += 1,
            (Ok(_), Err(_)) => lost += 1,
            _ => {}
        }
    }
    assert!(recovered > 0, "no query needed a wider neighbourhood");
    assert_eq!(lost, 0, "widening must not lose an answer the first neighbourhood gives");
}

/// Several answers to one person use different levers first: an answer that changes exactly
/// the features of an earlier one comes only after every answer with levers of its own; the
/// first answer is the one asked for alone (`n = 1`). (The share of answer pairs with the same
/// levers is measured by `cent evaluate`, "Different levers".)
#[test]
fn test_answers_with_other_levers_come_before_repeats() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let explainer = |n: usize| {
        Explainer::new(
            enc,
            a.model().unwrap(),
            &a.vae.encoder,
            &a.prepared.train.data,
            Config { n, ..Config::default() },
        )
        .expect("the built-in model labels the pool")
    };
    let (three, one) = (explainer(3), explainer(1));
    let mut pairs = 0;
    for row in 0..30 {
        let x = a.prepared.test.row(row);
        let Ok(e) = three.explain(x, &query, None) else { continue };
        let alone = one.explain(x, &query, None).expect("found with n = 3, so with n = 1");
        assert_eq!(e.counterfactuals[0].encoded, alone.counterfactuals[0].encoded, "row {row}: the first answer");
        let levers: Vec<Vec<usize>> = e
            .counterfactuals
            .iter()
            .map(|cf| counterfactual::changed_features(&schema, x, &cf.encoded).collect())
            .collect();
        let repeats: Vec<bool> = (0..levers.len()).map(|k| levers[..k].contains(&levers[k])).collect();
        if let Some(first) = repeats.iter().position(|&r| r) {
            assert!(repeats[first..].iter().all(|&r| r), "row {row}: a new lever after a repeat: {levers:?}");
        }
        pairs += levers.len() * levers.len().saturating_sub(1) / 2;
        assert!(e.counterfactuals.iter().enumerate().all(|(k, cf)| cf.rank == k + 1), "row {row}: ranks in order");
    }
    assert!(pairs >= 20, "only {pairs} answer pairs: the rows should give several answers");
}

/// The built-in model, counting the rows it is asked for.
struct Counted<'a> {
    inner: &'a cent_host::blackbox::Model,
    rows: std::sync::atomic::AtomicUsize,
}

impl BlackBox for Counted<'_> {
    fn classes(&self) -> usize {
        self.inner.classes()
    }
    fn inputs(&self) -> usize {
        self.inner.inputs()
    }
    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
        self.rows.fetch_add(rows.len() / self.inputs(), Relaxed);
        self.inner.predict_proba(rows)
    }
}

/// A model asked once for each distinct row of a batch gives the answers it gives asked for
/// every row, bit for bit, while being asked for fewer rows: projected neighbours repeat. (The
/// surrogate fits and their held-out fidelity already ask once per distinct row; the other
/// calls of a query still repeat rows, about one in fourteen on these.)
#[test]
fn test_asking_each_distinct_row_once_keeps_every_answer() {
    use cent_host::distinct::Distinct;
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let model = a.model().unwrap();
    let (plain, once) =
        (Counted { inner: model, rows: 0.into() }, Distinct::new(Counted { inner: model, rows: 0.into() }));
    let config = Config { parallel: false, ..Config::default() };
    let pool = &a.prepared.train.data;
    let by_row = Explainer::new(enc, &plain, &a.vae.encoder, pool, config).expect("labels the pool");
    let by_distinct = Explainer::new(enc, &once, &a.vae.encoder, pool, config).expect("labels the pool");
    let (rows_before, distinct_before) = (plain.rows.load(Relaxed), once.get_ref().rows.load(Relaxed));
    let mut answered = 0;
    for row in 0..12 {
        let x = a.prepared.test.row(row);
        let (p, q) = (by_row.explain(x, &query, None), by_distinct.explain(x, &query, None));
        // Compared as JSON: an answer of the last resort has a NaN fidelity.
        let json = |r: &Result<cent_host::explain::Explanation, ExplainError>| match r {
            Ok(e) => serde_json::to_string(e).unwrap(),
            Err(e) => e.to_string(),
        };
        assert_eq!(json(&p), json(&q), "row {row}");
        answered += usize::from(p.is_ok());
    }
    let asked = plain.rows.load(Relaxed) - rows_before;
    let asked_once = once.get_ref().rows.load(Relaxed) - distinct_before;
    assert!(answered >= 8, "{answered} of 12 rows answered");
    assert!(asked_once * 20 < asked * 19, "{asked_once} distinct rows asked against {asked}");
}
