//! How well each region of a device bundle's atlas answers: its **agreement**, measured on
//! training rows at export and carried in the bundle (design §4).
//!
//! The device has no training data to judge an answer by, so the exporter judges its regions
//! in advance. Training rows spread evenly over the split are explained with the bundle as the
//! device explains them (the quantized encoder and classifier, the schema's default
//! constraints, every region the classifier confirms, up to [`CANDIDATES`]), and each answer is
//! judged the way the host's ranking judges a point: the share of its [`NEIGHBOURS`] nearest
//! training rows (the row explained left out) that the model puts in the answer's class. A
//! region's agreement is the mean over the answers it gave, pulled towards one half by one
//! answer's weight (a region that answered once is not trusted as one that answered often), as
//! one byte: `255 ·` the share. A region that gave no answer, and every split node, holds one
//! half.

use crate::nearby::{Around, Rows};
use crate::profile::Schema;
use cent_nostd::atlas::{CANDIDATES, Counterfactual, Explainer, Options};
use cent_nostd::bundle::Bundle;
use cent_nostd::tree::Node;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Training rows explained at most.
pub const SAMPLE: usize = 2000;

/// Nearest training rows each answer is judged by.
pub const NEIGHBOURS: usize = 5;

/// Byte of a share in `[0, 1]`.
fn byte(share: f64) -> u8 {
    (share.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// The regions' agreement of an atlas, and what it was measured on.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// One byte per node of every tree, tree after tree (what
    /// [`cent_nostd::bundle::Parts::agreement`] holds).
    pub bytes: Vec<u8>,
    /// Training rows explained.
    pub rows: usize,
    /// Answers judged.
    pub answers: usize,
    /// Their mean share of agreeing neighbours.
    pub mean: f64,
}

/// The agreement of every node of every tree of `bundle`'s atlas, measured on `rows` (the
/// training split, encoded with `schema`, row-major) labelled `labels` by the model the bundle
/// carries. Rows are taken evenly over the split, at most [`SAMPLE`]; each row's random draw is
/// seeded with its index. A bundle without a classifier is judged by its trees' classes.
pub fn agreement(bundle: &Bundle<'_>, schema: &Schema, rows: &[f32], labels: &[usize]) -> Agreement {
    let atlas = &bundle.atlas;
    let sizes: Vec<usize> = (0..atlas.len()).map(|a| atlas.tree(a).map_or(0, |t| t.len())).collect();
    let offsets: Vec<usize> = sizes.iter().scan(0, |at, &len| Some(std::mem::replace(at, *at + len))).collect();
    let nodes: usize = sizes.iter().sum();
    // Per node: the answers' summed share and their count.
    let mut sums = vec![(0.0f64, 0u32); nodes];
    let width = schema.columns().max(1);
    let n = rows.len() / width;
    let index = Rows::new(schema, rows);
    let query = bundle.schema.default_query();
    let model = bundle.model();
    let mut device: Box<Explainer> = Box::default();
    let mut out: heapless::Vec<Counterfactual, CANDIDATES> = heapless::Vec::new();
    let step = n.div_ceil(SAMPLE).max(1);
    let (mut explained, mut total) = (0usize, 0.0f64);
    for r in (0..n).step_by(step) {
        explained += 1;
        let x = &rows[r * width..(r + 1) * width];
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(r as u64);
        let Ok(summary) = device.explain(&model, x, &query, Options::default(), &mut rng, &mut out) else {
            continue;
        };
        if out.is_empty() {
            continue;
        }
        let anchor = usize::from(summary.anchor);
        let (Some(&start), Some(tree)) = (offsets.get(anchor), atlas.tree(anchor)) else { continue };
        let around = Around::new(&index, x);
        // People's answers (the last resort) are no region's.
        for cf in out.iter().filter(|cf| usize::from(cf.leaf) < tree.len()) {
            let class = match (cf.class, tree.node(cf.leaf)) {
                (Some(c), _) | (None, Some(Node::Leaf { class: c, .. })) => usize::from(c),
                _ => continue,
            };
            let ids = around.nearest(&cf.x, NEIGHBOURS + 1);
            let people: Vec<u32> = ids.into_iter().filter(|&id| id as usize != r).take(NEIGHBOURS).collect();
            let agree = people.iter().filter(|&&id| labels.get(id as usize) == Some(&class)).count();
            if let Some(slot) = sums.get_mut(start + usize::from(cf.leaf)) {
                let share = agree as f64 / people.len().max(1) as f64;
                slot.0 += share;
                slot.1 += 1;
                total += share;
            }
        }
    }
    let answers: usize = sums.iter().map(|s| s.1 as usize).sum();
    Agreement {
        bytes: sums.iter().map(|&(sum, count)| byte((sum + 0.5) / (f64::from(count) + 1.0))).collect(),
        rows: explained,
        answers,
        mean: if answers == 0 { 0.0 } else { total / answers as f64 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_byte_maps_shares_to_the_full_range() {
        assert_eq!((byte(0.0), byte(0.5), byte(1.0), byte(-1.0), byte(2.0)), (0, 128, 255, 0, 255));
    }
}
