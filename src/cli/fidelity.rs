//! `ioi-run fidelity`: judge every official solution of official packages and compare each
//! subtask with what the package expects (the work is in `crate::fidelity`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::output::outln;
use crate::fidelity::{packages, report, run};
use crate::judge::Judge;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Task folders, or folders holding them: TPS packages with solutions.json, CMS exports
    /// with solutions/<category>/ (tools/fetch-official.sh fetches IOI's).
    #[arg(value_name = "FOLDER", required = true)]
    folders: Vec<PathBuf>,
    /// Where the report goes (fidelity.md, fidelity.json) and judged.jsonl, the record of every
    /// judged solution that a later run resumes from.
    #[arg(long, short = 'o', default_value = "fidelity")]
    out: PathBuf,
    /// Judge every solution again instead of resuming (judged.jsonl moves to .bak).
    #[arg(long, conflicts_with = "report_only")]
    rejudge: bool,
    /// Judge nothing: write the report from judged.jsonl as it is (for instance while another
    /// run is still judging); solutions without a line count as not judged.
    #[arg(long)]
    report_only: bool,
    #[command(flatten)]
    run: super::RunArgs,
}

pub fn run(args: Args) -> Result<i32> {
    let packages = packages::discover(&args.folders).map_err(crate::error::bad_input)?;
    let judge = Judge::new(args.run.judge_options().map_err(crate::error::usage)?)?;
    let profile = judge.compile_profile().as_str();
    let options = run::RunOptions {
        jobs: args.run.jobs(),
        out_dir: args.out.clone(),
        rejudge: args.rejudge,
        report_only: args.report_only,
    };
    let results = run::judge_all(&judge, packages, &options)?;
    let md_path = args.out.join("fidelity.md");
    std::fs::write(&md_path, report::markdown(&results, profile))
        .with_context(|| format!("cannot write {}", md_path.display()))?;
    let json_path = args.out.join("fidelity.json");
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&report::json(&results, profile))?,
    )
    .with_context(|| format!("cannot write {}", json_path.display()))?;
    let total = report::total(&results);
    outln!("{}", report::table(&results));
    outln!(
        "{} of {} official solutions fit (compile profile {profile}); deviations in {}",
        total.fit,
        total.solutions,
        md_path.display()
    );
    Ok(if total.fit == total.solutions { 0 } else { 1 })
}
