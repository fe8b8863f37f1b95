//! The fetched tabular datasets load with the documented row counts and fit the core's
//! capacities. Each is fetched into the shared cache when missing (`CENT_OFFLINE=1` skips).

mod common;

use cent_host::data::{TEST_FRACTION, Value, load_builtin, prepare};
use cent_host::support::Support;

/// (name, rows kept, filtered, missing, favourable rows, features, encoded columns), as in
/// `data/README.md`.
const WANT: [(&str, usize, usize, usize, usize, usize, usize); 3] = [
    ("compas", 6_172, 1_042, 0, 3_363, 8, 11),
    ("credit", 30_000, 0, 0, 23_364, 23, 28),
    ("heloc", 9_861, 0, 598, 4_733, 23, 23),
];

fn check(name: &str) {
    let Some(cache) = common::datasets::fetched(name) else { return };
    let (_, kept, filtered, missing, favourable, features, columns) =
        WANT.into_iter().find(|w| w.0 == name).expect("a dataset of the table");
    let t = load_builtin(name, &cache).unwrap_or_else(|e| panic!("{name}: {e}"));
    let r = t.report();
    assert_eq!((r.kept, r.filtered, r.missing), (kept, filtered, missing), "{name}");
    assert_eq!(t.labels().iter().filter(|&&l| l == t.favourable()).count(), favourable, "{name}");
    let p = prepare(t, TEST_FRACTION, 7).unwrap();
    let core = p.encoding.to_core_schema();
    assert_eq!((core.features().len(), core.columns()), (features, columns), "{name}");
}

#[test]
fn test_compas_loads_and_fits_the_core() {
    check("compas");
}

#[test]
fn test_credit_loads_and_fits_the_core() {
    check("credit");
}

#[test]
fn test_heloc_loads_and_fits_the_core() {
    check("heloc");
}

/// The links a built-in schema declares hold on every training row, and break on a row with a
/// combination the data never have: `(feature, raw value)` changes of the first training row.
fn check_links(name: &str, links: usize, breaking: &[(&str, Value)]) {
    let Some(cache) = common::datasets::fetched(name) else { return };
    let p = prepare(load_builtin(name, &cache).unwrap(), TEST_FRACTION, 7).unwrap();
    assert_eq!(p.encoding.links().len(), links, "{name}");
    let support = Support::new(&p.encoding, &p.train.data);
    for (i, row) in p.train.rows().enumerate() {
        assert_eq!(support.link_violations(row), 0, "{name}: training row {i}");
    }
    if breaking.is_empty() {
        return;
    }
    let mut raw = p.encoding.decode(p.train.row(0)).unwrap();
    for &(feature, value) in breaking {
        raw[p.encoding.feature_index(feature).unwrap()] = value;
    }
    let row = p.encoding.encode_row(&raw).unwrap();
    assert!(support.link_violations(&row) > 0, "{name}: {breaking:?}");
}

#[test]
fn test_compas_declares_no_link() {
    check_links("compas", 0, &[]);
}

#[test]
fn test_credit_links_hold_on_training_rows() {
    // Revolving credit this month right after two months of delay.
    check_links("credit", 5, &[("PAY_0", Value::Number(0.0)), ("PAY_2", Value::Number(2.0))]);
}

#[test]
fn test_heloc_links_hold_on_training_rows() {
    // Never delinquent (8), yet the last delinquency 12 months ago.
    check_links("heloc", 1, &[("MaxDelqEver", Value::Number(8.0)), ("MSinceMostRecentDelq", Value::Number(12.0))]);
}

/// Credit's amounts are whole dollars with observed support: a credit limit in an answer is
/// one the bank granted someone (the training rows hold a few dozen), not any number of the
/// range, and a value between two observed limits is not one.
#[test]
fn test_credit_amounts_keep_to_observed_values() {
    let Some(cache) = common::datasets::fetched("credit") else { return };
    let p = prepare(load_builtin("credit", &cache).unwrap(), TEST_FRACTION, 7).unwrap();
    let support = Support::new(&p.encoding, &p.train.data);
    let names = ["LIMIT_BAL", "BILL_AMT1", "BILL_AMT6", "PAY_AMT1", "PAY_AMT6"];
    for name in names {
        let j = p.encoding.feature_index(name).unwrap();
        assert!(support.observed(j).is_some(), "{name} has observed support");
    }
    let limit = p.encoding.feature_index("LIMIT_BAL").unwrap();
    assert!(support.observed(limit).unwrap().len() <= 81);
    // 10,000 → 15,000: no client in the data has a limit of 15,000.
    let x = p.train.row(0).to_vec();
    let mut raw = p.encoding.decode(&x).unwrap();
    raw[limit] = Value::Number(15_000.0);
    let cand = p.encoding.encode_row(&raw).unwrap();
    assert_eq!(support.unseen(&x, &cand), (1, 1));
    raw[limit] = Value::Number(20_000.0);
    let cand = p.encoding.encode_row(&raw).unwrap();
    assert_eq!(support.unseen(&x, &cand).0, 0);
}
