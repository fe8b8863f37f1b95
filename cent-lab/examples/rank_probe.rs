//! How much the device's ordering of its answers could gain from judging each answer by the
//! people nearest to it, as the host's ranking does, if the bundle carried a sample of training
//! rows: for one dataset × model pair, the device's answers (up to eight, asked for directly)
//! for the evaluation's factuals, and the mean yNN (5 nearest of all rows, the evaluation's
//! measure) of the answer each ordering puts first: the device's own, the best of them by their
//! true yNN (an oracle), and the one whose 5 nearest rows of an evenly spaced sample of `m`
//! training rows (labelled by the model) agree most, for m = 128 to 1024; with the mean number
//! of changes of the first answer for the device and for the 512-row sample, and the 512-row
//! sample's agreement less the device's change penalty per changed feature.
//!
//! `cargo run --release -p cent-lab --example rank_probe -- heloc mlp 1`

use cent_host::artifacts::{Setup, Source};
use cent_host::atlas::AtlasParams;
use cent_host::blackbox::ModelKind;
use cent_host::export;
use cent_lab::evaluate::{Bench, Config};
use cent_lab::metrics::Reference;
use cent_nostd::atlas::{CHANGE_PENALTY, Counterfactual, Explainer, Options};
use cent_nostd::bundle::Bundle;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Sample sizes compared.
const SAMPLES: [usize; 4] = [128, 256, 512, 1024];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dataset = args.first().map_or("heloc", String::as_str).to_string();
    let kind = if args.get(1).map(String::as_str) == Some("lr") { ModelKind::Lr } else { ModelKind::Mlp };
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let setup = Setup { source: Source::Builtin(dataset.clone()), model: Some(kind), cache, seed };
    let a = setup.load().expect("artifacts");
    let params = AtlasParams { seed, ..AtlasParams::default() };
    let e = export::export(&a, params, export::Widths::I16).expect("export");
    let bundle = Bundle::from_bytes(&e.bytes).expect("bundle");
    let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(100, seed)).expect("bench");
    let factuals = bench.factuals().expect("factuals");
    let p = &a.prepared;
    let n_cols = p.train.n_cols;
    let mut all = p.train.data.clone();
    all.extend_from_slice(&p.test.data);
    let reference = Reference::new(a.model().unwrap(), all, n_cols).expect("reference");
    let samples: Vec<Reference> = SAMPLES
        .iter()
        .map(|&m| {
            let rows: Vec<f32> = (0..m).flat_map(|i| p.train.row(i * p.train.n_rows() / m).to_vec()).collect();
            Reference::new(a.model().unwrap(), rows, n_cols).expect("sample")
        })
        .collect();
    let query = bundle.schema.default_query();
    let mut explainer: Box<Explainer> = Box::default();
    let (mut device, mut oracle, mut answered, mut answers) = (0.0, 0.0, 0usize, 0usize);
    let (mut device_l0, mut sample_l0) = (0.0, 0.0);
    // yNN and l0 of the first answer by the 512-row sample less the change penalty.
    let mut penalty = (0.0, 0.0);
    let mut by_sample = [0.0f64; SAMPLES.len()];
    for &i in &factuals {
        let x = p.test.row(i);
        let mut out: heapless::Vec<Counterfactual, 8> = heapless::Vec::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(i as u64);
        explainer.explain(&bundle.model(), x, &query, Options::default(), &mut rng, &mut out).expect("explain");
        let target = |c: &Counterfactual| usize::from(c.class.unwrap_or(0));
        let truth: Vec<f64> = out.iter().map(|c| reference.ynn(&c.x, target(c), 5)).collect();
        let Some(&first) = truth.first() else { continue };
        answered += 1;
        answers += out.len();
        device += first;
        device_l0 += f64::from(out[0].changed.count_ones());
        oracle += truth.iter().copied().fold(0.0, f64::max);
        for (s, sample) in samples.iter().enumerate() {
            let judged: Vec<f64> = out.iter().map(|c| sample.ynn(&c.x, target(c), 5)).collect();
            // The most agreeing answer, ties to the device's order.
            let best = (1..judged.len()).fold(0, |b, k| if judged[k] > judged[b] { k } else { b });
            by_sample[s] += truth[best];
            if SAMPLES[s] == 512 {
                sample_l0 += f64::from(out[best].changed.count_ones());
                // Less the device's change penalty (13 of 255) per changed feature.
                let penalized: Vec<f64> = judged
                    .iter()
                    .zip(&out)
                    .map(|(j, c)| j - f64::from(CHANGE_PENALTY) / 255.0 * f64::from(c.changed.count_ones()))
                    .collect();
                let best = (1..penalized.len()).fold(0, |b, k| if penalized[k] > penalized[b] { k } else { b });
                penalty.0 += truth[best];
                penalty.1 += f64::from(out[best].changed.count_ones());
            }
        }
    }
    let n = answered.max(1) as f64;
    print!(
        "{dataset} {kind:?} seed {seed}: {answered} answered, {:.1} answers each; yNN device {:.3}, oracle {:.3}",
        answers as f64 / n,
        device / n,
        oracle / n
    );
    for (m, total) in SAMPLES.iter().zip(by_sample) {
        print!(", sample {m} {:.3}", total / n);
    }
    println!(
        "; l0 device {:.2}, sample 512 {:.2}; with the change penalty yNN {:.3}, l0 {:.2}",
        device_l0 / n,
        sample_l0 / n,
        penalty.0 / n,
        penalty.1 / n
    );
}
