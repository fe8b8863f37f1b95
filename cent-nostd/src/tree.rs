//! Flat, index-addressed decision trees: a validated view over fixed-width node records.
//!
//! A tree is a byte slice of [`RECORD_LEN`]-byte records (node 0 is the root; every child has a
//! larger index than its parent). The same bytes are what the host's tree learner emits, what the
//! bundle stores in flash, and what the device reads, so there is one representation everywhere.
//! [`Tree::new`] checks every record once; afterwards accessors trust the data.
//!
//! Record layout (little endian):
//! - split: `[col, 0, left u16, right u16, 0 u16, threshold f32]`, rows with `x[col] <= threshold`
//!   go left; a column of [`WIDE_COLUMN`] or more (only the host's wide schemas have one) is
//!   written as `[WIDE_TAG, 0, left, right, col u16, threshold]`, so every device tree keeps
//!   its bytes;
//! - leaf: `[0xFF, class, purity u16 (q0.16), entropy u16 (bits * 4096), samples u16, 0 u32]`.

use crate::capacity::{COLUMNS, DEPTH, NODES};
use core::fmt;

/// Bytes per node record.
pub const RECORD_LEN: usize = 12;
const LEAF_TAG: u8 = 0xFF;
/// First byte of a split whose column is stored in bytes 6..8.
const WIDE_TAG: u8 = 0xFE;
/// The smallest column written in the wide form.
pub const WIDE_COLUMN: u16 = WIDE_TAG as u16;
const ENTROPY_ONE: f32 = 4096.0;

/// Index of a node in its tree.
pub type NodeIdx = u16;

/// One decoded node.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Node {
    /// `x[col] <= threshold` goes to `left`, otherwise to `right`.
    Split { col: u16, threshold: f32, left: NodeIdx, right: NodeIdx },
    /// Majority `class`, its share `purity`, the class entropy in bits, and the training rows.
    Leaf { class: u8, purity: f32, entropy: f32, samples: u16 },
}

impl Node {
    /// Encodes the node as one record. Purity and entropy are stored in fixed point (clamped).
    pub fn to_bytes(&self) -> [u8; RECORD_LEN] {
        let mut r = [0u8; RECORD_LEN];
        match *self {
            Node::Split { col, threshold, left, right } => {
                match u8::try_from(col) {
                    Ok(narrow) if col < WIDE_COLUMN => r[0] = narrow,
                    _ => {
                        r[0] = WIDE_TAG;
                        r[6..8].copy_from_slice(&col.to_le_bytes());
                    }
                }
                r[2..4].copy_from_slice(&left.to_le_bytes());
                r[4..6].copy_from_slice(&right.to_le_bytes());
                r[8..12].copy_from_slice(&threshold.to_le_bytes());
            }
            Node::Leaf { class, purity, entropy, samples } => {
                r[0] = LEAF_TAG;
                r[1] = class;
                r[2..4].copy_from_slice(&to_fixed(purity, 65535.0).to_le_bytes());
                r[4..6].copy_from_slice(&to_fixed(entropy, ENTROPY_ONE).to_le_bytes());
                r[6..8].copy_from_slice(&samples.to_le_bytes());
            }
        }
        r
    }

    fn from_record(r: &[u8; RECORD_LEN]) -> Node {
        let u16_at = |i: usize| u16::from_le_bytes([r[i], r[i + 1]]);
        if r[0] == LEAF_TAG {
            Node::Leaf {
                class: r[1],
                purity: u16_at(2) as f32 / 65535.0,
                entropy: u16_at(4) as f32 / ENTROPY_ONE,
                samples: u16_at(6),
            }
        } else {
            let threshold = f32::from_le_bytes([r[8], r[9], r[10], r[11]]);
            // A wide column below `WIDE_COLUMN` is not canonical: it maps to `u16::MAX`, which no
            // schema has, so validation rejects the record.
            let col = match r[0] {
                WIDE_TAG if u16_at(6) >= WIDE_COLUMN => u16_at(6),
                WIDE_TAG => u16::MAX,
                narrow => u16::from(narrow),
            };
            Node::Split { col, threshold, left: u16_at(2), right: u16_at(4) }
        }
    }

    pub fn is_leaf(&self) -> bool {
        matches!(self, Node::Leaf { .. })
    }
}

