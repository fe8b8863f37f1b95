//! Reading CSV files into a [`Table`] of raw values, as a [`Schema`] describes.
//!
//! Rows are filtered, rows with a missing feature or target value are dropped (both counted in
//! the [`LoadReport`]), and every other problem is an error naming the file, the line as
//! numbered in the file, the column and what was expected.

use super::schema::{FeatureSpec, Filter, FilterValue, Kind, Link, Op, Scalar, Schema, ValueSupport, join};
use cent_nostd::schema as core;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The raw value of one feature: a number, or the index of a category.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Number(f64),
    Category(usize),
}

/// A loaded feature: kind, default constraints and resolved categories.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub kind: core::Kind,
    pub mutability: core::Mutability,
    pub cost: f32,
    /// Fixed raw range from the schema; `None` means "from the training data".
    pub range: Option<(f64, f64)>,
    /// Category names in encoding order (binary: two, the first encodes as 0).
    pub categories: Vec<String>,
    /// Category moves set by the schema, applied in order: `(from, to, allowed)`.
    pub transitions: Vec<(usize, usize, bool)>,
    /// A categorical feature whose categories are in order (lowest first).
    pub ordered: bool,
    /// Which values a counterfactual may give it (numeric features; `Range` for the others).
    pub support: ValueSupport,
    /// Values that stand for a state, not an amount, with their meaning, ordered by value
    /// (integer features; see the schema's `codes`).
    pub codes: Vec<(i64, String)>,
    /// The schema's `map`: raw values read as another (a source's code → a category name).
    pub map: BTreeMap<String, String>,
    /// The category that takes values the fixed list does not hold (the schema's `other`).
    pub other: Option<usize>,
    /// Field values that mean "missing" besides the empty field (the schema's `[csv] missing`).
    pub missing: Vec<String>,
}

/// What happened to the data rows while loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadReport {
    /// Data rows read (after skipped lines and headers).
    pub read: usize,
    /// Rows that failed a filter.
    pub filtered: usize,
    /// Rows dropped for a missing feature or target value.
    pub missing: usize,
    /// Rows kept.
    pub kept: usize,
}

/// One CSV file's bytes and how many leading lines to skip.
#[derive(Debug, Clone)]
pub struct Input {
    /// Shown in errors (a path, or `builtin:adult/adult.test`).
    pub name: String,
    pub bytes: Vec<u8>,
    pub skip_lines: usize,
}

/// Why a CSV file cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("cannot read {file}: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}:{line}: malformed CSV: {message}")]
    Csv { file: String, line: u64, message: String },
    #[error("{file}: no header line (the file is empty)")]
    EmptyFile { file: String },
    #[error("{file}: the header has no column `{column}`; columns: {available}")]
    MissingColumn { file: String, column: String, available: String },
    #[error("{file}: column position {index} is beyond the {count} columns of the file")]
    MissingIndex { file: String, index: usize, count: usize },
    #[error("{file}: column `{column}` appears {count} times in the header; give its 0-based `index` in the schema")]
    DuplicateColumn { file: String, column: String, count: usize },
    #[error("{file}:{line}: expected {expected} fields, found {found}")]
    FieldCount { file: String, line: u64, expected: usize, found: usize },
    #[error("{file}:{line}: column `{column}`: expected {expected}, found `{value}`")]
    NotNumber { file: String, line: u64, column: String, value: String, expected: &'static str },
    #[error("{file}:{line}: column `{column}`: {value} is outside the schema range [{min}, {max}]")]
    OutOfRange { file: String, line: u64, column: String, value: f64, min: f64, max: f64 },
    #[error("{file}:{line}: column `{column}`: unknown category `{value}`; expected one of: {expected}")]
    UnknownCategory { file: String, line: u64, column: String, value: String, expected: String },
    #[error("{file}:{line}: target column `{column}`: unknown class value `{value}`; expected one of: {expected}")]
    UnknownClass { file: String, line: u64, column: String, value: String, expected: String },
    #[error("{file}:{line}: one-hot feature `{feature}`: expected exactly one column equal to 1, found {found}")]
    OneHot { file: String, line: u64, feature: String, found: usize },
    #[error("dataset `{dataset}`, feature `{feature}`: {problem}")]
    Categories { dataset: String, feature: String, problem: String },
    #[error(
        "{files}: dataset `{dataset}` has no rows left ({read} read, {filtered} filtered out, {missing} with missing values)"
    )]
    NoRows { dataset: String, files: String, read: usize, filtered: usize, missing: usize },
}

