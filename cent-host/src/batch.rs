//! Recourse for many rows at once.
//!
//! [`run`] takes rows from an iterator in chunks, explains each chunk in parallel on a thread
//! pool of its own, and hands every row's [`Outcome`] to a [`Sink`] in input order, then tells
//! it the chunk is done (the moment to flush: a run stopped at any point leaves whole chunks).
//! Memory holds one chunk of rows and results, whatever the input's size; each row's
//! explanation depends only on the row and the explainer's seed, so the output is the same for
//! any number of threads. A row that cannot be read or explained gets an [`Outcome::Error`]
//! with its reason; the others go on.
//!
//! ```no_run
//! # fn demo(explainer: &cent_host::explain::Explainer<'_>, model: &dyn cent_host::blackbox::BlackBox,
//! #         encoding: &cent_host::data::Encoding, rows: Vec<Vec<f32>>) -> Result<(), cent_host::batch::BatchError> {
//! use cent_host::batch::{run, Options, Outcome, Row, Sink};
//! struct Count(usize);
//! impl Sink for Count {
//!     fn row(&mut self, _: &Row, outcome: &Outcome) -> std::io::Result<()> {
//!         self.0 += usize::from(matches!(outcome, Outcome::Explained { .. }));
//!         Ok(())
//!     }
//! }
//! let query = encoding.to_core_schema().default_query();
//! let rows = rows.into_iter().enumerate().map(|(i, x)| Row::new(i + 2, Ok(x)));
//! let options = Options { threads: 2, chunk: 256, desired: None };
//! let summary = run(explainer, model, encoding, &query, &options, rows, &mut Count(0))?;
//! println!("{} rows, {} explained", summary.rows, summary.explained);
//! # Ok(()) }
//! ```

use crate::blackbox::BlackBox;
use crate::data::Encoding;
use crate::explain::{ClassOut, ExplainError, Explainer, Explanation};
use crate::profile::Query;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// One input row: the line of the input it came from, and its encoded values or why there are
/// none (a value out of range, an unknown category, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub line: usize,
    pub x: Result<Vec<f32>, String>,
    /// The values of the input's kept columns ([`Input::keeping`](crate::rows::Input::keeping)),
    /// as text; `None` where the row could not be read.
    pub kept: Vec<Option<String>>,
}

impl Row {
    /// A row at `line` with no kept columns.
    pub fn new(line: usize, x: Result<Vec<f32>, String>) -> Row {
        Row { line, x, kept: Vec::new() }
    }
}

/// What became of one row.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Counterfactuals were found.
    Explained { decision: ClassOut, explanation: Explanation },
    /// The model already gives the favourable class and no other class was asked for.
    Favourable { decision: ClassOut },
    /// No counterfactual under the constraints; `reason` says why.
    NotFound { decision: ClassOut, reason: String },
    /// The row could not be read or explained.
    Error(String),
}

/// How a batch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Worker threads; 0 means one per available core.
    pub threads: usize,
    /// Rows explained at once (at least 1): memory holds one chunk of rows and results.
    pub chunk: usize,
    /// The class every counterfactual must reach; `None`: any class but the row's, and rows
    /// the model already gives the favourable class are not explained.
    pub desired: Option<usize>,
}

/// The counts of a finished batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub rows: usize,
    pub explained: usize,
    pub favourable: usize,
    pub not_found: usize,
    pub errors: usize,
    /// Rows without a counterfactual, by reason.
    pub not_found_reasons: BTreeMap<String, usize>,
    /// Worker threads used.
    pub threads: usize,
    /// Wall time of the whole run.
    pub seconds: f64,
    /// The input's columns that are no feature, which it ignored
    /// ([`Input::ignored_columns`](crate::rows::Input::ignored_columns); set by the caller that
    /// opened the input).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_columns: Vec<String>,
}

impl Summary {
    pub fn rows_per_second(&self) -> f64 {
        if self.seconds > 0.0 { self.rows as f64 / self.seconds } else { 0.0 }
    }

