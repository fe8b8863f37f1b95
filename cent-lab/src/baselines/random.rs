//! Random search in the spirit of DiCE's model-agnostic `random` method (Mothilal et al.,
//! "Explaining Machine Learning Classifiers through Diverse Counterfactual Explanations", 2020;
//! the `dice-ml` library), our implementation.
//!
//! DiCE's random method draws candidates in which a random subset of the features to vary takes
//! values drawn uniformly from their permitted range (a category uniformly from the permitted
//! ones), trying few changed features first, and keeps candidates the model assigns to the
//! desired class. Here: stage `s = 1, 2, …` draws [`RandomSearch::samples`] candidates with `s`
//! mutable features redrawn each, uniformly over the values the constraints permit from `x`
//! (an increase-only feature between `x` and its maximum, a category among the allowed
//! transitions), whole values rounded; the first stage that yields valid candidates stops the
//! search and the one closest to `x` (l1, encoded units) is returned. No post-hoc sparsity step,
//! as in DiCE's random method with `posthoc_sparsity_param=None`.

use super::{Found, Method, NotFound, Problem, Sampler, project_scalar};
use cent_nostd::schema::{self, Feature, Kind, Mutability};

/// Hyperparameters of [`RandomSearch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomSearch {
    /// Candidates per stage (one batched model call each).
    pub samples: usize,
    pub seed: u64,
}

impl Default for RandomSearch {
    fn default() -> Self {
        RandomSearch { samples: 500, seed: 7 }
    }
}

impl Method for RandomSearch {
    fn name(&self) -> &'static str {
        "random"
    }

    fn counterfactual(&self, p: &Problem<'_>, x: &[f32], target: usize) -> Result<Found, NotFound> {
        let mutable = p.mutable_features();
        let mut rng = Sampler::new(self.seed);
        let n = x.len();
        for stage in 1..=mutable.len() {
            let mut batch = Vec::with_capacity(self.samples * n);
            for _ in 0..self.samples {
                let start = batch.len();
                batch.extend_from_slice(x);
                redraw(p, &mutable, stage, x, &mut batch[start..], &mut rng);
            }
            let closest = p
                .valid_among(x, &batch, target)?
                .into_iter()
                .map(|i| &batch[i * n..(i + 1) * n])
                .min_by(|a, b| l1(a, x).total_cmp(&l1(b, x)));
            if let Some(best) = closest {
                return p.verify(x, best.to_vec(), target);
            }
        }
        Err(NotFound::Budget)
    }
}

/// Redraws `count` distinct features of `mutable` (a seeded partial shuffle) in `row`.
fn redraw(p: &Problem<'_>, mutable: &[usize], count: usize, x: &[f32], row: &mut [f32], rng: &mut Sampler) {
    let mut pick = mutable.to_vec();
    for i in 0..count.min(pick.len()) {
        let j = i + rng.below(pick.len() - i);
        pick.swap(i, j);
        let Some(f) = p.schema.feature(pick[i]) else { continue };
        let m = p.query.mutability[pick[i]];
        match f.kind {
            Kind::Categorical => redraw_group(p, f, m, x, row, rng),
            _ => row[f.col as usize] = redraw_scalar(f, m, x[f.col as usize], rng),
        }
    }
}

/// A uniform value in the permitted interval from `from`, rounded to a whole raw value for
/// discrete kinds.
fn redraw_scalar(f: &Feature, m: Mutability, from: f32, rng: &mut Sampler) -> f32 {
    let (lo, hi) = match m {
        Mutability::IncreaseOnly => (from, 1.0),
        Mutability::DecreaseOnly => (0.0, from),
        _ => (0.0, 1.0),
    };
    project_scalar(f, m, from, lo + rng.uniform() * (hi - lo))
}

/// A category drawn uniformly among those `x`'s category may move to (itself excluded): the
/// allowed transitions, on an ordered group in the permitted direction only.
fn redraw_group(p: &Problem<'_>, f: &Feature, m: Mutability, x: &[f32], row: &mut [f32], rng: &mut Sampler) {
    let Some(from) = schema::category(f, x) else { return };
    let mask = schema::reachable(f, m, &p.query.transitions, from);
    let options: Vec<usize> =
        (0..f.width as usize).filter(|&k| k != from as usize && k < 64 && mask & (1 << k) != 0).collect();
    if options.is_empty() {
        return;
    }
    let to = options[rng.below(options.len())];
    let group = &mut row[f.columns()];
    group.fill(0.0);
    group[to] = 1.0;
}

fn l1(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(p, q)| (p - q).abs()).sum()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{X, assert_valid, with_problem};
    use super::*;

    #[test]
    fn test_finds_a_valid_single_feature_change_first() {
        with_problem(|p| {
            let found = RandomSearch::default().counterfactual(p, &X, 1).expect("the toy flips");
            assert_valid(p, &found);
            let changed = cent_nostd::counterfactual::changed_features(p.schema, &X, &found.x).count();
            assert_eq!(changed, 1, "stage 1 already flips: {:?}", found.x);
        });
    }

    #[test]
    fn test_redrawn_groups_use_allowed_transitions_only() {
        with_problem(|p| {
            let f = p.schema.feature(3).copied().unwrap();
            let mut rng = Sampler::new(5);
            for _ in 0..50 {
                let mut row = X.to_vec();
                redraw_group(p, &f, Mutability::Free, &X, &mut row, &mut rng);
                // From b, only c is allowed (b -> a is forbidden).
                assert_eq!(&row[3..6], &[0.0, 0.0, 1.0]);
            }
        });
    }

    #[test]
    fn test_redrawn_ordered_groups_keep_their_direction() {
        with_problem(|p| {
            let f = Feature::ordinal(3, 3);
            let mut rng = Sampler::new(9);
            for _ in 0..50 {
                let mut row = X.to_vec();
                redraw_group(p, &f, Mutability::IncreaseOnly, &X, &mut row, &mut rng);
                // From b (the middle), only c lies above.
                assert_eq!(&row[3..6], &[0.0, 0.0, 1.0]);
                redraw_group(p, &f, Mutability::DecreaseOnly, &X, &mut row, &mut rng);
                // Down from b is a; b -> a is forbidden: nothing to draw, the row is kept.
                assert_eq!(&row[3..6], &[0.0, 0.0, 1.0]);
            }
        });
    }

    #[test]
    fn test_impossible_target_exhausts_the_stages() {
        with_problem(|p| {
            let search = RandomSearch { samples: 20, seed: 1 };
            assert_eq!(search.counterfactual(p, &X, 2), Err(NotFound::Budget));
        });
    }
}