/// Raw rows of a dataset with their labels, in file order.
#[derive(Debug, Clone)]
pub struct Table {
    name: String,
    attributes: Vec<Attribute>,
    /// The schema's links between attributes.
    links: Vec<Link>,
    /// Row-major, `attributes.len()` values per row.
    values: Vec<Value>,
    labels: Vec<usize>,
    /// The schema's target column.
    target: String,
    classes: Vec<String>,
    favourable: usize,
    report: LoadReport,
}

impl Table {
    /// Loads in-memory CSV inputs, concatenating their rows.
    ///
    /// # Errors
    /// Any [`LoadError`] except `Io`.
    pub fn read(schema: &Schema, inputs: &[Input]) -> Result<Table, LoadError> {
        let mut loader = Loader::new(schema);
        for input in inputs {
            loader.read_input(input)?;
        }
        loader.finish()
    }

    /// Loads CSV files; file `i` skips the lines of the schema's source `i` (0 when absent).
    ///
    /// # Errors
    /// [`LoadError::Io`] when a file cannot be read, otherwise as [`Table::read`].
    pub fn from_paths(schema: &Schema, paths: &[PathBuf]) -> Result<Table, LoadError> {
        let mut inputs = Vec::with_capacity(paths.len());
        for (i, path) in paths.iter().enumerate() {
            let name = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|source| LoadError::Io { file: name.clone(), source })?;
            let skip_lines = schema.sources.get(i).map_or(0, |s| s.skip_lines);
            inputs.push(Input { name, bytes, skip_lines });
        }
        Table::read(schema, &inputs)
    }

    /// Loads the schema's sources from `dir` (the dataset's cache directory).
    ///
    /// # Errors
    /// As [`Table::from_paths`].
    pub fn from_dir(schema: &Schema, dir: &Path) -> Result<Table, LoadError> {
        let paths: Vec<PathBuf> = schema.sources.iter().map(|s| dir.join(&s.file)).collect();
        Table::from_paths(schema, &paths)
    }

    /// Dataset name from the schema.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Name of the target column (the schema's `[target] column`).
    pub fn target_column(&self) -> &str {
        &self.target
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Logical features in encoding order.
    pub fn attributes(&self) -> &[Attribute] {
        &self.attributes
    }

    /// The schema's links, feature positions as in [`Table::attributes`].
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Raw values of row `i`, one per attribute.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn row(&self, i: usize) -> &[Value] {
        let n = self.attributes.len();
        &self.values[i * n..(i + 1) * n]
    }

    /// Class index of every row.
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// Class names in index order.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// Index of the favourable (desired) class.
    pub fn favourable(&self) -> usize {
        self.favourable
    }

    /// Row counts: read, filtered, missing, kept.
    pub fn report(&self) -> LoadReport {
        self.report
    }
}

/// Category lookup of one feature while loading.
#[derive(Debug)]
enum Categories {
    /// Not categorical.
    None,
    /// Listed in the schema; unlisted values go to `other` or are an error.
    Fixed { index: HashMap<String, usize>, other: Option<usize> },
    /// Learned from the data in order of appearance; sorted in [`Loader::finish`].
    Learned { index: HashMap<String, usize>, names: Vec<String> },
}

impl Categories {
    fn new(spec: &FeatureSpec) -> Self {
        if !matches!(spec.kind, Kind::Binary | Kind::Categorical) {
            return Categories::None;
        }
        match &spec.categories {
            Some(names) => Categories::Fixed {
                index: names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect(),
                other: spec.other.as_ref().and_then(|o| names.iter().position(|n| n == o)),
            },
            None => Categories::Learned { index: HashMap::new(), names: Vec::new() },
        }
    }

    /// Index of a category, learning it when the list is not fixed.
    fn lookup(&mut self, value: &str) -> Option<usize> {
        match self {
            Categories::None => None,
            Categories::Fixed { index, other } => index.get(value).copied().or(*other),
            Categories::Learned { index, names } => {
                let next = names.len();
                let i = *index.entry(value.to_string()).or_insert(next);
                if i == next {
                    names.push(value.to_string());
                }
                Some(i)
            }
        }
    }
}

