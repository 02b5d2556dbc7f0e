//! Results rows as a parquet dataset in Hugging Face layout, so that `datasets.load_dataset`
//! (or a push to the hub) reads them: `<out>/<config>/train-00000-of-00001.parquet` per
//! evaluated dataset, and `<out>/README.md` whose YAML header lists every config.
//!
//! The arrow schema is inferred from the rows themselves (arrow's JSON reader), so every field
//! of the submissions, whatever it is, goes through unchanged.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow::json::reader::{infer_json_schema_from_iterator, ReaderBuilder};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::{Map, Value};

use super::results::read_results;

/// File name of the single shard of a config's train split.
pub const SHARD_NAME: &str = "train-00000-of-00001.parquet";

const ROWS_PER_BATCH: usize = 256;

/// Writes `rows` as `<out_dir>/<config_name>/train-00000-of-00001.parquet` (replacing it) and
/// rewrites `<out_dir>/README.md` to list every config present. Returns the parquet path, or
/// `None` when there are no rows (nothing is written then).
pub fn write_parquet_dataset(
    rows: &[Map<String, Value>],
    out_dir: &Path,
    config_name: &str,
) -> Result<Option<PathBuf>> {
    if rows.is_empty() {
        return Ok(None);
    }
    let folder = out_dir.join(config_name);
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let path = folder.join(SHARD_NAME);
    let tmp = crate::scratch::TempFile::new(folder.join(format!(".{SHARD_NAME}.tmp")));
    write_parquet(rows, tmp.path()).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::rename(tmp.path(), &path)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    write_readme(out_dir)?;
    Ok(Some(path))
}

/// Exports a results JSONL as the config named after its stem (see [`write_parquet_dataset`]).
pub fn export_results_file(results_jsonl: &Path, out_dir: &Path) -> Result<Option<PathBuf>> {
    let config_name = results_jsonl
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .with_context(|| format!("{}: cannot name a config after it", results_jsonl.display()))?;
    let rows: Vec<Map<String, Value>> = read_results(results_jsonl)?
        .into_iter()
        .map(|r| r.fields)
        .collect();
    write_parquet_dataset(&rows, out_dir, &config_name)
}

fn write_parquet(rows: &[Map<String, Value>], path: &Path) -> Result<()> {
    let schema = infer_json_schema_from_iterator(rows.iter().map(|r| Ok(Value::Object(r.clone()))))
        .context("cannot infer a schema from the results rows")?;
    let schema = Arc::new(schema);
    let mut decoder = ReaderBuilder::new(schema.clone())
        .with_batch_size(ROWS_PER_BATCH)
        .with_coerce_primitive(true)
        .build_decoder()?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut writer = ArrowWriter::try_new(file, schema, Some(properties))?;
    for chunk in rows.chunks(ROWS_PER_BATCH) {
        decoder.serialize(chunk)?;
        if let Some(batch) = decoder.flush()? {
            writer.write(&batch)?;
        }
    }
    writer.close()?;
    Ok(())
}

/// The dataset card: a YAML header with one config per folder holding a train shard.
fn write_readme(out_dir: &Path) -> Result<()> {
    let mut configs = Vec::new();
    for entry in
        std::fs::read_dir(out_dir).with_context(|| format!("cannot list {}", out_dir.display()))?
    {
        let entry = entry.with_context(|| format!("cannot list {}", out_dir.display()))?;
        if entry.path().join(SHARD_NAME).is_file() {
            configs.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    configs.sort();
    let mut card = String::from("---\nconfigs:\n");
    for config in &configs {
        card.push_str(&format!(
            "- config_name: {config}\n  data_files:\n  - split: train\n    path: {config}/train-*\n"
        ));
    }
    card.push_str(
        "---\n\n# IOI evaluation results\n\n\
         Written by ioi-run: one config per evaluated dataset, one row per submission. \
         Markdown reports are under `reports/<config>/`.\n",
    );
    let path = out_dir.join("README.md");
    std::fs::write(&path, card).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::read_rows;
    use serde_json::json;

    #[test]
    fn rows_round_trip_through_parquet_in_hub_layout() {
        let rows: Vec<Map<String, Value>> = [
            json!({"uuid": "a", "year": 2024, "target_subtask": null, "code_compiles": true,
                   "metadata": {"usage": {"output_tokens": 12}},
                   "all_subtasks_points": 7.0,
                   "all_subtasks_results": [{"subtask": "01", "points": 7, "weighted_score": 7.0,
                        "test_results": [{"test_name": "t", "score": 1.0, "feedback": null}]}]}),
            json!({"uuid": "b", "year": 2024, "target_subtask": null, "code_compiles": false,
                   "all_subtasks_points": 0.0,
                   "all_subtasks_results": [{"subtask": "01", "points": 7, "weighted_score": 0.0,
                        "test_results": [{"test_name": "t", "score": 0.0, "feedback": "x",
                                          "time": 0.25}]}]}),
        ]
        .iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = write_parquet_dataset(&rows, dir.path(), "model-a")
            .unwrap()
            .unwrap();
        assert_eq!(
            path,
            dir.path().join("model-a/train-00000-of-00001.parquet")
        );
        write_parquet_dataset(&rows[..1], dir.path(), "model-b").unwrap();
        assert_eq!(
            write_parquet_dataset(&[], dir.path(), "model-c").unwrap(),
            None
        );

        let back: Vec<_> = read_rows(&path, None)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].str("uuid").unwrap(), "a");
        assert_eq!(back[0].int("year").unwrap(), 2024);
        assert_eq!(
            back[0].fields["metadata"],
            json!({"usage": {"output_tokens": 12}})
        );
        let test = &back[1].fields["all_subtasks_results"][0]["test_results"][0];
        assert_eq!(test["feedback"], json!("x"));
        assert_eq!(test["time"], json!(0.25));
        assert_eq!(
            back[1].fields["all_subtasks_results"][0]["points"],
            json!(7)
        );

        let jsonl = dir.path().join("model-d.jsonl");
        let text: String = rows
            .iter()
            .map(|r| format!("{}\n", Value::Object(r.clone())))
            .collect();
        std::fs::write(&jsonl, text).unwrap();
        let out = dir.path().join("hub");
        let exported = export_results_file(&jsonl, &out).unwrap().unwrap();
        assert_eq!(exported, out.join("model-d").join(SHARD_NAME));
        assert_eq!(read_rows(&exported, None).unwrap().count(), 2);

        let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
        assert!(card.starts_with(
            "---\nconfigs:\n- config_name: model-a\n  data_files:\n  - split: train\n    path: model-a/train-*\n- config_name: model-b\n"
        ), "{card}");
        assert!(!card.contains("model-c"));
    }
}
