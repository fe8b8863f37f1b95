//! The local surrogate `g`: a CART decision tree grown with the **entropy** criterion on the
//! latent neighbours of a query, labelled by the black box, over mutable columns only.
//!
//! Growth is best-first (the open leaf whose best split gains the most information is split
//! next) under a depth bound, a minimum leaf size and a node budget, so a small budget still
//! yields the most informative tree. Columns are presorted once; every split stably partitions
//! each column's order, so a level costs `O(rows · columns)` and nothing is re-sorted. The tree is
//! emitted as `cent_nostd::tree` records: the host and the device walk the very same bytes.

use cent_nostd::tree::{Node, RECORD_LEN};
use thiserror::Error;

/// The regulariser `R(g)`: bounds on the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeParams {
    pub max_depth: usize,
    pub min_leaf: usize,
    /// Node budget (at most `cent_nostd::capacity::NODES`).
    pub max_nodes: usize,
}

impl Default for TreeParams {
    fn default() -> Self {
        TreeParams { max_depth: 8, min_leaf: 5, max_nodes: 127 }
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum SurrogateError {
    #[error("tree parameters invalid: max_depth 1..={max_depth_cap}, min_leaf >= 1, max_nodes 1..={nodes_cap}")]
    Params { max_depth_cap: usize, nodes_cap: usize },
    #[error("no training rows")]
    Empty,
    #[error("{rows} label(s) for {expected} row(s)")]
    Labels { rows: usize, expected: usize },
    #[error("label {label} is not below the class count {classes}")]
    Class { label: usize, classes: usize },
    #[error("non-finite value in row {row}, column {col}")]
    NonFinite { row: usize, col: usize },
    #[error("{classes} classes: a tree leaf holds at most 256")]
    TooManyClasses { classes: usize },
}

impl TreeParams {
    /// Checks the bounds against the core's capacities.
    ///
    /// # Errors
    /// [`SurrogateError::Params`] when a bound is out of range.
    pub fn check(self) -> Result<Self, SurrogateError> {
        let nodes_cap = cent_nostd::capacity::NODES;
        let max_depth_cap = cent_nostd::capacity::DEPTH;
        let ok = (1..=max_depth_cap).contains(&self.max_depth)
            && self.min_leaf >= 1
            && (1..=nodes_cap).contains(&self.max_nodes);
        if ok { Ok(self) } else { Err(SurrogateError::Params { max_depth_cap, nodes_cap }) }
    }
}

/// A fitted surrogate: node records plus the columns it may split on.
#[derive(Debug, Clone, PartialEq)]
pub struct Surrogate {
    pub bytes: Vec<u8>,
    pub classes: usize,
    pub columns: usize,
}

impl Surrogate {
    /// A validated view for the core.
    ///
    /// # Panics
    /// Never in practice: the learner only emits valid records (checked by tests).
    pub fn tree(&self) -> cent_nostd::tree::Tree<'_> {
        cent_nostd::tree::Tree::new(&self.bytes, self.columns, self.classes).expect("learner emits valid trees")
    }

    pub fn nodes(&self) -> usize {
        self.bytes.len() / RECORD_LEN
    }

    /// Predicted class of each row (row-major, `columns` wide).
    pub fn predict(&self, rows: &[f32]) -> Vec<usize> {
        let tree = self.tree();
        rows.chunks_exact(self.columns)
            .map(|r| match tree.route(r).ok().and_then(|l| tree.node(l)) {
                Some(Node::Leaf { class, .. }) => class as usize,
                _ => 0,
            })
            .collect()
    }

    /// Share of rows where the surrogate agrees with `labels` (the black box's classes).
    pub fn fidelity(&self, rows: &[f32], labels: &[usize]) -> f64 {
        let pred = self.predict(rows);
        if pred.is_empty() {
            return 0.0;
        }
        pred.iter().zip(labels).filter(|(a, b)| a == b).count() as f64 / pred.len() as f64
    }
}

/// The best split found for an open leaf.
#[derive(Debug, Clone, Copy)]
struct Split {
    col: usize,
    threshold: f32,
    /// Rows going left (they come first in the segment after partitioning).
    left: usize,
    /// Information gain times rows (higher is better).
    gain: f64,
}

/// A node under construction: its segment of the per-column orders and its depth.
#[derive(Debug, Clone, Copy)]
struct Open {
    node: usize,
    start: usize,
    end: usize,
    depth: usize,
    split: Option<Split>,
}

/// Grows a tree on `rows` (row-major, `columns` wide) with `labels` in `0..classes`, splitting
/// only on the columns where `allowed[col]` is true.
///
/// # Errors
/// [`SurrogateError`] for bad parameters, empty data, mismatched labels or non-finite values.
pub fn fit(
    rows: &[f32],
    columns: usize,
    labels: &[usize],
    classes: usize,
    allowed: &[bool],
    params: TreeParams,
) -> Result<Surrogate, SurrogateError> {
    let params = params.check()?;
    let n = check_data(rows, columns, labels, classes)?;
    let mut g = Grower::new(rows, columns, labels, classes, allowed, params, n);
    g.grow();
    Ok(Surrogate { bytes: g.emit(), classes, columns })
}

fn check_data(rows: &[f32], columns: usize, labels: &[usize], classes: usize) -> Result<usize, SurrogateError> {
    if columns == 0 || rows.is_empty() {
        return Err(SurrogateError::Empty);
    }
    if classes > usize::from(u8::MAX) + 1 {
        return Err(SurrogateError::TooManyClasses { classes });
    }
    let n = rows.len() / columns;
    if labels.len() != n || !rows.len().is_multiple_of(columns) {
        return Err(SurrogateError::Labels { rows: labels.len(), expected: n });
    }
    if let Some(&label) = labels.iter().find(|&&l| l >= classes) {
        return Err(SurrogateError::Class { label, classes });
    }
    if let Some(i) = rows.iter().position(|v| !v.is_finite()) {
        return Err(SurrogateError::NonFinite { row: i / columns, col: i % columns });
    }
    Ok(n)
}

struct Grower<'a> {
    rows: &'a [f32],
    columns: usize,
    labels: &'a [usize],
    classes: usize,
    /// Columns that may be split on.
    candidates: Vec<usize>,
    params: TreeParams,
    /// Per candidate column, row indices; each open node owns the same segment in all of them.
    order: Vec<Vec<u32>>,
    /// Per candidate column, the column's values and the labels in `order`'s order (kept in
    /// step by every partition), so a split scan reads two contiguous arrays.
    values: Vec<Vec<f32>>,
    sorted_labels: Vec<Vec<u8>>,
    /// `x log2 x` for `x` in `0..=n`.
    xlogx: Vec<f64>,
    nodes: Vec<Node>,
    goes_left: Vec<bool>,
    scratch: Vec<u32>,
    scratch_values: Vec<f32>,
    scratch_labels: Vec<u8>,
}