    fn count(&mut self, outcome: &Outcome) {
        self.rows += 1;
        match outcome {
            Outcome::Explained { .. } => self.explained += 1,
            Outcome::Favourable { .. } => self.favourable += 1,
            Outcome::NotFound { reason, .. } => {
                self.not_found += 1;
                *self.not_found_reasons.entry(reason.clone()).or_default() += 1;
            }
            Outcome::Error(_) => self.errors += 1,
        }
    }
}

/// Where a batch's results go, in input order.
pub trait Sink {
    /// One row and its outcome.
    ///
    /// # Errors
    /// Any I/O error stops the batch ([`BatchError::Sink`]).
    fn row(&mut self, row: &Row, outcome: &Outcome) -> std::io::Result<()>;

    /// Every row up to `done` (a count) has been handed over: flush, report progress.
    ///
    /// # Errors
    /// Any I/O error stops the batch ([`BatchError::Sink`]).
    fn chunk_done(&mut self, done: usize) -> std::io::Result<()> {
        let _ = done;
        Ok(())
    }
}

/// Why a batch stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    #[error("cannot start {threads} worker threads: {error}")]
    Threads { threads: usize, error: String },
    #[error("cannot write the result of input line {line}: {error}")]
    Sink {
        line: usize,
        #[source]
        error: std::io::Error,
    },
}

/// Explains every row of `rows` under `query` and hands each row with its outcome to `sink`, in
/// input order, with [`Sink::chunk_done`] after each chunk.
///
/// # Errors
/// [`BatchError::Threads`] when the pool cannot start, [`BatchError::Sink`] when `sink` fails
/// (the rows before it were delivered). A row's own failure is its [`Outcome::Error`].
pub fn run(
    explainer: &Explainer<'_>,
    model: &dyn BlackBox,
    encoding: &Encoding,
    query: &Query,
    options: &Options,
    rows: impl Iterator<Item = Row>,
    sink: &mut dyn Sink,
) -> Result<Summary, BatchError> {
    let start = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .map_err(|e| BatchError::Threads { threads: options.threads, error: e.to_string() })?;
    let mut summary = Summary { threads: pool.current_num_threads(), ..Summary::default() };
    let mut rows = rows.peekable();
    let chunk = options.chunk.max(1);
    while rows.peek().is_some() {
        let batch: Vec<Row> = rows.by_ref().take(chunk).collect();
        let outcomes: Vec<Outcome> =
            pool.install(|| batch.par_iter().map(|row| one(explainer, model, encoding, query, options, row)).collect());
        for (row, outcome) in batch.iter().zip(&outcomes) {
            summary.count(outcome);
            sink.row(row, outcome).map_err(|error| BatchError::Sink { line: row.line, error })?;
        }
        let last = batch.last().map_or(0, |r| r.line);
        sink.chunk_done(summary.rows).map_err(|error| BatchError::Sink { line: last, error })?;
    }
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// One row's outcome.
fn one(
    explainer: &Explainer<'_>,
    model: &dyn BlackBox,
    encoding: &Encoding,
    query: &Query,
    options: &Options,
    row: &Row,
) -> Outcome {
    match &row.x {
        Ok(x) => outcome(explainer, model, encoding, query, options.desired, x),
        Err(e) => Outcome::Error(e.clone()),
    }
}

/// What becomes of the encoded row `x`, as [`run`] decides it for each row: the model's
/// decision, then (unless it is already the favourable class and `desired` is `None`) the
/// explanation or why there is none. Bindings explain one person through this function.
pub fn outcome(
    explainer: &Explainer<'_>,
    model: &dyn BlackBox,
    encoding: &Encoding,
    query: &Query,
    desired: Option<usize>,
    x: &[f32],
) -> Outcome {
    let decision = match ClassOut::decision(model, encoding.classes(), x) {
        Ok(decision) => decision,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    if desired.is_none() && decision.index == encoding.favourable() {
        return Outcome::Favourable { decision };
    }
    match explainer.explain(x, query, desired) {
        Ok(explanation) => Outcome::Explained { decision, explanation },
        Err(e @ ExplainError::NotFound(_)) => Outcome::NotFound { decision, reason: e.to_string() },
        Err(e) => Outcome::Error(e.to_string()),
    }
}
