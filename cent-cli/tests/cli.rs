//! The `cent` binary as a user meets it: bad input exits non-zero and names the place; exit
//! codes, query files, the favourable class, pipes and `[[source]] file`.

mod common;

use common::*;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

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

fn json(o: &Output) -> serde_json::Value {
    let out = stdout(o);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: stdout {out}\nstderr {}", stderr(o)))
}

/// Query values outside the range seen in training (ages 20..=69), unknown categories and
/// unknown or missing keys are errors naming the file, the query, the feature and what is allowed.
#[test]
fn test_query_values_out_of_range_unknown_and_missing_keys_are_errors() {
    let toy = toy();
    let cases: [(&str, &str, &[&str]); 6] = [
        ("old", r#"{"income": 10, "age": 500, "job": "clerk"}"#, &["age", "500", "[20, 69]"]),
        ("negative", r#"{"income": 10, "age": -5, "job": "clerk"}"#, &["age", "-5", "[20, 69]"]),
        ("income", r#"{"income": 1000, "age": 30, "job": "clerk"}"#, &["income", "1000", "[0, 99]"]),
        (
            "astronaut",
            r#"{"income": 10, "age": 30, "job": "astronaut"}"#,
            &["job", "astronaut", "clerk, manager, other"],
        ),
        ("typo", r#"{"income": 10, "agee": 30, "job": "clerk"}"#, &["agee", "`age`"]),
        ("missing", r#"{"income": 10, "job": "clerk"}"#, &["missing", "age"]),
    ];
    for (case, text, needles) in cases {
        let q = toy.file(&format!("range-{case}"), "person.json", text);
        let o = toy.run("explain", &["--query", q.to_str().unwrap()]);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "{case}: {}", stderr(&o));
        let err = stderr(&o);
        for n in [&["person.json", "query 1"][..], needles].concat() {
            assert!(err.contains(n), "{case}: stderr lacks `{n}`:\n{err}");
        }
    }
    // The schema's target column is accepted and ignored.
    let q = toy.file("range-target", "person.json", &REFUSED.replace('}', r#", "y": "0"}"#));
    let o = toy.run("explain", &["--query", q.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
}

/// 3 means "valid, but no counterfactual under these constraints", in text and JSON alike, and
/// `cent --help` says so.
#[test]
fn test_exit_code_3_when_nothing_is_found_and_help_documents_it() {
    let toy = toy();
    let q = toy.file("exit3", "person.json", REFUSED);
    for format in ["text", "json"] {
        let o = toy.run("explain", &["--query", q.to_str().unwrap(), "--immutable", "income,job", "--format", format]);
        assert_eq!(o.status.code(), Some(3), "{format}: {}\n{}", stdout(&o), stderr(&o));
        if format == "json" {
            assert!(json(&o)["not_found"].is_string(), "{}", stdout(&o));
        }
    }
    let help = cent(&["--help"], &toy.cache);
    let text = stdout(&help);
    assert!(!text.contains("1 error or no counterfactual"), "{text}");
    assert!(text.contains("3 the input is valid but no counterfactual exists"), "{text}");
    let help = cent(&["explain", "--help"], &toy.cache);
    assert!(stdout(&help).contains("3 no counterfactual exists"), "{}", stdout(&help));
}

/// A query the model already gives the favourable class is reported as such and exits 0,
/// unless --desired asks for another class.
#[test]
fn test_already_favourable_is_said_not_explained() {
    let toy = toy();
    let q = toy.file("favourable", "person.json", ACCEPTED);
    let q = q.to_str().unwrap();
    let o = toy.run("explain", &["--query", q]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("already gives the favourable outcome, good"), "{out}");
    let o = toy.run("explain", &["--query", q, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["already_favourable"], true, "{doc}");
    assert!(doc.get("explanation").is_none(), "{doc}");
    assert_eq!(doc["decision"]["name"], "good");
    let o = toy.run("explain", &["--query", q, "--format", "json", "--desired", "bad"]);
    let doc = json(&o);
    assert!(doc.get("already_favourable").is_none(), "{doc}");
    assert!(doc.get("explanation").is_some() || doc.get("not_found").is_some(), "{doc}");
}

/// A closed stdout (`cent ... | head`) ends every printing command quietly.
#[test]
fn test_closed_stdout_is_no_panic() {
    let toy = toy();
    let q = toy.file("pipe", "people.json", &format!("[{REFUSED}, {REFUSED}, {REFUSED}]"));
    let q = q.to_str().unwrap();
    let bundle = toy.file("pipe", "toy.cent", "");
    let bundle = bundle.to_str().unwrap();
    let people = toy.csv.to_str().unwrap();
    let commands: [&[&str]; 10] = [
        &["explain", "--query", q],
        &["batch", "--input", people, "--out", "-", "--limit", "40"],
        &["encode", "--out", "-"],
        &["explain", "--query", q, "--format", "json"],
        &["demo", "--count", "2"],
        &["train"],
        &["evaluate", "--factuals", "4", "--method", "nun"],
        &["export", "--out", bundle],
        &["validate", "--bundle", bundle],
        &["validate", "--bundle", bundle, "--format", "json"],
    ];
    for command in commands {
        let data = toy.data_args();
        let mut child = Command::new(env!("CARGO_BIN_EXE_cent"))
            .args(command)
            .args(&data)
            .arg("--cache")
            .arg(&toy.cache)
            .arg("--quiet")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the cent binary runs");
        // Close the read end before anything is written.
        drop(child.stdout.take());
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_ne!(status.code(), Some(101), "{command:?}: {err}");
        assert!(!err.contains("panicked"), "{command:?}: {err}");
        assert_eq!(status.code(), Some(0), "{command:?}: {err}");
    }
    assert!(std::fs::metadata(bundle).is_ok_and(|m| m.len() > 0), "export wrote the bundle");
}

/// One bad query of many gets an error entry; the others are still explained; exit 1.
#[test]
fn test_bad_query_among_many_keeps_the_others() {
    let toy = toy();
    let people = format!(
        "[{REFUSED}, {{\"income\": 10, \"age\": 500, \"job\": \"clerk\"}}, {{\"income\": 10, \"age\": 30}}, {ACCEPTED}]"
    );
    let q = toy.file("many", "people.json", &people);
    let q = q.to_str().unwrap();
    let o = toy.run("explain", &["--query", q]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("people.json query 1: the model says bad"), "{out}");
    assert!(out.contains("people.json query 2: error: feature `age`: 500 is outside"), "{out}");
    assert!(out.contains("people.json query 3: error: missing feature(s): job"), "{out}");
    assert!(out.contains("people.json query 4: the model already gives"), "{out}");
    assert!(stderr(&o).contains("people.json query 2"), "{}", stderr(&o));
    let o = toy.run("explain", &["--query", q, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc = json(&o);
    let entries = doc.as_array().expect("an array for several queries");
    assert_eq!(entries.len(), 4);
    assert!(entries[0]["explanation"].is_object(), "{doc}");
    assert!(entries[1]["error"].as_str().is_some_and(|e| e.contains("age")), "{doc}");
    assert!(entries[2]["error"].as_str().is_some_and(|e| e.contains("missing")), "{doc}");
    assert_eq!(entries[3]["already_favourable"], true, "{doc}");
    // A file that cannot be parsed at all stays one error naming the file and line.
    let q = toy.file("many-csv", "people.csv", "income,age,job\n10,30,clerk\n10,30\n");
    let o = toy.run("explain", &["--query", q.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("people.csv: line 3"), "{}", stderr(&o));
}

/// Options that ask for nothing or contradict each other are usage errors (exit 2) with a reason.
#[test]
fn test_meaningless_options_are_usage_errors() {
    let toy = toy();
    let cases: [(&str, &[&str], &[&str]); 12] = [
        ("explain", &["--row", "0", "--n", "0"], &["--n 0"]),
        ("explain", &["--row", "0", "--k", "0"], &["--k 0"]),
        ("explain", &["--row", "0", "--max-search", "0"], &["--max-search 0"]),
        (
            "explain",
            &["--row", "0", "--immutable", "income", "--increase-only", "income"],
            &["income", "--immutable", "--increase-only"],
        ),
        ("explain", &["--row", "0", "--free", "job", "--decrease-only", "job"], &["job", "--decrease-only", "--free"]),
        ("explain", &["--row", "0", "--immutable", "height"], &["--immutable", "height", "income"]),
        ("explain", &["--row", "0", "--cost", "income=-1"], &["--cost", "income=-1"]),
        ("explain", &["--row", "0", "--cost", "income=nan"], &["--cost", "income=nan"]),
        ("explain", &["--row", "0", "--cost", "height=1"], &["--cost", "height"]),
        ("explain", &["--row", "0", "--desired", "astronaut"], &["--desired", "astronaut", "bad, good"]),
        ("demo", &["--count", "0"], &["--count 0"]),
        ("evaluate", &["--factuals", "0"], &["--factuals 0"]),
    ];
    for (command, rest, needles) in cases {
        let o = toy.run(command, rest);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "{command} {rest:?}: {}", stderr(&o));
        for n in needles {
            assert!(stderr(&o).contains(n), "{command} {rest:?}: stderr lacks `{n}`: {}", stderr(&o));
        }
    }
}

/// `--schema` alone reads the schema's `[[source]] file`, relative to the schema's directory;
/// `--data` wins over it; a schema without a source is a usage error naming it.
#[test]
fn test_schema_source_file_is_relative_to_the_schema() {
    let toy = toy();
    let elsewhere = dir("source-cwd");
    let cache = toy.cache.to_str().unwrap();
    let schema = toy.schema.to_str().unwrap();
    // Absolute schema path, another working directory.
    let o = cent_in(&["explain", "--schema", schema, "--row", "0"], Path::new(cache), Some(&elsewhere));
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    // A relative schema path from the schema's parent directory.
    let parent = toy.dir.parent().unwrap();
    let relative = Path::new(toy.dir.file_name().unwrap()).join("toy.toml");
    let o = cent_in(&["explain", "--schema", relative.to_str().unwrap(), "--row", "0"], Path::new(cache), Some(parent));
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    // --data wins: its bad line is reported.
    let bad = toy.file("source-data-wins", "other.csv", &toy_csv(40).replacen("\n3", "\nabc", 1));
    let o = cent_in(
        &["explain", "--schema", schema, "--data", bad.to_str().unwrap(), "--row", "0"],
        Path::new(cache),
        Some(&elsewhere),
    );
    assert_fails_with(&o, &["other.csv", "abc"]);
    // No [[source]]: a usage error naming the schema.
    let bare = toy.file("source-none", "bare.toml", &SCHEMA.replace("[[source]]\nfile = \"toy.csv\"\n", ""));
    let o = cent_in(&["explain", "--schema", bare.to_str().unwrap(), "--row", "0"], Path::new(cache), Some(&elsewhere));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("bare.toml") && stderr(&o).contains("[[source]]"), "{}", stderr(&o));
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

/// `--min-probability` and `--plausibility` take a number in 0..=1 (anything else is a usage
/// error naming it, a negative number too: the range is what is wrong, not the option); every
/// answer reports its probability (at least the minimum) and how it was made.
#[test]
fn test_confidence_and_plausibility_options() {
    let toy = toy();
    for (flag, value) in [
        ("--min-probability", "1.5"),
        ("--plausibility", "1.1"),
        ("--plausibility", "lots"),
        ("--plausibility", "-0.2"),
    ] {
        let o = toy.run("explain", &["--row", "0", flag, value]);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("invalid value '{value}' for '{flag}")), "{flag} {value}: {}", stderr(&o));
    }
    // Row 0 is `good` (favourable): ask for the other class.
    let o = toy.run("explain", &["--row", "0", "--desired", "bad", "--min-probability", "0.7", "--format", "json"]);
    assert_no_panic(&o);
    let doc = json(&o);
    assert!(doc["explanation"].is_object() || doc["not_found"].is_string(), "{doc}");
    if let Some(cfs) = doc["explanation"]["counterfactuals"].as_array() {
        for cf in cfs {
            assert!(cf["class"]["probability"].as_f64().is_some_and(|p| p >= 0.7 - 1e-6), "{cf}");
            assert!(cf["realization"].is_string(), "{cf}");
        }
    } else {
        assert!(doc["not_found"].as_str().is_some_and(|r| r.contains("required probability")), "{doc}");
    }
}

/// A user's own 104-column CSV and schema: Adult's `adult.data` in the UCI format, read through
/// the `adult-wide` schema file. Explain answers at the host's capacity; export is refused with
/// the device's limit and the figure.
#[test]
fn test_wide_user_data_explains_and_export_names_the_device_limit() {
    use flate2::read::GzDecoder;
    let d = dir("wide-user-data");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let gz = std::fs::read(root.join("data/adult/adult.data.gz")).expect("the embedded Adult file");
    let mut text = String::new();
    GzDecoder::new(&gz[..]).read_to_string(&mut text).expect("gzip");
    let csv = write(&d, "adult.data", &text);
    let schema = root.join("data/schemas/adult-wide.toml");
    let data = ["--data", csv.to_str().unwrap(), "--schema", schema.to_str().unwrap()];
    let cache = d.join("cache");
    let explain = cent(&[&["explain"][..], &data, &["--row", "0", "--n", "1", "--format", "json"]].concat(), &cache);
    assert_no_panic(&explain);
    assert!(explain.status.success() || explain.status.code() == Some(3), "{}", stderr(&explain));
    let json: serde_json::Value = serde_json::from_str(&stdout(&explain)).expect("JSON");
    let values = json["values"].as_array().expect("the query's values");
    assert_eq!(values.len(), 14, "{json}");
    if let Some(cf) = json["explanation"]["counterfactuals"].get(0) {
        assert_eq!(cf["encoded"].as_array().map(Vec::len), Some(104));
    }
    let out = d.join("wide.cent");
    let export = cent(&[&["export"][..], &data, &["--out", out.to_str().unwrap()]].concat(), &cache);
    assert_fails_with(&export, &["104 encoded columns (the device holds at most 64)"]);
    assert!(!out.exists(), "no bundle is written");
}

/// `cent batch`: one JSON line per input row in input order, a bad row reported with its file
/// and line while the others are explained, the same bytes for one thread and two, `--limit`.
#[test]
fn test_batch_streams_every_row_in_order_whatever_the_threads() {
    let t = toy();
    let mut rows = String::from("income,age,job\n");
    for i in 0..40 {
        rows.push_str(&format!("{},{},{}\n", i * 3 % 60, 20 + i % 40, ["clerk", "other", "manager"][i % 3]));
    }
    rows.push_str("12,31,astronaut\n");
    rows.push_str("15,33,clerk\n");
    let input = t.file("batch", "people.csv", &rows);
    let out = |threads: &str| {
        let path = input.with_file_name(format!("out-{threads}.jsonl"));
        let o = t.run(
            "batch",
            &[
                "--input",
                input.to_str().unwrap(),
                "--out",
                path.to_str().unwrap(),
                "--threads",
                threads,
                "--chunk",
                "7",
            ],
        );
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "a bad row makes the exit code 1: {}", stderr(&o));
        std::fs::read_to_string(&path).expect("the output file")
    };
    let (one, two) = (out("1"), out("2"));
    assert_eq!(one, two, "the same bytes for any thread count");
    let lines: Vec<serde_json::Value> = one.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(lines.len(), 42);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["line"], i + 2, "input order");
    }
    let bad = &lines[40];
    let error = bad["error"].as_str().expect("the bad row's error");
    assert!(error.contains("people.csv: line 42") && error.contains("astronaut"), "{error}");
    assert!(
        lines[41]["explanation"].is_object() || lines[41]["not_found"].is_string(),
        "the row after it is explained"
    );
    assert!(lines.iter().any(|l| l["already_favourable"] == true), "managers are already favourable");
    let limited = input.with_file_name("limited.jsonl");
    let o = t.run("batch", &["--input", input.to_str().unwrap(), "--out", limited.to_str().unwrap(), "--limit", "5"]);
    assert_no_panic(&o);
    assert_eq!(std::fs::read_to_string(&limited).unwrap().lines().count(), 5);
}

/// Columns that are no feature (an identifier, the target, a note) are ignored and named once;
/// the rows read as they would without them. A feature no column gives fails the file at once,
/// naming the column close to it, before anything is written.
#[test]
fn test_other_columns_are_ignored_and_named_and_a_missing_feature_refused_at_once() {
    let t = toy();
    let (mut plain, mut extra) = (String::from("income,age,job\n"), String::from("id,job,y,income,note,age\n"));
    for i in 0..12 {
        let (income, age, job) = (i * 5 % 60, 20 + i, ["clerk", "other", "manager"][i % 3]);
        plain.push_str(&format!("{income},{age},{job}\n"));
        extra.push_str(&format!("p{i},{job},0,{income},\"a, b\",{age}\n"));
    }
    let run = |case: &str, text: &str| {
        let input = t.file(case, "people.csv", text);
        let out = input.with_file_name("out.jsonl");
        let o = t.run("batch", &["--input", input.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_no_panic(&o);
        (o, std::fs::read_to_string(&out).ok())
    };
    let (o, plain_out) = run("plain", &plain);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("ignored"), "{}", stderr(&o));
    let (o, extra_out) = run("extra", &extra);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(plain_out.expect("written"), extra_out.expect("written"), "the same answers, row by row");
    // Named once, unless --quiet.
    let input = t.file("extra-loud", "people.csv", &extra);
    let o = Command::new(env!("CARGO_BIN_EXE_cent"))
        .arg("batch")
        .args(t.data_args())
        .args(["--input", input.to_str().unwrap(), "--out", input.with_file_name("out.jsonl").to_str().unwrap()])
        .args(["--cache", t.cache.to_str().unwrap()])
        .output()
        .expect("runs");
    let e = stderr(&o);
    assert_eq!(e.matches("people.csv: columns that are no feature, ignored: id, note\n").count(), 1, "{e}");

    let (o, written) = run("typo", &plain.replacen("job", "jobb", 1));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("people.csv: line 1: missing feature(s): job (`jobb` is given: a typo of `job`?)"), "{e}");
    assert_eq!(e.matches("missing feature").count(), 1, "said once, for the file: {e}");
    assert!(written.is_none(), "nothing written for a file that cannot be read");
    let (o, _) = run("twice", &plain.replacen("age", "job", 1));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("people.csv: line 1: feature `job` is given twice"), "{}", stderr(&o));

    // A query file's keys alike: the same answer, the other keys named once.
    let tagged = REFUSED.replace('{', r#"{"id": "p7", "note": 3, "#);
    let explain = |case: &str, text: &str| {
        let q = t.file(case, "q.json", &format!("[{text}, {text}]"));
        let o = Command::new(env!("CARGO_BIN_EXE_cent"))
            .arg("explain")
            .args(t.data_args())
            .args(["--query", q.to_str().unwrap(), "--format", "json", "--cache", t.cache.to_str().unwrap()])
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        o
    };
    let (plain, tagged) = (explain("q-plain", REFUSED), explain("q-tagged", &tagged));
    assert_eq!(json(&plain)[0]["explanation"], json(&tagged)[0]["explanation"]);
    assert!(!stderr(&plain).contains("ignored"), "{}", stderr(&plain));
    assert_eq!(stderr(&tagged).matches("q.json: keys that are no feature, ignored: id, note\n").count(), 1);
}

/// A `cent batch` killed mid-run leaves whole JSON lines of whole chunks: the rows before the
/// kill, in order, each complete.
#[test]
fn test_killed_batch_leaves_whole_lines_of_whole_chunks() {
    let t = toy();
    let mut rows = String::from("income,age,job\n");
    for i in 0..20_000 {
        rows.push_str(&format!("{},{},{}\n", i * 7 % 60, 20 + i % 40, ["clerk", "other"][i % 2]));
    }
    let input = t.file("killed", "people.csv", &rows);
    let out = input.with_file_name("killed.jsonl");
    let data = t.data_args();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cent"))
        .arg("batch")
        .args(&data)
        .args(["--input", input.to_str().unwrap(), "--out", out.to_str().unwrap(), "--chunk", "3", "--threads", "1"])
        .args(["--cache", t.cache.to_str().unwrap(), "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cent batch starts");
    let lines_now = || std::fs::read_to_string(&out).map(|s| s.lines().count()).unwrap_or(0);
    let started = std::time::Instant::now();
    while lines_now() < 30 && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("kill");
    let status = child.wait().expect("wait");
    assert!(!status.success(), "killed before the end (20,000 rows)");
    let text = std::fs::read_to_string(&out).expect("the partial output");
    assert!(text.ends_with('\n'), "no line is cut");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 30 && lines.len().is_multiple_of(3), "whole chunks of 3: {} lines", lines.len());
    for (i, l) in lines.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l).expect("a whole JSON line");
        assert_eq!(v["line"], i + 2, "in input order");
    }
}

/// `cent audit` over `cent batch`'s output: per group, people and refused people agree with a
/// count of the input and of the batch's lines; rows the batch could not explain are counted
/// as their group's errors and in no other figure.
#[test]
fn test_audit_counts_match_the_batch() {
    let t = toy();
    let mut rows = String::from("income,age,job\n");
    for i in 0..30 {
        rows.push_str(&format!("{},{},{}\n", i * 11 % 100, 20 + i % 40, ["clerk", "manager", "other"][i % 3]));
    }
    // Three clerks whose income is no number.
    rows.push_str("lots,30,clerk\n,31,clerk\n?,32,clerk\n");
    let input = t.file("audit", "people.csv", &rows);
    let results = input.with_file_name("results.jsonl");
    let o = t.run("batch", &["--input", input.to_str().unwrap(), "--out", results.to_str().unwrap()]);
    assert_no_panic(&o);
    let out_dir = input.with_file_name("audit");
    let audit = |by: &str| {
        Command::new(env!("CARGO_BIN_EXE_cent"))
            .args(["audit", "--results", results.to_str().unwrap(), "--input", input.to_str().unwrap()])
            .args(["--by", by, "--out", out_dir.to_str().unwrap()])
            .output()
            .expect("cent audit runs")
    };
    let o = audit("job");
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("audit.json")).unwrap()).expect("audit.json");
    assert_eq!((report["people"].as_u64(), report["errors"].as_u64()), (Some(30), Some(3)));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&results).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines[30..].iter().all(|l| l["error"].is_string()), "the last three rows are errors");
    let lines = &lines[..30];
    for (k, job) in ["clerk", "manager", "other"].iter().enumerate() {
        let g = report["groups"].as_array().unwrap().iter().find(|g| g["value"] == *job).expect("a group per job");
        let mine: Vec<&serde_json::Value> =
            lines.iter().enumerate().filter(|(i, _)| i % 3 == k).map(|(_, l)| l).collect();
        let refused = mine.iter().filter(|l| l["already_favourable"] != true).count();
        let with = mine.iter().filter(|l| l["explanation"]["counterfactuals"][0].is_object()).count();
        assert_eq!(
            (g["people"].as_u64(), g["refused"].as_u64(), g["with_recourse"].as_u64()),
            (Some(10), Some(refused as u64), Some(with as u64)),
            "{job}"
        );
        assert_eq!(g["errors"].as_u64(), Some(if *job == "clerk" { 3 } else { 0 }), "{job}");
    }
    let md = std::fs::read_to_string(out_dir.join("audit.md")).unwrap();
    assert!(md.contains("## job") && md.contains("Gap between groups"), "{md}");
    let svg = std::fs::read_to_string(out_dir.join("audit.svg")).expect("audit.svg");
    assert!(svg.starts_with("<svg") && svg.contains("job=clerk"), "the plot names the groups");
    let o = audit("colour");
    assert!(!o.status.success() && stderr(&o).contains("no column `colour`"), "{}", stderr(&o));
}

