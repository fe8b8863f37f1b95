//! Validation of a device bundle (design §4): the quantized path against full precision, and
//! the atlas against per-query CEnt.
//!
//! * **Quantized** — `cent_nostd::atlas::Explainer::explain` on the bundle exactly as the device
//!   loads it (`Bundle::from_bytes`), run natively on the host.
//! * **Full precision** — the same atlas, trees, graph, search and counterfactual code, with the
//!   f32 VAE encoder, [`Atlas::nearest_f32`] over the dequantized anchors and the f32 black box
//!   in place of the quantized encoder and classifier ([`FullPrecision`]).
//! * **Per-query CEnt** — [`crate::explain::Explainer`]: neighbours and a tree fitted per query.
//!
//! Every run uses the schema's default constraints, the device options of [`Settings`]
//! (`Options::default()` unless a firmware's are measured; any class but the current one, 50
//! contrast leaves at most), [`RESULTS`] results, and the RNG
//! `Xoshiro128PlusPlus::seed_from_u64(i)` where `i` is the query's index (the test-row index
//! in [`validate`], the position in the batch in [`native_run`]).
//!
//! # Canonical result lines
//!
//! [`native_run`] prints one `cent_nostd::atlas::Line` per query, the format firmware running
//! the same bundle and queries prints too, so the two outputs compare byte for byte; it explains
//! with `Options::default()`, as the firmware does.

use crate::artifacts::Artifacts;
use crate::explain::{self, Config};
use crate::export::bundle_name;
use crate::layers;
use cent_nostd::atlas::{
    Atlas, Counterfactual, ExplainError, Explainer, Line, Model, NO_REGION, Options, Oracle, Summary,
};
use cent_nostd::bundle::{Bundle, BundleError, SchemaParts};
use cent_nostd::capacity::NODES;
use cent_nostd::counterfactual;
use cent_nostd::encoder::EncoderError;
use cent_nostd::graph::SCALE;
use cent_nostd::schema::{Query, Schema};
use cent_nostd::support::Support;
use cent_nostd::tree::Tree;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;
use thiserror::Error;

/// Counterfactuals asked of the device explainer per query.
pub const RESULTS: usize = 3;

/// What one device (or full-precision) explanation gave.
pub type Outcome = Result<(Summary, Vec<Counterfactual>), ExplainError>;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ValidateError {
    #[error("cannot read bundle {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{origin}: not a valid bundle: {error}")]
    Bundle { origin: String, error: BundleError },
    #[error(
        "{origin} was exported for `{found}`, not for `{expected}`; export it again with the same dataset, model and seed"
    )]
    Mismatch { origin: String, found: String, expected: String },
    #[error("{origin}: its {what} differs from the dataset's; export it again from the same data")]
    Layout { origin: String, what: &'static str },
    #[error("dataset `{dataset}` is {error}")]
    Device { dataset: String, error: crate::profile::DeviceCapacity },
    #[error("{len} query values do not form rows of {columns} columns")]
    Queries { len: usize, columns: usize },
    #[error(transparent)]
    Model(#[from] crate::blackbox::ModelError),
    /// A bundle is validated against the built-in classifier, and none was loaded.
    #[error("a bundle is validated against the built-in classifier: {0}")]
    Artifacts(#[from] crate::artifacts::ArtifactError),
}

/// Reads a bundle file and checks that the device loader accepts it.
///
/// # Errors
/// [`ValidateError::Read`] or [`ValidateError::Bundle`], both naming the file.
pub fn read_bundle(path: &Path) -> Result<Vec<u8>, ValidateError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| ValidateError::Read { path: shown.clone(), error })?;
    load(&bytes, &shown)?;
    Ok(bytes)
}

pub(crate) fn load<'a>(bytes: &'a [u8], origin: &str) -> Result<Bundle<'a>, ValidateError> {
    Bundle::from_bytes(bytes).map_err(|error| ValidateError::Bundle { origin: origin.to_string(), error })
}

