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

/// HELOC's special values (-7 "condition not met", -8 "no usable or valid trades") are declared
/// as codes wherever the training rows hold them, and none of them is a value an answer may move
/// a feature to.
#[test]
fn test_heloc_codes_are_declared_and_never_observed_values() {
    let Some(cache) = common::datasets::fetched("heloc") else { return };
    let p = prepare(load_builtin("heloc", &cache).unwrap(), TEST_FRACTION, 7).unwrap();
    let support = Support::new(&p.encoding, &p.train.data);
    let core = p.encoding.to_core_schema();
    let mut declared = 0;
    for (j, a) in p.encoding.attributes().iter().enumerate() {
        let f = &core.features()[j];
        let held: std::collections::BTreeSet<i64> =
            p.train.rows().map(|r| f.decode(r[f.col as usize]).round() as i64).filter(|v| *v < 0).collect();
        let codes: std::collections::BTreeSet<i64> = a.codes.iter().map(|c| c.0).collect();
        assert_eq!(held, codes, "{}: the negative values its rows hold are its codes", a.name);
        let observed = support.observed(j).expect("integer features have observed support");
        assert!(observed.iter().all(|&v| f.decode(v).round() >= 0.0), "{}: a code among observed values", a.name);
        declared += codes.len();
    }
    assert_eq!(declared, 11);
}

/// End to end on HELOC (its MLP and VAE, trained once into the cache): no answer moves a
/// feature to a code (a factual's own code may be left for a real value).
#[test]
fn test_heloc_answers_never_move_a_feature_to_a_code() {
    use cent_host::artifacts::{Setup, Source};
    use cent_host::blackbox::ModelKind;
    use cent_host::explain::{Config, Explainer};
    let Some(cache) = common::datasets::fetched("heloc") else { return };
    let setup =
        Setup { source: Source::Builtin("heloc".into()), model: Some(ModelKind::Mlp), cache, seed: common::SEED };
    let a = setup.load().expect("heloc artifacts load or train");
    let enc = &a.prepared.encoding;
    let core = enc.to_core_schema();
    let query = core.default_query();
    let explainer =
        Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default()).unwrap();
    // HELOC's codes are its only negative values.
    let code = |j: usize, v: f32| core.features()[j].decode(v).round() < 0.0;
    let (mut answers, mut left) = (0, 0);
    for row in 0..60 {
        let x = a.prepared.test.row(row);
        let Ok(e) = explainer.explain(x, &query, None) else { continue };
        for cf in &e.counterfactuals {
            answers += 1;
            for j in cent_nostd::counterfactual::changed_features(&core, x, &cf.encoded) {
                let c = core.features()[j].col as usize;
                let name = &enc.attributes()[j].name;
                assert!(!code(j, cf.encoded[c]), "row {row}: {name} moved to a code");
                if code(j, x[c]) {
                    // Left for a real value: the code stays a number as data, its meaning beside it.
                    let change = cf.changes.iter().find(|ch| &ch.feature == name).expect("a reported change");
                    assert!(change.before.parse::<i64>().is_ok_and(|v| v < 0), "{change:?}");
                    assert!(change.before_means.is_some() && change.after_means.is_none(), "{change:?}");
                    left += 1;
                }
            }
        }
    }
    assert!(answers >= 60, "only {answers} answers for 60 factuals");
    eprintln!("{answers} answers, {left} changes that leave a code");
}

/// `cent schema` on each fetched dataset's own file: what README says the draft makes of it.
fn drafted(name: &str, target: &str, favourable: &str) -> Option<cent_host::data::draft::Draft> {
    let cache = common::datasets::fetched(name)?;
    let schema = cent_host::data::builtin_schema(name).unwrap();
    let file = &schema.sources[0].file;
    let bytes = std::fs::read(cache.join(name).join(file)).unwrap();
    let options = cent_host::data::draft::DraftOptions::new(name, file, target, Some(favourable));
    Some(cent_host::data::draft::draft(&bytes, file, &options).unwrap_or_else(|e| panic!("{name}: {e}")))
}

#[test]
fn test_credit_drafts_its_indicator_groups_and_monthly_links() {
    use cent_host::data::LinkKind;
    let Some(d) = drafted("credit", "default-payment-next-month", "0") else { return };
    assert_eq!(d.schema.features.len(), 23);
    let groups: Vec<(&str, usize)> = d.one_hot.iter().map(|g| (g.name.as_str(), g.columns.len())).collect();
    assert_eq!(groups, [("EDUCATION", 7), ("MARRIAGE", 4)]);
    let months = ["PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6"];
    for pair in months.windows(2) {
        let linked = d
            .links
            .iter()
            .any(|l| l.kind == LinkKind::ObservedCombinations && l.features[0] == pair[0] && l.features[1] == pair[1]);
        assert!(linked, "{pair:?} not linked: {:#?}", d.links);
    }
    assert_eq!(d.report.kept, 30_000);
}

#[test]
fn test_heloc_drafts_its_rows_of_no_data_as_missing() {
    let Some(d) = drafted("heloc", "RiskPerformance", "Good") else { return };
    assert_eq!(d.placeholders, [("-9".to_string(), 588)]);
    // As the built-in schema: 598 rows with a -9 left out, 9,861 kept.
    assert_eq!((d.report.missing, d.report.kept), (598, 9_861));
    // Its -7 and -8, below every real value, are offered as codes to complete.
    let delinquency = d.toml.split("[[feature]]").find(|f| f.contains("name = \"MSinceMostRecentDelq\"")).unwrap();
    assert!(
        delinquency.contains("# codes = { \"-8\" = \"what -8 means\", \"-7\" = \"what -7 means\" }"),
        "{delinquency}"
    );
}

#[test]
fn test_compas_drafts_a_file_with_repeated_column_names() {
    let Some(d) = drafted("compas", "two_year_recid", "0") else { return };
    let repeated: Vec<&str> = d
        .columns
        .iter()
        .filter(|c| matches!(&c.role, cent_host::data::draft::Role::Dropped { reason } if reason.contains("again")))
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(repeated, ["decile_score", "priors_count"]);
    assert_eq!(d.report.kept, 6_907);
}
