//! The caller-owned storage types: fixed-size, 8-byte aligned C structs that hold the core's
//! values (the opened bundle, the explainer's scratch, one outcome) behind a tag word.
//!
//! C sees only an array of `uint64_t`, so it can place the storage anywhere (`static`, stack,
//! a pool) without an allocator; the sizes are constants checked here, at compile time, against
//! the Rust values they hold on the target being built. The first word is a tag: a storage is
//! only read as its value after a call of this crate has written that value and set the tag,
//! so zeroed storage (any `static`) is simply "not open" / "no result".

#![allow(unsafe_code, reason = "the storage is typed memory the caller owns")]

use crate::CENT_MAX_ANSWERS;
use crate::boundary::{get, get_mut, put};
use crate::status::CentStatus;
use cent_nostd::atlas::{Counterfactual, Explainer, Summary};
use cent_nostd::bundle::Bundle;
use core::mem::{MaybeUninit, align_of, size_of};
use core::ops::Range;

// The sizes differ with the pointer width (the bundle holds views, i.e. pointers and lengths).
// The generated header picks the right set from `UINTPTR_MAX`; `cent_storage_size` reports
// what this build expects, so a C program can check it agrees.

/// 64-bit words of a [`CentBundle`] (`sizeof(CentBundle) == 8 * CENT_BUNDLE_WORDS`).
#[cfg(target_pointer_width = "32")]
pub const CENT_BUNDLE_WORDS: usize = 391;
/// 64-bit words of a [`CentScratch`].
#[cfg(target_pointer_width = "32")]
pub const CENT_SCRATCH_WORDS: usize = 1072;
/// 64-bit words of a [`CentResult`].
#[cfg(target_pointer_width = "32")]
pub const CENT_RESULT_WORDS: usize = 105;

/// 64-bit words of a [`CentBundle`] (`sizeof(CentBundle) == 8 * CENT_BUNDLE_WORDS`).
#[cfg(not(target_pointer_width = "32"))]
pub const CENT_BUNDLE_WORDS: usize = 576;
/// 64-bit words of a [`CentScratch`].
#[cfg(not(target_pointer_width = "32"))]
pub const CENT_SCRATCH_WORDS: usize = 1083;
/// 64-bit words of a [`CentResult`].
#[cfg(not(target_pointer_width = "32"))]
pub const CENT_RESULT_WORDS: usize = 109;

/// An opened bundle: validated views into the caller's bundle bytes, which must stay in place
/// and unchanged while it is open. Open with `cent_bundle_open`.
#[repr(C)]
#[derive(Debug)]
pub struct CentBundle {
    opaque: [u64; CENT_BUNDLE_WORDS],
}

/// The explainer's working memory (the query graph and the search over it). Any zeroed or
/// previously used `CentScratch` will do; one per concurrent explanation.
#[repr(C)]
#[derive(Debug)]
pub struct CentScratch {
    opaque: [u64; CENT_SCRATCH_WORDS],
}

/// One explanation's outcome: written by `cent_explain`, read with `cent_result_summary`,
/// `cent_result_answer` and `cent_result_values`.
#[repr(C)]
#[derive(Debug)]
pub struct CentResult {
    opaque: [u64; CENT_RESULT_WORDS],
}

macro_rules! zeroed {
    ($($t:ident),*) => {$(
        impl $t {
            /// Storage that holds nothing yet (what a C `static` starts as).
            pub const fn zeroed() -> Self {
                $t { opaque: [0; _] }
            }
        }
    )*};
}
zeroed!(CentBundle, CentScratch, CentResult);

/// A value behind its tag. `repr(C)` puts the tag first, at offset 0.
#[repr(C)]
pub(crate) struct Slot<T> {
    tag: u32,
    value: MaybeUninit<T>,
}

/// What a [`CentBundle`] holds. The `'static` stands for "as long as the caller keeps the
/// bytes": the contract of `cent_bundle_open`.
pub(crate) struct Opened {
    pub bundle: Bundle<'static>,
    /// Where the bundle bytes are, so outputs that would overwrite them are refused.
    pub bytes: Range<usize>,
}

/// What a [`CentResult`] holds.
pub(crate) struct Outcome {
    pub summary: Summary,
    /// Encoded columns of the query (and of each answer).
    pub columns: usize,
    pub answers: heapless::Vec<Counterfactual, CENT_MAX_ANSWERS>,
}

const TAG_BUNDLE: u32 = u32::from_le_bytes(*b"cBND");
const TAG_SCRATCH: u32 = u32::from_le_bytes(*b"cSCR");
const TAG_RESULT: u32 = u32::from_le_bytes(*b"cRES");

// Each value fits its storage on the target being built, and the storage's alignment (that of
// u64) suits it.
const _: () = assert!(size_of::<Slot<Opened>>() <= size_of::<CentBundle>());
const _: () = assert!(size_of::<Slot<Explainer>>() <= size_of::<CentScratch>());
const _: () = assert!(size_of::<Slot<Outcome>>() <= size_of::<CentResult>());
const _: () = assert!(align_of::<Slot<Opened>>() <= align_of::<CentBundle>());
const _: () = assert!(align_of::<Slot<Explainer>>() <= align_of::<CentScratch>());
const _: () = assert!(align_of::<Slot<Outcome>>() <= align_of::<CentResult>());

/// `sizeof(CentBundle)` as this library was built: a C program can compare it with its own
/// `sizeof` to catch a header from another build or pointer width.
#[unsafe(no_mangle)]
pub extern "C" fn cent_bundle_size() -> usize {
    size_of::<CentBundle>()
}

