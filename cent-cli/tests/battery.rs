//! A battery of malformed inputs a new user might give `cent`: each must end without a panic,
//! with the expected exit code (1 error, 2 usage), and name the place on stderr.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Output;

/// What a case changes of the good toy setup.
enum Input {
    /// The CSV text (explained with `--row 0`).
    Csv(fn(String) -> String),
    /// The schema text (explained with `--row 0`).
    Schema(fn(&str) -> String),
    /// A query file `name` with this content.
    Query(&'static str, &'static str),
    /// Flags after `explain --data .. --schema ..`.
    Flags(&'static [&'static str]),
    /// A whole command line (after `cent`), on the shared cache.
    Command(&'static [&'static str]),
}

struct Case {
    name: &'static str,
    input: Input,
    /// The exit code; `None` for "success or not found" (0 or 3).
    code: Option<i32>,
    /// Substrings stderr must contain.
    needles: &'static [&'static str],
}

const fn case(name: &'static str, input: Input, code: i32, needles: &'static [&'static str]) -> Case {
    Case { name, input, code: Some(code), needles }
}

fn line(csv: String, n: usize, text: &str) -> String {
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    lines[n - 1] = text.to_string();
    lines.join("\n") + "\n"
}

fn cases() -> Vec<Case> {
    use Input::*;
    vec![
        // Malformed CSV.
        case("csv-bad-number", Csv(|c| line(c, 5, "12x,30,clerk,0")), 1, &["toy.csv", ":5", "income", "12x"]),
        case("csv-extra-field", Csv(|c| line(c, 4, "10,30,clerk,0,9")), 1, &["toy.csv", ":4", "fields"]),
        case("csv-missing-field", Csv(|c| line(c, 6, "10,30,clerk")), 1, &["toy.csv", ":6", "fields"]),
        case("csv-empty", Csv(|_| String::new()), 1, &["toy.csv", "empty"]),
        case("csv-header-only", Csv(|_| "income,age,job,y\n".into()), 1, &["toy.csv", "no rows"]),
        case("csv-no-target", Csv(|c| c.replace(",y\n", ",label\n")), 1, &["toy.csv", "`y`"]),
        case("csv-unknown-class", Csv(|c| line(c, 7, "10,30,clerk,2")), 1, &["toy.csv", ":7", "`y`", "`2`"]),
        case("csv-missing-feature", Csv(|c| c.replacen("income,", "salary,", 1)), 1, &["toy.csv", "income"]),
        case(
            "csv-unknown-category",
            Csv(|c| line(c, 3, "10,30,astronaut,0")),
            1,
            &["toy.csv", ":3", "job", "astronaut"],
        ),
        case("csv-fractional-integer", Csv(|c| line(c, 8, "10,30.5,clerk,0")), 1, &["toy.csv", ":8", "age", "30.5"]),
        case("csv-unterminated-quote", Csv(|c| line(c, 9, "10,30,\"clerk,0")), 1, &["toy.csv"]),
        case("csv-few-rows", Csv(|c| c.lines().take(3).collect::<Vec<_>>().join("\n") + "\n"), 1, &["toy"]),
        case("csv-one-class", Csv(|c| c.replace(",1\n", ",0\n")), 1, &["toy", "class"]),
        Case {
            name: "csv-bom-crlf",
            input: Csv(|c| format!("\u{feff}{}", c.replace('\n', "\r\n"))),
            code: None,
            needles: &[],
        },
        // Malformed schema.
        case(
            "schema-unknown-kind",
            Schema(|s| s.replace("kind = \"continuous\"", "kind = \"float\"")),
            1,
            &["toy.toml", "float"],
        ),
        case("schema-missing-name", Schema(|s| s.replace("name = \"toy\"", "")), 1, &["toy.toml", "name"]),
        case(
            "schema-duplicate-feature",
            Schema(|s| s.replace("name = \"age\"", "name = \"income\"")),
            1,
            &["toy.toml", "income", "twice"],
        ),
        case(
            "schema-bad-range",
            Schema(|s| s.replace("kind = \"continuous\"", "kind = \"continuous\"\nrange = [\"a\", 1]")),
            1,
            &["toy.toml", "range"],
        ),
        case(
            "schema-range-reversed",
            Schema(|s| s.replace("kind = \"continuous\"", "kind = \"continuous\"\nrange = [100, 0]")),
            1,
            &["toy.toml", "income", "range"],
        ),
        case(
            "schema-range-excludes-data",
            Schema(|s| s.replace("kind = \"continuous\"", "kind = \"continuous\"\nrange = [0, 50]")),
            1,
            &["toy.csv", "income", "outside"],
        ),
        case(
            "schema-favourable-not-a-class",
            Schema(|s| s.replace("favourable = \"good\"", "favourable = \"great\"")),
            1,
            &["toy.toml", "favourable", "great"],
        ),
        case(
            "schema-unknown-mutability",
            Schema(|s| s.replace("\"immutable\"", "\"frozen\"")),
            1,
            &["toy.toml", "frozen"],
        ),
        case("schema-not-toml", Schema(|_| "this is { not toml".into()), 1, &["toy.toml"]),
        case(
            "schema-one-class",
            Schema(|s| s.replace(", { name = \"good\", values = [\"1\"] }", "")),
            1,
            &["toy.toml", "target.classes"],
        ),
        case(
            "schema-no-features",
            Schema(|s| s[..s.find("[[feature]]").unwrap()].to_string()),
            1,
            &["toy.toml", "feature"],
        ),
        case(
            "schema-empty-categories",
            Schema(|s| s.replace("categories = [\"clerk\", \"manager\", \"other\"]", "categories = []")),
            1,
            &["toy.toml", "job"],
        ),
        case("schema-typo-field", Schema(|s| s.replace("mutability =", "mutabilty =")), 1, &["toy.toml", "mutabilty"]),
        // Malformed query files.
        case("query-not-json", Query("q.json", "{\"income\": 10,"), 1, &["q.json", "JSON"]),
        case("query-scalar", Query("q.json", "42"), 1, &["q.json", "object"]),
        case("query-empty-array", Query("q.json", "[]"), 1, &["q.json", "no query rows"]),
        case(
            "query-text-for-number",
            Query("q.json", r#"{"income": "rich", "age": 30, "job": "clerk"}"#),
            1,
            &["q.json query 1", "income", "rich"],
        ),
        case(
            "query-array-value",
            Query("q.json", r#"{"income": [1], "age": 30, "job": "clerk"}"#),
            1,
            &["q.json query 1", "income", "array"],
        ),
        case(
            "query-null-value",
            Query("q.json", r#"{"income": null, "age": 30, "job": "clerk"}"#),
            1,
            &["q.json query 1", "income", "null"],
        ),
        case("query-not-an-object", Query("q.json", r#"[1, 2]"#), 1, &["q.json query 1", "object"]),
        case(
            "query-fractional-age",
            Query("q.json", r#"{"income": 10, "age": 30.5, "job": "clerk"}"#),
            1,
            &["q.json query 1", "age", "integer"],
        ),
        case(
            "query-out-of-range",
            Query("q.json", r#"{"income": 10, "age": 500, "job": "clerk"}"#),
            1,
            &["q.json query 1", "age", "500", "[20, 69]"],
        ),
        case(
            "query-negative",
            Query("q.json", r#"{"income": 10, "age": -5, "job": "clerk"}"#),
            1,
            &["q.json query 1", "age", "-5"],
        ),
        case(
            "query-unknown-category",
            Query("q.json", r#"{"income": 10, "age": 30, "job": "pilot"}"#),
            1,
            &["q.json query 1", "job", "pilot", "clerk"],
        ),
        case(
            "query-missing-key",
            Query("q.json", r#"{"income": 10, "age": 30}"#),
            1,
            &["q.json query 1", "missing", "job"],
        ),
        case(
            "query-typo-key",
            Query("q.json", r#"{"income": 10, "age": 30, "jobb": "clerk", "height": 180}"#),
            1,
            &["q.json query 1", "missing feature(s): job (`jobb` is given: a typo of `job`?)"],
        ),
        case("query-csv-bad-count", Query("q.csv", "income,age,job\n10,30,clerk\n10,30\n"), 1, &["q.csv", "line 3"]),
        case("query-csv-empty", Query("q.csv", ""), 1, &["q.csv"]),
        case("query-csv-header-only", Query("q.csv", "income,age,job\n"), 1, &["q.csv", "no query rows"]),
        case(
            "query-csv-duplicate-key",
            Query("q.csv", "income,age,job,age\n10,30,clerk,31\n"),
            1,
            &["q.csv query 1", "age", "twice"],
        ),
        Case {
            name: "query-csv-bom-crlf",
            input: Query("q.csv", "\u{feff}income,age,job,y\r\n10,30,clerk,0\r\n"),
            code: None,
            needles: &[],
        },
        case(
            "query-second-row-bad",
            Query("q.json", r#"[{"income": 10, "age": 30, "job": "clerk"}, {"income": 10, "age": 30, "job": "x"}]"#),
            1,
            &["q.json query 2", "job"],
        ),
        // Bad flags.
        case("flag-n-zero", Flags(&["--row", "0", "--n", "0"]), 2, &["--n 0"]),
        case("flag-k-zero", Flags(&["--row", "0", "--k", "0"]), 2, &["--k 0"]),
        case("flag-max-search-zero", Flags(&["--row", "0", "--max-search", "0"]), 2, &["--max-search 0"]),
        case(
            "flag-immutable-and-increase",
            Flags(&["--row", "0", "--immutable", "income", "--increase-only", "income"]),
            2,
            &["income", "--immutable", "--increase-only"],
        ),
        case(
            "flag-decrease-and-free",
            Flags(&["--row", "0", "--decrease-only", "income", "--free", "income"]),
            2,
            &["income", "--decrease-only", "--free"],
        ),
        case("flag-unknown-immutable", Flags(&["--row", "0", "--immutable", "height"]), 2, &["--immutable", "height"]),
        case("flag-cost-negative", Flags(&["--row", "0", "--cost", "income=-1"]), 2, &["--cost", "income=-1"]),
        case("flag-cost-nan", Flags(&["--row", "0", "--cost", "income=nan"]), 2, &["--cost", "income=nan"]),
        case("flag-cost-unknown", Flags(&["--row", "0", "--cost", "height=2"]), 2, &["--cost", "height"]),
        case("flag-cost-no-weight", Flags(&["--row", "0", "--cost", "income"]), 2, &["--cost", "income"]),
        case("flag-row-out-of-range", Flags(&["--row", "99999"]), 2, &["--row 99999", "out of range"]),
        case("flag-desired-unknown", Flags(&["--row", "0", "--desired", "astronaut"]), 2, &["--desired", "astronaut"]),
        case("flag-desired-index", Flags(&["--row", "0", "--desired", "7"]), 2, &["--desired", "7"]),
        case("flag-split-unknown", Flags(&["--row", "0", "--split", "dev"]), 2, &["--split", "dev"]),
        case("flag-row-and-query", Flags(&["--row", "0", "--query", "q.json"]), 2, &["--row", "--query"]),
        case("flag-onnx-missing", Flags(&["--row", "0", "--onnx", "nope.onnx"]), 1, &["nope.onnx"]),
        case(
            "flag-onnx-and-model",
            Flags(&["--row", "0", "--onnx", "m.onnx", "--model", "lr"]),
            2,
            &["--model", "--onnx"],
        ),
        case("flag-query-missing", Flags(&["--query", "nope.json"]), 1, &["nope.json"]),
        case("flag-unknown-dataset", Command(&["explain", "--dataset", "nope", "--row", "0"]), 2, &["nope", "adult"]),
        case("flag-data-without-schema", Command(&["explain", "--data", "x.csv", "--row", "0"]), 2, &["--schema"]),
        case("flag-schema-missing", Command(&["explain", "--schema", "nope.toml", "--row", "0"]), 1, &["nope.toml"]),
        case("flag-demo-count-zero", Command(&["demo", "--count", "0"]), 2, &["--count 0"]),
        case("flag-evaluate-factuals-zero", Command(&["evaluate", "--factuals", "0"]), 2, &["--factuals 0"]),
    ]
}

/// Runs one case; the CSV and schema cases in their own directory.
fn run(c: &Case) -> Output {
    let toy = toy();
    let own = |csv: String, schema: String| -> Vec<String> {
        let d = dir(&format!("battery-{}", c.name));
        let csv: PathBuf = write(&d, "toy.csv", &csv);
        let schema: PathBuf = write(&d, "toy.toml", &schema);
        let (csv, schema) = (csv.display().to_string(), schema.display().to_string());
        ["explain", "--data", &csv, "--schema", &schema, "--row", "0"].map(String::from).to_vec()
    };
    let args: Vec<String> = match &c.input {
        Input::Csv(f) => own(f(toy_csv(400)), SCHEMA.to_string()),
        Input::Schema(f) => own(toy_csv(400), f(SCHEMA)),
        Input::Query(name, text) => {
            let q = toy.file(&format!("battery-{}", c.name), name, text);
            let mut a = vec!["explain".to_string()];
            a.extend(toy.data_args());
            a.extend(["--query".to_string(), q.display().to_string()]);
            a
        }
        Input::Flags(flags) => {
            let mut a = vec!["explain".to_string()];
            a.extend(toy.data_args());
            a.extend(flags.iter().map(|s| s.to_string()));
            a
        }
        Input::Command(args) => args.iter().map(|s| s.to_string()).collect(),
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cent(&args, &toy.cache)
}

/// What is wrong with a case's outcome, if anything.
fn check(c: &Case, o: &Output) -> Option<String> {
    let err = stderr(o);
    let code = o.status.code();
    if code == Some(101) || err.contains("panicked") {
        return Some(format!("panicked: {err}"));
    }
    match c.code {
        Some(want) if code != Some(want) => return Some(format!("exit {code:?}, expected {want}: {err}")),
        None if !matches!(code, Some(0 | 3)) => return Some(format!("exit {code:?}, expected 0 or 3: {err}")),
        _ => {}
    }
    let missing: Vec<&str> = c.needles.iter().copied().filter(|n| !err.contains(n)).collect();
    (!missing.is_empty()).then(|| format!("stderr lacks {missing:?}: {err}"))
}

#[test]
fn test_battery_of_malformed_inputs() {
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    toy();
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|c| check(c, &run(c)).map(|e| format!("{}: {e}", c.name)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}
