//! Data support: the numeric values and the combinations of values that the training rows
//! hold, so that a counterfactual can be kept to them by construction and measured against
//! them afterwards.
//!
//! Two declarations of the schema feed it (see `data/README.md`):
//! - `support = "observed"` on a numeric feature (the default for integer features): a
//!   counterfactual value must be one some training row has ([`Support::snap`],
//!   [`Support::unseen`]), and not one of the feature's `codes` (a state, not an amount);
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
use cent_nostd::bundle::{LinkParts, SupportParts};
use cent_nostd::capacity::VALUES;
use cent_nostd::schema::{self as core, Kind};
use serde::Serialize;
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
    /// Count of every combination of codes (in `features` order) the rows hold, those held by
    /// fewer than the link's `min_rows` left out.
    counts: BTreeMap<Vec<i64>, usize>,
    /// Per link feature, for numeric ones: the encoded value of each code (the smallest seen).
    values: Vec<BTreeMap<i64, f32>>,
}

impl Support {
    /// Support of `columns`-wide rows that asks nothing: no observed values, no links (every
    /// value and combination is accepted). For data described without a schema.
    pub fn none(columns: usize) -> Support {
        Support { n_cols: columns, features: Vec::new(), observed: Vec::new(), links: Vec::new() }
    }

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
                (numeric && a.support == ValueSupport::Observed).then(|| Observed::new(f, &rows, &a.codes))
            })
            .collect();
        let links = encoding
            .links()
            .iter()
            .filter(|l| l.features.iter().all(|&j| j < features.len()))
            .map(|l| LinkTable::new(l.kind, &l.features, l.min_rows, &features, &rows))
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

    /// Rewrites `cand`, a counterfactual of `x`, so that each link of categorical and binary
    /// features it touches holds the
    /// combination the training rows hold most often among those that keep every feature of
    /// the link `cand` changed and every feature `fixed` marks (by feature index) at `x`'s
    /// value: the way most people with the new values live (married people are mostly a
    /// husband or a wife, not a child of the household). True when `cand` changed; `cand` is
    /// left as it was otherwise.
    pub fn typical(&self, x: &[f32], cand: &mut [f32], fixed: &[bool]) -> bool {
        if x.len() != self.n_cols || cand.len() != self.n_cols {
            return false;
        }
        // Each link looks at the changes of `cand` as it came: a value one link rewrites does
        // not make the next link (sharing that feature) rewrite its own.
        let before = cand.to_vec();
        // Links of categories only: a sequence of numbers (a repayment history) has no
        // "typical" partner value to speak of.
        let categorical = |l: &&LinkTable| {
            l.features
                .iter()
                .all(|&j| self.features.get(j).is_some_and(|f| matches!(f.kind, Kind::Categorical | Kind::Binary)))
        };
        for l in self.links.iter().filter(categorical) {
            if !l.typical(&self.features, x, &before, cand, fixed) {
                cand.copy_from_slice(&before);
                return false;
            }
        }
        cand != before.as_slice()
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

    /// Number of links `cand` breaks that `x` does not hold as it is: the links a move from `x`
    /// to `cand` makes false. A person whose own combination is rare keeps it; a counterfactual
    /// may not create one. A row of the wrong length breaks every link.
    pub fn broken(&self, x: &[f32], cand: &[f32]) -> usize {
        if x.len() != self.n_cols || cand.len() != self.n_cols {
            return self.links.len();
        }
        self.links.iter().filter(|l| !l.settled(&self.features, x, cand)).count()
    }

    /// The links that tie changes of the move from `x` to `cand` into one, each as its changed
    /// features (positions, in the link's order): a link ties them when setting one of them
    /// back to `x`'s value alone would break it (a one-to-one pair split, a combination too few
    /// training rows hold). Changes of one link that each hold without the others are not tied:
    /// each was made for its own sake (a divorcee who moves out of a household of their own
    /// could do either alone). Empty when `x` or `cand` has the wrong length.
    pub fn ties(&self, x: &[f32], cand: &[f32]) -> Vec<Vec<usize>> {
        if x.len() != self.n_cols || cand.len() != self.n_cols {
            return Vec::new();
        }
        let mut back = cand.to_vec();
        let mut out = Vec::new();
        for l in &self.links {
            let moved: Vec<usize> = l
                .features
                .iter()
                .copied()
                .filter(|&j| self.features.get(j).is_some_and(|f| x.get(f.columns()) != cand.get(f.columns())))
                .collect();
            if moved.len() < 2 {
                continue;
            }
            let tied = moved.iter().any(|&j| {
                let cols = self.features[j].columns();
                back.copy_from_slice(cand);
                back[cols.clone()].copy_from_slice(&x[cols]);
                !l.settled(&self.features, x, &back)
            });
            if tied {
                out.push(moved);
            }
        }
        out
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

/// The support in the device bundle's form ([`cent_nostd::support`]), owning its bytes: per
/// feature its observed values (a feature with more than [`VALUES`] keeps that many, evenly
/// spaced in rank from its smallest to its largest: every one still a value people have), and
/// per link its combinations, most frequent first (then by code), as the codes the device
/// compares: a category's index, a binary's 0 or 1, a number's encoded value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceSupport {
    counts: Vec<u16>,
    values: Vec<u8>,
    links: Vec<(Vec<u16>, Vec<u8>)>,
    /// Features whose values were thinned to [`VALUES`].
    thinned: usize,
}

/// What a [`DeviceSupport`] holds, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct DeviceSupportSummary {
    /// Features that keep to observed values, and how many values they keep in all.
    pub features: usize,
    pub values: usize,
    /// Of those features, how many had more than [`VALUES`] and were thinned.
    pub thinned: usize,
    /// Links, and their combinations in all.
    pub links: usize,
    pub combinations: usize,
}

