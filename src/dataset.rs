//! Tabular inputs (problems, submissions) read row by row from JSON Lines or parquet files.
//!
//! Every row comes back as a JSON object together with where it came from, so that any error
//! about it can name the file, the row and the field. Parquet rows are decoded a record batch at
//! a time, so a large file is never held whole in memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
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

/// Bounds in bytes on the rows of an untrusted file: a JSON Lines line, and any one string
/// field at the top of a row. A row past either is an error naming it (and the field), read no
/// further than needed to skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowBounds {
    pub line_bytes: u64,
    pub field_bytes: usize,
}

impl RowBounds {
    /// No bound (problems and test cases, whose inputs may be large).
    pub const NONE: RowBounds = RowBounds {
        line_bytes: u64::MAX,
        field_bytes: usize::MAX,
    };
    /// Submissions: a field as large as the largest solution `judge` reads (16 MiB), a line as
    /// large as four of them.
    pub const SUBMISSIONS: RowBounds = RowBounds {
        line_bytes: 64 << 20,
        field_bytes: 16 << 20,
    };
}

/// Reads the rows of one jsonl or parquet file. With `columns`, parquet files decode only those
/// columns (absent ones are simply missing from the rows).
pub fn read_rows(
    path: &Path,
    columns: Option<&[&str]>,
) -> Result<Box<dyn Iterator<Item = Result<Row>> + Send>> {
    read_rows_within(path, columns, RowBounds::NONE)
}

/// [`read_rows`] with bounds in bytes on each row.
pub fn read_rows_within(
    path: &Path,
    columns: Option<&[&str]>,
    bounds: RowBounds,
) -> Result<Box<dyn Iterator<Item = Result<Row>> + Send>> {
    let file = Arc::new(path.to_path_buf());
    match Format::of(path) {
        Some(Format::JsonLines) => read_jsonl(file, bounds),
        Some(Format::Parquet) => read_parquet(file, columns, bounds),
        None => bail!(
            "{}: unknown dataset format (expected .jsonl or .parquet)",
            path.display()
        ),
    }
}

fn read_jsonl(
    file: Arc<PathBuf>,
    bounds: RowBounds,
) -> Result<Box<dyn Iterator<Item = Result<Row>> + Send>> {
    let reader = BufReader::new(
        File::open(&*file).with_context(|| format!("cannot open {}", file.display()))?,
    );
    let lines = BoundedLines {
        reader,
        bound: bounds.line_bytes,
    };
    let rows = lines
        .enumerate()
        .filter(|(_, line)| match line {
            Ok(Line::Text(text)) => !text.trim_ascii().is_empty(),
            _ => true,
        })
        .map(move |(index, line)| {
            let number = index + 1;
            let error = |field: Option<&str>, what: String| {
                anyhow::Error::new(RowError {
                    file: file.to_path_buf(),
                    row: number,
                    field: field.map(str::to_string),
                    what,
                })
            };
            let line = match line
                .with_context(|| format!("{} row {number}: cannot read", file.display()))?
            {
                Line::Text(text) => text,
                Line::Over { length, largest } => {
                    let over = format!(
                        "a line of {length} bytes, over the {} MiB a row may take",
                        bounds.line_bytes >> 20
                    );
                    return Err(match largest {
                        Some((field, bytes)) => error(
                            Some(&field),
                            format!("{over}; field `{field}` holds {bytes} bytes of it"),
                        ),
                        None => error(None, over),
                    });
                }
            };
            // A line that is not UTF-8 is consumed whole: the next line reads as usual.
            let Ok(line) = String::from_utf8(line) else {
                return Err(error(None, "not UTF-8 text".to_string()));
            };
            let fields = match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(fields)) => fields,
                Ok(other) => {
                    return Err(error(
                        None,
                        format!("expected a JSON object, found {}", kind(&other)),
                    ))
                }
                Err(e) => return Err(error(None, format!("malformed JSON: {e}"))),
            };
            if let Some((field, length)) = oversized_field(&fields, bounds.field_bytes) {
                return Err(error(Some(&field), over_bound(&field, length, bounds)));
            }
            Ok(Row {
                file: file.clone(),
                index,
                fields,
            })
        });
    Ok(Box::new(rows))
}

/// One line of a JSON Lines file: its text (without the line end), or a line over the bound,
/// skipped without being held: its length, and its largest field with that field's length.
enum Line {
    Text(Vec<u8>),
    Over {
        length: u64,
        largest: Option<(String, u64)>,
    },
}

