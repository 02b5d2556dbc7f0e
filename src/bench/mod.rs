//! Benchmarks that print figures (`ioi-run bench ...`), never timed assertions in tests. The
//! CLI (`src/cli/bench.rs`) only parses their arguments.
//!
//! `compile`: a submission compile with and without the precompiled header, on the demo's
//! submissions. `scheduler`: the scheduler at 64 and 256 workers with a scripted runner (no
//! processes), to show how much of the workers' time goes into runs. `judge`: one submission
//! on ~100 tests against a Piston-style compile-and-run per test; with `--task`, a real task
//! against its floor (`floor`: the same compile and tests with no sandbox and no judge). `evaluate`: dataset
//! throughput on the scaled demo. `shards`: the cost of sharding. `serve`: the HTTP server's
//! throughput with the real judge (Piston's routes, and SandboxFusion's `/run_code` on a verl-like
//! batch in `serve_run_code`). `soak`: one `serve` process through a training run's worth of
//! requests (the mix of `soak_mix`), its answers checked, its memory and what it holds read from
//! outside (`soak_probe`), its figures printed by `soak_report`. `sandbox`: the sandbox's cost per run and of the `sandbox`
//! command. `stress`: verdicts of the fixture set beside busy loops against the same on the machine
//! as it is. `roundtrips`: round-trip-heavy Communication tasks with their processes on one CPU
//! and spread, alone and under load. `load`: busy loops beside a measurement or a test. `speed`: this host's speed against the
//! reference workload (`doctor`'s suggested `--time-scale`).

mod box_model;
mod box_trace;
pub(crate) mod boxes;
mod clients;
pub(crate) mod compile;
pub(crate) mod evaluate;
pub(crate) mod floor;
mod floor_scores;
pub(crate) mod isolate;
pub(crate) mod isolate_floor;
pub(crate) mod judge;
pub(crate) mod judge_task;
pub mod load;
pub(crate) mod roundtrips;
pub(crate) mod sandbox;
pub(crate) mod scheduler;
pub(crate) mod serve;
pub(crate) mod serve_run_code;
pub(crate) mod shards;
pub(crate) mod soak;
mod soak_mix;
mod soak_probe;
mod soak_report;
pub(crate) mod speed;
pub(crate) mod stress;
mod tracefs;
