//! A split's rows as the models see them, written to a file: what a user's own classifier
//! trains on before it comes back as `--onnx`.
//!
//! The columns are the encoding's ([`Encoding::column_names`]: a number or binary feature by its
//! name, a category as `feature=category`), in the order a model's input takes them, then the
//! row's class as its index in the schema's `[target].classes` (the model's output column),
//! under the target column's name. Rows come in split order: row `i` of the file is `--row i`
//! of that split. CSV (`.csv`, or `-` for stdout) and Parquet (`.parquet`, `.pq`; float32
//! columns, the class uint32) are written; a Parquet file appears under its name only once
//! complete. A CSV value is the shortest decimal that reads back as the same `f32`.

use crate::data::Encoding;
use crate::results::Format;
use arrow_array::{ArrayRef, Float32Array, RecordBatch, UInt32Array};
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
    #[error("{values} values and {labels} labels do not form rows of {columns} columns")]
    Shape { values: usize, labels: usize, columns: usize },
    /// The target column has the name of an encoded column.
    #[error("the target column `{0}` has the name of an encoded column")]
    Name(String),
}

/// Writes `rows` (row-major, `encoding.n_cols()` wide) and their class indices `labels` to
/// `path` (`-`: stdout, as CSV), the class under the column `target`; returns the rows written.
///
/// # Errors
/// [`EncodedError`] naming the file: an unknown extension, a file that cannot be written, or
/// rows and labels that do not match the encoding.
pub fn write(
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
    let names = encoding.column_names();
    if names.iter().any(|n| n == target) {
        return Err(EncodedError::Name(target.to_string()));
    }
    match format(path)? {
        Format::Parquet => parquet(path, &names, target, rows, labels)?,
        _ => csv(path, &names, target, rows, labels)?,
    }
    Ok(labels.len())
}

/// The format [`write()`] gives `path`: CSV for `.csv` and `-` (stdout), Parquet for `.parquet`
/// and `.pq`. Checks a name before any work is done for it.
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

fn csv(path: &Path, names: &[String], target: &str, rows: &[f32], labels: &[usize]) -> Result<(), EncodedError> {
    let io = |source| EncodedError::Io { path: path.to_path_buf(), source };
    let sink: Box<dyn Write> =
        if path == Path::new("-") { Box::new(io::stdout().lock()) } else { Box::new(File::create(path).map_err(io)?) };
    let mut w = csv::Writer::from_writer(BufWriter::new(sink));
    let header = names.iter().map(String::as_str).chain([target]);
    w.write_record(header).map_err(|e| io(io_error(e)))?;
    let mut record = Vec::with_capacity(names.len() + 1);
    for (row, label) in rows.chunks_exact(names.len()).zip(labels) {
        record.clear();
        // `{}` of an f32 is the shortest text that reads back as the same value.
        record.extend(row.iter().map(|v| v.to_string()));
        record.push(label.to_string());
        w.write_record(&record).map_err(|e| io(io_error(e)))?;
    }
    w.flush().map_err(io)
}

/// The I/O error under a CSV writer's error, its kind kept (a closed pipe stays one).
fn io_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

