//! CEnt on pixels.
//!
//! The core's tree, graph and search hold at most 64 encoded columns, and an image has 784
//! pixel columns. Rather than change the `no_std` core, each query's surrogate is grown over a
//! **query-specific subset of 64 pixels**: those whose mean intensity differs most between the
//! query's latent neighbours the CNN puts in the current class and those it puts in the desired
//! class. The tree is the host's entropy CART ([`cent_host::surrogate::fit`]) and the contrast
//! leaves are ordered by the L1 change they demand (with one interval per column this is the
//! order Dijkstra over the tree graph would reach them). Steps:
//!
//! 1. encode the pool and the query with the image VAE's encoder (mean); the `k` nearest pool
//!    images overall and the `k` nearest of the desired class, labelled by the CNN;
//! 2. add interpolations between the query and its desired-class neighbours (labelled too), so
//!    the tree sees the boundary;
//! 3. grow the tree over the 64 selected pixels, take its leaves of the desired class;
//! 4. move each violated pixel just inside the leaf's interval (margin 0.05), **verify with
//!    the CNN**, and prune pixels whose change is not needed;
//! 5. when no leaf verifies (64 pixels are often too few to move a CNN), fall back to the
//!    shortest verified blend towards the latent-nearest desired-class neighbour, pruned pixel
//!    by pixel. Each result records which step found it.

use cent_host::blackbox::BlackBox;
use cent_host::surrogate::{self, TreeParams};
use cent_host::vae::Vae;
use cent_nostd::tree::{Bounds, Node, NodeIdx, Tree};

use super::PIXELS;

/// Search sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PixelConfig {
    pub k: usize,
    pub columns: usize,
    pub leaves: usize,
    pub margin: f32,
}

impl Default for PixelConfig {
    fn default() -> Self {
        Self { k: 150, columns: cent_nostd::capacity::COLUMNS, leaves: 40, margin: 0.05 }
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

/// Which step produced a counterfactual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PixelFound {
    /// A contrast leaf of the pixel tree, verified and pruned.
    Tree,
    /// The fallback: the shortest verified step towards the nearest desired-class neighbour
    /// (in latent space), pruned pixel by pixel.
    Interpolation,
}

/// A verified counterfactual image.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelCf {
    pub image: Vec<f32>,
    pub changed: usize,
    pub found: PixelFound,
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
    let mut rows: Vec<f32> =
        ids.iter().flat_map(|&i| pool.images[i * PIXELS..(i + 1) * PIXELS].iter().copied()).collect();
    rows.extend_from_slice(x);
    for &i in ids.iter().filter(|&&i| pool.predicted[i] == desired) {
        let other = &pool.images[i * PIXELS..(i + 1) * PIXELS];
        for t in [0.25f32, 0.5, 0.75] {
            rows.extend(x.iter().zip(other).map(|(a, b)| a + t * (b - a)));
        }
    }
    let labels = model.predict(&rows).ok()?;
    let cols = select_columns(&rows, &labels, desired, cfg.columns);
    let local: Vec<f32> = rows.chunks_exact(PIXELS).flat_map(|r| cols.iter().map(|&c| r[c])).collect();
    let params = TreeParams { max_depth: 10, min_leaf: 2, max_nodes: 127 };
    let tree = surrogate::fit(&local, cols.len(), &labels, 2, &vec![true; cols.len()], params).ok()?;
    let tree = tree.tree();
    let query: Vec<f32> = cols.iter().map(|&c| x[c]).collect();
    let mut best: Option<PixelCf> = None;
    for target in ordered_leaves(&tree, &query, desired, cfg.margin).into_iter().take(cfg.leaves) {
        let mut image = x.to_vec();
        for (j, v) in target {
            image[cols[j]] = v;
        }
        if !predicts(model, &image, desired) {
            continue;
        }
        let image = prune(model, x, image, desired);
        let changed = count_changed(x, &image);
        if best.as_ref().is_none_or(|b| changed < b.changed) {
            best = Some(PixelCf { image, changed, found: PixelFound::Tree });
        }
    }
    best.or_else(|| interpolate(model, pool, &z, &ids, x, desired))
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
            if predicts(model, &blend, desired) {
                let image = prune(model, x, blend, desired);
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

/// The `count` pixels whose mean differs most between the two labelled groups.
pub fn select_columns(rows: &[f32], labels: &[usize], desired: usize, count: usize) -> Vec<usize> {
    let mut sum = [vec![0.0f32; PIXELS], vec![0.0f32; PIXELS]];
    let mut n = [0usize; 2];
    for (row, &label) in rows.chunks_exact(PIXELS).zip(labels) {
        let side = usize::from(label == desired);
        n[side] += 1;
        sum[side].iter_mut().zip(row).for_each(|(s, v)| *s += v);
    }
    let gap = |c: usize| (sum[1][c] / n[1].max(1) as f32 - sum[0][c] / n[0].max(1) as f32).abs();
    let mut cols: Vec<usize> = (0..PIXELS).collect();
    cols.sort_by(|&a, &b| gap(b).total_cmp(&gap(a)).then(a.cmp(&b)));
    cols.truncate(count.min(cent_nostd::capacity::COLUMNS));
    cols.sort_unstable();
    cols
}

/// For each leaf of class `desired`: the local columns to change and their new values (just
/// inside the leaf's interval), ordered by total L1 change.
pub fn ordered_leaves(tree: &Tree<'_>, x: &[f32], desired: usize, margin: f32) -> Vec<Vec<(usize, f32)>> {
    let mut found: Vec<(f32, Vec<(usize, f32)>)> = Vec::new();
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
            found.push((cost, moves));
        }
    }
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    found.into_iter().map(|(_, m)| m).collect()
}

/// True when the model assigns `image` to `desired` (a model failure never counts as a flip).
fn predicts<M: BlackBox + ?Sized>(model: &M, image: &[f32], desired: usize) -> bool {
    model.predict(image).is_ok_and(|c| c.first() == Some(&desired))
}

/// Restores changed pixels to their original value, one at a time, while the CNN still flips.
fn prune<M: BlackBox + ?Sized>(model: &M, x: &[f32], mut image: Vec<f32>, desired: usize) -> Vec<f32> {
    let changed: Vec<usize> = (0..PIXELS).filter(|&p| (x[p] - image[p]).abs() > 1e-6).collect();
    for p in changed {
        let kept = image[p];
        image[p] = x[p];
        if !predicts(model, &image, desired) {
            image[p] = kept;
        }
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_select_columns_prefers_separating_pixels() {
        let mut rows = vec![0.0f32; 4 * PIXELS];
        // Pixel 10 is on only in the desired class; pixel 20 only in the other.
        rows[10] = 1.0;
        rows[PIXELS + 10] = 1.0;
        rows[2 * PIXELS + 20] = 1.0;
        rows[3 * PIXELS + 20] = 1.0;
        let cols = select_columns(&rows, &[1, 1, 0, 0], 1, 2);
        assert_eq!(cols, vec![10, 20]);
    }
}
