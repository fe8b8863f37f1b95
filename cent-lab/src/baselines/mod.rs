//! Baseline counterfactual methods, for comparison with CEnt (design §5): Growing Spheres,
//! FACE, the nearest unlike neighbour and a DiCE-style random search.
//!
//! Each is our own implementation of the published method, adapted to the same setting as CEnt:
//! the model is only queried through [`BlackBox`], and every result honours the query's
//! constraints (immutables never change, one-direction features move one way, values stay in
//! range, discrete values are whole, one-hot groups hold one allowed category). Whatever a
//! method builds goes through [`Problem::verify`] before it is returned: the model must assign
//! it to the target class and `cent_nostd::counterfactual::check` must pass, or the method
//! reports [`NotFound`] — never an unflipped or violating counterfactual.

pub mod face;
pub mod growing_spheres;
pub mod nun;
pub mod random;

pub use face::Face;
pub use growing_spheres::GrowingSpheres;
pub use nun::NearestUnlike;
pub use random::RandomSearch;

use cent_host::blackbox::BlackBox;
use cent_host::profile::{Query, Schema};
use cent_nostd::counterfactual;
use cent_nostd::schema::{self, Feature, Kind, Mutability};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One counterfactual problem setting: schema, constraints, the model and the training pool.
#[derive(Clone, Copy)]
pub struct Problem<'a> {
    pub schema: &'a Schema,
    pub query: &'a Query,
    pub model: &'a dyn BlackBox,
    /// Encoded training rows, row-major.
    pub pool: &'a [f32],
    /// The model's class of every pool row.
    pub pool_labels: &'a [usize],
}

impl std::fmt::Debug for Problem<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Problem").field("pool", &self.pool_labels.len()).finish()
    }
}

/// Why a method returns no counterfactual.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotFound {
    #[error("no training point of the target class respects the constraints")]
    NoFeasibleTarget,
    #[error("the search budget ran out before the model's decision flipped")]
    Budget,
    #[error("the result failed the final check: {0}")]
    Rejected(String),
    #[error("{0}")]
    Other(String),
    /// The model failed at run time (the text names the model and the batch).
    #[error("{0}")]
    Model(String),
}

impl From<cent_host::blackbox::ModelError> for NotFound {
    fn from(e: cent_host::blackbox::ModelError) -> Self {
        NotFound::Model(e.to_string())
    }
}

/// A counterfactual method under evaluation.
pub trait Method {
    /// Short name used in reports (`cent`, `gs`, `face`, `nun`, `random`).
    fn name(&self) -> &'static str;

    /// A verified counterfactual of the encoded `x` towards class `target`.
    ///
    /// # Errors
    /// [`NotFound`] when the method finds nothing that flips the model within the constraints.
    fn counterfactual(&self, problem: &Problem<'_>, x: &[f32], target: usize) -> Result<Found, NotFound>;
}

/// A method's verified output.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub x: Vec<f32>,
    /// CEnt's surrogate fidelity (other methods have none).
    pub fidelity: Option<f64>,
}

