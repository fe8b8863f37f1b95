//! How far any method could go: an upper bound on the mean yNN of counterfactuals for given
//! factuals when they also meet the goals on mean `l0` and mean redundancy, found by
//! exhaustive search rather than by any method's search.
//!
//! A candidate is the factual with one or two mutable features set to values of a grid: every
//! category a binary or one-hot feature has, and every value the training rows hold of a
//! numeric feature (with observed support: every value an answer may take, the schema's codes
//! left out), or the [`GRID`] quantiles of them when there are more. It counts when it
//! passes the core's constraint check, breaks no schema link and the model gives it the target
//! class with at least the required probability: what CEnt's answers must meet too. Each
//! counting candidate is measured as [`crate::metrics`] measures an answer: its yNN over the
//! same reference rows, and its redundancy (changes that, set back alone, leave the model at
//! the target class without breaking a link; or, read by a scorer that knows no links
//! ([`SetBack::Plain`]), whatever combination the set-back leaves).
//!
//! Per factual it keeps the best yNN for each (changes, redundancy), and the best yNN among
//! the answers no larger than a given one (at most its changes and its `l1`): a method's answer
//! whose yNN is below that one is not the best its own size allows. Answers of three or more
//! changes are not enumerated. Numeric features with more than [`GRID`] values are searched on
//! a grid, and distances may round differently from [`crate::metrics`] in the last bits: the
//! figures are what this search finds, not a proof beyond it.

use crate::metrics::{self, YNN_K};
use cent_host::blackbox::{BlackBox, ModelError};
use cent_host::profile::{Query, Schema};
use cent_host::support::Support;
use cent_nostd::counterfactual;
use cent_nostd::schema::{Kind, Mutability};
use serde::Serialize;

/// Values of a numeric feature a candidate may take, at most: its observed values, or that
/// many quantiles of them.
pub const GRID: usize = 128;

/// Candidates measured in one model call.
const CHUNK: usize = 4096;

/// One answer's measures: changed features, redundancy, `l1` (encoded) and yNN.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Choice {
    pub l0: usize,
    pub redundancy: usize,
    pub l1: f64,
    pub ynn: f64,
}

impl Choice {
    /// Better: a higher yNN, or the same with a smaller `l1`.
    fn beats(&self, other: &Choice) -> bool {
        self.ynn > other.ynn || (self.ynn == other.ynn && self.l1 < other.l1)
    }
}

/// The size of an answer: the answers [`Factual::within`] looks at have at most its changes
/// and its `l1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Size {
    pub l0: usize,
    pub l1: f64,
}

/// Which set-backs make a change redundant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SetBack {
    /// Only a set-back that breaks no schema link ([`crate::metrics::redundancy`]): one that
    /// leaves a combination nobody has is no alternative.
    Linked,
    /// Every set-back, whatever combination it leaves: how a scorer that does not know the
    /// schema's links counts (a marital status set back alone, its household role kept).
    Plain,
}

/// What the search needs of one dataset × model pair.
#[derive(Clone, Copy)]
pub struct Setting<'a> {
    pub schema: &'a Schema,
    pub query: &'a Query,
    pub model: &'a dyn BlackBox,
    pub support: &'a Support,
    /// Training rows (encoded, row-major): where the grids of range-support numbers come from.
    pub pool: &'a [f32],
    /// yNN's reference rows and the model's labels for them ([`crate::metrics::Reference`]).
    pub reference: &'a [f32],
    pub labels: &'a [usize],
    /// The probability of the target class a candidate needs to count.
    pub min_probability: f32,
    /// Values of a numeric feature a candidate may take at most ([`GRID`] by default).
    pub grid: usize,
    /// Which set-backs count towards an answer's redundancy.
    pub set_back: SetBack,
}

impl std::fmt::Debug for Setting<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setting").field("min_probability", &self.min_probability).finish()
    }
}

