//! Nearest unlike neighbour, our implementation of the classic baseline (used as such by
//! Laugel et al. 2017 and in CARLA-style benchmarks): the training point closest to `x` that the
//! model assigns to the target class.
//!
//! Adaptation to constraints: only training points that `x` could feasibly move to are
//! candidates (the core's constraint check from `x` passes: same immutables, one-direction
//! features not moved back, allowed category transitions). Distance is Euclidean in encoded
//! units; ties go to the lower pool row. Training points are real records, so their values are
//! whole and in range by construction; the result is still re-verified.

use super::{Found, Method, NotFound, Problem, squared};
use cent_nostd::counterfactual;

/// The nearest unlike neighbour method (no hyperparameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NearestUnlike;

impl Method for NearestUnlike {
    fn name(&self) -> &'static str {
        "nun"
    }

    fn counterfactual(&self, p: &Problem<'_>, x: &[f32], target: usize) -> Result<Found, NotFound> {
        let best = feasible_targets(p, x, target)
            .into_iter()
            .map(|i| (squared(p.pool_row(i), x), i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .ok_or(NotFound::NoFeasibleTarget)?;
        p.verify(x, p.pool_row(best.1).to_vec(), target)
    }
}

/// Pool rows labelled `target` by the model that `x` may feasibly move to and that differ from
/// it.
pub(super) fn feasible_targets(p: &Problem<'_>, x: &[f32], target: usize) -> Vec<usize> {
    (0..p.pool_labels.len())
        .filter(|&i| p.pool_labels[i] == target)
        .filter(|&i| {
            let row = p.pool_row(i);
            row != x && counterfactual::check(p.schema, p.query, x, row).is_ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{X, assert_valid, with_problem};
    use super::*;

    #[test]
    fn test_picks_the_nearest_feasible_target_row() {
        with_problem(|p| {
            let found = NearestUnlike.counterfactual(p, &X, 1).expect("the pool has class-1 rows");
            assert_valid(p, &found);
            // Same age 30, degree 6 (up from 4), same job b, income 0.4: score 0.4 + 0.3 = 0.7.
            // The grid's nearer class-1 rows need a lower degree or another age.
            assert_eq!(found.x, vec![0.4, 0.3, 0.6, 0.0, 1.0, 0.0]);
        });
    }

    #[test]
    fn test_no_feasible_target() {
        with_problem(|p| {
            assert_eq!(NearestUnlike.counterfactual(p, &X, 2), Err(NotFound::NoFeasibleTarget));
        });
    }
}
