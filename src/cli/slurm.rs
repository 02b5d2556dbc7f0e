//! `ioi-run slurm evaluate|serve`: the same binary, placed on a Slurm cluster by `sbatch`.
//!
//! `slurm evaluate` writes a job array of N shards (each `evaluate --shard
//! $SLURM_ARRAY_TASK_ID/N --jobs $SLURM_CPUS_PER_TASK`) and a merge job that runs after the
//! whole array succeeded (`afterok`). Submitting the same command again leaves out the shards
//! whose records say they are complete; the others resume from their results files.
//!
//! `slurm serve` starts N `ioi-run serve` jobs named `piston-worker-<port>`: open-r1's Piston
//! client (`PISTON_ENDPOINTS=slurm`) finds such workers with `squeue --format="%j %N %T"
//! --states=RUNNING` and calls `http://<node>:<port>/api/v2`.
//!
//! The evaluate and serve options are passed to the jobs as the user wrote them (minus the
//! options of this command), so every option of `evaluate` and `serve` works here unchanged.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::evaluate::shard::{Shard, ShardRecord};

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

/// Quotes a word for bash (left as is when it needs no quoting).
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn quote_all(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// The binary the jobs run: this one (it must be on a path every node sees).
fn this_binary() -> Result<String> {
    let exe = std::env::current_exe().context("cannot tell where the ioi-run binary is")?;
    Ok(exe.to_string_lossy().into_owned())
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("cannot tell the current folder")?
        .join(path))
}

/// The `#SBATCH` lines every job gets.
fn sbatch_header(job_name: &str, job: &JobOptions, output: &Path) -> Result<String> {
    // A line break in a value would end the `#SBATCH` line and start a line of the script.
    let values = [
        job.mem.as_deref(),
        job.partition.as_deref(),
        job.time.as_deref(),
    ];
    for value in values
        .into_iter()
        .flatten()
        .chain(job.sbatch_arg.iter().map(String::as_str))
    {
        if value.contains(['\n', '\r']) {
            bail!("slurm options cannot contain a line break: {value:?}");
        }
    }
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!("#SBATCH --job-name={}", quote(job_name)),
        format!("#SBATCH --cpus-per-task={}", job.cpus_per_task),
        "#SBATCH --ntasks=1".to_string(),
        format!("#SBATCH --output={}", quote(&output.to_string_lossy())),
        // A shard submitted again appends to its log instead of erasing the first attempt's.
        "#SBATCH --open-mode=append".to_string(),
        format!(
            "#SBATCH --chdir={}",
            quote(&std::env::current_dir()?.to_string_lossy())
        ),
    ];
    if let Some(mem) = &job.mem {
        lines.push(format!("#SBATCH --mem={}", quote(mem)));
    }
    if let Some(partition) = &job.partition {
        lines.push(format!("#SBATCH --partition={}", quote(partition)));
    }
    if let Some(time) = &job.time {
        lines.push(format!("#SBATCH --time={}", quote(time)));
    }
    for arg in &job.sbatch_arg {
        lines.push(format!("#SBATCH {arg}"));
    }
    Ok(lines.join("\n") + "\n")
}

