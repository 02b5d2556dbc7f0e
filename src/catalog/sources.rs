//! Problem and test sources as a command names them (`--problems`, `--tests`): local paths as
//! they are, hub ids downloaded; CMS and TPS task folders, or folders of them, told apart from
//! open-r1/ioi rows by a `problem.json`; and `--tests`'s default, the open-r1 test cases, with a
//! hint naming local test files when the default cannot be had.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::problem::Problem;

/// What a task folder says about its problem before anything runs: a CMS folder is read
/// whole; a TPS package gives its id, name and limits (its subtasks and tests are only known
/// once `gen/data` is made, when the problem is first judged).
pub fn folder_header(dir: &Path) -> Result<Problem> {
    if crate::problem::tps::is_tps(dir) {
        Ok(crate::problem::tps::TpsPackage::read(dir)?.header())
    } else {
        Ok(crate::problem::cms::load_cms(dir)?.0)
    }
}

/// The task folders of a `--problems` source: itself, or its children holding `problem.json`,
/// sorted.
pub fn task_folders(source: &Path) -> Result<Vec<PathBuf>> {
    if source.join("problem.json").is_file() {
        return Ok(vec![source.to_path_buf()]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(source)
        .with_context(|| format!("cannot list {}", source.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("problem.json").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Whether a `--problems` source is a CMS task folder or a folder of them (no tests needed).
pub fn is_cms_source(path: &Path) -> bool {
    path.join("problem.json").is_file() || (path.is_dir() && has_cms_children(path))
}

fn has_cms_children(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.path().join("problem.json").is_file())
        })
        .unwrap_or(false)
}

/// Resolves `--problems`/`--tests` items: local paths as they are, hub ids downloaded.
pub fn resolve_sources(items: &[String]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for item in items {
        let path = Path::new(item);
        if path.exists() {
            out.push(path.to_path_buf());
        } else if super::hub::is_hub_id(item) {
            for source in super::hub::resolve(item, None)? {
                out.extend(source.files);
            }
        } else {
            return Err(crate::error::usage(anyhow::anyhow!(
                "{item}: no such file or folder, and not a Hugging Face dataset id"
            )));
        }
    }
    Ok(out)
}

/// The test cases `--tests` defaults to.
pub const DEFAULT_TESTS: &str = "open-r1/ioi-test-cases";

/// Resolves `--tests`: the sources given, or [`DEFAULT_TESTS`] when none was. When the default
/// cannot be had (offline, not in the hub cache), the error says it was the default and how to
/// give local test cases, naming any file or folder beside `near` (the problems, the datasets)
/// that looks like test cases.
pub fn resolve_tests(given: &[String], near: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if !given.is_empty() {
        return resolve_sources(given);
    }
    resolve_sources(&[DEFAULT_TESTS.to_string()]).map_err(|e| {
        let hint = match local_test_candidates(near).as_slice() {
            [] => String::new(),
            found => format!(
                " (here: {})",
                found
                    .iter()
                    .map(|p| format!("--tests {}", p.display()))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        };
        crate::error::usage(e.context(format!(
            "--tests was not given, so its default, the Hugging Face dataset {DEFAULT_TESTS}, \
             was tried; give local test cases with --tests FILE or FOLDER{hint}"
        )))
    })
}

/// Files and folders beside `near` whose name says they hold tests (`*test*.parquet`,
/// `*test*.jsonl`, a `*test*` folder), at most three.
fn local_test_candidates(near: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for path in near {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let Ok(entries) = std::fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let candidate = entry.path();
            let name = entry.file_name().to_string_lossy().to_lowercase();
            // A folder only with test-case files in it: a source tree's `tests/` is no answer.
            let is_dataset = |path: &Path| crate::dataset::Format::of(path).is_some();
            let kind_fits = is_dataset(&candidate)
                || (candidate.is_dir()
                    && std::fs::read_dir(&candidate)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .any(|inner| is_dataset(&inner.path())));
            let taken = near.iter().any(|n| n == &candidate) || found.contains(&candidate);
            if name.contains("test") && kind_fits && !taken && !is_cms_source(&candidate) {
                found.push(candidate);
            }
        }
    }
    found.sort();
    found.truncate(3);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with `problem.json` in it: a task folder as far as the catalog can tell.
    fn task(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("problem.json"), "{}").unwrap();
        dir.to_path_buf()
    }

    #[test]
    fn task_folders_are_told_from_rows_and_listed_in_order() {
        let root = tempfile::tempdir().unwrap();
        let tasks = root.path().join("tasks");
        let (b, a) = (task(&tasks.join("b")), task(&tasks.join("a")));
        std::fs::create_dir(tasks.join("notes")).unwrap();
        let rows = root.path().join("problems.parquet");
        std::fs::write(&rows, "").unwrap();
        assert!(is_cms_source(&tasks) && is_cms_source(&a));
        assert!(!is_cms_source(&rows) && !is_cms_source(&tasks.join("notes")));
        assert_eq!(task_folders(&tasks).unwrap(), [a.clone(), b]);
        assert_eq!(task_folders(&a).unwrap(), [a]);
    }

    #[test]
    fn a_source_that_is_no_path_nor_hub_id_is_a_usage_error() {
        let error = resolve_sources(&["no/such/file.parquet".to_string()]).unwrap_err();
        assert_eq!(
            crate::error::class_of(&error),
            Some(crate::error::ErrorClass::Usage)
        );
        assert!(
            error.to_string().contains("no such file or folder"),
            "{error}"
        );
    }

    #[test]
    fn test_files_beside_the_problems_are_suggested_and_task_folders_are_not() {
        let root = tempfile::tempdir().unwrap();
        let problems = root.path().join("problems.parquet");
        std::fs::write(&problems, "").unwrap();
        std::fs::write(root.path().join("ioi-test-cases.parquet"), "").unwrap();
        std::fs::write(root.path().join("notes.txt"), "").unwrap();
        task(&root.path().join("test-task"));
        // A folder of code named `tests` is no source of test cases; one of parquet files is.
        let code = root.path().join("tests");
        std::fs::create_dir(&code).unwrap();
        std::fs::write(code.join("main.rs"), "").unwrap();
        let rows = root.path().join("test-rows");
        std::fs::create_dir(&rows).unwrap();
        std::fs::write(rows.join("part-0.parquet"), "").unwrap();
        assert_eq!(
            local_test_candidates(&[problems]),
            [root.path().join("ioi-test-cases.parquet"), rows]
        );
    }
}
