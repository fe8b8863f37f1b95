//! `cent encode`: a split's rows as the models see them, for training one's own model.

use super::explain_cmd::SplitArg;
use anyhow::{Context, Result};
use cent_host::artifacts::{Setup, Source};
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
    // A name cent cannot write, or a directory that is not there, fails before the data is read.
    cent_host::encoded::format(&args.out).map_err(|e| super::usage(e.to_string()))?;
    super::out_dir_exists("--out", &args.out)?;
    let source = match &args.schema {
        Some(schema) => Source::Custom { csv: args.data.clone(), schema: schema.clone() },
        None => Source::Builtin(args.dataset.clone()),
    };
    let setup = Setup { source, model: None, cache: args.cache.clone(), seed: args.seed };
    let (name, p) = setup.prepare()?;
    let (rows, labels, split) = match args.split {
        SplitArg::Train => (&p.train.data, &p.train_labels, "training"),
        SplitArg::Test => (&p.test.data, &p.test_labels, "test"),
    };
    let target = match p.table.target_column() {
        "" => "class",
        column => column,
    };
    let written = cent_host::encoded::write(&args.out, &p.encoding, target, rows, labels)
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
