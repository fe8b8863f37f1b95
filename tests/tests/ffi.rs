//! The C API from C, on the host and on the Cortex-M4F.
//!
//! `cent-ffi/tests/c/parity.c` explains the firmware's bundle and query batch through the C
//! API and prints canonical lines, then exercises the API's refusals:
//!
//! - on the host, built with gcc against `libcent_ffi.a`, its output must equal a native Rust
//!   run of the core under the same protocol (the lines the Rust firmware prints, plus the
//!   constrained runs) and the statuses the Rust side names;
//! - on the device, `firmware/c-example` (arm-none-eabi-gcc, newlib-nano, the staticlib for
//!   `thumbv7em-none-eabihf`) runs the same program in QEMU, and its output must equal the host
//!   program's byte for byte.
//!
//! Needs gcc, and for the device arm-none-eabi-gcc with newlib, make and qemu-system-arm
//! (`.ci/setup.sh` installs them); without them the tests fail and say what to install.
//! `CENT_SKIP_QEMU=1` skips the device test explicitly, as it does the Rust firmware's.

// The very parser the Rust firmware uses for `firmware/data/queries.bin`.
#[path = "../../firmware/src/queries.rs"]
mod queries;

use cent_ffi::CentStatus;
use cent_nostd::atlas::{CONFIRM_LEAD, Counterfactual, Explainer, Line, Options};
use cent_nostd::bundle::Bundle;
use cent_nostd::schema::{Mutability, Query};
use queries::Queries;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

const QEMU_TIMEOUT: &str = "120";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The nested builds' own target dir: the outer `cargo test` holds the lock on its own.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cent-ffi")
}

fn data(name: &str) -> PathBuf {
    root().join("firmware/data").join(name)
}

/// Fails the test, naming what to install, when `tool` does not run.
fn require(tool: &str, install: &str) {
    let ok = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(ok, "{tool} not found: {install}");
}

/// Builds `libcent_ffi.a` with `args` and returns its path under `profile_dir`.
fn staticlib(args: &[&str], profile_dir: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root())
        .args(["build", "-p", "cent-ffi", "--locked", "--lib"])
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir())
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "cargo build of cent-ffi {args:?} failed ({status})");
    target_dir().join(profile_dir).join("libcent_ffi.a")
}

fn run(command: &mut Command, what: &str) -> Output {
    let output = command.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what} failed ({}):\n{stderr}", output.status);
    output
}

/// The host program's output, built and run once for both tests.
fn host_output() -> &'static str {
    static OUTPUT: OnceLock<String> = OnceLock::new();
    OUTPUT.get_or_init(|| {
        let exe = target_dir().join("cent-host");
        gcc(&["host.c", "parity.c"], &exe);
        let out = run(Command::new(&exe).arg(data("bundle.cent")).arg(data("queries.bin")), "the host C program");
        String::from_utf8(out.stdout).expect("the C program prints ASCII")
    })
}

/// Compiles C `sources` (in `cent-ffi/tests/c`) with gcc against the host staticlib.
fn gcc(sources: &[&str], exe: &Path) {
    let c = root().join("cent-ffi/tests/c");
    let lib = host_staticlib();
    let mut gcc = Command::new("gcc");
    gcc.args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(root().join("cent-ffi/include"))
        .arg("-o")
        .arg(exe)
        .args(sources.iter().map(|s| c.join(s)))
        .arg(lib)
        // What std needs (`cargo rustc -p cent-ffi --crate-type staticlib -- --print native-static-libs`).
        .args(["-lpthread", "-ldl", "-lm"]);
    run(&mut gcc, "gcc (host C test)");
}

/// `libcent_ffi.a` for the host, built once.
fn host_staticlib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        require("gcc", "install gcc (Debian: build-essential)");
        staticlib(&[], "debug")
    })
}

/// What parity.c must print, computed natively with the core (the `q=` and `c q=` lines) and
/// with the Rust side of the API (the statuses).
fn expected() -> String {
    let bundle_bytes = std::fs::read(data("bundle.cent")).expect("cannot read firmware/data/bundle.cent");
    let batch_bytes = std::fs::read(data("queries.bin")).expect("cannot read firmware/data/queries.bin");
    let bundle = Bundle::from_bytes(&bundle_bytes).expect("valid bundle");
    let batch = Queries::from_bytes(&batch_bytes).expect("valid batch");
    let mut text = String::new();
    // The firmware protocol: seed i, default options and query, three answers.
    let query = bundle.schema.default_query();
    for i in 0..batch.len() {
        text += &line::<3>(&bundle, &batch, i, "", i as u64, &query, Options::default());
    }
    text += &format!("done queries={}\n", batch.len());
    // parity.c's constrained runs: features 0 and 1 immutable, cost 1 + j/4, two answers.
    let mut query = bundle.schema.default_query();
    query.mutability[..2].fill(Mutability::Immutable);
    for (j, c) in query.cost.iter_mut().enumerate().take(bundle.schema.features().len()) {
        *c = 1.0 + 0.25 * j as f32;
    }
    let options = Options { desired: None, max_search: 20, lead: CONFIRM_LEAD, ..Options::default() };
    for i in 0..batch.len().min(8) {
        text += &line::<2>(&bundle, &batch, i, "c ", 1000 + i as u64, &query, options);
    }
    use CentStatus as S;
    let statuses = [
        ("bad-magic", S::BadMagic),
        ("bad-version", S::BadVersion),
        ("truncated", S::BadLength),
        ("corrupted", S::BadChecksum),
        ("malformed", S::Malformed),
        ("null-bytes", S::NullPointer),
        ("null-storage", S::NullPointer),
        ("not-open", S::NotOpen),
        ("not-open-info", S::NotOpen),
        ("null-query", S::NullPointer),
        ("null-options", S::NullPointer),
        ("null-scratch", S::NullPointer),
        ("short-query", S::QueryLength),
        ("no-result", S::NoResult),
        ("overlap", S::Overlap),
        ("zero-answers", S::InvalidOptions),
        ("unknown-feature", S::InvalidOptions),
        ("unknown-class", S::Target),
        ("nan-query", S::QueryValue),
        ("explained", S::Ok),
        ("answer-index", S::Index),
        ("null-answer", S::NullPointer),
    ];
    for (name, s) in statuses {
        text += &format!("status {name}: {} {}\n", s as i32, describe(s as i32));
    }
    text += &format!("status unknown: 99 {}\nstatus negative: -1 {}\n", describe(99), describe(-1));
    text + "failures=0\n"
}

