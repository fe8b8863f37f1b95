//! Data support: the numeric values and the combinations of values that the training rows
//! hold, so that a counterfactual can be kept to them by construction and measured against
//! them afterwards.
//!
//! Two declarations of the schema feed it (see `data/README.md`):
//! - `support = "observed"` on a numeric feature (the default for integer features): a
//!   counterfactual value must be one some training row has ([`Support::snap`],
//!   [`Support::unseen`]);
//! - `[[link]]` tables: `one_to_one` pairs that move together and `observed_combinations`
//!   groups whose values must form a combination some training row has ([`Support::repair`],
//!   [`Support::link_violations`]).
//!
//! Everything works on **encoded** rows (the layout of [`Encoding::to_core_schema`]). A link
//! compares values as codes: a category's index, a binary feature's 0/1, an integer's decoded
//! value, a continuous value decoded and rounded to four decimals.
//!
//! ```
//! let prepared = cent_host::data::prepare(cent_host::data::load_adult().unwrap(), 0.2, 7).unwrap();
//! let support = cent_host::support::Support::new(&prepared.encoding, &prepared.train.data);
//! assert_eq!(support.link_violations(prepared.train.row(0)), 0);
//! let gain = prepared.encoding.feature_index("capital-gain").unwrap();
//! assert!(support.observed(gain).is_some_and(|values| values.len() < 200));
//! ```

use crate::data::{Encoding, LinkKind, ValueSupport};
use cent_nostd::schema::{self as core, Kind};
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// What the training rows hold, built once per encoding: per observed-support feature its
/// distinct values, per link the combinations of values and how often each occurs.
///
/// Deterministic, and no method panics on odd input: a row of the wrong length, a value that
/// is not finite or a one-hot group without exactly one hot column is a violation (or `false`,
/// or `None`), never an out-of-bounds index.
#[derive(Debug, Clone)]
pub struct Support {
    n_cols: usize,
    features: Vec<core::Feature>,
    /// Per feature: its observed values when its support is `observed` (numeric only).
    observed: Vec<Option<Observed>>,
    links: Vec<LinkTable>,
}

/// The distinct values of one observed-support numeric feature.
#[derive(Debug, Clone)]
struct Observed {
    /// Sorted distinct encoded values.
    encoded: Vec<f32>,
    /// Sorted distinct decoded values (integers rounded).
    decoded: Vec<f64>,
    /// Largest difference in decoded units still taken as the same value: 0 for integers;
    /// for continuous values the four-decimal rounding of reported values plus a few f32
    /// steps of the decode and encode arithmetic.
    tolerance: f64,
}

/// One link and the combinations of its features' codes in the training rows.
#[derive(Debug, Clone)]
struct LinkTable {
    kind: LinkKind,
    /// Feature positions.
    features: Vec<usize>,
    /// Count of every combination of codes (in `features` order) the rows hold.
    counts: BTreeMap<Vec<i64>, usize>,
    /// Per link feature, for numeric ones: the encoded value of each code (the smallest seen).
    values: Vec<BTreeMap<i64, f32>>,
}

impl Support {
    /// Collects the observed values and link combinations of `rows`, the row-major encoded
    /// training rows of `encoding` (`encoding.n_cols()` values each; a trailing partial row
    /// is ignored, as are values that are not finite).
    pub fn new(encoding: &Encoding, rows: &[f32]) -> Support {
        let schema = encoding.to_core_schema();
        let features = schema.features().to_vec();
        let n_cols = encoding.n_cols();
        let rows: Vec<&[f32]> = if n_cols == 0 { Vec::new() } else { rows.chunks_exact(n_cols).collect() };
        let observed = features
            .iter()
            .zip(encoding.attributes())
            .map(|(f, a)| {
                let numeric = matches!(f.kind, Kind::Integer | Kind::Continuous);
                (numeric && a.support == ValueSupport::Observed).then(|| Observed::new(f, &rows))
            })
            .collect();
        let links = encoding
            .links()
            .iter()
            .filter(|l| l.features.iter().all(|&j| j < features.len()))
            .map(|l| LinkTable::new(l.kind, &l.features, &features, &rows))
            .collect();
        Support { n_cols, features, observed, links }
    }

