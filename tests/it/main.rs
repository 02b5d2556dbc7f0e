//! The integration tests: one crate, so the library and its dependencies are linked into one
//! test binary. A module per subject; `common` is the harness they share, and the fixtures
//! (task folders, datasets, clients, fuzz seeds, the cgroup-v2 guest) live beside this folder,
//! under `tests/`. Run one subject with `tools/test -E 'test(/^keeper::/)'`.

mod common;

mod architecture;
mod bench_boxes;
mod bench_floor;
mod bench_soak;
mod cgroup_v2;
mod compile_pch;
mod container;
mod docs;
mod doctor;
mod errors;
mod evaluate;
mod evaluate_input;
mod fidelity;
mod first_screen;
mod fuzz;
mod hostile_judge;
mod html_report;
mod interrupt;
mod judge;
mod judge_c;
mod judge_debug;
mod judge_output;
mod junit_summary;
mod keeper;
mod output_pipe;
mod problem_sources;
mod rl_client;
mod run_settings;
mod sandbox_cli;
mod serve_hostile;
mod serve_judge;
mod serve_restart;
mod serve_run_code;
mod serve_soak;
mod server_api;
mod server_metrics;
mod slurm;
mod tps;
mod untrusted_input;
mod verdict_cache;
mod verl_client;
