//! Wide data on the host, past the device's 64 encoded columns: Adult with every attribute
//! one-hot (`adult-wide`, 104 columns) and a synthetic dataset of 2,000 columns explain and
//! evaluate end to end with the host's capacities, while a device bundle of either is refused
//! naming the limit and the figure.

mod common;

use cent_host::artifacts::{Artifacts, Setup, Source};
use cent_host::atlas::AtlasParams;
use cent_host::blackbox::ModelKind;
use cent_host::explain::{self, Explainer};
use cent_host::export::{ExportError, Widths, export};
use cent_host::support::Support;
use cent_lab::evaluate::{Bench, Config, MethodKind};
use cent_nostd::counterfactual;

fn load(source: Source) -> Artifacts {
    Setup { source, model: Some(ModelKind::Mlp), cache: common::cache(), seed: common::SEED }
        .load()
        .expect("artifacts load or train")
}

/// Explains the first `n` test rows: every counterfactual flips the model, passes the core's
/// constraint check and breaks no schema link. Returns how many rows got one.
fn explain_rows(a: &Artifacts, n: usize) -> usize {
    let enc = &a.prepared.encoding;
    let config = explain::Config { n: 1, seed: common::SEED, ..explain::Config::default() };
    let cent =
        Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, config).expect("explainer");
    let support = Support::new(enc, &a.prepared.train.data);
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let mut found = 0;
    for r in 0..n {
        let x = a.prepared.test.row(r);
        let fact = a.model().unwrap().classify(x)[0];
        let Ok(e) = cent.explain(x, &query, None) else { continue };
        for cf in &e.counterfactuals {
            assert_eq!(cf.encoded.len(), enc.n_cols());
            assert_ne!(a.model().unwrap().classify(&cf.encoded)[0], fact, "row {r}: does not flip");
            assert_eq!(counterfactual::check(&schema, &query, x, &cf.encoded), Ok(()), "row {r}");
            assert_eq!(support.link_violations(&cf.encoded), 0, "row {r}: a link is broken");
        }
        found += usize::from(!e.counterfactuals.is_empty());
    }
    found
}

/// CEnt and the random baseline on `factuals` drawn test rows: found answers flip the model
/// and break nothing.
fn evaluate(a: &Artifacts, factuals: usize) {
    let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(factuals, 3)).expect("labels");
    let rows = bench.factuals().expect("labels");
    for kind in [MethodKind::Cent, MethodKind::Random] {
        let s = bench.run(kind, &rows).expect("runs").summary;
        assert!(s.found > 0, "{}: nothing found: {s:?}", kind.name());
        assert!((s.flip_rate - s.found as f64 / rows.len() as f64).abs() < 1e-12, "{}: {s:?}", kind.name());
        assert_eq!((s.immutable_violation_rate, s.infeasible_rate), (0.0, 0.0), "{}", kind.name());
        if kind == MethodKind::Cent {
            // The baselines do not know the schema's links; CEnt keeps to them.
            assert_eq!(s.link_violation_rate, 0.0);
        }
    }
}

fn assert_export_refused(a: &Artifacts, columns: usize) {
    match export(a, AtlasParams::default(), Widths::I16) {
        Err(e @ ExportError::Device { .. }) => {
            let text = e.to_string();
            let figure = format!("{columns} encoded columns (the device holds at most 64)");
            assert!(text.contains(&figure), "names the figure and the limit: {text}");
        }
        other => panic!("a bundle of {columns} columns is refused, got {:?}", other.map(|e| e.bytes.len())),
    }
}

#[test]
fn test_adult_wide_explains_evaluates_and_is_refused_by_the_device() {
    let a = load(Source::Builtin("adult-wide".into()));
    let enc = &a.prepared.encoding;
    assert_eq!((enc.attributes().len(), enc.n_cols()), (14, 104));
    let names = enc.column_names();
    assert_eq!(&names[..6], ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]);
    assert_eq!(names[103], "native-country=Yugoslavia");
    let found = explain_rows(&a, 20);
    assert!(found >= 15, "most rows get an answer: {found} of 20");
    evaluate(&a, 10);
    assert_export_refused(&a, 104);
}

#[test]
fn test_two_thousand_columns_explain_and_evaluate() {
    let dir = std::env::temp_dir().join(format!("cent-wide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, schema) = common::wide::write(&dir).expect("writes the synthetic files");
    let a = load(Source::Custom { csv: Some(csv), schema });
    assert_eq!(a.prepared.encoding.n_cols(), 2000);
    let found = explain_rows(&a, 5);
    assert!(found >= 3, "most rows get an answer: {found} of 5");
    evaluate(&a, 6);
    assert_export_refused(&a, 2000);
    std::fs::remove_dir_all(&dir).ok();
}
