//! From a contrast leaf's box to a concrete counterfactual `x'`, and the constraint re-check.
//!
//! Only the features whose value lies outside the box move: to the nearest boundary plus an
//! inward margin `|N(0, sigma_j / m)|`, clipped to the box and the feature's range; discrete
//! values are then put on a whole raw value inside the box and one-hot groups switch to a
//! category the box, the transitions and the direction allow (an ordered group: the nearest one
//! in its order, the lower on a tie; an unordered group: the lowest-indexed one). Every candidate
//! is re-checked: it must land in its leaf and break no constraint ([`check`]).

use crate::graph::discrete_value;
use crate::schema::{self, Feature, Kind, Mutability, Query, Schema};
use crate::tree::{Bounds, NodeIdx, Tree};
use core::fmt;
use rand_core::Rng;

/// Why no counterfactual was produced for a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum CounterfactualError {
    /// `x` or `out` does not match the schema, or `x` has an invalid one-hot group.
    Input,
    /// The leaf's box leaves feature `feature` no feasible value.
    NoValue { feature: u16 },
    /// The built point does not route to the leaf (the box is degenerate at float precision).
    OutsideLeaf,
    /// The built point breaks a constraint.
    Violation(Violation),
}

impl fmt::Display for CounterfactualError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterfactualError::Input => write!(f, "query vector does not match the schema"),
            CounterfactualError::NoValue { feature } => {
                write!(f, "leaf box leaves feature {feature} no feasible value")
            }
            CounterfactualError::OutsideLeaf => write!(f, "counterfactual does not fall into its leaf"),
            CounterfactualError::Violation(v) => write!(f, "{v}"),
        }
    }
}

impl core::error::Error for CounterfactualError {}

/// What a constraint violation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rule {
    /// An immutable feature changed.
    Immutable,
    /// A one-direction feature moved the wrong way.
    Direction,
    /// A value left the feature's range or is not finite.
    Range,
    /// A discrete feature holds a fractional raw value.
    NotWhole,
    /// A one-hot group does not hold exactly one category.
    Category,
    /// A category transition the query forbids.
    Transition,
}

/// A broken constraint on one logical feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Violation {
    /// The feature's index (the schema's feature count when the vectors' lengths are wrong).
    pub feature: u16,
    pub rule: Rule,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.rule {
            Rule::Immutable => "changes an immutable value",
            Rule::Direction => "moves against its allowed direction",
            Rule::Range => "leaves its range",
            Rule::NotWhole => "is not a whole number",
            Rule::Category => "is not exactly one category",
            Rule::Transition => "makes a forbidden category transition",
        };
        write!(f, "feature {} {what}", self.feature)
    }
}

/// Tolerance, in raw units, for a discrete value to count as whole.
const WHOLE_TOLERANCE: f32 = 1e-3;

/// Builds the counterfactual of `x` for `leaf` into `out` (same length as `x`).
///
/// # Errors
/// [`CounterfactualError`] when the inputs do not match, the box has no feasible value for a
/// feature that must move, or the result fails the re-check.
pub fn realize<R: Rng + ?Sized, const F: usize, const C: usize>(
    schema: &Schema<F, C>,
    query: &Query<F, C>,
    tree: &Tree<'_>,
    leaf: NodeIdx,
    x: &[f32],
    rng: &mut R,
    out: &mut [f32],
) -> Result<(), CounterfactualError> {
    realize_in(schema, query, tree, leaf, &Bounds::<C>::of(tree, leaf), x, rng, out)
}

