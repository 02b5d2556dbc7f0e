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

/// The most open files [`raise_open_files`] asks for.
const OPEN_FILES_WANTED: u64 = 1 << 20;

/// Raises this process's soft limit on open files to its hard limit (at most
/// [`OPEN_FILES_WANTED`]): every box holds a dozen descriptors while it waits or runs (its
/// pipes and socket, its namespaces, its cgroup's files), and a judge with many workers would
/// otherwise meet the usual soft limit of 1024. The programs in boxes get a limit of their own
/// ([`plan`]). Best effort: a limit that cannot be raised stays as it is.
pub(crate) fn raise_open_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    let wanted = hard.min(OPEN_FILES_WANTED);
    if soft < wanted {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, wanted, hard);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_files_limit_is_raised_to_the_hard_limit() {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        // Down to the usual default first (this test's process is its own).
        setrlimit(Resource::RLIMIT_NOFILE, 256.min(hard), hard).unwrap();
        raise_open_files();
        let (soft, still_hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!(still_hard, hard);
        assert_eq!(soft, hard.min(OPEN_FILES_WANTED));
    }
}
