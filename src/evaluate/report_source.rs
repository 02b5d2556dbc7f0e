//! The results rows as reports read them: streamed a line at a time, never a whole file in
//! memory, so that a report of 100 000 submissions holds only what it summarises. Each row is
//! remembered by where it lies in its file ([`RowSpan`]), and read again from there when the
//! HTML report shows that submission's code and tests.
//!
//! The rules are [`read_results`](super::results::read_results)'s: a last line without its
//! newline that is not JSON is a row cut by a kill and is left out; any other malformed line is
//! an error naming the file and line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::dataset::Row;

/// Where a row lies: which of the report's results files, and its bytes there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowSpan {
    pub file: u32,
    /// The row's line number, counted from 0.
    pub line: u32,
    pub offset: u64,
    pub len: u32,
}

/// The results files of one report, open for reading rows again by their span.
pub struct ResultsFiles {
    files: Vec<(Arc<PathBuf>, File)>,
}

impl ResultsFiles {
    pub fn new() -> ResultsFiles {
        ResultsFiles { files: Vec::new() }
    }

    /// Reads every row of `path` in order, handing each to `each` with its span.
    pub fn stream(
        &mut self,
        path: &Path,
        mut each: impl FnMut(Row, RowSpan) -> Result<()>,
    ) -> Result<()> {
        let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let number = u32::try_from(self.files.len()).context("too many results files")?;
        let shared = Arc::new(path.to_path_buf());
        let mut reader = BufReader::with_capacity(
            1 << 20,
            file.try_clone()
                .with_context(|| format!("cannot read {}", path.display()))?,
        );
        self.files.push((Arc::clone(&shared), file));
        let mut line = Vec::new();
        let mut offset = 0u64;
        for index in 0u32.. {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if read == 0 {
                break;
            }
            let span = RowSpan {
                file: number,
                line: index,
                offset,
                len: u32::try_from(read).with_context(|| {
                    format!("{} line {}: a row over 4 GiB", path.display(), index + 1)
                })?,
            };
            offset += read as u64;
            if let Some(row) = parse(&shared, index as usize, &line)? {
                each(row, span)?;
            }
        }
        Ok(())
    }

    /// The row at `span`, read again.
    pub fn read(&self, span: RowSpan) -> Result<Row> {
        let (path, file) = &self.files[span.file as usize];
        let mut bytes = vec![0; span.len as usize];
        file.read_exact_at(&mut bytes, span.offset)
            .with_context(|| format!("cannot read {} line {}", path.display(), span.line + 1))?;
        parse(path, span.line as usize, &bytes)?.with_context(|| {
            format!(
                "{} line {}: the row changed while the report was written",
                path.display(),
                span.line + 1
            )
        })
    }
}

impl Default for ResultsFiles {
    fn default() -> Self {
        ResultsFiles::new()
    }
}

/// One line as a row; `None` for a blank line or a cut last line.
fn parse(path: &Arc<PathBuf>, index: usize, line: &[u8]) -> Result<Option<Row>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let complete = line.ends_with(b"\n");
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(fields)) => Ok(Some(Row {
            file: Arc::clone(path),
            index,
            fields,
        })),
        // Only the last line can lack its newline: a row cut by a kill, left out.
        _ if !complete => Ok(None),
        Ok(_) => bail!(
            "{} line {}: expected a JSON object",
            path.display(),
            index + 1
        ),
        Err(e) => bail!(
            "{} line {}: malformed results row: {e}",
            path.display(),
            index + 1
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_streamed_and_read_again_by_span_and_a_cut_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "{\"a\":1}\n\n{\"a\":\"é\"}\n{\"a\":").unwrap();
        let mut files = ResultsFiles::new();
        let mut seen = Vec::new();
        files
            .stream(&path, |row, span| {
                seen.push((row.fields["a"].clone(), span));
                Ok(())
            })
            .unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].1.line, 2);
        let again = files.read(seen[1].1).unwrap();
        assert_eq!(again.fields["a"], "é");
        assert_eq!(again.location(), format!("{} row 3", path.display()));
    }

    #[test]
    fn a_malformed_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "{\"a\":1}\n[1]\n").unwrap();
        let err = ResultsFiles::new()
            .stream(&path, |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("r.jsonl line 2: expected a JSON object"),
            "{err}"
        );
    }
}