/// `sizeof(CentScratch)` as this library was built (see [`cent_bundle_size`]).
#[unsafe(no_mangle)]
pub extern "C" fn cent_scratch_size() -> usize {
    size_of::<CentScratch>()
}

/// `sizeof(CentResult)` as this library was built (see [`cent_bundle_size`]).
#[unsafe(no_mangle)]
pub extern "C" fn cent_result_size() -> usize {
    size_of::<CentResult>()
}

/// Reads the value of a tagged slot.
///
/// # Safety
/// `ptr` is null, or points to storage that is zeroed or was last written by this crate, and
/// that nothing writes during `'a`.
unsafe fn read<'a, T>(ptr: *const Slot<T>, tag: u32, missing: CentStatus) -> Result<&'a T, CentStatus> {
    // SAFETY: forwarded contract; the tag word is initialised (zeroed or written by us).
    let slot = unsafe { get(ptr) }?;
    if slot.tag != tag {
        return Err(missing);
    }
    // SAFETY: the tag is only set right after the value was written (see `open`, `scratch`
    // and `begin`/`finish`), and cleared before it is invalidated.
    Ok(unsafe { slot.value.assume_init_ref() })
}

/// Stores an opened bundle, or marks the storage as not open.
///
/// # Safety
/// `ptr` is null or points to a `CentBundle` that nothing else accesses during the call.
pub(crate) unsafe fn open(ptr: *mut CentBundle, opened: Option<Opened>) -> Result<(), CentStatus> {
    let slot = ptr.cast::<Slot<Opened>>();
    let value = match opened {
        Some(o) => Slot { tag: TAG_BUNDLE, value: MaybeUninit::new(o) },
        None => Slot { tag: 0, value: MaybeUninit::uninit() },
    };
    // SAFETY: forwarded contract; `put` only writes.
    unsafe { put(slot, value) }
}

/// The bundle open in `ptr`.
///
/// # Safety
/// As [`read`].
pub(crate) unsafe fn opened<'a>(ptr: *const CentBundle) -> Result<&'a Opened, CentStatus> {
    // SAFETY: forwarded contract.
    unsafe { read(ptr.cast::<Slot<Opened>>(), TAG_BUNDLE, CentStatus::NotOpen) }
}

/// The explainer in `ptr`, created in place on first use.
///
/// # Safety
/// `ptr` is null, or points to storage that is zeroed or was last written by this crate, and
/// that only this reference accesses during `'a`.
pub(crate) unsafe fn scratch<'a>(ptr: *mut CentScratch) -> Result<&'a mut Explainer, CentStatus> {
    // SAFETY: forwarded contract; the tag word is initialised (zeroed or written by us).
    let slot = unsafe { get_mut(ptr.cast::<Slot<Explainer>>()) }?;
    if slot.tag != TAG_SCRATCH {
        slot.value.write(Explainer::new());
        slot.tag = TAG_SCRATCH;
    }
    // SAFETY: the tag says the value was written (just now or by an earlier call).
    Ok(unsafe { slot.value.assume_init_mut() })
}

/// Empties the outcome in `ptr` and returns it for writing; it reads as "no result" until
/// [`finish`].
///
/// # Safety
/// `ptr` is null, or points to a `CentResult` that only this reference accesses during `'a`.
pub(crate) unsafe fn begin<'a>(ptr: *mut CentResult) -> Result<&'a mut Slot<Outcome>, CentStatus> {
    let empty = Summary { anchor: 0, fact: 0, examined: 0, rejected: 0, not_found: None };
    let slot = ptr.cast::<Slot<Outcome>>();
    let value = Outcome { summary: empty, columns: 0, answers: heapless::Vec::new() };
    // SAFETY: forwarded contract; `put` only writes.
    unsafe { put(slot, Slot { tag: 0, value: MaybeUninit::new(value) }) }?;
    // SAFETY: just written in full (tag and value), exclusive by the contract.
    unsafe { get_mut(slot) }
}

impl Slot<Outcome> {
    /// The outcome being written (initialised by [`begin`]).
    pub(crate) fn outcome(&mut self) -> &mut Outcome {
        // SAFETY: a `Slot<Outcome>` reference only comes from `begin`, which wrote the value.
        unsafe { self.value.assume_init_mut() }
    }

    /// Marks the outcome as a successful explanation.
    pub(crate) fn finish(&mut self) {
        self.tag = TAG_RESULT;
    }
}

/// The outcome in `ptr`.
///
/// # Safety
/// As [`read`].
pub(crate) unsafe fn outcome<'a>(ptr: *const CentResult) -> Result<&'a Outcome, CentStatus> {
    // SAFETY: forwarded contract.
    unsafe { read(ptr.cast::<Slot<Outcome>>(), TAG_RESULT, CentStatus::NoResult) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The storage constants are the exact sizes the values need on this pointer width (no
    /// wasted RAM); a change of the core's types fails to compile or fails here, and the
    /// constants and the header are then updated together.
    #[test]
    fn test_storage_sizes_are_tight() {
        let used = [
            (size_of::<Slot<Opened>>(), cent_bundle_size()),
            (size_of::<Slot<Explainer>>(), cent_scratch_size()),
            (size_of::<Slot<Outcome>>(), cent_result_size()),
        ];
        for (need, have) in used {
            assert!(have - need < 8, "storage of {have} bytes for {need}: shrink its constant");
        }
        std::println!("storage bytes used/available: {used:?}");
    }
}
