//! `ioi-run bench boxes`: many box loops at once on one sandbox, far more threads than cores,
//! each running a fresh box after another (`/bin/true`, as `bench sandbox`), for a few seconds
//! per thread count. Per count: boxes per second, the CPU of a box (ioi-run, the boxes, the
//! kernel's threads), where the loops' threads spent their time (`/proc/thread-self/schedstat`:
//! on a CPU, waiting for one, off it), and with `--trace` the kernel's part of a box phase by
//! phase (see `box_trace`): its time on a CPU in the calls that run under a machine-wide lock
//! (the serialized part, an upper bound), the boxes' waits on contended locks and their share of
//! the loops' time. Then the projection of `box_model` for the three workloads up to 192 cores.

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Termination};

use crate::output::outln;

use super::box_model::{self, WORKLOADS};
use super::box_trace::{self, BoxTrace, Phase};
use super::sandbox::{kernel_threads_cpu, own_cpu};
use super::tracefs::KernelTrace;

/// Options of `bench boxes`.
#[derive(Debug, Clone)]
pub struct BoxesBench {
    /// Numbers of box loops at once.
    pub threads: Vec<usize>,
    /// How long each thread count runs.
    pub seconds: f64,
    /// Trace the kernel's part of the boxes (root, tracefs).
    pub trace: bool,
    /// Project with this serialized part per box (ms) instead of the traced one.
    pub serial_ms: Option<f64>,
    /// Also write each thread count's raw traces in this folder.
    pub keep_trace: Option<std::path::PathBuf>,
}

/// `run_ns wait_ns slices` of the calling thread.
fn schedstat() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut fields = text.split_whitespace().map(|f| f.parse().unwrap_or(0));
    (fields.next().unwrap_or(0), fields.next().unwrap_or(0))
}

/// What one thread count gave.
struct Level {
    threads: usize,
    boxes: u64,
    wall: Duration,
    /// Summed over the loops' threads: on a CPU, waiting for one (ns).
    run_ns: u64,
    wait_ns: u64,
    cpu: Duration,
    kernel: Duration,
    trace: Option<BoxTrace>,
    /// The share of the machine's serialized work items that are this run's.
    work_share: f64,
}

/// One loop's thread: fresh boxes one after another for `seconds`.
fn box_loop(
    sandbox: &Sandbox,
    spec: &RunSpec,
    start: &Barrier,
    seconds: f64,
) -> Result<(u64, u64, u64)> {
    start.wait();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (run0, wait0) = schedstat();
    let mut boxes = 0;
    // At least one box, however late the thread starts.
    loop {
        let outcome = sandbox.run(spec);
        anyhow::ensure!(
            outcome.status == Termination::Ok,
            "a sandboxed /bin/true failed: {}",
            outcome.message
        );
        boxes += 1;
        if Instant::now() >= deadline {
            break;
        }
    }
    let (run1, wait1) = schedstat();
    Ok((boxes, run1 - run0, wait1 - wait0))
}

fn spec_in(dir: &Path) -> RunSpec {
    let mut spec = RunSpec::new(dir, ["/bin/true"]);
    spec.limits = Limits {
        cpu_time: Some(Duration::from_secs(1)),
        wall_time: Some(Duration::from_secs(10)),
        memory: Some(256 << 20),
        ..Limits::default()
    };
    spec
}

