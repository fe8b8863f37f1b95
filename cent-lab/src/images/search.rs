//! CEnt on images.
//!
//! The tree is grown over **patches**: the mean intensity of each 4x4 block of pixels, a 7x7
//! grid of 49 features (a single pixel rarely moves a CNN, and 784 pixel columns exceed what a
//! tree of depth 10 can say). Steps:
//!
//! 1. encode the pool and the query with the image VAE's encoder (mean); the `k` nearest pool
//!    images overall and the `k` nearest of the desired class, labelled by the CNN;
//! 2. add interpolations between the query and its desired-class neighbours (labelled too), so
//!    the tree sees the boundary;
//! 3. grow the host's entropy tree ([`cent_host::surrogate::fit`]) over the patch means; its
//!    leaves of the desired class, ordered by the change of patch means they demand (with one
//!    interval per feature, the order Dijkstra over the tree graph reaches them);
//! 4. realize each leaf from the data: the leaf's **exemplars** are the real desired-class
//!    neighbours whose patches fall inside the leaf; the patches the query violates take the
//!    pixels of the nearest exemplar (in latent space), or a blend of 1/2 or 3/4 of the way to
//!    them; then the boundary point (each violated patch shifted just inside its interval).
//!    Each candidate is **verified with the CNN** at [`PixelConfig::min_probability`];
//! 5. when no leaf's own patches flip the CNN, the tree was wrong where the search looked: the
//!    CNN's verdicts on every realization it offered join the tree's rows and the tree is grown
//!    again (up to [`PixelConfig::refits`] times), so its next leaves ask for the patches the CNN
//!    actually needs (recorded as `tree`);
//! 6. when no tree of these rounds has such a leaf, each leaf's nearest exemplar lends its
//!    other patches, most different first, until the CNN flips (recorded as `exemplar`);
//! 7. every verified candidate is pruned (whole patches, then 2x2 blocks, then faint pixels, as
//!    long as the CNN keeps it) and the one that changes the fewest pixels wins;
//! 8. when nothing verifies, the labelled fallback: the shortest verified blend towards the
//!    latent-nearest desired-class neighbour, pruned. Each result records which step found
//!    it.

use cent_host::blackbox::BlackBox;
use cent_host::surrogate::{self, TreeParams};
use cent_host::vae::Vae;
use cent_nostd::tree::{Bounds, Node, NodeIdx, Tree};

use super::PIXELS;

/// Side of the image, in pixels.
const SIDE: usize = 28;
/// Side of a patch, in pixels.
pub const PATCH: usize = 4;
/// Patches per row of the image.
const GRID: usize = SIDE / PATCH;
/// The tree's features: one per patch.
pub const PATCHES: usize = GRID * GRID;

/// Search sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PixelConfig {
    pub k: usize,
    pub leaves: usize,
    pub margin: f32,
    /// Exemplars tried per leaf.
    pub exemplars: usize,
    /// The CNN's probability of the target class a counterfactual must keep.
    pub min_probability: f32,
    /// Times the tree is grown again, with the model's verdicts on the realizations it offered,
    /// when none of its leaves gave a counterfactual.
    pub refits: usize,
}

impl Default for PixelConfig {
    fn default() -> Self {
        Self { k: 150, leaves: 40, margin: 0.05, exemplars: 3, min_probability: 0.9, refits: 15 }
    }
}

/// The labelled pool the neighbours come from.
#[derive(Debug, Clone, Copy)]
pub struct Pool<'a> {
    pub images: &'a [f32],
    pub latents: &'a [f32],
    pub latent: usize,
    pub predicted: &'a [usize],
}

impl Pool<'_> {
    fn image(&self, i: usize) -> &[f32] {
        &self.images[i * PIXELS..(i + 1) * PIXELS]
    }

    fn distance(&self, i: usize, z: &[f32]) -> f32 {
        self.latents[i * self.latent..(i + 1) * self.latent].iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum()
    }
}

/// Which step produced a counterfactual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PixelFound {
    /// A contrast leaf of the patch tree (first grown or grown again with the CNN's verdicts),
    /// realized from an in-leaf exemplar (or its boundary) in the patches the leaf requires,
    /// verified and pruned.
    Tree,
    /// A contrast leaf whose required patches alone do not flip the CNN: its nearest in-leaf
    /// exemplar's other patches added, most different first, until it flips; then pruned.
    Exemplar,
    /// The fallback: the shortest verified step towards the nearest desired-class neighbour
    /// (in latent space), pruned.
    Interpolation,
}

