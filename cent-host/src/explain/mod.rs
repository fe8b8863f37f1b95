//! Per-query CEnt on the host (design §3): latent neighbours → entropy surrogate → query graph
//! → Dijkstra → counterfactual candidates → one batched call of the black box → verified,
//! diverse results with their rules and before/after values.
//!
//! The graph, search and counterfactual steps are `cent-nostd`'s: the host and the device run
//! one implementation. Every returned counterfactual is re-verified *after* final formatting
//! (decoded, rounded to the printed precision, re-encoded): it flips the black box and breaks no
//! constraint, or it is not returned.
//!
//! The query's flow is here; its steps are in the submodules: `regions` (the surrogate, its
//! contrast leaves as candidates, their confirmation and answers), `refine` (a confirmed point
//! made an answer), `people` and `single` (what competes with the first answer, and the last
//! resort), `projection` (neighbours moved onto what the query can reach) and `threads` (a
//! query on two threads).

use crate::blackbox::{BlackBox, ModelError};
use crate::data::{Encoding, QueryError};
use crate::layers::Mlp;
use crate::nearby::{Around, Rows};
use crate::neighbors::Pool;
use crate::profile::{Bounds, Query, Schema};
use crate::support::Support;
use crate::surrogate::{Surrogate, SurrogateError, TreeParams};
use cent_nostd::counterfactual;
use cent_nostd::schema::Kind;
use cent_nostd::search::Target;
use cent_nostd::tree::NodeIdx;
use serde::Serialize;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use thiserror::Error;

mod people;
mod projection;
mod refine;
mod regions;
mod single;
mod threads;

use threads::Helper;

/// Hyperparameters of the per-query explainer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Neighbours in all (`k/2` per side).
    pub k: usize,
    /// Contrast leaves turned into candidates at most.
    pub max_search: usize,
    /// Results wanted (distinct leaves).
    pub n: usize,
    pub tree: TreeParams,
    /// Share of the neighbours held out to measure the surrogate's fidelity.
    pub holdout: f64,
    pub seed: u64,
    /// Times the neighbourhood is widened (`k` × 4 each time, while the pool has more to give)
    /// when no candidate is confirmed; 0 gives up after the first neighbourhood.
    pub widen: u8,
    /// Weight of plausibility against path cost when a contrast leaf becomes a point, in
    /// `0..=1`: 0 keeps only the point just inside the leaf's boundary; higher values also try
    /// points drawn towards the leaf's own target-class neighbours and prefer those, let the
    /// next leaves' answers compete with the best leaf's once refined, and let the nearest
    /// reachable people of a target class compete with it when its nearest people do not all
    /// agree with it ([`Realization::Nearest`]). The default, 0.52, was measured on four seeds
    /// with [`Config::single_moves`] (docs/evaluation.md): from 0.54 up Adult's answers change
    /// more than two features on average, at 0.5 they are at yNN 0.80 on one seed.
    pub plausibility: f32,
    /// With [`Config::plausibility`] above 0, whether single moves compete with the best
    /// leaf's answer when its nearest people do not all agree with it: every feature the query
    /// may change, alone (a link's features together), moved to each of its categories or to
    /// values people have at [`SINGLE_MOVE_STEPS`] from the query's, each confirmed by the model
    /// ([`Realization::SingleMove`]). The tree learns from neighbours in the latent space,
    /// where people of another marital status or with a capital gain may all be far away; a
    /// single move finds such a lever when the model and the people near it agree on it.
    pub single_moves: bool,
    /// The model's probability of the target class a counterfactual needs to count, in
    /// `0..=1`; the target class must also be the model's decision, so a value at or below
    /// `1 / classes` asks for nothing more than that.
    pub min_probability: f32,
    /// Whether a query's two independent first steps, the people around it (for
    /// plausibility) and its first surrogate, run on two threads when the machine has two
    /// cores: inside a rayon pool (as `cent batch` runs queries) by `rayon::join`, which
    /// costs nothing when every thread is busy; elsewhere on one of cent's helper threads (as
    /// many as the cores less one, started with the first such query and kept, asleep between
    /// queries), which then goes on to judge the nearest people and the single moves that may compete with the first
    /// answer, and to measure the first surrogate's fidelity, while the calling thread finds
    /// the answer. The model may be called on either thread.
    /// The answers are the same either way; only the latency of one query changes (measured
    /// on Adult, 2 cores, each row in turn on one thread and on two: 26–27 % less on a quiet
    /// machine; from about as much to several times as much when both cores are already busy,
    /// where a caller that keeps every core busy should turn it off).
    pub parallel: bool,
}

/// The factor by which each widening multiplies the neighbour count.
pub const WIDEN_FACTOR: usize = 4;

impl Default for Config {
    fn default() -> Self {
        Config {
            k: 1000,
            max_search: 50,
            n: 3,
            tree: TreeParams::default(),
            holdout: 0.2,
            seed: 7,
            widen: 1,
            plausibility: 0.52,
            single_moves: true,
            min_probability: 0.6,
            parallel: true,
        }
    }
}

/// Why no counterfactual is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The pool has no point of the target class near the query.
    NoContrastNeighbours,
    /// The surrogate has no leaf of the target class that the constraints allow reaching.
    NoReachableContrastLeaf,
    /// Contrast leaves were reachable but no feasible point could be built in them.
    Blocked,
    /// Candidates were built but the black box confirmed none of them.
    NotConfirmed,
    /// No point of the pool in a target class, moved onto what the constraints let the query
    /// reach, is confirmed by the model: nothing in the data shows a way.
    NoFeasibleTargetPoint,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::NoContrastNeighbours => "no training point of the target class to learn from",
            Reason::NoReachableContrastLeaf => "every region of the target class needs a change the constraints forbid",
            Reason::Blocked => "the reachable target regions leave no feasible value for some feature",
            Reason::NotConfirmed => "the model confirmed none of the candidate changes",
            Reason::NoFeasibleTargetPoint => {
                "no person of the target class in the data can be reached under these constraints \
                 with the required probability"
            }
        })
    }
}

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ExplainError {
    #[error("the query has {found} encoded values, the dataset {expected}")]
    Width { found: usize, expected: usize },
    #[error("the query has a non-finite value in encoded column {col}")]
    NonFinite { col: usize },
    #[error("the desired class `{class}` is already the model's decision for this query")]
    DesiredIsCurrent { class: String },
    #[error("class index {index} is out of range (the model has {classes} classes)")]
    UnknownClass { index: usize, classes: usize },
    #[error("{0}")]
    Query(#[from] QueryError),
    #[error("no counterfactual found: {0}")]
    NotFound(Reason),
    #[error("surrogate: {0}")]
    Surrogate(#[from] SurrogateError),
    #[error("core: {0}")]
    Core(String),
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// A class and the model's probability for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassOut {
    pub index: usize,
    pub name: String,
    pub probability: f32,
}

impl ClassOut {
    /// The model's decision for `x`: its most probable class (the first on ties), named by
    /// `classes` (empty past their end), with its probability.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails on `x`.
    pub fn decision(model: &dyn BlackBox, classes: &[String], x: &[f32]) -> Result<ClassOut, ModelError> {
        let p = model.probabilities(x)?;
        let index = (0..p.len()).fold(0, |best, i| if p[i] > p[best] { i } else { best });
        let name = classes.get(index).cloned().unwrap_or_default();
        Ok(ClassOut { index, name, probability: p.get(index).copied().unwrap_or(0.0) })
    }
}

/// One changed logical feature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub feature: String,
    /// The value before and after, as data ([`Encoding::format_value`]).
    pub before: String,
    pub after: String,
    /// What `before` stands for when it is a code of the schema (`codes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_means: Option<String>,
    /// What `after` stands for when it is a code (an answer never moves to one; a factual's
    /// own may be left).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_means: Option<String>,
    /// The other changed features a schema link ties this one to in this answer (directly or
    /// through another changed feature): set back alone, one of them would break the link (a
    /// combination too few people have), so they are one move, listed right after the first of
    /// them ([`Support::ties`]). Changes of linked features that each hold alone are not tied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<String>,
}

impl Change {
    /// `before` for a person to read: with a code's meaning after it.
    pub fn before_text(&self) -> String {
        described(&self.before, self.before_means.as_deref())
    }

    /// `after` for a person to read.
    pub fn after_text(&self) -> String {
        described(&self.after, self.after_means.as_deref())
    }
}

fn described(value: &str, meaning: Option<&str>) -> String {
    match meaning {
        Some(m) => format!("{value} ({m})"),
        None => value.to_string(),
    }
}

/// How a contrast leaf became the reported point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Realization {
    /// Just inside the leaf's boundary, at one margin of [`MARGIN_LADDER`].
    ///
    /// [`MARGIN_LADDER`]: cent_nostd::atlas::MARGIN_LADDER
    Boundary,
    /// Halfway from the boundary point to the leaf's nearest neighbour of the target class, on
    /// the features the leaf requires.
    Between,
    /// The features the leaf requires take the values of the leaf's nearest neighbour of the
    /// target class: a person in the data has them.
    Exemplar,
    /// A pool point of the target class, moved onto what the constraints let the query reach,
    /// with every change the model does not need set back to the query's value: the last resort
    /// when no contrast leaf gave a confirmed point, or an answer that scored better than the
    /// best leaf's (whose nearest people did not all agree with it). It has no surrogate region.
    Nearest,
    /// One feature of the query (or the features one link ties together) moved to a value
    /// people in the data have, everything else as it was: an answer that scored better than
    /// the best leaf's, whose nearest people did not all agree with it
    /// ([`Config::single_moves`]). It has no surrogate region.
    SingleMove,
}

