//! Splitting an evaluation across machines: `evaluate --shard K/N` judges the submissions whose
//! shard is K, and `merge` puts the N shard files back together.
//!
//! A submission's shard is a hash of its dataset's name and its key (year, problem, id), never
//! of its row position or of which other datasets are named: re-running a shard with the same
//! data always picks the same submissions, whichever host runs it.
//!
//! Each shard keeps its results in `<local-results-path>/<dataset>.shard-K-of-N.jsonl` (the same
//! crash-safe resume cache as a one-box run) and a sidecar `<dataset>.shard-K-of-N.json` that
//! records the options that change results, so that `merge` can refuse shards that were made
//! differently, and a resumed shard refuses to continue with other options.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::SubmissionKey;

/// Shard K of N (`K/N` on the command line, K from 0 to N-1 like `$SLURM_ARRAY_TASK_ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("expected K/N with 0 <= K < N (e.g. 0/4), got {text:?}");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard (0..count) of a submission of `dataset`.
pub fn shard_of(dataset: &str, key: &SubmissionKey, count: u32) -> u32 {
    let mut h = blake3::Hasher::new();
    for part in [
        dataset.as_bytes(),
        key.year.to_string().as_bytes(),
        key.problem_id.as_bytes(),
        key.id.as_bytes(),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.finalize().as_bytes()[..8]);
    // Multiply-shift maps the uniform 64-bit hash onto 0..count without a modulo bias.
    ((u64::from_le_bytes(first) as u128 * count as u128) >> 64) as u32
}

impl Shard {
    /// Whether this shard judges the submission `key` of `dataset`.
    pub fn contains(&self, dataset: &str, key: &SubmissionKey) -> bool {
        shard_of(dataset, key, self.count) == self.index
    }

    /// The name of this shard's results of `dataset` (the results file is `<name>.jsonl`).
    pub fn results_stem(&self, dataset: &str) -> String {
        format!("{dataset}.shard-{}-of-{}", self.index, self.count)
    }

    pub fn results_path(&self, dir: &Path, dataset: &str) -> PathBuf {
        dir.join(format!("{}.jsonl", self.results_stem(dataset)))
    }

    pub fn sidecar_path(&self, dir: &Path, dataset: &str) -> PathBuf {
        dir.join(format!("{}.json", self.results_stem(dataset)))
    }
}

/// What a shard records about itself next to its results.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRecord {
    pub dataset: String,
    pub shard: Shard,
    /// The options that change results (compared by `merge` and on resume).
    pub settings: Map<String, Value>,
    /// Every submission of the shard was judged by the last run.
    pub complete: bool,
    /// Submissions of the shard that cannot be judged (no such problem), left out of the
    /// results as a one-box run leaves them out.
    pub left_out: Vec<SubmissionKey>,
}

impl ShardRecord {
    fn to_json(&self) -> Value {
        json!({
            "dataset": self.dataset,
            "shard": self.shard.to_string(),
            "complete": self.complete,
            "settings": self.settings,
            "left_out": self.left_out.iter()
                .map(|k| json!({"year": k.year, "problem_id": k.problem_id, "id": k.id}))
                .collect::<Vec<_>>(),
        })
    }

    /// Reads a sidecar; errors name the file and the field.
    pub fn read(path: &Path) -> Result<ShardRecord> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a shard record (malformed JSON)", path.display()))?;
        let field = |name: &str| {
            value
                .get(name)
                .with_context(|| format!("{}: field `{name}` is missing", path.display()))
        };
        let shard = field("shard")?
            .as_str()
            .with_context(|| format!("{}: field `shard` must be a string", path.display()))?
            .parse::<Shard>()
            .map_err(|e| anyhow::anyhow!("{}: field `shard`: {e}", path.display()))?;
        let mut left_out = Vec::new();
        if let Some(list) = value.get("left_out") {
            let bad = || {
                format!(
                    "{}: field `left_out` must be a list of keys",
                    path.display()
                )
            };
            for item in list.as_array().with_context(bad)? {
                left_out.push(SubmissionKey {
                    year: item["year"].as_i64().with_context(bad)?,
                    problem_id: item["problem_id"].as_str().with_context(bad)?.to_string(),
                    id: item["id"].as_str().with_context(bad)?.to_string(),
                });
            }
        }
        Ok(ShardRecord {
            left_out,
            dataset: field("dataset")?
                .as_str()
                .with_context(|| format!("{}: field `dataset` must be a string", path.display()))?
                .to_string(),
            shard,
            settings: field("settings")?
                .as_object()
                .with_context(|| format!("{}: field `settings` must be an object", path.display()))?
                .clone(),
            complete: field("complete")?.as_bool().with_context(|| {
                format!("{}: field `complete` must be true or false", path.display())
            })?,
        })
    }

    /// Writes the sidecar atomically (temporary file, sync, rename): a reader on another host
    /// sees the old record or the new one, never half of one.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.to_json())?;
        super::write_atomically(path, ".shard-record-", text.as_bytes())
    }
}

