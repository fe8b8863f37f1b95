//! The recourse atlas: anchors in latent space with one local tree each, and the on-device
//! `explain` entry point (design §4).
//!
//! `explain`: quantized encode → nearest anchor → query graph over its tree → bounded Dijkstra →
//! counterfactual candidates → confirmation by the on-device classifier when the bundle has one
//! → up to `n` results from distinct leaves: of the cheapest leaves the classifier confirms,
//! those whose regions' answers landed most among people of their class (an agreement the
//! exporter measured), then the region the most people of the target class fill; when no
//! region is confirmed, the people of the target class the anchors carry ([`crate::people`]).

use crate::capacity::{ANCHORS, COLUMNS, LATENT, NODES, WIDTH};
use crate::counterfactual::{self, CounterfactualError};
use crate::encoder::{EncoderError, Mlp};
use crate::graph::{Graph, GraphError};
use crate::people::{self, PEOPLE, People, PeopleError};
use crate::schema::{Kind, Query, Schema};
use crate::search::{Search, SearchError, Target};
use crate::support::Support;
use crate::tree::{Bounds, NodeIdx, Tree, TreeError};
use core::fmt;
use rand_core::Rng;

/// Why an atlas is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AtlasError {
    /// No anchors, more than [`ANCHORS`], a latent size of 0 or above [`LATENT`], or anchor
    /// bytes that are not `anchors · latent` int16 values.
    Anchors,
    /// The tree of anchor `anchor` is invalid.
    Tree { anchor: u8, error: TreeError },
    /// The regions' agreement is neither absent nor one byte per node of every tree.
    Agreement,
}

impl fmt::Display for AtlasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtlasError::Anchors => write!(f, "anchor table does not match the latent size or capacity"),
            AtlasError::Tree { anchor, error } => write!(f, "tree of anchor {anchor}: {error}"),
            AtlasError::Agreement => write!(f, "region agreement does not have one byte per tree node"),
        }
    }
}

impl core::error::Error for AtlasError {}

/// Anchors (int16, in the encoder's output steps) and their trees, borrowed from a bundle,
/// with, when the exporter measured it, each region's **agreement**: one byte per tree node,
/// tree after tree, `255 ·` the share of the nearest training rows of the answers the region
/// gave training rows of its anchor that the model puts in the answer's class (a leaf no
/// answer came from holds the prior, one half; a split node is unused).
#[derive(Debug, Clone)]
pub struct Atlas<'a> {
    latent: usize,
    anchors: &'a [u8],
    trees: heapless::Vec<Tree<'a>, ANCHORS>,
    agreement: &'a [u8],
    /// Where each tree's bytes of `agreement` start.
    offsets: heapless::Vec<u16, ANCHORS>,
    people: People<'a>,
}

impl<'a> Atlas<'a> {
    /// Validates the anchor table (`trees.len() · latent` little-endian i16) and every tree.
    ///
    /// # Errors
    /// [`AtlasError`] naming the first problem.
    pub fn new(
        latent: usize,
        anchors: &'a [u8],
        trees: &[&'a [u8]],
        columns: usize,
        classes: usize,
    ) -> Result<Self, AtlasError> {
        let n = trees.len();
        if n == 0 || n > ANCHORS || latent == 0 || latent > LATENT || anchors.len() != n * latent * 2 {
            return Err(AtlasError::Anchors);
        }
        let mut views = heapless::Vec::new();
        for (i, bytes) in trees.iter().enumerate() {
            let tree =
                Tree::new(bytes, columns, classes).map_err(|error| AtlasError::Tree { anchor: i as u8, error })?;
            views.push(tree).map_err(|_| AtlasError::Anchors)?;
        }
        Ok(Atlas {
            latent,
            anchors,
            trees: views,
            agreement: &[],
            offsets: heapless::Vec::new(),
            people: People::default(),
        })
    }

    /// The atlas with its regions' agreement: empty (none measured), or one byte per node of
    /// every tree, tree after tree.
    ///
    /// # Errors
    /// [`AtlasError::Agreement`] for any other length.
    pub fn with_agreement(mut self, agreement: &'a [u8]) -> Result<Self, AtlasError> {
        self.offsets.clear();
        if agreement.is_empty() {
            self.agreement = agreement;
            return Ok(self);
        }
        let mut at = 0usize;
        for t in &self.trees {
            let start = u16::try_from(at).map_err(|_| AtlasError::Agreement)?;
            self.offsets.push(start).map_err(|_| AtlasError::Agreement)?;
            at += t.len();
        }
        if agreement.len() != at {
            return Err(AtlasError::Agreement);
        }
        self.agreement = agreement;
        Ok(self)
    }

    /// The atlas with the people its anchors carry: `bytes` in [`People`]'s wire form for
    /// this atlas's anchors under `schema`, or empty for none.
    ///
    /// # Errors
    /// [`PeopleError`] when the records do not fit the anchors or hold a value their feature
    /// has not.
    pub fn with_people(mut self, schema: &Schema, bytes: &'a [u8]) -> Result<Self, PeopleError> {
        self.people = People::new(schema, self.trees.len(), bytes)?;
        Ok(self)
    }

    /// The people the anchors carry (empty for none).
    pub fn people(&self) -> &People<'a> {
        &self.people
    }

    /// Whether the exporter measured the regions' agreement.
    pub fn has_agreement(&self) -> bool {
        !self.agreement.is_empty()
    }

    /// The agreement of node `node` of anchor `anchor`'s tree (`255 ·` a share; see
    /// [`Atlas`]), when measured.
    pub fn agreement(&self, anchor: usize, node: NodeIdx) -> Option<u8> {
        let start = usize::from(*self.offsets.get(anchor)?);
        let len = self.trees.get(anchor)?.len();
        if usize::from(node) >= len {
            return None;
        }
        self.agreement.get(start + usize::from(node)).copied()
    }

    pub fn len(&self) -> usize {
        self.trees.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    pub fn latent(&self) -> usize {
        self.latent
    }

    pub fn tree(&self, anchor: usize) -> Option<&Tree<'a>> {
        self.trees.get(anchor)
    }

    /// Coordinate `d` of anchor `a`, in encoder output steps.
    pub fn anchor(&self, a: usize, d: usize) -> i16 {
        let i = (a * self.latent + d) * 2;
        match self.anchors.get(i..i + 2) {
            Some(b) => i16::from_le_bytes([b[0], b[1]]),
            None => 0,
        }
    }

