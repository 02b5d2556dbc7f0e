//! Scale-out on a Slurm cluster: the job scripts, `sbatch` driving and shard planning behind
//! `ioi-run slurm evaluate|serve`. Every job runs this same binary (which must be on a path
//! every node sees); Slurm only places it.
//!
//! - [`evaluate`]: a job array of shards (`evaluate --shard K/N`) and a merge job that runs
//!   once the whole array succeeded (`afterok`). Submitting the same plan again leaves out the
//!   shards whose records say they are complete; the others resume from their results files.
//! - [`serve`]: N `ioi-run serve` jobs named `piston-worker-<port>`, which open-r1's Piston
//!   client (`PISTON_ENDPOINTS=slurm`) finds with `squeue --format="%j %N %T"
//!   --states=RUNNING`.
//! - [`script`]: the `#SBATCH` header and bash quoting; [`submit`]: `sbatch` itself.
//!
//! The command line (`src/cli/slurm.rs`) parses options and prints; nothing here reads
//! arguments or writes to the terminal.

pub mod evaluate;
pub mod script;
pub mod serve;
pub mod submit;

/// What every job asks of Slurm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobResources {
    /// CPUs of the job (the shard's or the worker's `--jobs`).
    pub cpus_per_task: usize,
    /// Memory, in Slurm's syntax (`16G`).
    pub mem: Option<String>,
    pub partition: Option<String>,
    /// Time limit, in Slurm's syntax (`2:00:00`).
    pub time: Option<String>,
    /// Any other `sbatch` option, each on its own `#SBATCH` line.
    pub sbatch_args: Vec<String>,
}

/// The binary the jobs run: this one.
pub fn this_binary() -> anyhow::Result<String> {
    use anyhow::Context;
    let exe = std::env::current_exe().context("cannot tell where the ioi-run binary is")?;
    Ok(exe.to_string_lossy().into_owned())
}
