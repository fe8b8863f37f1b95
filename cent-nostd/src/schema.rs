//! Logical features, their encoding into columns, and the constraints a query must respect.
//!
//! Continuous and integer features are min-max scaled to `[0, 1]` (one column); binary features
//! are one column holding 0 or 1; a categorical feature is a one-hot *group* of columns that is
//! treated atomically (one logical feature for immutability, cost, l0 and redundancy).
//!
//! A group may be *ordered* (its columns are its categories from lowest to highest, as for
//! education levels); only an ordered group can be increase-only or decrease-only, and then a
//! move to a lower (higher) category is forbidden. On an unordered group a one-direction
//! constraint has no meaning: [`Schema::push`] and [`Query::check`] reject it.

use crate::capacity::{COLUMNS, FEATURES};
use core::fmt;

/// How a logical feature is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Kind {
    /// Real-valued, min-max scaled.
    Continuous,
    /// Integer-valued in raw units, min-max scaled.
    Integer,
    /// 0 or 1.
    Binary,
    /// One-hot group of `width` columns (ordered or not: see [`Feature::ordered`]).
    Categorical,
}

/// Which changes of a feature are feasible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mutability {
    /// Any change inside the feature's range.
    Free,
    /// The value may only grow (age).
    IncreaseOnly,
    /// The value may only shrink.
    DecreaseOnly,
    /// The value may not change (race, sex).
    Immutable,
}

impl Mutability {
    /// True when moving from `from` to `to` (encoded units) is allowed.
    pub fn allows(self, from: f32, to: f32) -> bool {
        match self {
            Mutability::Free => true,
            Mutability::IncreaseOnly => to >= from,
            Mutability::DecreaseOnly => to <= from,
            Mutability::Immutable => to == from,
        }
    }
}

/// One logical feature.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Feature {
    pub kind: Kind,
    /// First encoded column.
    pub col: u16,
    /// Number of encoded columns: 1, or the number of categories.
    pub width: u8,
    /// Raw range: `raw = min + v * (max - min)` for scaled kinds.
    pub min: f32,
    pub max: f32,
    /// Standard deviation in encoded units (drives the counterfactual margin).
    pub sigma: f32,
    /// Default per-feature edit cost `w_j`.
    pub cost: f32,
    /// Default mutability.
    pub mutability: Mutability,
    /// A categorical group whose categories (its columns, in order) are ranked from lowest to
    /// highest, so that increase-only and decrease-only have a meaning. False for other kinds.
    pub ordered: bool,
}

impl Feature {
    /// A free continuous feature with raw range `[min, max]`, sigma 0.1 and cost 1.
    pub const fn continuous(col: u16, min: f32, max: f32) -> Self {
        Feature {
            kind: Kind::Continuous,
            col,
            width: 1,
            min,
            max,
            sigma: 0.1,
            cost: 1.0,
            mutability: Mutability::Free,
            ordered: false,
        }
    }

    /// A free integer feature with raw range `[min, max]`.
    pub const fn integer(col: u16, min: f32, max: f32) -> Self {
        Feature { kind: Kind::Integer, ..Feature::continuous(col, min, max) }
    }

    /// A free binary feature.
    pub const fn binary(col: u16) -> Self {
        Feature { kind: Kind::Binary, ..Feature::continuous(col, 0.0, 1.0) }
    }

    /// A free categorical feature of `width` one-hot columns.
    pub const fn categorical(col: u16, width: u8) -> Self {
        Feature { kind: Kind::Categorical, width, ..Feature::continuous(col, 0.0, 1.0) }
    }

    /// A free *ordered* categorical feature of `width` one-hot columns, lowest category first.
    pub const fn ordinal(col: u16, width: u8) -> Self {
        Feature { ordered: true, ..Feature::categorical(col, width) }
    }

    pub const fn with_mutability(self, mutability: Mutability) -> Self {
        Feature { mutability, ..self }
    }

    pub const fn with_cost(self, cost: f32) -> Self {
        Feature { cost, ..self }
    }

    pub const fn with_sigma(self, sigma: f32) -> Self {
        Feature { sigma, ..self }
    }

    /// Encoded columns of this feature.
    pub fn columns(&self) -> core::ops::Range<usize> {
        self.col as usize..self.col as usize + self.width as usize
    }

