//! `cent explain` and `cent demo`.

use super::{DataArgs, query};
use anyhow::{Result, bail};
use cent_host::artifacts::Artifacts;
use cent_host::blackbox::BlackBox;
use cent_host::data::Encoding;
use cent_host::explain::{ClassOut, Config, ExplainError, Explainer, Explanation};
use cent_nostd::schema::{Mutability, Query};
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
    /// A JSON object/array or CSV file of raw feature values (by feature name) to explain.
    #[arg(long)]
    pub query: Option<PathBuf>,
    /// Desired class (name or index); default: any class but the current one.
    #[arg(long)]
    pub desired: Option<String>,
    /// Counterfactuals to return (from distinct tree leaves).
    #[arg(long, default_value_t = 3)]
    pub n: usize,
    /// Latent neighbours (k/2 per side).
    #[arg(long, default_value_t = 1000)]
    pub k: usize,
    /// Contrast leaves turned into candidates at most.
    #[arg(long, default_value_t = 50)]
    pub max_search: usize,
    /// Features that must not change (comma-separated names), on top of the schema's.
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
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
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
    values: Vec<Named>,
    /// The model's decision for the query.
    decision: ClassOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<Explanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_found: Option<String>,
}

#[derive(Debug, Serialize)]
struct Named {
    feature: String,
    value: String,
}

pub fn run(args: &ExplainArgs) -> Result<ExitCode> {
    let a = args.data.setup().load()?;
    let enc = &a.prepared.encoding;
    let queries = queries(args, &a)?;
    let q = build_query(args, &a)?;
    let desired = args.desired.as_deref().map(|d| class_index(enc, d)).transpose()?;
    let config =
        Config { k: args.k, max_search: args.max_search, n: args.n, seed: args.data.seed, ..Config::default() };
    let model = a.black_box(args.data.onnx.as_deref())?;
    let explainer = Explainer::new(enc, model.as_ref(), &a.vae.encoder, &a.prepared.train.data, config);
    let mut all_found = true;
    let mut json = Vec::new();
    for (label, x) in &queries {
        let start = Instant::now();
        let result = explainer.explain(x, &q, desired);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if !args.data.quiet {
            eprintln!("{label}: explained in {ms:.2} ms");
        }
        match (&result, args.format) {
            (Err(ExplainError::NotFound(_)), _) => all_found = false,
            (Err(e), _) => bail!("{label}: {e}"),
            _ => {}
        }
        match args.format {
            Format::Text => print_text(label, &result),
            Format::Json => json.push(to_json(label, enc, decision(model.as_ref(), enc, x), x, result)),
        }
    }
    if args.format == Format::Json {
        let doc = if json.len() == 1 {
            serde_json::to_string_pretty(&json[0])?
        } else {
            serde_json::to_string_pretty(&json)?
        };
        println!("{doc}");
    }
    Ok(if all_found { ExitCode::SUCCESS } else { ExitCode::from(super::EXIT_NOT_FOUND) })
}

fn queries(args: &ExplainArgs, a: &Artifacts) -> Result<Vec<(String, Vec<f32>)>> {
    let enc = &a.prepared.encoding;
    if let Some(path) = &args.query {
        let rows = query::read(path, enc)?;
        return rows
            .iter()
            .enumerate()
            .map(|(i, r)| Ok((format!("{} query {}", path.display(), i + 1), enc.encode_row(r)?)))
            .collect();
    }
    let row = args.row.unwrap_or(0);
    let (m, name) = match args.split {
        SplitArg::Test => (&a.prepared.test, "test"),
        SplitArg::Train => (&a.prepared.train, "train"),
    };
    if row >= m.n_rows() {
        bail!(
            "--row {row} is out of range: the {name} split of {} has {} rows (0..{})",
            a.name,
            m.n_rows(),
            m.n_rows()
        );
    }
    Ok(vec![(format!("{name} row {row}"), m.row(row).to_vec())])
}

/// The schema's default constraints with the command line's overrides.
pub fn build_query(args: &ExplainArgs, a: &Artifacts) -> Result<Query> {
    let enc = &a.prepared.encoding;
    let mut q = enc.to_core_schema().default_query();
    let lists = [
        (&args.immutable, Mutability::Immutable),
        (&args.increase_only, Mutability::IncreaseOnly),
        (&args.decrease_only, Mutability::DecreaseOnly),
        (&args.free, Mutability::Free),
    ];
    for (names, m) in lists {
        for name in names.iter().filter(|n| !n.trim().is_empty()) {
            q.mutability[enc.feature_index(name.trim())?] = m;
        }
    }
    for spec in &args.cost {
        let (j, w) = enc.parse_cost(spec)?;
        q.cost[j] = w;
    }
    // A direction on an unordered categorical feature is a meaningless request.
    enc.check_query(&q).map_err(super::usage)?;
    Ok(q)
}

