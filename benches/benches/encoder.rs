//! Quantized (A16W8: int8 weights, integer-only) MLP forward pass against its float reference.
//!
//! Two shapes: an Adult-like encoder (46 columns -> 25 ReLU -> 8 latent) and the widest one the
//! capacities allow at two layers (64 -> 64 ReLU -> 16). The float reference runs the same
//! weights before quantization, in plain f32 loops on stack buffers.

use cent_benches::synthetic::OwnedMlp;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro128PlusPlus;
use std::hint::black_box;

const POINTS: usize = 16;

fn bench_shapes(c: &mut Criterion) {
    let rng = &mut Xoshiro128PlusPlus::seed_from_u64(46);
    let mut group = c.benchmark_group("encoder");
    for (name, widths) in [("46-25-8", [46, 25, 8]), ("64-64-16", [64, 64, 16])] {
        let mlp = OwnedMlp::random(rng, &widths, 1.0).expect("shape fits the capacities");
        let view = mlp.view().expect("generated mlp is valid");
        let points: Vec<Vec<f32>> = (0..POINTS)
            .map(|_| (0..widths[0]).map(|_| (rng.next_u32() >> 8) as f32 / 16_777_216.0).collect())
            .collect();
        group.bench_function(BenchmarkId::new("quantized", name), |b| {
            let (mut out, mut k) = ([0i16; 16], 0);
            b.iter(|| {
                k = (k + 1) % POINTS;
                view.forward(black_box(&points[k]), &mut out).expect("input matches");
                black_box(out[0])
            });
        });
        group.bench_function(BenchmarkId::new("f32", name), |b| {
            let (mut out, mut k) = ([0f32; 16], 0);
            b.iter(|| {
                k = (k + 1) % POINTS;
                mlp.forward_f32(black_box(&points[k]), &mut out);
                black_box(out[0])
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_shapes);
criterion_main!(benches);
