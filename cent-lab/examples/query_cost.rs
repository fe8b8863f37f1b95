//! The work of a fixed set of queries: the full-precision explainer (defaults) on the first
//! `n` test rows of a built-in dataset (the criterion benchmark cycles through the first 200).
//! Timing on a shared machine varies by ±20 % from run to run; the instructions this takes,
//! counted under callgrind, do not, so this is how two versions of the hot path are compared:
//!
//! `valgrind --tool=callgrind --callgrind-out-file=q.out target/release/examples/query_cost adult mlp 100 serial`
//! `callgrind_annotate --inclusive=yes q.out | grep Explainer::explain`
//!
//! Without valgrind it prints the median, mean and p90 wall time per query, the share of the
//! time the slowest tenth of the queries take, and the queries by the way they were answered
//! (the first neighbourhood, a wider one, the last resort) with their share of the time. With
//! a fourth argument
//! `parallel`, it explains each row twice in turn, with `Config::parallel` and without, and
//! prints both medians and the median of the per-row ratios (the machine's speed drifts
//! between runs; taken in turn, both sides see the same drift). With `serial` it explains
//! on one thread (`parallel: false`): the count to compare under callgrind, which runs one
//! thread at a time, so that which thread does what does not move it.

use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::ModelKind;
use cent_host::explain::{Config, ExplainError, Explainer, Explanation};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dataset = args.first().map_or("adult", String::as_str).to_string();
    let kind = if args.get(1).map(String::as_str) == Some("lr") { ModelKind::Lr } else { ModelKind::Mlp };
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let setup = Setup { source: Source::Builtin(dataset), model: Some(kind), cache, seed: 1 };
    let a = setup.load().expect("artifacts");
    let enc = &a.prepared.encoding;
    let query = enc.to_core_schema().default_query();
    let explainer_with = |config: Config| {
        Explainer::new(enc, a.model().unwrap(), &a.vae.encoder, &a.prepared.train.data, config)
            .expect("the model labels the pool")
    };
    let serial = args.get(3).map(String::as_str) == Some("serial");
    let explainer = explainer_with(Config { parallel: !serial, ..Config::default() });
    let rows = n.min(a.prepared.test.n_rows());
    if rows == 0 {
        println!("no test rows to explain");
        return;
    }
    let timed = |explainer: &Explainer<'_>, i: usize| {
        let start = Instant::now();
        let out = black_box(explainer.explain(a.prepared.test.row(i % rows), &query, None));
        (start.elapsed().as_secs_f64() * 1e3, Path::of(&out, explainer.config.k))
    };
    let time = |explainer: &Explainer<'_>, i: usize| timed(explainer, i).0;
    if args.get(3).map(String::as_str) == Some("parallel") {
        let one = explainer_with(Config { parallel: false, ..Config::default() });
        let (mut two_threads, mut one_thread, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for i in 1..=rows {
            // Each side first every other row: the second call finds the row's data in cache.
            let (t2, t1) = if i % 2 == 0 {
                let t2 = time(&explainer, i);
                (t2, time(&one, i))
            } else {
                let t1 = time(&one, i);
                (time(&explainer, i), t1)
            };
            two_threads.push(t2);
            one_thread.push(t1);
            ratios.push(t2 / t1);
        }
        println!(
            "{rows} queries, median {:.3} ms on two threads, {:.3} ms on one; per-query ratio median {:.3}",
            median(&mut two_threads),
            median(&mut one_thread),
            median(&mut ratios)
        );
        return;
    }
    let (mut times, paths): (Vec<f64>, Vec<Path>) = (1..=rows).map(|i| timed(&explainer, i)).unzip();
    let by_path: Vec<(Path, f64)> = paths.into_iter().zip(times.iter().copied()).collect();
    let median = median(&mut times);
    // Criterion's figure is a median over samples of many queries each: close to this mean,
    // which the slowest queries (those that widen their neighbourhood) pull above the median.
    let total: f64 = times.iter().sum();
    let slowest: f64 = times[times.len() - times.len().div_ceil(10)..].iter().sum();
    println!(
        "{rows} queries, median {median:.3} ms, mean {:.3} ms, p90 {:.3} ms; the slowest tenth {:.0} % of the time",
        total / rows as f64,
        times[rows * 9 / 10],
        100.0 * slowest / total
    );
    for path in [Path::First, Path::Wider, Path::LastResort, Path::NoAnswer] {
        let these: Vec<f64> = by_path.iter().filter(|(p, _)| *p == path).map(|&(_, t)| t).collect();
        if these.is_empty() {
            continue;
        }
        let sum: f64 = these.iter().sum();
        println!(
            "  {}: {} queries, mean {:.3} ms, {:.0} % of the time",
            path.name(),
            these.len(),
            sum / these.len() as f64,
            100.0 * sum / total
        );
    }
}

/// The way a query was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// By a region of the first neighbourhood's surrogate.
    First,
    /// By a region of a wider neighbourhood's.
    Wider,
    /// By the last resort (no region confirmed at any width: `neighbours` is 0).
    LastResort,
    /// No answer: nothing found, or an error.
    NoAnswer,
}

impl Path {
    fn of(out: &Result<Explanation, ExplainError>, k: usize) -> Path {
        match out {
            Ok(e) if e.neighbours == 0 => Path::LastResort,
            Ok(e) if e.neighbours > k => Path::Wider,
            Ok(_) => Path::First,
            Err(_) => Path::NoAnswer,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Path::First => "first neighbourhood",
            Path::Wider => "wider neighbourhood",
            Path::LastResort => "last resort",
            Path::NoAnswer => "no answer",
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
