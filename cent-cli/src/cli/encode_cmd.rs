//! `cent encode`: rows as the models see them: a split's, for training one's own model, or a
//! file's people, for that model to score.

use super::explain_cmd::SplitArg;
use anyhow::{Context, Result};
use cent_host::artifacts::{Setup, Source};
use cent_host::data::Prepared;
use cent_host::encoded::{Id, Writer};
use cent_host::rows::Input;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// Built-in dataset: adult and adult-wide (embedded), compas, credit, heloc (after `cent fetch`).
    #[arg(long, default_value = "adult", conflicts_with_all = ["data", "schema"])]
    dataset: String,
    /// Your own CSV file (with --schema); overrides the schema's `[[source]] file`.
    #[arg(long, requires = "schema")]
    data: Option<PathBuf>,
    /// Your own dataset's TOML schema (see README, "Schema files").
    #[arg(long)]
    schema: Option<PathBuf>,
    /// Which split to write: the rows a model trains on, or the held-out ones.
    #[arg(long, value_enum, default_value_t = SplitArg::Train)]
    split: SplitArg,
    /// People to encode instead of a split: a CSV or Parquet file as `cent batch` reads it
    /// (raw values, a column per feature; other columns are ignored). Each row is written with
    /// its `line` (CSV: its line, the header being line 1; Parquet: its row, from 1) first; a
    /// row that cannot be encoded is named on stderr and left out (exit code 1).
    #[arg(long, conflicts_with = "split")]
    input: Option<PathBuf>,
    /// Output file: .csv or .parquet (.pq); `-` writes CSV to stdout.
    #[arg(long)]
    out: PathBuf,
    /// Cache of fetched datasets.
    #[arg(long, default_value = "data/cache", env = "CENT_CACHE")]
    cache: PathBuf,
    /// Seed of the train/test split (the same as the other commands').
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// `cent encode`.
pub fn run(args: &EncodeArgs) -> Result<ExitCode> {
    // A name cent cannot write, a directory that is not there or an input that cannot be
    // opened fails before the data is read.
    cent_host::encoded::format(&args.out).map_err(|e| super::usage(e.to_string()))?;
    super::out_dir_exists("--out", &args.out)?;
    let input = args.input.as_deref().map(Input::open).transpose()?;
    let source = match &args.schema {
        Some(schema) => Source::Custom { csv: args.data.clone(), schema: schema.clone() },
        None => Source::Builtin(args.dataset.clone()),
    };
    let setup = Setup { source, model: None, cache: args.cache.clone(), seed: args.seed };
    let (name, p) = setup.prepare()?;
    let target = match p.table.target_column() {
        "" => "class",
        column => column,
    };
    match input {
        None => split(args, &name, &p, target),
        Some(input) => people(args, &input, &name, &p, target),
    }
}

/// The training or test split, each row with its class.
fn split(args: &EncodeArgs, name: &str, p: &Prepared, target: &str) -> Result<ExitCode> {
    let (rows, labels, split) = match args.split {
        SplitArg::Train => (&p.train.data, &p.train_labels, "training"),
        SplitArg::Test => (&p.test.data, &p.test_labels, "test"),
    };
    let written = cent_host::encoded::write_split(&args.out, &p.encoding, target, rows, labels)
        .with_context(|| format!("writing the encoded {split} rows of {name}"))?;
    if !args.quiet {
        let classes: Vec<String> = p.encoding.classes().iter().enumerate().map(|(i, c)| format!("{i} `{c}`")).collect();
        eprintln!(
            "{name}: {written} {split} rows × {} encoded columns, then `{target}` (class index: {}), to {}",
            p.encoding.n_cols(),
            classes.join(", "),
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A file's people, each after its line; a row that cannot be read is named and left out.
fn people(args: &EncodeArgs, input: &Input, name: &str, p: &Prepared, target: &str) -> Result<ExitCode> {
    let shown = input.path().display();
    let ignored = input.ignored_columns(&p.encoding, Some(target))?;
    if !args.quiet && !ignored.is_empty() {
        eprintln!("{shown}: columns that are no feature, ignored: {}", ignored.join(", "));
    }
    let mut w = Writer::create(&args.out, &p.encoding, Id::Before("line"))?;
    let mut errors = 0usize;
    for row in input.rows(&p.encoding, Some(target))? {
        match row.x {
            Ok(x) => w.push(&x, row.line as u64)?,
            Err(e) => {
                errors += 1;
                eprintln!("error: {e}");
            }
        }
    }
    let written = w.finish()?;
    if !args.quiet {
        eprintln!(
            "{shown}: {written} people × {} encoded columns of {name}, after `line`, to {}; {errors} left out",
            p.encoding.n_cols(),
            args.out.display()
        );
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