/// Runs the device explainer natively over a batch of queries (row-major encoded rows) and
/// formats one canonical [`line()`] per query; query `i` uses the RNG seeded with `i`.
///
/// # Errors
/// [`ValidateError::Bundle`] for an invalid bundle, [`ValidateError::Queries`] when the batch
/// is not whole rows of the bundle's schema.
pub fn native_run(bundle: &[u8], queries: &[f32]) -> Result<Vec<String>, ValidateError> {
    let b = load(bundle, "bundle")?;
    let columns = b.schema.columns();
    if columns == 0 || !queries.len().is_multiple_of(columns) {
        return Err(ValidateError::Queries { len: queries.len(), columns });
    }
    let query = b.schema.default_query();
    let mut device = Box::new(Explainer::<NODES>::new());
    let model = b.model();
    Ok(queries
        .chunks_exact(columns)
        .enumerate()
        .map(|(i, x)| line(i, &run_device(&mut device, &model, x, &query, Options::default(), i as u64)))
        .collect())
}

/// One query through the device explainer under `options` with the RNG seeded by `seed`.
pub fn run_device(
    device: &mut Explainer<NODES>,
    model: &Model<'_, '_>,
    x: &[f32],
    query: &Query,
    options: Options,
    seed: u64,
) -> Outcome {
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    let mut out: heapless::Vec<Counterfactual, RESULTS> = heapless::Vec::new();
    let summary = device.explain(model, x, query, options, &mut rng, &mut out)?;
    Ok((summary, out.into_iter().collect()))
}

/// The canonical text of one query's outcome (`cent_nostd::atlas::Line`).
pub fn line(index: usize, outcome: &Outcome) -> String {
    let outcome = outcome.as_ref().map(|(s, cfs)| (s, cfs.as_slice())).map_err(|e| *e);
    Line { index: index as u32, outcome }.to_string()
}

/// The device explainer's loop in full precision: the f32 encoder picks the anchor with
/// [`Atlas::nearest_f32`], the f32 black box gives the fact and confirms candidates; the loop
/// itself (trees, graph, search, counterfactual building, the confirmation rule) is the core's
/// `Explainer::explain_with`, the device's very code.
#[derive(Debug)]
pub struct FullPrecision<'m, 'a> {
    oracle: F32Oracle<'m, 'a>,
    schema: &'m Schema,
    support: &'m Support<'a>,
    explainer: Box<Explainer<NODES>>,
}

/// The f32 encoder and black box answering for the quantized ones.
#[derive(Debug, Clone, Copy)]
struct F32Oracle<'m, 'a> {
    atlas: &'m Atlas<'a>,
    encoder: &'m layers::Mlp,
    /// The quantized encoder's output step: dequantizes the anchors.
    scale: f32,
    classifier: Option<&'m layers::Mlp>,
}

impl Oracle for F32Oracle<'_, '_> {
    fn anchor(&self, x: &[f32]) -> Result<usize, ExplainError> {
        if let Some(index) = x.iter().position(|v| !v.is_finite()) {
            return Err(ExplainError::Encoder(EncoderError::InputValue { index: index as u16 }));
        }
        self.atlas.nearest_f32(&self.encoder.forward(x), self.scale).ok_or(ExplainError::Input)
    }

    fn runner_up(&self, x: &[f32], nearest: usize) -> Result<Option<usize>, ExplainError> {
        self.anchor(x)?;
        Ok(self.atlas.nearest_f32_but(&self.encoder.forward(x), self.scale, Some(nearest)))
    }

    fn classify(&self, x: &[f32]) -> Result<Option<(u8, f32)>, ExplainError> {
        Ok(self.classifier.map(|c| {
            let (class, lead) = class_with_lead(&c.forward(x));
            (class as u8, lead)
        }))
    }
}

impl<'m, 'a> FullPrecision<'m, 'a> {
    /// The full-precision twin of `bundle`, with the float weights it was quantized from.
    pub fn new(bundle: &'m Bundle<'a>, encoder: &'m layers::Mlp, classifier: Option<&'m layers::Mlp>) -> Self {
        let oracle = F32Oracle { atlas: &bundle.atlas, encoder, scale: bundle.encoder.output_scale(), classifier };
        FullPrecision { oracle, schema: &bundle.schema, support: &bundle.support, explainer: Box::default() }
    }

    /// Explains `x` like `cent_nostd::atlas::Explainer::explain` under `options`, up to
    /// [`RESULTS`] results.
    pub fn run(&mut self, x: &[f32], query: &Query, options: Options, seed: u64) -> Outcome {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
        let mut out: heapless::Vec<Counterfactual, RESULTS> = heapless::Vec::new();
        let context = (self.schema, self.oracle.atlas, self.support);
        let summary = self.explainer.explain_with(&self.oracle, context, x, query, options, &mut rng, &mut out)?;
        Ok((summary, out.into_iter().collect()))
    }
}