impl Problem<'_> {
    /// Number of encoded columns.
    pub fn columns(&self) -> usize {
        self.schema.columns()
    }

    /// Pool row `i`.
    fn pool_row(&self, i: usize) -> &[f32] {
        let n = self.columns();
        &self.pool[i * n..(i + 1) * n]
    }

    /// Accepts `x_new` only if it differs from `x`, the model assigns it to `target` and the
    /// core's constraint check passes.
    ///
    /// # Errors
    /// [`NotFound::Rejected`] naming the failed condition.
    pub fn verify(&self, x: &[f32], x_new: Vec<f32>, target: usize) -> Result<Found, NotFound> {
        if x_new == x {
            return Err(NotFound::Rejected("no feature changed".into()));
        }
        if let Err(v) = counterfactual::check(self.schema, self.query, x, &x_new) {
            return Err(NotFound::Rejected(v.to_string()));
        }
        if self.model.predict(&x_new)?.first() != Some(&target) {
            return Err(NotFound::Rejected("the model does not assign it to the target class".into()));
        }
        Ok(Found { x: x_new, fidelity: None })
    }

    /// Indices of `rows` (row-major candidates) that the model assigns to `target` and that
    /// pass the constraint check, in one batched call of the model.
    ///
    /// # Errors
    /// [`NotFound::Model`] when the model fails.
    fn valid_among(&self, x: &[f32], rows: &[f32], target: usize) -> Result<Vec<usize>, NotFound> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let n = self.columns();
        let classes = self.model.predict(rows)?;
        Ok(rows
            .chunks_exact(n)
            .zip(classes)
            .enumerate()
            .filter(|(_, (r, c))| {
                *c == target && *r != x && counterfactual::check(self.schema, self.query, x, r).is_ok()
            })
            .map(|(i, _)| i)
            .collect())
    }

    /// Logical features the query lets change.
    fn mutable_features(&self) -> Vec<usize> {
        (0..self.schema.features().len()).filter(|&j| self.query.mutability[j] != Mutability::Immutable).collect()
    }

    /// Puts feature `j` of `cand` back on the feasible set relative to `x`: immutables copied,
    /// directions and ranges clamped, discrete values rounded to whole raw values, and a one-hot
    /// group set to its largest column among the categories `x` may move to (allowed
    /// transitions, and on an ordered group the permitted direction).
    fn project_feature(&self, j: usize, x: &[f32], cand: &mut [f32]) {
        let Some(f) = self.schema.feature(j) else { return };
        let m = self.query.mutability[j];
        let cols = f.columns();
        if m == Mutability::Immutable {
            cand[cols.clone()].copy_from_slice(&x[cols]);
            return;
        }
        match f.kind {
            Kind::Categorical => self.project_group(f, m, x, cand),
            _ => cand[f.col as usize] = project_scalar(f, m, x[f.col as usize], cand[f.col as usize]),
        }
    }

    fn project_group(&self, f: &Feature, m: Mutability, x: &[f32], cand: &mut [f32]) {
        let cols = f.columns();
        let Some(from) = schema::category(f, x) else {
            cand[cols.clone()].copy_from_slice(&x[cols]);
            return;
        };
        let mask = schema::reachable(f, m, &self.query.transitions, from);
        let allowed = |k: usize| k == from as usize || (k < 64 && mask & (1 << k) != 0);
        let values = &cand[cols.clone()];
        let best = (0..values.len())
            .filter(|&k| allowed(k))
            .fold(from as usize, |best, k| if values[k] > values[best] { k } else { best });
        let group = &mut cand[cols];
        group.fill(0.0);
        group[best] = 1.0;
    }

    /// [`Problem::project_feature`] for every feature.
    fn project(&self, x: &[f32], cand: &mut [f32]) {
        for j in 0..self.schema.features().len() {
            self.project_feature(j, x, cand);
        }
    }

    /// Feature selection of Growing Spheres, used by the sampling methods: changed features are
    /// set back to `x`'s value one at a time, smallest change first, as long as the result stays
    /// valid.
    fn sparsify(&self, x: &[f32], mut x_new: Vec<f32>, target: usize) -> Result<Vec<f32>, NotFound> {
        let mut order: Vec<(f32, usize)> = counterfactual::changed_features(self.schema, x, &x_new)
            .filter_map(|j| self.schema.feature(j).map(|f| (change_size(f, x, &x_new), j)))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, j) in order {
            let Some(f) = self.schema.feature(j) else { continue };
            let mut trial = x_new.clone();
            trial[f.columns()].copy_from_slice(&x[f.columns()]);
            if !self.valid_among(x, &trial, target)?.is_empty() {
                x_new = trial;
            }
        }
        Ok(x_new)
    }
}

/// Largest absolute change of a feature's columns.
fn change_size(f: &Feature, x: &[f32], x_new: &[f32]) -> f32 {
    f.columns().map(|c| (x[c] - x_new[c]).abs()).fold(0.0, f32::max)
}

/// A scalar feature's value clamped to `[0, 1]` and its allowed direction from `from`, with
/// discrete raw values rounded to whole numbers (binary to 0/1).
fn project_scalar(f: &Feature, m: Mutability, from: f32, v: f32) -> f32 {
    let v = if v.is_finite() { v.clamp(0.0, 1.0) } else { from };
    let v = match m {
        Mutability::IncreaseOnly => v.max(from),
        Mutability::DecreaseOnly => v.min(from),
        _ => v,
    };
    if !f.is_discrete() {
        return v;
    }
    let whole = f.decode(v).round();
    // Rounding may step outside the observed range; the nearest whole value inside it instead.
    let whole = whole.clamp(f.min.ceil(), f.max.floor());
    let encoded = f.encode(whole).clamp(0.0, 1.0);
    if m.allows(from, encoded) { encoded } else { from }
}

