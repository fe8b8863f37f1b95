//! The query-specific weighted graph over a tree (design §3.5).
//!
//! Vertices are tree nodes. The edge parent → child costs the increase of the weighted distance
//! from `x` to the node's box on the split feature, plus `l0` when that feature becomes changed;
//! entering a leaf adds `entropy · H(leaf)`. Per-feature costs are non-decreasing down the tree,
//! so edge costs are non-negative and a leaf's path cost telescopes to [`box_cost`] of its box.
//! A move the query forbids (immutable, wrong direction, disallowed category transition, no
//! feasible value) is an absent edge: the child and its subtree are unreachable.
//!
//! Costs are integers in units of `1 / SCALE` so the search heap is `Ord` and results are
//! identical on every machine.

use crate::capacity::DEPTH;
use crate::schema::{self, Feature, Kind, Mutability, Query, Schema, SchemaError};
use crate::tree::{Bounds, Node, NodeIdx, Tree};
use core::fmt;

/// Fixed-point units per unit of weighted, scaled distance.
pub const SCALE: f32 = 65536.0;
/// The cost of an absent edge / unreachable node.
pub const INFINITE: u32 = u32::MAX;
/// Largest weighted distance per feature that is represented; larger values saturate.
const MAX_UNITS: f32 = 4096.0;

/// Why a graph cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum GraphError {
    /// The tree has more nodes than the graph's capacity.
    Capacity,
    /// The query vector, schema and tree disagree on the number of columns, or `x` has a
    /// non-finite value or a one-hot group without exactly one hot column.
    Input,
    /// The query's weights are not finite and non-negative, or it asks for a direction on an
    /// unordered categorical feature.
    Query(SchemaError),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::Capacity => write!(f, "tree has more nodes than the graph capacity"),
            GraphError::Input => write!(f, "query vector does not match the schema"),
            GraphError::Query(e) => write!(f, "invalid query: {e}"),
        }
    }
}

impl core::error::Error for GraphError {}

/// A feature's cost state for one box: `None` when the box is forbidden for the query.
fn feature_cost<const C: usize>(
    f: &Feature,
    m: Mutability,
    w: f32,
    transitions: &[u64],
    l0: u32,
    x: &[f32],
    b: &Bounds<C>,
) -> Option<u32> {
    let (distance, changed) = match f.kind {
        Kind::Categorical => group_distance(f, m, transitions, x, b)?,
        Kind::Continuous | Kind::Integer | Kind::Binary => scalar_distance(f, m, x, b)?,
    };
    let units = libm::fminf(w * distance, MAX_UNITS);
    let q = libm::roundf(units * SCALE) as u32;
    Some(q.saturating_add(if changed { l0 } else { 0 }))
}

/// Distance of `x` to the box on a scalar feature, and whether `x` must move.
fn scalar_distance<const C: usize>(f: &Feature, m: Mutability, x: &[f32], b: &Bounds<C>) -> Option<(f32, bool)> {
    let col = f.col as usize;
    let v = *x.get(col)?;
    let (lo, hi) = b.interval(col);
    if v > lo && v <= hi {
        return Some((0.0, false));
    }
    // The feasible part of the box: the feature's range is [0, 1] in encoded units.
    let (flo, fhi) = (libm::fmaxf(lo, -1.0), libm::fminf(hi, 1.0));
    if fhi < 0.0 || flo >= fhi {
        return None;
    }
    if f.is_discrete() && discrete_value(f, flo, fhi, v).is_none() {
        return None;
    }
    let up = v <= lo;
    let allowed = match m {
        Mutability::Free => true,
        Mutability::IncreaseOnly => up,
        Mutability::DecreaseOnly => !up,
        Mutability::Immutable => false,
    };
    allowed.then_some((if up { lo - v } else { v - hi }, true))
}

/// Distance of `x`'s category to the box on a one-hot group: 0 while still allowed, 1 when `x`
/// must switch to an allowed category, `None` when the box holds no category `x` may reach
/// (the box intersected with the transitions and the permitted direction is empty).
fn group_distance<const C: usize>(
    f: &Feature,
    m: Mutability,
    transitions: &[u64],
    x: &[f32],
    b: &Bounds<C>,
) -> Option<(f32, bool)> {
    let allowed = b.categories(f.col as usize, f.width as usize);
    let current = schema::category(f, x)?;
    if allowed & (1 << current) != 0 {
        return Some((0.0, false));
    }
    let reachable = allowed & schema::reachable(f, m, transitions, current);
    (reachable != 0).then_some((1.0, true))
}

