//! Datasets: schema files, CSV loading, the encoding into `f32` rows, the seeded split and
//! fetching the files that are not embedded.
//!
//! Data flows one way: [`Schema`] (TOML) → [`Table`] (raw values and labels) → [`split()`] →
//! [`Encoding`] fitted on the training rows → [`Matrix`] (row-major `f32`) for the models,
//! and [`Encoding::to_core_schema`] for the core. [`prepare`] does all of it.
//!
//! Four datasets are built in and evaluated (`adult`, `compas`, `credit`, `heloc`), plus
//! `adult-wide`, the same Adult rows with every attribute one-hot (104 columns); their schemas
//! live in `data/schemas/` and are compiled into the binary. Adult's files are embedded too
//! (gzip), so neither Adult needs a download; the others are fetched once with [`fetch::fetch`].
//!
//! ```
//! let table = cent_host::data::load_adult().unwrap();
//! let prepared = cent_host::data::prepare(table, 0.2, 7).unwrap();
//! assert_eq!(prepared.train.n_cols, prepared.encoding.n_cols());
//! assert_eq!(prepared.train.n_rows(), prepared.train_labels.len());
//! ```

pub mod draft;
pub mod encoding;
pub mod fetch;
pub mod fetch_ext;
pub mod fields;
pub mod schema;
pub mod split;
pub mod table;

pub use encoding::{EncodeError, Encoding, LookupError, Matrix, QueryError};
pub use fetch::{FetchError, fetch};
pub use fields::FieldError;
pub use schema::{Link, LinkKind, Schema, SchemaError, ValueSupport};
pub use split::{Split, TEST_FRACTION, split};
pub use table::{Attribute, Input, LoadError, LoadReport, Table, Value};

use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Names of the built-in datasets that `cent evaluate --all` runs.
pub const DATASETS: [&str; 4] = ["adult", "compas", "credit", "heloc"];

/// Every built-in schema: [`DATASETS`] and `adult-wide`.
pub const BUILTIN: [&str; 5] = ["adult", "adult-wide", "compas", "credit", "heloc"];

/// The built-in schemas that read Adult's embedded files.
const EMBEDDED: [&str; 2] = ["adult", "adult-wide"];

/// Where fetched files go unless told otherwise (git-ignored).
pub const DEFAULT_CACHE_DIR: &str = "data/cache";

const SCHEMAS: [(&str, &str); 5] = [
    ("adult", include_str!("../../../data/schemas/adult.toml")),
    ("adult-wide", include_str!("../../../data/schemas/adult-wide.toml")),
    ("compas", include_str!("../../../data/schemas/compas.toml")),
    ("credit", include_str!("../../../data/schemas/credit.toml")),
    ("heloc", include_str!("../../../data/schemas/heloc.toml")),
];

/// Adult's two files, gzip-compressed, in the order of its schema's sources.
const ADULT_FILES: [(&str, &[u8]); 2] = [
    ("adult.data", include_bytes!("../../../data/adult/adult.data.gz")),
    ("adult.test", include_bytes!("../../../data/adult/adult.test.gz")),
];

/// Why a dataset cannot be made ready.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    #[error("unknown dataset `{name}`; datasets: {valid}")]
    UnknownDataset { name: String, valid: String },
    #[error("dataset `{dataset}` is not fetched ({missing} is missing): run `cent fetch {dataset}` first")]
    NotFetched { dataset: String, missing: String },
    #[error(
        "{schema}: no data file: give --data FILE.csv, or name the file in the schema with [[source]] file = \"...\" (relative to the schema's directory)"
    )]
    NoSource { schema: String },
    #[error("embedded file {file} is corrupt: {source}")]
    Embedded { file: String, source: std::io::Error },
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error(
        "dataset `{dataset}`: {rows} rows split into {train} training and {test} test rows; both parts need rows (give more rows)"
    )]
    TooFewRows { dataset: String, rows: usize, train: usize, test: usize },
    #[error(
        "dataset `{dataset}`: class `{class}` has no training rows (of {rows} rows); a classifier needs rows of every class of the target"
    )]
    MissingClass { dataset: String, class: String, rows: usize },
}

