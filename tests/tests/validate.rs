//! The device bundle end to end on Adult (MLP): export, the size goal, quantized vs full
//! precision, the canonical native run, and rejection of corrupted or mismatched bundles.
//!
//! Models come from the repository's cache (`data/cache`, or `$CENT_CACHE`), trained there on
//! first use like every `cent` command does. Validation uses a seeded sample of test rows to keep
//! the run short.

mod common;

use cent_host::atlas::AtlasParams;
use cent_host::export::Widths;
use cent_host::export::{self, Export};
use cent_host::validate::{self, Report, Settings, ValidateError};
use cent_nostd::bundle::{BundleError, HEADER_LEN};
use common::{SEED, adult};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Test rows validated (a seeded sample of Adult's 9,044).
const LIMIT: usize = 300;

/// The shipped configuration: 32 anchors of trees of at most 63 nodes.
fn bundle() -> &'static Export {
    static E: OnceLock<Export> = OnceLock::new();
    E.get_or_init(|| {
        export::export(adult(), AtlasParams { seed: SEED, ..AtlasParams::default() }, Widths::I16).expect("export")
    })
}

fn report() -> &'static Report {
    static R: OnceLock<Report> = OnceLock::new();
    R.get_or_init(|| {
        let settings = Settings { limit: Some(LIMIT), seed: SEED, options: Default::default() };
        validate::validate(&bundle().bytes, "adult.cent", adult(), settings).expect("validate")
    })
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("validate");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn test_adult_mlp_bundle_fits_64_kb_and_sizes_add_up() {
    let e = bundle();
    let s = e.sizes;
    assert_eq!(s.total, e.bytes.len());
    let parts = s.header + s.other + s.schema + s.encoder + s.classifier + s.anchors + s.trees + s.support;
    assert_eq!(parts + s.agreement + s.people, s.total);
    let b = cent_nostd::bundle::Bundle::from_bytes(&e.bytes).unwrap();
    let gain = adult().prepared.encoding.feature_index("capital-gain").unwrap();
    assert!(b.support.observed(gain) > 50 && b.support.links() == 1, "the data support travels in the bundle");
    assert!(s.total <= 64 * 1024, "bundle is {} bytes", s.total);
    assert_eq!(e.atlas.len(), 32);
    assert!(e.atlas.max_nodes() <= 63);
    assert!(e.test_fidelity >= 0.9, "atlas fidelity {:.3}", e.test_fidelity);
}

#[test]
fn test_export_is_deterministic() {
    let again =
        export::write_bundle(adult(), AtlasParams { seed: SEED, ..AtlasParams::default() }, Widths::I16).unwrap();
    assert!(again == bundle().bytes, "same artifacts and seed give the same bytes");
}

/// The device goals, on this 300-row sample with the Adult MLP a fresh checkout trains (seed 1)
/// and the default int16 weights: anchor agreement, fact agreement and identical counterfactuals
/// at least 0.99, 0.99 and 0.97, flip-rate gap at most 0.5 points (measured on the whole test
/// split: anchors 0.9999, identical 0.9994, gap 0.00; with int8 weights identical was 0.90).
#[test]
fn test_quantized_path_matches_full_precision() {
    let r = report();
    assert_eq!(r.queries, LIMIT);
    assert_eq!(r.options, cent_nostd::atlas::Options::default(), "the firmware's defaults, reported");
    assert!(r.anchor_agreement >= 0.99, "anchor agreement {:.4}", r.anchor_agreement);
    assert!(r.fact_agreement >= 0.99, "fact agreement {:.4}", r.fact_agreement);
    assert!(r.identical >= 0.97, "identical counterfactuals {:.4}", r.identical);
    assert!(r.flip_gap_points <= 0.5, "flip-rate gap {:.2} points", r.flip_gap_points);
    assert!(r.latent.relative_p99 <= 0.005, "latent relative error p99 {:.4}", r.latent.relative_p99);
    assert!(r.latent.cosine_min >= 0.9999, "latent cosine min {:.5}", r.latent.cosine_min);
}

