//! The local surrogate `g`: a CART decision tree grown with the **entropy** criterion on the
//! latent neighbours of a query, labelled by the black box, over mutable columns only.
//!
//! Growth is best-first (the open leaf whose best split gains the most information is split
//! next) under a depth bound, a minimum leaf size and a node budget, so a small budget still
//! yields the most informative tree. Indicator columns (only 0 and 1: one-hot groups, binary
//! features) have a single threshold, so they are judged from per-node class counts: a row adds
//! to the counts of the few indicators set in it, and a split tallies only its smaller child
//! (the larger one is the parent minus it). Other columns are presorted once and every split
//! stably partitions their orders, so nothing is re-sorted. The tree is
//! emitted as `cent_nostd::tree` records: the host and the device walk the very same bytes.

use cent_nostd::tree::{Node, RECORD_LEN};
use std::borrow::Cow;
use std::sync::OnceLock;
use thiserror::Error;

/// The regulariser `R(g)`: bounds on the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeParams {
    pub max_depth: usize,
    pub min_leaf: usize,
    /// Node budget (at most [`crate::profile::NODES`]).
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
    #[error("{columns} columns: a tree splits on at most {cap}")]
    TooManyColumns { columns: usize, cap: usize },
    #[error("{weights} weight(s) for {rows} row(s), each at least 1, {cap} in all at most")]
    Weights { weights: usize, rows: usize, cap: u64 },
}

impl TreeParams {
    /// Checks the bounds against the core's capacities.
    ///
    /// # Errors
    /// [`SurrogateError::Params`] when a bound is out of range.
    pub fn check(self) -> Result<Self, SurrogateError> {
        let nodes_cap = crate::profile::NODES;
        let max_depth_cap = cent_nostd::capacity::host::DEPTH;
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
        crate::profile::tree(&self.bytes, self.columns, self.classes).expect("learner emits valid trees")
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
    /// Information gain times rows (higher is better).
    gain: f64,
}

/// A node under construction: its segment of the row orders, its depth, its rows (weighted)
/// and their class counts (in all, and among the rows where each indicator column is 1).
#[derive(Debug, Clone)]
struct Open {
    node: usize,
    start: usize,
    end: usize,
    /// Rows, each counted by its weight: the sum of `counts`.
    size: usize,
    depth: usize,
    split: Option<Split>,
    counts: Vec<usize>,
    /// `[indicator][class]`: rows of the node with that indicator set, by class.
    ones: Vec<u32>,
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
    fit_weighted(rows, columns, labels, &vec![1; rows.len() / columns.max(1)], classes, allowed, params)
}

/// [`fit`] on distinct rows, each standing for `weights[i]` equal rows: the very tree (the
/// same bytes) [`fit`] grows on the rows repeated that many times, for the work of the
/// distinct ones. Counts, sizes, `min_leaf` and the leaves' samples are in weighted rows.
///
/// # Errors
/// As [`fit`], and [`SurrogateError::Weights`] when there is not one weight of at least 1 per
/// row, or the weights add up to more than `u32::MAX`.
pub fn fit_weighted(
    rows: &[f32],
    columns: usize,
    labels: &[usize],
    weights: &[u32],
    classes: usize,
    allowed: &[bool],
    params: TreeParams,
) -> Result<Surrogate, SurrogateError> {
    let params = params.check()?;
    let n = check_data(rows, columns, labels, classes)?;
    let cap = u64::from(u32::MAX);
    if weights.len() != n || weights.contains(&0) || weights.iter().map(|&w| u64::from(w)).sum::<u64>() > cap {
        return Err(SurrogateError::Weights { weights: weights.len(), rows: n, cap });
    }
    let mut g = Grower::new(rows, columns, labels, weights, classes, allowed, params);
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
    let cap = crate::profile::COLUMNS;
    if columns > cap {
        return Err(SurrogateError::TooManyColumns { columns, cap });
    }
    let n = rows.len() / columns;
    if labels.len() != n || !rows.len().is_multiple_of(columns) {
        return Err(SurrogateError::Labels { rows: labels.len(), expected: n });
    }
    if let Some(&label) = labels.iter().find(|&&l| l >= classes) {
        return Err(SurrogateError::Class { label, classes });
    }
    // A branch-free pass (vectorised) first; the position only when something is wrong.
    if rows.iter().fold(false, |bad, v| bad | !v.is_finite())
        && let Some(i) = rows.iter().position(|v| !v.is_finite())
    {
        return Err(SurrogateError::NonFinite { row: i / columns, col: i % columns });
    }
    Ok(n)
}

/// How a candidate column is searched for its best threshold.
#[derive(Debug, Clone, Copy)]
enum Scan {
    /// Values other than 0 and 1: a presorted order (index into the numeric orders).
    Numeric(usize),
    /// Only 0 and 1 (one-hot groups, binary features): one threshold, decided by class counts
    /// (index into the indicator columns).
    Indicator(usize),
}

struct Grower<'a> {
    rows: &'a [f32],
    columns: usize,
    labels: Vec<u8>,
    /// How many equal rows each row stands for (1 each for [`fit`]).
    weights: &'a [u32],
    classes: usize,
    params: TreeParams,
    /// Columns that may be split on, in column order (the order ties are broken in).
    candidates: Vec<(usize, Scan)>,
    /// Row indices; each open node owns a segment, the same in `order` below.
    members: Vec<u32>,
    /// Per numeric column, its rows sorted by the column within each node's segment, each as
    /// one integer: the value's bits above the row index. A split scan reads one contiguous
    /// array, and a partition moves one integer per row.
    order: Vec<Vec<u64>>,
    indicators: usize,
    /// Per row, the indicator columns set in it (compressed rows: `ones_at[r]..ones_at[r + 1]`).
    ones_at: Vec<usize>,
    ones_of: Vec<u32>,
    /// `x log2 x` for `x` in `0..=` the weighted row count.
    xlogx: Cow<'static, [f64]>,
    nodes: Vec<Node>,
    goes_left: Vec<bool>,
    scratch: Vec<u32>,
    scratch_keys: Vec<u64>,
    left: Vec<usize>,
    right: Vec<usize>,
}

