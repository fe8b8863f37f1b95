//! The query batch format: `firmware/data/queries.bin`.
//!
//! Layout: the encoded column count as a `u32` little-endian, then the queries one after the
//! other, each `columns` `f32` little-endian values in the bundle schema's column order
//! (encoded values, like the host's `Encoding` produces). Nothing else: no padding, no
//! trailer, so the file is `4 + 4 · columns · queries` bytes.
//!
//! This file uses `core` only: the host's parity test compiles the very same parser
//! (`tests/tests/firmware.rs` includes it by path), so device and host read the same rows.

use core::fmt;

/// Bytes before the first row.
pub const HEADER_LEN: usize = 4;

/// Why bytes are not a query batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueriesError {
    /// Shorter than the 4-byte column count.
    Header,
    /// A column count of zero.
    Columns,
    /// The rows are not a whole number of `columns · 4` bytes.
    Length { rows_bytes: u32, columns: u32 },
}

impl fmt::Display for QueriesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueriesError::Header => write!(f, "shorter than the 4-byte column count"),
            QueriesError::Columns => write!(f, "column count is zero"),
            QueriesError::Length { rows_bytes, columns } => {
                write!(f, "{rows_bytes} bytes of rows are not whole rows of {columns} f32 columns")
            }
        }
    }
}

impl core::error::Error for QueriesError {}

/// A validated batch of queries, borrowed (from flash on the device).
#[derive(Debug, Clone, Copy)]
pub struct Queries<'a> {
    columns: usize,
    rows: &'a [u8],
}

impl<'a> Queries<'a> {
    /// Checks the header and that the rest is whole rows.
    ///
    /// # Errors
    /// [`QueriesError`] naming the problem.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, QueriesError> {
        let (header, rows) = bytes.split_at_checked(HEADER_LEN).ok_or(QueriesError::Header)?;
        let columns = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        if columns == 0 {
            return Err(QueriesError::Columns);
        }
        let row_len = (columns as usize).checked_mul(4).ok_or(QueriesError::Columns)?;
        if rows.len() % row_len != 0 {
            return Err(QueriesError::Length { rows_bytes: rows.len() as u32, columns });
        }
        Ok(Queries { columns: columns as usize, rows })
    }

    /// Encoded columns of every query.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.rows.len() / (self.columns * 4)
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Decodes query `index` into `out`, which must be exactly `columns()` long.
    /// Returns `None` for an index past the end or an `out` of another length.
    pub fn read(&self, index: usize, out: &mut [f32]) -> Option<()> {
        let row_len = self.columns * 4;
        let start = index.checked_mul(row_len)?;
        let row = self.rows.get(start..start.checked_add(row_len)?)?;
        if out.len() != self.columns {
            return None;
        }
        for (v, b) in out.iter_mut().zip(row.chunks_exact(4)) {
            *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two queries of two columns: (0.5, 1.0) and (0.25, -2.0).
    const BATCH: [u8; 20] = [
        2, 0, 0, 0, //
        0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0x3f, //
        0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x00, 0xc0,
    ];

    #[test]
    fn test_parse_two_rows() {
        let q = Queries::from_bytes(&BATCH).unwrap();
        assert_eq!((q.columns(), q.len(), q.is_empty()), (2, 2, false));
        let mut row = [0.0f32; 2];
        q.read(1, &mut row).unwrap();
        assert_eq!(row.map(f32::to_bits), [0.25f32.to_bits(), (-2.0f32).to_bits()]);
        q.read(0, &mut row).unwrap();
        assert_eq!(row.map(f32::to_bits), [0.5f32.to_bits(), 1.0f32.to_bits()]);
    }

    #[test]
    fn test_out_of_range_reads_are_none() {
        let q = Queries::from_bytes(&BATCH).unwrap();
        assert_eq!(q.read(2, &mut [0.0; 2]), None);
        assert_eq!(q.read(usize::MAX, &mut [0.0; 2]), None);
        assert_eq!(q.read(0, &mut [0.0; 3]), None, "wrong row width");
    }

    #[test]
    fn test_bad_headers_and_lengths() {
        assert_eq!(Queries::from_bytes(&BATCH[..3]).unwrap_err(), QueriesError::Header);
        assert_eq!(Queries::from_bytes(&[0, 0, 0, 0]).unwrap_err(), QueriesError::Columns);
        let err = Queries::from_bytes(&BATCH[..19]).unwrap_err();
        assert_eq!(err, QueriesError::Length { rows_bytes: 15, columns: 2 });
        let empty = Queries::from_bytes(&BATCH[..4]).unwrap();
        assert_eq!((empty.is_empty(), empty.len()), (true, 0));
    }
}
