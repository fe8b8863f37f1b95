//! Bring-your-own model: an ONNX classifier behind [`BlackBox`] (design §7), loaded and
//! checked by `tract` (pure Rust). Two kinds of graph run on cent's own code, at the speed of
//! the built-in models: a stack of dense layers (`dense`, served by [`Batched`]) and a single
//! `TreeEnsembleClassifier` (`forest`), each checked against tract on probe rows when tract runs
//! it; tract runs every other graph, on a thread of its own ([`Runtime`]).
//!
//! The model takes one `float32` input of shape `[batch, n_cols]` whose columns follow the
//! schema's encoded column order (`Encoding::column_names`), and must have one output holding
//! class probabilities, `float32` of shape `[batch, classes]`. That output is found by name (the
//! first output whose name contains `prob`, as skl2onnx's `probabilities` /
//! `output_probability`) or else by shape (the one float output of rank 2 with `classes`
//! columns); other outputs (labels) are dropped from the plan, and so is whatever computes only
//! them. The model is probed once at load: its rows must sum to 1.
//!
//! Operator coverage: standard ONNX operators as far as tract implements them (`Gemm`,
//! `MatMul`, `Add`, `Relu`, `Sigmoid`, `Softmax`, …) and, of the `ai.onnx.ml` domain,
//! `LinearClassifier`, `Normalizer`, `ArrayFeatureExtractor` and `TreeEnsembleClassifier`
//! (with one `base_values` entry per class; cent's forest also reads the single entry XGBoost
//! and scikit-learn's gradient boosting write for two classes). tract has no `ZipMap` (its
//! output is a sequence of maps, not a tensor): export scikit-learn models with skl2onnx
//! `options={"zipmap": False}` (or `to_onnx(..., options={id(model): {"zipmap": False}})`).

mod dense;
mod forest;
mod graph;

use crate::blackbox::{BlackBox, ModelError};
use crate::layers::Batched;
use forest::Forest;
use rand_core::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;
use tract_onnx::tract_hir::internal::DimLike;

/// Why an ONNX model cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OnnxError {
    #[error("cannot read the ONNX model {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a model tract can load: {message}{hint}")]
    Parse { path: PathBuf, message: String, hint: &'static str },
    #[error(
        "{path}: no probability output: expected an output named `*prob*` or one float output of shape \
         [batch, {classes}]; outputs: {outputs}"
    )]
    NoProbabilities { path: PathBuf, classes: usize, outputs: String },
    #[error("{path}: the model takes {found} input(s); cent passes exactly one [batch, {n_cols}] float tensor")]
    Inputs { path: PathBuf, found: usize, n_cols: usize },
    #[error("{path}: the model cannot run on [batch, {n_cols}] float rows (the dataset's encoded width): {message}")]
    Shape { path: PathBuf, n_cols: usize, message: String },
    #[error("{path}: output `{output}` gives {found} values per row, the dataset has {classes} classes")]
    Classes { path: PathBuf, output: String, found: usize, classes: usize },
    #[error(
        "{path}: output `{output}` is not a probability vector (a row sums to {sum}); end the graph with a \
         Softmax (or a LinearClassifier post_transform)"
    )]
    NotProbabilities { path: PathBuf, output: String, sum: f32 },
}

/// Advice appended to load errors that name an operator tract lacks.
const ZIPMAP_HINT: &str = "; scikit-learn exports: pass options={\"zipmap\": False} to skl2onnx so that the \
                           probabilities are a plain tensor (tract has no ZipMap)";

/// What computes a loaded model's probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Runtime {
    /// tract runs the graph.
    Tract,
    /// The graph is a stack of dense layers, run by cent's own layers (as the built-in MLP).
    Dense { layers: usize },
    /// The graph is one `TreeEnsembleClassifier`, walked by cent's own forest evaluator;
    /// `steps` branch tests a row (the sum of the trees' depths).
    Forest { trees: usize, steps: usize },
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Runtime::Tract => f.write_str("tract"),
            Runtime::Dense { layers } => write!(f, "dense layers ({layers})"),
            Runtime::Forest { trees, .. } => write!(f, "tree ensemble ({trees} trees)"),
        }
    }
}

