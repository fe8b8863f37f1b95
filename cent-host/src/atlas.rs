//! Building the recourse atlas (design §4): anchors in latent space and one local entropy tree
//! per anchor, so the device can explain without the training data.
//!
//! Anchors come from a seeded k-means++ run **per class** over the pool's VAE means (the
//! classes share the anchor budget evenly), so every class has regions of its own. Each
//! anchor's tree is fitted, like the per-query surrogate, on a balanced latent neighbourhood
//! (`k / classes` nearest pool points of every class, labelled by the black box) over the
//! mutable columns only. The trees are `cent_nostd::tree` records: the host and the device walk
//! the same bytes.

use crate::neighbors::Pool;
use crate::surrogate::{self, Surrogate, SurrogateError, TreeParams};
use cent_nostd::capacity::{ANCHORS, LATENT};
use cent_nostd::schema::{Mutability, Schema};
use cent_nostd::tree::Node;
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use thiserror::Error;

/// Hyperparameters of the atlas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtlasParams {
    /// Anchors (and trees) in all, shared evenly by the classes.
    pub anchors: usize,
    /// Neighbours per anchor in all (`k / classes` per class).
    pub k: usize,
    /// Bounds of every anchor's tree.
    pub tree: TreeParams,
    /// Lloyd iterations of k-means at most.
    pub iterations: usize,
    /// People each anchor carries for the device's last resort ([`crate::people`]); at most
    /// [`cent_nostd::people::PEOPLE`].
    pub people: usize,
    pub seed: u64,
}

impl Default for AtlasParams {
    /// 32 anchors of trees of at most 63 nodes (depth 8) fitted on 8000 neighbours each: on
    /// Adult (MLP) a 28 KB bundle whose flip rate beats per-query CEnt's. Neighbourhoods of the
    /// per-query size (1000) leave queries far from their anchor poorly served (flip rate 0.86
    /// vs 0.91), and 127-node trees double the trees' bytes for about 1.5 points of flip rate
    /// (see README, "On-device recourse").
    fn default() -> Self {
        AtlasParams {
            anchors: 32,
            k: 8000,
            tree: TreeParams { max_depth: 8, min_leaf: 5, max_nodes: 63 },
            iterations: 50,
            people: 4,
            seed: 1,
        }
    }
}

#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum AtlasError {
    #[error(
        "atlas parameters invalid: anchors 1..={ANCHORS} (at least one per class), k >= 2, iterations >= 1, people 0..={}",
        cent_nostd::people::PEOPLE
    )]
    Params,
    #[error("the latent size {latent} is not in 1..={LATENT}")]
    Latent { latent: usize },
    #[error("{points} latent values, {labels} labels and {rows} pool rows do not describe one pool")]
    Shape { points: usize, labels: usize, rows: usize },
    #[error("the black box gives every pool row the same class: an atlas needs at least two")]
    OneClass,
    #[error("tree of anchor {anchor}: {error}")]
    Tree { anchor: usize, error: SurrogateError },
}

impl AtlasParams {
    /// Checks the bounds (the tree's against the core's capacities).
    ///
    /// # Errors
    /// [`AtlasError::Params`] or the tree's [`SurrogateError`] (as anchor 0).
    pub fn check(self) -> Result<Self, AtlasError> {
        self.tree.check().map_err(|error| AtlasError::Tree { anchor: 0, error })?;
        let ok = (1..=ANCHORS).contains(&self.anchors)
            && self.k >= 2
            && self.iterations >= 1
            && self.people <= cent_nostd::people::PEOPLE;
        if ok { Ok(self) } else { Err(AtlasError::Params) }
    }
}

/// The pool an atlas is built from: encoded rows, their latent means and black-box labels.
#[derive(Debug, Clone, Copy)]
pub struct PoolData<'a> {
    /// Row-major encoded rows, `schema.columns()` wide.
    pub rows: &'a [f32],
    /// Row-major latent means, `latent` wide.
    pub z: &'a [f32],
    pub latent: usize,
    /// The black box's class of each row.
    pub labels: &'a [usize],
}