    /// The anchor nearest to a quantized latent point (squared Euclidean in integer steps;
    /// ties go to the lower index). `None` when `z` is not `latent()` long.
    pub fn nearest(&self, z: &[i16]) -> Option<usize> {
        self.nearest_but(z, None)
    }

    /// [`Atlas::nearest`] among the anchors other than `skip`.
    pub fn nearest_but(&self, z: &[i16], skip: Option<usize>) -> Option<usize> {
        if z.len() != self.latent {
            return None;
        }
        let dist = |a: usize| -> i64 {
            z.iter().enumerate().map(|(d, &v)| (v as i64 - self.anchor(a, d) as i64).pow(2)).sum()
        };
        (0..self.len()).filter(|&a| Some(a) != skip).min_by_key(|&a| (dist(a), a))
    }

    /// The anchor nearest to a full-precision latent point, with anchors dequantized by
    /// `scale` (the encoder's output scale). Used by the host's full-precision path.
    pub fn nearest_f32(&self, z: &[f32], scale: f32) -> Option<usize> {
        self.nearest_f32_but(z, scale, None)
    }

    /// [`Atlas::nearest_f32`] among the anchors other than `skip`.
    pub fn nearest_f32_but(&self, z: &[f32], scale: f32, skip: Option<usize>) -> Option<usize> {
        if z.len() != self.latent {
            return None;
        }
        let dist = |a: usize| -> f32 {
            z.iter()
                .enumerate()
                .map(|(d, &v)| {
                    let e = v - self.anchor(a, d) as f32 * scale;
                    e * e
                })
                .sum()
        };
        let mut best: Option<(f32, usize)> = None;
        for a in (0..self.len()).filter(|&a| Some(a) != skip) {
            let d = dist(a);
            if best.is_none_or(|(b, _)| d < b) {
                best = Some((d, a));
            }
        }
        best.map(|(_, a)| a)
    }
}

/// One on-device counterfactual.
#[derive(Debug, Clone, PartialEq)]
pub struct Counterfactual {
    /// The counterfactual, encoded like the query.
    pub x: heapless::Vec<f32, COLUMNS>,
    /// Fixed-point cost of its leaf box (see [`crate::graph::SCALE`]); 0 for an answer from a
    /// person.
    pub cost: u32,
    /// The leaf of the region it comes from, or [`NO_REGION`] for an answer from a person.
    pub leaf: NodeIdx,
    /// Class given by the on-device classifier (`None` when the bundle has none).
    pub class: Option<u8>,
    /// Bit `j` set when logical feature `j` changed.
    pub changed: u32,
}

/// Why no counterfactual was found, when the search itself worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NotFound {
    /// The anchor's tree has no reachable leaf of the target class under the constraints.
    NoContrastLeaf,
    /// Contrast leaves exist but no feasible point could be built in any of them.
    Blocked,
    /// Candidates were built but the classifier confirmed none.
    NotConfirmed,
}

/// What one explanation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Summary {
    /// The anchor whose tree gave the answers: the query's nearest, or the runner-up when the
    /// nearest's confirmed nothing ([`Options::runner_up_calls`]), or whose person gave the
    /// first answer ([`Options::people_calls`]); the nearest without answers.
    pub anchor: u8,
    /// The class of `x` (the classifier's, or the tree's when there is no classifier).
    pub fact: u8,
    /// Contrast leaves examined.
    pub examined: u8,
    /// Candidates the classifier rejected.
    pub rejected: u8,
    /// Set when the output is empty.
    pub not_found: Option<NotFound>,
}

/// Why an explanation failed outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ExplainError {
    Encoder(EncoderError),
    Graph(GraphError),
    Search(SearchError),
    /// The desired class equals the current one, or is not a class of the model.
    Target,
    /// The query vector does not match the schema or the atlas.
    Input,
}

impl fmt::Display for ExplainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExplainError::Encoder(e) => write!(f, "encoder: {e}"),
            ExplainError::Graph(e) => write!(f, "graph: {e}"),
            ExplainError::Search(e) => write!(f, "search: {e}"),
            ExplainError::Target => write!(f, "desired class is the current class or unknown"),
            ExplainError::Input => write!(f, "query vector does not match the schema"),
        }
    }
}

impl core::error::Error for ExplainError {}

/// Everything `explain` reads: the bundle's contents, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Model<'m, 'a> {
    pub schema: &'m Schema,
    pub encoder: &'m Mlp<'a>,
    pub classifier: Option<&'m Mlp<'a>>,
    pub atlas: &'m Atlas<'a>,
    pub support: &'m Support<'a>,
}

/// The models around the atlas, as the explainer's loop sees them: which anchor a query belongs
/// to, and what the classifier says of a point. The device answers with the bundle's quantized
/// encoder and classifier ([`Model`]); a host answers in full precision with the weights they
/// were quantized from, and runs this very loop to measure what quantization changes.
pub trait Oracle {
    /// Index of the query's anchor in the atlas.
    ///
    /// # Errors
    /// When `x` cannot be encoded.
    fn anchor(&self, x: &[f32]) -> Result<usize, ExplainError>;

    /// The anchor nearest to `x` after `nearest` (where the explainer looks when `nearest`'s
    /// tree confirms nothing), or `None` when the atlas has no other.
    ///
    /// # Errors
    /// When `x` cannot be encoded.
    fn runner_up(&self, x: &[f32], nearest: usize) -> Result<Option<usize>, ExplainError>;

    /// The class of `x` and its lead over the runner-up in logits, or `None` without a
    /// classifier (the query's tree then gives the fact and every built candidate counts).
    ///
    /// # Errors
    /// When `x` cannot be classified.
    fn classify(&self, x: &[f32]) -> Result<Option<(u8, f32)>, ExplainError>;
}

impl Oracle for Model<'_, '_> {
    fn anchor(&self, x: &[f32]) -> Result<usize, ExplainError> {
        let mut z = [0i16; WIDTH];
        let z = z.get_mut(..self.atlas.latent()).ok_or(ExplainError::Input)?;
        self.encoder.forward(x, z).map_err(ExplainError::Encoder)?;
        self.atlas.nearest(z).ok_or(ExplainError::Input)
    }