impl<'a> Grower<'a> {
    fn new(
        rows: &'a [f32],
        columns: usize,
        labels: &'a [usize],
        classes: usize,
        allowed: &[bool],
        params: TreeParams,
        n: usize,
    ) -> Self {
        let candidates: Vec<usize> = (0..columns).filter(|&c| allowed.get(c).copied().unwrap_or(false)).collect();
        let order: Vec<Vec<u32>> = candidates.iter().map(|&c| presort(rows, columns, c, n)).collect();
        let values = candidates
            .iter()
            .zip(&order)
            .map(|(&c, o)| o.iter().map(|&r| rows[r as usize * columns + c]).collect())
            .collect();
        // `check_data` bounds labels by `classes`, which the tree format bounds by `u8`.
        let sorted_labels = order.iter().map(|o| o.iter().map(|&r| labels[r as usize] as u8).collect()).collect();
        let xlogx = (0..=n).map(|x| if x == 0 { 0.0 } else { x as f64 * (x as f64).log2() }).collect();
        Grower {
            rows,
            columns,
            labels,
            classes,
            candidates,
            params,
            order,
            values,
            sorted_labels,
            xlogx,
            nodes: Vec::new(),
            goes_left: vec![false; n],
            scratch: Vec::with_capacity(n),
            scratch_values: Vec::with_capacity(n),
            scratch_labels: Vec::with_capacity(n),
        }
    }

