//! CEnt-style counterfactual search over word-presence features.
//!
//! For one document `x` with model class `c` and desired class `d = 1 - c`:
//! 1. **Neighbours by word overlap** (Jaccard of the word sets; no VAE, as in the paper's text
//!    experiments): the nearest training documents overall and the nearest ones the model puts
//!    in `d`, plus seeded local perturbations of `x` (1 to [`CfConfig::max_perturbed`]
//!    candidate words toggled), all labelled
//!    by the model.
//! 2. **Candidate columns** (at most 64, the core tree's column capacity): present words whose
//!    deletion moves towards `d` and frequent absent words whose insertion does, ranked by the
//!    difference of their presence rates between the two labelled neighbour groups.
//! 3. **Entropy tree** ([`cent_host::surrogate::fit`]) over those columns.
//! 4. **Contrast leaves** of class `d`, ordered by the number of edits they demand of `x`
//!    (with unit edit costs this is the order in which Dijkstra over the tree graph reaches
//!    them); each is applied to `x`, **verified with the model**, and pruned: an edit is dropped
//!    while the model still flips without it.
//! 5. When no leaf verifies, a greedy fallback toggles the candidate word that raises `p(d)`
//!    most, up to [`CfConfig::max_greedy`] edits. Results say which step found them.

use serde::Serialize;

use cent_host::blackbox::BlackBox;
use cent_host::surrogate::{self, TreeParams};
use cent_host::train::SeededRng;
use cent_nostd::tree::{Node, NodeIdx, Tree};

/// Search sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CfConfig {
    /// Nearest training documents overall.
    pub neighbours: usize,
    /// Nearest training documents of the desired class.
    pub contrast_neighbours: usize,
    /// Local perturbations of the query.
    pub perturbations: usize,
    pub max_present: usize,
    pub max_absent: usize,
    /// Contrast leaves tried (in edit order).
    pub leaves: usize,
    pub max_greedy: usize,
    /// Candidate words per side (deletions, insertions) of the greedy fallback.
    pub greedy_candidates: usize,
    /// Most words toggled in one perturbation.
    pub max_perturbed: usize,
}

impl Default for CfConfig {
    fn default() -> Self {
        Self {
            neighbours: 100,
            contrast_neighbours: 100,
            perturbations: 300,
            max_present: 40,
            max_absent: 24,
            leaves: 24,
            max_greedy: 40,
            greedy_candidates: 200,
            max_perturbed: 8,
        }
    }
}

/// Which step produced a counterfactual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Found {
    /// A contrast leaf of the surrogate tree, verified and pruned.
    Tree,
    /// The greedy fallback.
    Greedy,
}

/// A verified counterfactual: the columns to toggle (present -> deleted, absent -> inserted).
#[derive(Debug, Clone, PartialEq)]
pub struct WordCf {
    pub toggles: Vec<usize>,
    pub found: Found,
}

/// The training side the search draws neighbours from.
#[derive(Debug, Clone, Copy)]
pub struct Background<'a> {
    /// Row-major presence rows.
    pub rows: &'a [f32],
    /// The model's class of each row.
    pub predicted: &'a [usize],
    /// Present columns of each row.
    pub present: &'a [Vec<usize>],
    pub n_cols: usize,
}

/// Present columns of a presence row.
pub fn present_cols(row: &[f32]) -> Vec<usize> {
    row.iter().enumerate().filter(|(_, v)| **v > 0.5).map(|(i, _)| i).collect()
}

/// Jaccard overlap of two sorted column sets.
pub fn jaccard(a: &[usize], b: &[usize]) -> f32 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 { 1.0 } else { common as f32 / union as f32 }
}

