//! Where a batch's results go, and how they are read back: JSON Lines, CSV or Parquet.
//!
//! **JSON Lines** (`.jsonl`, and any other name): one object per input row, in input order, with
//! the row's `line` and either `explanation`, `already_favourable`, `not_found` (the reason) or
//! `error` (the reason).
//!
//! **CSV** (`.csv`) and **Parquet** (`.parquet`, `.pq`): one table row per counterfactual, and one
//! for an input row without any, in input order. Columns: `line`, `status` (`explained`,
//! `already_favourable`, `not_found`, `error`), `reason`, `decision`, `decision_probability`,
//! `rank`, `class`, `probability`, `cost`, `l0`, `realization`, `agreement`, `changes`
//! (`feature: before -> after; ...`), then `cf_<feature>` for every feature: the counterfactual's
//! value (numbers as numbers, categories by name). A field that does not apply is empty (CSV)
//! or null (Parquet).
//!
//! Columns of the input carried along ([`Input::keeping`](crate::rows::Input::keeping): an
//! identifier, say) follow `line`, by their own names and as text: JSON Lines keys, CSV and
//! Parquet columns (null where a row could not be read). A kept column named as one of the
//! results' own is refused ([`ResultsError::KeptName`]).
//!
//! JSON Lines and CSV are written chunk by chunk and flushed: a run stopped at any point leaves
//! whole lines of whole chunks. A Parquet file is valid only once [`Writer::finish`] wrote its
//! footer, so it is written under `<name>.partial` and renamed then; a stopped run leaves no
//! truncated file under the requested name. Memory holds one row group (at most
//! [`PARQUET_ROW_GROUP`] result rows) at a time.

use crate::audit::Recourse;
use crate::batch::{Outcome, Row, Sink};
use crate::data::{Encoding, Value};
use crate::explain::{ClassOut, Counterfactual, Explanation, Realization};
use arrow_array::builder::{Float32Builder, Float64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Result rows per Parquet row group.
pub const PARQUET_ROW_GROUP: usize = 65_536;

/// The columns before the `cf_<feature>` ones, in order.
pub const COLUMNS: [&str; 13] = [
    "line",
    "status",
    "reason",
    "decision",
    "decision_probability",
    "rank",
    "class",
    "probability",
    "cost",
    "l0",
    "realization",
    "agreement",
    "changes",
];

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonLines,
    Csv,
    Parquet,
}

impl Format {
    /// By the file name: `.csv` is CSV, `.parquet` or `.pq` Parquet, anything else JSON Lines.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("csv") => Format::Csv,
            Some("parquet" | "pq") => Format::Parquet,
            _ => Format::JsonLines,
        }
    }
}

/// Why results cannot be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: line {line}: {message}")]
    Malformed { path: PathBuf, line: usize, message: String },
    #[error("Parquet results cannot go to stdout: give --out a file name")]
    ParquetToStdout,
    /// A kept input column has the name of one of the results' own fields or columns.
    #[error("the kept column `{name}` has the name of a results field; rename it in the input")]
    KeptName { name: String },
}

/// The JSON Lines keys besides `line`.
const JSON_KEYS: [&str; 5] = ["decision", "already_favourable", "explanation", "not_found", "error"];

/// The status of an outcome, as the `status` column gives it.
pub fn status(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Explained { .. } => "explained",
        Outcome::Favourable { .. } => "already_favourable",
        Outcome::NotFound { .. } => "not_found",
        Outcome::Error(_) => "error",
    }
}

fn realization(r: Realization) -> &'static str {
    match r {
        Realization::Boundary => "boundary",
        Realization::Between => "between",
        Realization::Exemplar => "exemplar",
        Realization::Nearest => "nearest",
        Realization::SingleMove => "single_move",
    }
}

/// One JSON line.
#[derive(Debug, Serialize)]
struct Line<'a> {
    line: usize,
    #[serde(flatten)]
    kept: Kept<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'a ClassOut>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    already_favourable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<&'a Explanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_found: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// The kept columns' names and one row's values, as JSON keys.
#[derive(Debug)]
struct Kept<'a> {
    names: &'a [String],
    values: &'a [Option<String>],
}

