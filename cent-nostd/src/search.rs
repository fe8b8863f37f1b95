//! Bounded one-to-many Dijkstra over a [`Graph`]: pops contrast leaves in increasing cost.
//!
//! The search starts at the root (equivalent to starting at the fact leaf with zero-cost edges
//! towards the root: every ancestor of the fact leaf contains `x` and so costs 0). Edges away
//! from the root cost what the graph says, so every node's distance equals the cost of moving
//! `x` into its box, including the entropy term of a leaf — the fact leaf's too.
//! Because leaves pop in cost order, repeatedly asking for the next contrast leaf yields the
//! diverse candidates (distinct leaves) cheapest first. Ties break on the smaller node index.

use crate::graph::{Graph, INFINITE};
use crate::tree::NodeIdx;
use core::fmt;
use heapless::binary_heap::{BinaryHeap, Min};

/// Which leaves count as contrasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Target {
    /// Leaves predicting exactly this class.
    Class(u8),
    /// Leaves predicting any class but this one (the fact class).
    Not(u8),
}

impl Target {
    pub fn matches(self, class: u8) -> bool {
        match self {
            Target::Class(c) => class == c,
            Target::Not(c) => class != c,
        }
    }
}

/// A contrast leaf and the cost of reaching its box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Hit {
    pub leaf: NodeIdx,
    pub cost: u32,
}

/// Why a search step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SearchError {
    /// The graph has more nodes than the search capacity, or the heap overflowed.
    Capacity,
    /// The graph is empty (not built).
    Start,
}

impl fmt::Display for SearchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchError::Capacity => write!(f, "search capacity exceeded"),
            SearchError::Start => write!(f, "graph is empty"),
        }
    }
}

impl core::error::Error for SearchError {}

/// Caller-owned Dijkstra state for graphs of up to `N` nodes.
#[derive(Debug)]
pub struct Search<const N: usize> {
    dist: [u32; N],
    settled: [bool; N],
    heap: BinaryHeap<(u32, NodeIdx), Min, N>,
    len: usize,
}

impl<const N: usize> Default for Search<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Search<N> {
    pub const fn new() -> Self {
        Search { dist: [INFINITE; N], settled: [false; N], heap: BinaryHeap::new(), len: 0 }
    }

    /// Resets the state and seeds the queue with the root (at its entry cost: 0 unless the root
    /// is itself a leaf).
    ///
    /// # Errors
    /// [`SearchError::Capacity`] when `graph` has more than `N` nodes; [`SearchError::Start`]
    /// when the graph is empty.
    pub fn start<const G: usize>(&mut self, graph: &Graph<G>) -> Result<(), SearchError> {
        self.len = graph.len();
        if self.len > N {
            return Err(SearchError::Capacity);
        }
        if self.len == 0 {
            return Err(SearchError::Start);
        }
        self.dist[..self.len].fill(INFINITE);
        self.settled[..self.len].fill(false);
        self.heap.clear();
        let root = graph.edge(0);
        self.dist[0] = root;
        self.heap.push((root, 0)).map_err(|_| SearchError::Capacity)
    }

    /// Pops nodes until the next leaf matching `target`; `Ok(None)` when none is left.
    ///
    /// # Errors
    /// [`SearchError::Capacity`] when the heap overflows.
    pub fn next_contrast<const G: usize>(
        &mut self,
        graph: &Graph<G>,
        target: Target,
    ) -> Result<Option<Hit>, SearchError> {
        while let Some((cost, node)) = self.heap.pop() {
            let i = node as usize;
            if i >= self.len || self.settled[i] || cost > self.dist[i] {
                continue;
            }
            self.settled[i] = true;
            self.relax(graph, node, cost)?;
            if graph.leaf_class(node).is_some_and(|c| target.matches(c)) {
                return Ok(Some(Hit { leaf: node, cost }));
            }
        }
        Ok(None)
    }

    /// Settled distance of `node` so far ([`INFINITE`] when not reached).
    pub fn distance(&self, node: NodeIdx) -> u32 {
        self.dist.get(node as usize).copied().unwrap_or(INFINITE)
    }

    fn relax<const G: usize>(&mut self, graph: &Graph<G>, node: NodeIdx, cost: u32) -> Result<(), SearchError> {
        for c in graph.children(node) {
            let w = graph.edge(c);
            if w != INFINITE {
                self.offer(c, cost.saturating_add(w).min(INFINITE - 1))?;
            }
        }
        Ok(())
    }