/// The schema of a built-in dataset.
///
/// # Errors
/// [`DataError::UnknownDataset`] listing the built-in names.
pub fn builtin_schema(name: &str) -> Result<Schema, DataError> {
    let (_, text) = SCHEMAS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| DataError::UnknownDataset { name: name.to_string(), valid: BUILTIN.join(", ") })?;
    Ok(Schema::from_toml(text, &format!("data/schemas/{name}.toml"))?)
}

/// Adult from the files embedded in the binary (45,222 rows after dropping missing values).
///
/// # Errors
/// Only if the embedded data were corrupt.
pub fn load_adult() -> Result<Table, DataError> {
    load_embedded("adult")
}

/// A schema of [`EMBEDDED`] over Adult's embedded files.
fn load_embedded(name: &str) -> Result<Table, DataError> {
    let schema = builtin_schema(name)?;
    let mut inputs = Vec::with_capacity(ADULT_FILES.len());
    for ((file, gz), source) in ADULT_FILES.iter().zip(&schema.sources) {
        let mut bytes = Vec::new();
        GzDecoder::new(*gz)
            .read_to_end(&mut bytes)
            .map_err(|source| DataError::Embedded { file: file.to_string(), source })?;
        inputs.push(Input { name: format!("builtin:{name}/{file}"), bytes, skip_lines: source.skip_lines });
    }
    Ok(Table::read(&schema, &inputs)?)
}

/// A built-in dataset: Adult (either schema) from the binary, the others from `cache_dir/<name>/`.
///
/// # Errors
/// [`DataError::UnknownDataset`], [`DataError::NotFetched`] naming the missing file, or a
/// load error naming file, line and column.
pub fn load_builtin(name: &str, cache_dir: &Path) -> Result<Table, DataError> {
    if EMBEDDED.contains(&name) {
        return load_embedded(name);
    }
    let schema = builtin_schema(name)?;
    let dir = cache_dir.join(&schema.name);
    let paths: Vec<PathBuf> = schema.sources.iter().map(|s| dir.join(&s.file)).collect();
    if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
        return Err(DataError::NotFetched { dataset: name.to_string(), missing: missing.display().to_string() });
    }
    Ok(Table::from_paths(&schema, &paths)?)
}

/// A user's dataset: the schema file at `schema_path` and the CSV `csv`, or without it the
/// schema's `[[source]] file`s, resolved relative to the schema file's directory.
///
/// # Errors
/// [`DataError::NoSource`] when `csv` is `None` and the schema names no file, otherwise the
/// schema or load error naming file, line and column.
pub fn load_custom(schema_path: &Path, csv: Option<&Path>) -> Result<Table, DataError> {
    let schema = Schema::from_file(schema_path)?;
    if let Some(csv) = csv {
        return Ok(Table::from_paths(&schema, &[csv.to_path_buf()])?);
    }
    if schema.sources.is_empty() {
        return Err(DataError::NoSource { schema: schema_path.display().to_string() });
    }
    let dir = schema_path.parent().unwrap_or_else(|| Path::new(""));
    Ok(Table::from_dir(&schema, dir)?)
}

/// A dataset ready for the pipeline: split, encoding fitted on the training rows, and both
/// parts encoded.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub table: Table,
    pub split: Split,
    pub encoding: Encoding,
    /// Encoded training rows (in `split.train` order).
    pub train: Matrix,
    pub train_labels: Vec<usize>,
    /// Encoded test rows (in `split.test` order).
    pub test: Matrix,
    pub test_labels: Vec<usize>,
}

/// Both parts of the split have rows, and the training part has rows of every class.
fn check_split(table: &Table, split: &Split) -> Result<(), DataError> {
    let dataset = table.name().to_string();
    if split.train.is_empty() || split.test.is_empty() {
        let (rows, train, test) = (table.len(), split.train.len(), split.test.len());
        return Err(DataError::TooFewRows { dataset, rows, train, test });
    }
    let mut seen = vec![false; table.classes().len()];
    for &r in &split.train {
        seen[table.labels()[r]] = true;
    }
    match seen.iter().position(|s| !s) {
        Some(c) => Err(DataError::MissingClass { dataset, class: table.classes()[c].clone(), rows: table.len() }),
        None => Ok(()),
    }
}

