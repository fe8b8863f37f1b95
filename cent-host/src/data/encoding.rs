//! The map between raw rows and the encoded `f32` vectors that the models, the trees and the
//! core work on: continuous and integer features min-max scaled to `[0, 1]` with ranges from
//! the training rows, binary features 0/1, categorical features one-hot groups.
//!
//! The per-feature layout is the core's own [`core::Feature`], so the host and the device
//! encode and decode with the same arithmetic.

use super::schema::{Link, join};
use super::table::{Attribute, Table, Value};
use crate::profile::{CLASSES, COLUMNS, FEATURES};
use cent_nostd::schema as core;

/// Row-major encoded rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Matrix {
    /// `n_rows * n_cols` values.
    pub data: Vec<f32>,
    pub n_cols: usize,
}

impl Matrix {
    pub fn n_rows(&self) -> usize {
        self.data.len().checked_div(self.n_cols).unwrap_or(0)
    }

    /// Row `i`.
    ///
    /// # Panics
    /// When `i >= self.n_rows()`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.n_cols..(i + 1) * self.n_cols]
    }

    pub fn rows(&self) -> impl Iterator<Item = &[f32]> {
        self.data.chunks_exact(self.n_cols.max(1))
    }
}

/// Why rows cannot be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    #[error("cannot fit an encoding on zero rows")]
    NoRows,
    #[error(
        "dataset `{dataset}` has {features} features, {columns} encoded columns and {classes} classes; \
         cent holds at most {FEATURES}, {COLUMNS} and {CLASSES} (merge categories with `map`/`other` or drop features)"
    )]
    Capacity { dataset: String, features: usize, columns: usize, classes: usize },
    #[error(
        "feature `{feature}` has {categories} categories; a categorical feature holds at most {max} \
         (merge the rare ones with `map`/`other` in the schema)"
    )]
    Categories { feature: String, categories: usize, max: usize },
    #[error("feature `{feature}`: {error}")]
    Core { feature: String, error: core::SchemaError },
    #[error("row has {found} values, the encoding expects {expected}")]
    Width { found: usize, expected: usize },
    #[error("feature `{feature}`: value {value:?} does not fit its kind")]
    Value { feature: String, value: Value },
}

/// Why a feature, category or value named by a user does not exist.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    #[error("unknown feature `{name}`; features: {valid}")]
    UnknownFeature { name: String, valid: String },
    #[error("feature `{feature}` has no category `{name}`; categories: {valid}")]
    UnknownCategory { feature: String, name: String, valid: String },
    #[error("feature index {index} is out of range (the dataset has {count} features)")]
    Index { index: usize, count: usize },
    #[error("`{spec}`: expected FEATURE=WEIGHT with a finite weight >= 0")]
    BadCost { spec: String },
    #[error("feature `{feature}`: `{value}` is not {expected}")]
    BadValue { feature: String, value: String, expected: String },
    /// A value the schema reads as missing (an empty field, `?` in Adult's files).
    #[error("feature `{feature}` is missing ({}); every feature needs a known value", if value.is_empty() { "an empty field".to_string() } else { format!("`{value}`") })]
    Missing { feature: String, value: String },
    #[error(
        "feature `{feature}`: {value} is outside its range [{min}, {max}] (the schema's `range`, else the training rows' minimum and maximum)"
    )]
    OutOfRange { feature: String, value: String, min: String, max: String },
    #[error("feature `{feature}`: the core schema rejects the change: {error}")]
    Rejected { feature: String, error: core::SchemaError },
}

/// Why a query's constraints do not fit the dataset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error(
        "feature `{feature}` cannot be {direction}: it is categorical and its categories have no order \
         (to give them one, add `ordered = true` to the feature in the schema and list the categories in order, lowest first)"
    )]
    Unordered { feature: String, direction: &'static str },
    #[error("feature `{feature}`: {error}")]
    Feature { feature: String, error: core::SchemaError },
    #[error("the query's l0 or entropy weight is not finite and non-negative, or its margin not positive")]
    Weights,
    #[error("invalid query: {0}")]
    Invalid(core::SchemaError),
}

/// How a dataset's rows are encoded; fitted on the training rows.
#[derive(Debug, Clone)]
pub struct Encoding {
    dataset: String,
    attributes: Vec<Attribute>,
    /// The schema's links between features (used by [`crate::support::Support`]).
    links: Vec<Link>,
    /// Standard deviation of every encoded column over the training rows.
    column_sigma: Vec<f32>,
    classes: Vec<String>,
    favourable: usize,
    /// Layout, ranges, sigma, default costs and constraints: the single source of truth.
    core: crate::profile::Schema,
}

