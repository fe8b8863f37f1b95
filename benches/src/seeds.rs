//! The seed corpus of the `bundle` fuzz target (`fuzz/corpus/bundle/seed-*`).
//!
//! Real synthetic bundles of several shapes, kept small so the fuzzer runs fast, plus a truncated
//! one and one with a flipped payload bit. `cargo run -p cent-benches --example write_fuzz_seeds`
//! writes them; a test checks that the committed files still match the generator and the format.

use crate::synthetic::{Spec, SpecError, Synthetic};
use cent_nostd::bundle::{BundleError, HEADER_LEN};
use std::fmt;

/// Where the corpus lives, relative to this crate's manifest.
pub const CORPUS_DIR: &str = "../fuzz/corpus/bundle";

/// What every seed shares unless it says otherwise.
const BASE: Spec = Spec {
    name: "seed",
    features: 3,
    classes: 2,
    depth: 3,
    max_nodes: 15,
    anchors: 2,
    hidden: 4,
    latent: 2,
    classifier_hidden: Some(4),
};

/// The bundles written, each with its file name and seed.
pub const SHAPES: [(&str, Spec, u64); 4] = [
    ("seed-tiny", Spec { name: "tiny", ..BASE }, 1),
    (
        "seed-three-classes",
        Spec {
            name: "three classes, no classifier",
            features: 6,
            classes: 3,
            depth: 5,
            max_nodes: 31,
            anchors: 3,
            hidden: 8,
            latent: 3,
            classifier_hidden: None,
        },
        2,
    ),
    (
        "seed-medium",
        Spec {
            name: "medium",
            features: 12,
            depth: 8,
            max_nodes: 63,
            anchors: 4,
            hidden: 16,
            latent: 8,
            classifier_hidden: Some(16),
            ..BASE
        },
        3,
    ),
    (
        "seed-wide",
        Spec {
            name: "wide",
            features: 32,
            classes: 4,
            depth: 6,
            max_nodes: 41,
            hidden: 8,
            latent: 16,
            classifier_hidden: Some(8),
            ..BASE
        },
        4,
    ),
];

/// The `[bundle][control bytes]` seeds (one per shape, in [`SHAPES`] order): the bytes after
/// the bundle drive the fuzz target's query, constraints, costs and options.
pub const QUERY_SEEDS: [&str; 4] =
    ["seed-query-tiny", "seed-query-three-classes", "seed-query-medium", "seed-query-wide"];

/// Control bytes after each query seed's bundle.
pub const CONTROL_LEN: u8 = 96;

/// `CONTROL_LEN` bytes from a seeded LCG (PCG's multiplier): varied, reproducible controls.
fn controls(seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..CONTROL_LEN)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

/// Why the corpus could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedError {
    Spec(SpecError),
    Bundle(BundleError),
}

impl fmt::Display for SeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeedError::Spec(e) => write!(f, "seed model: {e}"),
            SeedError::Bundle(e) => write!(f, "seed bundle: {e}"),
        }
    }
}

impl std::error::Error for SeedError {}

/// Every seed file as `(name, bytes)`: the [`SHAPES`], then `seed-truncated` (the first one cut
/// inside its payload) and `seed-bitflip` (the first one with one payload bit flipped: a
/// checksum error as it is, a decoder input once the fuzz target re-frames it), then the
/// [`QUERY_SEEDS`] (each shape followed by [`CONTROL_LEN`] control bytes).
///
/// # Errors
/// [`SeedError`] if a shape cannot be generated or written (a generator bug).
pub fn files() -> Result<Vec<(&'static str, Vec<u8>)>, SeedError> {
    let mut files = Vec::new();
    for (name, spec, seed) in &SHAPES {
        let bytes = Synthetic::generate(spec, *seed).map_err(SeedError::Spec)?.to_bytes().map_err(SeedError::Bundle)?;
        files.push((*name, bytes));
    }
    let first = files.first().map(|(_, b)| b.clone()).unwrap_or_default();
    files.push(("seed-truncated", first[..first.len() / 2].to_vec()));
    let mut flipped = first;
    let i = HEADER_LEN + flipped.len().saturating_sub(HEADER_LEN) / 3;
    if let Some(b) = flipped.get_mut(i) {
        *b ^= 0x10;
    }
    files.push(("seed-bitflip", flipped));
    for (k, name) in QUERY_SEEDS.iter().enumerate() {
        let mut bytes = files.get(k).map(|(_, b)| b.clone()).unwrap_or_default();
        bytes.extend(controls(k as u64 + 1));
        files.push((*name, bytes));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cent_nostd::bundle::Bundle;
    use std::path::Path;

    #[test]
    fn test_seeds_parse_or_fail_as_intended() {
        let files = files().unwrap();
        assert_eq!(files.len(), 2 * SHAPES.len() + 2);
        for (name, bytes) in &files[..SHAPES.len()] {
            assert!(Bundle::from_bytes(bytes).is_ok(), "{name} does not parse");
        }
        let error = |name: &str| Bundle::from_bytes(&files.iter().find(|f| f.0 == name).unwrap().1).unwrap_err();
        assert_eq!(error("seed-truncated"), BundleError::Length);
        assert_eq!(error("seed-bitflip"), BundleError::Checksum);
        for (name, bytes) in &files[SHAPES.len() + 2..] {
            let bundle = &bytes[..bytes.len() - usize::from(CONTROL_LEN)];
            assert!(Bundle::from_bytes(bundle).is_ok(), "{name}: its bundle does not parse");
            assert_eq!(Bundle::from_bytes(bytes).unwrap_err(), BundleError::Length, "{name}: trailing bytes");
        }
    }

    #[test]
    fn test_committed_corpus_matches_generator() {
        // Fails when the bundle format or the generator changes: rerun the write_fuzz_seeds example.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS_DIR);
        for (name, bytes) in files().unwrap() {
            let on_disk = std::fs::read(dir.join(name)).unwrap_or_default();
            assert!(on_disk == bytes, "{name} is stale or missing: run the write_fuzz_seeds example");
        }
    }
}
