//! Per-query options as C passes them, checked into the core's `Options` and `Query`.

use crate::CENT_MAX_ANSWERS;
use crate::CENT_MAX_CANDIDATES;
use crate::status::CentStatus;
use cent_nostd::atlas::{CONFIRM_LEAD, Options};
use cent_nostd::schema::{Mutability, Query, Schema};

/// What one explanation asks for. Start from `cent_options_default()` and change fields.
///
/// The four masks have one bit per logical feature (bit `j` = feature `j` in the bundle's
/// schema order) and override the schema's default mutability of those features; a feature may
/// be in at most one mask, and no bit may name a feature the bundle does not have. Only an
/// ordered categorical feature may be increase-only or decrease-only.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CentOptions {
    /// Counterfactuals wanted, 1 to `CENT_MAX_ANSWERS` (default `CENT_MAX_ANSWERS`).
    pub answers: u32,
    /// The class to reach; -1 (the default) for any class but the current one.
    pub desired_class: i32,
    /// Contrast leaves examined at most, 1 to 255 (default 50).
    pub max_search: u32,
    /// Least lead of the target class over the runner-up, in logits, for the on-device
    /// classifier to confirm a counterfactual; finite and non-negative (default ln 1.5 ≈ 0.405:
    /// probability 0.6 between two classes).
    pub lead: f32,
    /// Seeds the random draws of the counterfactual margins: the same seed, the same answers.
    pub seed: u64,
    /// Features that may not change.
    pub immutable: u32,
    /// Features that may only grow.
    pub increase_only: u32,
    /// Features that may only shrink.
    pub decrease_only: u32,
    /// Features that may change either way.
    pub free: u32,
    /// Per-feature edit costs replacing the schema's (`costs_len` must then be the bundle's
    /// feature count, each finite and non-negative), or NULL for the schema's costs.
    pub costs: *const f32,
    /// Entries of `costs`.
    pub costs_len: usize,
    /// Confirmed regions compared by their agreement before answering, when the bundle carries
    /// it: `answers` to `CENT_MAX_CANDIDATES` (default `CENT_MAX_CANDIDATES`); fewer than
    /// `answers` counts as `answers`.
    pub candidates: u32,
    /// Classifier calls spent looking for those regions once the answers are found, at most
    /// 65535 (default 8): more finds regions whose answers land among more people, at the cost
    /// of instructions.
    pub compare_calls: u32,
    /// When the nearest anchor's region tree confirms nothing, the runner-up anchor's is searched
    /// while fewer classifier calls than this were made, at most 65535 (default 24; 0: never).
    pub runner_up_calls: u32,
    /// When no region is confirmed, the people of the target class the bundle's anchors carry
    /// are tried (moved onto what the query can reach, nearest first) while they cost fewer
    /// classifier calls than this, at most 65535 (default 24; 0: never). An answer from a
    /// person has no region: its `leaf` is `CENT_NO_REGION`.
    pub people_calls: u32,
    /// A region whose agreement (of 255) is below this is set aside and tried only after the
    /// rest of its tree's search, when fewer answers than asked were found, 0 to 255 (default
    /// 64; 0: none set aside). Only bundles that carry the regions' agreement.
    pub defer_below: u32,
    /// Classifier calls an answer's paring spends at most on each change only the lead needs
    /// (set back alone, the point is still the target, short of `lead`) that longer moves of the
    /// other numbers could not replace: the others are shortened and it carried further until
    /// the decision needs it, at most 65535 (default 12; 0: never).
    pub balance_calls: u32,
}

impl Default for CentOptions {
    fn default() -> Self {
        let core = Options::default();
        CentOptions {
            answers: CENT_MAX_ANSWERS as u32,
            desired_class: -1,
            max_search: core.max_search as u32,
            lead: CONFIRM_LEAD,
            seed: 0,
            immutable: 0,
            increase_only: 0,
            decrease_only: 0,
            free: 0,
            costs: core::ptr::null(),
            costs_len: 0,
            candidates: u32::from(core.candidates),
            compare_calls: u32::from(core.compare_calls),
            runner_up_calls: u32::from(core.runner_up_calls),
            people_calls: u32::from(core.people_calls),
            defer_below: u32::from(core.defer_below),
            balance_calls: u32::from(core.balance_calls),
        }
    }
}