    /// The sorted distinct encoded values of feature `feature` when its support is
    /// `observed`; `None` for range support, a categorical or binary feature, or an unknown
    /// index.
    pub fn observed(&self, feature: usize) -> Option<&[f32]> {
        self.observed.get(feature)?.as_ref().map(|o| o.encoded.as_slice())
    }

    /// Number of links.
    pub fn n_links(&self) -> usize {
        self.links.len()
    }

    /// The value to give feature `feature` inside a tree box's interval `lo < v <= hi`
    /// (encoded units, the core's `Bounds::admits`; either end may be infinite): for an
    /// observed-support feature the observed value nearest `value` in the interval (the lower
    /// one on a tie), `None` when no observed value lies in it; any other feature keeps
    /// `value`. `None` for an unknown index.
    pub fn snap(&self, feature: usize, value: f32, lo: f32, hi: f32) -> Option<f32> {
        match self.observed.get(feature)? {
            Some(o) => o.nearest_in(value, lo, hi),
            None => Some(value),
        }
    }

    /// Makes `cand`, a counterfactual of `x`, satisfy every link, links in schema order:
    /// - `one_to_one`: when exactly one of the two features differs from `x`, the other takes
    ///   the value the training rows pair with the new one (the most frequent partner; the
    ///   smallest code on a tie); when both differ, their pair must be observed;
    /// - `observed_combinations`: when the combination is not observed, it becomes the
    ///   observed combination that keeps every feature `cand` changed from `x` and changes the
    ///   fewest others (ties: the most frequent, then the smallest codes).
    ///
    /// A link none of whose features differs from `x` is left alone (a factual's own values
    /// are real even when the training rows lack them). Returns `false` when a link cannot be
    /// satisfied while keeping the changed values (the candidate is then to be dropped; `cand`
    /// may be partly rewritten), or when `x` or `cand` has the wrong length.
    ///
    /// A repair may change a feature the query holds fixed (relationship `Husband` needs sex
    /// `Male`): it does not look at constraints, so the caller re-checks the repaired row
    /// against them and rejects it then.
    pub fn repair(&self, x: &[f32], cand: &mut [f32]) -> bool {
        if x.len() != self.n_cols || cand.len() != self.n_cols {
            return false;
        }
        // A later link may undo an earlier one's repair; a few passes settle shared features.
        for _ in 0..=self.links.len() {
            if !self.links.iter().all(|l| l.repair(&self.features, x, cand)) {
                return false;
            }
            if self.links.iter().all(|l| l.settled(&self.features, x, cand)) {
                return true;
            }
        }
        false
    }

    /// Number of links `row` breaks: its pair or combination of values never occurs in the
    /// training rows (or cannot be read: wrong length, no single hot category). A row of the
    /// wrong length breaks every link.
    pub fn link_violations(&self, row: &[f32]) -> usize {
        if row.len() != self.n_cols {
            return self.links.len();
        }
        self.links.iter().filter(|l| !l.codes(&self.features, row).is_some_and(|c| l.counts.contains_key(&c))).count()
    }

    /// Among the observed-support features whose value changed from `x` to `cand`, how many
    /// hold a value no training row has, and how many changed: `(unseen, changed)`.
    ///
    /// Values are compared decoded (integers rounded), continuous ones within the four-decimal
    /// rounding of reported values plus a few f32 steps, so a value that went through `Encoding::decode`, four-decimal
    /// rounding and `Encoding::encode_row` still matches. With `x` or `cand` of the wrong
    /// length every observed-support feature counts as changed and unseen.
    pub fn unseen(&self, x: &[f32], cand: &[f32]) -> (usize, usize) {
        let observed = self.features.iter().zip(&self.observed).filter_map(|(f, o)| Some((f, o.as_ref()?)));
        if x.len() != self.n_cols || cand.len() != self.n_cols {
            let n = observed.count();
            return (n, n);
        }
        let (mut unseen, mut changed) = (0, 0);
        for (f, o) in observed {
            let col = f.col as usize;
            let (before, after) = (decoded(f, x[col]), decoded(f, cand[col]));
            if (before - after).abs() <= o.tolerance {
                continue;
            }
            changed += 1;
            unseen += usize::from(!o.contains(after));
        }
        (unseen, changed)
    }
}