impl Serialize for Kept<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.names.len()))?;
        for (name, value) in self.names.iter().zip(self.values) {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'a> Line<'a> {
    fn of(row: &'a Row, outcome: &'a Outcome, kept: &'a [String]) -> Self {
        let mut l = Line {
            line: row.line,
            kept: Kept { names: kept, values: &row.kept },
            decision: None,
            already_favourable: false,
            explanation: None,
            not_found: None,
            error: None,
        };
        match outcome {
            Outcome::Explained { decision, explanation } => {
                l.decision = Some(decision);
                l.explanation = Some(explanation);
            }
            Outcome::Favourable { decision } => {
                l.decision = Some(decision);
                l.already_favourable = true;
            }
            Outcome::NotFound { decision, reason } => {
                l.decision = Some(decision);
                l.not_found = Some(reason);
            }
            Outcome::Error(e) => l.error = Some(e),
        }
        l
    }
}

/// One table row: an input row and one of its counterfactuals (or none).
struct Flat<'a> {
    line: usize,
    kept: &'a [Option<String>],
    outcome: &'a Outcome,
    cf: Option<&'a Counterfactual>,
}

impl<'a> Flat<'a> {
    /// The table rows of one outcome.
    fn of(row: &'a Row, outcome: &'a Outcome) -> Vec<Flat<'a>> {
        let flat = |cf| Flat { line: row.line, kept: &row.kept, outcome, cf };
        match outcome {
            Outcome::Explained { explanation, .. } if !explanation.counterfactuals.is_empty() => {
                explanation.counterfactuals.iter().map(|cf| flat(Some(cf))).collect()
            }
            _ => vec![flat(None)],
        }
    }

    fn reason(&self) -> Option<&'a str> {
        match self.outcome {
            Outcome::NotFound { reason, .. } => Some(reason),
            Outcome::Error(e) => Some(e),
            _ => None,
        }
    }

    fn decision(&self) -> Option<&'a ClassOut> {
        match self.outcome {
            Outcome::Explained { decision, .. }
            | Outcome::Favourable { decision }
            | Outcome::NotFound { decision, .. } => Some(decision),
            Outcome::Error(_) => None,
        }
    }

    fn changes(&self) -> Option<String> {
        self.cf.map(|cf| {
            cf.changes
                .iter()
                .map(|c| format!("{}: {} -> {}", c.feature, c.before_text(), c.after_text()))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

enum Out {
    Lines(Box<dyn Write>),
    Csv(Box<csv::Writer<Box<dyn Write>>>),
    Parquet { writer: Box<ArrowWriter<BufWriter<File>>>, columns: Box<Columns>, partial: PathBuf },
}

/// Writes a batch's results in input order; a [`Sink`] for [`batch::run`](crate::batch::run).
pub struct Writer<'a> {
    encoding: &'a Encoding,
    /// Names of the input columns carried along.
    kept: Vec<String>,
    /// `-` for stdout.
    path: PathBuf,
    out: Out,
    pending: Vec<u8>,
    /// Called with the rows done after each chunk is written (a progress bar, say).
    on_chunk: Option<Box<dyn FnMut(usize) + 'a>>,
}

impl std::fmt::Debug for Writer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("path", &self.path).finish_non_exhaustive()
    }
}