fn to_fixed(v: f32, one: f32) -> u16 {
    let scaled = v * one + 0.5;
    if scaled.is_nan() || scaled <= 0.0 {
        0
    } else if scaled >= 65535.0 {
        u16::MAX
    } else {
        scaled as u16
    }
}

/// Why a byte string is not a valid tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TreeError {
    /// Empty, or not a whole number of records.
    Length,
    /// More nodes or columns than the capacity it is validated for, or deeper than [`DEPTH`].
    Capacity,
    /// A split names a column outside the schema or has a non-finite threshold.
    Split { node: NodeIdx },
    /// A leaf names a class the black box does not have.
    Class { node: NodeIdx },
    /// A child index is not after its parent, out of range, or shared by two parents.
    Link { node: NodeIdx },
    /// A query vector is shorter than the tree's column count.
    Input,
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeError::Length => write!(f, "tree bytes are empty or not whole {RECORD_LEN}-byte records"),
            TreeError::Capacity => write!(f, "tree exceeds its node or column capacity or depth {DEPTH}"),
            TreeError::Split { node } => write!(f, "node {node} splits on an unknown column or a non-finite threshold"),
            TreeError::Class { node } => write!(f, "leaf {node} names an unknown class"),
            TreeError::Link { node } => write!(f, "node {node} has an invalid child link"),
            TreeError::Input => write!(f, "query vector is shorter than the tree's columns"),
        }
    }
}

impl core::error::Error for TreeError {}

/// A validated decision tree over a borrowed byte slice.
#[derive(Debug, Clone, Copy)]
pub struct Tree<'a> {
    bytes: &'a [u8],
    columns: u16,
    classes: u8,
}

impl<'a> Tree<'a> {
    /// Validates `bytes` as a tree over `columns` encoded columns and `classes` classes, within
    /// the device profile: at most [`NODES`] nodes over at most [`COLUMNS`] columns.
    ///
    /// # Errors
    /// A [`TreeError`] naming the first bad node.
    pub fn new(bytes: &'a [u8], columns: usize, classes: usize) -> Result<Self, TreeError> {
        Self::within::<NODES, COLUMNS>(bytes, columns, classes)
    }

    /// Validates `bytes` as a tree of at most `N` nodes over `columns` (at most `C`) encoded
    /// columns and `classes` classes: how the host checks its wide trees.
    ///
    /// # Errors
    /// A [`TreeError`] naming the first bad node.
    pub fn within<const N: usize, const C: usize>(
        bytes: &'a [u8],
        columns: usize,
        classes: usize,
    ) -> Result<Self, TreeError> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(RECORD_LEN) {
            return Err(TreeError::Length);
        }
        let n = bytes.len() / RECORD_LEN;
        if n > N || n > usize::from(NodeIdx::MAX) || columns > C || columns >= usize::from(u16::MAX) {
            return Err(TreeError::Capacity);
        }
        if classes > u8::MAX as usize {
            return Err(TreeError::Capacity);
        }
        let tree = Tree { bytes, columns: columns as u16, classes: classes as u8 };
        tree.check_links::<N>(n, columns, classes)?;
        Ok(tree)
    }

    fn check_links<const N: usize>(&self, n: usize, columns: usize, classes: usize) -> Result<(), TreeError> {
        let mut has_parent = [false; N];
        let mut depth = [0u8; N];
        for i in 0..n {
            let idx = i as NodeIdx;
            match self.record(idx) {
                Node::Leaf { class, .. } => {
                    if class as usize >= classes {
                        return Err(TreeError::Class { node: idx });
                    }
                }
                Node::Split { col, threshold, left, right } => {
                    if col as usize >= columns || !threshold.is_finite() {
                        return Err(TreeError::Split { node: idx });
                    }
                    for child in [left, right] {
                        let c = child as usize;
                        if c <= i || c >= n || has_parent[c] {
                            return Err(TreeError::Link { node: idx });
                        }
                        has_parent[c] = true;
                        depth[c] = depth[i].saturating_add(1);
                        if depth[c] as usize > DEPTH {
                            return Err(TreeError::Capacity);
                        }
                    }
                }
            }
        }
        // Children come after parents, so a node without a parent (other than the root) is unreachable.
        match (1..n).find(|&i| !has_parent[i]) {
            Some(i) => Err(TreeError::Link { node: i as NodeIdx }),
            None => Ok(()),
        }
    }

    fn record(&self, idx: NodeIdx) -> Node {
        let start = idx as usize * RECORD_LEN;
        match self.bytes.get(start..start + RECORD_LEN).and_then(|s| <&[u8; RECORD_LEN]>::try_from(s).ok()) {
            Some(r) => Node::from_record(r),
            None => Node::Leaf { class: 0, purity: 0.0, entropy: 0.0, samples: 0 },
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.bytes.len() / RECORD_LEN
    }

    /// Always false: a valid tree has a root.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn columns(&self) -> usize {
        self.columns as usize
    }

    pub fn classes(&self) -> usize {
        self.classes as usize
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The node at `idx`, or `None` past the end.
    pub fn node(&self, idx: NodeIdx) -> Option<Node> {
        (usize::from(idx) < self.len()).then(|| self.record(idx))
    }

    /// The leaf that `x` falls into.
    ///
    /// # Errors
    /// [`TreeError::Input`] when `x` has fewer values than the tree's columns.
    pub fn route(&self, x: &[f32]) -> Result<NodeIdx, TreeError> {
        if x.len() < self.columns() {
            return Err(TreeError::Input);
        }
        let mut idx = 0;
        // Validation guarantees children after parents, so this loop ends within `len` steps.
        while let Node::Split { col, threshold, left, right } = self.record(idx) {
            let v = x.get(col as usize).copied().unwrap_or(0.0);
            idx = if v <= threshold { left } else { right };
        }
        Ok(idx)
    }

    /// The parent of `idx` (`None` for the root or an index past the end).
    pub fn parent(&self, idx: NodeIdx) -> Option<NodeIdx> {
        (0..idx.min(self.len() as NodeIdx)).rev().find(|&p| match self.record(p) {
            Node::Split { left, right, .. } => left == idx || right == idx,
            Node::Leaf { .. } => false,
        })
    }
}