    fn value(&self, row: u32, col: usize) -> f32 {
        self.rows[row as usize * self.columns + col]
    }

    /// Rows of a segment, taken from the first order (or `0..n` with no candidate columns).
    fn segment(&self, start: usize, end: usize) -> Vec<u32> {
        match self.order.first() {
            Some(o) => o[start..end].to_vec(),
            None => (start as u32..end as u32).collect(),
        }
    }

    fn counts(&self, rows: &[u32]) -> Vec<usize> {
        let mut c = vec![0; self.classes];
        for &r in rows {
            c[self.labels[r as usize]] += 1;
        }
        c
    }

    /// `n · H(counts)` in bits.
    fn weighted_entropy(&self, counts: &[usize], n: usize) -> f64 {
        self.xlogx[n] - counts.iter().map(|&c| self.xlogx[c]).sum::<f64>()
    }

    fn grow(&mut self) {
        let n = self.goes_left.len();
        self.nodes.push(self.leaf(0, n));
        let mut open = vec![Open { node: 0, start: 0, end: n, depth: 0, split: None }];
        open[0].split = self.best_split(&open[0]);
        while self.nodes.len() + 2 <= self.params.max_nodes {
            let best = open
                .iter()
                .enumerate()
                .filter_map(|(i, o)| o.split.map(|s| (i, s.gain)))
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            let Some((i, _)) = best else { break };
            let o = open.swap_remove(i);
            for child in self.split(o) {
                let mut child = child;
                child.split = self.best_split(&child);
                open.push(child);
            }
        }
    }

    fn leaf(&self, start: usize, end: usize) -> Node {
        let rows = self.segment(start, end);
        let counts = self.counts(&rows);
        let n = rows.len().max(1);
        let (class, top) = counts.iter().enumerate().fold((0, 0), |b, (k, &c)| if c > b.1 { (k, c) } else { b });
        Node::Leaf {
            class: class as u8,
            purity: top as f32 / n as f32,
            entropy: (self.weighted_entropy(&counts, rows.len()) / n as f64) as f32,
            samples: rows.len().min(u16::MAX as usize) as u16,
        }
    }

    fn best_split(&self, o: &Open) -> Option<Split> {
        let m = o.end - o.start;
        if o.depth >= self.params.max_depth || m < 2 * self.params.min_leaf {
            return None;
        }
        let total = self.counts(&self.segment(o.start, o.end));
        let parent = self.weighted_entropy(&total, m);
        if parent <= 1e-12 {
            return None;
        }
        let mut best: Option<Split> = None;
        for (k, &col) in self.candidates.iter().enumerate() {
            let values = &self.values[k][o.start..o.end];
            let labels = &self.sorted_labels[k][o.start..o.end];
            if let Some(s) = self.best_split_on(col, values, labels, &total, parent)
                && best.is_none_or(|b| s.gain > b.gain + 1e-12)
            {
                best = Some(s);
            }
        }
        best
    }

    /// Scans one column's sorted segment (its values and labels) for the threshold with the
    /// largest gain.
    fn best_split_on(&self, col: usize, values: &[f32], labels: &[u8], total: &[usize], parent: f64) -> Option<Split> {
        let m = values.len();
        // A constant segment has no threshold.
        if values.first() == values.last() {
            return None;
        }
        let mut left = vec![0usize; self.classes];
        let mut right = total.to_vec();
        let mut best: Option<Split> = None;
        for i in 0..m - 1 {
            let label = usize::from(labels[i]);
            left[label] += 1;
            right[label] -= 1;
            let nl = i + 1;
            let (v, next) = (values[i], values[i + 1]);
            if v == next || nl < self.params.min_leaf || m - nl < self.params.min_leaf {
                continue;
            }
            let child = self.weighted_entropy(&left, nl) + self.weighted_entropy(&right, m - nl);
            let gain = parent - child;
            if gain > 1e-9 && best.is_none_or(|b| gain > b.gain + 1e-12) {
                let threshold = midpoint(v, next);
                best = Some(Split { col, threshold, left: nl, gain });
            }
        }
        best
    }