    fn offer(&mut self, node: NodeIdx, cost: u32) -> Result<(), SearchError> {
        let i = node as usize;
        if i < self.len && !self.settled[i] && cost < self.dist[i] {
            self.dist[i] = cost;
            self.heap.push((cost, node)).map_err(|_| SearchError::Capacity)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;
    use super::*;
    use crate::counterfactual::{self, Rule, Violation};
    use crate::graph::box_cost;
    use crate::schema::{Feature, Kind, Mutability, Query, Schema, SchemaError};
    use crate::tree::tests::bytes_of;
    use crate::tree::{Bounds, Node, Tree};
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro128PlusPlus;
    use std::vec::Vec;

    fn below(rng: &mut Xoshiro128PlusPlus, n: u32) -> u32 {
        rng.next_u32() % n
    }

    fn unit(rng: &mut Xoshiro128PlusPlus) -> f32 {
        (rng.next_u32() >> 8) as f32 / 16_777_216.0
    }

    /// A random schema of 1..=6 features of every kind and mutability; half the categorical
    /// features are ordered, and every one-direction categorical feature is.
    pub(crate) fn random_schema(rng: &mut Xoshiro128PlusPlus) -> Schema {
        random_schema_in(rng, 0)
    }

    /// [`random_schema`] in any capacity, after `pad` free 64-category groups (so that, with
    /// `pad` of 4 or more, trees split on columns that need the wide record form).
    pub(crate) fn random_schema_in<const F: usize, const C: usize>(
        rng: &mut Xoshiro128PlusPlus,
        pad: usize,
    ) -> Schema<F, C> {
        let mut s = Schema::<F, C>::new(2 + below(rng, 2) as u8);
        for _ in 0..pad {
            let col = s.columns() as u16;
            s.push(Feature::categorical(col, 64).with_cost(0.5 + unit(rng))).unwrap();
        }
        let n = 1 + below(rng, 6);
        for _ in 0..n {
            let col = s.columns() as u16;
            let f = match below(rng, 4) {
                0 => Feature::continuous(col, 0.0, 10.0),
                1 => Feature::integer(col, 0.0, 1.0 + below(rng, 20) as f32),
                2 => Feature::binary(col),
                _ => Feature { ordered: below(rng, 2) == 0, ..Feature::categorical(col, 2 + below(rng, 4) as u8) },
            };
            let m = [
                Mutability::Free,
                Mutability::Free,
                Mutability::IncreaseOnly,
                Mutability::DecreaseOnly,
                Mutability::Immutable,
            ][below(rng, 5) as usize];
            let f = f.with_mutability(m).with_cost(0.5 + unit(rng)).with_sigma(0.05 + 0.2 * unit(rng));
            // Only an ordered group may keep a direction: the schema refuses the unordered one.
            if let Err(e) = s.push(f) {
                assert_eq!(e, SchemaError::Unordered { feature: s.features().len() as u16 });
                s.push(Feature { ordered: true, ..f }).unwrap();
            }
        }
        s.l0 = 0.1 * unit(rng);
        s.entropy = 0.1 * unit(rng);
        if let Some(j) = s.features().iter().position(|f| f.kind == Kind::Categorical) {
            s.set_transition(j, 0, 1, false).unwrap();
        }
        s
    }

    /// A random valid encoded point of `s`.
    pub(crate) fn random_point<const F: usize, const C: usize>(
        rng: &mut Xoshiro128PlusPlus,
        s: &Schema<F, C>,
    ) -> Vec<f32> {
        let mut x = std::vec![0.0; s.columns()];
        for f in s.features() {
            let c = f.col as usize;
            match f.kind {
                Kind::Categorical => x[c + below(rng, f.width as u32) as usize] = 1.0,
                Kind::Continuous => x[c] = unit(rng),
                Kind::Integer | Kind::Binary => {
                    let k = below(rng, (f.max - f.min) as u32 + 1) as f32;
                    x[c] = f.encode(f.min + k);
                }
            }
        }
        x
    }

    /// A random tree of up to `max_nodes` nodes over `s`, nodes numbered breadth first.
    pub(crate) fn random_tree<const F: usize, const C: usize>(
        rng: &mut Xoshiro128PlusPlus,
        s: &Schema<F, C>,
        max_nodes: usize,
        depth: usize,
    ) -> Vec<u8> {
        let mut nodes: Vec<Node> = std::vec![Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 1 }];
        let mut depths = std::vec![0usize];
        let mut i = 0;
        while i < nodes.len() {
            if nodes.len() + 2 <= max_nodes && depths[i] < depth && below(rng, 4) != 0 {
                let col = below(rng, s.columns() as u32) as u16;
                let f = s.features()[s.feature_of_column(col as usize).unwrap()];
                let threshold = match f.kind {
                    Kind::Categorical | Kind::Binary => 0.5,
                    _ => unit(rng),
                };
                let left = nodes.len() as u16;
                nodes[i] = Node::Split { col, threshold, left, right: left + 1 };
                for _ in 0..2 {
                    nodes.push(Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 1 });
                    depths.push(depths[i] + 1);
                }
            } else {
                let class = below(rng, s.classes() as u32) as u8;
                let entropy = unit(rng);
                nodes[i] = Node::Leaf { class, purity: 0.5 + unit(rng) / 2.0, entropy, samples: 10 };
            }
            i += 1;
        }
        bytes_of(&nodes)
    }

