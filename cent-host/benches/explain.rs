//! Per-query latency of the full-precision explainer on Adult (k = 1000, max_search = 50),
//! after training (models come from the cache, trained on first use). At the defaults a
//! query uses a second thread when the machine has two cores (`Config::parallel`: its first
//! two steps at once, then the people and single moves that may compete with its first
//! answer); `cent-lab/examples/query_cost.rs` with `parallel` times each row in turn with and
//! without that.
//!
//! Run with the dev profile, where cent's crates are optimised and burn is not:
//! `cargo bench -p cent-host --profile dev --bench explain`

use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::ModelKind;
use cent_host::explain::{Config, Explainer};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    for kind in [ModelKind::Lr, ModelKind::Mlp] {
        let setup = Setup { source: Source::Builtin("adult".into()), model: Some(kind), cache: cache.clone(), seed: 1 };
        let a = setup.load().expect("adult artifacts");
        let enc = &a.prepared.encoding;
        let query = enc.to_core_schema().default_query();
        let explainer =
            Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, Config::default())
                .expect("the built-in model labels the pool");
        let rows = a.prepared.test.n_rows();
        let mut next = 0;
        c.bench_function(&format!("explain/adult/{kind:?}/k1000"), |b| {
            b.iter(|| {
                next = (next + 1) % rows.min(200);
                black_box(explainer.explain(a.prepared.test.row(next), &query, None).ok())
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
