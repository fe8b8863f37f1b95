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
/// Words of a column's name (lower case) that mark a personal attribute: drafted immutable.
const PERSONAL: [&str; 11] =
    ["age", "sex", "gender", "race", "ethnicity", "ethnic", "nationality", "native", "birth", "born", "religion"];
/// Of those, the ones an audit groups people by (`protected`), on a categorical or binary feature.
const PROTECTED: [&str; 7] = ["sex", "gender", "race", "ethnicity", "ethnic", "nationality", "religion"];
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
    pub links: Vec<FoundLink>,
    /// The missing-value tokens the file holds (of [`MISSING_TOKENS`] and those given).
    pub missing: Vec<String>,
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
    #[error("{file}: two columns are named `{name}` (columns {first} and {second}); a schema names columns")]
    Duplicate { file: String, name: String, first: usize, second: usize },
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
        if let Some(v) = text.parse::<f64>().ok().filter(|v| v.is_finite()) {
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

fn number(text: &str) -> f64 {
    text.parse::<f64>().unwrap_or(f64::NAN)
}

/// The kind a column's values call for, or why it is left out.
fn judge(name: &str, s: &Stats) -> Result<Kind, String> {
    let distinct = if s.more { format!("more than {MAX_VALUES}") } else { s.values.len().to_string() };
    if s.present == 0 {
        return Err("every value is missing".into());
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
    if s.more || s.values.len() > MAX_CATEGORIES {
        return Err(format!(
            "text with {distinct} different values: an identifier or free text (a categorical feature has at most {MAX_CATEGORIES} categories; merge them with `map` and `other` to keep it)"
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
fn read(
    bytes: &[u8],
    file: &str,
    o: &DraftOptions,
    mut visit: impl FnMut(&csv::StringRecord),
) -> Result<Vec<String>, DraftError> {
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
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(DraftError::Unnamed { file: file.into(), position: i + 1 });
        }
        if let Some(&first) = seen.get(name.as_str()) {
            return Err(DraftError::Duplicate { file: file.into(), name: name.clone(), first, second: i + 1 });
        }
        seen.insert(name, i + 1);
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
        visit(&record);
    }
    Ok(names)
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
/// [`DraftError`]: the file is not readable CSV or its header is not a schema's (a column with
/// no name, or two of one name), the target is not a column or holds too few or too many
/// values, the favourable value is missing or not one of them, or no column is left to be a
/// feature.
pub fn draft(bytes: &[u8], file: &str, o: &DraftOptions) -> Result<Draft, DraftError> {
    if !o.delimiter.is_ascii() {
        return Err(DraftError::Delimiter(char::from(o.delimiter).to_string()));
    }
    let missing: Vec<String> = {
        let mut m: Vec<String> = MISSING_TOKENS.iter().map(|t| t.to_string()).collect();
        m.extend(o.missing.iter().filter(|t| !t.is_empty() && !MISSING_TOKENS.contains(&t.as_str())).cloned());
        m
    };
    let mut stats: Vec<Stats> = Vec::new();
    let mut rows = 0;
    let names = read(bytes, file, o, |record| {
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
        let role = if i == target {
            Role::Target { classes: classes.clone() }
        } else {
            match judge(name, s) {
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
    let (links, unjudged) = find_links(bytes, file, o, &columns, &stats, &missing)?;
    let toml = write_toml(file, o, rows, &columns, &stats, &links, &found);
    let origin = format!("{} (drafted)", o.name);
    let schema = Schema::from_toml(&toml, &origin).map_err(|e| DraftError::Invalid(e.to_string()))?;
    let input = Input { name: file.to_string(), bytes: bytes.to_vec(), skip_lines: 0 };
    let table = Table::read(&schema, &[input]).map_err(|e| DraftError::Invalid(e.to_string()))?;
    Ok(Draft { toml, schema, columns, links, missing: found, report: table.report(), unjudged })
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

/// The features judged for links: not continuous, and at most [`LINK_VALUES`] values (one
/// spelling each).
fn link_candidates(columns: &[Column], stats: &[Stats]) -> Vec<usize> {
    columns
        .iter()
        .zip(stats)
        .enumerate()
        .filter(|(_, (c, s))| match c.role {
            Role::Feature { kind: Kind::Categorical | Kind::Binary, .. } => s.values.len() <= LINK_VALUES,
            Role::Feature { kind: Kind::Integer, .. } => {
                !s.more && s.values.len() <= LINK_VALUES && s.distinct_numbers() == s.values.len()
            }
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}

/// The links between pairs of features the rows show: `one_to_one` when each value of one
/// goes with one value of the other, both ways, in [`ONE_TO_ONE`] of the rows;
/// `observed_combinations` when two values that are each common are (almost) never together.
fn find_links(
    bytes: &[u8],
    file: &str,
    o: &DraftOptions,
    columns: &[Column],
    stats: &[Stats],
    missing: &[String],
) -> Result<(Vec<FoundLink>, usize), DraftError> {
    let mut judged = link_candidates(columns, stats);
    let unjudged = judged.len().saturating_sub(LINK_FEATURES);
    judged.truncate(LINK_FEATURES);
    if judged.len() < 2 {
        return Ok((Vec::new(), unjudged));
    }
    // Each judged feature's values as codes (their sorted order), `u8::MAX` for missing.
    let order: Vec<Vec<(&str, usize)>> = judged.iter().map(|&i| stats[i].sorted()).collect();
    let index: Vec<HashMap<&str, u8>> =
        order.iter().map(|vals| vals.iter().enumerate().map(|(k, (v, _))| (*v, k as u8)).collect()).collect();
    let mut codes: Vec<Vec<u8>> = vec![Vec::new(); judged.len()];
    read(bytes, file, o, |record| {
        for ((&i, map), out) in judged.iter().zip(&index).zip(codes.iter_mut()) {
            let text = record.get(i).unwrap_or("");
            let missing = text.is_empty() || missing.iter().any(|m| m == text);
            out.push(if missing { u8::MAX } else { map.get(text).copied().unwrap_or(u8::MAX) });
        }
    })?;
    let mut links = Vec::new();
    for a in 0..judged.len() {
        for b in a + 1..judged.len() {
            let (na, nb) = (order[a].len(), order[b].len());
            let mut table = vec![0usize; na * nb];
            for (&x, &y) in codes[a].iter().zip(&codes[b]) {
                if x != u8::MAX && y != u8::MAX {
                    table[usize::from(x) * nb + usize::from(y)] += 1;
                }
            }
            let names = [columns[judged[a]].name.clone(), columns[judged[b]].name.clone()];
            if let Some(link) = judge_pair(&table, &order[a], &order[b], names) {
                // A link between two features no answer changes never rules anything out.
                let fixed = |i: usize| matches!(columns[judged[i]].role, Role::Feature { immutable: true, .. });
                if !(fixed(a) && fixed(b)) {
                    links.push(link);
                }
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
    let links = links.into_iter().zip(repeats).filter(|(_, repeat)| !repeat).map(|(l, _)| l).collect();
    Ok((links, unjudged))
}

/// The link a pair's table of counts (`a`'s values by `b`'s) shows, if any.
fn judge_pair(table: &[usize], a: &[(&str, usize)], b: &[(&str, usize)], names: [String; 2]) -> Option<FoundLink> {
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
    absent.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let &(expected, i, j) = absent.first()?;
    // Enough rows for a combination to count as held that those found are not, up to the cap.
    let most = absent.iter().map(|&(_, i, j)| table[i * nb + j]).max().unwrap_or(0);
    let min_rows = (most + 1).min(MAX_MIN_ROWS);
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
        clip(a[i].0),
        names[1],
        clip(b[j].0),
        table[i * nb + j],
        expected,
        na * nb
    );
    Some(FoundLink { kind: LinkKind::ObservedCombinations, features: names, min_rows, evidence })
}

/// The schema file.
fn write_toml(
    file: &str,
    o: &DraftOptions,
    rows: usize,
    columns: &[Column],
    stats: &[Stats],
    links: &[FoundLink],
    found: &[String],
) -> String {
    let mut t = String::new();
    let features = columns.iter().filter(|c| matches!(c.role, Role::Feature { .. })).count();
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
        .filter(|c| {
            matches!(c.role, Role::Feature { kind: Kind::Categorical | Kind::Binary, .. })
                && personal(&c.name, &PROTECTED)
        })
        .map(|c| c.name.as_str())
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
        let _ = writeln!(t, "dropped = {}", quoted_list(dropped.iter().map(|d| d.0)));
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
        let _ = writeln!(t, "missing = {}", quoted_list(found.iter().map(String::as_str)));
    }
    let _ = writeln!(t, "\n[target]");
    let _ = writeln!(t, "column = {}", quoted(&o.target));
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
    for (c, s) in columns.iter().zip(stats) {
        let Role::Feature { kind, immutable } = c.role else { continue };
        let _ = writeln!(t, "\n[[feature]]");
        let _ = writeln!(t, "name = {}", quoted(&c.name));
        let _ = writeln!(t, "# {}", describe(kind, s));
        let kind_name = match kind {
            Kind::Continuous => "continuous",
            Kind::Integer => "integer",
            Kind::Binary => "binary",
            Kind::Categorical => "categorical",
        };
        let _ = writeln!(t, "kind = \"{kind_name}\"");
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
        let e = draft(b"a,a,approved\n1,2,yes\n", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("`a`") && e.contains("columns 1 and 2"), "{e}");
        let e = draft(b"a,b,approved\n1,2,yes\n1,2\n", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("toy.csv:3") && e.contains("expected 3 fields, found 2"), "{e}");
        let e = draft(b"", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("toy.csv"), "{e}");
        let e = draft(b"a,b,approved\n", "toy.csv", &o).unwrap_err().to_string();
        assert!(e.contains("toy.csv"), "{e}");
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
