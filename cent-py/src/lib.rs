//! `cent._cent`, the native half of the `cent` Python package: one class, `Core`, that loads a
//! dataset and its models with `cent-host` (as `cent explain` and `cent batch` do) and explains
//! people given as named raw fields. The Python half (`python/cent/__init__.py`) turns pandas
//! and numpy values into those fields and the JSON answers into result objects.
//!
//! Architecture invariant: the GIL is released whenever Rust works (loading, training,
//! explaining, batches); a Python model takes it back for its own `predict_proba` call only.
//! The explainer's lock is only ever taken with the GIL released, so a Python model called
//! under the lock can always get the GIL.
//!
//! Architecture invariant: no panic crosses into Python. Every input (fields, constraints,
//! files, the model's answers) is checked and a failure is a `cent.CentError` carrying the
//! message the CLI prints for the same input.

mod model;

use cent_host::artifacts::{Artifacts, Setup, Source};
use cent_host::batch::{self, Options, Outcome};
use cent_host::blackbox::{BlackBox, ModelKind};
use cent_host::constraints::{self, Labels, Overrides};
use cent_host::data::{self, Encoding, fields};
use cent_host::explain::{ClassOut, Config, Explainer, Explanation};
use cent_host::preview::{self, DeviceExplanation, Preview};
use cent_host::results::Writer;
use cent_host::rows::Input;
use cent_host::validate;
use model::PyModel;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

create_exception!(
    _cent,
    CentError,
    PyValueError,
    "An input cent cannot use (a dataset, schema, data file, row, constraint or model), with the message the CLI prints."
);

/// What the binding calls each list in its messages: the Python arguments.
const LABELS: Labels = Labels {
    immutable: "immutable",
    increase_only: "increase_only",
    decrease_only: "decrease_only",
    free: "free",
    cost: "cost",
    desired: "desired",
};

/// An error as the CLI prints it: the error and its causes, `: `-separated, without a cause
/// its error already shows.
fn message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        cause = c.source();
    }
    text
}

fn cent_error(e: impl std::error::Error + 'static) -> PyErr {
    CentError::new_err(message(&e))
}

/// The loaded dataset and the black box the explainer borrows.
struct Loaded {
    artifacts: Artifacts,
    model: Box<dyn BlackBox>,
}

self_cell::self_cell!(
    /// The loaded artifacts and the explainer over them.
    struct Held {
        owner: Loaded,
        #[covariant]
        dependent: Explainer,
    }
);

/// A dataset, its models and the explainer: built once, then explains people.
#[pyclass(module = "cent._cent", frozen)]
struct Core {
    held: Mutex<Held>,
    /// The schema's target column: accepted in a row and ignored.
    target: Option<String>,
    dataset: String,
    features: Vec<(String, String)>,
    columns: Vec<String>,
    classes: Vec<String>,
    favourable: usize,
}

/// Per-request options of an explanation, as the CLI's recourse flags.
struct Request {
    n: usize,
    min_probability: Option<f32>,
    desired: Option<String>,
    overrides: Overrides,
}

/// [`Request`] as `cent._options` packs it for the native `explain` and `batch`: one tuple,
/// `(n, desired, immutable, increase_only, decrease_only, free, cost, min_probability)`.
#[derive(FromPyObject)]
struct RequestArgs(usize, Option<String>, Vec<String>, Vec<String>, Vec<String>, Vec<String>, Vec<String>, Option<f32>);

impl From<RequestArgs> for Request {
    fn from(args: RequestArgs) -> Self {
        let RequestArgs(n, desired, immutable, increase_only, decrease_only, free, cost, min_probability) = args;
        let overrides = Overrides { immutable, increase_only, decrease_only, free, cost };
        Request { n, min_probability, desired, overrides }
    }
}

impl Request {
    fn check(&self) -> Result<(), String> {
        if self.n == 0 {
            return Err("n 0: must be at least 1".into());
        }
        match self.min_probability {
            Some(p) if !(0.0..=1.0).contains(&p) => Err(format!("min_probability {p}: must be between 0 and 1")),
            _ => Ok(()),
        }
    }
}