    fn runner_up(&self, x: &[f32], nearest: usize) -> Result<Option<usize>, ExplainError> {
        let mut z = [0i16; WIDTH];
        let z = z.get_mut(..self.atlas.latent()).ok_or(ExplainError::Input)?;
        self.encoder.forward(x, z).map_err(ExplainError::Encoder)?;
        Ok(self.atlas.nearest_but(z, Some(nearest)))
    }

    fn classify(&self, x: &[f32]) -> Result<Option<(u8, f32)>, ExplainError> {
        match self.classifier {
            Some(c) => c.classify_with_lead(x).map(|(k, lead)| Some((k as u8, lead))).map_err(ExplainError::Encoder),
            None => Ok(None),
        }
    }
}

/// Per-query options (serializable, so that a host report can say which ran).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Options {
    /// Desired class; `None` = any class but the current one.
    pub desired: Option<u8>,
    /// Contrast leaves to examine at most (the paper's `max_search`).
    pub max_search: u8,
    /// Least lead of the target class over the runner-up, in logits, for the on-device
    /// classifier to confirm a candidate ([`CONFIRM_LEAD`] by default). A candidate closer than
    /// this to the quantized classifier's boundary may be on the other side for the full-precision
    /// model; the next margin of the ladder, further inside the leaf, is tried instead.
    pub lead: f32,
    /// Confirmed regions to compare by their agreement before answering, when the atlas carries
    /// it (at least as many as answers are asked for, at most [`CANDIDATES`]); without it, the
    /// answers asked for are the regions compared.
    pub candidates: u8,
    /// Classifier calls spent looking for those further regions once the answers asked for are
    /// found (checked before each contrast leaf, so a leaf begun may finish past it; a further
    /// region is tried only when it could come first): what bounds the cost of comparing
    /// regions. [`COMPARE_CALLS`] by default.
    pub compare_calls: u16,
    /// When the nearest anchor's tree confirms nothing, the runner-up anchor's tree is searched
    /// (within the same `max_search` leaves) while the explanation has made fewer classifier
    /// calls than this (checked before each leaf). [`RUNNER_UP_CALLS`] by default; 0 never
    /// looks past the nearest anchor.
    pub runner_up_calls: u16,
    /// When no region of the nearest (or runner-up) anchor's tree is confirmed, the people of
    /// the target class those anchors carry ([`Atlas::people`]) are tried, nearest to the
    /// query first, each moved onto what the query can reach, while the people cost fewer
    /// classifier calls than this. [`PEOPLE_CALLS`] by default; 0 never tries them.
    pub people_calls: u16,
    /// A region whose agreement (of 255, [`Atlas::agreement`]) is below this is set aside when
    /// its turn comes and tried only after the rest of its tree's search, if fewer answers than
    /// asked were found: the classifier calls go to regions whose answers land among people of
    /// their class first. Up to [`DEFERRED`] regions per tree are set aside (a further one is
    /// tried in its turn). [`DEFER_BELOW`] by default; 0 sets none aside.
    pub defer_below: u8,
    /// Classifier calls the paring of an answer spends at most on each change only the lead
    /// needs whose trade for longer moves of the others was not confirmed: the others are
    /// shortened and it carried further until the decision needs it, so that no answer keeps a
    /// change the decision does not. [`BALANCE_CALLS`] by default; 0 never balances.
    pub balance_calls: u16,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            desired: None,
            max_search: 50,
            lead: CONFIRM_LEAD,
            candidates: CANDIDATES as u8,
            compare_calls: COMPARE_CALLS,
            runner_up_calls: RUNNER_UP_CALLS,
            people_calls: PEOPLE_CALLS,
            defer_below: DEFER_BELOW,
            balance_calls: BALANCE_CALLS,
        }
    }
}

/// Confirmed regions an explanation compares at most ([`Options::candidates`]), and so the most
/// answers it gives.
pub const CANDIDATES: usize = 8;

/// Default [`Options::compare_calls`]: 8 classifier calls, which keeps the slowest explanation
/// of the firmware's Adult bundle where it was without comparing regions (1.95 M instructions,
/// under the 2 M goal); 16 took it to 2.04 M (see docs/device.md).
pub const COMPARE_CALLS: u16 = 8;

/// Default [`Options::runner_up_calls`]: 24 classifier calls, which keeps the slowest explanation
/// of the firmware's Adult bundle under the 2 M instruction goal (1.92 M; 48 took it to 2.34 M,
/// no bound to 2.69 M) and answers 2 more of its 48 queries (see docs/device.md).
pub const RUNNER_UP_CALLS: u16 = 24;

/// Default [`Options::defer_below`]: 64, a quarter. Measured on the built-in datasets (100
/// factuals, seeds 1 and 2): the device's yNN on Adult 0.59–0.73 → 0.65–0.76, on average over
/// the 16 runs +0.013 (32: +0.009, 100: +0.010), none below −0.01 (see docs/device.md).
pub const DEFER_BELOW: u8 = 64;

/// Regions one tree's search sets aside at most ([`Options::defer_below`]).
pub const DEFERRED: usize = 8;

/// Default [`Options::people_calls`].
pub const PEOPLE_CALLS: u16 = 24;

/// What confirms a candidate, and what paring one may spend: handed down the explainer's steps.
#[derive(Debug, Clone, Copy)]
struct Confirm {
    /// The class or classes asked for.
    target: Target,
    /// Least lead of the target in logits ([`Options::lead`]).
    lead: f32,
    /// [`Options::balance_calls`].
    balance_calls: u16,
}

impl Confirm {
    fn of(target: Target, options: &Options) -> Self {
        Confirm { target, lead: options.lead, balance_calls: options.balance_calls }
    }
}

/// The leaf of an answer taken from a person the atlas carries rather than from a region.
pub const NO_REGION: NodeIdx = NodeIdx::MAX;

/// What each changed feature takes off a region's agreement (of 255) when answers are compared:
/// 13, about 0.05 of a share, so that a region whose answers agree more wins unless it asks for
/// more changes than that is worth. Measured on the built-in datasets (seeds 1 and 2, see
/// docs/device.md): without it the device compared regions by agreement alone and its answers
/// changed up to 2.3 features on average (Credit), with it at most 1.8, for 0.00-0.05 of yNN.
pub const CHANGE_PENALTY: u8 = 13;