/// One verified counterfactual.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counterfactual {
    /// 1 = best ranked: the cheapest at plausibility 0, else by the plausibility-weighted score.
    pub rank: usize,
    /// The model's decision for the counterfactual.
    pub class: ClassOut,
    /// Cost of the leaf box (weighted scaled distance + l0 + entropy terms).
    pub cost: f64,
    /// Number of changed logical features.
    pub l0: usize,
    /// How the leaf became this point.
    pub realization: Realization,
    /// Share of the counterfactual's [`AGREEMENT_K`] nearest people (Euclidean over the encoded
    /// columns, the space yNN is measured in: the pool rows and the applicant as they are) that
    /// the model assigns to a target class; computed when [`Config::plausibility`] is above 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f32>,
    /// The surrogate leaf's region, in decoded units.
    pub rules: Vec<String>,
    pub changes: Vec<Change>,
    /// The counterfactual, encoded (for metrics and programmatic use).
    pub encoded: Vec<f32>,
    #[serde(skip)]
    pub leaf: NodeIdx,
}

/// The explanation of one query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub fact: ClassOut,
    /// The desired class, or `None` for "any class but the current one".
    pub desired: Option<String>,
    pub counterfactuals: Vec<Counterfactual>,
    /// Accuracy of the surrogate against the model on held-out neighbours (NaN, `null` in JSON,
    /// for an answer of the last resort, which has no surrogate: `tree_nodes` is then 0).
    pub fidelity: f64,
    pub neighbours: usize,
    pub tree_nodes: usize,
    /// Contrast leaves examined, leaves where a candidate could be built, and distinct
    /// candidates the model or the re-check rejected.
    pub examined: usize,
    pub built: usize,
    pub rejected: usize,
}

/// The per-query explainer over an encoded, labelled pool.
pub struct Explainer<'a> {
    encoding: &'a Encoding,
    schema: Schema,
    model: &'a dyn BlackBox,
    encoder: &'a Mlp,
    pool: Pool,
    /// The pool laid out by feature, for the encoded-space neighbours of candidates.
    nearby: Rows,
    /// The pool rows, row-major, in the order of [`Pool::layout`] (a query's latent neighbours
    /// lie in a few runs of it), and each row id's position there.
    laid_out: Vec<f32>,
    position: Vec<u32>,
    pool_labels: Vec<usize>,
    /// Values and combinations of values the pool rows hold.
    support: Support,
    pub config: Config,
    /// The held-out shuffle of the first query: (neighbour count, seed, permutation). Most
    /// queries have the same count and seed and reuse it.
    shuffle: OnceLock<(usize, u64, Vec<usize>)>,
}

impl std::fmt::Debug for Explainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explainer").field("pool", &self.pool_labels.len()).field("config", &self.config).finish()
    }
}

/// A formatted candidate of one contrast leaf.
#[derive(Debug, Clone)]
struct Candidate {
    leaf: NodeIdx,
    cost: u32,
    how: Realization,
    x: Vec<f32>,
}

/// The projected neighbours the surrogate was fitted on, each distinct row once with the model's
/// label and how many neighbours it stands for: where a contrast leaf finds its exemplars.
struct Fitted {
    rows: Vec<f32>,
    labels: Vec<usize>,
    weights: Vec<u32>,
}

/// Pool rows counted by [`Counterfactual::agreement`]: the nearest to the point in the encoded
/// space ([`crate::nearby`]). The latent space chooses the neighbours the tree learns from; it
/// does not judge plausibility, because a point near people of the target class there can sit
/// among people of the old class in the data (a capital gain few people have, close in the
/// latent space to those who have it, is a small step in the encoded one), and measured with
/// the same models, ranking by the encoded neighbourhood gave yNN 0.69 where the latent one
/// gave 0.58 on Adult. Five, the count yNN looks at: with ten the ranking also weighed people
/// beyond them, and measured on the same factuals five gave the same yNN with fewer changes
/// (Adult l0 1.96 / 1.95 → 1.87 / 1.84 at plausibility 0.5).
pub const AGREEMENT_K: usize = 5;

/// How much a wholly implausible point (agreement 0) weighs against the move's cost at
/// plausibility 1/2: as much as changing this many more features.
pub const PLAUSIBILITY_WEIGHT: f32 = 4.0;

/// How far a single move takes a number ([`Config::single_moves`]), in encoded units (the
/// feature's range is 1), either way; the value is then snapped to one people have.
pub const SINGLE_MOVE_STEPS: [f32; 6] = [0.02, 0.05, 0.1, 0.2, 0.35, 0.5];

/// Pool points of a target class the last resort looks at first
/// (`Explainer::nearest_feasible`); when none of them is confirmed it looks at
/// [`FALLBACK_WIDER`] times as many, then at all of them, so that "no feasible target point" is
/// a fact about the pool.
pub const FALLBACK_FIRST: usize = 256;
/// The factor of the last resort's second look ([`FALLBACK_FIRST`]): most queries that need
/// more than the first points are answered there, without labelling every pool point of a
/// target class (on Adult, 10–16 ms a query).
pub const FALLBACK_WIDER: usize = 8;
/// Of those confirmed, the cheapest this many are pruned and compared.
const FALLBACK_TRIED: usize = 4;
/// Confirmed points the last resort repairs and re-confirms at most to find those.
const FALLBACK_ATTEMPTS: usize = 16;

/// Leaves tried beyond `n` for answers with other levers than the ones already found (each
/// costs a pruning and a sparsifying pass).
const DIVERSITY_LOOKAHEAD: usize = 3;

/// Regions' answers, the next in the ranking's order, that compete for first place when the
/// first's nearest people do not all agree with it or it keeps a change the decision does not
/// need.
const REGION_RIVALS: usize = 2;

/// What a change the decision does not need (each is enough for the decision without it, short
/// of the required probability) adds to an answer's score when regions' answers compete for
/// first place: at plausibility 0.6, as much as two of the five nearest people
/// disagreeing (`0.6 * PLAUSIBILITY_WEIGHT * 2 / 5 ≈ 1`). Measured on three seeds
/// (docs/evaluation.md): at 1, redundancy fell on every pair but COMPAS's last-resort answers,
/// and l0 with it, for up to 0.02 of yNN; at 0.25 to 0.75, about half of that; at 2, Adult × LR's
/// yNN fell below 0.8.
const NEEDLESS_WEIGHT: f32 = 1.0;

/// Node capacity of the graph and search for trees of the default size (the host's full
/// capacity, [`crate::profile::NODES`], is used only for larger trees).
const SMALL_TREE: usize = 255;

/// A neighbourhood's surrogate ([`Explainer::fit_surrogate`]).
struct Fit {
    surrogate: Surrogate,
    /// The neighbours held out to measure its fidelity ([`Explainer::fidelity`]), measured
    /// only for the surrogate that gives the answer.
    held_out: Vec<u32>,
    /// Neighbours gathered, held out ones included.
    neighbours: usize,
    fitted: Fitted,
}

/// One query's resolved setting, as the steps that make a confirmed candidate an answer see
/// it ([`Explainer::refine`]).
#[derive(Clone, Copy)]
struct Ask<'q> {
    /// The encoded query.
    x: &'q [f32],
    query: &'q Query,
    target: Target,
    /// The classes `target` accepts.
    targets: &'q [usize],
    /// `x`'s neighbourhood in the data, when plausibility is judged.
    around: Option<&'q Around<'q>>,
}

