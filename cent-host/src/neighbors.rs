//! Latent neighbours of a query: `k/2` nearest pool points of the fact class and `k/2` of the
//! contrast class(es), in the VAE's mean space (design §3.3).
//!
//! The pool (training split) is encoded and labelled by the black box once. Each class's points
//! are split, once, into leaves of at most `LEAF` points by repeated median cuts along the
//! widest dimension (the buckets of a k-d tree), each leaf with its bounding box. A query ranks
//! the leaves by the distance to their boxes (a lower bound on every point inside) and visits
//! them nearest first: once `k` points are in hand, the `k`-th distance is a cut, and the visit
//! stops at the first leaf whose box lies beyond it. The search is exact: its answer is the `k`
//! smallest (distance, row id) pairs over every point, as a full scan would give.

/// Points per block of the pool's layout: a block stores its points dimension by dimension,
/// so one query's distances to a block are a few whole-block (vectorised) operations.
const BLOCK: usize = 8;

/// Points per leaf at most.
const LEAF: usize = 128;

/// Latent widths are padded with zero dimensions (which add exactly nothing to a squared
/// distance) to a multiple of this.
const DIM_STEP: usize = 4;

/// Id of an unused lane (a leaf's last block may be partly filled).
const NONE: u32 = u32::MAX;

/// A distance's bits with the sign cleared, as a non-negative `i32`: they order like the
/// distances (squared distances are never negative; a NaN orders after every number).
#[inline(always)]
fn bits(d: f32) -> i32 {
    (d.to_bits() & 0x7fff_ffff) as i32
}

/// The encoded, labelled pool.
#[derive(Debug, Clone)]
pub struct Pool {
    latent: usize,
    /// `latent` padded with zero dimensions to a multiple of [`DIM_STEP`].
    dims: usize,
    classes: Vec<Class>,
}

/// One class's points, leaf by leaf.
#[derive(Debug, Clone, Default)]
struct Class {
    size: usize,
    /// Pool row ids, one per lane of `blocks` ([`NONE`] in unused lanes).
    ids: Vec<u32>,
    /// The points in blocks of [`BLOCK`]: `[block][dim][lane]`, `dims` dimensions.
    blocks: Vec<[f32; BLOCK]>,
    /// Per leaf, its blocks (`start..end`).
    leaves: Vec<(u32, u32)>,
    /// Per leaf, the lowest and highest value of each dimension (`[leaf][dim]`).
    lo: Vec<f32>,
    hi: Vec<f32>,
}

impl Class {
    fn new(z: &[f32], latent: usize, dims: usize, rows: Vec<u32>) -> Self {
        let point = |r: u32| &z[r as usize * latent..(r as usize + 1) * latent];
        let mut class = Class { size: rows.len(), ..Class::default() };
        let mut rows = rows;
        // Median cuts until every part fits a leaf; parts are emitted left to right.
        let mut parts = vec![(0, rows.len())];
        let mut spans = Vec::new();
        while let Some((start, end)) = parts.pop() {
            if end - start <= LEAF {
                spans.push((start, end));
                continue;
            }
            let part = &mut rows[start..end];
            let (mut lo, mut hi) = (vec![f32::INFINITY; latent], vec![f32::NEG_INFINITY; latent]);
            for &r in part.iter() {
                for (d, &v) in point(r).iter().enumerate() {
                    lo[d] = lo[d].min(v);
                    hi[d] = hi[d].max(v);
                }
            }
            let widest = (0..latent).max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])).then(b.cmp(&a)));
            let d = widest.unwrap_or(0);
            let mid = part.len() / 2;
            part.select_nth_unstable_by(mid, |&a, &b| point(a)[d].total_cmp(&point(b)[d]).then(a.cmp(&b)));
            parts.push((start + mid, end));
            parts.push((start, start + mid));
        }
        for (start, end) in spans {
            let first = class.blocks.len() / dims;
            let leaf = &rows[start..end];
            let blocks = leaf.len().div_ceil(BLOCK);
            class.blocks.resize((first + blocks) * dims, [0.0; BLOCK]);
            class.ids.resize((first + blocks) * BLOCK, NONE);
            let (mut lo, mut hi) = (vec![0.0f32; dims], vec![0.0f32; dims]);
            lo[..latent].fill(f32::INFINITY);
            hi[..latent].fill(f32::NEG_INFINITY);
            for (p, &r) in leaf.iter().enumerate() {
                let (b, lane) = (first + p / BLOCK, p % BLOCK);
                class.ids[b * BLOCK + lane] = r;
                for (d, &v) in point(r).iter().enumerate() {
                    class.blocks[b * dims + d][lane] = v;
                    lo[d] = lo[d].min(v);
                    hi[d] = hi[d].max(v);
                }
            }
            class.leaves.push((first as u32, (first + blocks) as u32));
            class.lo.extend(lo);
            class.hi.extend(hi);
        }
        class
    }

    /// Squared distance from `q` to leaf `leaf`'s box.
    fn box_distance(&self, leaf: usize, q: &[f32]) -> f32 {
        let dims = q.len();
        let (lo, hi) = (&self.lo[leaf * dims..(leaf + 1) * dims], &self.hi[leaf * dims..(leaf + 1) * dims]);
        q.iter().zip(lo.iter().zip(hi)).fold(0.0, |acc, (&v, (&l, &h))| {
            let gap = (l - v).max(0.0) + (v - h).max(0.0);
            acc + gap * gap
        })
    }
}