/// The most probable class and its lead over the runner-up in logits, `ln p_top - ln p_second`
/// (the softmax's logit difference; the core's `classify_with_lead` in full precision).
fn class_with_lead(proba: &[f32]) -> (usize, f32) {
    let top = argmax(proba);
    let second = proba
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != top)
        .map(|(_, &p)| p)
        .fold(None, |m: Option<f32>, p| Some(m.map_or(p, |m| m.max(p))));
    let lead = match (proba.get(top), second) {
        (Some(&t), Some(s)) => t.ln() - s.ln(),
        _ => f32::INFINITY,
    };
    (top, lead)
}

/// Index of the largest value, the first on ties (the core's rule for logits).
fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in values.iter().enumerate() {
        if v > values[best] {
            best = i;
        }
    }
    best
}

/// Which test rows to validate on, and how the device explains them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Validate on a seeded sample of this many test rows; `None` = the whole test split.
    pub limit: Option<usize>,
    /// The seed the artifacts were loaded and the bundle exported with (it names the bundle),
    /// also the seed of the sample and of per-query CEnt.
    pub seed: u64,
    /// The device explainer's options on both atlas paths (a firmware's own, to measure them
    /// before flashing; `Options::default()` is the firmware's default).
    pub options: Options,
}

/// Agreement of the quantized latent means with the f32 ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatentError {
    /// `||z_q - z_f|| / ||z_f||`.
    pub relative_mean: f64,
    pub relative_p99: f64,
    pub relative_max: f64,
    pub cosine_mean: f64,
    pub cosine_min: f64,
}

/// Quality of one explainer's first counterfactuals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PathStats {
    /// Share of queries with at least one counterfactual.
    pub found: f64,
    /// Share of queries whose first counterfactual the f32 black box confirms as a flip.
    pub flip_rate: f64,
    /// Returned counterfactuals (all ranks) that break a constraint (`counterfactual::check`).
    pub violations: usize,
    /// Returned counterfactuals (all ranks) with a changed value of an observed-support
    /// feature that no training row has ([`crate::support::Support::unseen`]).
    pub unseen: usize,
    /// Returned counterfactuals (all ranks) that break a schema link
    /// ([`crate::support::Support::broken`]).
    pub broken: usize,
    /// Queries that ended in an error rather than a result or a "not found".
    pub errors: usize,
    /// Means over the confirmed first counterfactuals: changed logical features, encoded l2
    /// (not squared) and leaf cost (the cost over those that come from a region only: an
    /// answer from a person has none).
    pub l0: f64,
    pub l2: f64,
    pub cost: f64,
    /// Share of the confirmed first counterfactuals that come from a person rather than a
    /// region: the atlas's people (its last resort), per-query CEnt's nearest people of the
    /// target class.
    pub people: f64,
    /// Mean wall time per query, microseconds.
    pub micros: f64,
}

/// Everything `cent validate` measures for one bundle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub bundle: String,
    pub name: String,
    pub bytes: usize,
    pub anchors: usize,
    pub max_tree_nodes: usize,
    /// Bits of the encoder's weights (of its first layer: 16 or 8).
    pub encoder_bits: usize,
    /// Bits of the classifier's weights; `None` for a bundle without one.
    pub classifier_bits: Option<usize>,
    pub queries: usize,
    pub latent: LatentError,
    /// Share of queries where the quantized and the f32 path pick the same anchor.
    pub anchor_agreement: f64,
    /// Share of queries where the quantized classifier agrees with the f32 black box.
    pub fact_agreement: f64,
    /// Share of queries with the same first result on both paths: the same leaf and the same
    /// `x'` bits, or no result on either.
    pub identical: f64,
    pub quantized: PathStats,
    pub full_precision: PathStats,
    /// |flip rate quantized - flip rate full precision|, in percentage points.
    pub flip_gap_points: f64,
    /// Per-query CEnt (the host explainer) on the same queries.
    pub cent: PathStats,
    /// The device explainer's options both atlas paths ran with.
    pub options: Options,
}

