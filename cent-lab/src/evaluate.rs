//! The evaluation harness (design §5): draws factuals from the test split, runs CEnt or a
//! baseline on each, and measures every counterfactual with [`crate::metrics`].
//!
//! Conventions, for every method alike:
//! - **Factuals**: `count` test rows drawn with a seeded shuffle, alternating between the classes
//!   the model predicts (so both classes are represented; if one class runs out the other fills
//!   in). The target of a factual is the other class (`(fact + 1) % classes`).
//! - **Constraints**: the schema's defaults (its immutable and one-direction features and
//!   forbidden category transitions).
//! - **Failures**: a factual without a counterfactual counts as not flipped. Distances,
//!   redundancy, violation rates, yNN and fidelity are averaged over the factuals where a
//!   counterfactual was found.
//! - **Dominance**: a method dominates another when it is at least as good on flip rate
//!   (higher), mean l0 (lower) and yNN (higher), and strictly better on one of them
//!   ([`Summary::dominates`]).
//! - **Plausibility sweep**: CEnt also runs once per value of [`Config::sweep`] (its
//!   `plausibility` setting) on the same factuals ([`Bench::sweep`]), for the trade-off between
//!   sparsity and plausibility.
//! - **Latency**: wall time of the method's call for one factual (search plus its own final
//!   verification); one-off work (training, encoding and labelling the pool, building the yNN
//!   reference) is excluded.

pub mod plots;
pub mod report;

use crate::baselines::{Face, Found, GrowingSpheres, Method, NearestUnlike, NotFound, Problem, RandomSearch};
use crate::bound;
use crate::metrics::{self, Judge, Measures, Reference};
use cent_host::blackbox::{BlackBox, ModelError};
use cent_host::data::Prepared;
use cent_host::explain::{self, Explainer};
use cent_host::profile::{Query, Schema};
use cent_host::vae::Vae;
use cent_nostd::atlas::{Counterfactual, Explainer as AtlasExplainer, Options};
use cent_nostd::bundle::{Bundle, BundleError};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;
use std::time::Instant;

/// The methods under evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodKind {
    /// CEnt (this project).
    Cent,
    /// Growing Spheres.
    Gs,
    /// FACE, kNN graph.
    Face,
    /// Nearest unlike neighbour.
    Nun,
    /// DiCE-style random search.
    Random,
    /// The device's recourse atlas: a bundle as `cent export` writes it, explained by the core
    /// with its quantized encoder and classifier, its first answer measured like every other
    /// (see [`Bench::with_atlas`]). Not a baseline: never among the methods that dominate CEnt,
    /// and not run unless asked for.
    Atlas,
}

impl MethodKind {
    pub const ALL: [MethodKind; 5] =
        [MethodKind::Cent, MethodKind::Gs, MethodKind::Face, MethodKind::Nun, MethodKind::Random];

    /// The short name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MethodKind::Cent => "cent",
            MethodKind::Gs => "gs",
            MethodKind::Face => "face",
            MethodKind::Nun => "nun",
            MethodKind::Random => "random",
            MethodKind::Atlas => "atlas",
        }
    }

    /// A method CEnt is compared against (every one but CEnt itself and the atlas, which is
    /// CEnt on the device).
    pub fn is_baseline(self) -> bool {
        !matches!(self, MethodKind::Cent | MethodKind::Atlas)
    }
}

/// Answers the atlas is asked for per factual (the device's default); the first is measured.
const ATLAS_ANSWERS: usize = 3;

/// Hyperparameters of one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Factuals drawn from the test split.
    pub factuals: usize,
    /// Seed of the factual draw and of every method.
    pub seed: u64,
    /// CEnt's explainer (its `n` is irrelevant here: the cheapest verified result is measured).
    pub cent: explain::Config,
    pub gs: GrowingSpheres,
    pub face: Face,
    pub random: RandomSearch,
    /// CEnt's `plausibility` settings to sweep, each in `0..=1` (empty: no sweep).
    pub sweep: Vec<f32>,
}

/// The plausibility settings [`Config::new`] sweeps: the explainer's default among them, so
/// that the headline point lies on the sweep's curve (and is not run twice).
pub const DEFAULT_SWEEP: [f32; 6] = [0.0, 0.25, 0.52, 0.6, 0.75, 1.0];

