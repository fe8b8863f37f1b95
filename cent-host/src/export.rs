//! Writing the device bundle (design §4): the schema, the quantized VAE encoder, the quantized
//! black box (for the built-in LR/MLP), the atlas anchors (int16 in the encoder's output steps),
//! one tree per anchor, the training rows' data support (observed values and link
//! combinations) and each region's agreement ([`crate::regions`]), as one checksummed postcard
//! file in `cent_nostd::bundle`'s format.
//!
//! Every bundle is re-loaded with [`Bundle::from_bytes`] before it is returned, so the exporter
//! never hands out a file the device would reject.

use crate::artifacts::Artifacts;
use crate::atlas::{self, Atlas, AtlasError, AtlasParams, PoolData};
use crate::blackbox::{BlackBox, ModelKind};
use crate::quantize::{QuantizeError, QuantizedMlp, quantize_mlp};
use crate::regions;
use crate::support::{DeviceSupport, DeviceSupportSummary, Support};
use cent_nostd::bundle::{self, Bundle, BundleError, LayerParts, MlpParts, Parts, SchemaParts};
use cent_nostd::encoder::WeightWidth;
use cent_nostd::schema::Schema;
use serde::Serialize;
use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ExportError {
    #[error("quantizing the {what}: {error}")]
    Quantize { what: &'static str, error: QuantizeError },
    #[error("building the atlas: {0}")]
    Atlas(AtlasError),
    #[error("the bundle does not fit the device format: {0}")]
    Bundle(BundleError),
    #[error("the bundle exceeds a device capacity: {0}")]
    Capacity(&'static str),
    #[error("dataset `{dataset}` is {error}")]
    Device { dataset: String, error: crate::profile::DeviceCapacity },
    #[error("encoding the bundle: {0}")]
    Encode(String),
    /// A bundle carries the built-in classifier, and none was loaded.
    #[error("a bundle carries the built-in classifier: {0}")]
    Artifacts(#[from] crate::artifacts::ArtifactError),
}

/// Why a schema's links do not fit a bundle.
const LINKS_EXCEEDED: &str = "the schema's links: a bundle carries at most 8 links of at most 4 features each";
const _: () = assert!(cent_nostd::capacity::LINKS == 8 && cent_nostd::capacity::LINK_FEATURES == 4);

/// Bytes of each part of a bundle (postcard sizes, length prefixes included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sizes {
    /// Magic, version, length and checksum.
    pub header: usize,
    /// The name and the latent size.
    pub other: usize,
    pub schema: usize,
    pub encoder: usize,
    pub classifier: usize,
    pub anchors: usize,
    pub trees: usize,
    /// Observed values and link combinations.
    pub support: usize,
    /// The regions' agreement, one byte per tree node.
    pub agreement: usize,
    /// The people the anchors carry.
    pub people: usize,
    pub total: usize,
}

impl Sizes {
    /// `(part, bytes)` rows in file order, total last.
    pub fn rows(&self) -> [(&'static str, usize); 11] {
        [
            ("header", self.header),
            ("name", self.other),
            ("schema", self.schema),
            ("encoder", self.encoder),
            ("classifier", self.classifier),
            ("anchors", self.anchors),
            ("trees", self.trees),
            ("support", self.support),
            ("agreement", self.agreement),
            ("people", self.people),
            ("total", self.total),
        ]
    }
}

/// An exported bundle and what went into it.
#[derive(Debug, Clone)]
pub struct Export {
    pub bytes: Vec<u8>,
    pub sizes: Sizes,
    pub atlas: Atlas,
    pub encoder: QuantizedMlp,
    pub classifier: Option<QuantizedMlp>,
    /// Share of test rows where the nearest anchor's tree agrees with the black box.
    pub test_fidelity: f64,
    /// What the bundle's data support holds.
    pub support: DeviceSupportSummary,
    /// What the regions' agreement was measured on ([`regions::agreement`]).
    pub agreement: AgreementSummary,
    /// The people the anchors carry.
    pub people: PeopleSummary,
}

/// The people an exported bundle's anchors carry and what they were chosen on
/// ([`crate::people::choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PeopleSummary {
    /// People per anchor (0: none).
    pub per_anchor: usize,
    /// Training rows routed to the anchors that the people were tried on.
    pub queries: usize,
    /// Of those, the rows some person of their anchor answers.
    pub answered: usize,
}

/// What the regions' agreement of an exported bundle was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AgreementSummary {
    /// Training rows explained with the bundle.
    pub rows: usize,
    /// Their answers, judged by their nearest training rows.
    pub answers: usize,
    /// The answers' mean share of agreeing neighbours.
    pub mean: f64,
}

/// Weight widths of the bundle's two networks.
///
/// The classifier confirms every answer the device gives, near the decision boundary where a
/// rounding error flips a verdict; the encoder only routes a query to its anchor. int8 weights
/// for the encoder and int16 for the classifier keep the device's answers those of the full
/// precision path on 99.0–99.9 % of test rows of the built-in datasets (all int8: 84–98 %) for
/// some 0.03–0.75 KB more than all int8 (docs/device.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widths {
    pub encoder: WeightWidth,
    pub classifier: WeightWidth,
}