/// The model's evaluator.
enum Engine {
    Tract(Worker),
    /// Dense layers, laid out for batches once.
    Dense(Batched),
    Forest(Forest),
}

/// Largest difference between tract's and cent's own probabilities on the probe rows for a
/// graph cent recognises; beyond it tract keeps serving the model.
const AGREEMENT: f32 = 1e-4;

/// A loaded ONNX classifier.
pub struct OnnxModel {
    engine: Engine,
    path: PathBuf,
    output: String,
    inputs: usize,
    classes: usize,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel")
            .field("path", &self.path)
            .field("output", &self.output)
            .field("inputs", &self.inputs)
            .field("classes", &self.classes)
            .field("runtime", &self.runtime())
            .finish()
    }
}

impl OnnxModel {
    /// Loads `path` for rows of `n_cols` encoded columns and `classes` classes, and probes it
    /// once on a row of zeros.
    ///
    /// # Errors
    /// [`OnnxError`] naming the file and what does not match: unreadable, unsupported
    /// operator (with the skl2onnx advice), input count or width, no probability output, class
    /// count, rows that do not sum to 1.
    pub fn load(path: &Path, n_cols: usize, classes: usize) -> Result<Self, OnnxError> {
        apart(path, n_cols, || Self::load_here(path, n_cols, classes, Runtimes::Any))
    }

    /// As [`OnnxModel::load`], but tract serves the graph even when cent recognises it: for
    /// comparing the two and measuring tract.
    ///
    /// # Errors
    /// As [`OnnxModel::load`].
    pub fn load_tract(path: &Path, n_cols: usize, classes: usize) -> Result<Self, OnnxError> {
        apart(path, n_cols, || Self::load_here(path, n_cols, classes, Runtimes::TractOnly))
    }

    fn load_here(path: &Path, n_cols: usize, classes: usize, runtimes: Runtimes) -> Result<Self, OnnxError> {
        let bytes = std::fs::read(path).map_err(|source| OnnxError::Read { path: path.to_path_buf(), source })?;
        let parse = |e: TractError| OnnxError::Parse { path: path.to_path_buf(), message: chain(&e), hint: hint(&e) };
        let proto = tract_onnx::onnx().proto_model_for_read(&mut bytes.as_slice()).map_err(parse)?;
        let native = match runtimes {
            Runtimes::Any => proto.graph.as_ref().and_then(|g| native(&graph::Graph::new(g), n_cols, classes)),
            Runtimes::TractOnly => None,
        };
        match (Self::planned(path, &proto, n_cols, classes), native) {
            (Ok(tract), Some((engine, output))) => Ok(tract.replaced_by(engine, output)),
            (Ok(tract), None) => Ok(tract),
            // tract refuses some exports cent reads itself (a single `base_values` entry on a
            // binary tree ensemble, as XGBoost and scikit-learn's gradient boosting write).
            (Err(OnnxError::Parse { .. }), Some((engine, output))) => {
                let loaded = OnnxModel { engine, path: path.to_path_buf(), output, inputs: n_cols, classes };
                loaded.probe()?;
                Ok(loaded)
            }
            (Err(e), _) => Err(e),
        }
    }

