//! The evaluation harness on the embedded Adult data: every method's counterfactuals flip the
//! model and break no constraint, failures are counted as such, and an ONNX black box drives
//! the same harness.

mod common;

use cent_lab::evaluate::{Bench, Config, MethodKind};
use common::adult;
use std::path::Path;

#[test]
fn test_every_method_reports_only_flipped_feasible_counterfactuals() {
    let a = adult();
    let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(10, 3)).expect("labels");
    let factuals = bench.factuals().expect("labels");
    assert_eq!(factuals.len(), 10);
    let classes: Vec<usize> =
        factuals.iter().map(|&r| a.model().unwrap().classify(a.prepared.test.row(r))[0]).collect();
    assert!(classes.contains(&0) && classes.contains(&1), "both classes are drawn: {classes:?}");
    for kind in MethodKind::ALL {
        let result = bench.run(kind, &factuals).expect("runs");
        let s = &result.summary;
        for row in &result.rows {
            assert_eq!(row.target_class, 1 - row.fact_class);
            match &row.measures {
                Some(m) => {
                    assert!(m.flipped && m.feasible, "{}: {row:?}", kind.name());
                    assert!(!m.violations.immutable && !m.violations.semi_immutable, "{}: {row:?}", kind.name());
                    assert!(m.l0 >= 1 && m.l1 > 0.0 && m.l2 <= m.l1 + 1e-9 && m.linf <= m.l2 + 1e-9);
                    assert!((0.0..=1.0).contains(&m.ynn));
                }
                None => assert!(!row.flipped && row.reason.is_some(), "{}: {row:?}", kind.name()),
            }
        }
        assert!((s.flip_rate - s.found as f64 / 10.0).abs() < 1e-12, "{}: every found result flips", kind.name());
        assert_eq!((s.immutable_violation_rate, s.semi_immutable_violation_rate, s.infeasible_rate), (0.0, 0.0, 0.0));
        assert_eq!(s.fidelity.is_some(), kind == MethodKind::Cent && s.found > 0);
    }
    let cent = bench.run(MethodKind::Cent, &factuals).expect("runs").summary;
    assert!(cent.flip_rate >= 0.8, "CEnt flips most Adult factuals: {cent:?}");
}

/// The device's atlas measured like every method: its answers flip the full-precision model,
/// keep to the data (no unseen value, no broken link) and repeat exactly; without a bundle it
/// reports why, factual by factual.
#[test]
fn test_the_atlas_is_measured_like_every_method() {
    let a = adult();
    let bytes = cent_host::export::write_bundle(
        a,
        cent_host::atlas::AtlasParams { seed: 1, ..Default::default() },
        cent_host::export::Widths::I16,
    )
    .expect("export");
    let bare = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(20, 5)).expect("labels");
    let factuals = bare.factuals().expect("labels");
    let none = bare.run(MethodKind::Atlas, &factuals).expect("runs");
    assert!(none.rows.iter().all(|r| !r.found && r.reason.as_deref() == Some("no device bundle to run the atlas on")));
    let bench = bare.with_atlas(&bytes).expect("the exported bundle loads");
    let run = bench.run(MethodKind::Atlas, &factuals).expect("runs");
    let s = &run.summary;
    assert!(s.flip_rate >= 0.5, "the atlas answers most of 20 Adult factuals: {s:?}");
    assert!((s.flip_rate - s.found as f64 / 20.0).abs() < 1e-12, "every found answer flips");
    assert_eq!((s.immutable_violation_rate, s.infeasible_rate), (0.0, 0.0));
    assert_eq!((s.unseen_value_share, s.link_violation_rate), (0.0, 0.0), "answers keep to the data");
    let again = bench.run(MethodKind::Atlas, &factuals).expect("runs");
    assert_eq!(
        run.rows.iter().map(|r| &r.counterfactual).collect::<Vec<_>>(),
        again.rows.iter().map(|r| &r.counterfactual).collect::<Vec<_>>()
    );
    assert!(!MethodKind::ALL.contains(&MethodKind::Atlas), "run only when asked for");
}

#[test]
fn test_runs_are_deterministic_for_a_seed() {
    let a = adult();
    let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(4, 9)).expect("labels");
    let factuals = bench.factuals().expect("labels");
    for kind in [MethodKind::Gs, MethodKind::Random, MethodKind::Face] {
        let (one, two) = (bench.run(kind, &factuals).expect("runs"), bench.run(kind, &factuals).expect("runs"));
        let strip = |r: &cent_lab::evaluate::MethodResult| {
            r.rows.iter().map(|row| (row.test_row, row.found, row.measures)).collect::<Vec<_>>()
        };
        assert_eq!(strip(&one), strip(&two), "{}", kind.name());
    }
}

