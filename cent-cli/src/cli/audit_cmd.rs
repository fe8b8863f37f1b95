//! `cent audit`: recourse by group over the results of `cent batch` (JSON Lines, CSV or
//! Parquet).

use anyhow::{Context, Result, bail};
use cent_host::audit::{self, Record};
use cent_host::results;
use cent_host::rows::Input;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The results `cent batch` wrote (JSON Lines, CSV or Parquet, by the name's extension).
    #[arg(long)]
    pub results: PathBuf,
    /// The CSV or Parquet file `cent batch` read (each result's `line` points into it).
    #[arg(long)]
    pub input: PathBuf,
    /// Columns of the input to group by (comma-separated), e.g. `--by sex,race`. Default: the
    /// schema's `protected` features.
    #[arg(long, value_delimiter = ',')]
    pub by: Vec<String>,
    /// Built-in dataset whose schema names the protected features (when `--by` is not given).
    #[arg(long, default_value = "adult")]
    pub dataset: String,
    /// A schema file instead of a built-in dataset's.
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Folder for `audit.md`, `audit.json` and `audit.svg` (created if missing).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: &AuditArgs) -> Result<ExitCode> {
    let by = if args.by.is_empty() { protected(args)? } else { args.by.clone() };
    let groups = Input::open(&args.input)?.column_values(&by)?;
    let mut records = Vec::new();
    for r in results::read_summaries(&args.results)? {
        let Some(values) = groups.get(&r.line) else {
            bail!("{}: input line {} is not in {}", args.results.display(), r.line, args.input.display())
        };
        records.push(Record { groups: values.clone(), refused: !r.favourable, recourse: r.best, error: r.error });
    }
    let report = audit::audit(&by, records);
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let md = args.out.join("audit.md");
    std::fs::write(&md, report.markdown()).with_context(|| format!("cannot write {}", md.display()))?;
    let json = args.out.join("audit.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let svg = args.out.join("audit.svg");
    report.plot(&svg).map_err(|e| anyhow::anyhow!("cannot draw {}: {e}", svg.display()))?;
    outln!(
        "wrote {}, {} and {} ({} people; {} rows the batch could not explain)",
        md.display(),
        json.display(),
        svg.display(),
        report.people,
        report.errors
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The schema's protected features, or a usage error saying how to name groups.
fn protected(args: &AuditArgs) -> Result<Vec<String>> {
    let schema = match &args.schema {
        Some(path) => cent_host::data::Schema::from_file(path)?,
        None => cent_host::data::builtin_schema(&args.dataset)?,
    };
    if schema.protected.is_empty() {
        return Err(super::usage(format!(
            "{} names no protected features: give the columns to group by with --by (e.g. --by sex,race), or list them as `protected = [...]` in the schema",
            schema.origin
        )));
    }
    Ok(schema.protected)
}