/// Every answer of every path keeps to the constraints and to the data: no value of an
/// observed-support feature that nobody has, no link broken (the atlas keeps to the bundle's
/// support; exported without it, 11,909 of the whole test split's returned answers held an
/// unseen value and 1,776 broke the link).
#[test]
fn test_atlas_flips_and_respects_constraints() {
    let r = report();
    for (path, s) in [("quantized", &r.quantized), ("full precision", &r.full_precision), ("cent", &r.cent)] {
        assert_eq!(s.violations, 0, "{path}: constraint violations");
        assert_eq!((s.unseen, s.broken), (0, 0), "{path}: unseen values, broken links");
        assert_eq!(s.errors, 0, "{path}: explain errors");
    }
    assert!(r.quantized.flip_rate >= 0.85, "atlas flip rate {:.3}", r.quantized.flip_rate);
    assert!(r.full_precision.flip_rate >= 0.85, "atlas f32 flip rate {:.3}", r.full_precision.flip_rate);
    assert!(r.cent.flip_rate >= 0.8, "per-query CEnt flip rate {:.3}", r.cent.flip_rate);
    assert!(r.quantized.l0 >= 1.0 && r.quantized.cost > 0.0, "a flip changes something and costs something");
    // The people answer where no region does: a few of the queries, on both atlas paths alike.
    assert!(r.quantized.people > 0.0 && r.quantized.people < 0.5, "from people {:.3}", r.quantized.people);
    assert_eq!(r.quantized.people, r.full_precision.people);
}

#[test]
fn test_native_run_is_canonical_and_repeatable() {
    let a = adult();
    let cols = a.prepared.encoding.n_cols();
    let queries = &a.prepared.test.data[..20 * cols];
    let lines = validate::native_run(&bundle().bytes, queries).unwrap();
    assert_eq!(lines.len(), 20);
    assert_eq!(lines, validate::native_run(&bundle().bytes, queries).unwrap());
    for (i, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("q={i} anchor=")), "{l}");
        assert!(l.contains(" | leaf=") != l.contains(" not_found="), "a result or a reason: {l}");
    }
    let found: Vec<&String> = lines.iter().filter(|l| l.contains(" | leaf=")).collect();
    assert!(found.len() >= 10, "most of the first 20 test rows get a counterfactual");
    // Each result carries all encoded values as f32 bits: 8 hex digits per column.
    let x = found[0].split(" | ").nth(1).unwrap().split(" x=").nth(1).unwrap();
    assert_eq!(x.split(',').count(), cols);
    assert!(x.split(',').all(|v| v.len() == 8 && u32::from_str_radix(v, 16).is_ok()), "{x}");
    let err = validate::native_run(&bundle().bytes, &queries[..cols + 1]).unwrap_err();
    assert!(matches!(err, ValidateError::Queries { .. }), "{err}");
}

/// Reads a corrupted copy from a file; the error must name the file and the reason.
fn rejected(name: &str, bytes: &[u8]) -> (BundleError, String) {
    let path = temp_file(name, bytes);
    match validate::read_bundle(&path) {
        Err(e @ ValidateError::Bundle { error, .. }) => {
            let text = e.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            (error, text)
        }
        other => panic!("{name}: expected a bundle error, got {other:?}"),
    }
}

#[test]
fn test_corrupted_bundles_are_rejected_with_the_reason() {
    let good = &bundle().bytes;
    assert!(validate::read_bundle(&temp_file("good.cent", good)).is_ok());
    let (e, text) = rejected("truncated.cent", &good[..good.len() - 100]);
    assert_eq!(e, BundleError::Length);
    assert!(text.contains("truncated"), "{text}");
    let mut flipped = good.clone();
    flipped[HEADER_LEN + good.len() / 2] ^= 0x10;
    let (e, text) = rejected("flipped.cent", &flipped);
    assert_eq!(e, BundleError::Checksum);
    assert!(text.contains("checksum"), "{text}");
    let mut version = good.clone();
    version[4] = 9;
    let (e, text) = rejected("version.cent", &version);
    assert_eq!(e, BundleError::Version { found: 9 });
    assert!(text.contains("version 9"), "{text}");
    let (e, _) = rejected("foreign.cent", b"{\"format\": \"cent-classifier\", \"version\": 1}");
    assert_eq!(e, BundleError::Magic);
    assert_eq!(rejected("empty.cent", b"").0, BundleError::Length);
}