impl Pool {
    /// Groups pool rows by their black-box class. `z` is row-major, `latent` wide.
    pub fn new(z: &[f32], latent: usize, labels: &[usize], classes: usize) -> Self {
        let mut ids = vec![Vec::new(); classes];
        for (row, &label) in labels.iter().enumerate().take(z.len() / latent.max(1)) {
            if label < classes {
                ids[label].push(row as u32);
            }
        }
        let dims = latent.next_multiple_of(DIM_STEP);
        // With no latent dimension there is nothing to measure (queries find nothing).
        let classes = ids
            .into_iter()
            .map(|rows| {
                if latent == 0 {
                    Class { size: rows.len(), ..Class::default() }
                } else {
                    Class::new(z, latent, dims, rows)
                }
            })
            .collect();
        Pool { latent, dims, classes }
    }

    pub fn latent(&self) -> usize {
        self.latent
    }

    /// Every row id below `rows`, class by class and leaf by leaf, so that rows near each other
    /// in the latent space come together, then the rows of no class in id order: an order to
    /// lay the pool out in, for reading a query's neighbours from a few places instead of
    /// thousands.
    pub fn layout(&self, rows: usize) -> Vec<u32> {
        let mut order: Vec<u32> = Vec::with_capacity(rows);
        let mut placed = vec![false; rows];
        for id in self.classes.iter().flat_map(|c| c.ids.iter().copied()).filter(|&id| id != NONE) {
            if let Some(p) = placed.get_mut(id as usize).filter(|p| !**p) {
                *p = true;
                order.push(id);
            }
        }
        order.extend((0..rows as u32).filter(|&id| !placed[id as usize]));
        order
    }

    /// Pool rows of one class.
    pub fn class_size(&self, class: usize) -> usize {
        self.classes.get(class).map_or(0, |c| c.size)
    }

    /// Pool row ids of the `k` nearest points of class `class` to `q`, nearest first (ties by
    /// row id).
    pub fn nearest(&self, q: &[f32], class: usize, k: usize) -> Vec<u32> {
        self.nearest_in(q, &[class], k)
    }

    /// Like [`Pool::nearest`] over the union of several classes.
    pub fn nearest_in(&self, q: &[f32], classes: &[usize], k: usize) -> Vec<u32> {
        if k == 0 || q.len() != self.latent || self.latent == 0 {
            return Vec::new();
        }
        let mut padded = q.to_vec();
        padded.resize(self.dims, 0.0);
        let mut wanted = classes.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let classes: Vec<&Class> = wanted.iter().filter_map(|&c| self.classes.get(c)).collect();
        let k = k.min(classes.iter().map(|c| c.size).sum());
        if k == 0 {
            return Vec::new();
        }
        // The common widths are compiled with the width known (the dimension loop unrolled).
        match self.dims {
            4 => self.nearest_of::<4>(&padded, &classes, k),
            8 => self.nearest_of::<8>(&padded, &classes, k),
            12 => self.nearest_of::<12>(&padded, &classes, k),
            16 => self.nearest_of::<16>(&padded, &classes, k),
            _ => self.nearest_of::<0>(&padded, &classes, k),
        }
    }

