//! The evaluation harness on the embedded Adult data: every method's counterfactuals flip the
//! model and break no constraint, failures are counted as such, and an ONNX black box drives
//! the same harness.

mod common;

use cent_host::evaluate::{Bench, Config, MethodKind};
use common::adult;
use std::path::Path;

#[test]
fn test_every_method_reports_only_flipped_feasible_counterfactuals() {
    let a = adult();
    let bench = Bench::new(&a.prepared, &a.model, &a.vae, Config::new(10, 3)).expect("labels");
    let factuals = bench.factuals().expect("labels");
    assert_eq!(factuals.len(), 10);
    let classes: Vec<usize> = factuals.iter().map(|&r| a.model.classify(a.prepared.test.row(r))[0]).collect();
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

#[test]
fn test_runs_are_deterministic_for_a_seed() {
    let a = adult();
    let bench = Bench::new(&a.prepared, &a.model, &a.vae, Config::new(4, 9)).expect("labels");
    let factuals = bench.factuals().expect("labels");
    for kind in [MethodKind::Gs, MethodKind::Random, MethodKind::Face] {
        let (one, two) = (bench.run(kind, &factuals).expect("runs"), bench.run(kind, &factuals).expect("runs"));
        let strip = |r: &cent_host::evaluate::MethodResult| {
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
