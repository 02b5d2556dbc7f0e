//! Resource limits set on the program with setrlimit(2) right before it executes.
//!
//! Memory, CPU time and processes are limited by the cgroup, not here: RLIMIT_AS would punish
//! address-space reservations (IOI limits resident memory), and RLIMIT_CPU counts per process.
//! RLIMIT_CPU is still set a little above the limit as a backstop in case the keeper stalls.

use crate::Limits;

/// One prepared `setrlimit` call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rlimit {
    pub resource: libc::__rlimit_resource_t,
    pub value: libc::rlim_t,
}

pub(crate) fn plan(limits: &Limits) -> Vec<Rlimit> {
    let value = |v: Option<u64>| v.map(|v| v as libc::rlim_t).unwrap_or(libc::RLIM_INFINITY);
    let mut out = vec![
        Rlimit {
            resource: libc::RLIMIT_STACK,
            value: value(limits.stack),
        },
        Rlimit {
            resource: libc::RLIMIT_FSIZE,
            value: value(limits.output_size),
        },
        Rlimit {
            resource: libc::RLIMIT_NOFILE,
            value: value(limits.open_files),
        },
        Rlimit {
            resource: libc::RLIMIT_CORE,
            value: 0,
        },
        Rlimit {
            resource: libc::RLIMIT_MEMLOCK,
            value: 0,
        },
    ];
    if let Some(cpu) = limits.cpu_time {
        out.push(Rlimit {
            resource: libc::RLIMIT_CPU,
            value: cpu.as_secs() as libc::rlim_t + 2,
        });
    }
    out
}

/// Applies the plan: async-signal-safe. Returns the errno of the first failure.
pub(crate) fn apply(plan: &[Rlimit]) -> Result<(), i32> {
    for r in plan {
        let lim = libc::rlimit {
            rlim_cur: r.value,
            rlim_max: r.value,
        };
        // SAFETY: setrlimit with a valid pointer to a local struct.
        if unsafe { libc::setrlimit(r.resource, &lim) } != 0 {
            return Err(nix::errno::Errno::last_raw());
        }
    }
    Ok(())
}
