//! Watching a run: the run handed over to its init, then the wall clock, the cgroup's CPU time
//! and memory and the caller's connection watched until the init reports or a limit hits (the
//! program's `sysinfo` calls answered meanwhile), the init killed on a limit and reaped.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::unistd::Pid;

use super::outcome::{classify, Stats};
use super::Builder;
use crate::cgroup::RunCgroup;
use crate::child::Report;
use crate::mounts;
use crate::sysinfo::Emulator;
use crate::waiting::{Init, Membership, WaitClock};
use crate::{Outcome, RunSpec, Termination, WALL_STRETCH};

/// Whether the init of a watched run was reaped, or is still exiting when the outcome is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exit {
    Reaped,
    Pending,
}

impl Builder {
    /// Hands the run over to the init (the `message` on its pipe) and watches it until it
    /// reports or a limit hits; `mounts` are the box's, for error messages. The init is reaped
    /// on every path out of here, errors included.
    pub(super) fn watch(
        &self,
        pid: i32,
        (run_write, message): (OwnedFd, Vec<u8>),
        (report_read, sysinfo_socket): (OwnedFd, OwnedFd),
        cgroup: &RunCgroup,
        spec: &RunSpec,
        mounts: &[&mounts::MountOp],
    ) -> Result<(Outcome, Exit)> {
        // Dropped after the init is reaped, on every path: no process of the box is left to
        // call `sysinfo` without its listener.
        let mut sysinfo = Emulator::new(sysinfo_socket, spec.limits.memory);
        // The run starts when its init gets it; the clocks are set while the init builds the
        // run's part of the box (on another CPU when there is one). What the init waits for a
        // CPU before they are set is not credited: the credit can only be smaller for it.
        let start = Instant::now();
        let handed = write_all(&run_write, &message).is_ok();
        drop(run_write);
        let mut run = Watch::start(start, pid, cgroup, spec);
        // An init that cannot take its run has failed or died: its report, if any, says why.
        if !handed {
            run.kill_init();
        }
        // An unreadable cgroup counter ends the run as a sandbox failure: a guess would turn
        // the CPU limit off or report a false peak.
        if let Err(e) = run.until_report(&report_read, &mut sysinfo) {
            run.kill_and_reap();
            return Err(e);
        }
        run.conclude(mounts)
    }
}

/// A run being watched: its limits, its clocks, and what the init reported so far.
struct Watch<'a> {
    init: Pid,
    cgroup: &'a RunCgroup,
    spec: &'a RunSpec,
    start: Instant,
    /// The boxes whose waiting for a CPU is credited to this one: itself, and its peers when
    /// it runs in a group (see `WaitGroup`).
    this: Init,
    group: Option<Membership<'a>>,
    waited: WaitClock,
    /// The elapsed time at which the run is stopped however much credit it has.
    hard_wall: Option<Duration>,
    cores: u32,
    limit_hit: Option<Termination>,
    report: [u8; Report::SIZE],
    got: usize,
    caller_gone: bool,
}

