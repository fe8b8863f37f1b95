//! Owned, valid, seeded synthetic models for benchmarks and the fuzz seed corpus.
//!
//! Everything is drawn from one [`Xoshiro128PlusPlus`] stream: a schema mixing every feature
//! kind, random MLPs quantized into the layout the core reads ([`mlp`]), anchors taken from the
//! quantized encoder's output on random points, one random tree per anchor, and a data support
//! drawn from random points (the values they hold of every other numeric feature, the
//! combinations they hold of the first two categorical or binary features).
//! [`Synthetic::parts`] borrows it all as a [`Parts`] for [`bundle::to_slice`];
//! [`Synthetic::to_bytes`] writes the whole bundle.

pub mod mlp;

pub use mlp::OwnedMlp;

use cent_nostd::bundle::{self, BundleError, LinkParts, Parts, SchemaParts, SupportParts};
use cent_nostd::capacity::{ANCHORS, CLASSES, COLUMNS, DEPTH, FEATURES, LATENT, LAYERS, NODES, WIDTH};
use cent_nostd::encoder::EncoderError;
use cent_nostd::quant::QuantError;
use cent_nostd::schema::{Feature, Kind, Mutability, Schema, SchemaError};
use cent_nostd::tree::{Bounds, Node, NodeIdx, Tree};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro128PlusPlus;
use std::fmt;

/// Random points the classifier's logits are centred on.
const CENTERING_SAMPLES: usize = 256;
/// Random points the data support is drawn from (the synthetic "training rows").
const SUPPORT_ROWS: usize = 64;
/// Chance, in percent, that a node off the deep path splits (balanced-ish trees).
const SPLIT_PERCENT: u32 = 90;
/// Random columns tried for a split before a node becomes a leaf.
const SPLIT_TRIES: usize = 16;
/// Narrowest continuous interval that is still split.
const MIN_WIDTH: f32 = 1e-3;

/// Why a synthetic model cannot be generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecError {
    /// Zero features or more than [`FEATURES`].
    Features,
    /// Fewer than 2 classes or more than [`CLASSES`].
    Classes,
    /// Depth above [`DEPTH`], more than [`NODES`] nodes, or too few nodes for the depth
    /// (a path of depth `d` needs `2d + 1`).
    Tree { depth: usize, max_nodes: usize },
    /// Zero anchors or more than [`ANCHORS`].
    Anchors,
    /// An MLP with fewer than 2 widths, more than [`LAYERS`] layers, a zero width, a width above
    /// [`WIDTH`], or a latent size above [`LATENT`].
    Shape,
    /// The generated schema was rejected (a bug in the generator).
    Schema(SchemaError),
    /// A scale could not be quantized.
    Quant(QuantError),
    /// The quantized MLP was rejected (a bug in the generator).
    Encoder(EncoderError),
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Features => write!(f, "feature count must be in 1..={FEATURES}"),
            SpecError::Classes => write!(f, "class count must be in 2..={CLASSES}"),
            SpecError::Tree { depth, max_nodes } => {
                write!(f, "no tree of depth {depth} fits {max_nodes} nodes (limits: depth {DEPTH}, {NODES} nodes)")
            }
            SpecError::Anchors => write!(f, "anchor count must be in 1..={ANCHORS}"),
            SpecError::Shape => write!(f, "mlp widths must be in 1..={WIDTH}, at most {LAYERS} layers"),
            SpecError::Schema(e) => write!(f, "generated schema: {e}"),
            SpecError::Quant(e) => write!(f, "quantization: {e}"),
            SpecError::Encoder(e) => write!(f, "generated mlp: {e}"),
        }
    }
}

impl std::error::Error for SpecError {}

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Written into the bundle's name field.
    pub name: &'static str,
    /// Logical features (kinds cycle continuous, integer, binary, categorical).
    pub features: usize,
    pub classes: u8,
    /// Depth of every tree (reached along at least one path).
    pub depth: usize,
    /// Node cap of every tree.
    pub max_nodes: usize,
    /// Anchors, and so trees.
    pub anchors: usize,
    /// Encoder: columns -> `hidden` ReLU -> `latent`.
    pub hidden: usize,
    pub latent: usize,
    /// Classifier: columns -> this many ReLU -> classes; `None` for a bundle without one.
    pub classifier_hidden: Option<usize>,
}