/// Opens a shard's record before judging: a new shard writes it; a shard being resumed must
/// have been started with the same settings (or `override_existing` starts it over).
pub fn begin(
    dir: &Path,
    dataset: &str,
    shard: Shard,
    settings: &Map<String, Value>,
    override_existing: bool,
) -> Result<ShardRecord> {
    let path = shard.sidecar_path(dir, dataset);
    let results = shard.results_path(dir, dataset);
    if path.exists() && !override_existing {
        let old = ShardRecord::read(&path)?;
        let diffs = super::settings::differences(&old.settings, settings);
        if !diffs.is_empty() {
            bail!(
                "{}: shard {shard} of `{dataset}` was started with other settings than this \
                 run's, and its results would mix with them:\n  {}\nRun it with the same \
                 options, or add --override to start it over",
                path.display(),
                diffs.join("\n  ")
            );
        }
    } else if results.exists() && !override_existing {
        bail!(
            "{}: shard results without their record {}; add --override to start the shard over",
            results.display(),
            path.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let record = ShardRecord {
        dataset: dataset.to_string(),
        shard,
        settings: settings.clone(),
        complete: false,
        left_out: Vec::new(),
    };
    record.write(&path)?;
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> SubmissionKey {
        SubmissionKey {
            year: 2024,
            problem_id: "nile".into(),
            id: id.into(),
        }
    }

    #[test]
    fn shard_syntax() {
        assert_eq!("3/8".parse::<Shard>(), Ok(Shard { index: 3, count: 8 }));
        for bad in ["8/8", "0/0", "3", "-1/4", "a/b", "1/"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 1, count: 3 }.to_string(), "1/3");
    }

    #[test]
    fn shards_are_stable_and_depend_on_dataset_and_id_only() {
        // Pinned values: a change of the function would send resumed shards other submissions.
        let pinned: Vec<u32> = (0..8)
            .map(|i| shard_of("model", &key(&format!("id-{i}")), 5))
            .collect();
        assert_eq!(
            pinned,
            [1, 4, 2, 1, 4, 4, 1, 1],
            "the shard function changed"
        );
        assert_eq!(
            shard_of("model", &key("x"), 7),
            shard_of("model", &key("x"), 7)
        );
        // Another dataset, year or problem spreads the same ids differently.
        let moved = (0..100)
            .filter(|i| {
                let k = key(&i.to_string());
                shard_of("model", &k, 4) != shard_of("other", &k, 4)
            })
            .count();
        assert!(moved > 50, "{moved}");
        // Every shard of a partition is one of 0..count.
        assert!((0..1000).all(|i| shard_of("m", &key(&i.to_string()), 3) < 3));
    }

    #[test]
    fn shards_are_balanced_on_10000_ids() {
        for count in [2u32, 3, 4, 8] {
            let mut sizes = vec![0usize; count as usize];
            for i in 0..10_000 {
                let id = format!("{:08x}-uuid-{i}", i * 7919);
                sizes[shard_of("model", &key(&id), count) as usize] += 1;
            }
            let mean = 10_000.0 / count as f64;
            for size in &sizes {
                let off = (*size as f64 - mean).abs() / mean;
                assert!(off < 0.05, "{count} shards: sizes {sizes:?}");
            }
        }
    }

    #[test]
    fn resuming_with_other_settings_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shard = Shard { index: 0, count: 2 };
        let a: Map<String, Value> = json!({"test_batch_size": 1}).as_object().unwrap().clone();
        let b: Map<String, Value> = json!({"test_batch_size": 2}).as_object().unwrap().clone();
        begin(dir.path(), "m", shard, &a, false).unwrap();
        begin(dir.path(), "m", shard, &a, false).unwrap();
        let err = format!(
            "{:#}",
            begin(dir.path(), "m", shard, &b, false).unwrap_err()
        );
        assert!(
            err.contains("test_batch_size: 1 vs 2") && err.contains("--override"),
            "{err}"
        );
        begin(dir.path(), "m", shard, &b, true).unwrap();
        let record = ShardRecord::read(&shard.sidecar_path(dir.path(), "m")).unwrap();
        assert_eq!(record.settings, b);
        assert!(!record.complete);
    }
}
