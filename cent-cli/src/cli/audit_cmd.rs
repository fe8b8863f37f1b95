//! `cent audit`: recourse by group over the JSON Lines of `cent batch`.

use anyhow::{Context, Result, bail};
use cent_host::audit::{self, Record, Recourse};
use clap::Args;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The JSON Lines `cent batch` wrote.
    #[arg(long)]
    pub results: PathBuf,
    /// The CSV `cent batch` read (each result's `line` points into it).
    #[arg(long)]
    pub input: PathBuf,
    /// Columns of the input to group by (comma-separated), e.g. `--by sex,race`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub by: Vec<String>,
    /// Folder for `audit.md`, `audit.json` and `audit.svg` (created if missing).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: &AuditArgs) -> Result<ExitCode> {
    let groups = group_values(&args.input, &args.by)?;
    let file = std::fs::File::open(&args.results).with_context(|| format!("cannot read {}", args.results.display()))?;
    let mut records = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let place = || format!("{}: line {}", args.results.display(), i + 1);
        let line = line.with_context(place)?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line).with_context(|| format!("{}: not JSON", place()))?;
        let Some(at) = v["line"].as_u64() else { bail!("{}: no `line` field", place()) };
        let Some(values) = groups.get(&(at as usize)) else {
            bail!("{}: input line {at} is not in {}", place(), args.input.display())
        };
        if v.get("error").is_some() {
            continue;
        }
        let refused = v["already_favourable"] != true;
        let best = &v["explanation"]["counterfactuals"][0];
        let recourse = best.is_object().then(|| Recourse {
            cost: best["cost"].as_f64().unwrap_or(f64::NAN),
            l0: best["l0"].as_u64().unwrap_or(0) as usize,
            probability: best["class"]["probability"].as_f64().unwrap_or(f64::NAN) as f32,
        });
        records.push(Record { groups: values.clone(), refused, recourse });
    }
    let report = audit::audit(&args.by, records);
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let md = args.out.join("audit.md");
    std::fs::write(&md, report.markdown()).with_context(|| format!("cannot write {}", md.display()))?;
    let json = args.out.join("audit.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let svg = args.out.join("audit.svg");
    report.plot(&svg).map_err(|e| anyhow::anyhow!("cannot draw {}: {e}", svg.display()))?;
    outln!("wrote {}, {} and {} ({} people)", md.display(), json.display(), svg.display(), report.people)?;
    Ok(ExitCode::SUCCESS)
}

/// Each data line's values of the `by` columns.
fn group_values(path: &Path, by: &[String]) -> Result<HashMap<usize, Vec<String>>> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).flexible(true).from_reader(BufReader::new(file));
    let headers: Vec<String> = reader.headers()?.iter().map(|h| h.trim_start_matches('\u{feff}').to_string()).collect();
    let mut columns = Vec::with_capacity(by.len());
    for name in by {
        match headers.iter().position(|h| h == name) {
            Some(c) => columns.push(c),
            None => bail!("{}: no column `{name}` to group by; columns: {}", path.display(), headers.join(", ")),
        }
    }
    let mut out = HashMap::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("{}: malformed CSV", path.display()))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        out.insert(line, columns.iter().map(|&c| record.get(c).unwrap_or("").to_string()).collect());
    }
    Ok(out)
}
