//! Per-query CEnt on the host (design §3): latent neighbours → entropy surrogate → query graph
//! → Dijkstra → counterfactual candidates → one batched call of the black box → verified,
//! diverse results with their rules and before/after values.
//!
//! The graph, search and counterfactual steps are `cent-nostd`'s: the host and the device run
//! one implementation. Every returned counterfactual is re-verified *after* final formatting
//! (decoded, rounded to the printed precision, re-encoded): it flips the black box and breaks no
//! constraint, or it is not returned.

use crate::blackbox::{BlackBox, ModelError};
use crate::data::{Encoding, QueryError};
use crate::layers::Mlp;
use crate::nearby::{Around, Rows};
use crate::neighbors::Pool;
use crate::profile::{Bounds, Query, Schema};
use crate::ranking::Lazy;
use crate::support::Support;
use crate::surrogate::{self, Surrogate, SurrogateError, TreeParams};
use cent_nostd::atlas::{BALANCE_SHRINK, MARGIN_LADDER, PUSH_LADDER};
use cent_nostd::counterfactual;
use cent_nostd::graph::{Graph, SCALE};
use cent_nostd::schema::{Kind, Mutability};
use cent_nostd::search::{Search, Target};
use cent_nostd::tree::{NodeIdx, Tree};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use thiserror::Error;

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

/// The threads that help queries explained outside a rayon pool ([`Helper::Pool`]): one fewer
/// than the machine's cores (the calling thread is the other), started with the first such
/// query and kept, asleep between queries, so that a query does not start a thread of its own
/// (which cost it 5–6 %, measured in turn in one process). Their own pool, not rayon's global one, so that work a program
/// queues there never delays a query. Queries from more threads at once than there are
/// helpers share them: a query whose step no helper has begun runs it itself and, at its end,
/// waits until a helper has taken the step off the queue (and found it done). `None` when the threads could not be started, and in a
/// process forked from the one that started them (a Python `multiprocessing` worker), which
/// has none of their threads: its queries run on one thread.
fn helpers() -> Option<&'static rayon::ThreadPool> {
    static HELPERS: OnceLock<(u32, Option<rayon::ThreadPool>)> = OnceLock::new();
    let (started_by, pool) = HELPERS.get_or_init(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores().saturating_sub(1).max(1))
            .thread_name(|i| format!("cent-helper-{i}"))
            .build()
            .ok();
        (std::process::id(), pool)
    });
    pool.as_ref().filter(|_| *started_by == std::process::id())
}

/// The machine's cores (1 when it cannot tell).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// What a helper thread's step gave: its value, or the payload of its panic.
type Caught<V> = Result<V, Box<dyn std::any::Any + Send>>;

