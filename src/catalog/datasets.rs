//! Datasets of submissions as a command names them: local files, folders of them, globs, or
//! Hugging Face dataset ids, each resolved to its files and the name its outputs take. Hub ids
//! are only tried for strings that name no local path, so everything works offline from local
//! files.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::dataset::{files_under, Format};

/// One dataset of submissions: where its rows are and the name its outputs take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSource {
    /// Names the results file (`<config_name>.jsonl`), the parquet config and the reports folder.
    pub config_name: String,
    /// What the dataset was called on the command line (a path or a hub id).
    pub origin: String,
    /// Its jsonl/parquet files, in reading order.
    pub files: Vec<PathBuf>,
}

/// Resolves a comma-separated list of datasets (local files, folders, globs, hub ids) into
/// datasets with distinct config names. Hub ids are only tried for strings that name no local
/// path, so everything works offline from local files.
pub fn resolve_datasets(list: &str) -> Result<Vec<DatasetSource>> {
    let mut sources: Vec<DatasetSource> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        for source in resolve_one(item)? {
            if let Some(other) = sources.iter().find(|s| s.config_name == source.config_name) {
                bail!(
                    "datasets `{}` and `{}` would both be named `{}` in the results; rename one",
                    other.origin,
                    source.origin,
                    source.config_name
                );
            }
            sources.push(source);
        }
    }
    if sources.is_empty() {
        bail!("no dataset to evaluate in `{list}`");
    }
    Ok(sources)
}

fn resolve_one(item: &str) -> Result<Vec<DatasetSource>> {
    let path = Path::new(item);
    if path.exists() {
        return Ok(vec![local_source(path).map_err(crate::error::usage)?]);
    }
    if item.contains(['*', '?', '[']) {
        let pattern = glob::glob(item).with_context(|| format!("`{item}`: invalid glob"))?;
        let mut matches = Vec::new();
        for entry in pattern {
            let entry = entry.with_context(|| format!("`{item}`: cannot list a match"))?;
            if entry.is_dir() || Format::of(&entry).is_some() {
                matches.push(entry);
            }
        }
        if !matches.is_empty() {
            matches.sort();
            return matches
                .iter()
                .map(|m| local_source(m).map_err(crate::error::usage))
                .collect();
        }
    }
    if super::hub::is_hub_id(item) {
        return super::hub::resolve(item, None);
    }
    Err(crate::error::usage(anyhow::anyhow!(
        "`{item}`: no such file or folder, no local match, and not a Hugging Face dataset id \
         (org/name)"
    )))
}

fn local_source(path: &Path) -> Result<DatasetSource> {
    if super::sources::is_cms_source(path) {
        let what = match path.join("problem.json").is_file() {
            true => "a task folder (CMS or TPS)",
            false => "a folder of task folders (CMS or TPS)",
        };
        return Err(crate::error::usage(anyhow::anyhow!(
            "{}: {what}, not a dataset of submissions: give it with --problems \
             (ioi-run evaluate SUBMISSIONS RESULTS --problems {0}), or judge one solution on a \
             task with ioi-run judge TASK SOLUTION.cpp",
            path.display()
        )));
    }
    let files = files_under(path)?;
    if path.is_file() && Format::of(path).is_none() {
        bail!(
            "{}: not a dataset file (expected .parquet or .jsonl)",
            path.display()
        );
    }
    if files.is_empty() {
        bail!("{}: no .parquet or .jsonl file under it", path.display());
    }
    let name = match path.is_dir() {
        true => path
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_owned())),
        false => path.file_stem().map(|n| n.to_owned()),
    };
    let config_name = name
        .map(|n| n.to_string_lossy().into_owned())
        .with_context(|| format!("{}: cannot name a dataset after it", path.display()))?;
    Ok(DatasetSource {
        config_name,
        origin: path.display().to_string(),
        files,
    })
}