fn lock(held: &Mutex<Held>) -> std::sync::MutexGuard<'_, Held> {
    // A panic inside the explainer cannot leave it half-changed: its per-call settings are
    // set again by every call.
    held.lock().unwrap_or_else(PoisonError::into_inner)
}

fn kind_name(schema: &cent_host::profile::Schema, j: usize) -> String {
    match schema.feature(j).map(|f| f.kind) {
        Some(k) => format!("{k:?}").to_lowercase(),
        None => String::new(),
    }
}

impl Core {
    /// The explainer's settings for one request, and the query and desired class.
    fn prepare(
        enc: &Encoding,
        base: Config,
        r: &Request,
    ) -> Result<(Config, cent_host::profile::Query, Option<usize>), PyErr> {
        r.check().map_err(CentError::new_err)?;
        let q = constraints::query(enc, &r.overrides, &LABELS).map_err(cent_error)?;
        let desired =
            r.desired.as_deref().map(|d| constraints::desired(enc, d, &LABELS)).transpose().map_err(cent_error)?;
        let config =
            Config { n: r.n, min_probability: r.min_probability.unwrap_or(Config::default().min_probability), ..base };
        Ok((config, q, desired))
    }
}

/// One person's outcome with the fields `cent explain --format json` gives it, and each
/// counterfactual's full row of values. Serialized from the library's own types, as the CLI
/// does, so every number prints as the CLI prints it.
#[derive(serde::Serialize)]
struct Answer {
    decision: ClassOut,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    already_favourable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<Explanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_found: Option<String>,
    values: Vec<Vec<String>>,
}

/// The JSON of one person's outcome ([`Answer`]); a row that could not be explained is a
/// [`CentError`].
fn outcome_json(enc: &Encoding, outcome: Outcome) -> Result<String, PyErr> {
    let values = |x: &[f32]| -> Vec<String> {
        enc.decode(x)
            .map(|v| v.into_iter().enumerate().map(|(j, v)| enc.format_value(j, v)).collect())
            .unwrap_or_default()
    };
    let answer = match outcome {
        Outcome::Explained { decision, explanation } => {
            let values = explanation.counterfactuals.iter().map(|c| values(&c.encoded)).collect();
            Answer { decision, already_favourable: false, explanation: Some(explanation), not_found: None, values }
        }
        Outcome::Favourable { decision } => {
            Answer { decision, already_favourable: true, explanation: None, not_found: None, values: Vec::new() }
        }
        Outcome::NotFound { decision, reason } => Answer {
            decision,
            already_favourable: false,
            explanation: None,
            not_found: Some(reason),
            values: Vec::new(),
        },
        Outcome::Error(e) => return Err(CentError::new_err(e)),
    };
    serde_json::to_string(&answer).map_err(cent_error)
}

/// Loads the data and models and builds the explainer (GIL released by the caller).
fn load(setup: &Setup, onnx: Option<&Path>, python: Option<PyModel>, config: Config) -> Result<Held, PyErr> {
    let artifacts = setup.load().map_err(cent_error)?;
    let model: Box<dyn BlackBox> = match python {
        Some(m) => Box::new(m),
        None => artifacts.black_box(onnx).map_err(cent_error)?,
    };
    let loaded = Loaded { artifacts, model };
    Held::try_new(loaded, |l| {
        let p = &l.artifacts.prepared;
        Explainer::new(&p.encoding, l.model.as_ref(), &l.artifacts.vae.encoder, &p.train.data, config)
    })
    .map_err(cent_error)
}

/// A built-in dataset, or a schema with its data (a CSV, or the schema's own source).
fn source(dataset: Option<String>, schema: Option<PathBuf>, data: Option<PathBuf>) -> PyResult<Source> {
    match (schema, data) {
        (Some(schema), csv) => Ok(Source::Custom { csv, schema }),
        (None, Some(_)) => Err(CentError::new_err("data needs a schema (schema=path.toml)")),
        (None, None) => Ok(Source::Builtin(dataset.unwrap_or_else(|| "adult".into()))),
    }
}

