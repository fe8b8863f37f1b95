//! People to explain, read from a CSV or a Parquet file as a stream of [`Row`]s for
//! [`batch::run`](crate::batch::run).
//!
//! Either format names every feature by its schema name in a header (CSV) or a column (Parquet);
//! a feature no column gives (or two give) is an error of the file, found before any row is read
//! ([`Input::ignored_columns`]); other columns (the schema's target, an identifier, a column the
//! schema drops) are ignored, and [`Input::keeping`] carries named ones into each row as text.
//! Values are read with the schema's `map`, `other` and missing markers, as its data are. A row
//! that cannot be read or parsed becomes a [`Row`] holding its reason, naming the file, the row
//! and the field; the rows after it are still read. Memory holds one record (CSV)
//! or one record batch (Parquet) at a time.
//!
//! A row's [`Row::line`] is its place in the file: the line of a CSV record (the header is line
//! 1, so the first person is line 2) and the row number of a Parquet row (the first is 1).
//!
//! Parquet columns may be strings (also dictionary-encoded, as pandas writes categoricals),
//! integers, floats or booleans; a null is an error of its row. Files compressed with Snappy,
//! zstd or LZ4 are read; others are refused with the codec's name.

use crate::batch::Row;
use crate::data::{Encoding, fields};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// A row's place in the file and its fields as text (`None`: a Parquet null where one is
/// allowed), or why it has none.
type Fields = (usize, Result<Vec<Option<String>>, String>);

/// Record batch size of Parquet reads: the rows held in memory at once.
const PARQUET_BATCH: usize = 1024;

/// A tabular file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
}

impl Format {
    /// By the file name: `.parquet` or `.pq` is Parquet, anything else CSV.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("parquet" | "pq") => Format::Parquet,
            _ => Format::Csv,
        }
    }
}

/// Why a file of people cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RowsError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: line 1: {message}")]
    Header { path: PathBuf, message: String },
    #[error("{path}: not a readable Parquet file: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: no column `{name}`; columns: {columns}")]
    NoColumn { path: PathBuf, name: String, columns: String },
    /// The columns do not give every feature exactly once (`place`: the CSV header's line, or
    /// a Parquet file's columns).
    #[error("{path}: {place}: {error}")]
    Features { path: PathBuf, place: &'static str, error: fields::FieldError },
    /// A Parquet column to keep whose type is not read as text.
    #[error("{path}: column `{name}` is {kind}; a kept column is text, a number or a boolean")]
    KeptType { path: PathBuf, name: String, kind: String },
}

/// An opened file of people.
#[derive(Debug)]
pub struct Input {
    path: PathBuf,
    format: Format,
    columns: Vec<String>,
    /// Columns carried into each row's [`Row::kept`] ([`Input::keeping`]).
    keep: Vec<usize>,
}