/// [`realize`] with the leaf's box given: a caller that realizes one leaf several times (at
/// several margins) derives it once with [`Bounds::of`]. Whatever `bounds` says, the result
/// must still route to `leaf` and pass the re-check.
///
/// # Errors
/// As [`realize`].
#[allow(clippy::too_many_arguments)] // `realize`'s arguments and the box it would derive.
pub fn realize_in<R: Rng + ?Sized, const F: usize, const C: usize>(
    schema: &Schema<F, C>,
    query: &Query<F, C>,
    tree: &Tree<'_>,
    leaf: NodeIdx,
    bounds: &Bounds<C>,
    x: &[f32],
    rng: &mut R,
    out: &mut [f32],
) -> Result<(), CounterfactualError> {
    if x.len() != schema.columns() || out.len() != x.len() || tree.node(leaf).is_none() {
        return Err(CounterfactualError::Input);
    }
    out.copy_from_slice(x);
    for (j, f) in schema.features().iter().enumerate() {
        let no_value = CounterfactualError::NoValue { feature: j as u16 };
        match f.kind {
            Kind::Categorical => {
                move_group(f, query.mutability[j], &query.transitions, bounds, x, out).ok_or(no_value)?
            }
            _ => move_scalar(f, query.margin, bounds, x, rng, out).ok_or(no_value)?,
        }
    }
    if tree.route(out).map_err(|_| CounterfactualError::Input)? != leaf {
        return Err(CounterfactualError::OutsideLeaf);
    }
    check(schema, query, x, out).map_err(CounterfactualError::Violation)
}

/// Moves one scalar feature into the box; `None` when the box has no feasible value.
fn move_scalar<R: Rng + ?Sized, const C: usize>(
    f: &Feature,
    m: f32,
    b: &Bounds<C>,
    x: &[f32],
    rng: &mut R,
    out: &mut [f32],
) -> Option<()> {
    let col = f.col as usize;
    let v = *x.get(col)?;
    if b.admits(col, v) {
        return Some(());
    }
    let (lo, hi) = b.interval(col);
    // Feasible target interval: (lo, hi] intersected with the range [0, 1].
    let (low, strict) = if lo >= 0.0 { (lo, true) } else { (0.0, false) };
    let high = libm::fminf(hi, 1.0);
    if low >= high && (strict || low > high) {
        return None;
    }
    let margin = half_normal(rng, f.sigma / m);
    let mut t = if v <= lo { low + margin } else { high - margin };
    if t > high {
        t = high;
    }
    if t < low || (strict && t <= low) {
        t = low + (high - low) * 0.5;
    }
    if f.is_discrete() {
        let open_low = if strict { low } else { -f32::EPSILON };
        t = discrete_value(f, open_low, high, t)?;
    }
    *out.get_mut(col)? = t;
    Some(())
}

/// Switches a one-hot group to a reachable category when its current one is outside the box.
fn move_group<const C: usize>(
    f: &Feature,
    m: Mutability,
    transitions: &[u64],
    b: &Bounds<C>,
    x: &[f32],
    out: &mut [f32],
) -> Option<()> {
    let current = schema::category(f, x)?;
    let allowed = b.categories(f.col as usize, f.width as usize);
    if allowed & (1 << current) != 0 {
        return Some(());
    }
    let reachable = allowed & schema::reachable(f, m, transitions, current);
    if reachable == 0 {
        return None;
    }
    let to = if f.ordered { nearest(reachable, current) } else { reachable.trailing_zeros() as usize };
    for (k, v) in out.get_mut(f.columns())?.iter_mut().enumerate() {
        *v = if k == to { 1.0 } else { 0.0 };
    }
    Some(())
}

/// The set bit of `mask` (non-zero, without bit `from`) nearest to bit `from`; the lower on a tie.
fn nearest(mask: u64, from: u8) -> usize {
    let from = u32::from(from);
    let below = mask & 1u64.checked_shl(from).map_or(u64::MAX, |b| b - 1);
    let above = mask & !below;
    let down = (below != 0).then(|| 63 - below.leading_zeros());
    let up = (above != 0).then(|| above.trailing_zeros());
    match (down, up) {
        (Some(d), Some(u)) if u - from < from - d => u as usize,
        (Some(d), _) => d as usize,
        (None, Some(u)) => u as usize,
        (None, None) => from as usize,
    }
}

/// `|N(0, sd)|` by Box–Muller from 32-bit draws (libm, so every platform gets the same bits).
fn half_normal<R: Rng + ?Sized>(rng: &mut R, sd: f32) -> f32 {
    let u1 = ((rng.next_u32() >> 8) + 1) as f32 / 16_777_216.0;
    let u2 = (rng.next_u32() >> 8) as f32 / 16_777_216.0;
    let z = libm::sqrtf(-2.0 * libm::logf(u1)) * libm::cosf(2.0 * core::f32::consts::PI * u2);
    libm::fabsf(z * sd)
}