/// One split's encoded rows (float32 bytes), their count, their class indices, the encoded
/// column names and the target column's name, loading and splitting the data only (no model
/// is trained or read): `cent encode`.
#[pyfunction]
#[pyo3(signature = (dataset, schema, data, split, seed, cache))]
#[allow(clippy::type_complexity)] // reason: the tuple the Python wrapper unpacks
fn encoded_split<'py>(
    py: Python<'py>,
    dataset: Option<String>,
    schema: Option<PathBuf>,
    data: Option<PathBuf>,
    split: &str,
    seed: u64,
    cache: PathBuf,
) -> PyResult<(Bound<'py, PyBytes>, usize, Vec<usize>, Vec<String>, String)> {
    let train = match split {
        "train" => true,
        "test" => false,
        other => return Err(CentError::new_err(format!("unknown split `{other}`; splits: train, test"))),
    };
    let setup = Setup { source: source(dataset, schema, data)?, model: None, cache, seed };
    let (_, p) = py.detach(|| setup.prepare()).map_err(cent_error)?;
    let (rows, labels) = if train { (&p.train.data, &p.train_labels) } else { (&p.test.data, &p.test_labels) };
    let target = match p.table.target_column() {
        "" => "class".to_string(),
        column => column.to_string(),
    };
    Ok((f32_bytes(py, rows), labels.len(), labels.clone(), p.encoding.column_names(), target))
}

/// A first schema for a CSV file of one's own (`cent schema`): its TOML, every choice with
/// its reason as a comment; written to `out` too when given (the data named relative to it).
#[pyfunction]
#[pyo3(signature = (data, target, favourable, header, names, delimiter, missing, name, out))]
#[allow(clippy::too_many_arguments)] // reason: the keyword arguments the Python wrapper passes on
fn draft_schema(
    py: Python<'_>,
    data: PathBuf,
    target: String,
    favourable: Option<String>,
    header: bool,
    names: Option<Vec<String>>,
    delimiter: String,
    missing: Vec<String>,
    name: Option<String>,
    out: Option<PathBuf>,
) -> PyResult<String> {
    let delimiter = match delimiter.as_bytes() {
        [d] if d.is_ascii() => *d,
        _ => return Err(CentError::new_err(format!("delimiter `{delimiter}`: one ASCII character"))),
    };
    let file = data.display().to_string();
    let drafted = py.detach(|| {
        let bytes = std::fs::read(&data).map_err(|e| format!("cannot read {file}: {e}"))?;
        let name = name.unwrap_or_else(|| data.file_stem().map_or("data".into(), |s| s.to_string_lossy().into_owned()));
        let source = data::draft::source_for(&data, out.as_deref());
        let options = data::draft::DraftOptions { name, source, header, names, delimiter, missing, target, favourable };
        let d = data::draft::draft(&bytes, &file, &options).map_err(|e| message(&e))?;
        if let Some(out) = &out {
            std::fs::write(out, &d.toml).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        }
        Ok::<_, String>(d.toml)
    });
    drafted.map_err(CentError::new_err)
}

/// The schema's target column, as the CLI finds it.
fn target_column(source: &Source) -> Option<String> {
    let schema = match source {
        Source::Custom { schema, .. } => data::Schema::from_file(schema).ok()?,
        Source::Builtin(name) => data::builtin_schema(name).ok()?,
    };
    Some(schema.target.column)
}

fn f32_bytes<'py>(py: Python<'py>, values: &[f32]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    PyBytes::new(py, &bytes)
}

