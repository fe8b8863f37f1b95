//! `cent text`: the word-edit vulnerability report of text classifiers.

use anyhow::{Context, Result};
use cent_lab::text::model::TextModel;
use cent_lab::text::report::{self, TextReport, TextRun};
use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::path::PathBuf;
use std::process::ExitCode;

/// Parses `lr`, `mlp` or `svm` (the library's [`TextModel`] names), listing them in `--help`.
fn text_model() -> impl TypedValueParser<Value = TextModel> {
    PossibleValuesParser::new(TextModel::ALL.map(TextModel::name)).try_map(|name| name.parse::<TextModel>())
}

#[derive(Debug, Args)]
pub struct TextArgs {
    /// Text datasets (comma-separated): bbc, spam (after `cent fetch bbc spam`).
    #[arg(long, value_delimiter = ',', default_value = "bbc")]
    pub dataset: Vec<String>,
    /// The two BBC classes to separate (business, entertainment, politics, sports, tech).
    #[arg(long, default_value = "politics,business")]
    pub classes: String,
    /// Models (comma-separated): lr, mlp (100-50 ReLU), svm (linear, hinge loss).
    #[arg(long, value_delimiter = ',', default_value = "lr,mlp,svm", value_parser = text_model())]
    pub model: Vec<TextModel>,
    /// Test documents to explain per model.
    #[arg(long, default_value_t = 50)]
    pub count: usize,
    /// Vocabulary size (most frequent words by document frequency).
    #[arg(long, default_value_t = 1000)]
    pub vocab: usize,
    /// Seed of the split, the training and the search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the markdown report here, and the JSON next to it (same name, `.json`).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Cache of fetched datasets.
    #[arg(long, default_value = "data/cache", env = "CENT_CACHE")]
    pub cache: PathBuf,
    /// No status messages on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &TextArgs) -> Result<ExitCode> {
    let mut reports: Vec<TextReport> = Vec::new();
    let quiet = args.quiet;
    for dataset in &args.dataset {
        let settings = TextRun {
            dataset: dataset.clone(),
            classes: args.classes.clone(),
            models: args.model.clone(),
            count: args.count,
            vocab: args.vocab,
            seed: args.seed,
        };
        let r = report::run(&settings, &args.cache, &mut |line| {
            if !quiet {
                eprintln!("{line}");
            }
        })?;
        reports.push(r);
    }
    let command = command_line(args);
    let md = report::markdown(&reports, &command);
    match &args.report {
        Some(path) => {
            std::fs::write(path, &md).with_context(|| format!("writing {}", path.display()))?;
            let json_path = path.with_extension("json");
            let json = serde_json::to_string_pretty(&reports)?;
            std::fs::write(&json_path, json).with_context(|| format!("writing {}", json_path.display()))?;
            outln!("wrote {} and {}", path.display(), json_path.display())?;
        }
        None => out!("{md}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The command that reproduces this run (for the report's header).
fn command_line(args: &TextArgs) -> String {
    let models: Vec<&str> = args.model.iter().map(|m| m.name()).collect();
    format!(
        "cent text --dataset {} --classes {} --model {} --count {} --vocab {} --seed {}",
        args.dataset.join(","),
        args.classes,
        models.join(","),
        args.count,
        args.vocab,
        args.seed
    )
}
