//! Groups of candidates in the order of their best score, when a score is costly to compute
//! and a lower bound of it is cheap: how the explainer ranks contrast leaves by the ranking's
//! objective while searching for neighbours only where the order depends on them.
//!
//! Each group (consecutive candidates with the same key: one contrast leaf's) is represented by
//! its best candidate, the least score with the lower index on ties; groups come out by that
//! score, the earlier group on ties. That is the order a full evaluation gives ([`Lazy`]'s tests
//! compare the two). Candidates are scored in the order of their lower bounds; a group is
//! settled once its best score so far lies strictly below every bound not yet scored (no
//! unscored candidate can reach or tie it), and the least settled group is the next one out
//! once it lies strictly below those bounds too.

use std::ops::Range;

/// The lazy order of a set of grouped candidates.
#[derive(Debug, Clone)]
pub struct Lazy {
    /// Candidates per group, consecutive.
    groups: Vec<Range<usize>>,
    group_of: Vec<usize>,
    lower: Vec<f32>,
    /// Candidate indices by (lower bound, index): the order they are scored in.
    order: Vec<usize>,
    /// How far along `order` scoring has come (candidates of groups already out are passed
    /// over unscored).
    at: usize,
    /// How many candidates have been scored.
    scored: usize,
    /// Per group, its best (score, candidate) so far.
    best: Vec<Option<(f32, usize)>>,
    /// Per group, whether it has been handed out.
    done: Vec<bool>,
}

impl Lazy {
    /// Candidates with group `keys` (consecutive equal keys form a group) and `lower` bounds
    /// of their scores (one per candidate; the scores given to [`Lazy::next`] must not be
    /// below them).
    pub fn new<K: PartialEq>(keys: &[K], lower: Vec<f32>) -> Self {
        let n = keys.len().min(lower.len());
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut group_of = Vec::with_capacity(n);
        for i in 0..n {
            match groups.last_mut() {
                Some(g) if keys[g.start] == keys[i] => g.end = i + 1,
                _ => groups.push(i..i + 1),
            }
            group_of.push(groups.len() - 1);
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| lower[a].total_cmp(&lower[b]).then(a.cmp(&b)));
        let g = groups.len();
        Lazy { groups, group_of, lower, order, at: 0, scored: 0, best: vec![None; g], done: vec![false; g] }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The next group's best candidate and its score, calling `score` for the candidates the
    /// answer depends on (each at most once over all calls); `None` when every group is out.
    pub fn next(&mut self, mut score: impl FnMut(usize) -> f32) -> Option<(usize, f32)> {
        loop {
            // A group already out needs no more scores.
            while self.order.get(self.at).is_some_and(|&i| self.done[self.group_of[i]]) {
                self.at += 1;
            }
            // Every candidate not yet scored has a bound of at least this.
            let floor = self.order.get(self.at).map(|&i| self.lower[i]);
            let pick = (0..self.groups.len())
                .filter(|&g| !self.done[g])
                .filter_map(|g| self.best[g].map(|(s, i)| (s, g, i)))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
                .filter(|&(s, _, _)| floor.is_none_or(|f| s < f));
            if let Some((s, g, i)) = pick {
                self.done[g] = true;
                return Some((i, s));
            }
            let &i = self.order.get(self.at)?;
            self.at += 1;
            self.scored += 1;
            let s = score(i);
            let g = self.group_of[i];
            if self.best[g].is_none_or(|(b, j)| s.total_cmp(&b).then(i.cmp(&j)).is_lt()) {
                self.best[g] = Some((s, i));
            }
        }
    }

    /// How many candidates have been scored so far.
    pub fn scored(&self) -> usize {
        self.scored
    }

    /// The candidates of group `g`.
    pub fn group(&self, g: usize) -> Range<usize> {
        self.groups.get(g).cloned().unwrap_or(0..0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro128PlusPlus;

    /// A draw in `0..n`.
    fn below(rng: &mut Xoshiro128PlusPlus, n: u32) -> u32 {
        rng.next_u32() % n
    }

    /// The order a full evaluation gives: each group's least score (lower index on ties),
    /// groups by score, earlier group on ties.
    fn eager(keys: &[u8], scores: &[f32]) -> Vec<(usize, f32)> {
        let mut best: Vec<(f32, usize)> = Vec::new();
        for i in 0..keys.len() {
            match best.last_mut() {
                Some(last) if keys[last.1] == keys[i] => {
                    if scores[i] < last.0 {
                        *last = (scores[i], i);
                    }
                }
                _ => best.push((scores[i], i)),
            }
        }
        best.sort_by(|a, b| a.0.total_cmp(&b.0));
        best.into_iter().map(|(s, i)| (i, s)).collect()
    }

    #[test]
    fn test_lazy_order_is_the_full_evaluations() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
        let mut saved = 0;
        for case in 0..2000 {
            let n = below(&mut rng, 40) as usize;
            let mut keys: Vec<u8> = Vec::new();
            while keys.len() < n {
                let key = below(&mut rng, 8) as u8;
                let run = 1 + below(&mut rng, 4) as usize;
                keys.extend(std::iter::repeat_n(key, run));
            }
            keys.truncate(n);
            // Coarse values so that ties happen, in bounds and in scores.
            let lower: Vec<f32> = (0..n).map(|_| below(&mut rng, 6) as f32 * 0.5).collect();
            let scores: Vec<f32> = lower.iter().map(|&l| l + below(&mut rng, 5) as f32 * 0.5).collect();
            let want = eager(&keys, &scores);
            let mut lazy = Lazy::new(&keys, lower.clone());
            assert_eq!(lazy.len(), want.len());
            let mut asked = vec![false; n];
            let mut got = Vec::new();
            // Take only a prefix sometimes: what is asked so far must be what the prefix needs.
            let take = if case % 3 == 0 { want.len().min(1) } else { want.len() };
            while got.len() < take {
                let Some(next) = lazy.next(|i| {
                    assert!(!asked[i], "case {case}: candidate {i} scored twice");
                    asked[i] = true;
                    scores[i]
                }) else {
                    break;
                };
                got.push(next);
            }
            assert_eq!(got, want[..take], "case {case}: keys {keys:?} lower {lower:?} scores {scores:?}");
            if take == want.len() {
                assert_eq!(lazy.next(|_| panic!("case {case}: nothing is left to score")), None);
            }
            saved += n - lazy.scored();
        }
        // Taking only the first group spares some scoring.
        assert!(saved > 0);
    }

    #[test]
    fn test_a_bound_above_the_best_score_is_never_scored() {
        // Group 0 scores 1.0 exactly; group 1's bound 5.0 cannot beat it, and is not scored
        // for the first answer.
        let mut lazy = Lazy::new(&[0, 1], vec![1.0, 5.0]);
        let mut asked = Vec::new();
        let first = lazy.next(|i| {
            asked.push(i);
            [1.0, 6.0][i]
        });
        assert_eq!(first, Some((0, 1.0)));
        assert_eq!(asked, vec![0]);
        assert_eq!(lazy.next(|i| [1.0, 6.0][i]), Some((1, 6.0)));
        assert_eq!(lazy.group(1), 1..2);
    }
}
