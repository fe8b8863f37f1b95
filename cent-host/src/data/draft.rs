//! A first schema for a CSV file of one's own ([`draft`]): each column's kind read from its
//! values, the target's classes, features whose names say they are personal kept fixed, and
//! the links the rows show between features. A draft is for a person to read and edit: every
//! choice is written beside it as a comment, and the draft loads as it is (the file is loaded
//! with it before it is returned).
//!
//! ```
//! use cent_host::data::draft::{DraftOptions, draft};
//! let mut csv = String::from("income,age,job,approved\n");
//! for i in 0..40 {
//!     let job = ["clerk", "nurse", "engineer"][i % 3];
//!     csv += &format!("{}.5,{},{job},{}\n", 20 + i * 3, 20 + i * 7 % 40, if i > 20 { "yes" } else { "no" });
//! }
//! let options = DraftOptions::new("loans", "loans.csv", "approved", Some("yes"));
//! let d = draft(csv.as_bytes(), "loans.csv", &options).unwrap();
//! assert!(d.toml.contains("kind = \"continuous\""));
//! assert!(d.toml.contains("mutability = \"immutable\"")); // age, by its name
//! assert_eq!(d.report.kept, 40);
//! ```

use super::schema::{Kind, LinkKind, Schema};
use super::table::{Input, LoadError, LoadReport, Table};
use crate::progress::{Progress, Silent};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// Distinct values counted per column: a column with more is numeric, or dropped.
const MAX_VALUES: usize = 256;
/// The most categories a drafted categorical feature has: a text column with more is dropped
/// (an identifier or free text).
pub const MAX_CATEGORIES: usize = 100;
/// The most classes a target column may have.
pub const MAX_CLASSES: usize = 20;
/// Values read as missing wherever they occur in the file, besides an empty field: the draft
/// lists those the file holds in `[csv] missing`, and the rows holding one are dropped when
/// the file is loaded.
pub const MISSING_TOKENS: [&str; 8] = ["?", "NA", "N/A", "#N/A", "NaN", "nan", "null", "NULL"];
/// The most values a feature may have to be judged for links.
const LINK_VALUES: usize = 64;
/// The most features judged for links (every pair of them is counted row by row).
const LINK_FEATURES: usize = 64;
/// Two features are one to one when, both ways, this share of the rows holds each value's
/// most frequent partner.
const ONE_TO_ONE: f64 = 0.99;
/// Two values are never together when, were their features unrelated, at least this many rows
/// would hold both ...
const EXPECTED_TOGETHER: f64 = 30.0;
/// ... and at most this share of that many do.
const RARELY: f64 = 0.05;
/// The most rows a combination may need to count as held (`min_rows`): the built-in Adult
/// schema's choice, which keeps out its 15 married men "not in family".
const MAX_MIN_ROWS: usize = 30;
/// A combination held by at most this share of the rows may be a slip of data entry: one that
/// is (almost) never seen is ruled out up to it, a rarer one than that is kept.
const SLIP: f64 = 0.001;
/// Words of a column's name (lower case) that mark a personal attribute: drafted immutable.
const PERSONAL: [&str; 11] =
    ["age", "sex", "gender", "race", "ethnicity", "ethnic", "nationality", "native", "birth", "born", "religion"];
/// Of those, the ones an audit groups people by (`protected`), on a categorical or binary feature.
const PROTECTED: [&str; 7] = ["sex", "gender", "race", "ethnicity", "ethnic", "nationality", "religion"];
/// The largest share of the rows a feature may be missing in: a column missing in more is
/// left out, since a row missing a feature is left out.
const MOST_MISSING: f64 = 0.1;
/// The share of the rows a negative number must fill to be read as a row of no data.
const PLACEHOLDER_ROWS: f64 = 0.005;
/// The most values an integer feature may have to be judged for links (codes of a status,
/// counts of a few events), not amounts.
const LINK_INTEGER_VALUES: usize = 16;
/// Where an indicator column's name ends its feature's name (`EDUCATION_1`, `job=clerk`).
const ONE_HOT_SEPARATORS: [char; 3] = ['_', '=', '.'];
/// Whole words of a name that mark an identifier.
const IDENTIFIER: [&str; 3] = ["id", "uuid", "identifier"];

/// How to read the file and what its model predicts.
#[derive(Debug, Clone)]
pub struct DraftOptions {
    /// The dataset's name: the schema's `name`, also its cache sub-directory.
    pub name: String,
    /// The file as the schema's `[[source]] file` names it (relative to the schema file's
    /// directory).
    pub source: String,
    /// Whether the first line names the columns.
    pub header: bool,
    /// The columns' names when there is no header (`column_1`, `column_2`, … when `None`).
    pub names: Option<Vec<String>>,
    /// The field delimiter (ASCII).
    pub delimiter: u8,
    /// Values read as missing besides an empty field and [`MISSING_TOKENS`].
    pub missing: Vec<String>,
    /// The column the model predicts.
    pub target: String,
    /// The target value a person asks recourse for (a loan granted, no default). Required: a
    /// wrong guess would turn every answer around.
    pub favourable: Option<String>,
}

impl DraftOptions {
    /// A file with a header line, comma-separated, predicting `target`.
    pub fn new(name: &str, source: &str, target: &str, favourable: Option<&str>) -> Self {
        DraftOptions {
            name: name.to_string(),
            source: source.to_string(),
            header: true,
            names: None,
            delimiter: b',',
            missing: Vec::new(),
            target: target.to_string(),
            favourable: favourable.map(str::to_string),
        }
    }
}

/// What the draft made of one column.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// The target, with its classes in the schema's order.
    Target { classes: Vec<String> },
    /// A feature; `immutable` when its name says it is personal.
    Feature { kind: Kind, immutable: bool },
    /// Left out (the schema's `dropped`), and why.
    Dropped { reason: String },
    /// One of the indicator columns of a categorical feature ([`OneHot`]).
    OneHot { feature: String },
}

/// Indicator columns read back as one categorical feature (its `one_hot`): two or more 0/1
/// columns whose names share a prefix (`EDUCATION_1`, `EDUCATION_2`; `job=clerk`), exactly one
/// of them 1 in every row.
#[derive(Debug, Clone, PartialEq)]
pub struct OneHot {
    /// The feature's name: the columns' shared prefix.
    pub name: String,
    /// The columns, in file order.
    pub columns: Vec<String>,
    /// The category each column stands for: its name past the prefix.
    pub categories: Vec<String>,
    /// Whether its name says it is personal.
    pub immutable: bool,
}

/// One column of the file and its role in the draft.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub role: Role,
}

/// A link the rows show between two features, with the evidence written beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundLink {
    pub kind: LinkKind,
    pub features: [String; 2],
    /// Rows a combination needs to count as held (the link's `min_rows`).
    pub min_rows: usize,
    pub evidence: String,
}

/// A drafted schema.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The schema file: TOML, each choice's reason in a comment beside it.
    pub toml: String,
    /// The same, parsed and checked.
    pub schema: Schema,
    /// Every column of the file, in file order.
    pub columns: Vec<Column>,
    /// Indicator columns read as one feature each.
    pub one_hot: Vec<OneHot>,
    pub links: Vec<FoundLink>,
    /// The missing-value tokens the file holds (of [`MISSING_TOKENS`], those given and the
    /// placeholders).
    pub missing: Vec<String>,
    /// Negative numbers that fill whole rows (a row of no data), each with the rows it fills:
    /// read as missing.
    pub placeholders: Vec<(String, usize)>,
    /// The file loaded with the draft: rows read, dropped for a missing value, kept.
    pub report: LoadReport,
    /// Features that could have been judged for links but were not (beyond the first 64).
    pub unjudged: usize,
}

