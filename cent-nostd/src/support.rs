//! Data support on the device: the values and combinations of values people in the training
//! data have, so that a counterfactual names a capital gain somebody reported and a household
//! somebody lives in, not a point between them.
//!
//! A [`Support`] is a validated view over bundle bytes, read in place:
//! - per numeric feature, optionally, its **observed values** (ascending little-endian `f32` in
//!   encoded units): a changed value snaps to the nearest one inside the leaf's box
//!   ([`Support::snap`]);
//! - **links**: groups of features whose values must form a combination the training rows hold
//!   (one little-endian `f32` per feature and combination: a category's index, a binary
//!   feature's 0 or 1, a number's encoded value; most frequent combination first). A candidate
//!   that changes a linked feature into a combination nobody has is repaired to the nearest one
//!   that keeps its changes, or dropped ([`Support::repair`]).
//!
//! The host builds both from its training rows (a feature with more observed values than
//! [`VALUES`] keeps an evenly spaced selection of them: still values people have). An empty
//! support ([`Support::none`]) accepts every value and combination.
//!
//! ```
//! use cent_nostd::schema::{Feature, Schema};
//! use cent_nostd::support::Support;
//!
//! let mut schema: Schema = Schema::new(2);
//! schema.push(Feature::integer(0, 0.0, 10.0)).unwrap();
//! // Observed: 0, 4 and 10 (encoded 0.0, 0.4, 1.0).
//! let values: Vec<u8> = [0.0f32, 0.4, 1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let support = Support::new(&schema, &[3], &values).unwrap();
//! // A move to 0.55 inside the box (0.3, 1.0] lands on 4, the observed value nearest it.
//! assert_eq!(support.snap(0, 0.55, 0.3, 1.0), Some(0.4));
//! // Nobody has a value in (0.5, 0.9].
//! assert_eq!(support.snap(0, 0.7, 0.5, 0.9), None);
//! ```

use crate::capacity::{FEATURES, LINK_FEATURES, LINKS, VALUES};
use crate::schema::{Feature, Kind, Schema, category};
use crate::tree::Bounds;
use core::fmt;

/// Why support bytes are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SupportError {
    /// The value counts do not match the schema's features or the value bytes' length.
    Layout,
    /// A feature's observed values are not finite and strictly ascending, more than
    /// [`VALUES`], or given to a feature that is not numeric.
    Values { feature: u16 },
    /// A link has fewer than 2 or more than [`LINK_FEATURES`] features, names one twice or
    /// past the schema, has no combination, or a combination holds a value its feature cannot
    /// take.
    Link { link: u8 },
    /// More than [`LINKS`] links.
    Capacity,
}

impl fmt::Display for SupportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SupportError::Layout => write!(f, "observed-value counts do not match the schema or the values"),
            SupportError::Values { feature } => write!(f, "feature {feature}: observed values are not valid"),
            SupportError::Link { link } => write!(f, "link {link} is not valid"),
            SupportError::Capacity => write!(f, "more than {LINKS} links"),
        }
    }
}

impl core::error::Error for SupportError {}

/// One feature's observed values: `len` values from value index `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: u16,
    len: u16,
}

/// Features whose values must form an observed combination.
#[derive(Debug, Clone, PartialEq)]
struct Link<'a> {
    features: heapless::Vec<u16, LINK_FEATURES>,
    /// `features.len()` little-endian `f32` per combination, most frequent first.
    combinations: &'a [u8],
}

/// A link's values in one row, as codes (see the module docs).
type Codes = heapless::Vec<f32, LINK_FEATURES>;

/// The data support of a bundle: observed values and links, validated once (see the module
/// docs). Every method is total: unknown indices and rows of the wrong length give `None` or
/// `false`, never a panic.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Support<'a> {
    /// One per schema feature, or none at all.
    spans: heapless::Vec<Span, FEATURES>,
    values: &'a [u8],
    links: heapless::Vec<Link<'a>, LINKS>,
}