/// Validates `bundle` (`origin` names it in errors) against the artifacts it was exported
/// from, on the test split.
///
/// # Errors
/// [`ValidateError`] when the bundle is invalid or was exported for other data or models.
pub fn validate(bundle: &[u8], origin: &str, a: &Artifacts, settings: Settings) -> Result<Report, ValidateError> {
    let b = load(bundle, origin)?;
    check_match(&b, origin, a, settings.seed)?;
    let test = &a.prepared.test;
    let columns = b.schema.columns();
    let rows = sample(test.n_rows(), settings.limit, settings.seed);
    let query = b.schema.default_query();
    // The same defaults at the host's capacity (`check_match` found the schemas equal).
    let host_query = a.prepared.encoding.to_core_schema().default_query();
    let mut acc = Accumulators::default();
    let mut device = Box::new(Explainer::<NODES>::new());
    let model = a.model()?;
    let mut full = FullPrecision::new(&b, &a.vae.encoder, Some(model.mlp()));
    let config = Config { n: 1, seed: settings.seed, ..Config::default() };
    let cent = explain::Explainer::new(&a.prepared.encoding, model, &a.vae.encoder, &a.prepared.train.data, config)?;
    for &r in &rows {
        let x = &test.data[r * columns..(r + 1) * columns];
        let ctx = Query1 { model, schema: &b.schema, query: &query, support: cent.support(), x };
        acc.latent(&b, &a.vae.encoder, x);
        let t = Instant::now();
        let q = run_device(&mut device, &b.model(), x, &query, settings.options, r as u64);
        acc.quantized.time(t);
        let t = Instant::now();
        let f = full.run(x, &query, settings.options, r as u64);
        acc.full.time(t);
        acc.compare(&q, &f);
        acc.quantized.add_device(&ctx, &q);
        acc.full.add_device(&ctx, &f);
        let t = Instant::now();
        let c = cent.explain(x, &host_query, None);
        acc.cent.time(t);
        acc.cent.add_cent(&ctx, &c);
    }
    Ok(acc.report(&b, origin, bundle.len(), rows.len(), settings.options))
}

/// The bundle must name these artifacts and share their schema and latent size.
pub(crate) fn check_match(b: &Bundle<'_>, origin: &str, a: &Artifacts, seed: u64) -> Result<(), ValidateError> {
    let expected = bundle_name(&a.name, a.model()?.kind, seed);
    if b.name != expected {
        return Err(ValidateError::Mismatch { origin: origin.into(), found: b.name.into(), expected });
    }
    let layout = |what| ValidateError::Layout { origin: origin.into(), what };
    let schema = crate::profile::device_schema(&a.prepared.encoding.to_core_schema())
        .map_err(|error| ValidateError::Device { dataset: a.name.clone(), error })?;
    if SchemaParts::of(&b.schema) != SchemaParts::of(&schema) {
        return Err(layout("schema"));
    }
    if b.atlas.latent() != a.vae.latent() || b.encoder.inputs() != a.vae.inputs() {
        return Err(layout("encoder"));
    }
    Ok(())
}

/// Test rows to validate on: all, or a seeded sample of `limit` in ascending order.
pub fn sample(n: usize, limit: Option<usize>, seed: u64) -> Vec<usize> {
    match limit {
        Some(l) if l < n => {
            let mut rows: Vec<usize> = crate::data::split::permutation(n, seed).into_iter().take(l).collect();
            rows.sort_unstable();
            rows
        }
        _ => (0..n).collect(),
    }
}

/// One query and what judges it.
struct Query1<'q> {
    model: &'q crate::blackbox::Model,
    schema: &'q Schema,
    query: &'q Query,
    /// The training rows' values and combinations, judging every path alike.
    support: &'q crate::support::Support,
    x: &'q [f32],
}

impl Query1<'_> {
    fn class(&self, x: &[f32]) -> usize {
        self.model.classify(x).first().copied().unwrap_or(0)
    }
}

#[derive(Debug, Default)]
struct PathAcc {
    queries: usize,
    found: usize,
    flips: usize,
    violations: usize,
    unseen: usize,
    broken: usize,
    errors: usize,
    l0: f64,
    l2: f64,
    cost: f64,
    /// Flipped first answers with a region's cost, and those from a person.
    costed: usize,
    people: usize,
    micros: f64,
}

impl PathAcc {
    fn time(&mut self, start: Instant) {
        self.micros += start.elapsed().as_secs_f64() * 1e6;
    }

    fn add_device(&mut self, q: &Query1<'_>, outcome: &Outcome) {
        self.queries += 1;
        let cfs = match outcome {
            Ok((_, cfs)) => cfs,
            Err(_) => {
                self.errors += 1;
                return;
            }
        };
        let all: Vec<&[f32]> = cfs.iter().map(|c| c.x.as_slice()).collect();
        let region = |c: &Counterfactual| (c.leaf != NO_REGION).then(|| c.cost as f64 / SCALE as f64);
        let first = cfs.first().map(|c| (c.x.as_slice(), region(c)));
        self.add(q, &all, first);
    }

