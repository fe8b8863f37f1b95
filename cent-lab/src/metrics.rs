//! Quality metrics of one counterfactual `x'` of a factual `x` (design §5): sparsity and
//! distances, latent distance, redundancy, constraint violations on decoded values, validity and
//! yNN. Every function here measures; none searches.
//!
//! Units. `l0` counts *logical* features (a one-hot group is one feature). `l1`, `l2` (not
//! squared) and `linf` are taken over the **encoded** columns: continuous and integer features
//! min-max scaled to `[0, 1]`, binary features 0/1, and one-hot columns as they are, so switching
//! a category adds 2 to `l1`, `sqrt(2)` to `l2` and 1 to `linf`. The latent distance is the
//! Euclidean distance between the VAE means of `x` and `x'`.

use cent_host::blackbox::{BlackBox, ModelError};
use cent_host::data::Value;
use cent_host::layers::Mlp;
use cent_host::profile::{Query, Schema};
use cent_host::support::Support;
use cent_nostd::counterfactual;
use cent_nostd::schema::{self, Kind, Mutability};
use serde::Serialize;

/// Number of changed logical features (a one-hot group counts once).
pub fn l0(schema: &Schema, x: &[f32], x_new: &[f32]) -> usize {
    counterfactual::changed_features(schema, x, x_new).count()
}

/// Sum of absolute differences over encoded columns.
pub fn l1(x: &[f32], x_new: &[f32]) -> f64 {
    x.iter().zip(x_new).map(|(a, b)| f64::from((a - b).abs())).sum()
}

/// Euclidean distance over encoded columns (not squared).
pub fn l2(x: &[f32], x_new: &[f32]) -> f64 {
    squared(x, x_new).sqrt()
}

/// Largest absolute difference over encoded columns.
pub fn linf(x: &[f32], x_new: &[f32]) -> f64 {
    x.iter().zip(x_new).map(|(a, b)| f64::from((a - b).abs())).fold(0.0, f64::max)
}

/// Euclidean distance between the latent means `encoder(x)` and `encoder(x')`.
pub fn latent_distance(encoder: &Mlp, x: &[f32], x_new: &[f32]) -> f64 {
    l2(&encoder.forward(x), &encoder.forward(x_new))
}

fn squared(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(p, q)| f64::from(p - q) * f64::from(p - q)).sum()
}

/// The most probable class of each row (the lowest index on ties).
///
/// # Errors
/// [`ModelError`] when the model fails.
pub fn predicted(model: &dyn BlackBox, rows: &[f32]) -> Result<Vec<usize>, ModelError> {
    model.predict(rows)
}

/// True when the model assigns `x'` to `target`.
///
/// # Errors
/// [`ModelError`] when the model fails.
pub fn flipped(model: &dyn BlackBox, x_new: &[f32], target: usize) -> Result<bool, ModelError> {
    Ok(predicted(model, x_new)?.first() == Some(&target))
}

/// Redundancy: how many changed logical features can each, alone, be set back to `x`'s value
/// while the model still predicts `target` and the result breaks no schema link (a set-back that
/// pairs values no person has is no valid alternative). 0 means every change is needed.
///
/// All the one-feature reverts go to the model in one batch.
///
/// # Errors
/// [`ModelError`] when the model fails.
pub fn redundancy(
    schema: &Schema,
    model: &dyn BlackBox,
    support: &Support,
    x: &[f32],
    x_new: &[f32],
    target: usize,
) -> Result<usize, ModelError> {
    let mut batch = Vec::new();
    for j in counterfactual::changed_features(schema, x, x_new) {
        let f = &schema.features()[j];
        let start = batch.len();
        batch.extend_from_slice(x_new);
        batch[start..][f.columns()].copy_from_slice(&x[f.columns()]);
    }
    if batch.is_empty() {
        return Ok(0);
    }
    let cols = x.len().max(1);
    Ok(predicted(model, &batch)?
        .iter()
        .zip(batch.chunks_exact(cols))
        .filter(|&(&c, back)| c == target && support.broken(x, back) == 0)
        .count())
}

/// Constraint violations of `x'` relative to `x`, judged on decoded (raw) values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Violations {
    /// An immutable feature has another raw value.
    pub immutable: bool,
    /// A one-direction feature moved the wrong way (a number, a binary value, or the category
    /// of an ordered group), or a one-hot group made a transition the query forbids (both are
    /// "semi-immutable" constraints).
    pub semi_immutable: bool,
}

