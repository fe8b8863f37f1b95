//! The people each anchor of a device bundle carries: the device's last resort when no region
//! of its trees is confirmed (design §4), chosen at export by the queries they answer.
//!
//! For each anchor, the candidates are the [`CANDIDATES`] pool rows of another class nearest to
//! it in latent space, a quarter as many of its own class (for the queries of another class
//! routed to it) and [`SPREAD`] rows of another class spread evenly over the pool (people
//! unlike the anchor's neighbours: the nearest lie on the boundary, and moved onto a query's
//! reach they often fall back across it); the queries are up to [`QUERIES`] pool rows routed to
//! it, spread evenly. Each candidate is moved onto what each query can reach under the schema's default
//! constraints ([`cent_nostd::people::project`], as the device moves it) and the model judges
//! the result: it answers the query when the model gives it another class than the query's
//! with at least the device's lead ([`CONFIRM_LEAD`]). The anchor carries the candidates that
//! answer the most queries no earlier choice answers, greedily; ties go to the nearer.

use crate::atlas::{Atlas, PoolData};
use crate::blackbox::Model;
use cent_nostd::atlas::CONFIRM_LEAD;
use cent_nostd::people::{code, project};
use cent_nostd::schema::Schema;

/// Pool rows of another class, nearest to the anchor, each anchor chooses its people from.
pub const CANDIDATES: usize = 128;

/// Pool rows of another class, spread evenly over the pool, each anchor also chooses from.
pub const SPREAD: usize = 64;

/// Pool rows routed to an anchor that its candidates are tried on, at most.
pub const QUERIES: usize = 64;

/// The people of an atlas and what they were chosen on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct People {
    /// The records ([`cent_nostd::people`]), anchor after anchor; empty for none.
    pub bytes: Vec<u8>,
    /// People per anchor.
    pub per_anchor: usize,
    /// Pool rows they were tried on (routed to their anchors), over all anchors.
    pub queries: usize,
    /// Of those, the rows some person of their anchor answers.
    pub answered: usize,
}

/// `per_anchor` people for every anchor of `atlas` (built from `pool` under the device
/// `schema`), judged by `model`; none when `per_anchor` is 0 or some anchor has fewer rows to
/// choose from.
pub fn choose(pool: PoolData<'_>, atlas: &Atlas, schema: &Schema, model: &Model, per_anchor: usize) -> People {
    let columns = schema.columns();
    let classes = model.mlp().outputs();
    let row = |i: usize| &pool.rows[i * columns..(i + 1) * columns];
    let query = schema.default_query();
    let routed: Vec<usize> = pool.z.chunks_exact(pool.latent).map(|z| atlas.nearest(z)).collect();
    let mut chosen_all = People { per_anchor, ..People::default() };
    if per_anchor == 0 {
        return People::default();
    }
    for (a, (centre, &class)) in atlas.anchors.chunks_exact(pool.latent).zip(&atlas.anchor_class).enumerate() {
        let dist = |i: usize| {
            let z = &pool.z[i * pool.latent..(i + 1) * pool.latent];
            z.iter().zip(centre).map(|(p, q)| (p - q) * (p - q)).sum::<f32>()
        };
        // The nearest rows of another class, and a few of the anchor's own class for the
        // queries of another class routed to it.
        let mut near: Vec<(f32, usize)> = Vec::new();
        for (own, take) in [(false, CANDIDATES), (true, CANDIDATES / 4)] {
            let mut these: Vec<(f32, usize)> =
                (0..pool.labels.len()).filter(|&i| (pool.labels[i] == class) == own).map(|i| (dist(i), i)).collect();
            these.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
            these.truncate(take);
            near.extend(these);
        }
        // And rows of another class spread over the whole pool: people unlike the anchor's
        // neighbours, for the queries they cannot answer.
        let others: Vec<usize> = (0..pool.labels.len()).filter(|&i| pool.labels[i] != class).collect();
        let stride = others.len().div_ceil(SPREAD).max(1);
        for &i in others.iter().step_by(stride) {
            if !near.iter().any(|&(_, j)| j == i) {
                near.push((dist(i), i));
            }
        }
        if near.len() < per_anchor {
            return People::default();
        }
        let mine: Vec<usize> = (0..routed.len()).filter(|&i| routed[i] == a).collect();
        let step = mine.len().div_ceil(QUERIES).max(1);
        let queries: Vec<usize> = mine.iter().step_by(step).copied().collect();
        // answers[c][q]: candidate c, moved onto query q's reach, answers it.
        let mut answers = vec![vec![false; queries.len()]; near.len()];
        let mut moved = vec![0f32; near.len() * columns];
        for (q, &r) in queries.iter().enumerate() {
            let x = row(r);
            for (c, &(_, i)) in near.iter().enumerate() {
                let cand = &mut moved[c * columns..(c + 1) * columns];
                cand.copy_from_slice(row(i));
                if !project(schema, &query, x, cand) || cand == x {
                    cand.copy_from_slice(x);
                }
            }
            let proba = model.forward(&moved);
            for (c, p) in proba.chunks_exact(classes).enumerate() {
                answers[c][q] = moved[c * columns..(c + 1) * columns] != *x && leads(p, pool.labels[r]);
            }
        }
        let mut covered = vec![false; queries.len()];
        let mut chosen: Vec<usize> = Vec::new();
        for _ in 0..per_anchor {
            let best = (0..near.len())
                .filter(|c| !chosen.contains(c))
                .max_by_key(|&c| {
                    let new = answers[c].iter().zip(&covered).filter(|(a, done)| **a && !**done).count();
                    (new, std::cmp::Reverse(c))
                })
                .unwrap_or(0);
            for (done, a) in covered.iter_mut().zip(&answers[best]) {
                *done |= *a;
            }
            chosen.push(best);
        }
        chosen_all.queries += queries.len();
        chosen_all.answered += covered.iter().filter(|c| **c).count();
        for c in chosen {
            let i = near[c].1;
            chosen_all.bytes.push(pool.labels[i] as u8);
            for f in schema.features() {
                chosen_all.bytes.extend(code(f.kind, &row(i)[f.columns()]).to_le_bytes());
            }
        }
    }
    chosen_all
}

