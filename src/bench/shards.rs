//! `ioi-run bench shards`: what splitting an evaluation into shards costs. The demo scaled up is
//! evaluated by one process with J workers, then by N shard processes at once with J/N workers
//! each (the same cores; each run with a fresh compile cache, shared by the shards as on a
//! cluster), then merged. Every run is a child `ioi-run` process, so both sides pay for process
//! start and loading.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::output::outln;

fn ioi_run(args: &[String], cwd: &Path) -> Result<std::process::Child> {
    let exe = std::env::current_exe().context("cannot find the ioi-run binary")?;
    Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start ioi-run")
}

fn finish(child: std::process::Child, what: &str) -> Result<()> {
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

pub fn run(submissions: usize, shards: u32, jobs: usize) -> Result<i32> {
    let root = tempfile::tempdir()?;
    let dir = root.path();
    let data = super::evaluate::scaled_demo(&dir.join("demo"), submissions)?;
    let problems = dir.join("demo/problems");
    let base = |out: &str, cache: &str| {
        strings(&[
            "evaluate",
            &data.to_string_lossy(),
            out,
            "--problems",
            &problems.to_string_lossy(),
            "--cache-dir",
            cache,
        ])
    };
    outln!(
        "{submissions} submissions (the demo, distinct code each), {jobs} workers in all, {shards} shards"
    );

    let start = Instant::now();
    let mut args = base("one", "cache-one");
    args.extend(strings(&["--jobs", &jobs.to_string()]));
    finish(ioi_run(&args, dir)?, "the one-process evaluate")?;
    let one = start.elapsed().as_secs_f64();
    outln!("one process, --jobs {jobs}: {one:.1} s");

    let per_shard = (jobs / shards as usize).max(1);
    let start = Instant::now();
    let children = (0..shards)
        .map(|k| {
            let mut args = base("sharded", "cache-shards");
            args.extend(strings(&[
                "--jobs",
                &per_shard.to_string(),
                "--shard",
                &format!("{k}/{shards}"),
            ]));
            ioi_run(&args, dir)
        })
        .collect::<Result<Vec<_>>>()?;
    for (k, child) in children.into_iter().enumerate() {
        finish(child, &format!("shard {k}/{shards}"))?;
    }
    let sharded = start.elapsed().as_secs_f64();
    let sizes: Vec<String> = (0..shards)
        .map(|k| {
            std::fs::read_to_string(dir.join(format!("sharded/scaled.shard-{k}-of-{shards}.jsonl")))
                .map(|t| t.lines().count().to_string())
                .unwrap_or_else(|_| "?".into())
        })
        .collect();
    outln!(
        "{shards} shards at once, --jobs {per_shard} each: {sharded:.1} s (shard sizes {}); overhead {:+.1}%",
        sizes.join(" + "),
        (sharded / one - 1.0) * 100.0
    );

    let start = Instant::now();
    let args = strings(&["merge", &data.to_string_lossy(), "sharded"]);
    finish(ioi_run(&args, dir)?, "the merge")?;
    let merge = start.elapsed().as_secs_f64();
    outln!(
        "merge (results JSONL, parquet, reports): {merge:.2} s ({:.1}% of the one-process run)",
        merge / one * 100.0
    );
    Ok(0)
}
