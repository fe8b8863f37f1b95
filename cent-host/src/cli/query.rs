//! Queries given as files: a JSON object (or array of objects) or a CSV with a header, each
//! mapping feature names to raw values.

use anyhow::{Context, Result, bail};
use cent_host::data::{Encoding, Value};
use std::path::Path;

/// Reads every query in `path` as raw rows in feature order.
pub fn read(path: &Path, encoding: &Encoding) -> Result<Vec<Vec<Value>>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read query file {}", path.display()))?;
    let is_json =
        path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) || text.trim_start().starts_with(['{', '[']);
    let rows = if is_json { json_rows(&text, path)? } else { csv_rows(&text, path)? };
    if rows.is_empty() {
        bail!("{}: no query rows", path.display());
    }
    rows.iter().enumerate().map(|(i, r)| parse_row(r, encoding, path, i + 1)).collect()
}

type Fields = Vec<(String, String)>;

fn json_rows(text: &str, path: &Path) -> Result<Vec<Fields>> {
    let value: serde_json::Value =
        serde_json::from_str(text).with_context(|| format!("{}: not valid JSON", path.display()))?;
    let objects = match value {
        serde_json::Value::Array(items) => items,
        obj @ serde_json::Value::Object(_) => vec![obj],
        _ => bail!("{}: expected an object of feature values or an array of them", path.display()),
    };
    objects
        .into_iter()
        .enumerate()
        .map(|(i, o)| match o {
            serde_json::Value::Object(map) => Ok(map
                .into_iter()
                .map(|(k, v)| {
                    let text = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (k, text)
                })
                .collect()),
            _ => bail!("{}: query {} is not an object", path.display(), i + 1),
        })
        .collect()
}

fn csv_rows(text: &str, path: &Path) -> Result<Vec<Fields>> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(text.as_bytes());
    let headers = reader.headers().with_context(|| format!("{}: cannot read the CSV header", path.display()))?.clone();
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: line {}", path.display(), i + 2))?;
        rows.push(headers.iter().zip(record.iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect());
    }
    Ok(rows)
}

fn parse_row(fields: &Fields, encoding: &Encoding, path: &Path, n: usize) -> Result<Vec<Value>> {
    let mut row: Vec<Option<Value>> = vec![None; encoding.n_features()];
    for (name, text) in fields {
        let Ok(j) = encoding.feature_index(name) else {
            // The target column and other extra columns are ignored.
            continue;
        };
        let v = encoding.parse_value(j, text).with_context(|| format!("{}: query {n}", path.display()))?;
        row[j] = Some(v);
    }
    let missing: Vec<&str> =
        encoding.attributes().iter().zip(&row).filter(|(_, v)| v.is_none()).map(|(a, _)| a.name.as_str()).collect();
    if !missing.is_empty() {
        bail!("{}: query {n} lacks feature(s): {}", path.display(), missing.join(", "));
    }
    Ok(row.into_iter().flatten().collect())
}
