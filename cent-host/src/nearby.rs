//! Nearest pool rows, in the encoded space, of points close to one person: how the explainer
//! judges whether a counterfactual lies among people of the target class.
//!
//! Every point the explainer judges differs from the query `x` in a few features. So the
//! squared distances from `x` to every pool row are computed once per query ([`Around::new`]),
//! and a point's distances are those corrected on the features where it differs from `x`
//! ([`Around::nearest`]): one pass over the rows per changed feature, whatever the width of the
//! encoding. A one-hot group is compared by category codes when the pool rows and both points
//! hold exactly one hot column (the squared distance of two different categories is 2), and
//! column by column otherwise. The answer is what a full scan gives, the `k` smallest
//! (squared distance, row id) pairs over every row with ties to the lower row id, up to f32
//! rounding (distances within a few units in the last place may swap).

use crate::profile::Schema;
use cent_nostd::schema::Kind;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// The pool by feature: what [`Around`] reads.
#[derive(Debug, Clone)]
pub struct Rows {
    n: usize,
    features: Vec<Column>,
}

/// One feature's values over the pool, row after row.
#[derive(Debug, Clone)]
enum Column {
    /// A number or a binary value: its encoded column, and the lowest and highest value.
    Number { col: usize, values: Vec<f32>, lo: f32, hi: f32 },
    /// A one-hot group whose every row holds one hot column: that column's index per row.
    Codes { cols: std::ops::Range<usize>, codes: Vec<u16> },
    /// Any other group: its columns, each row after row.
    Columns { cols: std::ops::Range<usize>, values: Vec<Vec<f32>> },
}

/// The hot column of a one-hot slice, when exactly one column is 1 and the others 0.
fn code(cols: &[f32]) -> Option<u16> {
    let mut hot = None;
    for (i, &v) in cols.iter().enumerate() {
        match v {
            0.0 => {}
            1.0 if hot.is_none() => hot = Some(i as u16),
            _ => return None,
        }
    }
    hot
}