impl Encoding {
    /// Fits ranges (unless fixed by the schema) and sigmas on the rows `rows` of `table`.
    ///
    /// # Errors
    /// [`EncodeError::NoRows`] for an empty `rows`, [`EncodeError::Capacity`] when the dataset
    /// does not fit the core's capacities.
    ///
    /// # Panics
    /// When an index in `rows` is out of range for `table`.
    pub fn fit(table: &Table, rows: &[usize]) -> Result<Encoding, EncodeError> {
        if rows.is_empty() {
            return Err(EncodeError::NoRows);
        }
        check_capacity(table)?;
        let features = layout(table, rows);
        let mut encoding = Encoding {
            dataset: table.name().to_string(),
            attributes: table.attributes().to_vec(),
            links: table.links().to_vec(),
            column_sigma: Vec::new(),
            classes: table.classes().to_vec(),
            favourable: table.favourable(),
            core: crate::profile::Schema::new(table.classes().len() as u8),
        };
        encoding.core = encoding.build_core(&features)?;
        let train = encoding.encode_rows(table, rows)?;
        encoding.column_sigma = column_std(&train);
        let with_sigma: Vec<core::Feature> =
            features.iter().map(|f| f.with_sigma(mean(&encoding.column_sigma[f.columns()]))).collect();
        encoding.core = encoding.build_core(&with_sigma)?;
        Ok(encoding)
    }

    /// Builds the core schema from a layout plus the attributes' category transitions.
    fn build_core(&self, features: &[core::Feature]) -> Result<crate::profile::Schema, Rejection> {
        let mut schema = crate::profile::Schema::new(self.classes.len() as u8);
        for (f, a) in features.iter().zip(&self.attributes) {
            schema.push(*f).map_err(|error| Rejection { feature: a.name.clone(), error })?;
        }
        for (j, a) in self.attributes.iter().enumerate() {
            for &(from, to, allowed) in &a.transitions {
                schema
                    .set_transition(j, from as u8, to as u8, allowed)
                    .map_err(|error| Rejection { feature: a.name.clone(), error })?;
            }
        }
        Ok(schema)
    }

    /// The core schema: features in encoded-column order, ranges, sigma, default costs,
    /// mutability and category transitions.
    pub fn to_core_schema(&self) -> crate::profile::Schema {
        self.core.clone()
    }

    pub fn dataset(&self) -> &str {
        &self.dataset
    }

    /// Number of encoded columns.
    pub fn n_cols(&self) -> usize {
        self.core.columns()
    }

    /// Number of logical features.
    pub fn n_features(&self) -> usize {
        self.attributes.len()
    }

    /// Loaded attributes (names, categories, schema constraints) in feature order.
    pub fn attributes(&self) -> &[Attribute] {
        &self.attributes
    }

    /// The schema's links between features, positions as in [`Encoding::attributes`].
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Encoded layout of feature `j` (columns, range, sigma, cost, mutability).
    pub fn feature(&self, j: usize) -> Option<&core::Feature> {
        self.core.feature(j)
    }

    /// Standard deviation of each encoded column over the training rows.
    pub fn column_sigma(&self) -> &[f32] {
        &self.column_sigma
    }

    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// Index of the favourable (desired) class.
    pub fn favourable(&self) -> usize {
        self.favourable
    }

    /// Names of the encoded columns: the feature name, or `feature=category` in a group.
    pub fn column_names(&self) -> Vec<String> {
        let mut names = Vec::with_capacity(self.n_cols());
        for (a, f) in self.attributes.iter().zip(self.core.features()) {
            match f.kind {
                core::Kind::Categorical => names.extend(a.categories.iter().map(|c| format!("{}={c}", a.name))),
                _ => names.push(a.name.clone()),
            }
        }
        names
    }

    /// Encodes one raw row into `out` (`n_cols` values).
    ///
    /// # Errors
    /// [`EncodeError::Width`] when `row` or `out` has the wrong length, [`EncodeError::Value`]
    /// when a value does not fit its feature (a number for a categorical, a category index
    /// out of range).
    pub fn encode_into(&self, row: &[Value], out: &mut [f32]) -> Result<(), EncodeError> {
        if row.len() != self.attributes.len() {
            return Err(EncodeError::Width { found: row.len(), expected: self.attributes.len() });
        }
        if out.len() != self.n_cols() {
            return Err(EncodeError::Width { found: out.len(), expected: self.n_cols() });
        }
        for ((&value, f), a) in row.iter().zip(self.core.features()).zip(&self.attributes) {
            if !encode_feature(f, value, &mut out[f.columns()]) {
                return Err(EncodeError::Value { feature: a.name.clone(), value });
            }
        }
        Ok(())
    }