/// A verified counterfactual image.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelCf {
    pub image: Vec<f32>,
    pub changed: usize,
    pub found: PixelFound,
}

/// The mean intensity of each patch, row-major over the patch grid.
pub fn patch_means(image: &[f32]) -> [f32; PATCHES] {
    let mut means = [0.0f32; PATCHES];
    for (p, mean) in means.iter_mut().enumerate() {
        *mean = patch_pixels(p).map(|i| image[i]).sum::<f32>() / (PATCH * PATCH) as f32;
    }
    means
}

/// The pixel indices of patch `p`.
fn patch_pixels(p: usize) -> impl Iterator<Item = usize> {
    cell_pixels(PATCH, p)
}

/// The pixel indices of cell `c` of the grid of `side` x `side` pixel cells (row-major).
fn cell_pixels(side: usize, c: usize) -> impl Iterator<Item = usize> {
    let per_row = SIDE / side;
    let (top, left) = ((c / per_row) * side, (c % per_row) * side);
    (0..side * side).map(move |k| (top + k / side) * SIDE + left + k % side)
}

/// Finds a verified counterfactual of `x`, or `None`.
pub fn explain<M: BlackBox + ?Sized>(
    model: &M,
    vae: &Vae,
    pool: &Pool<'_>,
    x: &[f32],
    cfg: &PixelConfig,
) -> Option<PixelCf> {
    let class = model.predict(x).ok()?.first().copied()?;
    let desired = 1 - class.min(1);
    let z = vae.encode(x);
    let ids = neighbours(pool, &z, desired, cfg.k);
    let mut rows: Vec<f32> = ids.iter().flat_map(|&i| pool.image(i).iter().copied()).collect();
    rows.extend_from_slice(x);
    for &i in ids.iter().filter(|&&i| pool.predicted[i] == desired) {
        let other = pool.image(i);
        for t in [0.25f32, 0.5, 0.75] {
            rows.extend(x.iter().zip(other).map(|(a, b)| a + t * (b - a)));
        }
    }
    let mut labels = model.predict(&rows).ok()?;
    let query = patch_means(x);
    // Real images of the desired class, nearest first in latent space.
    let mut exemplars: Vec<usize> = ids.iter().copied().filter(|&i| pool.predicted[i] == desired).collect();
    exemplars.sort_by(|&a, &b| pool.distance(a, &z).total_cmp(&pool.distance(b, &z)).then(a.cmp(&b)));
    let exemplar_means: Vec<[f32; PATCHES]> = exemplars.iter().map(|&i| patch_means(pool.image(i))).collect();
    let in_leaf = |bounds: &Bounds| -> Vec<&[f32]> {
        (0..exemplars.len())
            .filter(|&e| {
                exemplar_means[e].iter().enumerate().all(|(j, &v)| {
                    let (lo, hi) = bounds.interval(j);
                    v > lo && v <= hi
                })
            })
            .take(cfg.exemplars)
            .map(|e| pool.image(exemplars[e]))
            .collect()
    };
    let params = TreeParams { max_depth: 10, min_leaf: 2, max_nodes: 127 };
    let mut best: Option<PixelCf> = None;
    let mut leaves: Vec<Contrast> = Vec::new();
    for _ in 0..=cfg.refits {
        let features: Vec<f32> = rows.chunks_exact(PIXELS).flat_map(patch_means).collect();
        let fitted = surrogate::fit(&features, PATCHES, &labels, 2, &[true; PATCHES], params).ok()?;
        let round: Vec<Contrast> =
            ordered_leaves(&fitted.tree(), &query, desired, cfg.margin).into_iter().take(cfg.leaves).collect();
        let mut probes = Probes::default();
        for (bounds, moves) in &round {
            if let Some(image) = realize(model, x, &in_leaf(bounds), moves, desired, cfg.min_probability, &mut probes) {
                keep_fewest(&mut best, model, x, image, desired, cfg.min_probability, PixelFound::Tree);
            }
        }
        leaves.extend(round);
        if best.is_some() || probes.labels.is_empty() {
            break;
        }
        // The tree was wrong about every leaf it offered: it learns the model's verdicts on
        // those probes and is grown again.
        rows.extend_from_slice(&probes.images);
        labels.extend_from_slice(&probes.labels);
    }
    if best.is_none() {
        for (bounds, moves) in &leaves {
            if let Some(&other) = in_leaf(bounds).first()
                && let Some(image) = extend(model, x, other, moves, desired, cfg.min_probability)
            {
                keep_fewest(&mut best, model, x, image, desired, cfg.min_probability, PixelFound::Exemplar);
            }
        }
    }
    best.or_else(|| interpolate(model, pool, &z, &ids, x, desired, cfg.min_probability))
}

