//! The CEnt steps proper: a neighbourhood's surrogate ([`Explainer::fit_surrogate`]), its
//! contrast leaves made candidates through the core's graph and search
//! ([`Explainer::candidates`]), confirmed in one batched call ([`Explainer::verify`]) and made
//! answers with their rules ([`Explainer::explain_with`]).

use super::projection::{Step, apply_projection, projection};
use super::{
    Ask, Candidate, ClassOut, Counterfactual, DIVERSITY_LOOKAHEAD, ExplainError, Explainer, Explanation, Fit, Fitted,
    NEEDLESS_WEIGHT, REGION_RIVALS, Realization, Reason, SMALL_TREE,
};
use crate::blackbox::ModelError;
use crate::nearby::Around;
use crate::profile::{Bounds, Query};
use crate::ranking::Lazy;
use crate::surrogate::{self, Surrogate};
use cent_nostd::atlas::MARGIN_LADDER;
use cent_nostd::counterfactual;
use cent_nostd::graph::{Graph, SCALE};
use cent_nostd::schema::{Kind, Mutability};
use cent_nostd::search::{Search, Target};
use cent_nostd::tree::{NodeIdx, Tree};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

impl Explainer<'_> {
    /// One attempt of [`Explainer::explain`], on the surrogate `fit` of one neighbourhood
    /// ([`Explainer::fit_surrogate`]). The explanation's `fidelity` is left NaN: it is measured
    /// for the attempt that gives the answer ([`Explainer::search`]).
    #[allow(clippy::too_many_arguments)] // The query's resolved setting, passed once per attempt.
    pub(super) fn explain_with(
        &self,
        x: &[f32],
        query: &Query,
        fact: ClassOut,
        desired: Option<usize>,
        target: Target,
        target_classes: &[usize],
        fit: &Fit,
        around: Option<&Around<'_>>,
    ) -> Result<Explanation, ExplainError> {
        let Fit { surrogate, neighbours, fitted, .. } = fit;
        let tree = surrogate.tree();
        let mut out = Explanation {
            fact,
            desired: desired.map(|d| self.class_name(d)),
            counterfactuals: Vec::new(),
            fidelity: f64::NAN,
            neighbours: *neighbours,
            tree_nodes: tree.len(),
            examined: 0,
            built: 0,
            rejected: 0,
        };
        // Scratch sized to the tree: a small tree does not pay for the host's largest graph.
        let candidates = if tree.len() <= SMALL_TREE {
            self.candidates::<SMALL_TREE>(&tree, x, query, target, fitted, &mut out)?
        } else {
            self.candidates::<{ crate::profile::NODES }>(&tree, x, query, target, fitted, &mut out)?
        };
        self.verify(&tree, x, query, target, target_classes, candidates, &mut out, around)?;
        if out.counterfactuals.is_empty() {
            let reason = match (out.examined, out.built) {
                (0, _) => Reason::NoReachableContrastLeaf,
                (_, 0) => Reason::Blocked,
                _ => Reason::NotConfirmed,
            };
            return Err(ExplainError::NotFound(reason));
        }
        Ok(out)
    }

    /// Gathers `k/2` neighbours per side and fits the surrogate on the mutable columns, a share
    /// of them held out ([`Explainer::fidelity`]).
    pub(super) fn fit_surrogate(
        &self,
        x: &[f32],
        query: &Query,
        fact: usize,
        targets: &[usize],
        k: usize,
    ) -> Result<Fit, ExplainError> {
        let z = self.encoder.forward(x);
        let half = (k / 2).max(1);
        let contrast = self.pool.nearest_in(&z, targets, half);
        if contrast.is_empty() {
            return Err(ExplainError::NotFound(Reason::NoContrastNeighbours));
        }
        let mut ids = self.pool.nearest(&z, fact, half);
        ids.extend(contrast);
        let cols = self.schema.columns();
        // A seeded shuffle decides the held-out share.
        let (len, seed) = (ids.len(), self.config.seed);
        let fresh;
        let order = match self.shuffle.get_or_init(|| (len, seed, crate::data::split::permutation(len, seed))) {
            (l, s, order) if (*l, *s) == (len, seed) => order,
            _ => {
                fresh = crate::data::split::permutation(len, seed);
                &fresh
            }
        };
        let held = ((ids.len() as f64) * self.config.holdout).round() as usize;
        let held = if ids.len() - held < 2 { 0 } else { held };
        let (held_out, fitted) = order.split_at(held);
        let pick = |positions: &[usize]| positions.iter().map(|&i| ids[i]).collect::<Vec<u32>>();
        let fitted = self.projected_once(x, query, &pick(fitted))?;
        let allowed = self.mutable_columns(query);
        let Fitted { rows, labels, weights } = &fitted;
        let surrogate =
            surrogate::fit_weighted(rows, cols, labels, weights, self.model.classes(), &allowed, self.config.tree)?;
        Ok(Fit { surrogate, held_out: pick(held_out), neighbours: ids.len(), fitted })
    }

    /// How often `fit`'s surrogate agrees with the model on the neighbours held out, projected
    /// as those it was fitted on; on those it was fitted on when none are held out.
    pub(super) fn fidelity(&self, x: &[f32], query: &Query, fit: &Fit) -> Result<f64, ModelError> {
        if fit.held_out.is_empty() {
            return Ok(weighted_agreement(&fit.surrogate, &fit.fitted));
        }
        self.held_out_fidelity(x, query, &fit.surrogate, &fit.held_out)
    }

    /// [`Explainer::fidelity`] on the neighbours `held_out` (not empty): projected onto what the
    /// query can reach, each distinct row asked of the model once and counted as often as it
    /// occurs.
    pub(super) fn held_out_fidelity(
        &self,
        x: &[f32],
        query: &Query,
        surrogate: &Surrogate,
        held_out: &[u32],
    ) -> Result<f64, ModelError> {
        Ok(weighted_agreement(surrogate, &self.projected_once(x, query, held_out)?))
    }

    /// The neighbours `ids` projected onto what the query can reach, equal rows once: the
    /// distinct projected rows in the order first seen, their labels by the model, and how many
    /// of the neighbours each stands for (the weights [`surrogate::fit_weighted`] grows the tree
    /// of all of them with). Immutable features take `x`'s values, one-direction features are
    /// clamped to `x`'s value from the forbidden side: a neighbour that differs from `x` in race
    /// or in a younger age teaches the surrogate nothing the query can use, and its label may
    /// hinge on exactly that difference; projected, the tree learns the model on the query's
    /// own feasible slice. With no such constraint the rows are the pool's and keep the pool's
    /// labels (no model call). Neighbours that differ only where the projection writes (age,
    /// race or sex set to the query's, a value clamped at it) become one row: on Adult about
    /// three in five of the first neighbourhood's. The model is asked once per distinct row.
    pub(super) fn projected_once(&self, x: &[f32], query: &Query, ids: &[u32]) -> Result<Fitted, ModelError> {
        let steps = projection(&self.schema, query, x, self.schema.columns());
        let rows = self.gathered(&steps, ids);
        let cols = self.schema.columns();
        let (of, distinct) = crate::distinct::first_of_each(&rows, cols);
        let (mut kept, mut first) = (Vec::with_capacity(distinct * cols), Vec::with_capacity(distinct));
        let mut weights = vec![0u32; distinct];
        for (i, (row, &d)) in rows.chunks_exact(cols).zip(&of).enumerate() {
            if d as usize == first.len() {
                first.push(i);
                kept.extend_from_slice(row);
            }
            weights[d as usize] += 1;
        }
        // Only features the query constrains change a row; with none, the rows are the pool's.
        let labels = if steps.is_empty() {
            first.iter().map(|&i| self.pool_labels[ids[i] as usize]).collect()
        } else {
            self.model.predict(&kept)?
        };
        Ok(Fitted { rows: kept, labels, weights })
    }

    /// The pool rows `ids`, row-major, with the projection `steps` applied (see
    /// [`Explainer::projected`]).
    pub(super) fn gathered(&self, steps: &[Step], ids: &[u32]) -> Vec<f32> {
        let cols = self.schema.columns();
        let mut rows = Vec::with_capacity(ids.len() * cols);
        for &id in ids {
            rows.extend_from_slice(self.pool_row(id));
        }
        for row in rows.chunks_exact_mut(cols) {
            apply_projection(steps, row);
        }
        rows
    }

    /// Columns of features the query lets change (whole one-hot groups out for immutables).
    fn mutable_columns(&self, query: &Query) -> Vec<bool> {
        let mut allowed = vec![false; self.schema.columns()];
        for (j, f) in self.schema.features().iter().enumerate() {
            let free = query.mutability[j] != Mutability::Immutable;
            for c in f.columns() {
                allowed[c] = free;
            }
        }
        allowed
    }

    /// Pops up to `max_search` contrast leaves and builds formatted candidates in each: one per
    /// margin of [`MARGIN_LADDER`] (relative to the query's margin divisor), smallest move first;
    /// with [`Config::plausibility`] above 0, also the point halfway to the leaf's nearest
    /// target-class neighbour and that neighbour's values on the features the leaf requires.
    ///
    /// [`Config::plausibility`]: super::Config::plausibility
    pub(super) fn candidates<const N: usize>(
        &self,
        tree: &Tree<'_>,
        x: &[f32],
        query: &Query,
        target: Target,
        fitted: &Fitted,
        out: &mut Explanation,
    ) -> Result<Vec<Candidate>, ExplainError> {
        let core = |e: &dyn std::fmt::Display| ExplainError::Core(e.to_string());
        let mut graph: Box<Graph<N>> = Box::default();
        let mut search: Box<Search<N>> = Box::default();
        // The query at each margin of the ladder: one copy, its margin set per step.
        let mut at_margin = query.clone();
        graph.build(tree, &self.schema, query, x).map_err(|e| core(&e))?;
        search.start(&graph).map_err(|e| core(&e))?;
        let cols = x.len();
        // Each fitted neighbour's leaf, once per tree (only when exemplars are wanted).
        let leaf_of: Vec<NodeIdx> = if self.config.plausibility > 0.0 {
            fitted.rows.chunks_exact(cols).map(|row| tree.route(row).unwrap_or(NodeIdx::MAX)).collect()
        } else {
            Vec::new()
        };
        let mut cands = Vec::new();
        let mut buf = vec![0.0; cols];
        // One box, set to each popped leaf's.
        let mut bounds: Box<Bounds> = Box::default();
        // A candidate that moves a linked feature is also tried with the link's other features
        // as most people with the new values have them ([`Support::typical`]), when the leaf
        // still holds it.
        let fixed: Vec<bool> = query.mutability.iter().map(|&m| m == Mutability::Immutable).collect();
        let typical = |x_new: &[f32], leaf: NodeIdx| -> Option<Vec<f32>> {
            let mut t = x_new.to_vec();
            let ok = self.support.typical(x, &mut t, &fixed) && tree.route(&t) == Ok(leaf);
            ok.then(|| self.formatted(x, &t))
        };
        while out.examined < self.config.max_search {
            let Some(hit) = search.next_contrast(&graph, target).map_err(|e| core(&e))? else { break };
            out.examined += 1;
            let mut built = false;
            // One draw per leaf, replayed at every margin: the moves grow monotonically.
            let draw = Xoshiro128PlusPlus::seed_from_u64(self.config.seed ^ (u64::from(hit.leaf) << 40));
            // A margin that lands on the previous margin's point (a category switch ignores
            // margins) would only repeat that candidate; it is skipped.
            let mut last: Option<Vec<f32>> = None;
            let mut boundary: Option<Vec<f32>> = None;
            bounds.set_to(tree, hit.leaf);
            for step in MARGIN_LADDER {
                at_margin.margin = query.margin * step;
                let q = &at_margin;
                if counterfactual::realize_in(&self.schema, q, tree, hit.leaf, &bounds, x, &mut draw.clone(), &mut buf)
                    .is_ok()
                    && self.supported(x, &bounds, &mut buf)
                {
                    built = true;
                    if boundary.is_none() {
                        boundary = Some(buf.clone());
                    }
                    if last.as_deref() != Some(buf.as_slice()) {
                        let x_new = self.formatted(x, &buf);
                        let variant = typical(&x_new, hit.leaf);
                        cands.push(Candidate { leaf: hit.leaf, cost: hit.cost, how: Realization::Boundary, x: x_new });
                        if let Some(t) = variant {
                            cands.push(Candidate { leaf: hit.leaf, cost: hit.cost, how: Realization::Boundary, x: t });
                        }
                        last = Some(buf.clone());
                    }
                }
            }
            if let (Some(b), false) = (&boundary, leaf_of.is_empty()) {
                let exemplar = nearest_in_leaf(fitted, &leaf_of, hit.leaf, target, x);
                if let Some(e) = exemplar.map(|i| &fitted.rows[i * cols..(i + 1) * cols]) {
                    for (t, how) in [(0.5, Realization::Between), (1.0, Realization::Exemplar)] {
                        if self.toward(x, b, e, t, &mut buf)
                            && self.supported(x, &bounds, &mut buf)
                            && tree.route(&buf) == Ok(hit.leaf)
                        {
                            let x_new = self.formatted(x, &buf);
                            let variant = typical(&x_new, hit.leaf);
                            for x_new in std::iter::once(x_new).chain(variant) {
                                if cands.iter().rev().take(2 * (MARGIN_LADDER.len() + 2)).all(|c| c.x != x_new) {
                                    cands.push(Candidate { leaf: hit.leaf, cost: hit.cost, how, x: x_new });
                                }
                            }
                        }
                    }
                }
            }
            out.built += usize::from(built);
        }
        Ok(cands)
    }

    /// Writes into `out` the point `t` of the way from the boundary point `b` to the exemplar
    /// `e`, on the features `b` changes (the ones the leaf requires); the others keep `x`'s
    /// values. A category or binary value switches to `e`'s from half-way on; a whole-number
    /// feature is rounded. False when the point is `x` itself.
    fn toward(&self, x: &[f32], b: &[f32], e: &[f32], t: f32, out: &mut [f32]) -> bool {
        out.copy_from_slice(x);
        for f in self.schema.features() {
            let cols = f.columns();
            if b[cols.clone()] == x[cols.clone()] {
                continue;
            }
            match f.kind {
                Kind::Categorical | Kind::Binary => {
                    let from = if t >= 0.5 { e } else { b };
                    out[cols.clone()].copy_from_slice(&from[cols]);
                }
                Kind::Continuous | Kind::Integer => {
                    let c = cols.start;
                    let v = b[c] + t * (e[c] - b[c]);
                    out[c] = if f.is_discrete() { f.encode(f.decode(v).round()) } else { v };
                }
            }
        }
        out != x
    }

    /// One batched call of the model over every candidate. A candidate is confirmed when the
    /// model puts it in a target class with at least [`Config::min_probability`] and it passes
    /// the constraint re-check. At plausibility 0, each leaf (in path-cost order) gives its first
    /// confirmed candidate, up to `n` leaves. Above 0, every leaf with a confirmed candidate is
    /// ranked by `(1 - w) * move cost + w * PLAUSIBILITY_WEIGHT * (1 - agreement)` (`w` =
    /// [`Config::plausibility`], [`Explainer::score`]), each by its best candidate; equal
    /// scores keep path-cost order.
    ///
    /// [`Config::min_probability`]: super::Config::min_probability
    /// [`Config::plausibility`]: super::Config::plausibility
    #[allow(clippy::too_many_arguments)] // One query's resolved setting and its candidates.
    fn verify(
        &self,
        tree: &Tree<'_>,
        x: &[f32],
        query: &Query,
        target: Target,
        target_classes: &[usize],
        cands: Vec<Candidate>,
        out: &mut Explanation,
        around: Option<&Around<'_>>,
    ) -> Result<(), ModelError> {
        let batch: Vec<f32> = cands.iter().flat_map(|c| c.x.iter().copied()).collect();
        let proba = if batch.is_empty() { Vec::new() } else { self.model.probabilities(&batch)? };
        let classes = self.model.classes();
        // The confirmed candidates, in candidate order (leaves in path-cost order).
        let mut confirmed: Vec<(Candidate, usize, f32)> = Vec::new();
        for (c, p) in cands.into_iter().zip(proba.chunks_exact(classes)) {
            match self.accepts(x, query, target, &c.x, p) {
                Some((class, pc)) if self.data_supported(x, &c.x) => confirmed.push((c, class, pc)),
                _ => out.rejected += 1,
            }
        }
        let lambda = self.config.plausibility.clamp(0.0, 1.0);
        let around = around.filter(|_| lambda > 0.0);
        // The leaves in the ranking's order, each by its best confirmed candidate. A score's
        // first term, the move cost, bounds it from below: the agreement (a neighbour search)
        // is only measured for candidates whose bound leaves the order open ([`Lazy`]).
        let keys: Vec<NodeIdx> = confirmed.iter().map(|(c, _, _)| c.leaf).collect();
        let lower: Vec<f32> = match around {
            Some(_) => confirmed.iter().map(|(c, _, _)| (1.0 - lambda) * self.move_cost(query, x, &c.x)).collect(),
            // In path-cost order: each leaf's first confirmed candidate.
            None => vec![0.0; confirmed.len()],
        };
        let mut ranking = Lazy::new(&keys, lower);
        let mut next = || match around {
            Some(around) => ranking.next(|i| {
                let agreement = self.agreement(around, &confirmed[i].0.x, target_classes)[0];
                self.score(query, x, &confirmed[i].0.x, agreement)
            }),
            None => ranking.next(|_| 0.0),
        };
        // Answers that change exactly the features an earlier answer changes (the same levers,
        // e.g. two nearby capital gains) wait until no answer with other levers is found among
        // the next leaves; they fill the slots that are left, in order.
        let mut same_levers: Vec<Counterfactual> = Vec::new();
        let ask = Ask { x, query, target, targets: target_classes, around };
        // The answers of the candidates tried second, third, …: the rivals of the first.
        let mut rivals: Vec<Counterfactual> = Vec::new();
        let mut tried = 0;
        loop {
            let found = out.counterfactuals.len();
            // Enough answers with their own levers; or enough in all, and the look-ahead for
            // other levers is spent.
            if found >= self.config.n
                || (found + same_levers.len() >= self.config.n && tried >= self.config.n + DIVERSITY_LOOKAHEAD)
            {
                break;
            }
            let Some((i, _)) = next() else { break };
            let (c, class, p) = &confirmed[i];
            tried += 1;
            let cf = self.answer(tree, &ask, c, *class, *p)?;
            if (2..=1 + REGION_RIVALS).contains(&tried) {
                rivals.push(cf.clone());
            }
            // Two leaves may prune down to the same point: it is reported once.
            let seen = |prev: &Counterfactual| prev.encoded == cf.encoded;
            if out.counterfactuals.iter().any(seen) || same_levers.iter().any(seen) {
                continue;
            }
            let levers = self.changed_mask(x, &cf.encoded);
            if out.counterfactuals.iter().any(|prev| self.changed_mask(x, &prev.encoded) == levers) {
                same_levers.push(cf);
            } else {
                out.counterfactuals.push(cf);
            }
        }
        let mut answers = std::mem::take(&mut out.counterfactuals);
        answers.append(&mut same_levers);
        // Rival regions: when the first answer's nearest people do not all agree with it, or it
        // keeps a change the decision does not need, the answers of the next regions in the
        // ranking's order compete for first place ([`Explainer::first_place`]). The rivals are
        // the same whatever `n` is, so the first answer is too.
        let contest = match (around, answers.first()) {
            (Some(_), Some(first)) => match first.agreement {
                Some(g) => {
                    let needless = self.redundant(x, target, &first.encoded)?.len();
                    (g < 1.0 || needless > 0).then_some((first, g, needless))
                }
                None => None,
            },
            _ => None,
        };
        if let Some((first, g, needless)) = contest {
            while tried <= REGION_RIVALS {
                let Some((i, _)) = next() else { break };
                let (c, class, p) = &confirmed[i];
                tried += 1;
                rivals.push(self.answer(tree, &ask, c, *class, *p)?);
            }
            if let Some(k) = self.first_place(x, query, target, (first, g, needless), &rivals)? {
                let won = rivals.swap_remove(k);
                answers.retain(|cf| cf.encoded != won.encoded);
                answers.insert(0, won);
            }
        }
        out.counterfactuals = self.levers_first(x, answers, self.config.n);
        Ok(())
    }

    /// Which of `rivals` takes first place from `first` (its answer, agreement and count of
    /// changes the decision does not need, [`Explainer::redundant`]): of those with no more
    /// changes and no more needless ones, the best by the ranking's objective
    /// ([`Explainer::score`]) with [`NEEDLESS_WEIGHT`] added per needless change, when it scores
    /// better than `first` scored the same way; ties go to the earlier rival.
    pub(super) fn first_place(
        &self,
        x: &[f32],
        query: &Query,
        target: Target,
        (first, g, needless): (&Counterfactual, f32, usize),
        rivals: &[Counterfactual],
    ) -> Result<Option<usize>, ModelError> {
        let charged = |score: f32, needless: usize| score + NEEDLESS_WEIGHT * needless as f32;
        let mut best = (charged(self.score(query, x, &first.encoded, g), needless), None);
        // A rival with more changes is out before the model is asked which of its are needless.
        for (k, cf) in rivals.iter().enumerate().filter(|(_, cf)| cf.l0 <= first.l0) {
            let n = self.redundant(x, target, &cf.encoded)?.len();
            let s = charged(self.score(query, x, &cf.encoded, cf.agreement.unwrap_or(0.0)), n);
            if s < best.0 && n <= needless {
                best = (s, Some(k));
            }
        }
        Ok(best.1)
    }

    /// The first `n` of `answers` with those whose levers (changed features) no earlier answer
    /// has first, then those that repeat an earlier one's, each group in its order; ranked.
    pub(super) fn levers_first(&self, x: &[f32], answers: Vec<Counterfactual>, n: usize) -> Vec<Counterfactual> {
        let (mut fresh, mut repeats) = (Vec::new(), Vec::new());
        for cf in answers {
            let levers = self.changed_mask(x, &cf.encoded);
            if fresh.iter().any(|prev: &Counterfactual| self.changed_mask(x, &prev.encoded) == levers) {
                repeats.push(cf);
            } else {
                fresh.push(cf);
            }
        }
        fresh.append(&mut repeats);
        fresh.truncate(n);
        for (k, cf) in fresh.iter_mut().enumerate() {
            cf.rank = k + 1;
        }
        fresh
    }

    /// The answer a confirmed candidate of `tree`'s leaf becomes: refined
    /// ([`Explainer::refine`]), with the final point's agreement, rules and changes.
    pub(super) fn answer(
        &self,
        tree: &Tree<'_>,
        ask: &Ask<'_>,
        c: &Candidate,
        class: usize,
        p: f32,
    ) -> Result<Counterfactual, ModelError> {
        let x = ask.x;
        let (x_new, class, p) = self.refine(ask, c.x.clone(), class, p)?;
        // The reported agreement is the final point's, not the candidate's it came from.
        let agreement = ask.around.map(|around| self.agreement(around, &x_new, ask.targets)[0]);
        Ok(Counterfactual {
            rank: 0,
            class: ClassOut { index: class, name: self.class_name(class), probability: p },
            cost: c.cost as f64 / SCALE as f64,
            l0: counterfactual::changed_features(&self.schema, x, &x_new).count(),
            realization: c.how,
            agreement,
            rules: self.rules(tree, c.leaf, &x_new),
            changes: self.changes(x, &x_new),
            encoded: x_new,
            leaf: c.leaf,
        })
    }

    /// The leaf's region as rules in decoded units, one per restricted feature that `x_new`
    /// meets (a change set back by pruning leaves its rule unmet: it is left out).
    pub fn rules(&self, tree: &Tree<'_>, leaf: NodeIdx, x_new: &[f32]) -> Vec<String> {
        let b = Bounds::of(tree, leaf);
        let names = self.encoding.attributes();
        let mut rules = Vec::new();
        for (j, f) in self.schema.features().iter().enumerate() {
            if f.columns().any(|c| !b.admits(c, x_new[c])) {
                continue;
            }
            let name = &names[j].name;
            match f.kind {
                Kind::Categorical | Kind::Binary => {
                    let (col, width) =
                        if f.kind == Kind::Binary { (f.col as usize, 1) } else { (f.col as usize, f.width as usize) };
                    if let Some(rule) = category_rule(&b, f.kind, col, width, name, &names[j].categories) {
                        rules.push(rule);
                    }
                }
                Kind::Continuous | Kind::Integer => {
                    let (lo, hi) = b.interval(f.col as usize);
                    let fmt = |v: f32| format_threshold(f.decode(v));
                    match (lo.is_finite(), hi.is_finite()) {
                        (true, true) => rules.push(format!("{} < {name} <= {}", fmt(lo), fmt(hi))),
                        (true, false) => rules.push(format!("{name} > {}", fmt(lo))),
                        (false, true) => rules.push(format!("{name} <= {}", fmt(hi))),
                        (false, false) => {}
                    }
                }
            }
        }
        rules
    }
}