impl Input {
    /// Opens `path` (its format by [`Format::of`]) and reads its header or schema.
    ///
    /// # Errors
    /// [`RowsError`] when the file cannot be opened, has no header, or is not Parquet.
    pub fn open(path: &Path) -> Result<Input, RowsError> {
        let format = Format::of(path);
        let columns = match format {
            Format::Csv => csv_reader(path)?.1,
            Format::Parquet => parquet_builder(path)?.schema().fields().iter().map(|f| f.name().clone()).collect(),
        };
        Ok(Input { path: path.to_path_buf(), format, columns, keep: Vec::new() })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Carries the columns `names` of every row, as text, into its [`Row::kept`] (an
    /// identifier to join the results on, say); a column may also be a feature.
    ///
    /// # Errors
    /// [`RowsError::NoColumn`] naming a column the file does not have, and the file's columns;
    /// [`RowsError::KeptType`] for a Parquet column that is not text, a number or a boolean.
    pub fn keeping(mut self, names: &[String]) -> Result<Input, RowsError> {
        self.keep = names.iter().map(|n| self.position(n)).collect::<Result<_, _>>()?;
        if self.format == Format::Parquet && !self.keep.is_empty() {
            let schema = parquet_builder(&self.path)?.schema().clone();
            for &c in &self.keep {
                let field = schema.field(c);
                if !readable(field.data_type()) {
                    return Err(RowsError::KeptType {
                        path: self.path.clone(),
                        name: field.name().clone(),
                        kind: field.data_type().to_string(),
                    });
                }
            }
        }
        Ok(self)
    }

    /// The names given to [`Input::keeping`], in order.
    pub fn kept_columns(&self) -> Vec<String> {
        self.keep.iter().map(|&c| self.columns[c].clone()).collect()
    }

    /// Index of column `name`.
    fn position(&self, name: &str) -> Result<usize, RowsError> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| RowsError::NoColumn {
            path: self.path.clone(),
            name: name.to_string(),
            columns: self.columns.join(", "),
        })
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Column names, in file order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The number of people: a Parquet file's row count from its footer, a CSV file's non-blank
    /// lines after the header (one pass over the file).
    ///
    /// # Errors
    /// [`RowsError`] when the file cannot be read.
    pub fn count(&self) -> Result<usize, RowsError> {
        match self.format {
            Format::Parquet => {
                let rows = parquet_builder(&self.path)?.metadata().file_metadata().num_rows();
                Ok(usize::try_from(rows).unwrap_or(0))
            }
            Format::Csv => {
                let file = open(&self.path)?;
                let mut n = 0usize;
                for line in BufReader::new(file).split(b'\n') {
                    let line = line.map_err(|source| RowsError::Io { path: self.path.clone(), source })?;
                    n += usize::from(!line.iter().all(u8::is_ascii_whitespace));
                }
                Ok(n.saturating_sub(1))
            }
        }
    }

    /// The columns that are no feature of `encoding`, in file order, ignored by
    /// [`Input::rows`]; `target` (the schema's target column) is not named among them.
    ///
    /// # Errors
    /// [`RowsError::Features`] when a feature has no column or two, naming them and the
    /// columns close to a missing one.
    pub fn ignored_columns(&self, encoding: &Encoding, target: Option<&str>) -> Result<Vec<String>, RowsError> {
        let place = match self.format {
            Format::Csv => "line 1",
            Format::Parquet => "columns",
        };
        fields::check_names(self.columns.iter().map(String::as_str), encoding)
            .map(|others| others.into_iter().filter(|c| Some(c.as_str()) != target).collect())
            .map_err(|error| RowsError::Features { path: self.path.clone(), place, error })
    }

    /// Every person, encoded by `encoding`, in file order. `target` is the schema's target
    /// column; it and every other column that is no feature are ignored.
    ///
    /// # Errors
    /// [`RowsError`] when the columns do not give every feature once
    /// ([`Input::ignored_columns`]) or the file cannot be opened again; a row's own failure is
    /// its [`Row::x`].
    pub fn rows<'a>(
        &'a self,
        encoding: &'a Encoding,
        target: Option<&'a str>,
    ) -> Result<Box<dyn Iterator<Item = Row> + 'a>, RowsError> {
        self.ignored_columns(encoding, target)?;
        let encode = move |line: usize, fields: Result<Vec<Option<String>>, String>| {
            let place = |e: &dyn std::fmt::Display| format!("{}: {} {line}: {e}", self.path.display(), self.unit());
            let kept = match &fields {
                Ok(values) => self.keep.iter().map(|&c| values.get(c).cloned().flatten()).collect(),
                Err(_) => vec![None; self.keep.len()],
            };
            let x = fields.map_err(|e| place(&e)).and_then(|values| {
                let text = values.iter().map(|v| v.as_deref().unwrap_or(""));
                let named = self.columns.iter().map(String::as_str).zip(text);
                fields::parse(named, encoding, target)
                    .map_err(|e| place(&e))
                    .and_then(|raw| encoding.encode_row(&raw).map_err(|e| place(&e)))
            });
            Row { line, x, kept }
        };
        // Only the features and the kept columns are read (a Parquet file's other columns may
        // hold nulls or types no feature could have); a null is an error in a feature only.
        let feature: Vec<bool> = self.columns.iter().map(|c| encoding.feature_index(c).is_ok()).collect();
        let wanted: Vec<usize> = (0..self.columns.len()).filter(|&c| feature[c] || self.keep.contains(&c)).collect();
        Ok(match self.format {
            Format::Csv => Box::new(self.csv_fields()?.map(move |(line, f)| encode(line, f))),
            Format::Parquet => Box::new(self.parquet_fields(&wanted, feature)?.map(move |(line, f)| encode(line, f))),
        })
    }

    /// Each person's values of the columns `by`, keyed by [`Row::line`]; a row that cannot be
    /// read is left out.
    ///
    /// # Errors
    /// [`RowsError::NoColumn`] naming a missing column and the file's columns.
    pub fn column_values(&self, by: &[String]) -> Result<HashMap<usize, Vec<String>>, RowsError> {
        let at: Vec<usize> = by.iter().map(|n| self.position(n)).collect::<Result<_, _>>()?;
        let pick = |values: Vec<Option<String>>| {
            at.iter().map(|&c| values.get(c).cloned().flatten().unwrap_or_default()).collect()
        };
        let mut out = HashMap::new();
        let fields: Box<dyn Iterator<Item = Fields>> = match self.format {
            Format::Csv => Box::new(self.csv_fields()?),
            Format::Parquet => Box::new(self.parquet_fields(&at, vec![true; self.columns.len()])?),
        };
        for (line, values) in fields {
            if let Ok(values) = values {
                out.insert(line, pick(values));
            }
        }
        Ok(out)
    }

    fn unit(&self) -> &'static str {
        match self.format {
            Format::Csv => "line",
            Format::Parquet => "row",
        }
    }

    /// Each CSV record's line and fields (or why it has none).
    fn csv_fields(&self) -> Result<impl Iterator<Item = Fields> + '_, RowsError> {
        let (reader, _) = csv_reader(&self.path)?;
        let mut lines = RecordLines::new(open(&self.path)?);
        let width = self.columns.len();
        Ok(reader.into_records().enumerate().map(move |(i, record)| {
            let fallback = i + 2;
            match record {
                Err(e) => {
                    let line = e.position().map_or(fallback, |p| lines.line(p));
                    (line, Err(format!("malformed CSV: {e}")))
                }
                Ok(r) => {
                    let line = r.position().map_or(fallback, |p| lines.line(p));
                    if r.len() == width {
                        (line, Ok(r.iter().map(|f| Some(f.to_string())).collect()))
                    } else {
                        (line, Err(format!("expected {width} fields, found {}", r.len())))
                    }
                }
            }
        }))
    }

    /// Each Parquet row's number and fields as text (or why it has none): the columns `wanted`
    /// (indices), the others not read at all (`None`); a null is an error of its row in a
    /// column `required` says, else `None`.
    fn parquet_fields(&self, wanted: &[usize], required: Vec<bool>) -> Result<ParquetFields, RowsError> {
        let builder = parquet_builder(&self.path)?;
        let mut wanted = wanted.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.iter().copied());
        let reader = builder
            .with_projection(mask)
            .with_batch_size(PARQUET_BATCH)
            .build()
            .map_err(|e| RowsError::Parquet { path: self.path.clone(), message: e.to_string() })?;
        Ok(ParquetFields {
            reader: Some(reader),
            batch: None,
            next: 0,
            line: 0,
            names: self.columns.clone(),
            read: wanted,
            required,
        })
    }
}