    /// Feature `feature` of the encoded row `x` as an answer reports it: decoded, a number
    /// rounded to four decimals, and encoded again into `out` (a row of `x`'s width; only the
    /// feature's columns are written). What [`Encoding::decode`], rounding and
    /// [`Encoding::encode_into`] give for that feature, without the other features.
    ///
    /// # Errors
    /// [`EncodeError::Width`] when `x` or `out` has the wrong length; [`EncodeError::Value`]
    /// for a feature index out of range.
    pub fn reported_into(&self, feature: usize, x: &[f32], out: &mut [f32]) -> Result<(), EncodeError> {
        for len in [x.len(), out.len()] {
            if len != self.n_cols() {
                return Err(EncodeError::Width { found: len, expected: self.n_cols() });
            }
        }
        let bad = |value| EncodeError::Value { feature: format!("#{feature}"), value };
        let f = self.core.features().get(feature).ok_or_else(|| bad(Value::Category(feature)))?;
        let value = match decode_feature(f, &x[f.columns()]) {
            Value::Number(n) => Value::Number((n * 1e4).round() / 1e4),
            c => c,
        };
        if encode_feature(f, value, &mut out[f.columns()]) { Ok(()) } else { Err(bad(value)) }
    }

    /// Encodes one raw row.
    ///
    /// # Errors
    /// As [`Encoding::encode_into`].
    pub fn encode_row(&self, row: &[Value]) -> Result<Vec<f32>, EncodeError> {
        let mut out = vec![0.0; self.n_cols()];
        self.encode_into(row, &mut out)?;
        Ok(out)
    }

    /// Encodes the rows `rows` of `table` into a row-major matrix.
    ///
    /// # Errors
    /// As [`Encoding::encode_into`] (a table with other attributes than the fitted one).
    ///
    /// # Panics
    /// When an index in `rows` is out of range for `table`.
    pub fn encode_rows(&self, table: &Table, rows: &[usize]) -> Result<Matrix, EncodeError> {
        let n_cols = self.n_cols();
        let mut data = vec![0.0; rows.len() * n_cols];
        for (out, &r) in data.chunks_exact_mut(n_cols.max(1)).zip(rows) {
            self.encode_into(table.row(r), out)?;
        }
        Ok(Matrix { data, n_cols })
    }

    /// Decodes an encoded row into raw values: numbers unscaled (integers rounded), binary
    /// thresholded at 0.5, a one-hot group to its largest column (the first on ties).
    ///
    /// # Errors
    /// [`EncodeError::Width`] when `x` does not have `n_cols` values.
    pub fn decode(&self, x: &[f32]) -> Result<Vec<Value>, EncodeError> {
        if x.len() != self.n_cols() {
            return Err(EncodeError::Width { found: x.len(), expected: self.n_cols() });
        }
        Ok(self.core.features().iter().map(|f| decode_feature(f, &x[f.columns()])).collect())
    }

    /// A raw value as text: category names, integers without decimals, other numbers with at
    /// most four decimals (data, as a CSV or a query file holds it).
    pub fn format_value(&self, feature: usize, value: Value) -> String {
        match (value, self.attributes.get(feature)) {
            (Value::Category(c), Some(a)) => a.categories.get(c).cloned().unwrap_or_else(|| format!("#{c}")),
            (Value::Number(x), _) => format_number(x),
            (Value::Category(c), None) => format!("#{c}"),
        }
    }

    /// What a value stands for when it is one of the feature's `codes` (HELOC's -8: "no usable
    /// or valid trades"); `None` for any other value.
    pub fn code_meaning(&self, feature: usize, value: Value) -> Option<&str> {
        let Value::Number(x) = value else { return None };
        let a = self.attributes.get(feature)?;
        a.codes.iter().find(|(code, _)| *code as f64 == x).map(|(_, meaning)| meaning.as_str())
    }

    /// A value for a person to read: [`Encoding::format_value`], and a code's meaning after it,
    /// as `-8 (no usable or valid trades)`.
    pub fn describe_value(&self, feature: usize, value: Value) -> String {
        match self.code_meaning(feature, value) {
            Some(meaning) => format!("{} ({meaning})", self.format_value(feature, value)),
            None => self.format_value(feature, value),
        }
    }

    /// Index of the feature called `name`.
    ///
    /// # Errors
    /// [`LookupError::UnknownFeature`] listing the valid names.
    pub fn feature_index(&self, name: &str) -> Result<usize, LookupError> {
        self.attributes.iter().position(|a| a.name == name).ok_or_else(|| LookupError::UnknownFeature {
            name: name.to_string(),
            valid: join(self.attributes.iter().map(|a| a.name.as_str())),
        })
    }