    /// The categories a one-hot group may hold in a counterfactual of a point in category
    /// `from`, under mutability `m` (bit `k` for category `k`; `from` itself included): every one
    /// when free, only `from` when immutable, `from` and above (below) when an ordered group is
    /// increase-only (decrease-only). An unordered group has no direction, so a one-direction
    /// constraint on it (which [`Query::check`] rejects) leaves only `from`.
    pub fn permitted(&self, m: Mutability, from: u8) -> u64 {
        let all = group_mask(self.width);
        let own = 1u64.checked_shl(u32::from(from)).unwrap_or(0) & all;
        if own == 0 {
            return 0;
        }
        let below = own - 1;
        match (m, self.ordered) {
            (Mutability::Free, _) => all,
            (Mutability::IncreaseOnly, true) => all & !below,
            (Mutability::DecreaseOnly, true) => own | below,
            (Mutability::Immutable | Mutability::IncreaseOnly | Mutability::DecreaseOnly, _) => own,
        }
    }

    /// True for kinds whose raw value must be a whole number.
    pub fn is_discrete(&self) -> bool {
        matches!(self.kind, Kind::Integer | Kind::Binary)
    }

    /// Raw value of an encoded (scaled) value.
    pub fn decode(&self, v: f32) -> f32 {
        self.min + v * (self.max - self.min)
    }

    /// Encoded value of a raw value (0 for a constant feature).
    pub fn encode(&self, raw: f32) -> f32 {
        let span = self.max - self.min;
        if span > 0.0 { (raw - self.min) / span } else { 0.0 }
    }
}

/// Why a schema or query is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SchemaError {
    /// More features or columns than the schema's capacity (`features`, `columns`: the limits).
    Capacity { features: u16, columns: u16 },
    /// A feature does not start at the next free column, or has an impossible width for its kind.
    Layout { feature: u16 },
    /// A range, sigma or cost is not finite, or a range is inverted, or a cost is negative.
    Value { feature: u16 },
    /// A feature index is out of range.
    UnknownFeature { feature: u16 },
    /// A category index is out of range.
    UnknownCategory { feature: u16, category: u8 },
    /// Increase-only or decrease-only on a categorical feature whose categories have no order.
    Unordered { feature: u16 },
    /// The class count is zero or above the capacity.
    Classes,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Capacity { features, columns } => {
                write!(f, "schema exceeds {features} features or {columns} columns")
            }
            SchemaError::Layout { feature } => write!(f, "feature {feature} has an invalid column layout"),
            SchemaError::Value { feature } => {
                write!(f, "feature {feature} has a non-finite or inverted range, sigma or cost")
            }
            SchemaError::UnknownFeature { feature } => write!(f, "no feature {feature}"),
            SchemaError::UnknownCategory { feature, category } => {
                write!(f, "feature {feature} has no category {category}")
            }
            SchemaError::Unordered { feature } => {
                write!(
                    f,
                    "feature {feature} is an unordered categorical: increase-only and decrease-only need ordered categories"
                )
            }
            SchemaError::Classes => write!(f, "class count is zero or too large"),
        }
    }
}

impl core::error::Error for SchemaError {}

/// All category bits set: every transition allowed.
const ALL: u64 = u64::MAX;

/// Bits `0..width` set (all 64 for a group of 64 categories).
fn group_mask(width: u8) -> u64 {
    1u64.checked_shl(u32::from(width)).map_or(u64::MAX, |b| b - 1)
}

/// The encoded layout and default constraints of a dataset, for at most `F` logical features
/// and `C` encoded columns (by default the device profile of [`crate::capacity`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Schema<const F: usize = FEATURES, const C: usize = COLUMNS> {
    features: heapless::Vec<Feature, F>,
    /// Per column of a categorical group: bit `k` set when moving from this column's category
    /// to the group's `k`-th category is allowed.
    transitions: [u64; C],
    columns: u16,
    classes: u8,
    /// Default weight of the l0 term (per changed logical feature).
    pub l0: f32,
    /// Default weight of the leaf-entropy term.
    pub entropy: f32,
    /// Default margin divisor `m`: the inward margin is `|N(0, sigma / m)|`.
    pub margin: f32,
}

impl<const F: usize, const C: usize> Schema<F, C> {
    const CHECK: () = assert!(F <= u16::MAX as usize && C < u16::MAX as usize, "indices are u16");

    /// The error for a schema that does not fit this capacity.
    pub const CAPACITY: SchemaError = SchemaError::Capacity { features: F as u16, columns: C as u16 };

