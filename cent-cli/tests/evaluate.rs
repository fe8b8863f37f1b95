//! `cent evaluate` on the toy dataset: the plausibility sweep and its plot, dominance in the
//! JSON, and the same bytes for the same seed.

mod common;

use common::*;
use std::path::Path;

/// Runs `cent evaluate` on the toy data with `rest`, writing into a fresh `out/` of `case`.
fn evaluate(case: &str, rest: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let toy = toy();
    let out = dir(&format!("evaluate-{case}")).join("out");
    let _ = std::fs::remove_dir_all(&out);
    let out_arg = out.display().to_string();
    let mut args = vec!["--factuals", "8", "--format", "json", "--out", &out_arg];
    args.extend_from_slice(rest);
    let o = toy.run("evaluate", &args);
    assert_no_panic(&o);
    (o, out)
}

/// The JSON without its wall-clock fields (`latency_ms…`), which differ between runs.
fn without_latency(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|key, _| !key.starts_with("latency_ms"));
            map.values_mut().for_each(without_latency);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_latency),
        _ => {}
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON is written")).expect("valid JSON")
}

/// The text of every `<text>` element of an SVG.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim().to_string()))
        .collect()
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn test_sweep_writes_one_pareto_plot_with_every_baseline_and_setting() {
    let (o, out) = evaluate("sweep", &["--sweep", "1,0,0.52"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let plots: Vec<String> = std::fs::read_dir(out.join("plots"))
        .expect("plots/ is written")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(plots, vec!["pareto-toy-mlp.svg".to_string()], "one plot for the one pair");
    let svg = std::fs::read_to_string(out.join("plots/pareto-toy-mlp.svg")).expect("readable");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    // A triangle per baseline, a dot per sweep setting, each labelled; the default marked.
    assert_eq!(count(&svg, "<polygon"), 4, "{svg}");
    assert_eq!(count(&svg, "<circle"), 3, "{svg}");
    let labels = texts(&svg);
    for label in ["gs", "face", "nun", "random", "default"] {
        assert!(labels.iter().any(|l| l == label), "label {label} missing: {labels:?}");
    }
    // Settings that land on the same point share one label ("cent 0, 0.52").
    let mut settings: Vec<&str> =
        labels.iter().filter_map(|l| l.strip_prefix("cent ")).flat_map(|l| l.split(", ")).collect();
    settings.sort_unstable();
    assert_eq!(settings, vec!["0", "0.52", "1"], "{labels:?}");
    for axis in ["mean l0 (changed features)", "yNN (k = 5)"] {
        assert!(svg.contains(axis), "axis {axis} missing");
    }
    // The JSON: the sweep in ascending order, the configured setting (0.52) marked as the default
    // and equal to the headline CEnt summary, and the dominance verdict.
    let doc = json(&out.join("toy-mlp.json"));
    let sweep = doc["sweep"].as_array().expect("a sweep array");
    let settings: Vec<f64> = sweep.iter().map(|p| p["plausibility"].as_f64().expect("a number")).collect();
    assert_eq!(settings, vec![0.0, 0.52, 1.0]);
    let defaults: Vec<bool> = sweep.iter().map(|p| p["default"].as_bool().expect("a flag")).collect();
    assert_eq!(defaults, vec![false, true, false]);
    assert_eq!(sweep[1]["summary"], doc["methods"][0]["summary"]);
    assert!(doc["cent_dominated_by"].is_array(), "{}", doc["cent_dominated_by"]);
    let cent = &doc["methods"][0];
    assert!(cent["summary"]["target_row_distance_median"].is_number(), "{}", cent["summary"]);
    let first = cent["rows"].as_array().and_then(|r| r.iter().find(|r| r["found"] == true)).expect("a found row");
    assert!(first["target_row_distance"].as_f64().is_some_and(|d| d >= 0.0), "{first}");
}

#[test]
fn test_same_seed_gives_the_same_plot_and_results() {
    let (one, out_one) = evaluate("same-1", &["--sweep", "0,0.5,1"]);
    let (two, out_two) = evaluate("same-2", &["--sweep", "0,0.5,1"]);
    assert!(one.status.success() && two.status.success(), "{}{}", stderr(&one), stderr(&two));
    let svg = |out: &Path| std::fs::read(out.join("plots/pareto-toy-mlp.svg")).expect("the plot is written");
    assert_eq!(svg(&out_one), svg(&out_two), "the plot's bytes differ between two runs");
    let (mut a, mut b) = (json(&out_one.join("toy-mlp.json")), json(&out_two.join("toy-mlp.json")));
    without_latency(&mut a);
    without_latency(&mut b);
    assert_eq!(a, b);
}

#[test]
fn test_sweep_none_runs_no_sweep_and_draws_no_plot() {
    let (o, out) = evaluate("none", &["--sweep", "none"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&out.join("toy-mlp.json"))["sweep"], serde_json::json!([]));
    assert!(!out.join("plots/pareto-toy-mlp.svg").exists());
}

#[test]
fn test_bad_sweep_is_a_usage_error_naming_the_value() {
    for (value, needle) in [("0,2", "2 is outside 0..=1"), ("0,high", "`high` is not a number")] {
        let (o, _) = evaluate("bad", &["--sweep", value]);
        assert_eq!(o.status.code(), Some(2), "--sweep {value}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "--sweep {value}: {}", stderr(&o));
    }
}

/// Each tree ensemble in `data/onnx` (LightGBM, XGBoost, scikit-learn's random forest and
/// gradient boosting, exported to ONNX) drives `cent evaluate` on the dataset it was fitted on
/// (`data/onnx/trees.toml`), and what CEnt finds flips that model's decision. The ONNX model
/// replaces the built-in one, which is neither trained nor cached.
#[test]
fn test_onnx_tree_ensembles_drive_evaluate_on_their_dataset() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/onnx");
    let schema = fixtures.join("trees.toml");
    assert!(fixtures.join("trees.csv").is_file(), "missing data/onnx/trees.csv");
    let cache = dir("evaluate-trees").join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    for name in ["lightgbm", "xgboost", "skl-rf", "skl-gb"] {
        let model = fixtures.join(format!("{name}.onnx"));
        assert!(model.is_file(), "missing {}", model.display());
        let (schema, model) = (schema.display().to_string(), model.display().to_string());
        let args = ["evaluate", "--schema", &schema, "--onnx", &model, "--method", "cent", "--factuals", "10"];
        let o = cent(&[&args[..], &["--sweep", "none", "--format", "json"]].concat(), &cache);
        assert_no_panic(&o);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(v["model"], "onnx");
        let summary = &v["methods"][0]["summary"];
        assert!(summary["found"].as_u64().expect("found") >= 8, "{name}: {summary}");
        assert_eq!(summary["flip_rate"].as_f64(), Some(1.0), "{name}: {summary}");
    }
    let mut cached: Vec<String> = std::fs::read_dir(cache.join("models"))
        .expect("the cache's models")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    cached.sort();
    assert_eq!(cached, ["trees-vae-seed1.json"], "only the VAE is trained");
}

/// `--method atlas` explains with the bundle `cent export` would build with the atlas options
/// given: a smaller atlas is measured like every method, and one the exporter refuses is an
/// error naming the limit.
#[test]
fn test_atlas_options_build_the_measured_bundle() {
    let (o, out) = evaluate("atlas-anchors", &["--method", "atlas", "--sweep", "none", "--anchors", "2", "--k", "200"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&out.join("toy-mlp.json"));
    let summary = &j["methods"][0]["summary"];
    assert_eq!((summary["method"].as_str(), summary["factuals"].as_u64()), (Some("atlas"), Some(8)), "{j}");
    let (o, _) = evaluate("atlas-too-many", &["--method", "atlas", "--sweep", "none", "--anchors", "65"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("anchors 1..=64"), "{}", stderr(&o));
    let (o, _) = evaluate("atlas-people", &["--method", "atlas", "--sweep", "none", "--people", "9"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("people 0..=8"), "{}", stderr(&o));
}

/// The device explainer's options reach `--method atlas` and the JSON says which ran: with a
/// lead no candidate has, no factual is answered where the default lead answers some; a value
/// out of range is a usage error naming the option.
#[test]
fn test_device_options_reach_the_atlas() {
    let small = ["--method", "atlas", "--sweep", "none", "--anchors", "2", "--k", "200"];
    let found = |case: &str, extra: &[&str]| {
        let (o, out) = evaluate(case, &[&small[..], extra].concat());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let j = json(&out.join("toy-mlp.json"));
        let lead = j["atlas_options"]["lead"].as_f64().expect("the options in the JSON");
        (j["methods"][0]["summary"]["found"].as_u64().expect("found"), lead)
    };
    let (answered, lead) = found("device-default", &[]);
    assert!(answered > 0 && (lead - 0.405).abs() < 1e-3, "the default lead answers some factuals");
    assert_eq!(found("device-lead", &["--lead", "1000"]), (0, 1000.0));
    let (o, _) = evaluate("device-balance", &[&small[..], &["--balance-calls", "65536"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--balance-calls"), "{}", stderr(&o));
}