/// What `cent_status_str(status)` returns, read on the Rust side.
fn describe(status: i32) -> &'static str {
    cent_ffi::describe(status).to_str().expect("ASCII")
}

/// One canonical line: query `i` explained natively with at most `K` answers.
fn line<const K: usize>(
    bundle: &Bundle<'_>,
    batch: &Queries<'_>,
    i: usize,
    prefix: &str,
    seed: u64,
    query: &Query,
    options: Options,
) -> String {
    let mut x = vec![0.0f32; batch.columns()];
    batch.read(i, &mut x).expect("row in range");
    let mut explainer: Box<Explainer> = Box::default();
    let mut out: heapless::Vec<Counterfactual, K> = heapless::Vec::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    let outcome = explainer.explain(&bundle.model(), &x, query, options, &mut rng, &mut out);
    let outcome = outcome.as_ref().map(|s| (s, out.as_slice())).map_err(|e| *e);
    format!("{prefix}{}\n", Line { index: i as u32, outcome })
}

/// Fails with the first differing line rather than two walls of hex.
fn assert_same_lines(found: &str, expected: &str, what: &str) {
    for (k, (f, e)) in found.lines().zip(expected.lines()).enumerate() {
        assert_eq!(f, e, "{what}: line {} differs\n    found: {f}\n expected: {e}", k + 1);
    }
    assert_eq!(found.lines().count(), expected.lines().count(), "{what}: output:\n{found}");
    assert_eq!(found, expected, "{what}: same lines, different bytes (line endings?)");
}

#[test]
fn test_host_c_program_matches_native_run() {
    let expected = expected();
    let answers = expected.lines().filter(|l| l.contains(" | leaf=")).count();
    assert!(answers > 8, "few queries found a counterfactual natively: the comparison would be weak");
    assert_same_lines(host_output(), &expected, "host C program");
}

/// The README's C example is `tests/c/example.c`, verbatim, and it compiles and runs.
#[test]
fn test_readme_example_compiles_and_runs() {
    let example = std::fs::read_to_string(root().join("cent-ffi/tests/c/example.c")).expect("example.c");
    let readme = std::fs::read_to_string(root().join("cent-ffi/README.md")).expect("cent-ffi/README.md");
    assert!(readme.contains(&example), "cent-ffi/README.md must hold tests/c/example.c verbatim");
    let exe = target_dir().join("cent-example");
    gcc(&["example.c", "example_main.c"], &exe);
    let out = run(Command::new(&exe).arg(data("bundle.cent")).arg(data("queries.bin")), "the README example");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("class 1 at cost "), "unexpected output: {text}");
}

#[test]
fn test_c_firmware_output_equals_host_c_output_byte_for_byte() {
    if std::env::var("CENT_SKIP_QEMU").as_deref() == Ok("1") {
        eprintln!("CENT_SKIP_QEMU=1: skipping the C firmware test");
        return;
    }
    let install = "run .ci/setup.sh as root (Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi make qemu-system-arm)";
    for tool in ["arm-none-eabi-gcc", "arm-none-eabi-size", "make", "qemu-system-arm"] {
        require(tool, install);
    }
    let lib = staticlib(
        &["--profile", "ffi-device", "--target", "thumbv7em-none-eabihf"],
        "thumbv7em-none-eabihf/ffi-device",
    );
    let out = target_dir().join("c-example");
    let mut make = Command::new("make");
    make.arg("-C").arg(root().join("firmware/c-example")).arg(format!("OUT={}", out.display()));
    run(make.arg(format!("CENT_LIB={}", lib.display())), "make (firmware/c-example)");
    let elf = out.join("cent-c.elf");
    let size = run(Command::new("arm-none-eabi-size").arg(&elf), "arm-none-eabi-size");
    eprintln!("{}", String::from_utf8_lossy(&size.stdout));
    let qemu = Command::new("timeout")
        .arg(QEMU_TIMEOUT)
        .args(["qemu-system-arm", "-cpu", "cortex-m4", "-machine", "mps2-an386", "-nographic"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(&elf)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run timeout/qemu-system-arm");
    assert_ne!(qemu.status.code(), Some(124), "QEMU timed out after {QEMU_TIMEOUT} s");
    let stdout = String::from_utf8_lossy(&qemu.stdout);
    let stderr = String::from_utf8_lossy(&qemu.stderr);
    assert!(qemu.status.success(), "C firmware exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}", qemu.status);
    assert_same_lines(&stdout, host_output(), "C firmware in QEMU against the host C program");
}