/// Writes the toy people as Parquet: income as doubles, age as 64-bit integers, job
/// dictionary-encoded (as pandas writes a categorical).
fn toy_parquet(path: &Path, people: &[(f64, i64, &str)]) {
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch};
    use std::sync::Arc;
    let income: ArrayRef = Arc::new(Float64Array::from_iter_values(people.iter().map(|p| p.0)));
    let age: ArrayRef = Arc::new(Int64Array::from_iter_values(people.iter().map(|p| p.1)));
    let job: ArrayRef = Arc::new(people.iter().map(|p| p.2).collect::<DictionaryArray<Int32Type>>());
    let batch = RecordBatch::try_from_iter([("income", income), ("age", age), ("job", job)]).expect("a batch");
    let file = std::fs::File::create(path).expect("create");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

/// A query or input file that cannot be opened, or an output directory that does not exist
/// (`batch`, `export`), fails at once: nothing is trained into an empty cache first.
#[test]
fn test_unreadable_files_fail_before_the_models_load() {
    let t = toy();
    let d = dir("fail-early");
    let cache = d.join("empty-cache");
    let _ = std::fs::remove_dir_all(&cache);
    let missing = d.join("nobody.csv");
    let people = t.file("fail-early", "people.csv", "income,age,job\n10,30,clerk\n");
    let data = t.data_args();
    let data: Vec<&str> = data.iter().map(String::as_str).collect();
    for (args, needle) in [
        (vec!["explain", "--query", missing.to_str().unwrap()], "cannot read query file"),
        (vec!["batch", "--input", missing.to_str().unwrap(), "--out", "-"], "cannot read"),
        (vec!["batch", "--input", people.to_str().unwrap(), "--out", "/nonexistent-dir/out.jsonl"], "no directory"),
        (vec!["export", "--out", "/nonexistent-dir/toy.cent"], "--out /nonexistent-dir/toy.cent: no directory"),
    ] {
        let all = [&args[..1], &data[..], &args[1..]].concat();
        let o = cent(&all, &cache);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        let trained = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
        assert_eq!(trained, 0, "{args:?}: nothing is trained");
    }
}

