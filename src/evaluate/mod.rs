//! Everything around judging a dataset of submissions: reading the submissions (their files
//! found by [`crate::catalog`]), the results JSONL that doubles as the resume cache, the parquet export
//! in Hugging Face layout, the round-robin selection of 50 submissions, the markdown reports and the HTML report with plots.
//!
//! The scheduler that judges submissions sits between these pieces: it takes [`Submission`]s
//! from [`submissions`], produces `SubtaskResult`s, and hands them to [`ResultsFile::append`]
//! through [`result_row`]. Reports are built from results rows alone, so they can be regenerated
//! from any results JSONL without judging again.

pub mod demo;
pub(crate) mod export;
mod html;
pub(crate) mod html_compare;
pub(crate) mod html_report;
mod html_submissions;
mod lock;
pub mod merge;
pub(crate) mod overview;
mod plots;
mod report_rows;
pub(crate) mod report_source;
pub(crate) mod report_stats;
pub mod reports;
pub mod results;
pub(crate) mod roundrobin;
pub mod run;
pub mod settings;
pub mod shard;
pub(crate) mod skipped;
pub mod submissions;
pub(crate) mod summary;

pub use export::{export_results_file, write_parquet_dataset};
pub use lock::LOCK_PATTERN;
pub use reports::write_reports;
pub use results::{read_results, result_row, ResultsFile};
pub use submissions::{Submission, SubmissionKey, SubmissionOptions};

/// Writes `bytes` to `path` atomically (a temporary file beside it named with `prefix`, synced,
/// then renamed): a reader, on this host or another sharing the folder, sees the old file or the
/// new one, never half of one.
pub(crate) fn write_atomically(
    path: &std::path::Path,
    prefix: &str,
    bytes: &[u8],
) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(prefix)
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