#[test]
fn test_onnx_black_box_drives_the_harness() {
    let a = adult();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/onnx/adult-mlp.onnx");
    let model = a.black_box(Some(&path)).expect("the committed ONNX model fits Adult");
    let bench = Bench::new(&a.prepared, model.as_ref(), &a.vae, Config::new(6, 1)).expect("labels");
    let result = bench.run(MethodKind::Cent, &bench.factuals().expect("labels")).expect("runs");
    assert!(result.summary.found >= 4, "{:?}", result.summary);
    for row in result.rows.iter().filter(|r| r.found) {
        assert!(row.flipped, "flips according to the ONNX model: {row:?}");
    }
    let wrong = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/onnx/skl-lr.onnx");
    match a.black_box(Some(&wrong)) {
        Ok(_) => panic!("a 5-input model does not fit Adult's 47 columns"),
        Err(err) => assert!(err.to_string().contains("[batch, 47]"), "{err}"),
    }
}

/// The distance to the nearest target-class row, checked against a scan of its own: every
/// training and test row, labelled by the model, against each counterfactual the harness kept.
#[test]
fn test_target_row_distance_matches_a_brute_force_scan() {
    let a = adult();
    let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(6, 2)).expect("labels");
    let factuals = bench.factuals().expect("labels");
    let mut rows = a.prepared.train.data.clone();
    rows.extend_from_slice(&a.prepared.test.data);
    let n_cols = a.prepared.encoding.n_cols();
    let labels = a.model().unwrap().classify(&rows);
    let mut checked = 0;
    for kind in [MethodKind::Cent, MethodKind::Gs, MethodKind::Random] {
        let result = bench.run(kind, &factuals).expect("runs");
        let mut distances = Vec::new();
        for row in result.rows.iter().filter(|r| r.found) {
            let x_new = row.counterfactual.as_ref().expect("a found row keeps its counterfactual");
            let brute = rows
                .chunks_exact(n_cols)
                .zip(&labels)
                .filter(|&(_, &label)| label == row.target_class)
                .map(|(r, _)| r.iter().zip(x_new).map(|(p, q)| f64::from(p - q).powi(2)).sum::<f64>().sqrt())
                .fold(f64::INFINITY, f64::min);
            let measured = row.measures.and_then(|m| m.target_row_distance).expect("Adult has rows of both classes");
            assert!((measured - brute).abs() < 1e-9, "{}: {measured} vs {brute}", kind.name());
            assert!(measured > 0.0, "{}: a synthetic point is no data row", kind.name());
            distances.push(measured);
            checked += 1;
        }
        distances.sort_by(f64::total_cmp);
        let median = match distances.len() {
            0 => 0.0,
            n if n % 2 == 1 => distances[n / 2],
            n => (distances[n / 2 - 1] + distances[n / 2]) / 2.0,
        };
        assert!((result.summary.target_row_distance_median - median).abs() < 1e-12, "{}", kind.name());
    }
    assert!(checked >= 12, "most factuals have a counterfactual: {checked}");
    // The nearest unlike neighbour is a training row of the target class: distance 0.
    let nun = bench.run(MethodKind::Nun, &factuals).expect("runs");
    assert!(nun.rows.iter().filter_map(|r| r.measures).all(|m| m.target_row_distance == Some(0.0)));
}

/// The plausibility sweep runs CEnt once per setting on the same factuals and reuses the
/// default run for the setting equal to the configured one.
#[test]
fn test_sweep_has_one_point_per_setting_and_reuses_the_default() {
    let a = adult();
    let mut config = Config::new(4, 5);
    config.sweep = vec![0.0, 0.52, 1.0];
    let mut bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, config).expect("labels");
    let factuals = bench.factuals().expect("labels");
    let cent = bench.run(MethodKind::Cent, &factuals).expect("runs").summary;
    let sweep = bench.sweep(&factuals, &cent).expect("runs");
    let settings: Vec<(f32, bool)> = sweep.iter().map(|p| (p.plausibility, p.default)).collect();
    // The configured setting is the explainer's default, 0.52.
    assert_eq!(settings, vec![(0.0, false), (0.52, true), (1.0, false)]);
    assert_eq!(sweep[1].summary, cent);
    for p in &sweep {
        assert_eq!((p.summary.method, p.summary.factuals), (MethodKind::Cent, 4));
    }
    let again = bench.run(MethodKind::Cent, &factuals).expect("runs").summary;
    assert_eq!((again.l0, again.ynn), (cent.l0, cent.ynn), "the sweep leaves the configured setting in place");
}