impl<'a> Grower<'a> {
    fn new(
        rows: &'a [f32],
        columns: usize,
        labels: &[usize],
        weights: &'a [u32],
        classes: usize,
        allowed: &[bool],
        params: TreeParams,
    ) -> Self {
        let n = weights.len();
        let total = weights.iter().map(|&w| w as usize).sum::<usize>();
        // `check_data` bounds labels by `classes`, which the tree format bounds by `u8`.
        let labels: Vec<u8> = labels.iter().map(|&l| l as u8).collect();
        // Every pass below walks the rows in memory order (a column-wise walk of row-major data
        // would touch a cache line per value). Each row's non-zero columns are listed once
        // (one-hot rows are mostly zeros): a column is an indicator when every non-zero value
        // in it is 1, and a row's ones are its listed indicator columns.
        let (mut nonzero_at, mut nonzero_cols) = (Vec::with_capacity(n + 1), Vec::new());
        nonzero_at.push(0);
        let mut scratch = Vec::new();
        for row in rows.chunks_exact(columns) {
            let count = crate::layers::nonzero_inputs(row, &mut scratch);
            nonzero_cols.extend_from_slice(&scratch[..count]);
            nonzero_at.push(nonzero_cols.len());
        }
        let mut indicator = allowed.to_vec();
        indicator.resize(columns, false);
        for (r, row) in rows.chunks_exact(columns).enumerate() {
            for &c in &nonzero_cols[nonzero_at[r]..nonzero_at[r + 1]] {
                indicator[c as usize] &= row[c as usize] == 1.0;
            }
        }
        let (mut candidates, mut numeric, mut indicator_cols) = (Vec::new(), Vec::new(), Vec::new());
        // Column -> its index among the indicator columns (`u32::MAX` for the others).
        let mut indicator_index = vec![u32::MAX; columns];
        for c in (0..columns).filter(|&c| allowed.get(c).copied().unwrap_or(false)) {
            if indicator[c] {
                candidates.push((c, Scan::Indicator(indicator_cols.len())));
                indicator_index[c] = indicator_cols.len() as u32;
                indicator_cols.push(c);
            } else {
                candidates.push((c, Scan::Numeric(numeric.len())));
                numeric.push(c);
            }
        }
        let (mut ones_at, mut ones_of) = (Vec::with_capacity(n + 1), Vec::new());
        ones_at.push(0);
        for r in 0..n {
            let listed = nonzero_cols[nonzero_at[r]..nonzero_at[r + 1]].iter();
            ones_of.extend(listed.map(|&c| indicator_index[c as usize]).filter(|&j| j != u32::MAX));
            ones_at.push(ones_of.len());
        }
        // Each numeric column's rows by value: one integer per row, an order-preserving form
        // of the value above the row id, sorted by the value alone. Rows of equal value may
        // come in any order: a threshold never falls between them, and a node's class counts
        // after a run of them do not depend on their order, so the tree is the same. Sorted by
        // the value alone, a large run of equal values (an integer feature with few levels, a
        // capital gain that is mostly zero) is set aside in one pass.
        let mut order = Vec::with_capacity(numeric.len());
        for &c in &numeric {
            let mut keys: Vec<u64> = rows
                .chunks_exact(columns)
                .enumerate()
                .map(|(r, row)| (u64::from(ordered_bits(row[c])) << 32) | r as u64)
                .collect();
            keys.sort_unstable_by_key(|&k| (k >> 32) as u32);
            // From the sort's order-preserving form back to the value's own bits.
            for key in &mut keys {
                *key = (u64::from(value_bits((*key >> 32) as u32)) << 32) | (*key & u64::from(u32::MAX));
            }
            order.push(keys);
        }
        let xlogx = match SHARED_XLOGX.get_or_init(|| xlogx_table(SHARED_ROWS)).get(..=total) {
            Some(shared) => Cow::Borrowed(shared),
            None => Cow::Owned(xlogx_table(total)),
        };
        Grower {
            rows,
            columns,
            labels,
            weights,
            classes,
            params,
            candidates,
            members: (0..n as u32).collect(),
            order,
            indicators: indicator_cols.len(),
            ones_at,
            ones_of,
            xlogx,
            nodes: Vec::new(),
            goes_left: vec![false; n],
            scratch: Vec::with_capacity(n),
            scratch_keys: Vec::with_capacity(n),
            left: vec![0; classes],
            right: vec![0; classes],
        }
    }

