//! The `cent` binary on bad input: every case exits non-zero and names the place.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn cent(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cent"))
        .args(args)
        .arg("--cache")
        .arg(cache)
        .arg("--quiet")
        .output()
        .expect("the cent binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const SCHEMA: &str = r#"
name = "toy"

[[source]]
file = "toy.csv"

[csv]
header = true

[target]
column = "y"
favourable = "good"
classes = [{ name = "bad", values = ["0"] }, { name = "good", values = ["1"] }]

[[feature]]
name = "income"
kind = "continuous"

[[feature]]
name = "age"
kind = "integer"
mutability = "immutable"

[[feature]]
name = "job"
kind = "categorical"
categories = ["clerk", "manager", "other"]
"#;

/// A learnable toy table: `good` when income is high or the job is manager.
fn toy_csv(rows: usize) -> String {
    let mut s = String::from("income,age,job,y\n");
    let jobs = ["clerk", "manager", "other"];
    for i in 0..rows {
        let income = (i * 37 % 100) as f64;
        let job = jobs[i * 7 % 3];
        let y = u8::from(income > 60.0 || job == "manager");
        s.push_str(&format!("{income},{},{job},{y}\n", 20 + i % 50));
    }
    s
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn custom(name: &str, schema: &str, csv: &str, extra: &[&str]) -> Output {
    let d = dir(name);
    let s = write(&d, "toy.toml", schema);
    let c = write(&d, "toy.csv", csv);
    let mut args = vec!["explain", "--data", c.to_str().unwrap(), "--schema", s.to_str().unwrap()];
    args.extend_from_slice(if extra.is_empty() { &["--row", "0"] } else { extra });
    cent(&args, &d.join("cache"))
}

fn assert_fails_with(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success; stderr: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`:\n{err}");
    }
    assert!(!err.contains("panicked"), "a panic: {err}");
}

#[test]
fn test_missing_column_names_file_and_column() {
    let csv = toy_csv(30).replace("income,age,job,y", "salary,age,job,y");
    let o = custom("missing-column", SCHEMA, &csv, &[]);
    assert_fails_with(&o, &["toy.csv", "income"]);
}

#[test]
fn test_non_numeric_value_names_row_17() {
    let mut lines: Vec<String> = toy_csv(30).lines().map(String::from).collect();
    // Line 17 of the file (the header is line 1).
    lines[16] = "abc,30,clerk,0".into();
    let o = custom("non-numeric", SCHEMA, &(lines.join("\n") + "\n"), &[]);
    assert_fails_with(&o, &["toy.csv", "17", "income", "abc"]);
}

#[test]
fn test_unknown_category_names_value_and_choices() {
    let csv = toy_csv(30).replacen("manager", "astronaut", 1);
    let o = custom("unknown-category", SCHEMA, &csv, &[]);
    assert_fails_with(&o, &["toy.csv", "job", "astronaut"]);
}

#[test]
fn test_schema_typo_names_field_and_line() {
    let schema = SCHEMA.replace("mutability = \"immutable\"", "mutabilty = \"immutable\"");
    let o = custom("schema-typo", &schema, &toy_csv(30), &[]);
    assert_fails_with(&o, &["toy.toml", "mutabilty"]);
}

#[test]
fn test_empty_csv_is_an_error() {
    let o = custom("empty-csv", SCHEMA, "", &[]);
    assert_fails_with(&o, &["toy.csv"]);
}

#[test]
fn test_unknown_dataset_lists_the_valid_ones() {
    let d = dir("unknown-dataset");
    let o = cent(&["explain", "--dataset", "nope", "--row", "0"], &d);
    assert_fails_with(&o, &["nope", "adult"]);
}

#[test]
fn test_row_out_of_range_and_unknown_feature_flag() {
    let o = custom("row-range", SCHEMA, &toy_csv(200), &["--row", "99999"]);
    assert_fails_with(&o, &["--row 99999", "out of range"]);
    let o = custom("no-row", SCHEMA, &toy_csv(200), &["--n", "2"]);
    assert_eq!(o.status.code(), Some(2), "a missing --row/--query is a usage error: {}", stderr(&o));
    let o = custom("unknown-flag-feature", SCHEMA, &toy_csv(200), &["--row", "0", "--immutable", "height"]);
    assert_fails_with(&o, &["height", "income"]);
}

#[test]
fn test_desired_class_equal_to_current_is_an_error() {
    let d = dir("desired-current");
    let s = write(&d, "toy.toml", SCHEMA);
    let c = write(&d, "toy.csv", &toy_csv(400));
    let base = ["--data", c.to_str().unwrap(), "--schema", s.to_str().unwrap()];
    let mut args = vec!["explain", "--row", "0", "--format", "json"];
    args.extend_from_slice(&base);
    let first = cent(&args, &d.join("cache"));
    let out = String::from_utf8_lossy(&first.stdout);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {}", stderr(&first)));
    let current = doc["decision"]["name"].as_str().expect("decision in the JSON").to_string();
    let mut args = vec!["explain", "--row", "0", "--desired", &current];
    args.extend_from_slice(&base);
    let o = cent(&args, &d.join("cache"));
    assert_fails_with(&o, &["desired class", &current]);
}
