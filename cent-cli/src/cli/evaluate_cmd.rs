//! `cent evaluate`: CEnt and the baselines on factuals of the test split, with every metric of
//! the evaluation (see `cent_lab::evaluate` and docs/results.md).

use super::{DataArgs, ModelArg};
use anyhow::{Context, Result};
use cent_host::artifacts::{ArtifactError, Artifacts, Setup, Source};
use cent_host::blackbox::{BlackBox, ModelKind, Scores};
use cent_lab::evaluate::report::{self, Meta, PairReport};
use cent_lab::evaluate::{self, Bench, Config, MethodKind, MethodResult, SweepPoint, plots};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Factuals drawn from the test split (seeded by --seed, both predicted classes).
    #[arg(long, default_value_t = 100)]
    pub factuals: usize,
    /// Methods to run, comma-separated (default: all of them).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub method: Vec<MethodArg>,
    /// Output format on stdout (and of the file written into --out).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Directory for the results: `<dataset>-<model>.{md,json,csv}`; with --all the report
    /// `results.md` and `plots/` (default there: docs).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Every built-in dataset (adult, compas, credit, heloc) × model (lr, mlp) × method; writes a
    /// markdown report and SVG plots. Ignores --dataset, --data, --model, --method (all run)
    /// and --format (the report is markdown).
    #[arg(long, conflicts_with = "onnx")]
    pub all: bool,
    /// CEnt's plausibility settings (each in 0..=1) to run on the same factuals, comma-separated,
    /// or `none`. Each pair's summaries go into the JSON (`sweep`), and with --out a plot of
    /// mean l0 against yNN, CEnt's sweep next to the baselines, into
    /// `plots/pareto-<dataset>-<model>.svg` [default: 0,0.25,0.52,0.6,0.75,1].
    /// Example: --sweep 0,0.5,1
    #[arg(long, value_parser = parse_sweep, verbatim_doc_comment)]
    pub sweep: Option<Sweep>,
    /// CEnt's plausibility weight, 0 to 1 (see `cent explain --help`); the headline setting.
    #[arg(long, default_value_t = cent_host::explain::Config::default().plausibility, value_parser = super::unit_interval)]
    pub plausibility: f32,
    /// CEnt without single moves (see `cent explain --help`).
    #[arg(long)]
    pub no_single_moves: bool,
    /// The model's probability of the target class CEnt's counterfactuals need, 0 to 1. E.g.
    /// `--min-probability 0` for any counterfactual the model puts in the target class.
    #[arg(long, default_value_t = cent_host::explain::Config::default().min_probability, value_parser = super::unit_interval)]
    pub min_probability: f32,
    /// How the device bundle `--method atlas` explains with is built, as `cent export` builds
    /// it. Example: --method cent,atlas --anchors 64 --k 2000
    #[command(flatten, next_help_heading = "Atlas (--method atlas)")]
    pub atlas: super::export_cmd::AtlasArgs,
    /// How the device explains with that bundle (a firmware's own settings, measured before
    /// flashing them). Example: --method atlas --balance-calls 0
    #[command(flatten, next_help_heading = "Device explainer (--method atlas)")]
    pub device: super::export_cmd::DeviceArgs,
}

/// The plausibility settings of `--sweep`, ascending, without repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep(pub Vec<f32>);

/// `none`, or comma-separated numbers in `0..=1`.
fn parse_sweep(text: &str) -> Result<Sweep, String> {
    if text.trim() == "none" {
        return Ok(Sweep(Vec::new()));
    }
    let mut values = Vec::new();
    for part in text.split(',') {
        let v: f32 = part
            .trim()
            .parse()
            .map_err(|_| format!("`{part}` is not a number (expected values in 0..=1, comma-separated, or `none`)"))?;
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("{v} is outside 0..=1"));
        }
        values.push(v);
    }
    values.sort_by(f32::total_cmp);
    values.dedup();
    Ok(Sweep(values))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// CEnt (this project).
    Cent,
    /// Growing Spheres (Laugel et al. 2017).
    Gs,
    /// FACE with a kNN graph (Poyiadzi et al. 2020).
    Face,
    /// Nearest unlike neighbour.
    Nun,
    /// DiCE-style random search.
    Random,
    /// The device's recourse atlas: the bundle `cent export` would write for this data, model,
    /// seed and atlas options (default 32 anchors, int16 weights), explained by the core as on
    /// the device; built-in models only, and only when asked for.
    Atlas,
}