impl<'a> Support<'a> {
    /// A support that accepts every value and combination.
    pub const fn none() -> Support<'static> {
        Support { spans: heapless::Vec::new(), values: &[], links: heapless::Vec::new() }
    }

    /// Observed values of `schema`'s features: `counts` has one entry per feature (0 for a
    /// feature any value in range suits) or none at all; `values` holds them feature after
    /// feature, each feature's ascending, as little-endian `f32` in encoded units.
    ///
    /// # Errors
    /// [`SupportError::Layout`] or [`SupportError::Values`].
    pub fn new(schema: &Schema, counts: &[u16], values: &'a [u8]) -> Result<Self, SupportError> {
        let features = schema.features();
        if !counts.is_empty() && counts.len() != features.len() {
            return Err(SupportError::Layout);
        }
        let total: usize = counts.iter().map(|&n| n as usize).sum();
        if total.checked_mul(4) != Some(values.len()) {
            return Err(SupportError::Layout);
        }
        let mut spans = heapless::Vec::new();
        let mut start = 0usize;
        for (j, (&n, f)) in counts.iter().zip(features).enumerate() {
            let bad = SupportError::Values { feature: j as u16 };
            let numeric = matches!(f.kind, Kind::Integer | Kind::Continuous);
            if n as usize > VALUES || (n > 0 && !numeric) {
                return Err(bad);
            }
            let mut last = f32::NEG_INFINITY;
            for i in start..start + n as usize {
                let v = read(values, i).ok_or(bad)?;
                if !v.is_finite() || v <= last {
                    return Err(bad);
                }
                last = v;
            }
            // `start` stays below VALUES · FEATURES, far inside u16.
            spans.push(Span { start: start as u16, len: n }).map_err(|_| SupportError::Layout)?;
            start += n as usize;
        }
        Ok(Support { spans, values, links: heapless::Vec::new() })
    }

    /// Adds a link over `features` (schema positions) with its observed `combinations`
    /// (`features.len()` little-endian `f32` each, most frequent first).
    ///
    /// # Errors
    /// [`SupportError::Link`] or [`SupportError::Capacity`].
    pub fn push_link(&mut self, schema: &Schema, features: &[u16], combinations: &'a [u8]) -> Result<(), SupportError> {
        let bad = SupportError::Link { link: self.links.len().min(u8::MAX as usize) as u8 };
        if self.links.is_full() {
            return Err(SupportError::Capacity);
        }
        let layout = schema.features();
        let k = features.len();
        if !(2..=LINK_FEATURES).contains(&k) || combinations.is_empty() || !combinations.len().is_multiple_of(4 * k) {
            return Err(bad);
        }
        for (i, &j) in features.iter().enumerate() {
            if j as usize >= layout.len() || features[..i].contains(&j) {
                return Err(bad);
            }
        }
        for (i, chunk) in combinations.chunks_exact(4).enumerate() {
            let f = &layout[features[i % k] as usize];
            let v = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let fits = match f.kind {
                Kind::Categorical => v >= 0.0 && v < f32::from(f.width) && v == libm::truncf(v),
                Kind::Binary => v == 0.0 || v == 1.0,
                Kind::Integer | Kind::Continuous => v.is_finite(),
            };
            if !fits {
                return Err(bad);
            }
        }
        let mut ids = heapless::Vec::new();
        ids.extend_from_slice(features).map_err(|_| bad)?;
        self.links.push(Link { features: ids, combinations }).map_err(|_| SupportError::Capacity)
    }

    /// True when the support asks nothing: no observed values, no links.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty() && self.spans.iter().all(|s| s.len == 0)
    }

    /// Number of observed values feature `feature` keeps to (0: any value in its range).
    pub fn observed(&self, feature: usize) -> usize {
        self.spans.get(feature).map_or(0, |s| s.len as usize)
    }

    /// Observed value `i` of feature `feature`, ascending.
    pub fn value(&self, feature: usize, i: usize) -> Option<f32> {
        let s = self.spans.get(feature)?;
        if i >= s.len as usize {
            return None;
        }
        read(self.values, s.start as usize + i)
    }

    /// Number of links.
    pub fn links(&self) -> usize {
        self.links.len()
    }

    /// The value to give feature `feature` inside a box's interval `lo < v <= hi` (the core's
    /// [`Bounds::interval`]): for a feature with observed values the one nearest `value` in
    /// the interval (the lower one on a tie), `None` when none lies in it; any other feature
    /// keeps `value`.
    pub fn snap(&self, feature: usize, value: f32, lo: f32, hi: f32) -> Option<f32> {
        let n = self.observed(feature);
        if n == 0 {
            return Some(value);
        }
        let at = |i: usize| self.value(feature, i).unwrap_or(f32::INFINITY);
        let first = |pred: &dyn Fn(f32) -> bool| partition_point(n, |i| pred(at(i)));
        let (start, end) = (first(&|v| v <= lo), first(&|v| v <= hi));
        if start >= end {
            return None;
        }
        let i = start + partition_point(end - start, |i| at(start + i) < value);
        let below = (i > start).then(|| at(i - 1));
        let above = (i < end).then(|| at(i));
        match (below, above) {
            (Some(b), Some(a)) => Some(if value - b <= a - value { b } else { a }),
            (Some(v), None) | (None, Some(v)) => Some(v),
            (None, None) => None,
        }
    }

    /// Keeps `cand`, a counterfactual of `x` inside a leaf's `bounds`, to the data: every
    /// changed number with observed values snaps inside its interval ([`Support::snap`]), then
    /// the links are repaired ([`Support::repair`]), and every changed number must then hold an
    /// observed value (a repair may write a partner's value that is a state, such as "no
    /// delinquency", rather than an amount). False when a box holds no observed value, no
    /// observed combination keeps the changes, or a repaired number is not an observed value:
    /// the candidate is to be dropped.
    pub fn settle<const C: usize>(&self, schema: &Schema, bounds: &Bounds<C>, x: &[f32], cand: &mut [f32]) -> bool {
        if x.len() != cand.len() {
            return false;
        }
        for (j, f) in schema.features().iter().enumerate() {
            let c = f.col as usize;
            if matches!(f.kind, Kind::Integer | Kind::Continuous) && x.get(c) != cand.get(c) {
                let (lo, hi) = bounds.interval(c);
                let snapped = cand.get(c).and_then(|&v| self.snap(j, v, lo, hi));
                match (cand.get_mut(c), snapped) {
                    (Some(slot), Some(v)) => *slot = v,
                    _ => return false,
                }
            }
        }
        self.repair(schema, x, cand)
            && schema.features().iter().enumerate().all(|(j, f)| {
                let c = f.col as usize;
                x.get(c) == cand.get(c) || cand.get(c).is_some_and(|&v| self.holds_value(j, v))
            })
    }

    /// True when feature `feature` may take `value`: any value without observed values, else
    /// exactly one of them.
    pub fn holds_value(&self, feature: usize, value: f32) -> bool {
        let n = self.observed(feature);
        if n == 0 {
            return true;
        }
        let i = partition_point(n, |i| self.value(feature, i).is_some_and(|v| v < value));
        self.value(feature, i) == Some(value)
    }

    /// Makes `cand`, a counterfactual of `x`, satisfy every link: a link none of whose
    /// features `cand` changed is left alone (a person's own combination is theirs); a
    /// combination nobody has becomes the observed one that keeps every value `cand` changed
    /// and differs from it in the fewest other features (ties: the more frequent). Links
    /// sharing a feature are passed over again until all hold. False when one cannot hold
    /// (`cand` may then be partly rewritten) or a row does not match the schema.
    ///
    /// A repair does not look at the query's constraints: the caller re-checks the row.
    pub fn repair(&self, schema: &Schema, x: &[f32], cand: &mut [f32]) -> bool {
        if x.len() != schema.columns() || cand.len() != schema.columns() {
            return false;
        }
        let layout = schema.features();
        for _ in 0..=self.links.len() {
            if !self.links.iter().all(|l| l.repair(layout, x, cand)) {
                return false;
            }
            if self.links.iter().all(|l| l.holds(layout, x, cand)) {
                return true;
            }
        }
        false
    }

    /// Number of links `cand` breaks that `x` does not hold as it is (see
    /// [`Support::repair`]); every link when a row does not match the schema.
    pub fn broken(&self, schema: &Schema, x: &[f32], cand: &[f32]) -> usize {
        if x.len() != schema.columns() || cand.len() != schema.columns() {
            return self.links.len();
        }
        self.links.iter().filter(|l| !l.holds(schema.features(), x, cand)).count()
    }
}