/// Default [`Options::lead`]: `ln 1.5`, the lead of a probability of 0.6 over 0.4, so that
/// between two classes a confirmed answer holds at the host explainer's default minimum
/// probability (0.6); with more classes it asks the target to be 1.5 times as probable as the
/// runner-up. It is also several times the logit error an A16W8 classifier shows against its
/// float weights on the built-in datasets (A16W16's is far smaller; `cent validate` reports the
/// resulting agreement).
pub const CONFIRM_LEAD: f32 = 0.405_465_1;

/// Margin divisors tried per contrast leaf, as multiples of the query's `m`: the inward margin
/// `|N(0, sigma/m)|` grows along the ladder (with the same random draw), and the smallest move
/// the classifier confirms wins. Shared by the device and the host explainer.
pub const MARGIN_LADDER: [f32; 6] = [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125];

/// Caller-owned scratch of the explainer: the graph and the search over trees of `N` nodes,
/// and the confirmed answers compared before the best are given.
#[derive(Debug)]
pub struct Explainer<const N: usize = NODES> {
    graph: Graph<N>,
    search: Search<N>,
    found: heapless::Vec<Counterfactual, CANDIDATES>,
}

impl<const N: usize> Default for Explainer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Explainer<N> {
    pub const fn new() -> Self {
        Explainer { graph: Graph::new(), search: Search::new(), found: heapless::Vec::new() }
    }

    /// Explains `x` with `model` under `query`, writing up to `out`'s capacity results (at most
    /// [`CANDIDATES`]): of the cheapest contrast leaves the classifier confirms (each tried at
    /// every margin of [`MARGIN_LADDER`]; [`Options::candidates`] of them when the atlas carries
    /// its regions' agreement, else as many as `out` holds), those whose regions' answers
    /// landed most among people of their class ([`Atlas::agreement`], less [`CHANGE_PENALTY`]
    /// per changed feature), then whose regions the most people of the target class fill (the
    /// leaf's purity times samples), then the cheaper. When the nearest anchor's tree confirms
    /// nothing, the runner-up anchor's is searched ([`Options::runner_up_calls`]); when neither
    /// confirms anything, the people of the target class those anchors carry are tried
    /// ([`Options::people_calls`]), their answers with [`NO_REGION`] as their leaf. An empty
    /// `out` comes with [`Summary::not_found`] set.
    ///
    /// # Errors
    /// [`ExplainError`] when the input does not match or a capacity is exceeded.
    pub fn explain<R: Rng + Clone, const K: usize>(
        &mut self,
        model: &Model<'_, '_>,
        x: &[f32],
        query: &Query,
        options: Options,
        rng: &mut R,
        out: &mut heapless::Vec<Counterfactual, K>,
    ) -> Result<Summary, ExplainError> {
        self.explain_with(model, (model.schema, model.atlas, model.support), x, query, options, rng, out)
    }

    /// [`Explainer::explain`] with any [`Oracle`] over `schema` and `atlas`.
    ///
    /// # Errors
    /// As [`Explainer::explain`].
    #[allow(clippy::too_many_arguments)] // explain's arguments plus the oracle.
    pub fn explain_with<O: Oracle, R: Rng + Clone, const K: usize>(
        &mut self,
        oracle: &O,
        (schema, atlas, support): (&Schema, &Atlas<'_>, &Support<'_>),
        x: &[f32],
        query: &Query,
        options: Options,
        rng: &mut R,
        out: &mut heapless::Vec<Counterfactual, K>,
    ) -> Result<Summary, ExplainError> {
        out.clear();
        if x.len() != schema.columns() {
            return Err(ExplainError::Input);
        }
        let first = oracle.anchor(x)?;
        let (fact, classifier) = fact_class(oracle, atlas.tree(first).ok_or(ExplainError::Input)?, x)?;
        let target = match options.desired {
            Some(d) if d == fact || d as usize >= schema.classes() => return Err(ExplainError::Target),
            Some(d) => Target::Class(d),
            None => Target::Not(fact),
        };
        let mut summary = Summary { anchor: first as u8, fact, examined: 0, rejected: 0, not_found: None };
        let asked = out.capacity().min(CANDIDATES);
        let want = if atlas.has_agreement() { usize::from(options.candidates).clamp(asked, CANDIDATES) } else { asked };
        self.found.clear();
        let mut built = 0u8;
        // Once the answers asked for are found, more regions are looked for with at most
        // `options.compare_calls` more classifier calls (checked before each leaf).
        let oracle = &Counted { oracle, calls: core::cell::Cell::new(0) };
        let mut full_at: Option<u32> = None;
        // What confirms a candidate, and what paring may spend, for every region and person.
        let ask = Confirm::of(target, &options);
        // The nearest anchor's tree; when it confirms nothing, the runner-up's, within the same
        // `max_search` leaves.
        let mut anchor = first;
        let tree = loop {
            // Regions of low agreement, set aside: (leaf, cost).
            let mut deferred = heapless::Vec::<(NodeIdx, u32), DEFERRED>::new();
            let tree = atlas.tree(anchor).ok_or(ExplainError::Input)?;
            self.graph.build(tree, schema, query, x).map_err(ExplainError::Graph)?;
            self.search.start(&self.graph).map_err(ExplainError::Search)?;
            while summary.examined < options.max_search && self.found.len() < want {
                if full_at.is_some_and(|c| oracle.calls.get() - c >= u32::from(options.compare_calls)) {
                    break;
                }
                if anchor != first && oracle.calls.get() >= u32::from(options.runner_up_calls) {
                    break;
                }
                let Some(hit) = self.search.next_contrast(&self.graph, target).map_err(ExplainError::Search)? else {
                    break;
                };
                summary.examined += 1;
                // Once the answers asked for are found, a further region is tried only when it could
                // come first: its agreement, less one change's penalty, above every found answer's.
                if let Some(g) = atlas.agreement(anchor, hit.leaf) {
                    let best = i32::from(g) - i32::from(CHANGE_PENALTY);
                    if self.found.len() >= asked && self.found.iter().any(|c| score(atlas, anchor, c) >= best) {
                        continue;
                    }
                    if g < options.defer_below && deferred.push((hit.leaf, hit.cost)).is_ok() {
                        continue;
                    }
                }
                // Fewer than `want` ≤ CANDIDATES found (loop condition).
                let region = (hit.leaf, hit.cost);
                let (found, any_built) =
                    self.try_region(oracle, (schema, tree, support), x, query, ask, region, rng, &mut summary)?;
                built = built.saturating_add(u8::from(any_built));
                if found && self.found.len() == asked {
                    full_at = Some(oracle.calls.get());
                }
            }
            // The regions set aside, cheapest first, when too few answers were found.
            for &region in &deferred {
                if self.found.len() >= asked {
                    break;
                }
                // Fewer than `asked` ≤ CANDIDATES found.
                let (_, any_built) =
                    self.try_region(oracle, (schema, tree, support), x, query, ask, region, rng, &mut summary)?;
                built = built.saturating_add(u8::from(any_built));
            }
            let spent = oracle.calls.get() >= u32::from(options.runner_up_calls);
            if !self.found.is_empty() || summary.examined >= options.max_search || anchor != first || spent {
                break tree;
            }
            match oracle.runner_up(x, first)? {
                Some(next) => anchor = next,
                None => break tree,
            }
        };
        if !self.found.is_empty() {
            summary.anchor = anchor as u8;
        } else if classifier && options.people_calls > 0 && !atlas.people().is_empty() {
            let tried = [first, anchor];
            let from = oracle.calls.get();
            let budget = (from, u32::from(options.people_calls));
            if let Some(a) =
                self.try_people(oracle, (schema, atlas, support), x, query, ask, &tried, budget, asked, &mut summary)?
            {
                summary.anchor = a as u8;
            }
        }
        // The regions whose answers landed most among people of their class first, less
        // `CHANGE_PENALTY` for each change; then the region most people of the target class
        // fill (its tree's neighbours: purity times samples); then the cheaper.
        let agreement = |c: &Counterfactual| score(atlas, anchor, c);
        let people = |c: &Counterfactual| match tree.node(c.leaf) {
            Some(crate::tree::Node::Leaf { purity, samples, .. }) => purity * samples as f32,
            _ => 0.0,
        };
        let before = |a: &Counterfactual, b: &Counterfactual| {
            agreement(a)
                .cmp(&agreement(b))
                .reverse()
                .then(people(a).total_cmp(&people(b)).reverse())
                .then(a.cost.cmp(&b.cost))
                .then(a.leaf.cmp(&b.leaf))
                .is_lt()
        };
        // A few answers: insertion sort (a library sort costs kilobytes of flash).
        let found = &mut self.found;
        for i in 1..found.len() {
            let mut j = i;
            while j > 0 && before(&found[j], &found[j - 1]) {
                found.swap(j, j - 1);
                j -= 1;
            }
        }
        out.clear();
        for c in found.iter().take(asked) {
            // At most `asked` ≤ `out`'s capacity: the push cannot fail.
            let _ = out.push(c.clone());
        }
        if out.is_empty() {
            summary.not_found = Some(match (summary.examined, built) {
                (0, _) => NotFound::NoContrastLeaf,
                (_, 0) => NotFound::Blocked,
                _ => NotFound::NotConfirmed,
            });
        }
        Ok(summary)
    }
}