#[test]
fn test_missing_file_and_mismatched_bundle_are_named() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("validate").join("no-such.cent");
    let err = validate::read_bundle(&missing).unwrap_err();
    assert!(matches!(err, ValidateError::Read { .. }) && err.to_string().contains("no-such.cent"), "{err}");
    let settings = Settings { limit: Some(1), seed: SEED + 1, options: Default::default() };
    let err = validate::validate(&bundle().bytes, "adult.cent", adult(), settings).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ValidateError::Mismatch { .. }), "{text}");
    assert!(text.contains("adult mlp seed=1") && text.contains("adult mlp seed=2"), "{text}");
}

/// The bundle carries each region's agreement, measured on training rows at export: one byte
/// per tree node, one half on every split node, leaves that answered away from one half. The
/// device's first answers, compared with the measured agreement, land among more people of
/// their class (yNN, the evaluation's own code) than with the same bundle whose regions all
/// agree alike.
#[test]
fn test_regions_agreement_steers_the_device_to_people() {
    use cent_lab::evaluate::{Bench, Config, MethodKind};
    use cent_nostd::bundle::{Bundle, crc32};
    use cent_nostd::tree::Node;
    let e = bundle();
    let b = Bundle::from_bytes(&e.bytes).unwrap();
    assert!(b.atlas.has_agreement());
    let (mut splits, mut leaves, mut judged, mut nodes) = (0, 0, 0, 0);
    for a in 0..b.atlas.len() {
        let tree = b.atlas.tree(a).unwrap();
        for i in 0..tree.len() as u16 {
            let g = b.atlas.agreement(a, i).expect("one byte per node");
            nodes += 1;
            match tree.node(i) {
                Some(Node::Split { .. }) => (splits, _) = (splits + 1, assert_eq!(g, 128, "anchor {a} node {i}")),
                _ => (leaves, judged) = (leaves + 1, judged + usize::from(g != 128)),
            }
        }
    }
    assert!(splits > 0 && judged * 4 > leaves, "{judged} of {leaves} leaves judged");
    assert!(e.agreement.rows >= 1000 && e.agreement.answers >= e.agreement.rows, "{:?}", e.agreement);
    // The same bundle with every region at one half: its agreement is the payload's last bytes
    // before the people.
    let mut alike = e.bytes.clone();
    let end = alike.len() - e.sizes.people;
    alike[end - nodes..end].fill(128);
    let crc = crc32(&alike[HEADER_LEN..]);
    alike[10..14].copy_from_slice(&crc.to_le_bytes());
    let a = adult();
    let ynn = |bytes: &[u8]| {
        let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(60, SEED))
            .unwrap()
            .with_atlas(bytes)
            .unwrap();
        let factuals = bench.factuals().unwrap();
        bench.run(MethodKind::Atlas, &factuals).unwrap().summary.ynn
    };
    let (measured, uniform) = (ynn(&e.bytes), ynn(&alike));
    assert!(measured > uniform, "yNN {measured:.3} with the measured agreement, {uniform:.3} without");
}

