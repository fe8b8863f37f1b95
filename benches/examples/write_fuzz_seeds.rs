//! Writes the seed corpus of the `bundle` fuzz target (see `cent_benches::seeds`).
//!
//! `cargo run -p cent-benches --example write_fuzz_seeds [DIR]`; `DIR` defaults to
//! `fuzz/corpus/bundle` of this checkout.

use cent_benches::seeds;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let default = || Path::new(env!("CARGO_MANIFEST_DIR")).join(seeds::CORPUS_DIR);
    let dir = std::env::args_os().nth(1).map_or_else(default, PathBuf::from);
    match write_all(&dir) {
        Ok(n) => {
            println!("wrote {n} seeds to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_all(dir: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let files = seeds::files()?;
    for (name, bytes) in &files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("{:>7} bytes  {}", bytes.len(), path.display());
    }
    Ok(files.len())
}
