//! Benchmarks that print figures (`ioi-run bench ...`), never timed assertions in tests.
//!
//! `compile`: a submission compile with and without the precompiled header, on the demo's
//! submissions. `scheduler`: the scheduler at 64 and 256 workers with a scripted runner (no
//! processes), to show how much of the workers' time goes into runs.

pub mod compile;
pub mod scheduler;
