//! How long a box waited for a CPU: the part of the wall clock that the wall limit does not
//! charge.
//!
//! The wall limit exists to stop programs that do not use the CPU they could (sleeping,
//! blocked on a pipe, stopped); on a busy host a CPU-bound program also spends wall time
//! runnable but waiting for a core, and must not be stopped for it. The kernel counts that
//! time per task: the second field of `/proc/<pid>/task/<tid>/schedstat` ("run delay", time
//! spent on a run queue). We sample it for every task of the box at each poll of the keeper.
//! Over each interval between two samples, the box is credited with the largest increase of
//! any one task's run delay: a box "waits" while one of its tasks waits. The boxes of a
//! [`WaitGroup`] (the manager and user processes of a Communication test) are credited the sum
//! of their boxes' credits, at most the interval itself: nothing is ever credited more than
//! the time that passed, so the charged wall time (elapsed minus credit) only grows, and grows
//! at full speed for a sleeper (whose tasks are not runnable, so have no run delay).
//!
//! The sum across the boxes of a group: its processes take turns on their one CPU (a round
//! trip wakes the peer and blocks), so on a busy host each waits at moments the other does
//! not, and the time in which one of them waits is the sum of their waits. The largest alone
//! credits about half of it: with it, a correct solution of 10⁵ round trips
//! (`tests/problems/hops`) gets a wall-time verdict at 7.7 s elapsed on 0.4 s of CPU beside 18
//! busy loops on 2 cores, within its elapsed-time bound (12 s). The largest within a box: the
//! tasks of one box could otherwise turn their CPU time into credit many times over (on one
//! CPU, each of many threads waits while another runs, on an idle host too); across boxes
//! that factor is the group's size, a few boxes.
//!
//! Why this and not the alternatives: the cgroup's CPU pressure (PSI `cpu.pressure`) says the
//! same but exists only on cgroup v2 with PSI enabled, and this host family runs v1; the
//! scheduler's per-task counter exists whenever `/proc/<pid>/schedstat` does (CONFIG_SCHED_INFO,
//! enabled by every distribution kernel), works on v1 and v2 alike, and needs no privilege
//! over the box's tasks (they are readable by the keeper). Tasks that end between two samples
//! take their last increase with them: the credit is then smaller, never larger. Gaining credit
//! needs a runnable task, one that burns CPU time as soon as it gets a core, which the CPU
//! limit counts; but a task at a lowered priority gets a core rarely and waits long for it, so
//! its credit per CPU second has no bound: the keeper stops every run at `WALL_STRETCH` × its
//! wall limit whatever the credit. The kernel adds a wait to the run delay when the task gets
//! its core, not while it waits: a starved task's credit arrives late, in lumps.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::WaitGroup;

/// At most this many tasks are sampled (the pids limit of a box is usually far lower).
const MAX_TASKS: usize = 1024;

/// A box's init, with its run delay when the box's run started: what it waited for a CPU
/// before (building the box ahead of need) is not the run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Init {
    pub(crate) pid: i32,
    baseline: u64,
}

impl Init {
    /// The init `pid` of a run that starts now.
    pub(crate) fn starting(pid: i32) -> Init {
        Init {
            pid,
            baseline: run_delay(pid, pid).unwrap_or(0),
        }
    }
}

/// A box's place in its wait group while its run lasts: it leaves the group when dropped,
/// before its init is reaped (so a reused pid is never sampled as a member).
pub(crate) struct Membership<'a> {
    pub(crate) group: &'a WaitGroup,
    init: Init,
}

impl<'a> Membership<'a> {
    pub(crate) fn new(group: &'a WaitGroup, init: Init) -> Membership<'a> {
        group.join(init);
        Membership { group, init }
    }
}

impl Drop for Membership<'_> {
    fn drop(&mut self) {
        self.group.leave(self.init);
    }
}

/// Accumulates the time a box (or a group of boxes run together) spent waiting for a CPU.
pub(crate) struct WaitClock {
    /// Run delay (ns) of each task at the last sample.
    delays: HashMap<i32, u64>,
    credit: Duration,
    last: Instant,
}

impl WaitClock {
    /// A clock that starts at `start` with the tasks of `inits` as they are then. A lone box is
    /// not sampled at the start: its tasks count from the run's start anyway (the init from its
    /// baseline, every other task from its creation, within the run), and a run need not pay
    /// a sample for nothing (a dozen files of `/proc` opened and read). The boxes of a group
    /// are: a peer's tasks may have waited before this clock started, which is not this run's.
    pub(crate) fn new(start: Instant, inits: &[Init]) -> WaitClock {
        let mut clock = WaitClock {
            delays: HashMap::new(),
            credit: Duration::ZERO,
            last: start,
        };
        if inits.len() > 1 {
            clock.sample(start, inits);
            clock.credit = Duration::ZERO;
        }
        clock
    }

    /// Wall time spent waiting for a CPU so far (as of the last sample).
    pub(crate) fn credit(&self) -> Duration {
        self.credit
    }