    fn value(&self, row: u32, col: usize) -> f32 {
        self.rows[row as usize * self.columns + col]
    }

    /// Weighted class counts of a segment, in all and per indicator column.
    fn tally(&self, start: usize, end: usize) -> (Vec<usize>, Vec<u32>) {
        let mut counts = vec![0; self.classes];
        let mut ones = vec![0; self.indicators * self.classes];
        for &r in &self.members[start..end] {
            let (label, w) = (usize::from(self.labels[r as usize]), self.weights[r as usize]);
            counts[label] += w as usize;
            for &j in &self.ones_of[self.ones_at[r as usize]..self.ones_at[r as usize + 1]] {
                ones[j as usize * self.classes + label] += w;
            }
        }
        (counts, ones)
    }

    /// `n · H(counts)` in bits.
    fn weighted_entropy(&self, counts: &[usize], n: usize) -> f64 {
        self.xlogx[n] - counts.iter().map(|&c| self.xlogx[c]).sum::<f64>()
    }

    fn grow(&mut self) {
        let n = self.goes_left.len();
        let (counts, ones) = self.tally(0, n);
        let size = counts.iter().sum();
        self.nodes.push(self.leaf(&counts, size));
        let mut root = Open { node: 0, start: 0, end: n, size, depth: 0, split: None, counts, ones };
        root.split = self.best_split(&root);
        let mut open = vec![root];
        while self.nodes.len() + 2 <= self.params.max_nodes {
            let best = open
                .iter()
                .enumerate()
                .filter_map(|(i, o)| o.split.map(|s| (i, s.gain)))
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            let Some((i, _)) = best else { break };
            let o = open.swap_remove(i);
            for mut child in self.split(o) {
                child.split = self.best_split(&child);
                open.push(child);
            }
        }
    }

