//! `cent batch`: recourse for every row of a CSV file, in parallel, streamed to JSON Lines.

use super::explain_cmd::{RecourseArgs, build_query, check_counts, class_index, target_column};
use super::{DataArgs, query};
use anyhow::{Context, Result};
use cent_host::batch::{self, Options, Outcome, Row, Sink};
use cent_host::explain::{ClassOut, Explainer, Explanation};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct BatchArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// CSV file (with a header) of the people to explain, one per row: every feature by its
    /// schema name, as for `explain --query`; the schema's target column is ignored. Read as a
    /// stream: a file of any size.
    #[arg(long)]
    pub input: PathBuf,
    /// Where the results go: a JSON Lines file, one object per input row, in input order (`-`
    /// for stdout). Each object has the row's `line` in the input and either `explanation`,
    /// `already_favourable`, `not_found` (the reason) or `error` (the reason).
    #[arg(long)]
    pub out: PathBuf,
    /// Worker threads (0: one per core). The output is the same for any number.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Explain at most this many rows (the first ones).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Rows explained at once; memory holds one chunk of rows and results.
    #[arg(long, default_value_t = 1024)]
    pub chunk: usize,
    #[command(flatten)]
    pub recourse: RecourseArgs,
}

/// One line of the output.
#[derive(Debug, Serialize)]
struct Line<'a> {
    line: usize,
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

impl<'a> Line<'a> {
    fn of(row: &Row, outcome: &'a Outcome) -> Self {
        let mut l = Line {
            line: row.line,
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

pub fn run(args: &BatchArgs) -> Result<ExitCode> {
    check_counts(&args.recourse)?;
    if args.chunk == 0 {
        return Err(super::usage("--chunk 0: must be at least 1"));
    }
    let a = args.data.setup().load()?;
    let enc = &a.prepared.encoding;
    let q = build_query(&args.recourse, &a)?;
    let desired = args.recourse.desired.as_deref().map(|d| class_index(enc, d)).transpose()?;
    let model = a.black_box(args.data.onnx.as_deref())?;
    let explainer = Explainer::new(
        enc,
        model.as_ref(),
        &a.vae.encoder,
        &a.prepared.train.data,
        args.recourse.config(args.data.seed),
    )?;
    let target = target_column(&args.data);
    let rows = read_rows(&args.input, enc, target.as_deref())?;
    let total = count_lines(&args.input)?.min(args.limit.unwrap_or(usize::MAX));
    let rows = rows.take(args.limit.unwrap_or(usize::MAX));

    let out: Box<dyn Write> = if args.out == Path::new("-") {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(File::create(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?)
    };
    let bar = if args.data.quiet { ProgressBar::hidden() } else { ProgressBar::new(total as u64) };
    bar.set_style(
        ProgressStyle::with_template(
            "explaining [{bar:30}] {pos}/{len} rows ({per_sec}, {elapsed} elapsed, ETA {eta})",
        )
        .context("progress bar template")?,
    );
    let options = Options { threads: args.threads, chunk: args.chunk, desired };
    let mut sink = JsonLines { out, pending: Vec::new(), bar: &bar };
    let summary = batch::run(&explainer, model.as_ref(), enc, &q, &options, rows, &mut sink)?;
    bar.finish_and_clear();
    drop(sink);
    if !args.data.quiet {
        eprintln!(
            "{} rows in {:.1} s ({:.0} rows/s, {} threads): {} explained, {} already favourable, {} not found, {} errors",
            summary.rows,
            summary.seconds,
            summary.rows_per_second(),
            summary.threads,
            summary.explained,
            summary.favourable,
            summary.not_found,
            summary.errors
        );
        for (reason, n) in &summary.not_found_reasons {
            eprintln!("  not found ({n}): {reason}");
        }
    }
    Ok(if summary.errors > 0 {
        ExitCode::FAILURE
    } else if summary.not_found > 0 {
        ExitCode::from(super::EXIT_NOT_FOUND)
    } else {
        ExitCode::SUCCESS
    })
}

/// The output: a chunk's lines are gathered and written at once, then flushed, so a run
/// stopped at any point leaves whole lines of whole chunks.
struct JsonLines<'a> {
    out: Box<dyn Write + 'a>,
    pending: Vec<u8>,
    bar: &'a ProgressBar,
}

impl Sink for JsonLines<'_> {
    fn row(&mut self, row: &Row, outcome: &Outcome) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.pending, &Line::of(row, outcome))?;
        self.pending.push(b'\n');
        Ok(())
    }

    fn chunk_done(&mut self, done: usize) -> std::io::Result<()> {
        self.out.write_all(&self.pending)?;
        self.out.flush()?;
        self.pending.clear();
        self.bar.set_position(done as u64);
        Ok(())
    }
}

/// Data lines of a CSV file (its lines but the header), for the progress bar's length.
fn count_lines(path: &Path) -> Result<usize> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut n = 0usize;
    for line in BufReader::new(file).split(b'\n') {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        n += usize::from(!line.iter().all(u8::is_ascii_whitespace));
    }
    Ok(n.saturating_sub(1))
}

/// The rows of `path`, read one record at a time; a row that cannot be parsed or encoded
/// carries its reason, naming the file and line.
fn read_rows<'a>(
    path: &'a Path,
    enc: &'a cent_host::data::Encoding,
    target: Option<&'a str>,
) -> Result<impl Iterator<Item = Row> + 'a> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).flexible(true).from_reader(BufReader::new(file));
    let headers: Vec<String> = reader
        .headers()
        .with_context(|| format!("{}: cannot read the CSV header", path.display()))?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_string())
        .collect();
    if headers.iter().all(String::is_empty) {
        anyhow::bail!("{}: line 1: expected a header of feature names", path.display());
    }
    let place = move |line: usize, e: &dyn std::fmt::Display| format!("{}: line {line}: {e}", path.display());
    Ok(reader.into_records().enumerate().map(move |(i, record)| {
        let fallback = i + 2;
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(fallback, |p| p.line() as usize);
                return Row { line, x: Err(place(line, &format!("malformed CSV: {e}"))) };
            }
        };
        let line = record.position().map_or(fallback, |p| p.line() as usize);
        if record.len() != headers.len() {
            let e = format!("expected {} fields, found {}", headers.len(), record.len());
            return Row { line, x: Err(place(line, &e)) };
        }
        let fields: Vec<(String, String)> = headers.iter().cloned().zip(record.iter().map(str::to_string)).collect();
        let x = query::parse_row(&fields, enc, target)
            .and_then(|values| Ok(enc.encode_row(&values)?))
            .map_err(|e| place(line, &format!("{e:#}")));
        Row { line, x }
    }))
}