    /// Samples every task of the boxes of `inits` and adds this interval's waiting to the
    /// credit. The inits count too: a box's init builds the box before the program starts, and
    /// on a busy host it waits for a CPU to do so.
    pub(crate) fn sample(&mut self, now: Instant, inits: &[Init]) {
        let interval = now.saturating_duration_since(self.last);
        self.last = now;
        let mut current = HashMap::with_capacity(self.delays.len().max(4));
        // The largest increase of any task of each box (`inits[i]` and its descendants).
        let mut largest = vec![0u64; inits.len()];
        let mut pending: Vec<(usize, i32, u64)> = inits
            .iter()
            .enumerate()
            .map(|(member, i)| (member, i.pid, i.baseline))
            .collect();
        while let Some((member, pid, baseline)) = pending.pop() {
            if current.len() >= MAX_TASKS {
                break;
            }
            reset_autogroup(pid);
            for tid in threads(pid) {
                if let Some(delay) = run_delay(pid, tid) {
                    // A task not seen before counts from its baseline: zero for a task the box
                    // created after this clock started, the run's start for an init.
                    let before = self.delays.get(&tid).copied().unwrap_or(baseline);
                    largest[member] = largest[member].max(delay.saturating_sub(before));
                    current.insert(tid, delay);
                }
                // The init only waits for its children: the box's tasks are its descendants.
                pending.extend(children(pid, tid).into_iter().map(|c| (member, c, 0)));
            }
        }
        self.delays = current;
        self.credit += interval_credit(&largest, interval);
    }
}

/// The waiting credited to a group for one interval: the sum of its boxes' credits (each the
/// largest increase of run delay of its tasks, in nanoseconds), at most the interval (see the
/// module's documentation for why the sum).
fn interval_credit(boxes: &[u64], interval: Duration) -> Duration {
    let waited = boxes.iter().fold(0u64, |sum, &b| sum.saturating_add(b));
    Duration::from_nanos(waited).min(interval)
}

/// Puts the autogroup of process `pid` back at nice 0. Every box is a session, and so an
/// autogroup, of its own, whose nice its processes may raise through `/proc/self/autogroup`
/// (not a system call: seccomp cannot refuse it). Starved by that choice, a box would wait for
/// a CPU at no CPU cost, and once killed would take as long to die as the host stays busy; reset
/// at every sample, the lowered priority lasts one poll interval at most. Best effort: without
/// privilege over the box (a caller without root) the kernel may refuse, and the elapsed-time
/// bound still holds.
fn reset_autogroup(pid: i32) {
    let path = format!("/proc/{pid}/autogroup");
    let lowered =
        read_small(&path).is_some_and(|s| parse_autogroup_nice(&s).is_some_and(|n| n != 0));
    if lowered {
        let _ = std::fs::write(&path, "0");
    }
}

/// The nice of an autogroup (`/autogroup-42 nice 19`).
fn parse_autogroup_nice(text: &str) -> Option<i32> {
    text.split_whitespace().last()?.parse().ok()
}

fn read_small(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn children(pid: i32, tid: i32) -> Vec<i32> {
    read_small(&format!("/proc/{pid}/task/{tid}/children"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn threads(pid: i32) -> Vec<i32> {
    match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(dir) => dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The run delay of one task, in nanoseconds.
fn run_delay(pid: i32, tid: i32) -> Option<u64> {
    parse_run_delay(&read_small(&format!("/proc/{pid}/task/{tid}/schedstat"))?)
}

fn parse_run_delay(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// Whether the kernel reports run delays (for `doctor`).
pub fn available() -> bool {
    read_small("/proc/self/schedstat")
        .as_deref()
        .and_then(parse_run_delay)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autogroup_parsing() {
        assert_eq!(parse_autogroup_nice("/autogroup-42 nice 19\n"), Some(19));
        assert_eq!(parse_autogroup_nice("/autogroup-7 nice 0\n"), Some(0));
        assert_eq!(parse_autogroup_nice(""), None);
    }

    #[test]
    fn schedstat_parsing() {
        assert_eq!(parse_run_delay("123 456 7\n"), Some(456));
        assert_eq!(parse_run_delay("123"), None);
    }

    #[test]
    fn boxes_that_wait_in_turn_are_credited_every_wait() {
        // A manager and a solution in round trips: 30 ms and 40 ms of waiting at different
        // moments of a 100 ms interval are 70 ms in which one of their boxes waited.
        let ms = |n: u64| Duration::from_millis(n);
        let ns = |d: Duration| d.as_nanos() as u64;
        assert_eq!(interval_credit(&[ns(ms(30)), ns(ms(40))], ms(100)), ms(70));
        // Never more than the time that passed, whatever the tasks' waits add up to.
        assert_eq!(interval_credit(&[ns(ms(80)), ns(ms(80))], ms(100)), ms(100));
        assert_eq!(interval_credit(&[u64::MAX, u64::MAX], ms(100)), ms(100));
        // A sleeper (no task runnable) is credited nothing.
        assert_eq!(interval_credit(&[0, 0], ms(100)), Duration::ZERO);
    }

    #[test]
    fn credit_never_exceeds_the_elapsed_time() {
        // Our own process as the "init", sampled with other threads busy beside it.
        let init = Init::starting(std::process::id() as i32);
        let start = Instant::now();
        let mut clock = WaitClock::new(start, &[init]);
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
            }
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(10));
                clock.sample(Instant::now(), &[init]);
                assert!(clock.credit() <= start.elapsed());
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
}