/// The default options: every answer the result holds, any other class, the firmware's
/// search depth and lead, seed 0, the schema's constraints and costs.
#[unsafe(no_mangle)]
#[allow(unsafe_code, reason = "an exported symbol")]
pub extern "C" fn cent_options_default() -> CentOptions {
    CentOptions::default()
}

impl CentOptions {
    /// The core's options and how many answers to keep.
    pub(crate) fn core(&self, schema: &Schema) -> Result<(Options, usize), CentStatus> {
        let bad = CentStatus::InvalidOptions;
        let answers = usize::try_from(self.answers).map_err(|_| bad)?;
        if answers == 0 || answers > CENT_MAX_ANSWERS {
            return Err(bad);
        }
        let desired = match self.desired_class {
            -1 => None,
            d => Some(u8::try_from(d).map_err(|_| bad)?),
        };
        if desired.is_some_and(|d| d as usize >= schema.classes()) {
            return Err(CentStatus::Target);
        }
        let max_search = u8::try_from(self.max_search).ok().filter(|&m| m > 0).ok_or(bad)?;
        if !self.lead.is_finite() || self.lead < 0.0 {
            return Err(bad);
        }
        let candidates = u8::try_from(self.candidates)
            .ok()
            .filter(|&c| c > 0 && usize::from(c) <= CENT_MAX_CANDIDATES)
            .ok_or(bad)?;
        let compare_calls = u16::try_from(self.compare_calls).map_err(|_| bad)?;
        let runner_up_calls = u16::try_from(self.runner_up_calls).map_err(|_| bad)?;
        let people_calls = u16::try_from(self.people_calls).map_err(|_| bad)?;
        let defer_below = u8::try_from(self.defer_below).map_err(|_| bad)?;
        let balance_calls = u16::try_from(self.balance_calls).map_err(|_| bad)?;
        let options = Options {
            desired,
            max_search,
            lead: self.lead,
            candidates,
            compare_calls,
            runner_up_calls,
            people_calls,
            defer_below,
            balance_calls,
        };
        Ok((options, answers))
    }

