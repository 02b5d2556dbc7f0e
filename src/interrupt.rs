//! Whether ioi-run is being interrupted (SIGINT, SIGTERM, SIGHUP). The command line's handler
//! records the signal here before it kills the sandboxed runs; code that sees its runs die
//! meanwhile asks here, so that it reports the interrupt once instead of a judge-side failure
//! per run.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted ioi-run (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Records that `signal` interrupted ioi-run.
pub fn record(signal: i32) {
    SIGNAL.store(signal, Ordering::SeqCst);
}

/// The signal that interrupted ioi-run, if any.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}