/// Re-checks `x'` against every constraint of `query`, relative to the original `x`.
///
/// # Errors
/// The first [`Violation`] found, in feature order.
pub fn check<const F: usize, const C: usize>(
    schema: &Schema<F, C>,
    query: &Query<F, C>,
    x: &[f32],
    x_new: &[f32],
) -> Result<(), Violation> {
    for (j, f) in schema.features().iter().enumerate() {
        let fail = |rule| Err(Violation { feature: j as u16, rule });
        let rule = match f.kind {
            Kind::Categorical => check_group(f, query.mutability[j], &query.transitions, x, x_new),
            _ => check_scalar(f, query.mutability[j], x, x_new),
        };
        if let Some(rule) = rule {
            return fail(rule);
        }
    }
    if x.len() != schema.columns() || x_new.len() != x.len() {
        return Err(Violation { feature: schema.features().len() as u16, rule: Rule::Range });
    }
    Ok(())
}

fn check_scalar(f: &Feature, m: Mutability, x: &[f32], x_new: &[f32]) -> Option<Rule> {
    let col = f.col as usize;
    let (Some(&v), Some(&n)) = (x.get(col), x_new.get(col)) else { return Some(Rule::Range) };
    if n == v {
        return None;
    }
    if !n.is_finite() || !(0.0..=1.0).contains(&n) {
        return Some(Rule::Range);
    }
    if m == Mutability::Immutable {
        return Some(Rule::Immutable);
    }
    if !m.allows(v, n) {
        return Some(Rule::Direction);
    }
    let raw = f.decode(n);
    (f.is_discrete() && libm::fabsf(raw - libm::roundf(raw)) > WHOLE_TOLERANCE).then_some(Rule::NotWhole)
}

fn check_group(f: &Feature, m: Mutability, transitions: &[u64], x: &[f32], x_new: &[f32]) -> Option<Rule> {
    let Some(cols) = x_new.get(f.columns()) else { return Some(Rule::Category) };
    if cols.iter().any(|&v| v != 0.0 && v != 1.0) {
        return Some(Rule::Category);
    }
    let (Some(from), Some(to)) = (schema::category(f, x), schema::category(f, x_new)) else {
        return Some(Rule::Category);
    };
    if from == to {
        return None;
    }
    if m == Mutability::Immutable {
        return Some(Rule::Immutable);
    }
    // A wrong-way move on an ordered group; any move on an unordered one asked to keep a
    // direction (which has none).
    if f.permitted(m, from) & (1 << to) == 0 {
        return Some(Rule::Direction);
    }
    let mask = transitions.get(f.col as usize + from as usize).copied().unwrap_or(0);
    (mask & (1 << to) == 0).then_some(Rule::Transition)
}

/// Bit `j` set when logical feature `j` differs between `x` and `x_new` (the l0 support) in a
/// device-profile schema, whose [`crate::capacity::FEATURES`] features all fit the mask.
pub fn changed(schema: &Schema, x: &[f32], x_new: &[f32]) -> u32 {
    const _: () = assert!(crate::capacity::FEATURES <= 32);
    changed_features(schema, x, x_new).fold(0, |mask, j| mask | (1 << j))
}