    /// Splits an open node: writes the split record and its two leaves, partitions the orders.
    fn split(&mut self, o: Open) -> [Open; 2] {
        let s = o.split.expect("only nodes with a split are chosen");
        let k = self.candidates.iter().position(|&c| c == s.col).expect("split column is a candidate");
        for &r in &self.order[k][o.start..o.end] {
            self.goes_left[r as usize] = self.value(r, s.col) <= s.threshold;
        }
        for k in 0..self.order.len() {
            self.partition(k, o.start, o.end);
        }
        let mid = o.start + s.left;
        let (left, right) = (self.nodes.len(), self.nodes.len() + 1);
        self.nodes[o.node] =
            Node::Split { col: s.col as u8, threshold: s.threshold, left: left as u16, right: right as u16 };
        self.nodes.push(self.leaf(o.start, mid));
        self.nodes.push(self.leaf(mid, o.end));
        let d = o.depth + 1;
        [
            Open { node: left, start: o.start, end: mid, depth: d, split: None },
            Open { node: right, start: mid, end: o.end, depth: d, split: None },
        ]
    }

    /// Stable partition of one order's segment (and its values and labels): rows going left
    /// first.
    fn partition(&mut self, k: usize, start: usize, end: usize) {
        self.scratch.clear();
        self.scratch_values.clear();
        self.scratch_labels.clear();
        let seg = &mut self.order[k][start..end];
        let values = &mut self.values[k][start..end];
        let labels = &mut self.sorted_labels[k][start..end];
        let mut w = 0;
        for i in 0..seg.len() {
            let (r, v, l) = (seg[i], values[i], labels[i]);
            if self.goes_left[r as usize] {
                seg[w] = r;
                values[w] = v;
                labels[w] = l;
                w += 1;
            } else {
                self.scratch.push(r);
                self.scratch_values.push(v);
                self.scratch_labels.push(l);
            }
        }
        seg[w..].copy_from_slice(&self.scratch);
        values[w..].copy_from_slice(&self.scratch_values);
        labels[w..].copy_from_slice(&self.scratch_labels);
    }

    fn emit(&self) -> Vec<u8> {
        self.nodes.iter().flat_map(|n| n.to_bytes()).collect()
    }
}

/// Row indices sorted by column `c` (ties by row index). Indicator columns (only 0 and 1, the
/// one-hot groups) are split in one pass; others are sorted on extracted keys.
fn presort(rows: &[f32], columns: usize, c: usize, n: usize) -> Vec<u32> {
    let value = |r: usize| rows[r * columns + c];
    if (0..n).all(|r| value(r) == 0.0 || value(r) == 1.0) {
        let zeros = (0..n as u32).filter(|&r| value(r as usize) == 0.0);
        let ones = (0..n as u32).filter(|&r| value(r as usize) == 1.0);
        return zeros.chain(ones).collect();
    }
    let mut keyed: Vec<(f32, u32)> = (0..n).map(|r| (value(r), r as u32)).collect();
    keyed.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, r)| r).collect()
}