impl Config {
    /// Defaults of every method, all seeded with `seed`.
    pub fn new(factuals: usize, seed: u64) -> Self {
        Config {
            factuals,
            seed,
            cent: explain::Config { n: 1, seed, ..explain::Config::default() },
            gs: GrowingSpheres { seed, ..GrowingSpheres::default() },
            face: Face::default(),
            random: RandomSearch { seed, ..RandomSearch::default() },
            sweep: DEFAULT_SWEEP.to_vec(),
        }
    }
}

/// One factual's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Row of the test split.
    pub test_row: usize,
    /// The model's class of the factual, and the class asked for.
    pub fact_class: usize,
    pub target_class: usize,
    /// A counterfactual was returned.
    pub found: bool,
    /// It was returned and the model assigns it to the target class (re-checked here).
    pub flipped: bool,
    pub latency_ms: f64,
    /// Metrics of the counterfactual (absent when none was found).
    #[serde(flatten)]
    pub measures: Option<Measures>,
    /// The counterfactual, encoded (absent when none was found). Not serialized.
    #[serde(skip)]
    pub counterfactual: Option<Vec<f32>>,
    /// CEnt's surrogate fidelity on held-out neighbours.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<f64>,
    /// Why nothing was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Nothing was found because no training point of the target class can be reached under
    /// the constraints (with the required probability): a person without recourse in the data.
    pub unreachable: bool,
}

/// Aggregates of one method over the factuals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub method: MethodKind,
    pub factuals: usize,
    pub found: usize,
    /// Flipped counterfactuals over **all** factuals.
    pub flip_rate: f64,
    /// Factuals without a counterfactual because no training point of the target class can be
    /// reached under the constraints ([`Row::unreachable`]).
    pub unreachable: usize,
    /// Means over found counterfactuals.
    pub l0: f64,
    pub l1: f64,
    pub l2: f64,
    pub linf: f64,
    pub latent: f64,
    pub redundancy: f64,
    /// Shares of found counterfactuals with a violation (decoded values).
    pub immutable_violation_rate: f64,
    pub semi_immutable_violation_rate: f64,
    /// Share of found counterfactuals failing the core's full constraint check.
    pub infeasible_rate: f64,
    pub ynn: f64,
    /// Median over found counterfactuals of the distance to the nearest reference row of the
    /// target class (those with such a row).
    pub target_row_distance_median: f64,
    /// Median over found counterfactuals of the model's probability of the target class.
    pub target_probability_median: f64,
    /// Of the changed numbers of observed-support features (all found counterfactuals), the
    /// share whose value no training row has.
    pub unseen_value_share: f64,
    /// Share of found counterfactuals that break a schema link.
    pub link_violation_rate: f64,
    /// Latency over all factuals, milliseconds.
    pub latency_ms_mean: f64,
    pub latency_ms_median: f64,
    pub latency_ms_max: f64,
    /// Mean CEnt surrogate fidelity over the factuals where it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<f64>,
}

impl Summary {
    /// True when `self` is at least as good as `other` on flip rate (higher), mean l0 (lower)
    /// and yNN (higher), and strictly better on at least one of them.
    pub fn dominates(&self, other: &Summary) -> bool {
        let at_least = self.flip_rate >= other.flip_rate && self.l0 <= other.l0 && self.ynn >= other.ynn;
        at_least && (self.flip_rate > other.flip_rate || self.l0 < other.l0 || self.ynn > other.ynn)
    }
}

/// The methods among `others` whose summaries dominate `summary` (see [`Summary::dominates`]),
/// in the order given.
pub fn dominated_by(summary: &Summary, others: &[Summary]) -> Vec<MethodKind> {
    others.iter().filter(|o| o.method != summary.method && o.dominates(summary)).map(|o| o.method).collect()
}

/// The baselines of `results` that dominate CEnt's summary; `None` when CEnt is not among them.
pub fn cent_dominated_by(results: &[MethodResult]) -> Option<Vec<MethodKind>> {
    let cent = results.iter().find(|r| r.summary.method == MethodKind::Cent)?;
    let others: Vec<Summary> =
        results.iter().filter(|r| r.summary.method.is_baseline()).map(|r| r.summary.clone()).collect();
    Some(dominated_by(&cent.summary, &others))
}

/// How different CEnt's answers to one person are, when several are asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diversity {
    /// Answers asked for per factual.
    pub n: usize,
    /// Mean verified answers per factual, over the factuals with at least one.
    pub answers_mean: f64,
    /// Factuals with at least two verified answers.
    pub factuals_with_several: usize,
    /// Over those factuals, the mean of the mean pairwise Jaccard distance between the answers'
    /// sets of changed features: 1 when no two answers share a feature, 0 when all change the
    /// same ones.
    pub jaccard_distance: f64,
    /// Of all answer pairs of one factual, the share that change exactly the same features.
    pub same_levers_share: f64,
}

