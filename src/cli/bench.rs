//! `ioi-run bench`: benchmarks that print figures (never timed assertions in tests).

use std::time::Duration;

use anyhow::Result;

use crate::bench::serve::{BenchServeOptions, ServeApi};
use crate::bench::serve_run_code::RunCodeBatch;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Per-run overhead of a sandboxed /bin/true against a plain fork+exec of it.
    Sandbox {
        /// Number of runs of each kind.
        #[arg(long, default_value_t = 300)]
        runs: usize,
        /// Hold this many MiB of touched memory in ioi-run while measuring (the cost of a run
        /// may grow with the caller's memory).
        #[arg(long, default_value_t = 0)]
        caller_mib: usize,
        /// Give the program a stdin file and stdout/stderr files, as the judge does (they are
        /// bound into the box to hide their host paths), instead of /dev/null.
        #[arg(long)]
        stdio_files: bool,
        /// Also time the `ioi-run sandbox -- /bin/true` command end to end (a process start,
        /// the sandbox's set-up and one run) against running `/bin/true` directly, over this
        /// many runs of each (0: skip).
        #[arg(long, default_value_t = 60)]
        command_runs: usize,
        /// Time isolate beside the command (built by tools/build-isolate.sh): its `--run` in a
        /// box initialised once, and `--init`, `--run`, `--cleanup` in turn.
        #[arg(long, value_name = "PATH")]
        isolate: Option<std::path::PathBuf>,
    },
    /// Many fresh boxes at once (far more loops than cores): boxes per second, where the
    /// loops' time goes and, traced (root, tracefs), the kernel's serialized part of a box phase
    /// by phase, projected to many cores.
    Boxes {
        /// Numbers of box loops at once.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,16,64")]
        threads: Vec<usize>,
        /// Seconds each thread count runs.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Trace the boxes' kernel work with tracefs (lock contention, system calls, switches,
        /// work items); as root.
        #[arg(long)]
        trace: bool,
        /// Project to many cores with this serialized part of a box (ms), instead of the traced
        /// one.
        #[arg(long, value_name = "MS")]
        serial_ms: Option<f64>,
        /// With --trace: also write each thread count's raw traces (tasks-N.txt, work-N.txt)
        /// in this folder.
        #[arg(long, value_name = "DIR", requires = "trace")]
        keep_trace: Option<std::path::PathBuf>,
    },
    /// One submission on ~100 tests of ~10 ms: ioi-run against compile+run per test (Piston).
    Judge {
        #[arg(long, default_value_t = 100)]
        tests: usize,
        /// Loop iterations of the solution per test (10^7 is about 10 ms).
        #[arg(long, default_value_t = 10_000_000)]
        work: u64,
        #[arg(long, short = 'j', value_parser = super::job_count)]
        jobs: Option<usize>,
        /// Judge once more beside this many busy loops (each a session of its own): every test
        /// must be accepted again.
        #[arg(long, default_value_t = 0)]
        outside_load: usize,
        /// A real task folder (CMS layout) instead of the generated problem: its submission
        /// judged as a new submission with the problem's artifacts cached, against the
        /// reference per-test workflow, with where a Communication test's time goes.
        #[arg(long, value_name = "DIR")]
        task: Option<std::path::PathBuf>,
        /// With --task: the submission (default: the task's solutions/model_solution/*.cpp,
        /// else solutions/correct/*.cpp).
        #[arg(long, value_name = "FILE", requires = "task")]
        solution: Option<std::path::PathBuf>,
        /// With --task: timed judgings, each a new submission.
        #[arg(long, default_value_t = 5, requires = "task")]
        repeats: usize,
        /// With --task: tests the reference per-test workflow is timed on.
        #[arg(long, default_value_t = 3, requires = "task")]
        reference_tests: usize,
        /// With --task: a second floor, each test's processes in a box of isolate's own
        /// (`--init`, `--run`, `--cleanup`, as CMS runs them); isolate built by
        /// tools/build-isolate.sh.
        #[arg(long, value_name = "PATH", requires = "task")]
        isolate: Option<std::path::PathBuf>,
    },
    /// Dataset throughput on the demo scaled up, and peak memory while streaming a large tests
    /// file.
    Evaluate {
        #[arg(long, default_value_t = 200)]
        submissions: usize,
        #[arg(long, short = 'j', value_parser = super::job_count)]
        jobs: Option<usize>,
        /// Size of the generated tests file, in GiB.
        #[arg(long, default_value_t = 1.0)]
        tests_gb: f64,
        /// Print how busy the cores were, second by second.
        #[arg(long)]
        timeline: bool,
    },
    /// Submission compiles of the demo, plain and with the precompiled header.
    Compile {
        /// Rounds over the demo's submissions (the first builds the precompiled headers).
        #[arg(long, default_value_t = 2)]
        rounds: usize,
    },
    /// The scheduler alone with a scripted runner (no processes), at several worker counts.
    Scheduler {
        /// Numbers of workers.
        #[arg(long, value_delimiter = ',', default_value = "64,256")]
        workers: Vec<usize>,
        /// Submissions per worker.
        #[arg(long, default_value_t = 8)]
        per_worker: usize,
        /// Duration of one fake test, in milliseconds.
        #[arg(long, default_value_t = 1.0)]
        test_ms: f64,
        /// Tests burn their duration as CPU of their thread instead of sleeping (the share of
        /// the CPU the scheduler takes, apart from the kernel's cost of waking sleepers).
        #[arg(long)]
        spin: bool,
        /// One problem in four is a Communication task whose tests occupy 2 slots (the manager
        /// and the user process): how full the slots stay with wide tests in the mix.
        #[arg(long)]
        communication: bool,
    },
    /// The cost of sharding: one process against N shard processes on the same cores, and of
    /// the merge.
    Shards {
        #[arg(long, default_value_t = 52)]
        submissions: usize,
        #[arg(long, default_value_t = 2)]
        shards: u32,
        /// Workers in all [default: the number of cores].
        #[arg(long, short = 'j', value_parser = super::job_count)]
        jobs: Option<usize>,
    },
    /// Verdicts under outside load: every solution of every task in a fixture folder judged
    /// once, then again beside busy loops on three times the cores; prints every verdict that
    /// changed (the goal: none) and exits 1 if one did.
    Stress {
        /// A folder of CMS task folders, each with `solutions/*.cpp`.
        #[arg(long, default_value = "tests/problems")]
        problems: std::path::PathBuf,
        /// Judgings of the whole set under load.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Busy loops per core.
        #[arg(long, default_value_t = 3)]
        loops_per_core: usize,
        /// Workers of each judging [default: the number of cores].
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Round-trip-heavy Communication tasks with their processes on one CPU and wherever the
    /// host puts them, alone and beside busy loops: each test's verdict and CPU time.
    Roundtrips {
        /// CMS task folders, each with `solutions/ac.cpp`.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "tests/problems/pingpong,tests/problems/hops"
        )]
        tasks: Vec<std::path::PathBuf>,
        /// Workers under load [default: the number of cores].
        #[arg(long, short = 'j', value_parser = super::job_count)]
        jobs: Option<usize>,
        /// Busy loops beside the loaded judgings [default: the number of cores].
        #[arg(long)]
        loops: Option<usize>,
        /// Judgings of each kind (each test's largest CPU time is shown).
        #[arg(long, default_value_t = 2)]
        repeats: usize,
    },
    /// Requests per second of `ioi-run serve` with the real judge (IOI and Codeforces requests,
    /// clients spread over several endpoints of one server), compiles per distinct submission,
    /// and the gain of compiling a submission once over compiling it per request; for
    /// SandboxFusion's /run_code, latency and that gain on a verl-like batch.
    Serve {
        /// Executions at once in the server [default: the number of cores].
        #[arg(long, short = 'j', value_parser = super::job_count)]
        jobs: Option<usize>,
        /// Requests per concurrency level.
        #[arg(long, default_value_t = 128)]
        requests: usize,
        /// Concurrency levels (numbers of clients sending at once).
        #[arg(long, value_delimiter = ',', default_value = "1,8,64")]
        clients: Vec<usize>,
        /// Ports of the server the clients spread over.
        #[arg(long, default_value_t = 8)]
        endpoints: usize,
        /// Requests in the compile-once vs compile-per-request comparison.
        #[arg(long, default_value_t = 12)]
        compile_requests: usize,
        /// The API to measure: Piston's execute, SandboxFusion's /run_code (verl), or both.
        #[arg(long, value_enum, default_value = "all")]
        api: ServeApi,
        /// /run_code batch: distinct C++ programs (completions).
        #[arg(long, default_value_t = 16)]
        completions: usize,
        /// /run_code batch: test cases per program, one request each.
        #[arg(long, default_value_t = 10)]
        test_cases: usize,
        /// /run_code batch: requests in flight (verl's sandbox_fusion.max_concurrent).
        #[arg(long, default_value_t = 64)]
        max_concurrent: usize,
    },
    /// A soak the size of a training run: one `ioi-run serve` child process, an RL-like mix
    /// of requests (Piston's c++, cf_python3 and cms_ioi with a checker, /run_code in C++ and
    /// Python, hostile programs), every honest answer checked; throughput, latency, the
    /// server's memory through the run, and what it holds (descriptors, threads, cgroups,
    /// scratch folders) before and after. Exits non-zero when an answer was wrong or something
    /// held did not come back.
    Soak {
        /// Requests in all.
        #[arg(long, default_value_t = 100_000)]
        requests: usize,
        /// Concurrent clients.
        #[arg(long, default_value_t = 32)]
        clients: usize,
        /// The server's executions at once [default: the number of cores].
        #[arg(long, short = 'j', value_parser = super::job_count)]
        jobs: Option<usize>,
        /// Seconds between two samples of the server's memory, descriptors and threads.
        #[arg(long, default_value_t = 2.0)]
        sample_every: f64,
        /// The server's cache folder [default: a fresh temporary folder].
        #[arg(long)]
        cache_dir: Option<std::path::PathBuf>,
        /// Also write every sample of the server (seconds, requests answered, RSS, fds,
        /// threads) to this CSV file.
        #[arg(long, value_name = "FILE")]
        samples: Option<std::path::PathBuf>,
    },
}