/// Checks `x'` against the query's immutability, direction and transition constraints on raw
/// values decoded from both vectors (integers rounded, binary at 0.5, a group's largest column).
/// An ordered group compares category indices; an unordered group under a direction (which it
/// cannot have) counts any move.
pub fn violations(schema: &Schema, query: &Query, x: &[f32], x_new: &[f32]) -> Violations {
    let mut out = Violations::default();
    for (j, f) in schema.features().iter().enumerate() {
        let (before, after) = (decode(schema, j, x), decode(schema, j, x_new));
        if before == after {
            continue;
        }
        match (query.mutability[j], before, after) {
            (Mutability::Immutable, _, _) => out.immutable = true,
            (Mutability::IncreaseOnly, Value::Number(a), Value::Number(b)) if b < a => out.semi_immutable = true,
            (Mutability::DecreaseOnly, Value::Number(a), Value::Number(b)) if b > a => out.semi_immutable = true,
            (Mutability::IncreaseOnly, Value::Category(a), Value::Category(b)) if f.kind == Kind::Binary && b < a => {
                out.semi_immutable = true;
            }
            (Mutability::DecreaseOnly, Value::Category(a), Value::Category(b)) if f.kind == Kind::Binary && b > a => {
                out.semi_immutable = true;
            }
            (m, Value::Category(from), Value::Category(to)) if f.kind == Kind::Categorical => {
                let reachable = u8::try_from(from).map_or(0, |from| schema::reachable(f, m, &query.transitions, from));
                if to >= 64 || reachable & (1 << to) == 0 {
                    out.semi_immutable = true;
                }
            }
            _ => {}
        }
    }
    out
}

/// Raw value of feature `j` of an encoded row, decoded like [`cent_host::data::Encoding::decode`].
fn decode(schema: &Schema, j: usize, x: &[f32]) -> Value {
    let Some(f) = schema.feature(j) else { return Value::Number(f64::NAN) };
    let cols = &x[f.columns()];
    match f.kind {
        Kind::Continuous => Value::Number(f64::from(f.decode(cols[0]))),
        Kind::Integer => Value::Number(f64::from(f.decode(cols[0])).round()),
        Kind::Binary => Value::Category(usize::from(cols[0] >= 0.5)),
        Kind::Categorical => {
            Value::Category(cols.iter().enumerate().fold(0, |best, (i, v)| if *v > cols[best] { i } else { best }))
        }
    }
}

/// The labelled reference set of yNN: dataset rows (encoded) and the model's labels for them.
#[derive(Debug, Clone)]
pub struct Reference {
    rows: Vec<f32>,
    labels: Vec<usize>,
    n_cols: usize,
}

impl Reference {
    /// Labels `rows` (row-major, `n_cols` wide) with `model`, once.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails.
    pub fn new(model: &dyn BlackBox, rows: Vec<f32>, n_cols: usize) -> Result<Self, ModelError> {
        let labels = model.predict(&rows)?;
        Ok(Reference { rows, labels, n_cols })
    }

    /// Number of reference rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The rows, row-major and encoded.
    pub fn rows(&self) -> &[f32] {
        &self.rows
    }

    /// The model's class of each row.
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// yNN: the share of the `k` reference rows nearest to `x'` (Euclidean, encoded columns;
    /// ties by row order) that the model assigns to `target`. 0 for an empty reference.
    pub fn ynn(&self, x_new: &[f32], target: usize, k: usize) -> f64 {
        self.neighbourhood(x_new, target, k).0
    }

    /// Euclidean distance (encoded columns) from `x'` to the nearest reference row the model
    /// assigns to `target`; `None` when no row has that class.
    pub fn target_row_distance(&self, x_new: &[f32], target: usize) -> Option<f64> {
        self.neighbourhood(x_new, target, 0).1
    }

