//! Writes the synthetic dataset of 2,000 encoded columns that the wide data test uses:
//! `DIR/wide.csv` and `DIR/wide.toml` (default `DIR`: `/tmp/cent-wide`).
//!
//! ```text
//! cargo run -p cent-tests --example wide_data -- /tmp/cent-wide
//! cent evaluate --data /tmp/cent-wide/wide.csv --schema /tmp/cent-wide/wide.toml --factuals 20 --method cent
//! ```

#[path = "../tests/common/wide.rs"]
mod wide;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args().nth(1).map_or_else(|| PathBuf::from("/tmp/cent-wide"), PathBuf::from);
    let written = std::fs::create_dir_all(&dir).and_then(|()| wide::write(&dir));
    match written {
        Ok((csv, schema)) => {
            println!("wrote {} and {}", csv.display(), schema.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot write into {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