/// Where each schema column sits in one file.
#[derive(Debug)]
struct Plan {
    features: Vec<Field>,
    target: usize,
    filters: Vec<usize>,
    /// Column names of the file (header or schema names).
    names: Vec<String>,
}

#[derive(Debug)]
enum Field {
    One(usize),
    OneHot(Vec<usize>),
}

/// Position of a line in a file, for errors.
#[derive(Debug, Clone, Copy)]
struct At<'a> {
    file: &'a str,
    line: u64,
}

/// Accumulates rows across input files.
#[derive(Debug)]
struct Loader<'s> {
    schema: &'s Schema,
    categories: Vec<Categories>,
    classes: HashMap<&'s str, usize>,
    values: Vec<Value>,
    labels: Vec<usize>,
    report: LoadReport,
    /// Names of the inputs read, for errors about all of them.
    files: Vec<String>,
}

impl<'s> Loader<'s> {
    fn new(schema: &'s Schema) -> Self {
        let classes = schema
            .target
            .classes
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.values.iter().map(move |v| (v.as_str(), i)))
            .collect();
        Loader {
            schema,
            categories: schema.features.iter().map(Categories::new).collect(),
            classes,
            values: Vec::new(),
            labels: Vec::new(),
            report: LoadReport::default(),
            files: Vec::new(),
        }
    }

    fn read_input(&mut self, input: &Input) -> Result<(), LoadError> {
        let file = input.name.as_str();
        self.files.push(input.name.clone());
        let body =
            skip_lines(&input.bytes, input.skip_lines).ok_or_else(|| LoadError::EmptyFile { file: file.into() })?;
        let csv = &self.schema.csv;
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(csv.delimiter as u8)
            .trim(if csv.trim { ::csv::Trim::All } else { ::csv::Trim::None })
            .from_reader(body);
        let mut lines = LineCounter::new(body, input.skip_lines);
        let mut records = reader.records();
        let names = match &csv.names {
            Some(names) if !csv.header => names.clone(),
            _ => match records.next() {
                Some(header) => {
                    header.map_err(|e| csv_error(file, &mut lines, &e))?.iter().map(str::to_string).collect()
                }
                None => return Err(LoadError::EmptyFile { file: file.into() }),
            },
        };
        let plan = self.plan(file, names)?;
        for record in records {
            let record = record.map_err(|e| csv_error(file, &mut lines, &e))?;
            let line = lines.line_at(record.position().map_or(0, ::csv::Position::byte));
            let at = At { file, line };
            if record.len() != plan.names.len() {
                return Err(LoadError::FieldCount {
                    file: file.into(),
                    line,
                    expected: plan.names.len(),
                    found: record.len(),
                });
            }
            self.read_record(&plan, &record, at)?;
        }
        Ok(())
    }

    /// Resolves every column the schema uses to a position in a file with these names.
    fn plan(&self, file: &str, names: Vec<String>) -> Result<Plan, LoadError> {
        let find = |column: &str, index: Option<usize>| position(file, &names, column, index);
        let mut features = Vec::with_capacity(self.schema.features.len());
        for f in &self.schema.features {
            features.push(match &f.one_hot {
                Some(cols) => Field::OneHot(cols.iter().map(|c| find(c, None)).collect::<Result<_, _>>()?),
                None => Field::One(find(f.column_name(), f.index)?),
            });
        }
        let target = find(&self.schema.target.column, self.schema.target.index)?;
        let filters = self.schema.filters.iter().map(|f| find(&f.column, f.index)).collect::<Result<_, _>>()?;
        Ok(Plan { features, target, filters, names })
    }

    fn is_missing(&self, text: &str) -> bool {
        text.is_empty() || self.schema.csv.missing.iter().any(|m| m == text)
    }

    fn read_record(&mut self, plan: &Plan, record: &::csv::StringRecord, at: At<'_>) -> Result<(), LoadError> {
        let schema = self.schema;
        self.report.read += 1;
        let field = |i: usize| record.get(i).unwrap_or("");
        for (filter, &pos) in schema.filters.iter().zip(&plan.filters) {
            if !self.passes(filter, field(pos), &plan.names[pos], at)? {
                self.report.filtered += 1;
                return Ok(());
            }
        }
        let used = plan.features.iter().flat_map(|f| match f {
            Field::One(i) => std::slice::from_ref(i),
            Field::OneHot(cols) => cols.as_slice(),
        });
        if used.chain([&plan.target]).any(|&i| self.is_missing(field(i))) {
            self.report.missing += 1;
            return Ok(());
        }
        let label = self.class(field(plan.target), &plan.names[plan.target], at)?;
        for (j, f) in plan.features.iter().enumerate() {
            let value = match f {
                Field::One(i) => self.parse(j, field(*i), &plan.names[*i], at)?,
                Field::OneHot(cols) => {
                    let column = one_hot_column(&schema.features[j], cols, &plan.names, field, at)?;
                    self.parse(j, column, &schema.features[j].name, at)?
                }
            };
            self.values.push(value);
        }
        self.labels.push(label);
        Ok(())
    }

    fn class(&self, text: &str, column: &str, at: At<'_>) -> Result<usize, LoadError> {
        self.classes.get(text).copied().ok_or_else(|| {
            let values = self.schema.target.classes.iter().flat_map(|c| c.values.iter().map(String::as_str));
            LoadError::UnknownClass {
                file: at.file.into(),
                line: at.line,
                column: column.into(),
                value: text.into(),
                expected: join(values),
            }
        })
    }

    /// Parses the raw text of feature `j` (after the schema's `map`).
    fn parse(&mut self, j: usize, text: &str, column: &str, at: At<'_>) -> Result<Value, LoadError> {
        let schema = self.schema;
        let spec = &schema.features[j];
        let text = spec.map.get(text).map_or(text, String::as_str);
        match spec.kind {
            Kind::Continuous | Kind::Integer => parse_number(spec, text, column, at).map(Value::Number),
            Kind::Binary | Kind::Categorical => {
                self.categories[j].lookup(text).map(Value::Category).ok_or_else(|| LoadError::UnknownCategory {
                    file: at.file.into(),
                    line: at.line,
                    column: column.into(),
                    value: text.into(),
                    expected: spec
                        .categories
                        .as_deref()
                        .map_or_else(String::new, |c| join(c.iter().map(String::as_str))),
                })
            }
        }
    }

    fn passes(&self, filter: &Filter, text: &str, column: &str, at: At<'_>) -> Result<bool, LoadError> {
        if self.is_missing(text) {
            return Ok(false);
        }
        let equals = |s: &Scalar| match s {
            Scalar::Number(v) => text.parse::<f64>().is_ok_and(|x| x == *v),
            Scalar::Text(t) => t == text,
        };
        Ok(match (&filter.value, filter.op) {
            (FilterValue::Many(list), _) => list.iter().any(equals),
            (FilterValue::One(s), Op::Eq | Op::In) => equals(s),
            (FilterValue::One(s), Op::Ne) => !equals(s),
            (FilterValue::One(Scalar::Number(v)), op) => {
                let x = finite(text).ok_or_else(|| not_number(text, column, at, "a number"))?;
                match op {
                    Op::Lt => x < *v,
                    Op::Le => x <= *v,
                    Op::Gt => x > *v,
                    _ => x >= *v,
                }
            }
            // Rejected by the schema check.
            (FilterValue::One(Scalar::Text(_)), _) => false,
        })
    }

    fn finish(self) -> Result<Table, LoadError> {
        let schema = self.schema;
        let kept = self.labels.len();
        let report = LoadReport { kept, ..self.report };
        if kept == 0 {
            let LoadReport { read, filtered, missing, .. } = report;
            let files = self.files.join(", ");
            return Err(LoadError::NoRows { dataset: schema.name.clone(), files, read, filtered, missing });
        }
        let mut values = self.values;
        let mut attributes = Vec::with_capacity(schema.features.len());
        for (j, (spec, cats)) in schema.features.iter().zip(self.categories).enumerate() {
            let categories = match cats {
                Categories::None => Vec::new(),
                Categories::Fixed { .. } => spec.categories.clone().unwrap_or_default(),
                Categories::Learned { names, .. } => sort_learned(&mut values, schema.features.len(), j, names),
            };
            attributes.push(attribute(schema, spec, categories)?);
        }
        Ok(Table {
            name: schema.name.clone(),
            attributes,
            links: schema.links(),
            values,
            labels: self.labels,
            target: schema.target.column.clone(),
            classes: schema.target.classes.iter().map(|c| c.name.clone()).collect(),
            favourable: schema.favourable_class().unwrap_or(0),
            report,
        })
    }
}