impl Diversity {
    /// From each factual's answers' changed-feature sets.
    pub fn of(n: usize, per_factual: &[Vec<Vec<usize>>]) -> Diversity {
        let with_any: Vec<&Vec<Vec<usize>>> = per_factual.iter().filter(|a| !a.is_empty()).collect();
        let answers_mean = mean(with_any.iter().map(|a| a.len() as f64));
        let (mut distances, mut pairs, mut same) = (Vec::new(), 0usize, 0usize);
        for answers in per_factual.iter().filter(|a| a.len() >= 2) {
            let mut d = Vec::new();
            for i in 0..answers.len() {
                for j in i + 1..answers.len() {
                    let (a, b) = (&answers[i], &answers[j]);
                    let common = a.iter().filter(|f| b.contains(f)).count();
                    let union = a.len() + b.len() - common;
                    d.push(if union == 0 { 0.0 } else { 1.0 - common as f64 / union as f64 });
                    pairs += 1;
                    same += usize::from(common == a.len() && common == b.len());
                }
            }
            distances.push(mean(d.into_iter()));
        }
        Diversity {
            n,
            answers_mean,
            factuals_with_several: distances.len(),
            jaccard_distance: mean(distances.into_iter()),
            same_levers_share: if pairs == 0 { 0.0 } else { same as f64 / pairs as f64 },
        }
    }
}

/// CEnt's summary at one plausibility setting of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// `explain::Config::plausibility` of this run.
    pub plausibility: f32,
    /// The setting is the configured default (`Config::cent`): its summary is the CEnt run's.
    pub default: bool,
    pub summary: Summary,
}

/// One method's rows and summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodResult {
    pub summary: Summary,
    pub rows: Vec<Row>,
}

/// Everything one dataset × model pair needs, built once: the problem setting, CEnt's
/// explainer (pool encoded and labelled) and the yNN reference.
pub struct Bench<'a> {
    prepared: &'a Prepared,
    model: &'a dyn BlackBox,
    vae: &'a Vae,
    schema: Schema,
    query: Query,
    explainer: Explainer<'a>,
    reference: Reference,
    config: Config,
    /// The device bundle [`MethodKind::Atlas`] runs on.
    atlas: Option<Bundle<'a>>,
    /// The device explainer's options [`MethodKind::Atlas`] runs with (its desired class set per
    /// factual).
    atlas_options: Options,
}

impl std::fmt::Debug for Bench<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bench").field("reference", &self.reference.len()).field("config", &self.config).finish()
    }
}

impl<'a> Bench<'a> {
    /// Encodes and labels the pool (training split) and labels the whole dataset (training
    /// and test rows) for yNN.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails on the data.
    pub fn new(
        prepared: &'a Prepared,
        model: &'a dyn BlackBox,
        vae: &'a Vae,
        config: Config,
    ) -> Result<Self, ModelError> {
        let enc = &prepared.encoding;
        let schema = enc.to_core_schema();
        let query = schema.default_query();
        let explainer = Explainer::new(enc, model, &vae.encoder, &prepared.train.data, config.cent)?;
        let mut all = prepared.train.data.clone();
        all.extend_from_slice(&prepared.test.data);
        let reference = Reference::new(model, all, enc.n_cols())?;
        let atlas_options = Options::default();
        Ok(Bench { prepared, model, vae, schema, query, explainer, reference, config, atlas: None, atlas_options })
    }

    /// The bench with a device bundle for [`MethodKind::Atlas`]: `bytes` as `cent export`
    /// writes them for this data (the same encoded columns).
    ///
    /// # Errors
    /// The loader's [`BundleError`], or [`BundleError::Mismatch`] when the bundle's schema has
    /// other columns than the data.
    pub fn with_atlas(mut self, bytes: &'a [u8]) -> Result<Self, BundleError> {
        let bundle = Bundle::from_bytes(bytes)?;
        if bundle.schema.columns() != self.schema.columns() {
            return Err(BundleError::Mismatch);
        }
        self.atlas = Some(bundle);
        Ok(self)
    }

    /// The bench with the device explainer's `options` for [`MethodKind::Atlas`] (a firmware's
    /// own, to measure them before flashing; `Options::default()` unless set). The desired
    /// class is each factual's target.
    pub fn with_atlas_options(mut self, options: Options) -> Self {
        self.atlas_options = options;
        self
    }

