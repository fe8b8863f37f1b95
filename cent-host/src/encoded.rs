//! Rows as the models see them, written to a file: a split's rows for a user's own classifier
//! to train on before it comes back as `--onnx`, or any people encoded for that classifier to
//! score.
//!
//! The columns are the encoding's ([`Encoding::column_names`]: a number or binary feature by its
//! name, a category as `feature=category`), in the order a model's input takes them, and one
//! column of whole numbers beside them ([`Id`]): a split's row class, as its index in the
//! schema's `[target].classes` (the model's output column), after them under the target
//! column's name; or a person's line in the input file, before them. CSV (`.csv`, or `-` for
//! stdout) and Parquet (`.parquet`, `.pq`; float32 columns, the id uint64) are written, row by
//! row, so memory holds one Parquet record batch at most; a Parquet file appears under its name
//! only once complete. A CSV value is the shortest decimal that reads back as the same `f32`.

use crate::data::Encoding;
use crate::results::Format;
use arrow_array::builder::{Float32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per Parquet record batch (and row group).
const CHUNK: usize = 64 * 1024;

/// Why the encoded rows cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodedError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: encoded rows are written as CSV (.csv, or - for stdout) or Parquet (.parquet, .pq)")]
    Format { path: PathBuf },
    #[error("a row of {found} values given for {columns} encoded columns")]
    Width { found: usize, columns: usize },
    #[error("{values} values and {labels} labels do not form rows of {columns} columns")]
    Shape { values: usize, labels: usize, columns: usize },
    /// The id column has the name of an encoded column.
    #[error("the column `{0}` has the name of an encoded column")]
    Name(String),
}

/// The column of whole numbers beside the encoded ones, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// Before them: a person's line in the input file.
    Before(&'a str),
    /// After them: a row's class index, under the target column's name.
    After(&'a str),
}

impl Id<'_> {
    fn name(&self) -> &str {
        match self {
            Id::Before(name) | Id::After(name) => name,
        }
    }
}

/// The format [`Writer::create`] gives `path`: CSV for `.csv` and `-` (stdout), Parquet for
/// `.parquet` and `.pq`. Checks a name before any work is done for it.
///
/// # Errors
/// [`EncodedError::Format`] for any other name.
pub fn format(path: &Path) -> Result<Format, EncodedError> {
    if path == Path::new("-") {
        return Ok(Format::Csv);
    }
    match Format::of(path) {
        Format::JsonLines => Err(EncodedError::Format { path: path.to_path_buf() }),
        f => Ok(f),
    }
}

enum Out {
    Csv(Box<csv::Writer<BufWriter<Box<dyn Write>>>>),
    Parquet { writer: Box<ArrowWriter<BufWriter<File>>>, schema: Arc<ArrowSchema>, partial: PathBuf },
}

/// Writes encoded rows, each with its id, one at a time.
pub struct Writer {
    path: PathBuf,
    columns: usize,
    before: bool,
    out: Out,
    /// The Parquet record batch being filled: one builder per encoded column, and the ids.
    values: Vec<Float32Builder>,
    ids: UInt64Builder,
    buffered: usize,
    written: usize,
    record: Vec<String>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("path", &self.path).field("written", &self.written).finish_non_exhaustive()
    }
}

