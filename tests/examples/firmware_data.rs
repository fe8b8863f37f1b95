//! Writes the firmware's embedded data: `firmware/data/bundle.cent` and `firmware/data/queries.bin`
//! (format in `firmware/src/queries.rs`: a u32 LE column count, then f32 LE rows).
//!
//! ```text
//! cargo run -p cent-tests --example firmware_data -- synthetic [--queries N] [--seed S] [DIR]
//! cargo run -p cent-tests --example firmware_data -- wrap BUNDLE ROWS OUT
//! ```
//!
//! `synthetic` writes a seeded Adult-shaped synthetic bundle (12 features, 32 anchors, trees of
//! depth 8 and at most 63 nodes, encoder columns → 25 → 8, classifier columns → 13 → 2) and `N`
//! random valid queries into `DIR` (default `firmware/data`). `wrap` prepends the column count of
//! `BUNDLE`'s schema to a headerless row file (what `cent export --queries-out` writes) after
//! checking that its length is whole rows.

use cent_benches::synthetic::{Spec, Synthetic, random_point};
use cent_nostd::bundle::Bundle;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The synthetic model's shape: Adult's feature count and the exporter's default atlas.
const SPEC: Spec = Spec {
    name: "synthetic adult-shaped",
    features: 12,
    classes: 2,
    depth: 8,
    max_nodes: 63,
    anchors: 32,
    hidden: 25,
    latent: 8,
    classifier_hidden: Some(13),
};

const USAGE: &str =
    "usage: firmware_data synthetic [--queries N] [--seed S] [DIR]\n       firmware_data wrap BUNDLE ROWS OUT";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("synthetic") => synthetic(&args[1..]),
        Some("wrap") => wrap(&args[1..]),
        _ => Err(USAGE.into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `synthetic [--queries N] [--seed S] [DIR]`.
fn synthetic(args: &[String]) -> Result<()> {
    let (mut queries, mut seed, mut dir) = (48usize, 7u64, default_dir());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--queries" => queries = value(it.next(), "--queries")?,
            "--seed" => seed = value(it.next(), "--seed")?,
            other if !other.starts_with('-') => dir = PathBuf::from(other),
            other => return Err(format!("unknown option {other}\n{USAGE}").into()),
        }
    }
    let model = Synthetic::generate(&SPEC, seed)?;
    let bundle = model.to_bytes()?;
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed.wrapping_add(1));
    let rows: Vec<f32> = (0..queries).flat_map(|_| random_point(&mut rng, model.schema())).collect();
    write(&dir.join("bundle.cent"), &bundle)?;
    write(&dir.join("queries.bin"), &batch(model.schema().columns(), &rows))?;
    println!("{queries} queries of {} columns, seed {seed}", model.schema().columns());
    Ok(())
}

/// `wrap BUNDLE ROWS OUT`.
fn wrap(args: &[String]) -> Result<()> {
    let [bundle, rows, out] = args else { return Err(USAGE.into()) };
    let bundle_bytes = read(Path::new(bundle))?;
    let columns = Bundle::from_bytes(&bundle_bytes).map_err(|e| format!("{bundle}: {e}"))?.schema.columns();
    let raw = read(Path::new(rows))?;
    if raw.is_empty() || raw.len() % (4 * columns) != 0 {
        return Err(format!("{rows}: {} bytes are not whole rows of {columns} f32 columns", raw.len()).into());
    }
    let values: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    write(Path::new(out), &batch(columns, &values))?;
    println!("{} queries of {columns} columns", values.len() / columns);
    Ok(())
}

/// The batch file: the column count, then the rows.
fn batch(columns: usize, rows: &[f32]) -> Vec<u8> {
    let mut bytes = (columns as u32).to_le_bytes().to_vec();
    bytes.extend(rows.iter().flat_map(|v| v.to_le_bytes()));
    bytes
}

fn value<T: std::str::FromStr>(arg: Option<&String>, name: &str) -> Result<T> {
    arg.and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a number").into())
}

fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/data")
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()).into())
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("wrote {} ({} bytes)", path.display(), bytes.len());
    Ok(())
}
