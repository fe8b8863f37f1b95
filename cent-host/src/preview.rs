//! What a device running a bundle tells one person, read and judged on the host.
//!
//! The answers are the core's: `cent_nostd::atlas::Explainer::explain` on the bundle exactly
//! as the device loads it (quantized encoder and classifier, the atlas), with the device's
//! [`Options`] and the query's random generator seeded as the caller says — the same answers
//! a firmware gives for the same bundle, query, options and seed. The host then reads each one
//! as [`crate::explain`] reads its own: the changes in the data's units, the region's rules, how
//! far the nearest people agree ([`explain::Explainer::agreement_of`]), and judges it with
//! what the device does not carry: the full-precision model (does it flip, at what
//! probability), the constraint check on the final values, the values and combinations the
//! training rows hold.
//!
//! An answer the full-precision model does not put in a target class is kept and marked
//! (`confirmed: false`): it is what the device would say, and the point of a preview is to
//! see it before a person does.

use crate::artifacts::Artifacts;
use crate::blackbox::{BlackBox, ModelError};
use crate::explain::{self, Change, ClassOut};
use crate::profile;
use crate::validate::{self, ValidateError};
use cent_nostd::atlas::{Explainer, NO_REGION, NotFound, Options, Summary};
use cent_nostd::bundle::Bundle;
use cent_nostd::capacity::NODES;
use cent_nostd::counterfactual;
use cent_nostd::graph::SCALE;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;
use thiserror::Error;

/// Answers a device explanation gives at most (the firmware's).
pub const MAX_ANSWERS: usize = validate::RESULTS;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PreviewError {
    #[error(transparent)]
    Bundle(#[from] ValidateError),
    #[error("answers asked for: {n}; the device gives 1 to {MAX_ANSWERS}")]
    Answers { n: usize },
    #[error("class index {index} is out of range (the model has {classes} classes)")]
    UnknownClass { index: usize, classes: usize },
    #[error("the desired class `{class}` is already the device's decision for this query")]
    DesiredIsCurrent { class: String },
    #[error("the query's constraints do not fit the device: {0}")]
    Query(cent_nostd::schema::SchemaError),
    #[error("device option `{name}`: {why}")]
    Option { name: String, why: String },
    #[error("the device explainer: {0}")]
    Device(cent_nostd::atlas::ExplainError),
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Where a device answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Source {
    /// A region (leaf) of the anchor's tree.
    Region { leaf: u16 },
    /// One of the people the anchor carries, moved onto what the query can reach and pared.
    Person,
}

/// One device answer, as the host reads and judges it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceAnswer {
    /// 1 for the answer the device gives first.
    pub rank: usize,
    pub source: Source,
    /// The class the device's quantized classifier gives the answer (`None` for a bundle
    /// without one).
    pub device_class: Option<String>,
    /// The full-precision model's class for the answer and its probability.
    pub model: ClassOut,
    /// The full-precision model puts the answer in a class the query asked for.
    pub confirmed: bool,
    /// The region's cost (as [`explain::Counterfactual::cost`]); 0 for a person.
    pub cost: f64,
    pub l0: usize,
    /// The share of the nearest people (the training rows, and the applicant) the model
    /// places in a class the query asked for ([`explain::AGREEMENT_K`] of them).
    pub agreement: f32,
    /// The region as rules in the data's units (empty for a person).
    pub rules: Vec<String>,
    pub changes: Vec<Change>,
    /// The constraint the answer breaks (re-checked on its final values), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// Changed values of observed-support features that no training row holds.
    pub unseen_values: usize,
    /// Schema links the answer breaks (a combination too few training rows hold).
    pub broken_links: usize,
    /// The answer, encoded like the query.
    pub encoded: Vec<f32>,
}

/// What the device answers one query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceExplanation {
    /// The full-precision model's decision for the query.
    pub fact: ClassOut,
    /// The class the device's classifier gives the query (the anchor tree's without one).
    pub device_fact: String,
    /// The class asked for; `None` = any class but the model's decision.
    pub desired: Option<String>,
    /// The anchor whose tree (or people) gave the answers.
    pub anchor: u8,
    /// Contrast regions the device examined and candidates its classifier rejected.
    pub examined: u8,
    pub rejected: u8,
    /// The device's options.
    pub options: Options,
    /// The seed of the query's random generator.
    pub seed: u64,
    pub answers: Vec<DeviceAnswer>,
    /// Why the device answered nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_found: Option<&'static str>,
}