/// Why a file cannot be drafted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DraftError {
    /// The file is not readable CSV (malformed, empty, a row of another width).
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{file}: no rows below the header")]
    NoRows { file: String },
    #[error("{file}: column {position} has no name")]
    Unnamed { file: String, position: usize },
    #[error("{file}: {given} column names given for {found} columns")]
    Names { file: String, given: usize, found: usize },
    #[error("the delimiter must be one ASCII character, not `{0}`")]
    Delimiter(String),
    #[error("{file}: no column `{target}`; columns: {columns}")]
    NoTarget { file: String, target: String, columns: String },
    #[error("{file}: target column `{target}` holds {found}; a target holds 2 to {MAX_CLASSES} classes")]
    Classes { file: String, target: String, found: String },
    #[error("{file}: `{given}` is not a value of target column `{target}`; its values: {values}")]
    Favourable { file: String, target: String, given: String, values: String },
    #[error(
        "{file}: which value of `{target}` is the favourable outcome (the one recourse is asked for)? One of: {values}"
    )]
    NoFavourable { file: String, target: String, values: String },
    #[error("{file}: no column is left to be a feature: {dropped}")]
    NoFeatures { file: String, dropped: String },
    /// The draft failed its own check: a defect of the drafting, reported rather than returned.
    #[error("the drafted schema does not load: {0}")]
    Invalid(String),
}

/// What one pass over a column's values found.
#[derive(Debug, Default)]
struct Stats {
    /// Distinct values and their counts, up to [`MAX_VALUES`] of them.
    values: HashMap<String, usize>,
    /// More distinct values than were counted.
    more: bool,
    /// Values present (not missing), of them numbers, and whole numbers.
    present: usize,
    numbers: usize,
    whole: usize,
    min: f64,
    max: f64,
    /// Every value so far one more than the one before, in file order (a row number).
    counting: bool,
    last: f64,
    /// Missing-value tokens met, by token (an empty field is not counted).
    tokens: BTreeMap<String, usize>,
}

impl Stats {
    fn new() -> Self {
        Stats { min: f64::INFINITY, max: f64::NEG_INFINITY, counting: true, ..Stats::default() }
    }

    fn add(&mut self, text: &str, missing: &[String]) {
        if text.is_empty() {
            return;
        }
        if let Some(token) = missing.iter().find(|m| *m == text) {
            *self.tokens.entry(token.clone()).or_default() += 1;
            return;
        }
        self.present += 1;
        if let Some(v) = super::table::finite(text) {
            self.numbers += 1;
            self.whole += usize::from(v.fract() == 0.0 && v.abs() < 9.0e15);
            self.min = self.min.min(v);
            self.max = self.max.max(v);
            self.counting &= self.numbers == 1 || v == self.last + 1.0;
            self.last = v;
        }
        if let Some(n) = self.values.get_mut(text) {
            *n += 1;
        } else if self.values.len() < MAX_VALUES {
            self.values.insert(text.to_string(), 1);
        } else {
            self.more = true;
        }
    }

    /// The distinct values in numeric order when all are numbers, else in text order.
    fn sorted(&self) -> Vec<(&str, usize)> {
        let mut v: Vec<(&str, usize)> = self.values.iter().map(|(k, &n)| (k.as_str(), n)).collect();
        if self.numbers == self.present {
            v.sort_by(|a, b| number(a.0).total_cmp(&number(b.0)).then(a.0.cmp(b.0)));
        } else {
            v.sort();
        }
        v
    }

    /// Distinct numbers among the counted values (`"1"` and `"1.0"` are one).
    fn distinct_numbers(&self) -> usize {
        let mut n: Vec<u64> = self.values.keys().map(|k| number(k).to_bits()).collect();
        n.sort_unstable();
        n.dedup();
        n.len()
    }
}

/// A value as a number, NaN when it is none (as [`Stats::add`] counts numbers: finite ones).
fn number(text: &str) -> f64 {
    super::table::finite(text).unwrap_or(f64::NAN)
}

/// The kind the values of a column of `rows` call for, or why it is left out.
fn judge(name: &str, s: &Stats, rows: usize) -> Result<Kind, String> {
    let distinct = if s.more { format!("more than {MAX_VALUES}") } else { s.values.len().to_string() };
    if s.present == 0 {
        return Err("every value is missing".into());
    }
    if (s.present as f64) < (1.0 - MOST_MISSING) * rows as f64 {
        return Err(format!(
            "missing in {} of {rows} rows: as a feature it would leave those rows out",
            rows - s.present
        ));
    }
    if !s.more && s.values.len() == 1 {
        let only = s.values.keys().next().map_or("", String::as_str);
        return Err(format!("one value only (`{}`): nothing to learn from", clip(only)));
    }
    let words = words(name);
    if s.numbers == s.present {
        let whole = s.whole == s.numbers;
        if words.iter().any(|w| IDENTIFIER.contains(&w.as_str())) || (whole && s.counting && s.present > 2) {
            return Err(if s.counting {
                "an identifier: the values count the rows".into()
            } else {
                "an identifier, by its name".into()
            });
        }
        return Ok(match (whole, s.more) {
            (true, false) if s.values.len() == 2 && s.distinct_numbers() == 2 => Kind::Binary,
            (true, _) => Kind::Integer,
            (false, _) => Kind::Continuous,
        });
    }
    if s.numbers * 10 >= s.present * 9 {
        let texts: Vec<&str> = s.sorted().into_iter().filter(|(v, _)| number(v).is_nan()).map(|(v, _)| v).collect();
        return Err(format!(
            "numbers with some text ({}): if the text means a missing value, give it as missing",
            list(&texts, 4)
        ));
    }
    if s.more {
        return Err(format!("text with {distinct} different values: an identifier or free text"));
    }
    if s.values.len() > MAX_CATEGORIES {
        return Err(format!(
            "text with {distinct} different values, more than a categorical feature's {MAX_CATEGORIES} (merge them with `map` and `other` to keep it)"
        ));
    }
    Ok(if s.values.len() == 2 { Kind::Binary } else { Kind::Categorical })
}

/// A name's words, lower case (`native-country` → `native`, `country`).
fn words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// A value shortened for a comment, with control characters out.
fn clip(text: &str) -> String {
    let t: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if t.chars().count() > 40 { t.chars().take(37).collect::<String>() + "..." } else { t }
}

/// `a`, `b`, … the first `n` of `items`, and how many more.
fn list(items: &[&str], n: usize) -> String {
    let mut s: Vec<String> = items.iter().take(n).map(|v| format!("`{}`", clip(v))).collect();
    if items.len() > n {
        s.push(format!("{} more", items.len() - n));
    }
    s.join(", ")
}

/// A TOML string (quoted, escaped).
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn quoted_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    format!("[{}]", items.into_iter().map(quoted).collect::<Vec<_>>().join(", "))
}

/// Reads the file's rows: the column names, and `visit` for each data row.
fn read(f: &Csv<'_>, label: &str, mut visit: impl FnMut(&csv::StringRecord)) -> Result<Vec<String>, DraftError> {
    let &Csv { bytes, file, o, progress } = f;
    let stage = Stage::begin(progress, label, bytes.len());
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(o.delimiter)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut lines = super::table::LineCounter::new(bytes, 0);
    let mut records = reader.records();
    let first = match records.next() {
        Some(r) => r.map_err(|e| super::table::csv_error(file, &mut lines, &e))?,
        None => return Err(LoadError::EmptyFile { file: file.into() }.into()),
    };
    let names: Vec<String> = match (o.header, &o.names) {
        (true, _) => first.iter().map(str::to_string).collect(),
        (false, Some(names)) if names.len() != first.len() => {
            return Err(DraftError::Names { file: file.into(), given: names.len(), found: first.len() });
        }
        (false, Some(names)) => names.clone(),
        (false, None) => (1..=first.len()).map(|i| format!("column_{i}")).collect(),
    };
    if let Some(i) = names.iter().position(String::is_empty) {
        return Err(DraftError::Unnamed { file: file.into(), position: i + 1 });
    }
    if !o.header {
        visit(&first);
    }
    for record in records {
        let record = record.map_err(|e| super::table::csv_error(file, &mut lines, &e))?;
        if record.len() != names.len() {
            let line = lines.line_at(record.position().map_or(0, csv::Position::byte));
            return Err(
                LoadError::FieldCount { file: file.into(), line, expected: names.len(), found: record.len() }.into()
            );
        }
        stage.at(record.position().map_or(0, csv::Position::byte));
        visit(&record);
    }
    Ok(names)
}

