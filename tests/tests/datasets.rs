//! The fetched tabular datasets load with the documented row counts and fit the core's
//! capacities. Each is fetched into the shared cache when missing (`CENT_OFFLINE=1` skips).

mod common;

use cent_host::data::{TEST_FRACTION, load_builtin, prepare};

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