/// The best answers of one factual with one or two changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factual {
    /// Per (changes, redundancy) the best answer found (`Choice::beats`), by changes, then
    /// redundancy.
    pub choices: Vec<Choice>,
    /// The answer (encoded) of each choice.
    pub answers: Vec<Vec<f32>>,
    /// The best answer no larger than the given [`Size`] (`None`: none is, or no size given).
    pub within: Option<Choice>,
    /// The answer (encoded) of [`Factual::within`].
    pub within_answer: Option<Vec<f32>>,
    /// Candidates that passed the constraint and link checks, and those the model confirmed.
    pub feasible: usize,
    pub confirmed: usize,
}

/// A candidate: one or two (feature, grid index) moves.
type Moves = [(usize, usize); 2];
const NONE: (usize, usize) = (usize::MAX, 0);

impl<'a> Setting<'a> {
    fn cols(&self) -> usize {
        self.schema.columns()
    }

    /// Per feature, the encoded column values it may take (an empty list for an immutable
    /// feature), `x`'s own value left out.
    fn grids(&self, x: &[f32]) -> Vec<Vec<Vec<f32>>> {
        let cols = self.cols().max(1);
        self.schema
            .features()
            .iter()
            .enumerate()
            .map(|(j, f)| {
                if self.query.mutability[j] == Mutability::Immutable {
                    return Vec::new();
                }
                let own = &x[f.columns()];
                let values: Vec<Vec<f32>> = match f.kind {
                    Kind::Binary => vec![vec![0.0], vec![1.0]],
                    Kind::Categorical => (0..f.columns().len())
                        .map(|k| (0..f.columns().len()).map(|i| if i == k { 1.0 } else { 0.0 }).collect())
                        .collect(),
                    Kind::Continuous | Kind::Integer => {
                        let c = f.col as usize;
                        // Observed support: the values an answer may take (a code is none);
                        // range support: the pool's values.
                        let mut v: Vec<f32> = match self.support.observed(j) {
                            Some(observed) => observed.to_vec(),
                            None => self.pool.chunks_exact(cols).map(|r| r[c]).collect(),
                        };
                        v.sort_by(f32::total_cmp);
                        v.dedup();
                        let grid = self.grid.max(2);
                        if v.len() > grid {
                            let n = v.len() - 1;
                            v = (0..grid).map(|i| v[i * n / (grid - 1)]).collect();
                            v.dedup();
                        }
                        v.into_iter().map(|a| vec![a]).collect()
                    }
                };
                values.into_iter().filter(|v| v.as_slice() != own).collect()
            })
            .collect()
    }

