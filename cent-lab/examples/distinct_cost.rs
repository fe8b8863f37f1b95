//! What asking an ONNX model once for each distinct row of a batch (`cent_host::distinct`)
//! saves: the explainer at its defaults on a built-in dataset's first 200 test rows (or the
//! rows of a CSV), each row explained in turn with the model asked directly and through
//! `Distinct`, the two answers compared (they must be the same) and both times kept.
//!
//! ```sh
//! cargo run --release -p cent-lab --example distinct_cost -- adult /tmp/adult-lightgbm.onnx
//! cargo run --release -p cent-lab --example distinct_cost -- adult-wide /tmp/peers-out/mlp.onnx /tmp/peers-out/factuals_raw.csv
//! ```
//!
//! A fourth argument `tract` runs the model with tract instead of cent's own evaluator. Prints
//! the runtime, whether `distinct::pays` would wrap it, how many of the rows sent to the model
//! were distinct within their batch, both medians and means, and the median of the per-row
//! ratios (the machine's speed drifts between runs; taken in turn, both sides see the same).

use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::{BlackBox, ModelError};
use cent_host::distinct::{self, Distinct};
use cent_host::explain::{Config, Explainer};
use cent_host::onnx::OnnxModel;
use cent_host::rows::Input;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// The model, counting the rows it is sent.
struct Counted {
    inner: OnnxModel,
    rows: AtomicUsize,
}

impl BlackBox for Counted {
    fn classes(&self) -> usize {
        self.inner.classes()
    }
    fn inputs(&self) -> usize {
        self.inner.inputs()
    }
    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        self.rows.fetch_add(rows.len() / self.inputs().max(1), Relaxed);
        self.inner.predict_proba(rows)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dataset = args.first().map_or("adult", String::as_str).to_string();
    let onnx = PathBuf::from(args.get(1).expect("usage: distinct_cost <dataset> <model.onnx> [rows.csv] [tract]"));
    let csv = args.get(2).filter(|s| !s.is_empty()).map(PathBuf::from);
    let tract = args.get(3).map(String::as_str) == Some("tract");
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let a = Setup { source: Source::Builtin(dataset), model: None, cache, seed: 1 }.load().expect("artifacts");
    let enc = &a.prepared.encoding;
    let load = || {
        let (cols, classes) = (enc.n_cols(), enc.classes().len());
        let inner =
            if tract { OnnxModel::load_tract(&onnx, cols, classes) } else { OnnxModel::load(&onnx, cols, classes) };
        Counted { inner: inner.expect("the model fits the data"), rows: AtomicUsize::new(0) }
    };
    let (direct, once) = (load(), Distinct::new(load()));
    let runtime = direct.inner.runtime();
    println!("{runtime}; wrapped by cent: {}", distinct::pays(runtime, enc.n_cols()));
    let pool = &a.prepared.train.data;
    let by_row = Explainer::new(enc, &direct, &a.vae.encoder, pool, Config::default()).expect("labels the pool");
    let by_distinct = Explainer::new(enc, &once, &a.vae.encoder, pool, Config::default()).expect("labels the pool");
    let (sent, asked) = (direct.rows.load(Relaxed), once.get_ref().rows.load(Relaxed));
    let xs: Vec<Vec<f32>> = match csv {
        Some(p) => Input::open(&p).expect("rows").rows(enc, None).expect("rows").filter_map(|r| r.x.ok()).collect(),
        None => (0..a.prepared.test.n_rows().min(200)).map(|i| a.prepared.test.row(i).to_vec()).collect(),
    };
    let query = enc.to_core_schema().default_query();
    let (mut plain, mut distinct, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for (i, x) in xs.iter().enumerate() {
        let run = |e: &Explainer<'_>| {
            let start = Instant::now();
            let answer = e.explain(x, &query, None);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            (ms, answer.map(|e| serde_json::to_string(&e).expect("json")).map_err(|e| e.to_string()))
        };
        let ((p, first), (d, second)) = if i % 2 == 0 {
            let p = run(&by_row);
            (p, run(&by_distinct))
        } else {
            let d = run(&by_distinct);
            (run(&by_row), d)
        };
        assert_eq!(first, second, "row {i}: the answers differ");
        plain.push(p);
        distinct.push(d);
        ratios.push(d / p);
    }
    let n = xs.len() as f64;
    let (sent, asked) = (direct.rows.load(Relaxed) - sent, once.get_ref().rows.load(Relaxed) - asked);
    println!("{} rows, answers the same; of {sent} rows sent to the model, {asked} distinct in their batch", xs.len());
    println!(
        "ms a query: median {:.3} asked directly, {:.3} once per distinct row; mean {:.3} / {:.3}; \
         per-row ratio median {:.3}",
        median(&mut plain.clone()),
        median(&mut distinct.clone()),
        plain.iter().sum::<f64>() / n,
        distinct.iter().sum::<f64>() / n,
        median(&mut ratios)
    );
}
