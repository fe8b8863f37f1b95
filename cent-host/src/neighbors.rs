//! Latent neighbours of a query: `k/2` nearest pool points of the fact class and `k/2` of the
//! contrast class(es), in the VAE's mean space (design §3.3).
//!
//! The pool (training split) is encoded and labelled by the black box once. Each class keeps
//! its own id array, so a neighbour's position inside its class maps back to the right pool
//! row. The search is exact. A sample of the points (every eighth block) gives a distance that
//! the `k`-th nearest almost surely lies under; one vectorised pass then keeps only the points
//! within it, and those few are ordered. When the sample's cut turns out too tight (fewer than
//! `k` points within), the pass is repeated with no cut, so the answer never depends on it.

/// Points per block of the pool's layout: a block stores its points dimension by dimension,
/// so one query's distances to a block are a few whole-block (vectorised) operations.
const BLOCK: usize = 8;

/// Latent widths are padded with zero dimensions (which add exactly nothing to a squared
/// distance) to a multiple of this.
const DIM_STEP: usize = 4;

/// Blocks whose distances are computed before they are tested.
const RUN: usize = 32;

/// One block in this many is in the sample that sets the cut.
const SAMPLE_STRIDE: usize = 8;

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
    /// Per class: pool row ids, and their latent points in blocks of [`BLOCK`] (`[block][dim]
    /// [lane]`, `dims` dimensions; a last block's unused lanes are never reported).
    ids: Vec<Vec<u32>>,
    blocks: Vec<Vec<[f32; BLOCK]>>,
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
        let blocks = ids
            .iter()
            .map(|class_ids| {
                let mut blocks = vec![[0.0; BLOCK]; class_ids.len().div_ceil(BLOCK) * dims];
                for (p, &row) in class_ids.iter().enumerate() {
                    let point = &z[row as usize * latent..(row as usize + 1) * latent];
                    for (d, &v) in point.iter().enumerate() {
                        blocks[(p / BLOCK) * dims + d][p % BLOCK] = v;
                    }
                }
                blocks
            })
            .collect();
        Pool { latent, dims, ids, blocks }
    }

    pub fn latent(&self) -> usize {
        self.latent
    }

    /// Pool rows of one class.
    pub fn class_size(&self, class: usize) -> usize {
        self.ids.get(class).map_or(0, Vec::len)
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
        let classes: Vec<(&[u32], &[[f32; BLOCK]])> = classes
            .iter()
            .filter_map(|&c| Some((self.ids.get(c)?.as_slice(), self.blocks.get(c)?.as_slice())))
            .collect();
        // The common widths are compiled with the width known (the dimension loop unrolled).
        match self.dims {
            4 => self.nearest_of::<4>(&padded, &classes, k),
            8 => self.nearest_of::<8>(&padded, &classes, k),
            12 => self.nearest_of::<12>(&padded, &classes, k),
            16 => self.nearest_of::<16>(&padded, &classes, k),
            _ => self.nearest_of::<0>(&padded, &classes, k),
        }
    }

    /// [`Pool::nearest_in`] with `D` dimensions (`0`: `self.dims`, known only at run time).
    fn nearest_of<const D: usize>(&self, q: &[f32], classes: &[(&[u32], &[[f32; BLOCK]])], k: usize) -> Vec<u32> {
        let total = classes.iter().map(|(ids, _)| ids.len()).sum::<usize>();
        let cut = if k < total { self.sampled_cut::<D>(q, classes, total, k) } else { i32::MAX };
        // A key is a distance's bits above the row id: keys compare exactly like (distance, id).
        let mut keys: Vec<u64> = Vec::with_capacity(k + k / 2);
        self.within::<D>(q, classes, cut, &mut keys);
        if keys.len() < k.min(total) {
            keys.clear();
            self.within::<D>(q, classes, i32::MAX, &mut keys);
        }
        if k < keys.len() {
            keys.select_nth_unstable(k - 1);
            keys.truncate(k);
        }
        keys.sort_unstable();
        keys.into_iter().map(|key| key as u32).collect()
    }

    fn dims<const D: usize>(&self) -> usize {
        if D == 0 { self.dims } else { D }
    }

    /// A distance (as [`bits`]) that at least `k` of the `total` points are very likely within,
    /// read off the distances to every [`SAMPLE_STRIDE`]-th block: the sample rank expected
    /// for the `k`-th nearest plus four standard deviations.
    fn sampled_cut<const D: usize>(
        &self,
        q: &[f32],
        classes: &[(&[u32], &[[f32; BLOCK]])],
        total: usize,
        k: usize,
    ) -> i32 {
        let dims = self.dims::<D>();
        let mut sample: Vec<i32> = Vec::with_capacity(total / SAMPLE_STRIDE + BLOCK);
        for &(ids, blocks) in classes {
            for (b, block) in blocks.chunks_exact(dims).enumerate().step_by(SAMPLE_STRIDE) {
                let valid = (ids.len() - b * BLOCK).min(BLOCK);
                sample.extend(distances(block, q)[..valid].iter().map(|&d| bits(d)));
            }
        }
        let share = sample.len() as f64 / total as f64;
        let expected = k as f64 * share;
        let rank = (expected + 4.0 * (expected * (1.0 - share)).sqrt() + 1.0).ceil() as usize;
        if rank >= sample.len() {
            return i32::MAX;
        }
        *sample.select_nth_unstable(rank).1
    }

    /// Appends the keys of the points within `cut` (as [`bits`]).
    fn within<const D: usize>(&self, q: &[f32], classes: &[(&[u32], &[[f32; BLOCK]])], cut: i32, keys: &mut Vec<u64>) {
        let dims = self.dims::<D>();
        // Distances go through a small buffer a run of blocks at a time: computed in one tight
        // (vectorised) loop, then tested in another, most blocks having no point within the cut.
        let mut buf = [[0.0f32; BLOCK]; RUN];
        for &(ids, blocks) in classes {
            for (run, run_blocks) in blocks.chunks(RUN * dims).enumerate() {
                let run_buf = &mut buf[..run_blocks.len() / dims];
                for (slot, block) in run_buf.iter_mut().zip(run_blocks.chunks_exact(dims)) {
                    *slot = distances(block, q);
                }
                for (b, d) in run_buf.iter().enumerate() {
                    if d.iter().fold(0u32, |any, &v| any | u32::from(bits(v) <= cut)) == 0 {
                        continue;
                    }
                    let first = (run * RUN + b) * BLOCK;
                    for (&v, &id) in d.iter().zip(ids.get(first..).unwrap_or_default()) {
                        if bits(v) <= cut {
                            keys.push((u64::from(bits(v) as u32) << 32) | u64::from(id));
                        }
                    }
                }
            }
        }
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
    fn test_a_too_tight_sampled_cut_falls_back_to_every_point() {
        // The sampled blocks (every eighth) hold the points nearest the query; the rest lie far
        // out, so the sample's cut keeps fewer than k points and the scan must redo it uncut.
        let n = BLOCK * SAMPLE_STRIDE * 8;
        let z: Vec<f32> = (0..n)
            .map(|p| if (p / BLOCK) % SAMPLE_STRIDE == 0 { (p % 61) as f32 / 100.0 } else { 10.0 + (p % 97) as f32 })
            .collect();
        let pool = Pool::new(&z, 1, &vec![0; n], 1);
        let k = 100;
        let classes = [(pool.ids[0].as_slice(), pool.blocks[0].as_slice())];
        let cut = pool.sampled_cut::<0>(&[0.0; 4], &classes, n, k);
        let mut kept = Vec::new();
        pool.within::<0>(&[0.0; 4], &classes, cut, &mut kept);
        assert!(kept.len() < k, "the case must exercise the fallback ({} kept)", kept.len());
        let mut all: Vec<(f32, u32)> = z.iter().enumerate().map(|(i, &v)| (v * v, i as u32)).collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let expect: Vec<u32> = all.iter().take(k).map(|p| p.1).collect();
        assert_eq!(pool.nearest(&[0.0], 0, k), expect);
    }

    #[test]
    fn test_wrong_query_width_finds_nothing() {
        let pool = Pool::new(&[0.0, 1.0, 2.0, 3.0], 2, &[0, 0], 1);
        assert!(pool.nearest(&[0.0], 0, 1).is_empty());
    }
}