/// The hyper-rectangle of a node: per encoded column (at most `C`) the half-open interval
/// `(lo, hi]` that the splits on the path from the root impose. A column past `C` is
/// unbounded.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounds<const C: usize = COLUMNS> {
    lo: [f32; C],
    hi: [f32; C],
}

impl<const C: usize> Default for Bounds<C> {
    fn default() -> Self {
        Bounds { lo: [f32::NEG_INFINITY; C], hi: [f32::INFINITY; C] }
    }
}

impl<const C: usize> Bounds<C> {
    /// The box of node `idx` (the whole space for the root or an unknown index).
    pub fn of(tree: &Tree<'_>, idx: NodeIdx) -> Self {
        let mut b = Self::default();
        b.restrict_to(tree, idx);
        b
    }

    /// Makes `self` the box of node `idx` ([`Bounds::of`]) in place: a caller that visits many
    /// leaves keeps one box instead of building a new one per leaf.
    pub fn set_to(&mut self, tree: &Tree<'_>, idx: NodeIdx) {
        self.lo.fill(f32::NEG_INFINITY);
        self.hi.fill(f32::INFINITY);
        self.restrict_to(tree, idx);
    }

    /// Applies the splits on the path from the root to `idx`.
    fn restrict_to(&mut self, tree: &Tree<'_>, idx: NodeIdx) {
        let mut child = idx;
        while let Some(p) = tree.parent(child) {
            if let Some(Node::Split { col, threshold, left, .. }) = tree.node(p) {
                self.restrict(col as usize, threshold, child == left);
            }
            child = p;
        }
    }

    /// Applies one split: `left` keeps `v <= threshold`, otherwise `v > threshold`.
    pub fn restrict(&mut self, col: usize, threshold: f32, left: bool) {
        let (Some(lo), Some(hi)) = (self.lo.get_mut(col), self.hi.get_mut(col)) else { return };
        if left {
            *hi = hi.min(threshold);
        } else {
            *lo = lo.max(threshold);
        }
    }

    /// `(lo, hi]` of one column.
    pub fn interval(&self, col: usize) -> (f32, f32) {
        (self.lo.get(col).copied().unwrap_or(f32::NEG_INFINITY), self.hi.get(col).copied().unwrap_or(f32::INFINITY))
    }

    /// Overwrites one column's interval (used to undo [`Bounds::restrict`]).
    pub fn set_interval(&mut self, col: usize, lo: f32, hi: f32) {
        if let (Some(l), Some(h)) = (self.lo.get_mut(col), self.hi.get_mut(col)) {
            *l = lo;
            *h = hi;
        }
    }