/// When no region of the nearest anchors' trees is confirmed, the people the anchors carry
/// answer: each anchor carries four, and on Adult the device flips more factuals with them than
/// the same atlas exported without them, every answer re-verified by the evaluation (the
/// model's class, the constraints, the values and combinations people have).
#[test]
fn test_the_anchors_people_answer_where_no_region_does() {
    use cent_lab::evaluate::{Bench, Config, MethodKind};
    let e = bundle();
    let features = adult().prepared.encoding.to_core_schema().features().len();
    assert_eq!(e.atlas.people.len(), 32 * 4 * (1 + 2 * features));
    let params = AtlasParams { seed: SEED, people: 0, ..AtlasParams::default() };
    let without = export::export(adult(), params, Widths::I16).expect("export without people");
    assert!(without.atlas.people.is_empty() && without.sizes.people == 1, "an empty part: its length byte");
    let a = adult();
    let run = |bytes: &[u8]| {
        let bench = Bench::new(&a.prepared, a.model().unwrap(), &a.vae, Config::new(100, SEED))
            .unwrap()
            .with_atlas(bytes)
            .unwrap();
        let factuals = bench.factuals().unwrap();
        bench.run(MethodKind::Atlas, &factuals).unwrap().summary
    };
    let (with, none) = (run(&e.bytes), run(&without.bytes));
    assert!(
        with.flip_rate > none.flip_rate,
        "flip rate {:.2} with people, {:.2} without",
        with.flip_rate,
        none.flip_rate
    );
    let flipped = (with.flip_rate * with.factuals as f64).round() as usize;
    assert_eq!(with.found, flipped, "every answer found flips the model");
    let broken = with.immutable_violation_rate + with.semi_immutable_violation_rate + with.link_violation_rate;
    assert_eq!((broken, with.unseen_value_share), (0.0, 0.0));
}

/// Balancing a change only the lead needs against the others: on Adult's bundle, of the device's
/// first answers for 300 test rows, fewer keep a change the decision does not need (set back
/// alone, the on-device classifier still gives the target class, and no link breaks) than with
/// paring alone, and every answer is still confirmed with the lead and passes the query's
/// constraint check.
#[test]
fn test_balancing_leaves_fewer_changes_the_decision_does_not_need() {
    use cent_nostd::atlas::{BALANCE_CALLS, Explainer, Options, Oracle};
    use cent_nostd::bundle::Bundle;
    use cent_nostd::counterfactual;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;
    let e = bundle();
    let b = Bundle::from_bytes(&e.bytes).unwrap();
    let model = b.model();
    let query = b.schema.default_query();
    let test = &adult().prepared.test;
    let mut explainer: Explainer = Explainer::new();
    // (answers, answers keeping a change the classifier does not need) with `balance_calls`.
    let mut count = |balance_calls: u16| {
        let options = Options { balance_calls, ..Options::default() };
        let (mut answers, mut kept) = (0, 0);
        for i in 0..LIMIT {
            let x = test.row(i);
            let mut out: heapless::Vec<_, 1> = heapless::Vec::new();
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(i as u64);
            let summary = explainer.explain(&model, x, &query, options, &mut rng, &mut out).unwrap();
            let Some(a) = out.first() else { continue };
            let (class, lead) = model.classify(&a.x).unwrap().unwrap();
            assert!(class != summary.fact && lead >= options.lead, "row {i}: {a:?}");
            assert!(counterfactual::check(&b.schema, &query, x, &a.x).is_ok(), "row {i}: {a:?}");
            answers += 1;
            let needless = counterfactual::changed_features(&b.schema, x, &a.x).filter(|&j| {
                let cols = b.schema.features()[j].columns();
                let mut back = a.x.clone();
                back[cols.clone()].copy_from_slice(&x[cols]);
                b.support.broken(&b.schema, x, &back) == 0
                    && model.classify(&back).unwrap().is_some_and(|(c, _)| c != summary.fact)
            });
            kept += usize::from(needless.count() > 0);
        }
        (answers, kept)
    };
    let (paring, balancing) = (count(0), count(BALANCE_CALLS));
    assert_eq!(paring.0, balancing.0, "balancing never loses an answer");
    assert!(balancing.1 < paring.1, "answers keeping a needless change: {balancing:?} balanced, {paring:?} pared");
}

/// A model that rates every row the same: class 0 at 0.9.
struct Constant;