impl Default for Spec {
    /// A mid-sized tabular model: 12 features, 32 anchors, depth-8 trees of at most 255 nodes,
    /// encoder columns -> 32 -> 8 and classifier columns -> 16 -> 2.
    fn default() -> Self {
        Spec {
            name: "synthetic",
            features: 12,
            classes: 2,
            depth: 8,
            max_nodes: NODES,
            anchors: 32,
            hidden: 32,
            latent: 8,
            classifier_hidden: Some(16),
        }
    }
}

impl Spec {
    /// Checks every count against the core's capacities.
    ///
    /// # Errors
    /// The first [`SpecError`] that applies.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.features == 0 || self.features > FEATURES {
            return Err(SpecError::Features);
        }
        if self.classes < 2 || self.classes as usize > CLASSES {
            return Err(SpecError::Classes);
        }
        check_tree(self.depth, self.max_nodes)?;
        if self.anchors == 0 || self.anchors > ANCHORS {
            return Err(SpecError::Anchors);
        }
        let widths_ok = |w: usize| (1..=WIDTH).contains(&w);
        let classifier_ok = self.classifier_hidden.is_none_or(widths_ok);
        if !widths_ok(self.hidden) || !(1..=LATENT).contains(&self.latent) || !classifier_ok {
            return Err(SpecError::Shape);
        }
        Ok(())
    }
}

fn check_tree(depth: usize, max_nodes: usize) -> Result<(), SpecError> {
    if depth > DEPTH || max_nodes > NODES || max_nodes < 2 * depth + 1 {
        return Err(SpecError::Tree { depth, max_nodes });
    }
    Ok(())
}

/// A uniform draw in `0..n` (modulo bias is irrelevant here); 0 for `n == 0`.
fn below<R: Rng + ?Sized>(rng: &mut R, n: u32) -> u32 {
    rng.next_u32().checked_rem(n).unwrap_or(0)
}

/// A uniform draw in `[0, 1)` with 24 bits.
pub(crate) fn unit<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    (rng.next_u32() >> 8) as f32 / 16_777_216.0
}

/// A uniform draw in `[-1, 1)`, in f64 for the float weights.
pub(crate) fn signed<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    unit(rng) as f64 * 2.0 - 1.0
}

/// A schema of `features` logical features over at most [`COLUMNS`] columns.
///
/// Kinds cycle continuous, integer, binary, categorical (2..=6 categories, narrowed so every
/// later feature keeps a column); feature 2 mod 7 is immutable and 1 mod 5 increase-only (a
/// categorical one is then ordered). The first categorical feature forbids the transition from
/// category 0 to 1.
///
/// # Errors
/// [`SpecError::Features`] or [`SpecError::Classes`] for counts outside the capacities.
pub fn random_schema<R: Rng + ?Sized>(rng: &mut R, features: usize, classes: u8) -> Result<Schema, SpecError> {
    if features == 0 || features > FEATURES {
        return Err(SpecError::Features);
    }
    if classes < 2 || classes as usize > CLASSES {
        return Err(SpecError::Classes);
    }
    let mut schema = Schema::new(classes);
    for j in 0..features {
        let col = schema.columns() as u16;
        // Columns left for this feature once every later feature has one.
        let room = COLUMNS - schema.columns() - (features - j - 1);
        let feature = random_feature(rng, j, col, room);
        schema.push(feature).map_err(SpecError::Schema)?;
    }
    if let Some(j) = schema.features().iter().position(|f| f.kind == Kind::Categorical) {
        schema.set_transition(j, 0, 1, false).map_err(SpecError::Schema)?;
    }
    schema.l0 = 0.02 + 0.08 * unit(rng);
    schema.entropy = 0.02 + 0.08 * unit(rng);
    Ok(schema)
}