pub fn run(args: Args) -> Result<i32> {
    match args.what {
        What::Soak {
            requests,
            clients,
            jobs,
            sample_every,
            cache_dir,
            samples,
        } => crate::bench::soak::run(&crate::bench::soak::SoakOptions {
            requests,
            clients: clients.max(1),
            jobs: super::jobs_or_default(jobs),
            sample_every: Duration::from_secs_f64(sample_every.clamp(0.05, 3600.0)),
            cache_dir,
            samples,
        }),
        What::Sandbox {
            runs,
            caller_mib,
            stdio_files,
            command_runs,
            isolate,
        } => crate::bench::sandbox::run(
            runs,
            caller_mib,
            stdio_files,
            command_runs,
            isolate.as_deref(),
        ),
        What::Boxes {
            threads,
            seconds,
            trace,
            serial_ms,
            keep_trace,
        } => crate::bench::boxes::run(&crate::bench::boxes::BoxesBench {
            threads,
            seconds: seconds.clamp(0.05, 3600.0),
            trace,
            serial_ms,
            keep_trace,
        }),
        What::Roundtrips {
            tasks,
            jobs,
            loops,
            repeats,
        } => {
            let jobs = super::jobs_or_default(jobs);
            crate::bench::roundtrips::run(&crate::bench::roundtrips::RoundTripBench {
                tasks: &tasks,
                jobs,
                loops: loops.unwrap_or(jobs),
                repeats,
            })
        }
        What::Judge {
            tests,
            work,
            jobs,
            outside_load,
            task: None,
            ..
        } => crate::bench::judge::run(tests, work, super::jobs_or_default(jobs), outside_load),
        What::Judge {
            jobs,
            task: Some(task),
            solution,
            repeats,
            reference_tests,
            isolate,
            ..
        } => crate::bench::judge_task::run(&crate::bench::judge_task::TaskBench {
            task: &task,
            solution: solution.as_deref(),
            jobs: super::jobs_or_default(jobs),
            repeats,
            reference_tests,
            isolate: isolate.as_deref(),
        }),
        What::Evaluate {
            submissions,
            jobs,
            tests_gb,
            timeline,
        } => crate::bench::evaluate::run(
            submissions,
            super::jobs_or_default(jobs),
            tests_gb,
            timeline,
        ),
        What::Compile { rounds } => {
            crate::bench::compile::run(rounds.max(1))?;
            Ok(0)
        }
        What::Scheduler {
            workers,
            per_worker,
            test_ms,
            spin,
            communication,
        } => {
            crate::bench::scheduler::run(&crate::bench::scheduler::BenchSchedulerOptions {
                workers,
                per_worker: per_worker.max(1),
                test_time: Duration::from_secs_f64(test_ms.max(0.0) / 1e3),
                spin,
                communication,
            })?;
            Ok(0)
        }
        What::Shards {
            submissions,
            shards,
            jobs,
        } => crate::bench::shards::run(submissions, shards.max(1), super::jobs_or_default(jobs)),
        What::Stress {
            problems,
            rounds,
            loops_per_core,
            jobs,
        } => crate::bench::stress::run(&crate::bench::stress::StressOptions {
            problems,
            rounds,
            loops_per_core,
            jobs: super::jobs_or_default(jobs),
        }),
        What::Serve {
            jobs,
            requests,
            clients,
            endpoints,
            compile_requests,
            api,
            completions,
            test_cases,
            max_concurrent,
        } => {
            crate::bench::serve::bench_serve(&BenchServeOptions {
                jobs: super::jobs_or_default(jobs),
                requests,
                clients,
                endpoints: endpoints.max(1),
                compile_requests,
                api,
                run_code: RunCodeBatch {
                    completions: completions.max(1),
                    test_cases: test_cases.max(1),
                    max_concurrent: max_concurrent.max(1),
                },
            })?;
            Ok(0)
        }
    }
}