impl Writer {
    /// A writer to `path` (`-`: stdout, as CSV) of `encoding`'s columns and the column `id`;
    /// the header is written at once.
    ///
    /// # Errors
    /// [`EncodedError`] naming the file: an unknown extension ([`format()`]), an id named as an
    /// encoded column, a file that cannot be created.
    pub fn create(path: &Path, encoding: &Encoding, id: Id<'_>) -> Result<Writer, EncodedError> {
        let format = format(path)?;
        let names = encoding.column_names();
        if names.iter().any(|n| n == id.name()) {
            return Err(EncodedError::Name(id.name().to_string()));
        }
        let before = matches!(id, Id::Before(_));
        let io = |source| EncodedError::Io { path: path.to_path_buf(), source };
        let out = match format {
            Format::Parquet => {
                let id_field = Field::new(id.name(), DataType::UInt64, false);
                let values = names.iter().map(|n| Field::new(n, DataType::Float32, false));
                let fields: Vec<Field> = if before {
                    std::iter::once(id_field).chain(values).collect()
                } else {
                    values.chain(std::iter::once(id_field)).collect()
                };
                let schema = Arc::new(ArrowSchema::new(fields));
                let mut name = path.as_os_str().to_owned();
                name.push(".partial");
                let partial = PathBuf::from(name);
                let file = File::create(&partial).map_err(io)?;
                let props = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .set_max_row_group_row_count(Some(CHUNK))
                    .build();
                let writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props))
                    .map_err(|e| EncodedError::Parquet { path: path.to_path_buf(), message: e.to_string() })?;
                Out::Parquet { writer: Box::new(writer), schema, partial }
            }
            _ => {
                let sink: Box<dyn Write> = if path == Path::new("-") {
                    Box::new(io::stdout().lock())
                } else {
                    Box::new(File::create(path).map_err(io)?)
                };
                let mut w = csv::Writer::from_writer(BufWriter::new(sink));
                let header: Vec<&str> = if before {
                    std::iter::once(id.name()).chain(names.iter().map(String::as_str)).collect()
                } else {
                    names.iter().map(String::as_str).chain(std::iter::once(id.name())).collect()
                };
                w.write_record(header).map_err(|e| io(io_error(e)))?;
                Out::Csv(Box::new(w))
            }
        };
        let columns = names.len();
        Ok(Writer {
            path: path.to_path_buf(),
            columns,
            before,
            out,
            values: (0..columns).map(|_| Float32Builder::new()).collect(),
            ids: UInt64Builder::new(),
            buffered: 0,
            written: 0,
            record: Vec::with_capacity(columns + 1),
        })
    }

    /// Appends one row (`encoding.n_cols()` values) with its id.
    ///
    /// # Errors
    /// [`EncodedError::Width`] for a row of another width; an I/O or Parquet error naming the file.
    pub fn push(&mut self, row: &[f32], id: u64) -> Result<(), EncodedError> {
        if row.len() != self.columns {
            return Err(EncodedError::Width { found: row.len(), columns: self.columns });
        }
        match &mut self.out {
            Out::Csv(w) => {
                self.record.clear();
                if self.before {
                    self.record.push(id.to_string());
                }
                // `{}` of an f32 is the shortest text that reads back as the same value.
                self.record.extend(row.iter().map(|v| v.to_string()));
                if !self.before {
                    self.record.push(id.to_string());
                }
                w.write_record(&self.record)
                    .map_err(|e| EncodedError::Io { path: self.path.clone(), source: io_error(e) })?;
            }
            Out::Parquet { .. } => {
                for (b, &v) in self.values.iter_mut().zip(row) {
                    b.append_value(v);
                }
                self.ids.append_value(id);
                self.buffered += 1;
                if self.buffered == CHUNK {
                    self.flush_batch()?;
                }
            }
        }
        self.written += 1;
        Ok(())
    }

    /// Writes the buffered Parquet rows as one record batch.
    fn flush_batch(&mut self) -> Result<(), EncodedError> {
        let Out::Parquet { writer, schema, .. } = &mut self.out else { return Ok(()) };
        if self.buffered == 0 {
            return Ok(());
        }
        let values = self.values.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef);
        let id = Arc::new(self.ids.finish()) as ArrayRef;
        let arrays: Vec<ArrayRef> =
            if self.before { std::iter::once(id).chain(values).collect() } else { values.chain([id]).collect() };
        let fail = |message: String| EncodedError::Parquet { path: self.path.clone(), message };
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| fail(e.to_string()))?;
        writer.write(&batch).map_err(|e| fail(e.to_string()))?;
        self.buffered = 0;
        Ok(())
    }

    /// Flushes what is left and, for Parquet, writes the footer and moves the file to its name;
    /// returns the rows written.
    ///
    /// # Errors
    /// An I/O or Parquet error naming the file.
    pub fn finish(mut self) -> Result<usize, EncodedError> {
        self.flush_batch()?;
        let path = self.path.clone();
        let io = |source| EncodedError::Io { path: path.clone(), source };
        match self.out {
            Out::Csv(mut w) => w.flush().map_err(io)?,
            Out::Parquet { writer, partial, .. } => {
                writer.close().map_err(|e| EncodedError::Parquet { path: path.clone(), message: e.to_string() })?;
                std::fs::rename(&partial, &path).map_err(io)?;
            }
        }
        Ok(self.written)
    }
}