    fn add_cent(&mut self, q: &Query1<'_>, result: &Result<explain::Explanation, explain::ExplainError>) {
        self.queries += 1;
        let e = match result {
            Ok(e) => e,
            Err(explain::ExplainError::NotFound(_)) => return,
            Err(_) => {
                self.errors += 1;
                return;
            }
        };
        let all: Vec<&[f32]> = e.counterfactuals.iter().map(|c| c.encoded.as_slice()).collect();
        let region = |c: &explain::Counterfactual| (c.realization != explain::Realization::Nearest).then_some(c.cost);
        let first = e.counterfactuals.first().map(|c| (c.encoded.as_slice(), region(c)));
        self.add(q, &all, first);
    }

    /// `first`: the first answer and its region's cost (`None` for one from a person).
    fn add(&mut self, q: &Query1<'_>, all: &[&[f32]], first: Option<(&[f32], Option<f64>)>) {
        self.violations += all.iter().filter(|cf| counterfactual::check(q.schema, q.query, q.x, cf).is_err()).count();
        self.unseen += all.iter().filter(|cf| q.support.unseen(q.x, cf).0 > 0).count();
        self.broken += all.iter().filter(|cf| q.support.broken(q.x, cf) > 0).count();
        let Some((cf, cost)) = first else { return };
        self.found += 1;
        if q.class(cf) == q.class(q.x) {
            return;
        }
        self.flips += 1;
        self.l0 += counterfactual::changed(q.schema, q.x, cf).count_ones() as f64;
        self.l2 += q.x.iter().zip(cf).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>().sqrt();
        match cost {
            Some(cost) => {
                self.cost += cost;
                self.costed += 1;
            }
            None => self.people += 1,
        }
    }

    fn stats(&self) -> PathStats {
        let per = |v: f64, n: usize| if n == 0 { 0.0 } else { v / n as f64 };
        PathStats {
            found: per(self.found as f64, self.queries),
            flip_rate: per(self.flips as f64, self.queries),
            violations: self.violations,
            unseen: self.unseen,
            broken: self.broken,
            errors: self.errors,
            l0: per(self.l0, self.flips),
            l2: per(self.l2, self.flips),
            cost: per(self.cost, self.costed),
            people: per(self.people as f64, self.flips),
            micros: per(self.micros, self.queries),
        }
    }
}

#[derive(Debug, Default)]
struct Accumulators {
    relative: Vec<f64>,
    cosine: Vec<f64>,
    same_anchor: usize,
    same_fact: usize,
    identical: usize,
    compared: usize,
    quantized: PathAcc,
    full: PathAcc,
    cent: PathAcc,
}

impl Accumulators {
    fn latent(&mut self, b: &Bundle<'_>, encoder: &layers::Mlp, x: &[f32]) {
        let zf = encoder.forward(x);
        let mut zq = vec![0.0; zf.len()];
        if b.encoder.forward_dequantized(x, &mut zq).is_err() {
            return;
        }
        let (rel, cos) = latent_error(&zq, &zf);
        self.relative.push(rel);
        self.cosine.push(cos);
    }

    fn compare(&mut self, q: &Outcome, f: &Outcome) {
        self.compared += 1;
        let (Ok((sq, cq)), Ok((sf, cf))) = (q, f) else { return };
        self.same_anchor += usize::from(sq.anchor == sf.anchor);
        self.same_fact += usize::from(sq.fact == sf.fact);
        let same = match (cq.first(), cf.first()) {
            (None, None) => true,
            (Some(a), Some(b)) => a.leaf == b.leaf && bits(&a.x) == bits(&b.x),
            _ => false,
        };
        self.identical += usize::from(same);
    }

