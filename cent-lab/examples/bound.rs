//! Prints, for one dataset × model pair, the best mean yNN any method could reach on the
//! evaluation's factuals while meeting the goals on l0 and redundancy, next to CEnt's own.
//!
//! `cargo run -p cent-lab --example bound -- adult mlp 100 1 [grid] [out.json]` (`out.json`: per
//! factual, CEnt's answer's measures and the best answer found of each kind)

use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::ModelKind;
use cent_lab::bound;
use cent_lab::evaluate::{Bench, Config, MethodKind};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dataset = args.first().map_or("adult", String::as_str).to_string();
    let kind = if args.get(1).map(String::as_str) == Some("lr") { ModelKind::Lr } else { ModelKind::Mlp };
    let factuals: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let seed: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1);
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let setup = Setup { source: Source::Builtin(dataset.clone()), model: Some(kind), cache, seed };
    let a = setup.load().expect("artifacts");
    let config = Config::new(factuals, seed);
    let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, config).expect("bench");
    let rows = bench.factuals().expect("factuals");
    let start = Instant::now();
    let grid: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(bound::GRID);
    let run = bench.run(MethodKind::Cent, &rows).expect("cent");
    let cent = run.summary.clone();
    let sizes: Vec<Option<bound::Size>> =
        run.rows.iter().map(|r| r.measures.map(|m| bound::Size { l0: m.l0, l1: m.l1 })).collect();
    let found = bench.bound(&rows, &sizes, grid).expect("bound");
    let secs = start.elapsed().as_secs_f64();
    println!("{dataset} x {kind:?}: {} factuals, {secs:.1} s", rows.len());
    println!("cent: l0 {:.2} l1 {:.2} ynn {:.2} redundancy {:.2}", cent.l0, cent.l1, cent.ynn, cent.redundancy);
    // CEnt's answers of at most two changes, against the best answer no larger.
    let pairs: Vec<(f64, f64, f64)> = run
        .rows
        .iter()
        .zip(&found)
        .filter_map(|(r, f)| Some((r.measures?, f.within?)))
        .filter(|(m, _)| m.l0 <= 2)
        .map(|(m, w)| (m.ynn, w.ynn, w.l1))
        .collect();
    let n = pairs.len().max(1) as f64;
    println!(
        "cent answers of <= 2 changes: {}; their yNN {:.3}, best no larger {:.3} (l1 {:.3}); cent below it on {}",
        pairs.len(),
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
        pairs.iter().map(|p| p.2).sum::<f64>() / n,
        pairs.iter().filter(|p| p.0 < p.1).count()
    );
    if let Some(path) = args.get(5) {
        // Per factual: CEnt's answer's measures and the best answer found per (changes, redundancy).
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .zip(&run.rows)
            .zip(&found)
            .map(|((r, row), f)| serde_json::json!({ "row": r, "cent": row.measures, "choices": f.choices }))
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&rows).expect("json")).expect("written");
    }
    let with_answer = found.iter().filter(|f| !f.choices.is_empty()).count();
    println!("factuals with an answer of <= 2 changes: {with_answer}");
    let best = |f: &bound::Factual, max_l0: usize, max_red: usize| {
        f.choices.iter().filter(|c| c.l0 <= max_l0 && c.redundancy <= max_red).fold(
            None,
            |b: Option<bound::Choice>, c| {
                Some(match b {
                    Some(b) if b.ynn > c.ynn || (b.ynn == c.ynn && b.l1 <= c.l1) => b,
                    _ => *c,
                })
            },
        )
    };
    for (max_l0, max_red) in [(1, 0), (2, 0), (2, 2)] {
        let v: Vec<bound::Choice> = found.iter().filter_map(|f| best(f, max_l0, max_red)).collect();
        let n = v.len().max(1) as f64;
        println!(
            "best yNN with <= {max_l0} changes, redundancy <= {max_red}: {} factuals, mean {:.3} (l1 {:.3}), >= 0.8 on {}",
            v.len(),
            v.iter().map(|c| c.ynn).sum::<f64>() / n,
            v.iter().map(|c| c.l1).sum::<f64>() / n,
            v.iter().filter(|c| c.ynn >= 0.8).count()
        );
    }
    let enc = &a.prepared.encoding;
    let describe = |x: &[f32], a: &[f32]| {
        let (before, after) = (enc.decode(x).unwrap(), enc.decode(a).unwrap());
        (0..before.len())
            .filter(|&j| before[j] != after[j])
            .map(|j| {
                format!(
                    "{}: {} -> {}",
                    enc.attributes()[j].name,
                    enc.format_value(j, before[j]),
                    enc.format_value(j, after[j])
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    // One factual: CEnt's answer, and under it another answer with its yNN, l1 and redundancy.
    let show =
        |r: usize, cent: (f64, f64, usize), cf: &[f32], label: &str, other: (f64, f64, usize), answer: &[f32]| {
            let x = a.prepared.test.row(r);
            println!("  row {r}: cent ynn {:.1} l1 {:.2} red {}: {}", cent.0, cent.1, cent.2, describe(x, cf));
            let pad = r.to_string().len() + 4;
            println!(
                "  {:>pad$}  {label} ynn {:.1} l1 {:.2} red {}: {}",
                "",
                other.0,
                other.1,
                other.2,
                describe(x, answer)
            );
        };
    let mut shown = 0;
    for ((f, &r), row) in found.iter().zip(&rows).zip(&run.rows) {
        let (Some(m), Some(w), Some(wa), Some(cf)) = (row.measures, f.within, &f.within_answer, &row.counterfactual)
        else {
            continue;
        };
        if m.ynn >= w.ynn || shown == 6 {
            continue;
        }
        shown += 1;
        show(r, (m.ynn, m.l1, m.redundancy), cf, "best", (w.ynn, w.l1, w.redundancy), wa);
    }
    // Where CEnt's answer sits among few people of the target class: of the best answers of at
    // most two changes, none redundant, whose neighbours mostly agree, the shortest.
    let mut shown = 0;
    for ((f, &r), row) in found.iter().zip(&rows).zip(&run.rows) {
        let (Some(m), Some(cf)) = (row.measures, &row.counterfactual) else { continue };
        let good = f
            .choices
            .iter()
            .zip(&f.answers)
            .filter(|(c, _)| c.l0 <= 2 && c.redundancy == 0 && c.ynn >= 0.8)
            .min_by(|a, b| a.0.l1.total_cmp(&b.0.l1));
        let Some((c, ans)) = good else { continue };
        if m.ynn >= 0.8 || shown == 12 {
            continue;
        }
        shown += 1;
        show(r, (m.ynn, m.l1, m.redundancy), cf, "agreeing", (c.ynn, c.l1, c.redundancy), ans);
    }
}
