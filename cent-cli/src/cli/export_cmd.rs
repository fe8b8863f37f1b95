//! `cent export` (build the recourse atlas, write the device bundle) and `cent validate`
//! (quantized vs full precision, atlas vs per-query CEnt).

use super::DataArgs;
use super::explain_cmd::Format;
use anyhow::{Context, Result, bail};
use cent_host::artifacts::Artifacts;
use cent_host::atlas::AtlasParams;
use cent_host::export::{self, Export, Widths};
use cent_host::surrogate::TreeParams;
use cent_host::validate::{self, PathStats, Report, Settings};
use cent_nostd::atlas::Options;
use cent_nostd::encoder::WeightWidth;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The datasets `cent validate --all` covers.
const ALL: [&str; 4] = ["adult", "compas", "credit", "heloc"];

/// How the atlas and the bundle are built.
#[derive(Debug, Clone, Args)]
pub struct AtlasArgs {
    /// Bits of each quantized weight of the VAE encoder (the classifier's are
    /// --classifier-weights). 16: the device's answer equals the full-precision path's on
    /// 99.8-100 % of test rows of the built-in datasets; 8: the encoder's weights take half the
    /// bytes (1.5 KB less on Adult) and the answers agree on 99.0-99.9 %.
    #[arg(long, value_enum, default_value_t = Weights::Bits16)]
    pub weights: Weights,
    /// Bits of each quantized weight of the classifier, which confirms every answer: 16 keeps
    /// its verdicts near the decision boundary; 8 saves 0.03-0.75 KB more (Adult: 0.75 KB) but
    /// the answers agree with full precision on 84-98 % of test rows (and 88-99 % on seed 2).
    #[arg(long, value_enum, default_value_t = Weights::Bits16)]
    pub classifier_weights: Weights,
    /// Anchors (one tree each) in the atlas, shared evenly by the classes; at most 64.
    #[arg(long, default_value_t = AtlasParams::default().anchors)]
    pub anchors: usize,
    /// Latent neighbours each anchor's tree is fitted on (k / classes of every class; capped
    /// by the class sizes).
    #[arg(long, default_value_t = AtlasParams::default().k)]
    pub k: usize,
    /// Node budget of each tree (12 bytes per node in the bundle; at most 255).
    #[arg(long, default_value_t = AtlasParams::default().tree.max_nodes)]
    pub max_nodes: usize,
    /// Depth bound of each tree.
    #[arg(long, default_value_t = AtlasParams::default().tree.max_depth)]
    pub max_depth: usize,
    /// Fewest neighbours in a leaf.
    #[arg(long, default_value_t = AtlasParams::default().tree.min_leaf)]
    pub min_leaf: usize,
    /// People of another class each anchor carries for the device's last resort, when no
    /// region of its trees is confirmed (chosen by the training rows they answer; 0 for none;
    /// at most 8).
    #[arg(long, default_value_t = AtlasParams::default().people)]
    pub people: usize,
}

/// Width of a quantized weight on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Weights {
    #[value(name = "16")]
    Bits16,
    #[value(name = "8")]
    Bits8,
}

impl Weights {
    fn width(self) -> WeightWidth {
        match self {
            Weights::Bits16 => WeightWidth::I16,
            Weights::Bits8 => WeightWidth::I8,
        }
    }
}

impl AtlasArgs {
    /// The bundle's weight widths (`--weights`, `--classifier-weights`).
    pub(super) fn widths(&self) -> Widths {
        Widths { encoder: self.weights.width(), classifier: self.classifier_weights.width() }
    }
}

