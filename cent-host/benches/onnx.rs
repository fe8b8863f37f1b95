//! Per-query latency of the explainer on Adult with a model served by tract (`--onnx`) against
//! the built-in forward pass of the same weights, in one run (k = 1000, max_search = 50).
//!
//! `data/onnx/adult-mlp.json` holds the weights and `data/onnx/adult-mlp.onnx` is their export
//! (`scripts/make_onnx.py`); the bench checks that both give the same probabilities on the
//! pool and the benchmarked rows before it times anything. The VAE and the split come from the
//! cache (trained on first use).
//!
//! `tract-mlp` runs the same file with tract as the runtime (`OnnxModel::load_tract`), for
//! comparison. `CENT_BENCH_ONNX=a.onnx,b.onnx` adds further ONNX models for Adult's 47 encoded
//! columns, e.g. the 100-tree LightGBM of `scripts/make_onnx.py --adult-lightgbm` (README,
//! "Bring your own model"); with `CENT_BENCH_TRACT=1` each of them also run by tract, which
//! for that LightGBM takes seconds a query (labelling the pool alone takes minutes).
//! A model that `cent --onnx` asks once for each distinct row of a batch (`distinct::pays`:
//! that LightGBM, for one) runs a second time that way, as `distinct-<name>`.
//!
//! Run with the dev profile: `cargo bench -p cent-host --profile dev --bench onnx`

use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::{BlackBox, Model, ModelKind};
use cent_host::distinct::{self, Distinct};
use cent_host::explain::{Config, Explainer};
use cent_host::onnx::{OnnxModel, Runtime};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::{Path, PathBuf};

/// Rows explained in turn, as in the `explain` bench.
const ROWS: usize = 200;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/onnx").join(name)
}

/// Largest absolute difference of two models' probabilities on `rows`.
fn max_difference(a: &dyn BlackBox, b: &dyn BlackBox, rows: &[f32]) -> f32 {
    let (p, q) = (a.probabilities(rows).expect("runs"), b.probabilities(rows).expect("runs"));
    p.iter().zip(&q).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn bench(c: &mut Criterion) {
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let setup = Setup { source: Source::Builtin("adult".into()), model: Some(ModelKind::Mlp), cache, seed: 1 };
    let a = setup.load().expect("adult artifacts");
    let enc = &a.prepared.encoding;
    let (n_cols, classes) = (enc.n_cols(), enc.classes().len());
    let builtin = Model::load(&fixture("adult-mlp.json")).expect("data/onnx/adult-mlp.json");
    let onnx = OnnxModel::load(&fixture("adult-mlp.onnx"), n_cols, classes).expect("data/onnx/adult-mlp.onnx");
    assert!(matches!(onnx.runtime(), Runtime::Dense { .. }), "adult-mlp.onnx: {}", onnx.runtime());
    let queries = &a.prepared.test.data[..ROWS * n_cols];
    for rows in [&a.prepared.train.data[..], queries] {
        let diff = max_difference(&builtin, &onnx, rows);
        assert!(diff <= 1e-5, "adult-mlp.onnx is not adult-mlp.json: probabilities differ by {diff}");
    }
    let by_tract = OnnxModel::load_tract(&fixture("adult-mlp.onnx"), n_cols, classes).expect("tract plans it");
    let mut models: Vec<(String, Box<dyn BlackBox>)> = vec![
        ("builtin-mlp".into(), Box::new(builtin)),
        ("onnx-mlp".into(), Box::new(onnx)),
        ("tract-mlp".into(), Box::new(by_tract)),
    ];
    let with_tract = std::env::var_os("CENT_BENCH_TRACT").is_some();
    for path in std::env::var("CENT_BENCH_ONNX").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
        let path = Path::new(path);
        let name = path.file_stem().map_or("model".into(), |s| s.to_string_lossy().into_owned());
        let model = OnnxModel::load(path, n_cols, classes).expect("CENT_BENCH_ONNX model loads");
        println!("{name}: {}", model.runtime());
        if with_tract {
            let by_tract = OnnxModel::load_tract(path, n_cols, classes).expect("tract plans it");
            let diff = max_difference(&model, &by_tract, queries);
            assert!(diff <= 1e-4, "{name}: {} and tract differ by {diff}", model.runtime());
            models.push((format!("tract-{name}"), Box::new(by_tract)));
        }
        if distinct::pays(model.runtime(), n_cols) {
            // As `cent --onnx` runs it: asked once for each distinct row of a batch.
            let wrapped = Distinct::new(OnnxModel::load(path, n_cols, classes).expect("loads again"));
            models.push((format!("distinct-{name}"), Box::new(wrapped)));
        }
        models.push((format!("onnx-{name}"), Box::new(model)));
    }
    let query = enc.to_core_schema().default_query();
    for (name, model) in &models {
        let explainer = Explainer::new(enc, model.as_ref(), &a.vae.encoder, &a.prepared.train.data, Config::default())
            .expect("the model labels the pool");
        let mut next = 0;
        c.bench_function(&format!("explain/adult/{name}/k1000"), |b| {
            b.iter(|| {
                next = (next + 1) % ROWS;
                black_box(explainer.explain(a.prepared.test.row(next), &query, None).ok())
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
