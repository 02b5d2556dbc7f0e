//! Where the wall time of a judgement goes, for `ioi-run bench judge`: cheap timestamps at the
//! boundaries of the submission's compile and of each test's phases, added up per phase. Off unless a benchmark
//! turns it on: then [`now`] is one relaxed atomic load and returns `None`, and nothing is
//! recorded, so judging pays nothing for it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A phase of a judgement: the submission's compile, then those of a test in the order a test
/// goes through them (a Batch test has no FIFOs and one process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The submission's compile, in its box (a cache hit costs nothing).
    Compile,
    /// The FIFOs, the root-only folder and the run specs.
    Setup,
    /// Per process: its `Sandbox::run` call less the run itself (a box taken or built, the
    /// run's part handed over, the init reaped, the counters read).
    BoxAndReap,
    /// Per process: the run itself, from the hand-over to the report (the sandbox's wall time).
    Run,
    /// From the first process's end to the last's (the other side finishing its part).
    LastProcess,
    /// The verdict: the manager's output read and parsed, or the checker run.
    Verdict,
    /// The FIFOs and the folder handed to their removal (see `scratch::remove_later`).
    Teardown,
    /// The whole test, as the scheduler's worker sees it.
    Test,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::Compile,
        Phase::Setup,
        Phase::BoxAndReap,
        Phase::Run,
        Phase::LastProcess,
        Phase::Verdict,
        Phase::Teardown,
        Phase::Test,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Phase::Compile => "the submission's compile, in its box",
            Phase::Setup => "FIFOs, private folder, run specs",
            Phase::BoxAndReap => "per process: box taken/built, hand-over, reap, counters",
            Phase::Run => "per process: the run (hand-over to report)",
            Phase::LastProcess => "first process's end to the last's",
            Phase::Verdict => "verdict (manager output parsed / checker / diff)",
            Phase::Teardown => "teardown (FIFOs, folder handed to removal)",
            Phase::Test => "whole test (worker's view)",
        }
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Per phase: how many times it was recorded, and its total in nanoseconds.
static COUNTS: [AtomicU64; Phase::ALL.len()] = [const { AtomicU64::new(0) }; Phase::ALL.len()];
static NANOS: [AtomicU64; Phase::ALL.len()] = [const { AtomicU64::new(0) }; Phase::ALL.len()];

/// Starts recording (from zero).
pub fn enable() {
    reset();
    ENABLED.store(true, Ordering::Relaxed);
}

/// Stops recording.
pub fn disable() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// Forgets what was recorded.
pub fn reset() {
    for i in 0..Phase::ALL.len() {
        COUNTS[i].store(0, Ordering::Relaxed);
        NANOS[i].store(0, Ordering::Relaxed);
    }
}

/// The time now when recording, else `None` (and nothing else is done).
#[inline]
pub fn now() -> Option<Instant> {
    ENABLED.load(Ordering::Relaxed).then(Instant::now)
}

/// Records `phase` as the time from `since` (a [`now`]) to now; returns now, to start the next
/// phase from.
pub fn since(phase: Phase, since: Option<Instant>) -> Option<Instant> {
    let start = since?;
    let end = Instant::now();
    add(phase, end.saturating_duration_since(start));
    Some(end)
}

/// Records `phase` as `took` when recording.
pub fn add(phase: Phase, took: Duration) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let i = Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0);
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
    NANOS[i].fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
}

/// What was recorded: per phase, how many times and the total.
pub fn totals() -> Vec<(Phase, u64, Duration)> {
    Phase::ALL
        .iter()
        .enumerate()
        .map(|(i, phase)| {
            (
                *phase,
                COUNTS[i].load(Ordering::Relaxed),
                Duration::from_nanos(NANOS[i].load(Ordering::Relaxed)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_recorded_only_while_enabled() {
        disable();
        reset();
        assert!(now().is_none());
        add(Phase::Verdict, Duration::from_millis(2));
        assert!(since(Phase::Setup, now()).is_none());
        assert!(totals().iter().all(|(_, count, _)| *count == 0));

        enable();
        let start = now();
        assert!(start.is_some());
        add(Phase::Verdict, Duration::from_millis(2));
        add(Phase::Verdict, Duration::from_millis(3));
        since(Phase::Setup, start);
        disable();
        let totals = totals();
        let verdict = totals.iter().find(|t| t.0 == Phase::Verdict).unwrap();
        assert_eq!((verdict.1, verdict.2), (2, Duration::from_millis(5)));
        assert_eq!(totals.iter().find(|t| t.0 == Phase::Setup).unwrap().1, 1);
        reset();
    }
}