    /// [`Pool::nearest_in`] with `D` dimensions (`0`: `self.dims`, known only at run time), for
    /// `1 <= k <=` the points of `classes`.
    fn nearest_of<const D: usize>(&self, q: &[f32], classes: &[&Class], k: usize) -> Vec<u32> {
        let dims = if D == 0 { self.dims } else { D };
        // Every leaf (numbered across the classes) by the distance to its box, nearest first:
        // the distance's bits above the leaf's number.
        let mut leaves: Vec<(&Class, usize)> = Vec::new();
        for class in classes {
            leaves.extend((0..class.leaves.len()).map(|l| (*class, l)));
        }
        let mut order: Vec<u64> = leaves
            .iter()
            .enumerate()
            .map(|(i, &(class, l))| (u64::from(bits(class.box_distance(l, q)) as u32) << 32) | i as u64)
            .collect();
        order.sort_unstable();
        // A key is a distance's bits above the row id: keys compare exactly like (distance, id).
        let mut keys: Vec<u64> = Vec::with_capacity(2 * k + LEAF);
        let mut cut = i32::MAX;
        for &key in &order {
            let (class, leaf) = leaves[key as u32 as usize];
            // Along each dimension the gap to the box is at most a point's difference, and both
            // sums run in the same order, so (rounding being monotone) the box distance never
            // exceeds a point's computed distance; the margin is slack on top of that.
            let bound = f32::from_bits((key >> 32) as u32);
            if cut != i32::MAX && bound * (1.0 - 1e-4) > f32::from_bits(cut as u32) {
                break;
            }
            let (start, end) = class.leaves[leaf];
            let (start, end) = (start as usize, end as usize);
            let blocks = class.blocks[start * dims..end * dims].chunks_exact(dims);
            for (block, ids) in blocks.zip(class.ids[start * BLOCK..end * BLOCK].chunks_exact(BLOCK)) {
                let d = distances(block, q);
                for (&v, &id) in d.iter().zip(ids) {
                    if bits(v) <= cut && id != NONE {
                        keys.push((u64::from(bits(v) as u32) << 32) | u64::from(id));
                    }
                }
            }
            // With `k` keys in hand the `k`-th is a cut; keys beyond it can never be chosen.
            if keys.len() >= k && (cut == i32::MAX || keys.len() >= 2 * k) {
                keys.select_nth_unstable(k - 1);
                keys.truncate(k);
                cut = (keys[k - 1] >> 32) as i32;
            }
        }
        if k < keys.len() {
            keys.select_nth_unstable(k - 1);
            keys.truncate(k);
        }
        keys.sort_unstable();
        keys.into_iter().map(|key| key as u32).collect()
    }
}

/// Squared distances from `q` to the points of one block (`[dim][lane]`).
#[inline(always)]
fn distances(block: &[[f32; BLOCK]], q: &[f32]) -> [f32; BLOCK] {
    block.iter().zip(q).fold([0.0; BLOCK], |acc, (dim, &qd)| add_squares(acc, dim, qd))
}