impl<'a> Writer<'a> {
    /// A writer to `path` (`-`: stdout) in the format its name says ([`Format::of`]), with the
    /// input columns `kept` ([`Input::kept_columns`](crate::rows::Input::kept_columns)) after
    /// `line`.
    ///
    /// # Errors
    /// [`ResultsError`] when a kept column has a results name, the file cannot be created, or
    /// Parquet is asked for stdout.
    pub fn create(path: &Path, encoding: &'a Encoding, kept: &[String]) -> Result<Writer<'a>, ResultsError> {
        let ours =
            COLUMNS.iter().chain(&JSON_KEYS).map(|c| c.to_string()).chain(cf_names(encoding)).collect::<Vec<_>>();
        if let Some(name) = kept.iter().find(|k| ours.contains(k)) {
            return Err(ResultsError::KeptName { name: name.clone() });
        }
        let kept = kept.to_vec();
        let io = |source| ResultsError::Io { path: path.to_path_buf(), source };
        let stdout = path == Path::new("-");
        let sink = |p: &Path| -> Result<Box<dyn Write>, ResultsError> {
            if stdout { Ok(Box::new(io::stdout().lock())) } else { Ok(Box::new(File::create(p).map_err(io)?)) }
        };
        let out = match Format::of(path) {
            Format::JsonLines => Out::Lines(sink(path)?),
            Format::Csv => {
                let mut w = csv::Writer::from_writer(sink(path)?);
                let header = std::iter::once("line".to_string())
                    .chain(kept.iter().cloned())
                    .chain(COLUMNS[1..].iter().map(|c| c.to_string()))
                    .chain(cf_names(encoding));
                w.write_record(header).map_err(|e| io(e.into()))?;
                Out::Csv(Box::new(w))
            }
            Format::Parquet => {
                if stdout {
                    return Err(ResultsError::ParquetToStdout);
                }
                let mut name = path.as_os_str().to_owned();
                name.push(".partial");
                let partial = PathBuf::from(name);
                let file = File::create(&partial).map_err(io)?;
                let columns = Box::new(Columns::new(encoding, &kept));
                let props = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .set_max_row_group_row_count(Some(PARQUET_ROW_GROUP))
                    .build();
                let writer = ArrowWriter::try_new(BufWriter::new(file), columns.schema.clone(), Some(props))
                    .map_err(|e| ResultsError::Parquet { path: path.to_path_buf(), message: e.to_string() })?;
                Out::Parquet { writer: Box::new(writer), columns, partial }
            }
        };
        Ok(Writer { encoding, kept, path: path.to_path_buf(), out, pending: Vec::new(), on_chunk: None })
    }

    /// Calls `f` with the number of rows done after each chunk is written.
    pub fn on_chunk(mut self, f: impl FnMut(usize) + 'a) -> Self {
        self.on_chunk = Some(Box::new(f));
        self
    }

    /// Flushes what is left and, for Parquet, writes the footer and moves the file to its name.
    ///
    /// # Errors
    /// [`ResultsError`] when writing fails.
    pub fn finish(self) -> Result<(), ResultsError> {
        let io = |source| ResultsError::Io { path: self.path.clone(), source };
        match self.out {
            Out::Lines(mut w) => w.flush().map_err(io),
            Out::Csv(mut w) => w.flush().map_err(io),
            Out::Parquet { writer, partial, .. } => {
                writer
                    .close()
                    .map_err(|e| ResultsError::Parquet { path: self.path.clone(), message: e.to_string() })?;
                std::fs::rename(&partial, &self.path).map_err(io)
            }
        }
    }
}

impl Sink for Writer<'_> {
    fn row(&mut self, row: &Row, outcome: &Outcome) -> io::Result<()> {
        match &mut self.out {
            Out::Lines(_) => {
                serde_json::to_writer(&mut self.pending, &Line::of(row, outcome, &self.kept))?;
                self.pending.push(b'\n');
            }
            Out::Csv(w) => {
                for flat in Flat::of(row, outcome) {
                    w.write_record(csv_record(&flat, self.encoding))?;
                }
            }
            Out::Parquet { columns, .. } => {
                for flat in Flat::of(row, outcome) {
                    columns.push(&flat, self.encoding);
                }
            }
        }
        Ok(())
    }

    fn chunk_done(&mut self, done: usize) -> io::Result<()> {
        match &mut self.out {
            Out::Lines(w) => {
                w.write_all(&self.pending)?;
                w.flush()?;
                self.pending.clear();
            }
            Out::Csv(w) => w.flush()?,
            Out::Parquet { writer, columns, .. } => {
                let batch = columns.finish().map_err(io::Error::other)?;
                writer.write(&batch).map_err(io::Error::other)?;
            }
        }
        if let Some(f) = &mut self.on_chunk {
            f(done);
        }
        Ok(())
    }
}

fn cf_names(encoding: &Encoding) -> impl Iterator<Item = String> + '_ {
    encoding.attributes().iter().map(|a| format!("cf_{}", a.name))
}

/// The counterfactual's raw values (none when it cannot be decoded, which a verified
/// counterfactual always can).
fn cf_values(cf: &Counterfactual, encoding: &Encoding) -> Option<Vec<Value>> {
    encoding.decode(&cf.encoded).ok()
}