impl Rows {
    /// Lays out `rows` (row-major, encoded, `schema.columns()` wide) by feature.
    pub fn new(schema: &Schema, rows: &[f32]) -> Self {
        let width = schema.columns().max(1);
        let n = rows.len() / width;
        let all = || rows.chunks_exact(width);
        let features = schema
            .features()
            .iter()
            .map(|f| {
                let cols = f.columns();
                match f.kind {
                    Kind::Continuous | Kind::Integer | Kind::Binary => {
                        let values: Vec<f32> = all().map(|r| r[cols.start]).collect();
                        let lo = values.iter().copied().fold(f32::INFINITY, f32::min);
                        let hi = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                        Column::Number { col: cols.start, values, lo, hi }
                    }
                    Kind::Categorical => match all().map(|r| code(&r[cols.clone()])).collect::<Option<Vec<u16>>>() {
                        Some(codes) => Column::Codes { cols, codes },
                        None => Column::Columns {
                            values: cols.clone().map(|c| all().map(|r| r[c]).collect()).collect(),
                            cols,
                        },
                    },
                }
            })
            .collect();
        Rows { n, features }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Adds to `d` (one entry per row) `sign` times the squared distance of each row to
    /// `point` on feature `j`.
    fn add(&self, j: usize, point: &[f32], sign: f32, d: &mut [f32]) {
        match &self.features[j] {
            Column::Number { col, values, .. } => {
                let p = point[*col];
                for (d, &v) in d.iter_mut().zip(values) {
                    *d += sign * (p - v) * (p - v);
                }
            }
            Column::Codes { cols, codes } => match code(&point[cols.clone()]) {
                Some(c) => {
                    for (d, &r) in d.iter_mut().zip(codes) {
                        *d += sign * if r == c { 0.0 } else { 2.0 };
                    }
                }
                None => {
                    // The point is not one-hot here: the rows' columns, from their codes.
                    for (k, &p) in point[cols.clone()].iter().enumerate() {
                        for (d, &r) in d.iter_mut().zip(codes) {
                            let v = if usize::from(r) == k { 1.0 } else { 0.0 };
                            *d += sign * (p - v) * (p - v);
                        }
                    }
                }
            },
            Column::Columns { cols, values } => {
                for (&p, column) in point[cols.clone()].iter().zip(values) {
                    for (d, &v) in d.iter_mut().zip(column) {
                        *d += sign * (p - v) * (p - v);
                    }
                }
            }
        }
    }

    /// [`Rows::add`] for the rows `ids` only, `d` holding one entry per id.
    fn add_at(&self, j: usize, point: &[f32], sign: f32, ids: &[u32], d: &mut [f32]) {
        match &self.features[j] {
            Column::Number { col, values, .. } => {
                let p = point[*col];
                for (d, &i) in d.iter_mut().zip(ids) {
                    let v = values[i as usize];
                    *d += sign * (p - v) * (p - v);
                }
            }
            Column::Codes { cols, codes } => match code(&point[cols.clone()]) {
                Some(c) => {
                    for (d, &i) in d.iter_mut().zip(ids) {
                        *d += sign * if codes[i as usize] == c { 0.0 } else { 2.0 };
                    }
                }
                None => {
                    for (k, &p) in point[cols.clone()].iter().enumerate() {
                        for (d, &i) in d.iter_mut().zip(ids) {
                            let v = if usize::from(codes[i as usize]) == k { 1.0 } else { 0.0 };
                            *d += sign * (p - v) * (p - v);
                        }
                    }
                }
            },
            Column::Columns { cols, values } => {
                for (&p, column) in point[cols.clone()].iter().zip(values) {
                    for (d, &i) in d.iter_mut().zip(ids) {
                        let v = column[i as usize];
                        *d += sign * (p - v) * (p - v);
                    }
                }
            }
        }
    }

    /// How much feature `j` can lower a row's squared distance when a point's value there
    /// differs from `x`'s: for a number `(x − v)² − (p − v)²`, which is linear in the row's
    /// value `v` and so largest at the lowest or the highest; for a category 2. Infinite where
    /// the rows or the points are not compared by value or code.
    fn most_gained(&self, j: usize, x: &[f32], point: &[f32]) -> f32 {
        match &self.features[j] {
            Column::Number { col, lo, hi, .. } => {
                let (a, p) = (x[*col], point[*col]);
                let at = |v: f32| (a - v) * (a - v) - (p - v) * (p - v);
                at(*lo).max(at(*hi)).max(0.0)
            }
            Column::Codes { cols, .. } if code(&x[cols.clone()]).is_some() && code(&point[cols.clone()]).is_some() => {
                2.0
            }
            _ => f32::INFINITY,
        }
    }

    fn columns(&self, j: usize) -> std::ops::Range<usize> {
        match &self.features[j] {
            Column::Number { col, .. } => *col..*col + 1,
            Column::Codes { cols, .. } | Column::Columns { cols, .. } => cols.clone(),
        }
    }
}

/// Width of a band of squared distance from `x` ([`Around`] visits rows band by band).
const BAND: f32 = 0.25;
/// Bands at most (they fit a `u8`); the last holds every row farther out.
const BANDS: usize = 64;

/// The squared distances from one point `x` to every row, for the points near it, and the
/// rows in bands of that distance: a point that differs from `x` in a few features is nearer
/// to a row than `x` by at most what those features can give (`Rows::most_gained`), so its
/// search stops at the first band beyond its `k`-th distance plus that.
///
/// The distances are computed once and shared by every handle on them ([`Around::share`]);
/// each handle keeps its own caches, so one query's threads each search with their own.
#[derive(Debug)]
pub struct Around<'r> {
    bands: Arc<Bands<'r>>,
    /// Per feature, its values in the order of `order`, laid out on demand as far as the
    /// searches have come (the few features the points of one query change are read many
    /// times, and only in the nearest bands).
    sorted: Vec<RefCell<Sorted>>,
    /// The answers given so far, by point and `k`: the explainer judges some points more than
    /// once (a candidate, then the same point as the start of its pruning).
    seen: RefCell<Memo>,
}

/// What [`Around::new`] computes, read-only afterwards.
#[derive(Debug)]
struct Bands<'r> {
    rows: &'r Rows,
    x: Vec<f32>,
    /// Row ids by band, nearest band first; band `b` is `order[starts[b]..starts[b + 1]]`.
    order: Vec<u32>,
    starts: Vec<usize>,
    /// The squared distance from `x` of each row of `order`.
    base: Vec<f32>,
    /// Some row holds exactly `x`'s values.
    x_in_rows: bool,
}