    /// Every contrast leaf of `t` for `x` (any class), in the order the search pops them.
    fn contrast_hits<const F: usize, const C: usize>(
        t: &Tree<'_>,
        s: &Schema<F, C>,
        q: &Query<F, C>,
        x: &[f32],
    ) -> Vec<Hit> {
        let mut g: Graph<64> = Graph::new();
        g.build(t, s, q, x).unwrap();
        let mut search: Search<64> = Search::new();
        search.start(&g).unwrap();
        let mut hits = Vec::new();
        while let Some(hit) = search.next_contrast(&g, Target::Not(u8::MAX)).unwrap() {
            hits.push(hit);
        }
        hits
    }

    /// Every leaf's exact box cost, by brute force over the boxes (`None` = forbidden).
    fn brute_force<const F: usize, const C: usize>(t: &Tree<'_>, s: &Schema<F, C>, x: &[f32]) -> Vec<(u32, u16)> {
        let q = s.default_query();
        let mut v: Vec<(u32, u16)> = (0..t.len() as u16)
            .filter_map(|i| match t.node(i) {
                Some(Node::Leaf { entropy, .. }) => box_cost(s, &q, x, &Bounds::<C>::of(t, i), entropy).map(|c| (c, i)),
                _ => None,
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn prop_pop_order_equals_sorted_box_costs() {
        for seed in 0..400 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
            let s = random_schema(&mut rng);
            let bytes = random_tree(&mut rng, &s, 63, 8);
            let t = Tree::new(&bytes, s.columns(), s.classes()).unwrap();
            let x = random_point(&mut rng, &s);
            let mut g: Graph<64> = Graph::new();
            g.build(&t, &s, &s.default_query(), &x).unwrap();
            let mut search: Search<64> = Search::new();
            search.start(&g).unwrap();
            let mut popped = Vec::new();
            while let Some(hit) = search.next_contrast(&g, Target::Not(u8::MAX)).unwrap() {
                popped.push((hit.cost, hit.leaf));
            }
            let costs: Vec<u32> = popped.iter().map(|p| p.0).collect();
            let mut sorted_costs = costs.clone();
            sorted_costs.sort();
            assert_eq!(costs, sorted_costs, "seed {seed}: pops not in cost order");
            popped.sort();
            assert_eq!(popped, brute_force(&t, &s, &x), "seed {seed}: telescoped costs differ from box costs");
        }
    }

    /// The same oracle at the host's capacity, on schemas wider than a device holds: trees
    /// split on columns past 253 (the wide record form) and the graph, search and realization
    /// run on `Schema<256, 2048>` and `Bounds<2048>`.
    #[test]
    fn prop_host_profile_matches_the_oracle_on_wide_schemas() {
        use crate::capacity::host::{COLUMNS, FEATURES, NODES};
        let mut wide_splits = 0;
        for seed in 0..100 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(5000 + seed);
            let pad = 4 + below(&mut rng, 20) as usize;
            let s: Schema<FEATURES, COLUMNS> = random_schema_in(&mut rng, pad);
            assert!(s.columns() > 256);
            let bytes = random_tree(&mut rng, &s, 63, 8);
            let t = Tree::within::<NODES, COLUMNS>(&bytes, s.columns(), s.classes()).unwrap();
            assert_eq!(Tree::new(&bytes, s.columns(), s.classes()).unwrap_err(), crate::tree::TreeError::Capacity);
            wide_splits += (0..t.len() as u16)
                .filter(|&i| matches!(t.node(i), Some(Node::Split { col, .. }) if col >= crate::tree::WIDE_COLUMN))
                .count();
            let x = random_point(&mut rng, &s);
            let q = s.default_query();
            let mut popped = Vec::new();
            let mut out = std::vec![0.0; x.len()];
            for hit in contrast_hits(&t, &s, &q, &x) {
                popped.push((hit.cost, hit.leaf));
                counterfactual::realize(&s, &q, &t, hit.leaf, &x, &mut rng, &mut out)
                    .unwrap_or_else(|e| panic!("seed {seed} leaf {}: {e}", hit.leaf));
                assert!(Bounds::<COLUMNS>::of(&t, hit.leaf).contains(&out), "seed {seed}: outside its box");
                assert!(counterfactual::check(&s, &q, &x, &out).is_ok(), "seed {seed}");
            }
            let costs: Vec<u32> = popped.iter().map(|p| p.0).collect();
            assert!(costs.windows(2).all(|w| w[0] <= w[1]), "seed {seed}: pops not in cost order");
            popped.sort();
            assert_eq!(popped, brute_force(&t, &s, &x), "seed {seed}: telescoped costs differ from box costs");
        }
        assert!(wide_splits > 100, "the trees use wide columns: {wide_splits} splits");
    }

    #[test]
    fn prop_counterfactuals_land_in_box_and_keep_constraints() {
        let (mut produced, mut one_way_moves) = (0, 0);
        for seed in 0..400 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(1000 + seed);
            let s = random_schema(&mut rng);
            let bytes = random_tree(&mut rng, &s, 63, 8);
            let t = Tree::new(&bytes, s.columns(), s.classes()).unwrap();
            let x = random_point(&mut rng, &s);
            let q = s.default_query();
            let mut g: Graph<64> = Graph::new();
            g.build(&t, &s, &q, &x).unwrap();
            let mut search: Search<64> = Search::new();
            search.start(&g).unwrap();
            let mut out = std::vec![0.0; x.len()];
            while let Some(hit) = search.next_contrast(&g, Target::Not(u8::MAX)).unwrap() {
                counterfactual::realize(&s, &q, &t, hit.leaf, &x, &mut rng, &mut out)
                    .unwrap_or_else(|e| panic!("seed {seed} leaf {}: {e}", hit.leaf));
                assert!(<Bounds>::of(&t, hit.leaf).contains(&out), "seed {seed}: outside its box");
                assert!(counterfactual::check(&s, &q, &x, &out).is_ok());
                for f in s.features().iter().filter(|f| f.kind != Kind::Categorical) {
                    let v = out[f.col as usize];
                    assert!((0.0..=1.0).contains(&v), "seed {seed}: out of range {v}");
                }
                for (j, f) in s.features().iter().enumerate() {
                    let changed = x[f.columns()] != out[f.columns()];
                    if f.mutability == Mutability::Immutable {
                        assert!(!changed, "seed {seed}: immutable feature {j} changed");
                    }
                    if f.kind == Kind::Categorical && changed {
                        let (from, to) = (hot(&x, f), hot(&out, f));
                        assert!(direction_ok(f, q.mutability[j], from, to), "seed {seed}: group {j} {from} -> {to}");
                        one_way_moves += usize::from(f.mutability != Mutability::Free);
                    }
                }
                produced += 1;
            }
        }
        assert!(produced > 1000, "too few candidates exercised: {produced}");
        assert!(one_way_moves > 50, "too few one-direction category moves exercised: {one_way_moves}");
    }