    /// The factual test rows (see the module docs for the draw).
    ///
    /// # Errors
    /// [`ModelError`] when the model fails on the test split.
    pub fn factuals(&self) -> Result<Vec<usize>, ModelError> {
        let predicted = self.model.predict(&self.prepared.test.data)?;
        Ok(draw_factuals(&predicted, self.model.classes(), self.config.factuals, self.config.seed))
    }

    /// CEnt once per setting of [`Config::sweep`] on `factuals`, in that order. The setting
    /// equal to the configured default is not run again: `default` (CEnt's summary on the same
    /// factuals, from [`Bench::run`]) stands for it.
    ///
    /// # Errors
    /// [`ModelError`] as [`Bench::run`].
    pub fn sweep(&mut self, factuals: &[usize], default: &Summary) -> Result<Vec<SweepPoint>, ModelError> {
        let configured = self.explainer.config.plausibility;
        let mut points = Vec::with_capacity(self.config.sweep.len());
        for plausibility in self.config.sweep.clone() {
            let is_default = plausibility == configured;
            let summary = if is_default {
                default.clone()
            } else {
                self.explainer.config.plausibility = plausibility;
                let run = self.run(MethodKind::Cent, factuals);
                self.explainer.config.plausibility = configured;
                run?.summary
            };
            points.push(SweepPoint { plausibility, default: is_default, summary });
        }
        Ok(points)
    }

    /// CEnt asked for `n` answers on every factual: how far apart the answers' levers are.
    /// Each answer is verified (the model's target class and the constraint check) like the
    /// headline's; an answer that fails is not counted.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails on a factual.
    pub fn diversity(&mut self, factuals: &[usize], n: usize) -> Result<Diversity, ModelError> {
        let configured = self.explainer.config.n;
        self.explainer.config.n = n;
        let result = self.answer_levers(factuals);
        self.explainer.config.n = configured;
        let per_factual = result?;
        Ok(Diversity::of(n, &per_factual))
    }

    /// Per factual, the changed-feature set of each verified answer.
    fn answer_levers(&self, factuals: &[usize]) -> Result<Vec<Vec<Vec<usize>>>, ModelError> {
        let mut out = Vec::with_capacity(factuals.len());
        for &r in factuals {
            let x = self.prepared.test.row(r);
            let fact_class = self.model.predict(x)?.first().copied().unwrap_or(0);
            let target = (fact_class + 1) % self.model.classes().max(1);
            let problem = self.problem();
            let answers = match self.explainer.explain(x, &self.query, Some(target)) {
                Ok(e) => e.counterfactuals,
                Err(explain::ExplainError::Model(m)) => return Err(m),
                Err(_) => Vec::new(),
            };
            let mut levers = Vec::new();
            for cf in answers {
                let changed: Vec<usize> =
                    cent_nostd::counterfactual::changed_features(&self.schema, x, &cf.encoded).collect();
                if problem.verify(x, cf.encoded, target).is_ok() {
                    levers.push(changed);
                }
            }
            out.push(levers);
        }
        Ok(out)
    }

    /// Every answer with one or two changes of each factual, measured ([`bound`]), with the
    /// best no larger than `sizes[i]` for factual `i` (e.g. CEnt's answer; `None`: no bound).
    /// Factuals are searched in parallel; the result is in factual order.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails.
    pub fn bound(
        &self,
        factuals: &[usize],
        sizes: &[Option<bound::Size>],
        grid: usize,
    ) -> Result<Vec<bound::Factual>, ModelError> {
        use rayon::prelude::*;
        let setting = bound::Setting {
            schema: &self.schema,
            query: &self.query,
            model: self.model,
            support: self.explainer.support(),
            pool: &self.prepared.train.data,
            reference: self.reference.rows(),
            labels: self.reference.labels(),
            min_probability: self.explainer.config.min_probability,
            grid,
            set_back: bound::SetBack::Linked,
        };
        factuals
            .par_iter()
            .enumerate()
            .map(|(i, &r)| {
                let x = self.prepared.test.row(r);
                let fact = self.model.predict(x)?.first().copied().unwrap_or(0);
                setting.factual(x, (fact + 1) % self.model.classes().max(1), sizes.get(i).copied().flatten())
            })
            .collect()
    }

