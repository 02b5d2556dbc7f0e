//! `ioi-run merge`: the shard files of `evaluate --shard K/N` back into exactly what a one-box
//! `evaluate` writes (the results JSONL, the parquet dataset, the reports).
//!
//! Nothing is written unless every shard is there and complete, no submission appears twice
//! or in the wrong shard, and every shard was made with the same result-changing options: a
//! merge either gives the whole evaluation or names what is wrong. The merged rows follow the
//! dataset's row order, so merging the same shards twice gives the same bytes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

use super::settings::{self, JudgedProblems};
use super::shard::{shard_of, Shard, ShardRecord};
use super::submissions::load_dataset;
use super::{read_results, Submission, SubmissionKey, SubmissionOptions};
use crate::catalog::DatasetSource;

/// What a merge wrote.
#[derive(Debug, Default)]
pub struct Merged {
    pub results_files: Vec<PathBuf>,
    pub parquet_files: Vec<PathBuf>,
    pub reports: Vec<PathBuf>,
    /// Rows merged, over all datasets.
    pub rows: usize,
}

/// Merges the shards of every dataset found in `local_results_path`, then writes the parquet
/// dataset and the reports into `results_dir`.
pub fn merge(
    datasets: &[DatasetSource],
    local_results_path: &Path,
    results_dir: &Path,
) -> Result<Merged> {
    // Everything is checked before anything is written.
    let mut merged = Vec::new();
    let mut id_column = None;
    for dataset in datasets {
        let one = merge_dataset(dataset, local_results_path)?;
        id_column.get_or_insert(one.id_column.clone());
        merged.push((dataset, one));
    }
    let mut out = Merged::default();
    for (dataset, one) in &merged {
        let path = local_results_path.join(format!("{}.jsonl", dataset.config_name));
        write_results(&path, &one.rows)?;
        // The merged results are a one-box run's: a later `evaluate` into them resumes only
        // with the same settings.
        settings::write(
            &settings::sidecar_path(local_results_path, &dataset.config_name),
            &one.settings,
        )?;
        super::skipped::write(
            &super::skipped::path(local_results_path, &dataset.config_name),
            &one.skipped,
        )?;
        out.rows += one.rows.len();
        out.results_files.push(path);
    }
    for path in &out.results_files {
        if let Some(parquet) = super::export_results_file(path, results_dir)? {
            out.parquet_files.push(parquet);
        }
    }
    let id_column = id_column.unwrap_or_else(|| "uuid".to_string());
    out.reports = super::write_reports(&out.results_files, results_dir, &id_column)?;
    Ok(out)
}

/// The shard records of `dataset` found in `dir`, by shard.
fn find_records(dir: &Path, dataset: &str) -> Result<Vec<(Shard, PathBuf)>> {
    let prefix = format!("{dataset}.shard-");
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(middle) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".json"))
        else {
            continue;
        };
        let Some((k, n)) = middle.split_once("-of-") else {
            continue;
        };
        if let Ok(shard) = format!("{k}/{n}").parse::<Shard>() {
            found.push((shard, entry.path()));
        }
    }
    found.sort_by_key(|(shard, _)| (shard.count, shard.index));
    Ok(found)
}

/// Checks the shards of one dataset and returns its merged rows in dataset order, with the
/// id column the shards used.
fn merge_dataset(dataset: &DatasetSource, dir: &Path) -> Result<MergedDataset> {
    let name = &dataset.config_name;
    let shards = check_shards(name, dir)?;
    let id_column = match shards.reference.settings.get("id_column") {
        Some(Value::String(column)) => column.clone(),
        _ => bail!(
            "{}: field `settings.id_column` is missing",
            shards.reference_path.display()
        ),
    };
    let options = SubmissionOptions {
        id_column: id_column.clone(),
        ..SubmissionOptions::default()
    };
    // The same rows are skipped as in every shard (they are read before any shard is chosen).
    let rows_read = crate::dataset::RowPolicy::new(false);
    let submissions = load_dataset(dataset, &options, &rows_read)?;
    let rows = shard_rows(dataset, dir, shards.count, &id_column, &submissions)?;
    check_complete(name, dir, &shards, &submissions, &rows)?;
    Ok(MergedDataset {
        rows: rows.into_iter().flatten().map(|(row, _)| row).collect(),
        id_column,
        settings: shards.reference.settings,
        skipped: rows_read.skipped(),
    })
}

/// The shards of a dataset, checked to be one whole split judged with one set of settings.
struct Shards {
    count: u32,
    /// The first shard's record, whose settings every other shard's equal.
    reference: ShardRecord,
    reference_path: PathBuf,
    /// The submissions some shard left out as bad rows.
    left_out: HashSet<SubmissionKey>,
}

