//! This host's speed against a documented reference workload, so that time limits can be
//! scaled to it (`doctor` prints "suggested --time-scale X"). The workload
//! (`speed_workload.cpp`) is deterministic and single-threaded, the mix IOI solutions spend
//! their time on; it is compiled with the submissions' `-O2` and run in the sandbox like a
//! solution, and its CPU time (the judge's clock) is compared with [`REFERENCE_SECONDS`]. The
//! factor [`suggest`]ed is never below 1.0 on a host whose page faults, cache misses or pipe
//! round trips cost more than on bare metal (docs/judging.md#time-scale).

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

/// The costs beside computation that a host may charge no more than for a factor below 1.0
/// (tighter limits than the reference machine's): those of a bare-metal server of the
/// contest's class, with room to spare (there a page fault with the zeroing of its page takes
/// about 0.3 µs, a load that misses the caches and the TLB 100–200 ns, a pipe round trip on
/// one CPU about 2 µs). A
/// virtual machine often charges several times more for page faults and wake-ups while it
/// computes faster: its compute speed alone would then suggest limits that make correct
/// solutions fail (a workload 3 times faster, page faults 30 times dearer).
pub const BARE_METAL_PAGE_FAULT: Duration = Duration::from_micros(1);
/// See [`BARE_METAL_PAGE_FAULT`].
pub const BARE_METAL_MEMORY_LOAD: Duration = Duration::from_nanos(250);
/// See [`BARE_METAL_PAGE_FAULT`].
pub const BARE_METAL_ROUND_TRIP: Duration = Duration::from_micros(5);

impl Speed {
    /// The compute factor: this host's workload time over the reference machine's, rounded
    /// to 0.05.
    pub fn compute_factor(&self) -> f64 {
        compute_factor(self.seconds)
    }
}

/// The factor for a workload time of `seconds`, rounded to 0.05 (finer steps are noise).
pub fn compute_factor(seconds: f64) -> f64 {
    ((seconds / REFERENCE_SECONDS) * 20.0).round() / 20.0
}

/// The `--time-scale` `doctor` suggests, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub time_scale: f64,
    /// The measured costs above their bare-metal bounds that hold the factor at 1.0 (empty
    /// when the compute factor stands).
    pub held_by: Vec<String>,
}

/// The suggested factor: the compute factor when the host computes slower than the reference
/// machine (a solution's time grows with it); at least 1.0 otherwise, unless every other
/// measured cost is within its bare-metal bound (a solution's time is a mix of computation,
/// page faults, cache misses and, in Communication tasks, round trips: a factor below 1.0
/// is safe only when none of them is slower than on the contest's machine), and a round trip
/// across two CPUs costs less than [`CROSSING_RATIO`] times one on one CPU. Costs not measured
/// count as above their bound.
pub fn suggest(speed: &Speed, costs: Option<&ioi_sandbox::host::costs::HostCosts>) -> Suggestion {
    let factor = speed.compute_factor();
    if factor >= 1.0 {
        return Suggestion {
            time_scale: factor,
            held_by: Vec::new(),
        };
    }
    let held_by = match costs {
        None => vec!["page faults, cache misses and round trips (not measured)".to_string()],
        Some(c) => [
            ("a page fault", c.page_fault.cpu, BARE_METAL_PAGE_FAULT),
            ("a cache miss", c.memory_load.wall, BARE_METAL_MEMORY_LOAD),
            (
                "a round trip on one CPU",
                c.round_trip_one_cpu.cpu,
                BARE_METAL_ROUND_TRIP,
            ),
        ]
        .into_iter()
        .filter(|(_, cost, bound)| cost > bound)
        .map(|(what, cost, bound)| {
            format!(
                "{what} {} (bare metal: under {})",
                micros(cost),
                micros(bound)
            )
        })
        .chain(crossing_penalty(c).map(|ratio| {
            format!("a round trip across two CPUs {ratio:.0} times one on one CPU (a virtual machine's)")
        }))
        .collect(),
    };
    Suggestion {
        time_scale: if held_by.is_empty() { factor } else { 1.0 },
        held_by,
    }
}