fn csv_record(flat: &Flat<'_>, encoding: &Encoding) -> Vec<String> {
    let opt = |v: Option<String>| v.unwrap_or_default();
    let decision = flat.decision();
    let cf = flat.cf;
    let mut record = vec![flat.line.to_string()];
    record.extend(flat.kept.iter().map(|k| opt(k.clone())));
    record.extend([
        status(flat.outcome).to_string(),
        opt(flat.reason().map(str::to_string)),
        opt(decision.map(|d| d.name.clone())),
        opt(decision.map(|d| d.probability.to_string())),
        opt(cf.map(|c| c.rank.to_string())),
        opt(cf.map(|c| c.class.name.clone())),
        opt(cf.map(|c| c.class.probability.to_string())),
        opt(cf.map(|c| c.cost.to_string())),
        opt(cf.map(|c| c.l0.to_string())),
        opt(cf.map(|c| realization(c.realization).to_string())),
        opt(cf.and_then(|c| c.agreement).map(|a| a.to_string())),
        opt(flat.changes()),
    ]);
    let values = cf.and_then(|c| cf_values(c, encoding));
    for j in 0..encoding.n_features() {
        record.push(opt(values.as_ref().and_then(|v| v.get(j)).map(|&v| encoding.format_value(j, v))));
    }
    record
}

/// Arrow column builders for one chunk of table rows.
struct Columns {
    schema: Arc<ArrowSchema>,
    line: UInt64Builder,
    /// One per kept input column.
    kept: Vec<StringBuilder>,
    text: [StringBuilder; 6],
    decision_probability: Float32Builder,
    rank: UInt32Builder,
    probability: Float32Builder,
    cost: Float64Builder,
    l0: UInt32Builder,
    agreement: Float32Builder,
    /// One per feature: numbers or category names.
    features: Vec<FeatureColumn>,
}

enum FeatureColumn {
    Number(Float64Builder),
    Category(StringBuilder),
}

/// Indices of the text columns in [`Columns::text`].
const STATUS: usize = 0;
const REASON: usize = 1;
const DECISION: usize = 2;
const CLASS: usize = 3;
const REALIZATION: usize = 4;
const CHANGES: usize = 5;

impl Columns {
    fn new(encoding: &Encoding, kept: &[String]) -> Columns {
        let mut fields = vec![Field::new("line", DataType::UInt64, false)];
        fields.extend(kept.iter().map(|k| Field::new(k, DataType::Utf8, true)));
        fields.extend([
            Field::new("status", DataType::Utf8, false),
            Field::new("reason", DataType::Utf8, true),
            Field::new("decision", DataType::Utf8, true),
            Field::new("decision_probability", DataType::Float32, true),
            Field::new("rank", DataType::UInt32, true),
            Field::new("class", DataType::Utf8, true),
            Field::new("probability", DataType::Float32, true),
            Field::new("cost", DataType::Float64, true),
            Field::new("l0", DataType::UInt32, true),
            Field::new("realization", DataType::Utf8, true),
            Field::new("agreement", DataType::Float32, true),
            Field::new("changes", DataType::Utf8, true),
        ]);
        let mut features = Vec::new();
        for (a, name) in encoding.attributes().iter().zip(cf_names(encoding)) {
            if a.categories.is_empty() {
                fields.push(Field::new(name, DataType::Float64, true));
                features.push(FeatureColumn::Number(Float64Builder::new()));
            } else {
                fields.push(Field::new(name, DataType::Utf8, true));
                features.push(FeatureColumn::Category(StringBuilder::new()));
            }
        }
        Columns {
            schema: Arc::new(ArrowSchema::new(fields)),
            line: UInt64Builder::new(),
            kept: kept.iter().map(|_| StringBuilder::new()).collect(),
            text: std::array::from_fn(|_| StringBuilder::new()),
            decision_probability: Float32Builder::new(),
            rank: UInt32Builder::new(),
            probability: Float32Builder::new(),
            cost: Float64Builder::new(),
            l0: UInt32Builder::new(),
            agreement: Float32Builder::new(),
            features,
        }
    }