/// Seeded random numbers for the sampling methods.
#[derive(Debug, Clone)]
struct Sampler(Xoshiro256PlusPlus);

impl Sampler {
    fn new(seed: u64) -> Self {
        Sampler(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// Uniform in `[0, 1)` (24 random bits).
    fn uniform(&mut self) -> f32 {
        (self.0.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// Uniform in `0..n` (`n > 0`), by rejection of the biased tail.
    fn below(&mut self, n: usize) -> usize {
        let n = n.max(1) as u64;
        let zone = u64::MAX - (u64::MAX - n + 1) % n;
        loop {
            let v = self.0.next_u64();
            if v <= zone {
                return (v % n) as usize;
            }
        }
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f32 {
        let u1 = self.uniform().max(f32::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
    }
}

/// Squared Euclidean distance.
fn squared(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use cent_nostd::schema::Feature;

    /// Columns: [0] income (continuous), [1] age (integer 0..100, immutable), [2] degree
    /// (integer 0..10, increase-only), [3..6] job one-hot {a, b, c}, b -> a forbidden.
    pub(crate) fn schema() -> Schema {
        let mut s = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 100.0)).unwrap();
        s.push(Feature::integer(1, 0.0, 100.0).with_mutability(Mutability::Immutable)).unwrap();
        s.push(Feature::integer(2, 0.0, 10.0).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.push(Feature::categorical(3, 3)).unwrap();
        s.set_transition(3, 1, 0, false).unwrap();
        s
    }

    /// Class 1 iff income + 0.5 * degree > 0.6, or the job is `a`.
    pub(crate) struct Toy;

    impl BlackBox for Toy {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            6
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
            Ok(rows
                .chunks_exact(6)
                .flat_map(|r| if r[0] + 0.5 * r[2] > 0.6 || r[3] > 0.5 { [0.1, 0.9] } else { [0.9, 0.1] })
                .collect())
        }
    }

    /// A factual of class 0: income 20, age 30, degree 4, job b.
    pub(crate) const X: [f32; 6] = [0.2, 0.3, 0.4, 0.0, 1.0, 0.0];

    /// A grid pool: income 0..1 by 0.1, ages 30 and 40, degrees 2 and 6, jobs b and c.
    pub(crate) fn pool() -> (Vec<f32>, Vec<usize>) {
        let mut rows = Vec::new();
        for i in 0..=10 {
            for age in [0.3, 0.4] {
                for degree in [0.2, 0.6] {
                    for job in [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] {
                        rows.extend([i as f32 / 10.0, age, degree]);
                        rows.extend(job);
                    }
                }
            }
        }
        let labels = Toy.predict(&rows).expect("the toy model cannot fail");
        (rows, labels)
    }

    pub(crate) fn with_problem<T>(run: impl FnOnce(&Problem<'_>) -> T) -> T {
        let s = schema();
        let q = s.default_query();
        let (rows, labels) = pool();
        let p = Problem { schema: &s, query: &q, model: &Toy, pool: &rows, pool_labels: &labels };
        run(&p)
    }

    /// Every method's output is valid and changes no immutable.
    pub(crate) fn assert_valid(p: &Problem<'_>, found: &Found) {
        assert!(counterfactual::check(p.schema, p.query, &X, &found.x).is_ok(), "{:?}", found.x);
        assert_eq!(Toy.predict(&found.x).ok(), Some(vec![1]), "{:?}", found.x);
        assert!((found.x[1] - X[1]).abs() < 1e-9, "age changed: {:?}", found.x);
        assert!(found.x[2] >= X[2], "degree decreased: {:?}", found.x);
    }

    #[test]
    fn test_verify_rejects_unflipped_violating_and_unchanged() {
        with_problem(|p| {
            assert!(matches!(p.verify(&X, X.to_vec(), 1), Err(NotFound::Rejected(_))));
            let unflipped = vec![0.3, 0.3, 0.4, 0.0, 1.0, 0.0];
            assert!(matches!(p.verify(&X, unflipped, 1), Err(NotFound::Rejected(_))));
            let older = vec![0.9, 0.4, 0.4, 0.0, 1.0, 0.0];
            assert!(matches!(p.verify(&X, older, 1), Err(NotFound::Rejected(_))));
            let good = vec![0.9, 0.3, 0.4, 0.0, 1.0, 0.0];
            assert_eq!(p.verify(&X, good.clone(), 1), Ok(Found { x: good, fidelity: None }));
        });
    }

    #[test]
    fn test_project_respects_every_constraint() {
        with_problem(|p| {
            // Age moved, degree lowered and fractional, job pushed to the forbidden `a`.
            let mut cand = vec![1.7, 0.9, 0.13, 0.9, 0.2, 0.4];
            p.project(&X, &mut cand);
            assert_eq!(cand, vec![1.0, 0.3, 0.4, 0.0, 0.0, 1.0]);
            let mut up = vec![0.2, 0.3, 0.66, 0.0, 1.0, 0.0];
            p.project(&X, &mut up);
            assert!((up[2] - 0.7).abs() < 1e-6, "degree 6.6 rounds to 7: {up:?}");
        });
    }

    #[test]
    fn test_project_keeps_an_ordered_group_on_its_direction() {
        let mut s = Schema::new(2);
        s.push(Feature::ordinal(0, 4).with_mutability(Mutability::IncreaseOnly)).unwrap();
        let mut q = s.default_query();
        let (rows, labels) = (Vec::new(), Vec::new());
        let x = [0.0, 0.0, 1.0, 0.0];
        for (m, cand, want) in [
            (Mutability::IncreaseOnly, [0.9, 0.1, 0.0, 0.3], [0.0, 0.0, 0.0, 1.0]),
            (Mutability::IncreaseOnly, [0.9, 0.1, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]),
            (Mutability::DecreaseOnly, [0.2, 0.6, 0.0, 0.9], [0.0, 1.0, 0.0, 0.0]),
        ] {
            q.mutability[0] = m;
            let p = Problem { schema: &s, query: &q, model: &Toy, pool: &rows, pool_labels: &labels };
            let mut cand = cand.to_vec();
            p.project(&x, &mut cand);
            assert_eq!(cand, want, "{m:?}");
        }
    }

    #[test]
    fn test_sparsify_drops_changes_that_are_not_needed() {
        with_problem(|p| {
            let noisy = vec![0.9, 0.3, 0.5, 0.0, 0.0, 1.0];
            assert_eq!(p.sparsify(&X, noisy, 1), Ok(vec![0.9, 0.3, 0.4, 0.0, 1.0, 0.0]));
        });
    }

    /// A model that fails at every call.
    struct Broken;

    impl BlackBox for Broken {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            6
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
            Err(cent_host::blackbox::ModelError::Failed {
                model: "broken".into(),
                rows: rows.len() / 6,
                message: "gone".into(),
            })
        }
    }

    #[test]
    fn test_a_failing_model_is_reported_by_every_method_not_a_panic() {
        let s = schema();
        let q = s.default_query();
        let (rows, labels) = pool();
        let p = Problem { schema: &s, query: &q, model: &Broken, pool: &rows, pool_labels: &labels };
        let methods: [&dyn Method; 4] =
            [&GrowingSpheres::default(), &Face::default(), &NearestUnlike, &RandomSearch::default()];
        for m in methods {
            match m.counterfactual(&p, &X, 1) {
                Err(NotFound::Model(text)) => assert!(text.contains("the model broken failed"), "{}: {text}", m.name()),
                other => panic!("{}: expected the model's failure, got {other:?}", m.name()),
            }
        }
    }

    #[test]
    fn test_sampler_is_seeded_and_in_range() {
        let mut a = Sampler::new(3);
        let mut b = Sampler::new(3);
        for _ in 0..100 {
            let (u, v) = (a.uniform(), b.uniform());
            assert_eq!(u, v);
            assert!((0.0..1.0).contains(&u));
            assert!(a.below(7) < 7);
            b.below(7);
        }
        let mean: f32 = (0..4000).map(|_| a.normal()).sum::<f32>() / 4000.0;
        assert!(mean.abs() < 0.1, "normal mean {mean}");
    }
}
