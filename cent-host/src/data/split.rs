//! Seeded train/test split, identical on every machine.
//!
//! The permutation is a Fisher-Yates shuffle driven by `Xoshiro256PlusPlus::seed_from_u64`
//! with unbiased bounded draws written here, so it depends on nothing but the seed and the
//! row count (no `rand` distribution code whose algorithm could change between versions).

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Row indices of the two parts, each sorted ascending (file order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// The project's default share of rows held out for testing.
pub const TEST_FRACTION: f64 = 0.2;

/// Splits `0..n` into train and test; the test part has `round(n * test_fraction)` rows
/// (`test_fraction` is clamped to `[0, 1]`).
pub fn split(n: usize, test_fraction: f64, seed: u64) -> Split {
    let fraction = if test_fraction.is_nan() { 0.0 } else { test_fraction.clamp(0.0, 1.0) };
    let n_test = ((n as f64) * fraction).round() as usize;
    let order = permutation(n, seed);
    let mut test = order[..n_test].to_vec();
    let mut train = order[n_test..].to_vec();
    test.sort_unstable();
    train.sort_unstable();
    Split { train, test }
}

/// A seeded uniform permutation of `0..n`.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = below(&mut rng, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// A uniform draw from `0..bound` (`bound > 0`) by rejection of the biased tail.
fn below(rng: &mut impl Rng, bound: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX - bound + 1) % bound;
    loop {
        let v = rng.next_u64();
        if v <= zone {
            return v % bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_split_sizes_and_partition() {
        let s = split(10, 0.2, 7);
        assert_eq!((s.train.len(), s.test.len()), (8, 2));
        let mut all: Vec<usize> = s.train.iter().chain(&s.test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert!(s.test.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn test_split_is_deterministic_per_seed() {
        assert_eq!(split(1000, 0.2, 42), split(1000, 0.2, 42));
        assert_ne!(split(1000, 0.2, 42).test, split(1000, 0.2, 43).test);
    }

    #[test]
    fn test_permutation_golden() {
        // Pins the algorithm: any change here changes every split of every dataset.
        assert_eq!(permutation(8, 0), [1, 3, 5, 6, 0, 4, 2, 7]);
    }

    #[test]
    fn test_degenerate_fractions() {
        assert!(split(5, 0.0, 1).test.is_empty());
        assert!(split(5, 1.0, 1).train.is_empty());
        assert!(split(5, f64::NAN, 1).test.is_empty());
        assert_eq!(split(0, 0.2, 1), Split { train: vec![], test: vec![] });
    }

    #[test]
    fn test_below_is_roughly_uniform() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[below(&mut rng, 3) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (9_500..10_500).contains(&c)), "{counts:?}");
    }
}