    /// True when `v` lies in column `col`'s interval.
    pub fn admits(&self, col: usize, v: f32) -> bool {
        let (lo, hi) = self.interval(col);
        v > lo && v <= hi
    }

    /// Categories of a one-hot group `[col, col + width)` whose one-hot vector lies in the box
    /// (bit `k` for category `k`).
    pub fn categories(&self, col: usize, width: usize) -> u64 {
        let mut mask = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        for k in 0..width.min(64) {
            let c = col + k;
            if !self.admits(c, 1.0) {
                mask &= !(1 << k);
            }
            if !self.admits(c, 0.0) {
                mask &= 1 << k;
            }
        }
        mask
    }

    /// True when every column of `x` lies in the box.
    pub fn contains(&self, x: &[f32]) -> bool {
        x.iter().enumerate().all(|(c, v)| self.admits(c, *v))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// Serializes nodes into record bytes.
    pub(crate) fn bytes_of(nodes: &[Node]) -> Vec<u8> {
        nodes.iter().flat_map(|n| n.to_bytes()).collect()
    }

    fn leaf(class: u8) -> Node {
        Node::Leaf { class, purity: 1.0, entropy: 0.0, samples: 5 }
    }

    fn small() -> Vec<u8> {
        bytes_of(&[
            Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
            leaf(0),
            Node::Split { col: 1, threshold: 0.25, left: 3, right: 4 },
            leaf(1),
            leaf(0),
        ])
    }

    #[test]
    fn test_record_round_trip() {
        let n = Node::Leaf { class: 3, purity: 0.75, entropy: 0.811, samples: 40 };
        match Node::from_record(&n.to_bytes()) {
            Node::Leaf { class, purity, entropy, samples } => {
                assert_eq!((class, samples), (3, 40));
                assert!((purity - 0.75).abs() < 1e-4);
                assert!((entropy - 0.811).abs() < 1e-3);
            }
            Node::Split { .. } => panic!("leaf decoded as split"),
        }
        let s = Node::Split { col: 7, threshold: -0.125, left: 9, right: 300 };
        assert_eq!(Node::from_record(&s.to_bytes()), s);
    }

    #[test]
    fn test_wide_columns_round_trip_and_keep_narrow_bytes() {
        for col in [0u16, 63, WIDE_COLUMN - 1, WIDE_COLUMN, 255, 256, 2047] {
            let s = Node::Split { col, threshold: 0.5, left: 1, right: 2 };
            let r = s.to_bytes();
            assert_eq!(Node::from_record(&r), s, "column {col}");
            assert_eq!(r[0] == WIDE_TAG, col >= WIDE_COLUMN, "column {col}");
            if col < WIDE_COLUMN {
                assert_eq!((r[0], r[6], r[7]), (col as u8, 0, 0), "narrow form unchanged");
            }
        }
        // The wide form of a narrow column is not canonical and never valid.
        let mut r = Node::Split { col: 3, threshold: 0.5, left: 1, right: 2 }.to_bytes();
        r[0] = WIDE_TAG;
        r[6..8].copy_from_slice(&3u16.to_le_bytes());
        let mut bytes = r.to_vec();
        bytes.extend(bytes_of(&[leaf(0), leaf(1)]));
        assert_eq!(Tree::within::<8, 4096>(&bytes, 4000, 2).unwrap_err(), TreeError::Split { node: 0 });
        // A split on column 2047 needs the host capacity.
        let wide = bytes_of(&[Node::Split { col: 2047, threshold: 0.5, left: 1, right: 2 }, leaf(0), leaf(1)]);
        assert_eq!(Tree::new(&wide, 2048, 2).unwrap_err(), TreeError::Capacity);
        let t = Tree::within::<4095, 2048>(&wide, 2048, 2).unwrap();
        let mut x = [0.0f32; 2048];
        assert_eq!(t.route(&x), Ok(1));
        x[2047] = 1.0;
        assert_eq!(t.route(&x), Ok(2));
        let b: Bounds<2048> = Bounds::of(&t, 2);
        assert_eq!(b.interval(2047), (0.5, f32::INFINITY));
    }

    #[test]
    fn test_route_and_parent() {
        let b = small();
        let t = Tree::new(&b, 2, 2).unwrap();
        assert_eq!(t.route(&[0.4, 0.9]), Ok(1));
        assert_eq!(t.route(&[0.6, 0.2]), Ok(3));
        assert_eq!(t.route(&[0.6, 0.3]), Ok(4));
        assert_eq!(t.route(&[0.6]), Err(TreeError::Input));
        assert_eq!(t.parent(4), Some(2));
        assert_eq!(t.parent(0), None);
    }

    #[test]
    fn test_bounds_of_leaf() {
        let b = small();
        let t = Tree::new(&b, 2, 2).unwrap();
        let bounds: Bounds = Bounds::of(&t, 3);
        assert_eq!(bounds.interval(0), (0.5, f32::INFINITY));
        assert_eq!(bounds.interval(1), (f32::NEG_INFINITY, 0.25));
        assert!(bounds.contains(&[0.6, 0.1]));
        assert!(!bounds.contains(&[0.5, 0.1]));
    }

    #[test]
    fn test_bounds_set_to_forgets_the_previous_box() {
        let b = small();
        let t = Tree::new(&b, 2, 2).unwrap();
        // One box walked through every node in both directions equals a fresh one each time.
        let mut reused: Bounds = Bounds::default();
        for idx in (0..t.len() as NodeIdx).chain((0..t.len() as NodeIdx).rev()) {
            reused.set_to(&t, idx);
            assert_eq!(reused, Bounds::of(&t, idx), "node {idx}");
        }
    }

    #[test]
    fn test_group_categories() {
        let mut b: Bounds = Bounds::default();
        b.restrict(2, 0.5, false); // column 2 == 1: category 2 only
        assert_eq!(b.categories(0, 4), 0b0100);
        let mut b: Bounds = Bounds::default();
        b.restrict(1, 0.5, true); // column 1 == 0: anything but category 1
        assert_eq!(b.categories(0, 4), 0b1101);
    }

    #[test]
    fn test_rejects_bad_trees() {
        assert_eq!(Tree::new(&[], 2, 2).unwrap_err(), TreeError::Length);
        assert_eq!(Tree::new(&[0u8; 13], 2, 2).unwrap_err(), TreeError::Length);
        let bad_col = bytes_of(&[Node::Split { col: 5, threshold: 0.5, left: 1, right: 2 }, leaf(0), leaf(1)]);
        assert_eq!(Tree::new(&bad_col, 2, 2).unwrap_err(), TreeError::Split { node: 0 });
        let nan = bytes_of(&[Node::Split { col: 0, threshold: f32::NAN, left: 1, right: 2 }, leaf(0), leaf(1)]);
        assert_eq!(Tree::new(&nan, 2, 2).unwrap_err(), TreeError::Split { node: 0 });
        let back = bytes_of(&[Node::Split { col: 0, threshold: 0.5, left: 0, right: 2 }, leaf(0), leaf(1)]);
        assert_eq!(Tree::new(&back, 2, 2).unwrap_err(), TreeError::Link { node: 0 });
        let shared = bytes_of(&[
            Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
            Node::Split { col: 0, threshold: 0.5, left: 2, right: 3 },
            leaf(0),
            leaf(1),
        ]);
        assert_eq!(Tree::new(&shared, 2, 2).unwrap_err(), TreeError::Link { node: 1 });
        let orphan = bytes_of(&[Node::Split { col: 0, threshold: 0.5, left: 1, right: 3 }, leaf(0), leaf(1), leaf(1)]);
        assert_eq!(Tree::new(&orphan, 2, 2).unwrap_err(), TreeError::Link { node: 2 });
        let class = bytes_of(&[leaf(2)]);
        assert_eq!(Tree::new(&class, 2, 2).unwrap_err(), TreeError::Class { node: 0 });
    }

    #[test]
    fn test_depth_capacity() {
        // A left-leaning chain deeper than DEPTH.
        let mut nodes = Vec::new();
        for i in 0..=DEPTH {
            let i = i as u16;
            nodes.push(Node::Split { col: 0, threshold: 0.5, left: 2 * i + 1, right: 2 * i + 2 });
            nodes.push(leaf(0));
        }
        nodes.push(leaf(1));
        let bytes = bytes_of(&nodes);
        assert_eq!(Tree::new(&bytes, 1, 2).unwrap_err(), TreeError::Capacity);
    }
}