    /// Runs `method` on every factual and measures the results. A model failure inside a
    /// method's search leaves that factual not found, with the failure as its reason.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails on a factual or while its counterfactual is measured.
    pub fn run(&self, method: MethodKind, factuals: &[usize]) -> Result<MethodResult, ModelError> {
        let rows: Vec<Row> = factuals.iter().map(|&r| self.row(method, r)).collect::<Result<_, _>>()?;
        Ok(MethodResult { summary: summarize(method, &rows), rows })
    }

    fn problem(&self) -> Problem<'_> {
        Problem {
            schema: &self.schema,
            query: &self.query,
            model: self.model,
            pool: &self.prepared.train.data,
            pool_labels: self.explainer.pool_labels(),
        }
    }

    fn row(&self, method: MethodKind, test_row: usize) -> Result<Row, ModelError> {
        let x = self.prepared.test.row(test_row);
        let fact_class = self.model.predict(x)?.first().copied().unwrap_or(0);
        let target_class = (fact_class + 1) % self.model.classes().max(1);
        let problem = self.problem();
        let start = Instant::now();
        let result = self.call(method, &problem, x, target_class, test_row as u64);
        let latency_ms = start.elapsed().as_secs_f64() * 1e3;
        let judge = Judge {
            schema: &self.schema,
            query: &self.query,
            model: self.model,
            encoder: &self.vae.encoder,
            reference: &self.reference,
            support: self.explainer.support(),
        };
        let mut row = Row {
            test_row,
            fact_class,
            target_class,
            found: false,
            flipped: false,
            latency_ms,
            measures: None,
            counterfactual: None,
            fidelity: None,
            reason: None,
            unreachable: false,
        };
        match result {
            Ok(found) => {
                let m = metrics::measure(&judge, x, &found.x, target_class)?;
                (row.found, row.flipped, row.measures, row.fidelity) = (true, m.flipped, Some(m), found.fidelity);
                row.counterfactual = Some(found.x);
            }
            Err(e) => {
                row.unreachable = matches!(e, NotFound::NoFeasibleTarget);
                row.reason = Some(e.to_string());
            }
        }
        Ok(row)
    }

    fn call(
        &self,
        method: MethodKind,
        p: &Problem<'_>,
        x: &[f32],
        target: usize,
        seed: u64,
    ) -> Result<Found, NotFound> {
        match method {
            MethodKind::Cent => self.cent(p, x, target),
            MethodKind::Atlas => self.atlas(p, x, target, seed),
            MethodKind::Gs => self.config.gs.counterfactual(p, x, target),
            MethodKind::Face => self.config.face.counterfactual(p, x, target),
            MethodKind::Nun => NearestUnlike.counterfactual(p, x, target),
            MethodKind::Random => self.config.random.counterfactual(p, x, target),
        }
    }

    /// The device's first answer for `x` (three asked for, as the firmware and the C API do by
    /// default; its random generator seeded with `seed`, the schema's default constraints,
    /// `target` asked for), re-verified with the full-precision model like every baseline's.
    fn atlas(&self, p: &Problem<'_>, x: &[f32], target: usize, seed: u64) -> Result<Found, NotFound> {
        let bundle =
            self.atlas.as_ref().ok_or_else(|| NotFound::Other("no device bundle to run the atlas on".into()))?;
        let desired = u8::try_from(target).map_err(|_| NotFound::Other("target class out of range".into()))?;
        let mut device: Box<AtlasExplainer> = Box::default();
        let mut out: heapless::Vec<Counterfactual, ATLAS_ANSWERS> = heapless::Vec::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
        let options = Options { desired: Some(desired), ..self.atlas_options };
        let query = bundle.schema.default_query();
        let summary = device
            .explain(&bundle.model(), x, &query, options, &mut rng, &mut out)
            .map_err(|e| NotFound::Other(format!("the atlas: {e}")))?;
        match out.first() {
            Some(cf) => p.verify(x, cf.x.to_vec(), target),
            None => Err(match summary.not_found {
                Some(reason) => NotFound::Other(format!("the atlas found no answer ({reason:?})")),
                None => NotFound::Budget,
            }),
        }
    }

    /// CEnt's cheapest verified counterfactual, re-verified like every baseline's.
    fn cent(&self, p: &Problem<'_>, x: &[f32], target: usize) -> Result<Found, NotFound> {
        let e = self.explainer.explain(x, p.query, Some(target)).map_err(|e| match e {
            explain::ExplainError::Model(m) => NotFound::from(m),
            explain::ExplainError::NotFound(explain::Reason::NoFeasibleTargetPoint) => NotFound::NoFeasibleTarget,
            e => NotFound::Other(e.to_string()),
        })?;
        let best = e.counterfactuals.into_iter().next().ok_or(NotFound::Budget)?;
        let found = p.verify(x, best.encoded, target)?;
        Ok(Found { fidelity: Some(e.fidelity).filter(|f| f.is_finite()), ..found })
    }
}