/// The logical features that differ between `x` and `x_new`, in order (any profile).
pub fn changed_features<'s, const F: usize, const C: usize>(
    schema: &'s Schema<F, C>,
    x: &'s [f32],
    x_new: &'s [f32],
) -> impl Iterator<Item = usize> + 's {
    schema.features().iter().enumerate().filter(|(_, f)| x.get(f.columns()) != x_new.get(f.columns())).map(|(j, _)| j)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Feature;
    use crate::tree::Node;
    use crate::tree::tests::bytes_of;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    fn leaf(class: u8) -> Node {
        Node::Leaf { class, purity: 1.0, entropy: 0.0, samples: 5 }
    }

    fn rng() -> Xoshiro128PlusPlus {
        Xoshiro128PlusPlus::seed_from_u64(7)
    }

    #[test]
    fn test_moves_inward_past_the_threshold() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0).with_sigma(0.2)).unwrap();
        s.push(Feature::continuous(1, 0.0, 1.0)).unwrap();
        let bytes = bytes_of(&[Node::Split { col: 0, threshold: 0.6, left: 1, right: 2 }, leaf(0), leaf(1)]);
        let t = Tree::new(&bytes, 2, 2).unwrap();
        let mut out = [0.0; 2];
        realize(&s, &s.default_query(), &t, 2, &[0.3, 0.4], &mut rng(), &mut out).unwrap();
        assert!(out[0] > 0.6 && out[0] <= 1.0, "moved inside (0.6, 1]: {}", out[0]);
        assert_eq!(out[1], 0.4, "features inside the box stay");
        realize(&s, &s.default_query(), &t, 1, &[0.9, 0.4], &mut rng(), &mut out).unwrap();
        assert!(out[0] <= 0.6 && out[0] >= 0.0);
        // With the box given, the same draw gives the same point; a box that is not the leaf's
        // cannot make a point outside the leaf count.
        let mut given = [0.0; 2];
        realize_in(&s, &s.default_query(), &t, 1, &Bounds::of(&t, 1), &[0.9, 0.4], &mut rng(), &mut given).unwrap();
        assert_eq!(given, out);
        let err = realize_in(&s, &s.default_query(), &t, 1, &Bounds::of(&t, 2), &[0.9, 0.4], &mut rng(), &mut given);
        assert_eq!(err.unwrap_err(), CounterfactualError::OutsideLeaf);
    }

    #[test]
    fn test_integer_lands_on_whole_value_in_box() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::integer(0, 0.0, 10.0).with_sigma(0.3)).unwrap();
        let bytes = bytes_of(&[Node::Split { col: 0, threshold: 0.45, left: 1, right: 2 }, leaf(0), leaf(1)]);
        let t = Tree::new(&bytes, 1, 2).unwrap();
        let mut out = [0.0; 1];
        for seed in 0..50 {
            let mut r = Xoshiro128PlusPlus::seed_from_u64(seed);
            realize(&s, &s.default_query(), &t, 2, &[0.2], &mut r, &mut out).unwrap();
            let raw = s.features()[0].decode(out[0]);
            assert!((raw - raw.round()).abs() < 1e-4 && raw >= 5.0, "raw {raw}");
        }
    }

    #[test]
    fn test_group_switches_to_allowed_category() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::categorical(0, 3)).unwrap();
        // Right of "col 0 <= 0.5" is category 0; left is categories 1 or 2.
        let bytes = bytes_of(&[Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 }, leaf(1), leaf(0)]);
        let t = Tree::new(&bytes, 3, 2).unwrap();
        let mut q = s.default_query();
        let mut out = [0.0; 3];
        realize(&s, &q, &t, 1, &[1.0, 0.0, 0.0], &mut rng(), &mut out).unwrap();
        assert_eq!(out, [0.0, 1.0, 0.0]);
        q.set_transition(&s, 0, 0, 1, false).unwrap();
        realize(&s, &q, &t, 1, &[1.0, 0.0, 0.0], &mut rng(), &mut out).unwrap();
        assert_eq!(out, [0.0, 0.0, 1.0]);
        q.set_transition(&s, 0, 0, 2, false).unwrap();
        let err = realize(&s, &q, &t, 1, &[1.0, 0.0, 0.0], &mut rng(), &mut out).unwrap_err();
        assert_eq!(err, CounterfactualError::NoValue { feature: 0 });
    }

    #[test]
    fn test_ordered_group_moves_to_the_nearest_permitted_category() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::ordinal(0, 5)).unwrap();
        // Left of "col 2 <= 0.5": every category but 2.
        let bytes = bytes_of(&[Node::Split { col: 2, threshold: 0.5, left: 1, right: 2 }, leaf(1), leaf(0)]);
        let t = Tree::new(&bytes, 5, 2).unwrap();
        let x = [0.0, 0.0, 1.0, 0.0, 0.0];
        let mut out = [0.0; 5];
        let mut q = s.default_query();
        realize(&s, &q, &t, 1, &x, &mut rng(), &mut out).unwrap();
        assert_eq!(out, [0.0, 1.0, 0.0, 0.0, 0.0], "free: 1 and 3 are as near; the lower wins");
        q.mutability[0] = Mutability::IncreaseOnly;
        realize(&s, &q, &t, 1, &x, &mut rng(), &mut out).unwrap();
        assert_eq!(out, [0.0, 0.0, 0.0, 1.0, 0.0]);
        q.mutability[0] = Mutability::DecreaseOnly;
        q.set_transition(&s, 0, 2, 1, false).unwrap();
        realize(&s, &q, &t, 1, &x, &mut rng(), &mut out).unwrap();
        assert_eq!(out, [1.0, 0.0, 0.0, 0.0, 0.0], "2 -> 1 is forbidden; 0 is the nearest lower one");
        q.set_transition(&s, 0, 2, 0, false).unwrap();
        let err = realize(&s, &q, &t, 1, &x, &mut rng(), &mut out).unwrap_err();
        assert_eq!(err, CounterfactualError::NoValue { feature: 0 });
    }

    #[test]
    fn test_check_rejects_wrong_direction_on_groups() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::ordinal(0, 3).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.push(Feature::categorical(3, 2)).unwrap();
        let mut q = s.default_query();
        let x = [0.0, 1.0, 0.0, 1.0, 0.0];
        let rule = |q: &Query, xn: &[f32]| check(&s, q, &x, xn).map_err(|v| (v.feature, v.rule));
        assert_eq!(rule(&q, &[0.0, 0.0, 1.0, 1.0, 0.0]), Ok(()));
        assert_eq!(rule(&q, &[1.0, 0.0, 0.0, 1.0, 0.0]), Err((0, Rule::Direction)));
        q.mutability[0] = Mutability::DecreaseOnly;
        assert_eq!(rule(&q, &[1.0, 0.0, 0.0, 1.0, 0.0]), Ok(()));
        assert_eq!(rule(&q, &[0.0, 0.0, 1.0, 1.0, 0.0]), Err((0, Rule::Direction)));
        // An unordered group has no direction: under one, every move is a violation.
        q.mutability[1] = Mutability::IncreaseOnly;
        assert_eq!(rule(&q, &[0.0, 1.0, 0.0, 0.0, 1.0]), Err((1, Rule::Direction)));
        assert_eq!(rule(&q, &x), Ok(()));
    }

    #[test]
    fn test_nearest_bit() {
        assert_eq!(nearest(0b1000_0001, 3), 0);
        assert_eq!(nearest(0b1000_0001, 4), 7);
        assert_eq!(nearest(0b0010_0010, 3), 1, "a tie goes to the lower");
        assert_eq!(nearest(1 << 63, 0), 63);
        assert_eq!(nearest(1, 63), 0);
    }

    #[test]
    fn test_check_names_each_rule() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::integer(0, 0.0, 10.0).with_mutability(Mutability::IncreaseOnly)).unwrap();
        s.push(Feature::binary(1).with_mutability(Mutability::Immutable)).unwrap();
        s.push(Feature::categorical(2, 2)).unwrap();
        let q = s.default_query();
        let x = [0.5, 0.0, 1.0, 0.0];
        let rule = |xn: &[f32]| check(&s, &q, &x, xn).map_err(|v| (v.feature, v.rule));
        assert_eq!(rule(&x), Ok(()));
        assert_eq!(rule(&[0.4, 0.0, 1.0, 0.0]), Err((0, Rule::Direction)));
        assert_eq!(rule(&[0.55, 0.0, 1.0, 0.0]), Err((0, Rule::NotWhole)));
        assert_eq!(rule(&[1.5, 0.0, 1.0, 0.0]), Err((0, Rule::Range)));
        assert_eq!(rule(&[0.6, 1.0, 1.0, 0.0]), Err((1, Rule::Immutable)));
        assert_eq!(rule(&[0.6, 0.0, 1.0, 1.0]), Err((2, Rule::Category)));
        assert_eq!(rule(&[0.6, 0.0, 0.0, 1.0]), Ok(()));
        let mut q2 = q.clone();
        q2.set_transition(&s, 2, 0, 1, false).unwrap();
        assert_eq!(check(&s, &q2, &x, &[0.6, 0.0, 0.0, 1.0]).unwrap_err().rule, Rule::Transition);
    }

    #[test]
    fn test_changed_mask_counts_groups_once() {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        s.push(Feature::categorical(1, 3)).unwrap();
        assert_eq!(changed(&s, &[0.1, 1.0, 0.0, 0.0], &[0.1, 0.0, 0.0, 1.0]), 0b10);
    }
}
