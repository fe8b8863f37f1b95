//! The bundle: the one wire format of the core (postcard, versioned, checksummed).
//!
//! Layout: `b"CENT"`, format version (u16 LE), payload length (u32 LE), CRC-32 of the payload
//! (u32 LE, IEEE polynomial), then the postcard payload [`Parts`]. Large arrays (weights, tree
//! records, anchors, observed values) are borrowed byte slices, so a bundle in flash is read in
//! place.
//! [`Bundle::from_bytes`] checks the header, checksum, every length, index and scale once and
//! returns typed views the hot path trusts; it returns `Err` — never panics — on any byte string.

use crate::atlas::{Atlas, AtlasError, Model};
use crate::capacity::{ANCHORS, COLUMNS, FEATURES, LAYERS, LINK_FEATURES, LINKS};
use crate::encoder::{DenseParts, EncoderError, Mlp};
use crate::people::PeopleError;
use crate::schema::{Feature, Kind, Mutability, Schema, SchemaError};
use crate::support::{Support, SupportError};
use core::fmt;
use serde::{Deserialize, Serialize};

/// First bytes of every bundle.
pub const MAGIC: [u8; 4] = *b"CENT";
/// The format version this build reads and writes (2: features carry `ordered`; 3: layers
/// carry their weight width; 4: the data support, observed values and links; 5: the regions'
/// agreement; 6: the anchors' people).
pub const VERSION: u16 = 6;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 14;

/// Why bytes are not a valid bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BundleError {
    /// Does not start with [`MAGIC`]: not a bundle.
    Magic,
    /// A format version this build does not read.
    Version {
        found: u16,
    },
    /// Shorter or longer than the header says (truncated or padded).
    Length,
    /// The payload does not match its CRC-32 (corrupted).
    Checksum,
    /// The payload is not a well-formed postcard [`Parts`].
    Decode,
    Schema(SchemaError),
    Encoder(EncoderError),
    Classifier(EncoderError),
    Atlas(AtlasError),
    Support(SupportError),
    People(PeopleError),
    /// The encoder, classifier, atlas and schema disagree on a dimension.
    Mismatch,
    /// The output buffer is too small (writing only).
    Buffer,
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::Magic => write!(f, "not a cent bundle (bad magic)"),
            BundleError::Version { found } => {
                write!(f, "bundle format version {found} is not supported (expected {VERSION})")
            }
            BundleError::Length => write!(f, "bundle is truncated or has trailing bytes"),
            BundleError::Checksum => write!(f, "bundle checksum mismatch (corrupted)"),
            BundleError::Decode => write!(f, "bundle payload is malformed"),
            BundleError::Schema(e) => write!(f, "bundle schema: {e}"),
            BundleError::Encoder(e) => write!(f, "bundle encoder: {e}"),
            BundleError::Classifier(e) => write!(f, "bundle classifier: {e}"),
            BundleError::Atlas(e) => write!(f, "bundle atlas: {e}"),
            BundleError::Support(e) => write!(f, "bundle support: {e}"),
            BundleError::People(e) => write!(f, "bundle {e}"),
            BundleError::Mismatch => write!(f, "bundle parts disagree on a dimension"),
            BundleError::Buffer => write!(f, "output buffer too small for the bundle"),
        }
    }
}

impl core::error::Error for BundleError {}

/// One logical feature on the wire (its first column is implied by the order).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FeatureParts {
    /// 0 continuous, 1 integer, 2 binary, 3 categorical.
    pub kind: u8,
    pub width: u8,
    /// 0 free, 1 increase-only, 2 decrease-only, 3 immutable.
    pub mutability: u8,
    pub min: f32,
    pub max: f32,
    pub sigma: f32,
    pub cost: f32,
    /// A categorical feature whose categories are in order (see [`Feature::ordered`]).
    pub ordered: bool,
}

/// The schema on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaParts {
    pub classes: u8,
    pub l0: f32,
    pub entropy: f32,
    pub margin: f32,
    pub features: heapless::Vec<FeatureParts, FEATURES>,
    /// One mask per encoded column (see [`Schema::transition_mask`]).
    pub transitions: heapless::Vec<u64, COLUMNS>,
}

/// One quantized layer on the wire (see [`DenseParts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerParts<'a> {
    pub inputs: u16,
    pub outputs: u16,
    pub activation: u8,
    /// [`crate::encoder::WeightWidth::code`]: bytes per weight.
    pub weight_width: u8,
    pub weights: &'a [u8],
    pub bias: &'a [u8],
    pub multiplier: &'a [u8],
    pub shift: &'a [u8],
}

/// A quantized MLP on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpParts<'a> {
    pub input_scale: f32,
    pub output_scale: f32,
    #[serde(borrow)]
    pub layers: heapless::Vec<LayerParts<'a>, LAYERS>,
}

/// One link of the data support on the wire (see [`crate::support`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkParts<'a> {
    /// Feature positions in the schema.
    pub features: heapless::Vec<u16, LINK_FEATURES>,
    /// `features.len()` little-endian `f32` per observed combination, most frequent first.
    pub combinations: &'a [u8],
}

/// The data support on the wire (see [`crate::support`]); all empty for none.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SupportParts<'a> {
    /// Observed values per feature (0: any value in range), or no entry at all.
    pub counts: heapless::Vec<u16, FEATURES>,
    /// The observed values, feature after feature, ascending little-endian `f32`.
    pub values: &'a [u8],
    #[serde(borrow)]
    pub links: heapless::Vec<LinkParts<'a>, LINKS>,
}

impl<'a> SupportParts<'a> {
    /// Validates the support against `schema`.
    ///
    /// # Errors
    /// [`SupportError`] for counts that do not match, values out of order, or a bad link.
    pub fn to_support(&self, schema: &Schema) -> Result<Support<'a>, SupportError> {
        let mut support = Support::new(schema, &self.counts, self.values)?;
        for l in &self.links {
            support.push_link(schema, &l.features, l.combinations)?;
        }
        Ok(support)
    }
}

