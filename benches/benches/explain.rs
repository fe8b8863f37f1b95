//! The device entry point end to end, on a synthetic atlas of 32 anchors.
//!
//! `bundle/from_bytes` parses and validates the whole bundle (header, CRC-32, postcard, every
//! layer and tree); `bundle/crc32` is its checksum step alone. `explain/*` runs `Explainer::explain` (encode, nearest anchor, graph, search,
//! realize, confirm) on 16 random points cycled through, keeping up to 3 results; once with the
//! on-device classifier confirming candidates and once without one.

use cent_benches::synthetic::{Spec, Synthetic, random_point};
use cent_nostd::atlas::{Counterfactual, Explainer, Options};
use cent_nostd::bundle::{Bundle, HEADER_LEN, crc32};
use criterion::{Criterion, criterion_group, criterion_main};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use std::hint::black_box;

const POINTS: usize = 16;
const SEED: u64 = 32;

fn bench_from_bytes(c: &mut Criterion) {
    let syn = Synthetic::generate(&Spec::default(), SEED).expect("default spec is valid");
    let bytes = syn.to_bytes().expect("bundle serializes");
    let nodes: usize = syn.trees().iter().map(|t| t.len() / cent_nostd::tree::RECORD_LEN).sum();
    eprintln!("bundle: {} bytes, {} anchors, {nodes} tree nodes", bytes.len(), syn.trees().len());
    c.bench_function("bundle/from_bytes", |b| b.iter(|| black_box(Bundle::from_bytes(black_box(&bytes)).is_ok())));
    // The bitwise CRC-32 over the payload is part of `from_bytes`; timed alone to show its share.
    let payload = &bytes[HEADER_LEN..];
    c.bench_function("bundle/crc32", |b| b.iter(|| black_box(crc32(black_box(payload)))));
}

fn bench_explain(c: &mut Criterion) {
    for (name, classifier_hidden) in [("explain/classifier", Some(16)), ("explain/no_classifier", None)] {
        let spec = Spec { classifier_hidden, ..Spec::default() };
        let syn = Synthetic::generate(&spec, SEED).expect("spec is valid");
        let bytes = syn.to_bytes().expect("bundle serializes");
        let bundle = Bundle::from_bytes(&bytes).expect("synthetic bundle is valid");
        let model = bundle.model();
        let query = bundle.schema.default_query();
        let rng = &mut Xoshiro128PlusPlus::seed_from_u64(SEED);
        let points: Vec<Vec<f32>> = (0..POINTS).map(|_| random_point(rng, &bundle.schema)).collect();
        let mut explainer: Box<Explainer> = Box::default();
        let mut out: heapless::Vec<Counterfactual, 3> = heapless::Vec::new();
        c.bench_function(name, |b| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % POINTS;
                let summary = explainer.explain(&model, &points[k], &query, Options::default(), rng, &mut out);
                black_box(summary.map(|s| s.examined).unwrap_or(0))
            });
        });
    }
}

criterion_group!(benches, bench_from_bytes, bench_explain);
criterion_main!(benches);