/// The bytes after the first `n` lines, or `None` when the file has fewer lines.
fn skip_lines(bytes: &[u8], n: usize) -> Option<&[u8]> {
    let mut rest = bytes;
    for _ in 0..n {
        let end = rest.iter().position(|&b| b == b'\n')?;
        rest = &rest[end + 1..];
    }
    Some(rest)
}

/// Line numbers as in the file, from the byte offsets the CSV reader reports (its own line
/// count skips blank lines). Offsets must be queried in increasing order.
#[derive(Debug)]
pub(super) struct LineCounter<'b> {
    body: &'b [u8],
    byte: usize,
    line: u64,
}

impl<'b> LineCounter<'b> {
    pub(super) fn new(body: &'b [u8], skipped: usize) -> Self {
        LineCounter { body, byte: 0, line: skipped as u64 + 1 }
    }

    /// 1-based line of the record parsed from `offset` of the body. The reader reports the
    /// offset where it started parsing, before the blank lines it skips, so those are passed.
    pub(super) fn line_at(&mut self, offset: u64) -> u64 {
        let end = (offset as usize).clamp(self.byte, self.body.len());
        self.line += self.body[self.byte..end].iter().filter(|&&b| b == b'\n').count() as u64;
        self.byte = end;
        while let Some(&b @ (b'\n' | b'\r')) = self.body.get(self.byte) {
            self.line += u64::from(b == b'\n');
            self.byte += 1;
        }
        self.line
    }
}