/// How an answer's region compares by agreement: its agreement less [`CHANGE_PENALTY`] per
/// changed feature, or 0 for every answer of an atlas without agreement.
fn score(atlas: &Atlas<'_>, anchor: usize, c: &Counterfactual) -> i32 {
    match atlas.agreement(anchor, c.leaf) {
        Some(g) => i32::from(g) - i32::from(CHANGE_PENALTY) * c.changed.count_ones() as i32,
        None => 0,
    }
}

/// An oracle that counts the classifier's calls.
pub(crate) struct Counted<'o, O> {
    pub(crate) oracle: &'o O,
    pub(crate) calls: core::cell::Cell<u32>,
}

impl<O: Oracle> Oracle for Counted<'_, O> {
    fn anchor(&self, x: &[f32]) -> Result<usize, ExplainError> {
        self.oracle.anchor(x)
    }

    fn runner_up(&self, x: &[f32], nearest: usize) -> Result<Option<usize>, ExplainError> {
        self.oracle.runner_up(x, nearest)
    }

    fn classify(&self, x: &[f32]) -> Result<Option<(u8, f32)>, ExplainError> {
        self.calls.set(self.calls.get().saturating_add(1));
        self.oracle.classify(x)
    }
}

/// A counterfactual of one leaf and the classifier's class for it.
type Confirmed = (heapless::Vec<f32, COLUMNS>, Option<u8>);

impl<const N: usize> Explainer<N> {
    /// Tries region `leaf` of cost `cost` ([`Explainer::try_leaf`]) and keeps its answer; says
    /// whether one was found and whether any candidate was built. Callers try a region only
    /// while fewer than [`CANDIDATES`] answers are kept.
    #[allow(clippy::too_many_arguments)]
    fn try_region<O: Oracle, R: Rng + Clone>(
        &mut self,
        oracle: &O,
        (schema, tree, support): (&Schema, &Tree<'_>, &Support<'_>),
        x: &[f32],
        query: &Query,
        ask: Confirm,
        (leaf, cost): (NodeIdx, u32),
        rng: &mut R,
        summary: &mut Summary,
    ) -> Result<(bool, bool), ExplainError> {
        let (found, any_built) = self.try_leaf(oracle, (schema, tree, support), x, query, ask, leaf, rng, summary)?;
        let Some((cf, class)) = found else { return Ok((false, any_built)) };
        let changed = counterfactual::changed(schema, x, &cf);
        // Fewer than CANDIDATES kept (the callers' condition): the push cannot fail.
        let _ = self.found.push(Counterfactual { x: cf, cost, leaf, class, changed });
        Ok((true, any_built))
    }