/// `rest(a(), b(), later)` with `a` on a thread of `helpers` while this thread runs `b`: the
/// helper sends this thread a handle on its result (`share`) and goes on with `then` on its
/// own, whose result `later` waits for (`None` when the helper did not run it). This thread
/// runs `a` itself when no helper has started it by the time `b` is done (all of them busy or
/// asleep). `later(false)` first tells `then`, through its flag, that it may stop early (as
/// `rest` returning does): what it returns then may be partial, which is for `rest` to set
/// aside. A panic on the helper is raised again here, as without the thread.
fn two_threads<A: Send, B, T: Send, R>(
    helpers: &rayon::ThreadPool,
    a: impl FnOnce() -> A + Send,
    share: impl FnOnce(&A) -> A + Send,
    then: impl FnOnce(A, &AtomicBool) -> T + Send,
    b: impl FnOnce() -> B,
    rest: impl FnOnce(A, B, &mut dyn FnMut(bool) -> Option<T>) -> R,
) -> R {
    use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
    // `a` and `share`, until the helper or this thread takes them.
    let open = std::sync::Mutex::new(Some((a, share)));
    let take = || open.lock().ok().and_then(|mut open| open.take());
    let done = AtomicBool::new(false);
    let (send_a, receive_a) = std::sync::mpsc::sync_channel::<Caught<A>>(1);
    let (send_then, receive_then) = std::sync::mpsc::sync_channel::<Caught<T>>(1);
    // The scope returns once the helper's job has run, whether or not it took `a`.
    helpers.in_place_scope(|scope| {
        let (take, done) = (&take, &done);
        scope.spawn(move |_| {
            let Some((a, share)) = take() else { return };
            match catch_unwind(AssertUnwindSafe(|| {
                let mine = a();
                let shared = share(&mine);
                (mine, shared)
            })) {
                Ok((mine, shared)) => {
                    if send_a.send(Ok(shared)).is_ok() {
                        let _ = send_then.send(catch_unwind(AssertUnwindSafe(|| then(mine, done))));
                    }
                }
                Err(panic) => {
                    let _ = send_a.send(Err(panic));
                }
            }
        });
        let out_b = b();
        let (out_a, mut waiting) = match take() {
            Some((a, _)) => (a(), false),
            None => match receive_a.recv() {
                Ok(Ok(out_a)) => (out_a, true),
                Ok(Err(panic)) => resume_unwind(panic),
                Err(_) => unreachable!("a helper that took `a` sends its result or its panic"),
            },
        };
        let mut later = |wanted: bool| {
            if !wanted {
                done.store(true, Ordering::Relaxed);
            }
            if !std::mem::take(&mut waiting) {
                return None;
            }
            match receive_then.recv() {
                Ok(Ok(then)) => Some(then),
                Ok(Err(panic)) => resume_unwind(panic),
                Err(_) => unreachable!("a helper that sent `a` sends what `then` gave or its panic"),
            }
        };
        let out = rest(out_a, out_b, &mut later);
        later(false);
        out
    })
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
    /// The other changed features the schema's links tie this one to (directly or through
    /// another changed feature): one move, listed right after the first of them.
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

/// The projected neighbours the surrogate was fitted on, with the model's labels: where a
/// contrast leaf finds its exemplars.
struct Fitted {
    rows: Vec<f32>,
    labels: Vec<usize>,
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

/// Where a query's second thread comes from ([`Config::parallel`]).
enum Helper {
    /// One thread: the setting, or a machine with one core.
    None,
    /// A rayon worker (as `cent batch` runs queries): `rayon::join` offers the people around
    /// the query to the pool, which costs nothing when every worker is busy.
    Rayon,
    /// A thread of the kept helpers ([`helpers`], [`Explainer::search_on_two_threads`]).
    Pool(&'static rayon::ThreadPool),
}

impl Helper {
    fn for_query(parallel: bool) -> Self {
        match (parallel && cores() >= 2, rayon::current_thread_index()) {
            (false, _) => Helper::None,
            (true, Some(_)) => Helper::Rayon,
            (true, None) => helpers().map_or(Helper::None, Helper::Pool),
        }
    }
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

    /// [`Explainer::explain`] with a thread of the kept helpers ([`helpers`]): it computes the people around
    /// `x` ([`Around::new`]) while this thread fits the first surrogate, hands this thread a
    /// handle on them, and goes on to judge people and single moves
    /// ([`Explainer::people_ahead`], [`Explainer::single_ahead`]), which this thread needs, if
    /// at all, only once its first answer is known, and to measure the first surrogate's
    /// fidelity, which this thread sends it once fitted. This
    /// thread computes the people itself when no helper has started by the time the
    /// surrogate is fitted (a busy machine, or the helpers busy with other queries), and the fidelity when
    /// the helper did not measure it; a panic on the helper is raised again here, as without
    /// the thread.
    fn search_on_two_threads(
        &self,
        helpers: &rayon::ThreadPool,
        start: &Start<'_>,
    ) -> Result<Explanation, ExplainError> {
        let Start { x, query, targets, fact, .. } = *start;
        // The first surrogate and its held-out neighbours, from this thread to the helper.
        let (send, receive) = std::sync::mpsc::sync_channel::<(Surrogate, Vec<u32>)>(1);
        // The single moves go to whichever thread comes to them first: the helper after the
        // people, or this thread when it needs them before the helper has begun them.
        let single_taken = &AtomicBool::new(false);
        let take = |taken: &AtomicBool| !taken.swap(true, Ordering::AcqRel);
        two_threads(
            helpers,
            || Around::new(&self.nearby, x),
            Around::share,
            move |around, done| {
                let people = self.people_ahead(start, &around, done);
                // Nothing comes when the fit failed or held nothing out (the sender is gone).
                let measure = |(surrogate, held_out): (Surrogate, Vec<u32>)| {
                    self.held_out_fidelity(x, query, &surrogate, &held_out).ok()
                };
                // The fidelity now when the surrogate is fitted, else after the single moves.
                let mut fidelity = receive.try_recv().ok().and_then(measure);
                let single = (self.config.single_moves && !done.load(Ordering::Relaxed) && take(single_taken))
                    .then(|| self.single_ahead(start, &around, done))
                    .flatten();
                if fidelity.is_none() {
                    fidelity = receive.recv().ok().and_then(measure);
                }
                Ahead { people, single, fidelity }
            },
            move || {
                let first = self.fit_surrogate(x, query, fact, targets, self.config.k);
                if let Ok(fit) = &first
                    && !fit.held_out.is_empty()
                {
                    // Refused only when no helper is left to measure it: this thread will.
                    let _ = send.try_send((fit.surrogate.clone(), fit.held_out.clone()));
                }
                first
            },
            |around, first, later| {
                let never = AtomicBool::new(false);
                self.search(start, Some(&around), first, &mut |need| {
                    // Judged here, while the helper finishes the people.
                    let mine = (need == Need::Both && self.config.single_moves && take(single_taken))
                        .then(|| self.single_ahead(start, &around, &never));
                    // For the people alone, the helper is kept from the single moves when it has
                    // not begun them, and stopped in them when it has (its people are complete).
                    let in_single_moves = need == Need::People && !take(single_taken);
                    let wanted = need == Need::Both || (need == Need::People && !in_single_moves);
                    match (later(wanted), need) {
                        (Some(ahead), Need::Both) => Ahead { single: mine.unwrap_or(ahead.single), ..ahead },
                        (Some(ahead), Need::People) => Ahead { single: None, ..ahead },
                        // Told to stop early, the helper's people and single moves may be partial.
                        (Some(ahead), Need::Nothing) => Ahead { fidelity: ahead.fidelity, ..Ahead::default() },
                        (None, _) => Ahead { single: mine.flatten(), ..Ahead::default() },
                    }
                })
            },
        )
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

    /// What [`Explainer::weigh_people`] computes before it compares with the first answer,
    /// judged without it (on a query's helper thread, [`Explainer::search_on_two_threads`]):
    /// the people refined with their needless changes counted; `None` after a model error (the
    /// calling thread then computes them where it would have). Once `done` is set (the calling
    /// thread does not need them) it stops between people and between the steps of refining
    /// one, and what it returns is not used.
    fn people_ahead(&self, start: &Start<'_>, around: &Around<'_>, done: &AtomicBool) -> Option<Vec<Person>> {
        let Start { x, query, target, targets, .. } = *start;
        if done.load(Ordering::Relaxed) {
            return None;
        }
        let ids = self.people_ids(x, targets);
        self.people(x, query, target, targets, &ids, Some(around), Needless::Count(done)).ok()
    }

    /// What [`Explainer::weigh_single_moves`] computes before it compares with the first
    /// answer, judged without it: the best single move by the ranking's objective with no
    /// score to beat, its needless changes counted; `None` after a model error. Once `stop` is
    /// set it gives up between its steps, and what it returns is not used.
    fn single_ahead(&self, start: &Start<'_>, around: &Around<'_>, stop: &AtomicBool) -> Option<Option<Single>> {
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

    /// The last resort when no contrast leaf gives a confirmed point: pool points of a target
    /// class nearest to `x` in the latent space ([`FALLBACK_FIRST`], then [`FALLBACK_WIDER`]
    /// times as many, then all of them, while none of those is confirmed), projected onto what
    /// the query can reach and confirmed by the model; the [`FALLBACK_TRIED`] cheapest are
    /// refined ([`Explainer::refine`]) and the best result by the ranking's objective
    /// ([`Explainer::score`]; the move cost without plausibility) is returned. `None` means no
    /// point of the pool can be reached.
    ///
    /// `first_look` holds the people of the first look refined ahead ([`Explainer::people_ahead`],
    /// their needless changes counted and not used here), when they were.
    fn nearest_feasible(
        &self,
        x: &[f32],
        query: &Query,
        target: Target,
        target_classes: &[usize],
        around: Option<&Around<'_>>,
        mut first_look: Option<Vec<Person>>,
    ) -> Result<Option<Counterfactual>, ExplainError> {
        let z = self.encoder.forward(x);
        let available = target_classes.iter().map(|&c| self.pool.class_size(c)).sum::<usize>();
        let mut tried = 0;
        for count in [FALLBACK_FIRST, FALLBACK_FIRST * FALLBACK_WIDER, available] {
            if count <= tried {
                continue;
            }
            tried = count;
            let people = match first_look.take().filter(|_| count == FALLBACK_FIRST) {
                Some(people) => people,
                None => {
                    let ids = self.pool.nearest_in(&z, target_classes, count);
                    self.people(x, query, target, target_classes, &ids, around, Needless::Ignore)?
                }
            };
            if let Some(cf) = self.closest(query, x, people, usize::MAX) {
                return Ok(Some(cf));
            }
        }
        Ok(None)
    }

    /// People against regions: when the neighbours of the best region's answer do not all
    /// agree with its class, the nearest reachable people of a target class (the last resort's
    /// first look, [`FALLBACK_FIRST`], refined as there) compete with it. Only people's answers
    /// with no more changes the decision does not need than the region's answer
    /// ([`Explainer::redundant`]) are considered, so plausibility is not bought with needless
    /// changes; the best of them by the ranking's objective ([`Explainer::score`]) takes first
    /// place (the last of `out`'s answers making room) when it scores better. A region's answer
    /// comes from the neighbours the surrogate learned from; a person's, from someone the model
    /// already places in the target class. Measured on three seeds, this lifted yNN on every
    /// pair (HELOC × MLP 0.73 → 0.796 on seed 2) at about 0.07 ms a query on Adult; with no
    /// redundancy guard, redundancy rose to 0.3–0.6 on Credit and HELOC.
    ///
    /// `ahead` holds the people refined ahead ([`Explainer::people_ahead`]), when they were.
    fn weigh_people(
        &self,
        start: &Start<'_>,
        around: Option<&Around<'_>>,
        out: &mut Explanation,
        ahead: Option<Vec<Person>>,
    ) -> Result<(), ExplainError> {
        let Start { x, query, target, targets: target_classes, .. } = *start;
        let (Some(_), Some(first)) = (around, out.counterfactuals.first()) else { return Ok(()) };
        // All five nearest people agree: no person of the pool is more plausible.
        let Some(agreement) = first.agreement.filter(|&g| g < 1.0) else { return Ok(()) };
        let cap = self.redundant(x, target, &first.encoded)?.len();
        let people = match ahead {
            Some(people) => people,
            None => {
                let ids = self.people_ids(x, target_classes);
                self.people(x, query, target, target_classes, &ids, around, Needless::AtMost(cap))?
            }
        };
        let Some(person) = self.closest(query, x, people, cap) else {
            return Ok(());
        };
        let person_score = self.score(query, x, &person.encoded, person.agreement.unwrap_or(0.0));
        if person_score >= self.score(query, x, &first.encoded, agreement)
            || out.counterfactuals.iter().any(|cf| cf.encoded == person.encoded)
        {
            return Ok(());
        }
        self.take_first_place(x, out, person);
        Ok(())
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
    fn weigh_single_moves(
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
    fn best_single_move(
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
    fn single_moves(&self, x: &[f32], query: &Query, stop: &AtomicBool) -> Vec<f32> {
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

    /// The pool points `ids` of a target class nearest to `x` in the latent space, as many as
    /// the people path looks at ([`FALLBACK_FIRST`]).
    fn people_ids(&self, x: &[f32], target_classes: &[usize]) -> Vec<u32> {
        let z = self.encoder.forward(x);
        self.pool.nearest_in(&z, target_classes, FALLBACK_FIRST)
    }

    /// The pool points `ids` projected onto what the query can reach and confirmed by the
    /// model, the [`FALLBACK_TRIED`] cheapest (of at most [`FALLBACK_ATTEMPTS`]) repaired,
    /// confirmed again and refined ([`Explainer::refine`]), in that order, each with the
    /// ranking's objective ([`Explainer::score`] when plausibility is judged, the move cost
    /// otherwise) and its changes the decision does not need as `needless` says.
    #[allow(clippy::too_many_arguments)] // The query's resolved setting and the points to try.
    fn people(
        &self,
        x: &[f32],
        query: &Query,
        target: Target,
        target_classes: &[usize],
        ids: &[u32],
        around: Option<&Around<'_>>,
        needless: Needless<'_>,
    ) -> Result<Vec<Person>, ModelError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let cols = x.len();
        let rows = self.gathered(&projection(&self.schema, query, x, cols), ids);
        let proba = self.model.probabilities(&rows)?;
        let classes = self.model.classes();
        let mut found: Vec<(f32, usize)> = Vec::new();
        for (i, (row, p)) in rows.chunks_exact(cols).zip(proba.chunks_exact(classes)).enumerate() {
            if self.accepts(x, query, target, row, p).is_some() {
                found.push((self.move_cost(query, x, row), i));
            }
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut people = Vec::new();
        let mut tried = 0;
        for &(_, i) in found.iter().take(FALLBACK_ATTEMPTS) {
            if tried == FALLBACK_TRIED || matches!(needless, Needless::Count(stop) if stop.load(Ordering::Relaxed)) {
                break;
            }
            // A projected row may pair the query's fixed values with others no person has (sex
            // kept, relationship taken from the pool): repaired and confirmed again, or skipped.
            let mut row = self.formatted(x, &rows[i * cols..(i + 1) * cols]);
            if !self.support.repair(x, &mut row) {
                continue;
            }
            let Some((row, class, p)) = self.confirm(x, query, target, row)? else { continue };
            tried += 1;
            let ask = Ask { x, query, target, targets: target_classes, around };
            let (row, class, p) = match needless {
                // Told to stop, the helper's people are not used.
                Needless::Count(stop) => match self.refine_unless(&ask, row, class, p, stop)? {
                    _ if stop.load(Ordering::Relaxed) => break,
                    point => point,
                },
                Needless::Ignore | Needless::AtMost(_) => self.refine(&ask, row, class, p)?,
            };
            let needless = match needless {
                Needless::Ignore => 0,
                Needless::AtMost(most) => match self.redundant(x, target, &row)?.len() {
                    count if count > most => continue,
                    count => count,
                },
                Needless::Count(_) => self.redundant(x, target, &row)?.len(),
            };
            // The ranking's objective when plausibility is judged, as for a contrast leaf's
            // answers; the move cost otherwise.
            let agreement = around
                .filter(|_| self.config.plausibility > 0.0)
                .map(|around| self.agreement(around, &row, target_classes)[0]);
            let rank = match agreement {
                Some(g) => self.score(query, x, &row, g),
                None => self.move_cost(query, x, &row),
            };
            people.push(Person { rank, point: (row, class, p), agreement, needless });
        }
        Ok(people)
    }

    /// The first of `people` with the lowest objective among those with at most `cap` changes
    /// the decision does not need, as an answer.
    fn closest(&self, query: &Query, x: &[f32], people: Vec<Person>, cap: usize) -> Option<Counterfactual> {
        let mut best: Option<Person> = None;
        for person in people.into_iter().filter(|p| p.needless <= cap) {
            if best.as_ref().is_none_or(|b| person.rank < b.rank) {
                best = Some(person);
            }
        }
        best.map(|p| self.regionless(query, x, p.point, Realization::Nearest, p.agreement))
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

    /// A confirmed candidate made into an answer: pruned ([`Explainer::prune`]), made sparser
    /// ([`Explainer::sparsify`]), carried further ([`Explainer::deepen`]) and balanced
    /// ([`Explainer::balance`]), each step keeping the point confirmed.
    fn refine(&self, ask: &Ask<'_>, row: Vec<f32>, class: usize, p: f32) -> Result<Point, ModelError> {
        self.refine_unless(ask, row, class, p, &AtomicBool::new(false))
    }

    /// [`Explainer::refine`], stopped between its steps once `stop` is set: the point it gives
    /// then is confirmed but not refined, for a caller that no longer needs it.
    fn refine_unless(
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
    fn prune(&self, ask: &Ask<'_>, mut row: Vec<f32>, mut class: usize, mut p: f32) -> Result<Point, ModelError> {
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
    fn redundant(&self, x: &[f32], target: Target, row: &[f32]) -> Result<Vec<usize>, ModelError> {
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
    fn balance(&self, ask: &Ask<'_>, row: Vec<f32>, class: usize, p: f32) -> Result<Point, ModelError> {
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
    fn deepen(&self, ask: &Ask<'_>, row: Vec<f32>, class: usize, p: f32) -> Result<Point, ModelError> {
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

    /// One attempt of [`Explainer::explain`], on the surrogate `fit` of one neighbourhood
    /// ([`Explainer::fit_surrogate`]). The explanation's `fidelity` is left NaN: it is measured
    /// for the attempt that gives the answer ([`Explainer::search`]).
    #[allow(clippy::too_many_arguments)] // The query's resolved setting, passed once per attempt.
    fn explain_with(
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

    /// Gathers `k/2` neighbours per side and fits the surrogate on the mutable columns, a share
    /// of them held out ([`Explainer::fidelity`]).
    fn fit_surrogate(
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
        let (train, train_y) = self.projected(x, query, &pick(fitted))?;
        let allowed = self.mutable_columns(query);
        let surrogate = surrogate::fit(&train, cols, &train_y, self.model.classes(), &allowed, self.config.tree)?;
        Ok(Fit {
            surrogate,
            held_out: pick(held_out),
            neighbours: ids.len(),
            fitted: Fitted { rows: train, labels: train_y },
        })
    }

    /// How often `fit`'s surrogate agrees with the model on the neighbours held out, projected
    /// as those it was fitted on; on those it was fitted on when none are held out.
    fn fidelity(&self, x: &[f32], query: &Query, fit: &Fit) -> Result<f64, ModelError> {
        if fit.held_out.is_empty() {
            return Ok(fit.surrogate.fidelity(&fit.fitted.rows, &fit.fitted.labels));
        }
        self.held_out_fidelity(x, query, &fit.surrogate, &fit.held_out)
    }

    /// [`Explainer::fidelity`] on the neighbours `held_out` (not empty).
    fn held_out_fidelity(
        &self,
        x: &[f32],
        query: &Query,
        surrogate: &Surrogate,
        held_out: &[u32],
    ) -> Result<f64, ModelError> {
        let (rows, labels) = self.projected(x, query, held_out)?;
        Ok(surrogate.fidelity(&rows, &labels))
    }

    /// The neighbours `ids` projected onto what the query can reach, and their labels by the
    /// model: immutable features take `x`'s values, one-direction features are clamped to `x`'s
    /// value from the forbidden side. A neighbour that differs from `x` in race or in a younger
    /// age teaches the surrogate nothing the query can use, and its label may hinge on exactly
    /// that difference; projected, the tree learns the model on the query's own feasible slice.
    /// With no such constraint the rows are the pool's and keep the pool's labels (no model
    /// call).
    fn projected(&self, x: &[f32], query: &Query, ids: &[u32]) -> Result<(Vec<f32>, Vec<usize>), ModelError> {
        let steps = projection(&self.schema, query, x, self.schema.columns());
        let rows = self.gathered(&steps, ids);
        // Only features the query constrains change a row; with none, the rows are the pool's.
        if steps.is_empty() {
            return Ok((rows, ids.iter().map(|&id| self.pool_labels[id as usize]).collect()));
        }
        let labels = self.model.predict(&rows)?;
        Ok((rows, labels))
    }

    /// The pool rows `ids`, row-major, with the projection `steps` applied (see
    /// [`Explainer::projected`]).
    fn gathered(&self, steps: &[Step], ids: &[u32]) -> Vec<f32> {
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
    fn candidates<const N: usize>(
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

    /// One batched call of the model over every candidate. A candidate is confirmed when the
    /// model puts it in a target class with at least [`Config::min_probability`] and it passes
    /// the constraint re-check. At plausibility 0, each leaf (in path-cost order) gives its first
    /// confirmed candidate, up to `n` leaves. Above 0, every leaf with a confirmed candidate is
    /// ranked by `(1 - w) * move cost + w * PLAUSIBILITY_WEIGHT * (1 - agreement)` (`w` =
    /// [`Config::plausibility`], [`Explainer::score`]), each by its best candidate; equal
    /// scores keep path-cost order.
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
    fn first_place(
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
    fn levers_first(&self, x: &[f32], answers: Vec<Counterfactual>, n: usize) -> Vec<Counterfactual> {
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
    fn answer(
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

    /// Before/after of each changed feature, in decoded units, in schema order but for linked
    /// features, which follow the first of them ([`Link::together`](crate::data::Link::together)).
    pub fn changes(&self, x: &[f32], cand: &[f32]) -> Vec<Change> {
        let (Ok(before), Ok(after)) = (self.encoding.decode(x), self.encoding.decode(cand)) else { return Vec::new() };
        let names = self.encoding.attributes();
        let changed: Vec<usize> = counterfactual::changed_features(&self.schema, x, cand).collect();
        let mut out = Vec::with_capacity(changed.len());
        for group in crate::data::Link::together(self.encoding.links(), &changed) {
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

/// Moves one encoded row onto what the query `x` can reach under `query`: immutable features
/// take `x`'s values; one-direction single-column features are clamped at `x`'s value, and an
/// ordered one-hot group whose category lies on the forbidden side of `x`'s takes `x`'s. Per
/// query, [`projection`] computes the steps once and [`apply_projection`] applies them to each
/// row.
#[cfg(test)]
fn project(schema: &Schema, query: &Query, x: &[f32], row: &mut [f32]) {
    apply_projection(&projection(schema, query, x, row.len()), row);
}

/// One step of a query's projection ([`projection`]): set a column to a value, raise or lower it to one, or put an
/// ordered group (first column, width) back on `x`'s category when it holds a lower (`up`) or
/// higher one.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Set(usize, f32),
    AtLeast(usize, f32),
    AtMost(usize, f32),
    Rank { col: usize, width: usize, category: usize, up: bool },
}

/// The steps that move a row onto what a query can reach ([`apply_projection`]), column by
/// column (within `width` columns), with `x`'s values in them: per row, a few scalar writes.
fn projection(schema: &Schema, query: &Query, x: &[f32], width: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for (j, f) in schema.features().iter().enumerate() {
        let span = f.columns();
        if span.end > width.min(x.len()) {
            continue;
        }
        match query.mutability[j] {
            Mutability::Free => {}
            Mutability::Immutable => steps.extend(span.map(|c| Step::Set(c, x[c]))),
            Mutability::IncreaseOnly if f.kind != Kind::Categorical => {
                steps.push(Step::AtLeast(span.start, x[span.start]));
            }
            Mutability::DecreaseOnly if f.kind != Kind::Categorical => {
                steps.push(Step::AtMost(span.start, x[span.start]));
            }
            m @ (Mutability::IncreaseOnly | Mutability::DecreaseOnly) => {
                if let (true, Some(category)) = (f.ordered, cent_nostd::schema::category(f, x)) {
                    let up = m == Mutability::IncreaseOnly;
                    steps.push(Step::Rank { col: span.start, width: span.len(), category: category.into(), up });
                }
            }
        }
    }
    steps
}

fn apply_projection(steps: &[Step], row: &mut [f32]) {
    for &step in steps {
        match step {
            Step::Set(c, v) => {
                if let Some(to) = row.get_mut(c) {
                    *to = v;
                }
            }
            Step::AtLeast(c, v) => {
                if let Some(to) = row.get_mut(c) {
                    *to = to.max(v);
                }
            }
            Step::AtMost(c, v) => {
                if let Some(to) = row.get_mut(c) {
                    *to = to.min(v);
                }
            }
            Step::Rank { col, width, category, up } => {
                let Some(group) = row.get_mut(col..col + width) else { continue };
                let Some(hot) = group.iter().position(|v| *v > 0.5) else { continue };
                if (up && hot < category) || (!up && hot > category) {
                    group.fill(0.0);
                    group[category] = 1.0;
                }
            }
        }
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

/// Squared Euclidean distance of two encoded rows.
fn squared(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum()
}

fn format_threshold(v: f32) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
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
    use super::*;
    use crate::blackbox::ModelError;
    use crate::data::{Input, Schema as DataSchema, Table};
    use crate::layers::{Activation, Dense};
    use cent_nostd::schema::Feature;

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