    /// The graph planned by tract and probed.
    fn planned(
        path: &Path,
        proto: &tract_onnx::pb::ModelProto,
        n_cols: usize,
        classes: usize,
    ) -> Result<Self, OnnxError> {
        let parse = |e: TractError| OnnxError::Parse { path: path.to_path_buf(), message: chain(&e), hint: hint(&e) };
        let mut model = tract_onnx::onnx().model_for_proto_model(proto).map_err(parse)?;
        if model.inputs.len() != 1 {
            return Err(OnnxError::Inputs { path: path.to_path_buf(), found: model.inputs.len(), n_cols });
        }
        let output = probability_output(&model, classes).ok_or_else(|| OnnxError::NoProbabilities {
            path: path.into(),
            classes,
            outputs: outputs(&model),
        })?;
        let shape = |e: TractError| OnnxError::Shape { path: path.to_path_buf(), n_cols, message: chain(&e) };
        if let Some(declared) = declared_width(&model).filter(|&w| w != n_cols) {
            let message = format!("its input is declared with {declared} columns");
            return Err(OnnxError::Shape { path: path.to_path_buf(), n_cols, message });
        }
        model.select_output_outlets(&[output.0]).map_err(parse)?;
        let batch = model.symbols.sym("batch");
        let fact = InferenceFact::dt_shape(f32::datum_type(), tvec!(batch.to_dim(), n_cols.to_dim()));
        model.set_input_fact(0, fact).map_err(shape)?;
        let plan = model.into_optimized().and_then(|m| m.into_runnable()).map_err(|e| {
            let hint = hint(&e);
            if hint.is_empty() { shape(e) } else { parse(e) }
        })?;
        let worker = Worker::start(plan, n_cols).map_err(|e| OnnxError::Shape {
            path: path.to_path_buf(),
            n_cols,
            message: e.to_string(),
        })?;
        let engine = Engine::Tract(worker);
        let loaded = OnnxModel { engine, path: path.to_path_buf(), output: output.1, inputs: n_cols, classes };
        loaded.probe()?;
        Ok(loaded)
    }

    /// This model served by `engine` instead of tract when both agree on the probe rows
    /// (within [`AGREEMENT`]); otherwise this model unchanged.
    fn replaced_by(self, engine: Engine, output: String) -> Self {
        let rows = probe_rows(self.inputs);
        let candidate =
            OnnxModel { engine, path: self.path.clone(), output, inputs: self.inputs, classes: self.classes };
        let agree = match (self.run(&rows), candidate.run(&rows)) {
            (Ok(a), Ok(b)) => a.len() == b.len() && a.iter().zip(&b).all(|(p, q)| (p - q).abs() <= AGREEMENT),
            _ => false,
        };
        if agree { candidate } else { self }
    }

    /// What computes this model's probabilities.
    pub fn runtime(&self) -> Runtime {
        match &self.engine {
            Engine::Tract(_) => Runtime::Tract,
            Engine::Dense(layers) => Runtime::Dense { layers: layers.len() },
            Engine::Forest(forest) => Runtime::Forest { trees: forest.trees(), steps: forest.steps() },
        }
    }

    /// Name of the output read as probabilities.
    pub fn output_name(&self) -> &str {
        &self.output
    }

    /// Runs a zero row and a row of halves; checks the width and that each row sums to 1.
    fn probe(&self) -> Result<(), OnnxError> {
        let mut rows = vec![0.0f32; self.inputs];
        rows.extend(std::iter::repeat_n(0.5f32, self.inputs));
        let shape = |message: String| OnnxError::Shape { path: self.path.clone(), n_cols: self.inputs, message };
        // tract asserts (panics) on some shape mismatches it does not catch while planning; a
        // model file is user input, so the probe turns that into an error.
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(&rows)))
            .map_err(|_| shape("the runtime failed on a probe batch".into()))?
            .map_err(|e| shape(chain(&e)))?;
        if out.len() != 2 * self.classes {
            let found = out.len() / 2;
            let (path, output, classes) = (self.path.clone(), self.output.clone(), self.classes);
            return Err(OnnxError::Classes { path, output, found, classes });
        }
        for row in out.chunks_exact(self.classes) {
            let sum: f32 = row.iter().sum();
            // NaN sums fail the first test too.
            let sums_to_one = (sum - 1.0).abs() < 1e-3;
            if !sums_to_one || row.iter().any(|p| !(0.0..=1.0).contains(p)) {
                return Err(OnnxError::NotProbabilities { path: self.path.clone(), output: self.output.clone(), sum });
            }
        }
        Ok(())
    }

    /// The probabilities of row-major `rows`.
    fn run(&self, rows: &[f32]) -> TractResult<Vec<f32>> {
        match &self.engine {
            Engine::Tract(worker) => worker.run(rows),
            Engine::Dense(layers) => Ok(layers.forward_batch(rows)),
            Engine::Forest(forest) => Ok(forest.probabilities(rows, self.inputs)),
        }
    }
}