impl DeviceSupport {
    /// Counts of what this support holds.
    pub fn summary(&self) -> DeviceSupportSummary {
        DeviceSupportSummary {
            features: self.counts.iter().filter(|&&n| n > 0).count(),
            values: self.counts.iter().map(|&n| n as usize).sum(),
            thinned: self.thinned,
            links: self.links.len(),
            combinations: self.links.iter().map(|(f, c)| c.len() / (4 * f.len().max(1))).sum(),
        }
    }

    /// The wire parts, borrowing the bytes; `None` when a link or a count exceeds the device's
    /// capacities.
    pub fn parts(&self) -> Option<SupportParts<'_>> {
        let mut links = heapless::Vec::new();
        for (features, combinations) in &self.links {
            let features = heapless::Vec::from_slice(features).ok()?;
            links.push(LinkParts { features, combinations }).ok()?;
        }
        Some(SupportParts { counts: heapless::Vec::from_slice(&self.counts).ok()?, values: &self.values, links })
    }
}

impl Support {
    /// This support in the device bundle's form (see [`DeviceSupport`]).
    pub fn device(&self) -> DeviceSupport {
        let le = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut out = DeviceSupport::default();
        if self.observed.iter().any(Option::is_some) {
            for o in &self.observed {
                let v = o.as_ref().map_or(&[][..], |o| o.encoded.as_slice());
                let kept: Vec<f32> = if v.len() > VALUES {
                    out.thinned += 1;
                    (0..VALUES).map(|i| v[i * (v.len() - 1) / (VALUES - 1)]).collect()
                } else {
                    v.to_vec()
                };
                out.counts.push(kept.len() as u16);
                out.values.extend(le(&kept));
            }
        }
        for l in &self.links {
            let mut rows: Vec<(&Vec<i64>, usize)> = l.counts.iter().map(|(c, &n)| (c, n)).collect();
            rows.sort_by_key(|&(c, n)| (Reverse(n), c.clone()));
            let mut flat = Vec::new();
            for (codes, _) in rows {
                for (k, (&c, &j)) in codes.iter().zip(&l.features).enumerate() {
                    let v = match self.features[j].kind {
                        Kind::Integer | Kind::Continuous => l.values[k].get(&c).copied().unwrap_or(f32::NAN),
                        _ => c as f32,
                    };
                    flat.push(v);
                }
            }
            out.links.push((l.features.iter().map(|&j| j as u16).collect(), le(&flat)));
        }
        out
    }
}