/// `acc + (dim - q)²`, lane by lane, on values (one vector operation each).
#[inline(always)]
fn add_squares(mut acc: [f32; BLOCK], dim: &[f32; BLOCK], q: f32) -> [f32; BLOCK] {
    for l in 0..BLOCK {
        let t = dim[l] - q;
        acc[l] += t * t;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_ids_map_back_to_pool_rows() {
        // Rows 0..6 on a line; classes alternate, so per-class positions differ from row ids.
        let z: Vec<f32> = (0..6).map(|i| i as f32).collect();
        let labels = [0, 1, 0, 1, 0, 1];
        let pool = Pool::new(&z, 1, &labels, 2);
        assert_eq!(pool.nearest(&[3.9], 0, 2), vec![4, 2]);
        assert_eq!(pool.nearest(&[3.9], 1, 2), vec![3, 5]);
        assert_eq!(pool.nearest_in(&[0.2], &[0, 1], 3), vec![0, 1, 2]);
        assert_eq!(pool.class_size(1), 3);
    }

    #[test]
    fn test_ties_at_the_cut_go_to_the_lowest_row_ids() {
        let pool = Pool::new(&[1.0, 1.0, 1.0, 1.0, 0.0], 1, &[0, 0, 0, 0, 0], 1);
        assert_eq!(pool.nearest(&[0.0], 0, 3), vec![4, 0, 1]);
        assert!(pool.nearest(&[0.0], 0, 0).is_empty());
    }

    #[test]
    fn test_k_larger_than_class_returns_all() {
        let pool = Pool::new(&[0.0, 0.0, 1.0, 1.0], 2, &[0, 0], 2);
        assert_eq!(pool.nearest(&[1.0, 1.0], 0, 10), vec![1, 0]);
        assert!(pool.nearest(&[1.0, 1.0], 1, 10).is_empty());
    }

    /// Squared distance summed dimension by dimension, as the pool does.
    fn plain(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).fold(0.0, |acc, (x, y)| acc + (x - y) * (x - y))
    }

    #[test]
    fn test_matches_brute_force_sort() {
        // Coarse values make many exact ties; several widths exercise partial blocks, padding and
        // both the fixed-width and the run-time-width scans.
        for latent in [1, 2, 3, 8, 11, 16, 21] {
            let n = 997;
            let z: Vec<f32> = (0..n * latent).map(|i| ((i * 37 + i / 7) % 23) as f32 / 4.0).collect();
            let labels: Vec<usize> = (0..n).map(|i| (i * 7 / 3) % 3).collect();
            let pool = Pool::new(&z, latent, &labels, 3);
            let q: Vec<f32> = (0..latent).map(|d| 2.0 + d as f32 * 0.3).collect();
            for classes in [vec![1], vec![0, 2]] {
                let mut all: Vec<(f32, u32)> = (0..n)
                    .filter(|i| classes.contains(&labels[*i]))
                    .map(|i| (plain(&z[i * latent..(i + 1) * latent], &q), i as u32))
                    .collect();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                for k in [1, 7, 100, 331, 700] {
                    let expect: Vec<u32> = all.iter().take(k).map(|p| p.1).collect();
                    assert_eq!(pool.nearest_in(&q, &classes, k), expect, "latent {latent}, {classes:?}, k {k}");
                }
            }
        }
    }

    #[test]
    fn test_many_leaves_match_brute_force() {
        // Clustered points over many leaves, queries inside and far outside the data, and k
        // from one to more than the class holds: the leaf visit must prune without losing any.
        let (n, latent) = (5000, 8);
        let mut seed = 11u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 10_000) as f32 / 10_000.0
        };
        let z: Vec<f32> =
            (0..n * latent).map(|i| ((i / latent) % 7) as f32 + next() * (1.0 + (i % 3) as f32)).collect();
        let labels: Vec<usize> = (0..n).map(|i| usize::from(i % 5 == 0)).collect();
        let pool = Pool::new(&z, latent, &labels, 2);
        for q in [vec![3.1; latent], vec![-40.0; latent], z[17 * latent..18 * latent].to_vec()] {
            for class in [0, 1] {
                let mut all: Vec<(f32, u32)> = (0..n)
                    .filter(|&i| labels[i] == class)
                    .map(|i| (plain(&z[i * latent..(i + 1) * latent], &q), i as u32))
                    .collect();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                for k in [1, 10, 250, 500, 999, 6000] {
                    let expect: Vec<u32> = all.iter().take(k).map(|p| p.1).collect();
                    assert_eq!(pool.nearest(&q, class, k), expect, "class {class}, k {k}, q {}", q[0]);
                }
            }
        }
    }

    #[test]
    fn test_layout_is_every_row_once_with_leaves_together() {
        // Four clusters, labels that leave a row outside every class (label 3 of 2 classes).
        let n = 1000;
        let z: Vec<f32> = (0..n).map(|i| (i % 4) as f32 * 100.0 + (i / 4) as f32 * 0.01).collect();
        let labels: Vec<usize> = (0..n).map(|i| if i == 7 { 3 } else { usize::from(i % 8 == 0) }).collect();
        let pool = Pool::new(&z, 1, &labels, 2);
        let layout = pool.layout(n);
        let mut sorted = layout.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        assert_eq!(layout.last(), Some(&7), "the row of no class comes last");
        // Class by class: every class-1 row before every class-0 row or after, not mixed.
        let class_at: Vec<usize> = layout.iter().take(n - 1).map(|&id| labels[id as usize]).collect();
        assert_eq!(class_at.windows(2).filter(|w| w[0] != w[1]).count(), 1);
        // Rows near each other come together: in id order the cluster changes at every row; laid
        // out, only where a leaf ends or holds the edge of a cluster (at most two per leaf).
        let cluster: Vec<u32> = layout.iter().take(n - 1).map(|&id| id % 4).collect();
        let changes = cluster.windows(2).filter(|w| w[0] != w[1]).count();
        let leaves = pool.classes.iter().map(|c| c.leaves.len()).sum::<usize>();
        assert!(changes <= 2 * leaves && leaves < 16, "{changes} changes over {leaves} leaves");
    }

    #[test]
    fn test_repeated_classes_huge_k_and_missing_classes() {
        let z: Vec<f32> = (0..40).map(|i| i as f32).collect();
        let labels: Vec<usize> = (0..40).map(|i| i % 2).collect();
        let pool = Pool::new(&z, 1, &labels, 2);
        // A class named twice counts once; k beyond the points asks for all of them.
        assert_eq!(pool.nearest_in(&[0.0], &[0, 0], 3), vec![0, 2, 4]);
        assert_eq!(pool.nearest_in(&[0.0], &[1, 0, 1], usize::MAX).len(), 40);
        assert!(pool.nearest_in(&[0.0], &[7], 5).is_empty());
    }

    #[test]
    fn test_zero_width_pool_finds_nothing() {
        let pool = Pool::new(&[], 0, &[0; 300], 1);
        assert_eq!(pool.class_size(0), 0);
        assert!(pool.nearest(&[], 0, 5).is_empty());
    }

    #[test]
    fn test_wrong_query_width_finds_nothing() {
        let pool = Pool::new(&[0.0, 1.0, 2.0, 3.0], 2, &[0, 0], 1);
        assert!(pool.nearest(&[0.0], 0, 1).is_empty());
    }
}
