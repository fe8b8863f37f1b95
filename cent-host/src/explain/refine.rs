//! A confirmed point made into an answer ([`Explainer::refine`]): pruned, made sparser, carried
//! further and balanced, each step keeping it confirmed; and which of its changes the decision
//! does not need ([`Explainer::redundant`]).

use super::{Ask, Explainer, PLAUSIBILITY_WEIGHT, Point, argmax};
use crate::blackbox::ModelError;
use crate::profile::Bounds;
use cent_nostd::atlas::{BALANCE_SHRINK, PUSH_LADDER};
use cent_nostd::counterfactual;
use cent_nostd::schema::Kind;
use cent_nostd::search::Target;
use std::sync::atomic::{AtomicBool, Ordering};

impl Explainer<'_> {
    /// A confirmed candidate made into an answer: pruned ([`Explainer::prune`]), made sparser
    /// ([`Explainer::sparsify`]), carried further ([`Explainer::deepen`]) and balanced
    /// ([`Explainer::balance`]), each step keeping the point confirmed.
    pub(super) fn refine(&self, ask: &Ask<'_>, row: Vec<f32>, class: usize, p: f32) -> Result<Point, ModelError> {
        self.refine_unless(ask, row, class, p, &AtomicBool::new(false))
    }

    /// [`Explainer::refine`], stopped between its steps once `stop` is set: the point it gives
    /// then is confirmed but not refined, for a caller that no longer needs it.
    pub(super) fn refine_unless(
        &self,
        ask: &Ask<'_>,
        row: Vec<f32>,
        class: usize,
        p: f32,
        stop: &AtomicBool,
    ) -> Result<Point, ModelError> {
        let stopped = || stop.load(Ordering::Relaxed);
        let point = self.prune(ask, row, class, p)?;
        if stopped() {
            return Ok(point);
        }
        let (row, class, p) = self.sparsify(ask, point.0, point.1, point.2)?;
        if stopped() {
            return Ok((row, class, p));
        }
        let (row, class, p) = self.deepen(ask, row, class, p)?;
        if stopped() {
            return Ok((row, class, p));
        }
        self.balance(ask, row, class, p)
    }

    /// Sets changed features of a confirmed `row` back to `x`'s values while the model still
    /// confirms it: each round tries every changed feature alone (one batched call) and keeps
    /// the set-back with the highest probability of a target class, until none is confirmed
    /// or one feature is left.
    pub(super) fn prune(
        &self,
        ask: &Ask<'_>,
        mut row: Vec<f32>,
        mut class: usize,
        mut p: f32,
    ) -> Result<Point, ModelError> {
        let Ask { x, query, target, .. } = *ask;
        let classes = self.model.classes();
        loop {
            let changed: Vec<usize> = self
                .schema
                .features()
                .iter()
                .enumerate()
                .filter(|(_, f)| x[f.columns()] != row[f.columns()])
                .map(|(j, _)| j)
                .collect();
            if changed.len() <= 1 {
                return Ok((row, class, p));
            }
            let mut batch = Vec::with_capacity(changed.len() * row.len());
            for &j in &changed {
                let cols = self.schema.features()[j].columns();
                let start = batch.len();
                batch.extend_from_slice(&row);
                batch[start + cols.start..start + cols.end].copy_from_slice(&x[cols]);
            }
            let proba = self.model.probabilities(&batch)?;
            // The set-back with the highest probability of a target class that passes every
            // test (ties to the first): the model's verdict first, then the constraint and data
            // checks in that order, so that a wide row is checked about once a round, not once
            // per changed feature.
            let n = row.len();
            let mut order: Vec<(usize, f32)> = proba
                .chunks_exact(classes)
                .enumerate()
                .filter_map(|(i, q)| {
                    let c = argmax(q);
                    (target.matches(c as u8) && q[c] >= self.config.min_probability).then_some((i, q[c]))
                })
                .collect();
            order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let best = order.into_iter().find_map(|(i, _)| {
                let cand = &batch[i * n..(i + 1) * n];
                let q = &proba[i * classes..(i + 1) * classes];
                self.accepts(x, query, target, cand, q)
                    .filter(|_| self.data_supported(x, cand))
                    .map(|(c, pc)| (i, c, pc))
            });
            let Some((i, c, q)) = best else { return Ok((row, class, p)) };
            row.copy_from_slice(&batch[i * n..(i + 1) * n]);
            (class, p) = (c, q);
        }
    }

    /// Makes a confirmed, pruned `row` sparser when it can be: for each changed feature, the
    /// point with that feature set back and the remaining numeric changes carried further (each
    /// remaining move scaled by a factor of [`PUSH_LADDER`], clipped to the feature's range and
    /// snapped to observed values) is tried, all in one batched call. Among the confirmed,
    /// strictly sparser points, the best replaces `row` (then pruned again), until none is
    /// left: at [`Config::plausibility`] 0 the one of least move cost; above 0 the one that
    /// scores best by the ranking's objective (move cost against the agreement of its
    /// neighbours, [`Explainer::agreement`]), and only when it scores better than `row`, so that
    /// fewer changes are not bought with a point much further from people of the target class.
    /// A change that is only there to lift the probability to [`Config::min_probability`] is
    /// traded for a longer move of the others.
    ///
    /// [`Config::min_probability`]: super::Config::min_probability
    /// [`Config::plausibility`]: super::Config::plausibility
    fn sparsify(&self, ask: &Ask<'_>, mut row: Vec<f32>, mut class: usize, mut p: f32) -> Result<Point, ModelError> {
        let Ask { x, query, target, targets: target_classes, around } = *ask;
        let classes = self.model.classes();
        let n = row.len();
        let full = Bounds::default();
        loop {
            let features = self.schema.features();
            let changed: Vec<usize> =
                (0..features.len()).filter(|&j| x[features[j].columns()] != row[features[j].columns()]).collect();
            if changed.len() <= 1 {
                return Ok((row, class, p));
            }
            let mut batch: Vec<f32> = Vec::new();
            for &j in &changed {
                let others: Vec<usize> = changed
                    .iter()
                    .copied()
                    .filter(|&i| i != j && matches!(features[i].kind, Kind::Continuous | Kind::Integer))
                    .collect();
                if others.is_empty() {
                    continue;
                }
                for factor in PUSH_LADDER {
                    let mut cand = row.clone();
                    cand[features[j].columns()].copy_from_slice(&x[features[j].columns()]);
                    for &i in &others {
                        let c = features[i].col as usize;
                        cand[c] = (x[c] + factor * (row[c] - x[c])).clamp(0.0, 1.0);
                    }
                    if self.supported(x, &full, &mut cand) {
                        let cand = self.formatted(x, &cand);
                        if counterfactual::check(&self.schema, query, x, &cand).is_ok() {
                            batch.extend_from_slice(&cand);
                        }
                    }
                }
            }
            if batch.is_empty() {
                return Ok((row, class, p));
            }
            let proba = self.model.probabilities(&batch)?;
            let mut accepted: Vec<(f32, usize, usize, f32)> = Vec::new();
            for (i, (cand, q)) in batch.chunks_exact(n).zip(proba.chunks_exact(classes)).enumerate() {
                // Snapping and link repair may move other features: only a strictly sparser
                // point counts, so the loop ends within one pass per feature.
                let sparser = counterfactual::changed_features(&self.schema, x, cand).count() < changed.len();
                if sparser
                    && let Some((c, pc)) = self.accepts(x, query, target, cand, q)
                    && self.data_supported(x, cand)
                {
                    accepted.push((self.move_cost(query, x, cand), i, c, pc));
                }
            }
            let lambda = self.config.plausibility.clamp(0.0, 1.0);
            if let (true, false, Some(around)) = (lambda > 0.0, accepted.is_empty(), around) {
                // The ranking's objective: a sparser point replaces `row` only when it scores
                // better, its fewer changes weighed against its neighbours' agreement.
                let score = |cost: f32, agreement: f32| {
                    (1.0 - lambda) * cost + lambda * PLAUSIBILITY_WEIGHT * (1.0 - agreement)
                };
                let base = score(self.move_cost(query, x, &row), self.agreement(around, &row, target_classes)[0]);
                // Only a point that can score below `row` is judged among people: the move cost
                // alone bounds its score from below.
                accepted.retain(|a| score(a.0, 1.0) < base);
                for a in accepted.iter_mut() {
                    let g = self.agreement(around, &batch[a.1 * n..(a.1 + 1) * n], target_classes)[0];
                    a.0 = score(a.0, g);
                }
                accepted.retain(|a| a.0 < base);
            }
            let best = accepted.into_iter().min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let Some((_, i, c, q)) = best else { return Ok((row, class, p)) };
            (row, class, p) = self.prune(ask, batch[i * n..(i + 1) * n].to_vec(), c, q)?;
        }
    }

    /// The changed features of `row` that can each be set back to `x`'s value alone while the
    /// model still puts the point in a target class (its decision, whatever the probability)
    /// and no link is broken: changes the decision does not need. One batched call.
    pub(super) fn redundant(&self, x: &[f32], target: Target, row: &[f32]) -> Result<Vec<usize>, ModelError> {
        let features = self.schema.features();
        let changed: Vec<usize> = counterfactual::changed_features(&self.schema, x, row).collect();
        if changed.len() < 2 {
            return Ok(Vec::new());
        }
        let n = row.len();
        let mut batch = Vec::with_capacity(changed.len() * n);
        for &j in &changed {
            let start = batch.len();
            batch.extend_from_slice(row);
            batch[start..][features[j].columns()].copy_from_slice(&x[features[j].columns()]);
        }
        let classes = self.model.classes();
        let proba = self.model.probabilities(&batch)?;
        Ok(changed
            .into_iter()
            .zip(batch.chunks_exact(n).zip(proba.chunks_exact(classes)))
            .filter(|(_, (back, p))| target.matches(argmax(p) as u8) && self.support.broken(x, back) == 0)
            .map(|(j, _)| j)
            .collect())
    }

    /// Makes every change of a confirmed point one the decision needs, when it can: a change
    /// the others do not need to reach the target class (they reach it, short of
    /// [`Config::min_probability`]) is kept by making the others shorter and it longer, so
    /// that no change alone reaches the target class and together they are still confirmed.
    /// Each redundant change's others are shortened by a factor of [`BALANCE_SHRINK`] while it
    /// is carried further by one of [`PUSH_LADDER`] (a category keeps its value), snapped to
    /// observed values; the confirmed points with the same changes and fewer redundant ones
    /// are compared: of those with the fewest redundant changes, the one the ranking scores
    /// best ([`Explainer::score`]; by move cost alone without plausibility), pruned again.
    ///
    /// [`Config::min_probability`]: super::Config::min_probability
    pub(super) fn balance(&self, ask: &Ask<'_>, row: Vec<f32>, class: usize, p: f32) -> Result<Point, ModelError> {
        let Ask { x, query, target, targets: target_classes, around } = *ask;
        let redundant = self.redundant(x, target, &row)?;
        if redundant.is_empty() {
            return Ok((row, class, p));
        }
        let features = self.schema.features();
        let numeric = |j: usize| matches!(features[j].kind, Kind::Continuous | Kind::Integer);
        let changed: Vec<usize> = counterfactual::changed_features(&self.schema, x, &row).collect();
        let full = Bounds::default();
        let n = row.len();
        let mut batch: Vec<f32> = Vec::new();
        for &j in &redundant {
            let others: Vec<usize> = changed.iter().copied().filter(|&i| i != j && numeric(i)).collect();
            if others.is_empty() {
                continue;
            }
            let pushes: &[f32] = if numeric(j) { &PUSH_LADDER } else { &[1.0] };
            for shrink in BALANCE_SHRINK {
                for &push in std::iter::once(&1.0).chain(pushes) {
                    let mut cand = row.clone();
                    for &i in &others {
                        let c = features[i].col as usize;
                        cand[c] = x[c] + shrink * (row[c] - x[c]);
                    }
                    if numeric(j) {
                        let c = features[j].col as usize;
                        cand[c] = (x[c] + push * (row[c] - x[c])).clamp(0.0, 1.0);
                    }
                    if !self.supported(x, &full, &mut cand) {
                        continue;
                    }
                    let cand = self.formatted(x, &cand);
                    let same = counterfactual::changed_features(&self.schema, x, &cand).eq(changed.iter().copied());
                    if same && cand != row && counterfactual::check(&self.schema, query, x, &cand).is_ok() {
                        batch.extend_from_slice(&cand);
                    }
                }
            }
        }
        if batch.is_empty() {
            return Ok((row, class, p));
        }
        let classes = self.model.classes();
        let proba = self.model.probabilities(&batch)?;
        let mut confirmed: Vec<(usize, usize, f32)> = Vec::new();
        for (i, (cand, q)) in batch.chunks_exact(n).zip(proba.chunks_exact(classes)).enumerate() {
            if let Some((c, pc)) = self.accepts(x, query, target, cand, q)
                && self.data_supported(x, cand)
            {
                confirmed.push((i, c, pc));
            }
        }
        let rows: Vec<f32> = confirmed.iter().flat_map(|k| batch[k.0 * n..(k.0 + 1) * n].iter().copied()).collect();
        let left = self.redundant_counts(x, target, &rows)?;
        let Some(&fewest) = left.iter().min().filter(|&&m| m < redundant.len()) else { return Ok((row, class, p)) };
        let kept: Vec<usize> = (0..confirmed.len()).filter(|&k| left[k] == fewest).collect();
        let at = |k: usize| &rows[k * n..(k + 1) * n];
        // Among the points with the fewest needless changes, the ranking's choice.
        let agreement = match (self.config.plausibility > 0.0, around) {
            (true, Some(around)) => {
                let kept_rows: Vec<f32> = kept.iter().flat_map(|&k| at(k).iter().copied()).collect();
                self.agreement(around, &kept_rows, target_classes)
            }
            _ => vec![1.0; kept.len()],
        };
        let best = kept
            .iter()
            .zip(&agreement)
            .map(|(&k, &g)| (self.score(query, x, at(k), g), k))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        match best {
            // A longer move may make another change one the probability no longer needs.
            Some((_, k)) => self.prune(ask, at(k).to_vec(), confirmed[k].1, confirmed[k].2),
            None => Ok((row, class, p)),
        }
    }

    /// Carries the numeric moves of a confirmed point further along [`PUSH_LADDER`] (snapped
    /// to observed values, clipped to the range) and keeps the farther point with the same
    /// changes when the ranking scores it better: a longer move into the target class that
    /// puts the point among more people of that class is worth its extra cost.
    pub(super) fn deepen(&self, ask: &Ask<'_>, row: Vec<f32>, class: usize, p: f32) -> Result<Point, ModelError> {
        let Ask { x, query, target, targets: target_classes, around } = *ask;
        let Some(around) = around.filter(|_| self.config.plausibility > 0.0) else { return Ok((row, class, p)) };
        let features = self.schema.features();
        let changed: Vec<usize> = counterfactual::changed_features(&self.schema, x, &row).collect();
        let numeric: Vec<usize> =
            changed.iter().copied().filter(|&j| matches!(features[j].kind, Kind::Continuous | Kind::Integer)).collect();
        if numeric.is_empty() {
            return Ok((row, class, p));
        }
        let full = Bounds::default();
        let n = row.len();
        let mut batch: Vec<f32> = Vec::new();
        for factor in PUSH_LADDER {
            let mut cand = row.clone();
            for &j in &numeric {
                let c = features[j].col as usize;
                cand[c] = (x[c] + factor * (row[c] - x[c])).clamp(0.0, 1.0);
            }
            if !self.supported(x, &full, &mut cand) {
                continue;
            }
            let cand = self.formatted(x, &cand);
            let same = counterfactual::changed_features(&self.schema, x, &cand).eq(changed.iter().copied());
            let new = batch.chunks_exact(n).all(|b| b != cand.as_slice());
            if same && new && cand != row && counterfactual::check(&self.schema, query, x, &cand).is_ok() {
                batch.extend_from_slice(&cand);
            }
        }
        if batch.is_empty() {
            return Ok((row, class, p));
        }
        let classes = self.model.classes();
        let proba = self.model.probabilities(&batch)?;
        // Only the confirmed points are judged among people.
        let confirmed: Vec<(usize, usize, f32)> = batch
            .chunks_exact(n)
            .zip(proba.chunks_exact(classes))
            .enumerate()
            .filter_map(|(i, (cand, q))| {
                let (c, pc) = self.accepts(x, query, target, cand, q)?;
                self.data_supported(x, cand).then_some((i, c, pc))
            })
            .collect();
        let mut best = (self.score(query, x, &row, self.agreement(around, &row, target_classes)[0]), None);
        for k in &confirmed {
            let cand = &batch[k.0 * n..(k.0 + 1) * n];
            // The move cost alone bounds the score from below: a point that cannot beat the
            // best so far is not judged among people.
            if self.score(query, x, cand, 1.0) >= best.0 {
                continue;
            }
            let s = self.score(query, x, cand, self.agreement(around, cand, target_classes)[0]);
            if s < best.0 {
                best = (s, Some(*k));
            }
        }
        Ok(match best.1 {
            Some((i, c, q)) => (batch[i * n..(i + 1) * n].to_vec(), c, q),
            None => (row, class, p),
        })
    }

    /// [`Explainer::redundant`]'s count for each row of `rows` (row-major), in one batched call.
    fn redundant_counts(&self, x: &[f32], target: Target, rows: &[f32]) -> Result<Vec<usize>, ModelError> {
        let n = x.len();
        let features = self.schema.features();
        let mut owner: Vec<usize> = Vec::new();
        let mut batch: Vec<f32> = Vec::new();
        for (r, row) in rows.chunks_exact(n.max(1)).enumerate() {
            let changed: Vec<usize> = counterfactual::changed_features(&self.schema, x, row).collect();
            if changed.len() < 2 {
                continue;
            }
            for j in changed {
                let start = batch.len();
                batch.extend_from_slice(row);
                batch[start..][features[j].columns()].copy_from_slice(&x[features[j].columns()]);
                owner.push(r);
            }
        }
        let mut counts = vec![0; rows.len() / n.max(1)];
        if batch.is_empty() {
            return Ok(counts);
        }
        let classes = self.model.classes();
        let proba = self.model.probabilities(&batch)?;
        for ((&r, back), p) in owner.iter().zip(batch.chunks_exact(n)).zip(proba.chunks_exact(classes)) {
            if target.matches(argmax(p) as u8) && self.support.broken(x, back) == 0 {
                counts[r] += 1;
            }
        }
        Ok(counts)
    }
}
