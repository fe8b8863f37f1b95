//! Asking a costly model once for each distinct row of a batch.
//!
//! A query sends the model many rows that are one and the same: latent neighbours projected
//! onto the query's immutable features become one row when they differ only there (on Adult,
//! about half the rows of a batch repeat an earlier row of it; on COMPAS nine in ten).
//! [`Distinct`] wraps a model and sends it each distinct row of a batch once, then gives every
//! row its row's probabilities. For a model that gives a row the same probabilities in any
//! batch, the answers are bit for bit those of the model asked directly.
//!
//! It pays where a row costs more than finding its repeat, and [`pays`] says where that is:
//! a graph tract runs, a large tree ensemble. A dense network or a small forest costs less per
//! row than the hashing and is asked directly, as are the built-in models.
//!
//! Measured on Adult (`cent-lab`'s explainer, 200 test rows, defaults, each row explained in
//! turn both ways, ratio of the times per query, median; answers identical): LightGBM exported
//! to ONNX with 10 trees of depth 6 1.01, 30 × 6 0.95, 50 × 6 0.90, 100 × 3 0.87, 100 × 6
//! 0.82; XGBoost's 20 trees 1.02; the 10 trees run by tract 0.62 (149 → 91 ms a query); an MLP
//! (13, 4) run by cent's dense layers 1.05 (1.08 and 1.11 for the MLP and logistic regression
//! of 104 columns of the comparison harness), run by tract 1.00. A scikit-learn MLP or
//! LightGBM called from Python showed no difference beyond the run-to-run drift: there each
//! call's fixed cost outweighs its rows. These ratios were measured when a row was hashed value
//! by value (about 3.6 times the instructions of hashing its bytes in one piece, as now) and
//! before the surrogate fits and their held-out fidelity asked for each distinct row once
//! themselves (`first_of_each`), which leaves fewer repeats in the batches that reach a model
//! (on Adult with the built-in MLP about one row in fourteen, from one in two).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::blackbox::{BlackBox, ModelError};
use crate::onnx::Runtime;

/// Whether asking each distinct row once pays for an ONNX model run by `runtime` on rows of
/// `columns` values: for a graph tract runs (its calls cost the most), and for a tree ensemble
/// whose walk takes at least two branch tests per column of a row (the break-even measured in
/// the [module docs](self)); not for dense layers.
pub fn pays(runtime: Runtime, columns: usize) -> bool {
    match runtime {
        Runtime::Tract => true,
        Runtime::Dense { .. } => false,
        Runtime::Forest { steps, .. } => steps >= 2 * columns,
    }
}

/// A model asked once for each distinct row of a batch (see the [module docs](self)).
///
/// Rows are the same when every value has the same bits (`0.0` and `-0.0` are two rows, asked
/// once each). A batch with no repeated row goes to the model as it came, without a copy.
#[derive(Debug, Clone)]
pub struct Distinct<M> {
    inner: M,
}

impl<M: BlackBox> Distinct<M> {
    /// Wraps `inner`.
    pub fn new(inner: M) -> Self {
        Distinct { inner }
    }

    /// The wrapped model.
    pub fn get_ref(&self) -> &M {
        &self.inner
    }

    /// The wrapped model, unwrapped.
    pub fn into_inner(self) -> M {
        self.inner
    }
}

/// A row, hashed and compared by the bits of its values (its bytes, in one piece: a value at a
/// time cost about as much as the model call it saves).
struct Row<'a>(&'a [f32]);

impl Hash for Row<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(bytemuck::cast_slice(self.0));
    }
}

impl PartialEq for Row<'_> {
    fn eq(&self, other: &Self) -> bool {
        bytemuck::cast_slice::<f32, u32>(self.0) == bytemuck::cast_slice::<f32, u32>(other.0)
    }
}

impl Eq for Row<'_> {}

/// For each row of `rows` (width `width`), the index of the first row equal to it among the
/// distinct ones (numbered in order of first sight), and how many distinct rows there are.
pub(crate) fn first_of_each(rows: &[f32], width: usize) -> (Vec<u32>, usize) {
    let n = rows.len() / width;
    let mut seen: HashMap<Row<'_>, u32, foldhash::fast::FixedState> =
        HashMap::with_capacity_and_hasher(n, foldhash::fast::FixedState::default());
    let mut of = Vec::with_capacity(n);
    for row in rows.chunks_exact(width) {
        let next = seen.len() as u32;
        of.push(*seen.entry(Row(row)).or_insert(next));
    }
    (of, seen.len())
}

impl<M: BlackBox> BlackBox for Distinct<M> {
    fn classes(&self) -> usize {
        self.inner.classes()
    }

