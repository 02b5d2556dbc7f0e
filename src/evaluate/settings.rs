//! How results were made. A verdict depends on more than the code: the compile profile, the
//! compiler and its flags, the runner, the test batch size (early stop), the time scale, the
//! problems and their tests, the ioi-run version. Results judged one way must never be
//! completed, resumed or merged with results judged another way, silently.
//!
//! Two records carry this, each cheap to compare:
//! - the run's settings, in a sidecar next to the results: `<dataset>.settings.json` for a
//!   one-box run, the shard record (`<dataset>.shard-K-of-N.json`) for a shard. A resumed run
//!   compares its settings with the sidecar before judging anything, `merge` compares the
//!   shards' records, and both refuse a difference naming every setting that differs.
//! - the content of the problem a row was judged on (limits, subtasks, grader files and every
//!   test's input and output), hashed when the problem is loaded and written into each row as
//!   `problem_hash`: tests are streamed one problem at a time, so their hash is known only
//!   then. A resumed run refuses to judge a problem whose content differs from the one its
//!   earlier rows were judged on, and `merge` refuses rows of one problem with two hashes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::SubmissionOptions;
use crate::judge::JudgeOptions;
use crate::problem::{Problem, TestSet};

/// The settings that can change a verdict, by name (compared as JSON values).
pub type Settings = Map<String, Value>;

/// The settings of an evaluation: the ioi-run version, how submissions are read, the test batch
/// size (early stop), the judge's own ([`JudgeOptions::recorded_settings`]) and the fingerprint
/// of the problems as loaded ([`Catalog::fingerprint`](crate::catalog::Catalog::fingerprint)).
pub fn of_evaluation(
    judge: &JudgeOptions,
    submissions: &SubmissionOptions,
    test_batch_size: usize,
    problems: String,
) -> Settings {
    let mut settings = Settings::new();
    settings.insert("ioi_run_version".into(), env!("CARGO_PKG_VERSION").into());
    settings.insert("id_column".into(), submissions.id_column.clone().into());
    settings.insert("test_batch_size".into(), test_batch_size.into());
    settings.extend(judge.recorded_settings());
    settings.insert("add_includes".into(), submissions.add_includes.into());
    settings.insert(
        "always_extract_code".into(),
        submissions.always_extract_code.into(),
    );
    settings.insert(
        "add_messages_column".into(),
        submissions.add_messages_column.into(),
    );
    settings.insert("problems".into(), problems.into());
    settings
}

/// The results field holding the hash of the problem a row was judged on.
pub const PROBLEM_HASH: &str = "problem_hash";

/// Every setting on which two records differ, as `name: a (then) vs b (now)`, in name order.
pub fn differences(old: &Settings, new: &Settings) -> Vec<String> {
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    let show = |v: Option<&Value>| v.map_or("(not set)".to_string(), |v| v.to_string());
    names
        .into_iter()
        .filter(|name| old.get(*name) != new.get(*name))
        .map(|name| format!("{name}: {} vs {}", show(old.get(name)), show(new.get(name))))
        .collect()
}

/// Where a one-box run records the settings of the results `<stem>.jsonl`.
pub fn sidecar_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}.settings.json"))
}

/// Reads a settings sidecar; errors name the file and the field.
pub fn read(path: &Path) -> Result<Settings> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a settings record (malformed JSON)", path.display()))?;
    value
        .get("settings")
        .and_then(Value::as_object)
        .cloned()
        .with_context(|| format!("{}: field `settings` must be an object", path.display()))
}

/// Writes a settings sidecar atomically (temporary file, sync, rename).
pub fn write(path: &Path, settings: &Settings) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let text = serde_json::to_string_pretty(&json!({ "settings": settings }))?;
    super::write_atomically(path, ".settings-", text.as_bytes())
}

/// Compares the settings of a one-box run with those its results were made with, before
/// anything is judged. `holds_rows`: the results file already has rows. With
/// `override_existing` (the results start over) or `dry` (nothing is written) the sidecar is
/// left alone; otherwise it is written.
pub fn begin(
    dir: &Path,
    stem: &str,
    settings: &Settings,
    holds_rows: bool,
    override_existing: bool,
    dry: bool,
) -> Result<()> {
    let path = sidecar_path(dir, stem);
    let results = dir.join(format!("{stem}.jsonl"));
    if !override_existing && path.exists() {
        let old = read(&path)?;
        let diffs = differences(&old, settings);
        if !diffs.is_empty() {
            // A refusal of the command as given, as every usage error (docs/exit-codes.md).
            return Err(crate::error::usage(anyhow::anyhow!(
                "{} were judged with other settings than this run's, and would mix with them:\n  \
                 {}\n(recorded in {}). Run again with the same options, give another results \
                 folder, or add --override to judge everything again (the old results are kept \
                 as {}.bak)",
                results.display(),
                diffs.join("\n  "),
                path.display(),
                results.display()
            )));
        }
    } else if !override_existing && holds_rows {
        return Err(crate::error::usage(anyhow::anyhow!(
            "{} holds results but no record of the settings they were judged with ({}): they \
             cannot be resumed safely. Give another results folder, or add --override to judge \
             everything again (the old results are kept as {}.bak)",
            results.display(),
            path.display(),
            results.display()
        )));
    }
    if !dry {
        write(&path, settings)?;
    }
    Ok(())
}

