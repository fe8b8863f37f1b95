//! The model cache through `cent train`: a cached model is used only for exactly the data,
//! schema and options that built it, and every run says whether it loaded or trained, and why.

mod common;

use common::{SCHEMA, stdout, toy_csv};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for one test (emptied first, so reruns start from no cache).
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The same rows with every label flipped.
fn flip_labels(csv: &str) -> String {
    let mut lines = csv.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for line in lines {
        let (rest, y) = line.rsplit_once(',').unwrap();
        out.push_str(&format!("{rest},{}\n", if y == "1" { "0" } else { "1" }));
    }
    out
}

/// `cent train --model lr` on `csv` with `schema` (written into `d`), caching in `cache`.
fn train(d: &Path, csv: &str, schema: &str, cache: &Path) -> Output {
    let c = d.join("toy.csv");
    let s = d.join("toy.toml");
    std::fs::write(&c, csv).unwrap();
    std::fs::write(&s, schema).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cent"))
        .args(["train", "--model", "lr", "--quiet", "--data"])
        .arg(&c)
        .arg("--schema")
        .arg(&s)
        .arg("--cache")
        .arg(cache)
        .output()
        .expect("the cent binary runs");
    assert!(o.status.success(), "cent train failed: {}", String::from_utf8_lossy(&o.stderr));
    o
}

/// The line of `cent train`'s output about `artifact` (`lr model`, `VAE`).
fn origin<'a>(out: &'a str, artifact: &str) -> &'a str {
    let prefix = format!("{artifact}: ");
    out.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no `{artifact}:` line in:\n{out}"))
}

/// The test accuracy `cent train` reports.
fn accuracy(out: &str) -> String {
    let tail = out.split("test accuracy of the Lr model: ").nth(1).unwrap_or_else(|| panic!("no accuracy in:\n{out}"));
    tail.split(',').next().unwrap().trim().to_string()
}

/// The accuracy a model trained from scratch on `csv` and `schema` reports.
fn fresh_accuracy(d: &Path, csv: &str, schema: &str) -> String {
    let fresh = d.join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let cache = fresh.join("cache");
    let out = stdout(&train(&fresh, csv, schema, &cache));
    assert!(origin(&out, "lr model").contains("trained (no cached file)"), "{out}");
    accuracy(&out)
}

#[test]
fn test_unchanged_inputs_load_the_cached_models_and_say_so() {
    let d = dir("unchanged");
    let cache = d.join("cache");
    let first = stdout(&train(&d, &toy_csv(300), SCHEMA, &cache));
    assert!(origin(&first, "lr model").contains("trained (no cached file)"), "{first}");
    assert!(origin(&first, "VAE").contains("trained (no cached file)"), "{first}");
    let second = stdout(&train(&d, &toy_csv(300), SCHEMA, &cache));
    assert!(origin(&second, "lr model").starts_with("lr model: loaded from"), "{second}");
    assert!(origin(&second, "VAE").starts_with("VAE: loaded from"), "{second}");
    assert!(origin(&second, "lr model").contains("toy-lr-seed1.json"), "{second}");
    assert_eq!(accuracy(&first), accuracy(&second));
}

#[test]
fn test_flipped_labels_retrain_the_model_and_report_the_fresh_accuracy() {
    let d = dir("flipped");
    let cache = d.join("cache");
    let csv = toy_csv(300);
    let before = stdout(&train(&d, &csv, SCHEMA, &cache));
    let flipped = flip_labels(&csv);
    let after = stdout(&train(&d, &flipped, SCHEMA, &cache));
    let line = origin(&after, "lr model");
    assert!(line.contains("trained (the cached file was built from other data (key"), "{after}");
    // The VAE never sees the labels: the same rows keep it.
    assert!(origin(&after, "VAE").starts_with("VAE: loaded from"), "{after}");
    assert_eq!(accuracy(&after), fresh_accuracy(&d, &flipped, SCHEMA), "before the edit: {before}");
}

#[test]
fn test_reordered_categories_retrain_both_models() {
    let d = dir("reordered");
    let cache = d.join("cache");
    let csv = toy_csv(300);
    train(&d, &csv, SCHEMA, &cache);
    // Same rows, same column count, but the job columns now mean other jobs.
    let reordered = SCHEMA.replace(r#"["clerk", "manager", "other"]"#, r#"["manager", "other", "clerk"]"#);
    let after = stdout(&train(&d, &csv, &reordered, &cache));
    assert!(origin(&after, "lr model").contains("built from other data and schema"), "{after}");
    assert!(origin(&after, "VAE").contains("built from other data and schema"), "{after}");
    assert_eq!(accuracy(&after), fresh_accuracy(&d, &csv, &reordered));
}

#[test]
fn test_renamed_category_retrains_though_the_rows_are_the_same() {
    let d = dir("renamed");
    let cache = d.join("cache");
    train(&d, &toy_csv(300), SCHEMA, &cache);
    let schema = SCHEMA.replace(r#""other"]"#, r#""driver"]"#);
    let after = stdout(&train(&d, &toy_csv(300).replace("other", "driver"), &schema, &cache));
    // The encoded rows are byte for byte the same; only the encoding's description differs.
    assert!(origin(&after, "lr model").contains("built from other schema (key"), "{after}");
}

#[test]
fn test_edited_rows_retrain() {
    let d = dir("edited-rows");
    let cache = d.join("cache");
    train(&d, &toy_csv(300), SCHEMA, &cache);
    let after = stdout(&train(&d, &toy_csv(320), SCHEMA, &cache));
    assert!(origin(&after, "lr model").contains("trained (the cached file was built from other data"), "{after}");
    assert!(origin(&after, "VAE").contains("trained (the cached file was built from other data"), "{after}");
}

#[test]
fn test_corrupt_cache_file_is_retrained_with_the_reason() {
    let d = dir("corrupt");
    let cache = d.join("cache");
    let first = stdout(&train(&d, &toy_csv(300), SCHEMA, &cache));
    let file = cache.join("models").join("toy-lr-seed1.json");
    std::fs::write(&file, "{ not json").unwrap();
    let after = stdout(&train(&d, &toy_csv(300), SCHEMA, &cache));
    let line = origin(&after, "lr model");
    assert!(line.contains("trained (the cached file is unreadable: ") && line.contains("toy-lr-seed1.json"), "{after}");
    assert_eq!(accuracy(&after), accuracy(&first));
    // Rewritten: the next run loads it.
    let again = stdout(&train(&d, &toy_csv(300), SCHEMA, &cache));
    assert!(origin(&again, "lr model").starts_with("lr model: loaded from"), "{again}");
}

#[test]
fn test_file_without_a_key_is_retrained() {
    let d = dir("unkeyed");
    let cache = d.join("cache");
    train(&d, &toy_csv(300), SCHEMA, &cache);
    let file = cache.join("models").join("toy-lr-seed1.json");
    let model = cent_host::blackbox::Model::load(&file).expect("the cached model loads");
    model.save(&file).expect("saved without a key");
    let after = stdout(&train(&d, &toy_csv(300), SCHEMA, &cache));
    assert!(origin(&after, "lr model").contains("records no key"), "{after}");
}