    /// Builds the leaf's counterfactual at each margin of [`MARGIN_LADDER`] with one replayed
    /// draw (so moves grow monotonically), kept to the data support ([`Support::settle`]; a
    /// point it drops or whose repair breaks a constraint is not built), and keeps the first
    /// the classifier confirms with at least `lead` logits to spare (the first built one when
    /// the bundle has no classifier), pared down to the changes the classifier needs
    /// ([`pare`]). Also says whether any was built.
    #[allow(clippy::too_many_arguments)]
    fn try_leaf<O: Oracle, R: Rng + Clone>(
        &self,
        oracle: &O,
        (schema, tree, support): (&Schema, &Tree<'_>, &Support<'_>),
        x: &[f32],
        query: &Query,
        ask: Confirm,
        leaf: NodeIdx,
        rng: &mut R,
        summary: &mut Summary,
    ) -> Result<(Option<Confirmed>, bool), ExplainError> {
        let Confirm { target, lead, .. } = ask;
        let base = rng.clone();
        let mut any_built = false;
        // Clipped to the box, successive margins often give the same point: a point refused
        // once is refused again without asking the classifier.
        let mut last_refused = heapless::Vec::<f32, COLUMNS>::new();
        // The leaf's box, once for every margin.
        let bounds = Bounds::of(tree, leaf);
        for step in MARGIN_LADDER {
            let mut draw = base.clone();
            let q = Query { margin: query.margin * step, ..query.clone() };
            let mut cf = heapless::Vec::<f32, COLUMNS>::new();
            cf.resize(x.len(), 0.0).map_err(|_| ExplainError::Input)?;
            let built = counterfactual::realize_in(schema, &q, tree, leaf, &bounds, x, &mut draw, &mut cf);
            *rng = draw;
            match built {
                Ok(()) => {}
                Err(CounterfactualError::Input) => return Err(ExplainError::Input),
                Err(_) => continue,
            }
            // Values and combinations people have; a repair re-checked against the query.
            if !support.is_empty() {
                let kept = support.settle(schema, &bounds, x, &mut cf);
                if !kept || counterfactual::check(schema, query, x, &cf).is_err() {
                    continue;
                }
            }
            any_built = true;
            if cf == last_refused || cf.as_slice() == x {
                summary.rejected = summary.rejected.saturating_add(1);
                continue;
            }
            let verdict = oracle.classify(&cf)?;
            let mut class = verdict.map(|(c, _)| c);
            if verdict.is_some_and(|(c, l)| !target.matches(c) || l < lead) {
                summary.rejected = summary.rejected.saturating_add(1);
                last_refused = cf;
                continue;
            }
            if class.is_some() {
                class = pare(oracle, (schema, support), x, query, ask, &mut cf)?.or(class);
            }
            return Ok((Some((cf, class)), any_built));
        }
        Ok((None, any_built))
    }
}

impl<const N: usize> Explainer<N> {
    /// The last resort: the people of the target class that `anchors` carry, each moved onto
    /// what `x` can reach ([`people::project`]), kept to the data support and re-checked, are tried
    /// nearest to `x` first (encoded, Euclidean); each the classifier confirms with `lead` is
    /// pared ([`pare`]) and found, with [`NO_REGION`] as its leaf, until `asked` are or the
    /// people have cost `budget.1` classifier calls since `budget.0`. Returns the anchor of the
    /// first person found.
    #[allow(clippy::too_many_arguments)]
    fn try_people<O: Oracle>(
        &mut self,
        oracle: &Counted<'_, O>,
        (schema, atlas, support): (&Schema, &Atlas<'_>, &Support<'_>),
        x: &[f32],
        query: &Query,
        ask: Confirm,
        anchors: &[usize],
        (from, budget): (u32, u32),
        asked: usize,
        summary: &mut Summary,
    ) -> Result<Option<usize>, ExplainError> {
        let Confirm { target, lead, .. } = ask;
        let people = atlas.people();
        // The whole ranges: a person need not lie in any leaf's box.
        let whole: Bounds = Bounds::default();
        // Builds person `i` of `anchor` as a candidate; `None` when it is not of the target
        // class or nothing of it is left that the query can reach.
        let build = |anchor: usize, i: usize, cand: &mut heapless::Vec<f32, COLUMNS>| -> Option<()> {
            cand.clear();
            cand.resize(x.len(), 0.0).ok()?;
            let class = people.person(schema, anchor, i, cand)?;
            if !target.matches(class) || !people::project(schema, query, x, cand) {
                return None;
            }
            let kept = support.is_empty() || support.settle(schema, &whole, x, cand);
            (kept && counterfactual::check(schema, query, x, cand).is_ok() && cand.as_slice() != x).then_some(())
        };
        // The order keeps (distance, anchor, person), and each person is built again when tried:
        // keeping the built rows would take 16 rows of COLUMNS floats (4 KB) of stack.
        let mut order = heapless::Vec::<(f32, u8, u8), { 2 * PEOPLE }>::new();
        let mut cand = heapless::Vec::<f32, COLUMNS>::new();
        for (k, &a) in anchors.iter().enumerate() {
            if anchors[..k].contains(&a) {
                continue;
            }
            for i in 0..people.per_anchor() {
                if build(a, i, &mut cand).is_some() {
                    let d = cand.iter().zip(x).map(|(p, q)| (p - q) * (p - q)).sum::<f32>();
                    // At most two anchors of PEOPLE each: the push cannot fail.
                    let _ = order.push((d, a as u8, i as u8));
                }
            }
        }
        // A few people: insertion sort, nearest first (ties in the order carried).
        for i in 1..order.len() {
            let mut j = i;
            while j > 0 && order[j].0 < order[j - 1].0 {
                order.swap(j, j - 1);
                j -= 1;
            }
        }
        let mut first = None;
        for &(_, a, i) in &order {
            if self.found.len() >= asked || oracle.calls.get() - from >= budget {
                break;
            }
            let (a, i) = (usize::from(a), usize::from(i));
            if build(a, i, &mut cand).is_none() {
                continue;
            }
            let Some((c, l)) = oracle.classify(&cand)? else { break };
            if !target.matches(c) || l < lead {
                summary.rejected = summary.rejected.saturating_add(1);
                continue;
            }
            let class = pare(oracle, (schema, support), x, query, ask, &mut cand)?.unwrap_or(c);
            let changed = counterfactual::changed(schema, x, &cand);
            if self.found.iter().any(|f| f.x == cand) {
                continue;
            }
            // Fewer than `asked` ≤ CANDIDATES found: the push cannot fail.
            let _ = self.found.push(Counterfactual {
                x: cand.clone(),
                cost: 0,
                leaf: NO_REGION,
                class: Some(class),
                changed,
            });
            first = first.or(Some(a));
        }
        Ok(first)
    }
}

