//! `cent batch`: recourse for every row of a CSV or Parquet file, in parallel, streamed to JSON
//! Lines, CSV or Parquet (see `cent_host::rows` and `cent_host::results`).

use super::DataArgs;
use super::explain_cmd::{RecourseArgs, build_query, check_counts, class_index, target_column};
use anyhow::{Context, Result};
use cent_host::batch::{self, Options};
use cent_host::explain::Explainer;
use cent_host::results::Writer;
use cent_host::rows::Input;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct BatchArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// CSV (with a header) or Parquet file (`.parquet`, `.pq`) of the people to explain, one
    /// per row: every feature by its schema name, as for `explain --query`, its values read with
    /// the schema's `map` and `other` as the data are; other columns (the schema's target, an
    /// identifier, a column the schema drops) are ignored and named once. Read as a stream: a
    /// file of any size.
    #[arg(long)]
    pub input: PathBuf,
    /// Where the results go, in input order, by the name's extension. JSON Lines (`.jsonl`, or
    /// `-` for stdout): one object per input row with its `line` in the input and either
    /// `explanation`, `already_favourable`, `not_found` (the reason) or `error` (the reason).
    /// CSV (`.csv`) or Parquet (`.parquet`): one row per counterfactual (and one for a row
    /// without any) with `line`, `status`, `reason`, `decision`, `rank`, `class`,
    /// `probability`, `cost`, `l0`, `changes` and a `cf_<feature>` column per feature.
    #[arg(long)]
    pub out: PathBuf,
    /// Worker threads (0: one per core). The output is the same for any number.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Input columns carried into the results, after `line` and by their own names, as text:
    /// an identifier to join them on (`--keep applicant_id`), a column to group them by. A
    /// comma-separated list; a column may also be a feature.
    #[arg(long, value_delimiter = ',')]
    pub keep: Vec<String>,
    /// Explain at most this many rows (the first ones).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Rows explained at once; memory holds one chunk of rows and results.
    #[arg(long, default_value_t = 1024)]
    pub chunk: usize,
    #[command(flatten)]
    pub recourse: RecourseArgs,
}

pub fn run(args: &BatchArgs) -> Result<ExitCode> {
    check_counts(&args.recourse)?;
    if args.chunk == 0 {
        return Err(super::usage("--chunk 0: must be at least 1"));
    }
    // The files are checked before the models load (a first run trains them).
    let input = Input::open(&args.input)?.keeping(&args.keep)?;
    super::out_dir_exists("--out", &args.out)?;
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
    let ignored = input.ignored_columns(enc, target.as_deref())?;
    if !ignored.is_empty() && !args.data.quiet {
        eprintln!("{}: columns that are no feature, ignored: {}", args.input.display(), ignored.join(", "));
    }
    let total = if args.data.quiet { 0 } else { input.count()?.min(args.limit.unwrap_or(usize::MAX)) };
    let rows = input.rows(enc, target.as_deref())?.take(args.limit.unwrap_or(usize::MAX));

    let bar = if args.data.quiet { ProgressBar::hidden() } else { ProgressBar::new(total as u64) };
    bar.set_style(
        ProgressStyle::with_template(
            "explaining [{bar:30}] {pos}/{len} rows ({per_sec}, {elapsed} elapsed, ETA {eta})",
        )
        .context("progress bar template")?,
    );
    let options = Options { threads: args.threads, chunk: args.chunk, desired };
    let mut sink =
        Writer::create(&args.out, enc, &input.kept_columns())?.on_chunk(|done| bar.set_position(done as u64));
    let mut summary = batch::run(&explainer, model.as_ref(), enc, &q, &options, rows, &mut sink)?;
    summary.ignored_columns = ignored;
    sink.finish()?;
    bar.finish_and_clear();
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