impl DeviceExplanation {
    /// Answers the full-precision model does not confirm.
    pub fn unconfirmed(&self) -> usize {
        self.answers.iter().filter(|a| !a.confirmed).count()
    }

    /// Some answer is a counterfactual: the full-precision model confirms it.
    pub fn found(&self) -> bool {
        self.unconfirmed() < self.answers.len()
    }
}

/// The reason a device gives for answering nothing, in words.
pub fn reason(not_found: NotFound) -> &'static str {
    match not_found {
        NotFound::NoContrastLeaf => {
            "the anchor's tree has no region of the target class the constraints let the query reach"
        }
        NotFound::Blocked => "the reachable regions leave no feasible value for some feature",
        NotFound::NotConfirmed => "the device's classifier confirmed none of the candidate changes",
    }
}

/// The names [`options`] knows, in the order of `cent_nostd::atlas::Options`'s fields.
pub const OPTION_NAMES: [&str; 8] = [
    "max_search",
    "lead",
    "candidates",
    "compare_calls",
    "runner_up_calls",
    "people_calls",
    "defer_below",
    "balance_calls",
];

/// The device's options from `(name, value)` pairs ([`OPTION_NAMES`]), the rest the firmware's
/// defaults; each value checked as `cent explain --bundle` checks its flag (a count is a whole
/// number in its field's range, the lead finite and not negative).
///
/// # Errors
/// [`PreviewError::Option`] naming the option: unknown, or a value out of its range.
pub fn options(named: &[(String, f64)]) -> Result<Options, PreviewError> {
    let mut o = Options::default();
    for (name, value) in named {
        let bad = |why: String| PreviewError::Option { name: name.clone(), why };
        let count = |lo: u32, hi: u32| -> Result<u32, PreviewError> {
            if value.fract() == 0.0 && *value >= f64::from(lo) && *value <= f64::from(hi) {
                Ok(*value as u32)
            } else {
                Err(bad(format!("{value} is not a whole number from {lo} to {hi}")))
            }
        };
        let small = |hi: u32| count(0, hi).map(|v| v as u16);
        match name.as_str() {
            "max_search" => o.max_search = count(1, 255)? as u8,
            "candidates" => o.candidates = count(1, cent_nostd::atlas::CANDIDATES as u32)? as u8,
            "defer_below" => o.defer_below = count(0, 255)? as u8,
            "compare_calls" => o.compare_calls = small(u32::from(u16::MAX))?,
            "runner_up_calls" => o.runner_up_calls = small(u32::from(u16::MAX))?,
            "people_calls" => o.people_calls = small(u32::from(u16::MAX))?,
            "balance_calls" => o.balance_calls = small(u32::from(u16::MAX))?,
            "lead" if value.is_finite() && *value >= 0.0 => o.lead = *value as f32,
            "lead" => return Err(bad(format!("{value} is not a lead in logits (finite, 0 or more)"))),
            _ => return Err(bad(format!("unknown; the device's options: {}", OPTION_NAMES.join(", ")))),
        }
    }
    Ok(o)
}

/// A bundle, checked against the artifacts it was exported from, and the host's readers.
pub struct Preview<'a> {
    bundle: Bundle<'a>,
    host: &'a explain::Explainer<'a>,
    model: &'a dyn BlackBox,
    classes: Vec<String>,
    /// The features' names, for the constraint check's message.
    names: Vec<String>,
    device: Box<Explainer<NODES>>,
}

impl std::fmt::Debug for Preview<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preview").field("bundle", &self.bundle.name).finish_non_exhaustive()
    }
}