/// The whole payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parts<'a> {
    /// Free text: dataset and model names.
    pub name: &'a str,
    pub schema: SchemaParts,
    #[serde(borrow)]
    pub encoder: MlpParts<'a>,
    #[serde(borrow)]
    pub classifier: Option<MlpParts<'a>>,
    pub latent: u8,
    /// `trees.len() · latent` little-endian i16, in encoder output steps.
    pub anchors: &'a [u8],
    /// Node records of each anchor's tree (see [`crate::tree`]).
    #[serde(borrow)]
    pub trees: heapless::Vec<&'a [u8], ANCHORS>,
    /// Values and combinations the answers keep to.
    #[serde(borrow)]
    pub support: SupportParts<'a>,
    /// Each region's agreement, one byte per node of every tree, tree after tree, or empty
    /// (see [`Atlas`]).
    pub agreement: &'a [u8],
    /// The people each anchor carries, in [`crate::people`]'s records, or empty.
    pub people: &'a [u8],
}

impl SchemaParts {
    /// The wire form of a schema.
    pub fn of(schema: &Schema) -> SchemaParts {
        let mut features = heapless::Vec::new();
        for f in schema.features() {
            let kind = match f.kind {
                Kind::Continuous => 0,
                Kind::Integer => 1,
                Kind::Binary => 2,
                Kind::Categorical => 3,
            };
            let mutability = match f.mutability {
                Mutability::Free => 0,
                Mutability::IncreaseOnly => 1,
                Mutability::DecreaseOnly => 2,
                Mutability::Immutable => 3,
            };
            let p = FeatureParts {
                kind,
                width: f.width,
                mutability,
                min: f.min,
                max: f.max,
                sigma: f.sigma,
                cost: f.cost,
                ordered: f.ordered,
            };
            // A schema never holds more than FEATURES features.
            let _ = features.push(p);
        }
        let mut transitions = heapless::Vec::new();
        for c in 0..schema.columns() {
            let _ = transitions.push(schema.transition_mask(c));
        }
        SchemaParts {
            classes: schema.classes() as u8,
            l0: schema.l0,
            entropy: schema.entropy,
            margin: schema.margin,
            features,
            transitions,
        }
    }

    /// Rebuilds and validates the schema.
    ///
    /// # Errors
    /// [`SchemaError`] for any invalid feature, code, transition table or class count (an
    /// `ordered` flag on a feature that is not categorical, a one-direction default on an
    /// unordered categorical feature).
    pub fn to_schema(&self) -> Result<Schema, SchemaError> {
        if self.classes == 0 || self.classes as usize > crate::capacity::CLASSES {
            return Err(SchemaError::Classes);
        }
        let mut s: Schema = Schema::new(self.classes);
        for (i, p) in self.features.iter().enumerate() {
            let bad = SchemaError::Layout { feature: i as u16 };
            let kind = [Kind::Continuous, Kind::Integer, Kind::Binary, Kind::Categorical]
                .get(p.kind as usize)
                .copied()
                .ok_or(bad)?;
            let mutability =
                [Mutability::Free, Mutability::IncreaseOnly, Mutability::DecreaseOnly, Mutability::Immutable]
                    .get(p.mutability as usize)
                    .copied()
                    .ok_or(bad)?;
            let col = s.columns() as u16;
            let f = Feature {
                kind,
                col,
                width: p.width,
                min: p.min,
                max: p.max,
                sigma: p.sigma,
                cost: p.cost,
                mutability,
                ordered: p.ordered,
            };
            s.push(f)?;
        }
        if self.transitions.len() != s.columns() {
            return Err(<Schema>::CAPACITY);
        }
        copy_transitions(&mut s, &self.transitions)?;
        let weight_ok = |w: f32| w.is_finite() && w >= 0.0;
        if !(weight_ok(self.l0) && weight_ok(self.entropy) && self.margin.is_finite() && self.margin > 0.0) {
            return Err(SchemaError::Value { feature: FEATURES as u16 });
        }
        s.l0 = self.l0;
        s.entropy = self.entropy;
        s.margin = self.margin;
        Ok(s)
    }
}

fn copy_transitions(s: &mut Schema, masks: &[u64]) -> Result<(), SchemaError> {
    let groups: heapless::Vec<(usize, Feature), FEATURES> =
        s.features().iter().copied().enumerate().filter(|(_, f)| f.kind == Kind::Categorical).collect();
    for (j, f) in groups {
        for from in 0..f.width {
            let mask = masks.get(f.col as usize + from as usize).copied().unwrap_or(u64::MAX);
            for to in 0..f.width {
                s.set_transition(j, from, to, mask & (1 << to) != 0)?;
            }
        }
    }
    Ok(())
}

impl<'a> MlpParts<'a> {
    fn view(&self) -> Result<Mlp<'a>, EncoderError> {
        let mut layers: heapless::Vec<DenseParts<'a>, LAYERS> = heapless::Vec::new();
        for l in &self.layers {
            let p = DenseParts {
                inputs: l.inputs,
                outputs: l.outputs,
                activation: l.activation,
                weight_width: l.weight_width,
                weights: l.weights,
                bias: l.bias,
                multiplier: l.multiplier,
                shift: l.shift,
            };
            layers.push(p).map_err(|_| EncoderError::Capacity)?;
        }
        Mlp::new(&layers, self.input_scale, self.output_scale)
    }
}

/// A validated bundle: the schema, the quantized encoder and classifier, the atlas and the data
/// support.
#[derive(Debug, Clone)]
pub struct Bundle<'a> {
    pub name: &'a str,
    pub schema: Schema,
    pub encoder: Mlp<'a>,
    pub classifier: Option<Mlp<'a>>,
    pub atlas: Atlas<'a>,
    pub support: Support<'a>,
}

