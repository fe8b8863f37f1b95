//! The host pipeline end to end on the embedded Adult data: every returned counterfactual flips
//! the model and respects every constraint; the same seed gives the same output.

mod common;

use cent_host::blackbox::BlackBox;
use cent_host::data::{QueryError, Value};
use cent_host::explain::{Config, ExplainError, Explainer};
use cent_nostd::counterfactual;
use cent_nostd::schema::Mutability;
use common::adult;

#[test]
fn test_counterfactuals_flip_and_respect_constraints() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let mut query = schema.default_query();
    // Tighten on top of the schema: education may only grow (already), hours only grow.
    let hours = enc.feature_index("hours-per-week").unwrap();
    query.mutability[hours] = Mutability::IncreaseOnly;
    let explainer = Explainer::new(enc, &a.model, &a.vae.encoder, &a.prepared.train.data, Config::default());
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
            let class = a.model.predict(&cf.encoded)[0];
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
        let explainer = Explainer::new(enc, &a.model, &a.vae.encoder, &a.prepared.train.data, Config::default());
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
    let explainer = Explainer::new(enc, &a.model, &a.vae.encoder, &a.prepared.train.data, Config::default());
    let e = (0..20).find_map(|r| explainer.explain(a.prepared.test.row(r), &query, None).ok()).expect("an explanation");
    let text = serde_json::to_string(&e).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["counterfactuals"][0]["changes"][0]["feature"].is_string());
    assert!(v["fidelity"].as_f64().unwrap() > 0.5);
}

#[test]
fn test_direction_on_unordered_categorical_is_a_query_error() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let mut query = enc.to_core_schema().default_query();
    let workclass = enc.feature_index("workclass").unwrap();
    query.mutability[workclass] = Mutability::IncreaseOnly;
    let explainer = Explainer::new(enc, &a.model, &a.vae.encoder, &a.prepared.train.data, Config::default());
    match explainer.explain(a.prepared.test.row(0), &query, None) {
        Err(ExplainError::Query(QueryError::Unordered { feature, direction })) => {
            assert_eq!((feature.as_str(), direction), ("workclass", "increase-only"));
        }
        other => panic!("expected a query error naming workclass, got {other:?}"),
    }
}