/// A full-precision atlas: anchor coordinates, the class each was found in, and its tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Atlas {
    pub latent: usize,
    /// Row-major anchor means, `latent` wide.
    pub anchors: Vec<f32>,
    /// The class whose k-means produced each anchor.
    pub anchor_class: Vec<usize>,
    pub trees: Vec<Surrogate>,
    /// The people each anchor carries, in the core's records ([`cent_nostd::people`]); empty
    /// until [`crate::people::choose`] fills it.
    pub people: Vec<u8>,
}

impl Atlas {
    pub fn len(&self) -> usize {
        self.trees.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    /// Index of the anchor nearest to `z` (squared Euclidean, ties to the lower index).
    pub fn nearest(&self, z: &[f32]) -> usize {
        nearest_centre(&self.anchors, self.latent, z).0
    }

    /// The anchors in the device's form: little-endian int16 in steps of `scale` (the quantized
    /// encoder's output step), saturated to `±32767`.
    pub fn anchor_bytes(&self, scale: f32) -> Vec<u8> {
        self.anchors.iter().flat_map(|&v| cent_nostd::quant::quantize_i16(v, scale).to_le_bytes()).collect()
    }

    /// Largest tree, in nodes.
    pub fn max_nodes(&self) -> usize {
        self.trees.iter().map(Surrogate::nodes).max().unwrap_or(0)
    }

    /// Share of rows whose nearest anchor's tree predicts `labels` (the atlas's fidelity to the
    /// black box). `rows` and `z` are row-major and aligned.
    pub fn fidelity(&self, rows: &[f32], z: &[f32], labels: &[usize]) -> f64 {
        let Some(columns) = self.trees.first().map(|t| t.columns) else { return 0.0 };
        let hits = rows
            .chunks_exact(columns)
            .zip(z.chunks_exact(self.latent))
            .zip(labels)
            .filter(|((x, zx), label)| leaf_class(&self.trees[self.nearest(zx)], x) == Some(**label))
            .count();
        if labels.is_empty() { 0.0 } else { hits as f64 / labels.len() as f64 }
    }
}

fn leaf_class(tree: &Surrogate, x: &[f32]) -> Option<usize> {
    let t = tree.tree();
    match t.route(x).ok().and_then(|leaf| t.node(leaf)) {
        Some(Node::Leaf { class, .. }) => Some(class as usize),
        _ => None,
    }
}

/// Builds the atlas of `pool` for `schema` (whose default mutability decides the columns the
/// trees may split on).
///
/// # Errors
/// [`AtlasError`] for bad parameters, a pool whose parts disagree, a single-class pool, or a
/// tree that cannot be fitted.
pub fn build(pool: PoolData<'_>, schema: &Schema, classes: usize, params: AtlasParams) -> Result<Atlas, AtlasError> {
    let params = params.check()?;
    check_pool(pool, schema)?;
    let sizes: Vec<usize> = (0..classes).map(|c| pool.labels.iter().filter(|&&l| l == c).count()).collect();
    let shares = anchor_shares(&sizes, params.anchors)?;
    let mut atlas = Atlas {
        latent: pool.latent,
        anchors: Vec::new(),
        anchor_class: Vec::new(),
        trees: Vec::new(),
        people: Vec::new(),
    };
    for (class, &share) in shares.iter().enumerate() {
        let points: Vec<f32> = class_points(pool, class);
        let centres = kmeans(&points, pool.latent, share, params.iterations, params.seed ^ class as u64);
        atlas.anchor_class.extend(std::iter::repeat_n(class, centres.len() / pool.latent));
        atlas.anchors.extend(centres);
    }
    let index = Pool::new(pool.z, pool.latent, pool.labels, classes);
    let allowed = mutable_columns(schema);
    for (anchor, centre) in atlas.anchors.chunks_exact(pool.latent).enumerate() {
        let tree = fit_anchor(&index, pool, centre, classes, &allowed, params)
            .map_err(|error| AtlasError::Tree { anchor, error })?;
        atlas.trees.push(tree);
    }
    Ok(atlas)
}

fn check_pool(pool: PoolData<'_>, schema: &Schema) -> Result<(), AtlasError> {
    if pool.latent == 0 || pool.latent > LATENT {
        return Err(AtlasError::Latent { latent: pool.latent });
    }
    let n = pool.labels.len();
    if n == 0 || pool.z.len() != n * pool.latent || pool.rows.len() != n * schema.columns() {
        let rows = pool.rows.len() / schema.columns().max(1);
        return Err(AtlasError::Shape { points: pool.z.len(), labels: n, rows });
    }
    Ok(())
}

/// Splits `anchors` evenly over the classes that have pool rows (the first classes take the
/// remainder), never more anchors than a class has rows.
fn anchor_shares(sizes: &[usize], anchors: usize) -> Result<Vec<usize>, AtlasError> {
    let present: Vec<usize> = (0..sizes.len()).filter(|&c| sizes[c] > 0).collect();
    if present.len() < 2 {
        return Err(AtlasError::OneClass);
    }
    if anchors < present.len() {
        return Err(AtlasError::Params);
    }
    let mut shares = vec![0; sizes.len()];
    for (i, &c) in present.iter().enumerate() {
        let share = anchors / present.len() + usize::from(i < anchors % present.len());
        shares[c] = share.min(sizes[c]);
    }
    Ok(shares)
}

fn class_points(pool: PoolData<'_>, class: usize) -> Vec<f32> {
    pool.z
        .chunks_exact(pool.latent)
        .zip(pool.labels)
        .filter(|(_, l)| **l == class)
        .flat_map(|(p, _)| p)
        .copied()
        .collect()
}

/// Columns the trees may split on: every column of a feature that is not immutable.
pub fn mutable_columns(schema: &Schema) -> Vec<bool> {
    let mut allowed = vec![false; schema.columns()];
    for f in schema.features() {
        for c in f.columns() {
            allowed[c] = f.mutability != Mutability::Immutable;
        }
    }
    allowed
}

/// Fits one anchor's tree on its balanced neighbourhood.
fn fit_anchor(
    index: &Pool,
    pool: PoolData<'_>,
    centre: &[f32],
    classes: usize,
    allowed: &[bool],
    params: AtlasParams,
) -> Result<Surrogate, SurrogateError> {
    let per_class = (params.k / classes).max(1);
    let columns = allowed.len();
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    for class in 0..classes {
        for id in index.nearest(centre, class, per_class) {
            let id = id as usize;
            rows.extend_from_slice(&pool.rows[id * columns..(id + 1) * columns]);
            labels.push(pool.labels[id]);
        }
    }
    surrogate::fit(&rows, columns, &labels, classes, allowed, params.tree)
}

/// Seeded k-means++ with Lloyd iterations over row-major `points` (`dim` wide): up to `k`
/// centres, row-major (fewer when there are fewer points). Sums run in f64 and every choice is
/// seeded, so the result is the same on every machine.
pub fn kmeans(points: &[f32], dim: usize, k: usize, iterations: usize, seed: u64) -> Vec<f32> {
    let n = points.len().checked_div(dim).unwrap_or(0);
    if n == 0 || k == 0 {
        return Vec::new();
    }
    let mut centres = seed_centres(points, dim, k.min(n), seed);
    let mut assignment = vec![usize::MAX; n];
    for _ in 0..iterations {
        let changed = assign(points, dim, &centres, &mut assignment);
        update(points, dim, &assignment, &mut centres);
        if !changed {
            break;
        }
    }
    centres
}

/// k-means++ seeding: the first centre uniformly, each next one with probability proportional
/// to its squared distance from the nearest chosen centre.
fn seed_centres(points: &[f32], dim: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n = points.len() / dim;
    let first = (unit(&mut rng) * n as f64) as usize % n;
    let mut centres = points[first * dim..(first + 1) * dim].to_vec();
    let mut d2: Vec<f64> = points.chunks_exact(dim).map(|p| squared(p, &centres) as f64).collect();
    while centres.len() < k * dim {
        let total: f64 = d2.iter().sum();
        if total <= 0.0 {
            break; // Every point coincides with a centre: fewer distinct centres exist.
        }
        let next = pick(&d2, unit(&mut rng) * total);
        let centre = points[next * dim..(next + 1) * dim].to_vec();
        for (d, p) in d2.iter_mut().zip(points.chunks_exact(dim)) {
            *d = d.min(squared(p, &centre) as f64);
        }
        centres.extend(centre);
    }
    centres
}

/// The index where the running sum of `weights` passes `target` (the last positive weight if
/// rounding leaves it short).
fn pick(weights: &[f64], target: f64) -> usize {
    let mut acc = 0.0;
    let mut last = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            last = i;
            acc += w;
            if acc > target {
                return i;
            }
        }
    }
    last
}