/// Feature `j` at column `col`, using at most `room` columns.
fn random_feature<R: Rng + ?Sized>(rng: &mut R, j: usize, col: u16, room: usize) -> Feature {
    let feature = match j % 4 {
        0 => Feature::continuous(col, 0.0, 1.0 + 999.0 * unit(rng)),
        1 => {
            let min = below(rng, 20) as f32;
            Feature::integer(col, min, min + 5.0 + below(rng, 80) as f32)
        }
        3 if room >= 2 => Feature::categorical(col, (2 + below(rng, 5) as usize).min(room) as u8),
        _ => Feature::binary(col),
    };
    let mutability = if j % 7 == 2 {
        Mutability::Immutable
    } else if j % 5 == 1 {
        Mutability::IncreaseOnly
    } else {
        Mutability::Free
    };
    // Only an ordered group may keep a direction.
    let ordered = feature.kind == Kind::Categorical && mutability == Mutability::IncreaseOnly;
    Feature { ordered, ..feature }
        .with_mutability(mutability)
        .with_cost(0.5 + unit(rng))
        .with_sigma(0.05 + 0.2 * unit(rng))
}

/// A random valid encoded point of `schema`: scaled values in `[0, 1]`, whole raw values for
/// discrete kinds, exactly one hot column per categorical group.
pub fn random_point<R: Rng + ?Sized>(rng: &mut R, schema: &Schema) -> Vec<f32> {
    let mut x = vec![0.0; schema.columns()];
    for f in schema.features() {
        let c = f.col as usize;
        match f.kind {
            Kind::Categorical => x[c + below(rng, f.width as u32) as usize] = 1.0,
            Kind::Continuous => x[c] = unit(rng),
            Kind::Integer | Kind::Binary => {
                let k = below(rng, (f.max - f.min) as u32 + 1) as f32;
                x[c] = f.encode(f.min + k);
            }
        }
    }
    x
}

/// Records of a random tree over `schema`: nodes numbered breadth first (children after their
/// parent), at most `max_nodes` of them, and exactly `depth` levels along at least one path.
///
/// One "spine" path always splits down to `depth`, with its nodes reserved up front; every other
/// node splits with probability 0.9 while it is shallower than `depth` and the reservation
/// allows. So small depths give nearly full trees and large depths sparse ones at the cap.
/// Like a fitted tree, every split cuts its node's box into two non-empty boxes.
///
/// # Errors
/// [`SpecError::Tree`] when the depth or node count is outside the capacities.
pub fn random_tree<R: Rng + ?Sized>(
    rng: &mut R,
    schema: &Schema,
    depth: usize,
    max_nodes: usize,
) -> Result<Vec<u8>, SpecError> {
    check_tree(depth, max_nodes)?;
    let mut nodes = vec![placeholder()];
    // Level and box of every node.
    let mut boxes: Vec<(usize, Bounds)> = vec![(0usize, Bounds::default())];
    let (mut spine, mut spine_left) = (0usize, depth);
    let mut i = 0;
    // Invariant: nodes.len() + 2 * spine_left <= max_nodes, so the spine can always split.
    while i < nodes.len() {
        let (level, bounds) = boxes[i].clone();
        let on_spine = i == spine && level < depth;
        let may_split = level < depth && nodes.len() + 2 + 2 * spine_left <= max_nodes;
        let wants = on_spine || (may_split && below(rng, 100) < SPLIT_PERCENT);
        match wants.then(|| random_split(rng, schema, &bounds, on_spine)).flatten() {
            Some((col, threshold)) => {
                let left = nodes.len() as NodeIdx;
                nodes[i] = Node::Split { col, threshold, left, right: left + 1 };
                for go_left in [true, false] {
                    let mut child = bounds.clone();
                    child.restrict(col as usize, threshold, go_left);
                    nodes.push(placeholder());
                    boxes.push((level + 1, child));
                }
                if on_spine {
                    spine = left as usize + below(rng, 2) as usize;
                    spine_left -= 1;
                }
            }
            None => nodes[i] = random_leaf(rng, schema.classes()),
        }
        i += 1;
    }
    Ok(nodes.iter().flat_map(Node::to_bytes).collect())
}

fn placeholder() -> Node {
    Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 0 }
}

