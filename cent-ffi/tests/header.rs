//! `include/cent.h` is what cbindgen generates from this crate with `cbindgen.toml`: the
//! committed header can never drift from the exported functions, types and constants.
//!
//! Regenerate it with `CENT_BLESS=1 cargo test -p cent-ffi --test header`.

#![allow(clippy::expect_used, clippy::panic, reason = "a test: failing loudly is its job")]

use std::path::Path;

#[test]
fn test_committed_header_is_generated() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cannot read cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen cannot generate the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("header is UTF-8");
    let path = dir.join("include/cent.h");
    if std::env::var("CENT_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &generated).expect("cannot write include/cent.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed.lines().zip(generated.lines()).position(|(a, b)| a != b);
        let at = line.map_or("its length".to_string(), |l| format!("line {}", l + 1));
        panic!(
            "cent-ffi/include/cent.h differs from what cbindgen generates (first at {at}).\n\
             Regenerate it with: CENT_BLESS=1 cargo test -p cent-ffi --test header"
        );
    }
}