impl Link<'_> {
    fn width(&self) -> usize {
        self.features.len()
    }

    fn combination(&self, i: usize) -> impl Iterator<Item = f32> + '_ {
        let k = self.width();
        (0..k).map(move |f| read(self.combinations, i * k + f).unwrap_or(f32::NAN))
    }

    fn combinations(&self) -> usize {
        self.combinations.len() / (4 * self.width())
    }

    fn contains(&self, codes: &[f32]) -> bool {
        (0..self.combinations()).any(|i| self.combination(i).eq(codes.iter().copied()))
    }

    fn codes(&self, layout: &[Feature], row: &[f32]) -> Option<Codes> {
        let mut out = Codes::new();
        for &j in &self.features {
            out.push(code(layout.get(j as usize)?, row)?).ok()?;
        }
        Some(out)
    }

    fn untouched(&self, layout: &[Feature], x: &[f32], cand: &[f32]) -> bool {
        self.features
            .iter()
            .all(|&j| layout.get(j as usize).is_some_and(|f| x.get(f.columns()) == cand.get(f.columns())))
    }

    /// `cand` holds an observed combination, or `x`'s own values, on this link.
    fn holds(&self, layout: &[Feature], x: &[f32], cand: &[f32]) -> bool {
        if self.untouched(layout, x, cand) {
            return true;
        }
        match (self.codes(layout, x), self.codes(layout, cand)) {
            (before, Some(now)) => before.as_ref() == Some(&now) || self.contains(&now),
            (_, None) => false,
        }
    }

    fn repair(&self, layout: &[Feature], x: &[f32], cand: &mut [f32]) -> bool {
        if self.untouched(layout, x, cand) {
            return true;
        }
        let (Some(before), Some(now)) = (self.codes(layout, x), self.codes(layout, cand)) else { return false };
        if before == now || self.contains(&now) {
            return true;
        }
        let mut best: Option<(usize, usize)> = None;
        for i in 0..self.combinations() {
            let keeps = self.combination(i).zip(&now).zip(&before).all(|((t, &n), &b)| b == n || t == n);
            if !keeps {
                continue;
            }
            let moved = self.combination(i).zip(&now).filter(|(t, n)| t != *n).count();
            if best.is_none_or(|(m, _)| moved < m) {
                best = Some((moved, i));
            }
        }
        let Some((_, i)) = best else { return false };
        self.features
            .iter()
            .zip(self.combination(i))
            .all(|(&j, v)| layout.get(j as usize).is_some_and(|f| write(f, v, cand)))
    }
}