/// A split `(col, threshold)` of a node with box `bounds` into two non-empty boxes, from a few
/// random columns. When none of them splits and the node must (`force`), feature 0 (always
/// continuous) is halved.
fn random_split<R: Rng + ?Sized>(rng: &mut R, schema: &Schema, bounds: &Bounds, force: bool) -> Option<(u16, f32)> {
    for _ in 0..SPLIT_TRIES {
        let col = below(rng, schema.columns() as u32) as usize;
        let Some(f) = schema.feature_of_column(col).and_then(|j| schema.feature(j)) else { continue };
        if let Some(threshold) = threshold_in(rng, f, col, bounds) {
            return Some((col as u16, threshold));
        }
    }
    let (lo, hi) = unit_interval(bounds, 0);
    force.then_some((0, lo + (hi - lo) / 2.0))
}

/// A threshold on column `col` of `f` whose both sides hold feasible values inside `b`.
fn threshold_in<R: Rng + ?Sized>(rng: &mut R, f: &Feature, col: usize, b: &Bounds) -> Option<f32> {
    match f.kind {
        Kind::Continuous => {
            let (lo, hi) = unit_interval(b, col);
            (hi - lo > MIN_WIDTH).then(|| lo + (hi - lo) * (0.2 + 0.6 * unit(rng)))
        }
        Kind::Integer => {
            // Whole raw values inside the box; split between two neighbours.
            let whole = (f.min as i32..=f.max as i32).map(|k| f.encode(k as f32)).filter(|&v| b.admits(col, v));
            let whole: Vec<f32> = whole.collect();
            let k = below(rng, whole.len().saturating_sub(1) as u32) as usize;
            (whole.len() >= 2).then(|| (whole[k] + whole[k + 1]) / 2.0)
        }
        Kind::Binary => (b.admits(col, 0.0) && b.admits(col, 1.0)).then_some(0.5),
        Kind::Categorical => {
            // "This category or not": both sides non-empty while it is one of two or more left.
            let left = b.categories(f.col as usize, f.width as usize);
            let own = 1u64 << (col - f.col as usize);
            (left.count_ones() >= 2 && left & own != 0).then_some(0.5)
        }
    }
}

/// Column `col`'s box interval clipped to the encoded range `[0, 1]`.
fn unit_interval(b: &Bounds, col: usize) -> (f32, f32) {
    let (lo, hi) = b.interval(col);
    (lo.max(0.0), hi.min(1.0))
}

/// A leaf of a random class whose entropy matches its purity (two-class entropy, in bits).
fn random_leaf<R: Rng + ?Sized>(rng: &mut R, classes: usize) -> Node {
    let purity = 0.5 + 0.5 * unit(rng);
    let h = |p: f32| if p > 0.0 { -p * p.log2() } else { 0.0 };
    let entropy = h(purity) + h(1.0 - purity);
    Node::Leaf { class: below(rng, classes as u32) as u8, purity, entropy, samples: 1 + below(rng, 500) as u16 }
}

/// Number of levels below the root of a validated tree (0 for a lone leaf).
pub fn tree_depth(tree: &Tree<'_>) -> usize {
    let mut level = vec![0usize; tree.len()];
    for i in 0..tree.len() {
        if let Some(Node::Split { left, right, .. }) = tree.node(i as NodeIdx) {
            let next = level[i] + 1;
            for child in [left as usize, right as usize] {
                // Validation put every child after its parent and inside the tree.
                if let Some(l) = level.get_mut(child) {
                    *l = next;
                }
            }
        }
    }
    level.into_iter().max().unwrap_or(0)
}

/// An owned synthetic model: everything a bundle borrows.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    name: &'static str,
    schema: Schema,
    encoder: OwnedMlp,
    classifier: Option<OwnedMlp>,
    /// `trees.len() · latent` i16 LE.
    anchors: Vec<u8>,
    trees: Vec<Vec<u8>>,
    support: OwnedSupport,
    /// A random agreement byte per node of every tree, tree after tree.
    agreement: Vec<u8>,
    /// [`PEOPLE_PER_ANCHOR`] random people per anchor, in the core's records.
    people: Vec<u8>,
}

/// People each synthetic anchor carries.
const PEOPLE_PER_ANCHOR: usize = 2;