/// A confirmed point: its encoded row, the model's class for it and that class's probability.
type Point = (Vec<f32>, usize, f32);

/// One query as [`Explainer::explain`] resolved it.
struct Start<'q> {
    /// The encoded query.
    x: &'q [f32],
    query: &'q Query,
    desired: Option<usize>,
    target: Target,
    /// The classes `target` accepts.
    targets: &'q [usize],
    /// The model's class for `x`, and as reported.
    fact: usize,
    fact_out: ClassOut,
}

/// How [`Explainer::people`] counts a refined person's changes the decision does not need
/// ([`Explainer::redundant`]).
#[derive(Debug, Clone, Copy)]
enum Needless<'s> {
    /// Not at all (the last resort).
    Ignore,
    /// Counted; a person with more is passed over.
    AtMost(usize),
    /// Counted, and the person kept whatever the count (judged before the cap is known, on
    /// a helper thread that stops between people, and between the steps of refining one, once
    /// the flag is set: the people found are then not used).
    Count(&'s AtomicBool),
}

/// A refined person ([`Explainer::people`]): the ranking's objective, the point, its
/// agreement and its count of changes the decision does not need.
#[derive(Debug)]
struct Person {
    rank: f32,
    point: Point,
    agreement: Option<f32>,
    needless: usize,
}

/// The best single move ([`Explainer::best_single_move`]): its score, point and agreement, and
/// its changes the decision does not need when they were counted.
#[derive(Debug)]
struct Single {
    score: f32,
    point: Point,
    agreement: f32,
    needless: Option<usize>,
}

/// What a query's helper thread judged before the first answer was known
/// ([`Explainer::people_ahead`], [`Explainer::single_ahead`]), and the first surrogate's
/// fidelity it measured once this thread had fitted it; `None` where it did not.
#[derive(Debug, Default)]
struct Ahead {
    people: Option<Vec<Person>>,
    single: Option<Option<Single>>,
    /// The first surrogate's fidelity ([`Explainer::fidelity`]).
    fidelity: Option<f64>,
}

/// What [`Explainer::search`] needs of what was judged ahead ([`Ahead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Nothing: the first answer's nearest people all agree with it.
    Nothing,
    /// The people: the last resort's first look.
    People,
    /// The people and the single moves, to compete with the first answer.
    Both,
}

impl<'a> Explainer<'a> {
    /// Encodes the pool (`pool_rows`, row-major encoded rows) with `encoder` and labels it with
    /// `model`, once.
    ///
    /// # Errors
    /// [`ModelError`] when the model fails on the pool.
    pub fn new(
        encoding: &'a Encoding,
        model: &'a dyn BlackBox,
        encoder: &'a Mlp,
        pool_rows: &'a [f32],
        config: Config,
    ) -> Result<Self, ModelError> {
        let z = encoder.forward_batch(pool_rows);
        let pool_labels = model.predict(pool_rows)?;
        let pool = Pool::new(&z, encoder.outputs(), &pool_labels, model.classes());
        let schema = encoding.to_core_schema();
        let cols = schema.columns().max(1);
        let layout = pool.layout(pool_rows.len() / cols);
        let mut position = vec![0u32; layout.len()];
        for (at, &id) in layout.iter().enumerate() {
            position[id as usize] = at as u32;
        }
        let laid_out =
            layout.iter().flat_map(|&id| &pool_rows[id as usize * cols..(id as usize + 1) * cols]).copied().collect();
        Ok(Explainer {
            encoding,
            nearby: Rows::new(&schema, pool_rows),
            schema,
            model,
            encoder,
            pool,
            laid_out,
            position,
            pool_labels,
            support: Support::new(encoding, pool_rows),
            config,
            shuffle: OnceLock::new(),
        })
    }

    /// The core schema (defaults for [`Query`]).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The values and combinations of values the pool rows hold.
    pub fn support(&self) -> &Support {
        &self.support
    }

    /// The black box's labels of the pool.
    pub fn pool_labels(&self) -> &[usize] {
        &self.pool_labels
    }

    /// Explains the encoded query `x` under `query`'s constraints, towards `desired` (a class
    /// index) or any class but the current one.
    ///
    /// # Errors
    /// [`ExplainError::NotFound`] with its reason when nothing verified exists;
    /// [`ExplainError::Query`] for constraints the dataset cannot have (a direction on an
    /// unordered categorical feature, a bad weight); input errors otherwise.
    pub fn explain(&self, x: &[f32], query: &Query, desired: Option<usize>) -> Result<Explanation, ExplainError> {
        self.check_input(x)?;
        self.encoding.check_query(query)?;
        let proba = self.model.probabilities(x)?;
        let fact = argmax(&proba);
        let classes = self.model.classes();
        let target_classes: Vec<usize> = match desired {
            Some(d) if d >= classes => return Err(ExplainError::UnknownClass { index: d, classes }),
            Some(d) if d == fact => return Err(ExplainError::DesiredIsCurrent { class: self.class_name(d) }),
            Some(d) => vec![d],
            None => (0..classes).filter(|&c| c != fact).collect(),
        };
        let target = match desired {
            Some(d) => Target::Class(d as u8),
            None => Target::Not(fact as u8),
        };
        let fact_out = ClassOut { index: fact, name: self.class_name(fact), probability: proba[fact] };
        let start = Start { x, query, desired, target, targets: &target_classes, fact, fact_out };
        let first = || self.fit_surrogate(x, query, fact, &target_classes, self.config.k);
        if self.config.plausibility <= 0.0 {
            return self.search(&start, None, first(), &mut |_| Ahead::default());
        }
        // The encoded-space neighbourhood of every point judged for plausibility, from `x`'s, and
        // the surrogate of the first neighbourhood: independent, so on two threads
        // ([`Config::parallel`]; the same results either way).
        let around = || Around::new(&self.nearby, x);
        match Helper::for_query(self.config.parallel) {
            Helper::None => {
                let around = around();
                self.search(&start, Some(&around), first(), &mut |_| Ahead::default())
            }
            Helper::Rayon => {
                let (first, around) = rayon::join(first, around);
                self.search(&start, Some(&around), first, &mut |_| Ahead::default())
            }
            Helper::Pool(helpers) => self.search_on_two_threads(helpers, &start),
        }
    }

    /// The rest of [`Explainer::explain`], from the first surrogate (`first`) and the people
    /// around `x`: the first neighbourhood, then wider ones while nothing is confirmed, then the
    /// last resort. `ahead(need)` gives what another thread judged ahead and is needed (the
    /// people and single moves when they compete with the first answer, the people for the last
    /// resort), and the first surrogate's fidelity when it was measured there.
    fn search(
        &self,
        start: &Start<'_>,
        around: Option<&Around<'_>>,
        first: Result<Fit, ExplainError>,
        ahead: &mut dyn FnMut(Need) -> Ahead,
    ) -> Result<Explanation, ExplainError> {
        let Start { x, query, desired, target, targets: target_classes, fact, .. } = *start;
        let mut k = self.config.k;
        let mut first = Some(first);
        // The first neighbourhood, then wider ones while nothing is confirmed and the pool still
        // has more neighbours to give (the target classes' and the fact's sizes bound `k / 2`).
        let available = target_classes.iter().map(|&c| self.pool.class_size(c)).sum::<usize>();
        let mut widenings = 0;
        loop {
            let fitted = first.take().unwrap_or_else(|| self.fit_surrogate(x, query, fact, target_classes, k));
            let attempt = fitted.and_then(|fit| {
                let found =
                    self.explain_with(x, query, start.fact_out.clone(), desired, target, target_classes, &fit, around)?;
                Ok((found, fit))
            });
            match attempt {
                Err(ExplainError::NotFound(reason))
                    if reason != Reason::NoContrastNeighbours
                        && widenings < self.config.widen
                        && k / 2 < available.max(self.pool.class_size(fact)) =>
                {
                    k = k.saturating_mul(WIDEN_FACTOR);
                    widenings += 1;
                }
                Err(ExplainError::NotFound(_)) => break,
                Ok((mut found, fit)) => {
                    let needed = around.is_some()
                        && found.counterfactuals.first().and_then(|cf| cf.agreement).is_some_and(|g| g < 1.0);
                    let Ahead { people, single, fidelity } = ahead(if needed { Need::Both } else { Need::Nothing });
                    // What was measured ahead is the first surrogate's.
                    found.fidelity = match fidelity.filter(|_| widenings == 0) {
                        Some(fidelity) => fidelity,
                        None => self.fidelity(x, query, &fit)?,
                    };
                    self.weigh_people(start, around, &mut found, people)?;
                    self.weigh_single_moves(start, around, &mut found, single)?;
                    return Ok(found);
                }
                Err(error) => return Err(error),
            }
        }
        // The people judged ahead are the last resort's first look.
        let Ahead { people, .. } = ahead(Need::People);
        match self.nearest_feasible(x, query, target, target_classes, around, people)? {
            Some(cf) => Ok(Explanation {
                fact: start.fact_out.clone(),
                desired: desired.map(|d| self.class_name(d)),
                counterfactuals: vec![cf],
                fidelity: f64::NAN,
                neighbours: 0,
                tree_nodes: 0,
                examined: 0,
                built: 0,
                rejected: 0,
            }),
            None => Err(ExplainError::NotFound(Reason::NoFeasibleTargetPoint)),
        }
    }