/// Images the model was asked about while realizing leaves, with its classes.
#[derive(Debug, Default)]
struct Probes {
    images: Vec<f32>,
    labels: Vec<usize>,
}

/// Prunes a confirmed `image` and keeps it in `best` when it changes fewer pixels.
fn keep_fewest<M: BlackBox + ?Sized>(
    best: &mut Option<PixelCf>,
    model: &M,
    x: &[f32],
    image: Vec<f32>,
    desired: usize,
    min_probability: f32,
    found: PixelFound,
) {
    let image = prune(model, x, image, desired, min_probability);
    let changed = count_changed(x, &image);
    if best.as_ref().is_none_or(|b| changed < b.changed) {
        *best = Some(PixelCf { image, changed, found });
    }
}

/// The first candidate of a leaf the model puts in `desired`, from the leaf's own patches: the
/// violated patches (`moves`) take 1/2, 3/4 or all of the way to each in-leaf exemplar's
/// pixels, nearest exemplar first; then each violated patch shifted to its target mean (the
/// leaf's boundary). Every image asked about is recorded in `probes`.
fn realize<M: BlackBox + ?Sized>(
    model: &M,
    x: &[f32],
    in_leaf: &[&[f32]],
    moves: &[(usize, f32)],
    desired: usize,
    min_probability: f32,
    probes: &mut Probes,
) -> Option<Vec<f32>> {
    let mut try_image = |image: Vec<f32>| -> Option<Vec<f32>> {
        let (class, ok) = judge(model, &image, desired, min_probability)?;
        if ok {
            return Some(image);
        }
        probes.images.extend_from_slice(&image);
        probes.labels.push(class);
        None
    };
    for &other in in_leaf {
        for t in [0.5f32, 0.75, 1.0] {
            let mut image = x.to_vec();
            for &(p, _) in moves {
                for i in patch_pixels(p) {
                    image[i] = x[i] + t * (other[i] - x[i]);
                }
            }
            if let Some(image) = try_image(image) {
                return Some(image);
            }
        }
    }
    let mut image = x.to_vec();
    let means = patch_means(x);
    for &(p, target) in moves {
        let shift = target - means[p];
        for i in patch_pixels(p) {
            image[i] = (x[i] + shift).clamp(0.0, 1.0);
        }
    }
    try_image(image)
}

/// When a leaf's own patches do not move the model: the leaf's patches take the nearest
/// exemplar's pixels, then its other patches follow, those that differ most from the query
/// first, until the model confirms.
fn extend<M: BlackBox + ?Sized>(
    model: &M,
    x: &[f32],
    other: &[f32],
    moves: &[(usize, f32)],
    desired: usize,
    min_probability: f32,
) -> Option<Vec<f32>> {
    let mut image = x.to_vec();
    for &(p, _) in moves {
        patch_pixels(p).for_each(|i| image[i] = other[i]);
    }
    let gap = |p: usize| patch_pixels(p).map(|i| (other[i] - x[i]).abs()).sum::<f32>();
    let mut rest: Vec<usize> = (0..PATCHES).filter(|p| moves.iter().all(|&(m, _)| m != *p)).collect();
    rest.sort_by(|&a, &b| gap(b).total_cmp(&gap(a)).then(a.cmp(&b)));
    for p in rest.into_iter().take_while(|&p| gap(p) > 0.0) {
        patch_pixels(p).for_each(|i| image[i] = other[i]);
        if confirms(model, &image, desired, min_probability) {
            return Some(image);
        }
    }
    None
}

fn count_changed(x: &[f32], image: &[f32]) -> usize {
    x.iter().zip(image).filter(|(a, b)| (*a - *b).abs() > 1e-6).count()
}

