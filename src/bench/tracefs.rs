//! A kernel trace of the benchmark's own, in tracefs instances (their own buffers and events,
//! leaving the host's trace and any other user's untouched), read as text from `trace_pipe`
//! while it runs. Everything it sets up is undone when it stops or is dropped: the instances
//! removed, tracefs unmounted if it mounted it.
//!
//! Written by hand on the tracefs files: the crates that drive tracing go through BPF or
//! perf's ring buffers, which this reads no better than the kernel's own text.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

const TRACEFS: &str = "/sys/kernel/tracing";

/// x86_64 numbers of the system calls [`crate::bench::box_trace`] reads (the others are
/// filtered out in the kernel, so that a box's hundred other calls cost nothing to trace).
const TRACED_SYSCALLS: [i64; 16] = [
    1, 3, 56, 83, 84, 155, 165, 166, 258, 263, 272, 308, 428, 429, 432, 435,
];

/// One tracefs instance and the thread draining its `trace_pipe`.
struct Instance {
    dir: PathBuf,
    reader: Option<JoinHandle<std::io::Result<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
}

impl Instance {
    fn create(root: &Path, name: &str) -> Result<Instance> {
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir)
            .with_context(|| format!("cannot create the tracefs instance {}", dir.display()))?;
        Ok(Instance {
            dir,
            reader: None,
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, value)
            .with_context(|| format!("cannot write {value:?} to {}", path.display()))
    }

    /// Starts draining the buffer, then turns tracing on.
    fn start(&mut self) -> Result<()> {
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.join("trace_pipe"))
            .context("cannot open trace_pipe")?;
        let stop = self.stop.clone();
        self.reader = Some(std::thread::spawn(move || drain(pipe, &stop)));
        self.write("tracing_on", "1")
    }

    /// Turns tracing off and returns what was traced.
    fn finish(&mut self) -> Result<String> {
        self.write("tracing_on", "0")?;
        self.stop.store(true, Ordering::Release);
        let bytes = match self.reader.take() {
            Some(reader) => reader
                .join()
                .map_err(|_| anyhow::anyhow!("the trace reader panicked"))?
                .context("cannot read trace_pipe")?,
            None => Vec::new(),
        };
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Reads `pipe` until `stop` is set and nothing is left.
fn drain(mut pipe: std::fs::File, stop: &AtomicBool) -> std::io::Result<Vec<u8>> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => std::thread::sleep(Duration::from_millis(10)),
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::Acquire) {
                    return Ok(all);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        self.stop.store(true, Ordering::Release);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        // Removing an instance disables its events and frees its buffers.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// tracefs mounted by the trace, unmounted when dropped.
struct Mounted(bool);

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.0 {
            let _ = nix::mount::umount(TRACEFS);
        }
    }
}

/// A trace of the boxes of this process (its tasks and every task they start) and of the
/// machine's work items. Its fields drop in order: the instances, then the mount.
pub struct KernelTrace {
    tasks: Instance,
    work: Instance,
    _mounted: Mounted,
}

/// What a [`KernelTrace`] recorded, as tracefs prints it.
pub struct Recorded {
    /// This process's tasks and their descendants: the system calls that make and remove
    /// boxes, switches, exits, lock contention, cgroup events.
    pub tasks: String,
    /// The machine's work items and cgroup creations (every process's).
    pub work: String,
}

impl KernelTrace {
    /// Starts tracing (as root, on a kernel with tracefs and the `lock` tracepoints).
    pub fn start() -> Result<KernelTrace> {
        let root = Path::new(TRACEFS);
        let mounted = Mounted(!root.join("instances").is_dir());
        if mounted.0 {
            nix::mount::mount(
                Some("nodev"),
                root,
                Some("tracefs"),
                nix::mount::MsFlags::empty(),
                None::<&str>,
            )
            .context("cannot mount tracefs on /sys/kernel/tracing")?;
        }
        let pid = std::process::id();
        let tasks = Instance::create(root, &format!("ioi-run-boxes-{pid}"))?;
        let work = Instance::create(root, &format!("ioi-run-work-{pid}"))?;
        let mut trace = KernelTrace {
            tasks,
            work,
            _mounted: mounted,
        };
        trace.configure()?;
        trace.tasks.start()?;
        trace.work.start()?;
        Ok(trace)
    }

    fn configure(&self) -> Result<()> {
        for instance in [&self.tasks, &self.work] {
            instance.write("tracing_on", "0")?;
            instance.write("trace_clock", "mono")?;
            instance.write("buffer_size_kb", "8192")?;
        }
        let tasks = &self.tasks;
        tasks.write("options/event-fork", "1")?;
        // Lock addresses as they are, so that a static (machine-wide) lock is told from an
        // allocated one; and the stack of each contention, which names who takes the lock.
        tasks.write("options/hash-ptr", "0")?;
        tasks.write("events/lock/contention_begin/trigger", "stacktrace")?;
        let tids: Vec<String> = std::fs::read_dir("/proc/self/task")
            .context("cannot list /proc/self/task")?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        tasks.write("set_event_pid", &tids.join(" "))?;
        let ids: Vec<String> = TRACED_SYSCALLS
            .iter()
            .map(|n| format!("id == {n}"))
            .collect();
        for event in ["sys_enter", "sys_exit"] {
            tasks.write(
                &format!("events/raw_syscalls/{event}/filter"),
                &ids.join(" || "),
            )?;
            tasks.write(&format!("events/raw_syscalls/{event}/enable"), "1")?;
        }
        for event in [
            "sched/sched_switch",
            "sched/sched_process_exit",
            "lock/contention_begin",
            "lock/contention_end",
            "cgroup/cgroup_mkdir",
            "cgroup/cgroup_rmdir",
            "cgroup/cgroup_attach_task",
        ] {
            tasks.write(&format!("events/{event}/enable"), "1")?;
        }
        // The workers' switches, for their work items' time on a CPU.
        self.work.write(
            "events/sched/sched_switch/filter",
            "prev_comm ~ \"kworker*\" || next_comm ~ \"kworker*\"",
        )?;
        for event in [
            "workqueue/workqueue_execute_start",
            "workqueue/workqueue_execute_end",
            "cgroup/cgroup_mkdir",
            "sched/sched_switch",
        ] {
            self.work.write(&format!("events/{event}/enable"), "1")?;
        }
        Ok(())
    }

    /// Stops tracing and returns what was recorded; the instances are removed when it drops.
    pub fn stop(mut self) -> Result<Recorded> {
        Ok(Recorded {
            tasks: self.tasks.finish()?,
            work: self.work.finish()?,
        })
    }
}