/// Writes a split's `rows` (row-major, `encoding.n_cols()` wide) with their class indices
/// `labels` under the column `target`; returns the rows written.
///
/// # Errors
/// As [`Writer::create`] and [`Writer::push`]; [`EncodedError::Shape`] when the rows and the
/// labels do not pair up.
pub fn write_split(
    path: &Path,
    encoding: &Encoding,
    target: &str,
    rows: &[f32],
    labels: &[usize],
) -> Result<usize, EncodedError> {
    let columns = encoding.n_cols();
    if columns == 0 || rows.len() != labels.len() * columns {
        return Err(EncodedError::Shape { values: rows.len(), labels: labels.len(), columns });
    }
    let mut w = Writer::create(path, encoding, Id::After(target))?;
    for (row, &label) in rows.chunks_exact(columns).zip(labels) {
        w.push(row, label as u64)?;
    }
    w.finish()
}

/// The I/O error under a CSV writer's error, its kind kept (a closed pipe stays one).
fn io_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A number and a category of two values.
    const FEATURES: &str = r#"
[[feature]]
name = "age"
kind = "integer"
[[feature]]
name = "job"
kind = "categorical"
categories = ["a", "b"]
"#;

    fn encoding() -> Encoding {
        crate::data::toy(FEATURES, "age,job,y\n20,a,0\n60,b,1\n", &[0, 1]).1
    }

    /// A scratch directory of this process, removed with everything in it when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let d = std::env::temp_dir().join(format!("cent-encoded-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }

        fn join(&self, file: &str) -> PathBuf {
            self.0.join(file)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn test_csv_has_the_model_columns_then_the_class() {
        let enc = encoding();
        let dir = Scratch::new("csv");
        let path = dir.join("train.csv");
        let rows = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.25, 0.0, 1.0];
        assert_eq!(write_split(&path, &enc, "y", &rows, &[0, 1, 1]).unwrap(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "age,job=a,job=b,y\n0,1,0,0\n1,0,1,1\n0.25,0,1,1\n");
    }

    #[test]
    fn test_people_come_with_their_line_first() {
        let enc = encoding();
        let dir = Scratch::new("lines");
        let path = dir.join("people.csv");
        let mut w = Writer::create(&path, &enc, Id::Before("line")).unwrap();
        w.push(&[0.5, 0.0, 1.0], 2).unwrap();
        w.push(&[0.1, 1.0, 0.0], 7).unwrap();
        let err = w.push(&[0.5, 0.0], 8).unwrap_err();
        assert!(err.to_string().contains("a row of 2 values given for 3"), "{err}");
        assert_eq!(w.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "line,age,job=a,job=b\n2,0.5,0,1\n7,0.1,1,0\n");
    }

    /// More rows than one record batch holds, read back value for value.
    #[test]
    fn test_parquet_reads_back_the_same_values() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let enc = encoding();
        let dir = Scratch::new("parquet");
        let path = dir.join("train.parquet");
        let n = CHUNK + 100;
        let rows: Vec<f32> = (0..3 * n).map(|i| (i % 7) as f32 / 7.0).collect();
        let labels: Vec<usize> = (0..n).map(|i| i % 2).collect();
        assert_eq!(write_split(&path, &enc, "y", &rows, &labels).unwrap(), n);
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap().build().unwrap();
        let (mut values, mut classes) = (Vec::new(), Vec::new());
        for batch in reader {
            let batch = batch.unwrap();
            let names: Vec<_> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
            assert_eq!(names, ["age", "job=a", "job=b", "y"]);
            use arrow_array::cast::AsArray;
            use arrow_array::types::{Float32Type, UInt64Type};
            for r in 0..batch.num_rows() {
                values.extend((0..3).map(|c| batch.column(c).as_primitive::<Float32Type>().value(r)));
                classes.push(batch.column(3).as_primitive::<UInt64Type>().value(r) as usize);
            }
        }
        assert_eq!((values, classes), (rows, labels));
        assert!(!path.with_extension("parquet.partial").exists());
    }

    #[test]
    fn test_bad_shapes_names_and_formats_are_refused() {
        let enc = encoding();
        let d = Scratch::new("bad");
        let err = |path: &Path, target: &str, rows: &[f32], labels: &[usize]| {
            write_split(path, &enc, target, rows, labels).unwrap_err().to_string()
        };
        assert!(err(&d.join("a.csv"), "y", &[0.0; 4], &[0]).contains("4 values and 1 labels"));
        assert!(err(&d.join("a.csv"), "job=a", &[0.0; 3], &[0]).contains("`job=a`"));
        assert!(err(&d.join("a.json"), "y", &[0.0; 3], &[0]).contains("CSV (.csv"));
        assert!(err(&d.join("no/such/dir/a.csv"), "y", &[0.0; 3], &[0]).contains("a.csv"));
    }
}