/// The bytes behind a synthetic [`SupportParts`].
#[derive(Debug, Clone, PartialEq, Default)]
struct OwnedSupport {
    counts: Vec<u16>,
    values: Vec<u8>,
    /// Features and combinations of the one link, if the schema has two categorical or binary
    /// features.
    link: Option<(Vec<u16>, Vec<u8>)>,
}

/// Observed values of every other numeric feature and the combinations of the first two
/// categorical or binary features, as [`SUPPORT_ROWS`] random points hold them.
fn random_support<R: Rng + ?Sized>(rng: &mut R, schema: &Schema) -> OwnedSupport {
    let rows: Vec<Vec<f32>> = (0..SUPPORT_ROWS).map(|_| random_point(rng, schema)).collect();
    let mut out = OwnedSupport::default();
    for (j, f) in schema.features().iter().enumerate() {
        let mut v: Vec<f32> = Vec::new();
        if matches!(f.kind, Kind::Integer | Kind::Continuous) && j % 2 == 0 {
            v = rows.iter().map(|r| r[f.col as usize]).collect();
            v.sort_by(f32::total_cmp);
            v.dedup();
        }
        out.counts.push(v.len() as u16);
        out.values.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }
    let linked: Vec<usize> = (0..schema.features().len())
        .filter(|&j| matches!(schema.features()[j].kind, Kind::Categorical | Kind::Binary))
        .take(2)
        .collect();
    if linked.len() == 2 {
        let code = |f: &Feature, r: &[f32]| match f.kind {
            Kind::Categorical => cent_nostd::schema::category(f, r).map_or(0.0, f32::from),
            _ => r[f.col as usize],
        };
        let (a, b) = (&schema.features()[linked[0]], &schema.features()[linked[1]]);
        let mut combos: Vec<([f32; 2], usize)> = Vec::new();
        for r in &rows {
            let key = [code(a, r), code(b, r)];
            match combos.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => combos.push((key, 1)),
            }
        }
        // Most frequent first, then by codes (the host's order).
        combos.sort_by(|(k, n), (l, m)| m.cmp(n).then(k[0].total_cmp(&l[0])).then(k[1].total_cmp(&l[1])));
        let bytes = combos.iter().flat_map(|(k, _)| k.iter().flat_map(|v| v.to_le_bytes())).collect();
        out.link = Some((linked.iter().map(|&j| j as u16).collect(), bytes));
    }
    out
}

impl Synthetic {
    /// Generates the model described by `spec` from `seed`; the same pair always gives the same
    /// bytes.
    ///
    /// # Errors
    /// [`Spec::check`]'s error, or a [`SpecError`] naming a generator bug.
    pub fn generate(spec: &Spec, seed: u64) -> Result<Synthetic, SpecError> {
        spec.check()?;
        let rng = &mut Xoshiro128PlusPlus::seed_from_u64(seed);
        let schema = random_schema(rng, spec.features, spec.classes)?;
        let columns = schema.columns();
        let encoder = OwnedMlp::random(rng, &[columns, spec.hidden, spec.latent], 1.0)?;
        let classifier = match spec.classifier_hidden {
            Some(h) => {
                let samples: Vec<Vec<f32>> = (0..CENTERING_SAMPLES).map(|_| random_point(rng, &schema)).collect();
                Some(OwnedMlp::random_centered(rng, &[columns, h, schema.classes()], 1.0, &samples)?)
            }
            None => None,
        };
        let anchors = random_anchors(rng, &schema, &encoder, spec.anchors)?;
        let trees: Vec<Vec<u8>> = (0..spec.anchors)
            .map(|_| random_tree(rng, &schema, spec.depth, spec.max_nodes))
            .collect::<Result<_, _>>()?;
        let support = random_support(rng, &schema);
        let nodes: usize = trees.iter().map(|t| t.len() / cent_nostd::tree::RECORD_LEN).sum();
        let agreement = (0..nodes).map(|_| (rng.next_u32() >> 24) as u8).collect();
        let mut people = Vec::new();
        for _ in 0..spec.anchors * PEOPLE_PER_ANCHOR {
            let row = random_point(rng, &schema);
            people.push((rng.next_u32() % schema.classes() as u32) as u8);
            for f in schema.features() {
                people.extend(cent_nostd::people::code(f.kind, &row[f.columns()]).to_le_bytes());
            }
        }
        Ok(Synthetic { name: spec.name, schema, encoder, classifier, anchors, trees, support, agreement, people })
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn encoder(&self) -> &OwnedMlp {
        &self.encoder
    }

    pub fn classifier(&self) -> Option<&OwnedMlp> {
        self.classifier.as_ref()
    }

    /// Node records of each anchor's tree.
    pub fn trees(&self) -> &[Vec<u8>] {
        &self.trees
    }

    /// The payload, borrowed, for [`bundle::to_slice`] or [`cent_nostd::bundle::Bundle::from_parts`].
    pub fn parts(&self) -> Parts<'_> {
        Parts {
            name: self.name,
            schema: SchemaParts::of(&self.schema),
            encoder: self.encoder.parts(),
            classifier: self.classifier.as_ref().map(OwnedMlp::parts),
            latent: self.encoder.outputs() as u8,
            anchors: &self.anchors,
            // At most ANCHORS trees (checked by `Spec::check`), so every push fits.
            trees: self.trees.iter().map(Vec::as_slice).collect(),
            // The generator keeps within the capacities (a schema of at most FEATURES, one
            // link of two features), so every conversion fits.
            support: SupportParts {
                counts: self.support.counts.iter().copied().collect(),
                values: &self.support.values,
                links: self
                    .support
                    .link
                    .iter()
                    .map(|(f, c)| LinkParts { features: f.iter().copied().collect(), combinations: c })
                    .collect(),
            },
            agreement: &self.agreement,
            people: &self.people,
        }
    }