pub(super) fn csv_error(file: &str, lines: &mut LineCounter<'_>, e: &::csv::Error) -> LoadError {
    let line = lines.line_at(e.position().map_or(0, ::csv::Position::byte));
    let message = match e.kind() {
        ::csv::ErrorKind::Utf8 { err, .. } => format!("invalid UTF-8 in field {}", err.field() + 1),
        ::csv::ErrorKind::Io(io) => io.to_string(),
        _ => e.to_string(),
    };
    LoadError::Csv { file: file.into(), line, message }
}

/// Position of a column: by `index` when given, else by a unique header name.
fn position(file: &str, names: &[String], column: &str, index: Option<usize>) -> Result<usize, LoadError> {
    if let Some(index) = index {
        return match index < names.len() {
            true => Ok(index),
            false => Err(LoadError::MissingIndex { file: file.into(), index, count: names.len() }),
        };
    }
    let mut hits = names.iter().enumerate().filter(|(_, n)| *n == column).map(|(i, _)| i);
    let first = hits.next();
    let count = usize::from(first.is_some()) + hits.count();
    match (first, count) {
        (Some(i), 1) => Ok(i),
        (Some(_), _) => Err(LoadError::DuplicateColumn { file: file.into(), column: column.into(), count }),
        (None, _) => Err(LoadError::MissingColumn {
            file: file.into(),
            column: column.into(),
            available: join(names.iter().map(String::as_str)),
        }),
    }
}

/// The name of the one indicator column equal to 1 (the raw category of a one-hot feature).
fn one_hot_column<'r>(
    spec: &FeatureSpec,
    cols: &[usize],
    names: &'r [String],
    field: impl Fn(usize) -> &'r str,
    at: At<'_>,
) -> Result<&'r str, LoadError> {
    let mut hot = None;
    let mut found = 0;
    for &c in cols {
        let v = finite(field(c)).ok_or_else(|| not_number(field(c), &names[c], at, "0 or 1"))?;
        if v == 1.0 {
            hot = Some(c);
            found += 1;
        } else if v != 0.0 {
            return Err(not_number(field(c), &names[c], at, "0 or 1"));
        }
    }
    match (hot, found) {
        (Some(c), 1) => Ok(names[c].as_str()),
        _ => Err(LoadError::OneHot { file: at.file.into(), line: at.line, feature: spec.name.clone(), found }),
    }
}

