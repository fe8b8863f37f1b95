//! What C reads back from a `CentResult`: plain structs copied out of the core's values.

use cent_nostd::atlas::{Counterfactual, NotFound, Summary};

/// Why an explanation that worked returned no counterfactual.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CentNotFound {
    /// At least one counterfactual was found.
    None = 0,
    /// The anchor's tree has no reachable leaf of the target class under the constraints.
    NoContrastLeaf = 1,
    /// Contrast leaves exist but no feasible point could be built in any of them.
    Blocked = 2,
    /// Candidates were built but the on-device classifier confirmed none.
    NotConfirmed = 3,
}

/// What one explanation did.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CentSummary {
    /// Counterfactuals found (0 to the options' `answers`), the region the most people of the
    /// target class fill first.
    pub answers: u32,
    /// Encoded columns of the query and of every counterfactual.
    pub columns: u32,
    /// The atlas anchor whose tree gave the answers: the query's nearest, or the runner-up when
    /// the nearest's confirmed nothing, or the anchor whose person gave the first answer when
    /// no region was confirmed (the nearest when there is no answer).
    pub anchor: u8,
    /// The query's class (the on-device classifier's, or the tree's without one).
    pub fact: u8,
    /// Contrast leaves examined.
    pub examined: u8,
    /// Candidates the classifier rejected.
    pub rejected: u8,
    /// Set when `answers` is 0.
    pub not_found: CentNotFound,
}

/// One counterfactual (its values: `cent_result_values`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CentAnswer {
    /// Cost of the move in fixed point: `CENT_COST_SCALE` per unit (weighted distance to the
    /// leaf's box, plus the l0 and entropy terms); 0 for an answer from a person.
    pub cost: u32,
    /// Bit `j` set when logical feature `j` changed.
    pub changed: u32,
    /// The tree leaf the counterfactual lies in, or `CENT_NO_REGION` for an answer from a
    /// person the bundle carries (the last resort when no region is confirmed).
    pub leaf: u16,
    /// The class the on-device classifier gives it, or -1 when the bundle has no classifier.
    pub class_id: i16,
    /// Logical features changed (the bits set in `changed`).
    pub features_changed: u32,
}

impl CentSummary {
    pub(crate) fn of(s: &Summary, answers: usize, columns: usize) -> Self {
        let not_found = match s.not_found {
            None => CentNotFound::None,
            Some(NotFound::NoContrastLeaf) => CentNotFound::NoContrastLeaf,
            Some(NotFound::Blocked) => CentNotFound::Blocked,
            Some(NotFound::NotConfirmed) => CentNotFound::NotConfirmed,
        };
        CentSummary {
            answers: answers as u32,
            columns: columns as u32,
            anchor: s.anchor,
            fact: s.fact,
            examined: s.examined,
            rejected: s.rejected,
            not_found,
        }
    }
}

impl CentAnswer {
    pub(crate) fn of(cf: &Counterfactual) -> Self {
        CentAnswer {
            cost: cf.cost,
            changed: cf.changed,
            leaf: cf.leaf,
            class_id: cf.class.map_or(-1, i16::from),
            features_changed: cf.changed.count_ones(),
        }
    }
}
