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

/// The toy schema with `level`, an ordered categorical, and `job`, an unordered one.
const ORDERED_SCHEMA: &str = r#"
name = "toy"

[[source]]
file = "toy.csv"

[target]
column = "y"
favourable = "good"
classes = [{ name = "bad", values = ["0"] }, { name = "good", values = ["1"] }]

[[feature]]
name = "income"
kind = "continuous"

[[feature]]
name = "level"
kind = "categorical"
ordered = true
categories = ["low", "mid", "high", "top"]

[[feature]]
name = "job"
kind = "categorical"
categories = ["clerk", "manager", "other"]
"#;

const LEVELS: [&str; 4] = ["low", "mid", "high", "top"];

/// `good` when income is high or the level is exactly `mid`: from `high` or `top`, the
/// cheapest flip is a step *down* the order.
fn ordered_csv(rows: usize) -> String {
    let mut s = String::from("income,level,job,y\n");
    for i in 0..rows {
        let income = (i * 37 % 100) as f64;
        let level = LEVELS[i * 7 / 3 % 4];
        let job = ["clerk", "manager", "other"][i * 11 % 3];
        let y = u8::from(income > 60.0 || level == "mid");
        s.push_str(&format!("{income},{level},{job},{y}\n"));
    }
    s
}

/// Per counterfactual of a JSON answer (one query or an array): the `level` move as indices
/// into [`LEVELS`], or `None` when `level` did not change.
fn level_moves(stdout: &[u8]) -> Vec<Option<(usize, usize)>> {
    let text = String::from_utf8_lossy(stdout);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let docs = doc.as_array().cloned().unwrap_or_else(|| vec![doc]);
    let rank = |v: &serde_json::Value| LEVELS.iter().position(|l| v.as_str() == Some(l)).expect("a level name");
    let mut moves = Vec::new();
    for d in &docs {
        for cf in d["explanation"]["counterfactuals"].as_array().into_iter().flatten() {
            let changes = cf["changes"].as_array().expect("changes");
            let level = changes.iter().find(|c| c["feature"] == "level");
            moves.push(level.map(|c| (rank(&c["before"]), rank(&c["after"]))));
        }
    }
    moves
}

#[test]
fn test_increase_only_ordered_categorical_never_moves_down() {
    let d = dir("ordered-increase-only");
    let s = write(&d, "toy.toml", ORDERED_SCHEMA);
    let c = write(&d, "toy.csv", &ordered_csv(400));
    // Forty refused applicants at the two upper levels with a low income.
    let mut queries = String::from("income,level,job\n");
    for i in 0..40 {
        queries.push_str(&format!("{},{},{}\n", 5 + i, LEVELS[2 + i % 2], ["clerk", "other"][i / 2 % 2]));
    }
    let q = write(&d, "queries.csv", &queries);
    let base = ["explain", "--data", c.to_str().unwrap(), "--schema", s.to_str().unwrap()];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(&["--query", q.to_str().unwrap(), "--format", "json"]);
        args.extend_from_slice(extra);
        let o = cent(&args, &d.join("cache"));
        assert!(matches!(o.status.code(), Some(0 | 3)), "exit {:?}: {}", o.status.code(), stderr(&o));
        level_moves(&o.stdout)
    };
    // Unconstrained, stepping down to `mid` is the usual answer: the check below can fail.
    let free = run(&[]);
    assert!(free.iter().flatten().any(|(b, a)| a < b), "no downward move without the constraint: {free:?}");
    let up_only = run(&["--increase-only", "level"]);
    assert!(up_only.len() >= 20, "too few counterfactuals under --increase-only: {}", up_only.len());
    for (before, after) in up_only.iter().flatten() {
        assert!(after >= before, "level moved down: {} -> {}", LEVELS[*before], LEVELS[*after]);
    }
}

#[test]
fn test_increase_only_on_unordered_categorical_is_a_usage_error() {
    let o =
        custom("unordered-increase-only", ORDERED_SCHEMA, &ordered_csv(200), &["--row", "0", "--increase-only", "job"]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    assert_fails_with(&o, &["job", "ordered = true"]);
    let o =
        custom("unordered-decrease-only", ORDERED_SCHEMA, &ordered_csv(200), &["--row", "0", "--decrease-only", "job"]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    assert_fails_with(&o, &["job", "decrease-only"]);
}

#[test]
fn test_direction_on_unordered_categorical_in_schema_names_file_and_fix() {
    let schema = ORDERED_SCHEMA.replace(
        "categories = [\"clerk\", \"manager\", \"other\"]",
        "categories = [\"clerk\", \"manager\", \"other\"]\nmutability = \"increase_only\"",
    );
    let o = custom("schema-unordered-direction", &schema, &ordered_csv(50), &[]);
    assert_fails_with(&o, &["toy.toml", "job", "add `ordered = true` and list the categories in order"]);
}