/// Splits `table` with `seed`, fits the encoding on the training part and encodes both parts.
///
/// # Errors
/// [`DataError::TooFewRows`] when the training or the test part is empty,
/// [`DataError::MissingClass`] when the training part lacks a class, [`DataError::Encode`]
/// when the dataset exceeds the core's capacities.
pub fn prepare(table: Table, test_fraction: f64, seed: u64) -> Result<Prepared, DataError> {
    let split = split::split(table.len(), test_fraction, seed);
    check_split(&table, &split)?;
    let encoding = Encoding::fit(&table, &split.train)?;
    let train = encoding.encode_rows(&table, &split.train)?;
    let test = encoding.encode_rows(&table, &split.test)?;
    let labels = |rows: &[usize]| rows.iter().map(|&r| table.labels()[r]).collect::<Vec<_>>();
    let (train_labels, test_labels) = (labels(&split.train), labels(&split.test));
    Ok(Prepared { table, split, encoding, train, train_labels, test, test_labels })
}

/// For unit tests: a two-class toy dataset (`name = "toy"`, target column `y`, `0` is `no`,
/// `1` is the favourable `yes`) with the `[[feature]]` tables `features`, read from `csv` (a
/// header, then rows) and encoded on the rows `train`.
#[cfg(test)]
pub(crate) fn toy(features: &str, csv: &str, train: &[usize]) -> (Table, Encoding) {
    const HEADER: &str = r#"name = "toy"
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
"#;
    let schema = Schema::from_toml(&format!("{HEADER}{features}"), "toy.toml").expect("a toy schema");
    let input = Input { name: "toy.csv".into(), bytes: csv.as_bytes().to_vec(), skip_lines: 0 };
    let table = Table::read(&schema, &[input]).expect("toy rows");
    let encoding = Encoding::fit(&table, train).expect("a toy encoding");
    (table, encoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_builtin_schemas_parse_and_respect_paper_immutables() {
        let immutable = |s: &Schema| -> Vec<String> {
            s.features
                .iter()
                .filter(|f| f.mutability == schema::Mutability::Immutable)
                .map(|f| f.name.clone())
                .collect()
        };
        let want: [&[&str]; 4] = [&["age", "race", "sex"], &["age", "sex", "race"], &["SEX", "AGE"], &[]];
        for (name, want) in DATASETS.iter().zip(want) {
            let s = builtin_schema(name).unwrap();
            assert_eq!(s.name, *name);
            assert!(s.features.len() <= cent_nostd::capacity::FEATURES);
            assert_eq!(immutable(&s), want, "{name}");
            assert!(s.sources.iter().all(|src| src.sha256.as_ref().is_some_and(|h| h.len() == 64)));
        }
    }

    #[test]
    fn test_unknown_dataset_lists_valid_names() {
        let err = builtin_schema("mnist").unwrap_err();
        assert_eq!(err.to_string(), "unknown dataset `mnist`; datasets: adult, adult-wide, compas, credit, heloc");
    }

    #[test]
    fn test_not_fetched_names_the_command() {
        let empty = std::env::temp_dir().join(format!("cent-data-empty-{}", std::process::id()));
        let err = load_builtin("heloc", &empty).unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("run `cent fetch heloc` first") && shown.contains("heloc_dataset.csv"), "{shown}");
    }

    #[test]
    fn test_embedded_adult_loads_with_expected_balance() {
        let t = load_adult().unwrap();
        let r = t.report();
        assert_eq!((r.read, r.missing, r.filtered, r.kept), (48_842, 3_620, 0, 45_222));
        let positive = t.labels().iter().filter(|&&l| l == 1).count();
        assert_eq!(positive, 11_208);
        assert_eq!(t.classes()[t.favourable()], ">50K");
        let p = prepare(t, TEST_FRACTION, 1).unwrap();
        assert_eq!(p.encoding.n_cols(), 47);
        assert_eq!(p.test.n_rows(), 9_044);
        assert_eq!(p.train.data.len(), p.train_labels.len() * 47);
        assert!(p.train.data.iter().all(|v| (0.0..=1.0).contains(v)), "training rows lie in [0, 1]");
    }
}