    /// An answer that no region gave (a person's, a single move's): the confirmed `point`.
    fn regionless(
        &self,
        query: &Query,
        x: &[f32],
        (row, class, p): Point,
        realization: Realization,
        agreement: Option<f32>,
    ) -> Counterfactual {
        Counterfactual {
            rank: 1,
            class: ClassOut { index: class, name: self.class_name(class), probability: p },
            cost: f64::from(self.move_cost(query, x, &row)),
            l0: counterfactual::changed_features(&self.schema, x, &row).count(),
            realization,
            agreement,
            rules: Vec::new(),
            changes: self.changes(x, &row),
            encoded: row,
            leaf: NodeIdx::MAX,
        }
    }

    /// Puts `cf` first in `out` (the last answer making room), then the answers in
    /// levers-first order ([`Explainer::levers_first`]).
    fn take_first_place(&self, x: &[f32], out: &mut Explanation, cf: Counterfactual) {
        let mut answers = std::mem::take(&mut out.counterfactuals);
        answers.insert(0, cf);
        out.counterfactuals = self.levers_first(x, answers, self.config.n.max(1));
    }

    /// The model's class and the probability of it when `p` (the model's output for `row`)
    /// confirms `row` as a counterfactual of `x`: a target class with at least
    /// [`Config::min_probability`], a change, and the core's constraint re-check. The one
    /// acceptance test of candidates, last-resort points and pruned points; the data re-check
    /// ([`Explainer::data_supported`]) comes on top where the point is final.
    fn accepts(&self, x: &[f32], query: &Query, target: Target, row: &[f32], p: &[f32]) -> Option<(usize, f32)> {
        let class = argmax(p);
        let ok = target.matches(class as u8)
            && p[class] >= self.config.min_probability
            && row != x
            && counterfactual::check(&self.schema, query, x, row).is_ok();
        ok.then(|| (class, p[class]))
    }

    /// The model's class and probability for `row` when it confirms it ([`Explainer::accepts`])
    /// and its values and combinations are ones the data hold.
    fn confirm(
        &self,
        x: &[f32],
        query: &Query,
        target: Target,
        row: Vec<f32>,
    ) -> Result<Option<(Vec<f32>, usize, f32)>, ModelError> {
        let p = self.model.probabilities(&row)?;
        match self.accepts(x, query, target, &row, &p) {
            Some((class, p)) if self.data_supported(x, &row) => Ok(Some((row, class, p))),
            _ => Ok(None),
        }
    }

    fn check_input(&self, x: &[f32]) -> Result<(), ExplainError> {
        let expected = self.schema.columns();
        if x.len() != expected {
            return Err(ExplainError::Width { found: x.len(), expected });
        }
        match x.iter().position(|v| !v.is_finite()) {
            Some(col) => Err(ExplainError::NonFinite { col }),
            None => Ok(()),
        }
    }

    fn class_name(&self, c: usize) -> String {
        self.encoding.classes().get(c).cloned().unwrap_or_else(|| format!("class {c}"))
    }

    /// Puts a candidate on values the data hold: each changed number of a feature with observed
    /// support snaps to the nearest value a pool row has inside the leaf's `bounds`, then linked
    /// features are repaired ([`Support::repair`]). False when the box holds no observed value
    /// or no observed combination keeps the change: the candidate is dropped.
    fn supported(&self, x: &[f32], bounds: &Bounds, cand: &mut [f32]) -> bool {
        for (j, f) in self.schema.features().iter().enumerate() {
            let c = f.col as usize;
            if matches!(f.kind, Kind::Continuous | Kind::Integer) && cand[c] != x[c] {
                let (lo, hi) = bounds.interval(c);
                match self.support.snap(j, cand[c], lo, hi) {
                    Some(v) => cand[c] = v,
                    None => return false,
                }
            }
        }
        self.support.repair(x, cand)
    }

    /// True when `x_new` holds only values and combinations the data have where it differs from
    /// `x`: the re-check of [`Explainer::supported`] on every reported point.
    fn data_supported(&self, x: &[f32], x_new: &[f32]) -> bool {
        self.support.broken(x, x_new) == 0 && self.support.unseen(x, x_new).0 == 0
    }

    /// The candidate as it will be reported: changed features decoded, rounded to the printed
    /// precision and re-encoded; unchanged features keep `x`'s exact values.
    fn formatted(&self, x: &[f32], cand: &[f32]) -> Vec<f32> {
        let mut out = x.to_vec();
        for (j, f) in self.schema.features().iter().enumerate() {
            let cols = f.columns();
            if x[cols.clone()] != cand[cols.clone()] && self.encoding.reported_into(j, cand, &mut out).is_err() {
                return cand.to_vec();
            }
        }
        out
    }

    /// Which logical features `x_new` changes from `x`, one flag per feature.
    fn changed_mask(&self, x: &[f32], x_new: &[f32]) -> Vec<bool> {
        let mut mask = vec![false; self.schema.features().len()];
        for j in counterfactual::changed_features(&self.schema, x, x_new) {
            if let Some(m) = mask.get_mut(j) {
                *m = true;
            }
        }
        mask
    }

    /// Per row (row-major, encoded, each near the query `around` was made for), the share of its
    /// [`AGREEMENT_K`] nearest people in the encoded space that the model assigns to one of
    /// `targets`. The people are the pool rows and the query itself, a person of the class the
    /// answer leaves (never a target) who is near every point judged for it: a sparse answer
    /// often has the applicant as they are among its nearest people. The query counts once: not
    /// when a pool row holds exactly its values (it may be that row). At equal distance a pool
    /// row comes first.
    fn agreement(&self, around: &Around<'_>, rows: &[f32], targets: &[usize]) -> Vec<f32> {
        rows.chunks_exact(self.schema.columns().max(1))
            .map(|q| {
                let ids = around.nearest(q, AGREEMENT_K);
                let query = !around.origin_in_rows()
                    && match ids.get(AGREEMENT_K - 1) {
                        Some(&last) => squared(q, around.origin()) < squared(q, self.pool_row(last)),
                        None => true,
                    };
                let people = if query { &ids[..ids.len().min(AGREEMENT_K - 1)] } else { &ids[..] };
                let hits = people.iter().filter(|&&id| targets.contains(&self.pool_labels[id as usize])).count();
                hits as f32 / (people.len() + usize::from(query)).max(1) as f32
            })
            .collect()
    }

    /// Pool row `id` (encoded).
    fn pool_row(&self, id: u32) -> &[f32] {
        let cols = self.schema.columns();
        let at = self.position[id as usize] as usize;
        &self.laid_out[at * cols..(at + 1) * cols]
    }

    /// The ranking's objective for the point `x_new` whose neighbours agree by `agreement`:
    /// `(1 - w) * move cost + w * PLAUSIBILITY_WEIGHT * (1 - agreement)`, `w` =
    /// [`Config::plausibility`]; lower is better.
    fn score(&self, query: &Query, x: &[f32], x_new: &[f32], agreement: f32) -> f32 {
        let w = self.config.plausibility.clamp(0.0, 1.0);
        (1.0 - w) * self.move_cost(query, x, x_new) + w * PLAUSIBILITY_WEIGHT * (1.0 - agreement)
    }

    /// The cost of moving `x` to `x_new` in the graph's terms (weighted distance in encoded
    /// units, 1 per category switch, plus the l0 weight per changed feature).
    fn move_cost(&self, query: &Query, x: &[f32], x_new: &[f32]) -> f32 {
        let mut total = 0.0;
        for (j, f) in self.schema.features().iter().enumerate() {
            let cols = f.columns();
            if x[cols.clone()] == x_new[cols.clone()] {
                continue;
            }
            let distance = match f.kind {
                Kind::Categorical => 1.0,
                _ => (x_new[cols.start] - x[cols.start]).abs(),
            };
            total += query.cost[j] * distance + query.l0;
        }
        total
    }