/// A threshold strictly between `a < b` that `a` satisfies (`a <= t < b`), also when the
/// midpoint rounds up to `b`.
fn midpoint(a: f32, b: f32) -> f32 {
    let m = a + (b - a) / 2.0;
    if m < b { m } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_learns_a_threshold_with_entropy() {
        // x0 decides the class; x1 is noise.
        let rows: Vec<f32> = (0..40).flat_map(|i| [i as f32 / 40.0, ((i * 7) % 5) as f32 / 5.0]).collect();
        let labels: Vec<usize> = (0..40).map(|i| usize::from(i >= 25)).collect();
        let s =
            fit(&rows, 2, &labels, 2, &[true, true], TreeParams { max_depth: 3, min_leaf: 1, max_nodes: 15 }).unwrap();
        assert_eq!(s.fidelity(&rows, &labels), 1.0);
        match s.tree().node(0).unwrap() {
            Node::Split { col, threshold, .. } => {
                assert_eq!(col, 0);
                assert!(threshold > 24.0 / 40.0 && threshold < 25.0 / 40.0);
            }
            Node::Leaf { .. } => panic!("root should split"),
        }
        assert_eq!(s.nodes(), 3, "a pure split needs no more nodes");
    }

    #[test]
    fn test_disallowed_columns_are_never_used() {
        let rows: Vec<f32> = (0..60).flat_map(|i| [i as f32, (i % 2) as f32, (i % 3) as f32]).collect();
        let labels: Vec<usize> = (0..60).map(|i| usize::from(i >= 30)).collect();
        let s = fit(&rows, 3, &labels, 2, &[false, true, true], TreeParams::default()).unwrap();
        let tree = s.tree();
        for i in 0..tree.len() as u16 {
            if let Some(Node::Split { col, .. }) = tree.node(i) {
                assert_ne!(col, 0);
            }
        }
    }

    #[test]
    fn test_budget_depth_and_leaf_size_hold() {
        // A checkerboard needs many nodes; the budget caps them.
        let rows: Vec<f32> = (0..400).flat_map(|i| [(i % 20) as f32, (i / 20) as f32]).collect();
        let labels: Vec<usize> = (0..400).map(|i| (i % 20 + i / 20) % 2).collect();
        let p = TreeParams { max_depth: 6, min_leaf: 3, max_nodes: 31 };
        let s = fit(&rows, 2, &labels, 2, &[true, true], p).unwrap();
        assert!(s.nodes() <= 31);
        let tree = s.tree();
        for i in 0..tree.len() as u16 {
            if let Some(Node::Leaf { samples, .. }) = tree.node(i) {
                assert!(samples as usize >= 3);
            }
        }
        let mut depth = vec![0usize; tree.len()];
        for i in 0..tree.len() as u16 {
            if let Some(Node::Split { left, right, .. }) = tree.node(i) {
                depth[left as usize] = depth[i as usize] + 1;
                depth[right as usize] = depth[i as usize] + 1;
            }
        }
        assert!(depth.iter().all(|&d| d <= 6));
    }

    #[test]
    fn test_multi_class_leaf_entropy() {
        let rows: Vec<f32> = vec![0.0, 0.0, 0.0, 0.0];
        let labels = vec![0, 1, 2, 2];
        let s = fit(&rows, 1, &labels, 3, &[true], TreeParams::default()).unwrap();
        match s.tree().node(0).unwrap() {
            Node::Leaf { class, purity, entropy, samples } => {
                assert_eq!((class, samples), (2, 4));
                assert!((purity - 0.5).abs() < 1e-4);
                assert!((entropy - 1.5).abs() < 1e-3);
            }
            Node::Split { .. } => panic!("constant column cannot split"),
        }
    }

    #[test]
    fn test_bad_input_errors() {
        let p = TreeParams::default();
        assert_eq!(fit(&[], 1, &[], 2, &[true], p), Err(SurrogateError::Empty));
        assert_eq!(fit(&[0.0, 1.0], 1, &[0], 2, &[true], p), Err(SurrogateError::Labels { rows: 1, expected: 2 }));
        assert_eq!(fit(&[0.0], 1, &[2], 2, &[true], p), Err(SurrogateError::Class { label: 2, classes: 2 }));
        assert_eq!(fit(&[f32::NAN], 1, &[0], 2, &[true], p), Err(SurrogateError::NonFinite { row: 0, col: 0 }));
        assert!(fit(&[0.0], 1, &[0], 2, &[true], TreeParams { max_nodes: 0, ..p }).is_err());
    }

    #[test]
    fn test_midpoint_stays_below_upper_value() {
        let a = 1.0f32;
        let b = f32::from_bits(a.to_bits() + 1);
        let t = midpoint(a, b);
        assert!(a <= t && t < b);
    }
}