pub(super) fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn not_number(text: &str, column: &str, at: At<'_>, expected: &'static str) -> LoadError {
    LoadError::NotNumber { file: at.file.into(), line: at.line, column: column.into(), value: text.into(), expected }
}

fn parse_number(spec: &FeatureSpec, text: &str, column: &str, at: At<'_>) -> Result<f64, LoadError> {
    let integer = spec.kind == Kind::Integer;
    let expected = if integer { "an integer" } else { "a number" };
    let v = finite(text).ok_or_else(|| not_number(text, column, at, expected))?;
    if integer && v.fract() != 0.0 {
        return Err(not_number(text, column, at, expected));
    }
    match spec.range {
        Some([min, max]) if v < min || v > max => Err(LoadError::OutOfRange {
            file: at.file.into(),
            line: at.line,
            column: column.into(),
            value: v,
            min,
            max,
        }),
        _ => Ok(v),
    }
}

/// Sorts learned category names and renumbers column `j` of the row-major values to match.
fn sort_learned(values: &mut [Value], stride: usize, j: usize, names: Vec<String>) -> Vec<String> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let mut rank = vec![0; names.len()];
    for (new, &old) in order.iter().enumerate() {
        rank[old] = new;
    }
    for v in values.iter_mut().skip(j).step_by(stride) {
        if let Value::Category(c) = v {
            *c = rank[*c];
        }
    }
    order.into_iter().map(|i| names[i].clone()).collect()
}

/// Builds the loaded attribute, checking the categories and resolving transition names.
fn attribute(schema: &Schema, spec: &FeatureSpec, categories: Vec<String>) -> Result<Attribute, LoadError> {
    let problem =
        |p: String| LoadError::Categories { dataset: schema.name.clone(), feature: spec.name.clone(), problem: p };
    if spec.kind == Kind::Binary && categories.len() != 2 {
        let found = join(categories.iter().map(String::as_str));
        return Err(problem(format!(
            "a binary feature needs exactly 2 values, the data has {}: {found}",
            categories.len()
        )));
    }
    let mut transitions = Vec::new();
    for (rules, allowed) in [(&spec.forbid, false), (&spec.allow, true)] {
        for rule in rules {
            let from = category_set(&rule.from, &categories).map_err(&problem)?;
            let to = category_set(&rule.to, &categories).map_err(&problem)?;
            transitions.extend(from.iter().flat_map(|&f| to.iter().map(move |&t| (f, t, allowed))));
        }
    }
    Ok(Attribute {
        name: spec.name.clone(),
        kind: spec.kind.into(),
        mutability: spec.mutability.into(),
        cost: spec.cost,
        range: spec.range.map(|[a, b]| (a, b)),
        transitions,
        ordered: spec.ordered,
        support: spec.support(),
        codes: spec.parsed_codes().unwrap_or_default(),
        map: spec.map.clone(),
        missing: schema.csv.missing.clone(),
        other: spec.other.as_ref().and_then(|o| categories.iter().position(|c| c == o)),
        categories,
    })
}

