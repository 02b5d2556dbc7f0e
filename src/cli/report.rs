//! `ioi-run report`: the reports of results already written (by `evaluate`, `merge`, or the
//! Python pipeline), without judging again: markdown per problem and per dataset, and the HTML
//! report with plots.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::output::outln;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Results JSONL files, or results folders (their `<dataset>.jsonl` files; the shards of
    /// `evaluate --shard` are left out: `ioi-run merge` joins them first).
    #[arg(required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// Column holding each submission's id, for results written by the Python pipeline
    /// (ioi-run's own results carry `submission_id`).
    #[arg(long, default_value = "uuid", alias = "id_column")]
    id_column: String,
    /// Folder receiving reports/<dataset>/ [default: the first results folder, or the folder of
    /// the first results file].
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<i32> {
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None if args.results[0].is_dir() => args.results[0].clone(),
        None => args.results[0]
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    };
    let mut files = Vec::new();
    for path in &args.results {
        if path.is_dir() {
            let found = results_in(path)?;
            if found.is_empty() {
                return Err(crate::error::usage(anyhow::anyhow!(
                    "{}: no results file (<dataset>.jsonl) in this folder",
                    path.display()
                )));
            }
            files.extend(found);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(crate::error::usage(anyhow::anyhow!(
                "{}: no such results file or folder",
                path.display()
            )));
        }
    }
    let written = crate::evaluate::write_reports(&files, &out, &args.id_column)?;
    for path in written {
        outln!("{}", path.display());
    }
    Ok(0)
}

/// The results files of a folder, by name: `*.jsonl`, without hidden files (locks), shards and
/// the records of skipped input rows (`*.skipped.jsonl`).
fn results_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list {}", dir.display()))?
            .path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let results = name.ends_with(".jsonl") && !name.ends_with(crate::evaluate::skipped::SUFFIX);
        if path.is_file() && results && !name.starts_with('.') && !is_shard(name) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// `<dataset>.shard-K-of-N.jsonl`, as `evaluate --shard K/N` names its results.
fn is_shard(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return false;
    };
    let Some((_, shard)) = stem.rsplit_once(".shard-") else {
        return false;
    };
    matches!(shard.split_once("-of-"), Some((k, n))
        if !k.is_empty() && !n.is_empty()
            && k.bytes().all(|b| b.is_ascii_digit()) && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gives_its_results_files_without_locks_shards_or_skipped_rows() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "b.jsonl",
            "a.jsonl",
            ".a.jsonl.lock",
            "a.jsonl.bak",
            "a.shard-1-of-4.jsonl",
            "a.shard-1-of-4.json",
            "a.skipped.jsonl",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let found = results_in(dir.path()).unwrap();
        assert_eq!(
            found,
            [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")]
        );
        assert!(!is_shard("model.shard-x-of-4.jsonl"));
    }
}
