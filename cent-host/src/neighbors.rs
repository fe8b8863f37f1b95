//! Latent neighbours of a query: `k/2` nearest pool points of the fact class and `k/2` of the
//! contrast class(es), in the VAE's mean space (design §3.3).
//!
//! The pool (training split) is encoded and labelled by the black box once. Each class keeps
//! its own id array, so a neighbour's position inside its class maps back to the right pool
//! row. The search is exact: per query one vectorised pass over each class's points for the
//! distances, then a bucket count that leaves only the few points near the cut to be ordered.

/// Points per block of the pool's layout: a block stores its points dimension by dimension,
/// so one query's distances to a block are a few whole-block (vectorised) operations.
const BLOCK: usize = 8;

/// Distance buckets of the selection: the top bits of a non-negative `f32` (sign excluded),
/// which order like the values. 11 bits keep the exponent and three mantissa bits.
const BUCKET_SHIFT: u32 = 20;
const BUCKETS: usize = 1 << (31 - BUCKET_SHIFT);

/// The encoded, labelled pool.
#[derive(Debug, Clone)]
pub struct Pool {
    latent: usize,
    /// Per class: pool row ids, and their latent points in blocks of [`BLOCK`] (`[block][dim]
    /// [lane]`; a last block's unused lanes are never read).
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
        let blocks = ids
            .iter()
            .map(|class_ids| {
                let mut blocks = vec![[0.0; BLOCK]; class_ids.len().div_ceil(BLOCK) * latent];
                for (p, &row) in class_ids.iter().enumerate() {
                    let point = &z[row as usize * latent..(row as usize + 1) * latent];
                    for (d, &v) in point.iter().enumerate() {
                        blocks[(p / BLOCK) * latent + d][p % BLOCK] = v;
                    }
                }
                blocks
            })
            .collect();
        Pool { latent, ids, blocks }
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
        if k == 0 || q.len() != self.latent {
            return Vec::new();
        }
        let classes: Vec<(&[u32], &[[f32; BLOCK]])> = classes
            .iter()
            .filter_map(|&c| Some((self.ids.get(c)?.as_slice(), self.blocks.get(c)?.as_slice())))
            .collect();
        let total = classes.iter().map(|(ids, _)| ids.len()).sum::<usize>();
        let mut dist = Vec::with_capacity(total + BLOCK);
        for &(ids, blocks) in &classes {
            self.distances(q, blocks, ids.len(), &mut dist);
        }
        let ids: Vec<&[u32]> = classes.iter().map(|&(ids, _)| ids).collect();
        smallest(&dist, &ids, k)
    }

    /// Appends the squared distances from `q` to the first `n` points of `blocks`.
    fn distances(&self, q: &[f32], blocks: &[[f32; BLOCK]], n: usize, out: &mut Vec<f32>) {
        let start = out.len();
        for block in blocks.chunks_exact(self.latent.max(1)) {
            out.extend_from_slice(
                &block.iter().zip(q).fold([0.0f32; BLOCK], |acc, (dim, &qd)| add_squares(acc, dim, qd)),
            );
        }
        out.truncate(start + n);
    }
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

/// The ids of the `k` smallest distances, ordered by (distance, id).
///
/// One counting pass over the distances' top bits finds the bucket holding the `k`-th smallest;
/// only points in it or below are kept, and they are ordered as integers: a distance's bits
/// (sign cleared) above its id compare exactly like (distance, id).
fn smallest(dist: &[f32], ids: &[&[u32]], k: usize) -> Vec<u32> {
    let bits = |d: f32| d.to_bits() & 0x7fff_ffff;
    let mut limit = u32::MAX;
    if k < dist.len() {
        let mut counts = [0u32; BUCKETS];
        for &d in dist {
            counts[(bits(d) >> BUCKET_SHIFT) as usize] += 1;
        }
        let (mut cut, mut below) = (0, 0);
        while below + (counts[cut] as usize) < k {
            below += counts[cut] as usize;
            cut += 1;
        }
        limit = ((cut as u32 + 1) << BUCKET_SHIFT) - 1;
    }
    // `dist` holds the classes' segments one after the other, in the order of `ids`.
    let mut keys: Vec<u64> = Vec::with_capacity(k.min(dist.len()) * 2);
    let mut segment = dist;
    for ids in ids {
        let (here, rest) = segment.split_at(ids.len().min(segment.len()));
        for (&d, &id) in here.iter().zip(*ids) {
            if bits(d) <= limit {
                keys.push((u64::from(bits(d)) << 32) | u64::from(id));
            }
        }
        segment = rest;
    }
    if k < keys.len() {
        keys.select_nth_unstable(k - 1);
        keys.truncate(k);
    }
    keys.sort_unstable();
    keys.into_iter().map(|key| key as u32).collect()
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
        // Coarse values make many exact ties; several widths exercise partial blocks.
        for latent in [1, 2, 3, 8, 11] {
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
    fn test_wrong_query_width_finds_nothing() {
        let pool = Pool::new(&[0.0, 1.0, 2.0, 3.0], 2, &[0, 0], 1);
        assert!(pool.nearest(&[0.0], 0, 1).is_empty());
    }
}