/// The CSV a draft reads, how to read it, and where its passes are reported.
struct Csv<'a> {
    bytes: &'a [u8],
    file: &'a str,
    o: &'a DraftOptions,
    progress: &'a dyn Progress,
}

/// A pass over the file reported in whole mebibytes; the stage ends when the pass does, by
/// an error too.
struct Stage<'p> {
    progress: &'p dyn Progress,
    reported: std::cell::Cell<u64>,
}

impl<'p> Stage<'p> {
    const MIB: u64 = 1 << 20;

    fn begin(progress: &'p dyn Progress, label: &str, bytes: usize) -> Self {
        progress.begin(label, (bytes as u64).div_ceil(Self::MIB), "MiB");
        Stage { progress, reported: std::cell::Cell::new(0) }
    }

    /// The pass has read up to byte `at`.
    fn at(&self, at: u64) {
        let done = at / Self::MIB;
        if done > self.reported.get() {
            self.progress.advance(done - self.reported.get());
            self.reported.set(done);
        }
    }
}

impl Drop for Stage<'_> {
    fn drop(&mut self) {
        self.progress.end();
    }
}

/// `data` as the `[[source]] file` of a schema written to `schema`: relative to the schema's
/// directory when both are under one root, else absolute; as given when the schema's place is
/// not known (written to stdout).
pub fn source_for(data: &Path, schema: Option<&Path>) -> String {
    let Some(schema) = schema else { return data.display().to_string() };
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let data = absolute(data);
    let dir = absolute(schema.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")));
    let (to, from): (Vec<Component>, Vec<Component>) = (data.components().collect(), dir.components().collect());
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return data.display().to_string();
    }
    let mut relative = PathBuf::new();
    for _ in common..from.len() {
        relative.push("..");
    }
    relative.extend(&to[common..]);
    relative.display().to_string()
}

/// Drafts a schema for the CSV `bytes` (`file` names it in errors and comments).
///
/// # Errors
/// [`DraftError`]: the file is not readable CSV (or has no rows, or a column with no name), the
/// target is not a column or holds too few or too many values, the favourable value is missing
/// or not one of them, or no column is left to be a feature.
pub fn draft(bytes: &[u8], file: &str, o: &DraftOptions) -> Result<Draft, DraftError> {
    draft_with(bytes, file, o, &Silent)
}

/// [`draft`], reporting to `progress` each pass over the file in MiB read, and the last check
/// (the file loaded with the draft) as a stage of the same size, done at once when it ends.
///
/// # Errors
/// As [`draft`].
pub fn draft_with(bytes: &[u8], file: &str, o: &DraftOptions, progress: &dyn Progress) -> Result<Draft, DraftError> {
    if !o.delimiter.is_ascii() {
        return Err(DraftError::Delimiter(char::from(o.delimiter).to_string()));
    }
    let f = Csv { bytes, file, o, progress };
    let placeholders = placeholders(&f)?;
    let missing: Vec<String> = {
        let mut m: Vec<String> = MISSING_TOKENS.iter().map(|t| t.to_string()).collect();
        let given = o.missing.iter().chain(placeholders.iter().map(|(v, _)| v));
        for t in given {
            if !t.is_empty() && !m.contains(t) {
                m.push(t.clone());
            }
        }
        m
    };
    let mut stats: Vec<Stats> = Vec::new();
    let mut rows = 0;
    let names = read(&f, "draft: values", |record| {
        if stats.is_empty() {
            stats = (0..record.len()).map(|_| Stats::new()).collect();
        }
        rows += 1;
        for (s, field) in stats.iter_mut().zip(record.iter()) {
            s.add(field, &missing);
        }
    })?;
    if rows == 0 {
        return Err(DraftError::NoRows { file: file.into() });
    }
    let target = names.iter().position(|n| *n == o.target).ok_or_else(|| DraftError::NoTarget {
        file: file.into(),
        target: o.target.clone(),
        columns: names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
    })?;
    let classes = target_classes(file, o, &stats[target])?;
    // The tokens the file holds, in the order of the list.
    let found: Vec<String> =
        missing.iter().filter(|t| stats.iter().any(|s| s.tokens.contains_key(*t))).cloned().collect();

    let mut columns = Vec::with_capacity(names.len());
    for (i, (name, s)) in names.iter().zip(&stats).enumerate() {
        let first = names.iter().position(|n| n == name).unwrap_or(i);
        let role = if first < i {
            Role::Dropped { reason: format!("the name of column {} again: only the first is read", first + 1) }
        } else if i == target {
            Role::Target { classes: classes.clone() }
        } else {
            match judge(name, s, rows) {
                Ok(kind) => Role::Feature { kind, immutable: personal(name, &PERSONAL) },
                Err(reason) => Role::Dropped { reason },
            }
        };
        columns.push(Column { name: name.clone(), role });
    }
    if !columns.iter().any(|c| matches!(c.role, Role::Feature { .. })) {
        let dropped: Vec<String> = columns
            .iter()
            .filter_map(|c| match &c.role {
                Role::Dropped { reason } => Some(format!("`{}` ({reason})", c.name)),
                _ => None,
            })
            .collect();
        return Err(DraftError::NoFeatures { file: file.into(), dropped: dropped.join("; ") });
    }
    let (one_hot, coded, unjudged) = second_pass(&f, &columns, &stats, &missing, rows)?;
    for group in &one_hot {
        for name in &group.columns {
            if let Some(c) = columns.iter_mut().find(|c| c.name == *name) {
                c.role = Role::OneHot { feature: group.name.clone() };
            }
        }
    }
    let links = find_links(&coded);
    let toml = write_toml(file, o, rows, &columns, &stats, &one_hot, &links, &found, &placeholders);
    let origin = format!("{} (drafted)", o.name);
    let schema = Schema::from_toml(&toml, &origin).map_err(|e| DraftError::Invalid(e.to_string()))?;
    let input = Input { name: file.to_string(), bytes: bytes.to_vec(), skip_lines: 0 };
    let table = {
        let check = Stage::begin(progress, "draft: loading with it", bytes.len());
        let table = Table::read(&schema, &[input]).map_err(|e| DraftError::Invalid(e.to_string()))?;
        check.at(bytes.len() as u64);
        table
    };
    Ok(Draft { toml, schema, columns, one_hot, links, missing: found, placeholders, report: table.report(), unjudged })
}

/// Negative numbers that fill whole rows (every column but at most one, of five or more),
/// in at least [`PLACEHOLDER_ROWS`] of them: a row of no data (HELOC's -9, "no bureau
/// record"), read as missing; each with the rows it fills.
fn placeholders(f: &Csv<'_>) -> Result<Vec<(String, usize)>, DraftError> {
    let mut filled: BTreeMap<String, usize> = BTreeMap::new();
    let mut rows = 0usize;
    read(f, "draft: rows of no data", |record| {
        rows += 1;
        if record.len() < 5 {
            return;
        }
        // The value of all fields but at most one: the first's or the second's.
        for candidate in [record.get(0), record.get(1)].into_iter().flatten() {
            let others = record.iter().filter(|f| f != &candidate).count();
            if others <= 1 && number(candidate) < 0.0 {
                *filled.entry(candidate.to_string()).or_default() += 1;
                break;
            }
        }
    })?;
    let least = (PLACEHOLDER_ROWS * rows as f64).max(10.0);
    Ok(filled.into_iter().filter(|&(_, n)| n as f64 >= least).collect())
}

/// Whether a name holds one of `marks` as a whole word.
fn personal(name: &str, marks: &[&str]) -> bool {
    words(name).iter().any(|w| marks.contains(&w.as_str()))
}

/// The target's values as classes (numeric order when all are numbers), the favourable one
/// among them.
fn target_classes(file: &str, o: &DraftOptions, s: &Stats) -> Result<Vec<String>, DraftError> {
    let classes: Vec<String> = s.sorted().into_iter().map(|(v, _)| v.to_string()).collect();
    if s.more || !(2..=MAX_CLASSES).contains(&classes.len()) {
        let found = match (s.more, classes.len()) {
            (true, _) => format!("more than {MAX_VALUES} different values"),
            (false, 1) => format!("one value only (`{}`)", clip(&classes[0])),
            (false, n) => format!("{n} different values"),
        };
        return Err(DraftError::Classes { file: file.into(), target: o.target.clone(), found });
    }
    let values = classes.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
    match &o.favourable {
        None => Err(DraftError::NoFavourable { file: file.into(), target: o.target.clone(), values }),
        Some(f) if !classes.contains(f) => {
            Err(DraftError::Favourable { file: file.into(), target: o.target.clone(), given: f.clone(), values })
        }
        Some(_) => Ok(classes),
    }
}