impl<'a> Bundle<'a> {
    /// Parses and validates a bundle in place.
    ///
    /// # Errors
    /// A [`BundleError`] saying what is wrong; never panics on any input.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, BundleError> {
        let payload = check_header(bytes)?;
        let (parts, rest) = postcard::take_from_bytes::<Parts<'a>>(payload).map_err(|_| BundleError::Decode)?;
        if !rest.is_empty() {
            return Err(BundleError::Decode);
        }
        Self::from_parts(&parts)
    }

    /// Validates already-decoded parts (what the host writes).
    ///
    /// # Errors
    /// As [`Bundle::from_bytes`] after decoding.
    pub fn from_parts(parts: &Parts<'a>) -> Result<Self, BundleError> {
        let schema = parts.schema.to_schema().map_err(BundleError::Schema)?;
        let encoder = parts.encoder.view().map_err(BundleError::Encoder)?;
        let classifier = match &parts.classifier {
            Some(c) => Some(c.view().map_err(BundleError::Classifier)?),
            None => None,
        };
        let latent = parts.latent as usize;
        if encoder.inputs() != schema.columns() || encoder.outputs() != latent {
            return Err(BundleError::Mismatch);
        }
        if classifier.as_ref().is_some_and(|c| c.inputs() != schema.columns() || c.outputs() != schema.classes()) {
            return Err(BundleError::Mismatch);
        }
        let atlas = Atlas::new(latent, parts.anchors, &parts.trees, schema.columns(), schema.classes())
            .and_then(|a| a.with_agreement(parts.agreement))
            .map_err(BundleError::Atlas)?;
        let atlas = atlas.with_people(&schema, parts.people).map_err(BundleError::People)?;
        let support = parts.support.to_support(&schema).map_err(BundleError::Support)?;
        Ok(Bundle { name: parts.name, schema, encoder, classifier, atlas, support })
    }

    /// The borrowed model `explain` runs on.
    pub fn model(&self) -> Model<'_, 'a> {
        Model {
            schema: &self.schema,
            encoder: &self.encoder,
            classifier: self.classifier.as_ref(),
            atlas: &self.atlas,
            support: &self.support,
        }
    }
}

fn check_header(bytes: &[u8]) -> Result<&[u8], BundleError> {
    let header = bytes.get(..HEADER_LEN).ok_or(if bytes.starts_with(&MAGIC[..bytes.len().min(4)]) {
        BundleError::Length
    } else {
        BundleError::Magic
    })?;
    if header[..4] != MAGIC {
        return Err(BundleError::Magic);
    }
    let version = u16::from_le_bytes([header[4], header[5]]);
    if version != VERSION {
        return Err(BundleError::Version { found: version });
    }
    let len = u32::from_le_bytes([header[6], header[7], header[8], header[9]]) as usize;
    let crc = u32::from_le_bytes([header[10], header[11], header[12], header[13]]);
    let payload = &bytes[HEADER_LEN..];
    if payload.len() != len {
        return Err(BundleError::Length);
    }
    if crc32(payload) != crc {
        return Err(BundleError::Checksum);
    }
    Ok(payload)
}

/// Writes `parts` as a bundle into `buf`, returning the bytes used.
///
/// # Errors
/// [`BundleError::Buffer`] when `buf` is too small.
pub fn to_slice(parts: &Parts<'_>, buf: &mut [u8]) -> Result<usize, BundleError> {
    let (header, body) = buf.split_at_mut_checked(HEADER_LEN).ok_or(BundleError::Buffer)?;
    let len = postcard::to_slice(parts, body).map_err(|_| BundleError::Buffer)?.len();
    let crc = crc32(&body[..len]);
    header[..4].copy_from_slice(&MAGIC);
    header[4..6].copy_from_slice(&VERSION.to_le_bytes());
    header[6..10].copy_from_slice(&(len as u32).to_le_bytes());
    header[10..14].copy_from_slice(&crc.to_le_bytes());
    Ok(HEADER_LEN + len)
}