    /// The hot column of a one-hot group, by a plain scan.
    fn hot(x: &[f32], f: &Feature) -> usize {
        let cols = &x[f.columns()];
        let hot: Vec<usize> = (0..cols.len()).filter(|&k| cols[k] == 1.0).collect();
        assert_eq!(hot.len(), 1, "not one-hot: {cols:?}");
        hot[0]
    }

    /// Whether a move from category `from` to `to` keeps mutability `m`, by comparing indices.
    fn direction_ok(f: &Feature, m: Mutability, from: usize, to: usize) -> bool {
        match m {
            _ if from == to => true,
            Mutability::Free => true,
            Mutability::Immutable => false,
            Mutability::IncreaseOnly => f.ordered && to > from,
            Mutability::DecreaseOnly => f.ordered && to < from,
        }
    }

    /// Whether the query lets `x`'s group `j` end inside `box` (its current category, or one
    /// it may move to), by enumerating the categories.
    fn group_feasible(q: &Query, j: usize, f: &Feature, x: &[f32], b: &Bounds) -> bool {
        let from = hot(x, f);
        let in_box = b.categories(f.col as usize, f.width as usize);
        let allowed = q.transitions[f.col as usize + from];
        (0..f.width as usize).any(|k| {
            in_box & (1 << k) != 0
                && (k == from || (allowed & (1 << k) != 0 && direction_ok(f, q.mutability[j], from, k)))
        })
    }

