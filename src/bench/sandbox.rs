//! `ioi-run bench sandbox`: the per-run overhead of a sandboxed `/bin/true` against a plain
//! fork+exec of it in-process, the CPU of a run (ioi-run and the box) and of the kernel's own
//! threads (teardown, outside the latency), and the `ioi-run sandbox` command end to end
//! against the program run directly.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Termination};

use crate::output::outln;

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

pub fn run(runs: usize, caller_mib: usize, stdio_files: bool, command_runs: usize) -> Result<i32> {
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
        command(command_runs, &run_plain)?;
    }
    Ok(0)
}

/// `ioi-run sandbox -- /bin/true` as a command against `/bin/true` run directly, interleaved
/// in rounds so that a change of the machine's load weighs on both alike.
fn command(
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