    /// Every answer of `x` towards `target` with one or two changes from the grids, measured;
    /// `size` bounds [`Factual::within`].
    ///
    /// # Errors
    /// [`ModelError`] when the model fails.
    pub fn factual(&self, x: &[f32], target: usize, size: Option<Size>) -> Result<Factual, ModelError> {
        let cols = self.cols();
        let features = self.schema.features();
        let grids = self.grids(x);
        let write = |row: &mut [f32], (j, g): (usize, usize)| {
            if j != usize::MAX {
                row[features[j].columns()].copy_from_slice(&grids[j][g]);
            }
        };
        let mut all: Vec<Moves> = Vec::new();
        for (j, grid) in grids.iter().enumerate() {
            all.extend((0..grid.len()).map(|g| [(j, g), NONE]));
        }
        for j in 0..grids.len() {
            for k in j + 1..grids.len() {
                for g in 0..grids[j].len() {
                    for h in 0..grids[k].len() {
                        all.push([(j, g), (k, h)]);
                    }
                }
            }
        }
        let singles = all.iter().take_while(|m| m[1] == NONE).count();
        // Per single move: feasible (and unbroken, unless set-backs are read without links),
        // and the model's class is the target (for the redundancy of the pairs that contain it).
        let mut single_flips = vec![false; singles];
        let mut best: Vec<(Choice, Vec<f32>)> = Vec::new();
        let mut within: Option<Choice> = None;
        let mut within_answer: Option<Vec<f32>> = None;
        let near = Nearest::new(x, self.reference, cols);
        let (mut feasible, mut confirmed) = (0, 0);
        let mut row = x.to_vec();
        for (chunk_no, chunk) in all.chunks(CHUNK).enumerate() {
            let mut batch: Vec<f32> = Vec::with_capacity(chunk.len() * cols);
            let mut kept: Vec<usize> = Vec::new();
            // Per kept candidate, whether it breaks a link: then it is no answer, and it is
            // only asked for as a set-back a scorer without links would count.
            let mut broken: Vec<bool> = Vec::new();
            for (i, m) in chunk.iter().enumerate() {
                row.copy_from_slice(x);
                write(&mut row, m[0]);
                write(&mut row, m[1]);
                if counterfactual::check(self.schema, self.query, x, &row).is_err() {
                    continue;
                }
                let breaks = self.support.broken(x, &row) > 0;
                if !breaks || (m[1] == NONE && self.set_back == SetBack::Plain) {
                    batch.extend_from_slice(&row);
                    kept.push(i);
                    broken.push(breaks);
                }
            }
            feasible += broken.iter().filter(|&&b| !b).count();
            if kept.is_empty() {
                continue;
            }
            let classes = self.model.classes();
            let proba = self.model.probabilities(&batch)?;
            for (((&i, &breaks), p), cand) in
                kept.iter().zip(&broken).zip(proba.chunks_exact(classes)).zip(batch.chunks_exact(cols))
            {
                let index = chunk_no * CHUNK + i;
                let m = &all[index];
                let class = argmax(p);
                if m[1] == NONE {
                    single_flips[index] = class == target;
                }
                if breaks || class != target || p[target] < self.min_probability {
                    continue;
                }
                confirmed += 1;
                let (l0, redundancy) = match m[1] {
                    NONE => (1, 0),
                    _ => {
                        // Setting one move back leaves the other alone: a single of the list.
                        let alone = |(j, g): (usize, usize)| {
                            let at = all[..singles].partition_point(|s| s[0] < (j, g));
                            single_flips.get(at).copied().unwrap_or(false)
                        };
                        (2, usize::from(alone(m[0])) + usize::from(alone(m[1])))
                    }
                };
                let l1 = metrics::l1(x, cand);
                let fits = size.is_some_and(|z| l0 <= z.l0 && l1 <= z.l1 + 1e-9);
                let slot = best.iter().position(|(c, _)| c.l0 == l0 && c.redundancy == redundancy);
                // yNN is only measured when it could make this candidate the better one.
                let perfect = Choice { l0, redundancy, l1, ynn: 1.0 };
                let for_slot = slot.is_none_or(|s| perfect.beats(&best[s].0));
                let for_within = fits && within.is_none_or(|w| perfect.beats(&w));
                if !for_slot && !for_within {
                    continue;
                }
                let ynn = near.ynn(cand, &m.map(|(j, _)| j), features, self.labels, target);
                let choice = Choice { l0, redundancy, l1, ynn };
                match slot {
                    Some(s) if !choice.beats(&best[s].0) => {}
                    Some(s) => best[s] = (choice, cand.to_vec()),
                    None => best.push((choice, cand.to_vec())),
                }
                if fits && within.is_none_or(|w| choice.beats(&w)) {
                    within = Some(choice);
                    within_answer = Some(cand.to_vec());
                }
            }
        }
        best.sort_by_key(|(c, _)| (c.l0, c.redundancy));
        let (choices, answers) = best.into_iter().unzip();
        Ok(Factual { choices, answers, within, within_answer, feasible, confirmed })
    }
}

/// yNN of candidates that differ from one factual `x` in at most two features: the squared
/// distance of each reference row to `x` is computed once, and a candidate's distances are it
/// corrected on the changed features' columns.
struct Nearest<'r> {
    x: Vec<f32>,
    rows: &'r [f32],
    cols: usize,
    base: Vec<f64>,
}