/// A uniform draw in `[0, 1)` from the top 53 bits.
fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Assigns every point to its nearest centre; true when any assignment changed.
fn assign(points: &[f32], dim: usize, centres: &[f32], assignment: &mut [usize]) -> bool {
    let mut changed = false;
    for (p, a) in points.chunks_exact(dim).zip(assignment.iter_mut()) {
        let (best, _) = nearest_centre(centres, dim, p);
        changed |= *a != best;
        *a = best;
    }
    changed
}

/// Moves each centre to the mean of its points; a centre without points stays where it is.
fn update(points: &[f32], dim: usize, assignment: &[usize], centres: &mut [f32]) {
    let k = centres.len() / dim;
    let mut sums = vec![0.0f64; k * dim];
    let mut counts = vec![0usize; k];
    for (p, &a) in points.chunks_exact(dim).zip(assignment) {
        counts[a] += 1;
        for (s, &v) in sums[a * dim..(a + 1) * dim].iter_mut().zip(p) {
            *s += v as f64;
        }
    }
    for (c, (centre, &count)) in centres.chunks_exact_mut(dim).zip(&counts).enumerate() {
        if count > 0 {
            for (v, s) in centre.iter_mut().zip(&sums[c * dim..(c + 1) * dim]) {
                *v = (s / count as f64) as f32;
            }
        }
    }
}

