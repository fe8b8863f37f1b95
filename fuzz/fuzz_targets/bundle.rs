//! The bundle loader and the device entry point on arbitrary bytes: neither may panic, and no
//! answer may break the constraints it was asked under.
//!
//! An input is a bundle followed by control bytes: the header's length field says where the
//! bundle ends, and whatever follows it drives the explanation (the query point, every
//! feature's mutability and cost, the category transitions, the global weights, the options and
//! the random seed). Without control bytes the query is a fixed valid point under the schema's
//! defaults. The bundle is tried twice: as it is (header, length and CRC-32 checks), and with
//! its payload re-framed under a correct header, because a checksum stops nearly every mutation
//! before the postcard decoder and the validators would see it. Every counterfactual returned
//! must pass the core's own constraint check against the query it answered.
#![no_main]

use cent_nostd::atlas::{Counterfactual, Explainer, Options};
use cent_nostd::bundle::{Bundle, HEADER_LEN, MAGIC, VERSION, crc32};
use cent_nostd::counterfactual;
use cent_nostd::schema::{Kind, Mutability, Query, Schema};
use libfuzzer_sys::arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

fuzz_target!(|data: &[u8]| {
    let (bundle, control) = split(data);
    if bundle.len() < data.len() {
        // The whole input as a bundle: trailing bytes must be refused, not read.
        assert!(Bundle::from_bytes(data).is_err(), "a bundle with trailing bytes was accepted");
    }
    if let Ok(parsed) = Bundle::from_bytes(bundle) {
        explain(&parsed, control);
    }
    if let Some(payload) = bundle.get(HEADER_LEN..) {
        let framed = frame(payload);
        if let Ok(parsed) = Bundle::from_bytes(&framed) {
            explain(&parsed, control);
        }
    }
});

/// The bundle as long as its header says (when the input holds that much) and the bytes after
/// it; otherwise the whole input and no control bytes.
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    let declared = data.get(6..10).and_then(|b| <[u8; 4]>::try_from(b).ok()).map(u32::from_le_bytes);
    match declared.and_then(|len| HEADER_LEN.checked_add(len as usize)) {
        Some(end) if end <= data.len() => data.split_at(end),
        _ => (data, &[]),
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

/// `Some(value)` drawn from the control bytes about half the time; `None` once they run out.
fn maybe<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> Option<T> {
    if u.arbitrary::<bool>().unwrap_or(false) { u.arbitrary().ok() } else { None }
}

/// The query point, constraints, costs, options and seed the control bytes ask for, each
/// starting from the valid default and replaced where the bytes say so.
fn request(schema: &Schema, control: &[u8]) -> (Vec<f32>, Query, Options, u64) {
    let mut x = query_point(schema);
    let mut query = schema.default_query();
    let mut options = Options::default();
    let mut u = Unstructured::new(control);
    if control.is_empty() {
        return (x, query, options, 0);
    }
    for v in &mut x {
        if let Some(value) = maybe::<f32>(&mut u) {
            *v = value;
        }
    }
    for m in query.mutability.iter_mut().take(schema.features().len()) {
        *m = match u.int_in_range(0..=4u8).unwrap_or(4) {
            0 => Mutability::Free,
            1 => Mutability::IncreaseOnly,
            2 => Mutability::DecreaseOnly,
            3 => Mutability::Immutable,
            _ => *m,
        };
    }
    for c in query.cost.iter_mut().take(schema.features().len()) {
        if let Some(cost) = maybe::<f32>(&mut u) {
            *c = cost;
        }
    }
    for t in query.transitions.iter_mut().take(schema.columns()) {
        if let Some(mask) = maybe::<u64>(&mut u) {
            *t = mask;
        }
    }
    for w in [&mut query.l0, &mut query.entropy, &mut query.margin] {
        if let Some(value) = maybe::<f32>(&mut u) {
            *w = value;
        }
    }
    if let Some(desired) = maybe::<Option<u8>>(&mut u) {
        options.desired = desired;
    }
    if let Some(max_search) = maybe::<u8>(&mut u) {
        options.max_search = max_search;
    }
    if let Some(lead) = maybe::<f32>(&mut u) {
        options.lead = lead;
    }
    let seed = u.arbitrary::<u64>().unwrap_or(0);
    // After the seed, so that earlier corpus entries ask what they asked before.
    if let Some(candidates) = maybe::<u8>(&mut u) {
        options.candidates = candidates;
    }
    for calls in [&mut options.compare_calls, &mut options.runner_up_calls, &mut options.people_calls] {
        if let Some(value) = maybe::<u16>(&mut u) {
            *calls = value;
        }
    }
    if let Some(defer_below) = maybe::<u8>(&mut u) {
        options.defer_below = defer_below;
    }
    if let Some(balance_calls) = maybe::<u16>(&mut u) {
        options.balance_calls = balance_calls;
    }
    (x, query, options, seed)
}

fn explain(bundle: &Bundle<'_>, control: &[u8]) {
    let (x, query, options, seed) = request(&bundle.schema, control);
    let mut explainer: Box<Explainer> = Box::default();
    let mut out: heapless::Vec<Counterfactual, 3> = heapless::Vec::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    if explainer.explain(&bundle.model(), &x, &query, options, &mut rng, &mut out).is_ok() {
        for cf in &out {
            if let Err(violation) = counterfactual::check(&bundle.schema, &query, &x, &cf.x) {
                panic!("answer breaks its query's constraints: {violation:?}\nx  = {x:?}\nx' = {:?}", cf.x);
            }
        }
    }
}