fn category_rule(b: &Bounds, kind: Kind, col: usize, width: usize, name: &str, cats: &[String]) -> Option<String> {
    let label = |k: usize| cats.get(k).cloned().unwrap_or_else(|| format!("#{k}"));
    if kind == Kind::Binary {
        let zero = b.admits(col, 0.0);
        let one = b.admits(col, 1.0);
        return match (zero, one) {
            (true, false) => Some(format!("{name} = {}", label(0))),
            (false, true) => Some(format!("{name} = {}", label(1))),
            _ => None,
        };
    }
    let mask = b.categories(col, width);
    let all = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
    if mask == all {
        return None;
    }
    let allowed: Vec<String> = (0..width).filter(|k| mask & (1 << k) != 0).map(label).collect();
    let excluded: Vec<String> = (0..width).filter(|k| mask & (1 << k) == 0).map(label).collect();
    Some(match allowed.len() {
        1 => format!("{name} = {}", allowed[0]),
        _ if excluded.len() < allowed.len() => format!("{name} not in {{{}}}", excluded.join(", ")),
        _ => format!("{name} in {{{}}}", allowed.join(", ")),
    })
}

/// The fitted neighbour in `leaf` of a target class nearest to `x` (encoded, Euclidean).
fn nearest_in_leaf(fitted: &Fitted, leaf_of: &[NodeIdx], leaf: NodeIdx, target: Target, x: &[f32]) -> Option<usize> {
    let cols = x.len();
    let mut best: Option<(f32, usize)> = None;
    for (i, (&l, &y)) in leaf_of.iter().zip(&fitted.labels).enumerate() {
        if l != leaf || !target.matches(y as u8) {
            continue;
        }
        let row = &fitted.rows[i * cols..(i + 1) * cols];
        let d: f32 = row.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum();
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, i));
        }
    }
    best.map(|(_, i)| i)
}

fn format_threshold(v: f32) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The share of `fitted`'s rows, each counted by its weight, on which `surrogate` gives the
/// model's label (0 for no rows): on the rows repeated, the same share to the bit.
fn weighted_agreement(surrogate: &Surrogate, fitted: &Fitted) -> f64 {
    let Fitted { rows, labels, weights } = fitted;
    let (agree, all) =
        surrogate.predict(rows).iter().zip(labels).zip(weights).fold((0u64, 0u64), |(agree, all), ((p, y), &w)| {
            (agree + if p == y { u64::from(w) } else { 0 }, all + u64::from(w))
        });
    if all == 0 { 0.0 } else { agree as f64 / all as f64 }
}
