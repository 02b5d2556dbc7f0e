//! `ioi-run slurm evaluate|serve`: the same binary, placed on a Slurm cluster by `sbatch`.
//!
//! `slurm evaluate` submits a job array of N shards (each `evaluate --shard
//! $SLURM_ARRAY_TASK_ID/N`) and a merge job; `slurm serve` submits N `ioi-run serve` workers
//! that open-r1's Piston client finds by their job names.
//!
//! The evaluate and serve options are passed to the jobs as the user wrote them (minus the
//! options of this command), so every option of `evaluate` and `serve` works here unchanged.
//! This file parses and prints; the jobs are planned and submitted by [`crate::slurm`].

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::slurm::{self, JobResources};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SlurmCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SlurmCommand {
    /// Evaluate datasets as a job array of shards plus a merge job.
    Evaluate(EvaluateArgs),
    /// Start N Piston-compatible workers as jobs named piston-worker-<port>.
    Serve(ServeArgs),
}

/// What every job asks of Slurm.
#[derive(Debug, Clone, clap::Args)]
struct JobOptions {
    /// CPUs of each job (the shard's or worker's --jobs).
    #[arg(long, default_value_t = 4)]
    cpus_per_task: usize,
    /// Memory of each job, in Slurm's syntax (`16G`).
    #[arg(long)]
    mem: Option<String>,
    /// Partition to run in.
    #[arg(long)]
    partition: Option<String>,
    /// Time limit of each job, in Slurm's syntax (`2:00:00`).
    #[arg(long)]
    time: Option<String>,
    /// Any other sbatch option, e.g. `--sbatch-arg=--qos=high` (repeatable).
    #[arg(long, allow_hyphen_values = true)]
    sbatch_arg: Vec<String>,
    /// Show the job scripts and the sbatch commands without submitting anything.
    #[arg(long)]
    print: bool,
}

/// Options of this command (not passed on to the jobs): with a value, and flags.
const JOB_VALUE_OPTIONS: &[&str] = &[
    "--cpus-per-task",
    "--mem",
    "--partition",
    "--time",
    "--sbatch-arg",
];
const JOB_FLAGS: &[&str] = &["--print"];

#[derive(Debug, clap::Args)]
pub struct EvaluateArgs {
    /// Number of shards (array tasks).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    shards: u32,
    #[command(flatten)]
    job: JobOptions,
    #[command(flatten)]
    evaluate: super::evaluate::Args,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Number of workers; worker i listens on port PORT+i.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    workers: u16,
    /// Folder of the workers' logs.
    #[arg(long, default_value = ".")]
    log_dir: PathBuf,
    #[command(flatten)]
    job: JobOptions,
    /// The options of `ioi-run serve` (checked here, passed on to the workers).
    #[command(flatten)]
    _serve: super::serve::Args,
}

pub fn run(args: Args) -> Result<i32> {
    let raw: Vec<String> = std::env::args().collect();
    match args.command {
        SlurmCommand::Evaluate(a) => evaluate(a, passed_on(&raw, "evaluate", &["--shards"])),
        SlurmCommand::Serve(a) => {
            // `serve`'s own --port (checked by clap) is the first worker's.
            let port = match option_value(&raw, "--port") {
                Some(text) => text
                    .parse::<u16>()
                    .with_context(|| format!("--port: expected a port number, got {text:?}"))?,
                None => 2000,
            };
            serve(
                a,
                port,
                passed_on(&raw, "serve", &["--workers", "--log-dir", "--port"]),
            )
        }
    }
}

/// The arguments after `slurm <command>` that belong to the jobs: everything but this
/// command's own options (`extra` with a value, plus [`JOB_VALUE_OPTIONS`] and [`JOB_FLAGS`]).
fn passed_on(raw: &[String], command: &str, extra: &[&str]) -> Vec<String> {
    let start = raw
        .iter()
        .position(|a| a == "slurm")
        .and_then(|i| {
            raw[i..]
                .iter()
                .position(|a| a == command)
                .map(|j| i + j + 1)
        })
        .unwrap_or(raw.len());
    let with_value = |name: &str| JOB_VALUE_OPTIONS.contains(&name) || extra.contains(&name);
    let mut out = Vec::new();
    let mut args = raw[start..].iter();
    while let Some(arg) = args.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        if with_value(name) {
            if !arg.contains('=') {
                args.next();
            }
        } else if !JOB_FLAGS.contains(&arg.as_str()) {
            out.push(arg.clone());
        }
    }
    out
}

/// The value of the last `name VALUE` or `name=VALUE` in `raw`.
fn option_value(raw: &[String], name: &str) -> Option<String> {
    let mut found = None;
    let mut args = raw.iter();
    while let Some(arg) = args.next() {
        if arg == name {
            found = args.next().cloned();
        } else if let Some(value) = arg.strip_prefix(&format!("{name}=")) {
            found = Some(value.to_string());
        }
    }
    found
}