    fn push(&mut self, flat: &Flat<'_>, encoding: &Encoding) {
        let decision = flat.decision();
        let cf = flat.cf;
        let small = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.line.append_value(flat.line as u64);
        for (b, k) in self.kept.iter_mut().zip(flat.kept) {
            b.append_option(k.as_deref());
        }
        self.text[STATUS].append_value(status(flat.outcome));
        self.text[REASON].append_option(flat.reason());
        self.text[DECISION].append_option(decision.map(|d| d.name.as_str()));
        self.decision_probability.append_option(decision.map(|d| d.probability));
        self.rank.append_option(cf.map(|c| small(c.rank)));
        self.text[CLASS].append_option(cf.map(|c| c.class.name.as_str()));
        self.probability.append_option(cf.map(|c| c.class.probability));
        self.cost.append_option(cf.map(|c| c.cost));
        self.l0.append_option(cf.map(|c| small(c.l0)));
        self.text[REALIZATION].append_option(cf.map(|c| realization(c.realization)));
        self.agreement.append_option(cf.and_then(|c| c.agreement));
        self.text[CHANGES].append_option(flat.changes());
        let values = cf.and_then(|c| cf_values(c, encoding));
        for (j, column) in self.features.iter_mut().enumerate() {
            let value = values.as_ref().and_then(|v| v.get(j)).copied();
            match column {
                // The number as cent shows it (an integer feature as an integer, a continuous
                // one to the digits its data has), not the f32 it was computed in.
                FeatureColumn::Number(b) => b.append_option(match value {
                    Some(v @ Value::Number(x)) => Some(encoding.format_value(j, v).parse().unwrap_or(x)),
                    _ => None,
                }),
                FeatureColumn::Category(b) => b.append_option(value.map(|v| encoding.format_value(j, v))),
            }
        }
    }

    /// The rows pushed since the last call, as a record batch.
    fn finish(&mut self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let [status, reason, decision, class, realization, changes] = &mut self.text;
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(self.line.finish())];
        arrays.extend(self.kept.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
        arrays.extend([
            Arc::new(status.finish()) as ArrayRef,
            Arc::new(reason.finish()),
            Arc::new(decision.finish()),
            Arc::new(self.decision_probability.finish()),
            Arc::new(self.rank.finish()),
            Arc::new(class.finish()),
            Arc::new(self.probability.finish()),
            Arc::new(self.cost.finish()),
            Arc::new(self.l0.finish()),
            Arc::new(realization.finish()),
            Arc::new(self.agreement.finish()),
            Arc::new(changes.finish()),
        ]);
        for column in &mut self.features {
            arrays.push(match column {
                FeatureColumn::Number(b) => Arc::new(b.finish()),
                FeatureColumn::Category(b) => Arc::new(b.finish()),
            });
        }
        RecordBatch::try_new(self.schema.clone(), arrays)
    }
}

/// One input row of a results file, as an audit needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The row's place in the input ([`Row::line`]).
    pub line: usize,
    /// The row could not be read or explained.
    pub error: bool,
    /// The model gave the favourable class.
    pub favourable: bool,
    /// The best-ranked counterfactual, when there is one.
    pub best: Option<Recourse>,
}

