//! Training the built-in models on skewed data: a rare class is learnt (class-weighted loss),
//! balanced accuracy is reported beside accuracy, a model that gives one class to nearly every
//! test row is warned about, and single-class training data are refused.

use cent_host::blackbox::{self, ModelKind, TrainConfig};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("training").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A seeded generator (xorshift64*), so the test data are the same on every machine.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (1.0 - self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// `n` rows of two features in [0, 1], 3 % of them positive; positives sit one standard
/// deviation higher on both features, so the classes overlap and, at a 3 % prior, hardly any
/// point is more likely positive than negative.
fn skewed(n: usize, seed: u64) -> (Vec<[f64; 2]>, Vec<usize>) {
    let mut rng = Rng(seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let label = usize::from(rng.uniform() < 0.03);
        let shift = label as f64;
        let mut feature = || ((rng.normal() + shift) / 8.0 + 0.4).clamp(0.0, 1.0);
        x.push([feature(), feature()]);
        y.push(label);
    }
    (x, y)
}

/// Balanced accuracy computed here, independently of the library: mean recall of both classes.
fn balanced_accuracy(predicted: &[usize], y: &[usize]) -> f64 {
    let recall = |c: usize| {
        let rows: Vec<usize> = (0..y.len()).filter(|&i| y[i] == c).collect();
        rows.iter().filter(|&&i| predicted[i] == c).count() as f64 / rows.len() as f64
    };
    (recall(0) + recall(1)) / 2.0
}

#[test]
fn test_lr_on_3_percent_positives_predicts_the_rare_class() {
    let (rows, y) = skewed(6000, 42);
    let positives = y.iter().filter(|&&l| l == 1).count();
    assert!((120..=240).contains(&positives), "{positives} positives");
    let x: Vec<f32> = rows.iter().flat_map(|r| r.map(|v| v as f32)).collect();
    let config = TrainConfig { seed: 1, ..TrainConfig::for_kind(ModelKind::Lr) };
    let model = blackbox::train(ModelKind::Lr, &x, 2, &y, 2, &config, None).expect("trains");
    let predicted = model.classify(&x);
    let rare = predicted.iter().filter(|&&p| p == 1).count();
    let balanced = balanced_accuracy(&predicted, &y);
    assert!(rare >= 100, "the model predicts the rare class for only {rare} of {} rows", y.len());
    assert!(balanced > 0.65, "balanced accuracy {balanced}");
}

fn cent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cent")).args(args).output().expect("the cent binary runs")
}

fn run_train(d: &Path, schema: &str, csv: &str) -> Output {
    let (s, c) = (d.join("data.toml"), d.join("data.csv"));
    std::fs::write(&s, schema).unwrap();
    std::fs::write(&c, csv).unwrap();
    let (s, c, cache) = (s.to_str().unwrap(), c.to_str().unwrap(), d.join("cache"));
    cent(&["train", "--model", "lr", "--quiet", "--data", c, "--schema", s, "--cache", cache.to_str().unwrap()])
}

const TWO_FEATURES: &str = r#"
name = "skewed"

[[source]]
file = "data.csv"

[csv]
header = true

[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]

[[feature]]
name = "a"
kind = "continuous"

[[feature]]
name = "b"
kind = "continuous"
"#;

#[test]
fn test_cent_train_reports_balanced_accuracy_on_skewed_data() {
    let d = dir("skewed");
    let (rows, y) = skewed(4000, 7);
    let mut csv = String::from("a,b,y\n");
    for (r, l) in rows.iter().zip(&y) {
        csv.push_str(&format!("{:.5},{:.5},{l}\n", r[0], r[1]));
    }
    let o = run_train(&d, TWO_FEATURES, &csv);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{err}");
    let balanced: f64 = out
        .split("balanced accuracy ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no balanced accuracy in:\n{out}"));
    assert!(balanced > 0.65, "balanced accuracy {balanced}:\n{out}");
    assert!(!err.contains("warning:"), "{err}");
}

const ONE_FEATURE: &str = r#"
name = "flat"

[[source]]
file = "data.csv"

[csv]
header = true

[target]
column = "y"
favourable = "good"
classes = [{ name = "bad", values = ["0"] }, { name = "good", values = ["1"] }]

[[feature]]
name = "job"
kind = "categorical"
categories = ["clerk", "manager"]
"#;

#[test]
fn test_single_class_training_data_are_refused() {
    let d = dir("single-class");
    let csv: String = std::iter::once("job,y\n".to_string())
        .chain((0..60).map(|i| format!("{},1\n", if i % 2 == 0 { "clerk" } else { "manager" })))
        .collect();
    let o = run_train(&d, ONE_FEATURE, &csv);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("data.csv") && err.contains("`good`") && err.contains("at least two classes"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn test_a_model_giving_one_class_to_every_row_is_warned_about() {
    let d = dir("constant");
    // Every row looks the same to the model, so it gives every row the same class.
    let csv: String = std::iter::once("job,y\n".to_string())
        .chain((0..300).map(|i| format!("clerk,{}\n", u8::from(i % 3 == 0))))
        .collect();
    let o = run_train(&d, ONE_FEATURE, &csv);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning: the Lr model predicts the class `"), "{err}");
    assert!(err.contains("for 100.0 % of the 60 test rows"), "{err}");
    assert!(err.contains("balanced accuracy 0.500"), "{err}");
}
