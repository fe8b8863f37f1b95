//! The quality of CEnt's answers on the embedded Adult data: the confidence they are asked to
//! have, no change the model does not need, values a person in the data has, and "not found"
//! only when nothing in the data can be reached.

mod common;

use cent_host::blackbox::BlackBox;
use cent_host::explain::{Config, ExplainError, Explainer, Explanation, Realization, Reason};
use cent_host::support::Support;
use cent_nostd::counterfactual;
use cent_nostd::schema::{Kind, Mutability};
use common::adult;

/// Explains test rows `0..rows` with `config`, keeping the answers.
fn answers(config: Config, rows: usize) -> Vec<(usize, Explanation)> {
    let a = adult();
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let explainer =
        Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, config).expect("labels");
    (0..rows)
        .filter_map(|row| match explainer.explain(a.prepared.test.row(row), &query, None) {
            Ok(e) => Some((row, e)),
            Err(ExplainError::NotFound(_)) => None,
            Err(other) => panic!("row {row}: {other}"),
        })
        .collect()
}

/// The changes of `cf` each of which can be set back alone with the model's decision still
/// not `fact` and no link broken (none when fewer than two features changed).
fn needless_changes(
    a: &cent_host::artifacts::Artifacts,
    schema: &cent_host::profile::Schema,
    support: &Support,
    x: &[f32],
    cf: &[f32],
    fact: usize,
) -> usize {
    let changed: Vec<_> = schema.features().iter().filter(|f| x[f.columns()] != cf[f.columns()]).collect();
    if changed.len() < 2 {
        return 0;
    }
    changed
        .iter()
        .filter(|f| {
            let back = set_back(cf, x, f.columns());
            a.model().unwrap().classify(&back)[0] != fact && support.broken(x, &back) == 0
        })
        .count()
}

/// `cf` with the columns `cols` set back to `x`'s values.
fn set_back(cf: &[f32], x: &[f32], cols: std::ops::Range<usize>) -> Vec<f32> {
    let mut back = cf.to_vec();
    back[cols.clone()].copy_from_slice(&x[cols]);
    back
}

#[test]
fn test_every_counterfactual_has_the_minimum_probability_the_model_confirms() {
    let a = adult();
    for min in [0.6, 0.8] {
        let found = answers(Config { min_probability: min, ..Config::default() }, 30);
        assert!(found.len() >= 20, "min {min}: only {} of 30 rows answered", found.len());
        for (row, e) in &found {
            for cf in &e.counterfactuals {
                let p = a.model().unwrap().probabilities(&cf.encoded).unwrap();
                assert_ne!(cf.class.index, e.fact.index, "row {row}");
                assert_eq!(p[cf.class.index], cf.class.probability, "row {row}: reported probability");
                assert!(p[cf.class.index] >= min, "row {row}: p = {} < {min}", p[cf.class.index]);
            }
        }
    }
}

/// Brute force over the training rows: every changed whole-number feature (observed support by
/// default) takes a value some row has, and marital-status × relationship × sex (linked in the
/// schema) a combination some row has.
#[test]
fn test_counterfactual_values_and_combinations_occur_in_the_training_rows() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let train = &a.prepared.train.data;
    let cols = schema.columns();
    let linked: Vec<_> = ["marital-status", "relationship", "sex"]
        .iter()
        .map(|name| schema.features()[enc.feature_index(name).unwrap()].columns())
        .collect();
    let combination = |row: &[f32]| linked.iter().map(|c| row[c.clone()].to_vec()).collect::<Vec<_>>();
    let seen: std::collections::HashSet<Vec<Vec<u32>>> = train
        .chunks_exact(cols)
        .map(|r| combination(r).into_iter().map(|v| v.iter().map(|f| f.to_bits()).collect()).collect())
        .collect();
    let (mut numbers, mut combos) = (0, 0);
    for (row, e) in answers(Config::default(), 40) {
        let x = a.prepared.test.row(row);
        for cf in &e.counterfactuals {
            for f in schema.features().iter().filter(|f| f.kind == Kind::Integer) {
                let c = f.col as usize;
                if cf.encoded[c] != x[c] {
                    let raw = f.decode(cf.encoded[c]);
                    let found = train.chunks_exact(cols).any(|r| (f.decode(r[c]) - raw).abs() < 1e-3);
                    assert!(found, "row {row}: value {raw} of column {c} occurs in no training row");
                    numbers += 1;
                }
            }
            if combination(&cf.encoded) != combination(x) {
                let bits: Vec<Vec<u32>> =
                    combination(&cf.encoded).into_iter().map(|v| v.iter().map(|f| f.to_bits()).collect()).collect();
                assert!(seen.contains(&bits), "row {row}: a marital-status/relationship/sex no person has");
                combos += 1;
            }
        }
    }
    assert!(numbers > 0, "no counterfactual changed a whole number");
    eprintln!("{numbers} changed numbers, {combos} changed combinations checked");
}

