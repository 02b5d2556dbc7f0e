//! `ioi-run merge`: the shards of `evaluate --shard K/N` into the results, parquet and reports
//! of one evaluation.

use std::path::PathBuf;

use anyhow::Result;

use crate::catalog::resolve_datasets;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The datasets that were evaluated in shards, as given to `evaluate`.
    datasets: String,
    /// Output dataset: the folder receiving the parquet results and reports/.
    results_name: String,
    /// Where the shards' results are (and the merged JSONL goes) [default: RESULTS_NAME].
    #[arg(long, alias = "local_results_path")]
    local_results_path: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<i32> {
    let results_dir = PathBuf::from(&args.results_name);
    let local = args
        .local_results_path
        .clone()
        .unwrap_or_else(|| results_dir.clone());
    let datasets = resolve_datasets(&args.datasets)?;
    let started = std::time::Instant::now();
    let merged = crate::evaluate::merge::merge(&datasets, &local, &results_dir)?;
    println!(
        "merged {} row(s) of {} dataset(s) in {:.2} s",
        merged.rows,
        datasets.len(),
        started.elapsed().as_secs_f64()
    );
    for path in &merged.results_files {
        println!("results:  {}", path.display());
    }
    for path in &merged.parquet_files {
        println!("parquet:  {}", path.display());
    }
    super::evaluate::report_lines(&merged.reports)?;
    Ok(0)
}