/// A whole raw value of a discrete feature inside `(lo, hi]` (encoded units) near `v`, as an
/// encoded value; `None` when the interval holds no whole value of the feature's range.
pub fn discrete_value(f: &Feature, lo: f32, hi: f32, v: f32) -> Option<f32> {
    let target = libm::fmaxf(libm::fminf(v, hi), lo);
    let mut k = libm::roundf(f.decode(target));
    // Step towards the interval; floating rounding can put the first guess one step outside.
    for _ in 0..3 {
        let e = f.encode(k);
        if e <= lo {
            k += 1.0;
        } else if e > hi {
            k -= 1.0;
        } else {
            break;
        }
    }
    let e = f.encode(k);
    (e > lo && e <= hi && k >= f.min && k <= f.max).then_some(e)
}

/// The exact telescoped cost of moving `x` into `bounds` (a leaf box) plus the entropy term:
/// what the search reports for that leaf. `None` when the query forbids the box.
pub fn box_cost<const F: usize, const C: usize>(
    schema: &Schema<F, C>,
    query: &Query<F, C>,
    x: &[f32],
    bounds: &Bounds<C>,
    leaf_entropy: f32,
) -> Option<u32> {
    let l0 = units(query.l0);
    let mut total = entropy_cost(query, leaf_entropy);
    for (j, f) in schema.features().iter().enumerate() {
        let c = feature_cost(f, query.mutability[j], query.cost[j], &query.transitions, l0, x, bounds)?;
        total = total.saturating_add(c);
    }
    Some(total)
}

fn units(w: f32) -> u32 {
    libm::roundf(libm::fminf(w, MAX_UNITS) * SCALE) as u32
}

fn entropy_cost<const F: usize, const C: usize>(query: &Query<F, C>, entropy: f32) -> u32 {
    units(query.entropy * libm::fmaxf(entropy, 0.0))
}

/// One DFS frame: the node, which child is next, and the interval its entry overwrote.
#[derive(Debug, Clone, Copy)]
struct Frame {
    node: NodeIdx,
    next: u8,
    saved: Option<(u16, f32, f32)>,
}

/// The weighted graph for one query over one tree, in caller-owned fixed storage of `N` nodes.
#[derive(Debug, Clone)]
pub struct Graph<const N: usize> {
    /// Cost of the edge parent → node; [`INFINITE`] when absent. For the root: its entry cost.
    edge: [u32; N],
    parent: [NodeIdx; N],
    /// Children of a split (`[0, 0]` for a leaf: the root is nobody's child).
    children: [[NodeIdx; 2]; N],
    /// Per node: true for a leaf, with its class.
    class: [Option<u8>; N],
    len: usize,
}

impl<const N: usize> Default for Graph<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Graph<N> {
    const CHECK: () = assert!(N > 0 && N <= 1 << 16, "graph capacity must fit NodeIdx");

    pub const fn new() -> Self {
        let () = Self::CHECK;
        Graph { edge: [INFINITE; N], parent: [0; N], children: [[0; 2]; N], class: [None; N], len: 0 }
    }

    /// Builds the graph of `tree` for query vector `x` under `query`'s constraints and costs.
    ///
    /// # Errors
    /// [`GraphError::Capacity`] when the tree has more than `N` nodes; [`GraphError::Input`] when
    /// `x` does not match the schema; [`GraphError::Query`] for bad weights or a one-direction
    /// constraint on an unordered categorical feature.
    pub fn build<const F: usize, const C: usize>(
        &mut self,
        tree: &Tree<'_>,
        schema: &Schema<F, C>,
        query: &Query<F, C>,
        x: &[f32],
    ) -> Result<(), GraphError> {
        if tree.len() > N {
            return Err(GraphError::Capacity);
        }
        check_input(tree, schema, x)?;
        query.check(schema).map_err(GraphError::Query)?;
        self.len = tree.len();
        self.edge[..self.len].fill(INFINITE);
        // The root is entered at no feature cost; a leaf root still carries its entropy term.
        self.edge[0] = match tree.node(0) {
            Some(Node::Leaf { entropy, .. }) => entropy_cost(query, entropy),
            _ => 0,
        };
        self.parent[0] = 0;
        for i in 0..self.len {
            let (class, children) = match tree.node(i as NodeIdx) {
                Some(Node::Leaf { class, .. }) => (Some(class), [0, 0]),
                Some(Node::Split { left, right, .. }) => (None, [left, right]),
                None => (None, [0, 0]),
            };
            self.class[i] = class;
            self.children[i] = children;
        }
        self.walk(tree, schema, query, x)
    }