impl Observed {
    fn new(f: &core::Feature, rows: &[&[f32]]) -> Observed {
        let col = f.col as usize;
        let mut encoded: Vec<f32> = rows.iter().filter_map(|r| r.get(col).copied()).filter(|v| v.is_finite()).collect();
        encoded.sort_by(f32::total_cmp);
        encoded.dedup();
        let mut decoded: Vec<f64> = encoded.iter().map(|&v| decoded(f, v)).collect();
        decoded.sort_by(f64::total_cmp);
        decoded.dedup();
        let tolerance = match f.kind {
            Kind::Integer => 0.0,
            _ => 6e-5 + 8.0 * f64::from(f32::EPSILON) * (f64::from(f.min).abs() + f64::from(f.max).abs()),
        };
        Observed { encoded, decoded, tolerance }
    }

    /// The value nearest `value` with `lo < v <= hi`; the lower one on a tie.
    fn nearest_in(&self, value: f32, lo: f32, hi: f32) -> Option<f32> {
        let start = self.encoded.partition_point(|&v| v <= lo);
        let end = self.encoded.partition_point(|&v| v <= hi);
        let inside = self.encoded.get(start..end).filter(|s| !s.is_empty())?;
        let i = inside.partition_point(|&v| v < value);
        match (i.checked_sub(1).and_then(|k| inside.get(k)), inside.get(i)) {
            (Some(&below), Some(&above)) => Some(if value - below <= above - value { below } else { above }),
            (Some(&v), None) | (None, Some(&v)) => Some(v),
            (None, None) => None,
        }
    }

    /// Whether a decoded value is one of the observed ones.
    fn contains(&self, value: f64) -> bool {
        if !value.is_finite() {
            return false;
        }
        let i = self.decoded.partition_point(|&v| v < value - self.tolerance);
        self.decoded.get(i).is_some_and(|&v| v <= value + self.tolerance)
    }
}

impl LinkTable {
    fn new(kind: LinkKind, features: &[usize], layout: &[core::Feature], rows: &[&[f32]]) -> LinkTable {
        let mut table =
            LinkTable { kind, features: features.to_vec(), counts: BTreeMap::new(), values: vec![BTreeMap::new(); features.len()] };
        for row in rows {
            let Some(codes) = table.codes(layout, row) else { continue };
            for ((values, &j), &c) in table.values.iter_mut().zip(features).zip(&codes) {
                let f = &layout[j];
                if matches!(f.kind, Kind::Integer | Kind::Continuous) {
                    let v = row[f.col as usize];
                    values.entry(c).and_modify(|w: &mut f32| *w = w.min(v)).or_insert(v);
                }
            }
            *table.counts.entry(codes).or_default() += 1;
        }
        table
    }

    /// The codes of the link's features in `row`.
    fn codes(&self, layout: &[core::Feature], row: &[f32]) -> Option<Vec<i64>> {
        self.features.iter().map(|&j| code(layout.get(j)?, row)).collect()
    }

    /// True when `cand` satisfies the link or holds `x`'s values on all its features.
    fn settled(&self, layout: &[core::Feature], x: &[f32], cand: &[f32]) -> bool {
        match (self.codes(layout, x), self.codes(layout, cand)) {
            (before, Some(now)) => before.as_ref() == Some(&now) || self.counts.contains_key(&now),
            (_, None) => false,
        }
    }