    /// How far the [`AGREEMENT_K`] people nearest to `x_new` (in the pool, and the applicant
    /// `x` as they are) agree that it belongs to one of `targets`: the measure this explainer
    /// ranks its own answers by, for a point from elsewhere (the device's answers, read on the
    /// host). 0 for a point of another width than the encoding's.
    pub fn agreement_of(&self, x: &[f32], x_new: &[f32], targets: &[usize]) -> f32 {
        let columns = self.schema.columns();
        if x.len() != columns || x_new.len() != columns {
            return 0.0;
        }
        self.agreement(&Around::new(&self.nearby, x), x_new, targets).first().copied().unwrap_or(0.0)
    }

    /// Before/after of each changed feature, in decoded units, in schema order but for the
    /// changes a link ties into one move ([`Support::ties`]), which follow the first of them.
    pub fn changes(&self, x: &[f32], cand: &[f32]) -> Vec<Change> {
        let (Ok(before), Ok(after)) = (self.encoding.decode(x), self.encoding.decode(cand)) else { return Vec::new() };
        let names = self.encoding.attributes();
        let changed: Vec<usize> = counterfactual::changed_features(&self.schema, x, cand).collect();
        let mut out = Vec::with_capacity(changed.len());
        for group in together(&self.support.ties(x, cand), &changed) {
            for &j in &group {
                out.push(Change {
                    feature: names[j].name.clone(),
                    before: self.encoding.format_value(j, before[j]),
                    after: self.encoding.format_value(j, after[j]),
                    before_means: self.encoding.code_meaning(j, before[j]).map(str::to_string),
                    after_means: self.encoding.code_meaning(j, after[j]).map(str::to_string),
                    linked: group.iter().filter(|&&k| k != j).map(|&k| names[k].name.clone()).collect(),
                });
            }
        }
        out
    }
}

/// `features` (positions, in order) gathered by `ties` (sets of features that move as one):
/// each feature in the order given, followed at once by those a tie joins it to, directly or
/// through other features of the list, in the order given. Features no tie joins stand alone.
/// Every feature appears once, in exactly one group.
fn together(ties: &[Vec<usize>], features: &[usize]) -> Vec<Vec<usize>> {
    let mut placed = vec![false; features.len()];
    let mut groups = Vec::new();
    for start in 0..features.len() {
        if placed[start] {
            continue;
        }
        placed[start] = true;
        let mut group = vec![features[start]];
        let mut next = 0;
        while next < group.len() {
            let j = group[next];
            next += 1;
            for (i, &k) in features.iter().enumerate() {
                if !placed[i] && ties.iter().any(|t| t.contains(&j) && t.contains(&k)) {
                    placed[i] = true;
                    group.push(k);
                }
            }
        }
        let first = group.remove(0);
        group.sort_by_key(|k| features.iter().position(|f| f == k));
        group.insert(0, first);
        groups.push(group);
    }
    groups
}

/// Squared Euclidean distance of two encoded rows.
fn squared(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum()
}