/// How many times a round trip across two CPUs costs one on one CPU, when that is
/// [`CROSSING_RATIO`] or more: the mark of a virtual machine's interrupts between vCPUs, where
/// compute speed says little about the rest.
pub fn crossing_penalty(costs: &ioi_sandbox::host::costs::HostCosts) -> Option<f64> {
    let two = costs.round_trip_two_cpus?;
    let one = costs.round_trip_one_cpu.cpu.as_secs_f64().max(1e-9);
    let ratio = two.cpu.as_secs_f64() / one;
    (ratio >= CROSSING_RATIO).then_some(ratio)
}

/// See [`crossing_penalty`]; `doctor` warns from this ratio on.
pub const CROSSING_RATIO: f64 = 3.0;

/// A duration in µs, or in ns below 1 µs.
pub fn micros(d: Duration) -> String {
    match d < Duration::from_micros(1) {
        true => format!("{} ns", d.as_nanos()),
        false => format!("{:.1} µs", d.as_secs_f64() * 1e6),
    }
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

    use ioi_sandbox::host::costs::{Cost, HostCosts};

    #[test]
    fn the_factor_is_the_time_over_the_reference_in_steps_of_a_twentieth() {
        assert_eq!(compute_factor(REFERENCE_SECONDS), 1.0);
        assert_eq!(compute_factor(REFERENCE_SECONDS * 1.5), 1.5);
        assert_eq!(compute_factor(REFERENCE_SECONDS * 1.26), 1.25);
        assert_eq!(compute_factor(REFERENCE_SECONDS * 2.0), 2.0);
    }

    fn speed(factor: f64) -> Speed {
        let seconds = REFERENCE_SECONDS * factor;
        Speed {
            seconds,
            runs: vec![seconds],
        }
    }

    fn cost(micros: u64) -> Cost {
        let d = Duration::from_nanos(micros * 1000);
        Cost { cpu: d, wall: d }
    }

    /// A bare-metal-like host: every cost within its bound.
    fn bare_metal() -> HostCosts {
        HostCosts {
            round_trip_one_cpu: cost(2),
            round_trip_two_cpus: Some(cost(4)),
            page_fault: Cost {
                cpu: Duration::from_nanos(300),
                wall: Duration::from_nanos(300),
            },
            memory_load: Cost {
                cpu: Duration::from_nanos(90),
                wall: Duration::from_nanos(90),
            },
        }
    }

    #[test]
    fn a_host_faster_at_everything_gets_tighter_limits() {
        let s = suggest(&speed(0.5), Some(&bare_metal()));
        assert_eq!((s.time_scale, s.held_by.len()), (0.5, 0));
    }

    #[test]
    fn a_host_that_computes_fast_but_faults_slowly_is_held_at_1() {
        // The VM that judged docs/fidelity.md: the workload 3 times faster, a page fault of
        // 10 µs, a round trip of 25 µs across its two CPUs (2 µs on one).
        let vm = HostCosts {
            page_fault: cost(10),
            round_trip_two_cpus: Some(cost(25)),
            ..bare_metal()
        };
        let s = suggest(&speed(0.35), Some(&vm));
        assert_eq!(s.time_scale, 1.0);
        assert_eq!(s.held_by.len(), 2, "{:?}", s.held_by);
        assert!(s.held_by[1].contains("across two CPUs"), "{:?}", s.held_by);
        assert!(
            s.held_by[0].starts_with("a page fault 10.0 µs"),
            "{:?}",
            s.held_by
        );
        let unmeasured = suggest(&speed(0.35), None);
        assert_eq!(unmeasured.time_scale, 1.0);
    }

    #[test]
    fn a_host_whose_round_trips_across_cpus_cost_several_times_more_is_held_at_1() {
        let vm = HostCosts {
            round_trip_two_cpus: Some(cost(24)),
            ..bare_metal()
        };
        let s = suggest(&speed(0.35), Some(&vm));
        assert_eq!(s.time_scale, 1.0);
        assert!(
            s.held_by[0].contains("across two CPUs 12 times"),
            "{:?}",
            s.held_by
        );
    }

    #[test]
    fn a_slower_host_gets_its_compute_factor_whatever_its_other_costs() {
        assert_eq!(suggest(&speed(1.5), None).time_scale, 1.5);
        assert_eq!(suggest(&speed(1.5), Some(&bare_metal())).time_scale, 1.5);
    }
}
