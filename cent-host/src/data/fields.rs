//! A person given as named raw fields (`age` → `39`, `workclass` → `Private`), as query files,
//! batch inputs and bindings give them, checked and parsed into the encoding's feature order.
//!
//! Rules: every feature of the schema is given, once, by name; numbers lie in the feature's
//! range and categories are the schema's; the schema's target column may be present and is
//! ignored; any other name is an error that suggests the close names.

use super::encoding::{Encoding, LookupError};
use super::table::Value;

/// Why named fields are not a row of the encoding.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// A name that is no feature; `hint` lists the close names, else every name.
    #[error("unknown feature `{name}`; {hint}")]
    Unknown { name: String, hint: String },
    #[error("feature `{0}` is given twice")]
    Twice(String),
    #[error("missing feature(s): {}", .0.join(", "))]
    Missing(Vec<String>),
    /// A value that does not parse or lies outside the feature's range or categories.
    #[error("{0}")]
    Value(String),
}

impl From<LookupError> for FieldError {
    fn from(e: LookupError) -> Self {
        FieldError::Value(e.to_string())
    }
}

/// The raw row (one [`Value`] per feature, in the encoding's order) that `fields` give.
/// `target` is the schema's target column, accepted as a name and ignored.
///
/// # Errors
/// [`FieldError`] naming the first unknown, repeated or bad feature, or every missing one.
pub fn parse<'a>(
    fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    encoding: &Encoding,
    target: Option<&str>,
) -> Result<Vec<Value>, FieldError> {
    let mut row: Vec<Option<Value>> = vec![None; encoding.n_features()];
    for (name, text) in fields {
        if Some(name) == target {
            continue;
        }
        let Ok(j) = encoding.feature_index(name) else {
            return Err(unknown(name, encoding));
        };
        let slot = row.get_mut(j).ok_or_else(|| unknown(name, encoding))?;
        if slot.is_some() {
            return Err(FieldError::Twice(name.to_string()));
        }
        *slot = Some(encoding.parse_value(j, text)?);
    }
    let missing: Vec<String> =
        encoding.attributes().iter().zip(&row).filter(|(_, v)| v.is_none()).map(|(a, _)| a.name.clone()).collect();
    if !missing.is_empty() {
        return Err(FieldError::Missing(missing));
    }
    Ok(row.into_iter().flatten().collect())
}

/// "unknown feature `x`", with the close names when there are any, else every name.
fn unknown(name: &str, encoding: &Encoding) -> FieldError {
    let names: Vec<&str> = encoding.attributes().iter().map(|a| a.name.as_str()).collect();
    let close: Vec<String> = names.iter().filter(|n| is_close(name, n)).map(|n| format!("`{n}`")).collect();
    let hint = if close.is_empty() {
        format!("features: {}", names.join(", "))
    } else {
        format!("did you mean {}?", close.join(" or "))
    };
    FieldError::Unknown { name: name.to_string(), hint }
}

/// Same name but for case, `_`/`-`, or at most two edits apart.
fn is_close(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_lowercase().replace('_', "-");
    let (a, b) = (norm(a), norm(b));
    a == b || edit_distance(&a, &b) <= 2.min(b.chars().count() / 3)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            row[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_close_names() {
        assert!(is_close("agee", "age"));
        assert!(!is_close("job", "age"));
        assert!(is_close("Hours_per_week", "hours-per-week"));
        assert!(is_close("incme", "income"));
        assert!(!is_close("height", "income"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn test_errors_name_the_feature() {
        let table = crate::data::load_adult().expect("adult");
        let p = crate::data::prepare(table, 0.2, 1).expect("prepares");
        let enc = &p.encoding;
        let names: Vec<String> = enc.attributes().iter().map(|a| a.name.clone()).collect();
        let person = enc.decode(p.test.row(0)).expect("decodes");
        let values: Vec<String> = person.iter().enumerate().map(|(j, &v)| enc.format_value(j, v)).collect();
        let all: Vec<(&str, &str)> = names.iter().map(String::as_str).zip(values.iter().map(String::as_str)).collect();
        assert_eq!(parse(all.iter().copied(), enc, None).expect("parses").len(), names.len());

        let mut typo = all.clone();
        typo[0].0 = "agee";
        assert!(matches!(parse(typo, enc, None), Err(FieldError::Unknown { ref hint, .. }) if hint.contains("`age`")));
        let mut twice = all.clone();
        twice.push(all[0]);
        assert_eq!(parse(twice, enc, None), Err(FieldError::Twice(names[0].clone())));
        assert_eq!(parse(all[1..].iter().copied(), enc, None), Err(FieldError::Missing(vec![names[0].clone()])));
        let mut with_target = all.clone();
        with_target.push(("income", "whatever"));
        assert!(parse(with_target, enc, Some("income")).is_ok());
    }
}