/// Finds a verified counterfactual of `x`, or `None` when neither step flips the model.
pub fn explain<M: BlackBox + ?Sized>(
    model: &M,
    bg: &Background<'_>,
    x: &[f32],
    cfg: &CfConfig,
    seed: u64,
) -> Option<WordCf> {
    let class = model.predict(x).ok()?.first().copied()?;
    let desired = 1 - class.min(1);
    let neighbours = neighbour_ids(bg, x, desired, cfg);
    let mut cols = candidate_cols(bg, x, &neighbours, desired, cfg.max_present, cfg.max_absent);
    cols.truncate(cent_nostd::capacity::COLUMNS);
    if cols.is_empty() {
        return None;
    }
    let (rows, labels) = local_sample(model, bg, x, &neighbours, &cols, cfg, seed);
    if let Some(toggles) = tree_search(model, x, &rows, &labels, &cols, desired, cfg) {
        return Some(WordCf { toggles, found: Found::Tree });
    }
    let wide = candidate_cols(bg, x, &neighbours, desired, cfg.greedy_candidates, cfg.greedy_candidates);
    greedy(model, x, &wide, desired, cfg.max_greedy).map(|toggles| WordCf { toggles, found: Found::Greedy })
}

/// Indices of the nearest training rows overall and of the nearest ones of class `desired`.
fn neighbour_ids(bg: &Background<'_>, x: &[f32], desired: usize, cfg: &CfConfig) -> Vec<usize> {
    let query = present_cols(x);
    let mut scored: Vec<(f32, usize)> = bg.present.iter().enumerate().map(|(i, p)| (jaccard(&query, p), i)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut ids: Vec<usize> = scored.iter().take(cfg.neighbours).map(|(_, i)| *i).collect();
    let contrast = scored.iter().filter(|(_, i)| bg.predicted[*i] == desired).take(cfg.contrast_neighbours);
    ids.extend(contrast.map(|(_, i)| *i));
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Candidate columns: present words (deletions) and absent words (insertions) ranked by how
/// much more often they occur on the query's side than on the desired side (and vice versa).
fn candidate_cols(
    bg: &Background<'_>,
    x: &[f32],
    ids: &[usize],
    desired: usize,
    max_present: usize,
    max_absent: usize,
) -> Vec<usize> {
    let mut rate = [vec![0.0f32; bg.n_cols], vec![0.0f32; bg.n_cols]];
    let mut count = [0usize; 2];
    for &i in ids {
        let side = usize::from(bg.predicted[i] == desired);
        count[side] += 1;
        for &c in &bg.present[i] {
            rate[side][c] += 1.0;
        }
    }
    for side in 0..2 {
        let n = count[side].max(1) as f32;
        rate[side].iter_mut().for_each(|v| *v /= n);
    }
    let toward = |c: usize| rate[1][c] - rate[0][c];
    let mut present: Vec<usize> = (0..bg.n_cols).filter(|&c| x[c] > 0.5).collect();
    present.sort_by(|&a, &b| toward(a).total_cmp(&toward(b)).then(a.cmp(&b)));
    let mut absent: Vec<usize> = (0..bg.n_cols).filter(|&c| x[c] <= 0.5 && rate[1][c] > 0.0).collect();
    absent.sort_by(|&a, &b| toward(b).total_cmp(&toward(a)).then(a.cmp(&b)));
    let mut cols: Vec<usize> = present.into_iter().take(max_present).collect();
    cols.extend(absent.into_iter().take(max_absent));
    cols
}

/// The tree's training sample over `cols`: neighbours, the query and its perturbations, with
/// the model's labels.
fn local_sample<M: BlackBox + ?Sized>(
    model: &M,
    bg: &Background<'_>,
    x: &[f32],
    ids: &[usize],
    cols: &[usize],
    cfg: &CfConfig,
    seed: u64,
) -> (Vec<f32>, Vec<usize>) {
    let mut full: Vec<f32> = Vec::with_capacity((ids.len() + cfg.perturbations + 1) * bg.n_cols);
    for &i in ids {
        full.extend_from_slice(&bg.rows[i * bg.n_cols..(i + 1) * bg.n_cols]);
    }
    full.extend_from_slice(x);
    let mut rng = SeededRng::new(seed);
    for _ in 0..cfg.perturbations {
        let mut row = x.to_vec();
        let max = cfg.max_perturbed.max(1);
        let flips = 1 + (rng.uniform() * max as f32) as usize;
        for _ in 0..flips.min(max) {
            let c = cols[((rng.uniform() * cols.len() as f32) as usize).min(cols.len() - 1)];
            row[c] = 1.0 - row[c];
        }
        full.extend(row);
    }
    let labels = model.predict(&full).unwrap_or_default();
    let projected = full.chunks_exact(bg.n_cols).flat_map(|r| cols.iter().map(|&c| r[c])).collect();
    (projected, labels)
}

/// Fits the entropy tree and tries its contrast leaves in edit order.
fn tree_search<M: BlackBox + ?Sized>(
    model: &M,
    x: &[f32],
    rows: &[f32],
    labels: &[usize],
    cols: &[usize],
    desired: usize,
    cfg: &CfConfig,
) -> Option<Vec<usize>> {
    let params = TreeParams { max_depth: 8, min_leaf: 2, max_nodes: 127 };
    debug_assert!(cols.len() <= cent_nostd::capacity::COLUMNS);
    let allowed = vec![true; cols.len()];
    let tree = surrogate::fit(rows, cols.len(), labels, 2, &allowed, params).ok()?;
    let local: Vec<f32> = cols.iter().map(|&c| x[c]).collect();
    let mut leaves = contrast_leaves(&tree.tree(), &local, desired);
    leaves.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then(b.1.total_cmp(&a.1)));
    let mut best: Option<Vec<usize>> = None;
    for (edits, _) in leaves.into_iter().take(cfg.leaves) {
        if best.as_ref().is_some_and(|b| b.len() <= 1) {
            break;
        }
        let toggles: Vec<usize> = edits.iter().map(|&e| cols[e]).collect();
        if toggles.is_empty() || !flips(model, x, &toggles, desired) {
            continue;
        }
        let pruned = prune(model, x, toggles, desired);
        if best.as_ref().is_none_or(|b| pruned.len() < b.len()) {
            best = Some(pruned);
        }
    }
    best
}

/// Leaves of class `desired`: the local columns whose value `x` must change to reach each, and
/// the leaf's weight (purity times samples) as a tie-breaker.
pub fn contrast_leaves(tree: &Tree<'_>, x: &[f32], desired: usize) -> Vec<(Vec<usize>, f32)> {
    let mut out = Vec::new();
    let mut stack: Vec<(NodeIdx, Vec<(usize, bool)>)> = vec![(0, Vec::new())];
    while let Some((idx, path)) = stack.pop() {
        match tree.node(idx) {
            Some(Node::Split { col, threshold, left, right }) => {
                let col = col as usize;
                let mut l = path.clone();
                l.push((col, false));
                let mut r = path;
                r.push((col, true));
                // Presence values are 0 or 1; a threshold outside (0, 1) sends both to one side.
                if threshold >= 0.0 {
                    stack.push((left, l));
                }
                if threshold < 1.0 {
                    stack.push((right, r));
                }
            }
            Some(Node::Leaf { class, purity, samples, .. }) if class as usize == desired => {
                let mut edits: Vec<usize> =
                    path.iter().filter(|(c, present)| (x[*c] > 0.5) != *present).map(|(c, _)| *c).collect();
                edits.sort_unstable();
                edits.dedup();
                out.push((edits, purity * f32::from(samples)));
            }
            _ => {}
        }
    }
    out
}

/// `x` with the given columns toggled.
pub fn apply(x: &[f32], toggles: &[usize]) -> Vec<f32> {
    let mut row = x.to_vec();
    for &c in toggles {
        row[c] = 1.0 - row[c];
    }
    row
}

/// True when the model puts `x` with `toggles` applied into `desired`.
pub fn flips<M: BlackBox + ?Sized>(model: &M, x: &[f32], toggles: &[usize], desired: usize) -> bool {
    model.predict(&apply(x, toggles)).is_ok_and(|c| c.first() == Some(&desired))
}

/// Drops edits one at a time while the model still flips without them.
fn prune<M: BlackBox + ?Sized>(model: &M, x: &[f32], mut toggles: Vec<usize>, desired: usize) -> Vec<usize> {
    let mut i = 0;
    while i < toggles.len() && toggles.len() > 1 {
        let mut fewer = toggles.clone();
        fewer.remove(i);
        if flips(model, x, &fewer, desired) {
            toggles = fewer;
        } else {
            i += 1;
        }
    }
    toggles
}

/// Toggles, one at a time, the candidate that raises `p(desired)` most.
fn greedy<M: BlackBox + ?Sized>(
    model: &M,
    x: &[f32],
    cols: &[usize],
    desired: usize,
    max: usize,
) -> Option<Vec<usize>> {
    let mut toggles: Vec<usize> = Vec::new();
    for _ in 0..max {
        let base = apply(x, &toggles);
        let options: Vec<usize> = cols.iter().copied().filter(|c| !toggles.contains(c)).collect();
        let batch: Vec<f32> = options.iter().flat_map(|&c| apply(&base, &[c])).collect();
        let probs = model.probabilities(&batch).ok()?;
        let best = (0..options.len()).max_by(|&a, &b| probs[a * 2 + desired].total_cmp(&probs[b * 2 + desired]))?;
        toggles.push(options[best]);
        if flips(model, x, &toggles, desired) {
            return Some(prune(model, x, toggles, desired));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Class 1 iff at least two of the words 0, 1, 2 are present (a fixed rule, no training).
    #[derive(Debug)]
    struct Vote;

    impl BlackBox for Vote {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            5
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
            Ok(rows
                .chunks_exact(5)
                .flat_map(|r| {
                    let votes = r[..3].iter().filter(|v| **v > 0.5).count();
                    if votes >= 2 { [0.1, 0.9] } else { [0.9, 0.1] }
                })
                .collect())
        }
    }

    fn background() -> (Vec<f32>, Vec<usize>, Vec<Vec<usize>>) {
        let mut rows = Vec::new();
        for bits in 0..32u32 {
            rows.extend((0..5).map(|k| ((bits >> k) & 1) as f32));
        }
        let predicted = Vote.predict(&rows).expect("the vote cannot fail");
        let present = rows.chunks_exact(5).map(present_cols).collect();
        (rows, predicted, present)
    }

    #[test]
    fn test_jaccard_overlap() {
        assert!((jaccard(&[1, 2, 3], &[2, 3, 4]) - 0.5).abs() < 1e-6);
        assert!((jaccard(&[], &[]) - 1.0).abs() < 1e-6);
        assert!(jaccard(&[0], &[1]).abs() < 1e-6);
    }

    #[test]
    fn test_counterfactuals_flip_and_are_minimal() {
        let (rows, predicted, present) = background();
        let bg = Background { rows: &rows, predicted: &predicted, present: &present, n_cols: 5 };
        let cfg = CfConfig { perturbations: 40, ..CfConfig::default() };
        for query in [[1.0, 1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0, 0.0]] {
            let desired = 1 - Vote.predict(&query).expect("the vote cannot fail")[0];
            let cf = explain(&Vote, &bg, &query, &cfg, 7).expect("a counterfactual exists");
            assert!(flips(&Vote, &query, &cf.toggles, desired), "{query:?} -> {cf:?}");
            let votes = query[..3].iter().filter(|v| **v > 0.5).count();
            let needed = if votes >= 2 { votes - 1 } else { 2 - votes };
            assert_eq!(cf.toggles.len(), needed, "{query:?} -> {cf:?}");
            assert!(cf.toggles.iter().all(|&c| c < 3), "irrelevant words edited: {cf:?}");
        }
    }

    #[test]
    fn test_prune_drops_unneeded_edits() {
        let x = [1.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(prune(&Vote, &x, vec![3, 1, 4], 1), vec![1]);
    }
}
