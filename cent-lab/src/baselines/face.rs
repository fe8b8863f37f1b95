//! FACE with a k-nearest-neighbour graph (Poyiadzi et al., "FACE: Feasible and Actionable
//! Counterfactual Explanations", 2020), our implementation.
//!
//! The published method builds a graph over data points whose edges join close points (here:
//! the kNN variant), so that shortest paths run through dense regions, and returns the end of the
//! shortest path from `x` to a point that the model assigns to the target class with enough
//! confidence. Our graph follows the setting of the evaluation:
//!
//! - vertices: `x` and the training points the model assigns to the target class that `x`
//!   could feasibly move to (the core's constraint check from `x` passes), at most
//!   [`Face::max_points`] of them, the nearest to `x` first;
//! - edges: each vertex to its [`Face::k`] nearest vertices (Euclidean, encoded units), weighted
//!   by that distance, and kept only when the move along the edge respects the constraints (a
//!   path never moves a one-direction feature back or takes a forbidden category transition);
//! - endpoint: the vertex with the cheapest path whose target-class probability is at least
//!   [`Face::confidence`].
//!
//! The endpoint is a real training record (whole values, in range) and is re-verified.

use super::nun::feasible_targets;
use super::{Found, Method, NotFound, Problem, squared};
use cent_nostd::counterfactual;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Hyperparameters of [`Face`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Face {
    /// Neighbours per vertex in the kNN graph.
    pub k: usize,
    /// Target-class training points in the graph at most (the nearest to `x`).
    pub max_points: usize,
    /// Minimum probability of the target class at the endpoint.
    pub confidence: f32,
}

impl Default for Face {
    fn default() -> Self {
        Face { k: 10, max_points: 500, confidence: 0.75 }
    }
}

impl Method for Face {
    fn name(&self) -> &'static str {
        "face"
    }

    fn counterfactual(&self, p: &Problem<'_>, x: &[f32], target: usize) -> Result<Found, NotFound> {
        let points = self.vertices(p, x, target);
        if points.is_empty() {
            return Err(NotFound::NoFeasibleTarget);
        }
        let n = x.len();
        // Vertex 0 is x, vertex v > 0 is pool row points[v - 1].
        let mut rows = x.to_vec();
        for &i in &points {
            rows.extend_from_slice(p.pool_row(i));
        }
        let graph = knn_graph(p, &rows, n, self.k);
        let cost = shortest_paths(&graph);
        let proba = p.model.probabilities(&rows[n..])?;
        let classes = p.model.classes();
        let confident = |v: usize| proba.get((v - 1) * classes + target).is_some_and(|&q| q >= self.confidence);
        let end = (1..=points.len())
            .filter(|&v| cost[v].is_finite() && confident(v))
            .min_by(|&a, &b| cost[a].total_cmp(&cost[b]).then(a.cmp(&b)))
            .ok_or(NotFound::Budget)?;
        p.verify(x, rows[end * n..(end + 1) * n].to_vec(), target)
    }
}

impl Face {
    /// The `max_points` feasible target-class pool rows nearest to `x`.
    fn vertices(&self, p: &Problem<'_>, x: &[f32], target: usize) -> Vec<usize> {
        let mut cand: Vec<(f32, usize)> =
            feasible_targets(p, x, target).into_iter().map(|i| (squared(p.pool_row(i), x), i)).collect();
        let by = |a: &(f32, usize), b: &(f32, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        if cand.len() > self.max_points {
            cand.select_nth_unstable_by(self.max_points, by);
            cand.truncate(self.max_points);
        }
        cand.sort_unstable_by(by);
        cand.into_iter().map(|(_, i)| i).collect()
    }
}

/// Directed kNN graph over row-major `rows` (`n` columns): vertex `u` links to its `k` nearest
/// vertices `v` when the constraint check allows moving from `u` to `v`.
fn knn_graph(p: &Problem<'_>, rows: &[f32], n: usize, k: usize) -> Vec<Vec<(usize, f32)>> {
    let count = rows.len() / n;
    let row = |v: usize| &rows[v * n..(v + 1) * n];
    (0..count)
        .map(|u| {
            let mut near: Vec<(f32, usize)> =
                (0..count).filter(|&v| v != u).map(|v| (squared(row(u), row(v)), v)).collect();
            let by = |a: &(f32, usize), b: &(f32, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
            if near.len() > k {
                near.select_nth_unstable_by(k, by);
                near.truncate(k);
            }
            near.into_iter()
                .filter(|&(_, v)| counterfactual::check(p.schema, p.query, row(u), row(v)).is_ok())
                .map(|(d, v)| (v, d.sqrt()))
                .collect()
        })
        .collect()
}

/// Dijkstra from vertex 0: the cheapest path cost to every vertex (infinite when unreachable).
fn shortest_paths(graph: &[Vec<(usize, f32)>]) -> Vec<f32> {
    let mut cost = vec![f32::INFINITY; graph.len()];
    let mut heap = BinaryHeap::new();
    if graph.is_empty() {
        return cost;
    }
    cost[0] = 0.0;
    // Costs are non-negative finite floats, whose bit patterns order like the values.
    heap.push(Reverse((0u32, 0usize)));
    while let Some(Reverse((bits, u))) = heap.pop() {
        let c = f32::from_bits(bits);
        if c > cost[u] {
            continue;
        }
        for &(v, w) in &graph[u] {
            let next = c + w;
            if next < cost[v] {
                cost[v] = next;
                heap.push(Reverse((next.to_bits(), v)));
            }
        }
    }
    cost
}

#[cfg(test)]
mod tests {
    use super::super::tests::{X, assert_valid, with_problem};
    use super::*;

    #[test]
    fn test_shortest_paths_prefer_short_hops() {
        // 0 -> 1 -> 2 costs 2, the direct edge 0 -> 2 costs 3; vertex 3 is unreachable.
        let graph = vec![vec![(1, 1.0), (2, 3.0)], vec![(2, 1.0)], vec![], vec![(0, 1.0)]];
        let cost = shortest_paths(&graph);
        assert_eq!(&cost[..3], &[0.0, 1.0, 2.0]);
        assert!(cost[3].is_infinite());
    }

    #[test]
    fn test_finds_a_confident_feasible_training_point() {
        with_problem(|p| {
            let found = Face::default().counterfactual(p, &X, 1).expect("the pool has class-1 rows");
            assert_valid(p, &found);
            // The toy's class-1 probability is 0.9 everywhere, so the nearest point wins.
            assert_eq!(found.x, vec![0.4, 0.3, 0.6, 0.0, 1.0, 0.0]);
        });
    }

    #[test]
    fn test_confidence_above_every_point_finds_nothing() {
        with_problem(|p| {
            let face = Face { confidence: 0.95, ..Face::default() };
            assert_eq!(face.counterfactual(p, &X, 1), Err(NotFound::Budget));
        });
    }
}
