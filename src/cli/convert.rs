//! `ioi-run convert`: CMS task folders to the open-r1/ioi parquet layout.

use std::path::PathBuf;

use super::output::outln;
use anyhow::Result;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// CMS task folders.
    #[arg(required = true)]
    tasks: Vec<PathBuf>,
    /// Where to write the problem rows (one row per subtask), e.g. problems.parquet.
    #[arg(long)]
    problems_out: PathBuf,
    /// Where to write the test cases, e.g. tests.parquet.
    #[arg(long)]
    tests_out: PathBuf,
    /// Year to record for the problems (CMS folders rarely say).
    #[arg(long)]
    year: Option<i64>,
    /// Day to record for the problems.
    #[arg(long)]
    day: Option<String>,
}

pub fn run(args: Args) -> Result<i32> {
    let mut loaded = Vec::new();
    for dir in &args.tasks {
        let (mut problem, tests) = crate::problem::cms::load_cms(dir)?;
        if let Some(year) = args.year {
            problem.year = year;
        }
        if let Some(day) = &args.day {
            problem.day = day.clone();
        }
        loaded.push((problem, tests));
    }
    crate::problem::convert::write_openr1(&loaded, &args.problems_out, &args.tests_out)?;
    outln!(
        "wrote {} problem(s): {} and {}",
        loaded.len(),
        args.problems_out.display(),
        args.tests_out.display()
    );
    Ok(0)
}
