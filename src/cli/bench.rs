//! `ioi-run bench`: benchmarks that print figures (never timed assertions in tests).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Termination};

use crate::bench::serve::BenchServeOptions;
use crate::cli::output::outln;

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
    },
    /// One submission on ~100 tests of ~10 ms: ioi-run against compile+run per test (Piston).
    Judge {
        #[arg(long, default_value_t = 100)]
        tests: usize,
        /// Loop iterations of the solution per test (10^7 is about 10 ms).
        #[arg(long, default_value_t = 10_000_000)]
        work: u64,
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
        /// Judge once more beside this many busy loops (each a session of its own): every test
        /// must be accepted again.
        #[arg(long, default_value_t = 0)]
        outside_load: usize,
    },
    /// Dataset throughput on the demo scaled up, and peak memory while streaming a large tests
    /// file.
    Evaluate {
        #[arg(long, default_value_t = 200)]
        submissions: usize,
        #[arg(long, short = 'j')]
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
    },
    /// The cost of sharding: one process against N shard processes on the same cores, and of
    /// the merge.
    Shards {
        #[arg(long, default_value_t = 52)]
        submissions: usize,
        #[arg(long, default_value_t = 2)]
        shards: u32,
        /// Workers in all [default: the number of cores].
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Requests per second of `ioi-run serve` with the real judge (IOI and Codeforces requests,
    /// clients spread over several endpoints of one server), compiles per distinct submission,
    /// and the gain of compiling a submission once over compiling it per request.
    Serve {
        /// Executions at once in the server [default: the number of cores].
        #[arg(long, short = 'j')]
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
    },
}

pub fn run(args: Args) -> Result<i32> {
    match args.what {
        What::Sandbox {
            runs,
            caller_mib,
            stdio_files,
            command_runs,
        } => bench_sandbox(runs, caller_mib, stdio_files, command_runs),
        What::Judge {
            tests,
            work,
            jobs,
            outside_load,
        } => crate::bench::judge::run(tests, work, super::jobs_or_default(jobs), outside_load),
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
        } => {
            crate::bench::scheduler::run(&crate::bench::scheduler::BenchSchedulerOptions {
                workers,
                per_worker: per_worker.max(1),
                test_time: Duration::from_secs_f64(test_ms.max(0.0) / 1e3),
                spin,
            })?;
            Ok(0)
        }
        What::Shards {
            submissions,
            shards,
            jobs,
        } => crate::bench::shards::run(submissions, shards.max(1), super::jobs_or_default(jobs)),
        What::Serve {
            jobs,
            requests,
            clients,
            endpoints,
            compile_requests,
        } => {
            crate::bench::serve::bench_serve(&BenchServeOptions {
                jobs: super::jobs_or_default(jobs),
                requests,
                clients,
                endpoints: endpoints.max(1),
                compile_requests,
            })?;
            Ok(0)
        }
    }
}

/// Median and 90th percentile of a sample, in milliseconds.
fn summary(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() * 9 / 10]),
    )
}

/// CPU time spent so far by the kernel's own threads (kworkers, RCU, the network namespace
/// cleanup): children of `kthreadd` (pid 2). The kernel tears namespaces and memory cgroups down
/// there, after a run is over and outside its latency, but on the same cores. Threads that exit
/// in between are missed, so the figure is a lower bound.
fn kernel_threads_cpu() -> Duration {
    let ticks_per_second = match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as f64,
        _ => 100.0,
    };
    let mut ticks = 0u64;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name, which is in parentheses and may hold spaces.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state ppid ... utime (field 14) stime (field 15): indices 0, 1, 11, 12 here.
        let kernel_thread = fields.get(1) == Some(&"2");
        if kernel_thread {
            let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
            ticks += field(11).unwrap_or(0) + field(12).unwrap_or(0);
        }
    }
    Duration::from_secs_f64(ticks as f64 / ticks_per_second)
}

/// CPU time (user + system) of this process and of its children that were waited for (a
/// box's init, and through it the program): unlike latency, load on the machine barely
/// changes it.
fn own_cpu() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    let cpu = |who| {
        getrusage(who).map_or(Duration::ZERO, |u| {
            let t = |tv: nix::sys::time::TimeVal| {
                Duration::new(tv.tv_sec().max(0) as u64, tv.tv_usec().max(0) as u32 * 1000)
            };
            t(u.user_time()) + t(u.system_time())
        })
    };
    cpu(UsageWho::RUSAGE_SELF) + cpu(UsageWho::RUSAGE_CHILDREN)
}

/// What a batch of runs cost: latencies, and per run our CPU and the kernel threads' CPU.
struct Timed {
    latencies: Vec<Duration>,
    cpu: Duration,
    kernel: Duration,
}

/// Runs `sample` `runs` times.
fn timed_runs(runs: usize, mut sample: impl FnMut() -> Result<Duration>) -> Result<Timed> {
    let kernel_before = kernel_threads_cpu();
    let cpu_before = own_cpu();
    let latencies = (0..runs).map(|_| sample()).collect::<Result<Vec<_>>>()?;
    let per_run = runs.max(1) as u32;
    Ok(Timed {
        latencies,
        cpu: own_cpu().saturating_sub(cpu_before) / per_run,
        kernel: kernel_threads_cpu().saturating_sub(kernel_before) / per_run,
    })
}

