//! Stopping: a run that ioi-run aborts is never a verdict.
//!
//! When ioi-run is interrupted (Ctrl-C, SIGTERM, SIGHUP, a server's forced shutdown) it kills
//! the sandboxed runs in progress. Those runs end "killed by a signal", exactly like a program
//! that crashed, and a compile killed that way looks like a compiler failure. None of them may
//! be scored, saved or cached: the next run must judge those submissions afresh.
//!
//! The mechanism is one process-wide flag, raised *before* any run is killed ([`request`], or
//! from inside the signal handler itself with [`register_signals`]). Every place that turns a
//! sandbox outcome into something lasting (a compile-cache entry, a test verdict, a results
//! line) checks the flag after the run ended ([`check`]): since the flag was raised before the
//! kill, a run killed by ioi-run always sees it, and becomes the error [`Aborted`], which
//! propagates like any judge-side failure (never written) and is recognised with
//! [`is_aborted`] so that nothing reports it as "not judged" either.
//!
//! Signals sent to the terminal's whole foreground process group reach the boxes at the same
//! moment as ioi-run (as long as boxes share ioi-run's process group). The flag is set in the
//! signal handler, which the kernel runs before any thread of ioi-run returns to user space
//! once the signal is pending, and the signal is queued for ioi-run before a box killed by the
//! same group signal can be reaped; an outcome killed by one of these terminal signals is
//! still given a short moment for the handler to run ([`check_outcome`]).
//!
//! Two ways to stop share the flag but not the exit. The command line's signal handler also
//! records *which* signal interrupted it ([`interrupted_by`]): it then owns the process exit,
//! and the main thread, whose runs were just killed, parks instead of exiting first with their
//! failure ([`interrupting_signal`]). The server's forced shutdown only raises the flag
//! ([`request`]): no signal is recorded, so nothing parks and the server returns normally.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The error of a run that ioi-run stopped itself: not a verdict, never saved or cached.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("aborted: ioi-run is stopping (the run was interrupted, not judged)")]
pub struct Aborted;

fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Says that ioi-run is stopping. Call it before killing any run.
pub fn request() {
    flag().store(true, Ordering::SeqCst);
}

/// Whether ioi-run is stopping.
pub fn requested() -> bool {
    flag().load(Ordering::SeqCst)
}

/// Raises the flag from inside the handler of these signals (async-signal-safe: one atomic
/// store), so that it is up before any box killed by the same signal can be reported.
pub fn register_signals(signals: &[i32]) {
    for &sig in signals {
        let _ = signal_hook::flag::register(sig, flag().clone());
    }
}

/// `Err(Aborted)` once ioi-run is stopping.
pub fn check() -> anyhow::Result<()> {
    if requested() {
        Err(Aborted.into())
    } else {
        Ok(())
    }
}

/// Signals a terminal or a service manager sends to a whole process group.
const GROUP_SIGNALS: &[i32] = &[libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM];

/// [`check`] after a sandboxed run: a run killed by a signal that may have come from the
/// terminal waits a moment for ioi-run's own handler (delivered on another thread) to raise
/// the flag before the run is taken as a verdict.
pub fn check_outcome(outcome: &ioi_sandbox::Outcome) -> anyhow::Result<()> {
    if outcome.signal.is_some_and(|s| GROUP_SIGNALS.contains(&s)) && !requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}

/// The signal that interrupted the command line (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Records that `signal` interrupted the command line, and raises the flag (see the module
/// documentation: only the CLI's signal handler calls this, never a server shutdown).
pub fn interrupted_by(signal: i32) {
    SIGNAL.store(signal, Ordering::SeqCst);
    request();
}

/// The signal that interrupted the command line, if any: set by [`interrupted_by`] only, so a
/// server's forced shutdown, which raises the flag alone, leaves it `None`.
pub fn interrupting_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Whether an error (anywhere in its chain) is [`Aborted`].
pub fn is_aborted(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.is::<Aborted>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_requested_every_check_is_aborted_and_recognised_through_context() {
        assert!(check().is_ok());
        request();
        let error = check()
            .unwrap_err()
            .context("test 01")
            .context("submission x");
        assert!(is_aborted(&error));
        assert!(!is_aborted(&anyhow::anyhow!("a sandbox failure")));
        let killed = ioi_sandbox::Outcome {
            signal: Some(libc::SIGINT),
            ..ioi_sandbox::Outcome::internal_error("killed")
        };
        assert!(check_outcome(&killed).is_err());
        // Raising the flag alone (a server's forced shutdown) records no interrupting signal,
        // so the command line's main thread does not park; the CLI's handler records one.
        assert_eq!(interrupting_signal(), None);
        interrupted_by(libc::SIGTERM);
        assert_eq!(interrupting_signal(), Some(libc::SIGTERM));
        assert!(requested());
    }
}
