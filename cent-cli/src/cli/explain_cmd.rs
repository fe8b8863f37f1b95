//! `cent explain` and `cent demo`.

use super::export_cmd::{self, DeviceArgs};
use super::{DataArgs, query};
use anyhow::{Context, Result};
use cent_host::artifacts::Artifacts;
use cent_host::blackbox::BlackBox;
use cent_host::constraints::{self, Labels, Overrides};
use cent_host::data::{Attribute, Encoding, ValueSupport};
use cent_host::explain::{Change, ClassOut, Config, ExplainError, Explainer, Explanation, Realization};
use cent_host::preview::{DeviceExplanation, MAX_ANSWERS, Preview, Source};
use cent_host::profile::Query;
use cent_host::validate;
use cent_nostd::atlas::Options;
use cent_nostd::schema::{Kind, Mutability};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Row of the split to explain (0-based).
    #[arg(long, conflicts_with = "query", required_unless_present = "query")]
    pub row: Option<usize>,
    /// Which split --row indexes.
    #[arg(long, value_enum, default_value_t = SplitArg::Test)]
    pub split: SplitArg,
    /// A JSON object/array or CSV file (with a header) of raw feature values to explain, e.g.
    /// {"age": 38, "workclass": "Private", ...}: every feature by its schema name, numbers within
    /// the feature's range, categories of the schema; the target column is ignored, any other
    /// key is an error. A bad query is reported as an error entry; the others are explained.
    #[arg(long)]
    pub query: Option<PathBuf>,
    #[command(flatten)]
    pub recourse: RecourseArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// A device bundle (`cent export`, from the same --dataset, --model and --seed): answer with
    /// the device's explainer instead of the workstation's, exactly as a firmware running the
    /// bundle would (its quantized encoder and classifier, its atlas; the query's random
    /// generator seeded with the --row, or a --query file's 0-based position), and judge each
    /// answer on the host: the full-precision model's class and probability, the constraints,
    /// how far the nearest people agree. --n is 1 to 3 (the firmware's); --max-search is the
    /// device's (at most 255); --k, --widen, --plausibility and --min-probability are the
    /// workstation's and refused with a bundle.
    #[arg(long, conflicts_with = "onnx")]
    pub bundle: Option<PathBuf>,
    /// How the device explains with --bundle (a firmware's `CentOptions`).
    #[command(flatten, next_help_heading = "Device explainer (with --bundle)")]
    pub device: DeviceArgs,
}

/// What a counterfactual must satisfy and how hard to look: shared by `explain` and `batch`.
#[derive(Debug, Args)]
pub struct RecourseArgs {
    /// Desired class (name or index); default: any class but the current one.
    #[arg(long)]
    pub desired: Option<String>,
    /// Counterfactuals to return (from distinct tree leaves; at least 1).
    #[arg(long, default_value_t = 3)]
    pub n: usize,
    /// Latent neighbours (k/2 per side; at least 1).
    #[arg(long, default_value_t = 1000)]
    pub k: usize,
    /// Contrast leaves turned into candidates at most (at least 1).
    #[arg(long, default_value_t = 50)]
    pub max_search: usize,
    /// When the model confirms no candidate, widen the neighbourhood (k × 4) up to this many
    /// times before the last resort: the nearest reachable person of the target class, with the
    /// changes the model does not need set back (0: straight to the last resort).
    #[arg(long, default_value_t = Config::default().widen)]
    pub widen: u8,
    /// Weight of plausibility against the size of the move, 0 to 1. At 0 a region of the target
    /// class becomes the point just inside its boundary; above 0 the point may also be taken
    /// towards (or onto) the values of the region's nearest person of the target class, and
    /// points whose 5 nearest people (in the data, and the applicant as they are) the model
    /// mostly gives the target class are preferred. When those people do not all agree with the
    /// best region's answer, or it keeps a change the decision does not need, the next two
    /// regions' answers (pared down, no larger) may take its place; when they do not all agree,
    /// so may the nearest reachable people of the target class (pared down, with no more
    /// needless changes).
    #[arg(long, default_value_t = Config::default().plausibility, value_parser = super::unit_interval)]
    pub plausibility: f32,
    /// Keep single moves out: by default (plausibility above 0), when the best answer's nearest
    /// people do not all agree with it, every feature the query may change is also tried alone
    /// (a linked group together: marital status with the household role) at each category or
    /// at values people have, and the best such move the model confirms takes first place when
    /// it scores better and keeps no more needless changes.
    #[arg(long)]
    pub no_single_moves: bool,
    /// The model's probability of the target class a counterfactual needs, 0 to 1 (a point just
    /// past the boundary, at 0.51, is undone by the smallest model update). E.g.
    /// `--min-probability 0.7`.
    #[arg(long, default_value_t = Config::default().min_probability, value_parser = super::unit_interval)]
    pub min_probability: f32,
    /// Features that must not change (comma-separated names), on top of the schema's. A feature
    /// may appear in only one of --immutable, --increase-only, --decrease-only and --free.
    #[arg(long, value_delimiter = ',')]
    pub immutable: Vec<String>,
    /// Features that may only increase: numbers, binary and ordered categorical features
    /// (a schema's `ordered = true`), e.g. `--increase-only hours-per-week,education`.
    #[arg(long, value_delimiter = ',')]
    pub increase_only: Vec<String>,
    /// Features that may only decrease (numbers, binary and ordered categorical features).
    #[arg(long, value_delimiter = ',')]
    pub decrease_only: Vec<String>,
    /// Features that may change freely (lifts the schema's constraint).
    #[arg(long, value_delimiter = ',')]
    pub free: Vec<String>,
    /// Per-feature edit cost, FEATURE=WEIGHT (repeatable; default 1).
    #[arg(long)]
    pub cost: Vec<String>,
}

