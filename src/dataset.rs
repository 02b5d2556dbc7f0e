//! Tabular inputs (problems, submissions) read row by row from JSON Lines or parquet files.
//!
//! Every row comes back as a JSON object together with where it came from, so that any error
//! about it can name the file, the row and the field. Parquet rows are decoded a record batch at
//! a time, so a large file is never held whole in memory.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use serde_json::{Map, Value};

/// One row of a dataset file, as a JSON object, with its location.
#[derive(Debug, Clone)]
pub struct Row {
    pub file: Arc<PathBuf>,
    /// 0-based row number within the file (messages count from 1, as people and JSON parsers do).
    pub index: usize,
    pub fields: Map<String, Value>,
}

impl Row {
    /// Where this row is, for error messages: `file row N`, N counted from 1 (for JSON Lines,
    /// the line number).
    pub fn location(&self) -> String {
        format!("{} row {}", self.file.display(), self.index + 1)
    }

    /// A field that may be absent or null.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.fields.get(field).filter(|v| !v.is_null())
    }

    /// An error about this row (and `field`, when one is at fault): `file row N: what`.
    pub fn error(&self, field: Option<&str>, what: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(RowError {
            file: self.file.to_path_buf(),
            row: self.index + 1,
            field: field.map(str::to_string),
            what: what.into(),
        })
    }

    /// A required string field.
    pub fn str(&self, field: &str) -> Result<&str> {
        match self.get(field) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.error(
                Some(field),
                format!("field `{field}` must be a string, found {}", kind(other)),
            )),
            None => Err(self.missing(field)),
        }
    }

    /// A required integer field (integers written as strings or floats like `2024.0` are accepted).
    pub fn int(&self, field: &str) -> Result<i64> {
        match self.get(field) {
            Some(v) => as_int(v).ok_or_else(|| {
                self.error(
                    Some(field),
                    format!("field `{field}` must be an integer, found {v}"),
                )
            }),
            None => Err(self.missing(field)),
        }
    }

    /// A required number field.
    pub fn float(&self, field: &str) -> Result<f64> {
        match self.get(field) {
            Some(Value::Number(n)) => n.as_f64().context("unreachable: number without f64"),
            Some(Value::String(s)) => s.trim().parse().map_err(|_| {
                self.error(
                    Some(field),
                    format!("field `{field}` must be a number, found {s:?}"),
                )
            }),
            Some(other) => Err(self.error(
                Some(field),
                format!("field `{field}` must be a number, found {}", kind(other)),
            )),
            None => Err(self.missing(field)),
        }
    }

    fn missing(&self, field: &str) -> anyhow::Error {
        self.error(Some(field), format!("required field `{field}` is missing"))
    }
}

/// What is wrong with one row of a dataset file: the file, the row (from 1; the line for JSON
/// Lines), the field at fault when there is one, and what is wrong. A row with such an error can
/// be skipped without doubting the rest of the file ([`RowPolicy`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} row {row}: {what}", file.display())]
pub struct RowError {
    pub file: PathBuf,
    pub row: usize,
    pub field: Option<String>,
    pub what: String,
}

impl RowError {
    /// The row error an error is about, if any (wrapped in any context).
    pub fn of(error: &anyhow::Error) -> Option<&RowError> {
        error.chain().find_map(|e| e.downcast_ref::<RowError>())
    }

    /// The record of a skipped row: `{file, row, field, error}`.
    pub fn record(&self, error: &anyhow::Error) -> Value {
        serde_json::json!({
            "file": self.file.display().to_string(),
            "row": self.row,
            "field": self.field,
            "error": format!("{error:#}"),
        })
    }
}

/// What to do with a row that cannot be read: skip it (with a warning naming the file, the row
/// and the field; it is counted and recorded), or, with `--strict`, refuse the whole input with
/// the same message. Errors that are not about one row (a file that cannot be opened, corrupt
/// parquet pages) always refuse.
#[derive(Debug, Default)]
pub struct RowPolicy {
    strict: bool,
    skipped: std::sync::Mutex<Skipped>,
}