impl Widths {
    /// int16 weights in both networks.
    pub const I16: Widths = Widths { encoder: WeightWidth::I16, classifier: WeightWidth::I16 };

    /// `width` in both networks.
    pub fn both(width: WeightWidth) -> Widths {
        Widths { encoder: width, classifier: width }
    }
}

impl Default for Widths {
    fn default() -> Self {
        Widths::I16
    }
}

/// The bundle's name for a dataset, model and seed (validation checks it against its data).
pub fn bundle_name(dataset: &str, model: ModelKind, seed: u64) -> String {
    let kind = match model {
        ModelKind::Lr => "lr",
        ModelKind::Mlp => "mlp",
    };
    format!("{dataset} {kind} seed={seed}")
}

/// Builds the atlas of `a` (pool = training split, labelled by its built-in model), quantizes the
/// encoder and the model to weights of `widths` with the training rows as calibration, and
/// writes the bundle.
/// `params.seed` names the bundle and seeds k-means: pass the seed `a` was loaded with.
///
/// # Errors
/// [`ExportError`] naming the step that failed.
pub fn export(a: &Artifacts, params: AtlasParams, widths: Widths) -> Result<Export, ExportError> {
    let schema = crate::profile::device_schema(&a.prepared.encoding.to_core_schema())
        .map_err(|error| ExportError::Device { dataset: a.name.clone(), error })?;
    let model = a.model()?;
    let rows = &a.prepared.train.data;
    let z = a.vae.encode(rows);
    let labels = model.classify(rows);
    let pool = PoolData { rows, z: &z, latent: a.vae.latent(), labels: &labels };
    let mut atlas = atlas::build(pool, &schema, model.classes(), params).map_err(ExportError::Atlas)?;
    let people = crate::people::choose(pool, &atlas, &schema, model, params.people);
    atlas.people.clone_from(&people.bytes);
    let quantize =
        |what, mlp, width| quantize_mlp(mlp, rows, width).map_err(|error| ExportError::Quantize { what, error });
    let encoder = quantize("VAE encoder", &a.vae.encoder, widths.encoder)?;
    let classifier = quantize("classifier", model.mlp(), widths.classifier)?;
    let name = bundle_name(&a.name, model.kind, params.seed);
    let support = Support::new(&a.prepared.encoding, rows).device();
    // The regions are judged with the bundle the device will run, then the bundle is written
    // again with their agreement (which changes no answer the judging saw, only their order).
    let (bytes, _) = assemble(&name, &schema, &encoder, Some(&classifier), &atlas, &support, &[])?;
    let judged = Bundle::from_bytes(&bytes).map_err(ExportError::Bundle)?;
    let agreement = regions::agreement(&judged, &a.prepared.encoding.to_core_schema(), rows, &labels);
    let (bytes, sizes) = assemble(&name, &schema, &encoder, Some(&classifier), &atlas, &support, &agreement.bytes)?;
    let test = &a.prepared.test.data;
    let test_fidelity = atlas.fidelity(test, &a.vae.encode(test), &model.classify(test));
    Ok(Export {
        bytes,
        sizes,
        atlas,
        encoder,
        classifier: Some(classifier),
        test_fidelity,
        support: support.summary(),
        agreement: AgreementSummary { rows: agreement.rows, answers: agreement.answers, mean: agreement.mean },
        people: PeopleSummary { per_anchor: people.per_anchor, queries: people.queries, answered: people.answered },
    })
}