impl MethodArg {
    fn kind(self) -> MethodKind {
        match self {
            MethodArg::Cent => MethodKind::Cent,
            MethodArg::Gs => MethodKind::Gs,
            MethodArg::Face => MethodKind::Face,
            MethodArg::Nun => MethodKind::Nun,
            MethodArg::Random => MethodKind::Random,
            MethodArg::Atlas => MethodKind::Atlas,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A markdown table of per-method summaries.
    Table,
    /// One JSON document: settings, then per method a summary and per-factual rows.
    Json,
    /// One CSV line per factual and method, with a header.
    Csv,
}

/// The JSON document of one dataset × model pair (see docs/evaluation.md, "Evaluation JSON").
#[derive(Debug, Serialize)]
struct JsonDoc<'a> {
    dataset: &'a str,
    model: &'a str,
    test_accuracy: f64,
    test_balanced_accuracy: f64,
    seed: u64,
    factuals: usize,
    methods: &'a [MethodResult],
    /// The baselines that dominate CEnt (absent when CEnt did not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    cent_dominated_by: Option<Vec<MethodKind>>,
    /// CEnt's plausibility sweep (empty when none ran).
    sweep: &'a [SweepPoint],
    /// The device explainer's options `atlas` ran with (absent when it did not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    atlas_options: Option<cent_nostd::atlas::Options>,
}

pub fn run(args: &EvaluateArgs) -> Result<ExitCode> {
    if args.factuals == 0 {
        return Err(super::usage("--factuals 0: must be at least 1"));
    }
    if args.all {
        return all(args);
    }
    let start = Instant::now();
    let a = args.data.setup().load()?;
    let model = a.black_box(args.data.onnx.as_deref())?;
    let label = model_label(&args.data);
    let scores = test_scores(model.as_ref(), &a, args.data.onnx.as_deref())?;
    let setup_seconds = start.elapsed().as_secs_f64();
    let pair = evaluate_pair(&a, model.as_ref(), &label, &scores, setup_seconds, args)?;
    let text = render(&pair, args)?;
    if let Some(dir) = &args.out {
        let ext = match args.format {
            Format::Table => "md",
            Format::Json => "json",
            Format::Csv => "csv",
        };
        let path = dir.join(format!("{}-{}.{ext}", pair.dataset, pair.model));
        write(&path, &text)?;
        let pareto = plots::write_pareto(&dir.join("plots"), std::slice::from_ref(&pair))?;
        if !args.data.quiet {
            eprintln!("wrote {}", path.display());
            for (file, _) in pareto {
                eprintln!("wrote {}", dir.join("plots").join(file).display());
            }
        }
    }
    out!("{text}")?;
    Ok(ExitCode::SUCCESS)
}

/// `lr`, `mlp` or `onnx`.
fn model_label(data: &DataArgs) -> String {
    match (&data.onnx, data.model) {
        (Some(_), _) => "onnx".into(),
        (None, ModelArg::Lr) => "lr".into(),
        (None, ModelArg::Mlp) => "mlp".into(),
    }
}

/// The scores of the model under evaluation: the built-in one's from loading, an ONNX model's
/// measured here (and warned about when it gives one class to nearly every test row).
fn test_scores(model: &dyn BlackBox, a: &Artifacts, onnx: Option<&Path>) -> Result<Scores> {
    let Some(path) = onnx else {
        return Ok(a.builtin.as_ref().ok_or(ArtifactError::NoModel)?.scores.clone());
    };
    let scores = cent_host::blackbox::scores(model, &a.prepared.test.data, &a.prepared.test_labels)?;
    super::warn_dominant(&format!("the ONNX model {}", path.display()), &scores, a);
    Ok(scores)
}

fn methods(args: &EvaluateArgs) -> Vec<MethodKind> {
    if args.method.is_empty() || args.all {
        return MethodKind::ALL.to_vec();
    }
    let mut kinds: Vec<MethodKind> = args.method.iter().map(|m| m.kind()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

/// Runs the chosen methods on one pair's factuals.
/// Answers CEnt is asked for when its answers' diversity is measured (`explain`'s default).
const DIVERSITY_N: usize = 3;

fn evaluate_pair(
    a: &Artifacts,
    model: &dyn BlackBox,
    label: &str,
    scores: &Scores,
    setup_seconds: f64,
    args: &EvaluateArgs,
) -> Result<PairReport> {
    let start = Instant::now();
    let mut config = Config::new(args.factuals, args.data.seed);
    config.cent.plausibility = args.plausibility;
    config.cent.single_moves = !args.no_single_moves;
    config.cent.min_probability = args.min_probability;
    if let Some(Sweep(values)) = &args.sweep {
        config.sweep.clone_from(values);
    }
    let kinds = methods(args);
    // The device bundle, exported in memory, when the atlas is asked for.
    let bundle = if kinds.contains(&MethodKind::Atlas) {
        if args.data.onnx.is_some() {
            anyhow::bail!(
                "--method atlas runs a device bundle, which carries a built-in --model (lr or mlp), not an ONNX one"
            );
        }
        Some(cent_host::export::write_bundle(a, args.atlas.params(args.data.seed), args.atlas.widths())?)
    } else {
        None
    };
    let mut bench = Bench::new(&a.prepared, model, &a.vae, config)?;
    if let Some(bytes) = &bundle {
        bench = bench.with_atlas(bytes).context("the exported bundle")?.with_atlas_options(args.device.options());
    }
    let factuals = bench.factuals()?;
    let prepare_seconds = start.elapsed().as_secs_f64();
    let mut results = Vec::new();
    let run_start = Instant::now();
    for kind in kinds {
        let t = Instant::now();
        let r = bench.run(kind, &factuals)?;
        if !args.data.quiet {
            eprintln!(
                "{} × {label}: {} on {} factuals in {:.1} s (flip rate {:.2})",
                a.name,
                kind.name(),
                factuals.len(),
                t.elapsed().as_secs_f64(),
                r.summary.flip_rate
            );
        }
        results.push(r);
    }
    let run_seconds = run_start.elapsed().as_secs_f64();
    let diversity = if results.iter().any(|r| r.summary.method == MethodKind::Cent) {
        Some(bench.diversity(&factuals, DIVERSITY_N)?)
    } else {
        None
    };
    let sweep_start = Instant::now();
    let sweep = match results.iter().find(|r| r.summary.method == MethodKind::Cent) {
        Some(cent) => {
            let t = Instant::now();
            let sweep = bench.sweep(&factuals, &cent.summary)?;
            if !args.data.quiet && !sweep.is_empty() {
                eprintln!(
                    "{} × {label}: cent plausibility sweep ({} settings) in {:.1} s",
                    a.name,
                    sweep.len(),
                    t.elapsed().as_secs_f64()
                );
            }
            sweep
        }
        None => Vec::new(),
    };
    Ok(PairReport {
        dataset: a.name.clone(),
        model: label.to_string(),
        accuracy: scores.accuracy,
        balanced_accuracy: scores.balanced_accuracy,
        setup_seconds,
        prepare_seconds,
        run_seconds,
        sweep_seconds: sweep_start.elapsed().as_secs_f64(),
        results,
        sweep,
        diversity,
    })
}

fn render(pair: &PairReport, args: &EvaluateArgs) -> Result<String> {
    Ok(match args.format {
        Format::Table => format!(
            "{} × {} (test accuracy {:.3}, balanced accuracy {:.3}), {} factuals, seed {}\n\n{}",
            pair.dataset,
            pair.model,
            pair.accuracy,
            pair.balanced_accuracy,
            args.factuals,
            args.data.seed,
            report::summary_table(&pair.results)
        ),
        Format::Json => {
            let doc = JsonDoc {
                dataset: &pair.dataset,
                model: &pair.model,
                test_accuracy: pair.accuracy,
                test_balanced_accuracy: pair.balanced_accuracy,
                seed: args.data.seed,
                factuals: args.factuals,
                methods: &pair.results,
                cent_dominated_by: evaluate::cent_dominated_by(&pair.results),
                sweep: &pair.sweep,
                atlas_options: pair
                    .results
                    .iter()
                    .any(|r| r.summary.method == MethodKind::Atlas)
                    .then(|| args.device.options()),
            };
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        Format::Csv => {
            let mut text = format!("{}\n", report::CSV_HEADER);
            for r in &pair.results {
                text += &report::csv_rows(&pair.dataset, &pair.model, r.summary.method, &r.rows);
            }
            text
        }
    })
}

/// `--all`: every built-in dataset × {lr, mlp} × method, then the report and plots.
fn all(args: &EvaluateArgs) -> Result<ExitCode> {
    let start = Instant::now();
    let machine = machine();
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("docs"));
    let mut pairs = Vec::new();
    for dataset in cent_host::data::DATASETS {
        for kind in [ModelKind::Lr, ModelKind::Mlp] {
            let t = Instant::now();
            let setup = Setup {
                source: Source::Builtin(dataset.to_string()),
                model: Some(kind),
                cache: args.data.cache.clone(),
                seed: args.data.seed,
            };
            let a = super::load_reported(&setup, args.data.quiet).with_context(|| format!("loading {dataset}"))?;
            let b = a.builtin.as_ref().ok_or(ArtifactError::NoModel)?;
            let label = if kind == ModelKind::Lr { "lr" } else { "mlp" };
            let setup_seconds = t.elapsed().as_secs_f64();
            pairs.push(evaluate_pair(&a, &b.model, label, &b.scores, setup_seconds, args)?);
        }
    }
    let plots = plots::write_all(&out.join("plots"), &pairs)?;
    let pareto = plots::write_pareto(&out.join("plots"), &pairs)?;
    let meta = Meta {
        command: format!(
            "cargo run -- evaluate --all --factuals {} --seed {} --out {}",
            args.factuals,
            args.data.seed,
            out.display()
        ),
        factuals: args.factuals,
        seed: args.data.seed,
        total_seconds: start.elapsed().as_secs_f64(),
        machine,
        plots: plots.into_iter().map(|(file, caption)| (format!("plots/{file}"), caption)).collect(),
        pareto_plots: pareto.into_iter().map(|(file, caption)| (format!("plots/{file}"), caption)).collect(),
    };
    let path = out.join("results.md");
    write(&path, &report::markdown(&pairs, &meta))?;
    let count = meta.plots.len() + meta.pareto_plots.len();
    outln!("wrote {} and {count} plots in {:.0} s", path.display(), meta.total_seconds)?;
    Ok(ExitCode::SUCCESS)
}

/// Logical cores and, where the system tells, the load average when the run started.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load =
        std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| t.split_whitespace().next().map(str::to_string));
    match load {
        Some(l) => format!("{cores} logical cores, 1-minute load average {l} at the start"),
        None => format!("{cores} logical cores"),
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