impl JobOptions {
    fn resources(&self) -> JobResources {
        JobResources {
            cpus_per_task: self.cpus_per_task,
            mem: self.mem.clone(),
            partition: self.partition.clone(),
            time: self.time.clone(),
            sbatch_args: self.sbatch_arg.clone(),
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(current_dir()?.join(path))
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().context("cannot tell the current folder")
}

fn evaluate(args: EvaluateArgs, passed: Vec<String>) -> Result<i32> {
    let e = &args.evaluate;
    let refuse = |what: &str, why: &str| bail!("slurm evaluate: {what} cannot be used here: {why}");
    if e.demo {
        return refuse(
            "--demo",
            "give the demo's files (`evaluate --demo --dry-run` writes them)",
        );
    }
    if e.shard.is_some() {
        return refuse("--shard", "each array task gets its own");
    }
    if e.run.jobs.is_some() {
        return refuse("--jobs", "each shard uses its --cpus-per-task");
    }
    if e.dry_run {
        return refuse("--dry-run", "use --print to see the jobs");
    }
    if e.override_existing {
        return refuse(
            "--override",
            "shards must resume when submitted again; remove their files to start over",
        );
    }
    let datasets = e.datasets.clone().context("DATASETS is required")?;
    let results_name = e.results_name.clone().context("RESULTS_NAME is required")?;
    let local = absolute(
        &e.local_results_path
            .clone()
            .unwrap_or_else(|| PathBuf::from(&results_name)),
    )?;
    let plan = slurm::evaluate::Plan::new(&slurm::evaluate::Request {
        datasets: &datasets,
        results_name: &results_name,
        local: &local,
        count: args.shards,
        evaluate_args: &passed,
        resources: &args.job.resources(),
        binary: &slurm::this_binary()?,
        chdir: &current_dir()?,
    })?;

    if args.job.print {
        if plan.todo.is_empty() {
            println!("# every shard is complete: only the merge job would be submitted");
        } else {
            println!(
                "# shards.sbatch (submitted with: sbatch shards.sbatch)\n{}",
                plan.shards_script
            );
        }
        println!(
            "# merge.sbatch (submitted with: sbatch --dependency=afterok:<shards job id> --kill-on-invalid-dep=yes merge.sbatch)\n{}",
            plan.merge_script
        );
        return Ok(0);
    }
    let submitted = plan.submit()?;
    let logs = plan.logs();
    match &submitted.shards {
        None => println!(
            "every shard of {} is complete: submitting the merge only",
            plan.count
        ),
        Some(id) => println!(
            "shards: job {id} (array {} of {}), logs {}",
            slurm::script::array_spec(&plan.todo),
            plan.count,
            logs.join("shard-<K>.log").display()
        ),
    }
    let merge_id = &submitted.merge;
    println!(
        "merge:  job {merge_id}, log {}",
        logs.join("merge.log").display()
    );
    println!(
        "follow: squeue -j {merge_id} --me; results in {results_name} once job {merge_id} ends"
    );
    println!("after a failure, run the same command again: finished shards are left out, the others resume");
    Ok(0)
}

fn serve(args: ServeArgs, base: u16, passed: Vec<String>) -> Result<i32> {
    let log_dir = absolute(&args.log_dir)?;
    let jobs = slurm::serve::worker_jobs(
        base,
        args.workers,
        &passed,
        &args.job.resources(),
        &log_dir,
        &slurm::this_binary()?,
        &current_dir()?,
    )?;
    if args.job.print {
        for job in &jobs {
            println!("# {} (submitted with: sbatch)\n{}", job.name, job.script);
        }
        return Ok(0);
    }
    std::fs::create_dir_all(&log_dir)
        .with_context(|| format!("cannot create {}", log_dir.display()))?;
    let mut ids = Vec::new();
    for job in &jobs {
        let id = slurm::submit::submit(&job.script, &[])?;
        println!("{}: job {id}", job.name);
        ids.push(id);
    }
    println!(
        "workers are found with: squeue --format=\"%j %N %T\" --states=RUNNING (PISTON_ENDPOINTS=slurm)"
    );
    println!("stop them with: scancel {}", ids.join(" "));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn own_options_are_not_passed_on() {
        let raw = strings(&[
            "/bin/ioi-run",
            "slurm",
            "evaluate",
            "data.jsonl",
            "out",
            "--shards",
            "3",
            "--cpus-per-task=2",
            "--sbatch-arg",
            "--qos=high",
            "--print",
            "--problems",
            "p",
            "--test-batch-size",
            "2",
            "--mem",
            "4G",
        ]);
        assert_eq!(
            passed_on(&raw, "evaluate", &["--shards"]),
            strings(&[
                "data.jsonl",
                "out",
                "--problems",
                "p",
                "--test-batch-size",
                "2"
            ])
        );
    }
}
