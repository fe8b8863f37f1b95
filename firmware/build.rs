//! Puts `memory.x` on the linker's search path and adds cortex-m-rt's (and, with the `defmt`
//! feature, defmt's) linker scripts. Only for thumb targets, so host tooling still works.

use std::{env, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=data/bundle.cent");
    println!("cargo:rerun-if-changed=data/queries.bin");
    if !env::var("TARGET")?.starts_with("thumb") {
        return Ok(());
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    fs::copy("memory.x", out.join("memory.x"))?;
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=--nmagic");
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
    if env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
    }
    Ok(())
}