/// Sets back, feature by feature in schema order, each change of the confirmed `cf` that the
/// classifier does not need: the point without it must still be the target with at least
/// `lead`, break no constraint and no link, or the change stays. A change the decision does not
/// need but the lead does (set back, the point is still the target, with less than `lead`) is
/// traded for longer moves of the other numbers ([`push`]) when one of those is confirmed, and
/// else balanced against them ([`balance`]): they are shortened and it carried further until
/// the decision needs it.
/// Returns the class of the last set-back kept (`None` when none was).
fn pare<O: Oracle>(
    oracle: &O,
    (schema, support): (&Schema, &Support<'_>),
    x: &[f32],
    query: &Query,
    ask: Confirm,
    cf: &mut heapless::Vec<f32, COLUMNS>,
) -> Result<Option<u8>, ExplainError> {
    let Confirm { target, lead, .. } = ask;
    let mut class = None;
    for (j, f) in schema.features().iter().enumerate() {
        let cols = f.columns();
        let Some(own) = x.get(cols.clone()) else { continue };
        if cf.get(cols.clone()) == Some(own) {
            continue;
        }
        let mut trial = cf.clone();
        match trial.get_mut(cols) {
            Some(slot) => slot.copy_from_slice(own),
            None => continue,
        }
        if trial.as_slice() == x
            || support.broken(schema, x, &trial) > 0
            || counterfactual::check(schema, query, x, &trial).is_err()
        {
            continue;
        }
        match oracle.classify(&trial)? {
            Some((c, l)) if target.matches(c) && l >= lead => {
                *cf = trial;
                class = Some(c);
            }
            Some((c, _)) if target.matches(c) => {
                if let Some(c) = push(oracle, (schema, support), x, query, ask, &mut trial)? {
                    *cf = trial;
                    class = Some(c);
                } else if let Some(c) = balance(oracle, (schema, support), x, query, ask, j, cf)? {
                    class = Some(c);
                }
            }
            _ => {}
        }
    }
    Ok(class)
}

/// Factors by which the explainer's paring (and the host explainer's) carry the remaining
/// numeric moves of a point further when one change is set back: the first the classifier
/// confirms wins.
pub const PUSH_LADDER: [f32; 5] = [1.25, 1.5, 2.0, 3.0, 4.0];

/// Carries every changed number of `trial` (a confirmed point with one change set back) further
/// from `x` by each factor of [`PUSH_LADDER`] in turn, kept to the features' ranges (not only
/// the leaf's box) and the data support and re-checked against the query, until the classifier confirms one with `lead` that
/// changes exactly the features `trial` changes: `trial` becomes that point and its class is
/// returned. `None` (and `trial` unspecified) when none is confirmed or `trial` moves no number.
fn push<O: Oracle>(
    oracle: &O,
    (schema, support): (&Schema, &Support<'_>),
    x: &[f32],
    query: &Query,
    ask: Confirm,
    trial: &mut heapless::Vec<f32, COLUMNS>,
) -> Result<Option<u8>, ExplainError> {
    let Confirm { target, lead, .. } = ask;
    let numeric = |f: &crate::schema::Feature| matches!(f.kind, Kind::Integer | Kind::Continuous);
    let moved = |p: &[f32], f: &crate::schema::Feature| x.get(f.col as usize) != p.get(f.col as usize);
    if !schema.features().iter().any(|f| numeric(f) && moved(trial, f)) {
        return Ok(None);
    }
    let changes = counterfactual::changed(schema, x, trial);
    // The whole range: a longer move may leave the leaf's box.
    let bounds: Bounds = Bounds::default();
    let mut last = trial.clone();
    for factor in PUSH_LADDER {
        let mut cand = trial.clone();
        for f in schema.features().iter().filter(|f| numeric(f) && moved(trial, f)) {
            let c = f.col as usize;
            if let (Some(&from), Some(&to), Some(slot)) = (x.get(c), trial.get(c), cand.get_mut(c)) {
                *slot = (from + factor * (to - from)).clamp(0.0, 1.0);
            }
        }
        if (!support.is_empty() && !support.settle(schema, &bounds, x, &mut cand))
            || cand == last
            || counterfactual::changed(schema, x, &cand) != changes
            || counterfactual::check(schema, query, x, &cand).is_err()
        {
            continue;
        }
        last.clone_from(&cand);
        if let Some((c, l)) = oracle.classify(&cand)?
            && target.matches(c)
            && l >= lead
        {
            *trial = cand;
            return Ok(Some(c));
        }
    }
    Ok(None)
}

/// Factors by which the explainer's paring (and the host explainer's) shorten the other numeric
/// moves of a point whose change of one feature the decision does not need, so that it does
/// ([`Options::balance_calls`]).
pub const BALANCE_SHRINK: [f32; 8] = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2];

/// Default [`Options::balance_calls`]: 12 classifier calls a change. Measured on the built-in
/// datasets (100 factuals, seeds 1 and 2, see docs/device.md): the device's redundancy 0.155 →
/// 0.115 on average over the 16 runs (HELOC × LR 0.22 / 0.31 → 0.07 / 0.15), yNN within 0.02;
/// the firmware's slowest explanation unchanged (1.92 M instructions), the mean +1 %.
pub const BALANCE_CALLS: u16 = 12;

/// Makes the change of feature `j` in the confirmed `cf` one the decision needs, when only the
/// lead needs it (set back, the point is still the target, with less than `lead`) and longer
/// moves of the others were not confirmed without it ([`push`]): the other changed numbers are
/// shortened by each factor of [`BALANCE_SHRINK`] in turn until, with feature `j` set back, the
/// point is no longer the target; at that factor feature `j`, when a number, is carried further
/// along [`PUSH_LADDER`] (kept first) until the classifier confirms the whole with `lead`, and
/// kept only if every change before `j` is still needed. Every point tried changes exactly
/// `cf`'s features, is kept to the data support and re-checked against the query; at most
/// `ask.balance_calls` classifier calls. Returns the class and replaces `cf` when one is
/// confirmed; `None` (and `cf` untouched) otherwise.
fn balance<O: Oracle>(
    oracle: &O,
    (schema, support): (&Schema, &Support<'_>),
    x: &[f32],
    query: &Query,
    ask: Confirm,
    j: usize,
    cf: &mut heapless::Vec<f32, COLUMNS>,
) -> Result<Option<u8>, ExplainError> {
    let Confirm { target, lead, .. } = ask;
    let Some(feature) = schema.features().get(j) else { return Ok(None) };
    let numeric = |f: &crate::schema::Feature| matches!(f.kind, Kind::Integer | Kind::Continuous);
    let other = |f: &crate::schema::Feature| {
        f.col != feature.col && numeric(f) && x.get(f.col as usize) != cf.get(f.col as usize)
    };
    if !schema.features().iter().any(other) {
        return Ok(None);
    }
    let cols = feature.columns();
    let (Some(own), Some(moved)) = (x.get(cols.clone()), cf.get(cols.clone())) else { return Ok(None) };
    let changes = counterfactual::changed(schema, x, cf);
    let without = changes & !1u32.checked_shl(j as u32).unwrap_or(0);
    // The whole range: a longer move may leave the leaf's box.
    let bounds: Bounds = Bounds::default();
    let kept = |p: &mut heapless::Vec<f32, COLUMNS>, want: u32| {
        (support.is_empty() || support.settle(schema, &bounds, x, p))
            && counterfactual::changed(schema, x, p) == want
            && counterfactual::check(schema, query, x, p).is_ok()
    };
    let mut calls = 0u16;
    // The classifier's verdict on a point; `None` once the calls are spent.
    let mut judge = |p: &[f32]| -> Result<Option<Option<(u8, f32)>>, ExplainError> {
        if calls >= ask.balance_calls {
            return Ok(None);
        }
        calls += 1;
        oracle.classify(p).map(Some)
    };
    for shrink in BALANCE_SHRINK {
        let mut short = cf.clone();
        for f in schema.features().iter().filter(|f| other(f)) {
            let c = f.col as usize;
            if let (Some(&from), Some(&to), Some(slot)) = (x.get(c), cf.get(c), short.get_mut(c)) {
                *slot = from + shrink * (to - from);
            }
        }
        let mut back = short.clone();
        match back.get_mut(cols.clone()) {
            Some(slot) => slot.copy_from_slice(own),
            None => return Ok(None),
        }
        if !kept(&mut back, without) {
            continue;
        }
        match judge(&back)? {
            Some(Some((c, _))) if target.matches(c) => continue,
            Some(Some(_)) => {}
            Some(None) | None => return Ok(None),
        }
        // Without feature `j` the shortened others no longer reach the target: it is needed.
        let pushes: &[f32] = if numeric(feature) { &PUSH_LADDER } else { &[] };
        let mut last = heapless::Vec::<f32, COLUMNS>::new();
        for &push in core::iter::once(&1.0).chain(pushes) {
            let mut cand = short.clone();
            if numeric(feature) {
                let c = feature.col as usize;
                if let (Some(&from), Some(&to), Some(slot)) = (own.first(), moved.first(), cand.get_mut(c)) {
                    *slot = (from + push * (to - from)).clamp(0.0, 1.0);
                }
            }
            if !kept(&mut cand, changes) || cand == last {
                continue;
            }
            last.clone_from(&cand);
            let Some(verdict) = judge(&cand)? else { return Ok(None) };
            let Some((class, _)) = verdict.filter(|&(c, l)| target.matches(c) && l >= lead) else { continue };
            // Confirmed: kept only when no change the paring has passed became one the decision
            // does not need (set back alone, the point still the target; a set-back that breaks a
            // link or the query is no alternative); the paring goes on to the changes after `j`.
            // A longer move of `j` would not make one needed again.
            for k in counterfactual::changed_features(schema, x, &cand).take_while(|&k| k < j) {
                let Some(f) = schema.features().get(k) else { continue };
                let mut alone = cand.clone();
                match (alone.get_mut(f.columns()), x.get(f.columns())) {
                    (Some(slot), Some(own)) => slot.copy_from_slice(own),
                    _ => continue,
                }
                if alone.as_slice() == x
                    || support.broken(schema, x, &alone) > 0
                    || counterfactual::check(schema, query, x, &alone).is_err()
                {
                    continue;
                }
                match judge(&alone)? {
                    Some(Some((c, _))) if target.matches(c) => return Ok(None),
                    Some(_) => {}
                    None => return Ok(None),
                }
            }
            *cf = cand;
            return Ok(Some(class));
        }
        // Shorter moves of the others would need feature `j` longer still.
        return Ok(None);
    }
    Ok(None)
}

/// The class of `x`, and whether the classifier gave it (else the tree did: a bundle without a
/// classifier).
fn fact_class<O: Oracle>(oracle: &O, tree: &Tree<'_>, x: &[f32]) -> Result<(u8, bool), ExplainError> {
    match oracle.classify(x)? {
        Some((class, _)) => Ok((class, true)),
        None => {
            let leaf = tree.route(x).map_err(|_| ExplainError::Input)?;
            match tree.node(leaf) {
                Some(crate::tree::Node::Leaf { class, .. }) => Ok((class, false)),
                _ => Err(ExplainError::Input),
            }
        }
    }
}

/// One query's outcome as a single canonical text line, identical wherever it is printed (host
/// native run, firmware over semihosting), so outputs can be compared byte for byte:
///
/// `q=<index> anchor=<a> fact=<c> examined=<e> rejected=<r> n=<k>[ not_found=<reason>]`
/// followed by ` | leaf=<l> cost=<u32> class=<c|-> changed=<hex mask> x=<hex f32 bits,...>` per
/// result, or `q=<index> error=<message>` when the explanation failed outright.
#[derive(Debug, Clone, Copy)]
pub struct Line<'r> {
    pub index: u32,
    pub outcome: Result<(&'r Summary, &'r [Counterfactual]), ExplainError>,
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, results) = match self.outcome {
            Ok(ok) => ok,
            Err(e) => return write!(f, "q={} error={e}", self.index),
        };
        write!(
            f,
            "q={} anchor={} fact={} examined={} rejected={} n={}",
            self.index,
            s.anchor,
            s.fact,
            s.examined,
            s.rejected,
            results.len()
        )?;
        if let Some(reason) = s.not_found {
            write!(f, " not_found={reason:?}")?;
        }
        for r in results {
            write!(f, " | leaf={} cost={} class=", r.leaf, r.cost)?;
            match r.class {
                Some(c) => write!(f, "{c}")?,
                None => f.write_str("-")?,
            }
            write!(f, " changed={:x} x=", r.changed)?;
            for (i, v) in r.x.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(f, "{sep}{:08x}", v.to_bits())?;
            }
        }
        Ok(())
    }
}
