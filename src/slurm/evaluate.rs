//! `evaluate` as a job array: which shards still have work (by their records), the array's
//! script and the merge job's, and their submission with the merge waiting for the array.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::script::{array_spec, quote, quote_all, sbatch_header};
use super::submit::submit;
use super::JobResources;
use crate::evaluate::shard::{Shard, ShardRecord};

/// What the jobs of one `slurm evaluate` are asked to do.
pub struct Request<'a> {
    /// DATASETS as the user wrote it (paths, globs or hub ids).
    pub datasets: &'a str,
    pub results_name: &'a str,
    /// The results folder, absolute: every node writes there.
    pub local: &'a Path,
    /// Number of shards.
    pub count: u32,
    /// The `evaluate` arguments every shard gets (its `--shard` and `--jobs` are added).
    pub evaluate_args: &'a [String],
    pub resources: &'a JobResources,
    /// The binary the jobs run and the folder they run in.
    pub binary: &'a str,
    pub chdir: &'a Path,
}

/// The planned jobs: the array of unfinished shards and the merge job.
pub struct Plan {
    pub count: u32,
    /// The shards still to run (none: only the merge job is submitted).
    pub todo: Vec<u32>,
    pub shards_script: String,
    pub merge_script: String,
    /// `<local>/slurm`: the scripts and `logs/`.
    pub dir: PathBuf,
}

/// The job ids of a submitted plan.
pub struct Submitted {
    pub shards: Option<String>,
    pub merge: String,
}

impl Plan {
    pub fn new(request: &Request) -> Result<Plan> {
        let config_names: Vec<String> = crate::catalog::resolve_datasets(request.datasets)?
            .into_iter()
            .map(|d| d.config_name)
            .collect();
        let count = request.count;
        let todo = unfinished_shards(&config_names, request.local, count);
        let dir = request.local.join("slurm");
        let logs = dir.join("logs");
        let job_name = format!(
            "ioi-run-{}",
            Path::new(request.results_name)
                .file_name()
                .map_or("evaluate".into(), |n| n.to_string_lossy().into_owned())
        );
        let binary = quote(request.binary);

        let mut shards_script = sbatch_header(
            &job_name,
            request.resources,
            &logs.join("shard-%a.log"),
            request.chdir,
        )?;
        shards_script.push_str(&format!("#SBATCH --array={}\n", array_spec(&todo)));
        shards_script.push_str(&format!(
            "set -eu\nexec {binary} evaluate {} --shard \"$SLURM_ARRAY_TASK_ID/{count}\" --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\"\n",
            quote_all(request.evaluate_args)
        ));
        let merge_resources = JobResources {
            cpus_per_task: 1,
            ..request.resources.clone()
        };
        let mut merge_script = sbatch_header(
            &format!("{job_name}-merge"),
            &merge_resources,
            &logs.join("merge.log"),
            request.chdir,
        )?;
        merge_script.push_str(&format!(
            "set -eu\nexec {binary} merge {} {} --local-results-path {}\n",
            quote(request.datasets),
            quote(request.results_name),
            quote(&request.local.to_string_lossy())
        ));
        Ok(Plan {
            count,
            todo,
            shards_script,
            merge_script,
            dir,
        })
    }

    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// Writes the scripts beside the logs (for the record), then submits the array, if any
    /// shard is unfinished, and the merge job after it (`afterok`: only when every shard
    /// succeeded).
    pub fn submit(&self) -> Result<Submitted> {
        let logs = self.logs();
        std::fs::create_dir_all(&logs)
            .with_context(|| format!("cannot create {}", logs.display()))?;
        for (name, text) in [
            ("shards.sbatch", &self.shards_script),
            ("merge.sbatch", &self.merge_script),
        ] {
            let path = self.dir.join(name);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        let mut merge_options = Vec::new();
        let shards = if self.todo.is_empty() {
            None
        } else {
            let id = submit(&self.shards_script, &[])?;
            merge_options.push(format!("--dependency=afterok:{id}"));
            merge_options.push("--kill-on-invalid-dep=yes".to_string());
            Some(id)
        };
        let merge = submit(&self.merge_script, &merge_options)?;
        Ok(Submitted { shards, merge })
    }
}

/// The shards not yet complete for every dataset (by their records).
fn unfinished_shards(datasets: &[String], local: &Path, count: u32) -> Vec<u32> {
    (0..count)
        .filter(|&index| {
            let shard = Shard { index, count };
            !datasets.iter().all(|name| {
                ShardRecord::read(&shard.sidecar_path(local, name))
                    .map(|r| r.complete)
                    .unwrap_or(false)
            })
        })
        .collect()
}