/// How the device's explainer runs (`cent_nostd::atlas::Options`; from C, `CentOptions`):
/// what the atlas paths explain with, so that a firmware's settings are measured before they
/// are flashed. The defaults are the firmware's.
#[derive(Debug, Clone, Args)]
pub struct DeviceArgs {
    /// Least lead of the target class over the runner-up, in logits, for the on-device
    /// classifier to confirm a candidate (0.405 = ln 1.5: probability 0.6 between two classes).
    #[arg(long, default_value_t = Options::default().lead, value_parser = lead)]
    pub lead: f32,
    /// Confirmed regions compared by their agreement before answering, 1 to 8.
    #[arg(long, default_value_t = Options::default().candidates, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub candidates: u8,
    /// Classifier calls spent looking for further regions to compare once the answers are found.
    #[arg(long, default_value_t = Options::default().compare_calls)]
    pub compare_calls: u16,
    /// When the nearest anchor's tree confirms nothing, the runner-up's is searched while fewer
    /// classifier calls than this were made (0: never).
    #[arg(long, default_value_t = Options::default().runner_up_calls)]
    pub runner_up_calls: u16,
    /// When no region is confirmed, the anchors' people are tried while they cost fewer
    /// classifier calls than this (0: never).
    #[arg(long, default_value_t = Options::default().people_calls)]
    pub people_calls: u16,
    /// Agreement (of 255) below which a region is set aside and tried only when too few
    /// answers were found (0: none set aside).
    #[arg(long, default_value_t = Options::default().defer_below)]
    pub defer_below: u8,
    /// Classifier calls an answer's paring spends on each change only the lead needs, shortening
    /// the other numbers and carrying it further until the decision needs it (0: never).
    #[arg(long, default_value_t = Options::default().balance_calls)]
    pub balance_calls: u16,
}

impl DeviceArgs {
    pub(super) fn options(&self) -> Options {
        Options {
            lead: self.lead,
            candidates: self.candidates,
            compare_calls: self.compare_calls,
            runner_up_calls: self.runner_up_calls,
            people_calls: self.people_calls,
            defer_below: self.defer_below,
            balance_calls: self.balance_calls,
            ..Options::default()
        }
    }
}

/// `lead 0.405, candidates 8, compare calls 8, runner-up calls 24, people calls 24, defer below
/// 64, balance calls 12`: the settings a report ran with.
pub(super) fn device_options(o: &Options) -> String {
    format!(
        "lead {:.3}, candidates {}, compare calls {}, runner-up calls {}, people calls {}, defer below {}, balance \
         calls {}",
        o.lead, o.candidates, o.compare_calls, o.runner_up_calls, o.people_calls, o.defer_below, o.balance_calls
    )
}

/// A lead in logits: finite and not negative, for clap.
fn lead(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} is not a lead in logits (finite, 0 or more)")),
        Err(e) => Err(format!("`{text}` is not a number: {e}")),
    }
}

impl AtlasArgs {
    pub(super) fn params(&self, seed: u64) -> AtlasParams {
        let tree = TreeParams { max_depth: self.max_depth, min_leaf: self.min_leaf, max_nodes: self.max_nodes };
        AtlasParams { anchors: self.anchors, k: self.k, tree, people: self.people, seed, ..AtlasParams::default() }
    }
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub atlas: AtlasArgs,
    /// Where to write the bundle.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the first N encoded test rows as queries for a firmware run (with --queries-out).
    #[arg(long, requires = "queries_out")]
    pub queries: Option<usize>,
    /// File of the queries: f32 little-endian, row-major, one row per query.
    #[arg(long, requires = "queries")]
    pub queries_out: Option<PathBuf>,
    /// File of the host's native result line per query, which the firmware must reproduce.
    #[arg(long, requires = "queries")]
    pub expected_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// The bundle to check, exported from the same --dataset, --model and --seed.
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    pub bundle: Option<PathBuf>,
    /// Validate adult, compas, credit and heloc in one run, each on a freshly exported
    /// temporary bundle (built with the atlas options below; --dataset is ignored).
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub atlas: AtlasArgs,
    /// Validate on a seeded sample of this many test rows; 0 = the whole test split.
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// How the device explains (a firmware's own settings, measured before flashing them).
    /// Example: --balance-calls 0 --compare-calls 16
    #[command(flatten, next_help_heading = "Device explainer")]
    pub device: DeviceArgs,
}

