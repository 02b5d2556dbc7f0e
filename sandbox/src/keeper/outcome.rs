//! Classifying a run's ending: the init's report, the limit the keeper saw hit and the cgroup's
//! counters decide the [`Termination`].

use std::time::Duration;

use crate::child::{Report, Step};
use crate::mounts;
use crate::{Outcome, RunSpec, Termination};

pub(super) struct Stats {
    pub(super) cpu: Duration,
    pub(super) memory: u64,
    pub(super) oom_kills: u64,
}

/// Decides the status: sandbox failures first, then memory (an OOM kill is never a runtime
/// error), CPU time over the limit (even if the program finished), the wall clock, the output
/// limit, signals and exit codes.
pub(super) fn classify(
    report: Option<Report>,
    limit_hit: Option<Termination>,
    stats: &Stats,
    wall: Duration,
    spec: &RunSpec,
    mounts: &[&mounts::MountOp],
) -> Outcome {
    let mut out = Outcome {
        status: Termination::Ok,
        exit_code: None,
        signal: None,
        cpu_time: stats.cpu.as_secs_f64(),
        wall_time: wall.as_secs_f64(),
        memory: stats.memory,
        message: String::new(),
    };
    match report {
        Some(Report::SetupFailed { step, errno }) => {
            let what = step.describe(mounts);
            let err = std::io::Error::from_raw_os_error(errno);
            if step == Step::Exec {
                // A missing or non-executable program is the caller's command, not the sandbox.
                out.status = Termination::RuntimeError;
                out.exit_code = Some(127);
                out.message = format!("cannot execute {}: {err}", spec.argv[0]);
            } else {
                out.status = Termination::InternalError;
                out.message = format!("sandbox setup failed: cannot {what}: {err}");
            }
            return out;
        }
        Some(Report::Exited(code)) => out.exit_code = Some(code),
        Some(Report::Signaled(sig)) => out.signal = Some(sig),
        None if limit_hit.is_none() => {
            out.status = Termination::InternalError;
            out.message = "the sandbox init died without reporting".into();
            return out;
        }
        None => out.signal = Some(libc::SIGKILL),
    }
    let cpu_over = spec.limits.cpu_time.is_some_and(|cpu| stats.cpu > cpu);
    let memory_near = spec
        .limits
        .memory
        .is_some_and(|m| stats.memory >= m.saturating_sub(m / 50));
    let killed = out.signal == Some(libc::SIGKILL);
    (out.status, out.message) =
        if stats.oom_kills > 0 || (killed && memory_near && limit_hit.is_none()) {
            (
                Termination::MemoryLimit,
                format!("memory limit exceeded (peak {} bytes)", stats.memory),
            )
        } else if cpu_over || limit_hit == Some(Termination::TimeLimit) {
            (
                Termination::TimeLimit,
                format!("time limit exceeded ({:.3} s CPU)", stats.cpu.as_secs_f64()),
            )
        } else if limit_hit == Some(Termination::WallTimeLimit) {
            (
                Termination::WallTimeLimit,
                format!("wall time limit exceeded ({:.3} s)", wall.as_secs_f64()),
            )
        } else if out.signal == Some(libc::SIGXFSZ) {
            (Termination::OutputLimit, "output limit exceeded".into())
        } else if let Some(sig) = out.signal {
            (
                Termination::Signaled,
                format!("killed by signal {sig} ({})", crate::signal_name(sig)),
            )
        } else if out.exit_code != Some(0) {
            (
                Termination::RuntimeError,
                format!("exited with code {}", out.exit_code.unwrap_or(-1)),
            )
        } else {
            (Termination::Ok, "ok".into())
        };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    /// One way a run can end, and what it must be called.
    struct Row {
        name: &'static str,
        report: Option<Report>,
        limit_hit: Option<Termination>,
        cpu_ms: u64,
        memory_mib: u64,
        oom_kills: u64,
        expected: Termination,
        exit_code: Option<i32>,
        signal: Option<i32>,
        message: &'static str,
    }

    const fn row(name: &'static str, report: Option<Report>, expected: Termination) -> Row {
        Row {
            name,
            report,
            limit_hit: None,
            cpu_ms: 10,
            memory_mib: 1,
            oom_kills: 0,
            expected,
            exit_code: None,
            signal: None,
            message: "",
        }
    }

    /// Every way a run ends maps to its Termination (limits: 1 s CPU, 64 MiB): each row fails
    /// if its mapping changes.
    #[test]
    fn every_ending_is_classified() {
        use Report::*;
        use Termination as T;
        let kill = Some(Signaled(libc::SIGKILL));
        let rows = [
            Row {
                exit_code: Some(0),
                message: "ok",
                ..row("exit 0", Some(Exited(0)), T::Ok)
            },
            Row {
                exit_code: Some(3),
                message: "exited with code 3",
                ..row("exit 3", Some(Exited(3)), T::RuntimeError)
            },
            Row {
                signal: Some(libc::SIGSEGV),
                message: "SIGSEGV",
                ..row("segfault", Some(Signaled(libc::SIGSEGV)), T::Signaled)
            },
            Row {
                signal: Some(libc::SIGKILL),
                message: "killed by signal 9",
                ..row("killed, memory low", kill, T::Signaled)
            },
            Row {
                signal: Some(libc::SIGXFSZ),
                message: "output limit",
                ..row(
                    "file too large",
                    Some(Signaled(libc::SIGXFSZ)),
                    T::OutputLimit,
                )
            },
            Row {
                limit_hit: Some(T::TimeLimit),
                cpu_ms: 1100,
                signal: Some(libc::SIGKILL),
                message: "time limit exceeded (1.100 s CPU)",
                ..row("CPU limit, killed before reporting", None, T::TimeLimit)
            },
            Row {
                limit_hit: Some(T::TimeLimit),
                cpu_ms: 1100,
                signal: Some(libc::SIGKILL),
                message: "time limit",
                ..row("CPU limit, killed and reported", kill, T::TimeLimit)
            },
            Row {
                cpu_ms: 1200,
                exit_code: Some(0),
                message: "time limit",
                ..row(
                    "finished, but over the CPU limit",
                    Some(Exited(0)),
                    T::TimeLimit,
                )
            },
            Row {
                limit_hit: Some(T::WallTimeLimit),
                signal: Some(libc::SIGKILL),
                message: "wall time limit exceeded (2.000 s)",
                ..row("wall limit", None, T::WallTimeLimit)
            },
            Row {
                limit_hit: Some(T::WallTimeLimit),
                memory_mib: 63,
                signal: Some(libc::SIGKILL),
                message: "wall time",
                ..row(
                    "wall limit with memory near the limit",
                    kill,
                    T::WallTimeLimit,
                )
            },
            Row {
                oom_kills: 1,
                memory_mib: 64,
                signal: Some(libc::SIGKILL),
                message: "memory limit exceeded (peak 67108864 bytes)",
                ..row("OOM kill", kill, T::MemoryLimit)
            },
            Row {
                oom_kills: 1,
                exit_code: Some(1),
                message: "memory limit",
                ..row(
                    "a child OOM-killed, the parent exits 1",
                    Some(Exited(1)),
                    T::MemoryLimit,
                )
            },
            Row {
                oom_kills: 1,
                limit_hit: Some(T::TimeLimit),
                cpu_ms: 1100,
                signal: Some(libc::SIGKILL),
                message: "memory limit",
                ..row("OOM kill and CPU limit: memory first", kill, T::MemoryLimit)
            },
            Row {
                memory_mib: 63,
                signal: Some(libc::SIGKILL),
                message: "memory limit",
                ..row(
                    "killed at the memory limit, OOM not counted",
                    kill,
                    T::MemoryLimit,
                )
            },
            Row {
                exit_code: Some(127),
                message: "cannot execute ./prog",
                ..row(
                    "program cannot execute",
                    Some(SetupFailed {
                        step: Step::Exec,
                        errno: libc::ENOENT,
                    }),
                    T::RuntimeError,
                )
            },
            Row {
                message: "sandbox setup failed: cannot install the seccomp filter",
                ..row(
                    "setup failed",
                    Some(SetupFailed {
                        step: Step::Seccomp,
                        errno: libc::EINVAL,
                    }),
                    T::InternalError,
                )
            },
            Row {
                message: "sandbox setup failed: cannot detach the folder /.stdio",
                ..row(
                    "the streams' stage not detached (a busy unmount): never the program's",
                    Some(SetupFailed {
                        step: Step::DetachStdio,
                        errno: libc::EBUSY,
                    }),
                    T::InternalError,
                )
            },
            Row {
                message: "the sandbox init died without reporting",
                ..row("init died without reporting", None, T::InternalError)
            },
        ];
        let mut spec = RunSpec::new("/nonexistent", ["./prog"]);
        spec.limits = Limits {
            cpu_time: Some(Duration::from_secs(1)),
            wall_time: Some(Duration::from_secs(2)),
            memory: Some(64 << 20),
            ..Limits::default()
        };
        for r in rows {
            let stats = Stats {
                cpu: Duration::from_millis(r.cpu_ms),
                memory: r.memory_mib << 20,
                oom_kills: r.oom_kills,
            };
            let o = classify(
                r.report,
                r.limit_hit,
                &stats,
                Duration::from_secs(2),
                &spec,
                &[],
            );
            assert_eq!(
                (o.status, o.exit_code, o.signal),
                (r.expected, r.exit_code, r.signal),
                "{}: {o:?}",
                r.name
            );
            assert!(
                o.message.contains(r.message),
                "{}: message {:?}",
                r.name,
                o.message
            );
        }
    }
}