/// Value `i` of little-endian `f32` bytes.
fn read(bytes: &[u8], i: usize) -> Option<f32> {
    let b = bytes.get(i.checked_mul(4)?..i.checked_mul(4)? + 4)?;
    Some(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// First index in `0..n` where `pred` turns false (`pred` true on a prefix).
fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A feature's value in `row` as a link code.
fn code(f: &Feature, row: &[f32]) -> Option<f32> {
    let v = *row.get(f.col as usize)?;
    match f.kind {
        Kind::Categorical => category(f, row).map(f32::from),
        _ if !v.is_finite() => None,
        Kind::Binary => Some(if v >= 0.5 { 1.0 } else { 0.0 }),
        Kind::Integer | Kind::Continuous => Some(v),
    }
}

/// Writes a link code into `row`.
fn write(f: &Feature, v: f32, row: &mut [f32]) -> bool {
    match f.kind {
        Kind::Categorical => {
            let Some(cols) = row.get_mut(f.columns()) else { return false };
            let k = v as usize;
            if k >= cols.len() {
                return false;
            }
            cols.fill(0.0);
            cols[k] = 1.0;
            true
        }
        _ => row.get_mut(f.col as usize).map(|slot| *slot = v).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Feature;

    fn bytes(v: &[f32]) -> std::vec::Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// age (integer, 0..10), status (3 categories), role (3 categories), sex (binary).
    fn schema() -> Schema {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::integer(0, 0.0, 10.0)).unwrap();
        s.push(Feature::categorical(1, 3)).unwrap();
        s.push(Feature::categorical(4, 3)).unwrap();
        s.push(Feature::binary(7)).unwrap();
        s
    }

    fn row(age: f32, status: usize, role: usize, sex: f32) -> [f32; 8] {
        let mut r = [0.0; 8];
        r[0] = age;
        r[1 + status] = 1.0;
        r[4 + role] = 1.0;
        r[7] = sex;
        r
    }

    /// The nearest value in `(lo, hi]` by scanning all of them.
    fn snap_oracle(values: &[f32], value: f32, lo: f32, hi: f32) -> Option<f32> {
        let mut best: Option<f32> = None;
        for &v in values.iter().filter(|&&v| v > lo && v <= hi) {
            if best.is_none_or(|b| (v - value).abs() < (b - value).abs()) {
                best = Some(v);
            }
        }
        best
    }

    #[test]
    fn test_snap_matches_a_scan_of_every_value() {
        let s = schema();
        let values = [0.0f32, 0.1, 0.2, 0.5, 0.9, 1.0];
        let raw = bytes(&values);
        let support = Support::new(&s, &[6, 0, 0, 0], &raw).unwrap();
        let grid: std::vec::Vec<f32> = (-2..=22).map(|i| i as f32 * 0.05).collect();
        for &value in &grid {
            for &lo in &grid {
                for &hi in &grid {
                    assert_eq!(
                        support.snap(0, value, lo, hi),
                        snap_oracle(&values, value, lo, hi),
                        "{value} ({lo}, {hi}]"
                    );
                }
            }
        }
        // Unbounded sides, and a feature without observed values.
        assert_eq!(support.snap(0, 0.7, f32::NEG_INFINITY, f32::INFINITY), Some(0.5));
        assert_eq!(support.snap(1, 0.7, 0.0, 1.0), Some(0.7));
        assert_eq!(support.snap(9, 0.7, 0.0, 1.0), Some(0.7));
    }

    #[test]
    fn test_refuses_malformed_values() {
        let s = schema();
        let ok = bytes(&[0.0, 0.5]);
        assert!(Support::new(&s, &[2, 0, 0, 0], &ok).is_ok());
        assert!(Support::new(&s, &[], &[]).is_ok_and(|v| v.is_empty()));
        assert_eq!(Support::new(&s, &[2, 0, 0], &ok), Err(SupportError::Layout));
        assert_eq!(Support::new(&s, &[1, 0, 0, 0], &ok), Err(SupportError::Layout));
        assert_eq!(Support::new(&s, &[2, 0, 0, 0], &ok[..7]), Err(SupportError::Layout));
        // Not ascending, repeated, not finite, on a categorical feature.
        for bad in [bytes(&[0.5, 0.0]), bytes(&[0.5, 0.5]), bytes(&[0.0, f32::NAN])] {
            assert_eq!(Support::new(&s, &[2, 0, 0, 0], &bad), Err(SupportError::Values { feature: 0 }));
        }
        assert_eq!(Support::new(&s, &[0, 2, 0, 0], &ok), Err(SupportError::Values { feature: 1 }));
    }

    #[test]
    fn test_refuses_malformed_links() {
        let s = schema();
        let two = bytes(&[0.0, 1.0]);
        let mut support = Support::new(&s, &[], &[]).unwrap();
        assert!(support.push_link(&s, &[1, 2], &two).is_ok());
        for (features, combos) in [
            (&[1u16][..], bytes(&[0.0])),
            (&[1, 1][..], two.clone()),
            (&[1, 9][..], two.clone()),
            (&[1, 2][..], bytes(&[0.0])),
            (&[1, 2][..], std::vec::Vec::new()),
            (&[1, 2][..], bytes(&[3.0, 0.0])),
            (&[1, 2][..], bytes(&[0.5, 0.0])),
            (&[1, 3][..], bytes(&[0.0, 0.5])),
            (&[0, 3][..], bytes(&[f32::INFINITY, 0.0])),
        ] {
            let mut support = support.clone();
            assert_eq!(support.push_link(&s, features, &combos), Err(SupportError::Link { link: 1 }), "{features:?}");
        }
        let mut full = Support::new(&s, &[], &[]).unwrap();
        for _ in 0..LINKS {
            full.push_link(&s, &[1, 2], &two).unwrap();
        }
        assert_eq!(full.push_link(&s, &[1, 2], &two), Err(SupportError::Capacity));
    }

    /// Every combination of `status × role × sex` tried as a candidate from every factual:
    /// the repaired row holds an observed combination that keeps every changed value and moves
    /// no fewer other features than any other such combination, or the repair says it cannot.
    #[test]
    fn test_repair_keeps_the_changes_and_moves_the_fewest_others() {
        let s = schema();
        // (status, role, sex), most frequent first.
        let observed: [[f32; 3]; 5] =
            [[1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [2.0, 2.0, 1.0]];
        let flat: std::vec::Vec<f32> = observed.iter().flatten().copied().collect();
        let combos = bytes(&flat);
        let mut support = Support::new(&s, &[], &[]).unwrap();
        support.push_link(&s, &[1, 2, 3], &combos).unwrap();
        let all = || (0..3).flat_map(|a| (0..3).flat_map(move |b| (0..2).map(move |c| (a, b, c as f32))));
        for (xa, xb, xc) in all() {
            let x = row(3.0, xa, xb, xc);
            for (ca, cb, cc) in all() {
                let cand = row(3.0, ca, cb, cc);
                let mut fixed = cand;
                let ok = support.repair(&s, &x, &mut fixed);
                let now = [ca as f32, cb as f32, cc];
                let before = [xa as f32, xb as f32, xc];
                let keeps = |t: &[f32; 3]| (0..3).all(|k| before[k] == now[k] || t[k] == now[k]);
                let moved = |t: &[f32; 3]| (0..3).filter(|&k| t[k] != now[k]).count();
                let fewest = observed.iter().filter(|t| keeps(t)).map(moved).min();
                if cand == x || observed.contains(&now) {
                    assert!(ok && fixed == cand, "{now:?} from {before:?}");
                    continue;
                }
                match fewest {
                    None => assert!(!ok, "{now:?} from {before:?}"),
                    Some(m) => {
                        assert!(ok, "{now:?} from {before:?}");
                        let got = [
                            category(&s.features()[1], &fixed).unwrap() as f32,
                            category(&s.features()[2], &fixed).unwrap() as f32,
                            fixed[7],
                        ];
                        assert!(observed.contains(&got) && keeps(&got) && moved(&got) == m, "{now:?} -> {got:?}");
                        // The first such combination in the stored (frequency) order.
                        let first = observed.iter().find(|t| keeps(t) && moved(t) == m).unwrap();
                        assert_eq!(&got, first);
                        assert_eq!(fixed[0], 3.0, "a feature outside the link is left alone");
                        assert_eq!(support.broken(&s, &x, &fixed), 0);
                    }
                }
            }
        }
    }

    #[test]
    fn test_settle_snaps_inside_the_box_then_repairs() {
        let s = schema();
        let values = bytes(&[0.1, 0.4, 0.8]);
        // Age 0.8 only with status 2.
        let combos = bytes(&[0.1, 0.0, 0.4, 0.0, 0.8, 2.0]);
        let mut support = Support::new(&s, &[3, 0, 0, 0], &values).unwrap();
        support.push_link(&s, &[0, 1], &combos).unwrap();
        let x = row(0.1, 0, 0, 0.0);
        let mut bounds: Bounds<8> = Bounds::default();
        bounds.restrict(0, 0.5, false);
        let mut cand = row(0.55, 0, 0, 0.0);
        assert!(support.settle(&s, &bounds, &x, &mut cand));
        assert_eq!(cand, row(0.8, 2, 0, 0.0), "0.55 snaps to 0.8 inside (0.5, 1], and status follows");
        // Nothing observed inside (0.85, 1]: dropped.
        bounds.restrict(0, 0.85, false);
        let mut cand = row(0.9, 0, 0, 0.0);
        assert!(!support.settle(&s, &bounds, &x, &mut cand));
        // Status 2 changed back to 1 wants age 0.5, which no row has: the repair writes it, the
        // candidate is dropped.
        let combos = bytes(&[0.5, 1.0, 0.8, 2.0]);
        let mut partner = Support::new(&s, &[3, 0, 0, 0], &values).unwrap();
        partner.push_link(&s, &[0, 1], &combos).unwrap();
        let x = row(0.8, 2, 0, 0.0);
        let mut cand = row(0.8, 1, 0, 0.0);
        assert!(partner.repair(&s, &x, &mut cand) && cand[0] == 0.5);
        let mut cand = row(0.8, 1, 0, 0.0);
        assert!(!partner.settle(&s, &Bounds::<8>::default(), &x, &mut cand));
        assert!(partner.holds_value(0, 0.8) && !partner.holds_value(0, 0.5) && partner.holds_value(1, 0.5));
        // An empty support changes nothing.
        let mut cand = row(0.9, 1, 2, 1.0);
        assert!(Support::none().settle(&s, &bounds, &x, &mut cand));
        assert_eq!(cand, row(0.9, 1, 2, 1.0));
    }

    #[test]
    fn test_never_panics_on_rows_of_the_wrong_length() {
        let s = schema();
        let combos = bytes(&[0.0, 0.0]);
        let mut support = Support::new(&s, &[], &[]).unwrap();
        support.push_link(&s, &[1, 2], &combos).unwrap();
        let x = row(0.0, 0, 0, 0.0);
        let mut short = [0.0f32; 3];
        assert!(!support.repair(&s, &x, &mut short));
        assert_eq!(support.broken(&s, &x, &short), 1);
        let bounds: Bounds<8> = Bounds::default();
        assert!(!support.settle(&s, &bounds, &x, &mut short));
        // A one-hot group without a hot column is no combination.
        let mut cold = row(0.0, 1, 1, 0.0);
        cold[1..4].fill(0.0);
        assert!(!support.repair(&s, &x, &mut cold));
    }
}