/// The data-support metrics on hand-made counterfactuals of one Adult row: a capital gain no
/// person has is an unseen value, a divorced husband breaks the marital-status × relationship ×
/// sex link, and a set-back that would break the link is not counted as redundant.
#[test]
fn test_unseen_values_and_link_violations_are_measured() {
    use cent_host::data::Value;
    use cent_host::support::Support;
    use cent_lab::metrics::{Judge, Reference, measure};
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let cols = schema.columns();
    let support = Support::new(enc, &a.prepared.train.data);
    let reference = Reference::new(a.model().unwrap(), a.prepared.train.data.clone(), cols).expect("labels");
    let judge = Judge {
        schema: &schema,
        query: &query,
        model: a.model().unwrap(),
        encoder: &a.vae.encoder,
        reference: &reference,
        support: &support,
    };
    let index = |name: &str| enc.feature_index(name).unwrap();
    // A divorced man outside any family.
    let row = (0..a.prepared.test.n_rows())
        .find(|&r| {
            let v = enc.decode(a.prepared.test.row(r)).unwrap();
            v[index("marital-status")]
                == Value::Category(enc.category_index(index("marital-status"), "Divorced").unwrap())
                && v[index("sex")] == Value::Category(enc.category_index(index("sex"), "Male").unwrap())
                && v[index("capital-gain")] == Value::Number(0.0)
        })
        .expect("a divorced man without capital gains");
    let x = a.prepared.test.row(row);
    let with = |changes: &[(&str, Value)]| {
        let mut v = enc.decode(x).unwrap();
        for (name, value) in changes {
            v[index(name)] = *value;
        }
        enc.encode_row(&v).unwrap()
    };
    let gain = schema.features()[index("capital-gain")];
    let seen = |raw: f32| {
        a.prepared.train.data.chunks_exact(cols).any(|r| (gain.decode(r[gain.col as usize]) - raw).abs() < 0.5)
    };
    let unseen_gain = (12_000..13_000).map(|g| g as f32).find(|&g| !seen(g)).expect("a gain no one has");
    let m = measure(&judge, x, &with(&[("capital-gain", Value::Number(f64::from(unseen_gain)))]), 1).unwrap();
    assert_eq!((m.unseen_values, m.observed_changes, m.link_violations), (1, 1, 0));
    let seen_gain = (0..100_000).map(|g| g as f32).find(|&g| g > 0.0 && seen(g)).unwrap();
    let m = measure(&judge, x, &with(&[("capital-gain", Value::Number(f64::from(seen_gain)))]), 1).unwrap();
    assert_eq!((m.unseen_values, m.observed_changes), (0, 1));
    let husband = Value::Category(enc.category_index(index("relationship"), "Husband").unwrap());
    let m = measure(&judge, x, &with(&[("relationship", husband)]), 1).unwrap();
    assert_eq!(m.link_violations, 1);
    // Married and a husband: an observed combination. Setting marital-status back alone would
    // make a divorced husband, which is not counted as a redundant change.
    let married = Value::Category(enc.category_index(index("marital-status"), "Married-civ-spouse").unwrap());
    let both = with(&[("relationship", husband), ("marital-status", married)]);
    let m = measure(&judge, x, &both, 1).unwrap();
    assert_eq!((m.link_violations, m.redundancy), (0, 0));
}

/// A setup without a built-in model (the caller brings its own black box) trains and caches
/// only the VAE; the built-in classifier is then asked for in vain, by name.
#[test]
fn test_setup_without_a_builtin_model_trains_only_the_vae() {
    use cent_host::artifacts::{ArtifactError, Setup, Source};
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/onnx");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-builtin");
    let _ = std::fs::remove_dir_all(&cache);
    let source = Source::Custom { csv: None, schema: fixtures.join("trees.toml") };
    let a = Setup { source, model: None, cache: cache.clone(), seed: 1 }.load().expect("trees data and VAE");
    assert!(a.builtin.is_none());
    let origins: Vec<_> = a.origins().map(|o| o.artifact.clone()).collect();
    assert_eq!(origins, ["VAE"]);
    let files: Vec<_> = std::fs::read_dir(cache.join("models")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, ["trees-vae-seed1.json"]);
    assert!(matches!(a.black_box(None), Err(ArtifactError::NoModel)));
    assert!(matches!(a.model(), Err(ArtifactError::NoModel)));
    let model = a.black_box(Some(&fixtures.join("skl-rf.onnx"))).expect("the forest fits its data");
    assert_eq!(model.classes(), 2);
    let params = cent_host::atlas::AtlasParams::default();
    let err = cent_host::export::export(&a, params, cent_host::export::Widths::I16).unwrap_err();
    assert!(err.to_string().contains("the setup named none"), "{err}");
}