/// Which evaluators a load may pick.
#[derive(Debug, Clone, Copy)]
enum Runtimes {
    Any,
    TractOnly,
}

/// Runs `load` on a thread of its own (see [`Worker`]: the caller's thread never executes
/// tract's kernels); a panic in tract while planning or probing becomes an error.
fn apart(
    path: &Path,
    n_cols: usize,
    load: impl FnOnce() -> Result<OnnxModel, OnnxError> + Send,
) -> Result<OnnxModel, OnnxError> {
    std::thread::scope(|s| s.spawn(load).join()).unwrap_or_else(|_| {
        let message = "the runtime failed while loading the model".to_string();
        Err(OnnxError::Shape { path: path.to_path_buf(), n_cols, message })
    })
}

/// A request to the tract thread: row-major rows, and where to send their probabilities.
type Job = (Vec<f32>, mpsc::SyncSender<TractResult<Vec<f32>>>);

/// tract's plan, run on a thread of its own.
///
/// tract's x86-64 kernels (assembly and inline assembly) return with the upper halves of the
/// vector registers still in use, without `vzeroupper`. The plain SSE code that runs after
/// them on the same thread — the whole explainer — then runs several times slower until
/// something clears that state (measured: an Adult query 1.5 ms instead of 0.7 ms, the
/// neighbour search six times slower). On its own thread tract leaves the caller's registers
/// alone, for the cost of handing each batch over (microseconds).
struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    /// Starts the thread; it ends when the worker is dropped.
    fn start(plan: std::sync::Arc<TypedRunnableModel>, n_cols: usize) -> std::io::Result<Worker> {
        let (jobs, requests) = mpsc::channel::<Job>();
        std::thread::Builder::new().name("cent-tract".into()).spawn(move || {
            for (rows, reply) in requests {
                // tract asserts (panics) on some inputs it does not check while planning.
                let run = std::panic::AssertUnwindSafe(|| run_plan(&plan, &rows, n_cols));
                let out = std::panic::catch_unwind(run).unwrap_or_else(|_| Err(TractError::msg("tract panicked")));
                // The caller may have gone; nothing to do then.
                let _ = reply.send(out);
            }
        })?;
        Ok(Worker { jobs })
    }

    /// The plan's output for `rows`, computed on the worker's thread.
    fn run(&self, rows: &[f32]) -> TractResult<Vec<f32>> {
        let (reply, answer) = mpsc::sync_channel(1);
        let stopped = || TractError::msg("the tract thread has stopped");
        self.jobs.send((rows.to_vec(), reply)).map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())?
    }
}

/// One run of `plan` on row-major `rows` of `n_cols` columns.
fn run_plan(plan: &std::sync::Arc<TypedRunnableModel>, rows: &[f32], n_cols: usize) -> TractResult<Vec<f32>> {
    let n = rows.len() / n_cols.max(1);
    let input = Tensor::from_shape(&[n, n_cols], rows)?;
    let result = plan.run(tvec!(input.into()))?;
    let first = result.first().ok_or_else(|| TractError::msg("the model returned no output"))?;
    let view = first.cast_to::<f32>()?;
    Ok(view.to_plain_array_view::<f32>()?.iter().copied().collect())
}

impl BlackBox for OnnxModel {
    fn classes(&self) -> usize {
        self.classes
    }

    fn inputs(&self) -> usize {
        self.inputs
    }

    /// # Errors
    /// [`ModelError::Failed`] naming the file when tract fails on the batch (the model was
    /// probed at load, so this is a runtime fault, not an input error).
    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        self.run(rows).map_err(|e| ModelError::Failed {
            model: format!("ONNX {}", self.path.display()),
            rows: rows.len() / self.inputs.max(1),
            message: chain(&e),
        })
    }
}