/// Reads back, in file order, one [`Summary`] per input row from results in any [`Format`].
///
/// # Errors
/// [`ResultsError`] naming the file and line of the first malformed entry.
pub fn read_summaries(path: &Path) -> Result<Vec<Summary>, ResultsError> {
    let io = |source| ResultsError::Io { path: path.to_path_buf(), source };
    let bad = |line: usize, message: String| ResultsError::Malformed { path: path.to_path_buf(), line, message };
    let mut out: Vec<Summary> = Vec::new();
    // Table formats: a row per counterfactual; the rows of one input line are adjacent.
    let mut add = |line: usize, status: &str, rank: Option<u64>, best: Option<Recourse>, at: usize| {
        let summary = Summary {
            line,
            error: status == "error",
            favourable: status == "already_favourable",
            best: if rank == Some(1) { best } else { None },
        };
        match out.last_mut() {
            Some(last) if last.line == line => {
                if summary.best.is_some() {
                    last.best = summary.best;
                }
                Ok(())
            }
            _ if !["explained", "already_favourable", "not_found", "error"].contains(&status) => {
                Err(bad(at, format!("unknown status `{status}`")))
            }
            _ => {
                out.push(summary);
                Ok(())
            }
        }
    };
    match Format::of(path) {
        Format::JsonLines => {
            let file = File::open(path).map_err(io)?;
            for (i, text) in BufReader::new(file).lines().enumerate() {
                let text = text.map_err(io)?;
                if text.trim().is_empty() {
                    continue;
                }
                let v: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| bad(i + 1, format!("not JSON: {e}")))?;
                let line = v["line"].as_u64().ok_or_else(|| bad(i + 1, "no `line` field".into()))? as usize;
                let best = &v["explanation"]["counterfactuals"][0];
                out.push(Summary {
                    line,
                    error: v.get("error").is_some(),
                    favourable: v["already_favourable"] == true,
                    best: best.is_object().then(|| Recourse {
                        cost: best["cost"].as_f64().unwrap_or(f64::NAN),
                        l0: best["l0"].as_u64().unwrap_or(0) as usize,
                        probability: best["class"]["probability"].as_f64().unwrap_or(f64::NAN) as f32,
                    }),
                });
            }
        }
        Format::Csv => {
            let mut reader = csv::Reader::from_reader(BufReader::new(File::open(path).map_err(io)?));
            let header = reader.headers().map_err(|e| bad(1, e.to_string()))?.clone();
            let col =
                |name: &str| header.iter().position(|h| h == name).ok_or_else(|| bad(1, format!("no column `{name}`")));
            let (c_line, c_status, c_rank) = (col("line")?, col("status")?, col("rank")?);
            let (c_cost, c_l0, c_p) = (col("cost")?, col("l0")?, col("probability")?);
            for (i, record) in reader.records().enumerate() {
                let at = i + 2;
                let r = record.map_err(|e| bad(at, e.to_string()))?;
                let field = |c: usize| r.get(c).unwrap_or("");
                let number =
                    |c: usize| field(c).parse::<f64>().map_err(|_| bad(at, format!("`{}` is not a number", field(c))));
                let line = number(c_line)? as usize;
                let rank = if field(c_rank).is_empty() { None } else { Some(number(c_rank)? as u64) };
                let best = match rank {
                    Some(_) => Some(Recourse {
                        cost: number(c_cost)?,
                        l0: number(c_l0)? as usize,
                        probability: number(c_p)? as f32,
                    }),
                    None => None,
                };
                add(line, field(c_status), rank, best, at)?;
            }
        }
        Format::Parquet => {
            let parquet =
                |e: &dyn std::fmt::Display| ResultsError::Parquet { path: path.to_path_buf(), message: e.to_string() };
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).map_err(io)?)
                .map_err(|e| parquet(&e))?
                .build()
                .map_err(|e| parquet(&e))?;
            let mut at = 0;
            for batch in reader {
                let batch = batch.map_err(|e| parquet(&e))?;
                let column =
                    |name: &str| batch.column_by_name(name).ok_or_else(|| parquet(&format!("no column `{name}`")));
                let line =
                    column("line")?.as_primitive_opt::<UInt64Type>().ok_or_else(|| parquet(&"`line` is not UInt64"))?;
                let status =
                    column("status")?.as_string_opt::<i32>().ok_or_else(|| parquet(&"`status` is not text"))?;
                let rank =
                    column("rank")?.as_primitive_opt::<UInt32Type>().ok_or_else(|| parquet(&"`rank` is not UInt32"))?;
                let cost = column("cost")?
                    .as_primitive_opt::<Float64Type>()
                    .ok_or_else(|| parquet(&"`cost` is not Float64"))?;
                let l0 =
                    column("l0")?.as_primitive_opt::<UInt32Type>().ok_or_else(|| parquet(&"`l0` is not UInt32"))?;
                let p = column("probability")?
                    .as_primitive_opt::<Float32Type>()
                    .ok_or_else(|| parquet(&"`probability` is not Float32"))?;
                for r in 0..batch.num_rows() {
                    at += 1;
                    let rank_r = rank.is_valid(r).then(|| u64::from(rank.value(r)));
                    let best = rank_r.map(|_| Recourse {
                        cost: cost.value(r),
                        l0: l0.value(r) as usize,
                        probability: p.value(r),
                    });
                    add(line.value(r) as usize, status.value(r), rank_r, best, at)?;
                }
            }
        }
    }
    Ok(out)
}