    /// An empty schema for a black box with `classes` classes (clamped to at least 1).
    pub fn new(classes: u8) -> Self {
        let () = Self::CHECK;
        Schema {
            features: heapless::Vec::new(),
            transitions: [ALL; C],
            columns: 0,
            classes: classes.max(1),
            l0: 0.05,
            entropy: 0.05,
            margin: 4.0,
        }
    }

    /// Appends a feature that starts at the next free column.
    ///
    /// # Errors
    /// [`SchemaError::Layout`], [`SchemaError::Value`] or [`SchemaError::Capacity`] when the
    /// feature does not fit; [`SchemaError::Unordered`] for a one-direction default on an
    /// unordered categorical feature.
    pub fn push(&mut self, feature: Feature) -> Result<(), SchemaError> {
        let index = self.features.len() as u16;
        check_feature(&feature, index, self.columns)?;
        let end = self.columns as usize + feature.width as usize;
        if end > C {
            return Err(Self::CAPACITY);
        }
        self.features.push(feature).map_err(|_| Self::CAPACITY)?;
        self.columns = end as u16;
        Ok(())
    }

    /// The same schema in another capacity: how the host's wide schema becomes the device's.
    ///
    /// # Errors
    /// The target's [`SchemaError::Capacity`] when the features or columns do not fit it.
    pub fn resize<const F2: usize, const C2: usize>(&self) -> Result<Schema<F2, C2>, SchemaError> {
        let mut out = Schema::<F2, C2>::new(self.classes);
        out.l0 = self.l0;
        out.entropy = self.entropy;
        out.margin = self.margin;
        for f in &self.features {
            out.push(*f)?;
        }
        let n = self.columns();
        out.transitions[..n].copy_from_slice(&self.transitions[..n]);
        Ok(out)
    }

    /// Forbids or allows moving feature `feature` from category `from` to category `to`.
    ///
    /// # Errors
    /// When the feature is not categorical or a category is out of range.
    pub fn set_transition(&mut self, feature: usize, from: u8, to: u8, allowed: bool) -> Result<(), SchemaError> {
        set_transition(&self.features, &mut self.transitions, feature, from, to, allowed)
    }

    /// Transition mask of one encoded column (see [`Query::transitions`]).
    pub fn transition_mask(&self, col: usize) -> u64 {
        self.transitions.get(col).copied().unwrap_or(0)
    }

    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    pub fn feature(&self, index: usize) -> Option<&Feature> {
        self.features.get(index)
    }

    /// Number of encoded columns.
    pub fn columns(&self) -> usize {
        self.columns as usize
    }

    pub fn classes(&self) -> usize {
        self.classes as usize
    }

    /// The logical feature that owns an encoded column.
    pub fn feature_of_column(&self, col: usize) -> Option<usize> {
        self.features.iter().position(|f| f.columns().contains(&col))
    }

    /// The constraints and costs of a query that uses the schema's defaults.
    pub fn default_query(&self) -> Query<F, C> {
        let mut q = Query {
            mutability: [Mutability::Free; F],
            cost: [1.0; F],
            transitions: self.transitions,
            l0: self.l0,
            entropy: self.entropy,
            margin: self.margin,
        };
        for (i, f) in self.features.iter().enumerate() {
            q.mutability[i] = f.mutability;
            q.cost[i] = f.cost;
        }
        q
    }
}

fn check_feature(f: &Feature, index: u16, next_col: u16) -> Result<(), SchemaError> {
    let layout = SchemaError::Layout { feature: index };
    if f.col != next_col || f.width == 0 {
        return Err(layout);
    }
    match f.kind {
        Kind::Categorical if f.width as usize > 64 => return Err(layout),
        Kind::Continuous | Kind::Integer | Kind::Binary if f.width != 1 => return Err(layout),
        _ => {}
    }
    let finite = f.min.is_finite() && f.max.is_finite() && f.sigma.is_finite() && f.cost.is_finite();
    if !finite || f.min > f.max || f.sigma < 0.0 || f.cost < 0.0 {
        return Err(SchemaError::Value { feature: index });
    }
    if f.kind == Kind::Binary && (f.min != 0.0 || f.max != 1.0) {
        return Err(SchemaError::Value { feature: index });
    }
    if f.ordered && f.kind != Kind::Categorical {
        return Err(layout);
    }
    check_direction(f, f.mutability, index)
}