/// cent's own evaluator for the graph, when it is one it recognises, and the output it reads.
fn native(graph: &graph::Graph<'_>, n_cols: usize, classes: usize) -> Option<(Engine, String)> {
    let names: Vec<&str> = graph.proto.output.iter().map(|o| o.name.as_str()).collect();
    let output = names.iter().find(|n| n.to_ascii_lowercase().contains("prob")).or(names.first())?;
    if let Some(mlp) = dense::from_graph(graph, output, n_cols, classes) {
        return Some((Engine::Dense(Batched::new(&mlp)), output.to_string()));
    }
    let forest = Forest::from_graph(graph, output, n_cols, classes)?;
    Some((Engine::Forest(forest), output.to_string()))
}

/// Rows compared between tract and cent's own evaluator: zeros, halves, ones and 61 seeded
/// uniform rows.
fn probe_rows(width: usize) -> Vec<f32> {
    let mut rows = vec![0.0; width];
    rows.extend(std::iter::repeat_n(0.5, width));
    rows.extend(std::iter::repeat_n(1.0, width));
    let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(0xCE47);
    rows.extend((0..61 * width).map(|_| (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32));
    rows
}

/// The output to read: the first whose name contains `prob`, else the only float output of
/// rank 2 with `classes` columns.
fn probability_output(model: &InferenceModel, classes: usize) -> Option<(OutletId, String)> {
    let named: Vec<(OutletId, String)> = model
        .outputs
        .iter()
        .map(|&o| (o, model.outlet_label(o).map_or_else(|| node_name(model, o), str::to_string)))
        .collect();
    if let Some(hit) = named.iter().find(|(_, name)| name.to_ascii_lowercase().contains("prob")) {
        return Some(hit.clone());
    }
    let fits = |o: OutletId| {
        model.outlet_fact(o).is_ok_and(|f| {
            let float = f.datum_type.concretize().is_none_or(|t| t.is_float());
            let shape = f.shape.concretize();
            let cols = shape.as_ref().and_then(|s| s.get(1)).and_then(|d| d.to_usize().ok());
            float && shape.as_ref().is_none_or(|s| s.len() == 2) && cols.is_none_or(|c| c == classes)
        })
    };
    let candidates: Vec<&(OutletId, String)> = named.iter().filter(|(o, _)| fits(*o)).collect();
    match candidates.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

/// The input's declared number of columns, when the file fixes it (`[batch, n]`).
fn declared_width(model: &InferenceModel) -> Option<usize> {
    let fact = model.input_fact(0).ok()?;
    let dims: Vec<_> = fact.shape.dims().collect();
    match dims.as_slice() {
        [_, cols] => cols.concretize().and_then(|d| d.to_usize().ok()),
        _ => None,
    }
}

fn node_name(model: &InferenceModel, o: OutletId) -> String {
    model.node(o.node).name.clone()
}

/// The outputs' names, for error messages.
fn outputs(model: &InferenceModel) -> String {
    let names: Vec<String> = model
        .outputs
        .iter()
        .map(|&o| model.outlet_label(o).map_or_else(|| node_name(model, o), str::to_string))
        .collect();
    names.join(", ")
}

/// The whole error chain of a tract error on one line.
fn chain(e: &TractError) -> String {
    e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}

/// The skl2onnx advice when the error is about ZipMap (or another unknown ml operator).
fn hint(e: &TractError) -> &'static str {
    let text = format!("{e:?}");
    if text.contains("ZipMap") || text.contains("ai.onnx.ml") { ZIPMAP_HINT } else { "" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackbox::Model;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/onnx").join(name)
    }

    fn close(a: &[f32], b: &[f32], eps: f32) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(p, q)| (p - q).abs() <= eps)
    }

    /// tract's plan for a fixture, without cent's own evaluators.
    fn tract(name: &str, n_cols: usize, classes: usize) -> Result<OnnxModel, OnnxError> {
        OnnxModel::load_tract(&fixture(name), n_cols, classes)
    }

    #[test]
    fn test_committed_adult_mlp_matches_the_builtin_weights_on_test_rows() {
        let builtin = Model::load(&fixture("adult-mlp.json")).expect("committed weights load");
        let onnx = OnnxModel::load(&fixture("adult-mlp.onnx"), 47, 2).expect("committed model loads");
        assert_eq!(onnx.output_name(), "probabilities");
        assert_eq!(onnx.runtime(), Runtime::Dense { layers: 3 });
        let by_tract = tract("adult-mlp.onnx", 47, 2).expect("tract plans it");
        assert_eq!(by_tract.runtime(), Runtime::Tract);
        let table = crate::data::load_adult().expect("embedded Adult");
        let prepared = crate::data::prepare(table, crate::data::TEST_FRACTION, 1).expect("prepares");
        let rows = &prepared.test.data[..500 * 47];
        let b = builtin.probabilities(rows).expect("runs");
        for model in [&onnx, &by_tract] {
            let a = model.probabilities(rows).expect("runs");
            assert!(close(&a, &b, 1e-5), "{}: ONNX and built-in probabilities differ", model.runtime());
            assert_eq!(model.predict(rows).expect("runs"), builtin.predict(rows).expect("runs"));
        }
        // Served as layers, the export gives the built-in model's very bits.
        assert_eq!(onnx.probabilities(rows).expect("runs"), b);
    }

    /// The 16 rows and each framework's probabilities stored beside the tree fixtures.
    fn tree_expected() -> serde_json::Value {
        let text = std::fs::read_to_string(fixture("trees-expected.json")).expect("data/onnx/trees-expected.json");
        serde_json::from_str(&text).expect("json")
    }

    fn flat(v: &serde_json::Value) -> Vec<f32> {
        let rows = v.as_array().expect("rows");
        assert!(!rows.is_empty(), "no rows in the fixture");
        rows.iter()
            .flat_map(|r| r.as_array().expect("row").clone())
            .map(|x| x.as_f64().expect("number") as f32)
            .collect()
    }

    const TREE_MODELS: [&str; 4] = ["lightgbm", "xgboost", "skl-rf", "skl-gb"];

    #[test]
    fn test_tree_ensembles_match_their_frameworks() {
        let expected = tree_expected();
        let rows = flat(&expected["rows"]);
        assert_eq!(rows.len(), 16 * 8);
        for name in TREE_MODELS {
            let model = OnnxModel::load(&fixture(&format!("{name}.onnx")), 8, 2).expect("tree ensemble loads");
            let Runtime::Forest { trees: trees @ 1..=20, steps } = model.runtime() else {
                panic!("{name}: {}", model.runtime())
            };
            // Each tree is at least a stump and at most 4 deep (`max_depth` in make_onnx.py).
            assert!((trees..=4 * trees).contains(&steps), "{name}: {steps} steps for {trees} trees");
            let p = model.probabilities(&rows).expect("runs");
            assert!(close(&p, &flat(&expected[name]), 1e-5), "{name}: {p:?}");
        }
    }

    #[test]
    fn test_tract_matches_the_frameworks_on_the_tree_ensembles_it_loads() {
        let expected = tree_expected();
        let rows = flat(&expected["rows"]);
        for name in ["lightgbm", "skl-rf"] {
            let model = tract(&format!("{name}.onnx"), 8, 2).expect("tract plans it");
            let p = model.probabilities(&rows).expect("runs");
            assert!(close(&p, &flat(&expected[name]), 1e-5), "{name}: {p:?}");
        }
        // XGBoost and scikit-learn's gradient boosting write one `base_values` entry for two
        // classes, which tract refuses; cent's own evaluator reads them (above).
        for name in ["xgboost", "skl-gb"] {
            let err = tract(&format!("{name}.onnx"), 8, 2).expect_err("tract wants one base value per class");
            assert!(err.to_string().contains("base_values"), "{name}: {err}");
        }
    }

    #[test]
    fn test_dense_graphs_are_served_as_layers_and_others_by_tract() {
        let (rows, lr, mlp) = expected();
        let model = OnnxModel::load(&fixture("skl-mlp.onnx"), 5, 2).expect("loads");
        assert_eq!(model.runtime(), Runtime::Dense { layers: 3 }, "a sigmoid head is a two-way softmax");
        assert!(close(&model.probabilities(&rows).expect("runs"), &mlp, 1e-5));
        let model = OnnxModel::load(&fixture("skl-lr.onnx"), 5, 2).expect("loads");
        assert_eq!(model.runtime(), Runtime::Dense { layers: 1 }, "a LinearClassifier is one layer");
        assert!(close(&model.probabilities(&rows).expect("runs"), &lr, 1e-5));
        let by_tract = OnnxModel::load_tract(&fixture("skl-lr.onnx"), 5, 2).expect("loads");
        assert_eq!(by_tract.runtime(), Runtime::Tract);
        assert!(close(&by_tract.probabilities(&rows).expect("runs"), &lr, 1e-5));
    }

    #[test]
    fn test_width_and_class_mismatches_are_clear_errors() {
        let err = OnnxModel::load(&fixture("adult-mlp.onnx"), 46, 2).expect_err("46 columns do not fit");
        assert!(matches!(err, OnnxError::Shape { n_cols: 46, .. }), "{err}");
        assert!(err.to_string().contains("adult-mlp.onnx"), "{err}");
        let err = OnnxModel::load(&fixture("adult-mlp.onnx"), 47, 3).expect_err("3 classes do not fit");
        assert!(matches!(err, OnnxError::Classes { found: 2, classes: 3, .. }), "{err}");
    }

    #[test]
    fn test_declared_input_width_is_checked_before_running() {
        let err = OnnxModel::load(&fixture("skl-lr.onnx"), 47, 2).expect_err("a 5-column model");
        assert!(err.to_string().contains("declared with 5 columns"), "{err}");
    }

    #[test]
    fn test_unreadable_and_garbage_files() {
        let err = OnnxModel::load(&fixture("missing.onnx"), 47, 2).expect_err("no file");
        assert!(matches!(err, OnnxError::Read { .. }), "{err}");
        let err = OnnxModel::load(&fixture("skl-expected.json"), 5, 2).expect_err("not ONNX");
        assert!(matches!(err, OnnxError::Parse { .. }), "{err}");
    }

    /// The probabilities scikit-learn computed for the fixtures' rows.
    fn expected() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let text = std::fs::read_to_string(fixture("skl-expected.json")).expect("fixture");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        let flat = |key: &str| -> Vec<f32> {
            v[key]
                .as_array()
                .expect("rows")
                .iter()
                .flat_map(|r| r.as_array().expect("row").clone())
                .map(|x| x.as_f64().expect("number") as f32)
                .collect()
        };
        (flat("rows"), flat("lr"), flat("mlp"))
    }

    #[test]
    fn test_skl2onnx_exports_without_zipmap_load_and_match_sklearn() {
        let (rows, lr, mlp) = expected();
        let model = OnnxModel::load(&fixture("skl-lr.onnx"), 5, 2).expect("LinearClassifier export loads");
        assert_eq!(model.output_name(), "probabilities");
        assert!(close(&model.probabilities(&rows).expect("runs"), &lr, 1e-5));
        let model = OnnxModel::load(&fixture("skl-mlp.onnx"), 5, 2).expect("MLP export loads");
        assert!(close(&model.probabilities(&rows).expect("runs"), &mlp, 1e-5));
    }

    #[test]
    fn test_skl2onnx_zipmap_export_names_the_export_option() {
        let err = OnnxModel::load(&fixture("skl-lr-zipmap.onnx"), 5, 2).expect_err("tract has no ZipMap");
        let text = err.to_string();
        assert!(text.contains("\"zipmap\": False"), "{text}");
    }
}