impl RecourseArgs {
    /// The explainer's settings; `seed` is the data options' `--seed`.
    pub fn config(&self, seed: u64) -> Config {
        Config {
            k: self.k,
            max_search: self.max_search,
            n: self.n,
            seed,
            widen: self.widen,
            plausibility: self.plausibility,
            single_moves: !self.no_single_moves,
            min_probability: self.min_probability,
            ..Config::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitArg {
    Train,
    Test,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// One query's result as JSON (see README, "JSON output").
#[derive(Debug, Serialize)]
struct JsonResult {
    query: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    values: Vec<Named>,
    /// The model's decision for the query.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<ClassOut>,
    /// The decision is already the schema's favourable class and no --desired class was asked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    already_favourable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<Explanation>,
    /// The device's answers (`--bundle`).
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<DeviceExplanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_found: Option<String>,
    /// The query could not be read or explained.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct Named {
    feature: String,
    value: String,
}

/// What became of one query.
enum Outcome {
    /// The model already gives the favourable class and no other class was asked for.
    Favourable,
    Explained(Explanation),
    /// The device's answers (`--bundle`), judged on the host.
    Device(DeviceExplanation),
    NotFound(String),
    Error(String),
}

pub fn run(args: &ExplainArgs) -> Result<ExitCode> {
    check_counts(&args.recourse)?;
    let device_options = device_options(args)?;
    // A bundle that cannot be read fails before the data and models are loaded.
    let bundle = match &args.bundle {
        Some(path) => Some((path, validate::read_bundle(path)?)),
        None => None,
    };
    // So does a query file that cannot be opened.
    if let Some(path) = &args.query {
        std::fs::File::open(path).with_context(|| format!("cannot read query file {}", path.display()))?;
    }
    let a = args.data.setup().load()?;
    let enc = &a.prepared.encoding;
    let q = build_query(&args.recourse, &a)?;
    let desired = args.recourse.desired.as_deref().map(|d| class_index(enc, d)).transpose()?;
    let queries = queries(args, &a)?;
    let config = args.recourse.config(args.data.seed);
    let model = a.black_box(args.data.onnx.as_deref())?;
    if let Some(path) = args.data.onnx.as_deref() {
        // The built-in model was judged at load; a user's model is judged here, on the same rows.
        let scores = cent_host::blackbox::scores(model.as_ref(), &a.prepared.test.data, &a.prepared.test_labels)?;
        super::warn_dominant(&format!("the ONNX model {}", path.display()), &scores, &a);
    }
    let explainer = Explainer::new(enc, model.as_ref(), &a.vae.encoder, &a.prepared.train.data, config)?;
    let mut device = match (&bundle, device_options) {
        (Some((path, bytes)), Some(options)) => {
            let origin = path.display().to_string();
            let preview = Preview::new(bytes, &origin, &a, args.data.seed, &explainer, model.as_ref())?;
            if !args.data.quiet {
                eprintln!("device: bundle {origin} ({}); {}", preview.name(), export_cmd::device_options(&options));
            }
            Some((preview, options))
        }
        _ => None,
    };
    let (mut errors, mut not_found) = (0, 0);
    let mut json = Vec::new();
    for (label, seed, row) in queries {
        let x = row.as_ref().ok();
        let decision = x.map(|x| decision(model.as_ref(), enc, x)).transpose();
        let outcome = match (&row, &decision) {
            (Err(e), _) | (_, Err(e)) => Outcome::Error(format!("{e:#}")),
            (Ok(_), Ok(Some(d))) if desired.is_none() && d.index == enc.favourable() => Outcome::Favourable,
            (Ok(x), _) => match &mut device {
                Some((preview, options)) => {
                    let start = Instant::now();
                    let result = preview.explain(x, &q, desired, *options, args.recourse.n, seed);
                    if !args.data.quiet {
                        eprintln!("{label}: explained by the device in {:.2} ms", start.elapsed().as_secs_f64() * 1e3);
                    }
                    match result {
                        Ok(d) => Outcome::Device(d),
                        Err(e) => Outcome::Error(e.to_string()),
                    }
                }
                None => explain_one(&explainer, x, &q, desired, &label, args.data.quiet),
            },
        };
        let decision = decision.ok().flatten();
        match &outcome {
            Outcome::Error(e) => {
                errors += 1;
                eprintln!("error: {label}: {e}");
            }
            Outcome::NotFound(_) => not_found += 1,
            Outcome::Device(d) if !d.found() => not_found += 1,
            _ => {}
        }
        match args.format {
            Format::Text => print_text(&label, decision.as_ref(), &outcome)?,
            Format::Json => json.push(to_json(label, enc, decision, x, outcome)),
        }
    }
    if args.format == Format::Json {
        // One document for one query, an array for several.
        let doc = match json.as_slice() {
            [one] => serde_json::to_string_pretty(one)?,
            all => serde_json::to_string_pretty(all)?,
        };
        outln!("{doc}")?;
    }
    Ok(exit_code(errors, not_found))
}

fn explain_one(e: &Explainer<'_>, x: &[f32], q: &Query, desired: Option<usize>, label: &str, quiet: bool) -> Outcome {
    let start = Instant::now();
    let result = e.explain(x, q, desired);
    if !quiet {
        eprintln!("{label}: explained in {:.2} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    match result {
        Ok(e) => Outcome::Explained(e),
        Err(e @ ExplainError::NotFound(_)) => Outcome::NotFound(e.to_string()),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// The device explainer's options with `--bundle` (`--max-search` included), `None` without
/// it; a device option without a bundle, or a workstation option with one, is a usage error.
fn device_options(args: &ExplainArgs) -> Result<Option<Options>> {
    let options = args.device.options();
    let Some(_) = &args.bundle else {
        if options != Options::default() {
            return Err(super::usage(
                "--lead, --candidates, --compare-calls, --runner-up-calls, --people-calls, --defer-below and \
                 --balance-calls set how a device explains: they need --bundle",
            ));
        }
        return Ok(None);
    };
    let r = &args.recourse;
    let host = Config::default();
    for (flag, set) in [
        ("--k", r.k != host.k),
        ("--widen", r.widen != host.widen),
        ("--plausibility", r.plausibility != host.plausibility),
        ("--no-single-moves", r.no_single_moves),
        ("--min-probability", r.min_probability != host.min_probability),
    ] {
        if set {
            return Err(super::usage(format!(
                "{flag} sets the workstation's explainer; with --bundle the device's answers are shown \
                 (its options: --lead, --candidates, ...)"
            )));
        }
    }
    if r.n > MAX_ANSWERS {
        return Err(super::usage(format!("--n {}: a device gives 1 to {MAX_ANSWERS} answers", r.n)));
    }
    let max_search = u8::try_from(r.max_search)
        .map_err(|_| super::usage(format!("--max-search {}: the device examines at most 255 regions", r.max_search)))?;
    Ok(Some(Options { max_search, ..options }))
}

/// Why a device explanation counts as no counterfactual: nothing answered, or nothing the
/// full-precision model confirms.
fn device_not_found(d: &DeviceExplanation) -> String {
    match (d.not_found, d.answers.len()) {
        (Some(reason), _) => format!("the device found no counterfactual: {reason}"),
        (None, n) => format!("the full-precision model confirms none of the device's {n} answer(s)"),
    }
}

fn print_device(label: &str, d: &DeviceExplanation) -> Result<()> {
    let wanted = d.desired.clone().unwrap_or_else(|| format!("anything but {}", d.fact.name));
    outln!("{label}: the model says {} (p = {:.2}); wanted: {wanted}", d.fact.name, d.fact.probability)?;
    outln!(
        "  device: its classifier says {}; anchor {}, {} contrast regions examined, {} candidates rejected",
        d.device_fact,
        d.anchor,
        d.examined,
        d.rejected
    )?;
    if !d.found() {
        outln!("  {}", device_not_found(d))?;
    }
    for c in &d.answers {
        let source = match c.source {
            Source::Region { .. } => format!("a region of the anchor's tree (cost {:.3})", c.cost),
            Source::Person => "from a person the anchor carries, pared down".to_string(),
        };
        // The probability the workstation's answers need: the device aims at it with its lead.
        let least = Config::default().min_probability;
        let verdict = if c.confirmed && c.model.probability >= least {
            "confirmed by the model".to_string()
        } else if c.confirmed {
            format!("confirmed by the model, but below the {least} the workstation's answers need")
        } else {
            let device = c.device_class.as_deref().unwrap_or("no class");
            format!("NOT confirmed by the model: the device's classifier said {device}")
        };
        outln!(
            "  {}. -> {} (p = {:.2}), {verdict}; {} feature(s) changed; {source}, nearest people agreeing {:.1}",
            c.rank,
            c.model.name,
            c.model.probability,
            c.l0,
            c.agreement
        )?;
        print_changes(&c.changes, &c.rules)?;
        if let Some(v) = &c.violation {
            outln!("       breaks a constraint: {v}")?;
        }
        if c.unseen_values > 0 || c.broken_links > 0 {
            outln!(
                "       {} value(s) no training row holds, {} schema link(s) broken",
                c.unseen_values,
                c.broken_links
            )?;
        }
    }
    Ok(())
}

/// An answer's changes, aligned, and the region it lies in.
fn print_changes(changes: &[Change], rules: &[String]) -> Result<()> {
    let width = changes.iter().map(|ch| ch.feature.len()).max().unwrap_or(0);
    let mut lead = None;
    for ch in changes {
        let with = goes_with(&mut lead, ch).map(|first| format!("  (goes with {first})")).unwrap_or_default();
        outln!("       {:width$}  {} -> {}{with}", ch.feature, ch.before_text(), ch.after_text())?;
    }
    if !rules.is_empty() {
        outln!("       region: {}", rules.join("; "))?;
    }
    Ok(())
}

/// In a list of changes where linked features follow the first of their link
/// (`Explainer::changes`): the first that `ch` goes with, or `None` when `ch` leads (or stands
/// alone). `lead` carries the current link's first from one change to the next.
fn goes_with<'a>(lead: &mut Option<&'a str>, ch: &'a Change) -> Option<&'a str> {
    match *lead {
        Some(first) if ch.linked.iter().any(|f| f == first) => Some(first),
        _ => {
            *lead = (!ch.linked.is_empty()).then_some(ch.feature.as_str());
            None
        }
    }
}

/// 1 when any query failed, else 3 when any has no counterfactual, else 0.
fn exit_code(errors: usize, not_found: usize) -> ExitCode {
    if errors > 0 {
        ExitCode::FAILURE
    } else if not_found > 0 {
        ExitCode::from(super::EXIT_NOT_FOUND)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--n`, `--k` and `--max-search` of 0 ask for nothing.
pub fn check_counts(args: &RecourseArgs) -> Result<()> {
    for (flag, value) in [("--n", args.n), ("--k", args.k), ("--max-search", args.max_search)] {
        if value == 0 {
            return Err(super::usage(format!("{flag} 0: must be at least 1")));
        }
    }
    Ok(())
}

/// One query to explain: its label, the seed the device explains it with (the row's index, or
/// the query's 0-based position in its file) and its encoded values, or why it cannot be read.
type Labelled = (String, u64, Result<Vec<f32>>);

/// The queries to explain, a bad one carrying its error.
fn queries(args: &ExplainArgs, a: &Artifacts) -> Result<Vec<Labelled>> {
    let enc = &a.prepared.encoding;
    if let Some(path) = &args.query {
        let target = target_column(&args.data);
        let queries = query::read(path, enc, target.as_deref())?;
        if !queries.ignored.is_empty() && !args.data.quiet {
            eprintln!("{}: keys that are no feature, ignored: {}", path.display(), queries.ignored.join(", "));
        }
        return Ok(queries
            .rows
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let label = format!("{} query {}", path.display(), i + 1);
                (label, i as u64, r.and_then(|r| Ok(enc.encode_row(&r)?)))
            })
            .collect());
    }
    let row = args.row.unwrap_or(0);
    let (m, name) = match args.split {
        SplitArg::Test => (&a.prepared.test, "test"),
        SplitArg::Train => (&a.prepared.train, "train"),
    };
    if row >= m.n_rows() {
        return Err(super::usage(format!(
            "--row {row} is out of range: the {name} split of {} has {} rows (0..{})",
            a.name,
            m.n_rows(),
            m.n_rows()
        )));
    }
    Ok(vec![(format!("{name} row {row}"), row as u64, Ok(m.row(row).to_vec()))])
}

/// The schema's target column (a query file may carry it; it is ignored).
pub fn target_column(data: &DataArgs) -> Option<String> {
    let schema = match &data.schema {
        Some(path) => cent_host::data::Schema::from_file(path).ok()?,
        None => cent_host::data::builtin_schema(&data.dataset).ok()?,
    };
    Some(schema.target.column)
}

/// The schema's default constraints with the command line's overrides. A feature named in two
/// of the lists, an unknown feature or a bad cost is a usage error.
pub fn build_query(args: &RecourseArgs, a: &Artifacts) -> Result<Query> {
    let overrides = Overrides {
        immutable: args.immutable.clone(),
        increase_only: args.increase_only.clone(),
        decrease_only: args.decrease_only.clone(),
        free: args.free.clone(),
        cost: args.cost.clone(),
    };
    constraints::query(&a.prepared.encoding, &overrides, &Labels::FLAGS).map_err(super::usage)
}

pub fn class_index(enc: &Encoding, text: &str) -> Result<usize> {
    constraints::desired(enc, text, &Labels::FLAGS).map_err(super::usage)
}

fn values(enc: &Encoding, x: &[f32]) -> Vec<Named> {
    let Ok(vals) = enc.decode(x) else { return Vec::new() };
    enc.attributes()
        .iter()
        .zip(vals)
        .enumerate()
        .map(|(j, (attr, v))| Named { feature: attr.name.clone(), value: enc.format_value(j, v) })
        .collect()
}

fn decision(model: &dyn BlackBox, enc: &Encoding, x: &[f32]) -> Result<ClassOut> {
    Ok(ClassOut::decision(model, enc.classes(), x)?)
}

fn to_json(label: String, enc: &Encoding, decision: Option<ClassOut>, x: Option<&Vec<f32>>, o: Outcome) -> JsonResult {
    let mut r = JsonResult {
        query: label,
        values: x.map(|x| values(enc, x)).unwrap_or_default(),
        decision,
        already_favourable: false,
        explanation: None,
        device: None,
        not_found: None,
        error: None,
    };
    match o {
        Outcome::Favourable => r.already_favourable = true,
        Outcome::Explained(e) => r.explanation = Some(e),
        Outcome::Device(d) => {
            if !d.found() {
                r.not_found = Some(device_not_found(&d));
            }
            r.device = Some(d);
        }
        Outcome::NotFound(e) => r.not_found = Some(e),
        Outcome::Error(e) => r.error = Some(e),
    }
    r
}

fn print_text(label: &str, decision: Option<&ClassOut>, o: &Outcome) -> Result<()> {
    let e = match o {
        Outcome::Explained(e) => e,
        Outcome::Device(d) => return print_device(label, d),
        Outcome::NotFound(e) => return outln!("{label}: {e}"),
        Outcome::Error(e) => return outln!("{label}: error: {e}"),
        Outcome::Favourable => {
            let (name, p) = decision.map_or((String::new(), 0.0), |d| (d.name.clone(), d.probability));
            return outln!(
                "{label}: the model already gives the favourable outcome, {name} (p = {p:.2}); nothing to change \
                 (--desired CLASS asks for another class)"
            );
        }
    };
    let wanted = e.desired.clone().unwrap_or_else(|| format!("anything but {}", e.fact.name));
    outln!("{label}: the model says {} (p = {:.2}); wanted: {wanted}", e.fact.name, e.fact.probability)?;
    if e.tree_nodes == 0 {
        outln!("  no region of a local surrogate was confirmed; the answer starts from the nearest reachable person")?;
    } else {
        outln!(
            "  local surrogate: {} nodes, fidelity {:.3} on held-out neighbours ({} neighbours); {} contrast regions examined",
            e.tree_nodes,
            e.fidelity,
            e.neighbours,
            e.examined
        )?;
    }
    for c in &e.counterfactuals {
        let realization = match c.realization {
            Realization::Boundary => "just inside the region".to_string(),
            Realization::Between => "half-way to the region's nearest person of that class".to_string(),
            Realization::Exemplar => "values of the region's nearest person of that class".to_string(),
            Realization::Nearest => "from the nearest reachable person of that class, pared down".to_string(),
            Realization::SingleMove => "one move to a value people have".to_string(),
        };
        let agreement = c.agreement.map(|a| format!(", nearest people agreeing {a:.1}")).unwrap_or_default();
        outln!(
            "  {}. -> {} (p = {:.2}), cost {:.3}, {} feature(s) changed; {realization}{agreement}",
            c.rank,
            c.class.name,
            c.class.probability,
            c.cost,
            c.l0
        )?;
        print_changes(&c.changes, &c.rules)?;
    }
    Ok(())
}

/// `cent demo`: explain a few refused test applicants in plain language.
pub fn demo(data: &DataArgs, count: usize) -> Result<ExitCode> {
    if count == 0 {
        return Err(super::usage("--count 0: must be at least 1"));
    }
    let a = data.setup().load()?;
    let enc = &a.prepared.encoding;
    let (what, accuracy) = super::describe_black_box(&a, data.onnx.as_deref())?;
    outln!(
        "cent demo — {} ({} training rows); black box: {what}, test accuracy {accuracy:.3}",
        a.name,
        a.prepared.train_labels.len(),
    )?;
    let favourable = enc.favourable();
    let q = enc.to_core_schema().default_query();
    let config = Config { seed: data.seed, ..Config::default() };
    let model = a.black_box(data.onnx.as_deref())?;
    let explainer = Explainer::new(enc, model.as_ref(), &a.vae.encoder, &a.prepared.train.data, config)?;
    let fixed: Vec<&str> = enc
        .attributes()
        .iter()
        .zip(&q.mutability)
        .filter(|(_, m)| **m == Mutability::Immutable)
        .map(|(a, _)| a.name.as_str())
        .collect();
    if fixed.is_empty() {
        outln!("Constraints: every feature may change, within its observed range.")?;
    } else {
        outln!("Constraints: never change {}; other features move within their observed ranges.", fixed.join(", "))?;
    }
    let mut kept: Vec<String> = Vec::new();
    let numeric = |a: &&Attribute| matches!(a.kind, Kind::Integer | Kind::Continuous);
    if enc.attributes().iter().filter(numeric).any(|a| a.support == ValueSupport::Observed) {
        kept.push("Whole numbers take values people in the data have".into());
    }
    if let Some((code, meaning)) = enc.attributes().iter().find_map(|a| a.codes.first()) {
        kept.push(format!("codes such as {code} ({meaning}) are states, never a value to move to"));
    }
    kept.extend(enc.links().iter().map(|l| {
        let names = l.features.iter().map(|&j| enc.attributes()[j].name.as_str()).collect::<Vec<_>>().join(" × ");
        match l.min_rows {
            0 | 1 => format!("{names} only take combinations people have"),
            n => format!("{names} only take combinations at least {n} people have"),
        }
    }));
    if !kept.is_empty() {
        outln!("{}.", kept.join("; "))?;
    }
    outln!(
        "Each answer needs the model's probability {} or more and is pared down to the changes it needs.\n",
        Config::default().min_probability
    )?;
    let preds = model.predict(&a.prepared.test.data)?;
    let refused = preds.iter().enumerate().filter(|(_, p)| **p != favourable).map(|(i, _)| i);
    let mut shown = 0;
    for row in refused {
        if shown == count {
            break;
        }
        let x = a.prepared.test.row(row);
        let start = Instant::now();
        let result = explainer.explain(x, &q, Some(favourable));
        let ms = start.elapsed().as_secs_f64() * 1e3;
        shown += 1;
        plain_language(row, enc, x, &result, ms)?;
    }
    if shown == 0 {
        outln!("The model refuses nobody in the test split: nothing to explain.")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn plain_language(row: usize, enc: &Encoding, x: &[f32], r: &Result<Explanation, ExplainError>, ms: f64) -> Result<()> {
    let vals = enc.decode(x).unwrap_or_default();
    let profile: Vec<String> = enc
        .attributes()
        .iter()
        .zip(&vals)
        .enumerate()
        .take(6)
        .map(|(j, (attr, v))| format!("{} {}", attr.name, enc.describe_value(j, *v)))
        .collect();
    outln!("Applicant {row} ({}, …)", profile.join(", "))?;
    match r {
        Ok(e) => {
            outln!("  is refused: the model predicts {} (p = {:.2}).", e.fact.name, e.fact.probability)?;
            for c in &e.counterfactuals {
                // A linked feature follows the first of its link: "relationship with it from …".
                let mut link_first = None;
                let changes: Vec<String> = c
                    .changes
                    .iter()
                    .map(|ch| {
                        let verb = if goes_with(&mut link_first, ch).is_some() { "with it from" } else { "went from" };
                        format!("{} {verb} {} to {}", ch.feature, ch.before_text(), ch.after_text())
                    })
                    .collect();
                let lead = if c.rank == 1 { "Suggested" } else { "Alternative" };
                outln!(
                    "  {lead}: if {}, the model would predict {} (p = {:.2}) — confirmed by the model.",
                    join_and(&changes),
                    c.class.name,
                    c.class.probability
                )?;
            }
            if e.tree_nodes == 0 {
                outln!("  (from the nearest reachable person of that class, {ms:.1} ms)\n")?;
            } else {
                outln!("  ({} neighbours, surrogate fidelity {:.2}, {ms:.1} ms)\n", e.neighbours, e.fidelity)?;
            }
        }
        Err(err) => outln!("  {err}\n")?,
    }
    Ok(())
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::from("nothing changed"),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(feature: &str, linked: &[&str]) -> Change {
        Change {
            feature: feature.into(),
            before: "a".into(),
            after: "b".into(),
            before_means: None,
            after_means: None,
            linked: linked.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn test_a_links_later_features_name_its_first() {
        let changes = [
            change("education-num", &["education"]),
            change("education", &["education-num"]),
            change("hours", &[]),
            change("marital", &["relationship", "sex"]),
            change("relationship", &["marital", "sex"]),
            change("sex", &["marital", "relationship"]),
        ];
        let mut lead = None;
        let named: Vec<Option<&str>> = changes.iter().map(|ch| goes_with(&mut lead, ch)).collect();
        assert_eq!(named, [None, Some("education-num"), None, None, Some("marital"), Some("marital")]);
    }
}