/// `count` indices of `predicted` (the model's classes of the test rows): a seeded shuffle,
/// taken round-robin over the classes so that each is represented; a class that runs out
/// leaves its turns to the others.
pub fn draw_factuals(predicted: &[usize], classes: usize, count: usize, seed: u64) -> Vec<usize> {
    let order = cent_host::data::split::permutation(predicted.len(), seed);
    let mut per_class: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); classes.max(1)];
    for i in order {
        if let Some(q) = per_class.get_mut(predicted[i]) {
            q.push_back(i);
        }
    }
    let mut out = Vec::with_capacity(count);
    while out.len() < count && per_class.iter().any(|q| !q.is_empty()) {
        for q in &mut per_class {
            if out.len() < count
                && let Some(i) = q.pop_front()
            {
                out.push(i);
            }
        }
    }
    out
}

/// Aggregates per-factual rows (see the module docs for what is averaged over what).
pub fn summarize(method: MethodKind, rows: &[Row]) -> Summary {
    let found: Vec<&Measures> = rows.iter().filter_map(|r| r.measures.as_ref()).collect();
    let mean_of = |f: &dyn Fn(&Measures) -> f64| mean(found.iter().map(|m| f(m)));
    let share = |f: &dyn Fn(&Measures) -> bool| mean(found.iter().map(|m| f64::from(u8::from(f(m)))));
    let mut latency: Vec<f64> = rows.iter().map(|r| r.latency_ms).collect();
    latency.sort_by(f64::total_cmp);
    let fidelities: Vec<f64> = rows.iter().filter_map(|r| r.fidelity).collect();
    Summary {
        method,
        factuals: rows.len(),
        found: found.len(),
        flip_rate: mean(rows.iter().map(|r| f64::from(u8::from(r.flipped)))),
        unreachable: rows.iter().filter(|r| r.unreachable).count(),
        l0: mean_of(&|m| m.l0 as f64),
        l1: mean_of(&|m| m.l1),
        l2: mean_of(&|m| m.l2),
        linf: mean_of(&|m| m.linf),
        latent: mean_of(&|m| m.latent),
        redundancy: mean_of(&|m| m.redundancy as f64),
        immutable_violation_rate: share(&|m| m.violations.immutable),
        semi_immutable_violation_rate: share(&|m| m.violations.semi_immutable),
        infeasible_rate: share(&|m| !m.feasible),
        ynn: mean_of(&|m| m.ynn),
        target_row_distance_median: {
            let mut d: Vec<f64> = found.iter().filter_map(|m| m.target_row_distance).collect();
            d.sort_by(f64::total_cmp);
            median(&d)
        },
        target_probability_median: {
            let mut p: Vec<f64> = found.iter().map(|m| m.target_probability).collect();
            p.sort_by(f64::total_cmp);
            median(&p)
        },
        unseen_value_share: {
            let changed: usize = found.iter().map(|m| m.observed_changes).sum();
            let unseen: usize = found.iter().map(|m| m.unseen_values).sum();
            if changed == 0 { 0.0 } else { unseen as f64 / changed as f64 }
        },
        link_violation_rate: share(&|m| m.link_violations > 0),
        latency_ms_mean: mean(latency.iter().copied()),
        latency_ms_median: median(&latency),
        latency_ms_max: latency.last().copied().unwrap_or(0.0),
        fidelity: (!fidelities.is_empty()).then(|| mean(fidelities.iter().copied())),
    }
}