/// A feature judged for links: its name, its values (codes index them), each row's code
/// (`u8::MAX` when missing), and whether no answer changes it.
struct Coded {
    name: String,
    values: Vec<String>,
    codes: Vec<u8>,
    fixed: bool,
}

/// Columns judged for links (not continuous, at most [`LINK_VALUES`] values, one spelling
/// each), with their values in code order.
fn link_candidates<'s>(columns: &[Column], stats: &'s [Stats]) -> Vec<(usize, Vec<(&'s str, usize)>)> {
    let judged = |c: &Column, s: &Stats| match c.role {
        Role::Feature { kind: Kind::Categorical | Kind::Binary, .. } => s.values.len() <= LINK_VALUES,
        Role::Feature { kind: Kind::Integer, .. } => {
            !s.more && s.values.len() <= LINK_INTEGER_VALUES && s.distinct_numbers() == s.values.len()
        }
        _ => false,
    };
    columns
        .iter()
        .zip(stats)
        .enumerate()
        .filter(|(_, (c, s))| judged(c, s))
        .map(|(i, (_, s))| (i, s.sorted()))
        .collect()
}

/// Groups of indicator columns that may be one feature: binary features of `0` and `1`, never
/// missing, whose names share a prefix no column has as its name; each as (prefix, columns).
fn one_hot_candidates(columns: &[Column], stats: &[Stats], rows: usize) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (c, s)) in columns.iter().zip(stats).enumerate() {
        let indicator = matches!(c.role, Role::Feature { kind: Kind::Binary, .. })
            && s.present == rows
            && s.values.contains_key("0")
            && s.values.contains_key("1");
        let Some((prefix, suffix)) = c.name.rsplit_once(ONE_HOT_SEPARATORS) else { continue };
        if !indicator || prefix.is_empty() || suffix.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(p, _)| p == prefix) {
            Some((_, members)) => members.push(i),
            None => groups.push((prefix.to_string(), vec![i])),
        }
    }
    groups.retain(|(prefix, members)| members.len() >= 2 && !columns.iter().any(|c| c.name == *prefix));
    groups
}

/// The second pass: which candidate groups of indicator columns are one feature (exactly one
/// 1 in every row), and every feature judged for links with its codes, in file order (a group
/// at its first column).
fn second_pass(
    f: &Csv<'_>,
    columns: &[Column],
    stats: &[Stats],
    missing: &[String],
    rows: usize,
) -> Result<(Vec<OneHot>, Vec<Coded>, usize), DraftError> {
    let plain = link_candidates(columns, stats);
    let groups = one_hot_candidates(columns, stats, rows);
    let index: Vec<HashMap<&str, u8>> =
        plain.iter().map(|(_, vals)| vals.iter().enumerate().map(|(k, (v, _))| (*v, k as u8)).collect()).collect();
    let mut codes: Vec<Vec<u8>> = vec![Vec::with_capacity(rows); plain.len()];
    let mut hot: Vec<Vec<u8>> = vec![Vec::with_capacity(rows); groups.len()];
    let mut valid = vec![true; groups.len()];
    read(f, "draft: groups and links", |record| {
        for (((i, _), map), out) in plain.iter().zip(&index).zip(codes.iter_mut()) {
            let text = record.get(*i).unwrap_or("");
            let missing = text.is_empty() || missing.iter().any(|m| m == text);
            out.push(if missing { u8::MAX } else { map.get(text).copied().unwrap_or(u8::MAX) });
        }
        for (((_, members), ok), out) in groups.iter().zip(valid.iter_mut()).zip(hot.iter_mut()) {
            let ones: Vec<usize> = (0..members.len()).filter(|&k| record.get(members[k]) == Some("1")).collect();
            *ok &= ones.len() == 1;
            out.push(ones.first().map_or(u8::MAX, |&k| k.min(usize::from(u8::MAX - 1)) as u8));
        }
    })?;
    let mut one_hot = Vec::new();
    // (first column, feature) for every feature judged for links.
    let mut coded: Vec<(usize, Coded)> = Vec::new();
    let mut grouped = vec![false; columns.len()];
    for (((prefix, members), ok), hot) in groups.into_iter().zip(valid).zip(hot) {
        if !ok {
            continue;
        }
        let names: Vec<String> = members.iter().map(|&m| columns[m].name.clone()).collect();
        let categories: Vec<String> = names.iter().map(|n| n[prefix.len() + 1..].to_string()).collect();
        let immutable = personal(&prefix, &PERSONAL);
        for &m in &members {
            grouped[m] = true;
        }
        if members.len() <= LINK_VALUES {
            let feature = Coded { name: prefix.clone(), values: categories.clone(), codes: hot, fixed: immutable };
            coded.push((members[0], feature));
        }
        one_hot.push(OneHot { name: prefix, columns: names, categories, immutable });
    }
    for ((i, values), codes) in plain.into_iter().zip(codes) {
        if grouped[i] {
            continue;
        }
        let fixed = matches!(columns[i].role, Role::Feature { immutable: true, .. });
        let values = values.into_iter().map(|(v, _)| v.to_string()).collect();
        coded.push((i, Coded { name: columns[i].name.clone(), values, codes, fixed }));
    }
    coded.sort_by_key(|(i, _)| *i);
    let unjudged = coded.len().saturating_sub(LINK_FEATURES);
    let coded = coded.into_iter().take(LINK_FEATURES).map(|(_, c)| c).collect();
    Ok((one_hot, coded, unjudged))
}

/// The links between pairs of `features` the rows show: `one_to_one` when each value of one
/// goes with one value of the other, both ways, in [`ONE_TO_ONE`] of the rows;
/// `observed_combinations` when two values that are each common are (almost) never together.
fn find_links(features: &[Coded]) -> Vec<FoundLink> {
    let mut links = Vec::new();
    for (a, fa) in features.iter().enumerate() {
        for fb in &features[a + 1..] {
            // A link between two features no answer changes never rules anything out.
            if fa.fixed && fb.fixed {
                continue;
            }
            let (na, nb) = (fa.values.len(), fb.values.len());
            let mut table = vec![0usize; na * nb];
            for (&x, &y) in fa.codes.iter().zip(&fb.codes) {
                if usize::from(x) < na && usize::from(y) < nb {
                    table[usize::from(x) * nb + usize::from(y)] += 1;
                }
            }
            if let Some(link) = judge_pair(&table, &fa.values, &fb.values, [fa.name.clone(), fb.name.clone()]) {
                links.push(link);
            }
        }
    }
    // Of two features one to one, the second's combinations are the first's: a link of the
    // second with a feature the first is already linked with says nothing more.
    let pair = |l: &FoundLink, x: &str, y: &str| {
        (l.features[0] == x && l.features[1] == y) || (l.features[0] == y && l.features[1] == x)
    };
    let combined = |x: &str, y: &str| links.iter().any(|l| l.kind == LinkKind::ObservedCombinations && pair(l, x, y));
    let repeats: Vec<bool> = links
        .iter()
        .map(|l| {
            l.kind == LinkKind::ObservedCombinations
                && links.iter().filter(|t| t.kind == LinkKind::OneToOne).any(|t| {
                    let [first, second] = &t.features;
                    let [x, y] = &l.features;
                    let partner = if x == second {
                        Some(y)
                    } else if y == second {
                        Some(x)
                    } else {
                        None
                    };
                    partner.is_some_and(|p| combined(first, p))
                })
        })
        .collect();
    links.into_iter().zip(repeats).filter(|(_, repeat)| !repeat).map(|(l, _)| l).collect()
}