/// The hash of a problem as judged: everything about it (limits, subtasks, grader files) and
/// every test's input and output, by content.
pub fn problem_hash(problem: &Problem, tests: &TestSet) -> Result<String> {
    let mut h = blake3::Hasher::new();
    h.update(format!("{problem:?}").as_bytes());
    for (name, case) in &tests.cases {
        h.update(&(name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        for path in [&case.input, &case.output] {
            let mut file = std::fs::File::open(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            h.update(&len.to_le_bytes());
            std::io::copy(&mut file, &mut h)
                .with_context(|| format!("cannot read {}", path.display()))?;
        }
    }
    Ok(h.finalize().to_hex()[..16].to_string())
}

/// The problem hash of the rows of each problem, by (year, problem id) as the rows name it.
/// Rows without one (written by another tool) are not compared.
#[derive(Debug, Default, Clone)]
pub struct JudgedProblems(HashMap<(i64, String), (String, String)>);

impl JudgedProblems {
    /// Notes the hash of one row, `at` naming it for messages; a second hash for the same
    /// problem is an error naming both rows.
    pub fn note(
        &mut self,
        year: i64,
        problem_id: &str,
        row: &Map<String, Value>,
        at: String,
    ) -> Result<()> {
        let Some(hash) = row.get(PROBLEM_HASH).and_then(Value::as_str) else {
            return Ok(());
        };
        let key = (year, problem_id.to_lowercase());
        match self.0.get(&key) {
            Some((seen, first)) if seen != hash => bail!(
                "{at}: problem {problem_id} ({year}) was judged with other content (tests or \
                 grader files) than at {first} (problem_hash {hash} vs {seen}); judge the \
                 submissions of one problem against the same data"
            ),
            Some(_) => {}
            None => {
                self.0.insert(key, (hash.to_string(), at));
            }
        }
        Ok(())
    }

    /// The hash the rows of a problem were judged with, and where the first such row is. A
    /// problem of year 0 (a task folder that does not say its year) is the one of any year.
    pub fn of_problem(&self, year: i64, problem_id: &str) -> Option<&(String, String)> {
        let id = problem_id.to_lowercase();
        self.0
            .iter()
            .find(|((y, i), _)| *i == id && (year == 0 || *y == year))
            .map(|(_, seen)| seen)
    }

    pub fn merge_from(&mut self, other: &JudgedProblems) {
        for (key, value) in &other.0 {
            self.0.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(value: Value) -> Settings {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn every_difference_is_named() {
        let a = settings(json!({"compile_profile": "reference", "test_batch_size": 1, "x": 1}));
        let b = settings(json!({"compile_profile": "ioi", "test_batch_size": 1, "y": 2}));
        assert_eq!(
            differences(&a, &b),
            [
                "compile_profile: \"reference\" vs \"ioi\"",
                "x: 1 vs (not set)",
                "y: (not set) vs 2"
            ]
        );
        assert!(differences(&a, &a).is_empty());
    }

    #[test]
    fn a_resume_with_other_settings_is_refused_until_override() {
        let dir = tempfile::tempdir().unwrap();
        let a = settings(json!({"compile_profile": "reference", "time_scale": 1.0}));
        let b = settings(json!({"compile_profile": "ioi", "time_scale": 1.0}));
        begin(dir.path(), "model", &a, false, false, false).unwrap();
        begin(dir.path(), "model", &a, true, false, false).unwrap();
        let err = format!(
            "{:#}",
            begin(dir.path(), "model", &b, true, false, false).unwrap_err()
        );
        assert!(
            err.contains("compile_profile: \"reference\" vs \"ioi\"") && err.contains("--override"),
            "{err}"
        );
        // A dry run says the same and writes nothing.
        assert!(begin(dir.path(), "model", &b, true, false, true).is_err());
        assert_eq!(read(&sidecar_path(dir.path(), "model")).unwrap(), a);
        begin(dir.path(), "model", &b, true, true, false).unwrap();
        assert_eq!(read(&sidecar_path(dir.path(), "model")).unwrap(), b);
    }

    #[test]
    fn results_without_a_record_are_not_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let a = settings(json!({"compile_profile": "reference"}));
        let err = format!(
            "{:#}",
            begin(dir.path(), "model", &a, true, false, false).unwrap_err()
        );
        assert!(err.contains("no record of the settings"), "{err}");
        // An empty results file has nothing to mix with.
        begin(dir.path(), "model", &a, false, false, false).unwrap();
    }

    #[test]
    fn rows_of_one_problem_with_two_contents_are_refused() {
        let row = |hash: &str| settings(json!({ PROBLEM_HASH: hash }));
        let mut judged = JudgedProblems::default();
        judged
            .note(2024, "nile", &row("aa"), "r line 1".into())
            .unwrap();
        judged
            .note(2024, "Nile", &row("aa"), "r line 2".into())
            .unwrap();
        judged
            .note(2023, "nile", &row("bb"), "r line 3".into())
            .unwrap();
        judged
            .note(2024, "nile", &settings(json!({})), "r line 4".into())
            .unwrap();
        let err = format!(
            "{:#}",
            judged
                .note(2024, "nile", &row("cc"), "r line 5".into())
                .unwrap_err()
        );
        assert!(
            err.contains("r line 5") && err.contains("r line 1"),
            "{err}"
        );
        assert_eq!(judged.of_problem(2024, "NILE").unwrap().0, "aa");
        assert_eq!(judged.of_problem(2023, "nile").unwrap().0, "bb");
        assert!(judged.of_problem(2022, "nile").is_none());
    }
}