/// Arithmetic mean; 0 for no values (a method that found nothing has no distances).
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// Median of sorted values; 0 for none.
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Violations;

    fn measures(l1: f64, redundancy: usize, immutable: bool) -> Measures {
        Measures {
            flipped: true,
            l0: 1,
            l1,
            l2: l1,
            linf: l1,
            latent: 2.0 * l1,
            redundancy,
            violations: Violations { immutable, semi_immutable: false },
            feasible: !immutable,
            ynn: 0.8,
            target_row_distance: Some(l1 / 2.0),
            target_probability: 0.7,
            unseen_values: 0,
            observed_changes: 0,
            link_violations: 0,
        }
    }

    fn row(found: Option<Measures>, latency_ms: f64, fidelity: Option<f64>) -> Row {
        Row {
            test_row: 0,
            fact_class: 0,
            target_class: 1,
            found: found.is_some(),
            flipped: found.is_some_and(|m| m.flipped),
            latency_ms,
            measures: found,
            counterfactual: None,
            fidelity,
            reason: None,
            unreachable: false,
        }
    }

    #[test]
    fn test_the_default_sweep_holds_the_explainers_default_in_ascending_order() {
        let default = explain::Config::default().plausibility;
        assert!(DEFAULT_SWEEP.contains(&default), "{default} not in {DEFAULT_SWEEP:?}");
        assert!(DEFAULT_SWEEP.windows(2).all(|w| w[0] < w[1]), "{DEFAULT_SWEEP:?}");
    }

    #[test]
    fn test_summary_counts_failures_as_unflipped_and_averages_found_only() {
        let rows = [
            row(Some(measures(1.0, 0, false)), 10.0, Some(0.9)),
            row(Some(measures(3.0, 1, true)), 30.0, Some(0.8)),
            row(None, 20.0, None),
            row(None, 40.0, None),
        ];
        let s = summarize(MethodKind::Cent, &rows);
        assert_eq!((s.factuals, s.found), (4, 2));
        assert!((s.flip_rate - 0.5).abs() < 1e-12);
        assert!((s.l1 - 2.0).abs() < 1e-12 && (s.latent - 4.0).abs() < 1e-12);
        assert!((s.redundancy - 0.5).abs() < 1e-12);
        assert!((s.immutable_violation_rate - 0.5).abs() < 1e-12 && s.semi_immutable_violation_rate.abs() < 1e-12);
        assert!((s.infeasible_rate - 0.5).abs() < 1e-12);
        assert!((s.latency_ms_mean - 25.0).abs() < 1e-12 && (s.latency_ms_median - 25.0).abs() < 1e-12);
        assert!((s.latency_ms_max - 40.0).abs() < 1e-12);
        assert!((s.fidelity.unwrap() - 0.85).abs() < 1e-12);
    }

    #[test]
    fn test_diversity_by_hand() {
        // Factual 1: {0,1} vs {2} (distance 1) and {0,1} vs {0,1} (0, same levers), {2} vs
        // {0,1} (1): mean 2/3. Factual 2: {3} vs {3,4}: 1 - 1/2. Factual 3: one answer. 4: none.
        let per = vec![vec![vec![0, 1], vec![2], vec![0, 1]], vec![vec![3], vec![3, 4]], vec![vec![5]], vec![]];
        let d = Diversity::of(3, &per);
        assert_eq!(d.factuals_with_several, 2);
        assert!((d.answers_mean - 2.0).abs() < 1e-12, "{d:?}");
        assert!((d.jaccard_distance - (2.0 / 3.0 + 0.5) / 2.0).abs() < 1e-12, "{d:?}");
        assert!((d.same_levers_share - 0.25).abs() < 1e-12, "{d:?}");
    }

    #[test]
    fn test_summary_of_nothing_found_has_zero_distances_and_no_fidelity() {
        let s = summarize(MethodKind::Gs, &[row(None, 1.0, None)]);
        assert_eq!(s.found, 0);
        assert!(s.flip_rate.abs() < 1e-12 && s.l1.abs() < 1e-12);
        assert_eq!(s.fidelity, None);
    }

    #[test]
    fn test_factuals_alternate_classes_and_are_seeded() {
        // Rows 0..10; class 1 only at rows 2 and 7.
        let predicted = [0, 0, 1, 0, 0, 0, 0, 1, 0, 0];
        let drawn = draw_factuals(&predicted, 2, 6, 3);
        assert_eq!(drawn.len(), 6);
        assert_eq!(drawn, draw_factuals(&predicted, 2, 6, 3));
        let ones = drawn.iter().filter(|&&i| predicted[i] == 1).count();
        assert_eq!(ones, 2, "both class-1 rows are drawn: {drawn:?}");
        // Alternation: a class-1 row among the first two.
        assert!(drawn[..2].iter().any(|&i| predicted[i] == 1), "{drawn:?}");
        let mut unique = drawn.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 6);
        // More than available: all rows, once.
        assert_eq!(draw_factuals(&predicted, 2, 50, 3).len(), 10);
    }

    #[test]
    fn test_json_rows_flatten_the_metrics_and_omit_absent_fields() {
        let found = serde_json::to_value(row(Some(measures(1.5, 1, false)), 3.0, Some(0.95))).expect("serializes");
        for key in ["test_row", "fact_class", "target_class", "found", "flipped", "latency_ms", "l0", "l1", "l2"] {
            assert!(found.get(key).is_some(), "{key} missing in {found}");
        }
        assert_eq!(found["violations"]["immutable"], serde_json::json!(false));
        assert_eq!(found["fidelity"], serde_json::json!(0.95));
        assert!(found.get("reason").is_none());
        let text = serde_json::to_string(&row(Some(measures(1.5, 1, false)), 3.0, None)).expect("serializes");
        assert_eq!(text.matches("\"flipped\"").count(), 1, "one flipped key: {text}");
        let missing = serde_json::to_value(row(None, 3.0, None)).expect("serializes");
        assert!(missing.get("l1").is_none() && missing.get("fidelity").is_none(), "{missing}");
        let summary = serde_json::to_value(summarize(MethodKind::Face, &[])).expect("serializes");
        assert_eq!(summary["method"], serde_json::json!("face"));
    }

    /// A summary with the three dominance axes set by hand.
    fn point(method: MethodKind, flip_rate: f64, l0: f64, ynn: f64) -> Summary {
        Summary { flip_rate, l0, ynn, ..summarize(method, &[]) }
    }

    #[test]
    fn test_dominance_needs_at_least_as_good_on_all_three_and_better_on_one() {
        let cent = point(MethodKind::Cent, 0.9, 1.5, 0.4);
        // Better yNN, equal flip rate and l0: dominates.
        assert!(point(MethodKind::Face, 0.9, 1.5, 0.9).dominates(&cent));
        // Identical: does not dominate (nothing strictly better).
        assert!(!point(MethodKind::Gs, 0.9, 1.5, 0.4).dominates(&cent));
        // Better on two, worse on one: no.
        assert!(!point(MethodKind::Nun, 1.0, 3.0, 0.9).dominates(&cent));
        assert!(!point(MethodKind::Random, 0.89, 1.0, 1.0).dominates(&cent));
        // Fewer changes, all else equal: dominates.
        assert!(point(MethodKind::Random, 0.9, 1.4, 0.4).dominates(&cent));
        let others = [
            cent.clone(),
            point(MethodKind::Gs, 0.9, 1.5, 0.4),
            point(MethodKind::Face, 0.95, 1.5, 0.5),
            point(MethodKind::Nun, 1.0, 3.0, 0.9),
            point(MethodKind::Random, 0.9, 1.4, 0.4),
        ];
        assert_eq!(dominated_by(&cent, &others), vec![MethodKind::Face, MethodKind::Random]);
        assert!(dominated_by(&point(MethodKind::Cent, 1.0, 1.0, 1.0), &others).is_empty());
        let results: Vec<MethodResult> =
            others.iter().map(|s| MethodResult { summary: s.clone(), rows: vec![] }).collect();
        assert_eq!(cent_dominated_by(&results), Some(vec![MethodKind::Face, MethodKind::Random]));
        assert_eq!(cent_dominated_by(&results[1..]), None, "no CEnt, no verdict");
        // The atlas is CEnt on the device, not a baseline: even a better one is no verdict.
        let mut with_atlas = results;
        with_atlas.push(MethodResult { summary: point(MethodKind::Atlas, 1.0, 1.0, 1.0), rows: vec![] });
        assert_eq!(cent_dominated_by(&with_atlas), Some(vec![MethodKind::Face, MethodKind::Random]));
    }

    #[test]
    fn test_summary_target_row_distance_is_the_median_over_found() {
        let rows = [
            row(Some(measures(1.0, 0, false)), 1.0, None),
            row(Some(measures(3.0, 0, false)), 1.0, None),
            row(Some(Measures { target_row_distance: None, ..measures(9.0, 0, false) }), 1.0, None),
            row(Some(measures(8.0, 0, false)), 1.0, None),
            row(None, 1.0, None),
        ];
        // Distances l1 / 2 of the rows that have one: 0.5, 1.5, 4.0.
        assert!((summarize(MethodKind::Gs, &rows).target_row_distance_median - 1.5).abs() < 1e-12);
    }

    #[test]
    fn test_median_of_even_and_odd_counts() {
        assert!((median(&[1.0, 2.0, 10.0]) - 2.0).abs() < 1e-12);
        assert!((median(&[1.0, 2.0, 4.0, 10.0]) - 3.0).abs() < 1e-12);
        assert!(median(&[]).abs() < 1e-12);
    }
}