fn argmax(p: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in p.iter().enumerate() {
        if *v > p[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::projection::project;
    use super::threads::{helpers, two_threads};
    use super::*;
    use crate::blackbox::ModelError;
    use crate::data::{Input, Schema as DataSchema, Table};
    use crate::layers::{Activation, Dense};
    use cent_nostd::atlas::PUSH_LADDER;
    use cent_nostd::schema::Feature;
    use cent_nostd::schema::Mutability;
    use std::sync::atomic::Ordering;

    /// Two free numbers `a` and `b` (encoded 0..1, a range of 0..10 each) and a category.
    const TOY: &str = r#"
name = "toy"
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
[[feature]]
name = "a"
kind = "continuous"
[[feature]]
name = "b"
kind = "continuous"
[[feature]]
name = "c"
kind = "categorical"
categories = ["u", "v"]
"#;

    /// "yes" with probability `sigmoid(10 (a + b - 1))` on the encoded numbers.
    struct Sum;

    impl BlackBox for Sum {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            4
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
            Ok(rows
                .chunks_exact(4)
                .flat_map(|r| {
                    let yes = 1.0 / (1.0 + (-10.0 * (r[0] + r[1] - 1.0)).exp());
                    [1.0 - yes, yes]
                })
                .collect())
        }
    }

    /// Brute force: the changed features of `row` that can be set back alone and keep "yes".
    fn needless(model: &dyn BlackBox, x: &[f32], row: &[f32]) -> Vec<usize> {
        (0..2)
            .filter(|&c| row[c] != x[c])
            .filter(|&c| {
                let mut back = row.to_vec();
                back[c] = x[c];
                let p = model.probabilities(&back).unwrap();
                p[1] > p[0]
            })
            .collect()
    }

    /// The toy data: `a` and `b` on a grid of 0..=10 (encoded 0..1), `c` alternating.
    struct Toy {
        encoding: Encoding,
        pool: Vec<f32>,
        encoder: Mlp,
    }

    fn toy() -> Toy {
        let csv: String = std::iter::once("a,b,c,y".to_string())
            .chain((0..121).map(|i| format!("{},{},{},0", i / 11, i % 11, if i % 2 == 0 { "u" } else { "v" })))
            .collect::<Vec<_>>()
            .join("\n");
        let schema = DataSchema::from_toml(TOY, "toy.toml").unwrap();
        let table =
            Table::read(&schema, &[Input { name: "toy.csv".into(), bytes: csv.into_bytes(), skip_lines: 0 }]).unwrap();
        let all: Vec<usize> = (0..table.len()).collect();
        let encoding = Encoding::fit(&table, &all).unwrap();
        let pool = encoding.encode_rows(&table, &all).unwrap().data;
        let layer = Dense {
            inputs: 4,
            outputs: 2,
            weights: vec![0.5; 8],
            bias: vec![0.0; 2],
            activation: Activation::Identity,
        };
        Toy { encoding, pool, encoder: Mlp { layers: vec![layer] } }
    }

    /// The toy's question: anything but "no" for `x`.
    fn ask<'q>(x: &'q [f32], query: &'q Query, around: Option<&'q Around<'q>>) -> Ask<'q> {
        Ask { x, query, target: Target::Not(0), targets: &[1], around }
    }

    /// Brute force over the pool and the query: the share of a point's [`AGREEMENT_K`] nearest
    /// people (a pool row before the query at equal distance; the query left out when a pool
    /// row holds its values) that the model puts in "yes".
    #[test]
    fn test_tied_features_are_gathered_behind_the_first() {
        let ties = [vec![1, 4], vec![4, 6, 7]];
        // 6 joins 1 through 4; 2 and 9 stand alone; the order given is kept within a group.
        assert_eq!(together(&ties, &[1, 2, 6, 9, 4]), [vec![1, 6, 4], vec![2], vec![9]]);
        assert_eq!(together(&ties, &[2, 7, 6]), [vec![2], vec![7, 6]]);
        assert_eq!(together(&[], &[3, 1]), [vec![3], vec![1]]);
        assert!(together(&ties, &[]).is_empty());
    }

    #[test]
    fn test_two_threads_gives_each_step_its_result_and_runs_the_rest_on_the_helper() {
        use std::sync::atomic::AtomicBool;
        let pool = helpers().expect("the helper threads start");
        let helper_name = std::sync::Mutex::new(None);
        let here = std::thread::current().id();
        let id = || std::thread::current().id();
        // `b` waits (a while at most) for the helper to start `a`, so that this thread does not
        // take `a` over before the helper begins.
        let started = AtomicBool::new(false);
        let wait = || {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !started.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                std::thread::yield_now();
            }
        };
        let (a, b, then) = two_threads(
            pool,
            || {
                *helper_name.lock().expect("not poisoned") = std::thread::current().name().map(str::to_owned);
                started.store(true, Ordering::SeqCst);
                (6 * 7, id())
            },
            |&(v, _)| (v + 1, id()),
            |(v, a_thread), done: &AtomicBool| (v, a_thread, id(), done.load(Ordering::SeqCst)),
            || {
                wait();
                ("b", id())
            },
            |a, b, later| (a, b, later(true)),
        );
        assert_eq!(b, ("b", here), "`b` runs on this thread");
        assert_eq!(a.0, 43, "this thread gets the shared handle on `a`'s result");
        let (v, a_thread, then_thread, done) = then.expect("the helper ran `then`");
        assert_eq!(v, 42, "`then` gets the helper's own result");
        assert_ne!(a_thread, here, "`a` runs on the helper");
        assert_eq!(then_thread, a_thread, "`then` runs on the helper after `a`");
        assert!(!done, "`then` ran before this thread was done");
        let name = helper_name.lock().expect("not poisoned").take();
        assert!(
            name.is_some_and(|n| n.starts_with("cent-helper-")),
            "`a` runs on a kept helper thread, not one started for the call"
        );
        // Whoever runs `a`, the rest gets it; `then` is run at most once and waited for.
        for _ in 0..20 {
            let ran = std::sync::atomic::AtomicUsize::new(0);
            let (a, b, later) = two_threads(
                pool,
                || 1,
                |&a| a,
                |a, _: &AtomicBool| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    a
                },
                || 2,
                |a, b, later| (a, b, later(true).is_some()),
            );
            assert_eq!((a, b), (1, 2));
            assert_eq!(ran.load(Ordering::SeqCst), usize::from(later), "`later` says whether `then` ran");
        }
        // `later(false)` tells `then` to stop, and gives what it returns then.
        let (ran, seen) = (AtomicBool::new(false), AtomicBool::new(false));
        let given = two_threads(
            pool,
            || (),
            |_| (),
            |_, done: &AtomicBool| {
                ran.store(true, Ordering::SeqCst);
                let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while !done.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                    std::thread::yield_now();
                }
                seen.store(done.load(Ordering::SeqCst), Ordering::SeqCst);
                7
            },
            || (),
            |_, _, later| later(false),
        );
        assert_eq!(given, ran.load(Ordering::SeqCst).then_some(7), "what `then` returned once told to stop");
        assert_eq!(seen.load(Ordering::SeqCst), ran.load(Ordering::SeqCst), "`then` is told to stop");
        // A panic on the helper, in `a` or in `then`, reaches this thread.
        let started = AtomicBool::new(false);
        let wait = || {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !started.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                std::thread::yield_now();
            }
        };
        let in_then = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            two_threads(
                pool,
                || started.store(true, Ordering::SeqCst),
                |_| (),
                |_, _: &AtomicBool| -> u8 { panic!("the helper's step failed") },
                wait,
                |_, _, later| later(true),
            )
        }));
        assert!(in_then.is_err(), "a panic in `then` reaches the caller");
        let in_a = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            two_threads(
                pool,
                || -> u8 { panic!("the helper's first step failed") },
                |&a| a,
                |a, _| a,
                || 1,
                |a, b, _| a + b,
            )
        }));
        assert!(in_a.is_err(), "a panic in `a` reaches the caller, whichever thread runs it");
    }

    #[test]
    fn test_explanations_are_the_same_on_one_thread_or_two() {
        let t = toy();
        // Few neighbours too: answers of wider neighbourhoods and of the last resort.
        let (mut found, mut regionless) = (0, 0);
        for k in [4, 1000] {
            let config = Config { k, ..Config::default() };
            let two = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, config).unwrap();
            let one =
                Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config { parallel: false, ..config }).unwrap();
            let query = two.schema().default_query();
            for i in 0..121 {
                let x = [(i / 11) as f32 / 10.0, (i % 11) as f32 / 10.0, (i % 2) as f32, ((i + 1) % 2) as f32];
                let (a, b) = (two.explain(&x, &query, None), one.explain(&x, &query, None));
                found += usize::from(a.as_ref().is_ok_and(|e| e.counterfactuals.len() >= 2));
                regionless += usize::from(a.as_ref().is_ok_and(|e| e.neighbours == 0));
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "k {k}: {x:?}");
            }
        }
        assert!(found >= 60, "the comparison covers several answers a query, not only errors ({found})");
        assert!(regionless >= 10, "and answers of the last resort ({regionless})");
    }

    /// Each point of the toy grid (`c` = "u") as a query for anything but its class, with
    /// the people around it.
    fn each_toy_query(explainer: &Explainer<'_>, mut f: impl FnMut(&Start<'_>, &Around<'_>)) {
        let query = explainer.schema().default_query();
        for a in 0..11 {
            for b in 0..11 {
                let x = [a as f32 / 10.0, b as f32 / 10.0, 1.0, 0.0];
                let proba = Sum.probabilities(&x).unwrap();
                let fact = argmax(&proba);
                let fact_out = ClassOut { index: fact, name: explainer.class_name(fact), probability: proba[fact] };
                let targets = [1 - fact];
                let target = Target::Not(fact as u8);
                let start = Start { x: &x, query: &query, desired: None, target, targets: &targets, fact, fact_out };
                f(&start, &Around::new(&explainer.nearby, &x));
            }
        }
    }

    #[test]
    fn test_people_and_single_moves_judged_ahead_give_the_same_answers() {
        let t = toy();
        // With few neighbours, many queries come to the last resort, whose first look is the
        // people judged ahead.
        let (mut used, mut last_resort) = (0, 0);
        for k in [4, 1000] {
            let config = Config { k, ..Config::default() };
            let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, config).unwrap();
            each_toy_query(&explainer, |start, around| {
                let fit = || explainer.fit_surrogate(start.x, start.query, start.fact, start.targets, k);
                let later = explainer.search(start, Some(around), fit(), &mut |_| Ahead::default());
                let helper = around.share();
                let mut ahead = |need: Need| {
                    used += usize::from(need == Need::Both);
                    let never = AtomicBool::new(false);
                    let people = explainer.people_ahead(start, &helper, &never);
                    Ahead { people, single: explainer.single_ahead(start, &helper, &never), fidelity: None }
                };
                let judged = explainer.search(start, Some(&around.share()), fit(), &mut ahead);
                assert_eq!(format!("{judged:?}"), format!("{later:?}"), "k {k}: {:?}", start.x);
                last_resort += usize::from(judged.is_ok_and(|e| e.neighbours == 0));
            });
        }
        assert!(used >= 5, "the comparison covers first answers that people and single moves compete with ({used})");
        assert!(last_resort >= 10, "and answers of the last resort ({last_resort})");
    }

    #[test]
    fn test_held_out_fidelity_on_distinct_rows_is_the_share_over_every_held_out_row() {
        let t = toy();
        // A one-leaf surrogate, which disagrees with the model on the rows of the other class.
        let tree = crate::surrogate::TreeParams { max_nodes: 1, ..Default::default() };
        let explainer =
            Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config { tree, ..Config::default() }).unwrap();
        // With `a` fixed, held-out neighbours that differ only in `a` become one row.
        let mut query = explainer.schema().default_query();
        query.mutability[0] = Mutability::Immutable;
        let (mut merged, mut measured) = (0, 0);
        for a in 0..11 {
            for b in 0..11 {
                let x = [a as f32 / 10.0, b as f32 / 10.0, 1.0, 0.0];
                let fact = argmax(&Sum.probabilities(&x).unwrap());
                let Ok(fit) = explainer.fit_surrogate(&x, &query, fact, &[1 - fact], 1000) else { continue };
                // The oracle: every held-out row projected and asked of the model.
                let steps = super::projection::projection(&explainer.schema, &query, &x, explainer.schema.columns());
                let rows = explainer.gathered(&steps, &fit.held_out);
                let labels = Sum.predict(&rows).unwrap();
                let want = fit.surrogate.fidelity(&rows, &labels);
                let got = explainer.held_out_fidelity(&x, &query, &fit.surrogate, &fit.held_out).unwrap();
                assert_eq!(got.to_bits(), want.to_bits(), "{x:?}: {got} for {want}");
                let distinct = explainer.projected_once(&x, &query, &fit.held_out).unwrap().labels.len();
                merged += usize::from(distinct < fit.held_out.len());
                measured += usize::from(want > 0.0 && want < 1.0);
            }
        }
        assert!(merged >= 100, "held-out rows were merged ({merged})");
        assert!(measured >= 5, "and the share is neither 0 nor 1 for some queries ({measured})");
    }

    #[test]
    fn test_a_fidelity_measured_ahead_is_the_first_surrogates_only() {
        let t = toy();
        // Answers of the first surrogate, of a wider one and of the last resort: few neighbours,
        // so that some queries need a wider neighbourhood or the last resort.
        let mut seen = [0usize; 3];
        for k in [4, 8, 1000] {
            let config = Config { k, ..Config::default() };
            let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, config).unwrap();
            each_toy_query(&explainer, |start, around| {
                let fit = || explainer.fit_surrogate(start.x, start.query, start.fact, start.targets, k);
                let plain = explainer.search(start, Some(around), fit(), &mut |_| Ahead::default());
                // A value no surrogate measures, standing for the helper's measure.
                let marked = Ahead { fidelity: Some(-1.0), ..Ahead::default() };
                let mut once = Some(marked);
                let ahead = explainer.search(start, Some(around), fit(), &mut |_| once.take().unwrap_or_default());
                let (Ok(plain), Ok(ahead)) = (plain, ahead) else { return };
                let first = fit().map(|f| f.neighbours).ok();
                if plain.neighbours == 0 {
                    // The last resort has no surrogate.
                    seen[2] += 1;
                    assert!(plain.fidelity.is_nan() && ahead.fidelity.is_nan(), "{:?}", start.x);
                } else if Some(plain.neighbours) == first {
                    seen[0] += 1;
                    assert_eq!(ahead.fidelity, -1.0, "the first surrogate's, measured ahead: {:?}", start.x);
                    let measured = explainer.fidelity(start.x, start.query, &fit().unwrap()).unwrap();
                    assert_eq!(plain.fidelity, measured, "{:?}", start.x);
                } else {
                    seen[1] += 1;
                    assert_eq!(ahead.fidelity, plain.fidelity, "a wider surrogate's is its own: {:?}", start.x);
                }
                assert_eq!(
                    format!("{:?}", Explanation { fidelity: 0.0, ..ahead }),
                    format!("{:?}", Explanation { fidelity: 0.0, ..plain }),
                    "{:?}",
                    start.x
                );
            });
        }
        assert!(seen.iter().all(|&n| n >= 10), "every kind of answer is covered: {seen:?}");
    }

    #[test]
    fn test_a_refinement_told_to_stop_stops_after_pruning_and_otherwise_is_whole() {
        let t = toy();
        let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config::default()).unwrap();
        let (never, now) = (AtomicBool::new(false), AtomicBool::new(true));
        let mut differ = 0;
        each_toy_query(&explainer, |start, around| {
            let Start { x, query, target, targets, .. } = *start;
            let ask = Ask { x, query, target, targets, around: Some(around) };
            // Confirmed points: the people of the target class, as the last resort takes them.
            for &id in explainer.people_ids(x, targets).iter().take(3) {
                let row = explainer.formatted(x, explainer.pool_row(id));
                let Some((row, class, p)) = explainer.confirm(x, query, target, row).unwrap() else { continue };
                let whole = explainer.refine(&ask, row.clone(), class, p).unwrap();
                let unstopped = explainer.refine_unless(&ask, row.clone(), class, p, &never).unwrap();
                assert_eq!(format!("{unstopped:?}"), format!("{whole:?}"), "{x:?}");
                let stopped = explainer.refine_unless(&ask, row.clone(), class, p, &now).unwrap();
                let pruned = explainer.prune(&ask, row, class, p).unwrap();
                assert_eq!(format!("{stopped:?}"), format!("{pruned:?}"), "{x:?}");
                differ += usize::from(pruned != whole);
            }
            // Told to stop before they begin, the people and the single moves give nothing.
            assert!(explainer.people_ahead(start, around, &now).is_none());
            assert!(matches!(explainer.single_ahead(start, around, &now), Some(None)));
        });
        assert!(differ >= 5, "refining goes past pruning on some points ({differ})");
    }

    #[test]
    fn test_judged_without_the_first_answer_then_compared_is_judged_with_it() {
        let t = toy();
        let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config::default()).unwrap();
        let (mut singles, mut people) = (0, 0);
        each_toy_query(&explainer, |start, around| {
            let Start { x, query, target, targets, .. } = *start;
            // The best single move below a score to beat is the best of all, when below it.
            let never = AtomicBool::new(false);
            let all = explainer.best_single_move(start, around, f32::INFINITY, &never).unwrap();
            let best = all.as_ref().map_or(1.0, |b| b.score);
            singles += usize::from(all.is_some());
            for to_beat in [0.05, 0.2, 0.5, 1.0, 3.0, best, best + 1e-3, f32::INFINITY] {
                let below = explainer.best_single_move(start, around, to_beat, &never).unwrap();
                let filtered = all.as_ref().filter(|b| b.score < to_beat);
                assert_eq!(format!("{below:?}"), format!("{filtered:?}"), "{x:?}, below {to_beat}");
            }
            // People refined with their needless changes counted, then capped, are those
            // passed over at the cap as they are refined.
            let ids = explainer.people_ids(x, targets);
            let counting = Needless::Count(&AtomicBool::new(false));
            let counted = explainer.people(x, query, target, targets, &ids, Some(around), counting).unwrap();
            people += counted.len();
            for cap in 0..3 {
                let capped =
                    explainer.people(x, query, target, targets, &ids, Some(around), Needless::AtMost(cap)).unwrap();
                let copies = counted.iter().map(|p| Person { point: p.point.clone(), ..*p }).collect();
                let (first, then) =
                    (explainer.closest(query, x, capped, cap), explainer.closest(query, x, copies, cap));
                assert_eq!(format!("{first:?}"), format!("{then:?}"), "{x:?}, at most {cap}");
            }
        });
        assert!(singles >= 10 && people >= 10, "the comparison covers found moves ({singles}) and people ({people})");
    }

    #[test]
    fn test_agreement_counts_the_query_among_the_nearest_people() {
        let t = toy();
        let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config::default()).unwrap();
        let labels = explainer.pool_labels();
        let brute = |x: &[f32], in_pool: bool, q: &[f32]| {
            let mut people: Vec<(f32, usize, bool)> =
                t.pool.chunks_exact(4).enumerate().map(|(i, r)| (squared(q, r), i, labels[i] == 1)).collect();
            if !in_pool {
                people.push((squared(q, x), usize::MAX, false));
            }
            people.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            people[..AGREEMENT_K].iter().filter(|p| p.2).count() as f32 / AGREEMENT_K as f32
        };
        // Off the grid (not a pool row), and a pool row itself (row 61: a = 5, b = 6, c = v),
        // both near the model's boundary, where people of both classes live.
        for (x, in_pool) in [([0.45, 0.62, 1.0, 0.0], false), ([0.5, 0.6, 0.0, 1.0], true)] {
            let around = Around::new(&explainer.nearby, &x);
            assert_eq!(around.origin_in_rows(), in_pool);
            let mut counted = 0;
            for i in 0..=20 {
                for k in 0..=20 {
                    for c in [x[2..].to_vec(), vec![x[3], x[2]]] {
                        // Off the half-grid, so that no two people lie at the same distance.
                        let q = [i as f32 * 0.05 + 0.0137, k as f32 * 0.05 + 0.0071, c[0], c[1]];
                        let want = brute(&x, in_pool, &q);
                        assert_eq!(explainer.agreement(&around, &q, &[1])[0], want, "x {x:?}, point {q:?}");
                        // Points whose nearest people change with the query among them.
                        counted += usize::from(brute(&x, true, &q) != want);
                    }
                }
            }
            assert_eq!(counted > 0, !in_pool, "the query changes some points' agreement, unless it is a pool row");
        }
    }

    #[test]
    fn test_deepen_keeps_the_changes_and_moves_only_to_a_better_score() {
        let t = toy();
        let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config::default()).unwrap();
        let query = explainer.schema().default_query();
        let x = [0.1, 0.2, 1.0, 0.0];
        let around = Around::new(&explainer.nearby, &x);
        let score = |row: &[f32]| explainer.score(&query, &x, row, explainer.agreement(&around, row, &[1])[0]);
        // Just past the boundary (a + b = 1.1), among as many "no" rows as "yes" ones: farther in
        // is worth its cost. Deep in already (a + b = 1.9): nothing farther scores better.
        for (row, deeper) in [([0.45, 0.65, 1.0, 0.0], true), ([0.9, 1.0, 1.0, 0.0], false)] {
            let p = Sum.probabilities(&row).unwrap()[1];
            let (out, class, q) = explainer.deepen(&ask(&x, &query, Some(&around)), row.to_vec(), 1, p).unwrap();
            assert_eq!((class, Sum.probabilities(&out).unwrap()[1]), (1, q));
            assert!(q >= Config::default().min_probability);
            assert_eq!(out != row, deeper, "{out:?}");
            assert!(score(&out) <= score(&row));
            assert_eq!(out[2..], x[2..]);
            // On the ray from `x` through `row`, at one of the ladder's factors.
            let f = (out[0] - x[0]) / (row[0] - x[0]);
            assert!((out[1] - x[1] - f * (row[1] - x[1])).abs() < 1e-3, "{out:?}");
            assert!(!deeper || PUSH_LADDER.iter().any(|&l| (l - f).abs() < 1e-3), "factor {f}");
        }
        // Without plausibility the point is left as it is.
        let plain =
            Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config { plausibility: 0.0, ..Config::default() })
                .unwrap();
        let row = [0.45, 0.65, 1.0, 0.0];
        let p = Sum.probabilities(&row).unwrap()[1];
        assert_eq!(plain.deepen(&ask(&x, &query, Some(&around)), row.to_vec(), 1, p).unwrap().0, row);
    }

    /// An answer on `row` with the given agreement, as [`Explainer::first_place`] sees it.
    fn answer_at(explainer: &Explainer<'_>, x: &[f32], row: &[f32], agreement: f32) -> Counterfactual {
        let p = Sum.probabilities(row).unwrap();
        Counterfactual {
            rank: 0,
            class: ClassOut { index: 1, name: "yes".into(), probability: p[1] },
            cost: 0.0,
            l0: counterfactual::changed_features(explainer.schema(), x, row).count(),
            realization: Realization::Boundary,
            agreement: Some(agreement),
            rules: Vec::new(),
            changes: explainer.changes(x, row),
            encoded: row.to_vec(),
            leaf: 0,
        }
    }

    #[test]
    fn test_a_rival_takes_first_place_only_with_a_better_score_and_no_more_changes_or_needless_ones() {
        let t = toy();
        let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config::default()).unwrap();
        let query = explainer.schema().default_query();
        let target = Target::Not(0);
        let x = [0.1, 0.2, 1.0, 0.0];
        // Two changes, `b`'s not needed ("yes" with `a` alone).
        let first = |g: f32| answer_at(&explainer, &x, &[0.95, 0.45, 1.0, 0.0], g);
        assert_eq!(needless(&Sum, &x, &first(1.0).encoded), [1]);
        let rivals = |agreements: [f32; 4]| {
            [
                // Three changes, only the category's not needed.
                [0.6, 0.65, 0.0, 1.0],
                // Two changes, both needless.
                [1.0, 1.0, 1.0, 0.0],
                // One change.
                [0.95, 0.2, 1.0, 0.0],
                // Two changes, each needed.
                [0.6, 0.65, 1.0, 0.0],
            ]
            .iter()
            .zip(agreements)
            .map(|(row, g)| answer_at(&explainer, &x, row, g))
            .collect::<Vec<_>>()
        };
        let pick = |g: f32, r: &[Counterfactual]| {
            let first = first(g);
            let needless = needless(&Sum, &x, &first.encoded).len();
            explainer.first_place(&x, &query, target, (&first, g, needless), r).unwrap()
        };
        // Brute force: the best charged score among the rivals no larger, when it beats the
        // first's.
        let expected = |g: f32, r: &[Counterfactual]| {
            let score = |cf: &Counterfactual| {
                let n = needless(&Sum, &x, &cf.encoded).len() as f32;
                explainer.score(&query, &x, &cf.encoded, cf.agreement.unwrap()) + NEEDLESS_WEIGHT * n
            };
            let first = first(g);
            let mut best = (score(&first), None);
            for (k, cf) in r.iter().enumerate() {
                let small = cf.l0 <= first.l0
                    && needless(&Sum, &x, &cf.encoded).len() <= needless(&Sum, &x, &first.encoded).len();
                if small && score(cf) < best.0 {
                    best = (score(cf), Some(k));
                }
            }
            best.1
        };
        // Everyone agrees with the first and with the larger rivals, no one with the others:
        // nothing changes.
        assert_eq!(pick(1.0, &rivals([1.0, 1.0, 0.0, 0.0])), None);
        // One change everyone agrees with beats the first's two, one of them needless.
        assert_eq!(pick(1.0, &rivals([1.0, 1.0, 1.0, 0.0])), Some(2));
        // Two needed changes everyone agrees with beat one that fewer agree with.
        assert_eq!(pick(0.4, &rivals([1.0, 1.0, 0.6, 1.0])), Some(3));
        for g in [0.0, 0.4, 0.8, 1.0] {
            for a in [0.0, 0.4, 0.6, 1.0] {
                for b in [0.0, 0.4, 0.6, 1.0] {
                    let r = rivals([1.0, 1.0, a, b]);
                    assert_eq!(pick(g, &r), expected(g, &r), "agreements {g}: {a} {b}");
                }
            }
        }
    }

    #[test]
    fn test_balance_keeps_the_changes_and_makes_each_one_needed() {
        let t = toy();
        let explainer = Explainer::new(&t.encoding, &Sum, &t.encoder, &t.pool, Config::default()).unwrap();
        let query = explainer.schema().default_query();
        let target = Target::Not(0);
        let x = [0.1, 0.2, 1.0, 0.0];
        // `a` alone reaches "yes" (0.95 + 0.2): `b`'s change is not needed, though it lifts
        // the probability; nor is `c`'s, which the model ignores.
        for row in [[0.95, 0.45, 1.0, 0.0], [0.95, 0.45, 0.0, 1.0]] {
            let p = Sum.probabilities(&row).unwrap()[1];
            assert_eq!(needless(&Sum, &x, &row), [1]);
            let (back, class, q) = explainer.balance(&ask(&x, &query, None), row.to_vec(), 1, p).unwrap();
            assert_eq!(class, 1);
            assert_eq!(Sum.probabilities(&back).unwrap()[1], q);
            assert!(q >= Config::default().min_probability, "p = {q}");
            assert!(needless(&Sum, &x, &back).is_empty(), "{back:?}");
            // Both numbers still change; the category the model ignores is pruned away.
            assert!(back[0] != x[0] && back[1] != x[1], "{back:?}");
            assert_eq!(back[2..], x[2..]);
            assert!(counterfactual::check(explainer.schema(), &query, &x, &back).is_ok());
            assert_eq!(explainer.redundant(&x, target, &back).unwrap(), Vec::<usize>::new());
        }
        // A point whose changes are all needed is returned as it is.
        let row = [0.6, 0.65, 1.0, 0.0];
        assert!(needless(&Sum, &x, &row).is_empty());
        let p = Sum.probabilities(&row).unwrap()[1];
        assert_eq!(explainer.balance(&ask(&x, &query, None), row.to_vec(), 1, p).unwrap(), (row.to_vec(), 1, p));
    }

    #[test]
    fn test_projection_keeps_immutables_and_one_way_features_reachable() {
        let mut schema = Schema::new(2);
        schema.push(Feature::continuous(0, 0.0, 1.0).with_mutability(Mutability::IncreaseOnly)).unwrap();
        schema.push(Feature::categorical(1, 3).with_mutability(Mutability::Immutable)).unwrap();
        schema.push(Feature::continuous(4, 0.0, 1.0).with_mutability(Mutability::DecreaseOnly)).unwrap();
        schema.push(Feature::continuous(5, 0.0, 1.0)).unwrap();
        let query = schema.default_query();
        let x = [0.5, 0.0, 1.0, 0.0, 0.5, 0.5];
        // Younger (increase-only: lifted to x), another category (immutable: x's), larger on the
        // decrease-only feature (lowered to x), anything on the free one (kept).
        let mut row = [0.2, 1.0, 0.0, 0.0, 0.9, 0.1];
        project(&schema, &query, &x, &mut row);
        assert_eq!(row, [0.5, 0.0, 1.0, 0.0, 0.5, 0.1]);
        // Already reachable values are left alone.
        let mut row = [0.8, 0.0, 1.0, 0.0, 0.3, 0.7];
        project(&schema, &query, &x, &mut row);
        assert_eq!(row, [0.8, 0.0, 1.0, 0.0, 0.3, 0.7]);
    }

    #[test]
    fn test_projection_lifts_an_ordered_group_to_the_query_category() {
        let mut schema = Schema::new(2);
        schema.push(Feature::ordinal(0, 4).with_mutability(Mutability::IncreaseOnly)).unwrap();
        schema.push(Feature::ordinal(4, 3).with_mutability(Mutability::DecreaseOnly)).unwrap();
        let query = schema.default_query();
        let x = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0];
        // Below x on the increase-only group, above it on the decrease-only one: both take x's.
        let mut row = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        project(&schema, &query, &x, &mut row);
        assert_eq!(row, x);
        // Above on the first and below on the second are reachable and stay.
        let mut row = [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        project(&schema, &query, &x, &mut row);
        assert_eq!(row, [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    }
}