/// The fallback: towards the latent-nearest pool image of the desired class, the smallest
/// step `t` (in tenths) whose blend the model puts in `desired`, then pruned.
fn interpolate<M: BlackBox + ?Sized>(
    model: &M,
    pool: &Pool<'_>,
    z: &[f32],
    ids: &[usize],
    x: &[f32],
    desired: usize,
    min_probability: f32,
) -> Option<PixelCf> {
    let dist = |i: usize| -> f32 {
        pool.latents[i * pool.latent..(i + 1) * pool.latent].iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum()
    };
    let mut contrast: Vec<usize> = ids.iter().copied().filter(|&i| pool.predicted[i] == desired).collect();
    contrast.sort_by(|&a, &b| dist(a).total_cmp(&dist(b)).then(a.cmp(&b)));
    for &i in contrast.iter().take(5) {
        let other = &pool.images[i * PIXELS..(i + 1) * PIXELS];
        for step in 1..=10 {
            let t = step as f32 / 10.0;
            let blend: Vec<f32> = x.iter().zip(other).map(|(a, b)| a + t * (b - a)).collect();
            if confirms(model, &blend, desired, min_probability) {
                let image = prune(model, x, blend, desired, min_probability);
                let changed = count_changed(x, &image);
                return Some(PixelCf { image, changed, found: PixelFound::Interpolation });
            }
        }
    }
    None
}