    #[test]
    fn prop_leaves_needing_a_wrong_way_category_are_unreachable() {
        let (mut blocked, mut popped_total) = (0, 0);
        for seed in 0..600 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(5000 + seed);
            let s = random_schema(&mut rng);
            let bytes = random_tree(&mut rng, &s, 63, 8);
            let t = Tree::new(&bytes, s.columns(), s.classes()).unwrap();
            let x = random_point(&mut rng, &s);
            let q = s.default_query();
            let popped: Vec<u16> = contrast_hits(&t, &s, &q, &x).iter().map(|h| h.leaf).collect();
            for leaf in (0..t.len() as u16).filter(|&i| t.node(i).is_some_and(|n| n.is_leaf())) {
                let b = Bounds::of(&t, leaf);
                let feasible = s
                    .features()
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.kind == Kind::Categorical)
                    .all(|(j, f)| group_feasible(&q, j, f, &x, &b));
                let reached = popped.contains(&leaf);
                assert!(feasible || !reached, "seed {seed}: leaf {leaf} needs a forbidden category move");
                blocked += usize::from(!feasible);
            }
            popped_total += popped.len();
        }
        assert!(blocked > 100 && popped_total > 1000, "too few cases: {blocked} blocked, {popped_total} popped");
    }

    #[test]
    fn prop_check_rejects_every_forbidden_category() {
        let mut rejected = 0;
        for seed in 0..600 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(9000 + seed);
            let s = random_schema(&mut rng);
            let x = random_point(&mut rng, &s);
            let q = s.default_query();
            for (j, f) in s.features().iter().enumerate().filter(|(_, f)| f.kind == Kind::Categorical) {
                let from = hot(&x, f);
                for to in (0..f.width as usize).filter(|&k| k != from) {
                    let mut xn = x.clone();
                    xn[f.columns()].fill(0.0);
                    xn[f.col as usize + to] = 1.0;
                    let m = q.mutability[j];
                    let want = if m == Mutability::Immutable {
                        Some(Rule::Immutable)
                    } else if !direction_ok(f, m, from, to) {
                        Some(Rule::Direction)
                    } else if q.transitions[f.col as usize + from] & (1 << to) == 0 {
                        Some(Rule::Transition)
                    } else {
                        None
                    };
                    let got = counterfactual::check(&s, &q, &x, &xn).err();
                    assert_eq!(
                        got,
                        want.map(|rule| Violation { feature: j as u16, rule }),
                        "seed {seed}: {from} -> {to}"
                    );
                    rejected += usize::from(want == Some(Rule::Direction));
                }
            }
        }
        assert!(rejected > 100, "too few wrong-way moves checked: {rejected}");
    }

    #[test]
    fn test_contrast_target_and_exhaustion() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        let bytes = bytes_of(&[
            Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
            Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 1 },
            Node::Leaf { class: 1, purity: 1.0, entropy: 0.0, samples: 1 },
        ]);
        let t = Tree::new(&bytes, 1, 2).unwrap();
        let mut g: Graph<4> = Graph::new();
        g.build(&t, &s, &s.default_query(), &[0.1]).unwrap();
        let mut search: Search<4> = Search::new();
        search.start(&g).unwrap();
        let hit = search.next_contrast(&g, Target::Not(0)).unwrap().unwrap();
        assert_eq!(hit.leaf, 2);
        assert_eq!(search.next_contrast(&g, Target::Not(0)).unwrap(), None);
        assert_eq!(search.start(&Graph::<4>::new()), Err(SearchError::Start));
        let mut small: Search<2> = Search::new();
        assert_eq!(small.start(&g), Err(SearchError::Capacity));
    }
}