fn level(sandbox: &Sandbox, threads: usize, options: &BoxesBench) -> Result<Level> {
    let dirs = (0..threads)
        .map(|_| {
            let dir = tempfile::tempdir()?;
            sandbox.give_to_box(dir.path())?;
            Ok(dir)
        })
        .collect::<Result<Vec<_>>>()?;
    let specs: Vec<RunSpec> = dirs.iter().map(|d| spec_in(d.path())).collect();
    let trace = options.trace.then(KernelTrace::start).transpose()?;
    let (cpu0, kernel0) = (own_cpu(), kernel_threads_cpu());
    let start = Barrier::new(threads + 1);
    let (results, wall) = std::thread::scope(|scope| {
        let loops: Vec<_> = specs
            .iter()
            .map(|spec| scope.spawn(|| box_loop(sandbox, spec, &start, options.seconds)))
            .collect();
        start.wait();
        let t0 = Instant::now();
        let results = loops
            .into_iter()
            .map(|l| {
                l.join()
                    .map_err(|_| anyhow::anyhow!("a box loop panicked"))?
            })
            .collect::<Result<Vec<_>>>();
        results.map(|r| (r, t0.elapsed()))
    })?;
    // The teardowns the housekeeper and the kernel's workers finish after the last outcome.
    std::thread::sleep(Duration::from_millis(500));
    let (cpu, kernel) = (
        own_cpu().saturating_sub(cpu0),
        kernel_threads_cpu().saturating_sub(kernel0),
    );
    let (trace, work_share) = match trace {
        Some(trace) => {
            let recorded = trace.stop()?;
            if let Some(dir) = &options.keep_trace {
                for (name, text) in [("tasks", &recorded.tasks), ("work", &recorded.work)] {
                    let path = dir.join(format!("{name}-{threads}.txt"));
                    std::fs::write(&path, text)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
            }
            let tasks = box_trace::read(&recorded.tasks);
            anyhow::ensure!(
                tasks.events > 0 && tasks.phases.contains_key(&Phase::CgroupCreate),
                "the trace holds no cgroup made by the boxes ({} events read, {} unreadable): \
                 this kernel's tracepoints differ from what bench boxes reads \
                 (--keep-trace DIR keeps the raw trace)",
                tasks.events,
                tasks.unreadable
            );
            let work = box_trace::read(&recorded.work);
            // Work items are the machine's: this run's share is its share of the cgroups made.
            let share = tasks.cgroup_mkdirs as f64 / work.cgroup_mkdirs.max(1) as f64;
            let mut tasks = tasks;
            tasks.work = work.work;
            tasks.lost += work.lost;
            (Some(tasks), share.min(1.0))
        }
        None => (None, 0.0),
    };
    Ok(Level {
        threads,
        boxes: results.iter().map(|r| r.0).sum(),
        wall,
        run_ns: results.iter().map(|r| r.1).sum(),
        wait_ns: results.iter().map(|r| r.2).sum(),
        cpu,
        kernel,
        trace,
        work_share,
    })
}

pub fn run(options: &BoxesBench) -> Result<i32> {
    let sandbox = Sandbox::new(SandboxOptions::default()).context("cannot start the sandbox")?;
    outln!(
        "box loops of /bin/true, {:.1} s per thread count, cgroup {:?}, {} cores",
        options.seconds,
        sandbox.cgroup_version(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let mut serial_ms = options.serial_ms;
    for &threads in &options.threads {
        let level = level(&sandbox, threads.max(1), options)?;
        print_level(&level)?;
        if let (None, Some(trace)) = (serial_ms, &level.trace) {
            // The first thread count traced (the fewest loops, the least contention) gives
            // the serialized part the projection uses.
            let by_lock = trace.serialized_per_box(level.boxes, level.work_share);
            serial_ms = by_lock
                .values()
                .cloned()
                .reduce(f64::max)
                .map(|ns| ns / 1e6);
        }
    }
    if let Some(serial_ms) = serial_ms {
        print_projection(serial_ms)?;
    }
    Ok(0)
}

fn print_level(level: &Level) -> Result<()> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let boxes = level.boxes.max(1);
    let thread_ns = (level.threads as f64 * level.wall.as_nanos() as f64).max(1.0);
    let share = |ns: u64| 100.0 * ns as f64 / thread_ns;
    outln!(
        "threads {}: boxes {}, boxes/s {:.1}, CPU per box {:.3} ms (kernel threads {:.3} ms); loops on a CPU {:.1} %, waiting for a CPU {:.1} %, off a CPU {:.1} %",
        level.threads,
        level.boxes,
        level.boxes as f64 / level.wall.as_secs_f64(),
        ms(level.cpu) / boxes as f64,
        ms(level.kernel) / boxes as f64,
        share(level.run_ns),
        share(level.wait_ns),
        (100.0 - share(level.run_ns) - share(level.wait_ns)).max(0.0),
    );
    let Some(trace) = &level.trace else {
        return Ok(());
    };
    let waits = trace.lock_waits();
    outln!(
        "threads {}: lock waits per box {:.4} ms asleep, {:.4} ms spinning, on machine-wide locks {:.4} ms; of the loops' time: asleep on locks {:.2} %, on machine-wide locks {:.2} %; events {} read, {} unreadable, {} lost",
        level.threads,
        waits.lock_sleep as f64 / 1e6 / boxes as f64,
        waits.lock_spin as f64 / 1e6 / boxes as f64,
        waits.global_lock as f64 / 1e6 / boxes as f64,
        share(waits.lock_sleep),
        share(waits.global_lock),
        trace.events,
        trace.unreadable,
        trace.lost,
    );
    let mut locks: Vec<_> = trace.global_locks.iter().collect();
    locks.sort_by_key(|(_, lock)| std::cmp::Reverse(lock.waited));
    for (address, lock) in locks.iter().take(6) {
        let phases: Vec<String> = lock
            .by_phase
            .iter()
            .map(|(phase, ns)| {
                format!(
                    "{phase} {:.0} %",
                    100.0 * *ns as f64 / lock.waited.max(1) as f64
                )
            })
            .collect();
        outln!(
            "  machine-wide lock {address:x} taken by {}: {:.2} waits, {:.4} ms a box ({})",
            lock.taker.as_deref().unwrap_or("?"),
            lock.waits as f64 / boxes as f64,
            lock.waited as f64 / 1e6 / boxes as f64,
            phases.join(", ")
        );
    }
    outln!(
        "  {:<24} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}  machine-wide lock",
        "phase, per box (ms)",
        "calls",
        "on CPU",
        "asleep",
        "runnable",
        "lock wait",
        "lock spin"
    );
    let per_box = |ns: u64| ns as f64 / 1e6 / boxes as f64;
    for phase in Phase::ALL {
        let Some(a) = trace.phases.get(&phase) else {
            continue;
        };
        outln!(
            "  {:<24} {:>8.2} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>10.4}  {}",
            phase.name(),
            a.count as f64 / boxes as f64,
            per_box(a.on_cpu),
            per_box(a.asleep),
            per_box(a.runnable),
            per_box(a.lock_sleep),
            per_box(a.lock_spin),
            phase.serialized().unwrap_or("-"),
        );
    }
    for (function, lock) in box_trace::SERIAL_WORK {
        if let Some(a) = trace.work.get(function) {
            outln!(
                "  {:<24} {:>8.2} {:>10.4} {:>10.4} {:>10} {:>10} {:>10}  {} (a kernel worker; {:.0} % of the machine's items)",
                function,
                a.count as f64 * level.work_share / boxes as f64,
                per_box(a.on_cpu) * level.work_share,
                per_box(a.asleep) * level.work_share,
                "",
                "",
                "",
                lock,
                100.0 * level.work_share,
            );
        }
    }
    let by_lock = trace.serialized_per_box(level.boxes, level.work_share);
    let all: f64 = by_lock.values().sum();
    let listed: Vec<String> = by_lock
        .iter()
        .map(|(lock, ns)| format!("{lock} {:.4}", ns / 1e6))
        .collect();
    outln!(
        "threads {}: serialized per box (ms, upper bound) {}; all {:.4}",
        level.threads,
        listed.join(", "),
        all / 1e6
    );
    Ok(())
}

fn print_projection(serial_ms: f64) -> Result<()> {
    outln!(
        "projection (Amdahl, the busiest lock {serial_ms:.4} ms a box): items/s at N cores, and the saturation core count C / S"
    );
    let cores = [2.0, 8.0, 16.0, 32.0, 64.0, 128.0, 192.0];
    for workload in &WORKLOADS {
        let row: Vec<String> = cores
            .iter()
            .map(|&n| {
                format!(
                    "{n}: {:.0}",
                    box_model::items_per_second(workload, serial_ms, n)
                )
            })
            .collect();
        outln!(
            "  {} ({} boxes, {} ms): {}; ceiling {:.0}/s; saturates at {:.0} cores",
            workload.name,
            workload.boxes_per_item,
            workload.cpu_ms_per_item,
            row.join(", "),
            box_model::ceiling_per_second(workload, serial_ms),
            box_model::saturation_cores(workload, serial_ms),
        );
    }
    Ok(())
}