/// `k` nearest pool images by latent distance, plus the `k` nearest of class `desired`.
fn neighbours(pool: &Pool<'_>, z: &[f32], desired: usize, k: usize) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = pool
        .latents
        .chunks_exact(pool.latent)
        .enumerate()
        .map(|(i, l)| (l.iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum::<f32>(), i))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut ids: Vec<usize> = scored.iter().take(k).map(|(_, i)| *i).collect();
    ids.extend(scored.iter().filter(|(_, i)| pool.predicted[*i] == desired).take(k).map(|(_, i)| *i));
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// A contrast leaf: its box, and the features the query must change with their new values.
pub type Contrast = (Bounds, Vec<(usize, f32)>);

/// For each leaf of class `desired` its [`Contrast`] (new values just inside the leaf's
/// intervals), ordered by total L1 change.
pub fn ordered_leaves(tree: &Tree<'_>, x: &[f32], desired: usize, margin: f32) -> Vec<Contrast> {
    let mut found: Vec<(f32, Contrast)> = Vec::new();
    for idx in 0..tree.len() as NodeIdx {
        let Some(Node::Leaf { class, .. }) = tree.node(idx) else { continue };
        if class as usize != desired {
            continue;
        }
        let bounds: Bounds = Bounds::of(tree, idx);
        let mut moves = Vec::new();
        let mut cost = 0.0;
        for (j, &v) in x.iter().enumerate() {
            let (lo, hi) = bounds.interval(j);
            let target = if v > hi {
                (hi - margin).max(0.0)
            } else if v <= lo {
                (lo + margin).min(1.0)
            } else {
                continue;
            };
            if target <= lo || target > hi {
                moves.clear();
                cost = f32::INFINITY;
                break;
            }
            cost += (target - v).abs();
            moves.push((j, target));
        }
        if cost.is_finite() && !moves.is_empty() {
            found.push((cost, (bounds, moves)));
        }
    }
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    found.into_iter().map(|(_, c)| c).collect()
}

/// Whether the model puts `image` in `desired` (its most probable class, ties to the lowest
/// index) with at least `min_probability`; one forward pass, and a failure never confirms.
fn confirms<M: BlackBox + ?Sized>(model: &M, image: &[f32], desired: usize, min_probability: f32) -> bool {
    judge(model, image, desired, min_probability).is_some_and(|(_, ok)| ok)
}

/// The model's class for `image` and whether it [`confirms`] it; `None` when the model fails.
fn judge<M: BlackBox + ?Sized>(
    model: &M,
    image: &[f32],
    desired: usize,
    min_probability: f32,
) -> Option<(usize, bool)> {
    let p = model.probabilities(image).ok()?;
    let best = (0..p.len()).fold(0, |b, i| if p[i] > p[b] { i } else { b });
    Some((best, best == desired && p.get(desired).is_some_and(|&q| q >= min_probability)))
}

/// Restores what the model does not need, while it keeps `image` in `desired` with at least
/// `min_probability`: first whole 4x4 patches, then 2x2 blocks inside the kept ones (each
/// level changed least first), then, in one step, every pixel changed by less than the largest
/// threshold the model allows. Strokes stay or go in blocks, so the answer keeps the
/// exemplar's shapes instead of scattered single pixels, and faint changes no eye would see
/// do not count as changed pixels.
fn prune<M: BlackBox + ?Sized>(
    model: &M,
    x: &[f32],
    mut image: Vec<f32>,
    desired: usize,
    min_probability: f32,
) -> Vec<f32> {
    for side in [PATCH, 2] {
        let change = |image: &[f32], c: usize| cell_pixels(side, c).map(|i| (image[i] - x[i]).abs()).sum::<f32>();
        let cells = (SIDE / side) * (SIDE / side);
        let mut changed: Vec<usize> = (0..cells).filter(|&c| change(&image, c) > 1e-6).collect();
        changed.sort_by(|&a, &b| change(&image, a).total_cmp(&change(&image, b)).then(a.cmp(&b)));
        for c in changed {
            let kept: Vec<f32> = cell_pixels(side, c).map(|i| image[i]).collect();
            cell_pixels(side, c).for_each(|i| image[i] = x[i]);
            if !confirms(model, &image, desired, min_probability) {
                cell_pixels(side, c).zip(kept).for_each(|(i, v)| image[i] = v);
            }
        }
    }
    for threshold in FAINT {
        let restored: Vec<f32> =
            x.iter().zip(&image).map(|(&a, &b)| if (b - a).abs() < threshold { a } else { b }).collect();
        if confirms(model, &restored, desired, min_probability) {
            return restored;
        }
    }
    image
}

/// Thresholds of the last pruning step, largest first: pixel changes below the first one the
/// model allows are undone.
const FAINT: [f32; 5] = [0.5, 0.35, 0.25, 0.15, 0.1];

#[cfg(test)]
mod tests {
    use super::*;
    use cent_host::blackbox::ModelError;

    /// Class 1 with probability rising with the ink of the right half's patch column 5; the
    /// rest of the image does not matter.
    struct RightColumn;

    impl BlackBox for RightColumn {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            PIXELS
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
            Ok(rows
                .chunks_exact(PIXELS)
                .flat_map(|r| {
                    let ink: f32 = (0..GRID).map(|row| patch_means(r)[row * GRID + 5]).sum::<f32>() / GRID as f32;
                    let p1 = (ink * 4.0).min(1.0);
                    [1.0 - p1, p1]
                })
                .collect())
        }
    }

    #[test]
    fn test_prune_keeps_only_what_the_model_needs_and_still_confirms() {
        let x = vec![0.0f32; PIXELS];
        // Ink everywhere: the model needs a quarter of column 5's mean ink at p >= 0.8, i.e.
        // 0.2 of it; faint noise elsewhere is never needed.
        let mut image = vec![0.05f32; PIXELS];
        for p in (0..GRID).map(|row| row * GRID + 5) {
            patch_pixels(p).for_each(|i| image[i] = 1.0);
        }
        assert!(confirms(&RightColumn, &image, 1, 0.8));
        let pruned = prune(&RightColumn, &x, image.clone(), 1, 0.8);
        assert!(confirms(&RightColumn, &pruned, 1, 0.8), "pruning keeps the verdict");
        let changed = count_changed(&x, &pruned);
        // The oracle: 0.2 mean ink of column 5 over 7 patches of 16 pixels at ink 1.0 needs at
        // least 0.2 * 7 * 16 = 22.4 pixels; blocks of 4 keep at most 3 more than that.
        assert!((23..=26).contains(&changed), "changed {changed}");
        assert!(
            (0..PIXELS).filter(|&i| pruned[i] != x[i]).all(|i| (i % SIDE) / PATCH == 5 && pruned[i] == 1.0),
            "only column 5's ink is kept, whole"
        );
    }

    #[test]
    fn test_cells_of_every_size_tile_the_image() {
        for side in [1, 2, PATCH, 7] {
            let mut all: Vec<usize> = (0..(SIDE / side) * (SIDE / side)).flat_map(|c| cell_pixels(side, c)).collect();
            all.sort_unstable();
            assert_eq!(all, (0..PIXELS).collect::<Vec<_>>(), "cells of side {side}");
        }
    }

    #[test]
    fn test_patch_means_average_their_own_block() {
        let mut image = vec![0.0f32; PIXELS];
        // The top-left patch fully inked; one pixel of the last patch.
        for y in 0..PATCH {
            for x in 0..PATCH {
                image[y * SIDE + x] = 1.0;
            }
        }
        image[PIXELS - 1] = 0.8;
        let means = patch_means(&image);
        assert_eq!(means[0], 1.0);
        assert!((means[PATCHES - 1] - 0.05).abs() < 1e-6);
        assert_eq!(means.iter().filter(|&&m| m != 0.0).count(), 2);
        let mut all: Vec<usize> = (0..PATCHES).flat_map(patch_pixels).collect();
        all.sort_unstable();
        assert_eq!(all, (0..PIXELS).collect::<Vec<_>>(), "patches tile the image");
    }
}