/// A one-direction constraint needs an order: only ordered categorical groups have one.
fn check_direction(f: &Feature, m: Mutability, index: u16) -> Result<(), SchemaError> {
    let one_way = matches!(m, Mutability::IncreaseOnly | Mutability::DecreaseOnly);
    if f.kind == Kind::Categorical && !f.ordered && one_way {
        Err(SchemaError::Unordered { feature: index })
    } else {
        Ok(())
    }
}

fn set_transition(
    features: &[Feature],
    transitions: &mut [u64],
    feature: usize,
    from: u8,
    to: u8,
    allowed: bool,
) -> Result<(), SchemaError> {
    let index = u16::try_from(feature).unwrap_or(u16::MAX);
    let f = features.get(feature).ok_or(SchemaError::UnknownFeature { feature: index })?;
    if f.kind != Kind::Categorical {
        return Err(SchemaError::Layout { feature: index });
    }
    for c in [from, to] {
        if c >= f.width {
            return Err(SchemaError::UnknownCategory { feature: index, category: c });
        }
    }
    let mask = transitions.get_mut(f.col as usize + from as usize).ok_or(SchemaError::Layout { feature: index })?;
    if allowed {
        *mask |= 1 << to;
    } else {
        *mask &= !(1 << to);
    }
    Ok(())
}

/// The constraints, costs and weights of one query. Starts from [`Schema::default_query`]; a
/// person (or the device) may tighten or loosen any of it. `F` and `C` are its schema's.
#[derive(Debug, Clone, PartialEq)]
pub struct Query<const F: usize = FEATURES, const C: usize = COLUMNS> {
    /// Per logical feature.
    pub mutability: [Mutability; F],
    /// Per logical feature edit cost `w_j`.
    pub cost: [f32; F],
    /// Per encoded column of a categorical group: allowed target categories (bit per category).
    pub transitions: [u64; C],
    /// Weight of the l0 term.
    pub l0: f32,
    /// Weight of the leaf-entropy term.
    pub entropy: f32,
    /// Margin divisor `m`.
    pub margin: f32,
}

impl<const F: usize, const C: usize> Query<F, C> {
    /// The same query in another capacity, for `schema` (whose features and columns it
    /// describes): how a query built at the host's capacity reaches the device explainer.
    /// Entries past `schema`'s features and columns are the target's defaults (free, cost 1,
    /// no transitions).
    ///
    /// # Errors
    /// The target's [`SchemaError::Capacity`] when `schema`'s features or columns do not fit it.
    pub fn resize<const F2: usize, const C2: usize>(
        &self,
        schema: &Schema<F, C>,
    ) -> Result<Query<F2, C2>, SchemaError> {
        let (features, columns) = (schema.features().len(), schema.columns());
        if features > F2 || columns > C2 {
            return Err(SchemaError::Capacity { features: F2 as u16, columns: C2 as u16 });
        }
        let mut out = Query {
            mutability: [Mutability::Free; F2],
            cost: [1.0; F2],
            transitions: [0; C2],
            l0: self.l0,
            entropy: self.entropy,
            margin: self.margin,
        };
        out.mutability[..features].copy_from_slice(&self.mutability[..features]);
        out.cost[..features].copy_from_slice(&self.cost[..features]);
        out.transitions[..columns].copy_from_slice(&self.transitions[..columns]);
        Ok(out)
    }

    /// Forbids or allows a category transition of a categorical feature.
    ///
    /// # Errors
    /// When the feature is not categorical or a category is out of range.
    pub fn set_transition(
        &mut self,
        schema: &Schema<F, C>,
        feature: usize,
        from: u8,
        to: u8,
        allowed: bool,
    ) -> Result<(), SchemaError> {
        set_transition(schema.features(), &mut self.transitions, feature, from, to, allowed)
    }

    /// Checks that every weight is finite and non-negative and that only ordered categorical
    /// features are increase-only or decrease-only.
    ///
    /// # Errors
    /// [`SchemaError::Value`] naming the first bad feature (or `F` for a global weight);
    /// [`SchemaError::Unordered`] naming the first unordered categorical feature with a
    /// one-direction constraint.
    pub fn check(&self, schema: &Schema<F, C>) -> Result<(), SchemaError> {
        for (i, (c, f)) in self.cost.iter().zip(schema.features()).enumerate() {
            if !c.is_finite() || *c < 0.0 {
                return Err(SchemaError::Value { feature: i as u16 });
            }
            check_direction(f, self.mutability[i], i as u16)?;
        }
        let ok = |w: f32| w.is_finite() && w >= 0.0;
        if ok(self.l0) && ok(self.entropy) && self.margin.is_finite() && self.margin > 0.0 {
            Ok(())
        } else {
            Err(SchemaError::Value { feature: F as u16 })
        }
    }
}

