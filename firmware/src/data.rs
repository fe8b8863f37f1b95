//! The data built into the image: the bundle and the query batch from `firmware/data/`
//! (regenerated on the host; see `firmware/README.md`). Both stay in flash and are read in place.

use core::hint::black_box;

/// The bundle the firmware explains with (`data/bundle.cent`).
static BUNDLE: &[u8] = include_bytes!("../data/bundle.cent");

/// The query batch (`data/queries.bin`, format in [`crate::queries`]).
static QUERIES: &[u8] = include_bytes!("../data/queries.bin");

// The accessors hide the contents from the optimizer: with fat LTO every input of the program
// is a compile-time constant, and the work must happen on the device, as it would with a
// bundle flashed separately, not at build time.

/// The bundle the firmware explains with.
pub fn bundle() -> &'static [u8] {
    black_box(BUNDLE)
}

/// The embedded query batch.
pub fn queries() -> &'static [u8] {
    black_box(QUERIES)
}

/// The bundle with one bit flipped (see [`CORRUPT_BYTE`]).
pub fn corrupt_bundle() -> &'static [u8] {
    black_box(&CORRUPT_BUNDLE)
}

/// The byte of the corrupt bundle whose lowest bit is flipped: the middle of the payload, so the
/// header still parses and the damage must be caught by the checksum.
pub const CORRUPT_BYTE: usize = BUNDLE_LEN / 2;

const BUNDLE_LEN: usize = include_bytes!("../data/bundle.cent").len();

/// The bundle with one bit flipped, computed at compile time so it also lives in flash
/// (a RAM copy of a bundle would not fit next to the explainer).
static CORRUPT_BUNDLE: [u8; BUNDLE_LEN] = flip_bit(*include_bytes!("../data/bundle.cent"), CORRUPT_BYTE);

const fn flip_bit<const N: usize>(mut bytes: [u8; N], at: usize) -> [u8; N] {
    bytes[at] ^= 1;
    bytes
}
