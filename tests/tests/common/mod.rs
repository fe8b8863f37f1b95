//! Fixtures shared by the integration tests: the model cache and the Adult MLP artifacts.
//!
//! Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

pub mod datasets;
pub mod wide;

use cent_host::artifacts::{Artifacts, Setup, Source};
use cent_host::blackbox::ModelKind;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Seed of the split, the training and the explainers in these tests.
pub const SEED: u64 = 1;

/// The repository's cache (`data/cache`, or `$CENT_CACHE`), shared with the CLI: models trained
/// once are reused by later runs, as every `cent` command does.
pub fn cache() -> PathBuf {
    match std::env::var_os("CENT_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data").join("cache"),
    }
}

/// The embedded Adult data with its MLP and VAE (seed [`SEED`]), loaded or trained once per
/// test binary.
pub fn adult() -> &'static Artifacts {
    static A: OnceLock<Artifacts> = OnceLock::new();
    A.get_or_init(|| {
        let setup =
            Setup { source: Source::Builtin("adult".into()), model: Some(ModelKind::Mlp), cache: cache(), seed: SEED };
        setup.load().expect("adult artifacts load or train")
    })
}
