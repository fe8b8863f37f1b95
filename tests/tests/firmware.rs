//! Firmware parity under QEMU: the Cortex-M4F firmware (`firmware/`, its own workspace) must
//! print, for the embedded bundle and query batch, exactly the lines this host computes with the
//! same `cent-nostd` code natively — bit for bit, since every float is printed as its bits.
//!
//! Needs `qemu-system-arm` (install with `.ci/setup.sh`). Without it these tests fail, unless
//! `CENT_SKIP_QEMU=1` asks explicitly to skip them.

// The very parser the firmware uses for `firmware/data/queries.bin`.
#[path = "../../firmware/src/queries.rs"]
mod queries;

use cent_nostd::atlas::{Counterfactual, Explainer, Line, Options};
use cent_nostd::bundle::Bundle;
use queries::Queries;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const QEMU: &str = "qemu-system-arm";
/// Seconds before a hung firmware run is killed (a normal run takes well under one).
const QEMU_TIMEOUT: &str = "120";
/// Results per query: the firmware's `batch::RESULTS`.
const RESULTS: usize = 3;

fn firmware_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware")
}

fn data(name: &str) -> Vec<u8> {
    let path = firmware_dir().join("data").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// True when QEMU runs; false only when skipping was asked for; otherwise fails the test.
fn qemu_or_skip() -> bool {
    let found = Command::new(QEMU).arg("--version").output().is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var("CENT_SKIP_QEMU").as_deref() == Ok("1") {
        eprintln!("CENT_SKIP_QEMU=1: skipping the firmware test ({QEMU} not found)");
        return false;
    }
    panic!("{QEMU} not found: run .ci/setup.sh (as root) to install QEMU, or set CENT_SKIP_QEMU=1 to skip explicitly");
}

/// Builds the firmware's binaries (release) and returns the path of `bin`.
///
/// Cargo runs from `firmware/` because its `.cargo/config.toml` (target, runner) is only read
/// from that directory; the target dir is pinned so a host-side `CARGO_TARGET_DIR` is not reused.
fn build(bin: &str) -> PathBuf {
    let dir = firmware_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&dir)
        .args(["build", "--release", "--locked", "--bins"])
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "firmware build failed ({status})");
    dir.join("target/thumbv7em-none-eabihf/release").join(bin)
}

/// Runs an ELF on the mps2-an386 (Cortex-M4F) machine with semihosting on the host's stdio.
fn run_qemu(elf: &Path) -> Output {
    let output = Command::new("timeout")
        .arg(QEMU_TIMEOUT)
        .args([QEMU, "-cpu", "cortex-m4", "-machine", "mps2-an386", "-nographic"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(elf)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run timeout/qemu-system-arm");
    assert_ne!(output.status.code(), Some(124), "QEMU timed out after {QEMU_TIMEOUT} s");
    output
}

/// What the firmware must print: the same protocol run natively (query `i` seeded with `i`,
/// default options and query, at most [`RESULTS`] results), one canonical `Line` each.
fn native_output(bundle_bytes: &[u8], batch_bytes: &[u8]) -> String {
    let bundle = Bundle::from_bytes(bundle_bytes).expect("firmware/data/bundle.cent is not a valid bundle");
    let batch = Queries::from_bytes(batch_bytes).expect("firmware/data/queries.bin is malformed");
    assert_eq!(batch.columns(), bundle.schema.columns(), "queries and bundle disagree on columns");
    let (model, query) = (bundle.model(), bundle.schema.default_query());
    let mut explainer: Box<Explainer> = Box::default();
    let mut out: heapless::Vec<Counterfactual, RESULTS> = heapless::Vec::new();
    let mut x = vec![0.0f32; batch.columns()];
    let mut text = String::new();
    for i in 0..batch.len() {
        batch.read(i, &mut x).expect("row in range");
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(i as u64);
        let outcome = explainer.explain(&model, &x, &query, Options::default(), &mut rng, &mut out);
        let outcome = outcome.as_ref().map(|s| (s, out.as_slice())).map_err(|e| *e);
        text += &format!("{}\n", Line { index: i as u32, outcome });
    }
    text + &format!("done queries={}\n", batch.len())
}

/// Fails with the first differing line rather than two walls of hex.
fn assert_same_lines(device: &str, host: &str) {
    for (k, (d, h)) in device.lines().zip(host.lines()).enumerate() {
        assert_eq!(d, h, "line {} differs\n device: {d}\n   host: {h}", k + 1);
    }
    assert_eq!(device.lines().count(), host.lines().count(), "device output:\n{device}");
    assert_eq!(device, host, "same lines, different line endings");
}

#[test]
fn test_firmware_matches_native_run_bit_for_bit() {
    if !qemu_or_skip() {
        return;
    }
    let expected = native_output(&data("bundle.cent"), &data("queries.bin"));
    let found = expected.lines().filter(|l| l.contains(" | leaf=")).count();
    assert!(found > 0, "no query found a counterfactual natively: the comparison would be vacuous");
    let run = run_qemu(&build("firmware"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "firmware exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}", run.status);
    assert_same_lines(&stdout, &expected);
    assert!(stderr.contains("memory static_ram="), "no memory report on stderr: {stderr}");
}

#[test]
fn test_corrupt_bundle_is_refused_with_reason() {
    if !qemu_or_skip() {
        return;
    }
    // The `corrupt` binary flips the lowest bit of the middle byte (firmware/src/data.rs).
    let mut bytes = data("bundle.cent");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    let reason = Bundle::from_bytes(&bytes).expect_err("a flipped bit must be rejected on the host too");
    let run = run_qemu(&build("corrupt"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "stdout:\n{stdout}");
    assert_eq!(stdout, format!("error: bundle: {reason}\n"));
}

#[test]
fn test_native_output_has_one_line_per_query() {
    let batch = data("queries.bin");
    let n = Queries::from_bytes(&batch).expect("valid batch").len();
    let text = native_output(&data("bundle.cent"), &batch);
    assert!(n > 0, "empty query batch");
    assert_eq!(text.lines().count(), n + 1);
    assert!(text.starts_with("q=0 ") && text.ends_with(&format!("done queries={n}\n")), "{text}");
}