fn bench_sandbox(
    runs: usize,
    caller_mib: usize,
    stdio_files: bool,
    command_runs: usize,
) -> Result<i32> {
    let runs = runs.max(10);
    let held = std::hint::black_box(vec![1u8; caller_mib << 20]);
    let sandbox = Sandbox::new(SandboxOptions::default())?;
    let dir = tempfile::tempdir()?;
    sandbox.give_to_box(dir.path())?;
    let mut spec = RunSpec::new(dir.path(), ["/bin/true"]);
    spec.limits = Limits {
        cpu_time: Some(Duration::from_secs(1)),
        wall_time: Some(Duration::from_secs(5)),
        memory: Some(256 << 20),
        ..Limits::default()
    };
    if stdio_files {
        let input = dir.path().join("input.txt");
        std::fs::write(&input, "1 2\n")?;
        spec.stdin = ioi_sandbox::Stdio::Path(input);
        spec.stdout = ioi_sandbox::Stdio::Path(dir.path().join("stdout"));
        spec.stderr = ioi_sandbox::Stdio::Path(dir.path().join("stderr"));
    }

    let run_plain = |program: &mut std::process::Command| -> Result<Duration> {
        let t = Instant::now();
        let status = program
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("cannot run {program:?}"))?;
        let elapsed = t.elapsed();
        anyhow::ensure!(status.success(), "{program:?} failed: {status}");
        Ok(elapsed)
    };
    let plain = timed_runs(runs, || {
        run_plain(&mut std::process::Command::new("/bin/true"))
    })?;
    let sandboxed = timed_runs(runs, || {
        let t = Instant::now();
        let outcome = sandbox.run(&spec);
        let elapsed = t.elapsed();
        anyhow::ensure!(
            outcome.status == Termination::Ok,
            "sandboxed /bin/true failed: {}",
            outcome.message
        );
        Ok(elapsed)
    })?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (plain_med, plain_p90) = summary(plain.latencies);
    let (sb_med, sb_p90) = summary(sandboxed.latencies);
    outln!(
        "runs of /bin/true         {runs} (ioi-run holding {} MiB more, stdio {})",
        held.len() >> 20,
        if stdio_files { "files" } else { "/dev/null" }
    );
    outln!("plain fork+exec           median {plain_med:.3} ms   p90 {plain_p90:.3} ms");
    outln!(
        "sandboxed (ns+mounts+cgroup {:?}+seccomp)  median {sb_med:.3} ms   p90 {sb_p90:.3} ms",
        sandbox.cgroup_version()
    );
    outln!(
        "overhead per run          median {:.3} ms",
        sb_med - plain_med
    );
    outln!(
        "CPU per run (ioi-run + box)  plain {:.3} ms   sandboxed {:.3} ms",
        ms(plain.cpu),
        ms(sandboxed.cpu)
    );
    outln!(
        "kernel threads' CPU per run (teardown, outside the latency): plain {:.3} ms, sandboxed {:.3} ms",
        ms(plain.kernel),
        ms(sandboxed.kernel)
    );
    if command_runs > 0 {
        bench_sandbox_command(command_runs, &run_plain)?;
    }
    Ok(0)
}

/// `ioi-run sandbox -- /bin/true` as a command against `/bin/true` run directly, interleaved
/// in rounds so that a change of the machine's load weighs on both alike.
fn bench_sandbox_command(
    runs: usize,
    run_plain: &dyn Fn(&mut std::process::Command) -> Result<Duration>,
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the ioi-run executable")?;
    let (mut direct, mut command) = (Vec::new(), Vec::new());
    let (mut direct_kernel, mut command_kernel) = (Duration::ZERO, Duration::ZERO);
    let (mut direct_cpu, mut command_cpu) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..runs.div_ceil(10) {
        let d = timed_runs(10, || {
            run_plain(&mut std::process::Command::new("/bin/true"))
        })?;
        direct.extend(d.latencies);
        direct_kernel += d.kernel;
        direct_cpu += d.cpu;
        let c = timed_runs(10, || {
            run_plain(
                std::process::Command::new(&exe)
                    .args(["sandbox", "--", "/bin/true"])
                    .stderr(std::process::Stdio::null()),
            )
        })?;
        command.extend(c.latencies);
        command_kernel += c.kernel;
        command_cpu += c.cpu;
    }
    let rounds = runs.div_ceil(10) as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (direct_med, direct_p90) = summary(direct);
    let (command_med, command_p90) = summary(command);
    outln!("commands, {} runs of each, interleaved:", rounds * 10);
    outln!("/bin/true directly        median {direct_med:.3} ms   p90 {direct_p90:.3} ms");
    outln!("ioi-run sandbox -- /bin/true  median {command_med:.3} ms   p90 {command_p90:.3} ms");
    outln!(
        "command overhead          median {:.3} ms",
        command_med - direct_med
    );
    outln!(
        "CPU per run               direct {:.3} ms   command {:.3} ms",
        ms(direct_cpu / rounds),
        ms(command_cpu / rounds)
    );
    outln!(
        "kernel threads' CPU per run: direct {:.3} ms, command {:.3} ms",
        ms(direct_kernel / rounds),
        ms(command_kernel / rounds)
    );
    Ok(())
}