/// Brute force: setting any one changed feature back to the query's value loses the target
/// class, the required probability or the constraints.
#[test]
fn test_no_reported_change_can_be_set_back() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let config = Config::default();
    let support = Support::new(enc, &a.prepared.train.data);
    for (row, e) in answers(config, 30) {
        let x = a.prepared.test.row(row);
        for cf in &e.counterfactuals {
            for f in schema.features() {
                let cols = f.columns();
                if x[cols.clone()] == cf.encoded[cols.clone()] {
                    continue;
                }
                let back = set_back(&cf.encoded, x, cols);
                if back == x {
                    continue;
                }
                let p = a.model().unwrap().probabilities(&back).unwrap();
                let class = (0..p.len()).max_by(|&i, &j| p[i].total_cmp(&p[j])).unwrap();
                let still = class != e.fact.index
                    && p[class] >= config.min_probability
                    && counterfactual::check(&schema, &query, x, &back).is_ok()
                    && support.broken(x, &back) == 0;
                assert!(!still, "row {row}: the change of column {} is not needed", f.col);
            }
        }
    }
}

#[test]
fn test_plausibility_zero_keeps_boundary_points_and_above_zero_draws_on_exemplars() {
    let plain = answers(Config { plausibility: 0.0, ..Config::default() }, 30);
    for (row, e) in &plain {
        for cf in &e.counterfactuals {
            assert!(matches!(cf.realization, Realization::Boundary | Realization::Nearest), "row {row}");
            assert_eq!(cf.agreement, None, "row {row}");
        }
    }
    let plausible = answers(Config { plausibility: 0.5, ..Config::default() }, 30);
    let drawn = plausible
        .iter()
        .flat_map(|(_, e)| &e.counterfactuals)
        .filter(|cf| matches!(cf.realization, Realization::Between | Realization::Exemplar))
        .count();
    assert!(drawn > 0, "no counterfactual drew on a target-class neighbour");
    let ranked = plausible.iter().flat_map(|(_, e)| &e.counterfactuals).filter(|cf| cf.agreement.is_some()).count();
    assert!(ranked > 0, "no counterfactual was ranked by agreement");
}

/// An exemplar counterfactual moves each feature to a value some training row has.
#[test]
fn test_exemplar_values_occur_in_the_training_rows() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let train = &a.prepared.train;
    let cols = schema.columns();
    let mut checked = 0;
    for (row, e) in answers(Config { plausibility: 1.0, ..Config::default() }, 40) {
        let x = a.prepared.test.row(row);
        for cf in e.counterfactuals.iter().filter(|cf| cf.realization == Realization::Exemplar) {
            for f in schema.features().iter().filter(|f| matches!(f.kind, Kind::Integer | Kind::Continuous)) {
                let c = f.col as usize;
                if cf.encoded[c] == x[c] {
                    continue;
                }
                let raw = f.decode(cf.encoded[c]);
                let seen = train.data.chunks_exact(cols).any(|r| (f.decode(r[c]) - raw).abs() < 1e-3);
                assert!(seen, "row {row}: value {raw} of column {c} occurs in no training row");
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no exemplar counterfactual changed a number");
}

#[test]
fn test_nothing_mutable_means_no_feasible_target_point() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let mut query = enc.to_core_schema().default_query();
    for m in query.mutability.iter_mut() {
        *m = Mutability::Immutable;
    }
    let explainer = Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default())
        .expect("labels");
    match explainer.explain(a.prepared.test.row(0), &query, None) {
        Err(ExplainError::NotFound(Reason::NoFeasibleTargetPoint)) => {}
        other => panic!("expected no feasible target point, got {other:?}"),
    }
}