/// The link a pair's table of counts (`a`'s values by `b`'s) shows, if any.
fn judge_pair(table: &[usize], a: &[String], b: &[String], names: [String; 2]) -> Option<FoundLink> {
    let (na, nb) = (a.len(), b.len());
    let n: usize = table.iter().sum();
    if n == 0 {
        return None;
    }
    let row = |i: usize| &table[i * nb..(i + 1) * nb];
    let col = |j: usize| (0..na).map(move |i| table[i * nb + j]);
    let (rows, cols): (Vec<usize>, Vec<usize>) =
        ((0..na).map(|i| row(i).iter().sum()).collect(), (0..nb).map(|j| col(j).sum()).collect());
    if na >= 3 && nb >= 3 {
        let ab: usize = (0..na).map(|i| row(i).iter().copied().max().unwrap_or(0)).sum();
        let ba: usize = (0..nb).map(|j| col(j).max().unwrap_or(0)).sum();
        let share = ab.min(ba) as f64 / n as f64;
        if share >= ONE_TO_ONE {
            let evidence = format!(
                "Each of the {na} values of {} goes with one of {}, and back, in {:.1} % of the rows",
                names[0],
                names[1],
                100.0 * share
            );
            return Some(FoundLink { kind: LinkKind::OneToOne, features: names, min_rows: 1, evidence });
        }
    }
    // Pairs of values the data (almost) never hold together though each is common: the most
    // telling first.
    let mut absent: Vec<(f64, usize, usize)> = Vec::new();
    for i in 0..na {
        for j in 0..nb {
            let expected = rows[i] as f64 * cols[j] as f64 / n as f64;
            if expected >= EXPECTED_TOGETHER && (table[i * nb + j] as f64) <= RARELY * expected {
                absent.push((expected, i, j));
            }
        }
    }
    // Those held by so few rows that they may be slips are ruled out; a pair with none is
    // related, not linked.
    let slip = ((SLIP * n as f64) as usize).min(MAX_MIN_ROWS - 1);
    absent.retain(|&(_, i, j)| table[i * nb + j] <= slip);
    absent.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let &(expected, i, j) = absent.first()?;
    // Enough rows for a combination to count as held that those found are not.
    let min_rows = 1 + absent.iter().map(|&(_, i, j)| table[i * nb + j]).max().unwrap_or(0);
    let ruled_out = table.iter().filter(|&&c| c < min_rows).count();
    let rule = match min_rows {
        1 => "Only combinations some row holds are kept".to_string(),
        n => format!("A combination fewer than {n} rows hold counts as none (`min_rows`)"),
    };
    let evidence = format!(
        "{} combination(s) of values common apart are (almost) never together: {} = {} with {} = {} in {} row(s), \
         where {:.0} would be were the two unrelated. {rule}: {ruled_out} of the {} combinations are ruled out",
        absent.len(),
        names[0],
        clip(&a[i]),
        names[1],
        clip(&b[j]),
        table[i * nb + j],
        expected,
        na * nb
    );
    Some(FoundLink { kind: LinkKind::ObservedCombinations, features: names, min_rows, evidence })
}