/// Finds the shards of dataset `name` in `dir` and checks that they are one split, judged with
/// the same settings, each with its results file.
fn check_shards(name: &str, dir: &Path) -> Result<Shards> {
    let records = find_records(dir, name)?;
    let Some((first, first_path)) = records.first().cloned() else {
        bail!(
            "no shard of dataset `{name}` in {}: expected {name}.shard-K-of-N.jsonl files written \
             by `ioi-run evaluate ... --shard K/N` with the same --local-results-path",
            dir.display()
        );
    };
    if let Some((other, path)) = records.iter().find(|(s, _)| s.count != first.count) {
        bail!(
            "dataset `{name}` has shards of two splits: {} (of {}) and {} (of {}); \
             remove the shards of the split you do not want",
            first_path.display(),
            first.count,
            path.display(),
            other.count
        );
    }
    let count = first.count;
    let reference = ShardRecord::read(&first_path)?;
    let mut present = vec![false; count as usize];
    let mut left_out = HashSet::new();
    for (shard, path) in &records {
        let record = ShardRecord::read(path)?;
        left_out.extend(record.left_out.iter().cloned());
        let diffs = settings::differences(&reference.settings, &record.settings);
        if !diffs.is_empty() {
            bail!(
                "shards of dataset `{name}` were judged with different settings, and their \
                 results would mix: {} and {} differ in\n  {}\nJudge the shards that differ \
                 again with the same options (`ioi-run evaluate ... --shard K/N --override`)",
                first_path.display(),
                path.display(),
                diffs.join("\n  ")
            );
        }
        present[shard.index as usize] = true;
    }
    for index in 0..count {
        let shard = Shard { index, count };
        let results = shard.results_path(dir, name);
        if !present[index as usize] || !results.is_file() {
            bail!(
                "shard {shard} of dataset `{name}` is missing: no {} (run `ioi-run evaluate ... \
                 --shard {shard}` for it)",
                results.display()
            );
        }
    }
    Ok(Shards {
        count,
        reference,
        reference_path: first_path,
        left_out,
    })
}

/// A row and where it came from (`file line N`, for duplicates).
type PlacedRow = (Map<String, Value>, String);

/// Every shard's rows at their submissions' places in the dataset; a row of no submission of
/// the dataset, in the wrong shard, or twice, is refused.
fn shard_rows(
    dataset: &DatasetSource,
    dir: &Path,
    count: u32,
    id_column: &str,
    submissions: &[Submission],
) -> Result<Vec<Option<PlacedRow>>> {
    let name = &dataset.config_name;
    let position: HashMap<SubmissionKey, usize> = submissions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key(), i))
        .collect();
    let mut rows: Vec<Option<PlacedRow>> = vec![None; submissions.len()];
    let mut judged = JudgedProblems::default();
    for index in 0..count {
        let shard = Shard { index, count };
        let path = shard.results_path(dir, name);
        for row in read_results(&path)? {
            let here = format!("{} line {}", path.display(), row.index + 1);
            let key = SubmissionKey::of_row(&row, id_column)
                .with_context(|| format!("{here}: cannot tell which submission this row is"))?;
            let Some(&at) = position.get(&key) else {
                bail!(
                    "{here}: submission {key} is not in dataset `{name}` ({})",
                    dataset.origin
                );
            };
            let belongs = shard_of(name, &key, count);
            if belongs != index {
                bail!("{here}: submission {key} belongs to shard {belongs}/{count}, not {shard}");
            }
            if let Some((_, first)) = &rows[at] {
                bail!("{here}: submission {key} appears twice (also at {first})");
            }
            judged.note(key.year, &key.problem_id, &row.fields, here.clone())?;
            rows[at] = Some((row.fields, here));
        }
    }
    Ok(rows)
}

/// Refuses a merge where a submission no shard left out has no row, naming its shard.
fn check_complete(
    name: &str,
    dir: &Path,
    shards: &Shards,
    submissions: &[Submission],
    rows: &[Option<PlacedRow>],
) -> Result<()> {
    let count = shards.count;
    let mut missing = vec![Vec::new(); count as usize];
    for (submission, row) in submissions.iter().zip(rows) {
        if row.is_none() && !shards.left_out.contains(&submission.key()) {
            missing[shard_of(name, &submission.key(), count) as usize].push(submission.key());
        }
    }
    if let Some((index, keys)) = missing.iter().enumerate().find(|(_, k)| !k.is_empty()) {
        let shard = Shard {
            index: index as u32,
            count,
        };
        bail!(
            "shard {shard} of dataset `{name}` is incomplete: {} submission(s) have no results \
             in {} (the first: {}); run `ioi-run evaluate ... --shard {shard}` again, it resumes",
            keys.len(),
            shard.results_path(dir, name).display(),
            keys[0]
        );
    }
    Ok(())
}