    /// yNN and the nearest target-class row's distance from one pass over the rows.
    fn neighbourhood(&self, x_new: &[f32], target: usize, k: usize) -> (f64, Option<f64>) {
        let mut dist: Vec<(f64, usize)> =
            self.rows.chunks_exact(self.n_cols.max(1)).enumerate().map(|(i, r)| (squared(r, x_new), i)).collect();
        let nearest = dist.iter().filter(|(_, i)| self.labels[*i] == target).map(|(d, _)| *d).min_by(f64::total_cmp);
        let nearest = nearest.map(f64::sqrt);
        let k = k.min(dist.len());
        if k == 0 {
            return (0.0, nearest);
        }
        let by = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        if k < dist.len() {
            dist.select_nth_unstable_by(k - 1, by);
        }
        let hits = dist[..k].iter().filter(|(_, i)| self.labels[*i] == target).count();
        (hits as f64 / k as f64, nearest)
    }
}

/// The neighbours yNN looks at.
pub const YNN_K: usize = 5;

/// Every metric of one found counterfactual.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measures {
    /// The model assigns `x'` to the target class. Not serialized: the evaluation's rows carry
    /// it next to `found`.
    #[serde(skip_serializing)]
    pub flipped: bool,
    pub l0: usize,
    pub l1: f64,
    pub l2: f64,
    pub linf: f64,
    pub latent: f64,
    pub redundancy: usize,
    pub violations: Violations,
    /// The constraint re-check of the core (`cent_nostd::counterfactual::check`) passes.
    pub feasible: bool,
    pub ynn: f64,
    /// Euclidean distance (encoded columns) from `x'` to the nearest reference row the model
    /// assigns to the target class (how far the counterfactual lies from data of that class);
    /// `None` when no reference row has that class.
    pub target_row_distance: Option<f64>,
    /// The model's probability of the target class for `x'` (how far past the decision
    /// boundary the counterfactual lies).
    pub target_probability: f64,
    /// Changed numbers of features with observed support (`support = "observed"`) whose value
    /// no training row has, and how many such numbers changed.
    pub unseen_values: usize,
    pub observed_changes: usize,
    /// Schema links the move from `x` to `x'` breaks: a pair or combination of values no
    /// training row has (`Support::broken`).
    pub link_violations: usize,
}

/// What [`measure`] needs besides `x`, `x'` and the target.
#[derive(Clone, Copy)]
pub struct Judge<'a> {
    pub schema: &'a Schema,
    pub query: &'a Query,
    pub model: &'a dyn BlackBox,
    pub encoder: &'a Mlp,
    pub reference: &'a Reference,
    /// The training rows' values and combinations (observed support, links).
    pub support: &'a Support,
}

impl std::fmt::Debug for Judge<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge").field("reference", &self.reference.len()).finish()
    }
}