    fn leaf(&self, counts: &[usize], m: usize) -> Node {
        let n = m.max(1);
        let (class, top) = counts.iter().enumerate().fold((0, 0), |b, (k, &c)| if c > b.1 { (k, c) } else { b });
        Node::Leaf {
            class: class as u8,
            purity: top as f32 / n as f32,
            entropy: (self.weighted_entropy(counts, m) / n as f64) as f32,
            samples: m.min(u16::MAX as usize) as u16,
        }
    }

    /// Whether a node of this depth, class counts and size can have a split at all (the
    /// checks [`Grower::best_split`] starts with).
    fn may_split(&self, depth: usize, counts: &[usize], m: usize) -> bool {
        depth < self.params.max_depth && m >= 2 * self.params.min_leaf && self.weighted_entropy(counts, m) > 1e-12
    }

    fn best_split(&mut self, o: &Open) -> Option<Split> {
        let m = o.size;
        if !self.may_split(o.depth, &o.counts, m) {
            return None;
        }
        let parent = self.weighted_entropy(&o.counts, m);
        let mut best: Option<Split> = None;
        for i in 0..self.candidates.len() {
            let found = match self.candidates[i] {
                (col, Scan::Numeric(k)) => self.best_numeric_split(col, k, o, parent),
                (col, Scan::Indicator(j)) => self.indicator_split(col, j, o, parent),
            };
            if let Some(s) = found
                && best.is_none_or(|b| s.gain > b.gain + 1e-12)
            {
                best = Some(s);
            }
        }
        best
    }

    /// The one threshold of an indicator column (rows with 0 go left), from the node's counts.
    fn indicator_split(&mut self, col: usize, j: usize, o: &Open, parent: f64) -> Option<Split> {
        let m = o.size;
        let ones = &o.ones[j * self.classes..(j + 1) * self.classes];
        let n_ones = ones.iter().map(|&c| c as usize).sum::<usize>();
        let n_zeros = m - n_ones;
        if n_zeros < self.params.min_leaf.max(1) || n_ones < self.params.min_leaf.max(1) {
            return None;
        }
        for ((l, r), (&total, &one)) in self.left.iter_mut().zip(self.right.iter_mut()).zip(o.counts.iter().zip(ones)) {
            *r = one as usize;
            *l = total - one as usize;
        }
        let gain = parent - (self.weighted_entropy(&self.left, n_zeros) + self.weighted_entropy(&self.right, n_ones));
        (gain > 1e-9).then(|| Split { col, threshold: midpoint(0.0, 1.0), gain })
    }

    /// Scans one numeric column's sorted segment for the threshold with the largest gain.
    fn best_numeric_split(&mut self, col: usize, k: usize, o: &Open, parent: f64) -> Option<Split> {
        let keys = &self.order[k][o.start..o.end];
        let value = |key: u64| f32::from_bits((key >> 32) as u32);
        let row = |key: u64| key as u32 as usize;
        let m = o.size;
        // A constant segment has no threshold.
        if keys.first().map(|&k| value(k)) == keys.last().map(|&k| value(k)) {
            return None;
        }
        self.left.iter_mut().for_each(|c| *c = 0);
        self.right.copy_from_slice(&o.counts);
        // Thresholds fall between two values and leave at least `min_leaf` (weighted) rows on
        // each side (`best_split` ensures `m >= 2 * min_leaf >= 2`).
        let min_leaf = self.params.min_leaf;
        let mut best: Option<Split> = None;
        let mut nl = 0;
        for i in 0..keys.len() - 1 {
            let r = row(keys[i]);
            let (class, w) = (usize::from(self.labels[r]), self.weights[r] as usize);
            self.left[class] += w;
            self.right[class] -= w;
            nl += w;
            let (v, next) = (value(keys[i]), value(keys[i + 1]));
            if v == next || nl < min_leaf || m - nl < min_leaf {
                continue;
            }
            let child = self.weighted_entropy(&self.left, nl) + self.weighted_entropy(&self.right, m - nl);
            let gain = parent - child;
            if gain > 1e-9 && best.is_none_or(|b| gain > b.gain + 1e-12) {
                let threshold = midpoint(v, next);
                best = Some(Split { col, threshold, gain });
            }
        }
        best
    }