impl<'r> Nearest<'r> {
    fn new(x: &[f32], rows: &'r [f32], cols: usize) -> Self {
        let base = rows.chunks_exact(cols.max(1)).map(|r| squared(r, x)).collect();
        Nearest { x: x.to_vec(), rows, cols, base }
    }

    /// The share of the [`YNN_K`] rows nearest to `cand` (ties by row order) labelled `target`;
    /// `changed` names the features where `cand` may differ from `x` (`usize::MAX`: none).
    fn ynn(
        &self,
        cand: &[f32],
        changed: &[usize],
        features: &[cent_nostd::schema::Feature],
        labels: &[usize],
        target: usize,
    ) -> f64 {
        let mut changed: Vec<usize> = changed.iter().copied().filter(|&j| j != usize::MAX).collect();
        changed.sort_unstable();
        changed.dedup();
        let ranges: Vec<std::ops::Range<usize>> = changed.iter().map(|&j| features[j].columns()).collect();
        let mut top: Vec<(f64, usize)> = Vec::with_capacity(YNN_K + 1);
        for (i, (r, &d)) in self.rows.chunks_exact(self.cols.max(1)).zip(&self.base).enumerate() {
            let mut d = d;
            for range in &ranges {
                d += squared(&r[range.clone()], &cand[range.clone()])
                    - squared(&r[range.clone()], &self.x[range.clone()]);
            }
            if top.len() < YNN_K || d < top[top.len() - 1].0 {
                let at = top.partition_point(|&(e, _)| e <= d);
                top.insert(at, (d, i));
                top.truncate(YNN_K);
            }
        }
        if top.is_empty() {
            return 0.0;
        }
        top.iter().filter(|&&(_, i)| labels[i] == target).count() as f64 / top.len() as f64
    }
}

fn squared(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(p, q)| f64::from(p - q) * f64::from(p - q)).sum()
}