/// The bundle bytes of `a` (see [`export`]): what a firmware build embeds.
///
/// # Errors
/// As [`export`].
pub fn write_bundle(a: &Artifacts, params: AtlasParams, widths: Widths) -> Result<Vec<u8>, ExportError> {
    export(a, params, widths).map(|e| e.bytes)
}

/// Writes the bundle of already-built parts, checks that the device loader accepts it, and
/// measures its parts. `classifier` is `None` for a black box the device cannot carry;
/// `support` is the training rows' ([`Support::device`]), or empty for none; `agreement` the
/// regions' ([`regions::agreement`]), or empty for none.
///
/// # Errors
/// [`ExportError::Capacity`] when a part exceeds the core's capacities, [`ExportError::Bundle`]
/// when the loader rejects the result.
pub fn assemble(
    name: &str,
    schema: &Schema,
    encoder: &QuantizedMlp,
    classifier: Option<&QuantizedMlp>,
    atlas: &Atlas,
    support: &DeviceSupport,
    agreement: &[u8],
) -> Result<(Vec<u8>, Sizes), ExportError> {
    let anchors = atlas.anchor_bytes(encoder.output_scale);
    let trees: Vec<&[u8]> = atlas.trees.iter().map(|t| t.bytes.as_slice()).collect();
    let parts = Parts {
        name,
        schema: SchemaParts::of(schema),
        encoder: mlp_parts(encoder)?,
        classifier: classifier.map(mlp_parts).transpose()?,
        latent: u8::try_from(atlas.latent).map_err(|_| ExportError::Capacity("latent size"))?,
        anchors: &anchors,
        trees: heapless::Vec::from_slice(&trees).map_err(|_| ExportError::Capacity("anchors"))?,
        support: support.parts().ok_or(ExportError::Capacity(LINKS_EXCEEDED))?,
        agreement,
        people: &atlas.people,
    };
    Bundle::from_parts(&parts).map_err(ExportError::Bundle)?;
    let sizes = measure(&parts)?;
    let mut bytes = vec![0u8; sizes.total];
    let used = bundle::to_slice(&parts, &mut bytes).map_err(ExportError::Bundle)?;
    bytes.truncate(used);
    Bundle::from_bytes(&bytes).map_err(ExportError::Bundle)?;
    Ok((bytes, sizes))
}

/// The wire form of a quantized MLP, borrowing its bytes.
fn mlp_parts(m: &QuantizedMlp) -> Result<MlpParts<'_>, ExportError> {
    let mut layers = heapless::Vec::new();
    for l in &m.layers {
        let p = LayerParts {
            inputs: l.inputs,
            outputs: l.outputs,
            activation: l.activation,
            weight_width: l.weight_width,
            weights: &l.weights,
            bias: &l.bias,
            multiplier: &l.multiplier,
            shift: &l.shift,
        };
        layers.push(p).map_err(|_| ExportError::Capacity("layers"))?;
    }
    Ok(MlpParts { input_scale: m.input_scale, output_scale: m.output_scale, layers })
}

/// Postcard sizes of each field; they add up to the payload because postcard writes a struct
/// as its fields in order, with no framing.
fn measure(parts: &Parts<'_>) -> Result<Sizes, ExportError> {
    fn size<T: Serialize + ?Sized>(v: &T) -> Result<usize, ExportError> {
        postcard::to_allocvec(v).map(|b| b.len()).map_err(|e| ExportError::Encode(e.to_string()))
    }
    let mut s = Sizes {
        header: bundle::HEADER_LEN,
        other: size(parts.name)? + size(&parts.latent)?,
        schema: size(&parts.schema)?,
        encoder: size(&parts.encoder)?,
        classifier: size(&parts.classifier)?,
        anchors: size(parts.anchors)?,
        trees: size(&parts.trees)?,
        support: size(&parts.support)?,
        agreement: size(parts.agreement)?,
        people: size(parts.people)?,
        total: 0,
    };
    s.total = s.header
        + s.other
        + s.schema
        + s.encoder
        + s.classifier
        + s.anchors
        + s.trees
        + s.support
        + s.agreement
        + s.people;
    debug_assert_eq!(s.total - s.header, size(parts)?);
    Ok(s)
}