/// Whether probabilities `p` put a class other than `fact` first with the device's lead over
/// the runner-up.
fn leads(p: &[f32], fact: usize) -> bool {
    let Some((top, &pt)) = p.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) else { return false };
    let second = p.iter().enumerate().filter(|(k, _)| *k != top).map(|(_, v)| *v).fold(0.0f32, f32::max);
    top != fact && (pt.max(f32::MIN_POSITIVE) / second.max(f32::MIN_POSITIVE)).ln() >= CONFIRM_LEAD
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackbox::ModelKind;
    use crate::layers::{Activation, Dense, Mlp};
    use cent_nostd::schema::{Feature, Mutability};

    /// Class 1 iff `x0 > 0.5`, with a lead of 10 logits per unit past it; the second feature
    /// is immutable.
    fn setting() -> (Schema, Model) {
        let mut schema = Schema::new(2);
        schema.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        schema.push(Feature::continuous(1, 0.0, 1.0).with_mutability(Mutability::Immutable)).unwrap();
        let layer = Dense {
            inputs: 2,
            outputs: 2,
            weights: vec![0.0, 0.0, 10.0, 0.0],
            bias: vec![0.0, -5.0],
            activation: Activation::Softmax,
        };
        (schema, Model::new(ModelKind::Lr, Mlp { layers: vec![layer] }))
    }

    /// Anchors at `x0` = 0.2 (class 0) and 0.8 (class 1), rows being their own latent means.
    fn two_anchors() -> Atlas {
        Atlas {
            latent: 2,
            anchors: vec![0.2, 0.5, 0.8, 0.5],
            anchor_class: vec![0, 1],
            trees: Vec::new(),
            people: Vec::new(),
        }
    }

    #[test]
    fn test_each_anchor_carries_the_people_that_answer_its_queries() {
        let (schema, model) = setting();
        // Rows are their own latent means. Class 0 around x0 = 0.2; of class 1, one just past
        // the boundary (nearest to the class-0 anchor, but short of the lead) and one well past.
        let rows = [0.1f32, 0.5, 0.2, 0.4, 0.3, 0.6, 0.52, 0.5, 0.9, 0.5];
        let labels = model.classify(&rows);
        assert_eq!(labels, [0, 0, 0, 1, 1]);
        let pool = PoolData { rows: &rows, z: &rows, latent: 2, labels: &labels };
        let atlas = two_anchors();
        let chosen = choose(pool, &atlas, &schema, &model, 1);
        // Anchor 0's three class-0 rows are all answered; anchor 1's two class-1 rows too.
        assert_eq!((chosen.per_anchor, chosen.queries, chosen.answered), (1, 5, 5));
        let people = cent_nostd::people::People::new(&schema, 2, &chosen.bytes).unwrap();
        let mut out = [0.0; 2];
        // The class-0 anchor: the person well past the boundary, not the nearer one short of it.
        assert_eq!(people.person(&schema, 0, 0, &mut out), Some(1));
        assert!((out[0] - 0.9).abs() < 1e-4, "{out:?}");
        // The class-1 anchor: every class-0 row answers its queries; the nearest is carried.
        assert_eq!(people.person(&schema, 1, 0, &mut out), Some(0));
        assert!((out[0] - 0.3).abs() < 1e-4, "{out:?}");
        assert_eq!(choose(pool, &atlas, &schema, &model, 0), People::default());
    }

    /// When the other class's rows nearest to the anchor all sit short of the lead, a person
    /// spread farther over the pool is chosen.
    #[test]
    fn test_a_person_beyond_the_anchors_neighbours_is_chosen_when_they_cannot_answer() {
        let (schema, model) = setting();
        // Three class-0 rows, then one class-1 row well past the boundary but far from the
        // class-0 anchor, then more class-1 rows just past it than the nearest candidates hold.
        let mut rows = vec![0.1f32, 0.5, 0.2, 0.4, 0.3, 0.6, 0.95, 0.5];
        for k in 0..CANDIDATES + 10 {
            rows.extend([0.51 + 0.0001 * k as f32, 0.5]);
        }
        let labels = model.classify(&rows);
        assert!(labels[..3].iter().all(|&l| l == 0) && labels[3..].iter().all(|&l| l == 1));
        let pool = PoolData { rows: &rows, z: &rows, latent: 2, labels: &labels };
        let atlas = two_anchors();
        let chosen = choose(pool, &atlas, &schema, &model, 1);
        let people = cent_nostd::people::People::new(&schema, 2, &chosen.bytes).unwrap();
        let mut out = [0.0; 2];
        assert_eq!(people.person(&schema, 0, 0, &mut out), Some(1));
        assert!((out[0] - 0.95).abs() < 1e-4, "{out:?}");
    }
}