/// Submits a script with `sbatch --parsable` (extra options first) and returns the job id.
fn submit(script: &str, options: &[String]) -> Result<String> {
    let mut child = Command::new("sbatch")
        .arg("--parsable")
        .args(options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run sbatch (is Slurm installed and on PATH?)")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .context("cannot give the job script to sbatch")?;
    }
    let out = child.wait_with_output().context("sbatch failed")?;
    if !out.status.success() {
        bail!(
            "sbatch {} failed: {}",
            options.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // `--parsable` prints `id` or `id;cluster`.
    let id = text
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!("sbatch printed no job id: {text:?}");
    }
    Ok(id)
}

/// Slurm's array syntax for a list of indices: `0-3,5,7-8`.
fn array_spec(indices: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            indices[i].to_string()
        } else {
            format!("{}-{}", indices[i], indices[j])
        });
        i = j + 1;
    }
    parts.join(",")
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
    let config_names: Vec<String> = crate::evaluate::resolve_datasets(&datasets)?
        .into_iter()
        .map(|d| d.config_name)
        .collect();
    let count = args.shards;
    let todo = unfinished_shards(&config_names, &local, count);
    let slurm_dir = local.join("slurm");
    let logs = slurm_dir.join("logs");
    let binary = this_binary()?;
    let job_name = format!(
        "ioi-run-{}",
        Path::new(&results_name)
            .file_name()
            .map_or("evaluate".into(), |n| n.to_string_lossy().into_owned())
    );

    let mut shards = sbatch_header(&job_name, &args.job, &logs.join("shard-%a.log"))?;
    shards.push_str(&format!("#SBATCH --array={}\n", array_spec(&todo)));
    shards.push_str(&format!(
        "set -eu\nexec {} evaluate {} --shard \"$SLURM_ARRAY_TASK_ID/{count}\" --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\"\n",
        quote(&binary),
        quote_all(&passed)
    ));
    let merge_job = JobOptions {
        cpus_per_task: 1,
        ..args.job.clone()
    };
    let mut merge = sbatch_header(
        &format!("{job_name}-merge"),
        &merge_job,
        &logs.join("merge.log"),
    )?;
    merge.push_str(&format!(
        "set -eu\nexec {} merge {} {} --local-results-path {}\n",
        quote(&binary),
        quote(&datasets),
        quote(&results_name),
        quote(&local.to_string_lossy())
    ));

    if args.job.print {
        if todo.is_empty() {
            println!("# every shard is complete: only the merge job would be submitted");
        } else {
            println!("# shards.sbatch (submitted with: sbatch shards.sbatch)\n{shards}");
        }
        println!(
            "# merge.sbatch (submitted with: sbatch --dependency=afterok:<shards job id> --kill-on-invalid-dep=yes merge.sbatch)\n{merge}"
        );
        return Ok(0);
    }
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    for (name, text) in [("shards.sbatch", &shards), ("merge.sbatch", &merge)] {
        let path = slurm_dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut merge_options = Vec::new();
    if todo.is_empty() {
        println!("every shard of {count} is complete: submitting the merge only");
    } else {
        let id = submit(&shards, &[])?;
        println!(
            "shards: job {id} (array {} of {count}), logs {}",
            array_spec(&todo),
            logs.join("shard-<K>.log").display()
        );
        merge_options.push(format!("--dependency=afterok:{id}"));
        merge_options.push("--kill-on-invalid-dep=yes".to_string());
    }
    let merge_id = submit(&merge, &merge_options)?;
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
    let binary = this_binary()?;
    let has = |name: &str| {
        passed
            .iter()
            .any(|a| a == name || a.starts_with(&format!("{name}=")))
    };
    if has("--ports") {
        bail!("slurm serve: --ports cannot be used here: worker i listens on --port + i, the port its job name announces");
    }
    let mut common = passed.clone();
    // Reachable from other nodes, unless the user chose an address.
    if !has("--host") {
        common.extend(["--host".to_string(), "0.0.0.0".to_string()]);
    }
    let log_dir = absolute(&args.log_dir)?;
    let mut ids = Vec::new();
    for i in 0..args.workers {
        let port = base
            .checked_add(i)
            .with_context(|| format!("port {base}+{i} is beyond 65535"))?;
        let name = format!("piston-worker-{port}");
        let mut script = sbatch_header(&name, &args.job, &log_dir.join(format!("{name}-%j.log")))?;
        let jobs = if has("--jobs")
            || has("--max-concurrent-requests")
            || passed.iter().any(|a| a.starts_with("-j"))
        {
            String::new()
        } else {
            " --jobs \"${SLURM_CPUS_PER_TASK:-1}\"".to_string()
        };
        script.push_str(&format!(
            "set -eu\nexec {} serve {} --port {port}{jobs}\n",
            quote(&binary),
            quote_all(&common)
        ));
        if args.job.print {
            println!("# {name} (submitted with: sbatch)\n{script}");
            continue;
        }
        if i == 0 {
            std::fs::create_dir_all(&log_dir)
                .with_context(|| format!("cannot create {}", log_dir.display()))?;
        }
        let id = submit(&script, &[])?;
        println!("{name}: job {id}");
        ids.push(id);
    }
    if !args.job.print {
        println!(
            "workers are found with: squeue --format=\"%j %N %T\" --states=RUNNING (PISTON_ENDPOINTS=slurm)"
        );
        println!("stop them with: scancel {}", ids.join(" "));
    }
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

    #[test]
    fn words_are_quoted_for_bash() {
        assert_eq!(quote("a/b.jsonl"), "a/b.jsonl");
        assert_eq!(quote("my model"), "'my model'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn a_line_break_cannot_smuggle_a_command_into_the_script() {
        let job = JobOptions {
            cpus_per_task: 1,
            mem: None,
            partition: None,
            time: None,
            sbatch_arg: vec!["--qos=high\nrm -rf ~".into()],
            print: true,
        };
        let err = sbatch_header("x", &job, Path::new("log")).unwrap_err();
        assert!(err.to_string().contains("line break"), "{err}");
        let job = JobOptions {
            sbatch_arg: vec!["--qos=high".into()],
            ..job
        };
        let header = sbatch_header("x", &job, Path::new("log")).unwrap();
        assert!(
            header.lines().any(|l| l == "#SBATCH --qos=high"),
            "{header}"
        );
    }

    #[test]
    fn array_lists_are_compact() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[0, 2, 3, 5]), "0,2-3,5");
        assert_eq!(array_spec(&[4]), "4");
    }
}