fn argmax(p: &[f32]) -> usize {
    p.iter().enumerate().fold(0, |best, (i, v)| if *v > p[best] { i } else { best })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Reference;
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro128PlusPlus;

    fn uniform(rng: &mut Xoshiro128PlusPlus) -> f64 {
        f64::from(rng.next_u32()) / f64::from(u32::MAX)
    }

    /// A model of five columns that gives class 1 (at probability 0.9) where its rule holds.
    struct Rule(fn(&[f32]) -> bool);

    impl BlackBox for Rule {
        fn classes(&self) -> usize {
            2
        }
        fn inputs(&self) -> usize {
            5
        }
        fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
            Ok(rows.chunks_exact(5).flat_map(|r| if (self.0)(r) { [0.1, 0.9] } else { [0.9, 0.1] }).collect())
        }
    }

    /// Class 1 iff the two numbers sum past 1.
    const SUM: Rule = Rule(|r| r[0] + r[4] > 1.0);

    #[test]
    fn test_nearest_gives_the_reference_ynn() {
        use cent_nostd::schema::Feature;
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(9);
        // Columns: [0] a number, [1..4] a group of three, [4] a number.
        let features = [Feature::continuous(0, 0.0, 1.0), Feature::categorical(1, 3), Feature::continuous(4, 0.0, 1.0)];
        let cols = 5;
        let rows: Vec<f32> = (0..300)
            .flat_map(|_| {
                let k = rng.next_u32() % 3;
                let a = uniform(&mut rng) as f32;
                let b = uniform(&mut rng) as f32;
                [a, f32::from(k == 0), f32::from(k == 1), f32::from(k == 2), b]
            })
            .collect();
        let reference = Reference::new(&SUM, rows.clone(), cols).unwrap();
        for case in 0..50 {
            let x: Vec<f32> = rows[case * cols..(case + 1) * cols].to_vec();
            let near = Nearest::new(&x, &rows, cols);
            let mut cand = x.clone();
            let j = (rng.next_u32() % 3) as usize;
            let k = (rng.next_u32() % 3) as usize;
            for f in [j, k] {
                if f == 1 {
                    cand[1..4].copy_from_slice(&[0.0; 3]);
                    cand[1 + (rng.next_u32() % 3) as usize] = 1.0;
                } else {
                    cand[features[f].col as usize] = uniform(&mut rng) as f32;
                }
            }
            for target in 0..2 {
                let want = reference.ynn(&cand, target, YNN_K);
                assert_eq!(near.ynn(&cand, &[j, k], &features, reference.labels(), target), want);
            }
        }
    }

    #[test]
    fn test_factual_finds_the_best_answer_of_every_kind() {
        use crate::baselines::tests::{Toy, schema};
        use crate::metrics;
        let schema = schema();
        let query = schema.default_query();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(5);
        let cols = 6;
        // Income, age, degree on a coarse grid so that the grids hold every value; a job.
        let pool: Vec<f32> = (0..200)
            .flat_map(|_| {
                let job = rng.next_u32() % 3;
                let step = |rng: &mut Xoshiro128PlusPlus| (rng.next_u32() % 11) as f32 / 10.0;
                [
                    step(&mut rng),
                    step(&mut rng),
                    step(&mut rng),
                    f32::from(job == 0),
                    f32::from(job == 1),
                    f32::from(job == 2),
                ]
            })
            .collect();
        let support = Support::none(cols);
        let reference = Reference::new(&Toy, pool.clone(), cols).unwrap();
        let setting = Setting {
            schema: &schema,
            query: &query,
            model: &Toy,
            support: &support,
            pool: &pool,
            reference: reference.rows(),
            labels: reference.labels(),
            min_probability: 0.6,
            grid: GRID,
            set_back: SetBack::Linked,
        };
        // The kinds of answer met and the factuals where the size held the best one back: the
        // cases must exercise both.
        let mut kinds = std::collections::BTreeSet::new();
        let mut limited = 0;
        for case in 0..20 {
            let x = &pool[case * cols..(case + 1) * cols];
            let class = metrics::predicted(&Toy, x).unwrap()[0];
            let target = 1 - class;
            // A size that some answers exceed: two changes, and half the largest l1 seen.
            let size = Size { l0: 2, l1: 0.6 };
            let found = setting.factual(x, target, Some(size)).unwrap();
            // The oracle: every single and pair move from the grids, measured by `metrics`.
            let grids = setting.grids(x);
            let mut want: Vec<Choice> = Vec::new();
            let mut within: Option<Choice> = None;
            let mut moves: Vec<Vec<(usize, usize)>> = Vec::new();
            for j in 0..grids.len() {
                moves.extend((0..grids[j].len()).map(|g| vec![(j, g)]));
                for k in j + 1..grids.len() {
                    for g in 0..grids[j].len() {
                        moves.extend((0..grids[k].len()).map(|h| vec![(j, g), (k, h)]));
                    }
                }
            }
            for m in moves {
                let mut cand = x.to_vec();
                for &(j, g) in &m {
                    cand[schema.features()[j].columns()].copy_from_slice(&grids[j][g]);
                }
                let p = Toy.probabilities(&cand).unwrap();
                if counterfactual::check(&schema, &query, x, &cand).is_err() || argmax(&p) != target || p[target] < 0.6
                {
                    continue;
                }
                let choice = Choice {
                    l0: m.len(),
                    redundancy: metrics::redundancy(&schema, &Toy, &support, x, &cand, target).unwrap(),
                    l1: metrics::l1(x, &cand),
                    ynn: reference.ynn(&cand, target, YNN_K),
                };
                let better = |c: &Choice| choice.ynn > c.ynn || (choice.ynn == c.ynn && choice.l1 < c.l1);
                match want.iter_mut().find(|c| (c.l0, c.redundancy) == (choice.l0, choice.redundancy)) {
                    Some(c) if better(c) => *c = choice,
                    Some(_) => {}
                    None => want.push(choice),
                }
                if choice.l1 <= size.l1 && within.is_none_or(|w| better(&w)) {
                    within = Some(choice);
                }
            }
            want.sort_by_key(|c| (c.l0, c.redundancy));
            assert_eq!(found.choices, want, "factual {case}");
            assert_eq!(found.within, within, "factual {case}");
            kinds.extend(want.iter().map(|c| (c.l0, c.redundancy)));
            limited += usize::from(within.is_some_and(|w| want.iter().any(|c| c.beats(&w))));
            // Each reported answer has the measures reported for it.
            for (c, a) in found.choices.iter().zip(&found.answers) {
                assert_eq!(metrics::l1(x, a), c.l1);
                assert_eq!(reference.ynn(a, target, YNN_K), c.ynn);
            }
        }
        assert!(kinds.contains(&(1, 0)) && kinds.contains(&(2, 0)) && kinds.contains(&(2, 1)), "{kinds:?}");
        assert!(limited > 0);
    }

    /// Class 1 when either of two linked yes/no features (columns 1 and 3) is yes.
    const EITHER: Rule = Rule(|r| r[1] + r[3] > 0.5);

    #[test]
    fn test_a_linked_pair_is_redundant_only_to_a_scorer_without_links() {
        use cent_host::data::{Encoding, Input, Schema, Table};
        // `a` and `b` are one to one (a yes goes with a yes); either yes gives class 1, so
        // each of the pair's changes is enough alone, but only in a combination nobody has.
        let toml = r#"name = "pair"
[target]
column = "y"
favourable = "1"
classes = [{ name = "0", values = ["0"] }, { name = "1", values = ["1"] }]
[[feature]]
name = "a"
kind = "categorical"
categories = ["no", "yes"]
[[feature]]
name = "b"
kind = "categorical"
categories = ["no", "yes"]
[[feature]]
name = "n"
kind = "integer"
mutability = "immutable"
[[link]]
kind = "one_to_one"
features = ["a", "b"]
"#;
        let csv = "a,b,n,y\nno,no,1,0\nyes,yes,2,1\nno,no,3,0\nyes,yes,4,1\n";
        let schema = Schema::from_toml(toml, "pair.toml").unwrap();
        let input = Input { name: "pair.csv".into(), bytes: csv.as_bytes().to_vec(), skip_lines: 0 };
        let table = Table::read(&schema, &[input]).unwrap();
        let all: Vec<usize> = (0..table.len()).collect();
        let encoding = Encoding::fit(&table, &all).unwrap();
        let rows = encoding.encode_rows(&table, &all).unwrap();
        let pool: Vec<f32> = rows.rows().flatten().copied().collect();
        let core = encoding.to_core_schema();
        let query = core.default_query();
        let support = Support::new(&encoding, &pool);
        let reference = Reference::new(&EITHER, pool.clone(), 5).unwrap();
        let x = rows.row(0);
        let run = |set_back| {
            let setting = Setting {
                schema: &core,
                query: &query,
                model: &EITHER,
                support: &support,
                pool: &pool,
                reference: reference.rows(),
                labels: reference.labels(),
                min_probability: 0.6,
                grid: GRID,
                set_back,
            };
            setting.factual(x, 1, None).unwrap()
        };
        let linked = run(SetBack::Linked);
        let plain = run(SetBack::Plain);
        // The only answer: both yes. A single yes breaks the link and is no answer either way.
        let both = vec![0.0, 1.0, 0.0, 1.0, x[4]];
        for found in [&linked, &plain] {
            assert_eq!(found.answers, vec![both.clone()]);
            assert_eq!(found.feasible, 1);
            assert_eq!(found.confirmed, 1);
        }
        assert_eq!(linked.choices[0].redundancy, 0);
        assert_eq!(plain.choices[0].redundancy, 2);
        assert_eq!(metrics::redundancy(&core, &EITHER, &support, x, &both, 1).unwrap(), 0);
        assert_eq!(metrics::redundancy(&core, &EITHER, &Support::none(5), x, &both, 1).unwrap(), 2);
    }
}