/// Nearest centre to `p` and its squared distance; ties go to the lower index.
fn nearest_centre(centres: &[f32], dim: usize, p: &[f32]) -> (usize, f32) {
    let mut best = (0, f32::INFINITY);
    for (i, c) in centres.chunks_exact(dim.max(1)).enumerate() {
        let d = squared(c, p);
        if d < best.1 {
            best = (i, d);
        }
    }
    best
}

fn squared(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cent_nostd::schema::Feature;

    /// Two tight 1-D blobs around 0 and 10.
    const BLOBS: [f32; 8] = [-0.2, 0.1, 0.0, 0.1, 9.9, 10.2, 10.0, 9.9];

    #[test]
    fn test_kmeans_finds_two_blobs() {
        let mut c = kmeans(&BLOBS, 1, 2, 20, 3);
        c.sort_by(f32::total_cmp);
        assert!((c[0] - 0.0).abs() < 1e-6 && (c[1] - 10.0).abs() < 1e-6, "{c:?}");
    }

    #[test]
    fn test_kmeans_is_seeded_and_caps_k() {
        assert_eq!(kmeans(&BLOBS, 1, 3, 20, 9), kmeans(&BLOBS, 1, 3, 20, 9));
        assert_eq!(kmeans(&[1.0, 1.0, 1.0], 1, 5, 10, 1), vec![1.0], "one distinct point, one centre");
        assert!(kmeans(&[], 2, 4, 10, 1).is_empty());
    }

    #[test]
    fn test_pick_follows_weights() {
        assert_eq!(pick(&[0.0, 1.0, 0.0, 3.0], 0.5), 1);
        assert_eq!(pick(&[0.0, 1.0, 0.0, 3.0], 1.5), 3);
        assert_eq!(pick(&[0.0, 1.0, 0.0, 3.0], 99.0), 3, "rounding past the end picks the last weight");
    }

    #[test]
    fn test_shares_split_evenly_and_need_two_classes() {
        assert_eq!(anchor_shares(&[100, 50], 5), Ok(vec![3, 2]));
        assert_eq!(anchor_shares(&[100, 0, 50], 4), Ok(vec![2, 0, 2]));
        assert_eq!(anchor_shares(&[100, 1], 8), Ok(vec![4, 1]), "no more anchors than rows");
        assert_eq!(anchor_shares(&[100, 0], 8), Err(AtlasError::OneClass));
        assert_eq!(anchor_shares(&[10, 10, 10], 2), Err(AtlasError::Params));
    }

    /// Pool of a line: latent = the single feature; class 1 iff x > 0.5.
    fn line_pool() -> (Vec<f32>, Vec<usize>) {
        let rows: Vec<f32> = (0..40).map(|i| i as f32 / 39.0).collect();
        let labels = rows.iter().map(|&v| usize::from(v > 0.5)).collect();
        (rows, labels)
    }

    fn one_feature(mutability: Mutability) -> Schema {
        let mut s = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0).with_mutability(mutability)).unwrap();
        s
    }

    #[test]
    fn test_build_covers_both_classes_with_faithful_trees() {
        let (rows, labels) = line_pool();
        let pool = PoolData { rows: &rows, z: &rows, latent: 1, labels: &labels };
        // k covers the whole pool, so every tree can learn the exact boundary.
        let params = AtlasParams { anchors: 4, k: 40, ..AtlasParams::default() };
        let atlas = build(pool, &one_feature(Mutability::Free), 2, params).unwrap();
        assert_eq!(atlas.anchor_class, vec![0, 0, 1, 1]);
        assert!(atlas.anchors[..2].iter().all(|&a| a <= 0.5) && atlas.anchors[2..].iter().all(|&a| a > 0.5));
        assert!((atlas.fidelity(&rows, &rows, &labels) - 1.0).abs() < 1e-12);
        assert_eq!(atlas.anchor_class[atlas.nearest(&[0.95])], 1);
        assert_eq!(atlas.anchor_class[atlas.nearest(&[0.05])], 0);
    }

    #[test]
    fn test_immutable_columns_are_never_split() {
        let (rows, labels) = line_pool();
        let pool = PoolData { rows: &rows, z: &rows, latent: 1, labels: &labels };
        let params = AtlasParams { anchors: 2, k: 10, ..AtlasParams::default() };
        let atlas = build(pool, &one_feature(Mutability::Immutable), 2, params).unwrap();
        assert!(atlas.trees.iter().all(|t| t.nodes() == 1), "only the root leaf is possible");
    }

    #[test]
    fn test_anchor_bytes_round_to_steps() {
        let atlas = Atlas {
            latent: 2,
            anchors: vec![0.5, -0.25],
            anchor_class: vec![0],
            trees: Vec::new(),
            people: Vec::new(),
        };
        assert_eq!(atlas.anchor_bytes(0.25), [2i16.to_le_bytes(), (-1i16).to_le_bytes()].concat());
    }

    #[test]
    fn test_bad_pool_and_params_are_rejected() {
        let (rows, labels) = line_pool();
        let schema = one_feature(Mutability::Free);
        let pool = PoolData { rows: &rows, z: &rows[1..], latent: 1, labels: &labels };
        assert!(matches!(build(pool, &schema, 2, AtlasParams::default()), Err(AtlasError::Shape { .. })));
        let pool = PoolData { rows: &rows, z: &rows, latent: 1, labels: &labels };
        let params = AtlasParams { anchors: 0, ..AtlasParams::default() };
        assert_eq!(build(pool, &schema, 2, params), Err(AtlasError::Params));
        let params = AtlasParams { people: cent_nostd::people::PEOPLE + 1, ..AtlasParams::default() };
        assert_eq!(build(pool, &schema, 2, params), Err(AtlasError::Params));
    }
}