    /// Indices of a comma-separated list of feature names (`--immutable age,sex`).
    ///
    /// # Errors
    /// As [`Encoding::feature_index`], for the first unknown name.
    pub fn feature_indices(&self, list: &str) -> Result<Vec<usize>, LookupError> {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|n| self.feature_index(n)).collect()
    }

    /// Index of category `name` of feature `feature`.
    ///
    /// # Errors
    /// [`LookupError::UnknownCategory`] listing the valid categories, or
    /// [`LookupError::Index`].
    pub fn category_index(&self, feature: usize, name: &str) -> Result<usize, LookupError> {
        let a = self.attribute(feature)?;
        a.categories.iter().position(|c| c == name).ok_or_else(|| LookupError::UnknownCategory {
            feature: a.name.clone(),
            name: name.to_string(),
            valid: join(a.categories.iter().map(String::as_str)),
        })
    }

    /// Parses `FEATURE=WEIGHT` (`--cost age=2.5`).
    ///
    /// # Errors
    /// [`LookupError::BadCost`] for a malformed or negative weight, or an unknown feature.
    pub fn parse_cost(&self, spec: &str) -> Result<(usize, f32), LookupError> {
        let bad = || LookupError::BadCost { spec: spec.to_string() };
        let (name, weight) = spec.split_once('=').ok_or_else(bad)?;
        let weight: f32 = weight.trim().parse().map_err(|_| bad())?;
        if !weight.is_finite() || weight < 0.0 {
            return Err(bad());
        }
        Ok((self.feature_index(name.trim())?, weight))
    }

    /// Parses a raw value of feature `feature` written by a user: a number within the feature's
    /// range (the schema's `range`, else the training rows' minimum and maximum: outside it the
    /// value would be scaled outside `[0, 1]`), or a category name. The schema's reading rules
    /// apply as they do to the data: its `map` renames a value first (a source's code, `1` →
    /// `female`), and a category the list does not hold goes to its `other` when it has one
    /// (Adult's `Mexico` → `Other`).
    ///
    /// # Errors
    /// [`LookupError::Missing`] for a value the schema reads as missing (an empty field, one of
    /// its `missing` markers), [`LookupError::BadValue`], [`LookupError::OutOfRange`],
    /// [`LookupError::UnknownCategory`] or [`LookupError::Index`].
    pub fn parse_value(&self, feature: usize, text: &str) -> Result<Value, LookupError> {
        let a = self.attribute(feature)?;
        let text = text.trim();
        if text.is_empty() || a.missing.iter().any(|m| m == text) {
            return Err(LookupError::Missing { feature: a.name.clone(), value: text.to_string() });
        }
        let text = a.map.get(text).map_or(text, |m| m.trim());
        let bad = |expected: &str| LookupError::BadValue {
            feature: a.name.clone(),
            value: text.to_string(),
            expected: expected.into(),
        };
        match a.kind {
            core::Kind::Binary | core::Kind::Categorical => match (self.category_index(feature, text), a.other) {
                (Err(LookupError::UnknownCategory { .. }), Some(other)) => Ok(Value::Category(other)),
                (found, _) => found.map(Value::Category),
            },
            core::Kind::Integer => match text.parse::<f64>() {
                Ok(v) if v.is_finite() && v.fract() == 0.0 => self.within_range(feature, v),
                _ => Err(bad("an integer")),
            },
            core::Kind::Continuous => match text.parse::<f64>() {
                Ok(v) if v.is_finite() => self.within_range(feature, v),
                _ => Err(bad("a number")),
            },
        }
    }

    /// `Value::Number(v)` when `v` lies in the range of numeric feature `feature`.
    fn within_range(&self, feature: usize, v: f64) -> Result<Value, LookupError> {
        let f = self.core.feature(feature).ok_or(LookupError::Index { index: feature, count: self.n_features() })?;
        let x = v as f32;
        if x < f.min || x > f.max {
            return Err(LookupError::OutOfRange {
                feature: self.attributes[feature].name.clone(),
                value: format_number(v),
                min: format_number(f64::from(f.min)),
                max: format_number(f64::from(f.max)),
            });
        }
        Ok(Value::Number(v))
    }

    /// Checks a query's constraints and weights against the dataset: finite, non-negative
    /// weights, and increase-only or decrease-only only on features with an order (numbers,
    /// binary and ordered categorical features).
    ///
    /// # Errors
    /// [`QueryError::Unordered`] naming the first unordered categorical feature given a
    /// direction; [`QueryError::Feature`] or [`QueryError::Weights`] for a bad weight.
    pub fn check_query(&self, query: &crate::profile::Query) -> Result<(), QueryError> {
        let name = |j: u16| self.attributes.get(j as usize).map(|a| a.name.clone());
        query.check(&self.core).map_err(|error| match error {
            core::SchemaError::Unordered { feature } => QueryError::Unordered {
                feature: name(feature).unwrap_or_default(),
                direction: match query.mutability.get(feature as usize) {
                    Some(core::Mutability::DecreaseOnly) => "decrease-only",
                    _ => "increase-only",
                },
            },
            core::SchemaError::Value { feature } => match name(feature) {
                Some(feature) => QueryError::Feature { feature, error },
                None => QueryError::Weights,
            },
            other => QueryError::Invalid(other),
        })
    }

    /// Overrides the default mutability of a feature (`--immutable`, `--increase-only`).
    ///
    /// # Errors
    /// [`LookupError::Index`] for a feature out of range; [`LookupError::Rejected`] for a
    /// direction on an unordered categorical feature.
    pub fn set_mutability(&mut self, feature: usize, mutability: core::Mutability) -> Result<(), LookupError> {
        self.attribute(feature)?;
        self.attributes[feature].mutability = mutability;
        self.update_feature(feature, |f| f.with_mutability(mutability))
    }

    /// Overrides the default edit cost of a feature (`--cost`).
    ///
    /// # Errors
    /// [`LookupError::Index`], or [`LookupError::BadCost`] for a negative or non-finite cost.
    pub fn set_cost(&mut self, feature: usize, cost: f32) -> Result<(), LookupError> {
        self.attribute(feature)?;
        if !cost.is_finite() || cost < 0.0 {
            return Err(LookupError::BadCost { spec: format!("{}={cost}", self.attributes[feature].name) });
        }
        self.attributes[feature].cost = cost;
        self.update_feature(feature, |f| f.with_cost(cost))
    }

    fn attribute(&self, feature: usize) -> Result<&Attribute, LookupError> {
        self.attributes.get(feature).ok_or(LookupError::Index { index: feature, count: self.attributes.len() })
    }

    /// Rebuilds the core schema with feature `feature` changed by `edit`.
    fn update_feature(
        &mut self,
        feature: usize,
        edit: impl Fn(core::Feature) -> core::Feature,
    ) -> Result<(), LookupError> {
        let mut features = self.core.features().to_vec();
        features[feature] = edit(features[feature]);
        self.core = self.build_core(&features)?;
        Ok(())
    }
}

