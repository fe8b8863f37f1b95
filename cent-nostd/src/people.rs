//! People the atlas carries: for each anchor, a few training rows of the other classes near it,
//! the device's last resort when no region of its trees is confirmed (as the host explainer
//! falls back on the nearest people of a target class).
//!
//! Wire form: for each anchor in turn, the same number of records; a record is the person's
//! class (one byte, as the black box gives it) and one little-endian `u16` per logical feature:
//! a category's index, a binary value, or a number's encoded value in steps of `1 / 65535`.
//! [`People::new`] validates every record once; [`People::person`] writes one as an encoded row.

use crate::counterfactual;
use crate::schema::{Kind, Query, Schema};
use core::fmt;

/// People one anchor carries at most.
pub const PEOPLE: usize = 8;

/// Steps of an encoded number in a record.
const STEPS: f32 = 65_535.0;

/// Why a bundle's people are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PeopleError {
    /// The bytes are not whole records for every anchor, or more than [`PEOPLE`] per anchor.
    Length,
    /// A record's class is not a class of the model, or a feature's code is not one of its
    /// values (a category beyond the group, a binary value above 1).
    Record { person: u16 },
}

impl fmt::Display for PeopleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeopleError::Length => write!(f, "people: not whole records for every anchor (at most {PEOPLE} each)"),
            PeopleError::Record { person } => write!(f, "people: record {person} holds a value its feature has not"),
        }
    }
}

impl core::error::Error for PeopleError {}

/// A validated view of the people records (see the module docs); empty for none.
#[derive(Debug, Clone, Copy, Default)]
pub struct People<'a> {
    bytes: &'a [u8],
    /// Records per anchor.
    per_anchor: usize,
    /// Bytes of one record.
    record: usize,
}

impl<'a> People<'a> {
    /// Validates `bytes` as the people of `anchors` anchors under `schema` (empty: none).
    ///
    /// # Errors
    /// [`PeopleError`] when the length does not divide into whole records for every anchor or a
    /// record holds a value its feature cannot.
    pub fn new(schema: &Schema, anchors: usize, bytes: &'a [u8]) -> Result<Self, PeopleError> {
        if bytes.is_empty() {
            return Ok(People::default());
        }
        let record = 1 + 2 * schema.features().len();
        let per_anchor = match anchors.checked_mul(record) {
            Some(n) if n > 0 && bytes.len().is_multiple_of(n) => bytes.len() / n,
            _ => return Err(PeopleError::Length),
        };
        if per_anchor > PEOPLE {
            return Err(PeopleError::Length);
        }
        for (i, r) in bytes.chunks_exact(record).enumerate() {
            let bad = PeopleError::Record { person: i as u16 };
            if usize::from(r[0]) >= schema.classes() {
                return Err(bad);
            }
            for (f, code) in schema.features().iter().zip(r[1..].chunks_exact(2)) {
                let code = u16::from_le_bytes([code[0], code[1]]);
                let ok = match f.kind {
                    Kind::Categorical => code < u16::from(f.width),
                    Kind::Binary => code <= 1,
                    Kind::Continuous | Kind::Integer => true,
                };
                if !ok {
                    return Err(bad);
                }
            }
        }
        Ok(People { bytes, per_anchor, record })
    }

    /// True when the atlas carries no people.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// People per anchor.
    pub fn per_anchor(&self) -> usize {
        self.per_anchor
    }

    /// Writes person `i` of `anchor` into `out` as an encoded row (a whole number rounded to
    /// its unit) and returns their class; `None` when there is no such person or `out` is not
    /// `schema`'s width.
    pub fn person(&self, schema: &Schema, anchor: usize, i: usize, out: &mut [f32]) -> Option<u8> {
        if i >= self.per_anchor || out.len() != schema.columns() {
            return None;
        }
        let start = (anchor.checked_mul(self.per_anchor)? + i).checked_mul(self.record)?;
        let r = self.bytes.get(start..start + self.record)?;
        for (f, code) in schema.features().iter().zip(r[1..].chunks_exact(2)) {
            let code = u16::from_le_bytes([code[0], code[1]]);
            let cols = out.get_mut(f.columns())?;
            match f.kind {
                Kind::Categorical => {
                    cols.fill(0.0);
                    *cols.get_mut(usize::from(code))? = 1.0;
                }
                Kind::Binary => *cols.first_mut()? = f32::from(code),
                Kind::Continuous => *cols.first_mut()? = f32::from(code) / STEPS,
                Kind::Integer => {
                    *cols.first_mut()? = f.encode(libm::roundf(f.decode(f32::from(code) / STEPS))).clamp(0.0, 1.0);
                }
            }
        }
        Some(r[0])
    }
}

/// A record's code of an encoded value of `kind` (the inverse of [`People::person`]'s reading,
/// up to the number's step): what an exporter writes.
pub fn code(kind: Kind, columns: &[f32]) -> u16 {
    match kind {
        Kind::Categorical => columns.iter().position(|&v| v > 0.5).unwrap_or(0) as u16,
        Kind::Binary => u16::from(columns.first().is_some_and(|&v| v > 0.5)),
        Kind::Continuous | Kind::Integer => {
            libm::roundf(columns.first().copied().unwrap_or(0.0).clamp(0.0, 1.0) * STEPS) as u16
        }
    }
}