/// CRC-32 lookup table (IEEE 802.3 polynomial, reflected), built at compile time: 1 KiB of
/// flash for an eight-fold faster bundle check than the bitwise loop.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC-32 (IEEE 802.3, reflected, as in zip and PNG).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc = (crc >> 8) ^ CRC_TABLE[((crc ^ b as u32) & 0xFF) as usize];
    }
    !crc
}

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;
    use super::*;
    use crate::atlas::{BALANCE_CALLS, Counted, Explainer, NotFound, Options, Oracle};
    use crate::quant::quantize_multiplier;
    use crate::schema::Feature;
    use crate::tree::Node;
    use proptest::prelude::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;
    use std::vec::Vec;

    const STEP: f32 = 1.0 / 16384.0;

    /// Tree records of `nodes`, in order.
    fn records(nodes: &[Node]) -> Vec<u8> {
        nodes.iter().flat_map(|n| n.to_bytes()).collect()
    }

    /// Owned byte arrays behind a tiny two-feature bundle.
    pub(crate) struct Fixture {
        enc_w: Vec<u8>,
        cls_w: Vec<u8>,
        zero_bias: Vec<u8>,
        cls_bias: Vec<u8>,
        mult: Vec<u8>,
        shift: Vec<u8>,
        anchors: Vec<u8>,
        tree: Vec<u8>,
    }

    impl Fixture {
        pub(crate) fn new() -> Self {
            let i8s = |v: &[i8]| v.iter().map(|&w| w as u8).collect::<Vec<u8>>();
            let i32s = |v: &[i32]| v.iter().flat_map(|b| b.to_le_bytes()).collect::<Vec<u8>>();
            // Identity encoder and classifier "class 1 iff x0 > 0.5" (weights in steps of 1/127).
            let (m, s) = quantize_multiplier(1.0 / 127.0).unwrap();
            let half = (0.5 / (STEP as f64 / 127.0)) as i32;
            let anchors: Vec<u8> = [4096i16, 8192, 12288, 8192].iter().flat_map(|v| v.to_le_bytes()).collect();
            let tree = records(&[
                Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
                Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 },
                Node::Leaf { class: 1, purity: 0.9, entropy: 0.47, samples: 9 },
            ]);
            Fixture {
                enc_w: i8s(&[127, 0, 0, 127]),
                cls_w: i8s(&[-127, 0, 127, 0]),
                zero_bias: i32s(&[0, 0]),
                cls_bias: i32s(&[half, -half]),
                mult: i32s(&[m, m]),
                shift: i8s(&[s, s]),
                anchors,
                tree,
            }
        }

        fn layer<'a>(&'a self, weights: &'a [u8], bias: &'a [u8]) -> MlpParts<'a> {
            let l = LayerParts {
                inputs: 2,
                outputs: 2,
                activation: 0,
                weight_width: 1,
                weights,
                bias,
                multiplier: &self.mult,
                shift: &self.shift,
            };
            MlpParts { input_scale: STEP, output_scale: STEP, layers: heapless::Vec::from_slice(&[l]).unwrap() }
        }

        pub(crate) fn parts(&self) -> Parts<'_> {
            let mut schema: Schema = Schema::new(2);
            schema.push(Feature::continuous(0, 0.0, 100.0).with_sigma(0.2)).unwrap();
            schema.push(Feature::continuous(1, 0.0, 1.0).with_mutability(Mutability::Immutable)).unwrap();
            Parts {
                name: "fixture",
                schema: SchemaParts::of(&schema),
                encoder: self.layer(&self.enc_w, &self.zero_bias),
                classifier: Some(self.layer(&self.cls_w, &self.cls_bias)),
                latent: 2,
                anchors: &self.anchors,
                trees: heapless::Vec::from_slice(&[&self.tree[..], &self.tree[..]]).unwrap(),
                support: SupportParts::default(),
                agreement: &[],
                people: &[],
            }
        }

        pub(crate) fn bytes(&self) -> Vec<u8> {
            let mut buf = std::vec![0u8; 4096];
            let n = to_slice(&self.parts(), &mut buf).unwrap();
            buf.truncate(n);
            buf
        }
    }

    #[test]
    fn test_round_trip_and_explain() {
        let fx = Fixture::new();
        let bytes = fx.bytes();
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        assert_eq!(bundle.name, "fixture");
        assert_eq!(bundle.schema.columns(), 2);
        let parts = fx.parts();
        let (decoded, _) = postcard::take_from_bytes::<Parts<'_>>(&bytes[HEADER_LEN..]).unwrap();
        assert_eq!(decoded, parts);
        let mut explainer: Explainer<8> = Explainer::new();
        let mut out: heapless::Vec<_, 3> = heapless::Vec::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
        let model = bundle.model();
        let q = bundle.schema.default_query();
        let summary = explainer.explain(&model, &[0.2, 0.7], &q, Options::default(), &mut rng, &mut out).unwrap();
        assert_eq!((summary.anchor, summary.fact, summary.not_found), (0, 0, None));
        assert_eq!(out.len(), 1, "one contrast leaf");
        assert!(out[0].x[0] > 0.5 && out[0].x[1] == 0.7);
        assert_eq!(out[0].class, Some(1));
        assert_eq!(out[0].changed, 0b01);
        // Asking for the class it already has is an error; from the other side the answer is class 0.
        let err = explainer.explain(
            &model,
            &[0.2, 0.7],
            &q,
            Options { desired: Some(0), ..Options::default() },
            &mut rng,
            &mut out,
        );
        assert_eq!(err.unwrap_err(), crate::atlas::ExplainError::Target);
        // A lead no classifier reaches refuses every candidate; no lead takes the first margin.
        let strict = Options { lead: f32::MAX, ..Options::default() };
        let summary = explainer.explain(&model, &[0.9, 0.1], &q, strict, &mut rng, &mut out).unwrap();
        assert_eq!((out.len(), summary.not_found), (0, Some(NotFound::NotConfirmed)));
        let lenient = Options { lead: 0.0, ..Options::default() };
        let summary = explainer.explain(&model, &[0.9, 0.1], &q, lenient, &mut rng, &mut out).unwrap();
        assert_eq!((summary.anchor, summary.fact), (1, 1));
        assert_eq!(out[0].class, Some(0));
        let line = std::format!("{}", crate::atlas::Line { index: 4, outcome: Ok((&summary, &out)) });
        assert!(line.starts_with("q=4 anchor=1 fact=1 examined=1 rejected=0 n=1 | leaf=1 cost="), "{line}");
        assert!(line.ends_with(&std::format!("x={:08x},{:08x}", out[0].x[0].to_bits(), 0.1f32.to_bits())), "{line}");
        let err = crate::atlas::Line { index: 2, outcome: Err(crate::atlas::ExplainError::Target) };
        assert_eq!(std::format!("{err}"), "q=2 error=desired class is the current class or unknown");
    }

    /// The fixture's bundle bytes with `observed` as the observed values of its mutable feature.
    fn with_observed(fx: &Fixture, observed: &[f32]) -> Vec<u8> {
        with_support(fx, observed, &[])
    }

    /// The fixture's bundle bytes with `observed` on its mutable feature and, unless `combos` is
    /// empty, a link over its two features holding those pairs.
    fn with_support(fx: &Fixture, observed: &[f32], combos: &[f32]) -> Vec<u8> {
        let le = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let (values, pairs) = (le(observed), le(combos));
        let counts = heapless::Vec::from_slice(&[observed.len() as u16, 0]).unwrap();
        let mut links = heapless::Vec::new();
        if !combos.is_empty() {
            let features = heapless::Vec::from_slice(&[0, 1]).unwrap();
            links.push(LinkParts { features, combinations: &pairs }).unwrap();
        }
        let support = SupportParts { counts, values: &values, links };
        let parts = Parts { support, ..fx.parts() };
        let mut buf = std::vec![0u8; 4096];
        let n = to_slice(&parts, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    /// The fixture with observed values on its mutable feature: every answer lands on one, and
    /// a box that holds none builds nothing.
    #[test]
    fn test_support_round_trips_and_keeps_answers_to_observed_values() {
        let fx = Fixture::new();
        let bytes = with_observed(&fx, &[0.1, 0.3, 0.62, 0.95]);
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        let kept: Vec<f32> = (0..4).filter_map(|i| bundle.support.value(0, i)).collect();
        assert_eq!((kept.as_slice(), bundle.support.observed(1)), (&[0.1, 0.3, 0.62, 0.95][..], 0));
        let mut explainer: Explainer<8> = Explainer::new();
        let mut out: heapless::Vec<_, 3> = heapless::Vec::new();
        let q = bundle.schema.default_query();
        for seed in 0..20 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
            let options = Options { lead: 0.0, ..Options::default() };
            explainer.explain(&bundle.model(), &[0.2, 0.7], &q, options, &mut rng, &mut out).unwrap();
            assert!(!out.is_empty() && out.iter().all(|c| c.x[0] == 0.62 || c.x[0] == 0.95), "{out:?}");
        }
        // With a link, 0.62 comes with the query's 0.7 on the immutable feature and is answered;
        // 0.95 comes only with 0.1 there: the repair would change an immutable feature, so the
        // point is dropped and the leaf builds nothing.
        let pairs = [0.62, 0.7, 0.95, 0.1, 0.1, 0.7, 0.3, 0.7];
        for (observed, answered) in [(&[0.1, 0.3, 0.62][..], true), (&[0.1, 0.3, 0.95][..], false)] {
            let bytes = with_support(&fx, observed, &pairs);
            let linked = Bundle::from_bytes(&bytes).unwrap();
            assert_eq!(linked.support.links(), 1);
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
            let options = Options { lead: 0.0, ..Options::default() };
            let summary = explainer.explain(&linked.model(), &[0.2, 0.7], &q, options, &mut rng, &mut out).unwrap();
            if answered {
                assert!(!out.is_empty() && out.iter().all(|c| c.x[..] == [0.62, 0.7]), "{out:?}");
            } else {
                assert_eq!((out.len(), summary.not_found), (0, Some(NotFound::Blocked)), "{out:?}");
            }
        }
        // Nobody above 0.5: the contrast leaf builds nothing.
        let bytes = with_observed(&fx, &[0.1, 0.3]);
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
        let summary =
            explainer.explain(&bundle.model(), &[0.2, 0.7], &q, Options::default(), &mut rng, &mut out).unwrap();
        assert_eq!((out.len(), summary.not_found), (0, Some(NotFound::Blocked)));
        // Values out of order are refused with the feature named.
        let err = Bundle::from_bytes(&with_observed(&fx, &[0.3, 0.1])).unwrap_err();
        assert_eq!(err, BundleError::Support(SupportError::Values { feature: 0 }));
    }

    /// The fixture's two features, both mutable.
    fn both_free() -> Schema {
        let mut schema: Schema = Schema::new(2);
        schema.push(Feature::continuous(0, 0.0, 100.0).with_sigma(0.2)).unwrap();
        schema.push(Feature::continuous(1, 0.0, 1.0).with_sigma(0.2)).unwrap();
        schema
    }

    /// A tree split on the first feature at 0.5, its right half on the second at 0.5: class 0
    /// below on the first, `low` below on the second, class 1 above on both (leaves 1, 3, 4).
    fn split_twice(low: u8) -> [Node; 5] {
        [
            Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
            Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 },
            Node::Split { col: 1, threshold: 0.5, left: 3, right: 4 },
            Node::Leaf { class: low, purity: 1.0, entropy: 0.0, samples: 9 },
            Node::Leaf { class: 1, purity: 1.0, entropy: 0.0, samples: 9 },
        ]
    }

    /// The answers for `[0.2, 0.3]` (any lead, at most `K`) of the fixture with both features
    /// mutable, `nodes` as every anchor's tree and `agreement` as every tree's (or none).
    fn answers_of<const K: usize>(
        nodes: &[Node],
        agreement: &[u8],
    ) -> Result<heapless::Vec<crate::atlas::Counterfactual, K>, BundleError> {
        answers_with(nodes, agreement, Options { lead: 0.0, ..Options::default() })
    }

    /// [`answers_of`] under `options`.
    fn answers_with<const K: usize>(
        nodes: &[Node],
        agreement: &[u8],
        options: Options,
    ) -> Result<heapless::Vec<crate::atlas::Counterfactual, K>, BundleError> {
        let fx = Fixture::new();
        let tree = records(nodes);
        let schema = both_free();
        let both: Vec<u8> = agreement.iter().chain(agreement).copied().collect();
        let parts = Parts {
            schema: SchemaParts::of(&schema),
            trees: heapless::Vec::from_slice(&[&tree[..], &tree[..]]).unwrap(),
            agreement: &both,
            ..fx.parts()
        };
        let mut buf = std::vec![0u8; 4096];
        let n = to_slice(&parts, &mut buf)?;
        let bundle = Bundle::from_bytes(&buf[..n])?;
        let mut explainer: Explainer<8> = Explainer::new();
        let mut out = heapless::Vec::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
        let q = bundle.schema.default_query();
        explainer.explain(&bundle.model(), &[0.2, 0.3], &q, options, &mut rng, &mut out).unwrap();
        Ok(out)
    }

    /// [`answers_of`] with no agreement, three answers.
    fn answers_with_tree(nodes: &[Node]) -> heapless::Vec<crate::atlas::Counterfactual, 3> {
        answers_of(nodes, &[]).unwrap()
    }

    /// A region that asks for both features where the classifier needs only the first: the
    /// answer keeps the one change it needs.
    #[test]
    fn test_answers_are_pared_to_the_changes_the_classifier_needs() {
        let out = answers_with_tree(&split_twice(0));
        assert_eq!(out.len(), 1, "one contrast leaf");
        assert!(out[0].x[0] > 0.5 && out[0].x[1] == 0.3, "x1 set back: {:?}", out[0].x);
        assert_eq!((out[0].changed, out[0].class), (0b01, Some(1)));
    }

    /// With the regions' agreement, more confirmed regions than answers asked for are compared
    /// and the one whose answers landed most among people of their class is given, though
    /// dearer; without it, the cheaper. An agreement of any other length than the trees' nodes
    /// is refused.
    #[test]
    fn test_the_region_whose_answers_people_agree_with_is_given() {
        // Leaf 3, where the query already is on the second feature, is the cheaper region.
        let leaf = |a: &[u8]| answers_of::<1>(&split_twice(1), a).unwrap().iter().map(|c| c.leaf).collect::<Vec<_>>();
        assert_eq!(leaf(&[]), [3], "without agreement: the cheaper region");
        assert_eq!(leaf(&[255, 0, 255, 10, 200]), [4], "the region people agree with");
        assert_eq!(leaf(&[255, 0, 255, 200, 10]), [3]);
        // Equal agreement: as without.
        assert_eq!(leaf(&[128; 5]), [3]);
        let bad = answers_of::<1>(&split_twice(1), &[1, 2, 3, 4]).unwrap_err();
        assert_eq!(bad, BundleError::Atlas(AtlasError::Agreement));
        let bytes = Fixture::new().bytes();
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        assert_eq!((bundle.atlas.has_agreement(), bundle.atlas.agreement(0, 2)), (false, None));
    }

    /// A region whose agreement is below `defer_below` is set aside: with no calls to spend on
    /// comparing regions, the dearer region people agree with answers instead of the cheaper
    /// one they do not; with every region below it, the set-aside ones still answer, cheapest
    /// first; with `defer_below` 0, the cheaper region answers first as before.
    #[test]
    fn test_regions_people_do_not_agree_with_are_set_aside() {
        let leaf = |agreement: &[u8], defer_below: u8| {
            let options = Options { lead: 0.0, compare_calls: 0, defer_below, ..Options::default() };
            let out = answers_with::<1>(&split_twice(1), agreement, options).unwrap();
            out.iter().map(|c| c.leaf).collect::<Vec<_>>()
        };
        let low_cheap = [255, 0, 255, 10, 200];
        assert_eq!(leaf(&low_cheap, 0), [3], "nothing set aside: the cheaper region, found first");
        assert_eq!(leaf(&low_cheap, 64), [4], "the cheaper region set aside");
        assert_eq!(leaf(&[255, 0, 255, 10, 20], 64), [3], "both set aside: tried after, cheaper first");
    }

    /// The query's nearest anchor has a tree of one leaf (no region of the other class): the
    /// runner-up anchor's tree answers, and says so in the summary; with no calls to spend on
    /// it, nothing is found.
    #[test]
    fn test_the_runner_up_anchor_answers_when_the_nearest_cannot() {
        let fx = Fixture::new();
        let lone = records(&[Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 }]);
        let parts = Parts { trees: heapless::Vec::from_slice(&[&lone[..], &fx.tree[..]]).unwrap(), ..fx.parts() };
        let (summary, out) = explain_parts(&parts, &[0.2, 0.7], Options::default());
        assert_eq!((summary.anchor, summary.not_found, out.len()), (1, None, 1), "{summary:?}");
        assert!(out[0].x[0] > 0.5 && out[0].class == Some(1), "{out:?}");
        let never = Options { runner_up_calls: 0, ..Options::default() };
        let (summary, out) = explain_parts(&parts, &[0.2, 0.7], never);
        assert_eq!((summary.anchor, summary.not_found, out.len()), (0, Some(NotFound::NoContrastLeaf), 0));
    }

    /// Writes `parts` as a bundle, loads it and explains `x` under `options` (the schema's
    /// default query, the random generator seeded with 1), up to three answers.
    fn explain_parts(
        parts: &Parts<'_>,
        x: &[f32],
        options: Options,
    ) -> (crate::atlas::Summary, heapless::Vec<crate::atlas::Counterfactual, 3>) {
        let mut buf = std::vec![0u8; 4096];
        let n = to_slice(parts, &mut buf).unwrap();
        let bundle = Bundle::from_bytes(&buf[..n]).unwrap();
        let mut explainer: Explainer<8> = Explainer::new();
        let mut out = heapless::Vec::new();
        let q = bundle.schema.default_query();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
        let summary = explainer.explain(&bundle.model(), x, &q, options, &mut rng, &mut out).unwrap();
        (summary, out)
    }

    /// No tree has a region of the other class: the people the anchors carry answer, those of
    /// the target class only, moved onto what the query can reach (the immutable second
    /// feature keeps the query's value), pared, nearest first, with no region; without calls to
    /// spend on them, or without people, nothing is found.
    #[test]
    fn test_the_anchors_people_answer_when_no_region_can() {
        let fx = Fixture::new();
        let lone = records(&[Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 }]);
        let schema = fx.parts().schema.to_schema().unwrap();
        let record = |class: u8, row: [f32; 2]| {
            let mut r = std::vec![class];
            for f in schema.features() {
                r.extend(crate::people::code(f.kind, &row[f.columns()]).to_le_bytes());
            }
            r
        };
        // Anchor 0: a person of class 0 (not the target) and one of class 1 far on the first
        // feature; anchor 1: a nearer one of class 1 and one of class 0.
        let people: Vec<u8> =
            [record(0, [0.9, 0.1]), record(1, [0.95, 0.9]), record(1, [0.8, 0.1]), record(0, [0.1, 0.1])].concat();
        let with = |people: &[u8], options: Options| {
            let parts =
                Parts { trees: heapless::Vec::from_slice(&[&lone[..], &lone[..]]).unwrap(), people, ..fx.parts() };
            explain_parts(&parts, &[0.2, 0.7], options)
        };
        let (summary, out) = with(&people, Options { lead: 0.0, ..Options::default() });
        assert_eq!((summary.not_found, out.len()), (None, 2), "{summary:?} {out:?}");
        let firsts: Vec<f32> = out.iter().map(|c| c.x[0]).collect();
        assert_eq!(firsts, [0.8, 0.95].map(|v| crate::people::code(Kind::Continuous, &[v]) as f32 / 65_535.0));
        for c in &out {
            assert_eq!((c.x[1], c.leaf, c.class, c.changed), (0.7, crate::atlas::NO_REGION, Some(1), 0b01), "{c:?}");
        }
        assert_eq!(summary.anchor, 1, "the nearest person's anchor");
        let never = Options { lead: 0.0, people_calls: 0, ..Options::default() };
        let (summary, out) = with(&people, never);
        assert_eq!((summary.not_found, out.len()), (Some(NotFound::NoContrastLeaf), 0));
        let (summary, out) = with(&[], Options { lead: 0.0, ..Options::default() });
        assert_eq!((summary.not_found, out.len()), (Some(NotFound::NoContrastLeaf), 0));
    }

    /// People whose records do not fit the anchors, or hold a value their feature cannot, are
    /// refused with the bundle.
    #[test]
    fn test_bad_people_are_refused_with_the_bundle() {
        let fx = Fixture::new();
        let load = |people: &[u8]| {
            let parts = Parts { people, ..fx.parts() };
            let mut buf = std::vec![0u8; 4096];
            let n = to_slice(&parts, &mut buf).unwrap();
            Bundle::from_bytes(&buf[..n]).map(|_| ())
        };
        let good = [1u8, 0, 0, 0, 0];
        assert_eq!(load(&[good, good].concat()), Ok(()));
        assert_eq!(load(&good), Err(BundleError::People(crate::people::PeopleError::Length)));
        let bad = [2u8, 0, 0, 0, 0]; // no class 2
        assert_eq!(
            load(&[good, bad].concat()),
            Err(BundleError::People(crate::people::PeopleError::Record { person: 1 }))
        );
    }

    /// An oracle of one anchor whose classifier says class 1 iff `w · x > bias`, with a lead of 5
    /// logits per unit of `w · x - bias`.
    struct Plane {
        w: [f32; 2],
        bias: f32,
    }

    /// `x0 + x1 / 2 > 0.7`: the decision needs `x0` only, but with `x0` at 0.6 it needs `x1` for
    /// the lead too.
    const LINEAR: Plane = Plane { w: [1.0, 0.5], bias: 0.7 };

    impl crate::atlas::Oracle for Plane {
        fn anchor(&self, _: &[f32]) -> Result<usize, crate::atlas::ExplainError> {
            Ok(0)
        }

        fn runner_up(&self, _: &[f32], _: usize) -> Result<Option<usize>, crate::atlas::ExplainError> {
            Ok(None)
        }

        fn classify(&self, x: &[f32]) -> Result<Option<(u8, f32)>, crate::atlas::ExplainError> {
            let s = self.w[0] * x[0] + self.w[1] * x[1] - self.bias;
            Ok(Some(if s > 0.0 { (1, 5.0 * s) } else { (0, -5.0 * s) }))
        }
    }

    /// The bytes of the fixture with both features mutable, `nodes` as every anchor's tree and
    /// `observed` as the values people have of each feature (ascending).
    fn observed_bundle(nodes: &[Node], observed: [&[f32]; 2]) -> Vec<u8> {
        let fx = Fixture::new();
        let tree = records(nodes);
        let schema = both_free();
        let values: Vec<u8> = observed.iter().flat_map(|v| v.iter()).flat_map(|x| x.to_le_bytes()).collect();
        let counts = heapless::Vec::from_slice(&[observed[0].len() as u16, observed[1].len() as u16]).unwrap();
        let parts = Parts {
            schema: SchemaParts::of(&schema),
            trees: heapless::Vec::from_slice(&[&tree[..], &tree[..]]).unwrap(),
            support: SupportParts { counts, values: &values, links: heapless::Vec::new() },
            ..fx.parts()
        };
        let mut buf = std::vec![0u8; 4096];
        let n = to_slice(&parts, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    /// A region that asks for both features, where a person at 0.6 on the first needs the
    /// second for the lead alone: the second change is set back and the first carried further,
    /// to the next value people have (1.0), instead of kept.
    #[test]
    fn test_a_change_only_the_lead_needs_is_traded_for_a_longer_move() {
        let steps = [0.1, 0.3, 0.6, 1.0];
        let bytes = observed_bundle(&split_twice(0), [&steps, &steps]);
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        let model = bundle.model();
        let mut explainer: Explainer<8> = Explainer::new();
        let mut out: heapless::Vec<_, 3> = heapless::Vec::new();
        let q = bundle.schema.default_query();
        let mut traded = 0;
        for seed in 0..32 {
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
            let ctx = (model.schema, model.atlas, model.support);
            explainer.explain_with(&LINEAR, ctx, &[0.2, 0.3], &q, Options::default(), &mut rng, &mut out).unwrap();
            assert_eq!(out.len(), 1, "seed {seed}: one contrast leaf");
            assert_eq!((&out[0].x[..], out[0].changed, out[0].class), (&[1.0, 0.3][..], 0b01, Some(1)), "seed {seed}");
            // How often the region's own point was at 0.6 (the trade, not a plain set-back):
            // replay the leaf's first margin.
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
            let mut cf = [0.0f32; 2];
            let tree = model.atlas.tree(0).unwrap();
            let bounds = crate::tree::Bounds::of(tree, 4);
            crate::counterfactual::realize_in(&both_free(), &q, tree, 4, &bounds, &[0.2, 0.3], &mut rng, &mut cf)
                .unwrap();
            traded += usize::from(cf[0] < 0.8);
        }
        assert!(traded > 0, "no seed exercised the trade");
    }

    /// `x0 + x1 > 1.25`.
    const SUM: Plane = Plane { w: [1.0, 1.0], bias: 1.25 };

    /// A region at the top of the first feature (above 0.95) and above 0.5 on the second: with
    /// the first at 1.0 the second is needed for the lead only, and the first cannot go further.
    /// Without balancing, the answer keeps that change; balanced, the first is shortened (to the
    /// value people have at 0.6) and the second carried further until both are needed, within
    /// the calls allowed (too few leave the pared answer as it was).
    #[test]
    fn test_a_change_only_the_lead_needs_is_balanced_against_the_others() {
        let nodes = [
            Node::Split { col: 0, threshold: 0.95, left: 1, right: 2 },
            Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 },
            Node::Split { col: 1, threshold: 0.5, left: 3, right: 4 },
            Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 },
            Node::Leaf { class: 1, purity: 1.0, entropy: 0.0, samples: 9 },
        ];
        let bytes = observed_bundle(&nodes, [&[0.1, 0.3, 0.6, 1.0], &[0.1, 0.3, 0.6, 0.8, 1.0]]);
        let bundle = Bundle::from_bytes(&bytes).unwrap();
        let model = bundle.model();
        let (x, q) = ([0.2, 0.3], bundle.schema.default_query());
        let mut explainer: Explainer<8> = Explainer::new();
        let mut out: heapless::Vec<_, 3> = heapless::Vec::new();
        // The changes of an answer whose set-back alone leaves the point in class 1.
        let redundant = |p: &[f32]| {
            (0..2)
                .filter(|&k| {
                    let mut back = p.to_vec();
                    back[k] = x[k];
                    p[k] != x[k] && SUM.classify(&back).unwrap().unwrap().0 == 1
                })
                .count()
        };
        let mut kept = 0;
        for seed in 0..16 {
            // (answer, classifier calls) with paring alone.
            let mut pared = None;
            // 3 calls cannot finish: the first two shortenings still snap to 1.0, the third
            // only finds where the decision needs the second change.
            for balance_calls in [0, 3, BALANCE_CALLS] {
                let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
                let ctx = (model.schema, model.atlas, model.support);
                let options = Options { balance_calls, ..Options::default() };
                let counted = Counted { oracle: &SUM, calls: core::cell::Cell::new(0) };
                explainer.explain_with(&counted, ctx, &x, &q, options, &mut rng, &mut out).unwrap();
                assert_eq!(out.len(), 1, "seed {seed}: one contrast leaf");
                let (a, calls) = (out[0].clone(), counted.calls.get());
                let (class, lead) = SUM.classify(&a.x).unwrap().unwrap();
                assert!(class == 1 && lead >= Options::default().lead, "seed {seed}: {a:?}");
                assert_eq!(a.changed, 0b11, "seed {seed}: {a:?}");
                let Some((alone, base)) = pared.clone() else {
                    assert_eq!(a.x[0], 1.0, "seed {seed}: {a:?}");
                    kept += redundant(&a.x);
                    pared = Some((a, calls));
                    continue;
                };
                assert!(calls <= base + u32::from(balance_calls), "seed {seed}: {calls} calls, {base} pared");
                if balance_calls == 3 {
                    assert_eq!(a, alone, "seed {seed}: too few calls to balance");
                } else {
                    assert_eq!((a.x[0], redundant(&a.x)), (0.6, 0), "seed {seed}: {a:?}");
                }
            }
        }
        assert!(kept > 0, "no seed kept a change only the lead needs without balancing");
    }

    /// Two regions of the target class, the cheaper one nearly empty: the answer from the
    /// region more people fill comes first.
    #[test]
    fn test_the_region_more_people_fill_comes_first() {
        let out = answers_with_tree(&[
            Node::Split { col: 0, threshold: 0.5, left: 1, right: 2 },
            Node::Leaf { class: 0, purity: 1.0, entropy: 0.0, samples: 9 },
            Node::Split { col: 1, threshold: 0.5, left: 3, right: 4 },
            Node::Leaf { class: 1, purity: 1.0, entropy: 0.0, samples: 2 },
            Node::Leaf { class: 1, purity: 0.9, entropy: 0.47, samples: 50 },
        ]);
        assert_eq!(out.iter().map(|c| c.leaf).collect::<Vec<_>>(), [4, 3], "{out:?}");
        assert!(out[0].cost > out[1].cost, "the fuller region is the dearer one here");
    }

    #[test]
    fn test_every_truncation_is_rejected() {
        let bytes = Fixture::new().bytes();
        for n in 0..bytes.len() {
            assert!(Bundle::from_bytes(&bytes[..n]).is_err(), "prefix of {n} bytes accepted");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(Bundle::from_bytes(&long).unwrap_err(), BundleError::Length);
    }

    #[test]
    fn test_every_bit_flip_is_rejected() {
        let bytes = Fixture::new().bytes();
        for i in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(Bundle::from_bytes(&b).is_err(), "flip of bit {i} accepted");
        }
    }

    #[test]
    fn test_ordered_flag_round_trips_and_is_validated() {
        let mut schema: Schema = Schema::new(2);
        schema.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        schema.push(Feature::ordinal(1, 4).with_mutability(Mutability::IncreaseOnly)).unwrap();
        schema.push(Feature::categorical(5, 3)).unwrap();
        let parts = SchemaParts::of(&schema);
        assert_eq!(parts.features.iter().map(|f| f.ordered).collect::<Vec<_>>(), [false, true, false]);
        let mut buf = [0u8; 256];
        let bytes = postcard::to_slice(&parts, &mut buf).unwrap();
        let decoded: SchemaParts = postcard::from_bytes(bytes).unwrap();
        let back = decoded.to_schema().unwrap();
        assert_eq!(back, schema);
        assert!(back.features()[1].ordered && !back.features()[2].ordered);
        // The flag on a scalar feature, or a direction on an unordered group, is refused.
        let mut bad = parts.clone();
        bad.features[0].ordered = true;
        assert_eq!(bad.to_schema(), Err(SchemaError::Layout { feature: 0 }));
        let mut bad = parts.clone();
        bad.features[1].ordered = false;
        assert_eq!(bad.to_schema(), Err(SchemaError::Unordered { feature: 1 }));
        let mut bad = parts;
        bad.features[2].mutability = 2;
        assert_eq!(bad.to_schema(), Err(SchemaError::Unordered { feature: 2 }));
        // Through a whole bundle: the fixture's two columns as one ordered, increase-only group.
        let fx = Fixture::new();
        let mut two = Schema::new(2);
        two.push(Feature::ordinal(0, 2).with_mutability(Mutability::IncreaseOnly)).unwrap();
        let parts = Parts { schema: SchemaParts::of(&two), ..fx.parts() };
        let mut buf = std::vec![0u8; 4096];
        let n = to_slice(&parts, &mut buf).unwrap();
        let bundle = Bundle::from_bytes(&buf[..n]).unwrap();
        assert_eq!(bundle.schema, two);
        assert!(bundle.schema.features()[0].ordered);
    }

    #[test]
    fn test_version_and_foreign_files() {
        let mut bytes = Fixture::new().bytes();
        bytes[4] = 5; // the format before the anchors' people
        assert_eq!(Bundle::from_bytes(&bytes).unwrap_err(), BundleError::Version { found: 5 });
        bytes[4] = 7;
        assert_eq!(Bundle::from_bytes(&bytes).unwrap_err(), BundleError::Version { found: 7 });
        assert_eq!(Bundle::from_bytes(b"\x89PNG\r\n\x1a\n0000000000").unwrap_err(), BundleError::Magic);
        assert_eq!(Bundle::from_bytes(b"").unwrap_err(), BundleError::Length);
    }

    #[test]
    fn test_crc32_known_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    /// Wraps arbitrary payload bytes in a valid header so the decoder and validators run.
    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::from(MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(&crc32(payload).to_le_bytes());
        b.extend_from_slice(payload);
        b
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn prop_random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = Bundle::from_bytes(&bytes);
            let _ = Bundle::from_bytes(&framed(&bytes));
        }

        #[test]
        fn prop_mutated_payload_is_validated(
            pos in 0usize..4096, val in any::<u8>(), cut in 0usize..64, supported in any::<bool>()
        ) {
            let fx = Fixture::new();
            // Half the cases mutate a bundle with observed values and a link.
            let bytes = if supported {
                with_support(&fx, &[0.1, 0.3, 0.62, 0.95], &[0.62, 0.7, 0.95, 0.1, 0.1, 0.7])
            } else {
                fx.bytes()
            };
            let mut payload = bytes[HEADER_LEN..].to_vec();
            let i = pos % payload.len();
            payload[i] = val;
            payload.truncate(payload.len() - cut.min(payload.len()));
            // Re-framed with a correct checksum: any failure must be a clean error value.
            if let Ok(b) = Bundle::from_bytes(&framed(&payload)) {
                let mut e: Explainer<8> = Explainer::new();
                let mut out: heapless::Vec<_, 3> = heapless::Vec::new();
                let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
                let x: Vec<f32> = (0..b.schema.columns()).map(|_| 0.3).collect();
                let _ = e.explain(&b.model(), &x, &b.schema.default_query(), Options::default(), &mut rng, &mut out);
            }
        }
    }
}
