//! What any answer of one or two changes could reach on the DiCE comparison harness
//! (`../shared/peers`), read as its scorer reads it: every attribute it changes counts, and a
//! change is redundant when setting it back alone keeps the decision, whatever combination that
//! leaves (the scorer knows no links). The answers themselves keep to `adult-wide`'s rules:
//! immutables, links (an education with its number, a marital status with a household role
//! people have) and observed values, at the given probability of the target class.
//!
//! ```sh
//! cargo run --release -p cent-lab --example bound_harness -- /tmp/peers-out mlp 0.6 [first] [out.json]
//! ```
//!
//! The first argument is the harness's `prepare.py` output (its ONNX models and
//! `factuals_raw.csv`); the target of each factual is the class the model does not give it.
//! yNN is measured over all rows of the data in cent's encoding of `adult-wide`, which scales
//! `fnlwgt` by all rows' range where the harness takes its training split's (the other numbers
//! have the same range in both).
//!
//! `first` limits the run to the first factuals; `out.json` receives, per factual, the best
//! answer of each kind (changes, redundancy) with its changes, read both ways.
//!
//! Prints, both ways, the best yNN per factual for a few limits on changes and redundancy, and
//! per redundancy budget the best mean yNN a choice of one answer per factual (of those with
//! any) reaches with the mean redundancy within it: an exact knapsack over the answers found.
//! The harness's goals are l0 at most 2.0, redundancy at most 0.2 and yNN at least 0.8.

