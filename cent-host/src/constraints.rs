//! A person's constraints, costs and desired class given by name (`--immutable age`,
//! `--cost hours-per-week=2`, `--desired >50K`), turned into the [`Query`] and class index the
//! explainer takes. The CLI and the language bindings call the same functions, so the same
//! request gives the same query and the same error message; only the names of the lists in the
//! messages ([`Labels`]) are the caller's.

use crate::data::{Encoding, LookupError, QueryError};
use crate::profile::Query;
use cent_nostd::schema::Mutability;

/// What the caller calls each list in its messages: the CLI's flags or a binding's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    pub immutable: &'static str,
    pub increase_only: &'static str,
    pub decrease_only: &'static str,
    pub free: &'static str,
    pub cost: &'static str,
    pub desired: &'static str,
}

impl Labels {
    /// The `cent` command's flags.
    pub const FLAGS: Labels = Labels {
        immutable: "--immutable",
        increase_only: "--increase-only",
        decrease_only: "--decrease-only",
        free: "--free",
        cost: "--cost",
        desired: "--desired",
    };
}

/// Overrides of the schema's default constraints and costs, by feature name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub immutable: Vec<String>,
    pub increase_only: Vec<String>,
    pub decrease_only: Vec<String>,
    pub free: Vec<String>,
    /// `FEATURE=WEIGHT` specs.
    pub cost: Vec<String>,
}

/// Why a request does not fit the dataset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConstraintError {
    /// A list names a feature the dataset does not have.
    #[error("{list}: {error}")]
    Unknown { list: &'static str, error: LookupError },
    /// A feature is in two lists that contradict each other.
    #[error("feature `{feature}` is in both {first} and {second}")]
    Twice { feature: String, first: &'static str, second: &'static str },
    /// A malformed cost or one for an unknown feature.
    #[error("{list} {error}")]
    Cost { list: &'static str, error: LookupError },
    /// The constraints do not fit the dataset (a direction on an unordered category).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A desired class that is neither a class name nor a class index.
    #[error("{list}: unknown class `{name}`; classes: {classes}")]
    UnknownClass { list: &'static str, name: String, classes: String },
}

/// The schema's default constraints with `overrides` applied.
///
/// # Errors
/// [`ConstraintError`] naming the list and the feature: an unknown feature, a feature in two
/// lists, a bad cost, or a direction on an unordered categorical feature.
pub fn query(encoding: &Encoding, overrides: &Overrides, labels: &Labels) -> Result<Query, ConstraintError> {
    let mut q = encoding.to_core_schema().default_query();
    let lists = [
        (labels.immutable, &overrides.immutable, Mutability::Immutable),
        (labels.increase_only, &overrides.increase_only, Mutability::IncreaseOnly),
        (labels.decrease_only, &overrides.decrease_only, Mutability::DecreaseOnly),
        (labels.free, &overrides.free, Mutability::Free),
    ];
    let mut given: Vec<Option<&'static str>> = vec![None; encoding.n_features()];
    for (list, names, m) in lists {
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            let j = encoding.feature_index(name).map_err(|error| ConstraintError::Unknown { list, error })?;
            match given[j] {
                Some(first) if first != list => {
                    return Err(ConstraintError::Twice { feature: name.to_string(), first, second: list });
                }
                _ => given[j] = Some(list),
            }
            q.mutability[j] = m;
        }
    }
    for spec in &overrides.cost {
        let (j, w) = encoding.parse_cost(spec).map_err(|error| ConstraintError::Cost { list: labels.cost, error })?;
        q.cost[j] = w;
    }
    encoding.check_query(&q)?;
    Ok(q)
}

/// The index of the class called `text`, or given by its index.
///
/// # Errors
/// [`ConstraintError::UnknownClass`] listing the classes.
pub fn desired(encoding: &Encoding, text: &str, labels: &Labels) -> Result<usize, ConstraintError> {
    if let Some(i) = encoding.classes().iter().position(|c| c == text) {
        return Ok(i);
    }
    match text.parse::<usize>() {
        Ok(i) if i < encoding.classes().len() => Ok(i),
        _ => Err(ConstraintError::UnknownClass {
            list: labels.desired,
            name: text.to_string(),
            classes: encoding.classes().join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adult() -> Encoding {
        let table = crate::data::load_adult().expect("adult");
        crate::data::prepare(table, 0.2, 1).expect("prepares").encoding
    }

    #[test]
    fn test_overrides_and_messages() {
        let enc = adult();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = Overrides {
            immutable: names(&["hours-per-week"]),
            cost: names(&["capital-gain=3"]),
            ..Overrides::default()
        };
        let q = query(&enc, &o, &Labels::FLAGS).expect("valid");
        let j = enc.feature_index("hours-per-week").expect("feature");
        assert_eq!(q.mutability[j], Mutability::Immutable);
        let g = enc.feature_index("capital-gain").expect("feature");
        assert!((q.cost[g] - 3.0).abs() < 1e-6);

        let twice = Overrides { immutable: names(&["age"]), free: names(&["age"]), ..Overrides::default() };
        let e = query(&enc, &twice, &Labels::FLAGS).expect_err("twice");
        assert_eq!(e.to_string(), "feature `age` is in both --immutable and --free");

        let unknown = Overrides { increase_only: names(&["agee"]), ..Overrides::default() };
        let e = query(&enc, &unknown, &Labels::FLAGS).expect_err("unknown");
        assert!(e.to_string().starts_with("--increase-only: unknown feature `agee`"), "{e}");

        let cost = Overrides { cost: names(&["age=-1"]), ..Overrides::default() };
        let e = query(&enc, &cost, &Labels::FLAGS).expect_err("bad cost");
        assert_eq!(e.to_string(), "--cost `age=-1`: expected FEATURE=WEIGHT with a finite weight >= 0");
    }

    #[test]
    fn test_desired_by_name_or_index() {
        let enc = adult();
        assert_eq!(desired(&enc, ">50K", &Labels::FLAGS).expect("name"), 1);
        assert_eq!(desired(&enc, "0", &Labels::FLAGS).expect("index"), 0);
        let e = desired(&enc, "rich", &Labels::FLAGS).expect_err("unknown");
        assert_eq!(e.to_string(), "--desired: unknown class `rich`; classes: <=50K, >50K");
    }
}