/// Measures `x'` against `x` for `target`.
///
/// # Errors
/// [`ModelError`] when the model fails.
pub fn measure(judge: &Judge<'_>, x: &[f32], x_new: &[f32], target: usize) -> Result<Measures, ModelError> {
    let (ynn, target_row_distance) = judge.reference.neighbourhood(x_new, target, YNN_K);
    let (unseen_values, observed_changes) = judge.support.unseen(x, x_new);
    Ok(Measures {
        flipped: flipped(judge.model, x_new, target)?,
        l0: l0(judge.schema, x, x_new),
        l1: l1(x, x_new),
        l2: l2(x, x_new),
        linf: linf(x, x_new),
        latent: latent_distance(judge.encoder, x, x_new),
        redundancy: redundancy(judge.schema, judge.model, judge.support, x, x_new, target)?,
        violations: violations(judge.schema, judge.query, x, x_new),
        feasible: counterfactual::check(judge.schema, judge.query, x, x_new).is_ok(),
        ynn,
        target_row_distance,
        target_probability: judge.model.probabilities(x_new)?.get(target).map_or(0.0, |&p| f64::from(p)),
        unseen_values,
        observed_changes,
        link_violations: judge.support.broken(x, x_new),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    // Columns: [0] income, [1] age (immutable), [2] degree (increase-only), [3..6] job {a, b, c}
    // with b -> a forbidden.
    use crate::baselines::tests::schema;
    use cent_host::layers::{Activation, Dense};

    const EPS: f64 = 1e-6;

    /// Class 1 iff income column + 0.5 * degree column > 0.6 (a linear softmax model).
    struct Threshold;

    impl BlackBox for Threshold {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            6
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
            Ok(rows
                .chunks_exact(6)
                .flat_map(|r| if r[0] + 0.5 * r[2] > 0.6 { [0.0, 1.0] } else { [1.0, 0.0] })
                .collect())
        }
    }

    const X: [f32; 6] = [0.2, 0.3, 0.4, 0.0, 1.0, 0.0];

    #[test]
    fn test_distances_count_groups_once_in_l0_but_per_column_elsewhere() {
        // income +0.3, job b -> c.
        let x_new = [0.5, 0.3, 0.4, 0.0, 0.0, 1.0];
        assert_eq!(l0(&schema(), &X, &x_new), 2);
        assert!((l1(&X, &x_new) - 2.3).abs() < EPS);
        assert!((l2(&X, &x_new) - (0.09f64 + 2.0).sqrt()).abs() < EPS);
        assert!((linf(&X, &x_new) - 1.0).abs() < EPS);
        assert_eq!(l0(&schema(), &X, &X), 0);
        assert!(l2(&X, &X).abs() < EPS);
    }

    #[test]
    fn test_latent_distance_uses_the_encoder_means() {
        // mu = (2 * col0, col2): moving income by 0.3 and degree by 0.4 gives (0.6, 0.4).
        let mut weights = vec![0.0; 12];
        weights[0] = 2.0;
        weights[6 + 2] = 1.0;
        let dense = Dense { inputs: 6, outputs: 2, weights, bias: vec![0.5, -1.0], activation: Activation::Identity };
        let encoder = Mlp { layers: vec![dense] };
        let x_new = [0.5, 0.3, 0.8, 0.0, 1.0, 0.0];
        assert!((latent_distance(&encoder, &X, &x_new) - (0.36f64 + 0.16).sqrt()).abs() < EPS);
    }

    #[test]
    fn test_redundancy_counts_changes_that_can_be_reverted_alone() {
        // x scores 0.2 + 0.2 = 0.4 (class 0). Income to 0.7 alone flips (0.9); degree to 0.6
        // adds 0.1 and the job switch nothing: reverting degree or job keeps the flip, reverting
        // income does not.
        let x_new = [0.7, 0.3, 0.6, 0.0, 0.0, 1.0];
        assert!(flipped(&Threshold, &x_new, 1).expect("runs"));
        assert_eq!(redundancy(&schema(), &Threshold, &Support::none(6), &X, &x_new, 1).expect("runs"), 2);
        // Only income changes: it cannot be reverted.
        let minimal = [0.7, 0.3, 0.4, 0.0, 1.0, 0.0];
        assert_eq!(redundancy(&schema(), &Threshold, &Support::none(6), &X, &minimal, 1).expect("runs"), 0);
    }

    #[test]
    fn test_violations_on_decoded_values() {
        let s = schema();
        let q = s.default_query();
        // Age 30 -> 31 (immutable), degree 4 -> 3 (increase-only).
        let bad = [0.2, 0.31, 0.3, 0.0, 1.0, 0.0];
        assert_eq!(violations(&s, &q, &X, &bad), Violations { immutable: true, semi_immutable: true });
        // Job b -> a is a forbidden transition: semi-immutable; b -> c is allowed.
        let to_a = [0.2, 0.3, 0.4, 1.0, 0.0, 0.0];
        assert_eq!(violations(&s, &q, &X, &to_a), Violations { immutable: false, semi_immutable: true });
        let to_c = [0.2, 0.3, 0.4, 0.0, 0.0, 1.0];
        assert_eq!(violations(&s, &q, &X, &to_c), Violations::default());
        // A float wobble of age that decodes to the same whole year is no violation.
        let wobble = [0.2, 0.3 + 1e-4, 0.4, 0.0, 1.0, 0.0];
        assert_eq!(violations(&s, &q, &X, &wobble), Violations::default());
    }

    #[test]
    fn test_wrong_way_category_of_an_ordered_group_is_semi_immutable() {
        use cent_nostd::schema::Feature;
        let mut s = Schema::new(2);
        s.push(Feature::ordinal(0, 3).with_mutability(Mutability::IncreaseOnly)).unwrap();
        let mut q = s.default_query();
        let x = [0.0, 1.0, 0.0];
        let (down, up) = ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
        let semi = Violations { immutable: false, semi_immutable: true };
        assert_eq!(violations(&s, &q, &x, &down), semi);
        assert_eq!(violations(&s, &q, &x, &up), Violations::default());
        q.mutability[0] = Mutability::DecreaseOnly;
        assert_eq!(violations(&s, &q, &x, &down), Violations::default());
        assert_eq!(violations(&s, &q, &x, &up), semi);
        // Judged on decoded values: the largest column is the category.
        assert_eq!(violations(&s, &q, &x, &[0.1, 0.2, 0.7]), semi);
    }

    #[test]
    fn test_ynn_uses_the_five_nearest_rows_labelled_by_the_model() {
        // Rows on the income axis 0.0, 0.1, ..., 0.9 (degree 0): class 1 from 0.7 up.
        let mut rows = Vec::new();
        for i in 0..10 {
            rows.extend([i as f32 / 10.0, 0.3, 0.0, 0.0, 1.0, 0.0]);
        }
        let reference = Reference::new(&Threshold, rows, 6).expect("runs");
        assert_eq!(reference.len(), 10);
        // Nearest five to income 0.71: 0.7, 0.8, 0.6, 0.9, 0.5 -> labels 1, 1, 0, 1, 0.
        let x_new = [0.71, 0.3, 0.0, 0.0, 1.0, 0.0];
        assert!((reference.ynn(&x_new, 1, YNN_K) - 0.6).abs() < EPS);
        assert!((reference.ynn(&x_new, 0, YNN_K) - 0.4).abs() < EPS);
    }

    #[test]
    fn test_target_row_distance_is_to_the_nearest_row_of_the_target_class() {
        // Rows on the income axis 0.0, 0.1, ..., 0.9: class 1 from 0.7 up.
        let mut rows = Vec::new();
        for i in 0..10 {
            rows.extend([i as f32 / 10.0, 0.3, 0.0, 0.0, 1.0, 0.0]);
        }
        let reference = Reference::new(&Threshold, rows, 6).expect("runs");
        // From income 0.5 with job c instead of b: class 1's nearest row is 0.7 (0.2 away on
        // income, sqrt(2) on the job columns); class 0's is 0.5 itself (the job only).
        let x_new = [0.5, 0.3, 0.0, 0.0, 0.0, 1.0];
        let to_one = reference.target_row_distance(&x_new, 1).expect("class 1 rows exist");
        assert!((to_one - (0.04f64 + 2.0).sqrt()).abs() < EPS, "{to_one}");
        let to_zero = reference.target_row_distance(&x_new, 0).expect("class 0 rows exist");
        assert!((to_zero - 2f64.sqrt()).abs() < EPS, "{to_zero}");
        assert_eq!(reference.target_row_distance(&x_new, 2), None, "no row of class 2");
    }

    #[test]
    fn test_measure_combines_every_metric() {
        let encoder = Mlp {
            layers: vec![Dense {
                inputs: 6,
                outputs: 1,
                weights: vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                bias: vec![0.0],
                activation: Activation::Identity,
            }],
        };
        let s = schema();
        let q = s.default_query();
        let reference = Reference::new(&Threshold, X.to_vec(), 6).expect("runs");
        let support = Support::none(6);
        let judge = Judge {
            schema: &s,
            query: &q,
            model: &Threshold,
            encoder: &encoder,
            reference: &reference,
            support: &support,
        };
        let x_new = [0.7, 0.3, 0.4, 0.0, 1.0, 0.0];
        let m = measure(&judge, &X, &x_new, 1).expect("runs");
        assert!(m.flipped && m.feasible);
        assert_eq!((m.l0, m.redundancy), (1, 0));
        assert!((m.target_probability - 1.0).abs() < EPS, "the threshold model gives class 1 probability 1");
        assert!((m.l1 - 0.5).abs() < EPS && (m.latent - 0.5).abs() < EPS && m.ynn.abs() < EPS);
        assert_eq!(m.target_row_distance, None, "the only reference row, x, is of class 0");
        let m0 = measure(&judge, &x_new, &X, 0).expect("runs");
        assert!(m0.target_row_distance.is_some_and(|d| d.abs() < EPS), "{m0:?}");
        let immutable_moved = [0.7, 0.5, 0.4, 0.0, 1.0, 0.0];
        assert!(!measure(&judge, &X, &immutable_moved, 1).expect("runs").feasible);
    }
}