    /// Depth-first pass that maintains the current box and prices each child edge.
    fn walk<const F: usize, const C: usize>(
        &mut self,
        tree: &Tree<'_>,
        schema: &Schema<F, C>,
        query: &Query<F, C>,
        x: &[f32],
    ) -> Result<(), GraphError> {
        let mut owner = [0u16; C];
        for (j, f) in schema.features().iter().enumerate() {
            for c in f.columns() {
                owner[c] = j as u16;
            }
        }
        let l0 = units(query.l0);
        let mut bounds = Bounds::<C>::default();
        let mut stack: heapless::Vec<Frame, { DEPTH + 2 }> = heapless::Vec::new();
        stack.push(Frame { node: 0, next: 0, saved: None }).map_err(|_| GraphError::Capacity)?;
        while let Some(top) = stack.last_mut() {
            let Some(Node::Split { col, threshold, left, right }) = tree.node(top.node) else {
                pop(&mut stack, &mut bounds);
                continue;
            };
            let (child, go_left) = match top.next {
                0 => (left, true),
                1 => (right, false),
                _ => {
                    pop(&mut stack, &mut bounds);
                    continue;
                }
            };
            top.next += 1;
            let parent = top.node;
            let j = *owner.get(col as usize).ok_or(GraphError::Input)? as usize;
            let f = schema.features().get(j).ok_or(GraphError::Input)?;
            let price =
                |b: &Bounds<C>| feature_cost(f, query.mutability[j], query.cost[j], &query.transitions, l0, x, b);
            let before = price(&bounds);
            let (lo, hi) = bounds.interval(col as usize);
            bounds.restrict(col as usize, threshold, go_left);
            let after = price(&bounds);
            let saved = Some((col, lo, hi));
            match (before, after) {
                (Some(b), Some(a)) => {
                    let entry = match tree.node(child) {
                        Some(Node::Leaf { entropy, .. }) => entropy_cost(query, entropy),
                        _ => 0,
                    };
                    self.edge[child as usize] = a.saturating_sub(b).saturating_add(entry);
                    self.parent[child as usize] = parent;
                    stack.push(Frame { node: child, next: 0, saved }).map_err(|_| GraphError::Capacity)?;
                }
                _ => {
                    // Forbidden: leave the subtree unreachable and undo the restriction.
                    self.parent[child as usize] = parent;
                    bounds.set_interval(col as usize, lo, hi);
                }
            }
        }
        Ok(())
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Cost of the edge into `node` from its parent ([`INFINITE`] when absent).
    pub fn edge(&self, node: NodeIdx) -> u32 {
        self.edge.get(node as usize).copied().unwrap_or(INFINITE)
    }

    /// Parent of `node` (`None` for the root).
    pub fn parent(&self, node: NodeIdx) -> Option<NodeIdx> {
        (node != 0 && (node as usize) < self.len).then(|| self.parent[node as usize])
    }

    /// Children of a split node (empty for a leaf).
    pub fn children(&self, node: NodeIdx) -> impl Iterator<Item = NodeIdx> + '_ {
        let kids = if (node as usize) < self.len { self.children[node as usize] } else { [0, 0] };
        kids.into_iter().filter(|&c| c != 0)
    }

    /// Class of a leaf (`None` for a split or an index past the end).
    pub fn leaf_class(&self, node: NodeIdx) -> Option<u8> {
        self.class.get(node as usize).copied().flatten()
    }
}

fn pop<const M: usize, const C: usize>(stack: &mut heapless::Vec<Frame, M>, bounds: &mut Bounds<C>) {
    if let Some(Frame { saved: Some((col, lo, hi)), .. }) = stack.pop() {
        bounds.set_interval(col as usize, lo, hi);
    }
}