    /// The schema's default query with the masks and costs applied, checked by the core.
    pub(crate) fn query(&self, schema: &Schema, costs: Option<&[f32]>) -> Result<Query, CentStatus> {
        let bad = CentStatus::InvalidOptions;
        let masks = [
            (self.immutable, Mutability::Immutable),
            (self.increase_only, Mutability::IncreaseOnly),
            (self.decrease_only, Mutability::DecreaseOnly),
            (self.free, Mutability::Free),
        ];
        let n = schema.features().len();
        let known = 1u32.checked_shl(n as u32).map_or(u32::MAX, |b| b.wrapping_sub(1));
        let mut seen = 0u32;
        for (mask, _) in masks {
            if mask & !known != 0 || mask & seen != 0 {
                return Err(bad);
            }
            seen |= mask;
        }
        let mut query = schema.default_query();
        for (j, m) in query.mutability.iter_mut().enumerate().take(n) {
            let bit = 1u32.checked_shl(j as u32).unwrap_or(0);
            if let Some((_, to)) = masks.iter().find(|(mask, _)| mask & bit != 0) {
                *m = *to;
            }
        }
        if let Some(costs) = costs {
            if costs.len() != n {
                return Err(bad);
            }
            for (w, &c) in query.cost.iter_mut().zip(costs) {
                *w = c;
            }
        }
        query.check(schema).map_err(|_| bad)?;
        Ok(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cent_nostd::schema::Feature;

    /// Two continuous features, an unordered group of three, an ordered group of two.
    fn schema() -> Schema {
        let mut s: Schema = Schema::new(2);
        s.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        s.push(Feature::continuous(1, 0.0, 1.0).with_mutability(Mutability::Immutable)).unwrap();
        s.push(Feature::categorical(2, 3)).unwrap();
        s.push(Feature::ordinal(5, 2)).unwrap();
        s
    }

    #[test]
    fn test_defaults_are_the_firmware_protocol() {
        let (o, n) = CentOptions::default().core(&schema()).unwrap();
        assert_eq!((o, n), (Options::default(), CENT_MAX_ANSWERS));
        assert_eq!(CentOptions::default().query(&schema(), None).unwrap(), schema().default_query());
    }

    #[test]
    fn test_out_of_range_options_are_refused() {
        let s = schema();
        let with = |f: fn(&mut CentOptions)| {
            let mut o = CentOptions::default();
            f(&mut o);
            o.core(&s).map(|_| ())
        };
        assert_eq!(with(|o| o.answers = 0), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.answers = CENT_MAX_ANSWERS as u32 + 1), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.max_search = 0), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.max_search = 256), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.lead = f32::NAN), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.lead = -0.5), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.desired_class = -2), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.desired_class = 256), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.desired_class = 2), Err(CentStatus::Target));
        assert_eq!(with(|o| o.desired_class = 1), Ok(()));
        assert_eq!(with(|o| o.candidates = 0), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.candidates = CENT_MAX_CANDIDATES as u32 + 1), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.compare_calls = 65_536), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.runner_up_calls = 65_536), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.people_calls = 65_536), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.defer_below = 256), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| o.balance_calls = 65_536), Err(CentStatus::InvalidOptions));
        assert_eq!(with(|o| (o.candidates, o.compare_calls) = (1, 0)), Ok(()));
        let o = CentOptions {
            candidates: 5,
            compare_calls: 300,
            runner_up_calls: 7,
            people_calls: 9,
            defer_below: 12,
            balance_calls: 3,
            ..CentOptions::default()
        };
        let core = Options {
            candidates: 5,
            compare_calls: 300,
            runner_up_calls: 7,
            people_calls: 9,
            defer_below: 12,
            balance_calls: 3,
            ..Options::default()
        };
        assert_eq!(o.core(&s).unwrap().0, core);
    }

    #[test]
    fn test_masks_set_mutability_and_are_checked() {
        let s = schema();
        let o = CentOptions { immutable: 0b0001, free: 0b0010, increase_only: 0b1000, ..CentOptions::default() };
        let q = o.query(&s, None).unwrap();
        let expect = [Mutability::Immutable, Mutability::Free, Mutability::Free, Mutability::IncreaseOnly];
        assert_eq!(q.mutability[..4], expect);
        let refused = |o: CentOptions| o.query(&s, None).unwrap_err();
        assert_eq!(refused(CentOptions { immutable: 1 << 4, ..o }), CentStatus::InvalidOptions, "no feature 4");
        assert_eq!(refused(CentOptions { free: 0b0001, ..o }), CentStatus::InvalidOptions, "in two masks");
        let unordered = CentOptions { decrease_only: 0b0100, ..CentOptions::default() };
        assert_eq!(refused(unordered), CentStatus::InvalidOptions, "direction on an unordered group");
    }

    #[test]
    fn test_costs_replace_the_schema_costs_when_valid() {
        let (s, o) = (schema(), CentOptions::default());
        let q = o.query(&s, Some(&[2.0, 0.0, 1.5, 3.0])).unwrap();
        assert_eq!(q.cost[..4], [2.0, 0.0, 1.5, 3.0]);
        assert_eq!(o.query(&s, Some(&[1.0; 3])).unwrap_err(), CentStatus::InvalidOptions, "short");
        assert_eq!(o.query(&s, Some(&[1.0, -1.0, 1.0, 1.0])).unwrap_err(), CentStatus::InvalidOptions);
        assert_eq!(o.query(&s, Some(&[1.0, f32::INFINITY, 1.0, 1.0])).unwrap_err(), CentStatus::InvalidOptions);
    }

    #[test]
    fn test_all_32_features_can_be_masked() {
        let mut s: Schema = Schema::new(2);
        for c in 0..32 {
            s.push(Feature::continuous(c, 0.0, 1.0)).unwrap();
        }
        let q = CentOptions { immutable: u32::MAX, ..CentOptions::default() }.query(&s, None).unwrap();
        assert!(q.mutability.iter().all(|m| *m == Mutability::Immutable));
    }
}
