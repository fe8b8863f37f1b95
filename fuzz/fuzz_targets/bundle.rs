//! The bundle loader and the device entry point on arbitrary bytes: neither may panic.
//!
//! Each input is read two ways:
//!
//! 1. As a bundle, tried as it is (header, length and CRC-32 checks) and with its payload
//!    re-framed under a correct header, because a checksum stops nearly every mutation before
//!    the postcard decoder and the validators would see it. Whenever a bundle parses, one
//!    `explain` runs on a fixed valid query point with a seeded RNG.
//! 2. As `[k][k control bytes][bundle]`: the bundle is tried the same two ways, and whenever it
//!    parses, the control bytes drive `explain` — the query vector (valid points, values out of
//!    range, NaN and infinities, broken one-hot groups), every feature's mutability (immutable,
//!    increase-only, decrease-only, free) and cost, the category transitions, the l0, entropy
//!    and margin weights, the desired class, the search depth, the confirmation lead, the
//!    number of answers and the seed. Exhausted control bytes read as zeros.
#![no_main]

use cent_nostd::atlas::{Counterfactual, ExplainError, Explainer, Options, Summary};
use cent_nostd::bundle::{Bundle, HEADER_LEN, MAGIC, VERSION, crc32};
use cent_nostd::schema::{Kind, Mutability, Query, Schema};
use libfuzzer_sys::fuzz_target;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

fuzz_target!(|data: &[u8]| {
    for_each_bundle(data, explain_once);
    if let Some((&k, rest)) = data.split_first() {
        let (controls, bundle) = rest.split_at(usize::from(k).min(rest.len()));
        for_each_bundle(bundle, |b| explain_controlled(b, controls));
    }
});

/// Runs `f` on `bytes` as a bundle, and on its payload re-framed, whenever either parses.
fn for_each_bundle(bytes: &[u8], mut f: impl FnMut(&Bundle<'_>)) {
    if let Ok(bundle) = Bundle::from_bytes(bytes) {
        f(&bundle);
    }
    if let Some(payload) = bytes.get(HEADER_LEN..) {
        let framed = frame(payload);
        if let Ok(bundle) = Bundle::from_bytes(&framed) {
            f(&bundle);
        }
    }
}

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
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(0);
    let _ = explain::<3>(bundle, &x, &query, Options::default(), &mut rng);
}

fn explain<const K: usize>(
    bundle: &Bundle<'_>,
    x: &[f32],
    query: &Query,
    options: Options,
    rng: &mut Xoshiro128PlusPlus,
) -> Result<Summary, ExplainError> {
    let mut explainer: Box<Explainer> = Box::default();
    let mut out: heapless::Vec<Counterfactual, K> = heapless::Vec::new();
    explainer.explain(&bundle.model(), x, query, options, rng, &mut out)
}

/// The control bytes as a stream of small values; zeros once exhausted.
struct Controls<'a>(&'a [u8]);

impl Controls<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }

    /// Mostly ordinary weights in [0, 16), sometimes zero, negative, huge or not finite.
    fn weight(&mut self) -> f32 {
        match self.byte() % 8 {
            0 => 0.0,
            1 => f32::from_bits(self.u32()),
            2 => -1.0,
            3 => f32::INFINITY,
            _ => f32::from(self.byte()) / 16.0,
        }
    }
}

/// One query built from `controls`, explained with `bundle`; errors are fine, panics are not.
fn explain_controlled(bundle: &Bundle<'_>, controls: &[u8]) {
    let mut c = Controls(controls);
    let schema = &bundle.schema;
    let x = point(schema, &mut c);
    let mut query = schema.default_query();
    for (j, _) in schema.features().iter().enumerate() {
        let keep = query.mutability[j];
        query.mutability[j] = match c.byte() % 5 {
            0 => Mutability::Free,
            1 => Mutability::IncreaseOnly,
            2 => Mutability::DecreaseOnly,
            3 => Mutability::Immutable,
            _ => keep,
        };
        if c.byte() % 2 == 1 {
            query.cost[j] = c.weight();
        }
    }
    for col in 0..schema.columns() {
        if c.byte() % 4 == 0 {
            query.transitions[col] = c.u64();
        }
    }
    if c.byte() % 2 == 1 {
        (query.l0, query.entropy, query.margin) = (c.weight(), c.weight(), c.weight());
    }
    let desired = match c.byte() {
        0..=127 => None,
        d => Some(d % 20),
    };
    let lead = if c.byte() % 2 == 1 { c.weight() } else { Options::default().lead };
    let options = Options { desired, max_search: c.byte(), lead };
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(c.u64());
    let _ = match c.byte() % 3 {
        0 => explain::<1>(bundle, &x, &query, options, &mut rng),
        1 => explain::<2>(bundle, &x, &query, options, &mut rng),
        _ => explain::<3>(bundle, &x, &query, options, &mut rng),
    };
}

/// A query vector: valid values of each feature most of the time, otherwise values out of range,
/// arbitrary bits (NaN, infinities), no hot column or several, or a vector of the wrong length.
fn point(schema: &Schema, c: &mut Controls<'_>) -> Vec<f32> {
    let mut x = query_point(schema);
    for f in schema.features() {
        let (col, width) = (f.col as usize, f.width as usize);
        let b = c.byte();
        match (f.kind, b % 8) {
            (_, 7) => x[col] = f32::from_bits(c.u32()),
            (Kind::Categorical, 6) => x[col..col + width].fill(0.0),
            (Kind::Categorical, 5) => x[col..col + width].fill(1.0),
            (Kind::Categorical, _) => {
                x[col..col + width].fill(0.0);
                x[col + usize::from(c.byte()) % width] = 1.0;
            }
            (Kind::Binary, _) => x[col] = f32::from(b % 2),
            (Kind::Integer, _) if f.max > f.min => {
                // A whole raw value in range, encoded.
                let steps = (f.max - f.min).min(255.0);
                x[col] = (f32::from(c.byte()) % (steps + 1.0)) / (f.max - f.min);
            }
            (_, 6) => x[col] = 1.5,
            (_, 5) => x[col] = -0.5,
            _ => x[col] = f32::from(c.byte()) / 255.0,
        }
    }
    match c.byte() {
        254 => {
            x.pop();
        }
        255 => x.push(0.5),
        _ => {}
    }
    x
}
