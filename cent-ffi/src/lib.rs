//! `cent-ffi`: the C API of the `cent-nostd` core, for firmware written in C.
//!
//! Everything lives in storage the caller owns: the opened bundle ([`CentBundle`]), the
//! explainer's working memory ([`CentScratch`]) and one explanation's outcome ([`CentResult`])
//! are plain, fixed-size C structs (their sizes are constants, so `static` storage works and
//! nothing is allocated). Every function returns a [`CentStatus`]; [`cent_status_str`] says
//! what each one means. The header `include/cent.h` is generated from this crate by cbindgen
//! (`cbindgen.toml`); `tests/header.rs` fails when the committed copy is out of date.
//!
//! Architecture invariant: no panic crosses the C boundary. Every pointer is checked for null,
//! alignment and overlap, every length and index against its capacity, and the core returns
//! errors rather than panicking; the crate denies indexing, `unwrap` and arithmetic that could
//! panic. Should a panic happen all the same, it stops there: on the host an `extern "C"`
//! function aborts instead of unwinding, and on a bare-metal target the panic handler executes
//! a permanently undefined instruction (a fault the firmware's fault handler sees).
//!
//! ```
//! use cent_ffi::*;
//!
//! let mut bundle = CentBundle::zeroed();
//! let bytes = b"not a bundle";
//! // SAFETY: the pointers come from live Rust values of the right types and lengths.
//! let status = unsafe { cent_bundle_open(&mut bundle, bytes.as_ptr(), bytes.len()) };
//! assert_eq!(status, CentStatus::BadMagic);
//! ```
#![no_std]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic))]
#![cfg_attr(test, allow(clippy::arithmetic_side_effects, unsafe_code, clippy::undocumented_unsafe_blocks))]

// A staticlib needs a panic runtime. On an operating system it is std's (the host C test links
// `libcent_ffi.a` with gcc); on bare metal it is the handler below.
#[cfg(any(test, not(target_os = "none")))]
extern crate std;

mod api;
mod boundary;
mod options;
mod outcome;
mod status;
mod storage;

pub use api::*;
pub use options::{CentOptions, cent_options_default};
pub use outcome::{CentAnswer, CentNotFound, CentSummary};
pub use status::{CentStatus, cent_status_str, describe};
pub use storage::{CentBundle, CentResult, CentScratch, cent_bundle_size, cent_result_size, cent_scratch_size};

/// Logical features a bundle may have (masks in [`CentOptions`] have one bit per feature).
pub const CENT_MAX_FEATURES: usize = 32;
/// Encoded columns a bundle may have: the longest query and counterfactual vectors.
pub const CENT_MAX_COLUMNS: usize = 64;
/// Counterfactuals one explanation can return ([`CentOptions::answers`] is at most this).
pub const CENT_MAX_ANSWERS: usize = 3;
/// Confirmed regions one explanation compares at most ([`CentOptions::candidates`]).
pub const CENT_MAX_CANDIDATES: usize = 8;
/// [`CentAnswer::leaf`] of an answer from a person the bundle carries rather than a region.
pub const CENT_NO_REGION: u16 = 65535;
/// The bundle format version this library reads (bytes 4 and 5 of a bundle, little-endian).
pub const CENT_BUNDLE_VERSION: u16 = 6;
/// Fixed-point units per unit of cost in [`CentAnswer::cost`] (`cost / 65536.0` is the cost).
pub const CENT_COST_SCALE: u32 = 65536;
// Literals so that the generated header carries the numbers; the core's are the truth.
const _: () = assert!(cent_nostd::graph::SCALE == CENT_COST_SCALE as f32);
const _: () = assert!(CENT_MAX_FEATURES == cent_nostd::capacity::FEATURES);
const _: () = assert!(CENT_BUNDLE_VERSION == cent_nostd::bundle::VERSION);
const _: () = assert!(CENT_MAX_COLUMNS == cent_nostd::capacity::COLUMNS);
const _: () = assert!(CENT_MAX_CANDIDATES == cent_nostd::atlas::CANDIDATES);
const _: () = assert!(CENT_NO_REGION == cent_nostd::atlas::NO_REGION);

/// On bare metal: stop at an undefined instruction, which raises a fault that the firmware's
/// HardFault handler reports. Nothing reachable from input panics (see the crate docs); this
/// only keeps an impossible panic from running on.
#[cfg(all(target_os = "none", not(test)))]
#[panic_handler]
#[allow(unsafe_code, reason = "the one way to raise a fault without a runtime")]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    #[cfg(target_arch = "arm")]
    // SAFETY: `udf` touches no memory and never returns; the core takes the UsageFault (or
    // HardFault) exception.
    unsafe {
        core::arch::asm!("udf #0", options(noreturn, nomem, nostack))
    }
    #[cfg(not(target_arch = "arm"))]
    loop {
        core::hint::spin_loop();
    }
}