/// The records of skipped rows, and the (file, row) pairs among them: a file read once per
/// problem (test cases) skips the same row each time, but it is one row.
#[derive(Debug, Default)]
struct Skipped {
    records: Vec<Value>,
    seen: std::collections::HashSet<(PathBuf, usize)>,
}

/// How many skipped rows are named in warnings; the record holds them all.
const SHOWN_SKIPS: usize = 20;

impl RowPolicy {
    pub fn new(strict: bool) -> RowPolicy {
        RowPolicy {
            strict,
            ..RowPolicy::default()
        }
    }

    /// Skips the row `error` is about (Ok), or returns the error as bad input.
    pub fn skip_or_refuse(&self, error: anyhow::Error) -> Result<()> {
        match RowError::of(&error) {
            Some(row) if !self.strict => {
                let record = row.record(&error);
                if let Ok(mut skipped) = self.skipped.lock() {
                    if !skipped.seen.insert((row.file.clone(), row.row)) {
                        return Ok(());
                    }
                    // Named one by one up to a point; all of them are in the record.
                    match skipped.records.len() {
                        n if n < SHOWN_SKIPS => tracing::warn!("skipped a bad row: {error:#}"),
                        SHOWN_SKIPS => tracing::warn!(
                            "more bad rows skipped in {} and after: not shown, but recorded",
                            row.file.display()
                        ),
                        _ => {}
                    }
                    skipped.records.push(record);
                }
                Ok(())
            }
            _ => Err(crate::error::bad_input(error)),
        }
    }

    /// The rows skipped so far, as `{file, row, field, error}` records.
    pub fn skipped(&self) -> Vec<Value> {
        self.skipped
            .lock()
            .map(|s| s.records.clone())
            .unwrap_or_default()
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A short name of a JSON value's kind, for error messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The formats a dataset file can have, told by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonLines,
    Parquet,
}

impl Format {
    /// `.jsonl`/`.json`/`.ndjson` are JSON Lines, `.parquet` is parquet, anything else is `None`.
    pub fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "jsonl" | "json" | "ndjson" => Some(Format::JsonLines),
            "parquet" => Some(Format::Parquet),
            _ => None,
        }
    }
}

/// Reads the rows of one jsonl or parquet file. With `columns`, parquet files decode only those
/// columns (absent ones are simply missing from the rows).
pub fn read_rows(
    path: &Path,
    columns: Option<&[&str]>,
) -> Result<Box<dyn Iterator<Item = Result<Row>> + Send>> {
    let file = Arc::new(path.to_path_buf());
    match Format::of(path) {
        Some(Format::JsonLines) => read_jsonl(file),
        Some(Format::Parquet) => read_parquet(file, columns),
        None => bail!(
            "{}: unknown dataset format (expected .jsonl or .parquet)",
            path.display()
        ),
    }
}

fn read_jsonl(file: Arc<PathBuf>) -> Result<Box<dyn Iterator<Item = Result<Row>> + Send>> {
    let reader = BufReader::new(
        File::open(&*file).with_context(|| format!("cannot open {}", file.display()))?,
    );
    let rows = reader
        .lines()
        .enumerate()
        .filter(|(_, line)| line.as_ref().map(|l| !l.trim().is_empty()).unwrap_or(true))
        .map(move |(index, line)| {
            let number = index + 1;
            let error = |what: String| {
                anyhow::Error::new(RowError {
                    file: file.to_path_buf(),
                    row: number,
                    field: None,
                    what,
                })
            };
            // A line that is not UTF-8 is consumed whole: the next line reads as usual.
            let line = match line {
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(error("not UTF-8 text".to_string()))
                }
                line => {
                    line.with_context(|| format!("{} row {number}: cannot read", file.display()))?
                }
            };
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(fields)) => Ok(Row {
                    file: file.clone(),
                    index,
                    fields,
                }),
                Ok(other) => Err(error(format!(
                    "expected a JSON object, found {}",
                    kind(&other)
                ))),
                Err(e) => Err(error(format!("malformed JSON: {e}"))),
            }
        });
    Ok(Box::new(rows))
}

