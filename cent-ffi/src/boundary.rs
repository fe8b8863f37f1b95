//! Where C pointers become Rust references and slices: the only unsafe code of the crate
//! (besides the exported symbols). Each helper checks what it can — null, alignment, a length
//! that fits the address space — and states what it must trust the caller with: that the
//! memory is live, of that length, and not written by anyone else during the call.

#![allow(unsafe_code, reason = "the C boundary: raw pointers become references and slices")]

use crate::status::CentStatus;
use core::mem::{align_of, size_of};
use core::ops::Range;

/// The bytes a value or an array occupies, for overlap checks.
pub(crate) fn span<T>(ptr: *const T, len: usize) -> Range<usize> {
    let start = ptr as usize;
    let bytes = len.saturating_mul(size_of::<T>());
    start..start.saturating_add(bytes)
}

/// [`CentStatus::Overlap`] when two non-empty byte ranges share a byte.
pub(crate) fn disjoint(a: &Range<usize>, b: &Range<usize>) -> Result<(), CentStatus> {
    let empty = a.is_empty() || b.is_empty();
    if empty || a.end <= b.start || b.end <= a.start { Ok(()) } else { Err(CentStatus::Overlap) }
}

/// Null and alignment checks shared by every conversion; also refuses arrays larger than the
/// address space allows a Rust slice to be.
fn check<T>(ptr: *const T, len: usize) -> Result<(), CentStatus> {
    if ptr.is_null() {
        return Err(CentStatus::NullPointer);
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(CentStatus::Misaligned);
    }
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(()),
        _ => Err(CentStatus::BufferTooSmall),
    }
}

/// `len` values of `T` read through `ptr`.
///
/// # Safety
/// When non-null, `ptr` points to `len` initialised values that stay live and unwritten for `'a`.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], CentStatus> {
    check(ptr, len)?;
    // SAFETY: non-null, aligned and at most isize::MAX bytes (checked); live, initialised and
    // not written for 'a (the caller's contract).
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// `len` values of `T` written through `ptr`.
///
/// # Safety
/// When non-null, `ptr` points to `len` initialised values that only this reference accesses
/// for `'a`.
pub(crate) unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize) -> Result<&'a mut [T], CentStatus> {
    check(ptr, len)?;
    // SAFETY: as `slice`, and exclusive for 'a (the caller's contract).
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// The value behind `ptr`.
///
/// # Safety
/// When non-null, `ptr` points to an initialised `T` that stays live and unwritten for `'a`.
pub(crate) unsafe fn get<'a, T>(ptr: *const T) -> Result<&'a T, CentStatus> {
    check(ptr, 1)?;
    // SAFETY: non-null and aligned (checked); initialised, live and unwritten (the contract).
    Ok(unsafe { &*ptr })
}

/// The value behind `ptr`, exclusively.
///
/// # Safety
/// When non-null, `ptr` points to an initialised `T` that only this reference accesses for `'a`.
pub(crate) unsafe fn get_mut<'a, T>(ptr: *mut T) -> Result<&'a mut T, CentStatus> {
    check(ptr, 1)?;
    // SAFETY: non-null and aligned (checked); initialised, live and exclusive (the contract).
    Ok(unsafe { &mut *ptr })
}

/// Writes `value` through `ptr` without reading what was there.
///
/// # Safety
/// When non-null, `ptr` points to memory for a `T` that nothing else accesses during the call.
pub(crate) unsafe fn put<T>(ptr: *mut T, value: T) -> Result<(), CentStatus> {
    check(ptr, 1)?;
    // SAFETY: non-null and aligned (checked); writable and unaliased (the contract). `write`
    // neither reads nor drops the old contents, which may be uninitialised.
    unsafe { ptr.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_disjoint_ranges() {
        assert_eq!(disjoint(&(0..4), &(4..8)), Ok(()));
        assert_eq!(disjoint(&(4..8), &(0..4)), Ok(()));
        assert_eq!(disjoint(&(0..5), &(4..8)), Err(CentStatus::Overlap));
        assert_eq!(disjoint(&(2..3), &(0..8)), Err(CentStatus::Overlap));
        assert_eq!(disjoint(&(4..4), &(0..8)), Ok(()), "an empty range overlaps nothing");
    }

    #[test]
    fn test_null_misaligned_and_huge_are_refused() {
        let words = [0u32; 4];
        // SAFETY: every call either fails its checks or reads `words`.
        unsafe {
            assert_eq!(slice::<u32>(core::ptr::null(), 0), Err(CentStatus::NullPointer));
            let odd = (words.as_ptr() as *const u8).add(1) as *const u32;
            assert_eq!(slice(odd, 1), Err(CentStatus::Misaligned));
            assert_eq!(slice(words.as_ptr(), usize::MAX / 2), Err(CentStatus::BufferTooSmall));
            assert_eq!(slice(words.as_ptr(), 4).map(<[u32]>::len), Ok(4));
        }
    }
}
