//! Shared fixtures of the CLI tests: a toy dataset (CSV + schema), the `cent` binary, and one
//! trained model per test binary.

// Each test binary uses a different part of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A fresh directory under the target's temporary directory.
pub fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cent args --cache cache --quiet`.
pub fn cent(args: &[&str], cache: &Path) -> Output {
    cent_in(args, cache, None)
}

/// As [`cent`], with the working directory `cwd` when given.
pub fn cent_in(args: &[&str], cache: &Path, cwd: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cent"));
    c.args(args).arg("--cache").arg(cache).arg("--quiet");
    if let Some(cwd) = cwd {
        c.current_dir(cwd);
    }
    c.output().expect("the cent binary runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub const SCHEMA: &str = r#"
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

/// A learnable toy table: `good` when income is high or the job is manager. Ages 20..=69,
/// incomes 0..=99.
pub fn toy_csv(rows: usize) -> String {
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

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A person the toy model refuses (low income, clerk).
pub const REFUSED: &str = r#"{"income": 10, "age": 30, "job": "clerk"}"#;
/// A person the toy model accepts (high income, manager).
pub const ACCEPTED: &str = r#"{"income": 95, "age": 30, "job": "manager"}"#;

/// The toy dataset with its models trained once per test binary.
pub struct Toy {
    pub dir: PathBuf,
    pub csv: PathBuf,
    pub schema: PathBuf,
    pub cache: PathBuf,
}

impl Toy {
    /// `--data toy.csv --schema toy.toml`.
    pub fn data_args(&self) -> Vec<String> {
        vec!["--data".into(), self.csv.display().to_string(), "--schema".into(), self.schema.display().to_string()]
    }

    /// Runs `cent <command> --data .. --schema .. <rest>` on the shared cache.
    pub fn run(&self, command: &str, rest: &[&str]) -> Output {
        let data = self.data_args();
        let mut args: Vec<&str> = vec![command];
        args.extend(data.iter().map(String::as_str));
        args.extend_from_slice(rest);
        cent(&args, &self.cache)
    }

    /// Writes `text` as `name` into a fresh directory for one case.
    pub fn file(&self, case: &str, name: &str, text: &str) -> PathBuf {
        write(&dir(&format!("{}-{case}", crate_dir())), name, text)
    }
}

fn crate_dir() -> String {
    format!("toy-{}", env!("CARGO_CRATE_NAME"))
}

/// The shared toy dataset, trained on first use (`cent train`, a second or two).
pub fn toy() -> &'static Toy {
    static TOY: OnceLock<Toy> = OnceLock::new();
    TOY.get_or_init(|| {
        let d = dir(&crate_dir());
        let toy = Toy {
            csv: write(&d, "toy.csv", &toy_csv(400)),
            schema: write(&d, "toy.toml", SCHEMA),
            cache: d.join("cache"),
            dir: d,
        };
        let o = toy.run("train", &[]);
        assert!(o.status.success(), "training the toy models: {}", stderr(&o));
        toy
    })
}

/// No panic: exit code not 101 and no panic message.
pub fn assert_no_panic(o: &Output) {
    let err = stderr(o);
    assert_ne!(o.status.code(), Some(101), "exit 101 (a panic): {err}");
    assert!(!err.contains("panicked"), "a panic: {err}");
}