/// Category indices of a transition list; `"*"` means all.
fn category_set(names: &[String], categories: &[String]) -> Result<Vec<usize>, String> {
    if names.iter().any(|n| n == "*") {
        return Ok((0..categories.len()).collect());
    }
    names
        .iter()
        .map(|n| {
            categories.iter().position(|c| c == n).ok_or_else(|| {
                format!(
                    "transition names unknown category `{n}`; categories: {}",
                    join(categories.iter().map(String::as_str))
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"
name = "toy"
[csv]
missing = ["?"]
[target]
column = "y"
favourable = "good"
classes = [{ name = "bad", values = ["0"] }, { name = "good", values = ["1", "1."] }]
[[filter]]
column = "days"
op = "<="
value = 30
[[feature]]
name = "age"
kind = "integer"
mutability = "immutable"
[[feature]]
name = "colour"
kind = "categorical"
map = { "navy" = "blue" }
forbid = [{ from = ["*"], to = ["red"] }]
[[feature]]
name = "income"
kind = "continuous"
range = [0, 1000]
"#;

    fn schema() -> Schema {
        Schema::from_toml(SCHEMA, "toy.toml").unwrap()
    }

    fn input(text: &str) -> Input {
        Input { name: "toy.csv".into(), bytes: text.as_bytes().to_vec(), skip_lines: 0 }
    }

    fn load(text: &str) -> Result<Table, LoadError> {
        Table::read(&schema(), &[input(text)])
    }

    const GOOD: &str = "age,colour,income,days,y\n30,red,10.5,1,0\n40,navy,20,2,1.\n50,green,,3,1\n60,blue,5,99,0\n";

    #[test]
    fn test_load_filters_drops_missing_and_sorts_categories() {
        let t = load(GOOD).unwrap();
        assert_eq!(t.report(), LoadReport { read: 4, filtered: 1, missing: 1, kept: 2 });
        assert_eq!(t.attributes()[1].categories, vec!["blue".to_string(), "red".to_string()]);
        assert_eq!(t.row(0), &[Value::Number(30.0), Value::Category(1), Value::Number(10.5)]);
        assert_eq!(t.row(1)[1], Value::Category(0), "navy is mapped to blue");
        assert_eq!(t.labels(), &[0, 1]);
        assert_eq!(t.favourable(), 1);
        // forbid "*" -> red over categories [blue, red].
        assert_eq!(t.attributes()[1].transitions, vec![(0, 1, false), (1, 1, false)]);
        assert_eq!(t.attributes()[0].mutability, core::Mutability::Immutable);
    }

    #[test]
    fn test_non_numeric_value_names_file_line_and_column() {
        let text = "age,colour,income,days,y\n30,red,1,1,0\n\n3x,red,1,1,0\n";
        let err = load(text).unwrap_err();
        let LoadError::NotNumber { line, ref column, ref value, .. } = err else { panic!("{err:?}") };
        assert_eq!((line, column.as_str(), value.as_str()), (4, "age", "3x"));
        assert_eq!(err.to_string(), "toy.csv:4: column `age`: expected an integer, found `3x`");
    }

    #[test]
    fn test_invalid_utf8_names_line() {
        let bytes = b"age,colour,income,days,y\n30,red,1,1,0\n\n40,r\xffd,1,1,0\n".to_vec();
        let err = Table::read(&schema(), &[Input { name: "bad.csv".into(), bytes, skip_lines: 0 }]).unwrap_err();
        assert_eq!(err.to_string(), "bad.csv:4: malformed CSV: invalid UTF-8 in field 2");
    }

    #[test]
    fn test_fractional_integer_is_rejected() {
        let err = load("age,colour,income,days,y\n30.5,red,1,1,0\n").unwrap_err();
        assert!(matches!(err, LoadError::NotNumber { expected: "an integer", line: 2, .. }), "{err:?}");
    }

    #[test]
    fn test_missing_column_lists_available() {
        let err = load("age,colour,days,y\n30,red,1,0\n").unwrap_err();
        let LoadError::MissingColumn { ref column, ref available, .. } = err else { panic!("{err:?}") };
        assert_eq!(column, "income");
        assert_eq!(available, "age, colour, days, y");
    }

    #[test]
    fn test_duplicate_header_needs_index() {
        let err = load("age,colour,income,age,days,y\n30,red,1,30,1,0\n").unwrap_err();
        assert!(matches!(err, LoadError::DuplicateColumn { count: 2, .. }), "{err:?}");
        let text = SCHEMA.replace("name = \"age\"\n", "name = \"age\"\nindex = 3\n");
        let s = Schema::from_toml(&text, "toy.toml").unwrap();
        let t = Table::read(&s, &[input("age,colour,income,age,days,y\n1,red,1,30,1,0\n")]).unwrap();
        assert_eq!(t.row(0)[0], Value::Number(30.0));
    }

    #[test]
    fn test_empty_file_and_no_rows() {
        assert!(matches!(load("").unwrap_err(), LoadError::EmptyFile { .. }));
        let err = load("age,colour,income,days,y\n30,red,1,99,0\n").unwrap_err();
        assert!(matches!(err, LoadError::NoRows { read: 1, filtered: 1, .. }), "{err:?}");
    }

    #[test]
    fn test_field_count_mismatch() {
        let err = load("age,colour,income,days,y\n30,red,1,1\n").unwrap_err();
        assert!(matches!(err, LoadError::FieldCount { line: 2, expected: 5, found: 4, .. }), "{err:?}");
    }

    #[test]
    fn test_unknown_class_and_out_of_range() {
        let err = load("age,colour,income,days,y\n30,red,1,1,2\n").unwrap_err();
        assert!(err.to_string().contains("unknown class value `2`; expected one of: 0, 1, 1."), "{err}");
        let err = load("age,colour,income,days,y\n30,red,2000,1,0\n").unwrap_err();
        assert!(matches!(err, LoadError::OutOfRange { line: 2, .. }), "{err:?}");
    }

    #[test]
    fn test_unknown_category_with_fixed_list() {
        let text = SCHEMA.replace("map = {", "categories = [\"blue\", \"red\"]\nmap = {");
        let s = Schema::from_toml(&text, "toy.toml").unwrap();
        let err = Table::read(&s, &[input("age,colour,income,days,y\n30,green,1,1,0\n")]).unwrap_err();
        assert_eq!(err.to_string(), "toy.csv:2: column `colour`: unknown category `green`; expected one of: blue, red");
    }

    #[test]
    fn test_unknown_transition_category() {
        let text = SCHEMA.replace("to = [\"red\"]", "to = [\"purple\"]");
        let s = Schema::from_toml(&text, "toy.toml").unwrap();
        let err = Table::read(&s, &[input(GOOD)]).unwrap_err();
        assert!(err.to_string().contains("unknown category `purple`"), "{err}");
    }

    #[test]
    fn test_headerless_with_skipped_junk_line() {
        let text = SCHEMA
            .replace("[csv]\n", "[csv]\nheader = false\nnames = [\"age\", \"colour\", \"income\", \"days\", \"y\"]\n");
        let s = Schema::from_toml(&text, "toy.toml").unwrap();
        let junk = Input {
            name: "t.csv".into(),
            bytes: b"|junk\n30, red, 1, 1, 1.\n40, ?, 1, 1, 0\n".to_vec(),
            skip_lines: 1,
        };
        let t = Table::read(&s, &[junk]).unwrap();
        assert_eq!(t.report(), LoadReport { read: 2, filtered: 0, missing: 1, kept: 1 });
        assert_eq!(t.labels(), &[1]);
        let bad = Input {
            name: "t.csv".into(),
            bytes: b"|junk\n30, red, 1, 1, 1\nx, red, 1, 1, 1\n".to_vec(),
            skip_lines: 1,
        };
        let err = Table::read(&s, &[bad]).unwrap_err();
        assert!(matches!(err, LoadError::NotNumber { line: 3, .. }), "{err:?}");
    }

    #[test]
    fn test_one_hot_group_reads_as_one_category() {
        let text = SCHEMA.replace(
            "kind = \"categorical\"\nmap = { \"navy\" = \"blue\" }",
            "kind = \"categorical\"\none_hot = [\"c_a\", \"c_b\"]\nmap = { \"c_a\" = \"red\", \"c_b\" = \"blue\" }",
        );
        let s = Schema::from_toml(&text, "toy.toml").unwrap();
        let csv = "age,c_a,c_b,income,days,y\n30,0,1,1,1,0\n31,1,0,1,1,0\n";
        let t = Table::read(&s, &[input(csv)]).unwrap();
        assert_eq!(t.row(0)[1], Value::Category(0));
        assert_eq!(t.row(1)[1], Value::Category(1));
        let err = Table::read(&s, &[input("age,c_a,c_b,income,days,y\n30,1,1,1,1,0\n")]).unwrap_err();
        assert!(matches!(err, LoadError::OneHot { found: 2, line: 2, .. }), "{err:?}");
    }

    #[test]
    fn test_binary_from_data_needs_two_values() {
        let text = SCHEMA.replace(
            "kind = \"categorical\"\nmap = { \"navy\" = \"blue\" }\nforbid = [{ from = [\"*\"], to = [\"red\"] }]",
            "kind = \"binary\"",
        );
        let s = Schema::from_toml(&text, "toy.toml").unwrap();
        let err = Table::read(&s, &[input("age,colour,income,days,y\n1,a,1,1,0\n2,b,1,1,0\n3,c,1,1,0\n")]).unwrap_err();
        assert!(err.to_string().contains("exactly 2 values, the data has 3: a, b, c"), "{err}");
    }
}