/// The core refused a feature or a transition while building the core schema.
#[derive(Debug)]
struct Rejection {
    feature: String,
    error: core::SchemaError,
}

impl From<Rejection> for EncodeError {
    fn from(r: Rejection) -> Self {
        EncodeError::Core { feature: r.feature, error: r.error }
    }
}

impl From<Rejection> for LookupError {
    fn from(r: Rejection) -> Self {
        LookupError::Rejected { feature: r.feature, error: r.error }
    }
}

/// Fails when the table cannot fit the core's capacities.
fn check_capacity(table: &Table) -> Result<(), EncodeError> {
    let columns: usize = table.attributes().iter().map(width).sum();
    let (features, classes) = (table.attributes().len(), table.classes().len());
    if features > FEATURES || columns > COLUMNS || classes > CLASSES {
        return Err(EncodeError::Capacity { dataset: table.name().to_string(), features, columns, classes });
    }
    // A group's categories are the bits of one `u64` (its allowed transitions).
    let max = u64::BITS as usize;
    match table.attributes().iter().find(|a| a.kind == core::Kind::Categorical && a.categories.len() > max) {
        Some(a) => Err(EncodeError::Categories { feature: a.name.clone(), categories: a.categories.len(), max }),
        None => Ok(()),
    }
}

/// Encoded columns of an attribute.
fn width(a: &Attribute) -> usize {
    match a.kind {
        core::Kind::Categorical => a.categories.len(),
        _ => 1,
    }
}

/// Contiguous core features with ranges from the schema or from the training rows.
fn layout(table: &Table, rows: &[usize]) -> Vec<core::Feature> {
    let mut col = 0u16;
    let mut features = Vec::with_capacity(table.attributes().len());
    for (j, a) in table.attributes().iter().enumerate() {
        let f = match a.kind {
            core::Kind::Binary => core::Feature::binary(col),
            core::Kind::Categorical => {
                core::Feature { ordered: a.ordered, ..core::Feature::categorical(col, width(a) as u8) }
            }
            kind => {
                let (min, max) = a.range.unwrap_or_else(|| min_max(table, rows, j));
                core::Feature { kind, ..core::Feature::continuous(col, min as f32, max as f32) }
            }
        };
        col += u16::from(f.width);
        features.push(f.with_mutability(a.mutability).with_cost(a.cost));
    }
    features
}

/// Range of numeric column `j` over `rows` (0..0 when no row holds a number).
fn min_max(table: &Table, rows: &[usize], j: usize) -> (f64, f64) {
    let numbers = rows.iter().filter_map(|&r| match table.row(r)[j] {
        Value::Number(x) => Some(x),
        Value::Category(_) => None,
    });
    numbers
        .fold(None, |acc: Option<(f64, f64)>, x| Some(acc.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x)))))
        .unwrap_or((0.0, 0.0))
}

/// Population standard deviation of every column.
fn column_std(m: &Matrix) -> Vec<f32> {
    let n = m.n_rows().max(1) as f64;
    let mut mean = vec![0.0f64; m.n_cols];
    for row in m.rows() {
        mean.iter_mut().zip(row).for_each(|(s, &v)| *s += v as f64);
    }
    mean.iter_mut().for_each(|s| *s /= n);
    let mut var = vec![0.0f64; m.n_cols];
    for row in m.rows() {
        var.iter_mut().zip(row).zip(&mean).for_each(|((s, &v), mu)| *s += (v as f64 - mu).powi(2));
    }
    var.iter().map(|s| (s / n).sqrt() as f32).collect()
}

fn mean(values: &[f32]) -> f32 {
    if values.is_empty() { 0.0 } else { values.iter().sum::<f32>() / values.len() as f32 }
}