impl<'a> Preview<'a> {
    /// Loads `bytes` as the device does (`origin` names it in errors) and checks that it was
    /// exported from `a` at `seed`; `host` (built on `a`'s pool) reads the answers, `model`
    /// (`a`'s full-precision model) judges them.
    ///
    /// # Errors
    /// [`PreviewError::Bundle`] when the bytes are no bundle or one of other data, model or seed.
    pub fn new(
        bytes: &'a [u8],
        origin: &str,
        a: &Artifacts,
        seed: u64,
        host: &'a explain::Explainer<'a>,
        model: &'a dyn BlackBox,
    ) -> Result<Self, PreviewError> {
        let bundle = validate::load(bytes, origin)?;
        validate::check_match(&bundle, origin, a, seed)?;
        let classes = a.prepared.encoding.classes().to_vec();
        let names = a.prepared.encoding.attributes().iter().map(|f| f.name.clone()).collect();
        Ok(Preview { bundle, host, model, classes, names, device: Box::default() })
    }

    /// The bundle's name (dataset, model and seed it was exported for).
    pub fn name(&self) -> &str {
        self.bundle.name
    }

    /// Explains the encoded query `x` as the device does under `query`'s constraints (built
    /// at the host's capacity; the bundle's schema is the same), towards `desired` (a class
    /// index) or any class but the current one, with `options` (its `desired` is replaced),
    /// asking for `n` answers as a firmware that passes room for `n` does, the query's random
    /// generator seeded with `seed`.
    ///
    /// # Errors
    /// [`PreviewError`] for `n` outside `1..=MAX_ANSWERS`, an unknown class, an input the
    /// device refuses, a model failure.
    pub fn explain(
        &mut self,
        x: &[f32],
        query: &profile::Query,
        desired: Option<usize>,
        options: Options,
        n: usize,
        seed: u64,
    ) -> Result<DeviceExplanation, PreviewError> {
        if !(1..=MAX_ANSWERS).contains(&n) {
            return Err(PreviewError::Answers { n });
        }
        let classes = self.classes.len();
        let desired_class = match desired {
            Some(d) if d >= classes || d > usize::from(u8::MAX) => {
                return Err(PreviewError::UnknownClass { index: d, classes });
            }
            Some(d) => Some(d as u8),
            None => None,
        };
        let device_query = query.resize(self.host.schema()).map_err(PreviewError::Query)?;
        let options = Options { desired: desired_class, ..options };
        // A firmware asking for `n` answers passes room for `n`: the room is what the explainer
        // looks for (`asked`), so the preview gives it the same.
        let run = match n {
            1 => self.run::<1>(x, &device_query, options, seed),
            2 => self.run::<2>(x, &device_query, options, seed),
            _ => self.run::<MAX_ANSWERS>(x, &device_query, options, seed),
        };
        let (summary, out) = match run {
            Ok(done) => done,
            Err(cent_nostd::atlas::ExplainError::Target) if let Some(d) = desired => {
                return Err(PreviewError::DesiredIsCurrent { class: self.class_name(d) });
            }
            Err(e) => return Err(PreviewError::Device(e)),
        };
        let fact = self.class_out(x)?;
        let targets: Vec<usize> = match desired {
            Some(d) => vec![d],
            None => (0..classes).filter(|&c| c != fact.index).collect(),
        };
        let tree = self.bundle.atlas.tree(usize::from(summary.anchor));
        let schema = self.host.schema();
        let mut answers = Vec::with_capacity(n);
        for (k, cf) in out.iter().enumerate() {
            let x_new = cf.x.as_slice();
            let judged = self.class_out(x_new)?;
            let source = if cf.leaf == NO_REGION { Source::Person } else { Source::Region { leaf: cf.leaf } };
            let rules = match (source, tree) {
                (Source::Region { leaf }, Some(tree)) => self.host.rules(tree, leaf, x_new),
                _ => Vec::new(),
            };
            answers.push(DeviceAnswer {
                rank: k + 1,
                source,
                device_class: cf.class.map(|c| self.class_name(usize::from(c))),
                confirmed: targets.contains(&judged.index),
                model: judged,
                cost: if cf.leaf == NO_REGION { 0.0 } else { f64::from(cf.cost) / f64::from(SCALE) },
                l0: counterfactual::changed_features(schema, x, x_new).count(),
                agreement: self.host.agreement_of(x, x_new, &targets),
                rules,
                changes: self.host.changes(x, x_new),
                violation: counterfactual::check(schema, query, x, x_new).err().map(|v| self.violation(v)),
                unseen_values: self.host.support().unseen(x, x_new).0,
                broken_links: self.host.support().broken(x, x_new),
                encoded: x_new.to_vec(),
            });
        }
        Ok(DeviceExplanation {
            fact,
            device_fact: self.class_name(usize::from(summary.fact)),
            desired: desired.map(|d| self.class_name(d)),
            anchor: summary.anchor,
            examined: summary.examined,
            rejected: summary.rejected,
            options,
            seed,
            answers,
            not_found: summary.not_found.map(reason),
        })
    }