/// `cent export`.
pub fn export(args: &ExportArgs) -> Result<ExitCode> {
    built_in_only(&args.data)?;
    super::out_dir_exists("--out", &args.out)?;
    for (flag, path) in [("--queries-out", &args.queries_out), ("--expected-out", &args.expected_out)] {
        if let Some(path) = path {
            super::out_dir_exists(flag, path)?;
        }
    }
    let a = args.data.setup().load()?;
    let e = export::export(&a, args.atlas.params(args.data.seed), args.atlas.widths())?;
    std::fs::write(&args.out, &e.bytes).with_context(|| format!("cannot write {}", args.out.display()))?;
    print_export(&args.out, &e)?;
    if let (Some(n), Some(path)) = (args.queries, &args.queries_out) {
        write_queries(&a, &e.bytes, n, path, args.expected_out.as_deref())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The bundle carries the built-in model (the device confirms with it); an ONNX black box
/// has no device form yet.
fn built_in_only(data: &DataArgs) -> Result<()> {
    if let Some(path) = &data.onnx {
        bail!(
            "--onnx {}: bundles carry the built-in --model (lr or mlp); ONNX black boxes cannot be exported yet",
            path.display()
        );
    }
    Ok(())
}

fn print_export(path: &Path, e: &Export) -> Result<()> {
    let smallest = e.atlas.trees.iter().map(|t| t.nodes()).min().unwrap_or(0);
    outln!(
        "wrote {}: {} anchors, trees of {smallest}..={} nodes, atlas fidelity {:.3} on the test split",
        path.display(),
        e.atlas.len(),
        e.atlas.max_nodes(),
        e.test_fidelity
    )?;
    // The networks' weight widths, as `--weights` and `--classifier-weights` chose them.
    let width = |q: Option<&cent_host::quantize::QuantizedMlp>| {
        let code = q.and_then(|q| q.layers.first()).map(|l| l.weight_width);
        match code.and_then(WeightWidth::from_code) {
            Some(WeightWidth::I8) => " (int8 weights)",
            Some(WeightWidth::I16) => " (int16 weights)",
            None => "",
        }
    };
    for (part, bytes) in e.sizes.rows() {
        let note = match part {
            "encoder" => width(Some(&e.encoder)),
            "classifier" => width(e.classifier.as_ref()),
            _ => "",
        };
        outln!("  {part:<10} {bytes:>7} B{note}")?;
    }
    let s = e.support;
    let thinned = if s.thinned > 0 { format!(", {} of them thinned to 256", s.thinned) } else { String::new() };
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    outln!(
        "data support: {} of {}{thinned}; {} with {}",
        plural(s.values, "observed value", "observed values"),
        plural(s.features, "feature", "features"),
        plural(s.links, "link", "links"),
        plural(s.combinations, "combination", "combinations")
    )?;
    let g = e.agreement;
    outln!(
        "region agreement: {} explained with the bundle, {} judged by their {} nearest training rows: {:.2} agree on average",
        plural(g.rows, "training row", "training rows"),
        plural(g.answers, "answer", "answers"),
        cent_host::regions::NEIGHBOURS,
        g.mean
    )?;
    let p = e.people;
    if p.per_anchor > 0 {
        outln!(
            "people: {} per anchor, chosen on {} routed to their anchors; they answer {} ({:.0} %)",
            p.per_anchor,
            plural(p.queries, "training row", "training rows"),
            p.answered,
            100.0 * p.answered as f64 / p.queries.max(1) as f64
        )?;
    }
    Ok(())
}

/// Writes the first `n` test rows as f32 LE, and optionally the native result lines.
fn write_queries(a: &Artifacts, bundle: &[u8], n: usize, path: &Path, expected: Option<&Path>) -> Result<()> {
    let test = &a.prepared.test;
    let rows = n.min(test.n_rows());
    let data = &test.data[..rows * a.prepared.encoding.n_cols()];
    std::fs::write(path, export::query_bytes(data)).with_context(|| format!("cannot write {}", path.display()))?;
    outln!("wrote {}: {rows} queries of {} columns (f32 LE)", path.display(), a.prepared.encoding.n_cols())?;
    if let Some(out) = expected {
        let lines = validate::native_run(bundle, data)?;
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
        outln!("wrote {}: the native result line of each query", out.display())?;
    }
    Ok(())
}

/// `cent validate`.
pub fn validate(args: &ValidateArgs) -> Result<ExitCode> {
    built_in_only(&args.data)?;
    let limit = (args.limit > 0).then_some(args.limit);
    let settings = Settings { limit, seed: args.data.seed, options: args.device.options() };
    let reports = match &args.bundle {
        Some(path) => vec![validate_file(args, path, settings)?],
        None => ALL.iter().map(|name| validate_fresh(args, name, settings)).collect::<Result<_>>()?,
    };
    match args.format {
        Format::Json if reports.len() == 1 => outln!("{}", serde_json::to_string_pretty(&reports[0])?)?,
        Format::Json => outln!("{}", serde_json::to_string_pretty(&reports)?)?,
        Format::Text => {
            for r in &reports {
                print_report(r)?;
            }
            if reports.len() > 1 {
                print_table(&reports)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn validate_file(args: &ValidateArgs, path: &Path, settings: Settings) -> Result<Report> {
    let bytes = validate::read_bundle(path)?;
    let a = args.data.setup().load()?;
    Ok(validate::validate(&bytes, &path.display().to_string(), &a, settings)?)
}

/// Exports `name` to a temporary bundle file, validates it and removes it.
fn validate_fresh(args: &ValidateArgs, name: &str, settings: Settings) -> Result<Report> {
    let data = DataArgs { dataset: name.to_string(), data: None, schema: None, ..args.data.clone() };
    let a = data.setup().load()?;
    let e = export::export(&a, args.atlas.params(settings.seed), args.atlas.widths())?;
    let path = std::env::temp_dir().join(format!("cent-validate-{name}-{}.cent", std::process::id()));
    std::fs::write(&path, &e.bytes).with_context(|| format!("cannot write {}", path.display()))?;
    let result = validate::read_bundle(&path).map(|bytes| validate::validate(&bytes, name, &a, settings));
    let _ = std::fs::remove_file(&path);
    Ok(result??)
}

fn print_report(r: &Report) -> Result<()> {
    let classifier = r.classifier_bits.map_or_else(|| "no classifier".to_string(), |b| format!("classifier int{b}"));
    outln!(
        "{} ({}): {} bytes (encoder int{}, {classifier}), {} anchors, trees of at most {} nodes; {} test queries",
        r.bundle,
        r.name,
        r.bytes,
        r.encoder_bits,
        r.anchors,
        r.max_tree_nodes,
        r.queries
    )?;
    outln!("  device explainer: {}", device_options(&r.options))?;
    let l = &r.latent;
    outln!(
        "  latent, quantized vs f32: relative error mean {:.5}, p99 {:.5}, max {:.5}; cosine mean {:.6}, min {:.6}",
        l.relative_mean,
        l.relative_p99,
        l.relative_max,
        l.cosine_mean,
        l.cosine_min
    )?;
    outln!(
        "  anchor agreement {:.2} %, fact agreement {:.2} %, identical counterfactuals {:.2} %, flip-rate gap {:.2} points",
        r.anchor_agreement * 100.0,
        r.fact_agreement * 100.0,
        r.identical * 100.0,
        r.flip_gap_points
    )?;
    outln!(
        "  {:<16} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7} {:>5} {:>6} {:>6} {:>5} {:>10}",
        "",
        "found",
        "flip",
        "l0",
        "l2",
        "cost",
        "people",
        "viol",
        "unseen",
        "broken",
        "err",
        "us/query"
    )?;
    for (label, s) in [("atlas quantized", &r.quantized), ("atlas f32", &r.full_precision), ("per-query CEnt", &r.cent)]
    {
        print_stats(label, s)?;
    }
    outln!()
}

fn print_stats(label: &str, s: &PathStats) -> Result<()> {
    outln!(
        "  {label:<16} {:>7.3} {:>7.3} {:>6.2} {:>7.3} {:>7.3} {:>7.3} {:>5} {:>6} {:>6} {:>5} {:>10.1}",
        s.found,
        s.flip_rate,
        s.l0,
        s.l2,
        s.cost,
        s.people,
        s.violations,
        s.unseen,
        s.broken,
        s.errors,
        s.micros
    )
}

/// One Markdown row per dataset (the README's table).
fn print_table(reports: &[Report]) -> Result<()> {
    outln!(
        "| bundle | bytes | anchor agreement | identical | flip quantized | flip f32 | gap (points) | flip CEnt | l0 atlas / CEnt | cost atlas / CEnt | unseen / broken (atlas) |"
    )?;
    outln!("|---|---|---|---|---|---|---|---|---|---|---|")?;
    for r in reports {
        outln!(
            "| {} | {} | {:.2} % | {:.2} % | {:.3} | {:.3} | {:.2} | {:.3} | {:.2} / {:.2} | {:.3} / {:.3} | {} / {} |",
            r.name,
            r.bytes,
            r.anchor_agreement * 100.0,
            r.identical * 100.0,
            r.quantized.flip_rate,
            r.full_precision.flip_rate,
            r.flip_gap_points,
            r.cent.flip_rate,
            r.quantized.l0,
            r.cent.l0,
            r.quantized.cost,
            r.cent.cost,
            r.quantized.unseen,
            r.quantized.broken
        )?;
    }
    Ok(())
}