use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::BlackBox;
use cent_host::onnx::OnnxModel;
use cent_host::rows::Input;
use cent_host::support::Support;
use cent_lab::bound::{self, Choice, SetBack, Setting};
use cent_lab::metrics::{self, Reference};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.first().map_or("/tmp/peers-out", String::as_str));
    let model_name = args.get(1).map_or("mlp", String::as_str).to_string();
    let min_probability: f32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(0.6);
    let first: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(usize::MAX);
    let json = args.get(4).map(PathBuf::from);
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let setup = Setup { source: Source::Builtin("adult-wide".into()), model: None, cache, seed: 1 };
    let (_, prepared) = setup.prepare().expect("adult-wide");
    let enc = &prepared.encoding;
    let cols = enc.n_cols();
    let onnx = dir.join(format!("{model_name}.onnx"));
    let model = OnnxModel::load(&onnx, cols, enc.classes().len()).expect("the harness's model");
    let schema = enc.to_core_schema();
    let query = schema.default_query();
    let support = Support::new(enc, &prepared.train.data);
    let mut all = prepared.train.data.clone();
    all.extend_from_slice(&prepared.test.data);
    let reference = Reference::new(&model, all, cols).expect("labels");

    let input = Input::open(&dir.join("factuals_raw.csv")).expect("factuals").keeping(&["row_id".into()]).unwrap();
    let factuals: Vec<(String, Vec<f32>)> = input
        .rows(enc, None)
        .expect("factual rows")
        .map(|r| (r.kept[0].clone().unwrap_or_default(), r.x.expect("a factual")))
        .take(first)
        .collect();
    let start = Instant::now();
    let found: Vec<[bound::Factual; 2]> = factuals
        .par_iter()
        .map(|(_, x)| {
            let target = 1 - metrics::predicted(&model, x).expect("model")[0];
            [SetBack::Plain, SetBack::Linked].map(|set_back| {
                let setting = Setting {
                    schema: &schema,
                    query: &query,
                    model: &model as &dyn BlackBox,
                    support: &support,
                    pool: &prepared.train.data,
                    reference: reference.rows(),
                    labels: reference.labels(),
                    min_probability,
                    grid: bound::GRID,
                    set_back,
                };
                setting.factual(x, target, None).expect("search")
            })
        })
        .collect();
    println!(
        "harness {model_name}, probability >= {min_probability}: {} factuals, {:.1} s",
        factuals.len(),
        start.elapsed().as_secs_f64()
    );
    if let Some(path) = &json {
        // Per factual, each kind of answer found: its measures and its changes, read both ways.
        let describe = |x: &[f32], a: &[f32]| -> Vec<String> {
            let (before, after) = (enc.decode(x).expect("decoded"), enc.decode(a).expect("decoded"));
            (0..before.len())
                .filter(|&j| before[j] != after[j])
                .map(|j| {
                    let name = &enc.attributes()[j].name;
                    format!("{name}: {} -> {}", enc.format_value(j, before[j]), enc.format_value(j, after[j]))
                })
                .collect()
        };
        let rows: Vec<serde_json::Value> = factuals
            .iter()
            .zip(&found)
            .map(|((id, x), f)| {
                let read = |f: &bound::Factual| -> Vec<serde_json::Value> {
                    f.choices
                        .iter()
                        .zip(&f.answers)
                        .map(|(c, a)| serde_json::json!({ "choice": c, "changes": describe(x, a) }))
                        .collect()
                };
                serde_json::json!({ "row_id": id, "plain": read(&f[0]), "linked": read(&f[1]) })
            })
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&rows).expect("json")).expect("written");
    }
    for (k, label) in [(0, "as a scorer without links reads it"), (1, "with cent's links")] {
        let choices: Vec<&[Choice]> = found.iter().map(|f| f[k].choices.as_slice()).collect();
        let answered = choices.iter().filter(|c| !c.is_empty()).count();
        println!("\nredundancy {label}: {answered} factuals have an answer of <= 2 changes");
        for (max_l0, max_red) in [(1, 0), (2, 0), (2, 2)] {
            let best: Vec<Choice> = choices
                .iter()
                .filter_map(|c| {
                    c.iter()
                        .filter(|c| c.l0 <= max_l0 && c.redundancy <= max_red)
                        .max_by(|a, b| a.ynn.total_cmp(&b.ynn))
                })
                .copied()
                .collect();
            let n = best.len().max(1) as f64;
            println!(
                "  best per factual, <= {max_l0} changes, redundancy <= {max_red}: {} factuals, yNN {:.3}, >= 0.8 on {}",
                best.len(),
                best.iter().map(|c| c.ynn).sum::<f64>() / n,
                best.iter().filter(|c| c.ynn >= 0.8).count()
            );
        }
        // Over the factuals with an answer: the best mean yNN with the mean redundancy within
        // each budget.
        let answerable: Vec<&[Choice]> = choices.iter().copied().filter(|c| !c.is_empty()).collect();
        for share in [0.0, 0.1, 0.2, 0.4, 0.8] {
            let budget = (share * answerable.len() as f64).floor() as usize;
            let (ynn, l0, red) = knapsack(&answerable, budget);
            let n = answerable.len().max(1) as f64;
            println!(
                "  one answer each, mean redundancy <= {share:.1}: yNN {:.3}, l0 {:.2}, redundancy {:.2}",
                ynn / n,
                l0 as f64 / n,
                red as f64 / n
            );
        }
    }
}

/// The greatest total yNN a choice of one answer per factual reaches with total redundancy at
/// most `budget`, and that choice's total l0 and redundancy (ties: fewer changes).
fn knapsack(factuals: &[&[Choice]], budget: usize) -> (f64, usize, usize) {
    // best[r]: the best (total yNN, l0, redundancy) so far with at most r redundancy.
    let mut best: Vec<Option<(f64, usize, usize)>> = vec![Some((0.0, 0, 0)); budget + 1];
    for choices in factuals {
        let mut next: Vec<Option<(f64, usize, usize)>> = vec![None; budget + 1];
        for (r, slot) in next.iter_mut().enumerate() {
            for c in choices.iter().filter(|c| c.redundancy <= r) {
                let Some((y, l0, red)) = best[r - c.redundancy] else { continue };
                let cand = (y + c.ynn, l0 + c.l0, red + c.redundancy);
                let better =
                    slot.is_none_or(|s| cand.0 > s.0 + 1e-12 || ((cand.0 - s.0).abs() <= 1e-12 && cand.1 < s.1));
                if better {
                    *slot = Some(cand);
                }
            }
        }
        best = next;
    }
    best[budget].unwrap_or((0.0, 0, 0))
}