/// Row ids by (a point's bits, `k`).
type Memo = HashMap<(Vec<u32>, usize), Vec<u32>>;

/// One feature's values in band order, as far as they are laid out.
#[derive(Debug, Clone)]
enum Sorted {
    Number(Vec<f32>),
    Codes(Vec<u16>),
    /// Read through the ids ([`Rows::add_at`]).
    Unsorted,
}

impl<'r> Around<'r> {
    /// One pass per feature over the rows, and one to band them.
    pub fn new(rows: &'r Rows, x: &[f32]) -> Self {
        let mut dist = vec![0.0; rows.n];
        for j in 0..rows.features.len() {
            rows.add(j, x, 1.0, &mut dist);
        }
        // Each row's band once; the rows placed band by band with their distances.
        let bands: Vec<u8> = dist.iter().map(|&d| (d * (1.0 / BAND)).min((BANDS - 1) as f32) as u8).collect();
        let mut starts = vec![0usize; BANDS + 1];
        for &b in &bands {
            starts[usize::from(b) + 1] += 1;
        }
        for b in 0..BANDS {
            starts[b + 1] += starts[b];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; rows.n];
        let mut base = vec![0.0f32; rows.n];
        for (i, (&b, &d)) in bands.iter().zip(&dist).enumerate() {
            let at = &mut next[usize::from(b)];
            order[*at] = i as u32;
            base[*at] = d;
            *at += 1;
        }
        // A row at distance 0 is in the first band.
        let x_in_rows = base[..starts[1]].contains(&0.0);
        Around::with(Arc::new(Bands { rows, x: x.to_vec(), order, starts, base, x_in_rows }))
    }

    /// Another handle on the same distances, with empty caches of its own: for another thread
    /// of the same query (a handle is not shared between threads, it is sent to one). Its
    /// answers are the same.
    pub fn share(&self) -> Self {
        Around::with(Arc::clone(&self.bands))
    }

    fn with(bands: Arc<Bands<'r>>) -> Self {
        let sorted = bands
            .rows
            .features
            .iter()
            .map(|c| {
                RefCell::new(match c {
                    Column::Number { .. } => Sorted::Number(Vec::new()),
                    Column::Codes { .. } => Sorted::Codes(Vec::new()),
                    Column::Columns { .. } => Sorted::Unsorted,
                })
            })
            .collect();
        Around { bands, sorted, seen: RefCell::default() }
    }

    /// The point the distances were computed from (the query).
    pub fn origin(&self) -> &[f32] {
        &self.bands.x
    }

    /// True when some row holds exactly [`Around::origin`]'s values: the query may be that row.
    pub fn origin_in_rows(&self) -> bool {
        self.bands.x_in_rows
    }