    fn inputs(&self) -> usize {
        self.inner.inputs()
    }

    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        let width = self.inner.inputs();
        let n = rows.len() / width.max(1);
        if width == 0 || n < 2 || rows.len() != n * width || n > u32::MAX as usize {
            return self.inner.predict_proba(rows);
        }
        let (of, distinct) = first_of_each(rows, width);
        if distinct == n {
            return self.inner.predict_proba(rows);
        }
        let mut batch = Vec::with_capacity(distinct * width);
        for (i, row) in rows.chunks_exact(width).enumerate() {
            if of[i] as usize * width == batch.len() {
                batch.extend_from_slice(row);
            }
        }
        let p = self.inner.predict_proba(&batch)?;
        let classes = self.inner.classes();
        if classes == 0 || p.len() != distinct * classes {
            return Err(ModelError::Output {
                rows: distinct,
                message: format!(
                    "{} values returned for {distinct} distinct rows (of a batch of {n}), {} expected ({classes} per row)",
                    p.len(),
                    distinct * classes
                ),
            });
        }
        Ok(of.iter().flat_map(|&d| &p[d as usize * classes..][..classes]).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::sync::Mutex;

    /// Two classes from a row's values, with every batch it was sent kept.
    struct Logged {
        width: usize,
        batches: Mutex<Vec<Vec<f32>>>,
        wrong_count: bool,
    }

    impl Logged {
        fn new(width: usize) -> Self {
            Logged { width, batches: Mutex::new(Vec::new()), wrong_count: false }
        }

        fn sent(&self) -> Vec<Vec<f32>> {
            self.batches.lock().unwrap().clone()
        }
    }

    impl BlackBox for Logged {
        fn classes(&self) -> usize {
            2
        }

        fn inputs(&self) -> usize {
            self.width
        }

        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
            self.batches.lock().unwrap().push(rows.to_vec());
            if rows.iter().any(|v| v.is_nan()) {
                return Err(ModelError::Failed { model: "logged".into(), rows: 0, message: "NaN".into() });
            }
            let mut p = Vec::new();
            for row in rows.chunks_exact(self.width) {
                let s = row.iter().enumerate().map(|(i, v)| v * (i as f32 + 1.0)).sum::<f32>();
                let q = 1.0 / (1.0 + (-s).exp());
                p.extend_from_slice(&[1.0 - q, q]);
            }
            if self.wrong_count {
                p.pop();
            }
            Ok(p)
        }
    }

    #[test]
    fn test_each_distinct_row_is_asked_once_in_order_of_first_sight() {
        let distinct = Distinct::new(Logged::new(2));
        let rows = [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 5.0, 6.0, 3.0, 4.0, 1.0, 2.0];
        let p = distinct.probabilities(&rows).unwrap();
        assert_eq!(distinct.get_ref().sent(), vec![vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]);
        let direct = Logged::new(2).probabilities(&rows).unwrap();
        assert_eq!(p, direct);
        assert_eq!(distinct.predict(&rows).unwrap(), Logged::new(2).predict(&rows).unwrap());
    }

    #[test]
    fn test_a_batch_without_repeats_or_of_one_row_goes_as_it_came() {
        let distinct = Distinct::new(Logged::new(3));
        let rows = [1.0, 2.0, 3.0, 1.0, 2.0, -3.0, 0.0, 0.0, 0.0, -0.0, 0.0, 0.0];
        distinct.predict_proba(&rows).unwrap();
        distinct.predict_proba(&rows[..3]).unwrap();
        distinct.predict_proba(&[]).unwrap();
        assert_eq!(distinct.get_ref().sent(), vec![rows.to_vec(), rows[..3].to_vec(), Vec::new()]);
    }

    #[test]
    fn test_the_models_failures_and_short_answers_come_back_as_errors() {
        let distinct = Distinct::new(Logged::new(1));
        assert!(matches!(distinct.predict_proba(&[f32::NAN, 1.0, 1.0]), Err(ModelError::Failed { .. })));
        let short = Distinct::new(Logged { wrong_count: true, ..Logged::new(1) });
        match short.predict_proba(&[1.0, 2.0, 1.0]) {
            Err(ModelError::Output { rows: 2, message }) => {
                assert!(
                    message.contains("3 values returned for 2 distinct rows (of a batch of 3), 4 expected"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        // The same fault in a batch without repeats is left to the caller's check, which names it.
        assert!(matches!(short.probabilities(&[1.0, 2.0]), Err(ModelError::Output { rows: 2, .. })));
    }

    #[test]
    fn test_it_pays_for_tract_and_forests_of_two_steps_a_column_not_dense_layers() {
        assert!(pays(Runtime::Tract, 47));
        assert!(!pays(Runtime::Dense { layers: 3 }, 47));
        assert!(pays(Runtime::Forest { trees: 100, steps: 600 }, 47));
        assert!(pays(Runtime::Forest { trees: 16, steps: 94 }, 47));
        assert!(!pays(Runtime::Forest { trees: 15, steps: 93 }, 47));
        assert!(!pays(Runtime::Forest { trees: 100, steps: 600 }, 301));
    }

    /// Against the model asked directly, bit for bit, on batches drawn with many repeats.
    #[test]
    fn test_answers_are_the_models_own_on_random_batches() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for width in [1, 3, 47] {
            let kinds: Vec<f32> = (0..8 * width).map(|_| (rng.next_u32() % 5) as f32 * 0.25 - 0.5).collect();
            for n in [2, 5, 40, 300] {
                let mut rows = Vec::with_capacity(n * width);
                for _ in 0..n {
                    let k = rng.next_u32() as usize % 8;
                    rows.extend_from_slice(&kinds[k * width..][..width]);
                }
                let distinct = Distinct::new(Logged::new(width));
                let (p, q) = (distinct.predict_proba(&rows).unwrap(), Logged::new(width).predict_proba(&rows).unwrap());
                assert_eq!(
                    p.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    q.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                let sent = distinct.get_ref().sent();
                let mut unique: Vec<&[f32]> = rows.chunks_exact(width).collect();
                unique.sort_by(|a, b| a.partial_cmp(b).unwrap());
                unique.dedup();
                assert_eq!(sent.len(), 1);
                assert_eq!(sent[0].len(), unique.len() * width, "width {width}, {n} rows");
            }
        }
    }
}