/// The lines of a file, each read only as far as the bound. No crate reads bounded lines and
/// skips the rest of one without holding it; `BufRead::lines` holds a line whatever its length.
struct BoundedLines<R> {
    reader: R,
    bound: u64,
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = std::io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut line = Vec::new();
        let read = (&mut self.reader)
            .take(self.bound.saturating_add(1))
            .read_until(b'\n', &mut line);
        let read = match read {
            Ok(0) => return None,
            Ok(n) => n as u64,
            Err(e) => return Some(Err(e)),
        };
        if line.last() == Some(&b'\n') || read <= self.bound {
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
            }
            return Some(Ok(Line::Text(line)));
        }
        let mut fields = FieldSizes::default();
        fields.scan(&line);
        drop(line);
        Some(self.skip_line(&mut fields).map(|rest| Line::Over {
            length: read + rest,
            largest: fields.largest,
        }))
    }
}

impl<R: BufRead> BoundedLines<R> {
    /// Consumes the rest of a line and its end, through `fields`; the bytes of it, its end
    /// left out.
    fn skip_line(&mut self, fields: &mut FieldSizes) -> std::io::Result<u64> {
        let mut skipped = 0;
        loop {
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                return Ok(skipped);
            }
            match buffer.iter().position(|&c| c == b'\n') {
                Some(end) => {
                    fields.scan(&buffer[..end]);
                    self.reader.consume(end + 1);
                    return Ok(skipped + end as u64);
                }
                None => {
                    let n = buffer.len();
                    fields.scan(buffer);
                    skipped += n as u64;
                    self.reader.consume(n);
                }
            }
        }
    }
}

/// The largest value at the top of a JSON object seen a chunk at a time, to name the field of
/// a line too long to parse. Only strings, nesting and the separators are followed: what is
/// not a JSON object still gets a line's length, with no field.
#[derive(Default)]
struct FieldSizes {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The last string closed at the object's top (a key when a `:` follows), cut short.
    string: Vec<u8>,
    /// The key whose value is being read, and its bytes so far.
    key: Option<String>,
    value_bytes: u64,
    largest: Option<(String, u64)>,
}

impl FieldSizes {
    /// Longest key kept.
    const KEY_BYTES: usize = 256;

    fn scan(&mut self, bytes: &[u8]) {
        for &c in bytes {
            // The value as written: its strings' quotes and contents, no blank around it, not
            // the `,` or `}` that ends it.
            let ends = !self.in_string && self.depth == 1 && matches!(c, b',' | b'}');
            if self.key.is_some() && !ends && (self.in_string || !c.is_ascii_whitespace()) {
                self.value_bytes += 1;
            }
            if self.in_string {
                match (self.escaped, c) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    (false, c) => {
                        if self.depth == 1
                            && self.key.is_none()
                            && self.string.len() < Self::KEY_BYTES
                        {
                            self.string.push(c);
                        }
                    }
                }
                continue;
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.key.is_none() {
                        self.string.clear();
                    }
                }
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    if self.depth == 1 {
                        self.end_value();
                    }
                    self.depth = self.depth.saturating_sub(1);
                }
                b':' if self.depth == 1 && self.key.is_none() => {
                    self.key = Some(String::from_utf8_lossy(&self.string).into_owned());
                    self.value_bytes = 0;
                }
                b',' if self.depth == 1 => self.end_value(),
                _ => {}
            }
        }
    }

    fn end_value(&mut self) {
        if let Some(key) = self.key.take() {
            if self
                .largest
                .as_ref()
                .is_none_or(|(_, n)| self.value_bytes > *n)
            {
                self.largest = Some((key, self.value_bytes));
            }
        }
    }
}

/// The first string field at the top of a row longer than `bound` bytes, and its length.
fn oversized_field(fields: &Map<String, Value>, bound: usize) -> Option<(String, usize)> {
    fields.iter().find_map(|(name, value)| match value {
        Value::String(text) if text.len() > bound => Some((name.clone(), text.len())),
        _ => None,
    })
}

fn over_bound(field: &str, length: usize, bounds: RowBounds) -> String {
    format!(
        "field `{field}` holds {length} bytes, over the {} MiB a field may hold",
        bounds.field_bytes >> 20
    )
}

fn read_parquet(
    file: Arc<PathBuf>,
    columns: Option<&[&str]>,
    bounds: RowBounds,
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
                let oversized = oversized_values(&batch, bounds.field_bytes);
                let kept = match oversized.iter().any(Option::is_some) {
                    false => batch,
                    true => {
                        let keep: arrow::array::BooleanArray =
                            oversized.iter().map(|o| Some(o.is_none())).collect();
                        arrow::compute::filter_record_batch(&batch, &keep)?
                    }
                };
                let objects = batch_to_objects(&kept).with_context(|| {
                    format!(
                        "{}: cannot decode rows from row {}",
                        file.display(),
                        start + 1
                    )
                })?;
                Ok((oversized, objects))
            });
        let file = file.clone();
        let out: Vec<Result<Row>> = match decoded {
            Ok((oversized, objects)) => {
                let mut objects = objects.into_iter();
                oversized
                    .into_iter()
                    .enumerate()
                    .map(|(i, over)| {
                        let row = Row {
                            file: file.clone(),
                            index: start + i,
                            fields: Map::new(),
                        };
                        match over {
                            Some((field, length)) => {
                                Err(row.error(Some(&field), over_bound(&field, length, bounds)))
                            }
                            None => Ok(Row {
                                fields: objects.next().unwrap_or_default(),
                                ..row
                            }),
                        }
                    })
                    .collect()
            }
            Err(e) => vec![Err(e)],
        };
        out
    });
    Ok(Box::new(rows))
}