impl<'a> Watch<'a> {
    fn start(start: Instant, pid: i32, cgroup: &'a RunCgroup, spec: &'a RunSpec) -> Watch<'a> {
        let this = Init::starting(pid);
        let group = spec
            .wait_group
            .as_deref()
            .map(|group| Membership::new(group, this));
        let inits = inits(this, group.as_ref());
        Watch {
            init: Pid::from_raw(pid),
            cgroup,
            spec,
            start,
            this,
            group,
            waited: WaitClock::new(start, &inits),
            hard_wall: spec.limits.wall_time.map(|wall| wall * WALL_STRETCH),
            cores: cores(),
            limit_hit: None,
            report: [0u8; Report::SIZE],
            got: 0,
            caller_gone: false,
        }
    }

    fn kill_init(&self) {
        let _ = nix::sys::signal::kill(self.init, nix::sys::signal::Signal::SIGKILL);
    }

    fn kill_and_reap(&self) {
        self.kill_init();
        let _ = nix::sys::wait::waitpid(self.init, None);
    }

    /// Sleeps and wakes until the init's report is complete or its pipe closes, stopping the
    /// box on a limit or when the caller hangs up. An error leaves the init to be reaped.
    fn until_report(&mut self, report: &OwnedFd, sysinfo: &mut Emulator) -> Result<()> {
        loop {
            let wait = self.next_wait()?;
            let caller = self.spec.caller.as_deref().filter(|_| !self.caller_gone);
            let woken = poll_until(report, caller, sysinfo, Instant::now() + wait);
            if matches!(woken, Ok(Wake::CallerGone)) {
                // Nobody is left to take the outcome: the box goes, as it would with its caller.
                self.caller_gone = true;
                self.kill_init();
            }
            match woken {
                Ok(Wake::Report) => {
                    if self.read_report(report) {
                        return Ok(());
                    }
                }
                Ok(_) => {}
                Err(e) => bail!("poll failed: {e}"),
            }
            self.cgroup.sample_memory()?;
            if self.limit_hit.is_none() {
                self.check_limits()?;
            }
        }
    }

    /// How long to sleep: until the report arrives, or until the earliest moment a limit could
    /// be hit.
    fn next_wait(&self) -> Result<Duration> {
        let limits = &self.spec.limits;
        let mut wait = Duration::from_millis(500);
        if let (Some(wall), Some(hard)) = (limits.wall_time, self.hard_wall) {
            let elapsed = self.start.elapsed();
            let charged = elapsed.saturating_sub(self.waited.credit());
            wait = wait
                .min(wall.saturating_sub(charged))
                .min(hard.saturating_sub(elapsed));
        }
        if let Some(cpu) = limits.cpu_time {
            let left = cpu.saturating_sub(self.cgroup.cpu_time()?);
            wait = wait.min((left / self.cores).max(Duration::from_millis(2)));
        }
        if let Some(period) = self.cgroup.memory_sample_period() {
            wait = wait.min(period);
        }
        Ok(wait)
    }

    /// Reads what the report pipe holds: whether the report is complete or the pipe closed.
    fn read_report(&mut self, report: &OwnedFd) -> bool {
        match nix::unistd::read(report, &mut self.report[self.got..]) {
            Ok(0) => true,
            Ok(n) => {
                self.got += n;
                self.got == Report::SIZE
            }
            Err(nix::errno::Errno::EINTR) => false,
            Err(_) => true,
        }
    }

    /// Kills the init once the CPU time or the wall clock is over its limit.
    fn check_limits(&mut self) -> Result<()> {
        let limits = &self.spec.limits;
        let cpu_over = match limits.cpu_time {
            Some(cpu) => self.cgroup.cpu_time()? > cpu,
            None => false,
        };
        if cpu_over {
            self.limit_hit = Some(Termination::TimeLimit);
        } else if let (Some(wall), Some(hard)) = (limits.wall_time, self.hard_wall) {
            // The wall limit charges only time the box did not spend waiting for a CPU (see
            // `waiting`): a busy host does not turn a CPU-bound run into a wall-time verdict, a
            // sleeper is charged in full. The credit stops at `WALL_STRETCH` × the limit: a
            // program that waits for a CPU by choice (a lowered priority) cannot hold its box
            // for as long as the host is busy. Sampled at every wake-up (at most every 500
            // ms), so that processes that end in between (a compiler's passes) keep most of
            // their credit.
            let now = Instant::now();
            self.waited
                .sample(now, &inits(self.this, self.group.as_ref()));
            let elapsed = now.saturating_duration_since(self.start);
            if elapsed.saturating_sub(self.waited.credit()) >= wall || elapsed >= hard {
                self.limit_hit = Some(Termination::WallTimeLimit);
            }
        }
        if self.limit_hit.is_some() {
            self.kill_init();
        }
        Ok(())
    }

    /// The outcome once the init reported (or died): the statistics read, the init reaped
    /// unless it is only left exiting.
    fn conclude(mut self, mounts: &[&mounts::MountOp]) -> Result<(Outcome, Exit)> {
        let wall_time = self.start.elapsed();
        drop(self.group.take());
        let complete = self.got == Report::SIZE;
        // The init reports once it has reaped the program. When no task of the cgroup is left
        // then (the program left no descendant behind), every measured task has exited and
        // been accounted, and the counters are final: the init's own exit (the teardown of its
        // namespaces) is reaped off the run's path, with the rest of the box. Otherwise the
        // init's exit kills whatever is left of the box, and once it is reaped the counters are
        // final. (Its mounts are held by the keeper's descriptor of the mount namespace: their
        // teardown is not here.)
        let exit = match complete && !self.caller_gone && self.cgroup.is_empty() {
            true => Exit::Pending,
            false => {
                let _ = nix::sys::wait::waitpid(self.init, None);
                Exit::Reaped
            }
        };
        if self.caller_gone {
            bail!("the caller hung up during the run: its box was killed");
        }
        let report = match complete {
            true => Report::decode(&self.report),
            false => None,
        };
        let stats = (|| -> Result<Stats> {
            Ok(Stats {
                cpu: self.cgroup.cpu_time()?,
                memory: self.cgroup.memory_peak()?,
                oom_kills: self.cgroup.oom_kills()?,
            })
        })();
        let stats = match (stats, exit) {
            (Ok(stats), _) => stats,
            // A failure is reported with the init reaped, as on every other failing path (and
            // never reaped twice: a pid once reaped may belong to another process).
            (Err(e), Exit::Pending) => {
                self.kill_and_reap();
                return Err(e);
            }
            (Err(e), Exit::Reaped) => return Err(e),
        };
        let outcome = classify(report, self.limit_hit, &stats, wall_time, self.spec, mounts);
        Ok((outcome, exit))
    }
}