fn parquet(path: &Path, names: &[String], target: &str, rows: &[f32], labels: &[usize]) -> Result<(), EncodedError> {
    let io = |source| EncodedError::Io { path: path.to_path_buf(), source };
    let fail =
        |e: parquet::errors::ParquetError| EncodedError::Parquet { path: path.to_path_buf(), message: e.to_string() };
    let fields = names.iter().map(|n| Field::new(n, DataType::Float32, false)).chain([Field::new(
        target,
        DataType::UInt32,
        false,
    )]);
    let schema = Arc::new(ArrowSchema::new(fields.collect::<Vec<_>>()));
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    let partial = PathBuf::from(name);
    let file = File::create(&partial).map_err(io)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(CHUNK))
        .build();
    let mut writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props)).map_err(fail)?;
    let width = names.len();
    for (chunk, labels) in rows.chunks(CHUNK * width).zip(labels.chunks(CHUNK)) {
        let mut arrays: Vec<ArrayRef> = (0..width)
            .map(|c| Arc::new(chunk.chunks_exact(width).map(|r| r[c]).collect::<Float32Array>()) as ArrayRef)
            .collect();
        arrays.push(Arc::new(labels.iter().map(|&l| l as u32).collect::<UInt32Array>()));
        let batch = RecordBatch::try_new(schema.clone(), arrays)
            .map_err(|e| EncodedError::Parquet { path: path.to_path_buf(), message: e.to_string() })?;
        writer.write(&batch).map_err(fail)?;
    }
    writer.close().map_err(fail)?;
    std::fs::rename(&partial, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::Schema;
    use crate::data::table::{Input, Table};

    const SCHEMA: &str = r#"
name = "toy"
[target]
column = "y"
favourable = "yes"
classes = [{ name = "no", values = ["0"] }, { name = "yes", values = ["1"] }]
[[feature]]
name = "age"
kind = "integer"
[[feature]]
name = "job"
kind = "categorical"
categories = ["a", "b"]
"#;

    fn encoding() -> Encoding {
        let schema = Schema::from_toml(SCHEMA, "toy.toml").unwrap();
        let bytes = b"age,job,y\n20,a,0\n60,b,1\n".to_vec();
        let table = Table::read(&schema, &[Input { name: "toy.csv".into(), bytes, skip_lines: 0 }]).unwrap();
        Encoding::fit(&table, &[0, 1]).unwrap()
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cent-encoded-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn test_csv_has_the_model_columns_then_the_class() {
        let enc = encoding();
        let path = dir("csv").join("train.csv");
        let rows = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.25, 0.0, 1.0];
        assert_eq!(write(&path, &enc, "y", &rows, &[0, 1, 1]).unwrap(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "age,job=a,job=b,y\n0,1,0,0\n1,0,1,1\n0.25,0,1,1\n");
    }

    #[test]
    fn test_parquet_reads_back_the_same_values() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let enc = encoding();
        let path = dir("parquet").join("train.parquet");
        let rows: Vec<f32> = (0..300).map(|i| (i % 7) as f32 / 7.0).collect();
        let labels: Vec<usize> = (0..100).map(|i| i % 2).collect();
        assert_eq!(write(&path, &enc, "y", &rows, &labels).unwrap(), 100);
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap().build().unwrap();
        let (mut values, mut classes) = (Vec::new(), Vec::new());
        for batch in reader {
            let batch = batch.unwrap();
            let names: Vec<_> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
            assert_eq!(names, ["age", "job=a", "job=b", "y"]);
            use arrow_array::cast::AsArray;
            use arrow_array::types::{Float32Type, UInt32Type};
            for r in 0..batch.num_rows() {
                values.extend((0..3).map(|c| batch.column(c).as_primitive::<Float32Type>().value(r)));
                classes.push(batch.column(3).as_primitive::<UInt32Type>().value(r) as usize);
            }
        }
        assert_eq!((values, classes), (rows, labels));
        assert!(!path.with_extension("parquet.partial").exists());
    }

    #[test]
    fn test_bad_shapes_names_and_formats_are_refused() {
        let enc = encoding();
        let d = dir("bad");
        let err = |path: &Path, target: &str, rows: &[f32], labels: &[usize]| {
            write(path, &enc, target, rows, labels).unwrap_err().to_string()
        };
        assert!(err(&d.join("a.csv"), "y", &[0.0; 4], &[0]).contains("4 values and 1 labels"));
        assert!(err(&d.join("a.csv"), "job=a", &[0.0; 3], &[0]).contains("`job=a`"));
        assert!(err(&d.join("a.json"), "y", &[0.0; 3], &[0]).contains("CSV (.csv"));
        assert!(err(&d.join("no/such/dir/a.csv"), "y", &[0.0; 3], &[0]).contains("a.csv"));
    }
}
