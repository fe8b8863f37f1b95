use cent_host::artifacts::{Setup, Source};
use cent_host::blackbox::{BlackBox, ModelKind};
use cent_lab::evaluate::{Bench, Config};
use cent_lab::metrics::Reference;
use cent_nostd::atlas::{Counterfactual, Explainer, Options};
use cent_nostd::bundle::Bundle;
use cent_nostd::tree::Bounds;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

thread_local! { static YB: std::cell::RefCell<f64> = const { std::cell::RefCell::new(0.0) }; static YM: std::cell::RefCell<f64> = const { std::cell::RefCell::new(0.0) }; static LM: std::cell::RefCell<f64> = const { std::cell::RefCell::new(0.0) }; static NB: std::cell::RefCell<usize> = const { std::cell::RefCell::new(0) }; }

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dataset = args[0].clone();
    let kind = if args[1] == "lr" { ModelKind::Lr } else { ModelKind::Mlp };
    let seed: u64 = args[2].parse().unwrap();
    let nearest_x = args.get(3).map(String::as_str) == Some("x");
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cache");
    let setup = Setup { source: Source::Builtin(dataset.clone()), model: kind, cache, seed };
    let a = setup.load().expect("artifacts");
    let bytes = cent_host::export::write_bundle(
        &a,
        cent_host::atlas::AtlasParams { seed, ..Default::default() },
        cent_nostd::encoder::WeightWidth::I16,
    )
    .unwrap();
    let b = Bundle::from_bytes(&bytes).unwrap();
    let bench = Bench::new(&a.prepared, &a.model, &a.vae, Config::new(100, seed)).expect("bench");
    let rows = bench.factuals().unwrap();
    let enc = &a.prepared.encoding;
    let cols = enc.n_cols();
    let schema = &b.schema;
    let mut all = a.prepared.train.data.clone();
    all.extend_from_slice(&a.prepared.test.data);
    let reference = Reference::new(&a.model, all, cols).unwrap();
    let train = &a.prepared.train.data;
    let labels = a.model.classify(train);
    let model: &dyn BlackBox = &a.model;
    let (mut n, mut used, mut y_atlas, mut y_ex, mut l0_atlas, mut l0_ex) = (0, 0, 0.0, 0.0, 0.0, 0.0);
    for &t in &rows {
        let x = a.prepared.test.row(t);
        let fact = a.model.classify(x)[0];
        let target = 1 - fact;
        let mut e: Box<Explainer> = Box::default();
        let mut out: heapless::Vec<Counterfactual, 3> = heapless::Vec::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(t as u64);
        let opts = Options { desired: Some(target as u8), ..Options::default() };
        let Ok(summary) = e.explain(&b.model(), x, &schema.default_query(), opts, &mut rng, &mut out) else { continue };
        let Some(cf) = out.first() else { continue };
        if a.model.classify(&cf.x)[0] != target {
            continue;
        }
        n += 1;
        let ya = reference.ynn(&cf.x, target, 5);
        let flips: Vec<&Counterfactual> = out.iter().filter(|c| a.model.classify(&c.x)[0] == target).collect();
        let bestof = flips.iter().map(|c| reference.ynn(&c.x, target, 5)).fold(0.0f64, f64::max);
        YB.with(|v| *v.borrow_mut() += bestof);
        let tree0 = b.atlas.tree(summary.anchor as usize).unwrap();
        let mass = |c: &Counterfactual| match tree0.node(c.leaf) {
            Some(cent_nostd::tree::Node::Leaf { purity, samples, .. }) => purity * samples as f32,
            _ => 0.0,
        };
        if let Some(m) = flips.iter().max_by(|p, q| mass(p).total_cmp(&mass(q))) {
            YM.with(|v| *v.borrow_mut() += reference.ynn(&m.x, target, 5));
            LM.with(|v| *v.borrow_mut() += cent_nostd::counterfactual::changed(schema, x, &m.x).count_ones() as f64);
        }
        NB.with(|v| *v.borrow_mut() += out.len());
        let la = cent_nostd::counterfactual::changed(schema, x, &cf.x).count_ones() as f64;
        y_atlas += ya;
        l0_atlas += la;
        let tree = b.atlas.tree(summary.anchor as usize).unwrap();
        let bounds: Bounds = Bounds::of(tree, cf.leaf);
        let members: Vec<&[f32]> = train
            .chunks_exact(cols)
            .zip(&labels)
            .filter(|(r, l)| **l == target && tree.route(r) == Ok(cf.leaf))
            .map(|(r, _)| r)
            .collect();
        let mut best = (ya, la);
        if !members.is_empty() {
            let centre: Vec<f32> =
                (0..cols).map(|c| members.iter().map(|r| r[c]).sum::<f32>() / members.len() as f32).collect();
            let goal: &[f32] = if nearest_x { x } else { &centre };
            let d = |r: &[f32]| r.iter().zip(goal).map(|(p, q)| (p - q) * (p - q)).sum::<f32>();
            let ex = members.iter().min_by(|p, q| d(p).total_cmp(&d(q))).unwrap();
            let mut xn = x.to_vec();
            for f in schema.features() {
                let cs = f.columns();
                let inside = cs.clone().all(|c| {
                    let (lo, hi) = bounds.interval(c);
                    x[c] > lo && x[c] <= hi
                });
                if !inside {
                    xn[cs.clone()].copy_from_slice(&ex[cs]);
                }
            }
            let q = schema.default_query();
            if b.support.settle(schema, &bounds, x, &mut xn)
                && cent_nostd::counterfactual::check(schema, &q, x, &xn).is_ok()
                && xn != x
            {
                let p = model.probabilities(&xn).unwrap()[target];
                if p >= 0.6 {
                    used += 1;
                    best = (
                        reference.ynn(&xn, target, 5),
                        cent_nostd::counterfactual::changed(schema, x, &xn).count_ones() as f64,
                    );
                }
            }
        }
        y_ex += best.0;
        l0_ex += best.1;
    }
    let nf = n as f64;
    println!(
        "largest region (purity x samples) of the confirmed: yNN {:.3}, l0 {:.2}",
        YM.with(|v| *v.borrow()) / nf,
        LM.with(|v| *v.borrow()) / nf
    );
    println!(
        "best of up to 8 regions: yNN {:.3}; {:.1} regions per query",
        YB.with(|v| *v.borrow()) / nf,
        NB.with(|v| *v.borrow()) as f64 / nf
    );
    println!(
        "{dataset} {kind:?} s{seed} ({}): {n} atlas answers, exemplar used on {used}; yNN {:.3} -> {:.3}; l0 {:.2} -> {:.2}",
        if nearest_x { "nearest x" } else { "central" },
        y_atlas / nf,
        y_ex / nf,
        l0_atlas / nf,
        l0_ex / nf
    );
}
