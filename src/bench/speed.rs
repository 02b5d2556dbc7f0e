//! This host's speed against a documented reference workload, so that time limits can be
//! scaled to it (`doctor` prints "suggested --time-scale X"). The workload
//! (`speed_workload.cpp`) is deterministic and single-threaded, the mix IOI solutions spend
//! their time on; it is compiled with the submissions' `-O2` and run in the sandbox like a
//! solution, and its CPU time (the judge's clock) is compared with [`REFERENCE_SECONDS`].

use std::time::Duration;

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, Stdio, Termination};

/// The workload's source.
pub const WORKLOAD: &str = include_str!("speed_workload.cpp");

/// Its checksum: a different one means a miscompiled or interrupted workload, not a speed.
pub const CHECKSUM: &str = "7253843358582391458";

/// CPU seconds of the workload on the reference machine: the 2-core AMD EPYC (2.45 GHz)
/// virtual machine that made `docs/fidelity.md`, the fastest of repeated runs. That machine is
/// itself slower than IOI 2022's contest machines (three correct 2 s solutions take 2.01 s on
/// it), so a factor of 1.0 means "as slow as the reference machine", not "as fast as IOI's".
pub const REFERENCE_SECONDS: f64 = 0.83;

/// Runs of the workload; the fastest counts (other load only ever slows a run down).
pub const RUNS: usize = 3;

/// What the measurement found.
#[derive(Debug, Clone, PartialEq)]
pub struct Speed {
    /// The fastest run's CPU seconds.
    pub seconds: f64,
    /// Every run's CPU seconds.
    pub runs: Vec<f64>,
}

impl Speed {
    /// The time-scale factor that gives a solution on this host the time it would have on the
    /// reference machine: this host's time over the reference time, rounded to 0.05.
    pub fn suggested_time_scale(&self) -> f64 {
        suggested_time_scale(self.seconds)
    }
}

/// The factor for a workload time of `seconds`, rounded to 0.05 (finer steps are noise).
pub fn suggested_time_scale(seconds: f64) -> f64 {
    ((seconds / REFERENCE_SECONDS) * 20.0).round() / 20.0
}

/// Compiles the workload in the sandbox and runs it [`RUNS`] times there.
pub fn measure(sandbox: &Sandbox) -> Result<Speed> {
    let dir = tempfile::tempdir().context("cannot create a temporary folder")?;
    std::fs::write(dir.path().join("workload.cpp"), WORKLOAD)
        .context("cannot write the workload")?;
    sandbox
        .give_to_box(dir.path())
        .context("cannot hand the folder to the sandbox")?;
    let run = |argv: &[&str], cpu: u64, memory: u64| {
        let mut spec = RunSpec::new(dir.path(), argv.iter().copied());
        spec.limits = Limits {
            cpu_time: Some(Duration::from_secs(cpu)),
            wall_time: Some(Duration::from_secs(cpu * 10)),
            memory: Some(memory),
            ..Limits::default()
        };
        spec.stdout = Stdio::Path(dir.path().join("out"));
        spec.stderr = Stdio::Path(dir.path().join("err"));
        sandbox.run(&spec)
    };
    let compiled = run(
        &[
            "g++",
            "-O2",
            "-pipe",
            "-std=gnu++17",
            "-o",
            "workload",
            "workload.cpp",
        ],
        60,
        1 << 30,
    );
    if compiled.status != Termination::Ok {
        let err = std::fs::read_to_string(dir.path().join("err")).unwrap_or_default();
        bail!("the workload did not compile: {} {err}", compiled.message);
    }
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let o = run(&["./workload"], 30, 256 << 20);
        let out = std::fs::read_to_string(dir.path().join("out")).unwrap_or_default();
        if o.status != Termination::Ok || out.trim() != CHECKSUM {
            bail!(
                "the workload failed ({}; output {:?}, expected {CHECKSUM})",
                o.message,
                out.trim()
            );
        }
        runs.push(o.cpu_time);
    }
    let seconds = runs.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(Speed { seconds, runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factor_is_the_time_over_the_reference_in_steps_of_a_twentieth() {
        assert_eq!(suggested_time_scale(REFERENCE_SECONDS), 1.0);
        assert_eq!(suggested_time_scale(REFERENCE_SECONDS * 1.5), 1.5);
        assert_eq!(suggested_time_scale(REFERENCE_SECONDS * 1.26), 1.25);
        assert_eq!(suggested_time_scale(REFERENCE_SECONDS * 2.0), 2.0);
    }

    #[test]
    fn a_faster_host_gets_tighter_limits() {
        assert_eq!(suggested_time_scale(REFERENCE_SECONDS / 2.0), 0.5);
    }
}
