//! Growing Spheres (Laugel et al., "Inverse Classification for Comparison-based
//! Interpretability in Machine Learning", 2017), our implementation.
//!
//! The published method samples points uniformly in a ball around `x`, halves the radius while
//! the ball still holds an "enemy" (a point of the target class), then grows spherical layers
//! outwards until one holds an enemy, takes the enemy closest to `x` (l2) and finally sets
//! changed features back to `x`'s value one at a time, smallest change first, while the point
//! stays an enemy (its feature-selection step).
//!
//! Adaptation to constraints: sampling happens in the mutable encoded columns only, and every
//! sample is projected onto the feasible set before it is judged (directions and ranges
//! clamped, whole values rounded, one-hot groups set to their largest allowed column). An enemy
//! must both flip the model and pass the core's constraint check. Distances are Euclidean in
//! encoded units.

use super::{Found, Method, NotFound, Problem, Sampler, squared};

/// Hyperparameters of [`GrowingSpheres`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrowingSpheres {
    /// Samples per ball or layer (one batched model call each).
    pub samples: usize,
    /// Radius of the first ball, in encoded units.
    pub first_radius: f32,
    /// Halvings of the first ball at most.
    pub max_halvings: usize,
    /// Layers grown at most before giving up.
    pub max_layers: usize,
    pub seed: u64,
}

impl Default for GrowingSpheres {
    fn default() -> Self {
        GrowingSpheres { samples: 1000, first_radius: 1.0, max_halvings: 10, max_layers: 40, seed: 7 }
    }
}

impl Method for GrowingSpheres {
    fn name(&self) -> &'static str {
        "gs"
    }

    fn counterfactual(&self, p: &Problem<'_>, x: &[f32], target: usize) -> Result<Found, NotFound> {
        let cols = mutable_columns(p);
        if cols.is_empty() {
            return Err(NotFound::Budget);
        }
        let mut rng = Sampler::new(self.seed);
        // Shrink the first ball while it still holds an enemy.
        let mut radius = self.first_radius;
        let mut best = self.enemy_in(p, x, target, &cols, 0.0, radius, &mut rng)?;
        let mut halvings = 0;
        while best.is_some() && halvings < self.max_halvings {
            let smaller = self.enemy_in(p, x, target, &cols, 0.0, radius / 2.0, &mut rng)?;
            if smaller.is_none() {
                break;
            }
            (best, radius, halvings) = (smaller, radius / 2.0, halvings + 1);
        }
        // Grow layers of the last radius's width until one holds an enemy.
        let step = radius;
        let mut layers = 0;
        while best.is_none() && layers < self.max_layers {
            best = self.enemy_in(p, x, target, &cols, radius, radius + step, &mut rng)?;
            radius += step;
            layers += 1;
        }
        let enemy = best.ok_or(NotFound::Budget)?;
        p.verify(x, p.sparsify(x, enemy, target)?, target)
    }
}

impl GrowingSpheres {
    /// The enemy closest to `x` among `samples` projected points of the layer `lo..hi`.
    #[allow(clippy::too_many_arguments)] // The layer's bounds and the sampler are the state of the loop.
    fn enemy_in(
        &self,
        p: &Problem<'_>,
        x: &[f32],
        target: usize,
        cols: &[usize],
        lo: f32,
        hi: f32,
        rng: &mut Sampler,
    ) -> Result<Option<Vec<f32>>, NotFound> {
        let n = x.len();
        let mut batch = Vec::with_capacity(self.samples * n);
        for _ in 0..self.samples {
            let start = batch.len();
            batch.extend_from_slice(x);
            let row = &mut batch[start..];
            for (c, d) in cols.iter().zip(layer_point(rng, cols.len(), lo, hi)) {
                row[*c] += d;
            }
            p.project(x, row);
        }
        Ok(p.valid_among(x, &batch, target)?
            .into_iter()
            .map(|i| batch[i * n..(i + 1) * n].to_vec())
            .min_by(|a, b| squared(a, x).total_cmp(&squared(b, x))))
    }
}

/// Encoded columns of the features the query lets change.
fn mutable_columns(p: &Problem<'_>) -> Vec<usize> {
    p.mutable_features().into_iter().filter_map(|j| p.schema.feature(j)).flat_map(|f| f.columns()).collect()
}

/// A point drawn uniformly from the spherical layer `lo <= |v| < hi` in `d` dimensions: a
/// uniform direction (normalised Gaussian) and a radius with density proportional to `r^(d-1)`.
fn layer_point(rng: &mut Sampler, d: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut v: Vec<f32> = (0..d).map(|_| rng.normal()).collect();
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    // r = hi * (q + u (1 - q))^(1/d) with q = (lo/hi)^d, computed in f64 to avoid overflow.
    let q = (f64::from(lo) / f64::from(hi.max(f32::MIN_POSITIVE))).powi(d as i32);
    let u = f64::from(rng.uniform());
    let r = f64::from(hi) * (q + u * (1.0 - q)).powf(1.0 / d.max(1) as f64);
    for a in &mut v {
        *a = (f64::from(*a / norm) * r) as f32;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::tests::{X, assert_valid, with_problem};
    use super::*;

    #[test]
    fn test_layer_points_lie_in_the_layer() {
        let mut rng = Sampler::new(1);
        for _ in 0..200 {
            let v = layer_point(&mut rng, 5, 0.5, 0.75);
            let r = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            assert!((0.5 - 1e-5..0.75 + 1e-5).contains(&r), "radius {r}");
        }
    }

    #[test]
    fn test_finds_a_valid_counterfactual_without_redundant_changes() {
        with_problem(|p| {
            let found = GrowingSpheres::default().counterfactual(p, &X, 1).expect("the toy flips");
            assert_valid(p, &found);
            // After feature selection no change can be reverted alone.
            assert_eq!(
                crate::metrics::redundancy(
                    p.schema,
                    p.model,
                    &cent_host::support::Support::none(X.len()),
                    &X,
                    &found.x,
                    1
                )
                .ok(),
                Some(0),
                "{:?}",
                found.x
            );
            assert!(crate::metrics::l0(p.schema, &X, &found.x) >= 1);
        });
    }

    #[test]
    fn test_is_deterministic_for_a_seed() {
        with_problem(|p| {
            let gs = GrowingSpheres { samples: 50, ..GrowingSpheres::default() };
            assert_eq!(gs.counterfactual(p, &X, 1), gs.counterfactual(p, &X, 1));
        });
    }

    #[test]
    fn test_budget_exhausted_is_not_found() {
        with_problem(|p| {
            // Class 2 does not exist: nothing ever flips to it.
            let gs = GrowingSpheres { samples: 20, max_layers: 3, ..GrowingSpheres::default() };
            assert_eq!(gs.counterfactual(p, &X, 2), Err(NotFound::Budget));
        });
    }
}