fn read_parquet(
    file: Arc<PathBuf>,
    columns: Option<&[&str]>,
) -> Result<Box<dyn Iterator<Item = Result<Row>> + Send>> {
    let handle = File::open(&*file).with_context(|| format!("cannot open {}", file.display()))?;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(handle)
        .with_context(|| format!("{}: not a readable parquet file", file.display()))?
        .with_batch_size(64);
    if let Some(columns) = columns {
        let schema = builder.parquet_schema();
        let wanted: Vec<usize> = (0..schema.num_columns())
            .filter(|&i| {
                let root = schema.column(i).path().parts()[0].clone();
                columns.contains(&root.as_str())
            })
            .collect();
        let mask = ProjectionMask::leaves(schema, wanted);
        builder = builder.with_projection(mask);
    }
    let batches = builder
        .build()
        .with_context(|| format!("{}: cannot decode parquet", file.display()))?;
    let mut next_index = 0usize;
    let rows = batches.flat_map(move |batch| {
        let start = next_index;
        let decoded = batch
            .with_context(|| format!("{}: corrupt parquet data after row {start}", file.display()))
            .and_then(|batch| {
                next_index += batch.num_rows();
                batch_to_objects(&batch).with_context(|| {
                    format!(
                        "{}: cannot decode rows from row {}",
                        file.display(),
                        start + 1
                    )
                })
            });
        let file = file.clone();
        let out: Vec<Result<Row>> = match decoded {
            Ok(objects) => objects
                .into_iter()
                .enumerate()
                .map(|(i, fields)| {
                    Ok(Row {
                        file: file.clone(),
                        index: start + i,
                        fields,
                    })
                })
                .collect(),
            Err(e) => vec![Err(e)],
        };
        out
    });
    Ok(Box::new(rows))
}

/// Converts an arrow record batch to JSON objects, one per row (arrow's own JSON writer does the
/// nested types: lists of pairs, structs such as `metadata.usage`).
fn batch_to_objects(batch: &arrow::record_batch::RecordBatch) -> Result<Vec<Map<String, Value>>> {
    let mut buf = Vec::new();
    {
        let mut writer = arrow::json::ArrayWriter::new(&mut buf);
        writer.write(batch)?;
        writer.finish()?;
    }
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice(&buf)?)
}

/// All dataset files (jsonl/parquet) under a folder, sorted, or the file itself.
pub fn files_under(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        bail!("{}: no such file or folder", path.display());
    }
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot list {}", path.display()))?;
        if entry.file_type().is_file() && Format::of(entry.path()).is_some() {
            files.push(entry.into_path());
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::record_batch::RecordBatch;

    #[test]
    fn jsonl_rows_carry_their_location_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subs.jsonl");
        std::fs::write(&path, "{\"a\": \"x\", \"n\": 3}\n\n[1]\n").unwrap();
        let rows: Vec<_> = read_rows(&path, None).unwrap().collect();
        assert_eq!(rows.len(), 2);
        let first = rows[0].as_ref().unwrap();
        assert_eq!(first.str("a").unwrap(), "x");
        assert_eq!(first.int("n").unwrap(), 3);
        let err = first.str("missing").unwrap_err().to_string();
        assert!(
            err.contains("subs.jsonl row 1") && err.contains("`missing`"),
            "{err}"
        );
        let err = first.str("n").unwrap_err().to_string();
        assert!(err.contains("must be a string"), "{err}");
        let err = rows[1].as_ref().unwrap_err().to_string();
        assert!(
            err.contains("row 3") && err.contains("expected a JSON object"),
            "{err}"
        );
    }

    #[test]
    fn parquet_rows_decode_with_projection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let batch = RecordBatch::try_from_iter(vec![
            (
                "id",
                std::sync::Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
            ),
            (
                "n",
                std::sync::Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(
            File::create(&path).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let rows: Vec<Row> = read_rows(&path, Some(&["n"]))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2].index, 2);
        assert_eq!(rows[2].int("n").unwrap(), 3);
        assert!(rows[2].get("id").is_none());
    }
}