    /// Splits an open node: writes the split record and its two leaves, partitions the orders.
    /// The smaller child's counts are tallied, the larger's are the parent's minus those.
    fn split(&mut self, o: Open) -> [Open; 2] {
        let s = o.split.expect("only nodes with a split are chosen");
        for i in o.start..o.end {
            let r = self.members[i];
            self.goes_left[r as usize] = self.value(r, s.col) <= s.threshold;
        }
        let mid = o.start + self.partition_members(o.start, o.end);
        let left_smaller = mid - o.start <= o.end - mid;
        let small = if left_smaller { (o.start, mid) } else { (mid, o.end) };
        let (small_counts, small_ones) = self.tally(small.0, small.1);
        let large_counts: Vec<usize> = o.counts.iter().zip(&small_counts).map(|(p, c)| p - c).collect();
        let large_ones: Vec<u32> = o.ones.iter().zip(&small_ones).map(|(p, c)| p - c).collect();
        let ((lc, lo), (rc, ro)) = if left_smaller {
            ((small_counts, small_ones), (large_counts, large_ones))
        } else {
            ((large_counts, large_ones), (small_counts, small_ones))
        };
        let (l_size, r_size): (usize, usize) = (lc.iter().sum(), rc.iter().sum());
        // The sorted orders are read only by children that may split again.
        let d = o.depth + 1;
        if self.may_split(d, &lc, l_size) || self.may_split(d, &rc, r_size) {
            for k in 0..self.order.len() {
                self.partition(k, o.start, o.end);
            }
        }
        let (left, right) = (self.nodes.len(), self.nodes.len() + 1);
        self.nodes[o.node] =
            Node::Split { col: s.col as u16, threshold: s.threshold, left: left as u16, right: right as u16 };
        self.nodes.push(self.leaf(&lc, l_size));
        self.nodes.push(self.leaf(&rc, r_size));
        [
            Open { node: left, start: o.start, end: mid, size: l_size, depth: d, split: None, counts: lc, ones: lo },
            Open { node: right, start: mid, end: o.end, size: r_size, depth: d, split: None, counts: rc, ones: ro },
        ]
    }

    /// Stable partition of the members' segment: rows going left first; returns how many go
    /// left.
    ///
    /// Branch-free, like [`Grower::partition`]: every row is written to both sides and only
    /// the side it belongs to advances (which side varies row to row and would defeat branch
    /// prediction).
    fn partition_members(&mut self, start: usize, end: usize) -> usize {
        let seg = &mut self.members[start..end];
        let right = &mut self.scratch;
        right.resize(seg.len(), 0);
        let (mut w, mut s) = (0, 0);
        for i in 0..seg.len() {
            let r = seg[i];
            let left = self.goes_left[r as usize];
            seg[w] = r;
            right[s] = r;
            w += usize::from(left);
            s += usize::from(!left);
        }
        seg[w..].copy_from_slice(&right[..s]);
        w
    }

    /// Stable partition of one order's segment: rows going left first. Left rows are
    /// compacted in place (the write position never passes the read position); right rows go
    /// to scratch and are copied back behind them.
    fn partition(&mut self, k: usize, start: usize, end: usize) {
        let seg = &mut self.order[k][start..end];
        let right = &mut self.scratch_keys;
        right.resize(seg.len(), 0);
        let (mut w, mut s) = (0, 0);
        for i in 0..seg.len() {
            let key = seg[i];
            let left = self.goes_left[key as u32 as usize];
            seg[w] = key;
            right[s] = key;
            w += usize::from(left);
            s += usize::from(!left);
        }
        seg[w..].copy_from_slice(&right[..s]);
    }

    fn emit(&self) -> Vec<u8> {
        self.nodes.iter().flat_map(|n| n.to_bytes()).collect()
    }
}

/// Row counts up to which the `x log2 x` table is computed once per process and shared.
const SHARED_ROWS: usize = 4096;
static SHARED_XLOGX: OnceLock<Vec<f64>> = OnceLock::new();

/// `x log2 x` for `x` in `0..=n`.
fn xlogx_table(n: usize) -> Vec<f64> {
    (0..=n).map(|x| if x == 0 { 0.0 } else { x as f64 * (x as f64).log2() }).collect()
}