/// Writes `value` into its feature's columns `cols`; false when it does not fit the feature (a
/// number for a categorical, a category index out of range).
fn encode_feature(f: &core::Feature, value: Value, cols: &mut [f32]) -> bool {
    match (value, f.kind) {
        (Value::Number(x), core::Kind::Continuous | core::Kind::Integer) => cols[0] = f.encode(x as f32),
        (Value::Category(c), core::Kind::Binary) if c < 2 => cols[0] = c as f32,
        (Value::Category(c), core::Kind::Categorical) if c < cols.len() => {
            cols.fill(0.0);
            cols[c] = 1.0;
        }
        _ => return false,
    }
    true
}

fn decode_feature(f: &core::Feature, cols: &[f32]) -> Value {
    match f.kind {
        core::Kind::Continuous => Value::Number(f.decode(cols[0]) as f64),
        core::Kind::Integer => Value::Number((f.decode(cols[0]) as f64).round()),
        core::Kind::Binary => Value::Category(usize::from(cols[0] >= 0.5)),
        core::Kind::Categorical => {
            let best = cols.iter().enumerate().fold(0, |best, (i, v)| if *v > cols[best] { i } else { best });
            Value::Category(best)
        }
    }
}

/// Integers without decimals, other numbers with at most four decimals.
fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let text = format!("{x:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::Schema;
    use crate::data::table::Input;

    const SCHEMA: &str = r#"
name = "toy"
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
[[feature]]
name = "age"
kind = "integer"
mutability = "increase_only"
[[feature]]
name = "job"
kind = "categorical"
cost = 2.0
forbid = [{ from = ["b"], to = ["a"] }]
[[feature]]
name = "sex"
kind = "binary"
mutability = "immutable"
categories = ["f", "m"]
[[feature]]
name = "income"
kind = "continuous"
"#;

    const CSV: &str = "age,job,sex,income,y\n20,a,f,0.5,0\n40,b,m,1.5,1\n30,c,m,1.0,0\n60,b,f,2.5,1\n";

    fn table() -> Table {
        let schema = Schema::from_toml(SCHEMA, "toy.toml").unwrap();
        Table::read(&schema, &[Input { name: "toy.csv".into(), bytes: CSV.as_bytes().to_vec(), skip_lines: 0 }])
            .unwrap()
    }

    fn fitted() -> (Table, Encoding) {
        let t = table();
        let e = Encoding::fit(&t, &[0, 1, 2]).unwrap();
        (t, e)
    }

    #[test]
    fn test_layout_ranges_from_training_rows() {
        let (_, e) = fitted();
        assert_eq!(e.n_cols(), 6);
        assert_eq!(e.column_names(), ["age", "job=a", "job=b", "job=c", "sex", "income"]);
        let age = e.feature(0).unwrap();
        assert_eq!((age.min, age.max), (20.0, 40.0), "row 3 (age 60) is not a training row");
        assert_eq!((age.col, age.width), (0, 1));
        let job = e.feature(1).unwrap();
        assert_eq!((job.col, job.width, job.kind), (1, 3, core::Kind::Categorical));
        assert!((job.cost - 2.0).abs() < 1e-6);
        assert_eq!(e.feature(3).unwrap().col, 5);
    }

    #[test]
    fn test_encode_values() {
        let (t, e) = fitted();
        let x = e.encode_row(t.row(1)).unwrap();
        let want = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0];
        assert!(x.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{x:?}");
        // Test rows may fall outside the training range; they are not clipped.
        let out = e.encode_row(t.row(3)).unwrap();
        assert!((out[0] - 2.0).abs() < 1e-6);
    }

    #[test]
    fn test_a_reported_feature_is_the_whole_row_decoded_rounded_and_encoded() {
        let (_, e) = fitted();
        // Off-grid values: a number between steps, a blend of categories, a binary value near
        // one half.
        let rows = [
            [0.123_456_79, 0.2, 0.7, 0.1, 0.51, 0.333_333_34],
            [1.7, 0.4, 0.4, 0.2, 0.49, -0.000_012_3],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ];
        for x in rows {
            let rounded: Vec<Value> = e
                .decode(&x)
                .unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::Number(n) => Value::Number((n * 1e4).round() / 1e4),
                    c => c,
                })
                .collect();
            let whole = e.encode_row(&rounded).unwrap();
            for j in 0..e.n_features() {
                let mut out = [f32::NAN; 6];
                e.reported_into(j, &x, &mut out).unwrap();
                let cols = e.feature(j).unwrap().columns();
                assert_eq!(&out[cols.clone()], &whole[cols.clone()], "feature {j} of {x:?}");
                assert!(
                    out.iter().enumerate().all(|(c, v)| cols.contains(&c) || v.is_nan()),
                    "only feature {j} written"
                );
            }
        }
        let mut out = [0.0; 6];
        assert!(matches!(e.reported_into(0, &[0.0; 5], &mut out), Err(EncodeError::Width { found: 5, expected: 6 })));
        assert!(matches!(e.reported_into(9, &[0.0; 6], &mut out), Err(EncodeError::Value { .. })));
    }

    #[test]
    fn test_decode_round_trips_every_row() {
        let (t, e) = fitted();
        let m = e.encode_rows(&t, &[0, 1, 2, 3]).unwrap();
        assert_eq!((m.n_rows(), m.n_cols), (4, 6));
        for (i, x) in m.rows().enumerate() {
            let back = e.decode(x).unwrap();
            for (a, b) in back.iter().zip(t.row(i)) {
                match (a, b) {
                    (Value::Number(p), Value::Number(q)) => assert!((p - q).abs() < 1e-5, "row {i}: {p} vs {q}"),
                    _ => assert_eq!(a, b, "row {i}"),
                }
            }
        }
    }

    #[test]
    fn test_decode_rounds_integers_and_picks_group_argmax() {
        let (_, e) = fitted();
        let back = e.decode(&[0.26, 0.2, 0.7, 0.6, 0.4, 0.5]).unwrap();
        assert_eq!(back[0], Value::Number(25.0), "20 + 0.26 * 20 = 25.2 rounds to 25");
        assert_eq!(back[1], Value::Category(1));
        assert_eq!(back[2], Value::Category(0));
        assert!(e.decode(&[0.0; 5]).is_err());
    }

    #[test]
    fn test_one_hot_group_is_one_core_feature() {
        let (_, e) = fitted();
        let core = e.to_core_schema();
        assert_eq!(core.features().len(), 4);
        assert_eq!(core.columns(), 6);
        assert_eq!((1..4).map(|c| core.feature_of_column(c)).collect::<Vec<_>>(), [Some(1); 3]);
        // forbid b -> a: column of category b (col 2) loses bit 0.
        assert_eq!(core.transition_mask(2) & 1, 0);
        assert_eq!(core.transition_mask(3) & 1, 1);
        let q = core.default_query();
        assert_eq!(q.mutability[0], core::Mutability::IncreaseOnly);
        assert_eq!(q.mutability[2], core::Mutability::Immutable);
    }

    #[test]
    fn test_sigma_is_training_std() {
        let (_, e) = fitted();
        // age over the training rows encodes to 0, 1, 0.5: population std sqrt(1/6).
        assert!((e.column_sigma()[0] - (1.0f32 / 6.0).sqrt()).abs() < 1e-5);
        assert!((e.feature(0).unwrap().sigma - e.column_sigma()[0]).abs() < 1e-6);
        let job_mean = e.column_sigma()[1..4].iter().sum::<f32>() / 3.0;
        assert!((e.feature(1).unwrap().sigma - job_mean).abs() < 1e-6);
    }

    #[test]
    fn test_lookups_list_valid_names() {
        let (_, e) = fitted();
        assert_eq!(e.feature_indices("sex, age").unwrap(), [2, 0]);
        let err = e.feature_index("salary").unwrap_err();
        assert_eq!(err.to_string(), "unknown feature `salary`; features: age, job, sex, income");
        assert_eq!(e.category_index(1, "c").unwrap(), 2);
        assert!(e.category_index(1, "z").unwrap_err().to_string().contains("categories: a, b, c"));
        assert!(matches!(e.category_index(9, "a"), Err(LookupError::Index { index: 9, count: 4 })));
    }

    #[test]
    fn test_parse_cost_and_overrides_reach_core_schema() {
        let (_, mut e) = fitted();
        let (j, w) = e.parse_cost("income=3.5").unwrap();
        assert_eq!(j, 3);
        e.set_cost(j, w).unwrap();
        e.set_mutability(0, core::Mutability::Immutable).unwrap();
        let q = e.to_core_schema().default_query();
        assert!((q.cost[3] - 3.5).abs() < 1e-6);
        assert_eq!(q.mutability[0], core::Mutability::Immutable);
        assert!(matches!(e.parse_cost("income=-1"), Err(LookupError::BadCost { .. })));
        assert!(matches!(e.parse_cost("income"), Err(LookupError::BadCost { .. })));
        assert!(matches!(e.parse_cost("wage=1"), Err(LookupError::UnknownFeature { .. })));
    }

    #[test]
    fn test_direction_needs_an_ordered_group() {
        let (_, mut e) = fitted();
        assert!(!e.feature(1).unwrap().ordered);
        let mut q = e.to_core_schema().default_query();
        assert!(e.check_query(&q).is_ok());
        q.mutability[1] = core::Mutability::DecreaseOnly;
        let err = e.check_query(&q).unwrap_err();
        assert!(matches!(&err, QueryError::Unordered { feature, direction: "decrease-only" } if feature == "job"));
        assert!(err.to_string().contains("add `ordered = true`"), "{err}");
        q.mutability[1] = core::Mutability::Free;
        q.cost[3] = f32::NAN;
        assert!(matches!(e.check_query(&q), Err(QueryError::Feature { feature, .. }) if feature == "income"));
        let rejected = e.set_mutability(1, core::Mutability::IncreaseOnly).unwrap_err();
        assert!(matches!(rejected, LookupError::Rejected { ref feature, .. } if feature == "job"), "{rejected}");
        // Declared ordered, the group reaches the core ordered and may keep a direction.
        let text = SCHEMA.replace("cost = 2.0", "cost = 2.0\nordered = true\ncategories = [\"a\", \"b\", \"c\"]");
        let schema = Schema::from_toml(&text, "toy.toml").unwrap();
        let input = Input { name: "toy.csv".into(), bytes: CSV.as_bytes().to_vec(), skip_lines: 0 };
        let t = Table::read(&schema, &[input]).unwrap();
        let mut e = Encoding::fit(&t, &[0, 1, 2]).unwrap();
        assert!(e.feature(1).unwrap().ordered);
        e.set_mutability(1, core::Mutability::IncreaseOnly).unwrap();
        assert!(e.check_query(&e.to_core_schema().default_query()).is_ok());
    }

    #[test]
    fn test_parse_and_format_values() {
        let (_, e) = fitted();
        assert_eq!(e.parse_value(0, "33").unwrap(), Value::Number(33.0));
        assert!(e.parse_value(0, "33.5").is_err());
        let err = e.parse_value(0, "500").unwrap_err();
        assert!(matches!(err, LookupError::OutOfRange { .. }), "{err}");
        assert!(err.to_string().starts_with("feature `age`: 500 is outside its range ["), "{err}");
        assert_eq!(e.parse_value(2, "m").unwrap(), Value::Category(1));
        assert_eq!(e.format_value(1, Value::Category(2)), "c");
        assert_eq!(e.format_value(3, Value::Number(1.25)), "1.25");
        assert_eq!(e.format_value(0, Value::Number(41.0)), "41");
    }

    #[test]
    fn test_values_are_read_with_the_schemas_map_and_other() {
        // The data write sex as 0 / 1 and jobs beyond `a` and `b` as whatever they are; the
        // schema's map and other read them, and read a person's fields the same way.
        let text = SCHEMA
            .replace(
                "categories = [\"f\", \"m\"]",
                "categories = [\"f\", \"m\"]\nmap = { \"0\" = \"f\", \"1\" = \"m\" }",
            )
            .replace("cost = 2.0", "cost = 2.0\ncategories = [\"a\", \"b\", \"rest\"]\nother = \"rest\"");
        let schema = Schema::from_toml(&text, "toy.toml").unwrap();
        let csv = "age,job,sex,income,y\n20,a,0,0.5,0\n40,b,1,1.5,1\n30,c,m,1.0,0\n60,b,f,2.5,1\n";
        let input = Input { name: "toy.csv".into(), bytes: csv.as_bytes().to_vec(), skip_lines: 0 };
        let t = Table::read(&schema, &[input]).unwrap();
        let e = Encoding::fit(&t, &[0, 1, 2]).unwrap();
        assert_eq!(t.row(0)[2], Value::Category(0));
        assert_eq!(t.row(2)[1], Value::Category(2), "c is read as rest");
        for (j, text, want) in
            [(2, "0", 0), (2, "1", 1), (2, "f", 0), (2, " m ", 1), (1, "c", 2), (1, "zz", 2), (1, "b", 1)]
        {
            assert_eq!(e.parse_value(j, text).unwrap(), Value::Category(want), "{text:?}");
        }
        assert!(e.parse_value(2, "2").unwrap_err().to_string().starts_with("feature `sex` has no category `2`"));
        // What the data call missing is missing in a person too, and said so.
        let text = text.replace("[target]", "[csv]\nmissing = [\"?\"]\n[target]");
        let schema = Schema::from_toml(&text, "toy.toml").unwrap();
        let input = Input { name: "toy.csv".into(), bytes: csv.as_bytes().to_vec(), skip_lines: 0 };
        let e = Encoding::fit(&Table::read(&schema, &[input]).unwrap(), &[0, 1, 2]).unwrap();
        let missing = e.parse_value(1, " ? ").unwrap_err();
        assert_eq!(missing.to_string(), "feature `job` is missing (`?`); every feature needs a known value");
        assert!(e.parse_value(0, "").unwrap_err().to_string().starts_with("feature `age` is missing (an empty field)"));
    }

    #[test]
    fn test_bad_rows_are_errors() {
        let (_, e) = fitted();
        let mut out = vec![0.0; 6];
        let bad = [Value::Number(1.0), Value::Category(7), Value::Category(0), Value::Number(1.0)];
        assert!(matches!(e.encode_into(&bad, &mut out), Err(EncodeError::Value { .. })));
        assert!(matches!(e.encode_into(&bad[..2], &mut out), Err(EncodeError::Width { .. })));
        assert!(matches!(Encoding::fit(&table(), &[]), Err(EncodeError::NoRows)));
    }
}