#[pymethods]
impl Core {
    /// Loads `dataset` (built-in) or `schema` (with `data`, a CSV, or the schema's own source),
    /// trains or loads the models in `cache`, and builds the explainer with `model` ("mlp",
    /// "lr"), `onnx` (a file) or `python` (an object with `predict_proba`) as the black box.
    #[new]
    #[pyo3(signature = (dataset, schema, data, model, onnx, python, seed, cache, k, max_search, widen, plausibility, single_moves))]
    #[allow(clippy::too_many_arguments)] // reason: the constructor's keyword arguments, one per CLI option
    fn new(
        py: Python<'_>,
        dataset: Option<String>,
        schema: Option<PathBuf>,
        data: Option<PathBuf>,
        model: &str,
        onnx: Option<PathBuf>,
        python: Option<Bound<'_, PyAny>>,
        seed: u64,
        cache: PathBuf,
        k: usize,
        max_search: usize,
        widen: u8,
        plausibility: f32,
        single_moves: bool,
    ) -> PyResult<Core> {
        for (name, value) in [("k", k), ("max_search", max_search)] {
            if value == 0 {
                return Err(CentError::new_err(format!("{name} 0: must be at least 1")));
            }
        }
        if !(0.0..=1.0).contains(&plausibility) {
            return Err(CentError::new_err(format!("plausibility {plausibility}: must be between 0 and 1")));
        }
        let kind = match model {
            "mlp" => ModelKind::Mlp,
            "lr" => ModelKind::Lr,
            other => return Err(CentError::new_err(format!("unknown model `{other}`; built-in models: mlp, lr"))),
        };
        let source = source(dataset, schema, data)?;
        // The caller's own black box replaces the built-in model, which is then neither trained nor read.
        let builtin = (onnx.is_none() && python.is_none()).then_some(kind);
        let setup = Setup { source, model: builtin, cache, seed };
        let target = target_column(&setup.source);
        let config = Config { k, max_search, widen, plausibility, single_moves, seed, ..Config::default() };
        // The model's width is the encoding's, known only once the data is loaded: wrap the
        // object after loading, with the GIL, then build the explainer without it.
        let held = match python {
            None => py.detach(|| load(&setup, onnx.as_deref(), None, config))?,
            Some(object) => {
                let artifacts = py.detach(|| setup.load()).map_err(cent_error)?;
                let enc = &artifacts.prepared.encoding;
                let m = PyModel::new(&object, enc.n_cols(), enc.classes().len()).map_err(CentError::new_err)?;
                let loaded = Loaded { artifacts, model: Box::new(m) };
                py.detach(|| {
                    Held::try_new(loaded, |l| {
                        let p = &l.artifacts.prepared;
                        Explainer::new(&p.encoding, l.model.as_ref(), &l.artifacts.vae.encoder, &p.train.data, config)
                    })
                    .map_err(cent_error)
                })?
            }
        };
        let enc = &held.borrow_owner().artifacts.prepared.encoding;
        let schema = enc.to_core_schema();
        let features =
            enc.attributes().iter().enumerate().map(|(j, a)| (a.name.clone(), kind_name(&schema, j))).collect();
        Ok(Core {
            target,
            dataset: held.borrow_owner().artifacts.name.clone(),
            features,
            columns: enc.column_names(),
            classes: enc.classes().to_vec(),
            favourable: enc.favourable(),
            held: Mutex::new(held),
        })
    }

    /// The dataset's name.
    #[getter]
    fn dataset(&self) -> String {
        self.dataset.clone()
    }

    /// `(name, kind)` of each logical feature, in the schema's order.
    #[getter]
    fn features(&self) -> Vec<(String, String)> {
        self.features.clone()
    }

