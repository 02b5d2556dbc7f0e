//! `ioi-run bench sandbox`: the per-run overhead of a sandboxed `/bin/true` against a plain
//! fork+exec of it in-process, the CPU of a run (ioi-run and the box) and of the kernel's own
//! threads (teardown, outside the latency), and the `ioi-run sandbox` command end to end
//! against the program run directly and, when given, against isolate (the IOI's sandbox).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Termination};

use crate::output::outln;

use super::isolate::Isolate;

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
pub(super) fn kernel_threads_cpu() -> Duration {
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
pub(super) fn own_cpu() -> Duration {
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

pub fn run(
    runs: usize,
    caller_mib: usize,
    stdio_files: bool,
    command_runs: usize,
    isolate: Option<&Path>,
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
        command(command_runs, &run_plain, isolate)?;
    }
    Ok(0)
}

/// Names the keeper's socket for `ioi-run sandbox` (empty: none).
const KEEPER_ENV: &str = "IOI_RUN_KEEPER";

/// An `ioi-run keeper` of the benchmark's own, on a socket in a private folder, stopped (by
/// its pid) when dropped.
struct Keeper {
    child: std::process::Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Keeper {
    fn start(exe: &Path) -> Result<Keeper> {
        let dir = tempfile::tempdir()?;
        // The keeper serves only from a folder closed to others.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )?;
        let socket = dir.path().join("keeper.sock");
        let log = dir.path().join("keeper.log");
        let child = std::process::Command::new(exe)
            .arg("keeper")
            .arg("--socket")
            .arg(&socket)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("cannot start ioi-run keeper")?;
        let mut keeper = Keeper {
            child,
            socket,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::os::unix::net::UnixStream::connect(&keeper.socket).is_err() {
            if let Some(status) = keeper.child.try_wait()? {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                anyhow::bail!("ioi-run keeper stopped ({status}): {}", log.trim());
            }
            anyhow::ensure!(Instant::now() < deadline, "ioi-run keeper does not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(keeper)
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// One way of running `/bin/true` as a command, timed in turn with the others.
struct Contender<'a> {
    name: &'static str,
    run: Box<dyn FnMut() -> Result<Duration> + 'a>,
    latencies: Vec<Duration>,
    cpu: Duration,
    kernel: Duration,
}

impl<'a> Contender<'a> {
    fn new(name: &'static str, run: Box<dyn FnMut() -> Result<Duration> + 'a>) -> Contender<'a> {
        Contender {
            name,
            run,
            latencies: Vec::new(),
            cpu: Duration::ZERO,
            kernel: Duration::ZERO,
        }
    }
}

/// `ioi-run sandbox -- /bin/true` as a command against `/bin/true` run directly and, given
/// `isolate`, against isolate's `--run` in a box initialised once (as CMS keeps its boxes) and
/// its `--init`, `--run` and `--cleanup` in turn: interleaved in rounds of 10 runs each, so
/// that a change of the machine's load weighs on all alike.
fn command(
    runs: usize,
    run_plain: &dyn Fn(&mut std::process::Command) -> Result<Duration>,
    isolate: Option<&Path>,
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the ioi-run executable")?;
    let isolate = isolate.map(Isolate::new).transpose()?;
    // Box ids of their own per benchmark process, so that two benchmarks do not meet: one
    // initialised once, the other initialised, run and cleaned up in turn.
    let (prepared_id, once_id) = (
        100 + std::process::id() % 900,
        100 + (std::process::id() + 450) % 900,
    );
    let prepared = isolate
        .as_ref()
        .map(|isolate| isolate.init(prepared_id))
        .transpose()?;
    let keeper = Keeper::start(&exe)?;
    let contender = Contender::new;
    let mut contenders = vec![
        contender(
            "/bin/true directly",
            Box::new(|| run_plain(&mut std::process::Command::new("/bin/true"))),
        ),
        contender(
            "ioi-run sandbox -- /bin/true",
            Box::new(|| {
                run_plain(
                    std::process::Command::new(&exe)
                        .args(["sandbox", "--", "/bin/true"])
                        .env(KEEPER_ENV, "")
                        .stderr(std::process::Stdio::null()),
                )
            }),
        ),
        contender(
            "  the same, with a keeper",
            Box::new(|| {
                run_plain(
                    std::process::Command::new(&exe)
                        .args(["sandbox", "--", "/bin/true"])
                        .env(KEEPER_ENV, &keeper.socket)
                        .stderr(std::process::Stdio::null()),
                )
            }),
        ),
    ];
    if let (Some(isolate), Some(prepared)) = (&isolate, &prepared) {
        contenders.push(contender(
            "isolate --run -- /bin/true",
            Box::new(|| {
                let t = Instant::now();
                prepared.call(&["--run", "--", "/bin/true"])?;
                Ok(t.elapsed())
            }),
        ));
        // A second box, so that the prepared one stays as it is.
        contenders.push(contender(
            "isolate --init, --run, --cleanup",
            Box::new(move || {
                let t = Instant::now();
                isolate.call(once_id, &["--init"])?;
                isolate.call(once_id, &["--run", "--", "/bin/true"])?;
                isolate.call(once_id, &["--cleanup"])?;
                Ok(t.elapsed())
            }),
        ));
    }
    for _ in 0..runs.div_ceil(10) {
        for c in &mut contenders {
            let timed = timed_runs(10, &mut c.run)?;
            c.latencies.extend(timed.latencies);
            c.cpu += timed.cpu;
            c.kernel += timed.kernel;
        }
    }
    print_commands(&contenders, runs.div_ceil(10) as u32)
}

/// Each command's latency and CPU over `rounds` rounds of 10 runs, and ioi-run's against the
/// others (in the order [`command`] lists them).
fn print_commands(contenders: &[Contender], rounds: u32) -> Result<()> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    outln!(
        "commands, {} runs of each, interleaved in rounds of 10:",
        rounds * 10
    );
    let medians: Vec<f64> = contenders
        .iter()
        .map(|c| summary(c.latencies.clone()).0)
        .collect();
    for (c, median) in contenders.iter().zip(&medians) {
        let (_, p90) = summary(c.latencies.clone());
        outln!(
            "{:<34} median {median:.3} ms   p90 {p90:.3} ms   CPU per run {:.3} ms   kernel threads' CPU per run {:.3} ms",
            c.name,
            ms(c.cpu / rounds),
            ms(c.kernel / rounds),
        );
    }
    let (ours, kept) = (medians[1], medians[2]);
    outln!(
        "command overhead          median {:.3} ms; ioi-run / /bin/true {:.2}×; with a keeper {:.3} ms, {:.2}×",
        ours - medians[0],
        ours / medians[0],
        kept - medians[0],
        kept / medians[0]
    );
    if medians.len() > 3 {
        outln!(
            "ioi-run / isolate --run {:.2}×   ioi-run / isolate --init+--run+--cleanup {:.2}×",
            ours / medians[3],
            ours / medians[4]
        );
        outln!(
            "ioi-run with a keeper / isolate --run {:.2}×   / isolate --init+--run+--cleanup {:.2}×",
            kept / medians[3],
            kept / medians[4]
        );
    }
    Ok(())
}