/// Row-major f32 rows as little-endian bytes (the query file the firmware embeds).
pub fn query_bytes(rows: &[f32]) -> Vec<u8> {
    rows.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The inverse of [`query_bytes`]; `None` when the length is not a multiple of 4.
pub fn read_queries(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{Activation, Dense, Mlp};
    use crate::surrogate::{self, TreeParams};
    use cent_nostd::schema::Feature;

    fn identity(n: usize) -> Mlp {
        let mut weights = vec![0.0; n * n];
        for i in 0..n {
            weights[i * n + i] = 1.0;
        }
        Mlp {
            layers: vec![Dense {
                inputs: n,
                outputs: n,
                weights,
                bias: vec![0.0; n],
                activation: Activation::Identity,
            }],
        }
    }

    /// Two continuous features, latent = the features themselves, one tree "x0 > 0.5".
    fn tiny() -> (Schema, QuantizedMlp, Atlas) {
        let mut schema = Schema::new(2);
        schema.push(Feature::continuous(0, 0.0, 1.0)).unwrap();
        schema.push(Feature::continuous(1, 0.0, 1.0)).unwrap();
        let rows: Vec<f32> = (0..20).flat_map(|i| [i as f32 / 19.0, 0.5]).collect();
        let labels: Vec<usize> = (0..20).map(|i| usize::from(i >= 10)).collect();
        let tree = surrogate::fit(&rows, 2, &labels, 2, &[true, true], TreeParams::default()).unwrap();
        let encoder = quantize_mlp(&identity(2), &rows, WeightWidth::I8).unwrap();
        let atlas = Atlas {
            latent: 2,
            anchors: vec![0.2, 0.5, 0.8, 0.5],
            anchor_class: vec![0, 1],
            trees: vec![tree.clone(), tree],
            people: Vec::new(),
        };
        (schema, encoder, atlas)
    }

    #[test]
    fn test_assemble_round_trips_and_sizes_add_up() {
        let (schema, encoder, atlas) = tiny();
        let (bytes, sizes) = assemble("tiny", &schema, &encoder, None, &atlas, &DeviceSupport::default(), &[]).unwrap();
        assert_eq!(sizes.total, bytes.len());
        assert_eq!(sizes.classifier, 1, "None is one byte");
        assert_eq!(sizes.anchors, 1 + 2 * 2 * 2, "length prefix + 4 int16");
        let b = Bundle::from_bytes(&bytes).unwrap();
        assert_eq!((b.name, b.atlas.len(), b.atlas.latent()), ("tiny", 2, 2));
        let step = encoder.output_scale;
        assert!((b.atlas.anchor(1, 0) as f32 * step - 0.8).abs() <= step * 0.5 + 1e-6);
    }

    #[test]
    fn test_assemble_writes_the_ordered_flag() {
        let (_, encoder, atlas) = tiny();
        // The same two columns as one ordered, increase-only group.
        let mut schema = Schema::new(2);
        let group = Feature::ordinal(0, 2).with_mutability(cent_nostd::schema::Mutability::IncreaseOnly);
        schema.push(group).unwrap();
        let (bytes, _) = assemble("tiny", &schema, &encoder, None, &atlas, &DeviceSupport::default(), &[]).unwrap();
        let b = Bundle::from_bytes(&bytes).unwrap();
        assert_eq!(b.schema, schema);
        assert!(b.schema.features()[0].ordered);
    }

    #[test]
    fn test_assemble_rejects_a_latent_mismatch() {
        let (schema, encoder, mut atlas) = tiny();
        atlas.latent = 1;
        atlas.anchors.truncate(2);
        let err = assemble("tiny", &schema, &encoder, None, &atlas, &DeviceSupport::default(), &[]).unwrap_err();
        assert!(matches!(err, ExportError::Bundle(BundleError::Mismatch)), "{err}");
    }

    #[test]
    fn test_query_bytes_round_trip() {
        let rows = [0.0f32, -1.5, 1e-7, 3.25];
        assert_eq!(read_queries(&query_bytes(&rows)), Some(rows.to_vec()));
        assert_eq!(read_queries(&[0, 0, 0]), None);
    }

    #[test]
    fn test_bundle_name_names_dataset_model_and_seed() {
        assert_eq!(bundle_name("adult", ModelKind::Mlp, 1), "adult mlp seed=1");
    }
}
