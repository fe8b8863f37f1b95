//! Downloaded datasets for the tests that need them. A missing dataset is fetched into the
//! shared cache ([`super::cache`]) by the test itself: once, even when tests of several threads
//! or binaries ask at the same time (the fetch holds `<cache>/<name>/.lock`; a finished one
//! is a no-op). A failed fetch fails the test, naming the cause. Only `CENT_OFFLINE=1` skips
//! such a test, explicitly, when its dataset is not already there.

use cent_host::data::fetch_ext::{EXT_DATASETS, fetch_ext};
use std::path::{Path, PathBuf};

/// The shared cache once `name` is in it, or `None` when `CENT_OFFLINE=1` and it is not.
///
/// # Panics
/// When the fetch fails (no network, no package client, a checksum mismatch).
pub fn fetched(name: &str) -> Option<PathBuf> {
    let cache = super::cache();
    if std::env::var("CENT_OFFLINE").as_deref() == Ok("1") {
        if present(name, &cache) {
            return Some(cache);
        }
        eprintln!("CENT_OFFLINE=1: skipping a test that needs `{name}`, which is not in {}", cache.display());
        return None;
    }
    let mut progress = |line: &str| eprintln!("{line}");
    let result = if EXT_DATASETS.contains(&name) {
        fetch_ext(name, &cache, &mut progress).map(drop).map_err(|e| e.to_string())
    } else {
        cent_host::data::fetch(name, &cache, &mut progress).map(drop).map_err(|e| e.to_string())
    };
    if let Err(e) = result {
        panic!(
            "fetching `{name}` into {} failed: {e}\n(.ci/setup.sh installs the download tools; CENT_OFFLINE=1 skips the tests that need downloaded data)",
            cache.display()
        );
    }
    Some(cache)
}

/// Whether `name` is already fetched into `cache` (the loaders' own test: the completion
/// marker, or every source file of the schema).
fn present(name: &str, cache: &Path) -> bool {
    let dir = cache.join(name);
    if EXT_DATASETS.contains(&name) {
        return dir.join(".complete").is_file();
    }
    cent_host::data::builtin_schema(name).is_ok_and(|s| s.sources.iter().all(|src| dir.join(&src.file).is_file()))
}