/// For each row of a batch, its first top-level string or binary value longer than `bound`
/// bytes (the column's name and the value's length), read from the arrays' offsets: such a
/// value is never copied into a row.
fn oversized_values(
    batch: &arrow::record_batch::RecordBatch,
    bound: usize,
) -> Vec<Option<(String, usize)>> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::DataType;
    let mut oversized = vec![None; batch.num_rows()];
    for (column, field) in batch.columns().iter().zip(batch.schema().fields()) {
        let length = |i: usize| -> usize {
            match column.data_type() {
                DataType::Utf8 => column.as_string::<i32>().value_length(i) as usize,
                DataType::LargeUtf8 => column.as_string::<i64>().value_length(i) as usize,
                DataType::Binary => column.as_binary::<i32>().value_length(i) as usize,
                DataType::LargeBinary => column.as_binary::<i64>().value_length(i) as usize,
                _ => 0,
            }
        };
        for (i, slot) in oversized.iter_mut().enumerate() {
            if slot.is_none() && !column.is_null(i) && length(i) > bound {
                *slot = Some((field.name().clone(), length(i)));
            }
        }
    }
    oversized
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

    fn write_parquet(path: &Path, batch: &RecordBatch) {
        let mut w =
            parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None)
                .unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
    }

    const SMALL: RowBounds = RowBounds {
        line_bytes: 100,
        field_bytes: 20,
    };

    fn outcome(row: &Result<Row>) -> String {
        match row {
            Ok(row) => format!("ok {}", row.str("id").unwrap()),
            Err(e) => {
                let at = RowError::of(e).unwrap();
                format!("row {} field {:?}: {e:#}", at.row, at.field)
            }
        }
    }

    #[test]
    fn jsonl_rows_over_their_bounds_are_named_and_the_next_rows_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subs.jsonl");
        let long_line = format!("{{\"id\": \"b\", \"x\": \"{}\"}}", "y".repeat(5000));
        let long_field = format!("{{\"id\": \"c\", \"code\": \"{}\"}}", "z".repeat(21));
        let last = "{\"id\": \"e\", \"code\": \"ok\"}";
        let text =
            format!("{{\"id\": \"a\"}}\n{long_line}\r\n{long_field}\n{{\"id\": \"d\"}}\n{last}");
        std::fs::write(&path, text).unwrap();
        let rows: Vec<String> = read_rows_within(&path, None, SMALL)
            .unwrap()
            .map(|r| outcome(&r))
            .collect();
        assert_eq!(rows[0], "ok a");
        assert!(
            rows[1].starts_with("row 2 field Some(\"x\"):")
                && rows[1].contains(&format!("a line of {} bytes, over", long_line.len() + 1))
                && rows[1].contains("field `x` holds 5002 bytes of it"),
            "{rows:?}"
        );
        assert!(
            rows[2].starts_with("row 3 field Some(\"code\"):")
                && rows[2].contains("field `code` holds 21 bytes"),
            "{rows:?}"
        );
        assert_eq!(&rows[3..], ["ok d", "ok e"]);
        // Without bounds the same file reads whole.
        let all: Vec<String> = read_rows(&path, None)
            .unwrap()
            .map(|r| outcome(&r))
            .collect();
        assert_eq!(all, ["ok a", "ok b", "ok c", "ok d", "ok e"]);
    }

    #[test]
    fn parquet_values_over_the_bound_are_named_without_being_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let long = "x".repeat(21);
        let batch = RecordBatch::try_from_iter(vec![
            (
                "id",
                std::sync::Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
            ),
            (
                "code",
                std::sync::Arc::new(StringArray::from(vec![
                    Some("int main(){}"),
                    Some(long.as_str()),
                    None,
                ])) as ArrayRef,
            ),
        ])
        .unwrap();
        write_parquet(&path, &batch);
        let rows: Vec<String> = read_rows_within(&path, None, SMALL)
            .unwrap()
            .map(|r| outcome(&r))
            .collect();
        assert_eq!(rows[0], "ok a");
        assert!(
            rows[1].starts_with("row 2 field Some(\"code\"):")
                && rows[1].contains("holds 21 bytes"),
            "{rows:?}"
        );
        assert_eq!(rows[2], "ok c");
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
        write_parquet(&path, &batch);
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