/// The schema file.
#[allow(clippy::too_many_arguments)] // reason: the draft's parts, each written once
fn write_toml(
    file: &str,
    o: &DraftOptions,
    rows: usize,
    columns: &[Column],
    stats: &[Stats],
    one_hot: &[OneHot],
    links: &[FoundLink],
    found: &[String],
    placeholders: &[(String, usize)],
) -> String {
    let mut t = String::new();
    let features = columns.iter().filter(|c| matches!(c.role, Role::Feature { .. })).count() + one_hot.len();
    // Writing to a String cannot fail.
    let _ = writeln!(
        t,
        "# A first schema for {} ({rows} rows, {} columns: {features} features), drafted by `cent schema`.",
        clip(file),
        columns.len()
    );
    let _ = writeln!(t, "# Read it before use: every choice says why it was made. Check above all that the");
    let _ = writeln!(t, "# features a person cannot change are `immutable`, and which directions the others may");
    let _ = writeln!(t, "# move in (`increase_only`, `decrease_only`). The format: data/README.md in cent's sources.");
    let _ = writeln!(t, "name = {}", quoted(&o.name));
    let protected: Vec<&str> = columns
        .iter()
        .filter_map(|c| match &c.role {
            Role::Feature { kind: Kind::Categorical | Kind::Binary, .. } => Some(c.name.as_str()),
            Role::OneHot { feature } if one_hot.iter().any(|g| g.name == *feature && g.columns[0] == c.name) => {
                Some(feature.as_str())
            }
            _ => None,
        })
        .filter(|name| personal(name, &PROTECTED))
        .collect();
    if !protected.is_empty() {
        let _ = writeln!(t, "# What `cent audit` groups people by: features whose names say they are protected.");
        let _ = writeln!(t, "protected = {}", quoted_list(protected));
    }
    let dropped: Vec<(&str, &str)> = columns
        .iter()
        .filter_map(|c| match &c.role {
            Role::Dropped { reason } => Some((c.name.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    if !dropped.is_empty() {
        let _ = writeln!(t, "# Columns left out:");
        for (name, reason) in &dropped {
            let _ = writeln!(t, "#   {}: {reason}", clip(name));
        }
        // A column whose name a read column has too is left out without a word of its own.
        let read = |name: &str| columns.iter().any(|c| c.name == name && !matches!(c.role, Role::Dropped { .. }));
        let mut listed: Vec<&str> = Vec::new();
        for &(name, _) in &dropped {
            if !read(name) && !listed.contains(&name) {
                listed.push(name);
            }
        }
        if !listed.is_empty() {
            let _ = writeln!(t, "dropped = {}", quoted_list(listed));
        }
    }
    let _ = writeln!(t, "\n[[source]]");
    let _ = writeln!(t, "# Relative to this file's directory; `--data` reads another file instead.");
    let _ = writeln!(t, "file = {}", quoted(&o.source));
    let _ = writeln!(t, "\n[csv]");
    let _ = writeln!(t, "header = {}", o.header);
    if !o.header {
        let _ = writeln!(t, "names = {}", quoted_list(columns.iter().map(|c| c.name.as_str())));
    }
    if o.delimiter != b',' {
        let _ = writeln!(t, "delimiter = {}", quoted(&char::from(o.delimiter).to_string()));
    }
    if !found.is_empty() {
        let held = |m: &String| stats.iter().map(|s| s.tokens.get(m).copied().unwrap_or(0)).sum::<usize>();
        let counts: Vec<String> = found.iter().map(|m| format!("`{}` {} times", clip(m), held(m))).collect();
        let _ = writeln!(t, "# Found in the file ({}): a row holding one is left out when loaded.", counts.join(", "));
        for (value, rows) in placeholders {
            let _ =
                writeln!(t, "# `{}` fills {rows} rows, every column but at most one: rows of no data.", clip(value));
        }
        let _ = writeln!(t, "missing = {}", quoted_list(found.iter().map(String::as_str)));
    }
    let _ = writeln!(t, "\n[target]");
    let _ = writeln!(t, "column = {}", quoted(&o.target));
    if let Some(i) = repeated(columns, &o.target) {
        let _ = writeln!(t, "index = {i}");
    }
    let _ = writeln!(t, "favourable = {}", quoted(o.favourable.as_deref().unwrap_or("")));
    let target = columns.iter().zip(stats).find_map(|(c, s)| match &c.role {
        Role::Target { classes } => Some((classes, s)),
        _ => None,
    });
    if let Some((classes, s)) = target {
        let counts: Vec<String> =
            classes.iter().map(|v| format!("{} {}", clip(v), s.values.get(v).copied().unwrap_or(0))).collect();
        let _ = writeln!(t, "# Rows per class: {}.", counts.join(", "));
        let list: Vec<String> =
            classes.iter().map(|v| format!("{{ name = {}, values = [{}] }}", quoted(v), quoted(v))).collect();
        let _ = writeln!(t, "classes = [{}]", list.join(", "));
    }
    for (i, (c, s)) in columns.iter().zip(stats).enumerate() {
        if let Some(group) = one_hot.iter().find(|g| g.columns[0] == c.name) {
            write_one_hot(&mut t, group, columns, stats);
            continue;
        }
        let Role::Feature { kind, immutable } = c.role else { continue };
        let _ = writeln!(t, "\n[[feature]]");
        let _ = writeln!(t, "name = {}", quoted(&c.name));
        if repeated(columns, &c.name).is_some() {
            let _ = writeln!(t, "index = {i}");
        }
        let _ = writeln!(t, "# {}", describe(kind, s));
        if let Some(hint) = codes_hint(kind, s) {
            let _ = writeln!(t, "{hint}");
        }
        let _ = writeln!(t, "kind = \"{}\"", kind.name());
        if kind == Kind::Binary {
            let values: Vec<(&str, usize)> = s.sorted();
            let _ = writeln!(t, "categories = {}", quoted_list(values.iter().map(|v| v.0)));
        }
        if immutable {
            let _ = writeln!(t, "# A personal attribute, by its name: no answer changes it.");
            let _ = writeln!(t, "mutability = \"immutable\"");
        }
    }
    for link in links {
        let _ = writeln!(t, "\n[[link]]");
        let _ = writeln!(t, "# {}.", link.evidence);
        let _ = writeln!(t, "kind = \"{}\"", link.kind.name());
        let _ = writeln!(t, "features = {}", quoted_list(link.features.iter().map(String::as_str)));
        if link.min_rows > 1 {
            let _ = writeln!(t, "min_rows = {}", link.min_rows);
        }
    }
    t
}

/// The position (0-based) of the first column named `name` when another column has its name
/// too: the schema reads that column by position (`index`).
fn repeated(columns: &[Column], name: &str) -> Option<usize> {
    let mut at = columns.iter().enumerate().filter(|(_, c)| c.name == name).map(|(i, _)| i);
    let first = at.next();
    at.next().and(first)
}

/// A feature read from indicator columns.
fn write_one_hot(t: &mut String, group: &OneHot, columns: &[Column], stats: &[Stats]) {
    let ones = |name: &String| {
        let at = columns.iter().position(|c| c.name == *name);
        at.and_then(|i| stats[i].values.get("1")).copied().unwrap_or(0)
    };
    let mut counts: Vec<(&str, usize)> =
        group.categories.iter().zip(&group.columns).map(|(c, name)| (c.as_str(), ones(name))).collect();
    counts.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let shown: Vec<String> = counts.iter().take(8).map(|(v, n)| format!("{} {n}", clip(v))).collect();
    let more = if counts.len() > 8 { format!(", {} more", counts.len() - 8) } else { String::new() };
    let _ = writeln!(t, "\n[[feature]]");
    let _ = writeln!(t, "name = {}", quoted(&group.name));
    let _ = writeln!(
        t,
        "# {} indicator columns, exactly one of them 1 in every row: one feature. Rows of each: {}{more}.",
        group.columns.len(),
        shown.join(", ")
    );
    let _ = writeln!(t, "kind = \"categorical\"");
    let _ = writeln!(t, "one_hot = {}", quoted_list(group.columns.iter().map(String::as_str)));
    let pairs: Vec<String> =
        group.columns.iter().zip(&group.categories).map(|(c, v)| format!("{} = {}", quoted(c), quoted(v))).collect();
    let _ = writeln!(t, "map = {{ {} }}", pairs.join(", "));
    if group.immutable {
        let _ = writeln!(t, "# A personal attribute, by its name: no answer changes it.");
        let _ = writeln!(t, "mutability = \"immutable\"");
    }
}

/// For a whole-number feature whose few negative values sit below amounts that are never
/// negative (HELOC's -7 "no delinquency", -8 "no usable trades"): a commented `codes` line
/// to complete, since a state is not an amount an answer may move to.
fn codes_hint(kind: Kind, s: &Stats) -> Option<String> {
    if kind != Kind::Integer || s.more {
        return None;
    }
    let values = s.sorted();
    let negative: Vec<(&str, usize)> = values.iter().copied().filter(|(v, _)| number(v) < 0.0).collect();
    let amounts = values.len() - negative.len();
    if negative.is_empty() || negative.len() > 3 || amounts < 2 * negative.len() {
        return None;
    }
    let held: Vec<String> = negative.iter().map(|(v, n)| format!("{v} ({n} rows)")).collect();
    let codes: Vec<String> = negative.iter().map(|(v, _)| format!("{} = \"what {v} means\"", quoted(v))).collect();
    Some(format!(
        "# {} below values never negative: if a state, not an amount, say what each means:\n# codes = {{ {} }}",
        held.join(" and "),
        codes.join(", ")
    ))
}

/// One line on a feature's values, for the comment above its kind.
fn describe(kind: Kind, s: &Stats) -> String {
    let distinct = if s.more { format!("more than {MAX_VALUES}") } else { s.values.len().to_string() };
    let shown = |v: f64| format!("{v}");
    match kind {
        Kind::Continuous => {
            format!("Numbers from {} to {}, not all whole.", shown(s.min), shown(s.max))
        }
        Kind::Integer => format!(
            "Whole numbers from {} to {}, {distinct} different; an answer takes only values some row holds.",
            shown(s.min),
            shown(s.max)
        ),
        Kind::Binary | Kind::Categorical => {
            let mut by_count = s.sorted();
            by_count.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
            let shown: Vec<String> = by_count.iter().take(8).map(|(v, n)| format!("{} {n}", clip(v))).collect();
            let more = if by_count.len() > 8 { format!(", {} more", by_count.len() - 8) } else { String::new() };
            let what = if kind == Kind::Binary { "Two values" } else { "Categories" };
            format!("{what}, rows of each: {}{more}.", shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(target: &str, favourable: &str) -> DraftOptions {
        DraftOptions::new("toy", "toy.csv", target, Some(favourable))
    }

    /// A file with a column of every kind and some to leave out.
    fn mixed(rows: usize) -> String {
        let mut s = String::from("id,income,years,married,job,sex,note,constant,approved\n");
        for i in 0..rows {
            let job = ["clerk", "nurse", "driver", "engineer"][i % 4];
            let sex = ["female", "male"][i % 2];
            let ok = if (i * 7) % 10 > 4 { "yes" } else { "no" };
            s += &format!("{},{}.25,{},{},{job},{sex},note {i},same,{ok}\n", i + 1, 1000 + i * 13, i % 30, i % 2);
        }
        s
    }

    fn role<'d>(d: &'d Draft, name: &str) -> &'d Role {
        &d.columns.iter().find(|c| c.name == name).unwrap().role
    }

    #[test]
    fn test_each_column_gets_the_kind_its_values_call_for() {
        let d = draft(mixed(300).as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        let feature = |kind, immutable| Role::Feature { kind, immutable };
        assert_eq!(role(&d, "income"), &feature(Kind::Continuous, false));
        assert_eq!(role(&d, "years"), &feature(Kind::Integer, false));
        assert_eq!(role(&d, "married"), &feature(Kind::Binary, false));
        assert_eq!(role(&d, "job"), &feature(Kind::Categorical, false));
        assert_eq!(role(&d, "sex"), &feature(Kind::Binary, true));
        assert_eq!(role(&d, "approved"), &Role::Target { classes: vec!["no".into(), "yes".into()] });
        for (name, because) in [("id", "identifier"), ("note", "free text"), ("constant", "one value only")] {
            match role(&d, name) {
                Role::Dropped { reason } => assert!(reason.contains(because), "{name}: {reason}"),
                other => panic!("{name} kept as {other:?}"),
            }
        }
        assert_eq!(d.schema.dropped, ["id", "note", "constant"]);
        assert_eq!(d.schema.protected, ["sex"]);
        assert_eq!((d.report.read, d.report.kept), (300, 300));
        // A binary feature lists its two values, the first encoding as 0.
        let married = d.schema.features.iter().find(|f| f.name == "married").unwrap();
        assert_eq!(married.categories.as_deref(), Some(&["0".to_string(), "1".to_string()][..]));
    }

    #[test]
    fn test_the_draft_is_the_same_every_time() {
        let csv = mixed(200);
        let a = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        let b = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        assert_eq!(a.toml, b.toml);
    }

    #[test]
    fn test_missing_tokens_are_found_and_keep_a_numeric_column_numeric() {
        let csv = mixed(100).replacen(",1013.25,", ",?,", 1).replacen(",clerk,", ",NA,", 1);
        let d = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        assert_eq!(d.missing, ["?", "NA"]);
        assert_eq!(d.schema.csv.missing, ["?", "NA"]);
        assert_eq!(role(&d, "income"), &Role::Feature { kind: Kind::Continuous, immutable: false });
        assert_eq!((d.report.read, d.report.missing, d.report.kept), (100, 2, 98));
    }

    #[test]
    fn test_a_number_column_with_stray_text_is_left_out_with_a_hint() {
        let csv = mixed(100).replacen(",1013.25,", ",unknown,", 1);
        let d = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        match role(&d, "income") {
            Role::Dropped { reason } => assert!(reason.contains("`unknown`") && reason.contains("missing"), "{reason}"),
            other => panic!("kept as {other:?}"),
        }
    }

    #[test]
    fn test_target_errors_name_what_is_there() {
        let csv = mixed(50);
        let err = |o: DraftOptions| draft(csv.as_bytes(), "toy.csv", &o).unwrap_err().to_string();
        let e = err(options("approve", "yes"));
        assert!(e.contains("no column `approve`") && e.contains("`approved`"), "{e}");
        let e = err(options("approved", "Yes"));
        assert!(e.contains("`Yes`") && e.contains("`no`, `yes`"), "{e}");
        let e = err(DraftOptions::new("toy", "toy.csv", "approved", None));
        assert!(e.contains("favourable") && e.contains("`no`, `yes`"), "{e}");
        let e = err(options("income", "1"));
        assert!(e.contains("target column `income`") && e.contains("different values"), "{e}");
    }

    #[test]
    fn test_bad_headers_and_rows_are_named() {
        let o = options("approved", "yes");
        let e = draft(b"a,,approved\n1,2,yes\n", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("column 2 has no name"), "{e}");
        let e = draft(b"a,b,approved\n1,2,yes\n1,2\n", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("toy.csv:3") && e.contains("expected 3 fields, found 2"), "{e}");
        let e = draft(b"", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("toy.csv"), "{e}");
        let e = draft(b"a,b,approved\n", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("toy.csv"), "{e}");
    }

    /// Records the stages a draft reports and the MiB they advance.
    #[derive(Default)]
    struct Stages(std::cell::RefCell<Vec<(String, u64, u64, bool)>>);

    impl Progress for Stages {
        fn begin(&self, label: &str, total: u64, _unit: &str) {
            self.0.borrow_mut().push((label.to_string(), total, 0, false));
        }
        fn advance(&self, steps: u64) {
            if let Some(s) = self.0.borrow_mut().last_mut() {
                s.2 += steps;
            }
        }
        fn end(&self) {
            if let Some(s) = self.0.borrow_mut().last_mut() {
                s.3 = true;
            }
        }
    }

    #[test]
    fn test_each_pass_over_the_file_is_a_stage_that_ends_even_on_error() {
        // Over 3 MiB: each pass advances by the whole mebibytes it reads, never past the total.
        let csv = mixed(60_000);
        let mib = (csv.len() as u64).div_ceil(1 << 20);
        assert!(mib >= 3, "{mib}");
        let stages = Stages::default();
        let d = draft_with(csv.as_bytes(), "toy.csv", &options("approved", "yes"), &stages).unwrap();
        assert_eq!(
            d.toml,
            draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap().toml,
            "reporting changes nothing"
        );
        let seen = stages.0.into_inner();
        let labels: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            labels,
            ["draft: rows of no data", "draft: values", "draft: groups and links", "draft: loading with it"]
        );
        for (label, total, done, ended) in &seen {
            assert!(
                *total == mib && *done + 1 >= mib && done <= total && *ended,
                "{label}: {done}/{total}, ended {ended}"
            );
        }
        // A bad row stops the first pass; its stage still ends.
        let stages = Stages::default();
        assert!(draft_with(b"a,b,approved\n1,2,yes\n1,2\n", "toy.csv", &options("approved", "yes"), &stages).is_err());
        let seen = stages.0.into_inner();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].3, "the stage ended");
    }

    #[test]
    fn test_a_name_given_twice_reads_the_first_column_by_position() {
        let csv = "a,b,a,approved\n1.5,x,7,yes\n2.5,y,8,no\n3.5,z,9,yes\n4.5,x,7,no\n";
        let d = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        match &d.columns[2].role {
            Role::Dropped { reason } => assert!(reason.contains("column 1 again"), "{reason}"),
            other => panic!("kept as {other:?}"),
        }
        assert_eq!(d.schema.features[0].index, Some(0));
        assert!(d.schema.dropped.is_empty());
        assert_eq!(d.report.kept, 4);
    }

    #[test]
    fn test_a_mostly_missing_column_is_left_out_and_placeholder_rows_are_missing() {
        let mut csv = String::from("a,b,c,d,e,note,approved\n");
        for i in 0..1000 {
            let note = if i % 3 == 0 { "seen" } else { "" };
            match i % 50 {
                // A row of no data: -9 in every column but the target.
                0 => csv += &format!("-9,-9,-9,-9,-9,-9,{}\n", ["no", "yes"][i % 2]),
                _ => {
                    csv += &format!(
                        "{}.5,{},{},{},{},{note},{}\n",
                        i,
                        i % 7,
                        i % 5,
                        i % 3,
                        i % 11,
                        ["no", "yes"][i / 3 % 2]
                    )
                }
            }
        }
        let d = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        assert_eq!(d.placeholders, [("-9".to_string(), 20)]);
        assert_eq!(d.missing, ["-9"]);
        match role(&d, "note") {
            Role::Dropped { reason } => assert!(reason.contains("missing in"), "{reason}"),
            other => panic!("kept as {other:?}"),
        }
        assert_eq!(role(&d, "b"), &Role::Feature { kind: Kind::Integer, immutable: false });
        // A value below amounts that are never negative is offered as a code to complete.
        let csv = csv.replacen(",3,", ",-7,", 3);
        let d = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        assert!(d.toml.contains("# codes = { \"-7\" = \"what -7 means\" }"), "{}", d.toml);
        assert_eq!((d.report.read, d.report.missing, d.report.kept), (1000, 20, 980));
    }

    #[test]
    fn test_a_file_without_a_header_takes_the_names_given() {
        let body: String = mixed(60).lines().skip(1).map(|l| format!("{l}\n")).collect();
        let names = "id,income,years,married,job,sex,note,constant,approved".split(',').map(String::from).collect();
        let o = DraftOptions { header: false, names: Some(names), ..options("approved", "yes") };
        let d = draft(body.as_bytes(), "toy.csv", &o).unwrap();
        assert_eq!(d.report.kept, 60);
        assert!(!d.schema.csv.header);
        let o = DraftOptions { header: false, names: None, ..options("column_9", "yes") };
        let d = draft(body.as_bytes(), "toy.csv", &o).unwrap();
        assert_eq!(role(&d, "column_9"), &Role::Target { classes: vec!["no".into(), "yes".into()] });
    }

    #[test]
    fn test_names_escape_into_valid_toml() {
        let csv = "we\"ird name,x\\y,approved\n1.5,a,yes\n2.5,b,no\n3.5,c,yes\n4.5,a,no\n";
        let d = draft(csv.as_bytes(), "toy.csv", &options("approved", "yes")).unwrap();
        assert_eq!(d.schema.features[0].name, "we\"ird name");
        assert_eq!(d.schema.features[1].name, "x\\y");
    }

    /// Rows where `level` and `years` determine each other, and `role` is never `head` for a
    /// `young` person; `colour` is unrelated to everything.
    fn linked(rows: usize, noise: usize) -> String {
        let mut s = String::from("level,years,age_band,role,colour,ok\n");
        for i in 0..rows {
            let k = i % 4;
            let level = ["basic", "school", "degree", "doctor"][k];
            // `noise` rows in every hundred break the pairing.
            let years = if i % 100 < noise { [8, 12, 16, 20][(k + 1) % 4] } else { [8, 12, 16, 20][k] };
            let band = ["young", "old"][(i / 4) % 2];
            let role = if band == "young" { ["staff", "lead"][i % 2] } else { ["staff", "lead", "head"][i % 3] };
            let colour = ["red", "green", "blue"][(i / 8) % 3];
            s += &format!("{level},{years},{band},{role},{colour},{}\n", ["no", "yes"][(i / 3) % 2]);
        }
        s
    }

    #[test]
    fn test_links_the_rows_show_are_declared_and_no_others() {
        let d = draft(linked(2000, 0).as_bytes(), "toy.csv", &options("ok", "yes")).unwrap();
        let found: Vec<(LinkKind, [&str; 2])> =
            d.links.iter().map(|l| (l.kind, [l.features[0].as_str(), l.features[1].as_str()])).collect();
        assert_eq!(
            found,
            [(LinkKind::OneToOne, ["level", "years"]), (LinkKind::ObservedCombinations, ["age_band", "role"])],
            "{:#?}",
            d.links
        );
        assert_eq!(d.schema.links().len(), 2);
        let evidence = &d.links[1].evidence;
        assert!(evidence.contains("age_band = young with role = head in 0 row(s)"), "{evidence}");
        assert!(evidence.contains("Only combinations some row holds are kept: 1 of the 6 combinations"), "{evidence}");
        assert_eq!(d.links[1].min_rows, 1);
        // Broken in 5 rows of every hundred, the pairing is no longer one to one.
        let d = draft(linked(2000, 5).as_bytes(), "toy.csv", &options("ok", "yes")).unwrap();
        assert!(d.links.iter().all(|l| l.kind != LinkKind::OneToOne), "{:#?}", d.links);
    }

    #[test]
    fn test_a_link_rules_out_what_few_rows_hold_and_says_nothing_twice() {
        // `level` and `years` one to one; a `basic` level is never `head` (but in two rows),
        // nor so its years; `sex` and `race` depend on each other but no answer changes either.
        let mut s = String::from("level,years,role,sex,race,ok\n");
        for i in 0..3000 {
            let k = i % 3;
            let level = ["basic", "school", "degree"][k];
            let years = [8, 12, 16][k];
            let role = match (k, i % 1500) {
                (0, 0) => "head",
                (0, _) => ["staff", "lead"][(i / 3) % 2],
                _ => ["staff", "lead", "head"][(i / 3) % 3],
            };
            let sex = ["f", "m"][(i / 7) % 2];
            let race = if sex == "f" { ["a", "b"][(i / 11) % 2] } else { ["b", "c"][(i / 11) % 2] };
            s += &format!("{level},{years},{role},{sex},{race},{}\n", ["no", "yes"][(i / 5) % 2]);
        }
        let d = draft(s.as_bytes(), "toy.csv", &options("ok", "yes")).unwrap();
        let found: Vec<(LinkKind, [&str; 2], usize)> =
            d.links.iter().map(|l| (l.kind, [l.features[0].as_str(), l.features[1].as_str()], l.min_rows)).collect();
        assert_eq!(
            found,
            [(LinkKind::OneToOne, ["level", "years"], 1), (LinkKind::ObservedCombinations, ["level", "role"], 3)],
            "{:#?}",
            d.links
        );
        assert!(d.links[1].evidence.contains("in 2 row(s)"), "{}", d.links[1].evidence);
        assert!(d.links[1].evidence.contains("fewer than 3 rows hold counts as none"), "{}", d.links[1].evidence);
        assert_eq!(d.schema.links().iter().map(|l| l.min_rows).collect::<Vec<_>>(), [1, 3]);
    }

    /// On Adult's own file, the links its schema declares by hand are found from the rows.
    #[test]
    fn test_adult_drafts_the_links_its_schema_declares() {
        use std::io::Read;
        let (_, gz) = super::super::ADULT_FILES[0];
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz).read_to_end(&mut bytes).unwrap();
        let names = "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,\
                     capital-gain,capital-loss,hours-per-week,native-country,income";
        let o = DraftOptions {
            header: false,
            names: Some(names.split(',').map(String::from).collect()),
            ..DraftOptions::new("adult", "adult.data", "income", Some(">50K"))
        };
        let d = draft(&bytes, "adult.data", &o).unwrap();
        let pairs: Vec<(LinkKind, &str, &str)> =
            d.links.iter().map(|l| (l.kind, l.features[0].as_str(), l.features[1].as_str())).collect();
        for link in [
            (LinkKind::OneToOne, "education", "education-num"),
            (LinkKind::ObservedCombinations, "marital-status", "relationship"),
            (LinkKind::ObservedCombinations, "relationship", "sex"),
        ] {
            assert!(pairs.contains(&link), "{link:?} not in {pairs:#?}");
        }
        // Race and native country go together too, but no answer changes either.
        assert!(!pairs.iter().any(|p| p.1 == "race" && p.2 == "native-country"), "{pairs:#?}");
        assert_eq!(role(&d, "age"), &Role::Feature { kind: Kind::Integer, immutable: true });
        assert_eq!(role(&d, "sex"), &Role::Feature { kind: Kind::Binary, immutable: true });
        assert_eq!(role(&d, "capital-gain"), &Role::Feature { kind: Kind::Integer, immutable: false });
        assert_eq!(d.missing, ["?"]);
        assert_eq!((d.report.read, d.report.kept), (32_561, 30_162));
    }

    #[test]
    fn test_the_source_is_named_from_the_schema_directory() {
        let source = |data: &str, schema: &str| source_for(Path::new(data), Some(Path::new(schema)));
        assert_eq!(source("/a/b/loans.csv", "/a/b/loans.toml"), "loans.csv");
        assert_eq!(source("/a/data/loans.csv", "/a/schemas/loans.toml"), "../data/loans.csv");
        assert_eq!(source("/a/loans.csv", "/a/b/c/loans.toml"), "../../loans.csv");
        assert_eq!(source("/a/b/c/loans.csv", "/a/loans.toml"), "b/c/loans.csv");
        assert_eq!(source_for(Path::new("x/loans.csv"), None), "x/loans.csv");
    }

    #[test]
    fn test_indicator_columns_of_one_category_become_one_feature() {
        // `job_*`: exactly one 1 in every row; `flag_*`: both 1 in some rows; `sex=*`: one.
        let mut s = String::from("income,job_clerk,job_nurse,job_driver,flag_a,flag_b,sex=f,sex=m,ok\n");
        for i in 0..120 {
            let job = i % 3;
            let hot = |k: usize| u8::from(job == k);
            let (a, b) = (i % 2, i % 5 / 4);
            let f = i % 7 % 2;
            s +=
                &format!("{i}.5,{},{},{},{a},{b},{f},{},{}\n", hot(0), hot(1), hot(2), 1 - f, ["no", "yes"][i / 2 % 2]);
        }
        let d = draft(s.as_bytes(), "toy.csv", &options("ok", "yes")).unwrap();
        let groups: Vec<(&str, Vec<&str>, bool)> = d
            .one_hot
            .iter()
            .map(|g| (g.name.as_str(), g.categories.iter().map(String::as_str).collect(), g.immutable))
            .collect();
        assert_eq!(groups, [("job", vec!["clerk", "nurse", "driver"], false), ("sex", vec!["f", "m"], true)]);
        assert_eq!(role(&d, "job_nurse"), &Role::OneHot { feature: "job".into() });
        assert_eq!(role(&d, "flag_a"), &Role::Feature { kind: Kind::Binary, immutable: false });
        let names: Vec<&str> = d.schema.features.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["income", "job", "flag_a", "flag_b", "sex"]);
        assert_eq!(d.schema.protected, ["sex"]);
        assert_eq!(d.report.kept, 120);
        let table = Table::read(&d.schema, &[Input { name: "toy.csv".into(), bytes: s.into_bytes(), skip_lines: 0 }]);
        let attributes = table.unwrap().attributes().to_vec();
        assert_eq!(attributes[1].categories, ["clerk", "driver", "nurse"]);
    }

    #[test]
    fn test_personal_names_are_immutable_by_whole_word() {
        for (name, personal) in [
            ("age", true),
            ("Age", true),
            ("native-country", true),
            ("SEX", true),
            ("page", false),
            ("usage", false),
            ("carriage_cost", false),
        ] {
            assert_eq!(super::personal(name, &PERSONAL), personal, "{name}");
        }
    }
}
