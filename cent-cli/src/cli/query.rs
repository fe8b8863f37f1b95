//! Queries given as files: a JSON object (or array of objects) or a CSV with a header, each
//! mapping feature names to raw values.
//!
//! Rules ([`fields`]): every feature of the schema is given, by name; numbers lie in the
//! feature's range (the schema's `range`, else the training rows' minimum and maximum) and
//! categories are the schema's (read with its `map` and `other`); any other key is ignored (the
//! schema's target column silently, the others named once). A file that cannot be parsed at
//! all is one error; a bad query is an error of that query alone, so the others are still
//! explained.

use anyhow::{Context, Result, anyhow, bail};
use cent_host::data::{Encoding, Value, fields};
use std::path::Path;

/// The queries of a file, each parsed on its own, and the keys that are no feature.
pub struct Queries {
    pub rows: Vec<Result<Vec<Value>>>,
    /// Keys of any query that are no feature nor the target, ignored, in first-seen order.
    pub ignored: Vec<String>,
}

/// Every query in `path` as raw rows in feature order, each parsed on its own. `target` is the
/// schema's target column, accepted as a key and ignored.
///
/// # Errors
/// The outer error when the file cannot be read or parsed or holds no query; an inner one per
/// query with a missing, repeated or bad value, naming the feature.
pub fn read(path: &Path, encoding: &Encoding, target: Option<&str>) -> Result<Queries> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read query file {}", path.display()))?;
    let is_json =
        path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) || text.trim_start().starts_with(['{', '[']);
    let rows = if is_json { json_rows(&text, path)? } else { csv_rows(&text, path)? };
    if rows.is_empty() {
        bail!("{}: no query rows", path.display());
    }
    let mut ignored: Vec<String> = Vec::new();
    for (key, _) in rows.iter().flatten().flatten() {
        if Some(key.as_str()) != target && encoding.feature_index(key).is_err() && !ignored.contains(key) {
            ignored.push(key.clone());
        }
    }
    let rows = rows.into_iter().map(|r| r.and_then(|r| parse_row(&r, encoding, target))).collect();
    Ok(Queries { rows, ignored })
}

pub type Fields = Vec<(String, String)>;

fn json_rows(text: &str, path: &Path) -> Result<Vec<Result<Fields>>> {
    let value: serde_json::Value =
        serde_json::from_str(text).with_context(|| format!("{}: not valid JSON", path.display()))?;
    let objects = match value {
        serde_json::Value::Array(items) => items,
        obj @ serde_json::Value::Object(_) => vec![obj],
        _ => bail!("{}: expected an object of feature values or an array of them", path.display()),
    };
    Ok(objects.into_iter().map(json_fields).collect())
}

fn json_fields(value: serde_json::Value) -> Result<Fields> {
    let serde_json::Value::Object(map) = value else {
        bail!("not a JSON object of feature values (found {})", kind_of(&value));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            serde_json::Value::Number(n) => Ok((k, n.to_string())),
            serde_json::Value::Bool(b) => Ok((k, b.to_string())),
            other => Err(anyhow!("feature `{k}`: expected a number or a string, found {}", kind_of(&other))),
        })
        .collect()
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn csv_rows(text: &str, path: &Path) -> Result<Vec<Result<Fields>>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(text.as_bytes());
    let headers = reader.headers().with_context(|| format!("{}: cannot read the CSV header", path.display()))?.clone();
    if headers.iter().all(str::is_empty) {
        bail!("{}: line 1: expected a header of feature names", path.display());
    }
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: line {}: malformed CSV", path.display(), i + 2))?;
        if record.len() != headers.len() {
            bail!("{}: line {}: expected {} fields, found {}", path.display(), i + 2, headers.len(), record.len());
        }
        rows.push(Ok(headers.iter().zip(record.iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect()));
    }
    Ok(rows)
}

pub fn parse_row(fields: &Fields, encoding: &Encoding, target: Option<&str>) -> Result<Vec<Value>> {
    Ok(fields::parse(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())), encoding, target)?)
}
