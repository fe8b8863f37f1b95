//! `cent schema`: a first schema for a CSV file of one's own, each choice with its reason.

use anyhow::{Context, Result};
use cent_host::data::draft::{Draft, DraftError, DraftOptions, Role, draft_with, source_for};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Your CSV file.
    #[arg(long)]
    data: PathBuf,
    /// The column your model predicts.
    #[arg(long)]
    target: String,
    /// The value of the target a person asks recourse for (a loan granted, no default). Left
    /// out, the error lists the target's values to choose from.
    #[arg(long)]
    favourable: Option<String>,
    /// Where to write the schema: a .toml file, or `-` for stdout. An existing file is kept
    /// unless --force.
    #[arg(long, default_value = "-")]
    out: PathBuf,
    /// Overwrite --out when it exists.
    #[arg(long)]
    force: bool,
    /// The file has no header line: its columns are --names, or column_1, column_2, ...
    #[arg(long)]
    no_header: bool,
    /// The columns' names for a file without a header, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "no_header")]
    names: Option<Vec<String>>,
    /// The field delimiter: one ASCII character, or `\t` for a tab.
    #[arg(long, default_value = ",")]
    delimiter: String,
    /// Values that mean "missing" besides an empty field and ?, NA, N/A, #N/A, NaN, nan, null,
    /// NULL (comma-separated). A row holding one is left out when the file is loaded.
    #[arg(long, value_delimiter = ',')]
    missing: Vec<String>,
    /// The dataset's name (default: the file's name without its extension).
    #[arg(long)]
    name: Option<String>,
    /// No summary and no progress bars on stderr (a bar per pass over the file is drawn only
    /// on a terminal).
    #[arg(long, short)]
    quiet: bool,
}

/// `cent schema`.
pub fn run(args: &SchemaArgs) -> Result<ExitCode> {
    let to_stdout = args.out.as_os_str() == "-";
    if !to_stdout {
        super::out_dir_exists("--out", &args.out)?;
        if args.out.exists() && !args.force {
            return Err(super::usage(format!(
                "--out {} exists: give --force to overwrite it, or another name",
                args.out.display()
            )));
        }
    }
    let delimiter = match args.delimiter.as_str() {
        "\\t" | "\t" => b'\t',
        d if d.len() == 1 && d.is_ascii() => d.as_bytes()[0],
        d => return Err(super::usage(format!("--delimiter `{d}`: one ASCII character, or \\t for a tab"))),
    };
    let file = args.data.display().to_string();
    let bytes = std::fs::read(&args.data).with_context(|| format!("cannot read {file}"))?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => args.data.file_stem().map_or_else(|| "data".into(), |s| s.to_string_lossy().into_owned()),
    };
    let options = DraftOptions {
        name,
        source: source_for(&args.data, (!to_stdout).then_some(args.out.as_path())),
        header: !args.no_header,
        names: args.names.clone(),
        delimiter,
        missing: args.missing.clone(),
        target: args.target.clone(),
        favourable: args.favourable.clone(),
    };
    let d = draft_with(&bytes, &file, &options, &super::progress::Bars::new(args.quiet)).map_err(|e| match e {
        DraftError::NoTarget { .. }
        | DraftError::Favourable { .. }
        | DraftError::NoFavourable { .. }
        | DraftError::Names { .. }
        | DraftError::Delimiter(_) => super::usage(e),
        e => anyhow::Error::new(e),
    })?;
    if to_stdout {
        out!("{}", d.toml)?;
    } else {
        std::fs::write(&args.out, &d.toml).with_context(|| format!("cannot write {}", args.out.display()))?;
    }
    if !args.quiet {
        summary(&file, args, &d);
    }
    Ok(ExitCode::SUCCESS)
}

/// What the draft made of the file, and what to do next, on stderr.
fn summary(file: &str, args: &SchemaArgs, d: &Draft) {
    let (mut features, mut dropped) = (Vec::new(), Vec::new());
    eprintln!("{file}: {} rows, {} columns", d.report.read, d.columns.len());
    for c in &d.columns {
        match &c.role {
            Role::Target { classes } => eprintln!(
                "  target: {} ({} classes: {}; favourable {})",
                c.name,
                classes.len(),
                classes.join(", "),
                d.schema.target.favourable
            ),
            Role::Feature { kind, immutable } => {
                let kind = kind.name();
                let fixed = if *immutable { ", immutable" } else { "" };
                features.push(format!("{} ({kind}{fixed})", c.name));
            }
            Role::Dropped { reason } => dropped.push(format!("{} ({reason})", c.name)),
            Role::OneHot { feature } => {
                if let Some(g) = d.one_hot.iter().find(|g| g.name == *feature && g.columns[0] == c.name) {
                    let fixed = if g.immutable { ", immutable" } else { "" };
                    let (first, last) = (&g.columns[0], &g.columns[g.columns.len() - 1]);
                    features.push(format!("{} (categorical{fixed}, one-hot in {first} … {last})", g.name));
                }
            }
        }
    }
    eprintln!("  {} features: {}", features.len(), features.join(", "));
    if !dropped.is_empty() {
        eprintln!("  left out: {}", dropped.join("; "));
    }
    for link in &d.links {
        eprintln!("  link {} ~ {} ({}): {}", link.features[0], link.features[1], link.kind.name(), link.evidence);
    }
    if d.unjudged > 0 {
        eprintln!("  {} more features with few values were not judged for links (the first 64 were)", d.unjudged);
    }
    let r = &d.report;
    if r.missing > 0 {
        let tokens: String = d.missing.iter().map(|m| format!(" or {m}")).collect();
        eprintln!("  {} of {} rows hold a missing value (empty{tokens}): left out when loaded", r.missing, r.read);
    }
    eprintln!("  the draft loads: {} rows kept", r.kept);
    match args.out.as_os_str() == "-" {
        true => {
            eprintln!("Save it (--out {0}.toml), read it, then: cent explain --schema {0}.toml --row 0", d.schema.name)
        }
        false => eprintln!("Wrote {0}. Read it, then: cent explain --schema {0} --row 0", args.out.display()),
    }
}