impl Observed {
    /// The values of `f` in `rows`, less the schema's `codes` (a state is not a value to move
    /// an amount to).
    fn new(f: &core::Feature, rows: &[&[f32]], codes: &[(i64, String)]) -> Observed {
        let col = f.col as usize;
        let code = |v: f32| codes.iter().any(|&(c, _)| c as f64 == decoded(f, v));
        let mut encoded: Vec<f32> =
            rows.iter().filter_map(|r| r.get(col).copied()).filter(|&v| v.is_finite() && !code(v)).collect();
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
    fn new(
        kind: LinkKind,
        features: &[usize],
        min_rows: usize,
        layout: &[core::Feature],
        rows: &[&[f32]],
    ) -> LinkTable {
        let mut table = LinkTable {
            kind,
            features: features.to_vec(),
            counts: BTreeMap::new(),
            values: vec![BTreeMap::new(); features.len()],
        };
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
        // A combination too few rows hold is one nobody has: as if no row held it.
        table.counts.retain(|_, n| *n >= min_rows);
        table
    }

    /// The codes of the link's features in `row`.
    fn codes(&self, layout: &[core::Feature], row: &[f32]) -> Option<Vec<i64>> {
        self.features.iter().map(|&j| code(layout.get(j)?, row)).collect()
    }

    /// True when `cand` holds `x`'s encoded values on every feature of the link (compared as
    /// slices: no decoding, no allocation).
    fn untouched(&self, layout: &[core::Feature], x: &[f32], cand: &[f32]) -> bool {
        self.features.iter().all(|&j| layout.get(j).is_some_and(|f| x.get(f.columns()) == cand.get(f.columns())))
    }

    /// True when `cand` satisfies the link or holds `x`'s values on all its features.
    fn settled(&self, layout: &[core::Feature], x: &[f32], cand: &[f32]) -> bool {
        if self.untouched(layout, x, cand) {
            return true;
        }
        match (self.codes(layout, x), self.codes(layout, cand)) {
            (before, Some(now)) => before.as_ref() == Some(&now) || self.counts.contains_key(&now),
            (_, None) => false,
        }
    }

    /// Rewrites `cand` to satisfy this link (see [`Support::repair`]); false when it cannot.
    fn repair(&self, layout: &[core::Feature], x: &[f32], cand: &mut [f32]) -> bool {
        if self.untouched(layout, x, cand) {
            return true;
        }
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
        self.features
            .iter()
            .enumerate()
            .filter(|&(k, _)| target[k] != now[k])
            .all(|(k, &j)| layout.get(j).is_some_and(|f| write(f, target[k], &self.values[k], cand)))
    }

    /// [`Support::typical`] for this link; false when a value cannot be written.
    fn typical(&self, layout: &[core::Feature], x: &[f32], came: &[f32], cand: &mut [f32], fixed: &[bool]) -> bool {
        if self.untouched(layout, x, came) {
            return true;
        }
        let (Some(before), Some(now)) = (self.codes(layout, x), self.codes(layout, came)) else { return false };
        // A changed value stays; a fixed feature keeps `x`'s; the others may take any.
        let keep = |k: usize, t: &[i64]| {
            let fixed = fixed.get(self.features[k]).copied().unwrap_or(false);
            (before[k] == now[k] || t[k] == now[k]) && (!fixed || t[k] == before[k])
        };
        let best = self
            .counts
            .iter()
            .filter(|(t, _)| (0..t.len()).all(|k| keep(k, t)))
            .max_by_key(|&(t, &n)| (n, Reverse(t.clone())))
            .map(|(t, _)| t.clone());
        let Some(target) = best else { return true };
        self.features
            .iter()
            .enumerate()
            .filter(|&(k, _)| target[k] != now[k])
            .all(|(k, &j)| layout.get(j).is_some_and(|f| write(f, target[k], &self.values[k], cand)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Input, Schema, Table, Value};

    const SCHEMA: &str = r#"
name = "toy"
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
[[feature]]
name = "age"
kind = "integer"
[[feature]]
name = "gain"
kind = "continuous"
support = "observed"
[[feature]]
name = "hours"
kind = "continuous"
[[feature]]
name = "status"
kind = "categorical"
categories = ["single", "married", "divorced"]
[[feature]]
name = "role"
kind = "categorical"
categories = ["husband", "wife", "child", "alone"]
[[feature]]
name = "sex"
kind = "binary"
categories = ["f", "m"]
[[feature]]
name = "edu"
kind = "categorical"
categories = ["hs", "ba", "ma"]
[[feature]]
name = "years"
kind = "integer"
[[link]]
kind = "observed_combinations"
features = ["status", "role", "sex"]
[[link]]
kind = "one_to_one"
features = ["edu", "years"]
"#;

    const CSV: &str = "\
age,gain,hours,status,role,sex,edu,years,y
30,0,40,married,husband,m,hs,12,0
35,100.5,45,married,wife,f,ba,16,1
20,0,20,single,child,m,hs,12,0
22,0,25,single,child,f,ma,18,1
50,2000.25,38,divorced,alone,f,ba,16,0
45,0,50,divorced,alone,m,ma,18,1
40,100.5,40,married,husband,m,ba,16,1
60,0,10,single,alone,f,hs,12,0
33,0,30,married,wife,f,ba,15,0
21,0,20,single,child,m,hs,12,0
";

    const AGE: usize = 0;
    const GAIN: usize = 1;
    const HOURS: usize = 2;
    const STATUS: usize = 3;
    const ROLE: usize = 4;
    const SEX: usize = 5;
    const EDU: usize = 6;
    const YEARS: usize = 7;

    struct Toy {
        table: Table,
        encoding: Encoding,
        rows: Vec<f32>,
        support: Support,
    }

    fn toy() -> Toy {
        built(SCHEMA, CSV)
    }

    /// The rows of `csv` under `schema`, encoded, and their support.
    fn built(schema: &str, csv: &str) -> Toy {
        let schema = Schema::from_toml(schema, "toy.toml").unwrap();
        let input = Input { name: "toy.csv".into(), bytes: csv.as_bytes().to_vec(), skip_lines: 0 };
        let table = Table::read(&schema, &[input]).unwrap();
        let all: Vec<usize> = (0..table.len()).collect();
        let encoding = Encoding::fit(&table, &all).unwrap();
        let rows = encoding.encode_rows(&table, &all).unwrap().data;
        let support = Support::new(&encoding, &rows);
        Toy { table, encoding, rows, support }
    }

    impl Toy {
        fn input(&self) -> Input {
            Input { name: "toy.csv".into(), bytes: CSV.as_bytes().to_vec(), skip_lines: 0 }
        }

        fn row(&self, i: usize) -> Vec<f32> {
            self.encoding.encode_row(self.table.row(i)).unwrap()
        }

        /// Row `i` with some raw values replaced.
        fn with(&self, i: usize, changes: &[(usize, Value)]) -> Vec<f32> {
            let mut raw = self.table.row(i).to_vec();
            for &(j, v) in changes {
                raw[j] = v;
            }
            self.encoding.encode_row(&raw).unwrap()
        }

        fn raw(&self, x: &[f32]) -> Vec<Value> {
            self.encoding.decode(x).unwrap()
        }

        fn cat(&self, feature: usize, name: &str) -> Value {
            Value::Category(self.encoding.category_index(feature, name).unwrap())
        }

        /// The toy rows' encoding and support under `text`, a variant of [`SCHEMA`].
        fn variant(&self, text: &str) -> (Encoding, Support) {
            let schema = Schema::from_toml(text, "toy.toml").unwrap();
            let all: Vec<usize> = (0..self.table.len()).collect();
            let encoding = Encoding::fit(&Table::read(&schema, &[self.input()]).unwrap(), &all).unwrap();
            let support = Support::new(&encoding, &self.rows);
            (encoding, support)
        }

        fn enc(&self, feature: usize, raw: f32) -> f32 {
            self.encoding.feature(feature).unwrap().encode(raw)
        }
    }

    #[test]
    fn test_observed_values_per_support() {
        let t = toy();
        let ages: Vec<f32> =
            [20.0, 21.0, 22.0, 30.0, 33.0, 35.0, 40.0, 45.0, 50.0, 60.0].map(|a| t.enc(AGE, a)).to_vec();
        assert_eq!(t.support.observed(AGE).unwrap(), ages.as_slice());
        let gains = t.support.observed(GAIN).unwrap();
        assert_eq!(gains.len(), 3);
        assert!((gains[1] - t.enc(GAIN, 100.5)).abs() < 1e-7 && gains[2] == 1.0, "{gains:?}");
        assert_eq!(t.support.observed(YEARS).unwrap().len(), 4);
        assert!(t.support.observed(HOURS).is_none(), "continuous defaults to range");
        assert!(t.support.observed(STATUS).is_none() && t.support.observed(SEX).is_none());
        assert!(t.support.observed(99).is_none());
        assert_eq!(t.support.n_links(), 2);
    }

    #[test]
    fn test_snap_matches_brute_force_and_admits_semantics() {
        let t = toy();
        let observed = t.support.observed(AGE).unwrap().to_vec();
        let brute = |value: f32, lo: f32, hi: f32| {
            let inside = observed.iter().copied().filter(|&v| v > lo && v <= hi);
            inside.fold(None, |best: Option<f32>, v| match best {
                Some(b) if (b - value).abs() <= (v - value).abs() => Some(b),
                _ => Some(v),
            })
        };
        let grid: Vec<f32> = (-2..=12).map(|k| k as f32 / 10.0).chain(observed.iter().copied()).collect();
        let ends: Vec<f32> = grid.iter().copied().chain([f32::NEG_INFINITY, f32::INFINITY]).collect();
        for &value in &grid {
            for &lo in &ends {
                for &hi in &ends {
                    assert_eq!(
                        t.support.snap(AGE, value, lo, hi),
                        brute(value, lo, hi),
                        "value {value} in ({lo}, {hi}]"
                    );
                }
            }
        }
        // hi is admitted, lo is not.
        let a30 = t.enc(AGE, 30.0);
        assert_eq!(t.support.snap(AGE, 0.0, f32::NEG_INFINITY, a30), Some(t.enc(AGE, 20.0)));
        assert_eq!(t.support.snap(AGE, 1.0, f32::NEG_INFINITY, a30), Some(a30));
        assert_eq!(t.support.snap(AGE, 1.0, a30, t.enc(AGE, 32.0)), None);
        // An age of 31 between 30 and 33 goes to the nearer, 30; 55 lies midway between 50
        // and 60 and goes to the lower.
        assert_eq!(t.support.snap(AGE, t.enc(AGE, 55.0), 0.0, 1.0), Some(t.enc(AGE, 50.0)));
        assert_eq!(t.support.snap(AGE, t.enc(AGE, 31.0), 0.0, 1.0), Some(a30));
        // Range support and categories keep the value; an unknown feature has no answer.
        assert_eq!(t.support.snap(HOURS, 0.123, 0.5, 0.6), Some(0.123));
        assert_eq!(t.support.snap(SEX, 1.0, 0.5, 1.0), Some(1.0));
        assert_eq!(t.support.snap(42, 0.5, 0.0, 1.0), None);
        assert_eq!(t.support.snap(AGE, f32::NAN, 0.0, 1.0), Some(t.enc(AGE, 21.0)));
        assert_eq!(t.support.snap(AGE, 0.5, f32::NAN, f32::NAN), None);
    }

    #[test]
    fn test_training_rows_break_no_link() {
        let t = toy();
        for (i, row) in t.rows.chunks_exact(t.encoding.n_cols()).enumerate() {
            assert_eq!(t.support.link_violations(row), 0, "row {i}");
        }
        let husband = t.with(4, &[(ROLE, t.cat(ROLE, "husband"))]);
        assert_eq!(t.support.link_violations(&husband), 1, "divorced husband");
        let both = t.with(4, &[(ROLE, t.cat(ROLE, "husband")), (YEARS, Value::Number(12.0))]);
        assert_eq!(t.support.link_violations(&both), 2, "and ba with 12 years");
        assert_eq!(t.support.link_violations(&both[1..]), 2, "wrong length breaks every link");
        let mut two_hot = t.row(0);
        two_hot[t.encoding.feature(STATUS).unwrap().col as usize] = 1.0;
        assert_eq!(t.support.link_violations(&two_hot), 1, "status has two hot columns");
    }

    #[test]
    fn test_typical_takes_the_most_common_combination_that_keeps_changes_and_fixed_values() {
        let t = toy();
        let free = [false; 8];
        // A divorced man becomes single: (single, child, m) is held by two rows, the other
        // single combinations by one each; his sex may change or not, the answer is the same.
        let x = t.row(5);
        for fixed in [free, [false, false, false, false, false, true, false, false]] {
            let mut cand = t.with(5, &[(STATUS, t.cat(STATUS, "single"))]);
            assert!(t.support.typical(&x, &mut cand, &fixed));
            let raw = t.raw(&cand);
            assert_eq!(
                (raw[STATUS], raw[ROLE], raw[SEX]),
                (t.cat(STATUS, "single"), t.cat(ROLE, "child"), t.cat(SEX, "m"))
            );
        }
        // A married woman who divorces: with sex fixed, (divorced, alone, f) is the only one.
        let x = t.row(1);
        let mut fixed = free;
        fixed[SEX] = true;
        let mut cand = t.with(1, &[(STATUS, t.cat(STATUS, "divorced"))]);
        assert!(t.support.typical(&x, &mut cand, &fixed));
        assert_eq!((t.raw(&cand)[ROLE], t.raw(&cand)[SEX]), (t.cat(ROLE, "alone"), t.cat(SEX, "f")));
        // Already the most common: nothing to do, `cand` untouched; so for a move outside the
        // link, and for the link of a category and a number (left to `repair`).
        let mut cand = t.with(5, &[(STATUS, t.cat(STATUS, "single")), (ROLE, t.cat(ROLE, "child"))]);
        let before = cand.clone();
        assert!(!t.support.typical(&t.row(5), &mut cand, &free));
        assert_eq!(cand, before);
        let mut longer = t.with(0, &[(HOURS, Value::Number(50.0))]);
        assert!(!t.support.typical(&t.row(0), &mut longer, &free));
        let mut degree = t.with(0, &[(EDU, t.cat(EDU, "ma"))]);
        assert!(!t.support.typical(&t.row(0), &mut degree, &free));
        assert!(!t.support.typical(&t.row(0), &mut [0.0; 3], &free), "wrong length");
    }

    #[test]
    fn test_min_rows_treats_rare_combinations_as_unobserved() {
        // Every (divorced, ...) combination is held by one row: with `min_rows = 2` nobody has it.
        let text = SCHEMA.replace(
            "features = [\"status\", \"role\", \"sex\"]",
            "features = [\"status\", \"role\", \"sex\"]\nmin_rows = 2",
        );
        let t = toy();
        let (_, support) = t.variant(&text);
        let divorced = t.row(4);
        assert_eq!((t.support.link_violations(&divorced), support.link_violations(&divorced)), (0, 1));
        // A person whose own combination is rare keeps it when other features move.
        let longer = t.with(4, &[(HOURS, Value::Number(50.0))]);
        assert_eq!(support.broken(&divorced, &longer), 0);
        // A husband who divorces has no repair left; one who becomes single does, to a common one.
        let x = t.row(0);
        let mut cand = t.with(0, &[(STATUS, t.cat(STATUS, "divorced"))]);
        assert!(t.support.repair(&x, &mut cand.clone()));
        assert!(!support.repair(&x, &mut cand));
        let mut cand = t.with(5, &[(STATUS, t.cat(STATUS, "single"))]);
        assert!(support.repair(&t.row(5), &mut cand));
        assert_eq!((t.raw(&cand)[ROLE], t.raw(&cand)[SEX]), (t.cat(ROLE, "child"), t.cat(SEX, "m")));
        assert_eq!(support.broken(&t.row(5), &cand), 0);
    }

    #[test]
    fn test_a_code_is_no_value_to_move_to_and_reads_with_its_meaning() {
        // Years 18 is declared a code: kept out of the observed values, so an answer can only
        // keep it (a factual's own) or leave it, never move to it.
        let text = SCHEMA.replace(
            "name = \"years\"\nkind = \"integer\"",
            "name = \"years\"\nkind = \"integer\"\ncodes = { \"18\" = \"still at school\" }",
        );
        let t = toy();
        let (encoding, support) = t.variant(&text);
        let (y16, y18) = (t.enc(YEARS, 16.0), t.enc(YEARS, 18.0));
        assert_eq!(t.support.observed(YEARS).unwrap().len(), 4);
        assert_eq!(support.observed(YEARS).unwrap().len(), 3);
        assert!(!support.observed(YEARS).unwrap().contains(&y18));
        // Snapping passes over the code: the nearest value left, or none in the interval.
        assert_eq!(support.snap(YEARS, y18, y16, 1.0), None);
        assert_eq!(support.snap(YEARS, y18, 0.0, 1.0), Some(y16));
        assert_eq!(t.support.snap(YEARS, y18, 0.0, 1.0), Some(y18));
        // Moving to the code is an unseen value; keeping or leaving a factual's own is not.
        let x = t.row(0);
        let to_code = t.with(0, &[(YEARS, Value::Number(18.0))]);
        assert_eq!(support.unseen(&x, &to_code), (1, 1));
        assert_eq!(t.support.unseen(&x, &to_code), (0, 1));
        let own = t.row(3);
        assert_eq!(support.unseen(&own, &t.with(3, &[(HOURS, Value::Number(30.0))])), (0, 0));
        assert_eq!(support.unseen(&own, &t.with(3, &[(YEARS, Value::Number(16.0))])), (0, 1));
        // Reports name the code's meaning for people to read; as data it stays a number.
        assert_eq!(encoding.describe_value(YEARS, Value::Number(18.0)), "18 (still at school)");
        assert_eq!(encoding.code_meaning(YEARS, Value::Number(18.0)), Some("still at school"));
        assert_eq!(encoding.format_value(YEARS, Value::Number(18.0)), "18");
        assert_eq!(encoding.describe_value(YEARS, Value::Number(16.0)), "16");
        assert_eq!(t.encoding.describe_value(YEARS, Value::Number(18.0)), "18");
    }

    #[test]
    fn test_repair_combination_keeps_changes_and_changes_fewest() {
        let t = toy();
        // Married husband divorces: (divorced, husband, m) never occurs; (divorced, alone, m)
        // changes one more feature, (divorced, alone, f) two.
        let x = t.row(0);
        let mut cand = t.with(0, &[(STATUS, t.cat(STATUS, "divorced"))]);
        assert!(t.support.repair(&x, &mut cand));
        let raw = t.raw(&cand);
        assert_eq!(
            (raw[STATUS], raw[ROLE], raw[SEX]),
            (t.cat(STATUS, "divorced"), t.cat(ROLE, "alone"), t.cat(SEX, "m"))
        );
        assert_eq!(cand[..3], x[..3], "features outside the link are untouched");
        // A husband who becomes a wife must become female: the caller's constraint check
        // rejects that when sex is immutable, repair just reports the repaired row.
        let mut cand = t.with(0, &[(ROLE, t.cat(ROLE, "wife"))]);
        assert!(t.support.repair(&x, &mut cand));
        assert_eq!(t.raw(&cand)[SEX], t.cat(SEX, "f"));
        // Two equally small repairs: (single, child, m) occurs twice, (single, alone, f) once.
        let x = t.row(5);
        let mut cand = t.with(5, &[(STATUS, t.cat(STATUS, "single"))]);
        assert!(t.support.repair(&x, &mut cand));
        let raw = t.raw(&cand);
        assert_eq!((raw[ROLE], raw[SEX]), (t.cat(ROLE, "child"), t.cat(SEX, "m")));
        // No observed combination keeps both changes.
        let x = t.row(0);
        let mut cand = t.with(0, &[(STATUS, t.cat(STATUS, "divorced")), (ROLE, t.cat(ROLE, "child"))]);
        assert!(!t.support.repair(&x, &mut cand));
    }

    #[test]
    fn test_repair_one_to_one_moves_the_partner() {
        let t = toy();
        let x = t.row(0); // hs, 12
        let repaired = |changes: &[(usize, Value)]| {
            let mut cand = t.with(0, changes);
            t.support.repair(&x, &mut cand).then(|| t.raw(&cand))
        };
        let years = |raw: Option<Vec<Value>>| raw.map(|r| (r[EDU], r[YEARS]));
        assert_eq!(years(repaired(&[(EDU, t.cat(EDU, "ma"))])), Some((t.cat(EDU, "ma"), Value::Number(18.0))));
        // ba pairs with 16 three times and with 15 once: the most frequent wins.
        assert_eq!(years(repaired(&[(EDU, t.cat(EDU, "ba"))])), Some((t.cat(EDU, "ba"), Value::Number(16.0))));
        assert_eq!(years(repaired(&[(YEARS, Value::Number(15.0))])), Some((t.cat(EDU, "ba"), Value::Number(15.0))));
        // Both moved: kept when the pair occurs, refused when it does not.
        let both = [(EDU, t.cat(EDU, "ba")), (YEARS, Value::Number(15.0))];
        assert_eq!(years(repaired(&both)), Some((t.cat(EDU, "ba"), Value::Number(15.0))));
        assert_eq!(repaired(&[(EDU, t.cat(EDU, "ma")), (YEARS, Value::Number(16.0))]), None);
        // A value the data never hold has no partner.
        assert_eq!(repaired(&[(YEARS, Value::Number(13.0))]), None);
        // The repaired years are the training rows' encoded value, bit for bit.
        let mut cand = t.with(0, &[(EDU, t.cat(EDU, "ma"))]);
        assert!(t.support.repair(&x, &mut cand));
        let col = t.encoding.feature(YEARS).unwrap().col as usize;
        assert_eq!(cand[col].to_bits(), t.row(3)[col].to_bits());
    }

    #[test]
    fn test_ties_are_the_changes_a_link_needs_together() {
        let t = toy();
        // A husband who divorces and lives alone: divorced husbands and married men alone
        // never occur, so the two changes are one move.
        let x = t.row(0);
        let cand = t.with(0, &[(STATUS, t.cat(STATUS, "divorced")), (ROLE, t.cat(ROLE, "alone"))]);
        assert_eq!(t.support.ties(&x, &cand), [vec![STATUS, ROLE]]);
        // A one-to-one pair moved together is tied; a feature outside every link is not.
        let cand = t.with(0, &[(EDU, t.cat(EDU, "ma")), (YEARS, Value::Number(18.0)), (AGE, Value::Number(31.0))]);
        assert_eq!(t.support.ties(&x, &cand), [vec![EDU, YEARS]]);
        // One change of a link ties nothing, and rows of the wrong length give no ties.
        let cand = t.with(0, &[(STATUS, t.cat(STATUS, "single"))]);
        assert!(t.support.ties(&x, &cand).is_empty());
        assert!(t.support.ties(&x[1..], &cand).is_empty() && t.support.ties(&x, &x).is_empty());

        // Two changes of one link, each a combination people have alone: not tied.
        let schema = r#"
name = "pairs"
[target]
column = "y"
classes = [{ name = "0", values = ["0"] }, { name = "1", values = ["1"] }]
favourable = "1"
[[feature]]
name = "a"
kind = "categorical"
categories = ["p", "q", "r"]
[[feature]]
name = "b"
kind = "categorical"
categories = ["u", "v"]
[[link]]
kind = "observed_combinations"
features = ["a", "b"]
"#;
        let pairs = built(schema, "a,b,y\np,u,0\np,v,1\nq,u,0\nq,v,1\nr,u,1\n");
        // p,u -> q,v: q,u and p,v both occur.
        assert!(pairs.support.ties(&pairs.row(0), &pairs.row(3)).is_empty());
        // q,v -> r,u: r,v never occurs, so the move of a needs the move of b.
        assert_eq!(pairs.support.ties(&pairs.row(3), &pairs.row(4)), [vec![0, 1]]);
    }

    #[test]
    fn test_repair_leaves_the_factuals_own_values_and_checks_lengths() {
        let t = toy();
        // A factual whose own combination the rows lack: untouched links stay as they are.
        let x = t.with(4, &[(ROLE, t.cat(ROLE, "husband"))]);
        let mut cand = x.clone();
        cand[0] = t.enc(AGE, 45.0);
        assert!(t.support.repair(&x, &mut cand));
        assert_eq!(cand[1..], x[1..]);
        // The factual's own rare combination is no broken link; a move into one is.
        assert_eq!((t.support.link_violations(&cand), t.support.broken(&x, &cand)), (1, 0));
        let y = t.row(4);
        assert_eq!(t.support.broken(&y, &x), 1);
        assert_eq!(t.support.broken(&y, &x[1..]), t.support.n_links());
        assert!(!t.support.repair(&x[1..], &mut cand));
        assert!(!t.support.repair(&x, &mut cand[1..]));
        let mut nan = x.clone();
        nan[t.encoding.feature(YEARS).unwrap().col as usize] = f32::NAN;
        assert!(!t.support.repair(&x, &mut nan));
    }

    #[test]
    fn test_repair_property_changed_values_kept_and_links_hold() {
        let t = toy();
        let n = t.table.len();
        let options: Vec<(usize, Value)> = (0..3)
            .map(|c| (STATUS, Value::Category(c)))
            .chain((0..4).map(|c| (ROLE, Value::Category(c))))
            .chain((0..2).map(|c| (SEX, Value::Category(c))))
            .chain((0..3).map(|c| (EDU, Value::Category(c))))
            .chain([12.0, 15.0, 16.0, 18.0].map(|y| (YEARS, Value::Number(y))))
            .collect();
        for i in 0..n {
            let x = t.row(i);
            for &change in &options {
                let mut cand = t.with(i, &[change]);
                if t.support.repair(&x, &mut cand) {
                    assert_eq!(t.support.link_violations(&cand), 0, "row {i}, {change:?}");
                    assert_eq!(t.raw(&cand)[change.0], change.1, "row {i}: the change is kept");
                } else {
                    // Only a value without partner, or a combination the rows lack entirely, fails.
                    assert!(change.0 == YEARS || change.0 == ROLE || change.0 == STATUS, "row {i}, {change:?}");
                }
            }
        }
    }

    #[test]
    fn test_unseen_counts_changed_observed_features() {
        let t = toy();
        let x = t.row(0);
        assert_eq!(t.support.unseen(&x, &x), (0, 0));
        assert_eq!(t.support.unseen(&x, &t.with(0, &[(AGE, Value::Number(35.0))])), (0, 1));
        assert_eq!(t.support.unseen(&x, &t.with(0, &[(AGE, Value::Number(31.0))])), (1, 1));
        let cand = t.with(0, &[(AGE, Value::Number(31.0)), (GAIN, Value::Number(100.7)), (HOURS, Value::Number(41.3))]);
        assert_eq!(t.support.unseen(&x, &cand), (2, 2), "hours has range support");
        // A value reported the way `explain` reports it: decoded, rounded to four decimals,
        // re-encoded.
        for raw in [100.5, 2000.25] {
            let cand = t.with(0, &[(GAIN, Value::Number(raw))]);
            let rounded: Vec<Value> = t
                .raw(&cand)
                .into_iter()
                .map(|v| match v {
                    Value::Number(n) => Value::Number((n * 1e4).round() / 1e4),
                    c => c,
                })
                .collect();
            let reported = t.encoding.encode_row(&rounded).unwrap();
            assert_eq!(t.support.unseen(&x, &reported), (0, 1), "gain {raw}");
        }
        assert_eq!(t.support.unseen(&x, &t.with(0, &[(GAIN, Value::Number(100.51))])), (1, 1));
        // Integers compare as decoded whole numbers: a value off by a rounding error is the same.
        let mut near = x.clone();
        near[0] = t.enc(AGE, 35.2);
        assert_eq!(t.support.unseen(&x, &near), (0, 1));
        let mut nan = x.clone();
        nan[0] = f32::NAN;
        assert_eq!(t.support.unseen(&x, &nan), (1, 1));
        assert_eq!(t.support.unseen(&x, &x[1..]), (3, 3), "wrong length: every observed feature");
    }

    #[test]
    fn test_unseen_tolerates_the_report_round_trip_of_continuous_values() {
        let schema = Schema::from_toml(
            "name = \"amounts\"\n[target]\ncolumn = \"y\"\nfavourable = \"1\"\n\
             classes = [{ name = \"0\", values = [\"0\"] }, { name = \"1\", values = [\"1\"] }]\n\
             [[feature]]\nname = \"amount\"\nkind = \"continuous\"\nsupport = \"observed\"\n",
            "amounts.toml",
        )
        .unwrap();
        let mut csv = String::from("amount,y\n");
        for k in 0..400 {
            // Seven decimals: more than a report keeps.
            csv.push_str(&format!("{:.7},{}\n", -2.0 + f64::from(k) * 0.0123457 + f64::from(k % 7) * 3e-7, k % 2));
        }
        let input = Input { name: "amounts.csv".into(), bytes: csv.into_bytes(), skip_lines: 0 };
        let table = Table::read(&schema, &[input]).unwrap();
        let all: Vec<usize> = (0..table.len()).collect();
        let encoding = Encoding::fit(&table, &all).unwrap();
        let rows = encoding.encode_rows(&table, &all).unwrap();
        let support = Support::new(&encoding, &rows.data);
        let x = rows.row(0);
        let mut moved = 0;
        for row in rows.rows().skip(1) {
            let Value::Number(n) = encoding.decode(row).unwrap()[0] else { unreachable!() };
            let reported = encoding.encode_row(&[Value::Number((n * 1e4).round() / 1e4)]).unwrap();
            moved += usize::from(reported[0].to_bits() != row[0].to_bits());
            assert_eq!(support.unseen(x, &reported), (0, 1), "{n}");
            let off = encoding.encode_row(&[Value::Number((n * 1e4).round() / 1e4 + 0.001)]).unwrap();
            assert_eq!(support.unseen(x, &off), (1, 1), "{n} + 0.001");
        }
        assert!(moved > 0, "the round trip changes some encoded values");
    }

    #[test]
    fn test_adult_link_holds_on_every_training_row() {
        let schema = crate::data::builtin_schema("adult").unwrap();
        assert_eq!(schema.links().len(), 1);
        let prepared = crate::data::prepare(crate::data::load_adult().unwrap(), crate::data::TEST_FRACTION, 1).unwrap();
        let e = &prepared.encoding;
        let names = |j: &usize| e.attributes()[*j].name.as_str();
        let link = &e.links()[0];
        assert_eq!(link.kind, LinkKind::ObservedCombinations);
        assert_eq!(link.features.iter().map(names).collect::<Vec<_>>(), ["marital-status", "relationship", "sex"]);
        let support = Support::new(e, &prepared.train.data);
        // `min_rows = 30`: the training rows in combinations fewer than 30 rows hold break the
        // link (about 0.4 % of the data), every other row holds it.
        assert_eq!(link.min_rows, 30);
        let rare = prepared.train.rows().filter(|row| support.link_violations(row) > 0).count();
        assert!(rare > 0 && rare * 100 < prepared.train.n_rows(), "{rare} of {}", prepared.train.n_rows());
        // Every integer feature has observed support; capital-gain holds about 120 values.
        let gain = e.feature_index("capital-gain").unwrap();
        assert!((100..=121).contains(&support.observed(gain).unwrap().len()));
        // A married husband who is made divorced breaks the link; repair makes him unmarried
        // or living alone, never a divorced husband.
        let husband = e.category_index(e.feature_index("relationship").unwrap(), "Husband").unwrap();
        let marital = e.feature_index("marital-status").unwrap();
        let divorced = Value::Category(e.category_index(marital, "Divorced").unwrap());
        let i = prepared
            .split
            .train
            .iter()
            .position(|&r| prepared.table.row(r)[e.feature_index("relationship").unwrap()] == Value::Category(husband))
            .unwrap();
        let x = prepared.train.row(i).to_vec();
        let mut raw = e.decode(&x).unwrap();
        raw[marital] = divorced;
        let mut cand = e.encode_row(&raw).unwrap();
        assert_eq!(support.link_violations(&cand), 1);
        assert!(support.repair(&x, &mut cand));
        assert_eq!(support.link_violations(&cand), 0);
        let after = e.decode(&cand).unwrap();
        assert_eq!(after[marital], divorced);
        assert_ne!(after[e.feature_index("relationship").unwrap()], Value::Category(husband));
        assert_eq!(after[e.feature_index("sex").unwrap()], raw[e.feature_index("sex").unwrap()], "sex kept");
    }

    /// The device's support, read from the bundle form [`Support::device`] writes, keeps
    /// candidates to the data exactly as this one does: the same snapped value for every value
    /// and box on a grid, and the same repair (or the same refusal) for every factual and every
    /// change of one or two linked features, numeric partners included.
    #[test]
    fn test_device_support_agrees_with_the_host() {
        let t = toy();
        let schema = crate::profile::device_schema(&t.encoding.to_core_schema()).unwrap();
        let device = t.support.device();
        let parts = device.parts().unwrap();
        let core = parts.to_support(&schema).unwrap();
        assert_eq!(core.links(), t.support.n_links());
        let grid: Vec<f32> = (-2..=22).map(|i| i as f32 * 0.05).collect();
        for j in [AGE, GAIN, HOURS, YEARS] {
            assert_eq!(core.observed(j), t.support.observed(j).map_or(0, <[f32]>::len), "feature {j}");
            for &v in &grid {
                for &lo in &grid {
                    for &hi in grid.iter().filter(|&&hi| hi >= lo) {
                        assert_eq!(
                            core.snap(j, v, lo, hi),
                            t.support.snap(j, v, lo, hi),
                            "feature {j}: {v} in ({lo}, {hi}]"
                        );
                    }
                }
            }
        }
        // Every value each linked feature takes in the rows, as (feature, encoded columns).
        let linked = [STATUS, ROLE, SEX, EDU, YEARS];
        let mut values: Vec<(usize, Vec<f32>)> = Vec::new();
        for i in 0..t.table.len() {
            let row = t.row(i);
            for &j in &linked {
                let cols = row[t.encoding.to_core_schema().features()[j].columns()].to_vec();
                if !values.contains(&(j, cols.clone())) {
                    values.push((j, cols));
                }
            }
        }
        let layout = t.encoding.to_core_schema();
        let put = |row: &mut Vec<f32>, (j, cols): &(usize, Vec<f32>)| {
            row[layout.features()[*j].columns()].copy_from_slice(cols)
        };
        let (mut repaired, mut refused) = (0, 0);
        for i in 0..t.table.len() {
            let x = t.row(i);
            for a in &values {
                for b in values.iter().filter(|b| b.0 > a.0) {
                    for moves in [vec![a], vec![a, b]] {
                        let mut cand = x.clone();
                        moves.iter().for_each(|m| put(&mut cand, m));
                        let (mut host, mut dev) = (cand.clone(), cand.clone());
                        let ok = t.support.repair(&x, &mut host);
                        assert_eq!(core.repair(&schema, &x, &mut dev), ok, "row {i}, {moves:?}");
                        if ok {
                            assert_eq!(dev, host, "row {i}, {moves:?}");
                            assert_eq!(core.broken(&schema, &x, &dev), 0);
                            repaired += usize::from(host != cand);
                        } else {
                            refused += 1;
                        }
                    }
                }
            }
        }
        assert!(repaired > 50 && refused > 50, "the grid exercises both: {repaired} repaired, {refused} refused");
    }

    /// A feature with more observed values than the device keeps is thinned to an evenly spaced
    /// selection of them, smallest and largest included: all still values people have.
    #[test]
    fn test_device_support_thins_long_value_lists_to_observed_values() {
        let prepared = crate::data::prepare(crate::data::load_adult().unwrap(), 0.2, 7).unwrap();
        let e = &prepared.encoding;
        let mut rows = prepared.train.data.clone();
        // Give capital-gain 600 distinct values (each a training row's).
        let gain = e.feature_index("capital-gain").unwrap();
        let col = e.to_core_schema().features()[gain].col as usize;
        for (i, row) in rows.chunks_exact_mut(e.n_cols()).take(600).enumerate() {
            row[col] = i as f32 / 1000.0;
        }
        let host = Support::new(e, &rows);
        let all = host.observed(gain).unwrap();
        assert!(all.len() > VALUES);
        let schema = crate::profile::device_schema(&e.to_core_schema()).unwrap();
        let device = host.device();
        let core = device.parts().unwrap().to_support(&schema).unwrap();
        assert_eq!(core.observed(gain), VALUES);
        let summary = device.summary();
        assert_eq!((summary.thinned, summary.links), (1, 1));
        assert_eq!(summary.values, (0..schema.features().len()).map(|j| core.observed(j)).sum::<usize>());
        let kept: Vec<f32> = (0..VALUES).map(|i| core.value(gain, i).unwrap()).collect();
        assert!(kept.iter().all(|v| all.contains(v)));
        assert_eq!((kept[0], kept[VALUES - 1]), (all[0], all[all.len() - 1]));
    }
}
