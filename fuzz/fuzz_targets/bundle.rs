//! The bundle loader and the device entry point on arbitrary bytes: neither may panic.
//!
//! Each input is tried twice: as it is (header, length and CRC-32 checks), and with its payload
//! re-framed under a correct header, because a checksum stops nearly every mutation before the
//! postcard decoder and the validators would see it. Whenever a bundle parses, one `explain`
//! runs on a fixed valid query point with a seeded RNG.
#![no_main]

use cent_nostd::atlas::{Counterfactual, Explainer, Options};
use cent_nostd::bundle::{Bundle, HEADER_LEN, MAGIC, VERSION, crc32};
use cent_nostd::schema::{Kind, Schema};
use libfuzzer_sys::fuzz_target;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

fuzz_target!(|data: &[u8]| {
    if let Ok(bundle) = Bundle::from_bytes(data) {
        explain_once(&bundle);
    }
    if let Some(payload) = data.get(HEADER_LEN..) {
        let framed = frame(payload);
        if let Ok(bundle) = Bundle::from_bytes(&framed) {
            explain_once(&bundle);
        }
    }
});

/// `payload` behind a valid header: magic, version, length and CRC-32.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32(payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// A valid point of `schema`: mid-range scalars, the lowest whole value of discrete kinds, the
/// first category of every group.
fn query_point(schema: &Schema) -> Vec<f32> {
    let mut x = vec![0.0; schema.columns()];
    for f in schema.features() {
        let col = f.col as usize;
        x[col] = match f.kind {
            Kind::Continuous => 0.5,
            Kind::Integer | Kind::Binary => 0.0,
            Kind::Categorical => 1.0,
        };
    }
    x
}

fn explain_once(bundle: &Bundle<'_>) {
    let x = query_point(&bundle.schema);
    let query = bundle.schema.default_query();
    let mut explainer: Box<Explainer> = Box::default();
    let mut out: heapless::Vec<Counterfactual, 3> = heapless::Vec::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(0);
    let _ = explainer.explain(&bundle.model(), &x, &query, Options::default(), &mut rng, &mut out);
}