/// Moves `cand` onto what `x` can reach under `query`: each feature whose value breaks a
/// constraint (an immutable feature, a move against a feature's direction, a forbidden
/// transition) takes `x`'s value. False when that does not settle it.
pub fn project<const F: usize, const C: usize>(
    schema: &Schema<F, C>,
    query: &Query<F, C>,
    x: &[f32],
    cand: &mut [f32],
) -> bool {
    for _ in 0..=schema.features().len() {
        match counterfactual::check(schema, query, x, cand) {
            Ok(()) => return true,
            Err(v) => {
                let Some(f) = schema.feature(usize::from(v.feature)) else { return false };
                match (cand.get_mut(f.columns()), x.get(f.columns())) {
                    (Some(to), Some(own)) => to.copy_from_slice(own),
                    _ => return false,
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Feature;

    fn schema() -> Schema {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::integer(0, 0.0, 10.0)).unwrap();
        s.push(Feature::categorical(1, 3)).unwrap();
        s.push(Feature::continuous(4, 0.0, 1.0)).unwrap();
        s
    }

    fn record(class: u8, row: &[f32]) -> [u8; 7] {
        let s = schema();
        let mut r = [0u8; 7];
        r[0] = class;
        for (j, f) in s.features().iter().enumerate() {
            r[1 + 2 * j..3 + 2 * j].copy_from_slice(&code(f.kind, &row[f.columns()]).to_le_bytes());
        }
        r
    }

    #[test]
    fn test_a_person_round_trips_to_the_encoded_row() {
        let s = schema();
        let row = [0.3, 0.0, 0.0, 1.0, 0.25];
        let mut bytes = [0u8; 14];
        bytes[..7].copy_from_slice(&record(1, &row));
        bytes[7..].copy_from_slice(&record(0, &[1.0, 1.0, 0.0, 0.0, 0.0]));
        let people = People::new(&s, 1, &bytes).unwrap();
        assert_eq!(people.per_anchor(), 2);
        let mut out = [9.0; 5];
        assert_eq!(people.person(&s, 0, 0, &mut out), Some(1));
        assert_eq!(out[..4], row[..4]);
        assert!((out[4] - 0.25).abs() < 1.0 / STEPS);
        assert_eq!(people.person(&s, 0, 1, &mut out), Some(0));
        assert_eq!(out, [1.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(people.person(&s, 0, 2, &mut out), None);
        assert_eq!(people.person(&s, 1, 0, &mut out), None);
        assert_eq!(people.person(&s, 0, 0, &mut [0.0; 4]), None);
    }

    #[test]
    fn test_a_whole_number_is_read_as_a_whole_number() {
        let s = schema();
        let mut r = record(0, &[0.0, 1.0, 0.0, 0.0, 0.0]);
        r[1..3].copy_from_slice(&(20_000u16).to_le_bytes()); // 3.05 in raw units
        let people = People::new(&s, 1, &r).unwrap();
        let mut out = [0.0; 5];
        people.person(&s, 0, 0, &mut out).unwrap();
        assert_eq!(out[0], 0.3);
    }

    /// Whatever the bytes: `People::new` accepts or refuses without panicking, and every
    /// person of what it accepts reads as a one-hot, in-range row of its schema, which
    /// `project` settles onto a query's reach or gives up on, never panicking.
    #[test]
    fn test_arbitrary_bytes_never_panic_and_accepted_people_read_as_rows() {
        use crate::schema::Mutability;
        use rand_core::{Rng, SeedableRng};
        let mut s = schema();
        s.push(Feature::binary(5).with_mutability(Mutability::Immutable)).unwrap();
        let q = s.default_query();
        let x = [0.5, 0.0, 1.0, 0.0, 0.5, 1.0];
        let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(7);
        let mut accepted = 0;
        for _ in 0..20_000 {
            let len = (rng.next_u32() % 40) as usize;
            let mut bytes = std::vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            // Mostly small codes, so that some records are valid.
            for b in bytes.iter_mut() {
                if rng.next_u32() % 4 != 0 {
                    *b %= 3;
                }
            }
            let anchors = (rng.next_u32() % 3) as usize;
            let Ok(people) = People::new(&s, anchors, &bytes) else { continue };
            accepted += 1;
            for a in 0..anchors + 1 {
                for i in 0..PEOPLE + 1 {
                    let mut row = [9.0f32; 6];
                    if people.person(&s, a, i, &mut row).is_some() {
                        assert!(row.iter().all(|v| (0.0..=1.0).contains(v)), "{row:?}");
                        assert_eq!(row[1..4].iter().filter(|v| **v == 1.0).count(), 1, "{row:?}");
                        if project(&s, &q, &x, &mut row) {
                            assert!(counterfactual::check(&s, &q, &x, &row).is_ok());
                            assert_eq!(row[5], x[5], "the immutable feature keeps the query's value");
                        }
                    }
                }
            }
        }
        assert!(accepted > 100, "only {accepted} byte strings accepted: the test sees too few people");
    }

    #[test]
    fn test_bad_people_are_refused() {
        let s = schema();
        let good = record(1, &[0.3, 0.0, 0.0, 1.0, 0.25]);
        assert!(People::new(&s, 1, &[]).unwrap().is_empty());
        assert_eq!(People::new(&s, 2, &good).unwrap_err(), PeopleError::Length);
        assert_eq!(People::new(&s, 1, &good[..6]).unwrap_err(), PeopleError::Length);
        assert_eq!(People::new(&s, 0, &good).unwrap_err(), PeopleError::Length);
        let mut bad = good;
        bad[0] = 2; // no such class
        assert_eq!(People::new(&s, 1, &bad).unwrap_err(), PeopleError::Record { person: 0 });
        let mut bad = good;
        bad[3] = 3; // category 3 of a group of 3
        assert_eq!(People::new(&s, 1, &bad).unwrap_err(), PeopleError::Record { person: 0 });
        let nine = [good; PEOPLE + 1].concat();
        assert_eq!(People::new(&s, 1, &nine).unwrap_err(), PeopleError::Length);
    }
}
