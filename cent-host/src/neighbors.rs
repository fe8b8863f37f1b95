//! Latent neighbours of a query: `k/2` nearest pool points of the fact class and `k/2` of the
//! contrast class(es), in the VAE's mean space (design §3.3).
//!
//! The pool (training split) is encoded and labelled by the black box once. Each class keeps
//! its own id array, so a neighbour's position inside its class maps back to the right pool
//! row. The search is exact: per query a partial selection over each class's points, which at
//! these sizes (tens of thousands of points, latent 7–32) takes under a millisecond (about 0.7 ms on Adult) and needs
//! no index build.

/// The encoded, labelled pool.
#[derive(Debug, Clone)]
pub struct Pool {
    latent: usize,
    /// Per class: pool row ids and their latent points (row-major, `latent` wide).
    ids: Vec<Vec<u32>>,
    points: Vec<Vec<f32>>,
}

impl Pool {
    /// Groups pool rows by their black-box class. `z` is row-major, `latent` wide.
    pub fn new(z: &[f32], latent: usize, labels: &[usize], classes: usize) -> Self {
        let mut ids = vec![Vec::new(); classes];
        let mut points = vec![Vec::new(); classes];
        for (row, (p, &label)) in z.chunks_exact(latent).zip(labels).enumerate() {
            if label < classes {
                ids[label].push(row as u32);
                points[label].extend_from_slice(p);
            }
        }
        Pool { latent, ids, points }
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
        if k == 0 {
            return Vec::new();
        }
        let mut dist: Vec<f32> = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        for &c in classes {
            let (Some(class_ids), Some(points)) = (self.ids.get(c), self.points.get(c)) else { continue };
            dist.extend(points.chunks_exact(self.latent).map(|p| squared(p, q)));
            ids.extend_from_slice(class_ids);
        }
        // The k-th smallest distance bounds the answer: select on bare floats (cheap), then
        // order only the few rows at or below it by (distance, row id).
        let cut = if k < dist.len() {
            let mut scratch = dist.clone();
            let (_, kth, _) = scratch.select_nth_unstable_by(k - 1, f32::total_cmp);
            *kth
        } else {
            f32::INFINITY
        };
        let mut near: Vec<(f32, u32)> =
            dist.iter().zip(&ids).filter(|(d, _)| d.total_cmp(&cut).is_le()).map(|(&d, &id)| (d, id)).collect();
        near.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        near.truncate(k);
        near.into_iter().map(|(_, id)| id).collect()
    }
}

/// Squared Euclidean distance, in four interleaved partial sums (independent additions the
/// compiler can overlap or vectorise, where one running sum is a serial chain).
fn squared(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a_chunks, a_tail) = a[..n].as_chunks::<4>();
    let (b_chunks, b_tail) = b[..n].as_chunks::<4>();
    let mut acc = [0.0f32; 4];
    for (p, q) in a_chunks.iter().zip(b_chunks) {
        for l in 0..4 {
            let d = p[l] - q[l];
            acc[l] += d * d;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| (x - y) * (x - y)).sum();
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail
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

    #[test]
    fn test_matches_brute_force_sort() {
        let z: Vec<f32> = (0..200).map(|i| ((i * 37) % 101) as f32 / 10.0).collect();
        let labels: Vec<usize> = (0..100).map(|i| i % 3).collect();
        let pool = Pool::new(&z, 2, &labels, 3);
        let q = [4.0, 5.0];
        let mut all: Vec<(f32, u32)> =
            (0..100).filter(|i| labels[*i] == 1).map(|i| (squared(&z[i * 2..i * 2 + 2], &q), i as u32)).collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let expect: Vec<u32> = all.iter().take(7).map(|p| p.1).collect();
        assert_eq!(pool.nearest(&q, 1, 7), expect);
    }
}