/// The categories group `feature` may switch to from category `from` under mutability `m`:
/// the transitions the query allows (`transitions`, one mask per encoded column) narrowed to
/// the categories [`Feature::permitted`] lets it take.
pub fn reachable(feature: &Feature, m: Mutability, transitions: &[u64], from: u8) -> u64 {
    let mask = transitions.get(feature.col as usize + from as usize).copied().unwrap_or(0);
    mask & feature.permitted(m, from)
}

/// The category a one-hot group holds in `x`: the single column above 0.5.
pub fn category(feature: &Feature, x: &[f32]) -> Option<u8> {
    let cols = x.get(feature.columns())?;
    let mut found = None;
    for (k, v) in cols.iter().enumerate() {
        if *v > 0.5 {
            if found.is_some() {
                return None;
            }
            found = Some(k as u8);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adultish() -> Schema {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::integer(0, 17.0, 90.0).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.push(Feature::categorical(1, 3)).unwrap();
        s.push(Feature::binary(4).with_mutability(Mutability::Immutable)).unwrap();
        s
    }

    #[test]
    fn test_push_contiguous_columns() {
        let s = adultish();
        assert_eq!(s.columns(), 5);
        assert_eq!(s.feature_of_column(3), Some(1));
        assert_eq!(s.feature_of_column(4), Some(2));
        assert_eq!(s.feature_of_column(5), None);
    }

    #[test]
    fn test_push_rejects_gap_and_bad_values() {
        let mut s: Schema = Schema::new(2);
        assert_eq!(s.push(Feature::continuous(1, 0.0, 1.0)), Err(SchemaError::Layout { feature: 0 }));
        assert_eq!(s.push(Feature::continuous(0, 2.0, 1.0)), Err(SchemaError::Value { feature: 0 }));
        assert_eq!(s.push(Feature::continuous(0, 0.0, f32::NAN)), Err(SchemaError::Value { feature: 0 }));
        assert_eq!(s.push(Feature::categorical(0, 65)), Err(SchemaError::Layout { feature: 0 }));
    }

    #[test]
    fn test_capacity_is_an_error() {
        let mut s: Schema = Schema::new(2);
        for i in 0..COLUMNS {
            s.push(Feature::binary(i as u16)).ok();
        }
        let err = s.push(Feature::binary(s.columns() as u16));
        assert_eq!(err, Err(SchemaError::Capacity { features: FEATURES as u16, columns: COLUMNS as u16 }));
    }

    #[test]
    fn test_transitions_and_query_defaults() {
        let mut s = adultish();
        s.set_transition(1, 2, 0, false).unwrap();
        assert_eq!(s.transition_mask(3) & 1, 0);
        assert_eq!(s.set_transition(0, 0, 0, false), Err(SchemaError::Layout { feature: 0 }));
        assert_eq!(s.set_transition(1, 3, 0, false), Err(SchemaError::UnknownCategory { feature: 1, category: 3 }));
        let q = s.default_query();
        assert_eq!(q.mutability[0], Mutability::IncreaseOnly);
        assert_eq!(q.mutability[2], Mutability::Immutable);
        assert!(q.check(&s).is_ok());
    }

    #[test]
    fn test_query_resizes_with_its_schema() {
        let mut s = adultish();
        s.set_transition(1, 2, 0, false).unwrap();
        let mut q = s.default_query();
        q.cost[1] = 2.5;
        q.mutability[1] = Mutability::Immutable;
        q.l0 = 0.75;
        // Smaller, as the device's capacity is than the host's.
        let small: Query<3, 5> = q.resize(&s).unwrap();
        let schema: Schema<3, 5> = s.resize().unwrap();
        assert_eq!(small.mutability, [Mutability::IncreaseOnly, Mutability::Immutable, Mutability::Immutable]);
        assert_eq!(small.cost, [1.0, 2.5, 1.0]);
        assert_eq!(small.transitions, q.transitions[..5]);
        assert_eq!((small.l0, small.entropy, small.margin), (q.l0, q.entropy, q.margin));
        assert!(small.check(&schema).is_ok());
        // Back to the larger capacity: the entries past the schema are the defaults.
        let back: Query = small.resize(&schema).unwrap();
        assert_eq!(back.mutability[..3], q.mutability[..3]);
        assert_eq!(back.cost[..3], q.cost[..3]);
        assert_eq!(back.transitions[..5], q.transitions[..5]);
        assert!(back.mutability[3..].iter().all(|&m| m == Mutability::Free));
        assert!(back.transitions[5..].iter().all(|&t| t == 0));
        // Too small for the schema's features or columns.
        assert_eq!(q.resize::<2, 5>(&s), Err(SchemaError::Capacity { features: 2, columns: 5 }));
        assert_eq!(q.resize::<3, 4>(&s), Err(SchemaError::Capacity { features: 3, columns: 4 }));
    }
    #[test]
    fn test_one_direction_needs_an_ordered_group() {
        let mut s: Schema = Schema::new(2);
        let unordered = Feature::categorical(0, 3).with_mutability(Mutability::IncreaseOnly);
        assert_eq!(s.push(unordered), Err(SchemaError::Unordered { feature: 0 }));
        assert_eq!(
            s.push(Feature::categorical(0, 3).with_mutability(Mutability::DecreaseOnly)),
            Err(SchemaError::Unordered { feature: 0 })
        );
        assert_eq!(s.push(Feature { ordered: true, ..Feature::binary(0) }), Err(SchemaError::Layout { feature: 0 }));
        s.push(Feature::ordinal(0, 3).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.push(Feature::categorical(3, 2)).unwrap();
        let mut q = s.default_query();
        assert_eq!(q.check(&s), Ok(()));
        q.mutability[1] = Mutability::DecreaseOnly;
        assert_eq!(q.check(&s), Err(SchemaError::Unordered { feature: 1 }));
        q.mutability[1] = Mutability::Immutable;
        q.mutability[0] = Mutability::DecreaseOnly;
        assert_eq!(q.check(&s), Ok(()));
    }

    #[test]
    fn test_permitted_categories_follow_the_order() {
        let ordered = Feature::ordinal(0, 5);
        assert_eq!(ordered.permitted(Mutability::Free, 2), 0b11111);
        assert_eq!(ordered.permitted(Mutability::IncreaseOnly, 2), 0b11100);
        assert_eq!(ordered.permitted(Mutability::DecreaseOnly, 2), 0b00111);
        assert_eq!(ordered.permitted(Mutability::Immutable, 2), 0b00100);
        assert_eq!(ordered.permitted(Mutability::IncreaseOnly, 5), 0, "no category 5");
        let unordered = Feature::categorical(0, 5);
        assert_eq!(unordered.permitted(Mutability::IncreaseOnly, 2), 0b00100, "no order: no move");
        let wide = Feature::ordinal(0, 64);
        assert_eq!(wide.permitted(Mutability::IncreaseOnly, 63), 1 << 63);
        assert_eq!(wide.permitted(Mutability::DecreaseOnly, 63), u64::MAX);
        assert_eq!(wide.permitted(Mutability::IncreaseOnly, 0), u64::MAX);
        let mut s: Schema = Schema::new(2);
        s.push(Feature::ordinal(0, 4)).unwrap();
        s.set_transition(0, 1, 3, false).unwrap();
        let t = s.default_query().transitions;
        assert_eq!(reachable(&s.features()[0], Mutability::IncreaseOnly, &t, 1), 0b0110);
        assert_eq!(reachable(&s.features()[0], Mutability::DecreaseOnly, &t, 1), 0b0011);
    }

    #[test]
    fn test_category_requires_exactly_one_hot() {
        let f = Feature::categorical(0, 3);
        assert_eq!(category(&f, &[0.0, 1.0, 0.0]), Some(1));
        assert_eq!(category(&f, &[1.0, 1.0, 0.0]), None);
        assert_eq!(category(&f, &[0.0, 0.0, 0.0]), None);
        assert_eq!(category(&f, &[0.0, 1.0]), None);
    }

    #[test]
    fn test_encode_decode_round_trip() {
        let f = Feature::integer(0, 17.0, 90.0);
        assert!((f.decode(f.encode(40.0)) - 40.0).abs() < 1e-4);
        let c = Feature::continuous(0, 5.0, 5.0);
        assert_eq!(c.encode(5.0), 0.0);
    }
}