/// `v`'s bits as an integer that orders like [`f32::total_cmp`].
fn ordered_bits(v: f32) -> u32 {
    let b = v.to_bits();
    if b >> 31 == 1 { !b } else { b | 0x8000_0000 }
}

/// Inverse of [`ordered_bits`].
fn value_bits(o: u32) -> u32 {
    if o >> 31 == 1 { o & 0x7FFF_FFFF } else { !o }
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

    /// Seeded draws below a bound (xorshift): the same cases on every run.
    fn draws(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |bound| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        }
    }

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
        let wide = crate::profile::COLUMNS + 1;
        assert_eq!(
            fit(&vec![0.0; wide], wide, &[0], 2, &vec![true; wide], p),
            Err(SurrogateError::TooManyColumns { columns: wide, cap: crate::profile::COLUMNS })
        );
        // The device's 64 columns do not bind the host.
        let value = |i: usize, c: usize| if c == 99 { (i % 2) as f32 } else { ((i * 7 + c * 3) % 13) as f32 / 13.0 };
        let rows: Vec<f32> = (0..200).flat_map(|i| (0..100).map(move |c| value(i, c))).collect();
        let labels: Vec<usize> = (0..200).map(|i| i % 2).collect();
        let s = fit(&rows, 100, &labels, 2, &[true; 100], p).unwrap();
        assert!(matches!(s.tree().node(0), Some(Node::Split { col: 99, .. })), "splits on column 99");
    }

    #[test]
    fn test_ordered_bits_sort_like_values_and_invert() {
        let values = [f32::NEG_INFINITY, -3.5, -f32::MIN_POSITIVE, -0.0, 0.0, 1e-40, 0.25, 1.0, 7.0, f32::INFINITY];
        for pair in values.windows(2) {
            assert!(ordered_bits(pair[0]) < ordered_bits(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(value_bits(ordered_bits(v)), v.to_bits(), "{v}");
        }
    }

    #[test]
    fn test_midpoint_stays_below_upper_value() {
        let a = 1.0f32;
        let b = f32::from_bits(a.to_bits() + 1);
        let t = midpoint(a, b);
        assert!(a <= t && t < b);
    }

    #[test]
    fn test_weighted_distinct_rows_grow_the_tree_of_the_rows_repeated() {
        // Distinct rows (few values per column, so splits meet runs of equal values), each
        // repeated by its weight and shuffled: the plain fit of the repeats and the weighted fit
        // of the distinct rows in first-seen order give the same bytes.
        let mut next = draws(11);
        for case in 0..80 {
            let cols = 5;
            let classes = 2 + case % 3;
            let n = 5 + next(300) as usize;
            let mut distinct: Vec<Vec<f32>> = Vec::new();
            while distinct.len() < n {
                // Two numeric columns, then a one-hot group of three.
                let mut row = vec![next(6) as f32 / 3.0, next(1 + case as u64 % 9) as f32, 0.0, 0.0, 0.0];
                row[2 + next(3) as usize] = 1.0;
                if !distinct.contains(&row) {
                    distinct.push(row);
                }
                if distinct.len() < n && next(50) == 0 {
                    break;
                }
            }
            let labels: Vec<usize> =
                distinct.iter().map(|r| (r[0] * 3.0 + r[1] + 2.0 * r[3] + next(2) as f32) as usize % classes).collect();
            let weights: Vec<u32> =
                distinct.iter().map(|_| 1 + next(if case % 4 == 0 { 1 } else { 6 }) as u32).collect();
            let mut repeated: Vec<usize> =
                weights.iter().enumerate().flat_map(|(i, &w)| std::iter::repeat_n(i, w as usize)).collect();
            for i in (1..repeated.len()).rev() {
                repeated.swap(i, next(i as u64 + 1) as usize);
            }
            // The distinct rows in the order the shuffled repeats first show them.
            let mut seen: Vec<usize> = Vec::new();
            for &i in &repeated {
                if !seen.contains(&i) {
                    seen.push(i);
                }
            }
            let flat = |ids: &[usize]| ids.iter().flat_map(|&i| distinct[i].clone()).collect::<Vec<f32>>();
            let allowed: Vec<bool> = (0..cols).map(|c| (c + case) % 6 != 0).collect();
            let p = TreeParams { max_depth: 1 + case % 8, min_leaf: 1 + case % 7, max_nodes: 3 + (case * 7) % 125 };
            let plain = fit(
                &flat(&repeated),
                cols,
                &repeated.iter().map(|&i| labels[i]).collect::<Vec<_>>(),
                classes,
                &allowed,
                p,
            )
            .unwrap();
            let w: Vec<u32> = seen.iter().map(|&i| weights[i]).collect();
            let y: Vec<usize> = seen.iter().map(|&i| labels[i]).collect();
            let weighted = fit_weighted(&flat(&seen), cols, &y, &w, classes, &allowed, p).unwrap();
            assert_eq!(plain.bytes, weighted.bytes, "case {case}: {} rows, {} distinct", repeated.len(), seen.len());
        }
        // A weight per row, none zero.
        let (rows, labels) = ([0.0f32, 1.0], [0usize, 1]);
        let p = TreeParams::default();
        for w in [&[1u32][..], &[1, 0], &[1, 2, 3]] {
            assert!(matches!(fit_weighted(&rows, 1, &labels, w, 2, &[true], p), Err(SurrogateError::Weights { .. })));
        }
        assert!(matches!(
            fit_weighted(&rows, 1, &labels, &[u32::MAX, 1], 2, &[true], p),
            Err(SurrogateError::Weights { .. })
        ));
    }

    #[test]
    fn test_indicator_counts_agree_with_the_sorted_scan() {
        // One-hot groups and numeric columns. Doubling the indicators (values 0 and 2) sends them
        // through the sorted scan instead of the count path: the same tree must come out, with
        // thresholds at 1 instead of 0.5.
        let mut next = draws(7);
        let numeric = 3;
        for case in 0..60 {
            // Narrow rows, and rows of the core's full 64 columns.
            let groups = if case % 2 == 0 { [3usize, 5, 2, 7] } else { [3, 20, 2, 36] };
            let cols = numeric + groups.iter().sum::<usize>();
            let n = 20 + next(600) as usize;
            let classes = 2 + case % 3;
            let mut rows = vec![0.0f32; n * cols];
            let mut labels = vec![0usize; n];
            for (row, label) in rows.chunks_exact_mut(cols).zip(&mut labels) {
                for (c, v) in row[..numeric].iter_mut().enumerate() {
                    *v = next(5 + 40 * c as u64) as f32 / 7.0;
                }
                let mut offset = numeric;
                for g in groups {
                    row[offset + next(g as u64) as usize] = 1.0;
                    offset += g;
                }
                let score = row[0] + 2.0 * row[4] + row[9] - 0.3 * row[1] + next(3) as f32 * 0.5;
                *label = score as usize % classes;
            }
            let doubled: Vec<f32> = rows
                .chunks_exact(cols)
                .flat_map(|r| r.iter().enumerate().map(|(c, &v)| if c < numeric { v } else { 2.0 * v }))
                .collect();
            let allowed: Vec<bool> = (0..cols).map(|c| (c + case) % 5 != 0).collect();
            let p = TreeParams { max_depth: 1 + case % 8, min_leaf: 1 + case % 6, max_nodes: 3 + (case * 7) % 125 };
            let a = fit(&rows, cols, &labels, classes, &allowed, p).unwrap();
            let b = fit(&doubled, cols, &labels, classes, &allowed, p).unwrap();
            assert_eq!(a.nodes(), b.nodes(), "case {case}");
            let (ta, tb) = (a.tree(), b.tree());
            for i in 0..ta.len() as u16 {
                match (ta.node(i).unwrap(), tb.node(i).unwrap()) {
                    (
                        Node::Split { col, threshold, left, right },
                        Node::Split { col: c2, threshold: t2, left: l2, right: r2 },
                    ) => {
                        assert_eq!((col, left, right), (c2, l2, r2), "case {case}, node {i}");
                        let expect = if (col as usize) < numeric { threshold } else { 2.0 * threshold };
                        assert_eq!(expect, t2, "case {case}, node {i}");
                    }
                    (leaf_a, leaf_b) => assert_eq!(leaf_a, leaf_b, "case {case}, node {i}"),
                }
            }
        }
    }
}