impl cent_host::blackbox::BlackBox for Constant {
    fn classes(&self) -> usize {
        2
    }

    fn inputs(&self) -> usize {
        adult().prepared.encoding.n_cols()
    }

    fn predict_proba(&self, rows: &[f32]) -> Result<Vec<f32>, cent_host::blackbox::ModelError> {
        Ok((0..rows.len() / self.inputs()).flat_map(|_| [0.9, 0.1]).collect())
    }
}

/// The host explainer `preview` reads answers with, at the validation's settings.
fn host() -> &'static cent_host::explain::Explainer<'static> {
    static H: OnceLock<cent_host::explain::Explainer<'static>> = OnceLock::new();
    H.get_or_init(|| {
        let a = adult();
        let config = cent_host::explain::Config { seed: SEED, ..Default::default() };
        cent_host::explain::Explainer::new(
            &a.prepared.encoding,
            a.model().unwrap(),
            &a.vae.encoder,
            &a.prepared.train.data,
            config,
        )
        .unwrap()
    })
}

/// `cent explain --bundle`: the preview's answers are the device explainer's own, bit for bit,
/// for the same query, options and seed, and each is judged by the full-precision model, the
/// constraint check and the training rows' support.
#[test]
fn test_preview_gives_the_devices_answers_judged_on_the_host() {
    use cent_host::preview::{MAX_ANSWERS, Preview, PreviewError, Source};
    use cent_nostd::atlas::{Explainer, NO_REGION, Options};
    use cent_nostd::bundle::Bundle;
    let a = adult();
    let b = Bundle::from_bytes(&bundle().bytes).unwrap();
    let mut preview = Preview::new(&bundle().bytes, "adult.cent", a, SEED, host(), a.model().unwrap()).unwrap();
    let query = host().schema().default_query();
    let mut device: Box<Explainer> = Box::default();
    let (mut answers, mut people) = (0, 0);
    for i in 0..40 {
        let x = a.prepared.test.row(i);
        let d = preview.explain(x, &query, None, Options::default(), MAX_ANSWERS, i as u64).unwrap();
        let (summary, cfs) =
            validate::run_device(&mut device, &b.model(), x, &b.schema.default_query(), Options::default(), i as u64)
                .unwrap();
        assert_eq!(d.anchor, summary.anchor, "row {i}");
        assert_eq!(d.answers.len(), cfs.len(), "row {i}");
        assert_eq!(d.not_found.is_some(), cfs.is_empty(), "row {i}");
        assert_eq!(d.found(), d.answers.iter().any(|c| c.confirmed), "row {i}");
        let fact = a.model().unwrap().classify(x)[0];
        assert_eq!(d.fact.index, fact);
        for (got, want) in d.answers.iter().zip(&cfs) {
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.encoded), bits(&want.x), "row {i}");
            let leaf = match got.source {
                Source::Region { leaf } => leaf,
                Source::Person => NO_REGION,
            };
            assert_eq!(leaf, want.leaf, "row {i}");
            let judged = a.model().unwrap().classify(&got.encoded)[0];
            assert_eq!(got.confirmed, judged != fact, "row {i}");
            assert_eq!(got.model.index, judged);
            assert_eq!(got.changes.len(), got.l0);
            assert!((0.0..=1.0).contains(&got.agreement));
            assert!(got.violation.is_none() && got.unseen_values == 0 && got.broken_links == 0, "row {i}: {got:?}");
            assert_eq!(got.rules.is_empty(), got.source == Source::Person, "row {i}");
            answers += 1;
            people += usize::from(got.source == Source::Person);
        }
    }
    assert!(answers >= 60, "the first 40 test rows get most of their answers: {answers}");
    // Asked for one answer, the device looks for one (its output's room), as a firmware would.
    let mut differs = 0;
    for i in 0..40 {
        let x = a.prepared.test.row(i);
        let d = preview.explain(x, &query, None, Options::default(), 1, i as u64).unwrap();
        let mut out: heapless::Vec<_, 1> = heapless::Vec::new();
        let mut rng = <rand_xoshiro::Xoshiro128PlusPlus as rand_core::SeedableRng>::seed_from_u64(i as u64);
        device.explain(&b.model(), x, &b.schema.default_query(), Options::default(), &mut rng, &mut out).unwrap();
        let got: Vec<&[f32]> = d.answers.iter().map(|c| c.encoded.as_slice()).collect();
        let want: Vec<&[f32]> = out.iter().map(|c| c.x.as_slice()).collect();
        assert_eq!(got, want, "row {i}");
        let three = preview.explain(x, &query, None, Options::default(), MAX_ANSWERS, i as u64).unwrap();
        differs += usize::from(three.answers.first().map(|c| &c.encoded) != d.answers.first().map(|c| &c.encoded));
    }
    assert!(differs > 0, "asking for one answer is not asking for three and keeping the first");
    assert!(answers > people);
    let x = a.prepared.test.row(0);
    assert!(matches!(preview.explain(x, &query, None, Options::default(), 4, 0), Err(PreviewError::Answers { n: 4 })));
    assert!(matches!(
        preview.explain(x, &query, Some(2), Options::default(), 1, 0),
        Err(PreviewError::UnknownClass { .. })
    ));
    let fact = a.model().unwrap().classify(x)[0];
    let err = preview.explain(x, &query, Some(fact), Options::default(), 1, 0).unwrap_err();
    assert!(matches!(err, PreviewError::DesiredIsCurrent { .. }), "{err}");
}