    /// The whole bundle: header, checksum and postcard payload.
    ///
    /// # Errors
    /// A [`BundleError`] from [`bundle::to_slice`] other than a too-small buffer, which is grown.
    pub fn to_bytes(&self) -> Result<Vec<u8>, BundleError> {
        let parts = self.parts();
        let mut len = 4096 + self.anchors.len() + self.trees.iter().map(Vec::len).sum::<usize>();
        loop {
            let mut buf = vec![0u8; len];
            match bundle::to_slice(&parts, &mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf);
                }
                Err(BundleError::Buffer) if len < 1 << 26 => len *= 2,
                Err(e) => return Err(e),
            }
        }
    }
}

/// `count` anchors: the quantized encoder's outputs on random points, as i16 LE.
fn random_anchors<R: Rng + ?Sized>(
    rng: &mut R,
    schema: &Schema,
    encoder: &OwnedMlp,
    count: usize,
) -> Result<Vec<u8>, SpecError> {
    let view = encoder.view().map_err(SpecError::Encoder)?;
    let mut z = [0i16; WIDTH];
    let mut anchors = Vec::with_capacity(count * view.outputs() * 2);
    for _ in 0..count {
        view.forward(&random_point(rng, schema), &mut z).map_err(SpecError::Encoder)?;
        anchors.extend(z[..view.outputs()].iter().flat_map(|v| v.to_le_bytes()));
    }
    Ok(anchors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cent_nostd::atlas::{Counterfactual, Explainer, Options};
    use cent_nostd::bundle::Bundle;

    fn rng(seed: u64) -> Xoshiro128PlusPlus {
        Xoshiro128PlusPlus::seed_from_u64(seed)
    }

    #[test]
    fn test_schema_mixes_kinds_within_columns() {
        let s = random_schema(&mut rng(1), FEATURES, 2).unwrap();
        assert_eq!(s.features().len(), FEATURES);
        assert!(s.columns() <= COLUMNS);
        for kind in [Kind::Continuous, Kind::Integer, Kind::Binary, Kind::Categorical] {
            assert!(s.features().iter().any(|f| f.kind == kind), "no {kind:?} feature");
        }
        assert_eq!(random_schema(&mut rng(1), 0, 2), Err(SpecError::Features));
        assert_eq!(random_schema(&mut rng(1), 3, 1), Err(SpecError::Classes));
    }

    #[test]
    fn test_points_are_valid_encodings() {
        let s = random_schema(&mut rng(2), 9, 2).unwrap();
        let x = random_point(&mut rng(3), &s);
        assert_eq!(x.len(), s.columns());
        for f in s.features() {
            let cols = &x[f.columns()];
            match f.kind {
                Kind::Categorical => assert_eq!(cols.iter().filter(|&&v| v == 1.0).count(), 1),
                _ => assert!((0.0..=1.0).contains(&cols[0])),
            }
            if f.is_discrete() {
                let raw = f.decode(cols[0]);
                assert!((raw - raw.round()).abs() < 1e-3, "raw {raw} not whole");
            }
        }
    }

    #[test]
    fn test_trees_reach_requested_depth_within_node_cap() {
        let s = random_schema(&mut rng(4), 8, 3).unwrap();
        for depth in [0, 1, 4, 7, 12, DEPTH] {
            let r = &mut rng(depth as u64);
            let bytes = random_tree(r, &s, depth, NODES).unwrap();
            let tree = Tree::new(&bytes, s.columns(), s.classes()).unwrap();
            assert!(tree.len() <= NODES);
            assert_eq!(tree_depth(&tree), depth, "depth {depth}");
        }
        // Depth 4 is nearly full (31 nodes at most); depth 12 is capped.
        let bytes = random_tree(&mut rng(5), &s, 12, NODES).unwrap();
        assert!(Tree::new(&bytes, s.columns(), s.classes()).unwrap().len() > 200);
        let tight = random_tree(&mut rng(6), &s, 10, 21).unwrap();
        assert_eq!(Tree::new(&tight, s.columns(), s.classes()).unwrap().len(), 21, "a bare spine");
        assert_eq!(random_tree(&mut rng(7), &s, 11, 22), Err(SpecError::Tree { depth: 11, max_nodes: 22 }));
        assert!(random_tree(&mut rng(7), &s, DEPTH + 1, NODES).is_err());
    }

    #[test]
    fn test_spec_check_names_the_problem() {
        let ok = Spec::default();
        assert_eq!(ok.check(), Ok(()));
        assert_eq!(Spec { anchors: ANCHORS + 1, ..ok }.check(), Err(SpecError::Anchors));
        assert_eq!(Spec { latent: LATENT + 1, ..ok }.check(), Err(SpecError::Shape));
        assert_eq!(Spec { classifier_hidden: Some(0), ..ok }.check(), Err(SpecError::Shape));
        assert_eq!(Spec { depth: 12, max_nodes: 24, ..ok }.check(), Err(SpecError::Tree { depth: 12, max_nodes: 24 }));
    }

    #[test]
    fn test_bundle_round_trips_and_explains() {
        let syn = Synthetic::generate(&Spec::default(), 10).unwrap();
        let bytes = syn.to_bytes().unwrap();
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        assert_eq!((bundle.name, bundle.atlas.len(), bundle.atlas.latent()), ("synthetic", 32, 8));
        assert_eq!(bundle.schema, *syn.schema());
        let model = bundle.model();
        let query = bundle.schema.default_query();
        let mut explainer: Box<Explainer> = Box::default();
        let mut out: heapless::Vec<Counterfactual, 3> = heapless::Vec::new();
        let r = &mut rng(11);
        let mut found = 0;
        let mut anchors = std::collections::BTreeSet::new();
        for _ in 0..20 {
            let x = random_point(r, syn.schema());
            let summary = explainer.explain(&model, &x, &query, Options::default(), r, &mut out).unwrap();
            anchors.insert(summary.anchor);
            found += out.len();
        }
        assert!(found >= 20, "only {found} counterfactuals for 20 queries");
        assert!(anchors.len() > 3, "queries hit only anchors {anchors:?}");
    }

    #[test]
    fn test_generation_is_deterministic() {
        let spec = Spec { anchors: 2, depth: 4, classifier_hidden: None, ..Spec::default() };
        let a = Synthetic::generate(&spec, 12).unwrap().to_bytes().unwrap();
        let b = Synthetic::generate(&spec, 12).unwrap().to_bytes().unwrap();
        let c = Synthetic::generate(&spec, 13).unwrap().to_bytes().unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(Bundle::from_bytes(&a).unwrap().classifier.is_none());
    }
}