fn open(path: &Path) -> Result<File, RowsError> {
    File::open(path).map_err(|source| RowsError::Io { path: path.to_path_buf(), source })
}

/// A trimming, flexible CSV reader past the header, and the header's names (a UTF-8 byte order
/// mark dropped).
/// The line a CSV record starts on. The csv reader's position of a record after a `\r\n` points
/// at that `\n`, one line before the record (`\n` files are right), so a second, forward-only
/// reader over the same file looks at the byte there. Records come in file order, so the file
/// is read once more in all.
struct RecordLines {
    bytes: BufReader<File>,
    /// Bytes of `bytes` consumed so far.
    at: u64,
}

impl RecordLines {
    fn new(file: File) -> Self {
        RecordLines { bytes: BufReader::new(file), at: 0 }
    }

    fn line(&mut self, p: &csv::Position) -> usize {
        p.line() as usize + usize::from(self.byte_at(p.byte()) == Some(b'\n'))
    }

    /// The byte at offset `target`, or `None` past the end, on a read error or for an offset
    /// already passed.
    fn byte_at(&mut self, target: u64) -> Option<u8> {
        let skip = target.checked_sub(self.at)?;
        let skipped = std::io::copy(&mut (&mut self.bytes).take(skip), &mut std::io::sink()).ok()?;
        self.at += skipped;
        let mut byte = [0u8; 1];
        let read = self.bytes.read(&mut byte).ok()?;
        self.at += read as u64;
        (read == 1).then_some(byte[0])
    }
}

fn csv_reader(path: &Path) -> Result<(csv::Reader<BufReader<File>>, Vec<String>), RowsError> {
    let mut reader =
        csv::ReaderBuilder::new().trim(csv::Trim::All).flexible(true).from_reader(BufReader::new(open(path)?));
    let header = |message: String| RowsError::Header { path: path.to_path_buf(), message };
    let names: Vec<String> = reader
        .headers()
        .map_err(|e| header(format!("cannot read the CSV header: {e}")))?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_string())
        .collect();
    if names.iter().all(String::is_empty) {
        return Err(header("expected a header of feature names".into()));
    }
    Ok((reader, names))
}

fn parquet_builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, RowsError> {
    ParquetRecordBatchReaderBuilder::try_new(open(path)?)
        .map_err(|e| RowsError::Parquet { path: path.to_path_buf(), message: e.to_string() })
}