/// The query's own constraints reach the device, and an answer the full-precision model does
/// not confirm is marked, not passed off.
#[test]
fn test_preview_honours_the_query_and_marks_unconfirmed_answers() {
    use cent_host::preview::{MAX_ANSWERS, Preview};
    use cent_nostd::atlas::Options;
    use cent_nostd::schema::Mutability;
    let a = adult();
    let occupation = a.prepared.encoding.feature_index("occupation").unwrap();
    let mut preview = Preview::new(&bundle().bytes, "adult.cent", a, SEED, host(), a.model().unwrap()).unwrap();
    let free = host().schema().default_query();
    let mut fixed = free.clone();
    fixed.mutability[occupation] = Mutability::Immutable;
    let changes = |d: &cent_host::preview::DeviceExplanation| {
        d.answers.iter().filter(|c| c.changes.iter().any(|ch| ch.feature == "occupation")).count()
    };
    let (mut before, mut after, mut answered) = (0, 0, 0);
    for i in 0..40 {
        let x = a.prepared.test.row(i);
        before += changes(&preview.explain(x, &free, None, Options::default(), MAX_ANSWERS, i as u64).unwrap());
        let d = preview.explain(x, &fixed, None, Options::default(), MAX_ANSWERS, i as u64).unwrap();
        after += changes(&d);
        answered += d.answers.len();
    }
    assert!(before > 0, "some answers change occupation when it may change");
    assert_eq!(after, 0, "none does when it may not");
    assert!(answered > 0);
    // Judged by a model that never moves, every answer the device gives is unconfirmed.
    let mut judged = Preview::new(&bundle().bytes, "adult.cent", a, SEED, host(), &Constant).unwrap();
    let mut shown = 0;
    for i in 0..10 {
        let d = judged.explain(a.prepared.test.row(i), &free, None, Options::default(), MAX_ANSWERS, i as u64).unwrap();
        assert_eq!(d.unconfirmed(), d.answers.len());
        assert!(!d.found());
        assert!(
            d.answers.iter().all(|c| !c.confirmed && c.model.index == 0 && (c.model.probability - 0.9).abs() < 1e-6)
        );
        shown += d.answers.len();
    }
    assert!(shown > 0, "the device's answers are still shown");
    // A bundle of other data, model or seed is refused.
    let err = Preview::new(&bundle().bytes, "adult.cent", a, SEED + 1, host(), a.model().unwrap()).unwrap_err();
    assert!(err.to_string().contains("adult.cent"), "{err}");
}
