//! The record of the input rows an evaluation skipped as unreadable (docs/results.md#skipped-rows):
//! beside the results, so that what was left out of them is written down with them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

/// How the record's name ends (readers of a results folder leave it out).
pub const SUFFIX: &str = ".skipped.jsonl";

/// Where the rows of a dataset's input that were skipped as unreadable are recorded, beside
/// its results: `<results stem>.skipped.jsonl`, one `{file, row, field, error}` a line.
pub fn path(dir: &Path, results_stem: &str) -> PathBuf {
    dir.join(format!("{results_stem}{SUFFIX}"))
}

/// Writes skipped-row records to `path` (atomically), or removes `path` when there are none.
/// Returns whether a record was written.
pub fn write(path: &Path, skipped: &[Value]) -> Result<bool> {
    if skipped.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", path.display()))
            }
            _ => Ok(false),
        };
    }
    let text: String = skipped.iter().map(|r| format!("{r}\n")).collect();
    let staging = path.with_extension("jsonl.partial");
    std::fs::write(&staging, text)
        .and_then(|_| std::fs::rename(&staging, path))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}
