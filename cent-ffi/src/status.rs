//! Status codes: what every function returns, and their descriptions.

use cent_nostd::atlas::ExplainError;
use cent_nostd::bundle::BundleError;
use cent_nostd::graph::GraphError;
use core::ffi::{CStr, c_char, c_int};

/// The outcome of a call. `CENT_STATUS_OK` is 0; every other value names what was refused.
/// The values are part of the ABI: new ones are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CentStatus {
    /// Success.
    Ok = 0,
    /// A required pointer argument is NULL.
    NullPointer = 1,
    /// A pointer is not aligned for its type.
    Misaligned = 2,
    /// An output buffer overlaps another argument.
    Overlap = 3,
    /// An output array is shorter than the values to write.
    BufferTooSmall = 4,
    /// The `CentBundle` storage holds no open bundle (never opened, closed, or its open failed).
    NotOpen = 5,
    /// The bytes are not a cent bundle (bad magic).
    BadMagic = 6,
    /// The bundle's format version is not the one this build reads.
    BadVersion = 7,
    /// The bundle is truncated or has trailing bytes.
    BadLength = 8,
    /// The bundle's payload does not match its CRC-32 (corrupted).
    BadChecksum = 9,
    /// The bundle's payload cannot be decoded.
    Malformed = 10,
    /// A part of the bundle is invalid or exceeds the device's capacities.
    InvalidBundle = 11,
    /// The query does not have the bundle schema's number of encoded columns.
    QueryLength = 12,
    /// A query value is not finite, or a one-hot group has not exactly one hot column.
    QueryValue = 13,
    /// An option is out of range (answers, max_search, lead, class, masks, costs).
    InvalidOptions = 14,
    /// The desired class is the query's current class, or not a class of the model.
    Target = 15,
    /// The bundle's tree or model does not fit the explainer's capacity.
    Capacity = 16,
    /// The explanation failed inside the model (encoder or search).
    ExplainFailed = 17,
    /// The `CentResult` storage holds no successful explanation.
    NoResult = 18,
    /// The answer index is not below the result's number of answers.
    Index = 19,
}

/// Every status, in value order.
const ALL: [CentStatus; 20] = [
    CentStatus::Ok,
    CentStatus::NullPointer,
    CentStatus::Misaligned,
    CentStatus::Overlap,
    CentStatus::BufferTooSmall,
    CentStatus::NotOpen,
    CentStatus::BadMagic,
    CentStatus::BadVersion,
    CentStatus::BadLength,
    CentStatus::BadChecksum,
    CentStatus::Malformed,
    CentStatus::InvalidBundle,
    CentStatus::QueryLength,
    CentStatus::QueryValue,
    CentStatus::InvalidOptions,
    CentStatus::Target,
    CentStatus::Capacity,
    CentStatus::ExplainFailed,
    CentStatus::NoResult,
    CentStatus::Index,
];

impl CentStatus {
    /// A lowercase sentence without a final period, NUL-terminated.
    pub const fn description(self) -> &'static CStr {
        match self {
            CentStatus::Ok => c"ok",
            CentStatus::NullPointer => c"a required pointer is null",
            CentStatus::Misaligned => c"a pointer is not aligned for its type",
            CentStatus::Overlap => c"an output buffer overlaps another argument",
            CentStatus::BufferTooSmall => c"an output array is too short",
            CentStatus::NotOpen => c"no bundle is open in this storage",
            CentStatus::BadMagic => c"not a cent bundle (bad magic)",
            CentStatus::BadVersion => c"bundle format version is not supported",
            CentStatus::BadLength => c"bundle is truncated or has trailing bytes",
            CentStatus::BadChecksum => c"bundle checksum mismatch (corrupted)",
            CentStatus::Malformed => c"bundle payload is malformed",
            CentStatus::InvalidBundle => c"bundle part is invalid or exceeds the device capacity",
            CentStatus::QueryLength => c"query length differs from the bundle's encoded columns",
            CentStatus::QueryValue => c"query value is not finite or a one-hot group is not one-hot",
            CentStatus::InvalidOptions => c"an option is out of range",
            CentStatus::Target => c"desired class is the current class or unknown",
            CentStatus::Capacity => c"bundle exceeds the explainer's capacity",
            CentStatus::ExplainFailed => c"explanation failed in the model",
            CentStatus::NoResult => c"no successful explanation in this result",
            CentStatus::Index => c"answer index out of range",
        }
    }
}

impl From<BundleError> for CentStatus {
    fn from(e: BundleError) -> Self {
        match e {
            BundleError::Magic => CentStatus::BadMagic,
            BundleError::Version { .. } => CentStatus::BadVersion,
            BundleError::Length => CentStatus::BadLength,
            BundleError::Checksum => CentStatus::BadChecksum,
            BundleError::Decode => CentStatus::Malformed,
            _ => CentStatus::InvalidBundle,
        }
    }
}

impl From<ExplainError> for CentStatus {
    fn from(e: ExplainError) -> Self {
        match e {
            ExplainError::Input | ExplainError::Graph(GraphError::Input) => CentStatus::QueryValue,
            ExplainError::Graph(GraphError::Query(_)) => CentStatus::InvalidOptions,
            ExplainError::Graph(GraphError::Capacity) => CentStatus::Capacity,
            ExplainError::Target => CentStatus::Target,
            _ => CentStatus::ExplainFailed,
        }
    }
}

/// Describes a status: a static, NUL-terminated, lowercase English sentence. Any value is
/// accepted (an `int`, so a value C made up is not undefined behaviour); one that is not a
/// status gives `"unknown status"`. Never NULL.
#[unsafe(no_mangle)]
#[allow(unsafe_code, reason = "an exported symbol")]
pub extern "C" fn cent_status_str(status: c_int) -> *const c_char {
    describe(status).as_ptr()
}

/// What [`cent_status_str`] says of `status`, for Rust callers.
pub fn describe(status: c_int) -> &'static CStr {
    match usize::try_from(status).ok().and_then(|i| ALL.get(i)) {
        Some(s) => s.description(),
        None => c"unknown status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_all_is_in_value_order_and_complete() {
        for (i, s) in ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
        assert_eq!(CentStatus::Index as usize + 1, ALL.len());
    }

    #[test]
    fn test_every_status_has_a_distinct_description() {
        let mut seen = std::collections::BTreeSet::new();
        for s in ALL {
            // SAFETY: cent_status_str returns a pointer to a static C string.
            let text = unsafe { CStr::from_ptr(cent_status_str(s as c_int)) };
            assert_eq!(text, s.description());
            assert!(seen.insert(text.to_str().unwrap()), "{s:?} repeats a description");
        }
    }

    #[test]
    fn test_unknown_values_are_described_not_undefined() {
        for v in [-1, 20, 1000, c_int::MIN, c_int::MAX] {
            // SAFETY: as above.
            let text = unsafe { CStr::from_ptr(cent_status_str(v)) };
            assert_eq!(text, c"unknown status");
        }
    }
}
