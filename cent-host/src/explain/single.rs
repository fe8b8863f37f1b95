//! Single moves: each feature the query may change, alone, moved to a value people have,
//! competing with the first answer ([`Explainer::weigh_single_moves`]).

use super::{ExplainError, Explainer, Explanation, Realization, SINGLE_MOVE_STEPS, Single, Start};
use crate::blackbox::ModelError;
use crate::nearby::Around;
use crate::profile::{Bounds, Query};
use cent_nostd::counterfactual;
use cent_nostd::schema::{Kind, Mutability};
use std::sync::atomic::{AtomicBool, Ordering};

impl Explainer<'_> {
    /// What [`Explainer::weigh_single_moves`] computes before it compares with the first
    /// answer, judged without it: the best single move by the ranking's objective with no
    /// score to beat, its needless changes counted; `None` after a model error. Once `stop` is
    /// set it gives up between its steps, and what it returns is not used.
    pub(super) fn single_ahead(
        &self,
        start: &Start<'_>,
        around: &Around<'_>,
        stop: &AtomicBool,
    ) -> Option<Option<Single>> {
        let Start { x, target, .. } = *start;
        match self.best_single_move(start, around, f32::INFINITY, stop) {
            Ok(Some(_)) if stop.load(Ordering::Relaxed) => None,
            Ok(Some(mut best)) => match self.redundant(x, target, &best.point.0) {
                Ok(needless) => {
                    best.needless = Some(needless.len());
                    Some(Some(best))
                }
                Err(_) => None,
            },
            Ok(None) => Some(None),
            Err(_) => None,
        }
    }

    /// Single moves against the first answer ([`Config::single_moves`]), when its nearest
    /// people do not all agree with it: the candidates (each category of a categorical feature,
    /// as it is and as most people with it live when a link ties it to others
    /// ([`Support::typical`]); the other value of a binary one; a number moved by each of
    /// [`SINGLE_MOVE_STEPS`] either way, snapped to a value people have; links repaired, the
    /// query's constraints checked) go to the model in one call. The confirmed ones are judged
    /// among people in the order of their move cost, which bounds their score from below,
    /// and the best by the ranking's objective takes first place (the last answer making room)
    /// when it scores better than the first answer and keeps no more changes the decision does
    /// not need ([`Explainer::redundant`]).
    ///
    /// `ahead` holds the best single move judged ahead ([`Explainer::single_ahead`]), when it was.
    ///
    /// [`Config::single_moves`]: super::Config::single_moves
    /// [`Support::typical`]: crate::support::Support::typical
    pub(super) fn weigh_single_moves(
        &self,
        start: &Start<'_>,
        around: Option<&Around<'_>>,
        out: &mut Explanation,
        ahead: Option<Option<Single>>,
    ) -> Result<(), ExplainError> {
        let Start { x, query, target, .. } = *start;
        if !self.config.single_moves {
            return Ok(());
        }
        let (Some(around), Some(first)) = (around, out.counterfactuals.first()) else { return Ok(()) };
        let Some(agreement) = first.agreement.filter(|&g| g < 1.0) else { return Ok(()) };
        let to_beat = self.score(query, x, &first.encoded, agreement);
        // The best with no score to beat is the best below `to_beat`, when it is below.
        let best = match ahead {
            Some(best) => best.filter(|b| b.score < to_beat),
            None => self.best_single_move(start, around, to_beat, &AtomicBool::new(false))?,
        };
        let Some(Single { point: (row, class, p), agreement: g, needless, .. }) = best else { return Ok(()) };
        let cap = self.redundant(x, target, &first.encoded)?.len();
        let needless = match needless {
            Some(needless) => needless,
            None => self.redundant(x, target, &row)?.len(),
        };
        if needless > cap || out.counterfactuals.iter().any(|cf| cf.encoded == row) {
            return Ok(());
        }
        let single = self.regionless(query, x, (row, class, p), Realization::SingleMove, Some(g));
        self.take_first_place(x, out, single);
        Ok(())
    }

    /// The confirmed single move of `x` ([`Explainer::single_moves`]) that scores best by the
    /// ranking's objective below `to_beat` (ties to the first), if any: the candidates go to the
    /// model in one call, and the confirmed ones are judged among people in the order of their
    /// move cost, which bounds their score from below. Once `stop` is set it gives up between
    /// its steps (what it gives then is not to be used).
    pub(super) fn best_single_move(
        &self,
        start: &Start<'_>,
        around: &Around<'_>,
        to_beat: f32,
        stop: &AtomicBool,
    ) -> Result<Option<Single>, ModelError> {
        let Start { x, query, target, targets: target_classes, .. } = *start;
        let batch = self.single_moves(x, query, stop);
        if batch.is_empty() || stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let n = x.len();
        let classes = self.model.classes();
        let proba = self.model.probabilities(&batch)?;
        // (lower bound of the score, candidate, class, probability), by bound.
        let mut confirmed: Vec<(f32, usize, usize, f32)> = Vec::new();
        for (i, (cand, q)) in batch.chunks_exact(n).zip(proba.chunks_exact(classes)).enumerate() {
            let lower = self.score(query, x, cand, 1.0);
            if lower < to_beat
                && let Some((c, pc)) = self.accepts(x, query, target, cand, q)
                && self.data_supported(x, cand)
            {
                confirmed.push((lower, i, c, pc));
            }
        }
        confirmed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // (score, candidate, class, probability, agreement)
        let mut best: Option<(f32, usize, usize, f32, f32)> = None;
        for &(lower, i, c, pc) in &confirmed {
            if best.is_some_and(|b| lower >= b.0) || stop.load(Ordering::Relaxed) {
                break;
            }
            let cand = &batch[i * n..(i + 1) * n];
            let g = self.agreement(around, cand, target_classes)[0];
            let s = self.score(query, x, cand, g);
            if s < to_beat && best.is_none_or(|b| s < b.0) {
                best = Some((s, i, c, pc, g));
            }
        }
        Ok(best.map(|(score, i, class, p, agreement)| Single {
            score,
            point: (batch[i * n..(i + 1) * n].to_vec(), class, p),
            agreement,
            needless: None,
        }))
    }

    /// The single moves of `x` the query allows ([`Explainer::weigh_single_moves`]), row after
    /// row, formatted, each once; those of the features before `stop` was set.
    pub(super) fn single_moves(&self, x: &[f32], query: &Query, stop: &AtomicBool) -> Vec<f32> {
        let features = self.schema.features();
        let n = x.len();
        let fixed: Vec<bool> = query.mutability.iter().map(|&m| m == Mutability::Immutable).collect();
        let full = Bounds::default();
        let mut batch: Vec<f32> = Vec::new();
        let mut add = |mut cand: Vec<f32>| {
            if !self.supported(x, &full, &mut cand) {
                return;
            }
            let cand = self.formatted(x, &cand);
            if cand.as_slice() != x
                && counterfactual::check(&self.schema, query, x, &cand).is_ok()
                && batch.chunks_exact(n).all(|b| b != cand.as_slice())
            {
                batch.extend_from_slice(&cand);
            }
        };
        for (j, f) in features.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if fixed.get(j).is_none_or(|&f| f) {
                continue;
            }
            let cols = f.columns();
            match f.kind {
                Kind::Categorical => {
                    for k in cols.clone().filter(|&k| x[k] != 1.0) {
                        let mut cand = x.to_vec();
                        cand[cols.clone()].fill(0.0);
                        cand[k] = 1.0;
                        let mut typical = cand.clone();
                        if self.support.typical(x, &mut typical, &fixed) {
                            add(typical);
                        }
                        add(cand);
                    }
                }
                Kind::Binary => {
                    let mut cand = x.to_vec();
                    cand[cols.start] = 1.0 - x[cols.start];
                    add(cand);
                }
                Kind::Continuous | Kind::Integer => {
                    for step in SINGLE_MOVE_STEPS {
                        for step in [-step, step] {
                            let mut cand = x.to_vec();
                            cand[cols.start] = (x[cols.start] + step).clamp(0.0, 1.0);
                            add(cand);
                        }
                    }
                }
            }
        }
        batch
    }
}