/// `--keep` carries input columns into the results, after `line`, in every format; a Parquet
/// input's other columns are not read (nulls, dates), and the answers are those of the
/// features alone.
#[test]
fn test_batch_keeps_columns_in_every_format_and_reads_only_what_it_needs() {
    use arrow_array::{ArrayRef, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let t = toy();
    let jobs = ["clerk", "other", "manager"];
    let n = 15;
    let plain = t.file("keep", "plain.parquet", "");
    let people: Vec<(f64, i64, &str)> = (0..n).map(|i| ((i * 7 % 60) as f64, 20 + i as i64, jobs[i % 3])).collect();
    toy_parquet(&plain, &people);
    let columns: [(&str, ArrayRef); 6] = [
        ("id", Arc::new(Int64Array::from_iter_values((0..n as i64).map(|i| 1000 + i)))),
        ("when", Arc::new(Date32Array::from_iter((0..n as i32).map(|i| (i % 2 == 0).then_some(i))))),
        ("job", Arc::new(StringArray::from_iter_values(people.iter().map(|p| p.2)))),
        ("note", Arc::new(StringArray::from_iter((0..n).map(|i| (i % 3 == 0).then_some("x"))))),
        ("income", Arc::new(Float64Array::from_iter_values(people.iter().map(|p| p.0)))),
        ("age", Arc::new(Int64Array::from_iter_values(people.iter().map(|p| p.1)))),
    ];
    let batch = RecordBatch::try_from_iter(columns).expect("a batch");
    let tagged = plain.with_file_name("tagged.parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&tagged).unwrap(), batch.schema(), None)
        .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");

    let run = |input: &Path, out: &str, keep: &[&str]| {
        let out = input.with_file_name(out);
        let mut args = vec!["--input", input.to_str().unwrap(), "--out", out.to_str().unwrap()];
        if !keep.is_empty() {
            args.extend(["--keep", keep[0]]);
        }
        let o = t.run("batch", &args);
        assert_no_panic(&o);
        (o, out)
    };
    let (o, reference) = run(&plain, "plain.jsonl", &[]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    let reference = std::fs::read_to_string(reference).unwrap();
    let (o, kept) = run(&tagged, "kept.jsonl", &["id,note"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    let kept = std::fs::read_to_string(kept).unwrap();
    for (i, (a, text)) in reference.lines().zip(kept.lines()).enumerate() {
        let mut b: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(b["id"], (1000 + i).to_string());
        assert_eq!(b["note"], if i % 3 == 0 { serde_json::json!("x") } else { serde_json::Value::Null });
        let start = format!("{{\"line\":{},\"id\":\"{}\",\"note\":", i + 1, 1000 + i);
        assert!(text.starts_with(&start), "kept columns follow line: {text}");
        b.as_object_mut().unwrap().retain(|k, _| k != "id" && k != "note");
        assert_eq!(b, serde_json::from_str::<serde_json::Value>(a).unwrap(), "row {i}: the same answer");
    }
    assert_eq!(kept.lines().count(), n);

    let (o, csv_out) = run(&tagged, "kept.csv", &["id"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    let csv_out = std::fs::read_to_string(csv_out).unwrap();
    assert!(csv_out.starts_with("line,id,status,"), "{csv_out}");
    assert!(csv_out.lines().skip(1).all(|l| {
        let f: Vec<&str> = l.split(',').collect();
        f[1].parse::<usize>().unwrap() == 1000 + f[0].parse::<usize>().unwrap() - 1
    }));
    let (o, pq_out) = run(&tagged, "kept.parquet", &["id"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    for row in read_parquet(&pq_out) {
        assert_eq!(row["id"].parse::<usize>().unwrap(), 1000 + row["line"].parse::<usize>().unwrap() - 1);
    }

    let clash = t.file("keep-clash", "people.csv", "income,age,job,status\n10,30,clerk,new\n");
    let (o, out) = run(&clash, "clash.jsonl", &["status"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("the kept column `status` has the name of a results field"), "{}", stderr(&o));
    assert!(!out.exists());
    let (o, _) = run(&tagged, "date.jsonl", &["when"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("column `when` is Date32; a kept column is text, a number or a boolean"),
        "{}",
        stderr(&o)
    );
    let (o, _) = run(&tagged, "missing.jsonl", &["applicant"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("tagged.parquet: no column `applicant`; columns: id, when, job"), "{}", stderr(&o));
}

/// Every row of a Parquet file, each column rendered as text ("" for null), by column name.
fn read_parquet(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, UInt32Type, UInt64Type};
    use arrow_schema::DataType;
    let file = std::fs::File::open(path).expect("the Parquet output");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a valid Parquet file")
        .build()
        .expect("reader");
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.expect("a record batch");
        for r in 0..batch.num_rows() {
            let mut row = std::collections::BTreeMap::new();
            for (field, c) in batch.schema().fields().iter().zip(batch.columns()) {
                let text = if c.is_null(r) {
                    String::new()
                } else {
                    match c.data_type() {
                        DataType::Utf8 => c.as_string::<i32>().value(r).to_string(),
                        DataType::UInt64 => c.as_primitive::<UInt64Type>().value(r).to_string(),
                        DataType::UInt32 => c.as_primitive::<UInt32Type>().value(r).to_string(),
                        DataType::Float32 => c.as_primitive::<Float32Type>().value(r).to_string(),
                        DataType::Float64 => c.as_primitive::<Float64Type>().value(r).to_string(),
                        other => panic!("unexpected column type {other}"),
                    }
                };
                row.insert(field.name().clone(), text);
            }
            rows.push(row);
        }
    }
    rows
}

/// `cent batch` from Parquet to Parquet and to CSV: the Parquet output reads back with one row
/// per counterfactual (one for a row without any), agreeing field by field with the JSON Lines
/// of the same people from a CSV input and with the CSV output; a bad row is an error row
/// naming the file and row. `cent audit` gives the same report from either pair of files.
#[test]
fn test_batch_parquet_round_trip_agrees_with_json_lines_and_csv() {
    let t = toy();
    let jobs = ["clerk", "other", "manager"];
    let mut people: Vec<(f64, i64, &str)> =
        (0..30).map(|i| ((i * 7 % 60) as f64 + 0.5, 20 + i as i64 % 40, jobs[i % 3])).collect();
    people.insert(12, (20.0, 30, "astronaut"));
    let mut csv_text = String::from("income,age,job\n");
    for p in &people {
        csv_text.push_str(&format!("{},{},{}\n", p.0, p.1, p.2));
    }
    let csv_in = t.file("parquet", "people.csv", &csv_text);
    let pq_in = csv_in.with_file_name("people.parquet");
    toy_parquet(&pq_in, &people);
    let batch = |input: &Path, out: &str| {
        let out = input.with_file_name(out);
        let o = t.run("batch", &["--input", input.to_str().unwrap(), "--out", out.to_str().unwrap(), "--chunk", "4"]);
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "the bad row makes the exit code 1: {}", stderr(&o));
        out
    };
    let jsonl = std::fs::read_to_string(batch(&csv_in, "reference.jsonl")).expect("JSON Lines");
    let pq_out = batch(&pq_in, "results.parquet");
    let csv_out = batch(&pq_in, "results.csv");
    assert!(!pq_out.with_file_name("results.parquet.partial").exists(), "the partial file is renamed");

    let table = read_parquet(&pq_out);
    let mut at = 0;
    for (i, line) in jsonl.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(v["line"], i + 2);
        let mine: Vec<_> = table.iter().filter(|r| r["line"] == (i + 1).to_string()).collect();
        assert!(!mine.is_empty(), "row {} has a result", i + 1);
        assert_eq!(table[at]["line"], (i + 1).to_string(), "input order");
        at += mine.len();
        if let Some(e) = v["error"].as_str() {
            assert_eq!(mine[0]["status"], "error");
            assert!(e.contains("people.csv: line 14") && e.contains("astronaut"), "{e}");
            assert!(mine[0]["reason"].contains("people.parquet: row 13") && mine[0]["reason"].contains("astronaut"));
            continue;
        }
        assert_eq!(mine[0]["decision"], v["decision"]["name"].as_str().unwrap());
        let cfs = v["explanation"]["counterfactuals"].as_array().cloned().unwrap_or_default();
        if cfs.is_empty() {
            let status = if v["already_favourable"] == true { "already_favourable" } else { "not_found" };
            assert_eq!((mine.len(), mine[0]["status"].as_str(), mine[0]["rank"].as_str()), (1, status, ""));
            continue;
        }
        assert_eq!(mine.len(), cfs.len());
        for (row, cf) in mine.iter().zip(&cfs) {
            assert_eq!(row["status"], "explained");
            assert_eq!(row["rank"], cf["rank"].to_string());
            assert_eq!(row["class"], cf["class"]["name"].as_str().unwrap());
            assert_eq!(row["l0"], cf["l0"].to_string());
            let close = |a: &str, b: f64| (a.parse::<f64>().unwrap() - b).abs() <= 1e-6 * b.abs().max(1.0);
            assert!(close(&row["cost"], cf["cost"].as_f64().unwrap()), "{row:?} {cf}");
            assert!(close(&row["probability"], cf["class"]["probability"].as_f64().unwrap()));
            for change in cf["changes"].as_array().unwrap() {
                let name = format!("cf_{}", change["feature"].as_str().unwrap());
                let after = change["after"].as_str().unwrap();
                match after.parse::<f64>() {
                    Ok(x) => assert!(close(&row[&name], x), "{name}: {} vs {after}", row[&name]),
                    Err(_) => assert_eq!(row[&name], after, "{name}"),
                }
                assert!(row["changes"].contains(&format!("{}: ", change["feature"].as_str().unwrap())));
            }
        }
    }
    assert_eq!(at, table.len(), "no extra rows");

    let mut reader = csv::Reader::from_path(&csv_out).expect("the CSV output");
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let csv_rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a CSV record")).collect();
    assert_eq!(csv_rows.len(), table.len());
    for (record, row) in csv_rows.iter().zip(&table) {
        for (name, field) in header.iter().zip(record.iter()) {
            let same = row[name] == field
                || field
                    .parse::<f64>()
                    .ok()
                    .zip(row[name].parse::<f64>().ok())
                    .is_some_and(|(a, b)| (a - b).abs() <= 1e-9);
            assert!(same, "{name}: CSV `{field}`, Parquet `{}`", row[name]);
        }
    }

    let out_dir = csv_in.with_file_name("audit");
    let audit = |results: &Path, input: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_cent"))
            .args(["audit", "--results", results.to_str().unwrap(), "--input", input.to_str().unwrap()])
            .args(["--by", "job", "--out", out_dir.to_str().unwrap()])
            .output()
            .expect("cent audit runs");
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read_to_string(out_dir.join("audit.json")).expect("audit.json")
    };
    let from_json = audit(&csv_in.with_file_name("reference.jsonl"), &csv_in);
    assert_eq!(audit(&pq_out, &pq_in), from_json, "the same audit from Parquet");
    assert_eq!(audit(&csv_out, &pq_in), from_json, "the same audit from CSV results");
    let report: serde_json::Value = serde_json::from_str(&from_json).unwrap();
    assert_eq!(report["people"], 30, "the error row is left out");
}

/// `cent audit` without `--by` groups by the schema's `protected` features, and says how to
/// name them when the schema has none.
#[test]
fn test_audit_groups_by_the_schema_protected_features() {
    let t = toy();
    let mut rows = String::from("income,age,job\n");
    for i in 0..12 {
        rows.push_str(&format!("{},{},{}\n", i * 9 % 100, 25 + i, ["clerk", "manager", "other"][i % 3]));
    }
    let input = t.file("protected", "people.csv", &rows);
    let results = input.with_file_name("results.jsonl");
    let o = t.run("batch", &["--input", input.to_str().unwrap(), "--out", results.to_str().unwrap()]);
    assert_no_panic(&o);
    let out_dir = input.with_file_name("audit");
    let audit = |schema: &Path| {
        Command::new(env!("CARGO_BIN_EXE_cent"))
            .args(["audit", "--results", results.to_str().unwrap(), "--input", input.to_str().unwrap()])
            .args(["--schema", schema.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
            .output()
            .expect("cent audit runs")
    };
    let o = audit(&t.schema);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("names no protected features") && stderr(&o).contains("--by"), "{}", stderr(&o));
    let schema = SCHEMA.replace("name = \"toy\"\n", "name = \"toy\"\nprotected = [\"job\"]\n");
    let o = audit(&write(input.parent().unwrap(), "protected.toml", &schema));
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("audit.json")).unwrap()).unwrap();
    assert_eq!(report["by"], serde_json::json!(["job"]));
    assert_eq!(report["people"], 12);
    let bad = SCHEMA.replace("name = \"toy\"\n", "name = \"toy\"\nprotected = [\"income\"]\n");
    let o = audit(&write(input.parent().unwrap(), "bad.toml", &bad));
    assert!(!o.status.success() && stderr(&o).contains("protected `income`"), "{}", stderr(&o));
}

/// `--weights 8` quantizes the encoder to int8 and keeps the classifier int16 (it confirms every
/// answer); `--classifier-weights 8` takes it to int8 too. Each bundle is smaller than the one
/// before, says which widths it holds and is one the device explains with.
#[test]
fn test_export_weights_set_the_encoder_and_the_classifier_apart() {
    let toy = toy();
    let mut sizes = Vec::new();
    for (name, flags, encoder, classifier) in [
        ("w16.cent", vec![], "int16", "int16"),
        ("w8.cent", vec!["--weights", "8"], "int8", "int16"),
        ("w8c8.cent", vec!["--weights", "8", "--classifier-weights", "8"], "int8", "int8"),
    ] {
        let bundle = toy.file("widths", name, "");
        let mut args = vec!["--out", bundle.to_str().unwrap()];
        args.extend(flags);
        let o = toy.run("export", &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        let line = |part: &str| out.lines().find(|l| l.trim_start().starts_with(part)).unwrap_or_default().to_string();
        assert!(line("encoder").ends_with(&format!("B ({encoder} weights)")), "{out}");
        assert!(line("classifier").ends_with(&format!("B ({classifier} weights)")), "{out}");
        sizes.push(std::fs::metadata(&bundle).expect("written").len());
        let o = toy.run("explain", &["--row", "0", "--bundle", bundle.to_str().unwrap()]);
        assert!(matches!(o.status.code(), Some(0 | 3)), "{name}: {}", stderr(&o));
        let o = toy.run("validate", &["--bundle", bundle.to_str().unwrap(), "--limit", "10"]);
        let widths = format!("bytes (encoder {encoder}, classifier {classifier})");
        assert!(stdout(&o).contains(&widths), "{name}: {}\n{}", stdout(&o), stderr(&o));
    }
    assert!(sizes[0] > sizes[1] && sizes[1] > sizes[2], "{sizes:?}");
}

/// `cent explain --bundle`: the device's answers, each with the full-precision model's verdict,
/// in text and JSON; device options without a bundle, workstation options with one, more
/// answers than the device gives, and a bundle of another seed are refused with the reason.
#[test]
fn test_explain_with_a_bundle_shows_the_devices_answers_judged() {
    let toy = toy();
    let bundle = toy.file("device", "toy.cent", "");
    let bundle = bundle.to_str().unwrap();
    let o = toy.run("export", &["--out", bundle]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let q = toy.file("device", "people.json", &format!("[{REFUSED}, {REFUSED}]"));
    let q = q.to_str().unwrap();
    let o = toy.run("explain", &["--query", q, "--bundle", bundle]);
    assert_no_panic(&o);
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}\n{}", stderr(&o));
    assert!(out.contains("people.json query 1: the model says bad"), "{out}");
    assert!(out.contains("device: its classifier says"), "{out}");
    let o = toy.run("explain", &["--query", q, "--bundle", bundle, "--format", "json", "--n", "2"]);
    let doc = json(&o);
    let first = &doc[0];
    let device = &first["device"];
    assert!(first.get("explanation").is_none(), "{doc}");
    assert_eq!(device["options"]["max_search"], 50, "{doc}");
    let answers = device["answers"].as_array().unwrap();
    assert!((1..=2).contains(&answers.len()), "{doc}");
    for a in answers {
        assert!(a["confirmed"].is_boolean() && a["model"]["probability"].is_number(), "{a}");
        assert!(a["changes"].as_array().is_some_and(|c| !c.is_empty()), "{a}");
    }
    // The same query and seed give the same answers (the firmware's determinism).
    assert_eq!(json(&toy.run("explain", &["--query", q, "--bundle", bundle, "--format", "json", "--n", "2"])), doc);
    for (args, needle) in [
        (vec!["--row", "0", "--lead", "0.8"], "need --bundle"),
        (vec!["--row", "0", "--bundle", bundle, "--plausibility", "0.2"], "--plausibility sets the workstation's"),
        (vec!["--row", "0", "--bundle", bundle, "--n", "4"], "--n 4: a device gives 1 to 3"),
        (vec!["--row", "0", "--bundle", bundle, "--max-search", "300"], "at most 255"),
        (vec!["--row", "0", "--bundle", bundle, "--onnx", "m.onnx"], "cannot be used with '--onnx"),
    ] {
        let o = toy.run("explain", &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let o = toy.run("explain", &["--row", "0", "--bundle", bundle, "--seed", "2"]);
    assert_fails_with(&o, &["toy.cent", "export it again"]);
    let junk = toy.file("device", "junk.cent", "not a bundle");
    let o = toy.run("explain", &["--row", "0", "--bundle", junk.to_str().unwrap()]);
    assert_fails_with(&o, &["junk.cent", "not a valid bundle"]);
    assert_eq!(o.status.code(), Some(1));
}

/// `cent encode` writes each split's rows as the models see them, each row beside its own
/// class: on the toy data (`good` exactly when income is above 60 or the job is manager) the
/// encoded income separates the classes of the other jobs, in the CSV and in the Parquet file.
#[test]
fn test_encode_writes_the_rows_models_train_on() {
    let toy = toy();
    let dir = dir("encode");
    let read_csv = |path: &Path| -> (Vec<String>, Vec<Vec<f32>>) {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().split(',').map(String::from).collect();
        (header, lines.map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect())
    };
    let mut total = 0;
    for split in ["train", "test"] {
        let out = dir.join(format!("{split}.csv"));
        let o = toy.run("encode", &["--split", split, "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let (header, rows) = read_csv(&out);
        assert_eq!(header, ["income", "age", "job=clerk", "job=manager", "job=other", "y"]);
        assert!(rows.iter().flatten().all(|v| (0.0..=1.0).contains(v)), "{split}: values outside [0, 1]");
        let (mut bad, mut good) = (f32::NEG_INFINITY, f32::INFINITY);
        for r in rows.iter().filter(|r| r[3] == 0.0) {
            if r[5] == 1.0 { good = good.min(r[0]) } else { bad = bad.max(r[0]) }
        }
        assert!(bad < good, "{split}: the encoded income does not separate the classes ({bad} ≥ {good})");
        assert!(rows.iter().filter(|r| r[3] == 1.0).all(|r| r[5] == 1.0), "{split}: a manager is not `good`");
        total += rows.len();
    }
    assert_eq!(total, 400, "the two splits hold every row once");
    // The same test rows as Parquet.
    let out = dir.join("test.parquet");
    let o = toy.run("encode", &["--split", "test", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = std::fs::File::open(&out).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let mut rows: Vec<Vec<f32>> = Vec::new();
    for batch in reader {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float32Type, UInt64Type};
        let batch = batch.unwrap();
        for i in 0..batch.num_rows() {
            let mut row: Vec<f32> = (0..5).map(|c| batch.column(c).as_primitive::<Float32Type>().value(i)).collect();
            row.push(batch.column(5).as_primitive::<UInt64Type>().value(i) as f32);
            rows.push(row);
        }
    }
    assert_eq!(rows, read_csv(&dir.join("test.csv")).1, "Parquet and CSV hold the same test rows");
    // The data file itself as people (its class column ignored): the same rows as the two
    // splits together, each after its line; a row that cannot be read is named and left out.
    let mut text = std::fs::read_to_string(&toy.csv).unwrap();
    text.push_str("lots,30,clerk,0\n");
    let people = toy.file("encode", "people.csv", &text);
    let out = dir.join("people.csv");
    let o = toy.run("encode", &["--input", people.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("people.csv: line 402: feature `income`"), "{}", stderr(&o));
    let (header, mut encoded) = read_csv(&out);
    assert_eq!(header, ["line", "income", "age", "job=clerk", "job=manager", "job=other"]);
    assert_eq!(encoded.iter().map(|r| r[0] as usize).collect::<Vec<_>>(), (2..402).collect::<Vec<_>>());
    let mut splits: Vec<Vec<f32>> = ["train", "test"]
        .iter()
        .flat_map(|s| read_csv(&dir.join(format!("{s}.csv"))).1)
        .map(|r| r[..5].to_vec())
        .collect();
    let key = |a: &Vec<f32>, b: &Vec<f32>| {
        a.iter().zip(b).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    };
    let mut people_rows: Vec<Vec<f32>> = encoded.iter_mut().map(|r| r[1..].to_vec()).collect();
    people_rows.sort_by(key);
    splits.sort_by(key);
    assert_eq!(people_rows, splits, "a file's people are encoded as the data's rows are");
    for (args, code, needle) in [
        (vec!["--out", "rows.json"], 2, "CSV (.csv"),
        (vec!["--out", "no/such/dir/rows.csv"], 1, "no directory"),
        (vec!["--out", "rows.csv", "--model", "lr"], 2, "--model"),
        (vec!["--out", "rows.csv", "--input", "nope.csv"], 1, "nope.csv"),
    ] {
        let o = toy.run("encode", &args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

/// `cent schema` drafts a schema that the other commands read as it is; it does not overwrite
/// a file unless told to, and asks which outcome is favourable rather than guessing.
#[test]
fn test_a_drafted_schema_explains_a_row_as_written() {
    let d = dir("schema-draft");
    let csv = write(&d, "toy.csv", &toy_csv(300));
    let toml = d.join("toy.toml");
    let _ = std::fs::remove_file(&toml);
    let schema = |extra: &[&str]| {
        let mut args = vec!["schema", "--data", csv.to_str().unwrap(), "--target", "y"];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_cent")).args(&args).output().expect("the cent binary runs")
    };
    let o = schema(&["--favourable", "1", "--out", toml.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("target: y (2 classes: 0, 1; favourable 1)"), "{err}");
    assert!(err.contains("age (integer, immutable)") && err.contains("job (categorical)"), "{err}");
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(written.contains("file = \"toy.csv\""), "{written}");
    // The schema alone finds its file, trains and explains.
    let o = cent(&["explain", "--schema", toml.to_str().unwrap(), "--row", "0", "--format", "json"], &d.join("cache"));
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"fact\""), "{}", stdout(&o));
    // An existing file is kept; --force replaces it.
    let o = schema(&["--favourable", "1", "--out", toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    let o = schema(&["--favourable", "1", "--out", toml.to_str().unwrap(), "--force", "--quiet"]);
    assert!(o.status.success() && stderr(&o).is_empty(), "{}", stderr(&o));
    // No favourable outcome, or one the target does not hold: a usage error listing the values.
    for extra in [&[][..], &["--favourable", "yes"][..]] {
        let o = schema(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("`0`, `1`"), "{extra:?}: {}", stderr(&o));
    }
    // To stdout, the same schema.
    let o = schema(&["--favourable", "1", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).replace(csv.to_str().unwrap(), "toy.csv"), written);
}