/// The rows of a Parquet file, one record batch in memory at a time.
struct ParquetFields {
    /// `None` once the file is exhausted or unreadable.
    reader: Option<ParquetRecordBatchReader>,
    batch: Option<RecordBatch>,
    /// Next row of `batch`.
    next: usize,
    /// Row number of the last row handed out.
    line: usize,
    names: Vec<String>,
    /// The columns read (file indices, ascending): a batch's columns, in order.
    read: Vec<usize>,
    /// Per column: a null is an error of its row.
    required: Vec<bool>,
}

impl Iterator for ParquetFields {
    type Item = Fields;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = &self.batch
                && self.next < batch.num_rows()
            {
                let row = self.next;
                self.next += 1;
                self.line += 1;
                let mut fields = vec![None; self.names.len()];
                let mut failed = None;
                for (column, &c) in batch.columns().iter().zip(&self.read) {
                    if column.is_null(row) && !self.required.get(c).copied().unwrap_or(true) {
                        continue;
                    }
                    match cell(column, row, &self.names[c]) {
                        Ok(text) => fields[c] = Some(text),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                return Some((self.line, failed.map_or(Ok(fields), Err)));
            }
            match self.reader.as_mut()?.next() {
                Some(Ok(batch)) => {
                    self.batch = Some(batch);
                    self.next = 0;
                }
                Some(Err(e)) => {
                    // The rest of the file cannot be read: one error for the next row, then stop.
                    self.reader = None;
                    self.line += 1;
                    return Some((self.line, Err(format!("unreadable Parquet data from here on: {e}"))));
                }
                None => {
                    self.reader = None;
                    return None;
                }
            }
        }
    }
}

/// Whether [`cell`] reads a column of this type.
fn readable(kind: &DataType) -> bool {
    match kind {
        DataType::Dictionary(_, values) => readable(values),
        k => {
            matches!(k, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Boolean)
                || k.is_integer()
                || matches!(k, DataType::Float32 | DataType::Float64)
        }
    }
}

/// One Parquet cell as the text a CSV field would hold.
fn cell(column: &ArrayRef, row: usize, name: &str) -> Result<String, String> {
    if column.is_null(row) {
        return Err(format!("feature `{name}` is null"));
    }
    let text = match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => column.as_string::<i64>().value(row).to_string(),
        DataType::Utf8View => column.as_string_view().value(row).to_string(),
        DataType::Boolean => column.as_boolean().value(row).to_string(),
        DataType::Int8 => column.as_primitive::<Int8Type>().value(row).to_string(),
        DataType::Int16 => column.as_primitive::<Int16Type>().value(row).to_string(),
        DataType::Int32 => column.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => column.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::UInt8 => column.as_primitive::<UInt8Type>().value(row).to_string(),
        DataType::UInt16 => column.as_primitive::<UInt16Type>().value(row).to_string(),
        DataType::UInt32 => column.as_primitive::<UInt32Type>().value(row).to_string(),
        DataType::UInt64 => column.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::Float32 => column.as_primitive::<Float32Type>().value(row).to_string(),
        DataType::Float64 => column.as_primitive::<Float64Type>().value(row).to_string(),
        DataType::Dictionary(_, _) => {
            let dict = column.as_any_dictionary();
            let key = dict.normalized_keys().get(row).copied().ok_or_else(|| format!("feature `{name}`: bad key"))?;
            return cell(dict.values(), key, name);
        }
        other => return Err(format!("feature `{name}`: Parquet column type {other} is not supported")),
    };
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` written as a CSV named `name`, read back as (line, value of column `a`), sorted.
    fn lines_of(text: &str, name: &str) -> Vec<(usize, String)> {
        let dir = std::env::temp_dir().join(format!("cent-rows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let values = Input::open(&path).unwrap().column_values(&["a".to_string()]).unwrap();
        std::fs::remove_file(&path).unwrap();
        // The directory is shared by this process's calls: the last one out removes it.
        let _ = std::fs::remove_dir(&dir);
        let mut lines: Vec<(usize, String)> = values.into_iter().map(|(line, v)| (line, v.join(""))).collect();
        lines.sort();
        lines
    }

    #[test]
    fn test_crlf_records_are_on_the_lines_of_lf_records() {
        // A quoted field over two lines pushes the next record one line further.
        let lf = "a,b\n1,2\n\"x\ny\",3\n4,5\n";
        let want = |sep: &str| vec![(2, "1".to_string()), (3, format!("x{sep}y")), (5, "4".to_string())];
        assert_eq!(lines_of(lf, "lf.csv"), want("\n"));
        assert_eq!(lines_of(&lf.replace('\n', "\r\n"), "crlf.csv"), want("\r\n"));
    }
}