    /// Feature `j`'s values in band order, laid out at least for the first `upto` rows of
    /// `order` (at least doubling what is there, so that a search going band by band lays
    /// each row out once).
    fn sorted(&self, j: usize, upto: usize) -> std::cell::Ref<'_, Sorted> {
        {
            let mut sorted = self.sorted[j].borrow_mut();
            let ids = |have: usize| &self.bands.order[have..upto.max(2 * have).min(self.bands.order.len())];
            match (&mut *sorted, &self.bands.rows.features[j]) {
                (Sorted::Number(laid), Column::Number { values, .. }) if laid.len() < upto => {
                    laid.extend(ids(laid.len()).iter().map(|&i| values[i as usize]));
                }
                (Sorted::Codes(laid), Column::Codes { codes, .. }) if laid.len() < upto => {
                    laid.extend(ids(laid.len()).iter().map(|&i| codes[i as usize]));
                }
                _ => {}
            }
        }
        self.sorted[j].borrow()
    }

    /// The ids of the `k` rows nearest to `point` (squared Euclidean distance over the encoded
    /// columns; ties to the lower id), nearest first. `point` has `x`'s width; any number of
    /// its features may differ from `x`'s, each costing one pass.
    pub fn nearest(&self, point: &[f32], k: usize) -> Vec<u32> {
        let k = k.min(self.bands.rows.n);
        if k == 0 || point.len() != self.bands.x.len() {
            return Vec::new();
        }
        let key = (point.iter().map(|v| v.to_bits()).collect::<Vec<u32>>(), k);
        if let Some(ids) = self.seen.borrow().get(&key) {
            return ids.clone();
        }
        let ids = self.search(point, k);
        self.seen.borrow_mut().insert(key, ids.clone());
        ids
    }

    /// [`Around::nearest`] without the memo.
    fn search(&self, point: &[f32], k: usize) -> Vec<u32> {
        let changed: Vec<usize> = (0..self.bands.rows.features.len())
            .filter(|&j| {
                let cols = self.bands.rows.columns(j);
                point[cols.clone()] != self.bands.x[cols]
            })
            .collect();
        let gain: f32 = changed.iter().map(|&j| self.bands.rows.most_gained(j, &self.bands.x, point)).sum();
        let mut delta: Vec<f32> = Vec::new();
        // The k smallest (distance, id) pairs, sorted.
        let mut top: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
        for b in 0..BANDS {
            // Every row of this band and beyond is at least this far from `x`; rounding aside
            // (the slack), no nearer than that less `gain` from `point`.
            let floor = b as f32 * BAND - gain - 1e-3;
            if top.len() == k && floor > top[k - 1].0 {
                break;
            }
            let band = self.bands.starts[b]..self.bands.starts[b + 1];
            if band.is_empty() {
                continue;
            }
            let ids = &self.bands.order[band.clone()];
            delta.clear();
            delta.extend_from_slice(&self.bands.base[band.clone()]);
            for &j in &changed {
                let cols = self.bands.rows.columns(j);
                match (&*self.sorted(j, band.end), code(&self.bands.x[cols.clone()]), code(&point[cols])) {
                    (Sorted::Number(values), _, _) => {
                        // (p - v)² - (a - v)², as one product.
                        let col = self.bands.rows.columns(j).start;
                        let (a, p) = (self.bands.x[col], point[col]);
                        let (diff, sum) = (p - a, p + a);
                        for (d, &v) in delta.iter_mut().zip(&values[band.clone()]) {
                            *d += diff * (sum - 2.0 * v);
                        }
                    }
                    (Sorted::Codes(codes), Some(ca), Some(c)) => {
                        // 2 · ([r ≠ c] − [r ≠ ca]) = 2 · ([r = ca] − [r = c]), in whole
                        // numbers (exact, and one conversion per row).
                        for (d, &r) in delta.iter_mut().zip(&codes[band.clone()]) {
                            *d += f32::from(2 * (i16::from(r == ca) - i16::from(r == c)));
                        }
                    }
                    _ => {
                        self.bands.rows.add_at(j, &self.bands.x, -1.0, ids, &mut delta);
                        self.bands.rows.add_at(j, point, 1.0, ids, &mut delta);
                    }
                }
            }
            // Most rows are farther than the k-th so far: one comparison settles them.
            let mut worst = if top.len() == k { top[k - 1].0 } else { f32::INFINITY };
            for (&i, &d) in ids.iter().zip(&delta) {
                if d > worst {
                    continue;
                }
                if top.len() < k || (d, i) < top[k - 1] {
                    let at = top.partition_point(|&e| e < (d, i));
                    top.insert(at, (d, i));
                    top.truncate(k);
                    if top.len() == k {
                        worst = top[k - 1].0;
                    }
                }
            }
        }
        top.into_iter().map(|(_, i)| i).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cent_nostd::schema::Feature;
    use rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro128PlusPlus;

    fn unit(rng: &mut Xoshiro128PlusPlus) -> f32 {
        (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// Columns: [0] a number, [1..5] a group of four, [5] a binary value, [6..9] a group of
    /// three that one row leaves all cold.
    fn schema() -> Schema {
        let mut s = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        s.push(Feature::categorical(1, 4)).unwrap();
        s.push(Feature::binary(5)).unwrap();
        s.push(Feature::categorical(6, 3)).unwrap();
        s
    }

    fn row(rng: &mut Xoshiro128PlusPlus) -> Vec<f32> {
        let mut r = vec![0.0; 9];
        r[0] = unit(rng);
        r[1 + (rng.next_u32() % 4) as usize] = 1.0;
        r[5] = (rng.next_u32() % 2) as f32;
        r[6 + (rng.next_u32() % 3) as usize] = 1.0;
        r
    }

    /// The oracle: every row's distance, sorted.
    fn brute_force(rows: &[f32], point: &[f32], k: usize) -> Vec<u32> {
        let mut d: Vec<(f64, u32)> = rows
            .chunks_exact(point.len())
            .enumerate()
            .map(|(i, r)| (r.iter().zip(point).map(|(a, b)| f64::from(a - b) * f64::from(a - b)).sum(), i as u32))
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        d.into_iter().take(k).map(|(_, i)| i).collect()
    }

    #[test]
    fn test_nearest_matches_a_full_scan() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(4);
        let schema = schema();
        let mut pool: Vec<f32> = (0..400).flat_map(|_| row(&mut rng)).collect();
        // One row with its second group all cold: that group is then compared column by column.
        pool[9 * 7 + 6..9 * 7 + 9].copy_from_slice(&[0.0; 3]);
        let rows = Rows::new(&schema, &pool);
        assert!(matches!(rows.features[1], Column::Codes { .. }));
        assert!(matches!(rows.features[3], Column::Columns { .. }));
        for case in 0..60 {
            let x = row(&mut rng);
            let around = Around::new(&rows, &x);
            // Change one to four features of x (a point may also be off one-hot).
            let mut point = x.clone();
            let fresh = row(&mut rng);
            for j in 0..4 {
                if rng.next_u32() % 2 == 0 {
                    let cols = schema.features()[j].columns();
                    point[cols.clone()].copy_from_slice(&fresh[cols]);
                }
            }
            if case % 10 == 0 {
                point[1..5].copy_from_slice(&[0.5, 0.5, 0.0, 0.0]);
            }
            for k in [1, 5, 10] {
                assert_eq!(around.nearest(&point, k), brute_force(&pool, &point, k), "case {case}, k {k}");
            }
            // A large `k` reads far bands (the values laid out in band order grow with it);
            // with so many rows, distances equal but for f32 rounding may swap places.
            if case % 3 == 0 {
                for k in [150, 400] {
                    let distance = |id: u32| -> f64 {
                        let r = &pool[id as usize * 9..(id as usize + 1) * 9];
                        r.iter().zip(&point).map(|(a, b)| f64::from(a - b).powi(2)).sum()
                    };
                    let (got, want) = (around.nearest(&point, k), brute_force(&pool, &point, k));
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert!((distance(*g) - distance(*w)).abs() < 1e-5, "case {case}, k {k}: {g} for {w}");
                    }
                }
            }
            // Asked again (from the memo), and for another `k` after that.
            assert_eq!(around.nearest(&point, 5), brute_force(&pool, &point, 5), "case {case}, again");
            assert_eq!(around.nearest(&point, 3), brute_force(&pool, &point, 3), "case {case}, k 3");
            assert_eq!(around.nearest(&x, 10), brute_force(&pool, &x, 10));
        }
        assert!(Around::new(&rows, &pool[..9]).nearest(&[0.0; 3], 5).is_empty());
    }

    #[test]
    fn test_nearest_in_a_larger_pool() {
        // Rows spread over many bands, far rows read for a large `k`.
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(9);
        let n = 2500;
        let pool: Vec<f32> = (0..n).flat_map(|_| row(&mut rng)).collect();
        let rows = Rows::new(&schema(), &pool);
        let distance = |id: u32, p: &[f32]| -> f64 {
            pool[id as usize * 9..(id as usize + 1) * 9].iter().zip(p).map(|(a, b)| f64::from(a - b).powi(2)).sum()
        };
        for case in 0..20 {
            let x = row(&mut rng);
            let around = Around::new(&rows, &x);
            let mut point = x.clone();
            point[0] = unit(&mut rng);
            for (p, k) in [(&x, 1), (&x, 50), (&point, 5), (&point, 500)] {
                // So many rows hold equal distances but for f32 rounding: compared by distance.
                let (got, want) = (around.nearest(p, k), brute_force(&pool, p, k));
                assert_eq!(got.len(), k);
                for (g, w) in got.iter().zip(&want) {
                    assert!((distance(*g, p) - distance(*w, p)).abs() < 1e-5, "case {case}, k {k}: {g} for {w}");
                }
            }
        }
    }

    #[test]
    fn test_ties_go_to_the_lower_row() {
        let schema = schema();
        let r = [0.5, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let pool: Vec<f32> = (0..6).flat_map(|_| r).collect();
        let rows = Rows::new(&schema, &pool);
        assert_eq!(Around::new(&rows, &r).nearest(&r, 3), vec![0, 1, 2]);
        assert_eq!(rows.len(), 6);
    }
}