/// The merged rows of one dataset in dataset order, the id column and the settings every shard
/// was judged with.
struct MergedDataset {
    rows: Vec<Map<String, Value>>,
    id_column: String,
    settings: settings::Settings,
    /// The dataset's rows skipped as unreadable, as one-box `evaluate` records them.
    skipped: Vec<Value>,
}

/// Writes the merged results atomically. A different file already there (a one-box run's
/// results, or an older merge) is kept as `.jsonl.bak` rather than lost.
fn write_results(path: &Path, rows: &[Map<String, Value>]) -> Result<()> {
    let mut text = String::new();
    for row in rows {
        text.push_str(&serde_json::to_string(row).context("cannot serialise a results row")?);
        text.push('\n');
    }
    if let Ok(old) = std::fs::read(path) {
        if old == text.as_bytes() {
            return Ok(());
        }
        let backup = path.with_extension("jsonl.bak");
        std::fs::rename(path, &backup)
            .with_context(|| format!("cannot move {} to {}", path.display(), backup.display()))?;
        eprintln!(
            "merge: the previous {} is kept as {}",
            path.display(),
            backup.display()
        );
    }
    super::write_atomically(path, ".merge-", text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::shard::begin;
    use crate::evaluate::ResultsFile;
    use serde_json::json;

    fn row(id: &str) -> Map<String, Value> {
        json!({"uuid": id, "problem_id": "p", "year": 2024, "code": "x",
               "code_compiles": true, "all_subtasks_points": 1.0, "all_subtasks_results": []})
        .as_object()
        .unwrap()
        .clone()
    }

    /// A dataset of `n` submissions and the shards of `count`, each holding its rows except
    /// those listed in `skip`.
    fn setup(n: usize, count: u32, skip: &[&str]) -> (tempfile::TempDir, DatasetSource) {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
        let data = dir.path().join("model.jsonl");
        let text: String = ids
            .iter()
            .map(|id| format!("{{\"uuid\":\"{id}\",\"problem_id\":\"p\",\"code\":\"x\"}}\n"))
            .collect();
        std::fs::write(&data, text).unwrap();
        let settings = json!({"id_column": "uuid", "test_batch_size": 1});
        let settings = settings.as_object().unwrap();
        let local = dir.path().join("local");
        for index in 0..count {
            let shard = Shard { index, count };
            begin(&local, "model", shard, settings, false).unwrap();
            let mut file =
                ResultsFile::open(&local, &shard.results_stem("model"), "uuid", false).unwrap();
            for id in &ids {
                let key = SubmissionKey {
                    year: 2024,
                    problem_id: "p".into(),
                    id: id.clone(),
                };
                if shard.contains("model", &key) && !skip.contains(&id.as_str()) {
                    file.append(&row(id)).unwrap();
                }
            }
        }
        let source = DatasetSource {
            config_name: "model".into(),
            origin: data.display().to_string(),
            files: vec![data],
        };
        (dir, source)
    }

    #[test]
    fn complete_shards_merge_in_dataset_order() {
        let (dir, source) = setup(20, 3, &[]);
        let local = dir.path().join("local");
        let out = merge(&[source], &local, &dir.path().join("out")).unwrap();
        assert_eq!(out.rows, 20);
        let rows = read_results(&local.join("model.jsonl")).unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r.str("uuid").unwrap()).collect();
        let expected: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
        assert_eq!(ids, expected);
        assert_eq!(out.parquet_files.len(), 1);
        assert!(dir.path().join("out/reports/model/README.md").is_file());
    }

    #[test]
    fn rows_every_shard_skipped_are_recorded_by_the_merge_too() {
        let (dir, source) = setup(6, 2, &[]);
        let local = dir.path().join("local");
        let mut data = std::fs::read_to_string(&source.files[0]).unwrap();
        data.push_str("{\"uuid\": \"x\"}\n");
        std::fs::write(&source.files[0], data).unwrap();
        let out = merge(&[source], &local, &dir.path().join("out")).unwrap();
        assert_eq!(out.rows, 6);
        let record = std::fs::read_to_string(local.join("model.skipped.jsonl")).unwrap();
        let record: Value = serde_json::from_str(record.trim()).unwrap();
        assert_eq!(record["row"], 7);
        assert_eq!(record["field"], "problem_id");
    }

    #[test]
    fn a_missing_or_incomplete_shard_is_refused_by_name() {
        let (dir, source) = setup(20, 3, &["s7"]);
        let local = dir.path().join("local");
        let err = format!(
            "{:#}",
            merge(std::slice::from_ref(&source), &local, dir.path()).unwrap_err()
        );
        assert!(
            err.contains("is incomplete") && err.contains("`s7`"),
            "{err}"
        );
        assert!(!local.join("model.jsonl").exists(), "nothing written");

        // A submission its shard left out (no such problem) is not waited for, as in a one-box
        // run, which leaves it out of the results.
        let key = SubmissionKey {
            year: 2024,
            problem_id: "p".into(),
            id: "s7".into(),
        };
        let shard = Shard {
            index: shard_of("model", &key, 3),
            count: 3,
        };
        let record_path = shard.sidecar_path(&local, "model");
        let mut record = ShardRecord::read(&record_path).unwrap();
        record.left_out.push(key);
        record.write(&record_path).unwrap();
        let out = merge(std::slice::from_ref(&source), &local, dir.path()).unwrap();
        assert_eq!(out.rows, 19);

        let (dir, source) = setup(20, 3, &[]);
        let local = dir.path().join("local");
        std::fs::remove_file(local.join("model.shard-1-of-3.jsonl")).unwrap();
        let err = format!("{:#}", merge(&[source], &local, dir.path()).unwrap_err());
        assert!(
            err.contains("shard 1/3 of dataset `model` is missing"),
            "{err}"
        );
    }

    #[test]
    fn duplicates_and_mixed_options_are_refused() {
        let (dir, source) = setup(20, 2, &[]);
        let local = dir.path().join("local");
        // A row of shard 0 copied into shard 1.
        let zero = std::fs::read_to_string(local.join("model.shard-0-of-2.jsonl")).unwrap();
        let first = zero.lines().next().unwrap().to_string();
        let zero_path = local.join("model.shard-0-of-2.jsonl");
        std::fs::write(&zero_path, format!("{zero}{first}\n")).unwrap();
        let err = format!(
            "{:#}",
            merge(std::slice::from_ref(&source), &local, dir.path()).unwrap_err()
        );
        assert!(err.contains("appears twice"), "{err}");
        std::fs::write(&zero_path, &zero).unwrap();
        let one = local.join("model.shard-1-of-2.jsonl");
        let mut text = std::fs::read_to_string(&one).unwrap();
        text.push_str(&first);
        text.push('\n');
        std::fs::write(&one, text).unwrap();
        let err = format!("{:#}", merge(&[source], &local, dir.path()).unwrap_err());
        assert!(err.contains("belongs to shard 0/2, not 1/2"), "{err}");

        let (dir, source) = setup(20, 2, &[]);
        let local = dir.path().join("local");
        let path = Shard { index: 1, count: 2 }.sidecar_path(&local, "model");
        let mut record = ShardRecord::read(&path).unwrap();
        record.settings.insert("test_batch_size".into(), json!(4));
        record.write(&path).unwrap();
        let err = format!("{:#}", merge(&[source], &local, dir.path()).unwrap_err());
        assert!(
            err.contains("different settings") && err.contains("test_batch_size: 1 vs 4"),
            "{err}"
        );
    }

    #[test]
    fn rows_judged_on_other_problem_content_are_refused_and_a_merge_records_its_settings() {
        let (dir, source) = setup(20, 2, &[]);
        let local = dir.path().join("local");
        merge(std::slice::from_ref(&source), &local, dir.path()).unwrap();
        let recorded = settings::read(&settings::sidecar_path(&local, "model")).unwrap();
        assert_eq!(recorded["test_batch_size"], json!(1));

        // Shard 1 judged problem p on other tests than shard 0.
        for (index, hash) in [(0, "aaaa"), (1, "bbbb")] {
            let path = Shard { index, count: 2 }.results_path(&local, "model");
            let text: String = read_results(&path)
                .unwrap()
                .into_iter()
                .map(|row| {
                    let mut fields = row.fields;
                    fields.insert(settings::PROBLEM_HASH.into(), json!(hash));
                    serde_json::to_string(&fields).unwrap() + "\n"
                })
                .collect();
            std::fs::write(&path, text).unwrap();
        }
        let err = format!("{:#}", merge(&[source], &local, dir.path()).unwrap_err());
        assert!(
            err.contains("other content") && err.contains("model.shard-1-of-2.jsonl line 1"),
            "{err}"
        );
    }
}