/// The inits whose waiting for a CPU is credited to a run: its own, and its group's.
fn inits(this: Init, group: Option<&Membership>) -> Vec<Init> {
    match group {
        Some(member) => member.group.inits(),
        None => vec![this],
    }
}

/// Why [`poll_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// The report pipe is readable (or closed).
    Report,
    /// The caller's connection hung up (it sends nothing during a run).
    CallerGone,
    /// The deadline passed, or a signal came.
    Timeout,
}

/// Waits until the report pipe is readable, the caller hangs up or `deadline` passes,
/// answering the program's `sysinfo` calls meanwhile.
fn poll_until(
    report: &OwnedFd,
    caller: Option<&OwnedFd>,
    sysinfo: &mut Emulator,
    deadline: Instant,
) -> nix::Result<Wake> {
    loop {
        let now = Instant::now();
        let wake = match sysinfo.paused_until(now) {
            Some(resume) => resume.min(deadline),
            None => deadline,
        };
        let left = wake.saturating_duration_since(now);
        let timeout =
            PollTimeout::try_from(left.as_millis().max(1) as i32).unwrap_or(PollTimeout::MAX);
        let mut fds = vec![PollFd::new(report.as_fd(), PollFlags::POLLIN)];
        fds.extend(caller.map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN)));
        let listener = fds.len();
        fds.extend(sysinfo.fd(now).map(|fd| PollFd::new(fd, PollFlags::POLLIN)));
        match poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(Wake::Timeout),
            Err(e) => return Err(e),
        }
        let events = |fd: &PollFd| fd.revents().unwrap_or(PollFlags::empty());
        if !events(&fds[0]).is_empty() {
            return Ok(Wake::Report);
        }
        if caller.is_some() && !events(&fds[1]).is_empty() {
            return Ok(Wake::CallerGone);
        }
        let call = fds.get(listener).map(events).unwrap_or(PollFlags::empty());
        drop(fds);
        if !call.is_empty() {
            sysinfo.ready(call);
        }
        if Instant::now() >= deadline {
            return Ok(Wake::Timeout);
        }
    }
}

/// Writes all of `bytes` (a pipe takes a long message in parts, as the reader empties it).
fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> nix::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The cores this process may use, read once: the standard library reads the cgroup's CPU
/// quota from three files at each call, and a run need not pay for that.
fn cores() -> u32 {
    static CORES: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1) as u32
    })
}