    /// Rewrites `cand` to satisfy this link (see [`Support::repair`]); false when it cannot.
    fn repair(&self, layout: &[core::Feature], x: &[f32], cand: &mut [f32]) -> bool {
        let (Some(before), Some(now)) = (self.codes(layout, x), self.codes(layout, cand)) else { return false };
        let changed: Vec<bool> = before.iter().zip(&now).map(|(a, b)| a != b).collect();
        if !changed.contains(&true) || (self.kind == LinkKind::ObservedCombinations && self.counts.contains_key(&now)) {
            return true;
        }
        let target = match (self.kind, changed.as_slice()) {
            (LinkKind::OneToOne, &[true, false]) => self.partner(0, now[0]).map(|p| vec![now[0], p]),
            (LinkKind::OneToOne, &[false, true]) => self.partner(1, now[1]).map(|p| vec![p, now[1]]),
            (LinkKind::OneToOne, _) => self.counts.contains_key(&now).then(|| now.clone()),
            (LinkKind::ObservedCombinations, _) => self.closest(&now, &changed).cloned(),
        };
        let Some(target) = target else { return false };
        self.features.iter().enumerate().filter(|&(k, _)| target[k] != now[k]).all(|(k, &j)| {
            layout.get(j).is_some_and(|f| write(f, target[k], &self.values[k], cand))
        })
    }

    /// The code the rows pair most often with code `c` of side `side` of a two-feature link
    /// (the smallest on a tie).
    fn partner(&self, side: usize, c: i64) -> Option<i64> {
        let other = 1 - side;
        let mut best: Option<(usize, i64)> = None;
        for (pair, &n) in self.counts.iter().filter(|(pair, _)| pair[side] == c) {
            if best.is_none_or(|(m, p)| n > m || (n == m && pair[other] < p)) {
                best = Some((n, pair[other]));
            }
        }
        best.map(|(_, p)| p)
    }

    /// The observed combination that keeps every changed code of `now` and differs from it
    /// in the fewest other places; ties: the most frequent, then the smallest codes.
    fn closest(&self, now: &[i64], changed: &[bool]) -> Option<&Vec<i64>> {
        self.counts
            .iter()
            .filter(|(t, _)| t.iter().zip(now).zip(changed).all(|((a, b), &fixed)| !fixed || a == b))
            .min_by_key(|&(t, &n)| (t.iter().zip(now).filter(|(a, b)| a != b).count(), Reverse(n)))
            .map(|(t, _)| t)
    }
}

/// A raw value in decoded units: integers rounded.
fn decoded(f: &core::Feature, v: f32) -> f64 {
    let raw = f64::from(f.decode(v));
    if f.kind == Kind::Integer { raw.round() } else { raw }
}

/// The value of feature `f` in `row` as a code: the category's index, a binary feature's 0/1,
/// an integer's decoded value, a continuous value decoded in units of 1e-4. `None` when the
/// row is too short, the value not finite, or a group has not exactly one hot column.
fn code(f: &core::Feature, row: &[f32]) -> Option<i64> {
    let v = *row.get(f.col as usize)?;
    match f.kind {
        Kind::Categorical => core::category(f, row).map(i64::from),
        _ if !v.is_finite() => None,
        Kind::Binary => Some(i64::from(v >= 0.5)),
        Kind::Integer => Some(decoded(f, v) as i64),
        Kind::Continuous => Some((decoded(f, v) * 1e4).round() as i64),
    }
}

/// Writes code `c` of feature `f` into `row`; numeric codes take their encoded value from
/// `values`. False when the code has no encoded form or the row is too short.
fn write(f: &core::Feature, c: i64, values: &BTreeMap<i64, f32>, row: &mut [f32]) -> bool {
    match f.kind {
        Kind::Categorical => {
            let (Some(cols), Ok(k)) = (row.get_mut(f.columns()), usize::try_from(c)) else { return false };
            if k >= cols.len() {
                return false;
            }
            cols.fill(0.0);
            cols[k] = 1.0;
            true
        }
        Kind::Binary => set(row, f.col as usize, if c == 0 { 0.0 } else { 1.0 }),
        Kind::Integer | Kind::Continuous => values.get(&c).is_some_and(|&v| set(row, f.col as usize, v)),
    }
}

fn set(row: &mut [f32], col: usize, v: f32) -> bool {
    row.get_mut(col).map(|slot| *slot = v).is_some()
}