    /// Names of the encoded columns (`feature` or `feature=category`).
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }

    #[getter]
    fn classes(&self) -> Vec<String> {
        self.classes.clone()
    }

    /// Index of the favourable class.
    #[getter]
    fn favourable(&self) -> usize {
        self.favourable
    }

    /// The schema's target column.
    #[getter]
    fn target(&self) -> Option<String> {
        self.target.clone()
    }

    /// Encodes rows of named raw fields (every value as text): `(bytes of float32, rows)`.
    fn encode<'py>(&self, py: Python<'py>, rows: Vec<Vec<(String, String)>>) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let n = rows.len();
        let out = py.detach(|| {
            let held = lock(&self.held);
            let enc = &held.borrow_owner().artifacts.prepared.encoding;
            let mut out = Vec::with_capacity(n * enc.n_cols());
            for (i, row) in rows.iter().enumerate() {
                let x = self.encode_one(enc, row).map_err(|e| format!("row {i}: {e}"))?;
                out.extend_from_slice(&x);
            }
            Ok::<_, String>(out)
        });
        let out = out.map_err(CentError::new_err)?;
        Ok((f32_bytes(py, &out), n))
    }

    /// The encoded rows of the training (`"train"`) or test (`"test"`) split and their labels:
    /// `(bytes of float32, rows, labels)`.
    fn split<'py>(&self, py: Python<'py>, which: &str) -> PyResult<(Bound<'py, PyBytes>, usize, Vec<usize>)> {
        let (data, labels) = py.detach(|| {
            let held = lock(&self.held);
            let p = &held.borrow_owner().artifacts.prepared;
            match which {
                "train" => Ok((p.train.data.clone(), p.train_labels.clone())),
                "test" => Ok((p.test.data.clone(), p.test_labels.clone())),
                other => Err(CentError::new_err(format!("unknown split `{other}`; splits: train, test"))),
            }
        })?;
        let n = labels.len();
        Ok((f32_bytes(py, &data), n, labels))
    }

    /// Each encoded row (float32 bytes) as its raw values, formatted as the CLI prints them.
    fn decode(&self, py: Python<'_>, encoded: Vec<u8>) -> PyResult<Vec<Vec<String>>> {
        py.detach(|| {
            let held = lock(&self.held);
            let enc = &held.borrow_owner().artifacts.prepared.encoding;
            let values: Vec<f32> =
                encoded.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect();
            if !encoded.len().is_multiple_of(4) || !values.len().is_multiple_of(enc.n_cols().max(1)) {
                return Err(CentError::new_err(format!(
                    "{} bytes are not rows of {} float32 columns",
                    encoded.len(),
                    enc.n_cols()
                )));
            }
            values
                .chunks_exact(enc.n_cols().max(1))
                .map(|x| {
                    let raw = enc.decode(x).map_err(cent_error)?;
                    Ok(raw.into_iter().enumerate().map(|(j, v)| enc.format_value(j, v)).collect())
                })
                .collect()
        })
    }

    /// Explains one person given as named raw fields: the JSON of the outcome (decision, and
    /// `explanation`, `already_favourable` or `not_found`, as `cent explain --format json`).
    fn explain(&self, py: Python<'_>, row: Vec<(String, String)>, request: RequestArgs) -> PyResult<String> {
        let request = Request::from(request);
        py.detach(|| {
            let mut held = lock(&self.held);
            held.with_dependent_mut(|l, explainer| {
                let enc = &l.artifacts.prepared.encoding;
                let (config, q, desired) = Core::prepare(enc, explainer.config, &request)?;
                let x = self.encode_one(enc, &row).map_err(CentError::new_err)?;
                explainer.config = config;
                let outcome = batch::outcome(explainer, l.model.as_ref(), enc, &q, desired, &x);
                outcome_json(enc, outcome)
            })
        })
    }

    /// Explains one person as a device running the bundle at `bundle` does (exported from this
    /// dataset, model and seed): the JSON of [`DeviceAnswer`]. `options` are the device's by name
    /// ([`preview::OPTION_NAMES`]); `seed` seeds the query's random generator.
    #[allow(clippy::too_many_arguments)] // reason: the person, the bundle, the request and the device's settings
    fn explain_on_device(
        &self,
        py: Python<'_>,
        row: Vec<(String, String)>,
        bundle: PathBuf,
        request: RequestArgs,
        options: Vec<(String, f64)>,
        seed: u64,
    ) -> PyResult<String> {
        let request = Request::from(request);
        if request.min_probability.is_some() {
            return Err(CentError::new_err(
                "min_probability sets the workstation's explainer; a device confirms with its lead (options: lead)",
            ));
        }
        if request.n > preview::MAX_ANSWERS {
            return Err(CentError::new_err(format!(
                "n {}: a device gives 1 to {} answers",
                request.n,
                preview::MAX_ANSWERS
            )));
        }
        py.detach(|| {
            let options = preview::options(&options).map_err(cent_error)?;
            let bytes = validate::read_bundle(&bundle).map_err(cent_error)?;
            let held = lock(&self.held);
            let (l, explainer) = (held.borrow_owner(), held.borrow_dependent());
            let enc = &l.artifacts.prepared.encoding;
            let (_, q, desired) = Core::prepare(enc, explainer.config, &request)?;
            let x = self.encode_one(enc, &row).map_err(CentError::new_err)?;
            let model = l.model.as_ref();
            let decision = ClassOut::decision(model, enc.classes(), &x).map_err(cent_error)?;
            let values = |x: &[f32]| -> Vec<String> {
                enc.decode(x)
                    .map(|v| v.into_iter().enumerate().map(|(j, v)| enc.format_value(j, v)).collect())
                    .unwrap_or_default()
            };
            let answer = if desired.is_none() && decision.index == enc.favourable() {
                DeviceAnswer { decision, already_favourable: true, device: None, values: Vec::new() }
            } else {
                let origin = bundle.display().to_string();
                let mut preview = Preview::new(&bytes, &origin, &l.artifacts, explainer.config.seed, explainer, model)
                    .map_err(cent_error)?;
                let d = preview.explain(&x, &q, desired, options, request.n, seed).map_err(cent_error)?;
                let values = d.answers.iter().map(|a| values(&a.encoded)).collect();
                DeviceAnswer { decision, already_favourable: false, device: Some(d), values }
            };
            serde_json::to_string(&answer).map_err(cent_error)
        })
    }

    /// Explains every row of a CSV or Parquet file into `out` (JSON Lines, CSV or Parquet by
    /// its extension), as `cent batch`: the summary as JSON.
    #[allow(clippy::too_many_arguments)] // reason: `Explainer.batch`'s file, threading and row options, and the request
    fn batch(
        &self,
        py: Python<'_>,
        input: PathBuf,
        out: PathBuf,
        threads: usize,
        chunk: usize,
        limit: Option<usize>,
        keep: Vec<String>,
        request: RequestArgs,
    ) -> PyResult<String> {
        if chunk == 0 {
            return Err(CentError::new_err("chunk 0: must be at least 1"));
        }
        let request = Request::from(request);
        py.detach(|| {
            let mut held = lock(&self.held);
            held.with_dependent_mut(|l, explainer| {
                let enc = &l.artifacts.prepared.encoding;
                let (config, q, desired) = Core::prepare(enc, explainer.config, &request)?;
                explainer.config = config;
                let input = Input::open(&input).and_then(|i| i.keeping(&keep)).map_err(cent_error)?;
                let ignored = input.ignored_columns(enc, self.target.as_deref()).map_err(cent_error)?;
                let rows =
                    input.rows(enc, self.target.as_deref()).map_err(cent_error)?.take(limit.unwrap_or(usize::MAX));
                let options = Options { threads, chunk, desired };
                let mut sink = Writer::create(&out, enc, &input.kept_columns()).map_err(cent_error)?;
                let mut summary =
                    batch::run(explainer, l.model.as_ref(), enc, &q, &options, rows, &mut sink).map_err(cent_error)?;
                summary.ignored_columns = ignored;
                sink.finish().map_err(cent_error)?;
                serde_json::to_string(&summary).map_err(cent_error)
            })
        })
    }
}

/// One person's outcome on a device ([`Core::explain_on_device`]): the model's decision, and the
/// device's answers as `cent explain --bundle --format json` gives them, with each answer's full
/// row of values.
#[derive(serde::Serialize)]
struct DeviceAnswer {
    decision: ClassOut,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    already_favourable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<DeviceExplanation>,
    values: Vec<Vec<String>>,
}

impl Core {
    /// One row of named raw fields, checked and encoded as a query file's row is.
    fn encode_one(&self, enc: &Encoding, row: &[(String, String)]) -> Result<Vec<f32>, String> {
        let named = row.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let raw = fields::parse(named, enc, self.target.as_deref()).map_err(|e| message(&e))?;
        enc.encode_row(&raw).map_err(|e| message(&e))
    }
}

/// The native module `cent._cent`.
#[pymodule]
fn _cent(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_function(wrap_pyfunction!(encoded_split, m)?)?;
    m.add_function(wrap_pyfunction!(draft_schema, m)?)?;
    m.add("CentError", m.py().get_type::<CentError>())?;
    Ok(())
}