fn check_input<const F: usize, const C: usize>(
    tree: &Tree<'_>,
    schema: &Schema<F, C>,
    x: &[f32],
) -> Result<(), GraphError> {
    let cols = schema.columns();
    if x.len() != cols || tree.columns() > cols {
        return Err(GraphError::Input);
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(GraphError::Input);
    }
    let groups_ok =
        schema.features().iter().filter(|f| f.kind == Kind::Categorical).all(|f| schema::category(f, x).is_some());
    if groups_ok { Ok(()) } else { Err(GraphError::Input) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Feature;
    use crate::tree::tests::bytes_of;

    fn leaf(class: u8, entropy: f32) -> Node {
        Node::Leaf { class, purity: 1.0, entropy, samples: 5 }
    }

    fn two_features() -> Schema {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        s.push(Feature::continuous(1, 0.0, 1.0).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.l0 = 0.0;
        s.entropy = 0.0;
        s
    }

    #[test]
    fn test_repeated_splits_are_not_double_counted() {
        // x0 > 0.5 then x0 > 0.7: moving from 0.2 costs 0.5 in all, not 0.3 + 0.5.
        let bytes = bytes_of(&[
            Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
            leaf(0, 0.0),
            Node::Split { col: 0, threshold: 0.7, left: 3, right: 4 },
            leaf(0, 0.0),
            leaf(1, 0.0),
        ]);
        let s = two_features();
        let t = Tree::new(&bytes, 2, 2).unwrap();
        let mut g: Graph<8> = Graph::new();
        g.build(&t, &s, &s.default_query(), &[0.2, 0.0]).unwrap();
        let total = g.edge(2) + g.edge(4);
        assert_eq!(total, units(0.5));
        assert_eq!(g.edge(2), units(0.3));
    }

    #[test]
    fn test_increase_only_edge_is_absent() {
        let bytes = bytes_of(&[Node::Split { col: 1, threshold: 0.5, left: 1, right: 2 }, leaf(1, 0.0), leaf(0, 0.0)]);
        let s = two_features();
        let t = Tree::new(&bytes, 2, 2).unwrap();
        let mut g: Graph<8> = Graph::new();
        g.build(&t, &s, &s.default_query(), &[0.0, 0.8]).unwrap();
        assert_eq!(g.edge(1), INFINITE, "decreasing an increase-only feature");
        assert_eq!(g.edge(2), 0);
    }

    #[test]
    fn test_l0_and_entropy_terms() {
        let bytes = bytes_of(&[Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 }, leaf(0, 0.0), leaf(1, 0.5)]);
        let mut s = two_features();
        s.l0 = 0.25;
        s.entropy = 0.5;
        let t = Tree::new(&bytes, 2, 2).unwrap();
        let mut g: Graph<8> = Graph::new();
        g.build(&t, &s, &s.default_query(), &[0.25, 0.0]).unwrap();
        assert_eq!(g.edge(2), units(0.25) + units(0.25) + units(0.25));
        assert_eq!(g.edge(1), 0);
    }

    #[test]
    fn test_group_switch_costs_once_and_respects_transitions() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::categorical(0, 3).with_cost(2.0)).unwrap();
        s.l0 = 0.0;
        s.entropy = 0.0;
        // col 1 > 0.5 (category 1), then col 2 <= 0.5 (still category 1) on the right.
        let bytes = bytes_of(&[
            Node::Split { col: 1, threshold: 0.5, left: 1, right: 2 },
            leaf(0, 0.0),
            Node::Split { col: 2, threshold: 0.5, left: 3, right: 4 },
            leaf(1, 0.0),
            leaf(0, 0.0),
        ]);
        let t = Tree::new(&bytes, 3, 2).unwrap();
        let x = [1.0, 0.0, 0.0];
        let mut g: Graph<8> = Graph::new();
        let mut q = s.default_query();
        g.build(&t, &s, &q, &x).unwrap();
        assert_eq!(g.edge(2), units(2.0));
        assert_eq!(g.edge(3), 0, "already switched; no second charge");
        assert_eq!(g.edge(4), INFINITE, "a one-hot vector cannot have two hot columns");
        q.set_transition(&s, 0, 0, 1, false).unwrap();
        g.build(&t, &s, &q, &x).unwrap();
        assert_eq!(g.edge(2), INFINITE);
    }

    #[test]
    fn test_ordered_group_edges_follow_the_direction() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::ordinal(0, 4).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.l0 = 0.0;
        s.entropy = 0.0;
        // Left of "col 1 <= 0.5" excludes category 1; then "col 0 <= 0.5" splits {0, 2, 3}
        // into {2, 3} (left) and {0} (right).
        let bytes = bytes_of(&[
            Node::Split { col: 1, threshold: 0.5, left: 1, right: 2 },
            Node::Split { col: 0, threshold: 0.5, left: 3, right: 4 },
            leaf(0, 0.0),
            leaf(1, 0.0),
            leaf(1, 0.0),
        ]);
        let t = Tree::new(&bytes, 4, 2).unwrap();
        let x = [0.0, 1.0, 0.0, 0.0];
        let mut g: Graph<8> = Graph::new();
        let mut q = s.default_query();
        g.build(&t, &s, &q, &x).unwrap();
        assert_eq!(g.edge(3), 0, "categories 2 and 3 are above 1");
        assert_eq!(g.edge(4), INFINITE, "category 0 is below 1");
        q.mutability[0] = Mutability::DecreaseOnly;
        g.build(&t, &s, &q, &x).unwrap();
        assert_eq!(g.edge(3), INFINITE);
        assert_ne!(g.edge(4), INFINITE);
        // The box {2, 3} stays reachable when only 1 -> 3 is forbidden, not when 1 -> 2 is too.
        q.mutability[0] = Mutability::IncreaseOnly;
        q.set_transition(&s, 0, 1, 3, false).unwrap();
        g.build(&t, &s, &q, &x).unwrap();
        assert_ne!(g.edge(3), INFINITE);
        q.set_transition(&s, 0, 1, 2, false).unwrap();
        g.build(&t, &s, &q, &x).unwrap();
        assert_eq!(g.edge(3), INFINITE);
    }

    #[test]
    fn test_direction_on_unordered_group_is_a_query_error() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::categorical(0, 3)).unwrap();
        let bytes = bytes_of(&[leaf(0, 0.0)]);
        let t = Tree::new(&bytes, 3, 2).unwrap();
        let mut q = s.default_query();
        q.mutability[0] = Mutability::IncreaseOnly;
        let mut g: Graph<1> = Graph::new();
        let err = g.build(&t, &s, &q, &[1.0, 0.0, 0.0]).unwrap_err();
        assert_eq!(err, GraphError::Query(SchemaError::Unordered { feature: 0 }));
    }

    #[test]
    fn test_integer_box_without_whole_value_is_absent() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::integer(0, 0.0, 10.0)).unwrap();
        // (0.31, 0.39] holds no multiple of 0.1.
        let bytes = bytes_of(&[
            Node::Split { col: 0, threshold: 0.31, left: 1, right: 2 },
            leaf(0, 0.0),
            Node::Split { col: 0, threshold: 0.39, left: 3, right: 4 },
            leaf(1, 0.0),
            leaf(0, 0.0),
        ]);
        let t = Tree::new(&bytes, 1, 2).unwrap();
        let mut g: Graph<8> = Graph::new();
        g.build(&t, &s, &s.default_query(), &[0.0]).unwrap();
        assert_eq!(g.edge(3), INFINITE);
        assert_ne!(g.edge(4), INFINITE);
    }

    #[test]
    fn test_bad_input_is_an_error() {
        let bytes = bytes_of(&[leaf(0, 0.0)]);
        let s = two_features();
        let t = Tree::new(&bytes, 2, 2).unwrap();
        let mut g: Graph<1> = Graph::new();
        assert_eq!(g.build(&t, &s, &s.default_query(), &[0.0]), Err(GraphError::Input));
        assert_eq!(g.build(&t, &s, &s.default_query(), &[0.0, f32::NAN]), Err(GraphError::Input));
        let mut q = s.default_query();
        q.cost[0] = -1.0;
        assert_eq!(g.build(&t, &s, &q, &[0.0, 0.0]), Err(GraphError::Query(SchemaError::Value { feature: 0 })));
        let big = bytes_of(&[Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 }, leaf(0, 0.0), leaf(1, 0.0)]);
        let t = Tree::new(&big, 2, 2).unwrap();
        assert_eq!(g.build(&t, &s, &s.default_query(), &[0.0, 0.0]), Err(GraphError::Capacity));
    }
}
