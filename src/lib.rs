//! ioi-run: judge C++ solutions to IOI problems natively, in a real sandbox, on every core.
//!
//! Data flows one way: the CLI loads problems, tests and submissions, plans which tests to run,
//! judges them (compile once, run tests in `ioi_sandbox`), scores them and writes results and
//! reports. Nothing below calls back up.

pub mod bench;
pub mod catalog;
pub mod cli;
pub mod dataset;
pub mod error;
pub mod evaluate;
pub(crate) mod fidelity;
pub mod judge;
pub(crate) mod keeper;
pub mod name;
pub(crate) mod output;
pub mod problem;
pub mod score;
pub(crate) mod scratch;
pub mod server;
pub(crate) mod slurm;