    /// The device explainer with room for `K` answers, the query's generator seeded with `seed`.
    fn run<const K: usize>(
        &mut self,
        x: &[f32],
        query: &cent_nostd::schema::Query,
        options: Options,
        seed: u64,
    ) -> Result<(Summary, Vec<cent_nostd::atlas::Counterfactual>), cent_nostd::atlas::ExplainError> {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
        let mut out: heapless::Vec<cent_nostd::atlas::Counterfactual, K> = heapless::Vec::new();
        let summary = self.device.explain(&self.bundle.model(), x, query, options, &mut rng, &mut out)?;
        Ok((summary, out.into_iter().collect()))
    }

    fn class_out(&self, x: &[f32]) -> Result<ClassOut, ModelError> {
        ClassOut::decision(self.model, &self.classes, x)
    }

    fn class_name(&self, c: usize) -> String {
        self.classes.get(c).cloned().unwrap_or_else(|| format!("class {c}"))
    }

    /// A violation with the feature's name.
    fn violation(&self, v: counterfactual::Violation) -> String {
        let text = v.to_string();
        match self.names.get(usize::from(v.feature)) {
            Some(name) => text.replacen(&format!("feature {}", v.feature), &format!("`{name}`"), 1),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|&(n, v)| (n.to_string(), v)).collect()
    }

    #[test]
    fn test_options_by_name_are_set_and_checked() {
        assert_eq!(options(&[]).unwrap(), Options::default());
        let o = options(&named(&[
            ("max_search", 20.0),
            ("lead", 0.8),
            ("candidates", 3.0),
            ("compare_calls", 0.0),
            ("runner_up_calls", 65535.0),
            ("people_calls", 7.0),
            ("defer_below", 255.0),
            ("balance_calls", 1.0),
        ]))
        .unwrap();
        let want = Options {
            max_search: 20,
            lead: 0.8,
            candidates: 3,
            compare_calls: 0,
            runner_up_calls: 65535,
            people_calls: 7,
            defer_below: 255,
            balance_calls: 1,
            ..Options::default()
        };
        assert_eq!(o, want);
        for (name, value, why) in [
            ("speed", 1.0, "unknown; the device's options: max_search, lead"),
            ("candidates", 9.0, "9 is not a whole number from 1 to 8"),
            ("candidates", 0.0, "0 is not a whole number from 1 to 8"),
            ("max_search", 256.0, "from 1 to 255"),
            ("balance_calls", 65536.0, "from 0 to 65535"),
            ("people_calls", 2.5, "2.5 is not a whole number"),
            ("defer_below", -1.0, "-1 is not a whole number"),
            ("lead", -0.1, "-0.1 is not a lead in logits"),
            ("lead", f64::NAN, "NaN is not a lead in logits"),
        ] {
            let err = options(&named(&[(name, value)])).unwrap_err().to_string();
            assert!(err.starts_with(&format!("device option `{name}`: ")) && err.contains(why), "{err}");
        }
    }
}