/// With a neighbourhood too small to confirm a leaf, the last resort answers: a reachable
/// target-class point, pared down, that flips the model with the required probability, judged
/// among people by the plausibility ranking.
#[test]
fn test_the_last_resort_answers_flip_and_keep_the_constraints() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let config = Config { k: 4, widen: 0, max_search: 1, ..Config::default() };
    let mut last_resort = 0;
    for (row, e) in answers(config, 30) {
        let x = a.prepared.test.row(row);
        for cf in e.counterfactuals.iter().filter(|cf| cf.realization == Realization::Nearest) {
            last_resort += 1;
            assert!(cf.rules.is_empty(), "row {row}: the last resort has no region");
            // Ranked as a contrast leaf's answers are: judged among the people near it.
            assert!(cf.agreement.is_some_and(|g| (0.0..=1.0).contains(&g)), "row {row}: {:?}", cf.agreement);
            let p = a.model().unwrap().probabilities(&cf.encoded).unwrap();
            assert_ne!(cf.class.index, e.fact.index);
            assert!(p[cf.class.index] >= config.min_probability, "row {row}");
            assert!(counterfactual::check(&schema, &query, x, &cf.encoded).is_ok(), "row {row}");
        }
    }
    assert!(last_resort > 0, "no query needed the last resort");
}

/// The ranking's objective as the explainer defines it (`(1 − w) · move cost + w ·
/// PLAUSIBILITY_WEIGHT · (1 − agreement)`), recomputed here from the query's costs.
fn objective(
    schema: &cent_host::profile::Schema,
    query: &cent_host::profile::Query,
    x: &[f32],
    cf: &[f32],
    w: f32,
    agreement: f32,
) -> f32 {
    let mut cost = 0.0;
    for (j, f) in schema.features().iter().enumerate() {
        let cols = f.columns();
        if x[cols.clone()] == cf[cols.clone()] {
            continue;
        }
        let distance = if f.kind == Kind::Categorical { 1.0 } else { (cf[cols.start] - x[cols.start]).abs() };
        cost += query.cost[j] * distance + query.l0;
    }
    (1.0 - w) * cost + w * cent_host::explain::PLAUSIBILITY_WEIGHT * (1.0 - agreement)
}

/// `first` took first place from `second` by the rule people and single moves share: the
/// nearest people of `second` did not all agree with it, and `first` scores better by the
/// ranking's objective (`objective(point, agreement)`) with no more needless changes.
fn assert_took_first_place(
    row: usize,
    first: &cent_host::explain::Counterfactual,
    second: &cent_host::explain::Counterfactual,
    objective: impl Fn(&[f32], f32) -> f32,
    needless: impl Fn(&[f32]) -> usize,
) {
    let (g1, g2) = (first.agreement.unwrap(), second.agreement.unwrap());
    assert!(g2 < 1.0, "row {row}: the nearest people of the answer it replaced all agreed");
    assert!(objective(&first.encoded, g1) < objective(&second.encoded, g2), "row {row}: it does not score better");
    assert!(needless(&first.encoded) <= needless(&second.encoded), "row {row}: it keeps more needless changes");
}