    fn report(&self, b: &Bundle<'_>, origin: &str, bytes: usize, queries: usize, options: Options) -> Report {
        let rate = |v: usize| if self.compared == 0 { 0.0 } else { v as f64 / self.compared as f64 };
        let (quantized, full_precision) = (self.quantized.stats(), self.full.stats());
        Report {
            bundle: origin.to_string(),
            name: b.name.to_string(),
            bytes,
            anchors: b.atlas.len(),
            max_tree_nodes: (0..b.atlas.len()).filter_map(|a| b.atlas.tree(a)).map(Tree::len).max().unwrap_or(0),
            encoder_bits: weight_bits(&b.encoder).unwrap_or(0),
            classifier_bits: b.classifier.as_ref().and_then(weight_bits),
            queries,
            latent: summarize_latent(&self.relative, &self.cosine),
            anchor_agreement: rate(self.same_anchor),
            fact_agreement: rate(self.same_fact),
            identical: rate(self.identical),
            quantized,
            full_precision,
            flip_gap_points: (quantized.flip_rate - full_precision.flip_rate).abs() * 100.0,
            cent: self.cent.stats(),
            options,
        }
    }
}

/// Bits of a network's weights, read from its first layer.
fn weight_bits(mlp: &cent_nostd::encoder::Mlp<'_>) -> Option<usize> {
    mlp.layers().first().map(|l| 8 * l.weight_width().bytes())
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Relative error and cosine of a quantized latent point against the f32 one.
fn latent_error(zq: &[f32], zf: &[f32]) -> (f64, f64) {
    let dot: f64 = zq.iter().zip(zf).map(|(a, b)| *a as f64 * *b as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
    let diff: f64 = zq.iter().zip(zf).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>().sqrt();
    let (nq, nf) = (norm(zq), norm(zf));
    let rel = if nf > 0.0 { diff / nf } else { diff };
    let cos = if nq > 0.0 && nf > 0.0 { dot / (nq * nf) } else { f64::from(u8::from(diff == 0.0)) };
    (rel, cos)
}

fn summarize_latent(relative: &[f64], cosine: &[f64]) -> LatentError {
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let mut sorted = relative.to_vec();
    sorted.sort_by(f64::total_cmp);
    LatentError {
        relative_mean: mean(relative),
        relative_p99: percentile(&sorted, 0.99),
        relative_max: sorted.last().copied().unwrap_or(0.0),
        cosine_mean: mean(cosine),
        cosine_min: cosine.iter().copied().fold(f64::INFINITY, f64::min).min(1.0),
    }
}

/// The `p` quantile of sorted values (nearest rank); 0 for none.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atlas;
    use crate::layers::{Activation, Dense};
    use crate::quantize::quantize_mlp;
    use crate::surrogate::{self, TreeParams};
    use cent_nostd::atlas::NotFound;
    use cent_nostd::encoder::WeightWidth;
    use cent_nostd::schema::Feature;

    fn dense(weights: Vec<f32>, bias: Vec<f32>, activation: Activation) -> layers::Mlp {
        layers::Mlp { layers: vec![Dense { inputs: 2, outputs: 2, weights, bias, activation }] }
    }

    /// Two features in [0, 1]; identity encoder; classifier and trees say "class 1 iff x0 > 0.5".
    fn tiny_bundle() -> (Vec<u8>, layers::Mlp, layers::Mlp) {
        let mut schema = Schema::new(2);
        schema.push(Feature::continuous(0, 0.0, 1.0).with_sigma(0.1)).unwrap();
        schema.push(Feature::continuous(1, 0.0, 1.0)).unwrap();
        let rows: Vec<f32> = (0..40).flat_map(|i| [i as f32 / 39.0, (i % 7) as f32 / 6.0]).collect();
        let labels: Vec<usize> = (0..40).map(|i| usize::from(i >= 20)).collect();
        let tree = surrogate::fit(&rows, 2, &labels, 2, &[true, true], TreeParams::default()).unwrap();
        let encoder = dense(vec![1.0, 0.0, 0.0, 1.0], vec![0.0, 0.0], Activation::Identity);
        let classifier = dense(vec![-20.0, 0.0, 20.0, 0.0], vec![10.0, -10.0], Activation::Softmax);
        let (qe, qc) = (
            quantize_mlp(&encoder, &rows, WeightWidth::I8).unwrap(),
            quantize_mlp(&classifier, &rows, WeightWidth::I8).unwrap(),
        );
        let trees = vec![tree.clone(), tree];
        let atlas = atlas::Atlas {
            latent: 2,
            anchors: vec![0.2, 0.5, 0.8, 0.5],
            anchor_class: vec![0, 1],
            trees,
            people: Vec::new(),
        };
        let (bytes, _) =
            crate::export::assemble("tiny", &schema, &qe, Some(&qc), &atlas, &Default::default(), &[]).unwrap();
        (bytes, encoder, classifier)
    }

    #[test]
    fn test_full_precision_twin_matches_the_device_on_clear_cases() {
        let (bytes, encoder, classifier) = tiny_bundle();
        let b = Bundle::from_bytes(&bytes).unwrap();
        let mut full = FullPrecision::new(&b, &encoder, Some(&classifier));
        let mut device = Box::new(Explainer::<NODES>::new());
        let query = b.schema.default_query();
        for (i, x) in [[0.1f32, 0.3], [0.3, 0.9], [0.7, 0.2], [0.95, 0.5]].iter().enumerate() {
            let d = run_device(&mut device, &b.model(), x, &query, Options::default(), i as u64);
            let f = full.run(x, &query, Options::default(), i as u64);
            assert_eq!(d, f, "query {i}");
            let (s, cfs) = d.unwrap();
            assert_eq!((s.anchor, s.fact), (u8::from(x[0] > 0.5), u8::from(x[0] > 0.5)));
            assert!(cfs[0].class == Some(1 - s.fact) && cfs[0].x[1] == x[1], "only x0 moves: {:?}", cfs[0]);
        }
    }

    #[test]
    fn test_native_run_lines_match_the_device_outcomes() {
        let (bytes, _, _) = tiny_bundle();
        let lines = native_run(&bytes, &[0.1, 0.3, 0.7, 0.2]).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("q=0 anchor=0 fact=0 ") && lines[0].contains(" n=1 | leaf="), "{}", lines[0]);
        assert!(lines[1].starts_with("q=1 anchor=1 fact=1 "), "{}", lines[1]);
        let err = native_run(&bytes, &[0.1, 0.3, 0.7]).unwrap_err();
        assert!(matches!(err, ValidateError::Queries { len: 3, columns: 2 }), "{err}");
    }

    fn summary(anchor: u8, not_found: Option<NotFound>) -> Summary {
        Summary { anchor, fact: 0, examined: 2, rejected: 1, not_found }
    }

    #[test]
    fn test_line_is_the_core_canonical_line() {
        let x = heapless::Vec::from_slice(&[1.0f32, 0.5]).unwrap();
        let cf = Counterfactual { x, cost: 6553, leaf: 4, class: Some(1), changed: 0b10 };
        let out: Outcome = Ok((summary(3, None), vec![cf]));
        assert_eq!(
            line(7, &out),
            "q=7 anchor=3 fact=0 examined=2 rejected=1 n=1 | leaf=4 cost=6553 class=1 changed=2 x=3f800000,3f000000"
        );
        let out: Outcome = Ok((summary(0, Some(NotFound::Blocked)), Vec::new()));
        assert_eq!(line(0, &out), "q=0 anchor=0 fact=0 examined=2 rejected=1 n=0 not_found=Blocked");
        assert!(line(2, &Err(ExplainError::Input)).starts_with("q=2 error="));
    }

    #[test]
    fn test_latent_error_of_scaled_and_rotated_points() {
        let (rel, cos) = latent_error(&[1.1, 0.0], &[1.0, 0.0]);
        assert!((rel - 0.1).abs() < 1e-6 && (cos - 1.0).abs() < 1e-12);
        let (rel, cos) = latent_error(&[0.0, 1.0], &[1.0, 0.0]);
        assert!((rel - 2f64.sqrt()).abs() < 1e-12 && cos.abs() < 1e-12);
        assert_eq!(latent_error(&[0.0], &[0.0]), (0.0, 1.0));
    }

    #[test]
    fn test_percentile_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v[..10], 0.99), 10.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn test_sample_is_seeded_sorted_and_bounded() {
        let s = sample(100, Some(10), 3);
        assert_eq!(s.len(), 10);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(s, sample(100, Some(10), 3));
        assert_ne!(s, sample(100, Some(10), 4));
        assert_eq!(sample(5, Some(10), 3), vec![0, 1, 2, 3, 4]);
        assert_eq!(sample(3, None, 3), vec![0, 1, 2]);
    }

    #[test]
    fn test_native_run_rejects_ragged_queries_and_bad_bundles() {
        let err = native_run(b"CENT", &[0.0]).unwrap_err();
        assert!(matches!(err, ValidateError::Bundle { error: BundleError::Length, .. }), "{err}");
        assert_eq!(err.to_string(), "bundle: not a valid bundle: bundle is truncated or has trailing bytes");
    }
}
