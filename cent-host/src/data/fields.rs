//! A person given as named raw fields (`age` → `39`, `workclass` → `Private`), as query files,
//! batch inputs and bindings give them, checked and parsed into the encoding's feature order.
//!
//! Rules: every feature of the schema is given, once, by name; numbers lie in the feature's
//! range and categories are the schema's (read with its `map` and `other`, as the data are);
//! any other name (the schema's target column, an identifier, a column the schema drops) is
//! ignored. A missing feature is an error that names the given names close to it (a typo).

use super::encoding::{Encoding, LookupError};
use super::table::Value;

/// Why named fields are not a row of the encoding.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    #[error("feature `{0}` is given twice")]
    Twice(String),
    /// Features no name gives; `hint` names the given names close to them (` (`agee` is given: …)`).
    #[error("missing feature(s): {}{hint}", .missing.join(", "))]
    Missing { missing: Vec<String>, hint: String },
    /// A value that does not parse or lies outside the feature's range or categories.
    #[error("{0}")]
    Value(String),
}

impl From<LookupError> for FieldError {
    fn from(e: LookupError) -> Self {
        FieldError::Value(e.to_string())
    }
}

/// The names among `names` that are no feature of `encoding` (a reader ignores them), once
/// every feature is given exactly once.
///
/// # Errors
/// [`FieldError::Twice`] for a feature named twice, [`FieldError::Missing`] naming every
/// feature no name gives.
pub fn check_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
    encoding: &Encoding,
) -> Result<Vec<String>, FieldError> {
    let mut given = vec![false; encoding.n_features()];
    let mut others = Vec::new();
    for name in names {
        match encoding.feature_index(name).ok().and_then(|j| given.get_mut(j)) {
            Some(seen) if *seen => return Err(FieldError::Twice(name.to_string())),
            Some(seen) => *seen = true,
            None => others.push(name.to_string()),
        }
    }
    let missing: Vec<&str> =
        encoding.attributes().iter().zip(&given).filter(|(_, g)| !**g).map(|(a, _)| a.name.as_str()).collect();
    if missing.is_empty() { Ok(others) } else { Err(missing_error(&missing, &others)) }
}

/// The raw row (one [`Value`] per feature, in the encoding's order) that `fields` give; names
/// that are no feature (`target`, the schema's target column, among them) are ignored.
///
/// # Errors
/// [`FieldError`] naming the first repeated or bad feature, or every missing one.
pub fn parse<'a>(
    fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    encoding: &Encoding,
    target: Option<&str>,
) -> Result<Vec<Value>, FieldError> {
    let mut row: Vec<Option<Value>> = vec![None; encoding.n_features()];
    // Borrowed: a batch row's other columns cost nothing unless a feature is missing.
    let mut others: Vec<&str> = Vec::new();
    for (name, text) in fields {
        let Some(j) = encoding.feature_index(name).ok().filter(|&j| j < row.len()) else {
            if Some(name) != target {
                others.push(name);
            }
            continue;
        };
        let slot = &mut row[j];
        if slot.is_some() {
            return Err(FieldError::Twice(name.to_string()));
        }
        *slot = Some(encoding.parse_value(j, text)?);
    }
    let missing: Vec<&str> =
        encoding.attributes().iter().zip(&row).filter(|(_, v)| v.is_none()).map(|(a, _)| a.name.as_str()).collect();
    if !missing.is_empty() {
        return Err(missing_error(&missing, &others));
    }
    Ok(row.into_iter().flatten().collect())
}

/// "missing feature(s): age", with the given names close to a missing one (`agee`).
fn missing_error<S: AsRef<str>>(missing: &[&str], others: &[S]) -> FieldError {
    let close: Vec<String> = missing
        .iter()
        .flat_map(|m| {
            others
                .iter()
                .map(AsRef::as_ref)
                .filter(|o| is_close(o, m))
                .map(move |o| format!("`{o}` is given: a typo of `{m}`?"))
        })
        .collect();
    let hint = if close.is_empty() { String::new() } else { format!(" ({})", close.join("; ")) };
    FieldError::Missing { missing: missing.iter().map(|m| (*m).to_string()).collect(), hint }
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
        let e = parse(typo.iter().copied(), enc, None).expect_err("age is missing");
        assert_eq!(e.to_string(), "missing feature(s): age (`agee` is given: a typo of `age`?)");
        assert_eq!(check_names(typo.iter().map(|f| f.0), enc), Err(e));
        let mut twice = all.clone();
        twice.push(all[0]);
        assert_eq!(parse(twice.iter().copied(), enc, None), Err(FieldError::Twice(names[0].clone())));
        assert_eq!(check_names(twice.iter().map(|f| f.0), enc), Err(FieldError::Twice(names[0].clone())));
        let e = parse(all[1..].iter().copied(), enc, None).expect_err("age is missing");
        assert_eq!(e, FieldError::Missing { missing: vec![names[0].clone()], hint: String::new() });
        assert_eq!(e.to_string(), "missing feature(s): age");

        // Other names are ignored (and named by `check_names`): the target, an identifier, a
        // column the schema drops.
        let mut more = all.clone();
        more.extend([("income", "whatever"), ("id", "17"), ("fnlwgt", "x")]);
        assert_eq!(parse(more.iter().copied(), enc, Some("income")), parse(all.iter().copied(), enc, None));
        assert_eq!(check_names(more.iter().map(|f| f.0), enc).expect("every feature"), ["income", "id", "fnlwgt"]);
    }

    #[test]
    fn test_values_are_read_with_the_schemas_other() {
        let table = crate::data::load_adult().expect("adult");
        let p = crate::data::prepare(table, 0.2, 1).expect("prepares");
        let enc = &p.encoding;
        let j = enc.feature_index("native-country").expect("a feature");
        let other = enc.category_index(j, "Other").expect("a category");
        // Adult's schema reads every country but the United States as `Other`, in its data and
        // in a person's fields alike; a feature without `other` still refuses an unknown value.
        assert_eq!(enc.parse_value(j, "Mexico").expect("read as Other"), Value::Category(other));
        assert_eq!(enc.parse_value(j, " Other ").expect("its own name"), Value::Category(other));
        let us = enc.category_index(j, "United-States").expect("a category");
        assert_eq!(enc.parse_value(j, "United-States").expect("listed"), Value::Category(us));
        let w = enc.feature_index("workclass").expect("a feature");
        let e = enc.parse_value(w, "Astronaut").expect_err("no other");
        assert!(e.to_string().starts_with("feature `workclass` has no category `Astronaut`"), "{e}");
    }
}