/// A person of the target class takes first place from a region's answer (whose nearest people
/// did not all agree) only when it scores better by the ranking's objective and keeps no more
/// changes the decision does not need; it flips with the required probability and keeps the
/// constraints. With plausibility 0 no person competes.
#[test]
fn test_people_take_first_place_only_when_they_score_better_with_no_more_needless_changes() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let config = Config::default();
    let support = Support::new(enc, &a.prepared.train.data);
    let needless = |x: &[f32], cf: &[f32], fact: usize| needless_changes(a, &schema, &support, x, cf, fact);
    let mut won = 0;
    for (row, e) in answers(config, 60) {
        let [first, second, ..] = &e.counterfactuals[..] else { continue };
        if e.tree_nodes == 0 || first.realization != Realization::Nearest {
            continue;
        }
        won += 1;
        let x = a.prepared.test.row(row);
        let p = a.model().unwrap().probabilities(&first.encoded).unwrap();
        assert_ne!(first.class.index, e.fact.index, "row {row}");
        assert!(p[first.class.index] >= config.min_probability, "row {row}");
        assert!(counterfactual::check(&schema, &query, x, &first.encoded).is_ok(), "row {row}");
        assert!(first.rules.is_empty(), "row {row}: a person has no region");
        assert_ne!(second.realization, Realization::Nearest, "row {row}: the region's answer follows");
        let scores_better = |cf: &[f32], g: f32| objective(&schema, &query, x, cf, config.plausibility, g);
        assert_took_first_place(row, first, second, scores_better, |cf| needless(x, cf, e.fact.index));
    }
    assert!(won > 0, "no person took first place in 60 rows");
    for (row, e) in answers(Config { plausibility: 0.0, ..config }, 30) {
        let from_people = e.tree_nodes > 0 && e.counterfactuals.iter().any(|cf| cf.realization == Realization::Nearest);
        assert!(!from_people, "row {row}: a person competed at plausibility 0");
    }
}

/// A single move takes first place from the answer before it (whose nearest people did not all
/// agree) only when it scores better by the ranking's objective and keeps no more changes the
/// decision does not need; it changes one feature, or features one link ties together, flips
/// with the required probability and keeps the constraints. Without single moves, or at
/// plausibility 0, there are none.
#[test]
fn test_single_moves_take_first_place_only_when_they_score_better_with_no_more_needless_changes() {
    let a = adult();
    let enc = &a.prepared.encoding;
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let config = Config::default();
    let support = Support::new(enc, &a.prepared.train.data);
    let linked: Vec<usize> =
        ["marital-status", "relationship", "sex"].iter().map(|name| enc.feature_index(name).unwrap()).collect();
    let needless = |x: &[f32], cf: &[f32], fact: usize| needless_changes(a, &schema, &support, x, cf, fact);
    let mut won = 0;
    for (row, e) in answers(config, 60) {
        let [first, second, ..] = &e.counterfactuals[..] else { continue };
        if first.realization != Realization::SingleMove {
            continue;
        }
        won += 1;
        let x = a.prepared.test.row(row);
        let changed: Vec<usize> = counterfactual::changed_features(&schema, x, &first.encoded).collect();
        assert!(
            changed.len() == 1 || changed.iter().all(|j| linked.contains(j)),
            "row {row}: a single move changed {changed:?}"
        );
        assert_eq!(first.l0, changed.len(), "row {row}");
        let p = a.model().unwrap().probabilities(&first.encoded).unwrap();
        assert_ne!(first.class.index, e.fact.index, "row {row}");
        assert_eq!(p[first.class.index], first.class.probability, "row {row}: reported probability");
        assert!(p[first.class.index] >= config.min_probability, "row {row}");
        assert!(counterfactual::check(&schema, &query, x, &first.encoded).is_ok(), "row {row}");
        assert!(first.rules.is_empty(), "row {row}: a single move has no region");
        assert_eq!(support.broken(x, &first.encoded), 0, "row {row}: a broken link");
        assert_eq!(support.unseen(x, &first.encoded).0, 0, "row {row}: a value no person has");
        let scores_better = |cf: &[f32], g: f32| objective(&schema, &query, x, cf, config.plausibility, g);
        assert_took_first_place(row, first, second, scores_better, |cf| needless(x, cf, e.fact.index));
    }
    assert!(won > 0, "no single move took first place in 60 rows");
    eprintln!("{won} of 60 rows: a single move first");
    for config in [Config { single_moves: false, ..config }, Config { plausibility: 0.0, ..config }] {
        for (row, e) in answers(config, 30) {
            let single = e.counterfactuals.iter().any(|cf| cf.realization == Realization::SingleMove);
            assert!(!single, "row {row}: a single move with {config:?}");
        }
    }
}