fn class_index(enc: &Encoding, text: &str) -> Result<usize> {
    if let Some(i) = enc.classes().iter().position(|c| c == text) {
        return Ok(i);
    }
    match text.parse::<usize>() {
        Ok(i) if i < enc.classes().len() => Ok(i),
        _ => bail!("unknown class `{text}`; classes: {}", enc.classes().join(", ")),
    }
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

fn decision(model: &dyn BlackBox, enc: &Encoding, x: &[f32]) -> ClassOut {
    let p = model.predict_proba(x);
    let index = (0..p.len()).fold(0, |b, i| if p[i] > p[b] { i } else { b });
    let name = enc.classes().get(index).cloned().unwrap_or_default();
    ClassOut { index, name, probability: p[index] }
}

fn to_json(
    label: &str,
    enc: &Encoding,
    decision: ClassOut,
    x: &[f32],
    r: Result<Explanation, ExplainError>,
) -> JsonResult {
    let (explanation, not_found) = match r {
        Ok(e) => (Some(e), None),
        Err(e) => (None, Some(e.to_string())),
    };
    JsonResult { query: label.to_string(), values: values(enc, x), decision, explanation, not_found }
}

fn print_text(label: &str, r: &Result<Explanation, ExplainError>) {
    let e = match r {
        Ok(e) => e,
        Err(err) => {
            println!("{label}: {err}");
            return;
        }
    };
    let wanted = e.desired.clone().unwrap_or_else(|| format!("anything but {}", e.fact.name));
    println!("{label}: the model says {} (p = {:.2}); wanted: {wanted}", e.fact.name, e.fact.probability);
    println!(
        "  local surrogate: {} nodes, fidelity {:.3} on held-out neighbours ({} neighbours); {} contrast regions examined",
        e.tree_nodes, e.fidelity, e.neighbours, e.examined
    );
    for c in &e.counterfactuals {
        println!(
            "  {}. -> {} (p = {:.2}), cost {:.3}, {} feature(s) changed",
            c.rank, c.class.name, c.class.probability, c.cost, c.l0
        );
        let width = c.changes.iter().map(|ch| ch.feature.len()).max().unwrap_or(0);
        for ch in &c.changes {
            println!("       {:width$}  {} -> {}", ch.feature, ch.before, ch.after);
        }
        if !c.rules.is_empty() {
            println!("       region: {}", c.rules.join("; "));
        }
    }
}

/// `cent demo`: explain a few refused test applicants in plain language.
pub fn demo(data: &DataArgs, count: usize) -> Result<ExitCode> {
    let a = data.setup().load()?;
    let enc = &a.prepared.encoding;
    let (what, accuracy) = super::describe_black_box(&a, data.onnx.as_deref())?;
    println!(
        "cent demo — {} ({} training rows); black box: {what}, test accuracy {accuracy:.3}",
        a.name,
        a.prepared.train_labels.len(),
    );
    let favourable = enc.favourable();
    let q = enc.to_core_schema().default_query();
    let config = Config { seed: data.seed, ..Config::default() };
    let model = a.black_box(data.onnx.as_deref())?;
    let explainer = Explainer::new(enc, model.as_ref(), &a.vae.encoder, &a.prepared.train.data, config);
    let fixed: Vec<&str> = enc
        .attributes()
        .iter()
        .zip(&q.mutability)
        .filter(|(_, m)| **m == Mutability::Immutable)
        .map(|(a, _)| a.name.as_str())
        .collect();
    println!("Constraints: never change {}; other features move within their observed ranges.\n", fixed.join(", "));
    let preds = model.predict(&a.prepared.test.data);
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
        plain_language(row, enc, x, &result, ms);
    }
    if shown == 0 {
        println!("The model refuses nobody in the test split: nothing to explain.");
    }
    Ok(ExitCode::SUCCESS)
}

fn plain_language(row: usize, enc: &Encoding, x: &[f32], r: &Result<Explanation, ExplainError>, ms: f64) {
    let vals = enc.decode(x).unwrap_or_default();
    let profile: Vec<String> = enc
        .attributes()
        .iter()
        .zip(&vals)
        .enumerate()
        .take(6)
        .map(|(j, (attr, v))| format!("{} {}", attr.name, enc.format_value(j, *v)))
        .collect();
    println!("Applicant {row} ({}, …)", profile.join(", "));
    match r {
        Ok(e) => {
            println!("  is refused: the model predicts {} (p = {:.2}).", e.fact.name, e.fact.probability);
            for c in &e.counterfactuals {
                let changes: Vec<String> = c
                    .changes
                    .iter()
                    .map(|ch| format!("{} went from {} to {}", ch.feature, ch.before, ch.after))
                    .collect();
                let lead = if c.rank == 1 { "Cheapest way" } else { "Alternative" };
                println!(
                    "  {lead}: if {}, the model would predict {} (p = {:.2}) — confirmed by the model.",
                    join_and(&changes),
                    c.class.name,
                    c.class.probability
                );
            }
            println!("  ({} neighbours, surrogate fidelity {:.2}, {ms:.1} ms)\n", e.neighbours, e.fidelity);
        }
        Err(err) => println!("  {err}\n"),
    }
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::from("nothing changed"),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
