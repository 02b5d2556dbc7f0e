//! Which CPU a box runs on, when its caller chooses ([`crate::RunSpec::cpu`]).
//!
//! Boxes that talk to each other through pipes (a Communication test's manager and user
//! processes) pay for every message with a wake-up of the peer. On one CPU that wake-up is a
//! context switch; across two CPUs of a virtual machine it is an inter-processor interrupt
//! through the hypervisor, ten times dearer and charged to the writer as system time. Putting
//! such boxes on one CPU makes their CPU times those of the contest's machine, wherever the
//! host's scheduler would have spread them.
//!
//! The keeper sets the affinity of the box's init before it sends the run: the program, which
//! the init spawns only then, and everything the program starts inherit it. The program
//! cannot widen it: `sched_setaffinity` is refused by seccomp (see `seccomp`). Setting it from
//! the keeper works whatever uid the box runs as (the keeper has `CAP_SYS_NICE` over the box's
//! user namespace as root, and is the box's uid without root), on cgroup v1 and v2 alike. No
//! cgroup controller is involved, but joining the run's cgroup may move the program into
//! another cpuset, which resets its affinity on kernels before 6.2: the program keeps the
//! affinity it had across the join (`cgroup::join_self`).

use anyhow::{Context, Result};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The CPUs this process may run on (its affinity, within its cpuset), in increasing order.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity")?;
    Ok((0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect())
}

/// Puts process `pid` (a box's init, before its program exists) on `cpu` alone.
pub(crate) fn pin(pid: i32, cpu: usize) -> Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} is beyond the largest CPU set"))?;
    sched_setaffinity(Pid::from_raw(pid), &set)
        .with_context(|| format!("cannot place the box on CPU {cpu} (sched_setaffinity)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_may_run_somewhere_and_a_cpu_beyond_the_set_is_refused() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{cpus:?}");
        let error = pin(0, CpuSet::count()).unwrap_err();
        assert!(format!("{error:#}").contains("beyond"), "{error:#}");
    }
}
